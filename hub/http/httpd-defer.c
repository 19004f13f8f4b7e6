/*
 * httpd-defer.c - deferred answers (httpd_defer, httpd_defer_aside; httpd.h): a handler hands the
 * building of a big answer to a job on libuv's threadpool, and the job's done callback answers on the
 * loop. Three lanes (the main one, cfg.max_workers at once, the aside one and the write one), each a queue of waiting
 * jobs bounded by cfg.max_waiting in all; past it, or when the connection already has a job, or the
 * server is closing, the answer is 503 with Retry-After. A job whose connection closed meanwhile
 * only gives its done callback a NULL request.
 */
#include <stdlib.h>

#include "base/xmalloc.h"
#include "httpd-int.h"

static void job_work(uv_work_t *w)
{
	struct httpd__job *j = w->data;

	j->fn(j->ud); /* on the threadpool: nothing of httpd is touched here */
}

static void jobs_start(struct httpd *h);

/* On the loop, after job_work: answer the request if its connection is still there. */
static void job_after(uv_work_t *w, int status)
{
	struct httpd__job *j = w->data;
	struct httpd *h = j->h;
	struct conn *c = j->c;

	h->stats.deferred_running--;
	h->running[j->lane]--;
	if (c) {
		c->job = NULL;
		if (status < 0) { /* never ran (it cannot be cancelled today, but say so if it were) */
			httpd_add_header(&c->req, "Retry-After", "1");
			httpd_respond_str(&c->req, 503, "text/plain", "server busy, try again\n");
		}
	}
	j->done(j->ud, c && status >= 0 ? &c->req : NULL);
	free(j);
	if (c && !c->job) { /* done may have deferred again: then the next job answers */
		h->stats.deferred_total++;
		if (!c->req.answered)
			httpd_respond_str(&c->req, 500, "text/plain", "handler gave no answer\n");
		httpd__send_answer(c);
	}
	if (h->freed && !h->stats.deferred_running)
		httpd__destroy(h);
	else
		jobs_start(h);
}

/* Start waiting jobs while fewer than the lane's workers run (cfg.max_workers, max_workers_aside);
 * one whose connection closed meanwhile is only given back to its done callback. */
static void jobs_start(struct httpd *h)
{
	for (unsigned l = 0; l < 3; l++) {
		unsigned max = l == 2 ? h->cfg.max_workers_write : l ? h->cfg.max_workers_aside : h->cfg.max_workers;
		while (h->waiting[l] && h->running[l] < max) {
			struct httpd__job *j = h->waiting[l];

			h->waiting[l] = j->next;
			if (!h->waiting[l])
				h->waiting_tail[l] = NULL;
			h->stats.deferred_waiting--;
			if (!j->c) {
				j->done(j->ud, NULL);
				free(j);
				continue;
			}
			h->stats.deferred_running++;
			h->running[l]++;
			uv_queue_work(h->loop, &j->work, job_work, job_after); /* fails only without a callback */
		}
	}
}

static void defer_on(struct httpd_req *r, unsigned lane, httpd_work_fn work, httpd_done_fn done, void *ud);

void httpd_defer(struct httpd_req *r, httpd_work_fn work, httpd_done_fn done, void *ud)
{
	defer_on(r, 0, work, done, ud);
}

void httpd_defer_aside(struct httpd_req *r, httpd_work_fn work, httpd_done_fn done, void *ud)
{
	defer_on(r, 1, work, done, ud);
}

void httpd_defer_write(struct httpd_req *r, httpd_work_fn work, httpd_done_fn done, void *ud)
{
	defer_on(r, 2, work, done, ud);
}

static void defer_on(struct httpd_req *r, unsigned lane, httpd_work_fn work, httpd_done_fn done, void *ud)
{
	struct conn *c = r->c;
	struct httpd *h = c->h;
	struct httpd__job *j;

	if (r->answered || c->job || h->closing || h->stats.deferred_waiting >= h->cfg.max_waiting) {
		if (!r->answered) {
			h->stats.deferred_refused++;
			httpd_add_header(r, "Retry-After", "1");
			httpd_respond_str(r, 503, "text/plain", "server busy, try again\n");
		}
		done(ud, NULL);
		return;
	}
	j = xcalloc(1, sizeof(*j));
	j->work.data = j;
	j->h = h;
	j->c = c;
	j->fn = work;
	j->done = done;
	j->ud = ud;
	j->lane = lane;
	c->job = j;
	if (h->waiting_tail[lane])
		h->waiting_tail[lane]->next = j;
	else
		h->waiting[lane] = j;
	h->waiting_tail[lane] = j;
	h->stats.deferred_waiting++;
	jobs_start(h);
}
