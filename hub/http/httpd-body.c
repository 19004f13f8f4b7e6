/*
 * httpd-body.c - request bodies streamed to a handler's sink (httpd_set_body_claim; httpd.h): the
 * claim asked once a head is read, the body's bytes handed on as http-parser gives them, the sink
 * taken by a handler or abandoned exactly once. httpd.c reads the bytes (in BODY_CHUNK reads while a
 * claimed body streams) and bounds the body's progress with its T_BODY timer.
 */
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

void httpd__body_data(struct conn *c, const char *at, size_t n)
{
	struct httpd_req *r = &c->req;

	/* Progress is noted, not timed: the T_BODY timer looks at it when it fires (a uv_timer_start
	 * per read would cost more than the read). uv_now is the loop's cached time. */
	c->body_at = uv_now(c->h->loop);
	if (!r->sink_held || r->sink_full)
		return; /* dropped: the sink said it wants no more */
	if (r->sink.data(r->sink.ud, at, n))
		r->sink_full = true;
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
