/*
 * routes-hf.c - the Hugging Face Hub API, as the official clients use it (docs/protocols/huggingface.md), answered from
 * the catalog and the store.
 *
 * Routing happens on the raw path: a revision may arrive encoded (refs%2Fpr%2F1, Python) or raw
 * (refs/pr/1, JS), so the path is split on '/' first and each piece decoded after. Nothing here ever
 * mentions Xet: the mirror answers every file itself over plain HTTP.
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
#include "hub/hf.h"
#include "hub/http.h"
#include "hub/hub.h"
#include "access.h"
#include "ondemand.h"
#include "routes-int.h"
#include "mirror/store.h"

#define TREE_PAGE 1000
#define LIST_PAGE 1000

static const char cors_expose[] =
	"X-Repo-Commit, X-Request-Id, X-Error-Code, X-Error-Message, ETag, Link, Accept-Ranges, "
	"Content-Range, X-Linked-Size, X-Linked-ETag";

/* ---- small helpers ------------------------------------------------------------------------------- */

struct segs {
	char **v;       /* raw (still encoded) segments */
	size_t n;
	char *copy;
};

static void segs_split(struct segs *s, const char *path)
{
	char *p;

	memset(s, 0, sizeof(*s));
	s->copy = xstrdup(path[0] == '/' ? path + 1 : path);
	s->v = xcalloc(strlen(s->copy) + 2, sizeof(*s->v));
	for (p = s->copy; ; ) {
		char *slash = strchr(p, '/');
		s->v[s->n++] = p;
		if (!slash)
			break;
		*slash = '\0';
		p = slash + 1;
	}
}

static void segs_free(struct segs *s)
{
	free(s->v);
	free(s->copy);
}

/* Join segs[from..n) with '/' and percent-decode; NULL if a piece is malformed. */
static char *segs_join_decoded(const struct segs *s, size_t from)
{
	struct buf b;
	char *out;

	buf_init(&b);
	for (size_t i = from; i < s->n; i++) {
		if (i > from)
			buf_addch(&b, '/');
		buf_adds(&b, s->v[i]);
	}
	out = httpd_unescape(b.data, b.len, false);
	buf_release(&b);
	return out;
}

/* A revision at segs[i] (hub/hf.h: refs/pr/N sent raw spans three segments). */
static char *take_revision(const struct segs *s, size_t i, size_t *used)
{
	return hf_take_revision(s->v, s->n, i, used);
}

static bool query_bool(const struct httpd_req *req, const char *name)
{
	char *v = httpd_query_param(req, name);
	bool on = v && (!strcasecmp(v, "true") || !strcmp(v, "1"));

	free(v);
	return on;
}

static void add_cors(struct httpd_req *req)
{
	httpd_add_header(req, "Access-Control-Allow-Origin", "*");
	httpd_add_header(req, "Access-Control-Expose-Headers", cors_expose);
}

/* The Hub's error answer: status, X-Error-Code (may be NULL), X-Error-Message, {"error": msg}. */
static void hf_error(struct httpd_req *req, int status, const char *code, const char *msg, const char *commit)
{
	json_t *o = json_pack("{s:s}", "error", msg);

	add_cors(req);
	if (code)
		httpd_add_header(req, "X-Error-Code", code);
	httpd_add_header(req, "X-Error-Message", msg);
	if (commit)
		httpd_add_header(req, "X-Repo-Commit", commit);
	mirror__respond_json(req, status, o);
}

/* hf_error for a deferred answer (on a worker): the same answer; CORS was added on the loop. */
static void hf_job_error(struct mirror__job *j, int status, const char *code, const char *msg, const char *commit)
{
	if (code)
		mirror__job_header(j, "X-Error-Code", "%s", code);
	mirror__job_header(j, "X-Error-Message", "%s", msg);
	if (commit)
		mirror__job_header(j, "X-Repo-Commit", "%s", commit);
	json_decref(j->body);
	j->status = status;
	j->body = json_pack("{s:s}", "error", msg);
}

static char *iso_time(int64_t t)
{
	char b[32];
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S.000Z", &tm);
	return xstrdup(b);
}

static size_t lfs_pointer(const struct catalog_entry *e, char *out, size_t cap)
{
	int n = snprintf(out, cap, "version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %" PRId64 "\n",
			 e->lfs_oid, e->size);
	return n < 0 ? 0 : (size_t)n;
}

/* A stable stand-in for a directory's git tree id (clients require an oid; we keep no trees). */
static void dir_oid(const char *commit, const char *path, char out[41])
{
	unsigned char md[20];
	unsigned int n;
	char *s = xasprintf("tree %s %s", commit, path);

	EVP_Digest(s, strlen(s), md, &n, EVP_sha1(), NULL);
	hex_encode(md, 20, out);
	free(s);
}

