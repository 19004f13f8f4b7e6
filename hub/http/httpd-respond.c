/*
 * httpd-respond.c - the answers a handler gives (httpd_respond, httpd_respond_str, httpd_respond_file,
 * httpd_respond_file_framed, their gated forms, httpd_respond_spliced, httpd_add_header; httpd.h): the
 * status line and headers into the connection's output buffer, and a file body set up for sendfile
 * (corked when big; a spliced one always). httpd.c sends them.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/bug.h"
#include "base/xmalloc.h"
#include "httpd-int.h"

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 416: return "Range Not Satisfiable";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Status";
	}
}

void httpd_add_header(struct httpd_req *r, const char *name, const char *value)
{
	/* Refuse header injection from values that came from elsewhere. */
	if (strpbrk(name, "\r\n:") || strpbrk(value, "\r\n"))
		return;
	buf_addf(&r->resp_head, "%s: %s\r\n", name, value);
}

void httpd_add_headerf(struct httpd_req *r, const char *name, const char *fmt, ...)
{
	va_list ap;
	char *v;

	va_start(ap, fmt);
	v = xvasprintf(fmt, ap);
	va_end(ap);
	httpd_add_header(r, name, v);
	free(v);
}

static void start_response(struct conn *c, int status, const char *ctype, int64_t length)
{
	struct httpd_req *r = &c->req;
	time_t now = time(NULL);

	/* The Date header changes once a second: format it once a second (the loop is one thread). */
	if (now != c->h->date_at) {
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(c->h->date, sizeof(c->h->date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		c->h->date_at = now;
	}
	r->status = status;
	r->answered = true;
	c->close_after = !r->keep_alive || c->h->closing || c->h->draining;
	buf_reset(&c->out);
	c->out_off = 0;
	c->zeros_left = 0;
	buf_addf(&c->out, "HTTP/1.1 %d %s\r\nDate: %s\r\nServer: hubmirror\r\n", status, reason(status), c->h->date);
	if (ctype)
		buf_addf(&c->out, "Content-Type: %s\r\n", ctype);
	/* 204 and 304 have no body; a Content-Length: 0 on a 304 would misstate the length of the
	 * representation a cache holds. */
	if (status != 204 && status != 304)
		buf_addf(&c->out, "Content-Length: %lld\r\n", (long long)length);
	if (c->close_after)
		buf_adds(&c->out, "Connection: close\r\n");
	else if (c->parser.http_major == 1 && c->parser.http_minor == 0)
		buf_adds(&c->out, "Connection: keep-alive\r\n"); /* HTTP/1.0 closes unless told */
	buf_add(&c->out, r->resp_head.data, r->resp_head.len);
	buf_adds(&c->out, "\r\n");
}

#define SPILL_MIN ((size_t)1 << 20)

void httpd_respond(struct httpd_req *r, int status, const char *content_type, const void *body, size_t len)
{
	struct conn *c = r->c;

	if (r->answered || c->job) /* once, and a deferred one by its done callback only */
		return;
	if (!r->head && status != 304 && status != 204 && len >= SPILL_MIN && c->h->cfg.spill_dir) {
		/* a big body (a repo info of 100,000 files, an unpaged listing) is built once, then leaves
		 * from a file: a thousand slow readers of it pin no heap */
		int fd = open(c->h->cfg.spill_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		size_t done = 0;
		while (fd >= 0 && done < len) {
			ssize_t n = write(fd, (const char *)body + done, len - done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			done += (size_t)n;
		}
		if (fd >= 0 && done == len) {
			c->h->stats.bodies_spilled++;
			httpd_respond_file(r, status, content_type, fd, 0, (int64_t)len);
			/* what built it (tens of MB of JSON, freed by the caller) goes back to the system
			 * rather than staying in malloc's arenas between such requests */
			c->h->trim_pending = true;
			return;
		}
		if (fd >= 0)
			close(fd); /* a full disk: keep it in memory */
	}
	start_response(c, status, content_type, (int64_t)len);
	if (!r->head && status != 304 && status != 204)
		buf_add(&c->out, body, len);
}

void httpd_respond_str(struct httpd_req *r, int status, const char *content_type, const char *body)
{
	httpd_respond(r, status, content_type, body, strlen(body));
}

void httpd_respond_file_gated(struct httpd_req *r, int status, const char *content_type, int fd, int64_t offset,
			      int64_t length, httpd_gate_fn gate, void (*release)(void *ud), void *ud)
{
	httpd_respond_file_framed_gated(r, status, content_type, NULL, 0, fd, offset, length, 0, gate, release, ud);
}

void httpd_respond_file_framed_gated(struct httpd_req *r, int status, const char *content_type, const void *head,
				     size_t head_len, int fd, int64_t offset, int64_t length, int64_t zeros,
				     httpd_gate_fn gate, void (*release)(void *ud), void *ud)
{
	struct conn *c = r->c;

	if (r->answered || c->job) {
		if (fd >= 0)
			close(fd);
		if (release)
			release(ud);
		return;
	}
	httpd_respond_file_framed(r, status, content_type, head, head_len, fd, offset, length, zeros);
	if (fd >= 0 && length > 0 && c->file_fd == fd) {
		c->gate = gate;
		c->gate_release = release;
		c->gate_ud = ud;
	} else if (release) {
		release(ud); /* HEAD or no file bytes: no body to gate */
	}
}

void httpd_respond_file(struct httpd_req *r, int status, const char *content_type, int fd, int64_t offset,
			int64_t length)
{
	struct conn *c = r->c;

	if (r->answered || c->job) {
		close(fd);
		return;
	}
	start_response(c, status, content_type, length);
	if (r->head || length == 0) {
		close(fd);
		return;
	}
	c->file_fd = fd;
	c->file_off = offset;
	c->file_left = length;
	if (length >= (1 << 20)) {
		/* Cork big answers: headers and body leave in full-sized segments (as nginx's tcp_nopush). */
		int one = 1;
		setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &one, sizeof(one));
		c->corked = true;
	}
}

void httpd_respond_file_framed(struct httpd_req *r, int status, const char *content_type, const void *head,
			       size_t head_len, int fd, int64_t offset, int64_t length, int64_t zeros)
{
	struct conn *c = r->c;

	if (r->answered || c->job) {
		if (fd >= 0)
			close(fd);
		return;
	}
	start_response(c, status, content_type, (int64_t)head_len + length + zeros);
	if (r->head) {
		if (fd >= 0)
			close(fd);
		return;
	}
	buf_add(&c->out, head, head_len);
	if (length > 0) {
		c->file_fd = fd;
		c->file_off = offset;
		c->file_left = length;
	} else if (fd >= 0) {
		close(fd);
	}
	c->zeros_left = zeros;
	if (length + zeros >= (1 << 20)) {
		int one = 1;
		setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &one, sizeof(one));
		c->corked = true;
	}
}

void httpd_respond_spliced(struct httpd_req *r, int status, const char *content_type, const void *mem,
			   size_t mem_len, int fd, const struct httpd_part *parts, size_t n)
{
	struct conn *c = r->c;
	uint64_t length = 0;
	int one = 1;

	if (r->answered || c->job) {
		if (fd >= 0)
			close(fd);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		/* (a piece of memory past what was given is the caller's bug: never read past it) */
		BUG_ON(!parts[i].file && (parts[i].off > mem_len || parts[i].len > mem_len - parts[i].off));
		length += parts[i].len;
	}
	start_response(c, status, content_type, (int64_t)length);
	if (r->head || length == 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	c->file_fd = fd;
	c->parts = xreallocarray(NULL, n, sizeof(*parts));
	memcpy(c->parts, parts, n * sizeof(*parts));
	c->nparts = n;
	c->part_at = 0;
	c->part_sent = 0;
	c->part_mem = xmalloc(mem_len + 1);
	if (mem_len)
		memcpy(c->part_mem, mem, mem_len);
	/* many small pieces between the file's: corked, they leave in full-sized segments */
	setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &one, sizeof(one));
	c->corked = true;
}
