/*
 * s3-loop.c - the S3 client's reads on a libuv loop (see s3.h): libcurl's multi socket interface
 * driven by a uv_poll per socket and one uv_timer, as hub/http drives the upstream's transfers, so
 * that a server answering from the bucket never blocks its loop on it.
 */
#include <errno.h>
#include <stdlib.h>

#include "base/bug.h"
#include "base/xmalloc.h"
#include "s3-int.h"

struct store_s3_loop {
	struct store_s3 *s;
	uv_loop_t *loop;
	CURLM *multi;
	uv_timer_t *timer;          /* freed in its close callback */
	struct store__req *reads;   /* in flight */
	size_t active;
	struct sock *socks;         /* watched: closed at the end even if libcurl did not say */
};

/* One socket libcurl watches, freed in its poll handle's close callback. */
struct sock {
	uv_poll_t poll;
	curl_socket_t fd;
	struct store_s3_loop *l;
	struct sock *prev, *next;
};

/* Hand every finished read its outcome; each is freed after its callback. */
static void finish_done(struct store_s3_loop *l)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(l->multi, &left))) {
		struct store__req *r = NULL, **p;
		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		r->cc = m->data.result;
		curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &r->status);
		curl_multi_remove_handle(l->multi, r->h);
		r->done = true;
		for (p = &l->reads; *p != r; p = &(*p)->next)
			BUG_ON(!*p);
		*p = r->next;
		BUG_ON(l->active == 0);
		l->active--;
		r->on_done(r->ud, store__result(r));
		store__req_free(&r);
	}
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	struct sock *k = p->data;
	struct store_s3_loop *l = k->l;
	int flags = 0, running;

	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (!status && (events & UV_READABLE))
		flags |= CURL_CSELECT_IN;
	if (!status && (events & UV_WRITABLE))
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(l->multi, k->fd, flags, &running);
	finish_done(l);
}

static void on_timer(uv_timer_t *t)
{
	struct store_s3_loop *l = t->data;
	int running;

	curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	finish_done(l);
}

/* libcurl asks for a wake-up in timeout_ms (-1: none); never acted on inside this callback. */
static int set_timer(CURLM *multi, long timeout_ms, void *ud)
{
	struct store_s3_loop *l = ud;

	if (timeout_ms < 0)
		uv_timer_stop(l->timer);
	else
		uv_timer_start(l->timer, on_timer, (uint64_t)timeout_ms, 0);
	return 0;
}

static void sock_closed(uv_handle_t *h)
{
	free(h->data);
}

/* Stop watching k and close it (freed in the close callback). */
static void forget(struct store_s3_loop *l, struct sock *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		l->socks = k->next;
	if (k->next)
		k->next->prev = k->prev;
	uv_poll_stop(&k->poll);
	uv_close((uv_handle_t *)&k->poll, sock_closed);
}

static int watch(CURL *easy, curl_socket_t fd, int action, void *ud, void *socketp)
{
	struct store_s3_loop *l = ud;
	struct sock *k = socketp;
	int events = 0;

	if (action == CURL_POLL_REMOVE) {
		if (k) {
			curl_multi_assign(l->multi, fd, NULL);
			forget(l, k);
		}
		return 0;
	}
	if (!k) {
		k = xcalloc(1, sizeof(*k));
		k->fd = fd;
		k->l = l;
		if (uv_poll_init_socket(l->loop, &k->poll, fd)) {
			free(k);
			return -1;
		}
		k->poll.data = k;
		k->next = l->socks;
		if (l->socks)
			l->socks->prev = k;
		l->socks = k;
		curl_multi_assign(l->multi, fd, k);
	}
	if (action != CURL_POLL_OUT)
		events |= UV_READABLE;
	if (action != CURL_POLL_IN)
		events |= UV_WRITABLE;
	uv_poll_start(&k->poll, events, on_poll);
	return 0;
}

int store_s3_loop_new(struct store_s3 *s, uv_loop_t *loop, struct store_s3_loop **out)
{
	struct store_s3_loop *l = xcalloc(1, sizeof(*l));

	l->s = s;
	l->loop = loop;
	l->multi = curl_multi_init();
	l->timer = xcalloc(1, sizeof(*l->timer));
	uv_timer_init(loop, l->timer);
	l->timer->data = l;
	curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, watch);
	curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
	curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, set_timer);
	curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
	*out = l;
	return 0;
}

int store_s3_loop_get(struct store_s3_loop *l, const char *key, int64_t off, int64_t len,
		      int (*sink)(void *ud, const void *data, size_t n), void (*done)(void *ud, int result), void *ud)
{
	struct store__req *r;

	if (len == 0 || off < 0 || !done)
		return -EINVAL;
	r = store__get_req(l->s, key, off, len, sink, ud);
	r->on_done = done;
	r->next = l->reads;
	l->reads = r;
	l->active++;
	/* libcurl starts it from its timer callback, on the loop: done never runs from inside this call */
	curl_multi_add_handle(l->multi, r->h);
	return 0;
}

size_t store_s3_loop_active(const struct store_s3_loop *l)
{
	return l->active;
}

static void timer_closed(uv_handle_t *h)
{
	free(h);
}

void store_s3_loop_free(struct store_s3_loop **lp)
{
	struct store_s3_loop *l = lp ? *lp : NULL;

	if (!l)
		return;
	*lp = NULL;
	while (l->reads) {
		struct store__req *r = l->reads;
		l->reads = r->next;
		curl_multi_remove_handle(l->multi, r->h);
		r->done = true;
		r->on_done(r->ud, -ECANCELED);
		store__req_free(&r);
	}
	curl_multi_cleanup(l->multi);
	while (l->socks) /* the sockets libcurl closed without a CURL_POLL_REMOVE */
		forget(l, l->socks);
	uv_timer_stop(l->timer);
	uv_close((uv_handle_t *)l->timer, timer_closed);
	free(l);
}
