/*
 * routes-upload.c - the write side of the Hugging Face API, for the mirror's own repositories (local
 * namespaces, serve --local; docs/uploads.md):
 *
 *   POST   /api/repos/create                                   make a repo {name, organization, type, private}
 *   DELETE /api/repos/delete                                   delete one {name, organization, type}
 *   POST   /api/{models|datasets}/ORG/NAME/preupload/REV       which files go through Git LFS
 *   POST   /[datasets/]ORG/NAME.git/info/lfs/objects/batch     (operation upload; routes-lfs.c, with the
 *          PUT of an object or of its parts, its verify and a multipart upload's completion)
 *   POST   /api/{models|datasets}/ORG/NAME/commit/REV          the NDJSON commit
 *
 * Every write needs a token the tokens file grants writes with (access.h); a repository outside the
 * local namespaces is never written. Bodies are streamed (routes-lfs.c): an object straight into the
 * store's writer, hashed as it arrives; a commit into the spool (spool.c: kept only for a writer, bounded),
 * read on a worker (routes-commit.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/size.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/hf.h"
#include "hub/hub.h"
#include "mirror/data.h"
#include "store/store.h"
#include "mirror/upload.h"
#include "access.h"
#include "routes-hf-int.h"
#include "routes-int.h"


static void hf_ref(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo, bool tag,
		   const char *arg, const char *who);

static char *author_of(const char *who)
{
	return xasprintf("%s <hubmirror@localhost>", who);
}

static char *repo_url(const char *base, const char *type, const char *name)
{
	return xasprintf("%s/%s%s", base, strcmp(type, "dataset") ? "" : "datasets/", name);
}

/* ---- create and delete ------------------------------------------------------------------------ */

struct repo_job {
	struct mirror__job j;
	struct mirror_data *data;
	char *type, *name, *who, *url;
	bool private_, delete;
};

static void repo_job_release(struct mirror__job *j)
{
	struct repo_job *r = (struct repo_job *)j;

	free(r->type);
	free(r->name);
	free(r->who);
	free(r->url);
	free(r);
}

static void repo_job_build(struct mirror__job *j, struct catalog *cat)
{
	struct repo_job *r = (struct repo_job *)j;
	char *author = author_of(r->who), *why = NULL;
	struct catalog_repo repo;
	int e;

	if (r->delete) {
		e = catalog_repo_get(cat, "hf", r->type, r->name, &repo);
		if (!e) {
			e = repo.local ? catalog_local_delete(cat, repo.id) : HM_ERR_NOT_FOUND;
			catalog_repo_release(&repo);
		}
	} else {
		e = mirror_upload_create(r->data, cat, "hf", r->type, r->name, r->private_, author, NULL, &why);
	}
	free(author);
	if (!e) {
		log_info("upload", "%s hf:%s%s%s by %s", r->delete ? "deleted" : "created",
			 strcmp(r->type, "dataset") ? "" : "datasets/", r->name, r->private_ ? " (private)" : "",
			 r->who);
		j->status = 200;
		j->body = r->delete ? json_object()
				    : json_pack("{s:s, s:s, s:s}", "url", r->url, "name", r->name, "id", r->name);
	} else if (e == HM_ERR_EXISTS) {
		j->status = 409;
		j->body = json_pack("{s:s, s:s}", "error", "You already created this repo", "url", r->url);
	} else if (e == HM_ERR_NOT_FOUND) {
		mirror__hf_job_error(j, 404, "RepoNotFound", "Repository not found", NULL);
	} else if (e == -ENOSPC) {
		/* the store's or the catalog's disk: said as a commit on that disk says it, and nothing made */
		log_warn("upload", "%s hf:%s: the disk is full", r->delete ? "deleting" : "creating", r->name);
		mirror__hf_job_error(j, 507, NULL,
				     "No space left on the mirror's disk: the repository cannot be made now", NULL);
	} else {
		log_warn("upload", "%s hf:%s: %s", r->delete ? "deleting" : "creating", r->name,
			 why ? why : err_str(e));
		mirror__hf_job_error(j, 500, NULL, why ? why : err_str(e), NULL);
	}
	free(why);
}