static json_t *file_json(const struct catalog_entry *e, const struct catalog_snapshot *snap, bool expand)
{
	json_t *o = json_pack("{s:s, s:s, s:I, s:s}", "type", "file", "oid", e->git_oid[0] ? e->git_oid : e->sha256,
			      "size", (json_int_t)e->size, "path", e->path);
	if (e->lfs_oid[0]) {
		char ptr[256];
		json_object_set_new(o, "lfs", json_pack("{s:s, s:I, s:I}", "oid", e->lfs_oid, "size", (json_int_t)e->size,
							 "pointerSize", (json_int_t)lfs_pointer(e, ptr, sizeof(ptr))));
	}
	if (expand) {
		char *d = iso_time(snap->synced_at);
		json_object_set_new(o, "lastCommit", json_pack("{s:s, s:s, s:s}", "id", snap->commit, "title", "",
								"date", d));
		free(d);
	}
	return o;
}

static json_t *dir_json(const char *path, const struct catalog_snapshot *snap)
{
	char oid[41];

	dir_oid(snap->commit, path, oid);
	return json_pack("{s:s, s:s, s:i, s:s}", "type", "directory", "oid", oid, "size", 0, "path", path);
}

/* ---- the request context ------------------------------------------------------------------------- */

struct hfreq {
	struct mirror_routes *rt;
	struct httpd_req *req;
	const char *type;       /* "model" | "dataset" */
	char *name;             /* org/name */
	struct catalog_repo repo;
	bool repo_loaded;
	struct catalog_snapshot snap;
};

static void hfreq_release(struct hfreq *h)
{
	free(h->name);
	if (h->repo_loaded)
		catalog_repo_release(&h->repo);
}

/* A repo the catalog tracks but never got, because upstream refused the mirror: answer as the Hub
 * answers a client that may not read it, so clients raise what they would upstream (GatedRepoError,
 * DisabledRepoError, RepositoryNotFoundError), not RevisionNotFoundError. true when it answered. */
static bool hf_refused(struct hfreq *h)
{
	struct catalog_repo r = { 0 };
	bool answered = true;
	char *m;

	if (catalog_repo_get(h->rt->data->catalog, "hf", h->type, h->name, &r))
		return false;
	if (r.head_commit || !r.sync_status) {
		answered = false;
	} else if (!strcmp(r.sync_status, "gated")) {
		m = xasprintf("Access to %s %s is restricted, and this mirror has no approved access to it: its operator "
			      "must request access upstream and give the mirror a token that has it.", h->type, h->name);
		hf_error(h->req, httpd_header(h->req, "Authorization") ? 403 : 401, "GatedRepo", m, NULL);
		free(m);
	} else if (!strcmp(r.sync_status, "disabled")) {
		hf_error(h->req, 403, NULL, "Access to this resource is disabled.", NULL);
	} else if (!strcmp(r.sync_status, "denied") || !strcmp(r.sync_status, "missing")) {
		m = xasprintf("Repository not found: upstream %s %s to this mirror", !strcmp(r.sync_status, "denied") ?
			      "refuses" : "no longer has", h->name);
		hf_error(h->req, 404, "RepoNotFound", m, NULL);
		free(m);
	} else {
		answered = false;
	}
	catalog_repo_release(&r);
	return answered;
}

/* Resolve h->name at rev; on failure answer the Hub's error and return non-zero. */
static int hf_resolve_how(struct hfreq *h, const char *rev, bool lite)
{
	bool found = false;
	int r = (lite ? catalog_resolve_lite : catalog_resolve)(h->rt->data->catalog, "hf", h->type, h->name, rev,
								&h->repo, &h->snap, &found);
	char *tracked = NULL;

	if (!found && !catalog_repo_alias(h->rt->data->catalog, "hf", h->type, h->name, &tracked)) {
		/* upstream renamed it after it was added: the name clients learn there finds it too, under
		 * the tracked name's access rules */
		free(h->name);
		h->name = tracked;
		r = (lite ? catalog_resolve_lite : catalog_resolve)(h->rt->data->catalog, "hf", h->type, h->name, rev,
								    &h->repo, &h->snap, &found);
	}
	h->repo_loaded = found;
	if (found && !mirror__repo_visible(h->rt, &h->repo)) {
		/* a private repo nobody may read here: as one the mirror does not have */
		hf_error(h->req, 404, "RepoNotFound", "Repository not found", NULL);
		return -1;
	}
	if (found && !mirror__access_check(h->rt, h->req, "hf", h->type, h->name, "hf"))
		return -1;
	if (found && h->rt->ondemand && h->repo.options && strstr(h->repo.options, "\"on_demand\""))
		mirror_ondemand_touch(h->rt, h->repo.id);
	if (found && !lite)
		mirror__tier_headers(h->req, &h->repo);
	if (!r)
		return 0;
	if (r == HM_ERR_NOT_FOUND && !found && mirror_ondemand_track(h->rt, h->req, "hf", h->type, h->name)) {
		/* fetched on demand: answered once it is listed */
	} else if (r == HM_ERR_NOT_FOUND && !found) {
		hf_error(h->req, 404, "RepoNotFound", "Repository not found", NULL);
	} else if (r == HM_ERR_NOT_FOUND && hf_refused(h)) {
		/* answered */
	} else if (r == HM_ERR_NOT_FOUND) {
		char *m = xasprintf("Invalid rev id: %s", rev ? rev : "HEAD");
		hf_error(h->req, 404, "RevisionNotFound", m, NULL);
		free(m);
	} else {
		hf_error(h->req, 500, NULL, "catalog error", NULL);
	}
	return -1;
}

