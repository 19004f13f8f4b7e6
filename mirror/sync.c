/*
 * sync.c - the sync engine (see sync.h for the contract).
 *
 * Everything runs on one libuv loop: snapshot listings and file transfers are libcurl transfers on
 * it, hashing happens as bytes arrive, and catalog writes happen when a repo completes. Objects:
 *   struct mirror__sync              the run: queues, counters, the loop
 *   struct srepo             one repo: its listing, the selected files, how many are still missing
 *   struct mirror__sync_job  one content to fetch (keyed by sha256, or by git blob id when that is
 *                            all upstream says); several files of several repos may wait on it
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
#include "share.h"
#include "store/store-xet.h"
#include "store/store.h"
#include "sync.h"
#include "torrents.h"

#include "sync-int.h"


/* ---- selection ------------------------------------------------------------------------------- */

bool mirror_glob_match_any(const char *globs_json, const char *path)
{
	json_t *a = globs_json ? json_loads(globs_json, 0, NULL) : NULL, *g;
	const char **v = xcalloc(json_array_size(a) + 1, sizeof(*v));
	size_t i, n = 0;
	bool hit;

	json_array_foreach(a, i, g)
		if (json_string_value(g))
			v[n++] = json_string_value(g);
	hit = hub_glob_match_any(v, n, path);
	free(v);
	json_decref(a);
	return hit;
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && !strcmp(s + a - b, suf);
}

/* Weight formats that duplicate safetensors weights (prefer_safetensors drops them). */
static bool is_alt_weights(const char *path)
{
	static const char *const sufs[] = { ".bin", ".pt", ".pth", ".h5", ".msgpack", ".ckpt", ".ot" };
	for (size_t i = 0; i < sizeof(sufs) / sizeof(sufs[0]); i++)
		if (has_suffix(path, sufs[i]))
			return true;
	return false;
}

static void select_files(struct srepo *r)
{
	struct hub_snapshot *sn = r->snap;
	json_t *opts = json_loads(r->cr->options ? r->cr->options : "{}", 0, NULL);
	json_t *inc = json_loads(r->cr->include_globs ? r->cr->include_globs : "[]", 0, NULL);
	bool prefer = json_is_true(json_object_get(opts, "prefer_safetensors")), any_st = false;
	bool all = json_array_size(inc) == 0;

	json_decref(opts);
	json_decref(inc);
	if (prefer)
		for (size_t i = 0; i < sn->nfiles; i++)
			any_st |= has_suffix(sn->files[i].path, ".safetensors");
	r->wants = xcalloc(sn->nfiles ? sn->nfiles : 1, sizeof(*r->wants));
	for (size_t i = 0; i < sn->nfiles; i++) {
		const char *p = sn->files[i].path;
		if (!all && !mirror_glob_match_any(r->cr->include_globs, p))
			continue;
		if (mirror_glob_match_any(r->cr->exclude_globs, p))
			continue;
		if (any_st && is_alt_weights(p))
			continue;
		r->wants[r->nwants++].f = &sn->files[i];
	}
	/* Globs that leave nothing (a typo, quotes kept from a shell line) are said, with the globs. */
	if (!r->parent && sn->nfiles && !r->nwants) {
		struct buf b;
		const char *names[2] = { "include", "exclude" };
		const char *lists[2] = { r->cr->include_globs, r->cr->exclude_globs };
		buf_init(&b);
		for (int k = 0; k < 2; k++) {
			json_t *a = json_loads(lists[k] ? lists[k] : "[]", 0, NULL), *g;
			size_t j;
			json_array_foreach(a, j, g)
				buf_addf(&b, "%s%s '%s'", b.len ? ", " : "", j ? "" : names[k], json_string_value(g));
			json_decref(a);
		}
		if (prefer)
			buf_addf(&b, "%sprefer_safetensors", b.len ? ", " : "");
		r->res->warning =
			xasprintf("its globs select none of its %zu %s upstream (%s): the snapshot is empty",
				  sn->nfiles, sn->nfiles == 1 ? "file" : "files", b.len ? b.data : "none");
		buf_release(&b);
	}
}

/* ---- listings ---------------------------------------------------------------------------------- */

/* A content the store holds whose Xet hash upstream states: kept for its identity's check (the
 * identity of a content stored before the mirror computed them is computed later: verify, serve), and
 * where the one the mirror knows is another, said and no longer offered through Xet. */
