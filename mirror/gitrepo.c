/*
 * gitrepo.c - a mirrored repository as a read-only git repository (see gitrepo.h, docs/git.md).
 *
 * git itself does the git work: `git fast-import` writes the objects (we hand it a stream of blobs
 * and commits), `git update-ref` and `git symbolic-ref` set the refs, and `git http-backend` (the CGI
 * that runs upload-pack) answers clients. Nothing here writes a git object or a pack by hand.
 *
 * The repository holds, besides the branches and tags clients see, refs/hubmirror/snap/<commit> for
 * every snapshot built (hidden from clients: uploadpack.hideRefs), so a later build knows what is
 * there; hubmirror-state holds the refs it was last built for, so an unchanged repository costs one
 * file read.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fdio.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/path.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "gitobj.h"
#include "gitpkt.h"
#include "gitrepo-int.h"
#include "gitrepo.h"
#include "store/store.h"

#define STATE_VERSION "hubmirror-git 1"
/* every commit's author and committer, and date: the same snapshot is the same commit everywhere */
#define IDENT "hubmirror <hubmirror@localhost> 946684800 +0000"

char *mirror_git_root(const struct mirror_data *d)
{
	return xasprintf("%s/git", d->dir);
}

/* ---- running git ---------------------------------------------------------------------------- */

/* An unlinked temporary file in dir (for a process's input or output). -errno on failure. */
int gitrepo__tmpfile_in(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		char *t = xasprintf("%s/.tmp-XXXXXX", dir);
		fd = mkostemp(t, O_CLOEXEC);
		if (fd >= 0)
			unlink(t);
		free(t);
	}
	return fd < 0 ? -errno : fd;
}

/* git's environment: nothing of ours (no tokens), no user or system configuration, extra appended. */
static char **git_env(const char *const *extra)
{
	static const char *const base[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1",
					    "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent", "LC_ALL=C",
					    "GIT_TERMINAL_PROMPT=0" };
	size_t n = sizeof(base) / sizeof(base[0]), k = 0;
	char **env;

	while (extra && extra[k])
		k++;
	env = xcalloc(n + k + 1, sizeof(*env));
	for (size_t i = 0; i < n; i++)
		env[i] = xstrdup(base[i]);
	for (size_t i = 0; i < k; i++)
		env[n + i] = xstrdup(extra[i]);
	return env;
}

static void env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

/* Start git with argv (argv[0] is "git"), stdin from in (-1: /dev/null), stdout to out, stderr to err
 * (-1: /dev/null). Returns the pid or -errno. */
static pid_t spawn(const char *file, const char *const *argv, const char *const *extra_env, int in, int out,
		   int err)
{
	posix_spawn_file_actions_t fa;
	char **env = git_env(extra_env);
	pid_t pid;
	int r;

	posix_spawn_file_actions_init(&fa);
	if (in >= 0)
		posix_spawn_file_actions_adddup2(&fa, in, 0);
	else
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (out >= 0)
		posix_spawn_file_actions_adddup2(&fa, out, 1);
	else
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (err >= 0)
		posix_spawn_file_actions_adddup2(&fa, err, 2);
	else
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	r = posix_spawnp(&pid, file, &fa, NULL, (char *const *)argv, env);
	posix_spawn_file_actions_destroy(&fa);
	env_free(env);
	return r ? -r : pid;
}

int gitrepo__full_disk(const char *root, int r, char **errmsg)
{
	struct statvfs v;
	char *was;

	if (r != HM_ERR_GIT || statvfs(root, &v) || (unsigned long long)v.f_bavail * v.f_frsize >= GITREPO_FULL_BYTES)
		return r;
	was = *errmsg;
	*errmsg = xasprintf("No space left on the mirror's disk (%s)%s%s", root, was ? ": " : "", was ? was : "");
	free(was);
	return -ENOSPC;
}

pid_t gitrepo__git_start(const char *const *argv, const char *const *extra_env, int in, int out, int err)
{
	return spawn("git", argv, extra_env, in, out, err);
}

