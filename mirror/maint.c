/*
 * maint.c - gc and verify over a data directory (see maint.h).
 *
 * Order matters for crash safety. gc commits the catalog first and deletes files after, so a crash
 * in between leaves unreferenced files (which the next gc removes as orphans), never a catalog row
 * without its file. verify quarantines first and updates the catalog after; a crash in between
 * leaves a catalog blob without its file, which the next verify reports as missing and repairs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "gitrepo.h"
#include "maint.h"
#include "progress.h"
#include "share.h"
#include "store/bucket.h"
#include "store/store-xet.h"
#include "xet-record.h"
#include "store/bucket.h"
#include "store/store.h"
#include "torrents.h"

struct gc_walk {
	struct mirror_data *d;
	struct mirror_share *share; /* with a bucket: the other mirrors' live sets */
	struct mirror_gc_report *rep;
	int64_t partial_max_age_s;
	bool dry_run;
	const struct mirror_progress *progress;
	int64_t seen, total;
};

/* Does a writer want this content now (a catalog row: a commit named it; or a live hold)? */
static int gc_wanted(void *ud, const char *sha256)
{
	struct mirror_data *d = ud;

	return catalog_blob_known(d->catalog, sha256);
}

/* gc's question with a bucket: the catalog (as gc_wanted), then the other mirrors' live sets. */
static int gc_keeps(void *ud, const char *sha256)
{
	struct gc_walk *g = ud;
	int w = gc_wanted(g->d, sha256);

	if (!w && g->share && mirror_share_names(g->share, sha256))
		w = STORE_REAP_SHARED;
	return w;
}

/* Delete a content nothing names, unless a writer holds it by the time it is moved aside (then it is
 * kept, and counted), or (with a bucket) another mirror names it or it is young. Returns 0 (gone),
 * > 0 (kept) or an error. */
static int gc_reap(struct gc_walk *g, const char *sha256)
{
	struct mirror_gc_report *rep = g->rep;
	int r = store_reap(g->d->store, sha256, gc_keeps, g);

	if (r == 1)
		rep->restored++;
	else if (r == STORE_REAP_SHARED)
		rep->bucket_kept_shared++;
	else if (r == STORE_REAP_YOUNG)
		rep->bucket_kept_young++;
	else if (r && r != -ENOENT)
		log_warn("gc", "cannot delete blob %s: %s", sha256, err_str(r));
	return r == -ENOENT ? 0 : r;
}

static int gc_visit(void *ud, const char *name, const char *path, int64_t age_s)
{
	struct gc_walk *g = ud;

	g->seen++;
	mirror_progress_say(g->progress, g->seen, g->total > g->seen ? g->total : g->seen, 0, 0);
	if (store_is_partial(name)) {
		if (age_s < g->partial_max_age_s)
			return 0;
		if (!g->dry_run && store_partial_remove(path) < 0)
			return 0; /* (a writer has it now, whatever its age) */
		g->rep->partials_removed++;
		return 0;
	}
	if (hex_is_lower(name, 64)) {
		int known = catalog_blob_known(g->d->catalog, name);
		if (known < 0)
			return known;
		if (known)
			return 0;
	}
	/* (a dry run does not reap: what another mirror names is counted as a reap would) */
	if (g->dry_run && g->share && hex_is_lower(name, 64) && mirror_share_names(g->share, name)) {
		g->rep->bucket_kept_shared++;
		return 0;
	}
	/* Not a blob the catalog knows nor a writer holds (or not a blob name at all): an orphan. */
	if (!g->dry_run && (hex_is_lower(name, 64) ? gc_reap(g, name) : unlink(path) < 0))
		return 0;
	g->rep->orphans_removed++;
	g->rep->blobs_removed++;
	return 0;
}

/* The bucket's trash, before this gc adds to it: what this catalog or a live set names goes back, the
 * rest goes once older than the cutoff (store_bucket_trash_expire). A failure is warned of: the trash
 * only waits for the next gc. */
