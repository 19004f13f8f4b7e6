/*
 * sync.c - the sync engine (see sync.h for the contract).
 *
 * Everything runs on one libuv loop: snapshot listings and file transfers are libcurl transfers on
 * it, hashing happens as bytes arrive, and catalog writes happen when a repo completes. Objects:
 *   struct sync       the run: queues, counters, the loop
 *   struct srepo      one repo: its listing, the selected files, how many are still missing
 *   struct job        one content to fetch (keyed by sha256, or by git blob id when that is all
 *                     upstream says); several files of several repos may wait on the same job
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
#include "hub/http.h"
#include "hub/hub.h"
#include "hub/select.h"
#include "hub/upstream.h"
#include "store.h"
#include "sync.h"
#include "torrents.h"

#include "sync-int.h"

static void pump(struct sync *s);

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
		r->res->warning = xasprintf("its globs select none of its %zu files upstream (%s): the snapshot is empty",
					    sn->nfiles, b.len ? b.data : "none");
		buf_release(&b);
	}
}

/* ---- repo completion --------------------------------------------------------------------------- */

static const char *outcome_of(int err)
{
	switch (err) {
	case 0: return "ok";
	case HM_ERR_GATED: return "gated";
	case HM_ERR_AUTH: return "denied";
	case HM_ERR_NOT_FOUND: return "missing";
	case HM_ERR_DISABLED: return "disabled";
	case HM_ERR_QUOTA: return "quota";
	default: return "error";
	}
}

/* "2026-12-01T13:49:36.000Z" (the Hub's lastModified) as unix seconds; 0 when it is not that. */
static int64_t iso_seconds(const char *iso)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	if (!iso || !(end = strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm)) || (*end && *end != '.' && *end != 'Z'))
		return 0;
	return (int64_t)timegm(&tm);
}

static void meta_from_json(json_t *m, const char *name, struct catalog_repo_meta *out, char **card, char **tags)
{
	json_t *v;

	memset(out, 0, sizeof(*out));
	out->private_ = -1;
	out->downloads = -1;
	out->likes = -1;
	if (!m)
		return;
	out->gated = json_string_value(json_object_get(m, "gated"));
	if ((v = json_object_get(m, "private")) && json_is_boolean(v))
		out->private_ = json_is_true(v);
	*card = json_object_get(m, "card_data") ? json_dumps(json_object_get(m, "card_data"), JSON_COMPACT) : NULL;
	*tags = json_object_get(m, "tags") ? json_dumps(json_object_get(m, "tags"), JSON_COMPACT) : NULL;
	out->card_data = *card;
	out->tags = *tags;
	out->pipeline_tag = json_string_value(json_object_get(m, "pipeline_tag"));
	out->library_name = json_string_value(json_object_get(m, "library_name"));
	out->license = json_string_value(json_object_get(m, "license"));
	if (json_is_integer(v = json_object_get(m, "downloads")))
		out->downloads = json_integer_value(v);
	if (json_is_integer(v = json_object_get(m, "likes")))
		out->likes = json_integer_value(v);
	out->last_modified = json_string_value(json_object_get(m, "last_modified"));
	out->created_at = iso_seconds(json_string_value(json_object_get(m, "created_at")));
	/* a renamed repo: remembered (the mirror answers to both names); the same name clears it */
	if ((out->upstream_name = json_string_value(json_object_get(m, "upstream_name"))) && !strcmp(out->upstream_name, name))
		out->upstream_name = "";
}

/* Record r's complete snapshot and point ref at it. 0, or HM_ERR_SQLITE with r->error_text. */
static int snapshot_record(struct srepo *r, const char *ref, bool tag)
{
	struct catalog *c = r->s->d->catalog;
	struct catalog_file *files = xcalloc(r->nwants ? r->nwants : 1, sizeof(*files));
	char *sel = catalog_repo_selection(r->cr);
	int e;

	for (size_t i = 0; i < r->nwants; i++) {
		const struct hub_file *f = r->wants[i].f;
		files[i].path = f->path;
		files[i].size = f->size;
		files[i].git_oid = f->git_oid[0] ? f->git_oid : NULL;
		files[i].lfs_oid = f->lfs && f->sha256[0] ? f->sha256 : NULL;
		files[i].sha256 = r->wants[i].sha256;
		files[i].absent = r->wants[i].absent;
	}
	/* a provisional snapshot is selected by nothing: the next sync lists it again and completes it */
	e = catalog_snapshot_commit(c, r->cr->id, r->snap->commit, ref, tag, r->s->cfg->provisional ? NULL : sel, files,
				    r->nwants);
	free(sel);
	free(files);
	if (!e && r->snap->upstream_tier > 0) {
		/* from another hubmirror: its time for the snapshot (the lastModified it answers), so that
		 * every tier answers alike */
		int64_t t = iso_seconds(json_string_value(json_object_get(r->snap->meta, "last_modified")));
		if (t > 0)
			e = catalog_snapshot_set_synced_at(c, r->cr->id, r->snap->commit, t);
	}
	if (!e)
		return 0;
	free(r->error_text);
	r->error_text = xasprintf("catalog: %s", catalog_errmsg(c));
	return HM_ERR_SQLITE;
}

