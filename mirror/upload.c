/*
 * upload.c - commits to the mirror's own repositories (upload.h).
 *
 * A commit is computed from its parent's files in memory: the operations applied in order, the tree
 * and commit ids computed (gitobj.c), then recorded in one catalog transaction that moves the branch
 * only if it still points at the parent. A commit that names no parent (the Hub's default) is computed
 * again on the new head when another one got in first; one that names its parent gets HM_ERR_CONFLICT.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/size.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "gitobj.h"
#include "store/store.h"
#include "upload.h"

/* What a new repository starts with: the file kinds that are large and binary go through Git LFS. */
static const char gitattributes[] =
	"*.7z filter=lfs diff=lfs merge=lfs -text\n*.arrow filter=lfs diff=lfs merge=lfs -text\n"
	"*.bin filter=lfs diff=lfs merge=lfs -text\n*.bz2 filter=lfs diff=lfs merge=lfs -text\n"
	"*.ckpt filter=lfs diff=lfs merge=lfs -text\n*.ftz filter=lfs diff=lfs merge=lfs -text\n"
	"*.gguf filter=lfs diff=lfs merge=lfs -text\n*.gz filter=lfs diff=lfs merge=lfs -text\n"
	"*.h5 filter=lfs diff=lfs merge=lfs -text\n*.joblib filter=lfs diff=lfs merge=lfs -text\n"
	"*.lfs.* filter=lfs diff=lfs merge=lfs -text\n*.mlmodel filter=lfs diff=lfs merge=lfs -text\n"
	"*.model filter=lfs diff=lfs merge=lfs -text\n*.msgpack filter=lfs diff=lfs merge=lfs -text\n"
	"*.npy filter=lfs diff=lfs merge=lfs -text\n*.npz filter=lfs diff=lfs merge=lfs -text\n"
	"*.onnx filter=lfs diff=lfs merge=lfs -text\n*.ot filter=lfs diff=lfs merge=lfs -text\n"
	"*.parquet filter=lfs diff=lfs merge=lfs -text\n*.pb filter=lfs diff=lfs merge=lfs -text\n"
	"*.pickle filter=lfs diff=lfs merge=lfs -text\n*.pkl filter=lfs diff=lfs merge=lfs -text\n"
	"*.pt filter=lfs diff=lfs merge=lfs -text\n*.pth filter=lfs diff=lfs merge=lfs -text\n"
	"*.rar filter=lfs diff=lfs merge=lfs -text\n*.safetensors filter=lfs diff=lfs merge=lfs -text\n"
	"saved_model/**/* filter=lfs diff=lfs merge=lfs -text\n*.tar.* filter=lfs diff=lfs merge=lfs -text\n"
	"*.tar filter=lfs diff=lfs merge=lfs -text\n*.tflite filter=lfs diff=lfs merge=lfs -text\n"
	"*.tgz filter=lfs diff=lfs merge=lfs -text\n*.wasm filter=lfs diff=lfs merge=lfs -text\n"
	"*.xz filter=lfs diff=lfs merge=lfs -text\n*.zip filter=lfs diff=lfs merge=lfs -text\n"
	"*.zst filter=lfs diff=lfs merge=lfs -text\n*tfevents* filter=lfs diff=lfs merge=lfs -text\n";

#define LFS_THRESHOLD (10LL << 20)

void mirror_upload_op_release(struct mirror_upload_op *op)
{
	if (!op)
		return;
	free(op->path);
	memset(op, 0, sizeof(*op));
}

/* One file of the tree being built: a copy of a catalog entry, or deleted (path NULL). */
struct tfile {
	char *path;
	int64_t size;
	char git_oid[41];
	char lfs_oid[65];
	char sha256[65];
};

struct tree {
	struct tfile *v;
	size_t n, cap;
	json_t *index;         /* path -> its index in v */
};

static void tree_release(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].path);
	free(t->v);
	json_decref(t->index);
	memset(t, 0, sizeof(*t));
}

static struct tfile *tree_find(struct tree *t, const char *path)
{
	json_t *i = json_object_get(t->index, path);

	return i ? &t->v[json_integer_value(i)] : NULL;
}

