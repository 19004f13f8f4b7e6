/*
 * routes-catalog.c - the catalog browsing API under /api/catalog/ (docs/http-api.md): search with
 * filters and sorting, repo detail with refs, snapshots and files, mirror totals, sync history.
 * Field names are stable; add, never rename.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>

#include "base/err.h"
#include "base/log.h"
#include "base/path.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "mirror/data.h"
#include "hub/hf.h"
#include "hub/hub.h"
#include "hub/ms.h"
#include "mirror/repojson.h"
#include "store/store.h"
#include "access.h"
#include "card.h"
#include "routes-int.h"

#define PAGE_DEFAULT 50
#define PAGE_MAX 1000

/* The catalog API's part of the routes (rt->catalog_api). */
struct mirror__catalog_api {
	int search_budget_ms;         /* the longest one catalog search may hold a worker */
};

struct mirror__catalog_api *mirror__catalog_api_new(void)
{
	struct mirror__catalog_api *c = xcalloc(1, sizeof(*c));

	c->search_budget_ms = 100; /* docs/security.md: no search holds a worker for long */
	return c;
}

void mirror__catalog_api_free(struct mirror__catalog_api **c)
{
	if (!c || !*c)
		return;
	free(*c);
	*c = NULL;
}

void mirror__catalog_api_set_budget(struct mirror__catalog_api *c, int ms)
{
	c->search_budget_ms = ms > 0 ? ms : c->search_budget_ms;
}

static void api_error(struct httpd_req *req, int status, const char *msg)
{
	httpd_add_header(req, "Access-Control-Allow-Origin", "*");
	mirror__respond_json(req, status, json_pack("{s:s}", "error", msg));
}


struct search_ctx {
	json_t *arr;
	char *base;
};

static int search_cb(void *ud, const struct catalog_repo *r)
{
	struct search_ctx *s = ud;

	json_array_append_new(s->arr, mirror_repo_json(r, s->base));
	return 0;
}

static int64_t qint(struct httpd_req *req, const char *name, int64_t dflt)
{
	char *v = httpd_query_param(req, name), *end;
	long long n = v ? strtoll(v, &end, 10) : dflt;

	if (v && (end == v || *end))
		n = dflt;
	free(v);
	return n;
}

/* A search: bounded by the budget, but a budget's worth of work is still too long for the loop, so it
 * runs on a worker (docs/security.md). The strings s points into are the job's. */
struct search_job {
	struct mirror__job j;
	struct catalog_search s;
	char *base, *q, *hub, *type, *org, *tag, *status, *sort, *hidden;
};

static void search_build(struct mirror__job *job, struct catalog *cat)
{
	struct search_job *sj = (struct search_job *)job;
	struct search_ctx sc = { json_array(), sj->base };
	int64_t total = 0;
	int r = catalog_search(cat, &sj->s, search_cb, &sc, &total);

	if (r) {
		const char *why = catalog_search_refusal(&sj->s);
		json_decref(sc.arr);
		job->status = r == HM_ERR_USAGE || r == HM_ERR_TIMEOUT ? 400 : 500;
		job->body =
			json_pack("{s:s}", "error",
				  r == HM_ERR_USAGE     ? (why ? why : "bad search")
				  : r == HM_ERR_TIMEOUT ? "search took too long: use fewer or longer words, or filters"
							: "catalog error");
	} else {
		json_t *o = json_pack("{s:o, s:I}", "repos", sc.arr, "total", (json_int_t)total);
		size_t next = sj->s.offset + json_array_size(sc.arr);
		json_object_set_new(o, "next_cursor", (int64_t)next < total && json_array_size(sc.arr)
						      ? json_sprintf("%zu", next) : json_null());
		job->status = 200;
		job->body = o;
	}
}

static void search_release(struct mirror__job *job)
{
	struct search_job *sj = (struct search_job *)job;

	free(sj->base); free(sj->q); free(sj->hub); free(sj->type); free(sj->org); free(sj->tag);
	free(sj->status); free(sj->sort); free(sj->hidden);
	free(sj);
}

/* A query parameter, NULL when absent or empty. */
static char *qstr(struct httpd_req *req, const char *name)
{
	char *v = httpd_query_param(req, name);

	if (v && !*v)
		FREE_AND_NULL(&v);
	return v;
}