/* One srepo is done: the pass ends with the last. */
static void srepo_done(struct srepo *r)
{
	struct sync *s = r->s;

	/* The listing is no longer needed: free it now, a run over 600 repos should not hold them all. */
	hub_snapshot_free(&r->snap);
	FREE_AND_NULL(&r->wants);
	r->nwants = 0;
	s->repos_done++;
	if (s->repos_done == s->nrepos && s->running)
		uv_stop(&s->loop);
}

/* A ref of the second pass is done: its entry in the repo's result says how. */
static void ref_finish(struct srepo *r)
{
	struct mirror_sync_ref_result *rr = &r->res->refs[r->ref_idx];
	int err = r->error;

	if (!err && r->snap && !r->snap->unchanged)
		err = snapshot_record(r, r->ref_name, r->ref_tag);
	if (err) {
		rr->outcome = outcome_of(err);
		rr->error = xstrdup(r->error_text ? r->error_text : err_str(err));
		r->parent->refs_bad = true;
		log_debug("sync", "%s: ref %s: %s", r->res->spec, r->ref_name, rr->error);
	} else {
		rr->outcome = r->snap->unchanged ? "unchanged" : "ok";
		rr->commit = xstrdup(r->snap->commit);
	}
	srepo_done(r);
}

/* The caller's line for a repo whose first pass ended, at once. */
static void report_repo(struct sync *s, struct mirror_sync_repo_result *res)
{
	if (!s->cfg->on_repo)
		return;
	if (s->cfg->progress)
		fputs("\r\033[K", stderr); /* the progress line comes back at its next tick */
	s->cfg->on_repo(s->cfg->on_repo_ud, res);
	res->reported = true;
}

/* A repository of the same owner upstream whose name is a small edit away from r's (a typo, a case
 * slip): " (did you mean hf:ORG/NAME?)", or "" when none. Hugging Face only (its listing by author);
 * one short blocking request, made only after upstream answered, so a run with upstream down never
 * waits on it. Malloc'd. */
static char *near_name(const struct srepo *r)
{
	const char *name = r->cr->name, *slash = strchr(name, '/');
	char *base, *url, *org, *body = NULL, *err = NULL, *best = NULL, *out, low[128];
	size_t len = 0, bd = 99, i;
	long status = 0;
	json_t *a, *v;

	if (r->spec.hub != HUB_HF || !slash || strlen(name) >= sizeof(low))
		return xstrdup("");
	for (i = 0; name[i]; i++)
		low[i] = (char)tolower((unsigned char)name[i]);
	low[i] = '\0';
	{
		char *o = xstrndup(name, (size_t)(slash - name));
		org = hub_url_escape(o, false);
		free(o);
	}
	base = hub_client_base(r->s->client, HUB_HF);
	url = xasprintf("%s/api/%s?author=%s&limit=1000", base, r->spec.type == HUB_DATASET ? "datasets" : "models", org);
	{
		struct hub_http_call c = { .url = url, .token = r->s->cfg->hf_token, .max = 32 << 20, .timeout_s = 15,
					   .connect_timeout_ms = 3000, .stall_s = 5 };
		if (hub_http_call_blocking(&c, &body, &len, &status, &err) || status != 200)
			len = 0;
	}
	a = len ? json_loadb(body, len, 0, NULL) : NULL;
	json_array_foreach(a, i, v) {
		const char *id = json_string_value(json_object_get(v, "id"));
		char lid[128];
		size_t k, d;
		if (!id || strlen(id) >= sizeof(lid) || !strcmp(id, name))
			continue;
		for (k = 0; id[k]; k++)
			lid[k] = (char)tolower((unsigned char)id[k]);
		lid[k] = '\0';
		d = str_distance(lid, low);
		if (d < bd) {
			bd = d;
			free(best);
			best = xstrdup(id);
		}
	}
	out = best && bd <= (strlen(name) > 12 ? 2 : 1)
		? xasprintf(" (did you mean hf:%s%s?)", r->spec.type == HUB_DATASET ? "datasets/" : "", best) : xstrdup("");
	json_decref(a);
	free(best);
	free(body);
	free(err);
	free(url);
	free(base);
	free(org);
	return out;
}

