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
#include "hub/http/http.h"
#include "hub/hub.h"
#include "access.h"
#include "ondemand.h"
#include "routes-hf-int.h"
#include "routes-int.h"
#include "store/store.h"

#define LIST_PAGE 1000

bool mirror__hf_query_bool(const struct httpd_req *req, const char *name)
{
	char *v = httpd_query_param(req, name);
	bool on = v && (!strcasecmp(v, "true") || !strcmp(v, "1"));

	free(v);
	return on;
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

size_t mirror__hf_lfs_pointer(const struct catalog_entry *e, char *out, size_t cap)
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

json_t *mirror__hf_file_json(const struct catalog_entry *e, const struct catalog_snapshot *snap, bool expand)
{
	json_t *o = json_pack("{s:s, s:s, s:I, s:s}", "type", "file", "oid", e->git_oid[0] ? e->git_oid : e->sha256,
			      "size", (json_int_t)e->size, "path", e->path);
	if (e->lfs_oid[0]) {
		char ptr[256];
		json_object_set_new(o, "lfs",
				    json_pack("{s:s, s:I, s:I}", "oid", e->lfs_oid, "size", (json_int_t)e->size,
					      "pointerSize", (json_int_t)mirror__hf_lfs_pointer(e, ptr, sizeof(ptr))));
		if (e->xet_hash[0])   /* as the Hub lists a file it holds in Xet (docs/protocols/xet.md) */
			json_object_set_new(o, "xetHash", json_string(e->xet_hash));
	}
	if (expand) {
		char *d = iso_time(snap->synced_at);
		json_object_set_new(o, "lastCommit", json_pack("{s:s, s:s, s:s}", "id", snap->commit, "title", "",
								"date", d));
		free(d);
	}
	return o;
}

json_t *mirror__hf_dir_json(const char *path, const struct catalog_snapshot *snap)
{
	char oid[41];

	dir_oid(snap->commit, path, oid);
	return json_pack("{s:s, s:s, s:i, s:s}", "type", "directory", "oid", oid, "size", 0, "path", path);
}

/* ---- the request context ------------------------------------------------------------------------- */


static void hfreq_release(struct mirror__hf_req *h)
{
	free(h->name);
	if (h->repo_loaded)
		catalog_repo_release(&h->repo);
}

/* A repo the catalog tracks but never got, because upstream refused the mirror: answer as the Hub
 * answers a client that may not read it, so clients raise what they would upstream (GatedRepoError,
 * DisabledRepoError, RepositoryNotFoundError), not RevisionNotFoundError. true when it answered. */
static bool hf_refused(struct mirror__hf_req *h)
{
	struct catalog_repo r = { 0 };
	bool answered = true;
	char *m;

	if (catalog_repo_get(h->rt->data->catalog, "hf", h->type, h->name, &r))
		return false;
	if (r.head_commit || !r.sync_status) {
		answered = false;
	} else if (!strcmp(r.sync_status, "gated")) {
		m = xasprintf(
			"Access to %s %s is restricted, and this mirror has no approved access to it: its operator "
			"must request access upstream and give the mirror a token that has it.",
			h->type, h->name);
		mirror__hf_error(h->req, httpd_header(h->req, "Authorization") ? 403 : 401, "GatedRepo", m, NULL);
		free(m);
	} else if (!strcmp(r.sync_status, "disabled")) {
		mirror__hf_error(h->req, 403, NULL, "Access to this resource is disabled.", NULL);
	} else if (!strcmp(r.sync_status, "denied") || !strcmp(r.sync_status, "missing")) {
		m = xasprintf("Repository not found: upstream %s %s to this mirror", !strcmp(r.sync_status, "denied") ?
			      "refuses" : "no longer has", h->name);
		mirror__hf_error(h->req, 404, "RepoNotFound", m, NULL);
		free(m);
	} else {
		answered = false;
	}
	catalog_repo_release(&r);
	return answered;
}

/* Resolve h->name at rev; on failure answer the Hub's error and return non-zero. */
int mirror__hf_resolve_how(struct mirror__hf_req *h, const char *rev, bool lite)
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
	if (found && !mirror__repo_visible(h->rt, h->req, &h->repo)) {
		/* a private repo nobody may read here: as one the mirror does not have */
		mirror__hf_error(h->req, 404, "RepoNotFound", "Repository not found", NULL);
		return -1;
	}
	if (found && !mirror__access_check(h->rt, h->req, "hf", h->type, h->name, &h->repo, "hf"))
		return -1;
	if (found && h->rt->ondemand && h->repo.options && strstr(h->repo.options, "\"on_demand\""))
		mirror_ondemand_touch(h->rt, h->repo.id);
	if (found && !lite)
		mirror__tier_headers(h->req, &h->repo);
	if (!r)
		return 0;
	if (r == HM_ERR_NOT_FOUND && !found &&
	    mirror_ondemand_track(h->rt, h->req, "hf", h->type, h->name, mirror__hf_refuse)) {
		/* fetched on demand: answered once it is listed */
	} else if (r == HM_ERR_NOT_FOUND && !found) {
		mirror__hf_error(h->req, 404, "RepoNotFound", "Repository not found", NULL);
	} else if (r == HM_ERR_NOT_FOUND && hf_refused(h)) {
		/* answered */
	} else if (r == HM_ERR_NOT_FOUND) {
		char *m = xasprintf("Invalid rev id: %s", rev ? rev : "HEAD");
		mirror__hf_error(h->req, 404, "RevisionNotFound", m, NULL);
		free(m);
	} else {
		mirror__hf_error(h->req, 500, NULL, "catalog error", NULL);
	}
	return -1;
}