static void catalog_repos(struct mirror_routes *rt, struct httpd_req *req)
{
	struct search_job *sj = xcalloc(1, sizeof(*sj));
	struct catalog_search *s = &sj->s;
	char *order = httpd_query_param(req, "order"), *gated = httpd_query_param(req, "gated");
	char *cursor = httpd_query_param(req, "cursor");
	int64_t limit = qint(req, "limit", PAGE_DEFAULT);

	sj->j.build = search_build;
	sj->j.release = search_release;
	sj->base = mirror__self_base(req);
	s->q = sj->q = qstr(req, "q");
	s->hub = sj->hub = qstr(req, "hub");
	s->type = sj->type = qstr(req, "type");
	s->org = sj->org = qstr(req, "org");
	s->tag = sj->tag = qstr(req, "tag");
	s->status = sj->status = qstr(req, "status");
	s->gated = gated && *gated ? (!strcasecmp(gated, "true") || !strcmp(gated, "1")) : -1;
	s->min_size = qint(req, "min_size", -1);
	s->max_size = qint(req, "max_size", -1);
	s->sort = sj->sort = qstr(req, "sort");
	s->desc = order ? !strcasecmp(order, "desc")
			: (s->sort && strcmp(s->sort, "name") && strcmp(s->sort, "relevance"));
	/* The cursor is opaque to clients: today the offset of the next page. */
	s->offset = cursor ? (size_t)strtoull(cursor, NULL, 10) : 0;
	s->limit = (size_t)(limit < 1 || limit > PAGE_MAX ? PAGE_DEFAULT : limit);
	/* no search may hold a worker longer than this either (docs/security.md) */
	s->budget_ms = rt->catalog_api->search_budget_ms;
	/* a guarded repo is not there for whom may not read it: not listed, counted or matched */
	s->hidden = sj->hidden = mirror__hidden(rt, req);
	free(order);
	free(gated);
	free(cursor);
	httpd_add_header(req, "Access-Control-Allow-Origin", "*");
	mirror__defer(rt, req, &sj->j);
}

static int results_cb(void *ud, const struct catalog_run *run, const struct catalog_repo_result *x)
{
	json_array_append_new(ud, json_pack("{s:I, s:I, s:o, s:s, s:o, s:I, s:I, s:o}", "run", (json_int_t)run->id,
					    "started_at", (json_int_t)run->started_at, "ended_at",
					    run->ended_at ? json_integer(run->ended_at) : json_null(), "outcome",
					    x->outcome ? x->outcome : "?", "commit", mirror_json_str_or_null(x->commit),
					    "files_fetched", (json_int_t)x->files_fetched, "bytes_fetched",
					    (json_int_t)x->bytes_fetched, "error", mirror_json_str_or_null(x->error)));
	return 0;
}

struct files_ctx {
	json_t *arr;
	size_t baselen;
	char *last_dir;
	json_t *last_dir_obj;
	size_t limit, emitted;
	bool more;
	char *cursor;
	bool recursive;         /* every file below, paths whole: no folder entries */
};

/* One level of the file tree; folders carry the total size of what is below them. */
static int files_cb(void *ud, const struct catalog_entry *e)
{
	struct files_ctx *f = ud;
	const char *rel = e->path + f->baselen;
	const char *slash = strchr(rel, '/');

	if (slash && !f->recursive) {
		size_t n = (size_t)(slash - e->path);
		if (f->last_dir && strlen(f->last_dir) == n && !strncmp(f->last_dir, e->path, n)) {
			json_object_set_new(
				f->last_dir_obj, "size",
				json_integer(json_integer_value(json_object_get(f->last_dir_obj, "size")) + e->size));
			json_object_set_new(
				f->last_dir_obj, "files",
				json_integer(json_integer_value(json_object_get(f->last_dir_obj, "files")) + 1));
			return 0;
		}
		if (f->emitted == f->limit) {
			f->more = true;
			return 1;
		}
		free(f->last_dir);
		f->last_dir = xstrndup(e->path, n);
		f->last_dir_obj = json_pack("{s:s, s:s, s:I, s:i}", "path", f->last_dir, "type", "directory",
					    "size", (json_int_t)e->size, "files", 1);
		json_array_append_new(f->arr, f->last_dir_obj);
		free(f->cursor);
		f->cursor = xasprintf("%s/", f->last_dir); /* "folder/": after everything in it (see below) */
	} else {
		json_t *o;
		if (f->emitted == f->limit) {
			f->more = true;
			return 1;
		}
		o = json_pack("{s:s, s:s, s:I, s:s}", "path", e->path, "type", "file", "size", (json_int_t)e->size,
			      "sha256", e->sha256);
		json_object_set_new(o, "lfs", json_boolean(e->lfs_oid[0]));
		json_object_set_new(o, "git_oid", e->git_oid[0] ? json_string(e->git_oid) : json_null());
		json_array_append_new(f->arr, o);
		free(f->cursor);
		f->cursor = xstrdup(e->path);
	}
	f->emitted++;
	return 0;
}