/* Upstream answers a repository that does not exist like a private one (401 to an anonymous
 * request, 404 to a token): say that, and what to check, beside upstream's own words. */
static void explain_refusal(const struct srepo *r, int err, char **text)
{
	bool hf = r->spec.hub == HUB_HF;
	const char *token = hf ? r->s->cfg->hf_token : r->s->cfg->ms_token, *var = hf ? "HF_TOKEN" : "MODELSCOPE_API_TOKEN";
	char *s;

	char *near;

	if (err == HM_ERR_NOT_FOUND && strstr(*text, "evision")) {
		s = xasprintf("upstream has no revision %s of %s: check it (hubmirror add --revision) (upstream said: %s)",
			      r->cr->follow_rev, r->cr->name, *text);
		free(*text);
		*text = s;
		return;
	}
	if (err != HM_ERR_AUTH && err != HM_ERR_NOT_FOUND)
		return;
	near = near_name(r);
	if (err == HM_ERR_AUTH && !(token && *token))
		s = xasprintf("upstream has no repository %s that anonymous users may read (a missing and a private "
			      "repository are answered alike): check the name%s, or give a token (%s) if it is private "
			      "(upstream said: %s)", r->cr->name, near, var, *text);
	else if (err == HM_ERR_AUTH)
		s = xasprintf("upstream refused the token (%s) for %s: check the name%s, and that the token is valid and "
			      "can read it (upstream said: %s)", var, r->cr->name, near, *text);
	else
		s = xasprintf("upstream has no repository %s%s: check the name%s (upstream said: %s)", r->cr->name,
			      token && *token ? " that the token may read" : "", near, *text);
	free(near);
	free(*text);
	*text = s;
}

static void repo_finish(struct srepo *r)
{
	struct sync *s = r->s;
	struct catalog *c = s->d->catalog;
	struct mirror_sync_repo_result *res = r->res;
	struct catalog_repo_meta meta;
	char *card = NULL, *tags = NULL, *upstream = NULL;
	int err = r->error;

	if (r->parent) {
		ref_finish(r);
		return;
	}
	if (!err && r->snap && !r->snap->unchanged)
		err = snapshot_record(r, r->cr->follow_rev, r->snap->is_tag);
	res->outcome = err ? outcome_of(err) : (r->snap && r->snap->unchanged ? "unchanged" : "ok");
	/* still empty for the same globs: the warning stays */
	if (!err && r->snap && r->snap->unchanged && !r->cr->file_count && r->cr->sync_error)
		res->warning = xstrdup(r->cr->sync_error);
	if (!err && res->warning)
		log_warn("sync", "%s: %s", res->spec, res->warning);
	if (err) {
		res->error = r->error_text ? xstrdup(r->error_text) : xstrdup(err_str(err));
		explain_refusal(r, err, &res->error);
		s->report->failed++;
	} else {
		res->commit = xstrdup(r->snap->commit);
		s->report->ok++;
	}
	if (r->snap) {
		res->skipped_unsafe = (int64_t)r->snap->skipped_unsafe;
		if (!r->snap->unchanged) {
			res->files = (int64_t)r->nwants;
			for (size_t i = 0; i < r->nwants; i++)
				res->bytes += r->wants[i].f->size;
		}
	}
	if (!err && r->snap && r->snap->unchanged) {
		res->files = r->cr->file_count;
		res->bytes = r->cr->total_size;
	}
	meta_from_json(r->snap ? r->snap->meta : NULL, r->cr->name, &meta, &card, &tags);
	if (!err && r->snap) {
		/* where it came from: the Hub (tier 1, asked now) or a hubmirror up the chain */
		upstream = hub_client_base(s->client, r->spec.hub);
		meta.upstream = upstream;
		meta.tier = r->snap->upstream_tier + 1;
		meta.origin_checked_at = r->snap->upstream_tier ? r->snap->origin_checked_at : (int64_t)time(NULL);
	}
	if (catalog_repo_set_sync(c, r->cr->id, err ? outcome_of(err) : "ok", err ? res->error : res->warning,
				  (int64_t)time(NULL), &meta) ||
	    catalog_run_result(c, s->run_id, r->cr->id, res->outcome, res->commit, res->files_fetched,
			       res->bytes_fetched, res->error))
		log_warn("sync", "catalog: %s", catalog_errmsg(c));
	free(card);
	free(tags);
	free(upstream);
	report_repo(s, res);
	/* Per-repo lines are debug: the caller reports the run (a table on a terminal, a log line in serve). */
	if (err)
		log_debug("sync", "%s: %s: %s", res->spec, res->outcome, res->error);
	else
		log_debug("sync", "%s: %s %s (%lld files, %lld fetched)", res->spec, res->outcome, res->commit,
			 (long long)res->files, (long long)res->files_fetched);
	srepo_done(r);
}

