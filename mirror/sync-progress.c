/*
 * sync-progress.c - where a sync stands: <data>/sync.progress once a second (what `sync --status` and
 * the operator's API read), and the caller's live progress line twice a second (mirror_sync_config's
 * on_progress; the CLI draws it).
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
#include "store/store.h"
#include "sync.h"
#include "torrents.h"

#include "sync-int.h"

/* The biggest file in flight, for the progress line. */
static struct mirror__sync_job *biggest_running(const struct mirror__sync *s)
{
	struct mirror__sync_job *big = NULL;

	for (size_t i = 0; i < s->njobs; i++)
		if (s->jobs[i]->state == JOB_RUNNING && s->jobs[i]->w && (!big || s->jobs[i]->f->size > big->f->size))
			big = s->jobs[i];
	return big;
}

/* The run's repos, and how many are done: in the refs pass (s->repos its own list then) every repo of
 * the run is, and the count does not start again. */
static size_t repos_total(const struct mirror__sync *s)
{
	return s->first ? s->nfirst : s->nrepos;
}

static size_t repos_done(const struct mirror__sync *s)
{
	return s->first ? s->nfirst : s->repos_done;
}

/* <data>/sync.progress: where the run stands, for the operator's API (replaced whole: a reader never
 * sees half of it). Best effort: a failure only costs the report. */
static void progress_write_file(struct mirror__sync *s, bool running)
{
	double secs = (double)(uv_hrtime() - s->started_ns) / 1e9;
	json_t *o =
		json_pack("{s:i, s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "pid", (int)getpid(),
			  "run_id", (json_int_t)s->run_id, "running", running, "started_at", (json_int_t)s->started_at,
			  "updated_at", (json_int_t)time(NULL), "repos_total", (json_int_t)repos_total(s), "repos_done",
			  (json_int_t)repos_done(s), "files_total", (json_int_t)s->files_total, "files_done",
			  (json_int_t)s->files_done, "bytes_total", (json_int_t)s->bytes_total, "bytes_done",
			  (json_int_t)s->bytes_done, "bytes_per_s", secs > 0 ? (double)s->bytes_done / secs : 0.0);
	json_t *cur = json_array();
	char *path = mirror_data_path(s->d, MIRROR_DATA_SYNC_PROGRESS), *tmp = xasprintf("%s.tmp", path);

	json_object_set_new(o, "pass", json_string(s->first ? "refs" : "repos"));
	if (running && hub_http_ratelimit_wait(s->http) > 0)
		json_object_set_new(o, "waiting_s",
				    json_integer((json_int_t)(hub_http_ratelimit_wait(s->http) + 0.999)));
	for (size_t i = 0; running && i < s->njobs; i++) {
		struct mirror__sync_job *j = s->jobs[i];
		if (j->state == JOB_RUNNING && j->w && json_array_size(cur) < 8)
			json_array_append_new(cur, json_pack("{s:s, s:s, s:I, s:I}", "repo", j->owner->res->spec,
							     "path", j->f->path, "size", (json_int_t)j->f->size, "done",
							     (json_int_t)store_writer_offset(j->w)));
	}
	json_object_set_new(o, "fetching", cur);
	if (!running)
		json_object_set_new(o, "outcome",
				    json_string(s->report->failed ? (s->report->ok ? "partial" : "failed") : "ok"));
	if (json_dump_file(o, tmp, JSON_COMPACT) || rename(tmp, path))
		unlink(tmp);
	json_decref(o);
	free(tmp);
	free(path);
}

void mirror__sync_progress_write(struct mirror__sync *s, bool running)
{
	if (!s->cfg->provisional) /* an on-demand listing inside serve: sync.progress is the syncs' */
		progress_write_file(s, running);
}

/* Where the run stands, to the caller's progress line (mirror_sync_config.on_progress). */
void mirror__sync_progress_tell(struct mirror__sync *s, bool done)
{
	double secs = (double)(uv_hrtime() - s->started_ns) / 1e9;
	struct mirror__sync_job *big = done ? NULL : biggest_running(s);
	struct mirror_sync_progress p = {
		.repos_done = repos_done(s),
		.repos_total = repos_total(s),
		.files_done = s->files_done,
		.files_total = s->files_total,
		.bytes_done = s->bytes_done,
		.bytes_total = s->bytes_total,
		.bytes_per_s = secs > 0 ? (double)s->bytes_done / secs : 0,
		.waiting_s = hub_http_ratelimit_wait(s->http),
		.done = done,
	};

	if (big && big->f->size > 0) {
		p.file = big->f->path;
		p.file_percent = (int)(100.0 * (double)store_writer_offset(big->w) / (double)big->f->size);
	}
	s->cfg->on_progress(s->cfg->on_progress_ud, &p);
}

void mirror__sync_on_progress(uv_timer_t *t)
{
	struct mirror__sync *s = t->data;
	uint64_t now = uv_now(&s->loop);

	if (now - s->progress_last_ms >= 1000 || !s->progress_last_ms) {
		double wait = hub_http_ratelimit_wait(s->http);
		s->progress_last_ms = now;
		mirror__sync_progress_write(s, true);
		/* a wait of upstream's asking is said once (the log of a serve's run has no progress line) */
		if (wait >= 5 && !s->waiting_said && !s->cfg->on_progress)
			log_info("sync", "waiting %.0f s: upstream asked to slow down (429)", wait);
		s->waiting_said = wait > 0;
	}
	if (s->cfg->on_progress)
		mirror__sync_progress_tell(s, false);
}