/* A page of files: each folder listed carries the sum of every file below it (the root: all 300,000
 * of a big dataset), so built on a worker. */
struct files_job {
	struct mirror__job j;
	int64_t snap_id;        /* 0: never synced, no files */
	char commit[41];        /* its commit */
	char *dir, *cursor;
	size_t limit;
	bool recursive;
};

static void files_build(struct mirror__job *job, struct catalog *cat)
{
	struct files_job *fj = (struct files_job *)job;
	struct files_ctx f = { json_array(), 0, NULL, NULL, fj->limit, 0, false, NULL, fj->recursive };
	char *prefix = fj->dir && *fj->dir ? xasprintf("%s/", fj->dir) : NULL;
	int r = 0;

	f.baselen = prefix ? strlen(prefix) : 0;
	if (fj->snap_id)
		r = catalog_snapshot_walk(cat, fj->snap_id, prefix, fj->cursor, 0, files_cb, &f);
	if (r && r != 1) {
		json_decref(f.arr);
		job->status = 500;
		job->body = json_pack("{s:s}", "error", "catalog error");
	} else {
		job->status = 200;
		job->body = json_pack("{s:s, s:o, s:o, s:o}", "dir", fj->dir ? fj->dir : "", "entries", f.arr,
				      "next_cursor", f.more ? json_string(f.cursor) : json_null(),
				      "commit", fj->snap_id ? json_string(fj->commit) : json_null());
	}
	free(prefix);
	free(f.last_dir);
	free(f.cursor);
}

static void files_release(struct mirror__job *job)
{
	struct files_job *fj = (struct files_job *)job;

	free(fj->dir);
	free(fj->cursor);
	free(fj);
}

/* /api/catalog/repos/{hub}/{type}/{name}/files?dir=&cursor=&limit=&recursive=&rev= of snapshot snap_id
 * (0: none) */
static void catalog_files(struct mirror_routes *rt, struct httpd_req *req, int64_t snap_id, const char *commit)
{
	struct files_job *fj;
	char *dir = httpd_query_param(req, "dir"), *cursor;
	int64_t limit = qint(req, "limit", PAGE_MAX);

	if ((dir && *dir && path_check_str(dir)) || (!dir && httpd_query(req) && strstr(httpd_query(req), "dir="))) {
		free(dir);
		api_error(req, 400, "bad dir");
		return;
	}
	cursor = httpd_query_param(req, "cursor");
	if (cursor && *cursor && cursor[strlen(cursor) - 1] == '/') {
		/* A cursor naming a folder skips all of it: no path ends in '/', and 0xff sorts after
		 * every byte a UTF-8 path can hold. (Kept out of the JSON, which must be UTF-8.) */
		char *c2 = xasprintf("%s\xff", cursor);
		free(cursor);
		cursor = c2;
	}
	fj = xcalloc(1, sizeof(*fj));
	fj->j.build = files_build;
	fj->j.release = files_release;
	fj->snap_id = snap_id;
	snprintf(fj->commit, sizeof(fj->commit), "%s", commit);
	fj->dir = dir;
	fj->cursor = cursor;
	fj->limit = (size_t)(limit < 1 || limit > PAGE_MAX ? PAGE_MAX : limit);
	{
		char *rec = httpd_query_param(req, "recursive");
		fj->recursive = rec && (!strcmp(rec, "1") || !strcasecmp(rec, "true"));
		free(rec);
	}
	httpd_add_header(req, "Access-Control-Allow-Origin", "*");
	mirror__defer(rt, req, &fj->j);
}

/* ---- the card: README.md as HTML (card.c), built on a worker ---- */

#define CARD_MAX (1 << 20)

struct card_job {
	struct mirror__job j;
	int64_t snap_id;
	char *file_url;         /* the mirror's URL of the snapshot's files, up to the path */
};

