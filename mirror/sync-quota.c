/*
 * sync-quota.c - the store quota during a sync (mirror_sync_config.quota_bytes; docs/operations.md).
 *
 * The store's size is what the catalog's blobs add up to (partial downloads are not counted). A run
 * starts from that figure and reserves, as each repo is planned, the bytes of the contents it will
 * fetch that neither the store nor another job of the run brings. When a repo would take the store
 * over the quota, old snapshots are dropped to make room (catalog_quota_evict: removed repos' first,
 * then tracked repos' old ones, oldest first; never a ref's target or a pinned one), and the contents
 * only they held are deleted at once, except those the run itself names. When even dropping every
 * candidate would not make room, nothing is dropped and that repo fails with outcome "quota": the
 * others go on, and the repo keeps its previous snapshot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/err.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "store/store.h"
#include "torrents.h"

#include "sync-int.h"

/* The content a want names when the store has it (its sha256, or the one its git id maps to), else NULL. */
static const char *stored_sha(struct mirror__sync *s, const struct hub_file *f, char buf[65])
{
	if (f->sha256[0])
		return store_has(s->d->store, f->sha256, f->size) ? f->sha256 : NULL;
	if (f->git_oid[0] && !catalog_sha256_for_git_oid(s->d->catalog, f->git_oid, f->size, buf) &&
	    store_has(s->d->store, buf, f->size))
		return buf;
	return NULL;
}

static void held_add_repos(json_t *set, const struct srepo *rs, size_t n)
{
	for (size_t i = 0; rs && i < n; i++)
		for (size_t k = 0; rs[i].wants && k < rs[i].nwants; k++)
			if (rs[i].wants[k].sha256[0])
				json_object_set_new(set, rs[i].wants[k].sha256, json_true());
}

/* Does a writer want the content now (a catalog row or a live hold: store_reap)? */
static int quota_wanted(void *ud, const char *sha256)
{
	struct mirror_data *d = ud;

	return catalog_blob_known(d->catalog, sha256);
}

static bool held_cb(void *ud, const char *sha256)
{
	return json_object_get(ud, sha256) != NULL;
}

static double mib(int64_t b)
{
	return (double)b / (1024.0 * 1024.0);
}

int mirror__sync_quota_admit(struct srepo *r)
{
	struct mirror__sync *s = r->s;
	int64_t quota = s->cfg->quota_bytes, need = 0, over, freed = 0, dropped = 0;
	json_t *mine, *held;
	char (*dead)[65] = NULL;
	size_t ndead = 0;
	int e;

	if (quota <= 0)
		return 0;
	/* What this repo adds: contents neither in the store nor already a job of this run, each once. */
	mine = json_object();
	for (size_t i = 0; i < r->nwants; i++) {
		const struct hub_file *f = r->wants[i].f;
		const char *key = f->sha256[0] ? f->sha256 : f->git_oid;
		char buf[65];
		const char *have = stored_sha(s, f, buf);

		if (have) {
			json_object_set_new(mine, have, json_true()); /* in use: eviction keeps it */
			continue;
		}
		if (!key[0] || mirror__sync_job_find(s, key) || json_object_get(mine, key))
			continue;
		json_object_set_new(mine, key, json_true());
		need += f->size;
	}
	if (s->quota_used < 0 && catalog_store_bytes(s->d->catalog, &s->quota_used)) {
		json_decref(mine);
		mirror__sync_repo_fail(r, HM_ERR_SQLITE, "catalog: %s", catalog_errmsg(s->d->catalog));
		return HM_ERR_SQLITE;
	}
	over = s->quota_used + s->quota_reserved + need - quota;
	if (need == 0 || over <= 0) {
		s->quota_reserved += need;
		json_decref(mine);
		return 0;
	}
	/* Make room: whatever this run names (this repo's stored contents, other repos' resolved files,
	 * contents fetched earlier in the run) stays. */
	held = mine;
	held_add_repos(held, s->repos, s->nrepos);
	if (s->first != s->repos)
		held_add_repos(held, s->first, s->nfirst);
	for (size_t i = 0; i < s->njobs; i++)
		if (s->jobs[i]->state == JOB_OK)
			json_object_set_new(held, s->jobs[i]->result_sha, json_true());
	e = catalog_quota_evict(s->d->catalog, over, held_cb, held, &freed, &dropped, &dead, &ndead);
	json_decref(held);
	if (e) {
		mirror__sync_repo_fail(r, e, "catalog: %s", catalog_errmsg(s->d->catalog));
		return e;
	}
	if (freed < over) {
		mirror__sync_repo_fail(r, HM_ERR_QUOTA,
			       "store quota %.1f MiB: this snapshot needs %.1f MiB more; the store holds %.1f MiB "
			       "(%.1f MiB more reserved by this run) and dropping every old unpinned snapshot "
			       "would free %.1f MiB",
			       mib(quota), mib(need), mib(s->quota_used), mib(s->quota_reserved), mib(freed));
		return HM_ERR_QUOTA;
	}
	for (size_t i = 0; i < ndead; i++) {
		/* (a content a commit of the mirror's own repos claimed meanwhile is put back: maint.h) */
		int re = store_reap(s->d->store, dead[i], quota_wanted, s->d);
		if (re < 0 && re != -ENOENT)
			log_warn("sync", "quota: cannot delete blob %s: %s", dead[i], err_str(re));
	}
	free(dead);
	s->quota_used -= freed;
	s->quota_reserved += need;
	s->report->quota_dropped += dropped;
	s->report->quota_freed += freed;
	log_info("sync", "quota: dropped %lld old snapshots (%.1f MiB) to make room for %s", (long long)dropped,
		 mib(freed), r->res->spec);
	return 0;
}