/* Resolve h->name at rev with the full repo row (metadata answers); the file routes use the lite
 * lookup, which reads only what serving a file needs. */
static int hf_resolve(struct hfreq *h, const char *rev)
{
	return hf_resolve_how(h, rev, false);
}

/* ---- A: repo info -------------------------------------------------------------------------------- */

struct sib_ctx {
	json_t *arr;
	bool blobs;
};

static int sibling_cb(void *ud, const struct catalog_entry *e)
{
	struct sib_ctx *s = ud;
	json_t *o = json_pack("{s:s}", "rfilename", e->path);

	if (s->blobs) {
		json_object_set_new(o, "size", json_integer(e->size));
		json_object_set_new(o, "blobId", json_string(e->git_oid[0] ? e->git_oid : e->sha256));
		if (e->lfs_oid[0]) {
			char ptr[256];
			json_object_set_new(o, "lfs", json_pack("{s:I, s:s, s:I}", "size", (json_int_t)e->size,
								 "sha256", e->lfs_oid, "pointerSize",
								 (json_int_t)lfs_pointer(e, ptr, sizeof(ptr))));
		}
	}
	json_array_append_new(s->arr, o);
	return 0;
}

static json_t *repo_summary_json(const struct catalog_repo *r, const char *type, const char *commit,
				 int64_t synced_at)
{
	unsigned char md[20];
	unsigned int n;
	char id24[41], *lm;
	json_t *o, *v;
	const char *slash = strchr(r->name, '/');

	EVP_Digest(r->name, strlen(r->name), md, &n, EVP_sha1(), NULL);
	hex_encode(md, 12, id24);
	lm = r->last_sync_at || synced_at ? iso_time(synced_at ? synced_at : r->last_sync_at) : xstrdup("1970-01-01T00:00:00.000Z");
	o = json_pack("{s:s, s:s, s:s, s:b, s:b}", "_id", id24, "id", r->name, "lastModified", lm, "private", r->private_ == 1,
		      "disabled", 0);
	free(lm);
	if (!strcmp(type, "model"))
		json_object_set_new(o, "modelId", json_string(r->name));
	if (slash)
		json_object_set_new(o, "author", json_stringn(r->name, (size_t)(slash - r->name)));
	if (commit)
		json_object_set_new(o, "sha", json_string(commit));
	if (r->created_at > 0) {
		char *ca = iso_time(r->created_at);
		json_object_set_new(o, "createdAt", json_string(ca));
		free(ca);
	}
	json_object_set_new(o, "gated", r->gated && strcmp(r->gated, "false") ? json_string(r->gated) : json_false());
	json_object_set_new(o, "downloads", json_integer(r->downloads > 0 ? r->downloads : 0));
	json_object_set_new(o, "likes", json_integer(r->likes > 0 ? r->likes : 0));
	v = r->tags ? json_loads(r->tags, 0, NULL) : NULL;
	json_object_set_new(o, "tags", json_is_array(v) ? v : json_array());
	if (v && !json_is_array(v))
		json_decref(v);
	if (r->pipeline_tag)
		json_object_set_new(o, "pipeline_tag", json_string(r->pipeline_tag));
	if (r->library_name)
		json_object_set_new(o, "library_name", json_string(r->library_name));
	return o;
}

/* The siblings of a repo info: every file (300,000 of them take 0.5 s), so built on a worker. */
struct info_job {
	struct mirror__job j;
	json_t *o;              /* the info without its siblings */
	int64_t snap_id;
	bool blobs;
};

