/*
 * routes-git.c - git clone, and push into local repos, over HTTP; the Git LFS batch API (docs/git.md).
 *
 *   GET  /[datasets/]ORG/NAME[.git]/info/refs?service=git-upload-pack   the refs (smart HTTP)
 *   POST /[datasets/]ORG/NAME[.git]/git-upload-pack                      the pack
 *   POST /[datasets/]ORG/NAME[.git]/git-receive-pack                     a push (local repos)
 *   POST /[datasets/]ORG/NAME[.git]/info/lfs/objects/batch                LFS: where each object is
 *   GET  /[datasets/]ORG/NAME[.git]/info/lfs/objects/OID                  LFS: one object (Range works)
 *
 * ORG/NAME is a Hugging Face repo of the catalog or, when there is none of that name, a ModelScope one
 * (ModelScope's own git URLs have the same shapes). Access is the HTTP API's (tokens as Bearer or as
 * Basic credentials: http://user:TOKEN@mirror/...). The repository is built on a worker on first use
 * and when the catalog's refs change (mirror/gitrepo.c); git's http-backend answers. A push
 * (info/refs?service=git-receive-pack, POST git-receive-pack) goes only into a repo of a local
 * namespace, with a write grant: its pack is spooled to a file and git's receive-pack takes it, with
 * `hubmirror git-hook` as its pre-receive hook (mirror/gitpush.h; docs/uploads.md, "git push"). The
 * dumb protocol and everything else are refused; an upload-pack request body is at most serve's body
 * limit (1 MiB), which bounds a want list.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/hfwrite.h"
#include "hub/http/httpd.h"
#include "mirror/data.h"
#include "access.h"
#include "mirror/gitrepo.h"
#include "routes-int.h"

#define LFS_BATCH_MAX 1000   /* objects one batch request may ask about */

enum git_op { OP_NONE, OP_INFO_REFS, OP_UPLOAD_PACK, OP_RECEIVE_PACK, OP_LFS_BATCH, OP_LFS_OBJECT, OP_LFS_PART,
	      OP_LFS_COMPLETE };

struct gitreq {
	enum git_op op;
	char *repo_path;        /* as the client wrote it, decoded: "datasets/acme/data.git" */
	char *type;             /* "model" | "dataset" */
	char *name;             /* "acme/data" */
	char *oid;              /* OP_LFS_OBJECT, OP_LFS_PART, OP_LFS_COMPLETE */
	int part;               /* OP_LFS_PART: its number, from 1 */
};

static void gitreq_release(struct gitreq *g)
{
	free(g->repo_path);
	free(g->type);
	free(g->name);
	free(g->oid);
}

