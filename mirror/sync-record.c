/*
 * sync-record.c - a repo's end in a sync run (sync-int.h): its snapshot and metadata recorded in the
 * catalog, its refs, its line in the report, and, when it failed, the words that say why (a gated
 * repo, a refused token, a name upstream knows under another spelling).
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
#include "hub/hf.h"
#include "hub/http/http.h"
#include "hub/hub.h"
#include "hub/select.h"
#include "hub/upstream.h"
#include "store/store.h"
#include "sync.h"
#include "torrents.h"

#include "sync-int.h"

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
	if ((out->upstream_name = json_string_value(json_object_get(m, "upstream_name"))) &&
	    !strcmp(out->upstream_name, name))
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
	struct mirror__sync *s = r->s;

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
void mirror__sync_report_repo(struct mirror__sync *s, struct mirror_sync_repo_result *res)
{
	if (!s->cfg->on_repo)
		return;
	s->cfg->on_repo(s->cfg->on_repo_ud, res);
	res->reported = true;
}

/*
 * The near-name hint: a repository of the same owner upstream whose name is a small edit away from
 * r's (a typo, a case slip), " (did you mean hf:ORG/NAME?)" in r's error. Hugging Face only (its
 * listing by author); asked only after upstream answered that r is missing or refused, so a run with
 * upstream down never waits on it. Asked on the run's loop, beside the transfers of the other repos:
 * r's end (its record, its line) waits for the answer, or for HINT_TIMEOUT_MS, and nothing else does.
 */
#define HINT_TIMEOUT_MS 15000

struct hint {
	struct srepo *r;
	struct hub_http_req *req;
	uv_timer_t timer;
	char *url;
};

static void repo_record(struct srepo *r, const char *near);

/* The error text r ends with, before its explanation. */
static const char *error_text(const struct srepo *r)
{
	return r->error_text ? r->error_text : err_str(r->error);
}

/* Whether r's failure gets a hint: upstream knows no repository of its name (or refuses it), not
 * one it has without the revision asked (explain_refusal's cases). */
static bool hint_wanted(const struct srepo *r)
{
	const char *slash = strchr(r->cr->name, '/');

	if (r->error != HM_ERR_AUTH && r->error != HM_ERR_NOT_FOUND)
		return false;
	if (r->error == HM_ERR_NOT_FOUND && strstr(error_text(r), "evision"))
		return false;
	return r->spec.hub == HUB_HF && slash && strlen(r->cr->name) < 128;
}

/* The hint out of the owner's listing (body, len: a JSON array of {"id": ...}): "" when no name is
 * near enough. Malloc'd. */
static char *near_pick(const struct srepo *r, const char *body, size_t len)
{
	const char *name = r->cr->name;
	char *best = NULL, *out, low[128];
	size_t bd = 99, i;
	json_t *a, *v;

	for (i = 0; name[i]; i++)
		low[i] = (char)tolower((unsigned char)name[i]);
	low[i] = '\0';
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
		      ? xasprintf(" (did you mean hf:%s%s?)", r->spec.type == HUB_DATASET ? "datasets/" : "", best)
		      : xstrdup("");
	json_decref(a);
	free(best);
	return out;
}

static void hint_close_cb(uv_handle_t *h)
{
	struct hint *q = h->data;

	free(q->url);
	free(q);
}

static void hint_timeout(uv_timer_t *t)
{
	struct hint *q = t->data;

	hub_http_cancel(q->req); /* on_done follows, with -ECANCELED */
}

static void hint_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct hint *q = ud;
	struct srepo *r = q->r;
	char *near = near_pick(r, body, !result && resp && resp->status == 200 ? len : 0);

	uv_timer_stop(&q->timer);
	uv_close((uv_handle_t *)&q->timer, hint_close_cb);
	repo_record(r, near);
	free(near);
}