static void info_build(struct mirror__job *job, struct catalog *cat)
{
	struct info_job *ij = (struct info_job *)job;
	struct sib_ctx sc = { json_array(), ij->blobs };
	int r = catalog_snapshot_walk(cat, ij->snap_id, NULL, NULL, 0, sibling_cb, &sc);

	json_object_set_new(ij->o, "siblings", sc.arr);
	if (r) {
		hf_job_error(job, 500, NULL, "catalog error", NULL);
		return;
	}
	job->status = 200;
	job->body = ij->o;
	ij->o = NULL;
}

static void info_release(struct mirror__job *job)
{
	json_decref(((struct info_job *)job)->o);
	free(job);
}

static void hf_info(struct hfreq *h, const char *rev)
{
	struct info_job *ij;
	json_t *o, *card;

	if (hf_resolve(h, rev))
		return;
	o = repo_summary_json(&h->repo, h->type, h->snap.commit, h->snap.synced_at);
	card = h->repo.card_data ? json_loads(h->repo.card_data, 0, NULL) : NULL;
	if (json_is_object(card))
		json_object_set_new(o, "cardData", card);
	else
		json_decref(card);
	json_object_set_new(o, "usedStorage", json_integer(h->snap.total_size));
	ij = xcalloc(1, sizeof(*ij));
	ij->j.build = info_build;
	ij->j.release = info_release;
	ij->o = o;
	ij->snap_id = h->snap.id;
	ij->blobs = query_bool(h->req, "blobs");
	add_cors(h->req);
	mirror__defer(h->rt, h->req, &ij->j);
}

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
		json_array_append_new(t->arr, dir_json(d, t->snap));
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
		json_array_append_new(t->arr, file_json(e, t->snap, t->expand));
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
		json_array_append_new(t->arr, dir_json(t->last_dir, t->snap));
		free(t->cursor);
		t->cursor = xasprintf("%s/\xff", t->last_dir); /* sorts after everything in it */
	} else {
		if (t->emitted == t->limit) {
			t->more = true;
			return 1;
		}
		json_array_append_new(t->arr, file_json(e, t->snap, t->expand));
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
			hf_job_error(job, 404, "EntryNotFound", "Entry not found", tj->snap.commit);
			goto out;
		}
		prefix = xasprintf("%s/", t.base);
	}
	t.limit = (size_t)tj->limit;
	t.prev = tj->cursor ? xstrdup(tj->cursor) : NULL;
	r = catalog_snapshot_walk(cat, tj->snap.id, prefix, tj->cursor, 0, tree_cb, &t);
	if (r && r != 1) {
		hf_job_error(job, 500, NULL, "catalog error", NULL);
		goto out;
	}
	if (t.baselen && json_array_size(t.arr) == 0 && !tj->cursor) {
		hf_job_error(job, 404, "EntryNotFound", "Entry not found", tj->snap.commit);
		goto out;
	}
	if (t.more) {
		char *cur = hub_url_escape(t.cursor, false), *sub = hub_url_escape(t.base, true);
		mirror__job_header(job, "Link", "<%s/api/%ss/%s/tree/%s%s%s?recursive=%s&expand=%s&limit=%ld&cursor=%s>; rel=\"next\"",
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

static void hf_tree(struct hfreq *h, const char *rev, const char *rev_raw, const char *subpath)
{
	struct tree_job *tj;
	char *limit_s = httpd_query_param(h->req, "limit");
	long limit = limit_s ? strtol(limit_s, NULL, 10) : TREE_PAGE;
	size_t n = subpath ? strlen(subpath) : 0;

	free(limit_s);
	if (limit < 1 || limit > TREE_PAGE)
		limit = TREE_PAGE;
	if (hf_resolve(h, rev))
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
	tj->recursive = query_bool(h->req, "recursive");
	tj->expand = query_bool(h->req, "expand");
	add_cors(h->req);
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
			json_array_append_new(out, file_json(&e, &pj->snap, pj->expand));
			catalog_entry_release(&e);
			continue;
		}
		prefix = xasprintf("%s/", path);
		catalog_snapshot_walk(cat, pj->snap.id, prefix, NULL, 1, any_cb, &any);
		free(prefix);
		if (any)
			json_array_append_new(out, dir_json(path, &pj->snap));
	}
	job->status = 200;
	job->body = out;
}

static void paths_release(struct mirror__job *job)
{
	json_decref(((struct paths_job *)job)->paths);
	free(job);
}

