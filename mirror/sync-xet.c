/*
 * sync-xet.c - a content job fetched through Xet (docs/protocols/xet.md, "Sync through Xet"): where
 * upstream states a file's Xet hash, the job's writer is filled by xet-fetch.c (the read token, the
 * reconstruction, stored chunks read from the store and the others fetched, every chunk hashed). The
 * writer proves the whole file as the plain path does (sha256 and the Xet file hash); only then are the
 * file's chunks recorded for the next revision. A transfer's fault is resumed through Xet as the plain
 * path resumes; whatever else goes wrong falls back to the plain HTTP path (sync-jobs.c), resuming from
 * what was written; bytes that fail the proof are fetched again over plain HTTP from the start.
 */
#include <stdlib.h>
#include <string.h>

#include "base/bug.h"
#include "base/err.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "hub/http/http.h"
#include "hub/hub.h"
#include "hub/upstream.h"
#include "store/store.h"
#include "xet-fetch.h"

#include "sync-int.h"

/* stored chunks read (and hashed) in one turn of the loop before it is given back to the transfers */
#define XET_LOCAL_TURN (16 * 1024 * 1024)

struct mirror__sync_xet {
	struct mirror__sync_job *j;
	struct mirror_xet_fetch *f;
	struct mirror__sync_xet *next_wait; /* in s->xet_wait */
};

void mirror__sync_xet_release(struct mirror__sync_job *j)
{
	if (!j->xet)
		return;
	mirror_xet_fetch_free(&j->xet->f);
	free(j->xet);
	j->xet = NULL;
}

bool mirror__sync_xet_wanted(const struct mirror__sync_job *j)
{
	return !j->s->cfg->no_xet && !j->xet_off && j->owner->spec.hub == HUB_HF && j->f->lfs &&
	       j->f->xet_hash[0] && j->f->size > 0 && j->owner->snap && j->owner->snap->commit[0];
}

static void on_bytes(void *ud, int64_t fetched, int64_t written)
{
	struct mirror__sync_job *j = ud;

	j->fetched += fetched;
	j->s->report->bytes_fetched += fetched;
	j->owner->res->bytes_fetched += fetched;
	j->s->bytes_done += written;   /* the progress line's */
}

static void xs_on_idle(uv_idle_t *h)
{
	struct mirror__sync *s = h->data;
	struct mirror__sync_xet *x = s->xet_wait;

	s->xet_wait = NULL;
	uv_idle_stop(h);
	while (x) {
		struct mirror__sync_xet *next = x->next_wait;
		x->next_wait = NULL;
		mirror_xet_fetch_resume(x->f);
		x = next;
	}
}

static void on_yield(void *ud, struct mirror_xet_fetch *f)
{
	struct mirror__sync_job *j = ud;

	(void)f;
	j->xet->next_wait = j->s->xet_wait;
	j->s->xet_wait = j->xet;
	uv_idle_start(&j->s->xet_idle, xs_on_idle);
}

/* The attempt ended: the file is whole in the writer (commit it), or Xet failed (the plain path). */
static void on_end(void *ud, struct mirror_xet_fetch *f, int fail, const char *why)
{
	struct mirror__sync_job *j = ud;
	bool progressed = store_writer_offset(j->w) > mirror_xet_fetch_began_at(f), again;

	if (!fail) {
		j->xet_used = true;
		mirror__sync_job_commit(j);
		return;
	}
	/* a transfer's fault is resumed through Xet as the plain path resumes (progress, or tries left);
	 * anything else, or no tries left, goes over plain HTTP */
	if (progressed)
		j->tries = 0;
	again = fail == HM_ERR_CURL && (progressed || ++j->tries < j->s->cfg->max_file_tries);
	log_info("sync", "%s: Xet: %s; %s", j->f->path, why ? why : err_str(fail),
		 again ? "trying again" : "over plain HTTP");
	store_writer_abort(&j->w, true);
	if (!again) {
		j->xet_off = true;
		j->tries = 0;
	}
	mirror__sync_xet_release(j);
	mirror__sync_job_start(j);
}

void mirror__sync_xet_start(struct mirror__sync_job *j)
{
	char *base = hub_client_base(j->s->client, HUB_HF);
	char *name = hub_url_escape(j->owner->spec.name, true);
	char *url = xasprintf("%s/api/%s/%s/xet-read-token/%s", base,
			      j->owner->spec.type == HUB_DATASET ? "datasets" : "models", name, j->owner->snap->commit);
	struct mirror_xet_fetch_host h = {
		.http = j->s->http, .catalog = j->s->d->catalog, .store = j->s->d->store, .w = j->w,
		.token_url = url, .token = hub_client_token(j->s->client, HUB_HF), .xet_hash = j->f->xet_hash,
		.size = j->f->size, .local_turn = XET_LOCAL_TURN, .far_reads = true,
		.on_bytes = on_bytes, .yield = on_yield, .on_end = on_end, .ud = j,
	};

	BUG_ON(j->xet || !j->w);
	j->xet = xcalloc(1, sizeof(*j->xet));
	j->xet->j = j;
	mirror_xet_fetch_start(&h, &j->xet->f);
	free(url);
	free(name);
	free(base);
}

/* The job's content is in the store: record where the chunks of upstream's xorbs that made it lie. */
void mirror__sync_xet_record(struct mirror__sync_job *j, const char *sha256)
{
	if (!j->xet)
		return;
	if (mirror_xet_fetch_record(j->xet->f, sha256))
		log_warn("sync", "catalog: %s", catalog_errmsg(j->s->d->catalog));
	mirror__sync_xet_release(j);
}