static void card_build(struct mirror__job *job, struct catalog *cat)
{
	struct card_job *cj = (struct card_job *)job;
	static const char *const names[] = { "README.md", "readme.md", "Readme.md" };
	struct catalog_entry e = { 0 };
	char *md = NULL, *html, *why = NULL;
	size_t len = 0, i;
	int r;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (cj->snap_id && !catalog_snapshot_file(cat, cj->snap_id, names[i], &e))
			break;
	if (i == sizeof(names) / sizeof(names[0])) {
		job->status = 404;
		job->body = json_pack("{s:s}", "error", "no card (README.md) in this snapshot");
		return;
	}
	if (e.size > CARD_MAX) {
		job->status = 413;
		job->body = json_pack("{s:s}", "error", "the card is larger than 1 MiB: not rendered");
		catalog_entry_release(&e);
		return;
	}
	/* (on a worker: with a bucket, read from it when the cache lacks it, never brought in; a damaged
	 * copy is an error, never rendered) */
	if ((r = store_slurp(job->rt->data->store, e.sha256, CARD_MAX, false, &md, &len, &why))) {
		log_warn("catalog", "the card %s: %s", e.path, why ? why : err_str(r));
		job->status = 503;
		job->body = json_pack("{s:s}", "error",
				      r == HM_ERR_HASH_MISMATCH ? "the card's file in the store is damaged"
								: "the card's file is not in the store");
	} else {
		html = mirror_card_html(md, len, cj->file_url);
		job->status = 200;
		job->body = json_pack("{s:s, s:s}", "path", e.path, "html", html);
		free(html);
	}
	free(why);
	free(md);
	catalog_entry_release(&e);
}

static void card_release(struct mirror__job *job)
{
	struct card_job *cj = (struct card_job *)job;

	free(cj->file_url);
	free(cj);
}

/* /api/catalog/repos/{hub}/{type}/{name}/card of snapshot snap (0: never synced) */
static void catalog_card(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
			 const struct catalog_snapshot *snap)
{
	struct card_job *cj;
	bool ds = !strcmp(repo->type, "dataset");

	if (!mirror_access_content_open(rt->access, repo)) {
		api_error(req, 403, "the card of a gated or private repository is not shown");
		return;
	}
	cj = xcalloc(1, sizeof(*cj));
	cj->j.build = card_build;
	cj->j.release = card_release;
	cj->snap_id = snap->id;
	/* a file's URL on this mirror less the file's path (base "", path "") */
	if (!strcmp(repo->hub, "hf"))
		cj->file_url = hf_resolve_url("", ds, repo->name, snap->commit, "");
	else
		cj->file_url = ms_file_url("", ds, repo->name, snap->commit, "");
	httpd_add_header(req, "Access-Control-Allow-Origin", "*");
	mirror__defer(rt, req, &cj->j);
}

/* /api/catalog/repos/{hub}/{type}/{name}[/files|/card] */
static void catalog_repo(struct mirror_routes *rt, struct httpd_req *req, const char *rest)
{
	char hub[8], type[16];
	const char *p = rest, *files_suffix, *card_suffix;
	char *name = NULL, *base = NULL, *rev = NULL;
	struct catalog_repo repo = { 0 };
	struct catalog_snapshot snap;
	bool found = false, want_files, want_card;
	int r;

	if (sscanf(p, "%7[a-z]/%15[a-z]/", hub, type) != 2) {
		api_error(req, 404, "not found");
		return;
	}
	p += strlen(hub) + strlen(type) + 2;
	files_suffix = strstr(p, "/files");
	want_files = files_suffix && !strcmp(files_suffix, "/files");
	card_suffix = strstr(p, "/card");
	want_card = !want_files && card_suffix && !strcmp(card_suffix, "/card");
	name = want_files ? xstrndup(p, (size_t)(files_suffix - p))
		: want_card ? xstrndup(p, (size_t)(card_suffix - p)) : xstrdup(p);
	if ((strcmp(hub, "hf") && strcmp(hub, "ms")) || (strcmp(type, "model") && strcmp(type, "dataset")) ||
	    hub_check_name(strcmp(hub, "ms") ? HUB_HF : HUB_MS, name)) {
		api_error(req, 404, "no such repository");
		goto out;
	}
	rev = want_files ? httpd_query_param(req, "rev") : NULL;
	if (rev && (!*rev || hub_check_revision(rev))) {
		api_error(req, 400, "bad rev");
		goto out;
	}
	r = catalog_resolve(rt->data->catalog, hub, type, name, rev, &repo, &snap, &found);
	if (!found || !mirror__repo_visible(rt, req, &repo)) {
		api_error(req, 404, "no such repository");
		goto out;
	}
	if (r && rev) {
		if (mirror__access_check(rt, req, hub, type, name, &repo, NULL))
			api_error(req, 404, "no such revision");
		goto out;
	}
	if (!mirror__access_check(rt, req, hub, type, name, &repo, NULL))
		goto out;
	if (r)
		memset(&snap, 0, sizeof(snap)); /* tracked, never synced */
	base = mirror__self_base(req);
	if (want_card) {
		catalog_card(rt, req, &repo, &snap);
	} else if (want_files) {
		catalog_files(rt, req, snap.id, snap.commit);
	} else {
		json_t *o = mirror_repo_json(&repo, base), *refs = mirror_refs_json(rt->data->catalog, repo.id);
		json_t *snaps = mirror_snapshots_json(rt->data->catalog, repo.id);
		json_t *card = mirror_json_text_or(repo.card_data, json_null());

		json_object_set_new(o, "refs", refs ? refs : json_array());
		json_object_set_new(o, "snapshots", snaps ? snaps : json_array());
		{
			/* this repository's own sync history: its outcome in each run that had it */
			json_t *hist = json_array();
			catalog_repo_results_each(rt->data->catalog, repo.id, 20, results_cb, hist);
			json_object_set_new(o, "history", hist);
		}
		json_object_set_new(o, "card_data", card);
		/* whether .../card answers (a gated or private repo's content, its card too, is not shown) */
		json_object_set_new(o, "card_shown",
				    json_boolean(snap.id && mirror_access_content_open(rt->access, &repo)));
		json_object_set_new(o, "swarm", rt->fronts->swarm_json(rt, snap.id, &repo, base));
		httpd_add_header(req, "Access-Control-Allow-Origin", "*");
		mirror__respond_json(req, 200, o);
	}
out:
	if (found)
		catalog_repo_release(&repo);
	free(name);
	free(base);
	free(rev);
}