static void hf_paths_info(struct hfreq *h, const char *rev)
{
	size_t blen;
	const char *body = httpd_body(h->req, &blen);
	const char *ctype = httpd_header(h->req, "Content-Type");
	struct paths_job *pj;
	json_t *all, *p;
	size_t i;

	if (hf_resolve(h, rev))
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
	add_cors(h->req);
	mirror__defer(h->rt, h->req, &pj->j);
}

/* ---- F, G, H: refs, commits, treesize ----------------------------------------------------------------- */

struct refs_ctx {
	json_t *branches, *tags, *prs, *converts;
};

static int refs_cb(void *ud, const char *name, const char *kind, const char *commit)
{
	struct refs_ctx *r = ud;

	if (!strcmp(kind, "pr"))
		json_array_append_new(r->prs, json_pack("{s:s, s:s, s:s}", "name", name, "ref", name, "targetCommit", commit));
	else if (!strcmp(kind, "tag"))
		json_array_append_new(r->tags, json_pack("{s:s, s:s+, s:s}", "name", name, "ref",
							  "refs/tags/", name, "targetCommit", commit));
	else if (!strcmp(kind, "convert")) /* refs/convert/parquet: named "parquet" */
		json_array_append_new(r->converts, json_pack("{s:s, s:s, s:s}", "name", name + strlen("refs/convert/"),
							      "ref", name, "targetCommit", commit));
	else if (!hex_is_lower(name, 40)) /* a followed commit id is not a branch */
		json_array_append_new(r->branches, json_pack("{s:s, s:s+, s:s}", "name", name, "ref",
							      "refs/heads/", name, "targetCommit", commit));
	return 0;
}

static void hf_refs(struct hfreq *h)
{
	struct refs_ctx r = { json_array(), json_array(), json_array(), json_array() };
	json_t *o;

	if (hf_resolve(h, NULL)) {
		json_decref(r.branches);
		json_decref(r.tags);
		json_decref(r.prs);
		json_decref(r.converts);
		return;
	}
	catalog_refs_each(h->rt->data->catalog, h->repo.id, refs_cb, &r);
	o = json_pack("{s:o, s:o, s:o}", "branches", r.branches, "converts", r.converts, "tags", r.tags);
	if (query_bool(h->req, "include_prs"))
		json_object_set_new(o, "pullRequests", r.prs);
	else
		json_decref(r.prs);
	add_cors(h->req);
	mirror__respond_json(h->req, 200, o);
}

static void hf_commits(struct hfreq *h, const char *rev)
{
	char *d;
	json_t *a;

	if (hf_resolve(h, rev))
		return;
	/* The mirror knows the commits it synced, not upstream's history: one entry, the snapshot. */
	d = iso_time(h->snap.synced_at);
	a = json_pack("[{s:s, s:s, s:s, s:s, s:[]}]", "id", h->snap.commit, "title", "", "message", "", "date", d,
		      "authors");
	free(d);
	add_cors(h->req);
	mirror__respond_json(h->req, 200, a);
}

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
		hf_job_error(job, 500, NULL, "catalog error", NULL);
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

static void hf_treesize(struct hfreq *h, const char *rev, const char *subpath)
{
	struct size_job *sj;

	if (hf_resolve(h, rev))
		return;
	sj = xcalloc(1, sizeof(*sj));
	sj->j.build = size_build;
	sj->j.release = size_release;
	sj->snap_id = h->snap.id;
	sj->sub = subpath ? xstrdup(subpath) : NULL;
	add_cors(h->req);
	mirror__defer(h->rt, h->req, &sj->j);
}

/* ---- I: listings ---------------------------------------------------------------------------------- */

struct list_ctx {
	const char *type;
	json_t *arr;
	size_t n;
	char *last;
};

static int list_cb(void *ud, const struct catalog_repo *r)
{
	struct list_ctx *l = ud;

	json_array_append_new(l->arr, repo_summary_json(r, l->type, r->head_commit, r->last_sync_at));
	free(l->last);
	l->last = xstrdup(r->name);
	l->n++;
	return 0;
}

/* A page of repos, with search: a scan of every repo's name, so built on a worker. */
struct list_job {
	struct mirror__job j;
	const char *type;       /* static */
	char *search, *author, *cursor, *hidden, *base;
	long limit;
};