pid_t gitrepo__git_start_bounded(const char *const *argv, const char *const *extra_env, int in, int out, int err)
{
	/* posix_spawn sets no limits: the shell does, for git and all it runs (its soft limit: the hook
	 * lifts it for itself, docs/uploads.md), then becomes git */
	static const char script[] = "ulimit -S -d " GITREPO_PUSH_DATA_KIB " && exec \"$@\"";
	size_t n = 0;
	const char **a;
	pid_t pid;

	while (argv[n])
		n++;
	a = xcalloc(n + 5, sizeof(*a)); /* sh -c SCRIPT sh ARGV... NULL */
	a[0] = "sh";
	a[1] = "-c";
	a[2] = script;
	a[3] = "sh";
	for (size_t i = 0; i < n; i++)
		a[4 + i] = argv[i];
	pid = spawn("sh", a, extra_env, in, out, err);
	free(a);
	return pid;
}

/* Wait for pid: its exit status (0-255), or -1 when a signal ended it. */
int gitrepo__git_wait(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The last line git wrote to err (an unlinked temporary file), for a message; malloc'd. */
char *gitrepo__last_words(int err)
{
	char buf[1024];
	ssize_t n = pread(err, buf, sizeof(buf) - 1, 0);
	char *end, *start;

	if (n <= 0)
		return xstrdup("no message");
	buf[n] = '\0';
	end = buf + strlen(buf);
	while (end > buf && (end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	start = strrchr(buf, '\n');
	return xstrdup(start ? start + 1 : buf);
}

/* Run git to the end with the given output file (-1: none); 0, or an error with *errmsg. */
int gitrepo__git_run(const char *root, const char *const *argv, int in, int out, char **errmsg)
{
	int err = gitrepo__tmpfile_in(root), st;
	pid_t pid;

	pid = gitrepo__git_start(argv, NULL, in, out, err);
	if (pid < 0) {
		if (errmsg)
			*errmsg = xasprintf("cannot run git: %s", strerror((int)-pid));
		if (err >= 0)
			close(err);
		return HM_ERR_GIT;
	}
	st = gitrepo__git_wait(pid);
	if (st != 0 && errmsg) {
		char *w = err >= 0 ? gitrepo__last_words(err) : xstrdup("no message");
		*errmsg = xasprintf("git %s: %s", argv[1], w);
		free(w);
	}
	if (err >= 0)
		close(err);
	return st ? HM_ERR_GIT : 0;
}

/* ---- building the repository ----------------------------------------------------------------- */

struct gref {
	char *ref;             /* refs/heads/main, refs/tags/v1.0, refs/pr/1, refs/convert/parquet */
	char commit[41];       /* the snapshot's (upstream's) commit */
	int64_t snapshot_id;
};

struct refs_ctx {
	struct catalog *cat;
	const struct catalog_repo *repo;
	struct gref *v;
	size_t n;
	char *head;            /* the followed ref's git name, when it is a branch */
};

/* A ref name git takes (git check-ref-format's rules, more strictly: no odd bytes at all). */
static bool git_ref_ok(const char *ref)
{
	size_t n = strlen(ref);

	if (n < 6 || strstr(ref, "..") || strstr(ref, "@{") || strstr(ref, "//") || ref[n - 1] == '/' ||
	    ref[n - 1] == '.' || (n >= 5 && !strcmp(ref + n - 5, ".lock")) || strstr(ref, "/."))
		return false;
	for (const char *p = ref; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || strchr("~^:?*[\\", *p))
			return false;
	return true;
}

static int ref_cb(void *ud, const char *name, const char *kind, const char *commit)
{
	struct refs_ctx *c = ud;
	struct catalog_repo r2 = { 0 };
	struct catalog_snapshot snap;
	bool found = false;
	char *ref;

	if (skip_prefix(name, "refs/"))
		ref = xstrdup(name);
	else
		ref = xasprintf("refs/%s/%s", !strcmp(kind, "tag") ? "tags" : "heads", name);
	if (!git_ref_ok(ref) || strlen(commit) != 40 ||
	    catalog_resolve(c->cat, c->repo->hub, c->repo->type, c->repo->name, commit, &r2, &snap, &found)) {
		if (found)
			catalog_repo_release(&r2);
		free(ref);
		return 0; /* left out: a name git refuses, or a snapshot gone */
	}
	catalog_repo_release(&r2);
	if (catalog_snapshot_complete(c->cat, snap.id) != 1) {
		free(ref);
		return 0; /* provisional (fetched on demand): not yet */
	}
	c->v = xreallocarray(c->v, c->n + 1, sizeof(*c->v));
	c->v[c->n] = (struct gref){ ref, "", snap.id };
	memcpy(c->v[c->n].commit, commit, 41);
	c->n++;
	if (!strcmp(name, c->repo->follow_rev) && skip_prefix(ref, "refs/heads/") && !c->head)
		c->head = xstrdup(ref);
	return 0;
}

static int write_str(int fd, const char *s)
{
	return fdio_write_all(fd, s, strlen(s));
}

struct stream {
	struct mirror_data *d;
	int fd;                /* fast-import's stdin */
	json_t *marks;         /* blob key -> mark, across the stream */
	int next_mark;
	struct buf files;      /* the snapshot's "M" lines */
	int err;
	char *why;
};

/* A path for an "M" line: as it is, or C-quoted when git would read it otherwise. */
static void add_path(struct buf *b, const char *p)
{
	if (p[0] != '"' && !strchr(p, '\n')) {
		buf_adds(b, p);
		return;
	}
	buf_addch(b, '"');
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			buf_addch(b, '\\');
		if (*p == '\n')
			buf_adds(b, "\\n");
		else
			buf_addch(b, *p);
	}
	buf_addch(b, '"');
}

#define BLOB_RANGE ((size_t)4 << 20) /* one read of a regular file's content (stream_blob) */

/* A regular file's blob into the stream, its bytes read by ranges from where the store has them
 * (store_read: with a bucket, the cache's copy or ranged reads of the bucket, never brought into the
 * cache, which a clone of many files would churn and a big one pass over its bound), and their sha256
 * checked at the end: a damaged copy fails the stream (git never gets a commit of the wrong bytes). */
static int stream_blob(struct stream *s, const struct catalog_entry *e, int mark)
{
	char head[96], got[65], *buf = xmalloc(BLOB_RANGE), *why = NULL;
	unsigned char md[32];
	EVP_MD_CTX *sum = EVP_MD_CTX_new();
	int64_t off = 0;
	int r;

	snprintf(head, sizeof(head), "blob\nmark :%d\ndata %lld\n", mark, (long long)e->size);
	EVP_DigestInit_ex(sum, EVP_sha256(), NULL);
	r = write_str(s->fd, head);
	while (!r && off < e->size) {
		size_t k = e->size - off < (int64_t)BLOB_RANGE ? (size_t)(e->size - off) : BLOB_RANGE;
		if ((r = store_read(s->d->store, e->sha256, off, buf, k, &why))) {
			s->why = xasprintf("%s: reading the store's %s: %s", e->path, e->sha256,
					   why ? why : err_str(r));
			r = HM_ERR_GIT;
			break;
		}
		EVP_DigestUpdate(sum, buf, k);
		r = fdio_write_all(s->fd, buf, k);
		off += (int64_t)k;
	}
	if (!r) {
		EVP_DigestFinal_ex(sum, md, NULL);
		hex_encode(md, sizeof(md), got);
		if (strcmp(got, e->sha256)) {
			s->why = xasprintf("%s: the store's copy of %s hashes to %.12s, not to its name: damaged",
					   e->path, e->sha256, got);
			log_warn("git", "%s", s->why);
			r = HM_ERR_GIT;
		}
	}
	if (!r)
		r = write_str(s->fd, "\n");
	free(why);
	free(buf);
	EVP_MD_CTX_free(sum);
	return r;
}

/* One file of a snapshot: its blob (once per stream), and its "M" line for the commit. */
static int file_cb(void *ud, const struct catalog_entry *e)
{
	struct stream *s = ud;
	char key[70], head[96];
	json_t *m;
	int mark;

	snprintf(key, sizeof(key), "%s%s", e->lfs_oid[0] ? "L" : "R", e->sha256);
	if ((m = json_object_get(s->marks, key))) {
		mark = (int)json_integer_value(m);
	} else if (e->lfs_oid[0]) {
		/* a large file: its Git LFS pointer, as the Hub's own repository holds it */
		char ptr[200];
		int n = snprintf(ptr, sizeof(ptr),
				 "version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %lld\n", e->lfs_oid,
				 (long long)e->size);
		mark = s->next_mark++;
		snprintf(head, sizeof(head), "blob\nmark :%d\ndata %d\n", mark, n);
		if ((s->err = write_str(s->fd, head)) || (s->err = fdio_write_all(s->fd, ptr, (size_t)n)) ||
		    (s->err = write_str(s->fd, "\n")))
			return s->err;
		json_object_set_new(s->marks, key, json_integer(mark));
	} else {
		mark = s->next_mark++;
		if ((s->err = stream_blob(s, e, mark)))
			return s->err;
		json_object_set_new(s->marks, key, json_integer(mark));
	}
	buf_addf(&s->files, "M 100644 :%d ", mark);
	add_path(&s->files, e->path);
	buf_addch(&s->files, '\n');
	return 0;
}

/* One commit in the stream: its files (the snapshot's, each blob streamed once), then head (the
 * commit's lines up to its file list, consumed) and the "M" lines. */
static int stream_commit(struct stream *s, struct catalog *cat, int64_t snapshot_id, char *head)
{
	int r;

	buf_init(&s->files);
	r = catalog_snapshot_walk(cat, snapshot_id, NULL, NULL, 0, file_cb, s);
	if (!r) {
		r = write_str(s->fd, head);
		if (!r && s->files.len)
			r = fdio_write_all(s->fd, s->files.data, s->files.len);
		if (!r)
			r = write_str(s->fd, "\n");
	} else if (!s->err) {
		s->why = xstrdup("catalog: cannot list the snapshot's files");
	}
	free(head);
	buf_release(&s->files);
	return r ? r : s->err;
}

/* The commit of one snapshot, as refs/hubmirror/snap/<commit> in the stream. */
static int stream_snapshot(struct stream *s, struct catalog *cat, const struct catalog_repo *repo,
			   const struct gref *g)
{
	char *msg = xasprintf("%s:%s%s at %s\n\nThe files of upstream's commit %s as hubmirror mirrors them; large "
			      "files are\nGit LFS pointers. The commit is the mirror's own, the same on every mirror;\n"
			      "upstream's history is not here.\n",
			      repo->hub, !strcmp(repo->type, "dataset") ? "datasets/" : "", repo->name, g->commit,
			      g->commit);
	char *head = xasprintf("commit refs/hubmirror/snap/%s\nauthor " IDENT "\ncommitter " IDENT "\ndata %zu\n%s",
			       g->commit, strlen(msg), msg);

	free(msg);
	return stream_commit(s, cat, g->snapshot_id, head);
}

/* One commit of a local repo (docs/uploads.md): its author, committer, time, message and parent are the
 * catalog's (a pushed one's as git wrote them: its raw object), and fast-import writes the very commit
 * whose id the API or the push gave out. */
static int stream_local_commit(struct stream *s, struct catalog *cat, const struct catalog_commit *cm,
			       int64_t snapshot_id)
{
	char *from = cm->parent ? xasprintf("from refs/hubmirror/snap/%s\n", cm->parent) : xstrdup(""), *head;
	struct gitobj_commit pc;
	const char *why;

	if (cm->raw && gitobj_commit_parse(cm->raw, strlen(cm->raw), &pc, &why)) {
		s->why = xasprintf("catalog: commit %s: %s", cm->id, why);
		free(from);
		return HM_ERR_GIT;
	}
	if (cm->raw)
		head = xasprintf("commit refs/hubmirror/snap/%s\nauthor %s\ncommitter %s\ndata %zu\n%s%sdeleteall\n",
				 cm->id, pc.author_line, pc.committer_line, strlen(pc.message), pc.message, from);
	else
		head = xasprintf("commit refs/hubmirror/snap/%s\nauthor %s %lld +0000\ncommitter %s %lld +0000\n"
				 "data %zu\n%s%sdeleteall\n", cm->id, cm->author, (long long)cm->at, cm->author,
				 (long long)cm->at, strlen(cm->message), cm->message, from);
	if (cm->raw)
		gitobj_commit_release(&pc);
	free(from);
	return stream_commit(s, cat, snapshot_id, head);
}

static bool has_line(const char *text, const char *line);

/* A local repo's commits up to g's that the repository lacks (have: its refs; done: streamed
 * already), oldest first, each after its parent. */
static int stream_local_history(struct stream *s, struct catalog *cat, const struct catalog_repo *repo,
				const struct gref *g, const char *have, json_t *done)
{
	struct catalog_commit *chain = NULL;
	size_t n = 0;
	char *id = xstrdup(g->commit), line[80];
	int r = 0;

	/* back from the ref to the first commit the repository has */
	while (id && !r) {
		snprintf(line, sizeof(line), "refs/hubmirror/snap/%s", id);
		if (has_line(have, line) || json_object_get(done, id))
			break;
		chain = xreallocarray(chain, n + 1, sizeof(*chain));
		if ((r = catalog_commit_get(cat, repo->id, id, &chain[n]))) {
			s->why = xasprintf("catalog: no record of commit %s", id);
			break;
		}
		free(id);
		id = chain[n].parent ? xstrdup(chain[n].parent) : NULL;
		n++;
	}
	free(id);
	for (size_t i = n; i-- > 0 && !r;) {
		struct catalog_repo r2 = { 0 };
		struct catalog_snapshot snap;
		bool found = false;
		if ((r = catalog_resolve(cat, repo->hub, repo->type, repo->name, chain[i].id, &r2, &snap, &found))) {
			s->why = xasprintf("catalog: no snapshot of commit %s", chain[i].id);
		} else {
			r = stream_local_commit(s, cat, &chain[i], snap.id);
			json_object_set_new(done, chain[i].id, json_true());
		}
		if (found)
			catalog_repo_release(&r2);
	}
	for (size_t i = 0; i < n; i++)
		catalog_commit_release(&chain[i]);
	free(chain);
	return r;
}

/* The refs the repository has now (git for-each-ref), one per line; malloc'd, "" when none. */
static char *list_refs(const char *root, const char *gitdir, char **errmsg)
{
	const char *argv[] = { "git", "--git-dir", gitdir, "for-each-ref", "--format=%(refname)", NULL };
	int out = gitrepo__tmpfile_in(root);
	struct stat st;
	char *text = NULL;

	if (out < 0) {
		*errmsg = xasprintf("temporary file in %s: %s", root, strerror(-out));
		return NULL;
	}
	if (!gitrepo__git_run(root, argv, -1, out, errmsg) && !fstat(out, &st)) {
		text = xmalloc((size_t)st.st_size + 1);
		if (pread(out, text, (size_t)st.st_size, 0) != st.st_size) {
			FREE_AND_NULL(&text);
			*errmsg = xstrdup("reading git for-each-ref's output failed");
		} else {
			text[st.st_size] = '\0';
		}
	}
	close(out);
	return text;
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !memcmp(p, line, n))
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

static void remove_tree(const char *dir)
{
	if (nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		log_debug("git", "cannot remove %s: %s", dir, strerror(errno));
}

/* A new bare repository at gitdir with the settings serving needs. */
static int init_repo(const char *root, const char *gitdir, char **errmsg)
{
	static const char *const settings[][2] = {
		{ "uploadpack.hideRefs", "refs/hubmirror" }, /* the build's own refs */
		{ "uploadpack.allowFilter", "true" },       /* partial clones */
		{ "http.receivepack", "false" },            /* read-only, whoever asks */
		{ "gc.auto", "0" },                         /* no gc in the middle of a request */
		{ "core.logAllRefUpdates", "false" },
	};
	const char *init[] = { "git", "init", "--bare", "--quiet", gitdir, NULL };
	int r = gitrepo__git_run(root, init, -1, -1, errmsg);

	for (size_t i = 0; !r && i < sizeof(settings) / sizeof(settings[0]); i++) {
		const char *argv[] = { "git", "--git-dir", gitdir, "config", settings[i][0], settings[i][1], NULL };
		r = gitrepo__git_run(root, argv, -1, -1, errmsg);
	}
	return r;
}

/* Write the stream for the snapshots not built yet, then point every ref at its snapshot's commit. */
static int fast_import(struct mirror_data *d, struct catalog *cat, const struct catalog_repo *repo, const char *root,
		       const char *gitdir, const struct refs_ctx *rc, const char *have, char **errmsg)
{
	const char *argv[] = { "git", "--git-dir", gitdir, "fast-import", "--quiet", "--force", "--done", NULL };
	struct stream s = { .d = d, .marks = json_object(), .next_mark = 1 };
	int pipefd[2], err = gitrepo__tmpfile_in(root), r = 0, st;
	json_t *done = json_object();
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC)) {
		*errmsg = xasprintf("pipe: %s", strerror(errno));
		json_decref(s.marks);
		json_decref(done);
		if (err >= 0)
			close(err);
		return HM_ERR_GIT;
	}
	pid = gitrepo__git_start(argv, NULL, pipefd[0], -1, err);
	close(pipefd[0]);
	s.fd = pipefd[1];
	if (pid < 0) {
		*errmsg = xasprintf("cannot run git fast-import: %s", strerror((int)-pid));
		r = HM_ERR_GIT;
	}
	for (size_t i = 0; !r && i < rc->n; i++) {
		char line[80];
		snprintf(line, sizeof(line), "refs/hubmirror/snap/%s", rc->v[i].commit);
		if (has_line(have, line) || json_object_get(done, rc->v[i].commit))
			continue;
		if (repo->local) {
			r = stream_local_history(&s, cat, repo, &rc->v[i], have, done);
			continue;
		}
		json_object_set_new(done, rc->v[i].commit, json_true());
		r = stream_snapshot(&s, cat, repo, &rc->v[i]);
	}
	for (size_t i = 0; !r && i < rc->n; i++) {
		char *reset = xasprintf("reset %s\nfrom refs/hubmirror/snap/%s\n\n", rc->v[i].ref, rc->v[i].commit);
		r = write_str(s.fd, reset);
		free(reset);
	}
	if (!r)
		r = write_str(s.fd, "done\n");
	close(s.fd);
	if (pid > 0) {
		st = gitrepo__git_wait(pid);
		if (st && !r)
			r = HM_ERR_GIT;
		if (st && !*errmsg) {
			char *w = err >= 0 ? gitrepo__last_words(err) : xstrdup("no message");
			*errmsg = xasprintf("git fast-import: %s", w);
			free(w);
		}
	}
	if (r && !*errmsg)
		*errmsg = s.why ? xstrdup(s.why)
				: xasprintf("writing to git fast-import: %s", strerror(r < 0 ? -r : EIO));
	free(s.why);
	json_decref(s.marks);
	json_decref(done);
	if (err >= 0)
		close(err);
	return r ? (r < 0 ? HM_ERR_GIT : r) : 0;
}

/* Does the catalog still have repo's snapshot of commit (a snapshot ref worth keeping: a client that
 * has it fetches only what changed since)? */
static bool snapshot_kept(struct catalog *cat, const struct catalog_repo *repo, const char *commit)
{
	struct catalog_repo r2 = { 0 };
	struct catalog_snapshot snap;
	bool found = false;
	int r = catalog_resolve(cat, repo->hub, repo->type, repo->name, commit, &r2, &snap, &found);

	if (found)
		catalog_repo_release(&r2);
	return r != HM_ERR_NOT_FOUND;
}

/* Delete the refs clients would see that the catalog no longer has, and the build's refs of snapshots
 * the catalog dropped (their objects go at the next `hubmirror gc`). */
static int drop_stale(struct catalog *cat, const struct catalog_repo *repo, const char *root, const char *gitdir,
		      const struct refs_ctx *rc, const char *have, char **errmsg)
{
	const char *argv[] = { "git", "--git-dir", gitdir, "update-ref", "--stdin", NULL };
	struct buf b;
	int in, r = 0;

	buf_init(&b);
	for (const char *p = have; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char *ref = xstrndup(p, len);
		const char *commit = skip_prefix(ref, "refs/hubmirror/snap/");
		bool snap = commit != NULL;
		bool want = snap ? strlen(commit) != 40 || snapshot_kept(cat, repo, commit) : false;
		for (size_t i = 0; !want && i < rc->n; i++)
			want = !strcmp(rc->v[i].ref, ref);
		if (!want && len)
			buf_addf(&b, "delete %s\n", ref);
		free(ref);
		p = e ? e + 1 : NULL;
	}
	if (b.len) {
		in = gitrepo__tmpfile_in(root);
		if (in < 0 || fdio_write_all(in, b.data, b.len) || lseek(in, 0, SEEK_SET)) {
			*errmsg = xstrdup("cannot hand git update-ref its input");
			r = HM_ERR_GIT;
		} else {
			r = gitrepo__git_run(root, argv, in, -1, errmsg);
		}
		if (in >= 0)
			close(in);
	}
	buf_release(&b);
	return r;
}

/* The folder of gitdir made, then its lock file taken (held until *lock is closed): builds of one
 * repository one at a time. */
static int repo_lock(const char *gitdir, int *lock, char **errmsg)
{
	char *dir = xstrdup(gitdir), *lockpath = NULL;
	int fd = -1, r;

	*strrchr(dir, '/') = '\0';
	if ((r = path_mkdirs(dir, 0755))) {
		*errmsg = xasprintf("creating %s: %s", dir, strerror(-r));
		r = HM_ERR_GIT;
		goto out;
	}
	lockpath = xasprintf("%s.lock", gitdir);
	fd = open(lockpath, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX)) {
		*errmsg = xasprintf("locking %s: %s", lockpath, strerror(errno));
		r = HM_ERR_GIT;
		goto out;
	}
	*lock = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	free(lockpath);
	free(dir);
	return r;
}