/* Split the path into its repository and what is asked of it; false when it is not a git URL. */
static bool parse(const char *path, struct gitreq *g)
{
	char *segs[16];
	size_t n = 0, suffix = 0, first;
	char *copy = xstrdup(path), *save = NULL, *s;
	bool ok = false;

	memset(g, 0, sizeof(*g));
	for (s = strtok_r(copy, "/", &save); s && n < 16; s = strtok_r(NULL, "/", &save))
		segs[n++] = s;
	if (s || n < 3)
		goto out;
	if (!strcmp(segs[n - 1], "git-upload-pack")) {
		g->op = OP_UPLOAD_PACK;
		suffix = 1;
	} else if (!strcmp(segs[n - 1], "git-receive-pack")) {
		g->op = OP_RECEIVE_PACK;
		suffix = 1;
	} else if (n >= 4 && !strcmp(segs[n - 2], "info") && !strcmp(segs[n - 1], "refs")) {
		g->op = OP_INFO_REFS;
		suffix = 2;
	} else if (n >= 8 && !strcmp(segs[n - 6], "info") && !strcmp(segs[n - 5], "lfs") &&
		   !strcmp(segs[n - 4], "objects") && hex_is_lower(segs[n - 3], 64) && !strcmp(segs[n - 2], "part") &&
		   strspn(segs[n - 1], "0123456789") == strlen(segs[n - 1]) && strlen(segs[n - 1]) <= 6 &&
		   atoi(segs[n - 1]) > 0) {
		/* a part of a multipart upload (routes-upload.c) */
		g->op = OP_LFS_PART;
		g->oid = xstrdup(segs[n - 3]);
		g->part = atoi(segs[n - 1]);
		suffix = 6;
	} else if (n >= 7 && !strcmp(segs[n - 5], "info") && !strcmp(segs[n - 4], "lfs") &&
		   !strcmp(segs[n - 3], "objects") && hex_is_lower(segs[n - 2], 64) &&
		   !strcmp(segs[n - 1], "complete")) {
		g->op = OP_LFS_COMPLETE;
		g->oid = xstrdup(segs[n - 2]);
		suffix = 5;
	} else if (n >= 6 && !strcmp(segs[n - 4], "info") && !strcmp(segs[n - 3], "lfs") &&
		   !strcmp(segs[n - 2], "objects")) {
		if (!strcmp(segs[n - 1], "batch")) {
			g->op = OP_LFS_BATCH;
		} else if (hex_is_lower(segs[n - 1], 64)) {
			g->op = OP_LFS_OBJECT;
			g->oid = xstrdup(segs[n - 1]);
		} else {
			goto out;
		}
		suffix = 4;
	} else {
		goto out;
	}
	/* what is left: ORG/NAME or datasets/ORG/NAME (NAME maybe with .git) */
	first = n - suffix == 3 && !strcmp(segs[0], "datasets") ? 1 : 0;
	if (n - suffix - first != 2)
		goto out;
	{
		char *org = httpd_unescape(segs[first], strlen(segs[first]), false);
		char *name = httpd_unescape(segs[first + 1], strlen(segs[first + 1]), false);
		size_t l = name ? strlen(name) : 0;
		if (org && name) {
			if (l > 4 && !strcmp(name + l - 4, ".git"))
				name[l - 4] = '\0';
			g->name = xasprintf("%s/%s", org, name);
			g->repo_path = xasprintf("%s%s.git", first ? "datasets/" : "", g->name);
			g->type = xstrdup(first ? "dataset" : "model");
			ok = true;
		}
		free(org);
		free(name);
	}
out:
	free(copy);
	if (!ok) {
		gitreq_release(g);
		memset(g, 0, sizeof(*g));
	}
	return ok;
}

bool mirror__git_lfs_object(const char *path, char **type, char **name, char **oid, int *part)
{
	struct gitreq g;

	if (!parse(path, &g))
		return false;
	if (g.op != OP_LFS_OBJECT && g.op != OP_LFS_PART && g.op != OP_LFS_COMPLETE) {
		gitreq_release(&g);
		return false;
	}
	*type = g.type;
	*name = g.name;
	*oid = g.oid;
	*part = g.op == OP_LFS_PART ? g.part : g.op == OP_LFS_COMPLETE ? -1 : 0;
	free(g.repo_path);
	return true;
}

/* ---- clone and fetch: http-backend on a worker ------------------------------------------------- */

struct git_job {
	struct mirror__job j;
	struct mirror_data *data;
	struct catalog_repo repo;   /* id, hub, type, name, follow_rev */
	char *method, *path_after, *query, *ctype_in, *cenc, *proto;
	char *body;
	size_t len;
	bool push;                  /* receive-pack (docs/uploads.md, "git push") */
	int body_fd;                /* a push's body, spooled (spool's, borrowed); -1 when none */
	struct mirror__commit_body *spool; /* ... held till the job's end, NULL when none */
	char **push_env;            /* the hook's settings (mirror/gitpush.h) */
	char *who, *report;         /* the pusher; the hook's report of what moved */
};