/* The repo a create or delete body names: {name, organization?, type?}. */
static bool repo_body(struct httpd_req *req, json_t *in, char **type, char **name)
{
	const char *n = json_string_value(json_object_get(in, "name"));
	const char *org = json_string_value(json_object_get(in, "organization"));
	const char *t = json_string_value(json_object_get(in, "type"));

	if (t && !strcmp(t, "space")) {
		mirror__hf_error(req, 400, NULL, "Spaces are not served by this mirror", NULL);
		return false;
	}
	if (!n || (t && strcmp(t, "model") && strcmp(t, "dataset"))) {
		mirror__hf_error(req, 400, NULL, "A repo is {\"name\", \"organization\", \"type\"}", NULL);
		return false;
	}
	*name = org && !strchr(n, '/') ? xasprintf("%s/%s", org, n) : xstrdup(n);
	if (!strchr(*name, '/') || hub_check_name(HUB_HF, *name)) {
		mirror__hf_error(req, 400, NULL, "A repo name is ORG/NAME, letters, digits, '-', '_' and '.'", NULL);
		FREE_AND_NULL(name);
		return false;
	}
	*type = xstrdup(t ? t : "model");
	return true;
}

/* POST /api/validate-yaml {content, repoType}: huggingface_hub asks before it commits a README.md and
 * stops unless the answer is JSON. The mirror takes any card as it is (a bad one renders as text). */
int mirror__route_validate_yaml(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	(void)rt;
	(void)rest;
	(void)arg;
	if (strcmp(httpd_method(req), "POST")) {
		mirror__hf_error(req, 405, NULL, "Method not allowed", NULL);
		return 0;
	}
	mirror__hf_cors(req);
	mirror__respond_json(req, 200, json_pack("{s:[], s:[]}", "errors", "warnings"));
	return 0;
}

int mirror__route_repos(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	bool del = !strcmp(rest, "delete");
	size_t len;
	const char *body = httpd_body(req, &len);
	json_t *in;
	struct repo_job *r;
	char *type = NULL, *name = NULL, *who = NULL, *base;
	const char *vis;

	(void)arg;
	httpd_set_route(req, "hf_repos");
	if (strcmp(rest, "create") && !del) {
		mirror__hf_error(req, 404, NULL, "Not found", NULL);
		return 0;
	}
	if (strcmp(httpd_method(req), del ? "DELETE" : "POST")) {
		mirror__hf_error(req, 405, NULL, "Method not allowed", NULL);
		return 0;
	}
	in = json_loadb(body ? body : "", len, 0, NULL);
	if (!json_is_object(in) || !repo_body(req, in, &type, &name) ||
	    !mirror__write_gate(rt, req, type, name, &who)) {
		if (!httpd_answered(req))
			mirror__hf_error(req, 400, NULL, "The body is a JSON object", NULL);
		json_decref(in);
		free(type);
		free(name);
		return 0;
	}
	r = xcalloc(1, sizeof(*r));
	r->j.build = repo_job_build;
	r->j.release = repo_job_release;
	r->data = rt->data;
	r->type = type;
	r->name = name;
	r->who = who;
	r->delete = del;
	/* older huggingface_hub says private: true; newer and @huggingface/hub visibility: "private" (or
	 * "protected", the Hub's own kind of restricted, which here is private) */
	vis = json_string_value(json_object_get(in, "visibility"));
	r->private_ = json_is_true(json_object_get(in, "private")) ||
		      (vis && (!strcmp(vis, "private") || !strcmp(vis, "protected")));
	base = mirror__self_base(req);
	r->url = repo_url(base, type, name);
	free(base);
	json_decref(in);
	mirror__hf_cors(req);
	mirror__defer(rt, req, &r->j);
	return 0;
}

/* ---- preupload -------------------------------------------------------------------------------- */

/* A preupload's answer, built on a worker: the snapshot's .gitattributes is read there (with a bucket,
 * maybe from it: serve's loop never waits on the bucket). */
struct preupload_job {
	struct mirror__job j;
	char *type, *name, *rev;
	json_t *files;            /* the request's list (owned) */
};

/* The .gitattributes of a snapshot, when small enough to read (under 1 MiB), into *text: 0 (*text NULL
 * when there is none, or it is bigger), or an error with *why (a copy that is not the content: never
 * read as its rules). */
