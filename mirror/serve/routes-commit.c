/*
 * routes-commit.c - the Hugging Face API's commit, for the mirror's own repositories
 * (POST /api/{models|datasets}/ORG/NAME/commit/REV; docs/uploads.md).
 *
 * The body is NDJSON: a header line {key: "header", value: {summary, description, parentCommit}}, then
 * one line per operation: "file" (a small file, its content in base64), "lfsFile" (a large one by its
 * sha256, uploaded before through the LFS batch API, or a copy of one the repo has), "deletedFile",
 * "deletedFolder". It was spooled to a file as it arrived (spool.c); a worker reads it line by
 * line, writes the small files to the store, and makes the commit (mirror/upload.c) under one lock, so
 * two commits to one branch are made one after the other.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/hfwrite.h"
#include "mirror/data.h"
#include "store/store.h"
#include "mirror/torrents.h"
#include "mirror/upload.h"
#include "access.h"
#include "routes-hf-int.h"
#include "routes-int.h"
#include "seeder.h"

#define COMMIT_LINE_MAX (64 << 20)   /* one line: a small file is under 10 MiB before base64 */
#define COMMIT_OPS_MAX 100000

struct commit_job {
	struct mirror__job j;
	struct mirror_data *data;
	struct mirror_routes *rt;    /* for the fronts table only (a xetHash's file: thread-safe) */
	struct catalog_repo repo;    /* id, hub, type, name */
	struct mirror_access *access; /* the rules of the moment the commit came (a reference) */
	char *branch, *who, *url;
	int fd;                      /* the body (spool's) */
	struct mirror__commit_body *spool; /* held till the job's end */
	bool committed;              /* made: its torrent is wanted */
	/* read from it */
	char *summary, *description, *parent;
	struct mirror_upload_op *ops;
	size_t nops, capops;
	size_t checked;              /* ops[0, checked): their contents held and in the store */
	struct mirror_upload_batch *batch; /* the contents, held from gc while the commit is made */
	char *why;                   /* what is wrong with it */
	int status;
};

static void commit_job_release(struct mirror__job *j)
{
	struct commit_job *c = (struct commit_job *)j;

	mirror__spool_release(c->spool); /* (its fd is c->fd) */
	mirror_upload_batch_end(&c->batch); /* (ended on its worker; here only when it never ran) */
	if (c->committed) /* (on the loop: defer.c releases a job after its answer) */
		mirror__local_torrents(c->j.rt);
	mirror_access_free(&c->access);
	free(c->repo.hub);
	free(c->repo.type);
	free(c->repo.name);
	free(c->branch);
	free(c->who);
	free(c->url);
	free(c->summary);
	free(c->description);
	free(c->parent);
	for (size_t i = 0; i < c->nops; i++)
		mirror_upload_op_release(&c->ops[i]);
	free(c->ops);
	free(c->why);
	free(c);
}

