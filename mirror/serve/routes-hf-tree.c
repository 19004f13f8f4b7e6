/*
 * routes-hf-tree.c - a snapshot's files listed, the Hugging Face API's way (routes-hf-int.h): the
 * tree (B, paged), paths-info (C) and treesize (H), each built on a worker from the catalog.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "mirror/data.h"
#include "store/store.h"
#include "hub/http/http.h"
#include "hub/hub.h"
#include "access.h"
#include "ondemand.h"
#include "routes-hf-int.h"
#include "routes-int.h"

/* ---- B: tree ---------------------------------------------------------------------------------------- */

struct tree_ctx {
	const struct catalog_snapshot *snap;
	json_t *arr;
	const char *base;        /* "" or "dir" (no trailing slash) */
	size_t baselen;
	bool recursive;
	bool expand;
	size_t limit;
	size_t emitted;          /* recursive: files; otherwise entries */
	bool more;               /* stopped at the limit with entries left */
	char *prev;              /* recursive: the previous file path (its folders are listed) */
	char *last_dir;          /* non-recursive: the last child folder listed */
	char *cursor;            /* where the next page starts: a path, or "folder/\xff" */
};

/* Emit the folders between base and path that the previous path did not already have. */
static void tree_dirs(struct tree_ctx *t, const char *path)
{
	const char *p = path + (t->baselen ? t->baselen + 1 : 0);

	for (const char *slash = strchr(p, '/'); slash; slash = strchr(slash + 1, '/')) {
		size_t n = (size_t)(slash - path);
		char *d;
		if (t->prev && strlen(t->prev) > n && !strncmp(t->prev, path, n) && t->prev[n] == '/')
			continue;
		d = xstrndup(path, n);
		json_array_append_new(t->arr, mirror__hf_dir_json(d, t->snap));
		free(d);
	}
}

static int tree_cb(void *ud, const struct catalog_entry *e)
{
	struct tree_ctx *t = ud;
	const char *rel = e->path + (t->baselen ? t->baselen + 1 : 0);
	const char *slash = strchr(rel, '/');

	if (t->recursive) {
		/* pages count files; their folders come along */
		if (t->emitted == t->limit) {
			t->more = true;
			return 1;
		}
		tree_dirs(t, e->path);
		json_array_append_new(t->arr, mirror__hf_file_json(e, t->snap, t->expand));
		free(t->prev);
		t->prev = xstrdup(e->path);
		free(t->cursor);
		t->cursor = xstrdup(e->path);
		t->emitted++;
		return 0;
	}
	if (slash) {
		size_t n = (size_t)(slash - e->path);
		if (t->last_dir && strlen(t->last_dir) == n && !strncmp(t->last_dir, e->path, n))
			return 0; /* inside the folder just listed */
		if (t->emitted == t->limit) {
			t->more = true;
			return 1;
		}
		free(t->last_dir);
		t->last_dir = xstrndup(e->path, n);
		json_array_append_new(t->arr, mirror__hf_dir_json(t->last_dir, t->snap));
		free(t->cursor);
		t->cursor = xasprintf("%s/\xff", t->last_dir); /* sorts after everything in it */
	} else {
		if (t->emitted == t->limit) {
			t->more = true;
			return 1;
		}
		json_array_append_new(t->arr, mirror__hf_file_json(e, t->snap, t->expand));
		free(t->cursor);
		t->cursor = xstrdup(e->path);
	}
	t->emitted++;
	return 0;
}

/* A tree page: up to 1,000 entries, but a folder of 300,000 files is walked whole to list it once,
 * so built on a worker. */
struct tree_job {
	struct mirror__job j;
	struct catalog_snapshot snap;
	const char *type;       /* static */
	char *name, *rev_enc, *sub, *cursor, *base;
	long limit;
	bool recursive, expand;
};