/* Put a file at path (replacing one there). */
static void tree_put(struct tree *t, const char *path, int64_t size, const char *git_oid, const char *lfs_oid,
		     const char *sha256)
{
	struct tfile *f = tree_find(t, path);

	if (!f) {
		if (t->n == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 64;
			t->v = xreallocarray(t->v, t->cap, sizeof(*t->v));
		}
		json_object_set_new(t->index, path, json_integer((json_int_t)t->n));
		f = &t->v[t->n++];
		f->path = xstrdup(path);
	}
	f->size = size;
	snprintf(f->git_oid, sizeof(f->git_oid), "%s", git_oid ? git_oid : "");
	snprintf(f->lfs_oid, sizeof(f->lfs_oid), "%s", lfs_oid ? lfs_oid : "");
	snprintf(f->sha256, sizeof(f->sha256), "%s", sha256);
}

static void tree_drop(struct tree *t, struct tfile *f)
{
	json_object_del(t->index, f->path);
	free(f->path);
	f->path = NULL;
}

static int load_cb(void *ud, const struct catalog_entry *e)
{
	tree_put(ud, e->path, e->size, e->git_oid, e->lfs_oid[0] ? e->lfs_oid : NULL, e->sha256);
	return 0;
}

/* The files of repo at rev into *t (t->index made). */
static int tree_load(struct catalog *cat, const struct catalog_repo *repo, const char *rev, struct tree *t)
{
	struct catalog_repo r;
	struct catalog_snapshot snap;
	bool found = false;
	int e = catalog_resolve(cat, repo->hub, repo->type, repo->name, rev, &r, &snap, &found);

	if (e) {
		if (found)
			catalog_repo_release(&r);
		return e;
	}
	catalog_repo_release(&r);
	return catalog_snapshot_walk(cat, snap.id, NULL, NULL, 0, load_cb, t);
}

static int apply_delete_folder(struct tree *t, const char *dir, char **errmsg)
{
	size_t n = strlen(dir), gone = 0;

	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].path && !strncmp(t->v[i].path, dir, n) && t->v[i].path[n] == '/') {
			tree_drop(t, &t->v[i]);
			gone++;
		}
	if (!gone && errmsg)
		*errmsg = xasprintf("no folder '%s' to delete", dir);
	return gone ? 0 : HM_ERR_NOT_FOUND;
}

static int apply_op(struct tree *t, const struct mirror_upload_op *op, char **errmsg)
{
	struct tfile *f;

	if (op->kind != MIRROR_UP_DELETE_FOLDER && path_check_str(op->path)) {
		if (errmsg)
			*errmsg = xasprintf("'%s' is not a path a repository may hold", op->path);
		return HM_ERR_PATH_UNSAFE;
	}
	switch (op->kind) {
	case MIRROR_UP_ADD:
		if (op->lfs) {
			char ptr[200], oid[41];
			size_t n = gitobj_lfs_pointer(op->sha256, op->size, ptr, sizeof(ptr));
			gitobj_id("blob", ptr, n, oid);
			tree_put(t, op->path, op->size, oid, op->sha256, op->sha256);
		} else {
			tree_put(t, op->path, op->size, op->git_oid, NULL, op->sha256);
		}
		return 0;
	case MIRROR_UP_DELETE:
		if (!(f = tree_find(t, op->path))) {
			if (errmsg)
				*errmsg = xasprintf("no file '%s' to delete", op->path);
			return HM_ERR_NOT_FOUND;
		}
		tree_drop(t, f);
		return 0;
	case MIRROR_UP_DELETE_FOLDER:
		return apply_delete_folder(t, op->path, errmsg);
	}
	return -EINVAL;
}

/* The message git gets: the summary line, then the description as its body. */
static char *message_of(const struct mirror_upload_commit *uc)
{
	const char *d = uc->description;

	if (d && *d)
		return xasprintf("%s\n\n%s%s", uc->summary, d, d[strlen(d) - 1] == '\n' ? "" : "\n");
	return xasprintf("%s\n", uc->summary);
}

/* A commit of t on parent, computed: its id, tree and message, and its files as the catalog takes
 * them (borrowed from t). */
struct made {
	char id[41], tree[41];
	char *msg;
	int64_t at;
	struct catalog_file *files;
	size_t n;
};

static void made_release(struct made *m)
{
	free(m->msg);
	free(m->files);
	memset(m, 0, sizeof(*m));
}