static void gc_trash(struct gc_walk *g)
{
	struct store_bucket_trash_stats ts;
	int r = store_bucket_trash_expire(g->d->store, gc_keeps, g, &ts);

	if (r)
		log_warn("gc", "cannot sweep the bucket's trash: %s (%s)", err_str(r), store_bucket_errmsg());
	g->rep->bucket_trash_restored = ts.restored;
	g->rep->bucket_trash_removed = ts.removed;
	g->rep->bucket_trash_kept = ts.young;
}

/* With a bucket, before anything goes: this mirror's live set written (what its catalog names now, the
 * dead contents no longer; not in a dry run), the others' read, and the cutoff of the young set for the
 * reaps. */
static int gc_share(struct gc_walk *g, int64_t grace_s, bool dry_run, char **errmsg)
{
	int r = dry_run ? 0 : mirror_share_publish(g->d, errmsg);

	if (!r)
		r = mirror_share_load(g->d, grace_s, &g->share, errmsg);
	if (r)
		return r;
	g->rep->bucket_mirrors = mirror_share_others(g->share);
	store_reap_cutoff(g->d->store, mirror_share_cutoff(g->share));
	if (!dry_run)
		gc_trash(g);
	return 0;
}

int mirror_gc(struct mirror_data *d, int keep, int64_t partial_max_age_s, int64_t grace_s, bool dry_run,
	      struct mirror_gc_report *rep, const struct mirror_progress *progress, char **errmsg)
{
	struct catalog_gc_stats st;
	struct catalog_totals tot;
	char (*dead)[65] = NULL;
	size_t ndead = 0;
	struct gc_walk g = { d, NULL, rep, partial_max_age_s, dry_run, progress, 0, 0 };
	int r;

	memset(rep, 0, sizeof(*rep));
	{
		struct catalog_holds_stats hs;
		size_t back = 0;
		if ((r = catalog_holds_sweep(d->catalog, (int64_t)time(NULL), dry_run, &hs)) != 0) {
			if (errmsg)
				*errmsg = xasprintf("catalog: %s", catalog_errmsg(d->catalog));
			return r;
		}
		rep->uploads_kept = hs.uploads;
		rep->uploads_until = hs.uploads_until;
		rep->writes_kept = hs.writes;
		/* what a gc cut short left aside: back when wanted */
		if (!dry_run && !store_trash_sweep(d->store, gc_wanted, d, &back))
			rep->restored += (int64_t)back;
	}
	r = catalog_gc(d->catalog, keep, dry_run, &st, &dead, &ndead);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("catalog: %s", catalog_errmsg(d->catalog));
		return r;
	}
	rep->snapshots_dropped = st.snapshots_dropped;
	rep->bytes_freed = st.bytes_dropped;
	if (store_in_bucket(d->store) && (r = gc_share(&g, grace_s, dry_run, errmsg)) != 0) {
		free(dead);
		return r;
	}
	/* (with a bucket, the walk below reaps them: every object there is one it sees; in a dry run the
	 * catalog still names them, and the walk does not count them) */
	for (size_t i = 0; (!g.share || dry_run) && i < ndead; i++) {
		if (dry_run && g.share && mirror_share_names(g.share, dead[i])) {
			rep->bucket_kept_shared++;
			continue;
		}
		if (dry_run) {
			rep->blobs_removed++;
			continue;
		}
		if (!gc_reap(&g, dead[i]))
			rep->blobs_removed++;
	}
	free(dead);
	if (!dry_run) {
		size_t gone = 0;
		int e = mirror_torrents_gc(d, &gone);
		if (e)
			log_warn("gc", "cannot sweep torrents: %s", err_str(e));
		rep->torrents_removed = (int64_t)gone;
		{
			struct mirror_git_gc_report gr;
			mirror_git_gc(d, &gr);
			rep->git_removed = gr.removed;
		}
	}
	if (progress && !catalog_totals(d->catalog, &tot))
		g.total = tot.blobs; /* about what the walk will see */
	/* With dry_run the catalog still holds the dead blobs, so the walk does not count them twice. */
	r = store_each(d->store, true, gc_visit, &g);
	/* the identity files a killed writer or gc left: a temporary name, or a content now gone */
	if (!r)
		r = store_xet_sweep(d->store, partial_max_age_s, dry_run, gc_wanted, d, &rep->partials_removed,
					   &rep->orphans_removed);
	if (!r && !dry_run)
		r = store_sweep_uploads(d->store, partial_max_age_s, &rep->bucket_uploads_aborted);
	if (r && errmsg)
		*errmsg = xasprintf("store: %s", err_str(r));
	mirror_share_free(&g.share);
	return r;
}

