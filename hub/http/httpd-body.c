/*
 * httpd-body.c - request bodies streamed to a handler's sink (httpd_set_body_claim; httpd.h): the
 * claim asked once a head is read, the body's bytes handed on as http-parser gives them, the sink
 * taken by a handler or abandoned exactly once, and the interim "100 Continue" a client that asked
 * for it waits for before it sends a body. httpd.c reads the bytes (in BODY_CHUNK reads while a
 * claimed body streams) and bounds the body's progress with its T_BODY timer.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <http_parser.h>

#include "base/bug.h"
#include "httpd-int.h"

void httpd_set_body_claim(struct httpd *h, httpd_claim_fn fn, void *ud)
{
	h->claim = fn;
	h->claim_ud = ud;
}

void *httpd_body_take(struct httpd_req *r)
{
	if (!r->sink_held)
		return NULL;
	r->sink_held = false;
	return r->sink.ud;
}

bool httpd__body_claim(struct conn *c)
{
	struct httpd_req *r = &c->req;
	struct httpd_body_sink sink = { 0 };

	if (!c->h->claim || r->path[0] != '/') /* a bad target is answered 400, its body read as any */
		return false;
	if (!c->h->claim(c->h->claim_ud, r, &sink))
		return false;
	BUG_ON(!sink.data || !sink.abandon); /* a claim that took the body gives it somewhere to go */
	r->sink = sink;
	r->claimed = true;
	r->sink_held = true;
	r->sink_full = false;
	c->body_streaming = true;
	c->body_at = uv_now(c->h->loop);
	return true;
}

int httpd__body_data(struct conn *c, const char *at, size_t n)
{
	struct httpd_req *r = &c->req;
	int e;

	/* Progress is noted, not timed: the T_BODY timer looks at it when it fires (a uv_timer_start
	 * per read would cost more than the read). uv_now is the loop's cached time. */
	c->body_at = uv_now(c->h->loop);
	if (!r->sink_held || r->sink_full)
		return 0; /* dropped: the sink said it wants no more */
	if ((e = r->sink.data(r->sink.ud, at, n)))
		r->sink_full = true;
	return e == HTTPD_SINK_STOP;
}

void httpd_body_refuse(struct httpd_req *r, int status, const char *why)
{
	r->body_refused = status;
	snprintf(r->body_refused_why, sizeof(r->body_refused_why), "%s", why ? why : "");
}

int httpd_body_refused(const struct httpd_req *r, const char **why)
{
	if (why)
		*why = r->body_refused_why[0] ? r->body_refused_why : NULL;
	return r->body_refused;
}

void httpd__body_abandon(struct conn *c)
{
	struct httpd_req *r = &c->req;

	c->body_streaming = false;
	if (!r->sink_held)
		return;
	r->sink_held = false;
	r->sink.abandon(r->sink.ud);
}

void httpd__body_expect(struct conn *c, const http_parser *p)
{
	const char *e = httpd_header(&c->req, "Expect");
	bool body = (p->content_length != ULLONG_MAX && p->content_length > 0) || (p->flags & F_CHUNKED);

	/* An HTTP/1.0 client knows no interim answers: its expectation is ignored (RFC 9110 10.1.1). */
	if (!body || !e || strcasecmp(e, "100-continue") || p->http_minor < 1)
		return;
	c->cont_pending = true;
	c->cont_sent = 0;
}

int httpd__continue_flush(struct conn *c)
{
	static const char line[] = "HTTP/1.1 100 Continue\r\n\r\n";

	/* Tiny, and sent when nothing else is in flight: it nearly always goes whole; a part that does
	 * not is finished before anything else is written (the final answer flushes it first). */
	while (c->cont_pending) {
		ssize_t n = httpd__send(c, line + c->cont_sent, sizeof(line) - 1 - c->cont_sent);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		c->cont_sent += (size_t)n;
		c->h->stats.bytes_sent += (uint64_t)n;
		if (c->cont_sent == sizeof(line) - 1)
			c->cont_pending = false;
	}
	return 1;
}