static int attributes_of(struct catalog *cat, struct store *st, int64_t snapshot_id, char **text, char **why)
{
	struct catalog_entry e;
	size_t len;
	int r;

	*text = NULL;
	if (catalog_snapshot_file(cat, snapshot_id, ".gitattributes", &e))
		return 0;
	r = store_slurp(st, e.sha256, (1 << 20) - 1, false, text, &len, why);
	if (r == -EFBIG) {
		free(*why);
		*why = NULL;
		r = 0;
	}
	catalog_entry_release(&e);
	return r;
}

static json_t *preupload_file(struct catalog *cat, int64_t snapshot_id, const char *attrs, json_t *f)
{
	const char *path = json_string_value(json_object_get(f, "path"));
	const char *sample = json_string_value(json_object_get(f, "sample"));
	json_int_t size = json_integer_value(json_object_get(f, "size"));
	unsigned char raw[1024];
	int n = 0;
	struct catalog_entry e;
	json_t *o;

	if (!path)
		return NULL;
	if (sample && strlen(sample) <= 4 * (sizeof(raw) - 2) / 3 && strlen(sample) % 4 == 0) {
		size_t l = strlen(sample);
		n = EVP_DecodeBlock(raw, (const unsigned char *)sample, (int)l);
		/* (it decodes the padding too, as NUL bytes: those are not the file's) */
		n -= (int)(l >= 2 && sample[l - 1] == '=') + (int)(l >= 2 && sample[l - 2] == '=');
	}
	o = json_pack("{s:s, s:s, s:b}", "path", path, "uploadMode",
		      mirror_upload_wants_lfs(attrs, path, size, raw, n > 0 ? (size_t)n : 0) ? "lfs" : "regular",
		      "shouldIgnore", 0);
	/* what is there now, so the client leaves unchanged files out */
	if (!catalog_snapshot_file(cat, snapshot_id, path, &e)) {
		json_object_set_new(o, "oid", json_string(e.lfs_oid[0] ? e.lfs_oid : e.git_oid));
		catalog_entry_release(&e);
	}
	return o;
}

static void preupload_build(struct mirror__job *job, struct catalog *cat)
{
	struct preupload_job *p = (struct preupload_job *)job;
	struct catalog_repo repo;
	struct catalog_snapshot snap;
	bool found = false;
	char *attrs = NULL, *why = NULL, *msg;
	json_t *f, *out;
	size_t i;
	int r;

	if (catalog_resolve(cat, "hf", p->type, p->name, p->rev, &repo, &snap, &found)) {
		if (found)
			catalog_repo_release(&repo);
		mirror__hf_job_error(job, 404, found ? "RevisionNotFound" : "RepoNotFound",
				     found ? "Invalid rev id" : "Repository not found", NULL);
		return;
	}
	if ((r = attributes_of(cat, job->rt->data->store, snap.id, &attrs, &why))) {
		/* the rules are not guessed without it: the client would send a file the wrong way */
		msg = xasprintf("the snapshot's .gitattributes cannot be read from the mirror's store: %s",
				why ? why : err_str(r));
		log_warn("upload", "preupload of %s: %s", p->name, msg);
		mirror__hf_job_error(job, 503, NULL, msg, snap.commit);
		free(msg);
		free(why);
		catalog_repo_release(&repo);
		return;
	}
	out = json_array();
	json_array_foreach(p->files, i, f) {
		json_t *o = json_is_object(f) ? preupload_file(cat, snap.id, attrs, f) : NULL;
		if (o)
			json_array_append_new(out, o);
	}
	free(attrs);
	catalog_repo_release(&repo);
	job->status = 200;
	job->body = json_pack("{s:o, s:s}", "files", out, "commitOid", snap.commit);
}

static void preupload_release(struct mirror__job *job)
{
	struct preupload_job *p = (struct preupload_job *)job;

	free(p->type);
	free(p->name);
	free(p->rev);
	json_decref(p->files);
	free(p);
}

static void preupload(struct mirror_routes *rt, struct httpd_req *req, const char *type, const char *name,
		      const char *rev)
{
	size_t len;
	const char *body = httpd_body(req, &len);
	json_t *in = json_loadb(body ? body : "", len, 0, NULL), *files = json_object_get(in, "files");
	struct preupload_job *p;

	if (!json_is_array(files)) {
		mirror__hf_error(req, 400, NULL, "A preupload is {\"files\": [{\"path\", \"sample\", \"size\"}]}",
				 NULL);
		json_decref(in);
		return;
	}
	p = xcalloc(1, sizeof(*p));
	p->j.build = preupload_build;
	p->j.release = preupload_release;
	p->type = xstrdup(type);
	p->name = xstrdup(name);
	p->rev = xstrdup(rev);
	p->files = json_incref(files);
	json_decref(in);
	mirror__hf_cors(req);
	mirror__defer(rt, req, &p->j);
}