int mirror_gc_xet_staged(struct mirror_data *d, int64_t age_s, bool dry_run, int64_t *removed, char **errmsg)
{
	struct store_bucket *b = store_bucket_of(d->store);
	int r;

	*removed = 0;
	if (!b)
		return 0; /* (without a bucket, serve keeps its xorbs in xet-uploads/ and sweeps them itself) */
	r = store_bucket_stage_sweep(b, age_s, dry_run, removed);
	if (r && errmsg)
		*errmsg = xasprintf("the bucket's staging area: %s", store_bucket_errmsg());
	return r;
}

struct verify_walk {
	struct mirror_data *d;
	struct mirror_verify_report *rep;
	const struct mirror_progress *progress;
	int64_t total_n, total_bytes, done_n, done_bytes;
	char (*bad)[65];
	bool *missing;
	size_t nbad, cap;
	char (*learnt)[65];          /* contents whose identity the walk computed: recorded after it */
	size_t nlearnt, lcap;
};

static int add_use(void *ud, const char *hub, const char *type, const char *name, const char *commit, const char *path)
{
	struct mirror_verify_damage *dm = ud;

	dm->uses = xreallocarray(dm->uses, dm->nuses + 1, sizeof(*dm->uses));
	dm->uses[dm->nuses++] = xasprintf("%s:%s%s @ %.12s: %s", hub, strcmp(type, "dataset") ? "" : "datasets/", name,
					  commit, path);
	return 0;
}

void mirror_verify_report_release(struct mirror_verify_report *rep)
{
	for (size_t i = 0; i < rep->ndamage; i++) {
		for (size_t k = 0; k < rep->damage[i].nuses; k++)
			free(rep->damage[i].uses[k]);
		free(rep->damage[i].uses);
	}
	free(rep->damage);
	rep->damage = NULL;
	rep->ndamage = 0;
	free(rep->xet_refused);
	rep->xet_refused = NULL;
	rep->nxet_refused = 0;
}

static int count_visit(void *ud, const char *sha256, int64_t size)
{
	struct verify_walk *v = ud;

	(void)sha256;
	v->total_n++;
	v->total_bytes += size;
	return 0;
}

/* Does content sha256 lack its Xet identity (no Xet hash recorded, or no identity file where one is
 * kept), with nothing upstream said against it yet? Only a local store's: a bucket's is computed when a
 * Xet client first asks for it. */
static bool wants_identity(struct mirror_data *d, const char *sha256)
{
	char xh[65];
	bool refused = false;

	if (store_in_bucket(d->store))
		return false;
	if (!catalog_xet_stated(d->catalog, sha256, xh, &refused) && refused)
		return false;   /* reported when it was found */
	return catalog_blob_xet(d->catalog, sha256, xh) || store_xet_file_hash(d->store, sha256, xh);
}