static void repo_fail(struct srepo *r, int err, const char *text)
{
	if (!r->error) {
		r->error = err;
		r->error_text = text ? xstrdup(text) : NULL;
	}
}

void mirror__sync_repo_fail(struct srepo *r, int err, const char *fmt, ...)
{
	va_list ap;

	if (r->error)
		return;
	r->error = err;
	va_start(ap, fmt);
	if (vasprintf(&r->error_text, fmt, ap) < 0)
		r->error_text = NULL;
	va_end(ap);
}

/* ---- jobs -------------------------------------------------------------------------------------- */

struct job *mirror__sync_job_find(struct sync *s, const char *key)
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

static void job_insert(struct sync *s, struct job *j)
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

static void job_add_waiter(struct job *j, struct srepo *r, size_t idx)
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
static bool repo_public(const struct srepo *r)
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
static bool may_take(const struct job *j, const struct srepo *r)
{
	return j->owner->cr->id == r->cr->id || j->owner->is_public;
}

static bool job_error_is_access(int e)
{
	return e == HM_ERR_GATED || e == HM_ERR_AUTH || e == HM_ERR_NOT_FOUND || e == HM_ERR_DISABLED;
}

/* Tell every file waiting on j its content (sha256) or the error; a refused repo reports its own
 * refusal, not the last owner's. On success, waiters that may not take content fetched for the
 * owner (may_take) stay, and the caller fetches it again for them; returns how many stayed. */
size_t mirror__sync_job_notify(struct job *j, int err, const char *sha256)
{
	size_t kept = 0;

	for (size_t i = 0; i < j->nwaiters; i++) {
		struct srepo *r = j->waiters[i].repo;
		if (!err && !may_take(j, r)) {
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
			repo_fail(r, e, t);
			free(t);
		} else {
			memcpy(r->wants[j->waiters[i].idx].sha256, sha256, 65);
		}
		if (--r->pending == 0)
			repo_finish(r);
	}
	j->nwaiters = kept;
	j->parked = false;
	return kept;
}

/* Once every listing is in, no repo can come to ask for a parked job's content any more: its
 * waiters fail with their refusals. */
static void flush_parked(struct sync *s)
{
	for (size_t i = 0; i < s->njobs; i++) {
		struct job *j = s->jobs[i];
		if (j->parked && j->state == JOB_FAILED && j->nwaiters)
			mirror__sync_job_notify(j, j->ndenied ? j->denied[j->ndenied - 1].err : HM_ERR_GATED, NULL);
	}
}

