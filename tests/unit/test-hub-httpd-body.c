/*
 * test-hub-httpd-body.c - request bodies streamed to a handler's sink (httpd_set_body_claim): big
 * bodies whole and in order past max_body_bytes, with a Content-Length or chunked, and pipelined
 * requests after them; "Expect: 100-continue"; the sink abandoned exactly once on every way a request
 * ends without a handler taking it; a sink that wants no more, or that stops the request at once;
 * a body refused from its head (httpd_body_refuse); the body's progress timeout. The
 * server runs on the test's thread (uv_run, a turn at a time) over socketpairs it adopts; a client
 * thread sends what does not fit in a socket's buffer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hub/http/httpd.h"
#include "hub/http/httpd-int.h"
#include "test.h"

/* What fd has received so far (appended to got), without waiting. */
static void take(int fd, char *got, size_t cap)
{
	size_t n = strlen(got);
	ssize_t k;

	while (n + 1 < cap && (k = recv(fd, got + n, cap - 1 - n, MSG_DONTWAIT)) > 0)
		n += (size_t)k;
	got[n] = '\0';
}

#define FNV0 0xcbf29ce484222325ULL

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ULL;
	return h;
}

/* The body's byte at offset i: not a repeating pattern, so a lost or doubled chunk changes the sum. */
static unsigned char body_byte(uint64_t i)
{
	return (unsigned char)((i * 0x9E3779B97F4A7C15ULL) >> 56);
}

struct upload {
	uint64_t n, sum;        /* bytes given to data, their FNV-1a */
	uint64_t stop_at;       /* ?stop=N: data says "no more" once this many came */
	bool cut;               /* ?cut=N: ... and stops the request (HTTPD_SINK_STOP) */
	bool full;
	int calls_after_full;   /* must stay 0 */
};
static int claims, abandons;
static uint64_t sunk;           /* bytes given to every sink, in all */

static int up_data(void *ud, const char *p, size_t n)
{
	struct upload *u = ud;

	u->calls_after_full += u->full;
	u->n += n;
	sunk += n;
	u->sum = fnv(u->sum, p, n);
	if (u->stop_at && u->n >= u->stop_at)
		u->full = true;
	return u->full && u->cut ? HTTPD_SINK_STOP : u->full;
}

static void up_abandon(void *ud)
{
	abandons++;
	free(ud);
}

/* Claims /up...: the claim sees the path and the query before the body. */
static bool up_claim(void *ud, struct httpd_req *r, struct httpd_body_sink *sink)
{
	struct upload *u;
	char *stop;

	(void)ud;
	if (!strcmp(httpd_path(r), "/no"))
		httpd_body_refuse(r, 403, "not here"); /* not kept: answered from its head */
	if (strncmp(httpd_path(r), "/up", 3))
		return false;
	claims++;
	u = calloc(1, sizeof(*u));
	u->sum = FNV0;
	stop = httpd_query_param(r, "stop");
	if (!stop && (stop = httpd_query_param(r, "cut")))
		u->cut = true;
	u->stop_at = stop ? strtoull(stop, NULL, 10) : 0;
	free(stop);
	sink->data = up_data;
	sink->abandon = up_abandon;
	sink->ud = u;
	return true;
}