static int verify_visit(void *ud, const char *sha256, int64_t size)
{
	struct verify_walk *v = ud;
	bool ok = false, learn = wants_identity(v->d, sha256);
	int64_t got = 0;
	/* it reads every byte anyway: an identity missing is computed in the same read */
	int r = learn ? store_xet_check(v->d->store, sha256, NULL, NULL, &ok, &got)
		      : store_check(v->d->store, sha256, &ok, &got);

	v->done_n++;
	v->done_bytes += size;
	mirror_progress_say(v->progress, v->done_n, v->total_n, v->done_bytes, v->total_bytes);
	if (r == -ENOENT) {
		v->rep->missing++;
		log_warn("verify", "blob %s is missing from the store", sha256);
	} else if (r) {
		return r;
	} else {
		v->rep->blobs_checked++;
		v->rep->bytes_checked += got;
		if (ok && got == size) {
			if (learn) {
				if (v->nlearnt == v->lcap)
					v->learnt = xreallocarray(v->learnt, v->lcap = v->lcap ? 2 * v->lcap : 16,
								  sizeof(*v->learnt));
				snprintf(v->learnt[v->nlearnt++], 65, "%s", sha256);
			}
			return 0;
		}
		v->rep->corrupt++;
		log_warn("verify", "blob %s is corrupt (%lld bytes, catalog says %lld); quarantined", sha256,
			 (long long)got, (long long)size);
		r = store_quarantine(v->d->store, sha256);
		if (r)
			return r;
	}
	/* Catalog updates wait until the walk is over: the walk holds a read statement open. */
	if (v->nbad == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 16;
		v->bad = xreallocarray(v->bad, v->cap, sizeof(*v->bad));
		v->missing = xreallocarray(v->missing, v->cap, sizeof(*v->missing));
	}
	v->missing[v->nbad] = r == -ENOENT;
	snprintf(v->bad[v->nbad++], 65, "%s", sha256);
	return 0;
}

/* The identities the walk computed, recorded (Xet hash, dedup index) now that it is over; those whose
 * Xet hash upstream states otherwise are reported instead. */
static void record_identities(struct mirror_data *d, struct verify_walk *v)
{
	struct mirror_verify_report *rep = v->rep;

	for (size_t i = 0; i < v->nlearnt; i++) {
		struct mirror_verify_xet_refused *x;
		bool refused;
		int e = mirror_xet_record(d->store, d->catalog, v->learnt[i]);
		if (!e) {
			rep->xet_computed++;
			continue;
		}
		if (e != HM_ERR_HASH_MISMATCH)
			continue;   /* (warned) computed again when next asked */
		rep->xet_refused = xreallocarray(rep->xet_refused, rep->nxet_refused + 1, sizeof(*rep->xet_refused));
		x = &rep->xet_refused[rep->nxet_refused++];
		memset(x, 0, sizeof(*x));
		memcpy(x->sha256, v->learnt[i], 65);
		catalog_xet_stated(d->catalog, x->sha256, x->stated, &refused);
		store_xet_file_hash(d->store, x->sha256, x->ours);
	}
}

int mirror_verify(struct mirror_data *d, struct mirror_verify_report *rep, const struct mirror_progress *progress,
		  char **errmsg)
{
	struct verify_walk v = { d, rep, progress, 0, 0, 0, 0, NULL, NULL, 0, 0, NULL, 0, 0 };
	int r;

	memset(rep, 0, sizeof(*rep));
	{
		/* a content a gc cut short left aside is back before it could count as missing */
		size_t back = 0;
		store_trash_sweep(d->store, gc_wanted, d, &back);
	}
	r = progress ? catalog_blob_each(d->catalog, count_visit, &v) : 0;
	if (!r)
		r = catalog_blob_each(d->catalog, verify_visit, &v);
	if (!r && v.nbad)
		rep->damage = xcalloc(v.nbad, sizeof(*rep->damage));
	for (size_t i = 0; !r && i < v.nbad; i++) {
		struct mirror_verify_damage *dm = &rep->damage[rep->ndamage++];
		int m;
		memcpy(dm->sha256, v.bad[i], sizeof(dm->sha256));
		dm->missing = v.missing[i];
		/* what it breaks, named before the catalog marks it */
		r = catalog_blob_uses(d->catalog, v.bad[i], 10, add_use, dm);
		for (size_t k = 0; !r && k < dm->nuses; k++)
			log_warn("verify", "%s content %.12s is %s", dm->missing ? "missing" : "corrupt", dm->sha256,
				 dm->uses[k]);
		if (r)
			break;
		m = catalog_blob_damaged(d->catalog, v.bad[i]);
		if (m < 0)
			r = m;
		else
			rep->repos_marked += m;
	}
	if (!r)
		record_identities(d, &v);
	if (r && errmsg)
		*errmsg = r == HM_ERR_SQLITE ? xasprintf("catalog: %s", catalog_errmsg(d->catalog))
					     : xasprintf("store: %s", err_str(r));
	free(v.bad);
	free(v.missing);
	free(v.learnt);
	return r;
}