/* The job ended (sha256 set on success, err otherwise): tell every waiting file and repo. */
static void job_complete(struct job *j, int err, const char *sha256)
{
	struct sync *s = j->s;

	s->jobs_active--;
	s->inflight_bytes -= j->f->size;
	j->state = err ? JOB_FAILED : JOB_OK;
	mirror__sync_twins_release(j, err ? NULL : sha256);
	if (!err) {
		memcpy(j->result_sha, sha256, 65);
		if (catalog_blob_fetched(s->d->catalog, sha256, j->owner->cr->id))
			log_warn("sync", "catalog: %s", catalog_errmsg(s->d->catalog));
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
			pump(s);
			return;
		}
		if (s->next_listing < s->nrepos || s->listings_active) {
			/* a repo still being listed may want the same content: park until all are in */
			j->parked = true;
			pump(s);
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
	pump(s);
}

static void job_start(struct job *j);

static void job_set_error(struct job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void job_set_error(struct job *j, const char *fmt, ...)
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
	struct job *j = ud;
	int64_t off = mirror_store_writer_offset(j->w);
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
			r = mirror_store_writer_truncate(j->w);
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
	struct job *j = ud;
	int r = mirror_store_writer_write(j->w, data, n);

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

static void job_commit(struct job *j)
{
	char sha[65];
	int r = mirror_store_writer_commit(&j->w, sha);

	if (!r) {
		job_complete(j, 0, sha);
		return;
	}
	if (r == HM_ERR_HASH_MISMATCH || r == HM_ERR_SIZE_MISMATCH) {
		/* The store dropped the bad bytes; fetch them again from the start. */
		job_set_error(j, "%s", err_str(r));
		if (++j->tries < j->s->cfg->max_file_tries) {
			log_info("sync", "%s: %s, fetching again", j->f->path, err_str(r));
			job_start(j);
			return;
		}
	} else {
		job_set_error(j, "store: %s", err_str(r));
	}
	job_complete(j, r, NULL);
}

static void job_on_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct job *j = ud;
	int e = j->fail ? j->fail : result;
	bool progressed;

	j->req = NULL;
	if (!e && (resp->status == 200 || resp->status == 206)) {
		job_commit(j);
		return;
	}
	if (!e)
		e = HM_ERR_HTTP;
	if (!j->fail || !j->error_text)
		job_set_error(j, "%s%s%s", err_str(e), resp->transport_error ? ": " : "",
			      resp->transport_error ? resp->transport_error : "");
	progressed = mirror_store_writer_offset(j->w) > j->attempt_start;
	if (e == HM_ERR_UPSTREAM || e == HM_ERR_SIZE_MISMATCH) {
		/* a confused range answer or 416: start over without resuming */
		mirror_store_writer_abort(&j->w, false);
	} else {
		mirror_store_writer_abort(&j->w, true);
	}
	if (!job_error_final(e) && (progressed || ++j->tries < j->s->cfg->max_file_tries)) {
		log_debug("sync", "%s: %s, resuming", j->f->path, j->error_text);
		if (progressed)
			j->tries = 0;
		job_start(j);
		return;
	}
	job_complete(j, e, NULL);
}

static void job_start(struct job *j)
{
	struct mirror_store_expect ex = {
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
	r = mirror_store_writer_new(j->s->d->store, &ex, true, &j->w);
	if (r) {
		job_set_error(j, "store: %s", err_str(r));
		job_complete(j, r, NULL);
		return;
	}
	j->attempt_start = mirror_store_writer_offset(j->w);
	if (j->attempt_start == j->f->size) {
		job_commit(j); /* a previous run got every byte but did not publish */
		return;
	}
	o.range_start = j->attempt_start;
	j->req = hub_http_request(j->s->http, &o);
	if (!j->req) {
		mirror_store_writer_abort(&j->w, true);
		job_set_error(j, "bad file URL");
		job_complete(j, -EINVAL, NULL);
	}
}

/* Start queued jobs while the limits allow. */
static void pump(struct sync *s)
{
	while (s->queue_head && s->jobs_active < (size_t)s->cfg->max_parallel_files &&
	       (s->jobs_active == 0 || s->inflight_bytes + s->queue_head->f->size <= s->cfg->max_inflight_bytes)) {
		struct job *j = s->queue_head;
		s->queue_head = j->next;
		if (!s->queue_head)
			s->queue_tail = NULL;
		if (mirror__sync_twin_check(s, j))
			continue; /* taken from a twin, or waiting for one */
		s->jobs_active++;
		s->inflight_bytes += j->f->size;
		j->state = JOB_RUNNING;
		job_start(j);
	}
}

void mirror__sync_enqueue(struct sync *s, struct job *j)
{
	j->next = NULL;
	if (s->queue_tail)
		s->queue_tail->next = j;
	else
		s->queue_head = j;
	s->queue_tail = j;
}

/* ---- listings ---------------------------------------------------------------------------------- */

static void plan_repo(struct srepo *r)
{
	struct sync *s = r->s;
	struct catalog *c = s->d->catalog;

	select_files(r);
	if (!s->cfg->provisional && mirror__sync_quota_admit(r)) {
		repo_finish(r); /* it keeps its previous snapshot */
		return;
	}
	r->is_public = repo_public(r);
	r->pending = r->nwants + 1; /* +1 until planning is over, so completion cannot run early */
	for (size_t i = 0; i < r->nwants; i++) {
		struct hub_file *f = r->wants[i].f;
		const char *key;
		struct job *j;

		/* A blob already in the store is named without a fetch only when that gives nothing away:
		 * a listing could name a closed repo's content (its sha256 is public metadata). */
		if (f->sha256[0]) {
			if (mirror_store_has(s->d->store, f->sha256, f->size) &&
			    catalog_blob_public_or_own(c, f->sha256, r->cr->id)) {
				memcpy(r->wants[i].sha256, f->sha256, 65);
				r->pending--;
				continue;
			}
			if (s->cfg->provisional) {
				/* named now, fetched when a client first asks (or by the next sync) */
				memcpy(r->wants[i].sha256, f->sha256, 65);
				r->wants[i].absent = !mirror_store_has(s->d->store, f->sha256, f->size);
				r->pending--;
				continue;
			}
			key = f->sha256;
		} else if (f->git_oid[0]) {
			char sha[65];
			if (!catalog_sha256_for_git_oid(c, f->git_oid, f->size, sha) &&
			    mirror_store_has(s->d->store, sha, f->size) && catalog_blob_public_or_own(c, sha, r->cr->id)) {
				memcpy(r->wants[i].sha256, sha, 65);
				r->pending--;
				continue;
			}
			key = f->git_oid;
		} else {
			repo_fail(r, HM_ERR_UPSTREAM, "a file with neither sha256 nor git id");
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
			job_insert(s, j);
			mirror__sync_enqueue(s, j);
			s->files_total++;
			s->bytes_total += f->size;
		} else if (j->state == JOB_QUEUED && !j->owner->is_public && r->is_public) {
			/* not started yet: fetch it as the public repo, which every waiter may take */
			j->owner = r;
			j->f = f;
		} else if (j->state == JOB_OK && may_take(j, r) && mirror_store_has(s->d->store, j->result_sha, f->size)) {
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
		job_add_waiter(j, r, i);
	}
	if (--r->pending == 0)
		repo_finish(r);
	else
		pump(s);
}

static void on_snapshot(void *ud, int result, struct hub_snapshot *snap)
{
	struct srepo *r = ud;
	struct sync *s = r->s;

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
		repo_fail(r, result, snap && snap->message ? snap->message : err_str(result));
		repo_finish(r);
	} else if (snap->unchanged) {
		repo_finish(r);
	} else {
		if (snap->skipped_unsafe)
			log_warn("sync", "%s: skipped %zu entries with unsafe paths", r->res->spec, snap->skipped_unsafe);
		plan_repo(r);
	}
	mirror__sync_start_listings(s);
}

/* How long a repo upstream refused to the mirror (gated without an approved token, private to it,
 * disabled) is not asked again: every refusal costs several requests, night after night. A change of
 * the tokens the sync uses makes it ask at once. */
#define REFUSED_RECHECK_S (7 * 24 * 3600)

static bool refused_recently(const struct sync *s, const struct catalog_repo *cr)
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
	struct sync *s = r->s;
	struct mirror_sync_repo_result *res = r->res;

	s->report->failed++;
	if (catalog_run_result(s->d->catalog, s->run_id, r->cr->id, res->outcome, NULL, 0, 0, res->error))
		log_warn("sync", "catalog: %s", catalog_errmsg(s->d->catalog));
	report_repo(s, res);
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
	struct sync *s = r->s;
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

void mirror__sync_start_listings(struct sync *s)
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
			repo_fail(r, e, "cannot start listing");
			repo_finish(r);
		}
	}
	if (s->next_listing == s->nrepos && !s->listings_active)
		flush_parked(s);
}