static void note_xet_stated(struct mirror__sync *s, const struct hub_file *f)
{
	char known[65];
	int r;

	if (!f->xet_hash[0])
		return;
	r = catalog_xet_stated_set(s->d->catalog, f->sha256, f->xet_hash);
	if (r < 0)
		log_warn("sync", "catalog: %s", catalog_errmsg(s->d->catalog));
	else if (r == 1 && !store_xet_file_hash(s->d->store, f->sha256, known))
		log_warn("sync", "content %.12s (%s): upstream states Xet hash %s, its bytes make %s: not offered "
			 "through Xet", f->sha256, f->path, f->xet_hash, known);
}

static void plan_repo(struct srepo *r)
{
	struct mirror__sync *s = r->s;
	struct catalog *c = s->d->catalog;

	select_files(r);
	if (!s->cfg->provisional && mirror__sync_quota_admit(r)) {
		mirror__sync_repo_finish(r); /* it keeps its previous snapshot */
		return;
	}
	r->is_public = mirror__sync_repo_public(r);
	r->pending = r->nwants + 1; /* +1 until planning is over, so completion cannot run early */
	for (size_t i = 0; i < r->nwants; i++) {
		struct hub_file *f = r->wants[i].f;
		const char *key;
		struct mirror__sync_job *j;

		/* A blob already in the store is named without a fetch only when that gives nothing away:
		 * a listing could name a closed repo's content (its sha256 is public metadata); and only
		 * when an upstream's bytes are what the store holds: a content users alone sent is fetched
		 * once from upstream (its copy replaces theirs) before a mirrored repo names it. */
		if (f->sha256[0]) {
			if (store_has(s->d->store, f->sha256, f->size) &&
			    catalog_blob_public_or_own(c, f->sha256, r->cr->id, NULL, NULL) &&
			    catalog_blob_from_upstream(c, f->sha256)) {
				note_xet_stated(s, f);
				memcpy(r->wants[i].sha256, f->sha256, 65);
				r->pending--;
				continue;
			}
			if (s->cfg->provisional) {
				/* named now, fetched when a client first asks (or by the next sync): upstream's Xet
				 * hash kept for that fetch (docs/protocols/xet.md, "On-demand fetches through Xet") */
				if (f->lfs && f->xet_hash[0] &&
				    catalog_xet_stated_set(c, f->sha256, f->xet_hash) < 0)
					log_warn("sync", "catalog: %s", catalog_errmsg(c));
				memcpy(r->wants[i].sha256, f->sha256, 65);
				r->wants[i].absent = !store_has(s->d->store, f->sha256, f->size);
				r->pending--;
				continue;
			}
			key = f->sha256;
		} else if (f->git_oid[0]) {
			char sha[65];
			if (!catalog_sha256_for_git_oid(c, f->git_oid, f->size, sha) &&
			    store_has(s->d->store, sha, f->size) &&
			    catalog_blob_public_or_own(c, sha, r->cr->id, NULL, NULL) &&
			    catalog_blob_from_upstream(c, sha)) {
				memcpy(r->wants[i].sha256, sha, 65);
				r->pending--;
				continue;
			}
			key = f->git_oid;
		} else {
			mirror__sync_repo_fail_text(r, HM_ERR_UPSTREAM, "a file with neither sha256 nor git id");
			r->pending--;
			continue;
		}
		j = mirror__sync_job_find(s, key);
		if (!j) {
			j = xcalloc(1, sizeof(*j));
			j->s = s;
			snprintf(j->key, sizeof(j->key), "%s", key);
			j->f = f;
			j->size = f->size;
			j->owner = r;
			mirror__sync_job_insert(s, j);
			mirror__sync_enqueue(s, j);
			s->files_total++;
			s->bytes_total += f->size;
		} else if (j->state == JOB_QUEUED && !j->owner->is_public && r->is_public) {
			/* not started yet: fetch it as the public repo, which every waiter may take */
			j->owner = r;
			j->f = f;
		} else if (j->state == JOB_OK && mirror__sync_may_take(j, r) &&
			   store_has(s->d->store, j->result_sha, f->size)) {
			/* fetched earlier in this run, for another repo or path */
			memcpy(r->wants[i].sha256, j->result_sha, 65);
			r->pending--;
			continue;
		} else if (j->state == JOB_OK || j->state == JOB_FAILED) {
			/* failed for another repo (or vanished): run it again for this one */
			j->parked = false;
			j->state = JOB_QUEUED;
			j->f = f;
			j->owner = r;
			j->tries = 0;
			FREE_AND_NULL(&j->error_text);
			mirror__sync_enqueue(s, j);
		}
		mirror__sync_job_add_waiter(j, r, i);
	}
	if (--r->pending == 0)
		mirror__sync_repo_finish(r);
	else
		mirror__sync_pump(s);
}

