/*
 * sync-jobs.c - the sync engine's content jobs (sync-int.h): one job per content (keyed by sha256, or
 * by git blob id when that is all upstream says), every file of every repo that wants it waiting on
 * it; the queue and how many run at once; a transfer hashed as its bytes arrive, resumed from its
 * partial file, retried, and its content moved into the store. sync.c runs the rest of a sync.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/sha.h>
#include <uv.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/path.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "hub/http/http.h"
#include "hub/hub.h"
#include "hub/select.h"
#include "hub/upstream.h"
#include "store/store-xet.h"
#include "xet-record.h"
#include "store/store.h"
#include "sync.h"
#include "torrents.h"

#include "sync-int.h"

struct mirror__sync_job *mirror__sync_job_find(struct mirror__sync *s, const char *key)
{
	/* Linear scan is fine at the sizes one run sees per key lookup... but a 100k-file dataset makes it
	 * quadratic, so keep the array sorted and bisect. */
	size_t lo = 0, hi = s->njobs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(s->jobs[mid]->key, key);
		if (!c)
			return s->jobs[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void mirror__sync_job_insert(struct mirror__sync *s, struct mirror__sync_job *j)
{
	size_t lo = 0, hi = s->njobs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(s->jobs[mid]->key, j->key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (s->njobs == s->capjobs) {
		s->capjobs = s->capjobs ? s->capjobs * 2 : 256;
		s->jobs = xreallocarray(s->jobs, s->capjobs, sizeof(*s->jobs));
	}
	memmove(&s->jobs[lo + 1], &s->jobs[lo], (s->njobs - lo) * sizeof(*s->jobs));
	s->jobs[lo] = j;
	s->njobs++;
}

void mirror__sync_job_add_waiter(struct mirror__sync_job *j, struct srepo *r, size_t idx)
{
	if (j->nwaiters == j->capwaiters) {
		j->capwaiters = j->capwaiters ? j->capwaiters * 2 : 2;
		j->waiters = xreallocarray(j->waiters, j->capwaiters, sizeof(*j->waiters));
	}
	j->waiters[j->nwaiters].repo = r;
	j->waiters[j->nwaiters].idx = idx;
	j->nwaiters++;
}

/* Would anyone be let read r's content? Not when upstream gates it or keeps it private, unless the
 * operator opened it. From the listing: plan_repo keeps the answer in r->is_public, which outlives it. */
bool mirror__sync_repo_public(const struct srepo *r)
{
	json_t *g = r->snap && r->snap->meta ? json_object_get(r->snap->meta, "gated") : NULL;
	json_t *p = r->snap && r->snap->meta ? json_object_get(r->snap->meta, "private") : NULL;
	bool closed = (g && !json_is_false(g) && !(json_is_string(g) && !strcmp(json_string_value(g), "false"))) ||
		      json_is_true(p);
	json_t *o;
	bool open;

	if (!closed)
		return true;
	o = json_loads(r->cr->options ? r->cr->options : "{}", 0, NULL);
	open = json_is_true(json_object_get(o, "open"));
	json_decref(o);
	return open;
}

/* May repo r take content that job j fetched for its owner? Content fetched for a repo anyone may read
 * is public; content fetched for a closed repo only proves that repo may have it (docs/security.md). */
bool mirror__sync_may_take(const struct mirror__sync_job *j, const struct srepo *r)
{
	return j->owner->cr->id == r->cr->id || j->owner->is_public;
}

static bool job_error_is_access(int e)
{
	return e == HM_ERR_GATED || e == HM_ERR_AUTH || e == HM_ERR_NOT_FOUND || e == HM_ERR_DISABLED;
}

/* Tell every file waiting on j its content (sha256) or the error; a refused repo reports its own
 * refusal, not the last owner's. On success, waiters that may not take content fetched for the
 * owner (mirror__sync_may_take) stay, and the caller fetches it again for them; returns how many stayed. */
size_t mirror__sync_job_notify(struct mirror__sync_job *j, int err, const char *sha256)
{
	size_t kept = 0;

	for (size_t i = 0; i < j->nwaiters; i++) {
		struct srepo *r = j->waiters[i].repo;
		if (!err && !mirror__sync_may_take(j, r)) {
			j->waiters[kept++] = j->waiters[i];
			continue;
		}
		if (err) {
			int e = err;
			const char *why = j->error_text ? j->error_text : err_str(err);
			char *t;
			for (size_t k = 0; k < j->ndenied; k++)
				if (j->denied[k].repo == r) {
					e = j->denied[k].err;
					why = j->denied[k].text;
				}
			t = xasprintf("%s: %s", r->wants[j->waiters[i].idx].f->path, why);
			mirror__sync_repo_fail_text(r, e, t);
			free(t);
		} else {
			memcpy(r->wants[j->waiters[i].idx].sha256, sha256, 65);
		}
		if (--r->pending == 0)
			mirror__sync_repo_finish(r);
	}
	j->nwaiters = kept;
	j->parked = false;
	return kept;
}

/* Once every listing is in, no repo can come to ask for a parked job's content any more: its
 * waiters fail with their refusals. */
void mirror__sync_flush_parked(struct mirror__sync *s)
{
	for (size_t i = 0; i < s->njobs; i++) {
		struct mirror__sync_job *j = s->jobs[i];
		if (j->parked && j->state == JOB_FAILED && j->nwaiters)
			mirror__sync_job_notify(j, j->ndenied ? j->denied[j->ndenied - 1].err : HM_ERR_GATED, NULL);
	}
}

/* The job ended (sha256 set on success, err otherwise): tell every waiting file and repo. */
static void job_complete(struct mirror__sync_job *j, int err, const char *sha256)
{
	struct mirror__sync *s = j->s;

	s->jobs_active--;
	s->inflight_bytes -= j->f->size;
	j->state = err ? JOB_FAILED : JOB_OK;
	mirror__sync_twins_release(j, err ? NULL : sha256);
	if (!err) {
		memcpy(j->result_sha, sha256, 65);
		if (catalog_blob_fetched(s->d->catalog, sha256, j->owner->cr->id))
			log_warn("sync", "catalog: %s", catalog_errmsg(s->d->catalog));
		mirror_xet_record(s->d->store, s->d->catalog, sha256);
		s->files_done++;
		s->report->files_fetched++;
		j->owner->res->files_fetched++;
	}
	if (err && job_error_is_access(err)) {
		/* Access is per repo (a gated repo's copy of a shared file). The rule: a repo is synced
		 * when the mirror holds every file it selected, verified; whose request fetched a shared
		 * file does not matter (serving enforces gating). So a refused owner's files keep
		 * waiting while the content is asked for through a repo that was not refused yet, and
		 * fail only when none is left: the outcome does not depend on which repo asked first. */
		struct waiter *next = NULL;

		j->denied = xreallocarray(j->denied, j->ndenied + 1, sizeof(*j->denied));
		j->denied[j->ndenied].repo = j->owner;
		j->denied[j->ndenied].err = err;
		j->denied[j->ndenied].text = xstrdup(j->error_text ? j->error_text : err_str(err));
		j->ndenied++;
		for (size_t i = 0; i < j->nwaiters && !next; i++) {
			bool refused = false;
			for (size_t k = 0; k < j->ndenied; k++)
				refused |= j->denied[k].repo == j->waiters[i].repo;
			if (!refused)
				next = &j->waiters[i];
		}
		if (next) {
			j->owner = next->repo;
			j->f = next->repo->wants[next->idx].f;
			j->tries = 0;
			j->state = JOB_QUEUED;
			mirror__sync_enqueue(s, j);
			mirror__sync_pump(s);
			return;
		}
		if (s->next_listing < s->nrepos || s->listings_active) {
			/* a repo still being listed may want the same content: park until all are in */
			j->parked = true;
			mirror__sync_pump(s);
			return;
		}
	}
	if (mirror__sync_job_notify(j, err, sha256)) {
		/* content fetched for a closed repo, wanted by others: fetched again as the first of them */
		j->owner = j->waiters[0].repo;
		j->f = j->owner->wants[j->waiters[0].idx].f;
		j->tries = 0;
		j->state = JOB_QUEUED;
		mirror__sync_enqueue(s, j);
	}
	mirror__sync_pump(s);
}

static void job_set_error(struct mirror__sync_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void job_set_error(struct mirror__sync_job *j, const char *fmt, ...)
{
	va_list ap;
	char buf[512];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	free(j->error_text);
	j->error_text = xstrdup(buf);
}

static int job_on_response(void *ud, const struct hub_http_resp *resp)
{
	struct mirror__sync_job *j = ud;
	int64_t off = store_writer_offset(j->w);
	int r;

	j->status = resp->status;
	if (resp->status == 206 && off > 0) {
		char want[40];
		int n = snprintf(want, sizeof(want), "bytes %lld-", (long long)off);
		if (!resp->content_range || strncmp(resp->content_range, want, (size_t)n)) {
			job_set_error(j, "range answer starts elsewhere (%s)",
				      resp->content_range ? resp->content_range : "no Content-Range");
			return j->fail = HM_ERR_UPSTREAM;
		}
		return 0;
	}
	if (resp->status == 200) {
		if (off > 0) {
			/* The server ignored our Range: take the whole body from the start. */
			log_debug("sync", "%s: server ignored Range, restarting", j->f->path);
			r = store_writer_truncate(j->w);
			if (r)
				return j->fail = r;
			j->attempt_start = 0;
		}
		return 0;
	}
	job_set_error(j, "upstream answered %ld%s%s", resp->status, resp->error_message ? ": " : "",
		      resp->error_message ? resp->error_message : "");
	j->fail = resp->status == 416 ? HM_ERR_SIZE_MISMATCH
				       : hub_classify_error(j->owner->spec.hub, resp->status, resp->error_code);
	return j->fail;
}

static int job_on_body(void *ud, const char *data, size_t n)
{
	struct mirror__sync_job *j = ud;
	int r = store_writer_write(j->w, data, n);

	if (r) {
		job_set_error(j, "%s", r == HM_ERR_SIZE_MISMATCH ? "more bytes than the listing promised" : err_str(r));
		return j->fail = r;
	}
	j->fetched += (int64_t)n;
	j->s->bytes_done += (int64_t)n;
	j->s->report->bytes_fetched += (int64_t)n;
	j->owner->res->bytes_fetched += (int64_t)n;
	return 0;
}

/* Errors after which trying again cannot help. */
static bool job_error_final(int e)
{
	return job_error_is_access(e) || e == -ENOSPC || e == -EDQUOT || e == -EROFS || e == -EACCES;
}

static void job_committed(struct mirror__sync_job *j, int r, const char *sha);

/* With a bucket, the commit (the content's upload to it) runs on a worker: the loop's other transfers
 * go on meanwhile. The writer is the worker's until it ends. */
static void commit_work(uv_work_t *w)
{
	struct mirror__sync_job *j = w->data;

	j->commit_result = store_writer_commit(&j->committing, j->commit_sha);
}

static void commit_after(uv_work_t *w, int status)
{
	struct mirror__sync_job *j = w->data;

	(void)status;
	job_committed(j, j->commit_result, j->commit_sha);
}

void mirror__sync_job_commit(struct mirror__sync_job *j)
{
	char sha[65];

	if (store_in_bucket(j->s->d->store)) {
		j->committing = j->w;
		j->w = NULL;
		j->commit_work.data = j;
		if (!uv_queue_work(&j->s->loop, &j->commit_work, commit_work, commit_after))
			return;
		j->w = j->committing; /* (no worker: committed here) */
		j->committing = NULL;
	}
	job_committed(j, store_writer_commit(&j->w, sha), sha);
}

static void job_committed(struct mirror__sync_job *j, int r, const char *sha)
{
	if (!r) {
		mirror__sync_xet_record(j, sha);
		job_complete(j, 0, sha);
		return;
	}
	mirror__sync_xet_release(j);
	if (j->xet_used) {
		/* bytes that came through Xet failed the proof: fetched again over plain HTTP */
		log_info("sync", "%s: Xet: %s; over plain HTTP", j->f->path, err_str(r));
		j->xet_off = true;
		j->xet_used = false;
	}
	if (r == HM_ERR_HASH_MISMATCH || r == HM_ERR_SIZE_MISMATCH) {
		/* The store dropped the bad bytes; fetch them again from the start. */
		job_set_error(j, "%s", err_str(r));
		if (++j->tries < j->s->cfg->max_file_tries) {
			log_info("sync", "%s: %s, fetching again", j->f->path, err_str(r));
			mirror__sync_job_start(j);
			return;
		}
	} else {
		job_set_error(j, "store: %s", err_str(r));
	}
	job_complete(j, r, NULL);
}

static void job_on_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct mirror__sync_job *j = ud;
	int e = j->fail ? j->fail : result;
	bool progressed;

	j->req = NULL;
	if (!e && (resp->status == 200 || resp->status == 206)) {
		mirror__sync_job_commit(j);
		return;
	}
	if (!e)
		e = HM_ERR_HTTP;
	if (!j->fail || !j->error_text)
		job_set_error(j, "%s%s%s", err_str(e), resp->transport_error ? ": " : "",
			      resp->transport_error ? resp->transport_error : "");
	progressed = store_writer_offset(j->w) > j->attempt_start;
	if (e == HM_ERR_UPSTREAM || e == HM_ERR_SIZE_MISMATCH) {
		/* a confused range answer or 416: start over without resuming */
		store_writer_abort(&j->w, false);
	} else if (!store_writer_streams(j->w) || j->fail) {
		store_writer_abort(&j->w, true);
	} /* else kept (the transfer broke, not the writer nor the answer): a content streamed into the bucket
	   * goes on from its offset, its upload with it */
	if (!job_error_final(e) && (progressed || ++j->tries < j->s->cfg->max_file_tries)) {
		log_debug("sync", "%s: %s, resuming", j->f->path, j->error_text);
		if (progressed)
			j->tries = 0;
		mirror__sync_job_start(j);
		return;
	}
	store_writer_abort(&j->w, false); /* (a streamed one's upload dropped) */
	job_complete(j, e, NULL);
}

void mirror__sync_job_start(struct mirror__sync_job *j)
{
	struct store_expect ex = {
		.sha256 = j->f->sha256[0] ? j->f->sha256 : NULL,
		/* LFS files' git ids name the pointer, not the content: check only regular files'. */
		.git_oid = !j->f->lfs && j->f->git_oid[0] ? j->f->git_oid : NULL,
		.size = j->f->size,
	};
	struct hub_http_req_opts o = {
		.url = j->f->url,
		.token = hub_client_token(j->s->client, j->owner->spec.hub),
		.token_cookie = j->owner->spec.hub == HUB_MS ? "m_session_id" : NULL,
		.on_response = job_on_response,
		.on_body = job_on_body,
		.on_done = job_on_done,
		.ud = j,
	};
	int r;

	j->fail = 0;
	j->status = 0;
	j->xet_used = false;
	r = j->w ? 0 : store_writer_new(j->s->d->store, &ex, true, &j->w);
	if (r) {
		job_set_error(j, "store: %s", err_str(r));
		job_complete(j, r, NULL);
		return;
	}
	store_writer_expect_xet(j->w, j->f->xet_hash);   /* upstream's, where it says one */
	/* bigger than the cache's bound: straight into the bucket as it comes, never whole on local disk */
	store_writer_stream(j->w);
	j->attempt_start = store_writer_offset(j->w);
	if (j->attempt_start == j->f->size) {
		mirror__sync_job_commit(j); /* a previous run got every byte but did not publish */
		return;
	}
	if (mirror__sync_xet_wanted(j)) {
		mirror__sync_xet_start(j);
		return;
	}
	o.range_start = j->attempt_start;
	j->req = hub_http_request(j->s->http, &o);
	if (!j->req) {
		store_writer_abort(&j->w, true);
		job_set_error(j, "bad file URL");
		job_complete(j, -EINVAL, NULL);
	}
}

/* Start queued jobs while the limits allow. */
void mirror__sync_pump(struct mirror__sync *s)
{
	while (s->queue_head && s->jobs_active < (size_t)s->cfg->max_parallel_files &&
	       (s->jobs_active == 0 || s->inflight_bytes + s->queue_head->f->size <= s->cfg->max_inflight_bytes)) {
		struct mirror__sync_job *j = s->queue_head;
		s->queue_head = j->next;
		if (!s->queue_head)
			s->queue_tail = NULL;
		if (mirror__sync_twin_check(s, j))
			continue; /* taken from a twin, or waiting for one */
		s->jobs_active++;
		s->inflight_bytes += j->f->size;
		j->state = JOB_RUNNING;
		mirror__sync_job_start(j);
	}
}

void mirror__sync_enqueue(struct mirror__sync *s, struct mirror__sync_job *j)
{
	j->next = NULL;
	if (s->queue_tail)
		s->queue_tail->next = j;
	else
		s->queue_head = j;
	s->queue_tail = j;
}