/* ---- progress ---------------------------------------------------------------------------------- */

/* The biggest file in flight, for the progress line. */
static struct job *biggest_running(const struct sync *s)
{
	struct job *big = NULL;

	for (size_t i = 0; i < s->njobs; i++)
		if (s->jobs[i]->state == JOB_RUNNING && s->jobs[i]->w && (!big || s->jobs[i]->f->size > big->f->size))
			big = s->jobs[i];
	return big;
}

/* <data>/sync.progress: where the run stands, for the operator's API (replaced whole: a reader never
 * sees half of it). Best effort: a failure only costs the report. */
static void progress_write_file(struct sync *s, bool running)
{
	double secs = (double)(uv_hrtime() - s->started_ns) / 1e9;
	json_t *o = json_pack("{s:i, s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "pid", (int)getpid(),
			      "run_id", (json_int_t)s->run_id, "running", running, "started_at", (json_int_t)s->started_at,
			      "updated_at", (json_int_t)time(NULL), "repos_total", (json_int_t)s->nrepos,
			      "repos_done", (json_int_t)s->repos_done, "files_total", (json_int_t)s->files_total,
			      "files_done", (json_int_t)s->files_done, "bytes_total", (json_int_t)s->bytes_total,
			      "bytes_done", (json_int_t)s->bytes_done, "bytes_per_s", secs > 0 ? (double)s->bytes_done / secs : 0.0);
	json_t *cur = json_array();
	char *path = mirror_data_path(s->d, MIRROR_DATA_SYNC_PROGRESS), *tmp = xasprintf("%s.tmp", path);

	json_object_set_new(o, "pass", json_string(s->first ? "refs" : "repos"));
	if (running && hub_http_ratelimit_wait(s->http) > 0)
		json_object_set_new(o, "waiting_s", json_integer((json_int_t)(hub_http_ratelimit_wait(s->http) + 0.999)));
	for (size_t i = 0; running && i < s->njobs; i++) {
		struct job *j = s->jobs[i];
		if (j->state == JOB_RUNNING && j->w && json_array_size(cur) < 8)
			json_array_append_new(cur, json_pack("{s:s, s:s, s:I, s:I}", "repo", j->owner->res->spec, "path",
							     j->f->path, "size", (json_int_t)j->f->size, "done",
							     (json_int_t)mirror_store_writer_offset(j->w)));
	}
	json_object_set_new(o, "fetching", cur);
	if (!running)
		json_object_set_new(o, "outcome", json_string(s->report->failed ? (s->report->ok ? "partial" : "failed") : "ok"));
	if (json_dump_file(o, tmp, JSON_COMPACT) || rename(tmp, path))
		unlink(tmp);
	json_decref(o);
	free(tmp);
	free(path);
}