/* Ask for r's hint; 0 when asked (r's end follows in hint_done), else -1. */
static int hint_start(struct srepo *r)
{
	struct mirror__sync *s = r->s;
	const char *name = r->cr->name, *slash = strchr(name, '/');
	struct hint *q = xcalloc(1, sizeof(*q));
	char *owner = xstrndup(name, (size_t)(slash - name)), *base = hub_client_base(s->client, HUB_HF);
	struct hub_http_req_opts o = { .token = s->cfg->hf_token, .max_body = 32 << 20, .on_done = hint_done, .ud = q };

	q->r = r;
	q->url = hf_list_url(base, r->spec.type == HUB_DATASET, "author", owner, 1000);
	free(owner);
	free(base);
	o.url = q->url;
	q->req = hub_http_request(s->http, &o);
	if (!q->req) {
		free(q->url);
		free(q);
		return -1;
	}
	uv_timer_init(&s->loop, &q->timer);
	q->timer.data = q;
	uv_timer_start(&q->timer, hint_timeout, HINT_TIMEOUT_MS, 0);
	return 0;
}

/* Upstream answers a repository that does not exist like a private one (401 to an anonymous
 * request, 404 to a token): say that, and what to check, beside upstream's own words. */
static void explain_refusal(const struct srepo *r, int err, const char *near, char **text)
{
	bool hf = r->spec.hub == HUB_HF;
	const char *token = hf ? r->s->cfg->hf_token : r->s->cfg->ms_token,
		   *var = hf ? "HF_TOKEN" : "MODELSCOPE_API_TOKEN";
	char *s;

	if (err == HM_ERR_NOT_FOUND && strstr(*text, "evision")) {
		s = xasprintf(
			"upstream has no revision %s of %s: check it (hubmirror add --revision) (upstream said: %s)",
			r->cr->follow_rev, r->cr->name, *text);
		free(*text);
		*text = s;
		return;
	}
	if (err != HM_ERR_AUTH && err != HM_ERR_NOT_FOUND)
		return;
	if (err == HM_ERR_AUTH && !(token && *token))
		s = xasprintf("upstream has no repository %s that anonymous users may read (a missing and a private "
			      "repository are answered alike): check the name%s, or give a token (%s) if it is private "
			      "(upstream said: %s)", r->cr->name, near, var, *text);
	else if (err == HM_ERR_AUTH)
		s = xasprintf(
			"upstream refused the token (%s) for %s: check the name%s, and that the token is valid and "
			"can read it (upstream said: %s)",
			var, r->cr->name, near, *text);
	else
		s = xasprintf("upstream has no repository %s%s: check the name%s (upstream said: %s)", r->cr->name,
			      token && *token ? " that the token may read" : "", near, *text);
	free(*text);
	*text = s;
}

void mirror__sync_repo_finish(struct srepo *r)
{
	if (r->parent)
		ref_finish(r);
	else if (!(hint_wanted(r) && !hint_start(r)))
		repo_record(r, "");
}

/* r's first pass ended (near: its hint, "" when none): recorded in the catalog and reported. */
static void repo_record(struct srepo *r, const char *near)
{
	struct mirror__sync *s = r->s;
	struct catalog *c = s->d->catalog;
	struct mirror_sync_repo_result *res = r->res;
	struct catalog_repo_meta meta;
	char *card = NULL, *tags = NULL, *upstream = NULL;
	int err = r->error;

	if (!err && r->snap && !r->snap->unchanged)
		err = snapshot_record(r, r->cr->follow_rev, r->snap->is_tag);
	res->outcome = err ? outcome_of(err) : (r->snap && r->snap->unchanged ? "unchanged" : "ok");
	/* still empty for the same globs: the warning stays */
	if (!err && r->snap && r->snap->unchanged && !r->cr->file_count && r->cr->sync_error)
		res->warning = xstrdup(r->cr->sync_error);
	if (!err && res->warning)
		log_warn("sync", "%s: %s", res->spec, res->warning);
	if (err) {
		res->error = xstrdup(error_text(r));
		explain_refusal(r, err, near, &res->error);
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
	mirror__sync_report_repo(s, res);
	/* Per-repo lines are debug: the caller reports the run (a table on a terminal, a log line in serve). */
	if (err)
		log_debug("sync", "%s: %s: %s", res->spec, res->outcome, res->error);
	else
		log_debug("sync", "%s: %s %s (%lld files, %lld fetched)", res->spec, res->outcome, res->commit,
			 (long long)res->files, (long long)res->files_fetched);
	srepo_done(r);
}

void mirror__sync_repo_fail_text(struct srepo *r, int err, const char *text)
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