void mirror__hf_write(struct mirror_routes *rt, struct httpd_req *req, const char *type, const char *name,
		      const char *action, const char *rev)
{
	struct catalog_repo repo;
	char *who = NULL;

	httpd_set_route(req, !strcmp(action, "commit") ? "hf_commit" : !strcmp(action, "preupload") ? "hf_preupload"
								      : "hf_refs_write");
	if (!mirror__write_gate(rt, req, type, name, &who) || !mirror__local_repo(rt, req, type, name, &repo)) {
		mirror__body_abandon(httpd_body_take(req));
		free(who);
		return;
	}
	if (!strcmp(action, "preupload"))
		preupload(rt, req, type, name, rev);
	else if (!strcmp(action, "commit"))
		rt->fronts->hf_commit(rt, req, &repo, rev, who);
	else
		hf_ref(rt, req, &repo, !strcmp(action, "tag"), rev, who);
	catalog_repo_release(&repo);
	free(who);
}

/* ---- branches and tags ------------------------------------------------------------------------ */

/* A branch or tag name git takes (git check-ref-format's rules, and a bound), that no client or file
 * system reads as another: letters, digits, '.', '_', '-' and '/' between non-empty parts. */
/* The commit rev names in repo (a branch, a tag or a commit id), into out; or an answer. */
static bool commit_of(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo, const char *rev,
		      char out[41])
{
	struct catalog_repo r;
	struct catalog_snapshot snap;
	bool found = false;

	if (catalog_resolve(rt->data->catalog, "hf", repo->type, repo->name, rev, &r, &snap, &found)) {
		if (found)
			catalog_repo_release(&r);
		mirror__hf_error(req, 404, "RevisionNotFound", "Invalid rev id", NULL);
		return false;
	}
	catalog_repo_release(&r);
	memcpy(out, snap.commit, 41);
	return true;
}

static void ref_answer(struct httpd_req *req, int e, const char *what, const char *ref, const char *repo,
		       const char *who)
{
	if (!e) {
		log_info("upload", "hf:%s %s %s by %s", repo, what, ref, who);
		mirror__hf_cors(req);
		mirror__respond_json(req, 200, json_object());
	} else if (e == HM_ERR_EXISTS) {
		mirror__hf_error(req, 409, NULL, "Reference already exists", NULL);
	} else if (e == HM_ERR_NOT_FOUND) {
		mirror__hf_error(req, 404, "RevisionNotFound", "Invalid rev id", NULL);
	} else {
		mirror__hf_error(req, 500, NULL, err_str(e), NULL);
	}
}

/* POST/DELETE /api/{models|datasets}/ORG/NAME/branch/BRANCH, POST .../tag/REV, DELETE .../tag/TAG. */
static void hf_ref(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo, bool tag,
		   const char *arg, const char *who)
{
	bool del = !strcmp(httpd_method(req), "DELETE");
	size_t len;
	const char *body = httpd_body(req, &len);
	json_t *in = len ? json_loadb(body, len, 0, NULL) : json_object();
	const char *name = tag && !del ? json_string_value(json_object_get(in, "tag")) : arg;
	const char *start = tag ? arg : json_string_value(json_object_get(in, "startingPoint"));
	char commit[41], *what;
	int e;

	if (!json_is_object(in) || !name || !mirror_upload_ref_name_ok(name)) {
		mirror__hf_error(req, 400, NULL, "A branch or tag name: letters, digits, '.', '_', '-' and '/'", NULL);
	} else if (del && !tag && !strcmp(name, repo->follow_rev)) {
		mirror__hf_error(req, 403, NULL, "The default branch cannot be deleted", NULL);
	} else if (del || commit_of(rt, req, repo, start ? start : repo->follow_rev, commit)) {
		e = catalog_local_ref(rt->data->catalog, repo->id, name, tag, del ? NULL : commit);
		what = xasprintf("%s %s", del ? "deleted" : "made", tag ? "tag" : "branch");
		ref_answer(req, e, what, name, repo->name, who);
		free(what);
	}
	json_decref(in);
}