/* The state file's text for the refs rc holds (malloc'd): what a repository built from them holds. */
static char *state_of(const struct refs_ctx *rc)
{
	struct buf b;

	buf_init(&b);
	buf_addf(&b, "%s\nHEAD %s\n", STATE_VERSION, rc->head ? rc->head : "");
	for (size_t i = 0; i < rc->n; i++)
		buf_addf(&b, "%s %s\n", rc->v[i].ref, rc->v[i].commit);
	return buf_detach(&b, NULL);
}

/* Is the repository built as want says: does the state file hold exactly want (one byte more read than
 * it, to tell)? */
static bool state_is(const char *state, const char *want)
{
	size_t wlen = strlen(want), n = 0;
	char *cur = xmalloc(wlen + 2);
	FILE *f = fopen(state, "r");
	bool same;

	if (f) {
		n = fread(cur, 1, wlen + 1, f);
		fclose(f);
	}
	same = f && n == wlen && !memcmp(cur, want, wlen);
	free(cur);
	return same;
}

/* A bare repository at gitdir, made when there is none yet. */
static int repo_ensure(const char *root, const char *gitdir, char **errmsg)
{
	char *headfile = xasprintf("%s/HEAD", gitdir);
	bool exists = access(headfile, F_OK) == 0;

	free(headfile);
	return exists ? 0 : init_repo(root, gitdir, errmsg);
}

