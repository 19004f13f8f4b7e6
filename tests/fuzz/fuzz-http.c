/*
 * fuzz-http.c - raw request bytes through the real HTTP server (hub/http/httpd.c): the parser, its
 * limits, pipelining and the request accessors a handler uses (path, query parameters, headers,
 * unescaping, Range). Each input goes in over one end of a socketpair the server adopts; the client
 * end then reads until the server closes or answers everything. The server must answer with
 * well-formed status lines (or close), and never crash or leak. Bodies of /up... stream to a sink
 * (httpd_set_body_claim) that wants no more after 100 bytes; /up/take's handler takes it, the others'
 * leave it to be abandoned: a sink freed twice or never is a sanitizer report, and one still held when
 * its request ends the server's own BUG_ON.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdbool.h>
#include <uv.h>

#include "hub/http/httpd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int sink_data(void *ud, const char *p, size_t n)
{
	size_t *got = ud;

	(void)p;
	*got += n;
	return *got > 100;
}

static bool claim(void *ud, struct httpd_req *r, struct httpd_body_sink *sink)
{
	(void)ud;
	if (strncmp(httpd_path(r), "/up", 3))
		return false;
	sink->data = sink_data;
	sink->abandon = free;
	sink->ud = calloc(1, sizeof(size_t));
	return true;
}

/* A handler that touches everything a route does with a request. */
static int handler(void *ud, struct httpd_req *r)
{
	const char *path = httpd_path(r), *q = httpd_query(r), *range = httpd_header(r, "Range");
	char *p = httpd_query_param(r, "cursor"), *u = httpd_unescape(path, strlen(path), false);
	int64_t a, b;
	int rr = httpd_parse_range(range, 1000, &a, &b);

	(void)ud;
	(void)q;
	if (!strcmp(path, "/up/take"))
		free(httpd_body_take(r));
	httpd_add_header(r, "X-Range", rr == 1 ? "yes" : "no");
	httpd_respond(r, u ? 200 : 400, "text/plain", u ? u : "bad", u ? strlen(u) : 3);
	free(u);
	free(p);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uv_loop_t loop;
	static struct httpd *h;
	int sv[2];
	char buf[65536];
	size_t sent = 0, got = 0;

	if (!h) {
		struct httpd_config cfg = {.listen = "127.0.0.1:0",
					   .max_header_bytes = 2048,
					   .max_body_bytes = 4096,
					   .header_timeout_ms = 1000,
					   .idle_timeout_ms = 1000,
					   .write_timeout_ms = 1000};
		uv_loop_init(&loop);
		if (httpd_new(&loop, &cfg, &h))
			abort();
		httpd_add_handler(h, handler, NULL);
		httpd_set_body_claim(h, claim, NULL);
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	if (httpd_adopt(h, sv[0]))
		abort();
	/* feed it, let the server run, read what it says, until it closes or stops answering */
	for (int idle = 0; idle < 200;) {
		ssize_t n;
		int progress = 0;
		if (sent < size) {
			n = send(sv[1], data + sent, size - sent, MSG_NOSIGNAL);
			if (n > 0) {
				sent += (size_t)n;
				progress = 1;
				if (sent == size)
					shutdown(sv[1], SHUT_WR);
			}
		} else if (size == 0) {
			shutdown(sv[1], SHUT_WR);
		}
		uv_run(&loop, UV_RUN_NOWAIT);
		n = recv(sv[1], buf + (got < sizeof(buf) - 1 ? got : 0),
			 sizeof(buf) - 1 - (got < sizeof(buf) - 1 ? got : 0), 0);
		if (n == 0)
			break; /* the server closed */
		if (n > 0) {
			if (got < sizeof(buf) - 1)
				got += (size_t)n;
			progress = 1;
		} else if (errno != EAGAIN && errno != EWOULDBLOCK) {
			break;
		}
		idle = progress ? 0 : idle + 1;
	}
	buf[got] = '\0';
	if (getenv("FUZZ_HTTP_SHOW"))
		fprintf(stderr, "--- %zu bytes in, %zu out:\n%.200s\n", size, got, buf);
	if (got && strncmp(buf, "HTTP/1.1 ", 9))
		abort(); /* whatever it says starts with a status line */
	close(sv[1]);
	/* let the server notice and free the connection */
	for (int i = 0; i < 4; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	return 0;
}