static int made_compute(const struct mirror_upload_commit *uc, const char *parent, struct tree *t, struct made *m,
			char **errmsg)
{
	struct gitobj_file *g = xcalloc(t->n + 1, sizeof(*g));
	size_t len;
	char *text;
	int e;

	memset(m, 0, sizeof(*m));
	m->files = xcalloc(t->n + 1, sizeof(*m->files));
	m->msg = message_of(uc);
	m->at = (int64_t)time(NULL);
	for (size_t i = 0; i < t->n; i++) {
		const struct tfile *f = &t->v[i];
		if (!f->path)
			continue;
		g[m->n] = (struct gitobj_file){ f->path, f->git_oid };
		m->files[m->n] = (struct catalog_file){.path = f->path,
						       .size = f->size,
						       .git_oid = f->git_oid,
						       .lfs_oid = f->lfs_oid[0] ? f->lfs_oid : NULL,
						       .sha256 = f->sha256};
		m->n++;
	}
	e = gitobj_tree_id(g, m->n, m->tree);
	free(g);
	if (e) {
		if (errmsg)
			*errmsg = xstrdup("a path is both a file and a folder");
		made_release(m);
		return e;
	}
	text = gitobj_commit_text(m->tree, parent, uc->author, m->at, m->msg, &len);
	gitobj_id("commit", text, len, m->id);
	free(text);
	return 0;
}

/* Compute the commit of t on parent and record it. */
static int record(struct catalog *cat, const struct catalog_repo *repo, const struct mirror_upload_commit *uc,
		  const char *parent, struct tree *t, char out[41], char **errmsg)
{
	struct made m;
	int e = made_compute(uc, parent, t, &m, errmsg);

	if (e)
		return e;
	{
		struct catalog_commit cm = { m.id, parent, m.tree, uc->author, m.at, m.msg, NULL };
		e = catalog_local_commit(cat, repo->id, uc->branch, &cm, m.files, m.n);
	}
	if (!e)
		memcpy(out, m.id, 41);
	made_release(&m);
	return e;
}

/* One try: the head now, the operations on its files, the commit recorded if the head did not move. */
static int commit_once(struct catalog *cat, const struct catalog_repo *repo, const struct mirror_upload_commit *uc,
		       char out[41], char **errmsg)
{
	struct tree t = { .index = json_object() };
	char head[41] = "";
	int e = catalog_local_head(cat, repo->id, uc->branch, head);

	if (e == HM_ERR_NOT_FOUND && !uc->new_branch) {
		if (errmsg)
			*errmsg = xasprintf("no branch '%s'", uc->branch);
		goto out;
	}
	if (e && e != HM_ERR_NOT_FOUND)
		goto out;
	if (!e && uc->parent && strcmp(uc->parent, head)) {
		e = HM_ERR_CONFLICT;
		if (errmsg)
			*errmsg = xasprintf("'%s' is at %s, not at the parent commit %s", uc->branch, head, uc->parent);
		goto out;
	}
	if (!e && (e = tree_load(cat, repo, head, &t)))
		goto out;
	e = 0;
	for (size_t i = 0; i < uc->nops && !e; i++)
		e = apply_op(&t, &uc->ops[i], errmsg);
	if (!e)
		e = record(cat, repo, uc, head[0] ? head : NULL, &t, out, errmsg);
out:
	tree_release(&t);
	return e;
}

int mirror_upload_commit(struct catalog *cat, const struct catalog_repo *repo, const struct mirror_upload_commit *uc,
			 char out[41], char **errmsg)
{
	int e;

	/* a commit without a parent goes on whatever the head is: another one that got in meanwhile is
	 * built on, as the Hub does; a few tries, then the caller hears of the conflict */
	for (int tries = 0;; tries++) {
		e = commit_once(cat, repo, uc, out, errmsg);
		if (e != HM_ERR_CONFLICT || uc->parent || tries == 4)
			break;
	}
	if (e == HM_ERR_CONFLICT && errmsg && !*errmsg)
		*errmsg = xasprintf("'%s' moved while the commit was made", uc->branch);
	return e;
}

int mirror_upload_put_small(struct mirror_data *d, const void *data, size_t n, char sha256[65], char git_oid[41])
{
	unsigned char md[32];
	unsigned int mdlen;
	char hex[65];
	struct store_writer *w = NULL;
	struct store_expect x;
	int e;

	EVP_Digest(data, n, md, &mdlen, EVP_sha256(), NULL);
	hex_encode(md, 32, hex);
	x = (struct store_expect){ .sha256 = hex, .git_oid = NULL, .size = (int64_t)n };
	if (!store_reuse(d->store, hex, (int64_t)n)) {
		if ((e = store_writer_new_private(d->store, &x, &w)))
			return e;
		if ((e = store_writer_write(w, data, n))) {
			store_writer_abort(&w, false);
			return e;
		}
		if ((e = store_writer_commit(&w, NULL)))
			return e;
	}
	memcpy(sha256, hex, 65);
	gitobj_id("blob", data, n, git_oid);
	return 0;
}