static void list_build(struct mirror__job *job, struct catalog *cat)
{
	struct list_job *lj = (struct list_job *)job;
	struct list_ctx l = { lj->type, json_array(), 0, NULL };

	if (catalog_repos_each(cat, "hf", lj->type, lj->search && *lj->search ? lj->search : NULL,
			       lj->author && *lj->author ? lj->author : NULL, lj->cursor, (size_t)lj->limit, lj->hidden,
			       list_cb, &l)) {
		json_decref(l.arr);
		free(l.last);
		hf_job_error(job, 500, NULL, "catalog error", NULL);
		return;
	}
	if (l.n == (size_t)lj->limit && l.last) {
		char *cur = hub_url_escape(l.last, false);
		char *s = lj->search ? hub_url_escape(lj->search, false) : xstrdup("");
		char *a = lj->author ? hub_url_escape(lj->author, false) : xstrdup("");
		mirror__job_header(job, "Link", "<%s/api/%ss?search=%s&author=%s&limit=%ld&cursor=%s>; rel=\"next\"",
				   lj->base, lj->type, s, a, lj->limit, cur);
		free(cur);
		free(s);
		free(a);
	}
	free(l.last);
	job->status = 200;
	job->body = l.arr;
}

static void list_release(struct mirror__job *job)
{
	struct list_job *lj = (struct list_job *)job;

	free(lj->search);
	free(lj->author);
	free(lj->cursor);
	free(lj->hidden);
	free(lj->base);
	free(lj);
}

static void hf_list(struct mirror_routes *rt, struct httpd_req *req, const char *type)
{
	struct list_job *lj = xcalloc(1, sizeof(*lj));
	char *limit_s = httpd_query_param(req, "limit");

	lj->j.build = list_build;
	lj->j.release = list_release;
	lj->type = type;
	lj->search = httpd_query_param(req, "search");
	lj->author = httpd_query_param(req, "author");
	lj->cursor = httpd_query_param(req, "cursor");
	lj->limit = limit_s ? strtol(limit_s, NULL, 10) : LIST_PAGE;
	if (lj->limit < 1 || lj->limit > LIST_PAGE)
		lj->limit = LIST_PAGE;
	free(limit_s);
	lj->hidden = mirror__hidden(rt, req);
	lj->base = mirror__self_base(req);
	add_cors(req);
	mirror__defer(rt, req, &lj->j);
}

/* ---- D, E: resolve and raw ------------------------------------------------------------------------ */

static void hf_file(struct hfreq *h, const char *rev, const char *path, bool raw)
{
	struct catalog_entry e;
	struct httpd_req *req = h->req;
	char etag[80], *fname, *disp;
	const char *base;
	int64_t a = 0, b = -1;
	int rr, r, trusted;

	if (hf_resolve_how(h, rev, true))
		return;
	if (!path || path_check_str(path)) {
		hf_error(req, 404, "EntryNotFound", "Entry not found", h->snap.commit);
		return;
	}
	r = catalog_snapshot_file(h->rt->data->catalog, h->snap.id, path, &e);
	if (r) {
		hf_error(req, r == HM_ERR_NOT_FOUND ? 404 : 500, r == HM_ERR_NOT_FOUND ? "EntryNotFound" : NULL,
			 r == HM_ERR_NOT_FOUND ? "Entry not found" : "catalog error", h->snap.commit);
		return;
	}
	if (!mirror_access_content_open(h->rt->access, &h->repo)) {
		/* the Hub's own answers: a gated repo's content, and a private repo to whom may not see it */
		if (h->repo.private_ == 1)
			hf_error(req, 401, NULL, "Invalid username or password.", NULL);
		else
			hf_error(req, 401, "GatedRepo", "Access to this gated repository is restricted on this mirror.", NULL);
		goto out;
	}
	add_cors(req);
	httpd_add_header(req, "X-Repo-Commit", h->snap.commit);
	/* The Hub's ETags, so caches built from the mirror and from the Hub are interchangeable. */
	snprintf(etag, sizeof(etag), "\"%s\"", e.lfs_oid[0] ? e.lfs_oid : (e.git_oid[0] ? e.git_oid : e.sha256));
	if (raw && e.lfs_oid[0]) {
		/* the git blob of an LFS file is its pointer; Range applies to it like to any file */
		char ptr[256];
		size_t n = lfs_pointer(&e, ptr, sizeof(ptr));
		snprintf(etag, sizeof(etag), "\"%s\"", e.git_oid);
		httpd_add_header(req, "ETag", etag);
		httpd_add_header(req, "Accept-Ranges", "bytes");
		rr = httpd_parse_range(httpd_header(req, "Range"), (int64_t)n, &a, &b);
		if (rr < 0) {
			httpd_add_headerf(req, "Content-Range", "bytes */%zu", n);
			httpd_respond_str(req, 416, "text/plain", "range not satisfiable\n");
		} else if (rr > 0) {
			httpd_add_headerf(req, "Content-Range", "bytes %" PRId64 "-%" PRId64 "/%zu", a, b, n);
			httpd_respond(req, 206, "text/plain; charset=utf-8", ptr + a, (size_t)(b - a + 1));
		} else {
			httpd_respond(req, 200, "text/plain; charset=utf-8", ptr, n);
		}
		goto out;
	}
	httpd_add_header(req, "ETag", etag);
	if (e.lfs_oid[0]) {
		httpd_add_header(req, "X-Linked-Etag", etag);
		httpd_add_headerf(req, "X-Linked-Size", "%" PRId64, e.size);
	}
	base = strrchr(e.path, '/') ? strrchr(e.path, '/') + 1 : e.path;
	fname = hub_url_escape(base, false);
	disp = xasprintf("inline; filename*=UTF-8''%s; filename=\"%s\"", fname, fname);
	httpd_add_header(req, "Content-Disposition", disp);
	free(fname);
	free(disp);
	if (httpd_etag_matches(httpd_header(req, "If-None-Match"), etag)) {
		httpd_respond_str(req, 304, NULL, "");
		goto out;
	}
	/* a provisional snapshot's content the store holds for another repo is served only once its
	 * own upstream's bytes were verified (docs/security.md, "What sync takes from a listing") */
	trusted = mirror__file_trusted(h->rt, h->snap.id, e.sha256);
	if (trusted != 1 || mirror__send_blob(h->rt, req, e.sha256, e.size)) {
		/* a provisional snapshot's content, fetched now; or (catalog says yes, store says no) one
		 * verify quarantined, which the next sync brings back */
		struct mirror_ondemand_file of = { "hf", h->type, h->name, h->snap.commit, h->repo.follow_rev, e.path,
						   e.sha256, e.size, h->snap.repo_id, trusted == 0 };
		if (!h->rt->ondemand || trusted < 0 ||
		    (trusted == 1 && catalog_blob_present(h->rt->data->catalog, e.sha256) != 0) ||
		    mirror_ondemand_send(h->rt, req, &of))
			hf_error(req, 503, NULL, "File temporarily unavailable on this mirror", h->snap.commit);
	}
out:
	catalog_entry_release(&e);
}