static int up_handler(void *ud, struct httpd_req *r)
{
	const char *path = httpd_path(r);
	size_t blen;
	char msg[256];

	(void)ud;
	httpd_body(r, &blen);
	if (!strcmp(path, "/up/ignored")) {
		httpd_respond_str(r, 200, "text/plain", "ignored end\n"); /* the sink is not taken */
	} else if (!strncmp(path, "/up", 3)) {
		struct upload *u = httpd_body_take(r);
		bool again = httpd_body_take(r) != NULL;
		if (!u) {
			httpd_respond_str(r, 500, "text/plain", "no sink end\n");
			return 0;
		}
		snprintf(msg, sizeof(msg), "bytes=%llu sum=%016llx full=%d after=%d again=%d body=%zu end\n",
			 (unsigned long long)u->n, (unsigned long long)u->sum, u->full, u->calls_after_full, again,
			 blen);
		httpd_respond_str(r, u->full ? 413 : 200, "text/plain", msg);
		free(u);
	} else if (!strcmp(path, "/no")) {
		const char *why = NULL;
		int st = httpd_body_refused(r, &why);
		snprintf(msg, sizeof(msg), "refused=%d why=%s body=%zu end\n", st, why ? why : "-", blen);
		httpd_respond_str(r, st, "text/plain", msg);
	} else if (!strcmp(path, "/plain")) {
		snprintf(msg, sizeof(msg), "plain %zu end\n", blen);
		httpd_respond_str(r, 200, "text/plain", msg);
	} else {
		httpd_respond_str(r, 200, "text/plain", "fast\n");
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Turn the loop for at most secs, until fd's answers (appended to got) hold want (NULL: the whole
 * time). True when they do. */
static bool run_for(uv_loop_t *loop, int fd, char *got, size_t cap, const char *want, double secs)
{
	double end = now_s() + secs;

	do {
		if (fd >= 0)
			take(fd, got, cap);
		if (want && strstr(got, want))
			return true;
		uv_run(loop, UV_RUN_NOWAIT);
		usleep(200);
	} while (now_s() < end);
	return false;
}

static bool send_all(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p = (const char *)p + k;
		n -= (size_t)k;
	}
	return true;
}

static bool send_str(int fd, const char *s)
{
	return send_all(fd, s, strlen(s));
}

/* A client thread: a head, a body of len generated bytes (chunked or not), then tail (a pipelined
 * request, or NULL); the loop runs on the test's thread meanwhile. */
struct sender {
	pthread_t t;
	int fd;
	const char *head, *tail;
	uint64_t len;
	bool chunked;
	uint64_t sum;           /* out: the body's FNV-1a */
};

static void *sender_main(void *arg)
{
	struct sender *s = arg;
	static __thread unsigned char blk[70000];
	char line[32];
	uint64_t off = 0;

	s->sum = FNV0;
	if (!send_all(s->fd, s->head, strlen(s->head)))
		return NULL;
	for (unsigned k = 0; off < s->len; k++) {
		/* chunks of uneven sizes, so chunk lines fall anywhere in the server's reads */
		size_t n = s->chunked ? 1 + (k * 7919u) % (sizeof(blk) - 1) : sizeof(blk);
		if (n > s->len - off)
			n = (size_t)(s->len - off);
		for (size_t i = 0; i < n; i++)
			blk[i] = body_byte(off + i);
		s->sum = fnv(s->sum, blk, n);
		snprintf(line, sizeof(line), "%zx\r\n", n);
		if ((s->chunked && !send_all(s->fd, line, strlen(line))) || !send_all(s->fd, blk, n) ||
		    (s->chunked && !send_all(s->fd, "\r\n", 2)))
			return NULL;
		off += n;
	}
	if (s->chunked && !send_all(s->fd, "0\r\n\r\n", 5))
		return NULL;
	if (s->tail)
		send_all(s->fd, s->tail, strlen(s->tail));
	return NULL;
}

static void sender_start(struct sender *s, int fd, const char *head, uint64_t len, bool chunked, const char *tail)
{
	s->fd = fd;
	s->head = head;
	s->len = len;
	s->chunked = chunked;
	s->tail = tail;
	pthread_create(&s->t, NULL, sender_main, s);
}

/* A client end over a socketpair the server adopts, nothing sent yet. */
static int pair(struct httpd *h)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	httpd_adopt(h, sv[1]);
	return sv[0];
}

/* ... and req sent on it at once */
static int client(struct httpd *h, const char *req)
{
	int fd = pair(h);

	return fd >= 0 && send_str(fd, req) ? fd : -1;
}