static void progress_write(struct sync *s, bool running)
{
	if (!s->cfg->provisional) /* an on-demand listing inside serve: sync.progress is the syncs' */
		progress_write_file(s, running);
}

static void on_progress(uv_timer_t *t)
{
	struct sync *s = t->data;
	double secs = (double)(uv_hrtime() - s->started_ns) / 1e9;
	double rate = secs > 0 ? (double)s->bytes_done / secs : 0;
	struct job *big;
	char file[64] = "";
	uint64_t now = uv_now(&s->loop);

	if (now - s->progress_last_ms >= 1000 || !s->progress_last_ms) {
		double wait = hub_http_ratelimit_wait(s->http);
		s->progress_last_ms = now;
		progress_write(s, true);
		/* a wait of upstream's asking is said once (the log of a serve's run has no progress line) */
		if (wait >= 5 && !s->waiting_said && !s->cfg->progress)
			log_info("sync", "waiting %.0f s: upstream asked to slow down (429)", wait);
		s->waiting_said = wait > 0;
	}
	if (!s->cfg->progress)
		return;
	/* Overall numbers, then the biggest file in flight with its own progress, like the tools ML
	 * users know; one line, rewritten in place. */
	big = biggest_running(s);
	if (big && big->f->size > 0) {
		const char *base = strrchr(big->f->path, '/') ? strrchr(big->f->path, '/') + 1 : big->f->path;
		snprintf(file, sizeof(file), "  %.40s %3d%%", base,
			 (int)(100.0 * (double)mirror_store_writer_offset(big->w) / (double)big->f->size));
	}
	if (hub_http_ratelimit_wait(s->http) > 0) /* not a line that stands still */
		snprintf(file, sizeof(file), "  waiting %.0f s: upstream asked to slow down",
			 hub_http_ratelimit_wait(s->http) + 0.499);
	fprintf(stderr, "\r\033[Ksync: repos %zu/%zu  files %lld/%lld  %.1f/%.1f MiB  %.1f MiB/s%s",
		s->repos_done, s->nrepos, (long long)s->files_done, (long long)s->files_total,
		(double)s->bytes_done / 1048576.0, (double)s->bytes_total / 1048576.0, rate / 1048576.0, file);
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
static void tokens_check(struct sync *s)
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

static void tokens_remember(struct sync *s)
{
	char *p = mirror_data_path(s->d, MIRROR_DATA_SYNC_TOKENS);

	if (s->tokens_changed && s->tokens_seen &&
	    path_write_atomic(p, s->tokens_seen, strlen(s->tokens_seen), 0600))
		log_warn("sync", "cannot write %s: refused repos will be asked again next time", p);
	free(p);
}

int mirror_sync_run(struct mirror_data *d, const struct catalog_repo *repos, size_t n,
		    const struct mirror_sync_config *cfg_in, struct mirror_sync_report *report, char **errmsg)
{
	struct mirror_sync_config cfg = *cfg_in;
	struct hub_client_config cc;
	struct sync s;
	bool timer_inited = false;
	int r;

	if (!cfg.max_parallel_files)
		cfg.max_parallel_files = 8;
	if (!cfg.max_inflight_bytes)
		cfg.max_inflight_bytes = (int64_t)8 << 30;
	if (!cfg.max_parallel_listings)
		cfg.max_parallel_listings = 8;
	if (!cfg.max_file_tries)
		cfg.max_file_tries = 5;
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
	report->repos = xcalloc(n ? n : 1, sizeof(*report->repos));
	report->nrepos = n;
	s.repos = xcalloc(n ? n : 1, sizeof(*s.repos));
	s.nrepos = n;
	for (size_t i = 0; i < n; i++) {
		struct srepo *rp = &s.repos[i];
		rp->s = &s;
		rp->cr = &repos[i];
		rp->res = &report->repos[i];
		hub_kind_parse(repos[i].hub, &rp->spec.hub);
		hub_type_parse(repos[i].type, &rp->spec.type);
		rp->spec.name = repos[i].name;
		rp->spec.revision = repos[i].follow_rev;
		rp->res->spec = xasprintf("%s:%s%s", repos[i].hub, strcmp(repos[i].type, "dataset") ? "" : "datasets/",
					  repos[i].name);
	}
	uv_timer_init(&s.loop, &s.progress_timer);
	timer_inited = true;
	s.progress_timer.data = &s;
	if (n) {
		/* the terminal's line twice a second; sync.progress once a second */
		uv_timer_start(&s.progress_timer, on_progress, 0, cfg.progress ? 500 : 1000);
		mirror__sync_start_listings(&s);
		if (s.repos_done < s.nrepos) {
			s.running = true;
			uv_run(&s.loop, UV_RUN_DEFAULT);
			s.running = false;
		}
		if (!cfg.provisional)
			mirror__sync_refs_pass(&s);
		uv_timer_stop(&s.progress_timer);
		if (cfg.progress) {
			on_progress(&s.progress_timer);
			fputc('\n', stderr);
		}
	}
	report->upstream_requests = hub_http_attempts(s.http);
	tokens_remember(&s);
	progress_write(&s, false);
	report->seconds = (double)(uv_hrtime() - s.started_ns) / 1e9;
	if (catalog_run_end(d->catalog, s.run_id, report->failed ? (report->ok ? "partial" : "failed") : "ok",
			    (int64_t)report->ok, (int64_t)report->failed, report->files_fetched, report->bytes_fetched))
		log_warn("sync", "catalog: %s", catalog_errmsg(d->catalog));
	/* the swarm's torrents of new snapshots (all missing ones: those synced before an upgrade too) */
	if (!cfg.provisional) {
		size_t made = 0;
		int te = mirror_torrents_make(d, (int64_t)time(NULL), &made, &report->torrents_error);
		report->torrents_made = (int64_t)made;
		if (te && !report->torrents_error)
			report->torrents_error = xstrdup(err_str(te));
	}
	if (report->quota_dropped) {
		size_t gone = 0;
		int ge = mirror_torrents_gc(d, &gone); /* the torrent files of the snapshots the quota dropped */
		if (ge)
			log_warn("sync", "cannot sweep torrents: %s", err_str(ge));
	}
	r = 0;
out:
	free(s.unreachable_why[0]);
	free(s.unreachable_why[1]);
	for (size_t i = 0; i < s.njobs; i++) {
		free(s.jobs[i]->waiters);
		free(s.jobs[i]->error_text);
		for (size_t k = 0; k < s.jobs[i]->ndenied; k++)
			free(s.jobs[i]->denied[k].text);
		free(s.jobs[i]->denied);
		free(s.jobs[i]->twins);
		free(s.jobs[i]);
	}
	free(s.jobs);
	for (size_t i = 0; i < s.nrepos; i++) {
		hub_snapshot_free(&s.repos[i].snap);
		free(s.repos[i].wants);
		free(s.repos[i].error_text);
		json_decref(s.repos[i].keep);
	}
	free(s.repos);
	for (size_t i = 0; i < s.nsecond; i++) {
		hub_snapshot_free(&s.second[i].snap);
		free(s.second[i].wants);
		free(s.second[i].error_text);
		free(s.second[i].ref_name);
		free(s.second[i].ref_rev);
	}
	free(s.second);
	free(s.tokens_seen);
	hub_client_free(&s.client);
	hub_http_free(&s.http);
	if (timer_inited)
		uv_close((uv_handle_t *)&s.progress_timer, NULL);
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