/* ---- the router ----------------------------------------------------------------------------------- */

/* Repo name at segs[i] (org/name, or a bare legacy name when the next segment is a keyword).
 * Returns the number of segments used, 0 when invalid. */
static size_t take_repo(const struct segs *s, size_t i, const char *const *keywords, char **name)
{
	bool two = i + 1 < s->n;

	if (two)
		for (const char *const *k = keywords; *k; k++)
			if (!strcmp(s->v[i + 1], *k))
				two = false;
	if (i >= s->n)
		return 0;
	*name = two ? xasprintf("%s/%s", s->v[i], s->v[i + 1]) : xstrdup(s->v[i]);
	if (hub_check_name(HUB_HF, *name)) {
		FREE_AND_NULL(name);
		return 0;
	}
	return two ? 2 : 1;
}

static const char *const api_keywords[] = { "revision", "tree", "paths-info", "refs", "commits", "treesize",
					    "xet-read-token", "resolve", NULL };
static const char *const file_keywords[] = { "resolve", "raw", NULL };

static int route_api(struct mirror_routes *rt, struct httpd_req *req, const struct segs *s)
{
	struct hfreq h = { .rt = rt, .req = req };
	const char *method = httpd_method(req);
	size_t i = 2, used;
	char *rev = NULL, *sub = NULL;

	/* s->v: api, {models|datasets|spaces}, ... */
	if (!strcmp(s->v[1], "models"))
		h.type = "model";
	else if (!strcmp(s->v[1], "datasets"))
		h.type = "dataset";
	else
		return HTTPD_PASS;
	if (s->n == 2) {
		if (strcmp(method, "GET") && strcmp(method, "HEAD"))
			return HTTPD_PASS;
		httpd_set_route(req, "hf_list");
		hf_list(rt, req, h.type);
		return 0;
	}
	used = take_repo(s, i, api_keywords, &h.name);
	if (!used) {
		httpd_set_route(req, "hf_api");
		hf_error(req, 404, "RepoNotFound", "Repository not found", NULL);
		return 0;
	}
	i += used;
	/* the route label for metrics: the action, or info */
	httpd_set_route(req, i == s->n ? "hf_info" : !strcmp(s->v[i], "revision") ? "hf_info"
			: !strcmp(s->v[i], "tree") ? "hf_tree" : !strcmp(s->v[i], "paths-info") ? "hf_paths_info"
			: !strcmp(s->v[i], "refs") ? "hf_refs" : !strcmp(s->v[i], "commits") ? "hf_commits"
			: !strcmp(s->v[i], "treesize") ? "hf_treesize" : "hf_api");
	if (i == s->n) {
		hf_info(&h, NULL);
	} else if (!strcmp(s->v[i], "revision") && i + 1 < s->n) {
		rev = segs_join_decoded(s, i + 1); /* everything after: refs/pr/1 raw or encoded */
		if (rev)
			hf_info(&h, rev);
	} else if (!strcmp(s->v[i], "tree") && (rev = take_revision(s, i + 1, &used))) {
		sub = segs_join_decoded(s, i + 1 + used);
		if (i + 1 + used < s->n && !sub)
			hf_error(req, 400, NULL, "bad path", NULL);
		else {
			char *rev_enc = hub_url_escape(rev, false); /* refs/pr/1 sent raw goes back encoded */
			hf_tree(&h, rev, rev_enc, sub);
			free(rev_enc);
		}
	} else if (!strcmp(s->v[i], "paths-info") && i + 1 < s->n && !strcmp(method, "POST")) {
		rev = segs_join_decoded(s, i + 1);
		if (rev)
			hf_paths_info(&h, rev);
	} else if (!strcmp(s->v[i], "refs") && i + 1 == s->n) {
		hf_refs(&h);
	} else if (!strcmp(s->v[i], "commits") && (rev = take_revision(s, i + 1, &used))) {
		hf_commits(&h, rev);
	} else if (!strcmp(s->v[i], "treesize") && (rev = take_revision(s, i + 1, &used))) {
		sub = segs_join_decoded(s, i + 1 + used);
		if (i + 1 + used < s->n && (!sub || path_check_str(sub)))
			hf_error(req, 400, NULL, "bad path", NULL);
		else
			hf_treesize(&h, rev, i + 1 + used < s->n ? sub : NULL);
	} else if (!strcmp(s->v[i], "xet-read-token")) {
		/* Never Xet: clients that ask get a plain 404 and stay on HTTP. */
		hf_error(req, 404, NULL, "Xet is not served by this mirror", NULL);
	} else {
		hf_error(req, 404, NULL, "Not found", NULL);
	}
	if (!httpd_answered(req))
		hf_error(req, 400, NULL, "bad revision or path", NULL);
	free(rev);
	free(sub);
	hfreq_release(&h);
	return 0;
}