static int runs_cb(void *ud, const struct catalog_run *r)
{
	json_array_append_new(ud,
			      json_pack("{s:I, s:I, s:o, s:o, s:I, s:I, s:I, s:I}", "id", (json_int_t)r->id,
					"started_at", (json_int_t)r->started_at, "ended_at",
					r->ended_at ? json_integer(r->ended_at) : json_null(), "outcome",
					mirror_json_str_or_null(r->outcome), "repos_ok", (json_int_t)r->repos_ok,
					"repos_failed", (json_int_t)r->repos_failed, "files_fetched",
					(json_int_t)r->files_fetched, "bytes_fetched", (json_int_t)r->bytes_fetched));
	return 0;
}

/* The mirror's totals: counts every file and blob of the catalog, so on a worker. */
static void stats_build(struct mirror__job *job, struct catalog *cat)
{
	struct catalog_totals t;

	if (catalog_totals(cat, &t)) {
		job->status = 500;
		job->body = json_pack("{s:s}", "error", "catalog error");
		return;
	}
	job->status = 200;
	job->body = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"repos", (json_int_t)t.repos, "repos_synced", (json_int_t)t.repos_synced,
		"snapshots", (json_int_t)t.snapshots, "files", (json_int_t)t.files, "blobs", (json_int_t)t.blobs,
		"unique_bytes", (json_int_t)t.unique_bytes, "logical_bytes", (json_int_t)t.logical_bytes,
		"dedup_saved_bytes", (json_int_t)t.dedup_saved_bytes);
}

static void stats_release(struct mirror__job *job)
{
	free(job);
}

int mirror__route_catalog(struct mirror_routes *rt, struct httpd_req *req, const char *p, const char *arg)
{
	(void)arg;
	if (strcmp(httpd_method(req), "GET") && strcmp(httpd_method(req), "HEAD")) {
		api_error(req, 405, "read-only");
		return 0;
	}
	if (!strcmp(p, "repos")) {
		catalog_repos(rt, req);
	} else if (skip_prefix(p, "repos/")) {
		catalog_repo(rt, req, skip_prefix(p, "repos/"));
	} else if (!strcmp(p, "stats")) {
		struct mirror__job *j = xcalloc(1, sizeof(*j));
		j->build = stats_build;
		j->release = stats_release;
		httpd_add_header(req, "Access-Control-Allow-Origin", "*");
		mirror__defer(rt, req, j);
	} else if (!strcmp(p, "syncs")) {
		json_t *a = json_array();
		int64_t limit = qint(req, "limit", 20);
		catalog_runs_each(rt->data->catalog, (size_t)(limit < 1 || limit > 1000 ? 20 : limit), runs_cb, a);
		httpd_add_header(req, "Access-Control-Allow-Origin", "*");
		mirror__respond_json(req, 200, json_pack("{s:o}", "runs", a));
	} else {
		api_error(req, 404, "not found");
	}
	return 0;
}