static struct httpd *up_server(uv_loop_t *loop, struct httpd_config *cfg)
{
	struct httpd *h = NULL;

	uv_loop_init(loop);
	claims = abandons = 0;
	sunk = 0;
	if (httpd_new(loop, cfg, &h))
		return NULL;
	httpd_set_body_claim(h, up_claim, NULL);
	httpd_add_handler(h, up_handler, NULL);
	return h;
}

static void up_server_free(uv_loop_t *loop, struct httpd **h)
{
	httpd_free(h);
	uv_run(loop, UV_RUN_DEFAULT);
	CHECK_INT(uv_loop_close(loop), 0);
}

/* 64 MiB with a Content-Length, then 64 MiB chunked on the same connection with a GET pipelined
 * behind it: each reaches its sink whole and in order (count and checksum), past max_body_bytes. */
TEST(body_stream)
{
	uv_loop_t loop;
	struct httpd_config cfg = { .listen = "127.0.0.1:0" }; /* max_body_bytes: 1 MiB */
	struct httpd *h = up_server(&loop, &cfg);
	struct sender s;
	static char got[4096];
	char want[256];
	int fd = pair(h);
	const char *chunked;

	got[0] = '\0';
	sender_start(&s, fd, "PUT /up/a?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 67108864\r\n\r\n", 64 << 20, false,
		     NULL);
	CHECK(run_for(&loop, fd, got, sizeof(got), "end\n", 60));
	pthread_join(s.t, NULL);
	snprintf(want, sizeof(want), "bytes=67108864 sum=%016llx full=0 after=0 again=0 body=0 end\n",
		 (unsigned long long)s.sum);
	CHECK(!strncmp(got, "HTTP/1.1 200", 12));
	CHECK(strstr(got, want) != NULL);
	CHECK_INT(claims, 1);
	CHECK_INT(abandons, 0);
	got[0] = '\0';
	sender_start(&s, fd, "PUT /up/b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 64 << 20, true,
		     "GET /next HTTP/1.1\r\nHost: x\r\n\r\n");
	CHECK(run_for(&loop, fd, got, sizeof(got), "fast\n", 60));
	pthread_join(s.t, NULL);
	snprintf(want, sizeof(want), "bytes=67108864 sum=%016llx full=0 after=0 again=0 body=0 end\n",
		 (unsigned long long)s.sum);
	chunked = strstr(got, want);
	CHECK(chunked != NULL);
	CHECK(chunked && strstr(chunked, "fast\n") != NULL);  /* the pipelined GET, answered after it */
	CHECK_INT(claims, 2);
	CHECK_INT(abandons, 0);
	close(fd);
	up_server_free(&loop, &h);
}

/* A claimed body is bounded by its sink, not by max_body_bytes; an unclaimed one still is; an
 * "Expect: 100-continue" gets its interim answer before the body is sent, or the 413 at once. */