static void on_snapshot(void *ud, int result, struct hub_snapshot *snap)
{
	struct srepo *r = ud;
	struct mirror__sync *s = r->s;

	s->listings_active--;
	r->snap = snap;
	/* upstream down: after a few repos in a row that could not reach it, the rest are not tried */
	if (result == HM_ERR_CURL) {
		s->unreachable[r->spec.hub]++;
		free(s->unreachable_why[r->spec.hub]);
		s->unreachable_why[r->spec.hub] = xstrdup(snap && snap->message ? snap->message : err_str(result));
	} else {
		s->unreachable[r->spec.hub] = 0;
	}
	if (result) {
		mirror__sync_repo_fail_text(r, result, snap && snap->message ? snap->message : err_str(result));
		mirror__sync_repo_finish(r);
	} else if (snap->unchanged) {
		mirror__sync_repo_finish(r);
	} else {
		if (snap->skipped_unsafe)
			log_warn("sync", "%s: skipped %zu entries with unsafe paths", r->res->spec,
				 snap->skipped_unsafe);
		plan_repo(r);
	}
	mirror__sync_start_listings(s);
}

/* How long a repo upstream refused to the mirror (gated without an approved token, private to it,
 * disabled) is not asked again: every refusal costs several requests, night after night. A change of
 * the tokens the sync uses makes it ask at once. */
#define REFUSED_RECHECK_S (7 * 24 * 3600)

static bool refused_recently(const struct mirror__sync *s, const struct catalog_repo *cr)
{
	const char *st = cr->sync_status;

	if (!st || (strcmp(st, "gated") && strcmp(st, "denied") && strcmp(st, "disabled")) || s->tokens_changed)
		return false;
	return cr->last_sync_at > 0 && time(NULL) - cr->last_sync_at < REFUSED_RECHECK_S;
}

/* A repo this run left alone (its res says why): counted failed and reported, the catalog's record
 * of it untouched. */
static void repo_skipped(struct srepo *r)
{
	struct mirror__sync *s = r->s;
	struct mirror_sync_repo_result *res = r->res;

	s->report->failed++;
	if (catalog_run_result(s->d->catalog, s->run_id, r->cr->id, res->outcome, NULL, 0, 0, res->error))
		log_warn("sync", "catalog: %s", catalog_errmsg(s->d->catalog));
	mirror__sync_report_repo(s, res);
	s->repos_done++;
	if (s->repos_done == s->nrepos && s->running)
		uv_stop(&s->loop);
}

/* Repos in a row whose listing could not reach their upstream, after which the rest of that hub's
 * are not tried: with upstream down, a run of 760 repos ends in a minute, not half an hour. */
#define UNREACHABLE_STOP 8

/* A repo not tried because its upstream is unreachable: reported, the catalog's record untouched (the
 * next run tries it). */
static void repo_skip_unreachable(struct srepo *r)
{
	struct mirror__sync *s = r->s;
	struct mirror_sync_repo_result *res = r->res;

	res->outcome = "error";
	res->error = xasprintf("not tried: upstream did not answer the last %d repos of %s (%s)",
			       s->unreachable[r->spec.hub], hub_kind_name(r->spec.hub),
			       s->unreachable_why[r->spec.hub] ? s->unreachable_why[r->spec.hub] : "unreachable");
	repo_skipped(r);
}

/* A refused repo left alone this run: reported as it stands, the catalog's record (and its time, from
 * which the next check counts) untouched. */