/* HEAD pointed at the followed branch, else at the first branch; left alone when there is none. */
static int head_point(const char *root, const char *gitdir, const struct refs_ctx *rc, char **errmsg)
{
	const char *head = rc->head;

	for (size_t i = 0; !head && i < rc->n; i++)
		if (skip_prefix(rc->v[i].ref, "refs/heads/"))
			head = rc->v[i].ref;
	if (head) {
		const char *argv[] = { "git", "--git-dir", gitdir, "symbolic-ref", "HEAD", head, NULL };
		return gitrepo__git_run(root, argv, -1, -1, errmsg);
	}
	return 0;
}

/* The state file written as want through a rename: a crash before it only means building again. */
static int state_write(const char *state, const char *want, char **errmsg)
{
	char *tmp = xasprintf("%s.tmp", state);
	FILE *f = fopen(tmp, "w");
	int r = 0;
	bool written = f && fputs(want, f) >= 0;

	/* closed whatever the write did (a failed fputs would leak it), the first error said */
	if (f && fclose(f))
		written = false;
	if (!written) {
		*errmsg = xasprintf("writing %s: %s", tmp, strerror(errno));
		r = HM_ERR_GIT;
	} else if (rename(tmp, state)) {
		*errmsg = xasprintf("renaming %s: %s", tmp, strerror(errno));
		r = HM_ERR_GIT;
	}
	free(tmp);
	return r;
}