TEST(body_limits_expect)
{
	uv_loop_t loop;
	struct httpd_config cfg = { .listen = "127.0.0.1:0", .max_body_bytes = 1 << 20 };
	struct httpd *h = up_server(&loop, &cfg);
	struct sender s;
	char got[4096] = "";
	int fd = pair(h);

	sender_start(&s, fd, "PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n", 2 << 20, false,
		     NULL);
	CHECK(run_for(&loop, fd, got, sizeof(got), "end\n", 30));
	pthread_join(s.t, NULL);
	CHECK(strstr(got, "HTTP/1.1 200") && strstr(got, "bytes=2097152 "));
	close(fd);
	got[0] = '\0';
	fd = client(h, "PUT /plain HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n");
	CHECK(run_for(&loop, fd, got, sizeof(got), "\r\n\r\n", 10));
	CHECK(!strncmp(got, "HTTP/1.1 413", 12));                 /* unclaimed: the limit holds */
	close(fd);
	/* Expect: the 100 comes, and nothing else, before the client sends a byte of the body */
	got[0] = '\0';
	fd = client(h, "PUT /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n");
	CHECK(run_for(&loop, fd, got, sizeof(got), "\r\n\r\n", 10));
	run_for(&loop, fd, got, sizeof(got), NULL, 0.1);
	CHECK_STR(got, "HTTP/1.1 100 Continue\r\n\r\n");
	CHECK(send_all(fd, "0123456789", 10));
	CHECK(run_for(&loop, fd, got, sizeof(got), "end\n", 10));
	CHECK(!strncmp(got, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200", 37));
	CHECK(strstr(got, "bytes=10 ") != NULL);
	/* ... for a chunked body, and an unclaimed one within the limit, on the same connection */
	got[0] = '\0';
	CHECK(send_str(fd,
		       "PUT /plain HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n"));
	CHECK(run_for(&loop, fd, got, sizeof(got), "\r\n\r\n", 10));
	CHECK_STR(got, "HTTP/1.1 100 Continue\r\n\r\n");
	CHECK(send_str(fd, "5\r\nhello\r\n0\r\n\r\n"));
	CHECK(run_for(&loop, fd, got, sizeof(got), "end\n", 10));
	CHECK(strstr(got, "HTTP/1.1 200") && strstr(got, "plain 5 end\n"));
	close(fd);
	/* over the limit and unclaimed: the 413 at once, no 100 */
	got[0] = '\0';
	fd = client(h, "PUT /plain HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2097152\r\n\r\n");
	CHECK(run_for(&loop, fd, got, sizeof(got), "\r\n\r\n", 10));
	CHECK(!strncmp(got, "HTTP/1.1 413", 12));
	close(fd);
	CHECK_INT(abandons, 0);
	up_server_free(&loop, &h);
}

/* Turn the loop until abandons reaches n (bounded), then a little more: it must not go past. */
static void wait_abandons(uv_loop_t *loop, int n)
{
	for (double end = now_s() + 10; abandons < n && now_s() < end; usleep(200))
		uv_run(loop, UV_RUN_NOWAIT);
	run_for(loop, -1, NULL, 0, NULL, 0.05);
}

/* Every way a request with a claimed sink ends without a handler taking it abandons the sink once:
 * the client gone mid-body, a handler that does not take it, a broken chunk, the server freed. */
TEST(body_abandon)
{
	uv_loop_t loop;
	struct httpd_config cfg = { .listen = "127.0.0.1:0" };
	struct httpd *h = up_server(&loop, &cfg);
	char got[4096] = "", part[5000];
	int fd;

	memset(part, 'p', sizeof(part));
	fd = client(h, "PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n");
	CHECK(send_all(fd, part, sizeof(part)));
	for (double end = now_s() + 10; sunk < sizeof(part) && now_s() < end; usleep(200))
		uv_run(&loop, UV_RUN_NOWAIT);
	CHECK_INT(sunk, sizeof(part));
	CHECK_INT(abandons, 0);
	close(fd);                                                /* gone mid-body */
	wait_abandons(&loop, 1);
	CHECK_INT(abandons, 1);
	fd = client(h, "GET /still HTTP/1.1\r\nHost: x\r\n\r\n"); /* and the server goes on */
	CHECK(run_for(&loop, fd, got, sizeof(got), "fast\n", 10));
	close(fd);
	got[0] = '\0';
	fd = client(h, "PUT /up/ignored HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
	CHECK(run_for(&loop, fd, got, sizeof(got), "end\n", 10));
	CHECK(strstr(got, "HTTP/1.1 200") && strstr(got, "ignored end\n"));
	CHECK_INT(abandons, 2);                                   /* not taken: abandoned after the handlers */
	close(fd);
	run_for(&loop, -1, NULL, 0, NULL, 0.1);
	CHECK_INT(abandons, 2);                                   /* once */
	got[0] = '\0';
	fd = client(h, "PUT /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n");
	CHECK(run_for(&loop, fd, got, sizeof(got), "\r\n\r\n", 10));
	CHECK(!strncmp(got, "HTTP/1.1 400", 12));                 /* a broken chunk: refused */
	CHECK_INT(abandons, 3);                                   /* then, not when the linger ends */
	close(fd);
	run_for(&loop, -1, NULL, 0, NULL, 0.1);
	CHECK_INT(abandons, 3);
	fd = client(h, "PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nabc");
	run_for(&loop, -1, NULL, 0, NULL, 0.1);
	CHECK_INT(claims, 4);
	httpd_free(&h);                                           /* the server goes mid-body */
	CHECK_INT(abandons, 4);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_INT(abandons, 4);
	CHECK_INT(uv_loop_close(&loop), 0);
	close(fd);
}

/* A sink that wants no more after 1000 bytes: the rest of a 3 MiB body is read and dropped, the
 * handler answers with the sink's error, and a GET pipelined behind it is answered. */
TEST(body_sink_full)
{
	uv_loop_t loop;
	struct httpd_config cfg = { .listen = "127.0.0.1:0" };
	struct httpd *h = up_server(&loop, &cfg);
	struct sender s;
	static char got[4096];
	const char *ans;
	int fd = pair(h);

	got[0] = '\0';
	sender_start(&s, fd, "PUT /up?stop=1000 HTTP/1.1\r\nHost: x\r\nContent-Length: 3145728\r\n\r\n", 3 << 20,
		     false, "GET /after HTTP/1.1\r\nHost: x\r\n\r\n");
	CHECK(run_for(&loop, fd, got, sizeof(got), "fast\n", 30));
	pthread_join(s.t, NULL);
	ans = strstr(got, "full=1 after=0 again=0 body=0 end\n");
	CHECK(!strncmp(got, "HTTP/1.1 413", 12) && ans != NULL);
	CHECK(ans && strstr(ans, "HTTP/1.1 200") && strstr(ans, "fast\n"));
	CHECK(sunk >= 1000 && sunk <= 1000 + BODY_CHUNK);         /* nothing given past "no more" */
	CHECK_INT(abandons, 0);                                   /* taken by the handler */
	close(fd);
	up_server_free(&loop, &h);
}

/* Turn the loop until fd is closed by the server (bounded); true when it was. */
static bool closed_by_server(uv_loop_t *loop, int fd)
{
	char b[4096];

	for (double end = now_s() + 10; now_s() < end; usleep(200)) {
		ssize_t k = recv(fd, b, sizeof(b), MSG_DONTWAIT);
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			return true;
		uv_run(loop, UV_RUN_NOWAIT);
	}
	return false;
}

/* A body the claim refuses (httpd_body_refuse): over max_body_bytes or chunked, the handlers answer
 * at once, on the head alone, with no 100 Continue, and the connection closes after; a small one is
 * read as any unclaimed body and its connection kept. */
TEST(body_refuse)
{
	uv_loop_t loop;
	struct httpd_config cfg = { .listen = "127.0.0.1:0", .max_body_bytes = 1 << 20 };
	struct httpd *h = up_server(&loop, &cfg);
	char got[4096] = "";
	int fd = client(h, "POST /no HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 209715200\r\n\r\n");

	CHECK(run_for(&loop, fd, got, sizeof(got), "end\n", 10));
	CHECK(!strncmp(got, "HTTP/1.1 403", 12));                 /* no 100 first: the answer */
	CHECK(strstr(got, "refused=403 why=not here body=0 end\n") != NULL);
	CHECK(strstr(got, "Connection: close") != NULL);
	CHECK(closed_by_server(&loop, fd));
	close(fd);
	got[0] = '\0';
	fd = client(h, "POST /no HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
	CHECK(run_for(&loop, fd, got, sizeof(got), "end\n", 10));
	CHECK(strstr(got, "refused=403 why=not here body=0 end\n") != NULL); /* before the rest of it */
	CHECK(closed_by_server(&loop, fd));
	close(fd);
	got[0] = '\0';
	fd = client(h, "POST /no HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
		       "GET /after HTTP/1.1\r\nHost: x\r\n\r\n");
	CHECK(run_for(&loop, fd, got, sizeof(got), "fast\n", 10));
	CHECK(strstr(got, "refused=403 why=not here body=5 end\n") != NULL); /* read, and kept alive */
	close(fd);
	CHECK_INT(claims, 0);
	CHECK_INT(abandons, 0);
	up_server_free(&loop, &h);
}

/* A sink that stops the request (HTTPD_SINK_STOP) after 1000 bytes of 64 MiB: the handler answers at
 * once with the sink's error, nothing more reaches the sink, and the connection closes after the
 * answer (a GET the client would pipeline behind the body is never read). */
TEST(body_sink_stop)
{
	uv_loop_t loop;
	struct httpd_config cfg = { .listen = "127.0.0.1:0" };
	struct httpd *h = up_server(&loop, &cfg);
	struct sender s;
	static char got[4096];
	int fd = pair(h);

	got[0] = '\0';
	sender_start(&s, fd, "PUT /up?cut=1000 HTTP/1.1\r\nHost: x\r\nContent-Length: 67108864\r\n\r\n", 64 << 20,
		     false, "GET /after HTTP/1.1\r\nHost: x\r\n\r\n");
	CHECK(run_for(&loop, fd, got, sizeof(got), "end\n", 30));
	CHECK(!strncmp(got, "HTTP/1.1 413", 12) && strstr(got, "full=1 after=0 again=0 body=0 end\n"));
	CHECK(closed_by_server(&loop, fd));
	shutdown(fd, SHUT_RDWR);                                  /* (the sender, if still sending, stops) */
	pthread_join(s.t, NULL);
	CHECK(!strstr(got, "fast\n"));
	CHECK(sunk >= 1000 && sunk <= 1000 + BODY_CHUNK);         /* nothing given past the stop */
	CHECK_INT(abandons, 0);                                   /* taken by the handler */
	close(fd);
	up_server_free(&loop, &h);
}

/* A claimed body is bounded by its progress (body_timeout_ms), not by the header timeout: bytes
 * trickled for 4 header timeouts keep it, a stall of one body timeout closes it and abandons. */
TEST(body_timeout)
{
	uv_loop_t loop;
	struct httpd_config cfg = { .listen = "127.0.0.1:0", .header_timeout_ms = 300, .body_timeout_ms = 500 };
	struct httpd *h = up_server(&loop, &cfg);
	char got[4096] = "", b;
	int fd = client(h, "PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n");
	double stall, closed = 0;

	for (int i = 0; i < 12; i++) {
		run_for(&loop, fd, got, sizeof(got), NULL, 0.1);
		CHECK(send_all(fd, "0123456789", 10));
		stall = now_s();
	}
	run_for(&loop, fd, got, sizeof(got), NULL, 0.05);
	CHECK_INT(sunk, 120);
	CHECK(recv(fd, &b, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN); /* open, nothing said */
	CHECK_INT(abandons, 0);
	for (double end = stall + 5; !closed && now_s() < end; usleep(200)) {
		uv_run(&loop, UV_RUN_NOWAIT);
		if (recv(fd, &b, 1, MSG_DONTWAIT) == 0)
			closed = now_s();
	}
	CHECK(closed > 0);
	printf("# closed %.3f s after the last byte\n", closed - stall);
	CHECK(closed - stall > 0.4 && closed - stall < 2.5);       /* one body timeout after the last byte */
	CHECK_INT(abandons, 1);
	close(fd);
	up_server_free(&loop, &h);
}

int main(void)
{
	RUN(body_stream);
	RUN(body_limits_expect);
	RUN(body_abandon);
	RUN(body_sink_full);
	RUN(body_refuse);
	RUN(body_sink_stop);
	RUN(body_timeout);
	return test_done();
}