static void repo_skip_refused(struct srepo *r)
{
	struct mirror_sync_repo_result *res = r->res;
	time_t next = (time_t)(r->cr->last_sync_at + REFUSED_RECHECK_S);
	char when[32];

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime(&next));
	res->outcome = !strcmp(r->cr->sync_status, "gated") ? "gated" : !strcmp(r->cr->sync_status, "denied") ? "denied"
										    : "disabled";
	res->error = xasprintf("%s (not asked again before %s, or until the upstream tokens change)",
			       r->cr->sync_error ? r->cr->sync_error : "refused upstream", when);
	repo_skipped(r);
}

void mirror__sync_start_listings(struct mirror__sync *s)
{
	while (s->next_listing < s->nrepos && s->listings_active < (size_t)s->cfg->max_parallel_listings) {
		struct srepo *r = &s->repos[s->next_listing++];
		char *sel;
		bool same;
		int e;

		if (!r->parent && refused_recently(s, r->cr)) {
			repo_skip_refused(r);
			continue;
		}
		if (!r->parent && s->unreachable[r->spec.hub] >= UNREACHABLE_STOP) {
			repo_skip_unreachable(r);
			continue;
		}
		sel = catalog_repo_selection(r->cr);
		/* A snapshot selected with other globs or options does not count as "have it". */
		same = r->cr->head_selection && !strcmp(sel, r->cr->head_selection);
		free(sel);
		s->listings_active++;
		/* private_ < 0: visibility never read (ModelScope repos from before schema v9) */
		if (r->parent)
			e = hub_snapshot_fetch(s->client, &r->spec, r->ref_known[0] ? r->ref_known : NULL, NULL,
					       HUB_FETCH_KIND_KNOWN, on_snapshot, r);
		else
			e = hub_snapshot_fetch(s->client, &r->spec, same ? r->cr->head_commit : NULL,
					       same ? r->cr->last_modified : NULL,
					       r->cr->private_ < 0 ? HUB_FETCH_NEED_META : 0, on_snapshot, r);
		if (e) {
			s->listings_active--;
			mirror__sync_repo_fail_text(r, e, "cannot start listing");
			mirror__sync_repo_finish(r);
		}
	}
	if (s->next_listing == s->nrepos && !s->listings_active)
		mirror__sync_flush_parked(s);
}

/* ---- run --------------------------------------------------------------------------------------- */

/* "hf <16 hex> ms <16 hex>": the first 64 bits of each token's SHA-256 ("-" without one), enough to
 * tell a change, nothing to recover a token from. */
static void token_mark(struct buf *b, const char *hub, const char *token)
{
	unsigned char md[32];
	char hex[65];

	if (!token || !*token) {
		buf_addf(b, "%s -\n", hub);
		return;
	}
	SHA256((const unsigned char *)token, strlen(token), md);
	hex_encode(md, 8, hex);
	buf_addf(b, "%s %s\n", hub, hex);
}

/* Did the tokens change since the last run (sync.tokens)? Then refused repos are asked again. */
static void tokens_check(struct mirror__sync *s)
{
	char *p = mirror_data_path(s->d, MIRROR_DATA_SYNC_TOKENS), *old = NULL;
	size_t len = 0;
	struct buf b;

	buf_init(&b);
	token_mark(&b, "hf", s->cfg->hf_token);
	token_mark(&b, "ms", s->cfg->ms_token);
	s->tokens_seen = buf_detach(&b, NULL);
	s->tokens_changed = path_read_file(p, 4096, &old, &len) != 0 || strlen(s->tokens_seen) != len ||
			    memcmp(old, s->tokens_seen, len) != 0;
	free(old);
	free(p);
}

/* At the run's end: the tokens it used (their marks, no token) kept in sync.tokens for the next. */
static void tokens_remember(struct mirror__sync *s)
{
	char *p = mirror_data_path(s->d, MIRROR_DATA_SYNC_TOKENS);

	if (s->tokens_changed && s->tokens_seen &&
	    path_write_atomic(p, s->tokens_seen, strlen(s->tokens_seen), 0600))
		log_warn("sync", "cannot write %s: refused repos will be asked again next time", p);
	free(p);
}

/* The defaults of the limits a caller left at 0. */
static void config_defaults(struct mirror_sync_config *cfg)
{
	if (!cfg->max_parallel_files)
		cfg->max_parallel_files = 8;
	if (!cfg->max_inflight_bytes)
		cfg->max_inflight_bytes = (int64_t)8 << 30;
	if (!cfg->max_parallel_listings)
		cfg->max_parallel_listings = 8;
	if (!cfg->max_file_tries)
		cfg->max_file_tries = 5;
}