/* ---- a writer's contents, held while it writes (upload.h) ---------------------------------- */

#define BATCH_FILES 1024
#define BATCH_BYTES (64 << 20)
#define HOLD_WRITE_S (24 * 3600)  /* a crashed writer's holds end by themselves */

struct batch_small {
	void *data;
	size_t n;
	char sha256[65];
};

struct mirror_upload_batch {
	struct mirror_data *d;
	struct catalog *cat;
	char owner[64];
	char (*sha)[65];          /* every content held or to hold; [held, nsha) wait for the flush */
	size_t nsha, capsha, held;
	struct batch_small *small; /* bytes waiting for the flush */
	size_t nsmall, capsmall, bytes;
};

struct mirror_upload_batch *mirror_upload_batch_new(struct mirror_data *d, struct catalog *cat, const char *kind)
{
	struct mirror_upload_batch *b = xcalloc(1, sizeof(*b));
	unsigned char r[8];
	char hex[17];

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		memcpy(r, &(int64_t){ (int64_t)time(NULL) ^ ((int64_t)getpid() << 32) }, sizeof(r));
	hex_encode(r, sizeof(r), hex);
	b->d = d;
	b->cat = cat;
	snprintf(b->owner, sizeof(b->owner), "%s:%s", kind, hex);
	return b;
}

void mirror_upload_batch_name(struct mirror_upload_batch *b, const char *sha256)
{
	if (b->nsha == b->capsha) {
		b->capsha = b->capsha ? 2 * b->capsha : 64;
		b->sha = xreallocarray(b->sha, b->capsha, sizeof(*b->sha));
	}
	snprintf(b->sha[b->nsha++], 65, "%s", sha256);
}

void mirror_upload_batch_small(struct mirror_upload_batch *b, const void *data, size_t n, char sha256[65],
			       char git_oid[41])
{
	unsigned char md[32];
	struct batch_small *f;

	EVP_Digest(data, n, md, NULL, EVP_sha256(), NULL);
	hex_encode(md, 32, sha256);
	gitobj_id("blob", data, n, git_oid);
	mirror_upload_batch_name(b, sha256);
	if (b->nsmall == b->capsmall) {
		b->capsmall = b->capsmall ? 2 * b->capsmall : 64;
		b->small = xreallocarray(b->small, b->capsmall, sizeof(*b->small));
	}
	f = &b->small[b->nsmall++];
	f->data = xmalloc(n + 1);
	memcpy(f->data, data, n);
	f->n = n;
	memcpy(f->sha256, sha256, 65);
	b->bytes += n;
}

bool mirror_upload_batch_full(const struct mirror_upload_batch *b)
{
	return b->nsha - b->held >= BATCH_FILES || b->bytes >= BATCH_BYTES;
}

static void batch_small_clear(struct mirror_upload_batch *b)
{
	for (size_t i = 0; i < b->nsmall; i++)
		free(b->small[i].data);
	b->nsmall = 0;
	b->bytes = 0;
}

int mirror_upload_batch_flush(struct mirror_upload_batch *b)
{
	const char **v = xcalloc(b->nsha - b->held + 1, sizeof(*v));
	char sha[65], oid[41];
	int e;

	for (size_t i = b->held; i < b->nsha; i++)
		v[i - b->held] = b->sha[i];
	/* held first, committed, and only then written or looked for: gc's side is store_reap */
	e = catalog_hold(b->cat, b->owner, (int64_t)time(NULL) + HOLD_WRITE_S, v, b->nsha - b->held);
	free(v);
	if (e)
		return e;
	b->held = b->nsha;
	for (size_t i = 0; i < b->nsmall && !e; i++)
		e = mirror_upload_put_small(b->d, b->small[i].data, b->small[i].n, sha, oid);
	batch_small_clear(b);
	return e;
}

void mirror_upload_batch_end(struct mirror_upload_batch **bp)
{
	struct mirror_upload_batch *b = bp ? *bp : NULL;

	if (!b)
		return;
	if (b->held)
		catalog_hold_drop(b->cat, b->owner); /* (on failure they end by themselves) */
	batch_small_clear(b);
	free(b->small);
	free(b->sha);
	free(b);
	*bp = NULL;
}