/* Resolve h->name at rev with the full repo row (metadata answers); the file routes use the lite
 * lookup, which reads only what serving a file needs. */
int mirror__hf_resolve(struct mirror__hf_req *h, const char *rev)
{
	return mirror__hf_resolve_how(h, rev, false);
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
			json_object_set_new(o, "lfs",
					    json_pack("{s:I, s:s, s:I}", "size", (json_int_t)e->size, "sha256",
						      e->lfs_oid, "pointerSize",
						      (json_int_t)mirror__hf_lfs_pointer(e, ptr, sizeof(ptr))));
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
	lm = r->last_sync_at || synced_at ? iso_time(synced_at ? synced_at : r->last_sync_at)
					  : xstrdup("1970-01-01T00:00:00.000Z");
	o = json_pack("{s:s, s:s, s:s, s:b, s:b}", "_id", id24, "id", r->name, "lastModified", lm, "private",
		      r->private_ == 1, "disabled", 0);
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
		mirror__hf_job_error(job, 500, NULL, "catalog error", NULL);
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

static void hf_info(struct mirror__hf_req *h, const char *rev)
{
	struct info_job *ij;
	json_t *o, *card;

	if (mirror__hf_resolve(h, rev))
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
	ij->blobs = mirror__hf_query_bool(h->req, "blobs");
	mirror__hf_cors(h->req);
	mirror__defer(h->rt, h->req, &ij->j);
}

/* ---- F, G: refs, commits ----------------------------------------------------------------- */

struct refs_ctx {
	json_t *branches, *tags, *prs, *converts;
};

static int refs_cb(void *ud, const char *name, const char *kind, const char *commit)
{
	struct refs_ctx *r = ud;

	if (!strcmp(kind, "pr"))
		json_array_append_new(r->prs,
				      json_pack("{s:s, s:s, s:s}", "name", name, "ref", name, "targetCommit", commit));
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

static void hf_refs(struct mirror__hf_req *h)
{
	struct refs_ctx r = { json_array(), json_array(), json_array(), json_array() };
	json_t *o;

	if (mirror__hf_resolve(h, NULL)) {
		json_decref(r.branches);
		json_decref(r.tags);
		json_decref(r.prs);
		json_decref(r.converts);
		return;
	}
	catalog_refs_each(h->rt->data->catalog, h->repo.id, refs_cb, &r);
	o = json_pack("{s:o, s:o, s:o}", "branches", r.branches, "converts", r.converts, "tags", r.tags);
	if (mirror__hf_query_bool(h->req, "include_prs"))
		json_object_set_new(o, "pullRequests", r.prs);
	else
		json_decref(r.prs);
	mirror__hf_cors(h->req);
	mirror__respond_json(h->req, 200, o);
}

/* A local repo's history from rev back (the mirror's own commits, with their parents): the 100
 * newest, as list_repo_commits reads them. */
static json_t *local_history(struct mirror__hf_req *h)
{
	json_t *a = json_array();
	char *id = xstrdup(h->snap.commit);

	for (int i = 0; id && i < 100; i++) {
		struct catalog_commit cm;
		const char *nl;
		char *d, *author;
		if (catalog_commit_get(h->rt->data->catalog, h->repo.id, id, &cm))
			break;
		nl = strchr(cm.message, '\n');
		d = iso_time(cm.at);
		author = xstrndup(cm.author, strcspn(cm.author, "<") - (strchr(cm.author, '<') ? 1 : 0));
		json_array_append_new(a, json_pack("{s:s, s:s%, s:s, s:s, s:[{s:s}]}", "id", cm.id, "title", cm.message,
						   nl ? (size_t)(nl - cm.message) : strlen(cm.message), "message",
						   nl ? nl + 1 + (nl[1] == '\n') : "", "date", d, "authors", "user",
						   author));
		free(d);
		free(author);
		free(id);
		id = cm.parent ? xstrdup(cm.parent) : NULL;
		catalog_commit_release(&cm);
	}
	free(id);
	return a;
}

static void hf_commits(struct mirror__hf_req *h, const char *rev)
{
	char *d;
	json_t *a;

	if (mirror__hf_resolve(h, rev))
		return;
	if (h->repo.local) {
		mirror__hf_cors(h->req);
		mirror__respond_json(h->req, 200, local_history(h));
		return;
	}
	/* The mirror knows the commits it synced, not upstream's history: one entry, the snapshot. */
	d = iso_time(h->snap.synced_at);
	a = json_pack("[{s:s, s:s, s:s, s:s, s:[]}]", "id", h->snap.commit, "title", "", "message", "", "date", d,
		      "authors");
	free(d);
	mirror__hf_cors(h->req);
	mirror__respond_json(h->req, 200, a);
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
		mirror__hf_job_error(job, 500, NULL, "catalog error", NULL);
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
	mirror__hf_cors(req);
	mirror__defer(rt, req, &lj->j);
}

/* ---- the router ----------------------------------------------------------------------------------- */

/* A path of the Hub's API, as hub/hf.h enumerates it (h->name, h->type set). */
static void route_api(struct mirror__hf_req *h, const struct hf_route_path *p)
{
	struct httpd_req *req = h->req;

	switch (p->route) {
	case HF_ROUTE_INFO:
		hf_info(h, p->rev);
		break;
	case HF_ROUTE_TREE: {
		char *rev_enc = hub_url_escape(p->rev, false); /* refs/pr/1 sent raw goes back encoded */
		mirror__hf_tree(h, p->rev, rev_enc, p->sub);
		free(rev_enc);
		break;
	}
	case HF_ROUTE_PATHS_INFO:
		mirror__hf_paths_info(h, p->rev);
		break;
	case HF_ROUTE_REFS:
		hf_refs(h);
		break;
	case HF_ROUTE_COMMITS:
		hf_commits(h, p->rev);
		break;
	case HF_ROUTE_TREESIZE:
		mirror__hf_treesize(h, p->rev, p->sub);
		break;
	case HF_ROUTE_WRITE:
		h->rt->fronts->hf_write(h->rt, req, h->type, h->name, p->verb, p->rev);
		break;
	case HF_ROUTE_XET_READ:
		/* every guard of a resolve (visibility, the tokens file, --auth, gated and private content) */
		if (mirror__hf_resolve_how(h, p->rev, true))
			break;
		if (!mirror_access_content_open(h->rt->access, &h->repo) && h->repo.private_ == 1)
			mirror__hf_error(req, 401, NULL, "Invalid username or password.", NULL);
		else if (!mirror_access_content_open(h->rt->access, &h->repo))
			mirror__hf_error(req, 401, "GatedRepo",
					 "Access to this gated repository is restricted on this mirror.", NULL);
		else
			h->rt->fronts->xet_read_token(h->rt, req, &h->repo, h->snap.commit);
		break;
	case HF_ROUTE_XET_WRITE:
		/* huggingface_hub 1.20 and later upload large files through Xet whenever hf_xet is installed */
		h->rt->fronts->xet_write_token(h->rt, req, h->type, h->name, p->rev);
		break;
	case HF_ROUTE_BAD:
		mirror__hf_error(req, 400, NULL, p->why, NULL);
		break;
	default:
		mirror__hf_error(req, 404, NULL, "Not found", NULL);
		break;
	}
	if (!httpd_answered(req))
		mirror__hf_error(req, 400, NULL, "bad revision or path", NULL);
}

int mirror__route_hf(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	const char *method = httpd_method(req);
	struct hf_route_path p;
	struct mirror__hf_req h = { .rt = rt, .req = req };

	(void)rest;
	(void)arg;
	if (!strcmp(method, "OPTIONS")) {
		/* CORS preflight, for browsers (transformers.js) */
		httpd_set_route(req, "cors_preflight");
		httpd_add_header(req, "Access-Control-Allow-Origin", "*");
		httpd_add_header(req, "Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS");
		httpd_add_header(req, "Access-Control-Allow-Headers",
				 "Authorization, Range, Content-Type, If-None-Match");
		httpd_add_header(req, "Access-Control-Max-Age", "86400");
		httpd_respond_str(req, 204, NULL, "");
		return 0;
	}
	if (hf_parse_path(httpd_path(req), method, &p))
		return HTTPD_PASS;
	httpd_set_route(req, p.label);
	h.type = p.type;
	h.name = p.name;
	p.name = NULL;
	if (p.route == HF_ROUTE_LIST)
		hf_list(rt, req, p.type);
	else if (p.route == HF_ROUTE_NO_REPO)
		mirror__hf_error(req, 404, "RepoNotFound", "Repository not found", NULL);
	else if (p.route == HF_ROUTE_FILE)
		mirror__hf_file(&h, p.rev, p.sub, !strcmp(p.verb, "raw"));
	else
		route_api(&h, &p);
	hf_route_path_release(&p);
	hfreq_release(&h);
	return 0;
}