static void tree_build(struct mirror__job *job, struct catalog *cat)
{
	struct tree_job *tj = (struct tree_job *)job;
	struct tree_ctx t;
	char *prefix = NULL;
	int r;

	memset(&t, 0, sizeof(t));
	t.snap = &tj->snap;
	t.arr = json_array();
	t.recursive = tj->recursive;
	t.expand = tj->expand;
	t.base = tj->sub ? tj->sub : "";
	t.baselen = strlen(t.base);
	if (t.baselen) {
		struct catalog_entry e;
		if (path_check_str(t.base) || !catalog_snapshot_file(cat, tj->snap.id, t.base, &e)) {
			/* a file is not a folder to list (the Hub answers 404 too) */
			if (!path_check_str(t.base))
				catalog_entry_release(&e);
			mirror__hf_job_error(job, 404, "EntryNotFound", "Entry not found", tj->snap.commit);
			goto out;
		}
		prefix = xasprintf("%s/", t.base);
	}
	t.limit = (size_t)tj->limit;
	t.prev = tj->cursor ? xstrdup(tj->cursor) : NULL;
	r = catalog_snapshot_walk(cat, tj->snap.id, prefix, tj->cursor, 0, tree_cb, &t);
	if (r && r != 1) {
		mirror__hf_job_error(job, 500, NULL, "catalog error", NULL);
		goto out;
	}
	if (t.baselen && json_array_size(t.arr) == 0 && !tj->cursor) {
		mirror__hf_job_error(job, 404, "EntryNotFound", "Entry not found", tj->snap.commit);
		goto out;
	}
	if (t.more) {
		char *cur = hub_url_escape(t.cursor, false), *sub = hub_url_escape(t.base, true);
		mirror__job_header(
			job, "Link",
			"<%s/api/%ss/%s/tree/%s%s%s?recursive=%s&expand=%s&limit=%ld&cursor=%s>; rel=\"next\"",
			tj->base, tj->type, tj->name, tj->rev_enc, t.baselen ? "/" : "", sub,
			t.recursive ? "true" : "false", t.expand ? "true" : "false", tj->limit, cur);
		free(cur);
		free(sub);
	}
	job->status = 200;
	job->body = t.arr;
	t.arr = NULL;
out:
	json_decref(t.arr);
	free(t.prev);
	free(t.last_dir);
	free(t.cursor);
	free(prefix);
}

static void tree_release(struct mirror__job *job)
{
	struct tree_job *tj = (struct tree_job *)job;

	free(tj->name);
	free(tj->rev_enc);
	free(tj->sub);
	free(tj->cursor);
	free(tj->base);
	free(tj);
}

void mirror__hf_tree(struct mirror__hf_req *h, const char *rev, const char *rev_raw, const char *subpath)
{
	struct tree_job *tj;
	char *limit_s = httpd_query_param(h->req, "limit");
	long limit = limit_s ? strtol(limit_s, NULL, 10) : TREE_PAGE;
	size_t n = subpath ? strlen(subpath) : 0;

	free(limit_s);
	if (limit < 1 || limit > TREE_PAGE)
		limit = TREE_PAGE;
	if (mirror__hf_resolve(h, rev))
		return;
	tj = xcalloc(1, sizeof(*tj));
	tj->j.build = tree_build;
	tj->j.release = tree_release;
	tj->snap = h->snap;
	tj->type = h->type;
	tj->name = xstrdup(h->name);
	tj->rev_enc = xstrdup(rev_raw);
	while (n && subpath[n - 1] == '/')
		n--;
	tj->sub = n ? xstrndup(subpath, n) : NULL;
	tj->cursor = httpd_query_param(h->req, "cursor");
	tj->base = mirror__self_base(h->req);
	tj->limit = limit;
	tj->recursive = mirror__hf_query_bool(h->req, "recursive");
	tj->expand = mirror__hf_query_bool(h->req, "expand");
	mirror__hf_cors(h->req);
	mirror__defer(h->rt, h->req, &tj->j);
}

/* ---- C: paths-info --------------------------------------------------------------------------------- */

static int any_cb(void *ud, const struct catalog_entry *e)
{
	(void)e;
	*(bool *)ud = true;
	return 1;
}