/* One srepo and one result per catalog repo, in the catalog's order, each with its spec. */
static void repos_init(struct mirror__sync *s, const struct catalog_repo *repos, size_t n)
{
	struct mirror_sync_report *report = s->report;

	report->repos = xcalloc(n ? n : 1, sizeof(*report->repos));
	report->nrepos = n;
	s->repos = xcalloc(n ? n : 1, sizeof(*s->repos));
	s->nrepos = n;
	for (size_t i = 0; i < n; i++) {
		struct srepo *rp = &s->repos[i];
		rp->s = s;
		rp->cr = &repos[i];
		rp->res = &report->repos[i];
		hub_kind_parse(repos[i].hub, &rp->spec.hub);
		hub_type_parse(repos[i].type, &rp->spec.type);
		rp->spec.name = repos[i].name;
		rp->spec.revision = repos[i].follow_rev;
		rp->res->spec = xasprintf("%s:%s%s", repos[i].hub, strcmp(repos[i].type, "dataset") ? "" : "datasets/",
					  repos[i].name);
	}
}

/* The run proper: the listings and fetches on the loop until every repo is done, then the other refs'
 * pass, with the progress ticking throughout. */
static void run_repos(struct mirror__sync *s)
{
	const struct mirror_sync_config *cfg = s->cfg;

	/* the terminal's line twice a second; sync.progress once a second */
	uv_timer_start(&s->progress_timer, mirror__sync_on_progress, 0, cfg->on_progress ? 500 : 1000);
	mirror__sync_start_listings(s);
	if (s->repos_done < s->nrepos) {
		s->running = true;
		uv_run(&s->loop, UV_RUN_DEFAULT);
		s->running = false;
	}
	if (!cfg->provisional)
		mirror__sync_refs_pass(s);
	uv_timer_stop(&s->progress_timer);
	if (cfg->on_progress)
		mirror__sync_progress_tell(s, true);
}

/* Closes the run: its requests and time in the report, the tokens remembered, the last progress
 * written and the run's record ended in the catalog. */
static void run_close(struct mirror__sync *s)
{
	struct mirror_sync_report *report = s->report;

	report->upstream_requests = hub_http_attempts(s->http);
	tokens_remember(s);
	mirror__sync_progress_write(s, false);
	report->seconds = (double)(uv_hrtime() - s->started_ns) / 1e9;
	if (catalog_run_end(s->d->catalog, s->run_id, report->failed ? (report->ok ? "partial" : "failed") : "ok",
			    (int64_t)report->ok, (int64_t)report->failed, report->files_fetched, report->bytes_fetched))
		log_warn("sync", "catalog: %s", catalog_errmsg(s->d->catalog));
}

/* The swarm's torrents after a run: made for the new snapshots, swept for those the quota dropped. */
static void run_torrents(struct mirror__sync *s)
{
	struct mirror_sync_report *report = s->report;

	/* the swarm's torrents of new snapshots (all missing ones: those synced before an upgrade too) */
	if (!s->cfg->provisional) {
		size_t made = 0;
		int te = mirror_torrents_make(s->d, (int64_t)time(NULL), &made, &report->torrents_error);
		report->torrents_made = (int64_t)made;
		if (te && !report->torrents_error)
			report->torrents_error = xstrdup(err_str(te));
	}
	if (report->quota_dropped) {
		size_t gone = 0;
		int ge = mirror_torrents_gc(s->d, &gone); /* the torrent files of the snapshots the quota dropped */
		if (ge)
			log_warn("sync", "cannot sweep torrents: %s", err_str(ge));
	}
}