/* Frees the refs collected in rc. */
static void refs_release(struct refs_ctx *rc)
{
	for (size_t i = 0; i < rc->n; i++)
		free(rc->v[i].ref);
	free(rc->v);
	free(rc->head);
}

int mirror_git_prepare(struct mirror_data *d, struct catalog *cat, const struct catalog_repo *repo, char **rel,
		       char **errmsg)
{
	return mirror_git_prepare_locked(d, cat, repo, rel, NULL, errmsg);
}

int mirror_git_prepare_locked(struct mirror_data *d, struct catalog *cat, const struct catalog_repo *repo, char **rel,
			      int *keep_lock, char **errmsg)
{
	struct refs_ctx rc = { .cat = cat, .repo = repo };
	char *root = mirror_git_root(d), *gitdir = NULL, *state = NULL, *want = NULL, *have = NULL;
	char *name = xasprintf("%s/%s/%s.git", repo->hub, repo->type, repo->name);
	int lock = -1, r;

	*errmsg = NULL;
	gitdir = xasprintf("%s/%s", root, name);
	if ((r = repo_lock(gitdir, &lock, errmsg)))
		goto out;
	if ((r = catalog_refs_each(cat, repo->id, ref_cb, &rc))) {
		*errmsg = xstrdup("catalog: cannot list the refs");
		goto out;
	}
	if (!rc.n) {
		r = HM_ERR_NOT_FOUND;
		*errmsg = xstrdup("no complete snapshot yet");
		goto out;
	}
	want = state_of(&rc);
	state = xasprintf("%s/" STATE_FILE, gitdir);
	if (state_is(state, want))
		goto out;
	if ((r = repo_ensure(root, gitdir, errmsg))) {
		/* a git init that failed (a full disk) leaves no folder for the next one or gc to trip on */
		remove_tree(gitdir);
		goto out;
	}
	if (!(have = list_refs(root, gitdir, errmsg))) {
		r = HM_ERR_GIT;
		goto out;
	}
	if ((r = fast_import(d, cat, repo, root, gitdir, &rc, have, errmsg)))
		goto out;
	if ((r = drop_stale(cat, repo, root, gitdir, &rc, have, errmsg)))
		goto out;
	if ((r = head_point(root, gitdir, &rc, errmsg)))
		goto out;
	/* the state last: until it is written, the next request builds again */
	r = state_write(state, want, errmsg);
out:
	r = gitrepo__full_disk(root, r, errmsg);
	if (!r && keep_lock) {
		*keep_lock = lock;
		lock = -1;
	}
	if (lock >= 0)
		close(lock);
	refs_release(&rc);
	free(have);
	free(want);
	free(state);
	free(gitdir);
	free(root);
	if (r)
		free(name);
	else
		*rel = name; /* written only on success */
	return r;
}