static int route_file(struct mirror_routes *rt, struct httpd_req *req, const struct segs *s)
{
	struct hfreq h = { .rt = rt, .req = req, .type = "model" };
	size_t i = 0, used;
	bool raw;
	char *rev = NULL, *path = NULL;

	if (!strcmp(s->v[0], "datasets")) {
		h.type = "dataset";
		i = 1;
	} else if (!strcmp(s->v[0], "spaces") || !strcmp(s->v[0], "api")) {
		return HTTPD_PASS;
	}
	used = take_repo(s, i, file_keywords, &h.name);
	if (!used)
		return HTTPD_PASS;
	i += used;
	if (i >= s->n || (strcmp(s->v[i], "resolve") && strcmp(s->v[i], "raw"))) {
		hfreq_release(&h);
		return HTTPD_PASS;
	}
	raw = !strcmp(s->v[i], "raw");
	httpd_set_route(req, raw ? "hf_raw" : "hf_resolve");
	rev = take_revision(s, i + 1, &used);
	if (rev && i + 1 + used < s->n)
		path = segs_join_decoded(s, i + 1 + used);
	if (!rev || !path)
		hf_error(req, 400, NULL, "bad revision or path", NULL);
	else
		hf_file(&h, rev, path, raw);
	free(rev);
	free(path);
	hfreq_release(&h);
	return 0;
}

int mirror__route_hf(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	const char *method = httpd_method(req);
	struct segs s;
	int r = HTTPD_PASS;

	(void)rest;
	(void)arg;
	if (!strcmp(method, "OPTIONS")) {
		/* CORS preflight, for browsers (transformers.js) */
		httpd_set_route(req, "cors_preflight");
		httpd_add_header(req, "Access-Control-Allow-Origin", "*");
		httpd_add_header(req, "Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS");
		httpd_add_header(req, "Access-Control-Allow-Headers", "Authorization, Range, Content-Type, If-None-Match");
		httpd_add_header(req, "Access-Control-Max-Age", "86400");
		httpd_respond_str(req, 204, NULL, "");
		return 0;
	}
	segs_split(&s, httpd_path(req));
	if (s.n >= 2 && !strcmp(s.v[0], "api"))
		r = route_api(rt, req, &s);
	else if (s.n >= 4 && (!strcmp(method, "GET") || !strcmp(method, "HEAD")))
		r = route_file(rt, req, &s);
	segs_free(&s);
	return r;
}