/* What a push moved, for the log: the hook's report, one "REF OLD NEW COMMITS" line per ref. */
static void push_log(struct git_job *g)
{
	char *save = NULL;

	for (char *l = g->report ? strtok_r(g->report, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
		char ref[256], old[41], new_[41];
		unsigned long n = 0;
		if (sscanf(l, "%255s %40s %40s %lu", ref, old, new_, &n) == 4)
			log_info("upload", "hf:%s%s %s -> %s by %s (git push, %lu new commits)",
				 strcmp(g->repo.type, "dataset") ? "" : "datasets/", g->repo.name, ref,
				 strspn(new_, "0") == 40 ? "(deleted)" : new_, g->who, n);
	}
}

/* The push's report file: made empty before git runs, read after (the hook fills it). */
static char *report_path(struct git_job *g)
{
	char *dir = mirror_data_path(g->data, MIRROR_DATA_SPILL), *abs = realpath(dir, NULL);
	char *path = xasprintf("%s/push-%d-%p.report", abs ? abs : dir, (int)getpid(), (void *)g);

	free(abs);
	free(dir);
	return path;
}

static void git_build(struct mirror__job *job, struct catalog *cat)
{
	struct git_job *g = (struct git_job *)job;
	char *rel = NULL, *err = NULL;
	struct mirror_git_answer ans = { .fd = -1 };
	int r;

	char *report = g->push ? report_path(g) : NULL;
	int lock = -1;

	if (report) {
		size_t k = 0;
		while (g->push_env[k])
			k++;
		g->push_env[k] = xasprintf("HUBMIRROR_REPORT=%s", report); /* serve_git left room */
		unlink(report);
	}
	r = mirror_git_prepare_locked(g->data, cat, &g->repo, &rel, g->push ? &lock : NULL, &err);
	if (r == HM_ERR_NOT_FOUND) {
		job->status = 404;
		job->ctype = "text/plain";
		job->text = xasprintf("%s has no complete snapshot on this mirror yet\n", g->repo.name);
		job->len = strlen(job->text);
	} else if (r) {
		log_warn("git", "%s:%s: building its git repository: %s", g->repo.hub, g->repo.name, err ? err : "?");
	} else if ((r = mirror_git_backend(g->data,
					   &(struct mirror_git_request){ .rel = rel, .method = g->method,
									 .path_after = g->path_after, .query = g->query,
									 .content_type = g->ctype_in,
									 .content_encoding = g->cenc,
									 .git_protocol = g->proto, .body = g->body,
									 .len = g->len, .push = g->push,
									 .body_fd = g->body_fd,
									 .push_env = (const char *const *)g->push_env },
					   &ans, &err))) {
		log_warn("git", "%s:%s: %s", g->repo.hub, g->repo.name, err ? err : "?");
		if (r == -EPERM) {
			/* what git's protocol refuses in its own words: an ERR packet ("remote error: ...") */
			char *msg = xasprintf("ERR %s\n", err ? err : "refused");
			job->status = 200;
			job->ctype = "application/x-git-upload-pack-result";
			job->text = xasprintf("%04zx%s", strlen(msg) + 4, msg);
			job->len = strlen(job->text);
			free(msg);
		}
		/* the client's doing: said to it (a body past the cap, a bad encoding, a run past the bound) */
		else if (r == -EFBIG || r == -EINVAL || r == -ETIMEDOUT) {
			job->status = r == -EFBIG ? 413 : r == -EINVAL ? 400 : 503;
			job->ctype = "text/plain";
			job->text = xasprintf("%s\n", err ? err : "refused");
			job->len = strlen(job->text);
		}
	} else {
		job->status = ans.status;
		job->fd = ans.fd;
		job->fd_offset = ans.offset;
		job->fd_length = ans.length;
		job->ctype_own = ans.ctype;
		mirror__job_header(job, "Cache-Control", "no-cache");
	}
	if (r == -ENOSPC && !job->status) {
		/* said to the client (git prints a text/plain answer's lines as "remote: ..."), as an upload
		 * on that disk says it */
		job->status = 507;
		job->ctype = "text/plain";
		job->text = xasprintf("No space left on the mirror's disk: git cannot %s this repository now\n",
				      g->push ? "push to" : "serve");
		job->len = strlen(job->text);
	}
	if (r && !job->status) {
		job->status = 500;
		job->ctype = "text/plain";
		job->text = xstrdup("the mirror cannot serve this repository over git now\n");
		job->len = strlen(job->text);
	}
	if (lock >= 0) {
		/* whatever the push did to git's refs, the next request builds them again from the catalog */
		mirror_git_invalidate(g->data, rel);
		close(lock);
	}
	if (report) {
		size_t len = 0;
		if (!path_read_file(report, 1 << 20, &g->report, &len))
			push_log(g);
		unlink(report);
		free(report);
	}
	free(rel);
	free(err);
}

static void git_release(struct mirror__job *job)
{
	struct git_job *g = (struct git_job *)job;

	if (g->report && *g->report) /* (on the loop: defer.c releases a job after its answer) */
		mirror__local_torrents(g->j.rt);
	catalog_repo_release(&g->repo);
	free(g->method);
	free(g->path_after);
	free(g->query);
	free(g->ctype_in);
	free(g->cenc);
	free(g->proto);
	free(g->body);
	mirror__spool_release(g->spool); /* (its fd is body_fd) */
	for (size_t i = 0; g->push_env && g->push_env[i]; i++)
		free(g->push_env[i]);
	free(g->push_env);
	free(g->who);
	free(g->report);
	free(g);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static void serve_git(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
		      const char *path_after, const char *who, struct mirror__commit_body *sink)
{
	struct git_job *g = xcalloc(1, sizeof(*g));
	const char *body;

	g->j.build = git_build;
	g->j.release = git_release;
	g->data = rt->data;
	g->repo.id = repo->id;
	g->repo.hub = xstrdup(repo->hub);
	g->repo.type = xstrdup(repo->type);
	g->repo.name = xstrdup(repo->name);
	g->repo.follow_rev = xstrdup(repo->follow_rev);
	g->repo.local = repo->local; /* its commits have parents: built with its history */
	g->method = xstrdup(httpd_method(req));
	g->path_after = xstrdup(path_after);
	g->query = dup_or_null(httpd_query(req));
	g->ctype_in = dup_or_null(httpd_header(req, "Content-Type"));
	g->cenc = dup_or_null(httpd_header(req, "Content-Encoding"));
	g->proto = dup_or_null(httpd_header(req, "Git-Protocol"));
	body = httpd_body(req, &g->len);
	g->body = xmalloc(g->len ? g->len : 1);
	if (g->len)
		memcpy(g->body, body, g->len);
	g->body_fd = -1;
	if (who) {
		/* a push: the body spooled (mirror__claim_body), the hook told who, where and how much room */
		char *ns = xstrndup(repo->name, strcspn(repo->name, "/"));
		char *abs = realpath(rt->data->dir, NULL); /* the hook runs in the repository's directory */
		if (sink) {
			g->spool = sink;
			g->body_fd = sink->fd;
		}
		g->push = true;
		g->who = xstrdup(who);
		g->push_env = xcalloc(10, sizeof(*g->push_env));
		g->push_env[0] = xasprintf("HUBMIRROR_DATA=%s", abs ? abs : rt->data->dir);
		free(abs);
		g->push_env[1] = xasprintf("HUBMIRROR_TYPE=%s", repo->type);
		g->push_env[2] = xasprintf("HUBMIRROR_REPO=%s", repo->name);
		g->push_env[3] = xasprintf("HUBMIRROR_WHO=%s", who);
		g->push_env[4] = xasprintf("HUBMIRROR_QUOTA=%lld", (long long)mirror__local_quota(rt, ns));
		/* the tokens file: which LFS objects a repo may name without their upload is the access
		 * layer's rule (mirror_access_may_name), and the hook applies it in a process of its own;
		 * then room for the report's file (git_build) and the NULL */
		if (mirror_access_path(rt->access)) {
			enum mirror_access_mode m = mirror_access_mode(rt->access);
			g->push_env[5] = xasprintf("HUBMIRROR_TOKENS=%s", mirror_access_path(rt->access));
			g->push_env[6] = xasprintf("HUBMIRROR_AUTH=%s", m == ACCESS_ALL      ? "all"
									: m == ACCESS_LISTED ? "listed"
											     : "open");
		}
		free(ns);
	}
	mirror__defer_aside(rt, req, &g->j);
}

bool mirror__git_receive_repo(const char *path, char **type, char **name)
{
	struct gitreq g;

	if (!parse(path, &g))
		return false;
	if (g.op != OP_RECEIVE_PACK) {
		gitreq_release(&g);
		return false;
	}
	*type = g.type;
	*name = g.name;
	free(g.repo_path);
	free(g.oid);
	return true;
}

/* May this request push into repo type/name: a local one, and a token with a write grant? Else
 * answered, as git's credential helpers expect (401 with a Basic challenge when there is no token). */
static bool push_gate(struct mirror_routes *rt, struct httpd_req *req, const struct gitreq *g, char **who)
{
	char buf[512];
	const char *tok = mirror__request_token(req, buf, sizeof(buf));

	if (!mirror__local_namespace(rt, g->name)) {
		httpd_respond_str(req, 403, "text/plain",
				  "this mirror is read-only outside its local namespaces: no push\n");
	} else if (!tok) {
		httpd_add_header(req, "WWW-Authenticate", "Basic realm=\"hubmirror\"");
		httpd_respond_str(req, 401, "text/plain", "a push needs a token with a write grant\n");
	} else if (!rt->access || !mirror_access_token_valid(rt->access, tok)) {
		/* a token the mirror does not know: git asks its credential helper again */
		httpd_add_header(req, "WWW-Authenticate", "Basic realm=\"hubmirror\"");
		httpd_respond_str(req, 401, "text/plain", "the mirror does not know this token\n");
	} else if (!mirror_access_may_write(rt->access, tok, "hf", g->type, g->name)) {
		httpd_respond_str(req, 403, "text/plain", "this token may not write to this repository\n");
	} else {
		*who = mirror_access_who(rt->access, tok);
		return true;
	}
	return false;
}

/* ---- Git LFS ----------------------------------------------------------------------------------- */

static void lfs_answer(struct httpd_req *req, int status, json_t *o)
{
	char *text = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	httpd_respond(req, status, "application/vnd.git-lfs+json", text, strlen(text));
	free(text);
}

static void lfs_error(struct httpd_req *req, int status, const char *msg)
{
	lfs_answer(req, status, json_pack("{s:s}", "message", msg));
}

/* The batch API: where each object the repository has can be downloaded (docs/git.md). */
static void lfs_batch(struct mirror_routes *rt, struct httpd_req *req, const struct gitreq *g,
		      const struct catalog_repo *repo)
{
	size_t len;
	const char *body = httpd_body(req, &len), *auth = httpd_header(req, "Authorization"), *why = NULL;
	struct hf_lfs_batch in;
	json_t *out;
	char *base;
	int e = hf_lfs_batch_parse(body, len, LFS_BATCH_MAX, &in, &why);

	if (e) {
		lfs_error(req, e == -E2BIG ? 413 : 422, e == -E2BIG ? "at most 1000 objects per batch" : why);
		return;
	}
	if (!strcmp(in.operation, "upload") && repo->local) {
		char *who = NULL;
		if (mirror__write_gate(rt, req, repo->type, repo->name, &who)) {
			json_t *ans = rt->fronts->lfs_upload_batch(rt, req, g->repo_path, repo, &in);
			lfs_answer(req, json_object_get(ans, "objects") ? 200 : 403, ans); /* no objects: over quota */
		}
		free(who);
		hf_lfs_batch_release(&in);
		return;
	}
	if (strcmp(in.operation, "download")) {
		hf_lfs_batch_release(&in);
		lfs_error(req, 403, "this repository is read-only: only downloads");
		return;
	}
	base = mirror__self_base(req);
	out = json_array();
	for (size_t i = 0; i < in.nobjects; i++) {
		const char *oid = in.objects[i].oid;
		json_int_t want = in.objects[i].size;
		int64_t size = -1;
		json_t *o;
		if (!in.objects[i].ok) {
			o = json_pack("{s:s, s:I, s:{s:i, s:s}}", "oid", oid, "size", want, "error", "code", 422,
				      "message", "malformed object");
		} else if (catalog_repo_content(rt->data->catalog, repo->id, oid, &size) || size != want) {
			o = json_pack("{s:s, s:I, s:{s:i, s:s}}", "oid", oid, "size", want, "error", "code", 404,
				      "message", "Object does not exist");
		} else {
			json_t *dl = json_pack("{s:s++++, s:i}", "href", base, "/", g->repo_path, "/info/lfs/objects/",
					       oid, "expires_in", 86400);
			if (auth)
				json_object_set_new(dl, "header", json_pack("{s:s}", "Authorization", auth));
			o = json_pack("{s:s, s:I, s:b, s:{s:o}}", "oid", oid, "size", (json_int_t)size, "authenticated",
				      1, "actions", "download", dl);
		}
		json_array_append_new(out, o);
	}
	free(base);
	hf_lfs_batch_release(&in);
	lfs_answer(req, 200, json_pack("{s:s, s:o}", "transfer", "basic", "objects", out));
}

/* ---- the route ------------------------------------------------------------------------------- */

/* The repository of a git URL: Hugging Face's of that name, else ModelScope's. */
static bool find_repo(struct mirror_routes *rt, struct httpd_req *req, const struct gitreq *g,
		      struct catalog_repo *repo)
{
	if (!catalog_repo_get(rt->data->catalog, "hf", g->type, g->name, repo) ||
	    !catalog_repo_get(rt->data->catalog, "ms", g->type, g->name, repo)) {
		if (mirror__repo_visible(rt, req, repo))
			return true;
		catalog_repo_release(repo); /* a private repo this request may not see: not found */
		memset(repo, 0, sizeof(*repo));
	}
	return false;
}

/* A repository under a local namespace that this request may not see, or that is not there: an
 * anonymous request is asked for credentials either way (as mirror__access_check asks for a guarded
 * repo's). git sends the credentials of a URL only after a 401, so a grantee's clone of a private
 * repo needs the challenge; a missing repo gets the same one, so that the answer tells nothing.
 * True when answered. */
static bool challenge_anonymous(struct mirror_routes *rt, struct httpd_req *req, const struct gitreq *g)
{
	char buf[512];

	if (!rt->access || !mirror__local_namespace(rt, g->name) || mirror__request_token(req, buf, sizeof(buf)))
		return false;
	mirror__refuse(req, false, "git");
	return true;
}

/* The local repository an upload (an object's PUT, a part, a completion) goes to, when this request
 * may know it is there: by its token, or by the upload URL's capability. */
static bool upload_repo(struct mirror_routes *rt, struct httpd_req *req, const struct gitreq *g,
			struct catalog_repo *repo)
{
	if (catalog_repo_get(rt->data->catalog, "hf", g->type, g->name, repo))
		return false;
	if (mirror__repo_visible(rt, req, repo) || rt->fronts->upload_url_ok(rt, req))
		return true;
	catalog_repo_release(repo);
	memset(repo, 0, sizeof(*repo));
	return false;
}

int mirror__route_git(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	const char *method = httpd_method(req), *q = httpd_query(req);
	struct catalog_repo repo = { 0 };
	struct gitreq g;

	(void)rest;
	(void)arg;
	if (!parse(httpd_path(req), &g))
		return HTTPD_PASS;
	httpd_set_route(req, g.op == OP_LFS_BATCH || g.op == OP_LFS_OBJECT || g.op == OP_LFS_PART ||
				     g.op == OP_LFS_COMPLETE ? "git_lfs" : "git");
	if (g.op == OP_RECEIVE_PACK || (g.op == OP_INFO_REFS && q && !strcmp(q, "service=git-receive-pack"))) {
		struct mirror__commit_body *sink = g.op == OP_RECEIVE_PACK ? httpd_body_take(req) : NULL;
		char *who = NULL, st[320];
		const char *why = NULL;
		int status = 0;
		if (sink && sink->head.kind != MIRROR__SINK_COMMIT) {
			mirror__body_abandon(sink);
			sink = NULL;
		}
		if (strcmp(method, g.op == OP_RECEIVE_PACK ? "POST" : "GET"))
			httpd_respond_str(req, 405, "text/plain", "method not allowed\n");
		else if (!push_gate(rt, req, &g, &who))
			; /* answered */
		else if (catalog_repo_get(rt->data->catalog, "hf", g.type, g.name, &repo) || !repo.local)
			httpd_respond_str(req, 404, "text/plain",
					  "Repository not found: create it first (create_repo)\n");
		else if (!mirror__access_check(rt, req, repo.hub, repo.type, repo.name, &repo, "git"))
			; /* answered */
		else if (g.op == OP_RECEIVE_PACK && !mirror__spool_ok(req, sink, &status, &why)) {
			snprintf(st, sizeof(st), "%s\n", why ? why : "the mirror could not keep this push's pack");
			httpd_respond_str(req, status ? status : 500, "text/plain", st);
		} else {
			serve_git(rt, req, &repo, g.op == OP_RECEIVE_PACK ? "/git-receive-pack" : "/info/refs", who,
				  sink);
			sink = NULL; /* the job's now */
		}
		free(who);
		mirror__body_abandon(sink);
	} else if (g.op == OP_INFO_REFS && (!q || strcmp(q, "service=git-upload-pack"))) {
		httpd_respond_str(req, 403, "text/plain",
				  "only git's smart HTTP protocol is served (git 1.6.6 or later)\n");
	} else if ((g.op == OP_UPLOAD_PACK || g.op == OP_LFS_BATCH || g.op == OP_LFS_COMPLETE) ? strcmp(method, "POST")
		   : g.op == OP_LFS_PART ? strcmp(method, "PUT")
		   : g.op == OP_LFS_OBJECT ? strcmp(method, "GET") && strcmp(method, "HEAD") && strcmp(method, "PUT") &&
						     strcmp(method, "POST")
					   : strcmp(method, "GET") && strcmp(method, "HEAD")) {
		httpd_respond_str(req, 405, "text/plain", "method not allowed\n");
	} else if ((g.op == OP_LFS_OBJECT || g.op == OP_LFS_PART) && !strcmp(method, "PUT")) {
		/* an upload: its own gate (a write grant, or the upload URL's capability: the client may send
		 * no Authorization), not the reader's; a private repo is there only for its grantees and
		 * the holders of a capability they were given */
		if (!upload_repo(rt, req, &g, &repo))
			lfs_error(req, 404, "Repository not found");
		else
			rt->fronts->lfs_put(rt, req, &repo, g.oid, g.op == OP_LFS_PART ? g.part : 0);
	} else if (g.op == OP_LFS_COMPLETE) {
		if (!upload_repo(rt, req, &g, &repo))
			lfs_error(req, 404, "Repository not found");
		else
			rt->fronts->lfs_complete(rt, req, &repo, g.oid);
	} else if (!find_repo(rt, req, &g, &repo)) {
		if (challenge_anonymous(rt, req, &g))
			; /* answered */
		else if (g.op == OP_LFS_BATCH)
			lfs_error(req, 404, "Repository not found");
		else
			httpd_respond_str(req, 404, "text/plain", "Repository not found\n");
	} else if (!mirror__access_check(rt, req, repo.hub, repo.type, repo.name, &repo, "git")) {
		/* answered */
	} else if (!mirror_access_content_open(rt->access, &repo)) {
		/* gated or private upstream, not opened here: as its files over HTTP (no content at all) */
		httpd_add_header(req, "WWW-Authenticate", "Basic realm=\"hubmirror\"");
		httpd_respond_str(req, 401, "text/plain", "Access to this repository is restricted on this mirror.\n");
	} else if (g.op == OP_INFO_REFS) {
		serve_git(rt, req, &repo, "/info/refs", NULL, NULL);
	} else if (g.op == OP_UPLOAD_PACK) {
		serve_git(rt, req, &repo, "/git-upload-pack", NULL, NULL);
	} else if (g.op == OP_LFS_BATCH) {
		lfs_batch(rt, req, &g, &repo);
	} else if (!strcmp(method, "POST")) {
		char *who = NULL;
		if (mirror__write_gate(rt, req, repo.type, repo.name, &who))
			rt->fronts->lfs_verify(rt, req, &repo, g.oid);
		free(who);
	} else {
		int64_t size = -1;
		if (catalog_repo_content(rt->data->catalog, repo.id, g.oid, &size))
			httpd_respond_str(req, 404, "text/plain", "Object does not exist\n");
		else if (mirror__send_blob(rt, req, g.oid, size))
			httpd_respond_str(req, 503, "text/plain", "the store does not hold this object now\n");
	}
	catalog_repo_release(&repo);
	gitreq_release(&g);
	return 0;
}