/* Frees what the run built up: the hosts' reasons, the file jobs, the repos and the second refs'. */
static void run_free(struct mirror__sync *s)
{
	free(s->unreachable_why[0]);
	free(s->unreachable_why[1]);
	for (size_t i = 0; i < s->njobs; i++) {
		free(s->jobs[i]->waiters);
		free(s->jobs[i]->error_text);
		mirror__sync_xet_release(s->jobs[i]);
		for (size_t k = 0; k < s->jobs[i]->ndenied; k++)
			free(s->jobs[i]->denied[k].text);
		free(s->jobs[i]->denied);
		free(s->jobs[i]->twins);
		free(s->jobs[i]);
	}
	free(s->jobs);
	for (size_t i = 0; i < s->nrepos; i++) {
		hub_snapshot_free(&s->repos[i].snap);
		free(s->repos[i].wants);
		free(s->repos[i].error_text);
		json_decref(s->repos[i].keep);
	}
	free(s->repos);
	for (size_t i = 0; i < s->nsecond; i++) {
		hub_snapshot_free(&s->second[i].snap);
		free(s->second[i].wants);
		free(s->second[i].error_text);
		free(s->second[i].ref_name);
		free(s->second[i].ref_rev);
	}
	free(s->second);
	free(s->tokens_seen);
}

/* With a bucket: what the catalog names now, the mirror's live set there (mirror/share.h), so that
 * another mirror's gc keeps it. One that fails leaves the set before, which keeps what the bucket got
 * since (it is younger): a warning. */
static void publish_live(struct mirror_data *d)
{
	char *err = NULL;

	if (store_in_bucket(d->store) && mirror_share_publish(d, &err))
		log_warn("sync", "%s", err);
	free(err);
}

int mirror_sync_run(struct mirror_data *d, const struct catalog_repo *repos, size_t n,
		    const struct mirror_sync_config *cfg_in, struct mirror_sync_report *report, char **errmsg)
{
	struct mirror_sync_config cfg = *cfg_in;
	struct hub_client_config cc;
	struct mirror__sync s;
	bool timer_inited = false;
	int r;

	config_defaults(&cfg);
	memset(report, 0, sizeof(*report));
	memset(&s, 0, sizeof(s));
	s.quota_used = -1; /* read when a repo first needs it */
	s.d = d;
	s.cfg = &cfg;
	s.report = report;
	s.started_ns = uv_hrtime();
	s.started_at = (int64_t)time(NULL);

	if (catalog_run_begin(d->catalog, &s.run_id)) {
		if (errmsg)
			*errmsg = xasprintf("catalog: %s", catalog_errmsg(d->catalog));
		return HM_ERR_SQLITE;
	}
	report->run_id = s.run_id;
	uv_loop_init(&s.loop);
	r = hub_http_new(&s.loop, &cfg.http, &s.http);
	if (r) {
		if (errmsg)
			*errmsg = xstrdup("cannot start the HTTP client");
		goto out;
	}
	cc = (struct hub_client_config){ cfg.hf_base, cfg.ms_base, cfg.hf_token, cfg.ms_token };
	r = hub_client_new(s.http, &cc, &s.client);
	if (r) {
		if (errmsg)
			*errmsg = xstrdup("upstream URLs must start with http:// or https://");
		goto out;
	}

	tokens_check(&s);
	repos_init(&s, repos, n);
	uv_timer_init(&s.loop, &s.progress_timer);
	uv_idle_init(&s.loop, &s.xet_idle);
	timer_inited = true;
	s.progress_timer.data = &s;
	s.xet_idle.data = &s;
	if (n)
		run_repos(&s);
	run_close(&s);
	run_torrents(&s);
	publish_live(s.d);
	r = 0;
out:
	run_free(&s);
	hub_client_free(&s.client);
	hub_http_free(&s.http);
	if (timer_inited) {
		uv_close((uv_handle_t *)&s.progress_timer, NULL);
		uv_close((uv_handle_t *)&s.xet_idle, NULL);
	}
	uv_run(&s.loop, UV_RUN_DEFAULT); /* run close callbacks */
	if (uv_loop_close(&s.loop))
		log_warn("sync", "event loop still had open handles");
	return r;
}

void mirror_sync_report_release(struct mirror_sync_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nrepos; i++) {
		free(r->repos[i].spec);
		free(r->repos[i].commit);
		free(r->repos[i].error);
		free(r->repos[i].warning);
		for (size_t k = 0; k < r->repos[i].nrefs; k++) {
			free(r->repos[i].refs[k].name);
			free(r->repos[i].refs[k].commit);
			free(r->repos[i].refs[k].error);
		}
		free(r->repos[i].refs);
		free(r->repos[i].refs_error);
	}
	free(r->repos);
	free(r->torrents_error);
	memset(r, 0, sizeof(*r));
}