static int bad(struct commit_job *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Note what is wrong with the body (the first thing only) and return -1. */
static int bad(struct commit_job *c, int status, const char *fmt, ...)
{
	va_list ap;

	if (!c->why) {
		va_start(ap, fmt);
		c->why = xvasprintf(fmt, ap);
		va_end(ap);
		c->status = status;
	}
	return -1;
}

static struct mirror_upload_op *new_op(struct commit_job *c, enum mirror_upload_kind kind, const char *path)
{
	struct mirror_upload_op *op;

	if (c->nops == COMMIT_OPS_MAX)
		return NULL;
	if (c->nops == c->capops) { /* (doubling: one more each time copied the array 100,000 times) */
		c->capops = c->capops ? 2 * c->capops : 64;
		c->ops = xreallocarray(c->ops, c->capops, sizeof(*c->ops));
	}
	op = &c->ops[c->nops++];
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	op->path = xstrdup(path);
	return op;
}

/* The store must hold a large file's object, of the size the line gave, and the repo may name it
 * (mirror_access_may_name: uploaded for it, its own, or held by a repo everyone may read). Asked only
 * once the object is held (after a flush): gc cannot take it after. */
static int check_lfs(struct commit_job *c, struct catalog *cat, struct mirror_upload_op *op)
{
	int64_t size = -1;
	/* (its size, not its bytes: with a bucket, an object bigger than the cache is not brought in) */
	bool ok = !store_size(c->data->store, op->sha256, &size) && (op->size < 0 || op->size == size) &&
		  mirror_access_may_name(c->access, cat, op->sha256, c->repo.id);

	if (!ok)
		return bad(c, 422, "'%s': its LFS object was not uploaded (or not whole)", op->path);
	op->size = size;
	return 0;
}

/* Hold the contents read since the last flush, write the small files, and check the large ones. */
static int flush_ops(struct commit_job *c, struct catalog *cat)
{
	int e = mirror_upload_batch_flush(c->batch);

	if (e)
		return e == -ENOSPC
			       ? bad(c, 507, "No space left on the mirror's disk: the commit's files cannot be kept")
			       : bad(c, e == HM_ERR_SQLITE ? 500 : 507, "the store cannot take the commit's files: %s",
				     err_str(e));
	for (; c->checked < c->nops; c->checked++)
		if (c->ops[c->checked].kind == MIRROR_UP_ADD && c->ops[c->checked].lfs &&
		    check_lfs(c, cat, &c->ops[c->checked]))
			return -1;
	return 0;
}

/* One line of the body (hub/hfwrite.h parses it): an operation, its small file held and written at
 * the next flush, its large one held and looked for after it (check_lfs). */
static int take_line(struct commit_job *c, const char *line, size_t n)
{
	struct hf_commit_line l;
	struct mirror_upload_op *op;
	char *why = NULL;
	int64_t xet_size = -1;
	int r = 0;

	if (hf_commit_line_parse(line, n, &l, &why)) {
		r = bad(c, 400, "%s", why);
		free(why);
		return r;
	}
	if (l.key == HF_COMMIT_HEADER) {
		if (c->summary) {
			r = bad(c, 400, "one header line");
		} else {
			c->summary = l.summary;
			c->description = l.description;
			c->parent = l.parent[0] ? xstrdup(l.parent) : NULL;
			l.summary = l.description = NULL;
		}
	} else if (!(op = new_op(c,
				 l.key == HF_COMMIT_DELETED_FILE     ? MIRROR_UP_DELETE
				 : l.key == HF_COMMIT_DELETED_FOLDER ? MIRROR_UP_DELETE_FOLDER
								     : MIRROR_UP_ADD,
				 l.path))) {
		r = bad(c, 400, "at most 100000 operations in a commit");
	} else if (l.key == HF_COMMIT_FILE) {
		op->size = (int64_t)l.content_len;
		mirror_upload_batch_small(c->batch, l.content, l.content_len, op->sha256, op->git_oid);
	} else if (l.key == HF_COMMIT_LFS_FILE && l.xet_hash[0] &&
		   (!c->rt->fronts->xet_file(c->rt, c->repo.id, l.xet_hash, l.oid, &xet_size) ||
		    (l.size >= 0 && l.size != xet_size))) {
		r = bad(c, 422, "'%s': its xetHash names no file of that size a Xet upload made for this repository",
			l.path);
	} else if (l.key == HF_COMMIT_LFS_FILE) {
		memcpy(op->sha256, l.oid, sizeof(op->sha256));
		op->size = l.size;
		op->lfs = true;
		mirror_upload_batch_name(c->batch, l.oid);
	}
	hf_commit_line_release(&l);
	return r;
}

/* The body, line by line. */
static int read_body(struct commit_job *c, struct catalog *cat)
{
	int fd = dup(c->fd);
	FILE *f = fd >= 0 && lseek(fd, 0, SEEK_SET) == 0 ? fdopen(fd, "r") : NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = 0;

	if (!f) {
		if (fd >= 0)
			close(fd);
		return bad(c, 500, "the body cannot be read back");
	}
	while (!r && (n = getline(&line, &cap, f)) > 0) {
		if (n > COMMIT_LINE_MAX)
			r = bad(c, 413, "a line over 64 MiB");
		else if (line[0] != '\n' && !(line[0] == '\r' && line[1] == '\n'))
			r = take_line(c, line, (size_t)n);
		if (!r && mirror_upload_batch_full(c->batch))
			r = flush_ops(c, cat);
	}
	free(line);
	fclose(f);
	if (!r)
		r = flush_ops(c, cat);
	if (!r && !c->summary)
		r = bad(c, 400, "no header line");
	return r;
}

/* Do the contents the commit adds fit in its namespace's quota (under the commit lock: two commits
 * do not both take the last room)? */
static bool quota_ok(struct commit_job *c, struct catalog *cat, char **why)
{
	const char **sha = xcalloc(c->nops + 1, sizeof(*sha));
	int64_t *size = xcalloc(c->nops + 1, sizeof(*size));
	size_t n = 0;
	bool ok;

	for (size_t i = 0; i < c->nops; i++)
		if (c->ops[i].kind == MIRROR_UP_ADD) {
			sha[n] = c->ops[i].sha256;
			size[n++] = c->ops[i].size;
		}
	ok = mirror__quota_room(c->j.rt, cat, c->repo.name, sha, size, n, why);
	free(sha);
	free(size);
	return ok;
}

static void commit_job_build(struct mirror__job *j, struct catalog *cat)
{
	struct commit_job *c = (struct commit_job *)j;
	struct mirror_upload_commit uc;
	char id[41], *author = NULL, *why = NULL;
	int e, lock;

	c->batch = mirror_upload_batch_new(c->data, cat, "commit");
	if (read_body(c, cat)) {
		mirror_upload_batch_end(&c->batch);
		mirror__hf_job_error(j, c->status, NULL, c->why, NULL);
		return;
	}
	author = xasprintf("%s <hubmirror@localhost>", c->who);
	uc = (struct mirror_upload_commit){ .branch = c->branch, .parent = c->parent, .summary = c->summary,
					    .description = c->description, .author = author, .ops = c->ops,
					    .nops = c->nops };
	mirror__commit_lock(j->rt);
	lock = mirror_upload_lock(c->data); /* a git push's hook is another process */
	if (lock < 0)
		e = lock;
	else
		e = quota_ok(c, cat, &why) ? mirror_upload_commit(cat, &c->repo, &uc, id, &why) : HM_ERR_QUOTA;
	if (lock >= 0)
		close(lock);
	mirror__commit_unlock(j->rt);
	mirror_upload_batch_end(&c->batch); /* recorded (its snapshot keeps the contents now), or not */
	free(author);
	if (!e) {
		log_info("upload", "hf:%s%s %s -> %s by %s (%zu operations)",
			 strcmp(c->repo.type, "dataset") ? "" : "datasets/", c->repo.name, c->branch, id, c->who,
			 c->nops);
		c->committed = true;
		j->status = 200;
		j->body = json_pack("{s:b, s:s, s:s+++, s:n, s:s}", "success", 1, "commitOid", id, "commitUrl", c->url,
				    "/commit/", id, "", "pullRequestUrl", "hookOutput", "");
	} else {
		int status = e == HM_ERR_CONFLICT ? 412 : e == HM_ERR_NOT_FOUND ? 404 : e == HM_ERR_QUOTA ? 403
			     : e == HM_ERR_PATH_UNSAFE || e == -EINVAL ? 400 : e == -ENOSPC ? 507 : 500;
		mirror__hf_job_error(j, status, NULL,
				     why            ? why
				     : e == -ENOSPC ? "No space left on the mirror's disk: the "
						      "commit is not made"
						    : err_str(e),
				     NULL);
	}
	free(why);
}

struct ref_kind {
	const char *name;
	bool branch;            /* a branch of that name is there */
	bool other;             /* a ref of another kind (a tag) is */
};

static int ref_kind_cb(void *ud, const char *name, const char *kind, const char *commit)
{
	struct ref_kind *k = ud;

	(void)commit;
	if (!strcmp(name, k->name)) {
		k->branch |= !strcmp(kind, "branch");
		k->other |= strcmp(kind, "branch") != 0;
	}
	return 0;
}

void mirror__hf_commit(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
		       const char *rev, const char *who)
{
	struct mirror__commit_body *s = httpd_body_take(req);
	struct commit_job *c;
	const char *why = NULL;
	int status = 0;
	char *base, *pr = httpd_query_param(req, "create_pr");

	if (pr && strcmp(pr, "0") && strcmp(pr, "false")) {
		free(pr);
		mirror__hf_error(req, 400, NULL, "Pull requests are not taken by this mirror: commit to a branch",
				 NULL);
		mirror__body_abandon(s);
		return;
	}
	free(pr);
	{
		/* commits go on branches: a tag (or a commit id) stays where it is */
		struct ref_kind k = { rev, false, false };
		catalog_refs_each(rt->data->catalog, repo->id, ref_kind_cb, &k);
		if (k.other || (!k.branch && hex_is_lower(rev, 40) && strlen(rev) == 40)) {
			mirror__hf_error(req, 400, NULL, "Commits go on a branch, not on a tag or a commit", NULL);
			mirror__body_abandon(s);
			return;
		}
	}
	if (s && s->head.kind != MIRROR__SINK_COMMIT) {
		mirror__body_abandon(s);
		s = NULL;
	}
	if (!mirror__spool_ok(req, s, &status, &why)) {
		mirror__hf_error(req, status ? status : 400, NULL, why ? why : "a commit's body is NDJSON", NULL);
		mirror__body_abandon(s);
		return;
	}
	c = xcalloc(1, sizeof(*c));
	c->j.build = commit_job_build;
	c->j.release = commit_job_release;
	c->data = rt->data;
	c->rt = rt;
	c->access = mirror_access_ref(rt->access);
	c->repo.id = repo->id;
	c->repo.hub = xstrdup(repo->hub);
	c->repo.type = xstrdup(repo->type);
	c->repo.name = xstrdup(repo->name);
	c->branch = xstrdup(rev);
	c->who = xstrdup(who);
	base = mirror__self_base(req);
	c->url = xasprintf("%s/%s%s", base, strcmp(repo->type, "dataset") ? "" : "datasets/", repo->name);
	free(base);
	c->fd = s->fd;
	c->spool = s;
	mirror__hf_cors(req);
	mirror__defer_write(rt, req, &c->j); /* (a commit of 30,000 files takes a while: not in front of reads) */
}