/* The paths a paths-info body names (JSON or a form), and its expand flag. */
static json_t *paths_parse(const char *body, size_t blen, bool json, bool *expand)
{
	json_t *paths = json_array();

	if (json) {
		json_t *j = json_loadb(body, blen, 0, NULL);
		json_t *ps = json_object_get(j, "paths");
		if (json_is_array(ps))
			json_array_extend(paths, ps);
		else if (json_is_string(ps))
			json_array_append(paths, ps);
		*expand = json_is_true(json_object_get(j, "expand"));
		json_decref(j);
	} else {
		/* form: paths=a&paths=b&expand=true */
		char *copy = xstrndup(body, blen), *save = NULL;
		for (char *kv = strtok_r(copy, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
			char *eq = strchr(kv, '='), *k, *v;
			if (!eq)
				continue;
			k = httpd_unescape(kv, (size_t)(eq - kv), true);
			v = httpd_unescape(eq + 1, strlen(eq + 1), true);
			if (k && v && !strcmp(k, "paths"))
				json_array_append_new(paths, json_string(v));
			else if (k && v && !strcmp(k, "expand"))
				*expand = !strcasecmp(v, "true") || !strcmp(v, "1");
			free(k);
			free(v);
		}
		free(copy);
	}
	return paths;
}

/* Up to 10,000 lookups (a body of 1 MiB names that many), so on a worker. The body is parsed on the
 * loop (bounded by the server's body limit, a few ms at most) and the job keeps only the paths that
 * can exist: a queue of waiting jobs must not pin every client's body (a flood of 900 KB bodies did). */
struct paths_job {
	struct mirror__job j;
	struct catalog_snapshot snap;
	json_t *paths;          /* strings that pass path_check, at most 10,000 */
	bool expand;
};

static void paths_build(struct mirror__job *job, struct catalog *cat)
{
	struct paths_job *pj = (struct paths_job *)job;
	json_t *out = json_array(), *p;
	size_t i;

	json_array_foreach(pj->paths, i, p) {
		const char *path = json_string_value(p);
		struct catalog_entry e;
		char *prefix;
		bool any = false;

		if (!catalog_snapshot_file(cat, pj->snap.id, path, &e)) {
			json_array_append_new(out, mirror__hf_file_json(&e, &pj->snap, pj->expand));
			catalog_entry_release(&e);
			continue;
		}
		prefix = xasprintf("%s/", path);
		catalog_snapshot_walk(cat, pj->snap.id, prefix, NULL, 1, any_cb, &any);
		free(prefix);
		if (any)
			json_array_append_new(out, mirror__hf_dir_json(path, &pj->snap));
	}
	job->status = 200;
	job->body = out;
}

static void paths_release(struct mirror__job *job)
{
	json_decref(((struct paths_job *)job)->paths);
	free(job);
}

void mirror__hf_paths_info(struct mirror__hf_req *h, const char *rev)
{
	size_t blen;
	const char *body = httpd_body(h->req, &blen);
	const char *ctype = httpd_header(h->req, "Content-Type");
	struct paths_job *pj;
	json_t *all, *p;
	size_t i;

	if (mirror__hf_resolve(h, rev))
		return;
	pj = xcalloc(1, sizeof(*pj));
	pj->j.build = paths_build;
	pj->j.release = paths_release;
	pj->snap = h->snap;
	all = paths_parse(body ? body : "", blen, ctype && !strncasecmp(ctype, "application/json", 16), &pj->expand);
	pj->paths = json_array();
	json_array_foreach(all, i, p) {
		const char *path = json_string_value(p);
		/* missing (or impossible) paths are simply omitted, as on the Hub */
		if (i < 10000 && path && !path_check_str(path))
			json_array_append(pj->paths, p);
	}
	json_decref(all);
	mirror__hf_cors(h->req);
	mirror__defer(h->rt, h->req, &pj->j);
}

/* ---- H: treesize -------------------------------------------------------------------------------- */

static int size_cb(void *ud, const struct catalog_entry *e)
{
	*(int64_t *)ud += e->size;
	return 0;
}

/* The size below a path: every file of it is summed (the root: all of them), so on a worker. */
struct size_job {
	struct mirror__job j;
	int64_t snap_id;
	char *sub;              /* NULL: the root */
};

static void size_build(struct mirror__job *job, struct catalog *cat)
{
	struct size_job *sj = (struct size_job *)job;
	char *prefix = sj->sub && *sj->sub ? xasprintf("%s/", sj->sub) : NULL;
	int64_t total = 0;

	if (catalog_snapshot_walk(cat, sj->snap_id, prefix, NULL, 0, size_cb, &total)) {
		mirror__hf_job_error(job, 500, NULL, "catalog error", NULL);
	} else {
		job->status = 200;
		job->body = json_pack("{s:s, s:I}", "path", sj->sub ? sj->sub : "", "size", (json_int_t)total);
	}
	free(prefix);
}

static void size_release(struct mirror__job *job)
{
	free(((struct size_job *)job)->sub);
	free(job);
}

void mirror__hf_treesize(struct mirror__hf_req *h, const char *rev, const char *subpath)
{
	struct size_job *sj;

	if (mirror__hf_resolve(h, rev))
		return;
	sj = xcalloc(1, sizeof(*sj));
	sj->j.build = size_build;
	sj->j.release = size_release;
	sj->snap_id = h->snap.id;
	sj->sub = subpath ? xstrdup(subpath) : NULL;
	mirror__hf_cors(h->req);
	mirror__defer(h->rt, h->req, &sj->j);
}