int mirror_upload_create(struct mirror_data *d, struct catalog *cat, const char *hub, const char *type,
			 const char *name, bool private_, const char *author, int64_t *repo_id, char **errmsg)
{
	struct mirror_upload_op op = { .kind = MIRROR_UP_ADD, .path = (char *)".gitattributes" };
	struct mirror_upload_commit uc = { .branch = "main", .new_branch = true, .summary = "initial commit",
					   .author = author, .ops = &op, .nops = 1 };
	struct mirror_upload_batch *b = mirror_upload_batch_new(d, cat, "commit");
	struct tree t = { .index = json_object() };
	struct made m;
	int64_t id = 0;
	int e;

	op.size = (int64_t)strlen(gitattributes);
	mirror_upload_batch_small(b, gitattributes, strlen(gitattributes), op.sha256, op.git_oid);
	if ((e = mirror_upload_batch_flush(b))) /* (held from gc until the repo names it) */
		goto out;
	if ((e = apply_op(&t, &op, errmsg)) || (e = made_compute(&uc, NULL, &t, &m, errmsg)))
		goto out;
	{
		/* the repo and its first commit in one transaction: a crash leaves neither or both, never a
		 * repo without a branch (which create_repo would call taken and every commit would miss) */
		struct catalog_commit cm = { m.id, NULL, m.tree, author, m.at, m.msg, NULL };
		e = catalog_local_create(cat, hub, type, name, private_, &cm, uc.branch, m.files, m.n, &id);
	}
	made_release(&m);
	if (!e && repo_id)
		*repo_id = id;
out:
	mirror_upload_batch_end(&b);
	tree_release(&t);
	return e;
}

/* Does a .gitattributes line's pattern take path? A pattern without '/' matches the file's name in any
 * folder; one with a slash the whole path (a star across folders too). */
static bool attr_matches(const char *pattern, const char *path)
{
	const char *base = strrchr(path, '/');

	if (strchr(pattern, '/'))
		return !fnmatch(pattern[0] == '/' ? pattern + 1 : pattern, path, 0);
	return !fnmatch(pattern, base ? base + 1 : path, 0);
}

bool mirror_upload_wants_lfs(const char *attrs, const char *path, int64_t size, const void *sample, size_t sample_len)
{
	if (size >= LFS_THRESHOLD || (sample && memchr(sample, '\0', sample_len)))
		return true;
	for (const char *l = attrs; l && *l;) {
		size_t n = strcspn(l, "\n");
		char *line = xstrndup(l, n), *save = NULL, *pat = strtok_r(line, " \t", &save), *w;
		bool lfs = false;
		while (pat && pat[0] != '#' && (w = strtok_r(NULL, " \t", &save)))
			if (!strcmp(w, "filter=lfs"))
				lfs = true;
		if (lfs && attr_matches(pat, path)) {
			free(line);
			return true;
		}
		free(line);
		l += n + (l[n] == '\n');
	}
	return false;
}

bool mirror_upload_ref_name_ok(const char *n)
{
	size_t len = strlen(n);

	if (!len || len > 200 || n[0] == '-' || n[0] == '/' || n[0] == '.' || n[len - 1] == '/' || n[len - 1] == '.' ||
	    strstr(n, "..") || strstr(n, "//") || strstr(n, "/.") || (len >= 5 && !strcmp(n + len - 5, ".lock")) ||
	    !strncmp(n, "refs/", 5))
		return false;
	return strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/") == len;
}

bool mirror_upload_quota_room(struct catalog *cat, const char *ns, int64_t quota, const char *const *sha,
			      const int64_t *size, size_t n, char **msg)
{
	int64_t used = 0, more = 0;
	char a[32], b[32], c[32];

	if (quota < 0)
		return true;
	/* what is new to the namespace: each content once, not those its repos hold already */
	for (size_t i = 0; i < n; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(sha[j], sha[i]);
		if (!seen && catalog_namespace_holds(cat, "hf", ns, sha[i]) == 0)
			more += size[i];
	}
	if (more > 0 && (catalog_namespace_bytes(cat, "hf", ns, &used) || used + more > quota)) {
		size_human(used, a, sizeof(a));
		size_human(more, b, sizeof(b));
		size_human(quota, c, sizeof(c));
		*msg = xasprintf("The storage quota of namespace %s is exceeded: it holds %s, this asks %s more, "
				 "and its quota is %s", ns, a, b, c);
		return false;
	}
	return true;
}

int mirror_upload_lock(struct mirror_data *d)
{
	char *path = xasprintf("%s/upload.lock", d->dir);
	int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600), e;

	free(path);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX)) {
		e = -errno;
		close(fd);
		return e;
	}
	return fd;
}
