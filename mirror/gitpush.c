/*
 * gitpush.c - a git push checked and recorded (gitpush.h; docs/uploads.md, "git push").
 *
 * Everything is read from receive-pack's quarantine with git itself: the types of the pushed ref
 * values (cat-file --batch-check), the commits the repository lacks (rev-list NEW --not --all, parents
 * first), each commit's object and tree (cat-file --batch, ls-tree -r), the sizes of the blobs the push
 * brings (cat-file --batch-check in the quarantine alone: a pack of kilobytes may inflate to gigabytes,
 * so nothing is read before they are known to fit), then every blob those trees name, once, through a
 * pipe. A tree is rebuilt from its files (gitobj.h) and must be the tree the commit names, and
 * the commit must parse as what git fast-import writes back (gitobj_commit_parse): so the repository
 * the mirror rebuilds from its catalog holds the very commit ids the pusher has.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/bug.h"
#include "base/err.h"
#include "base/fdio.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/size.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "gitobj.h"
#include "gitpush.h"
#include "gitrepo-int.h"
#include "store/store.h"
#include "upload.h"

#define SMALL_MAX (10LL << 20)  /* a file outside Git LFS: under 10 MiB, as on the Hub */
#define POINTER_MAX 1024        /* a Git LFS pointer is shorter */
#define ZERO_ID "0000000000000000000000000000000000000000"
#define PUSH_COMMITS_MAX 10000  /* new commits in one push */
#define PUSH_ENTRIES_MAX 1000000 /* files the new commits' trees list, all together (each commit lists all) */
#define PUSH_NEW_MAX 100000     /* files new to the repository in one push: a commit's most operations */

struct update {
	char old[41], new_[41];
	char *ref;                     /* refs/heads/NAME or refs/tags/NAME */
};

struct pblob {
	char oid[41];
	char sha256[65];
	int64_t size;
	bool lfs;
};

struct pcommit {
	char id[41];
	char *raw;
	struct gitobj_commit pc;
	char **paths;                  /* the tree's files, and the blob each is (an index into blobs) */
	size_t *blob;
	size_t n, cap;
};

struct push {
	size_t entries;                /* of every new commit's tree, so far */
	struct mirror_data *d;
	const struct catalog_repo *repo;
	const struct mirror_git_push *p;
	struct update *u;
	size_t nu;
	struct pcommit *c;
	size_t nc, ccap;
	struct pblob *b;
	size_t nb, bcap;
	json_t *bidx;                  /* blob oid -> its index */
	struct mirror_upload_batch *batch; /* its contents, held from gc until the push is recorded */
	size_t checked;                /* blobs [0, checked) are held and their LFS objects found */
	char *why;
};

/* Room for one more of the n elements of *cap at p: the arrays grow by doubling, so that 100,000 files
 * cost a few copies, not one per file (a realloc that moves, as ASan's always does, made it
 * quadratic). */
static void *grow(void *p, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 16;
	return xreallocarray(p, *cap, size);
}

static int fail(struct push *s, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct push *s, int e, const char *fmt, ...)
{
	va_list ap;

	if (!s->why) {
		va_start(ap, fmt);
		s->why = xvasprintf(fmt, ap);
		va_end(ap);
	}
	return e;
}

/* Run git with argv (after "git --git-dir GITDIR") in the quarantine's environment, input from in (-1:
 * none); its output in *out (a temporary file, read from its start). */
static int run_git(struct push *s, const char *const *args, int in, FILE **out)
{
	size_t k = 0, n = 3;
	const char **argv;
	int fd = gitrepo__tmpfile_in(s->p->gitdir), err = gitrepo__tmpfile_in(s->p->gitdir), st = -1;
	pid_t pid = -1;

	while (args[k])
		k++;
	argv = xcalloc(k + 4, sizeof(*argv));
	argv[0] = "git";
	argv[1] = "--git-dir";
	argv[2] = s->p->gitdir;
	for (size_t i = 0; i < k; i++)
		argv[n++] = args[i];
	if (fd >= 0 && err >= 0 && (in < 0 || lseek(in, 0, SEEK_SET) == 0))
		pid = gitrepo__git_start(argv, s->p->git_env, in, fd, err);
	if (pid > 0)
		st = gitrepo__git_wait(pid);
	if (st != 0) {
		char *w = err >= 0 ? gitrepo__last_words(err) : xstrdup("no temporary file");
		fail(s, HM_ERR_GIT, "git %s: %s", args[0], w);
		free(w);
	} else if (lseek(fd, 0, SEEK_SET) || !(*out = fdopen(fd, "r"))) {
		st = fail(s, HM_ERR_GIT, "git %s's output: %s", args[0], strerror(errno));
	} else {
		fd = -1;
	}
	if (fd >= 0)
		close(fd);
	if (err >= 0)
		close(err);
	free(argv);
	return st ? HM_ERR_GIT : 0;
}

/* git (argv after "git --git-dir GITDIR") with its output on a pipe, read as it comes: what it writes
 * (every blob of a push, gigabytes of them) is never kept on disk. env: the quarantine's, or another. */
struct gitpipe {
	pid_t pid;
	int err;
	FILE *out;
};

static int pipe_open(struct push *s, const char *const *args, const char *const *env, int in, struct gitpipe *g)
{
	const char *argv[8] = { "git", "--git-dir", s->p->gitdir };
	int fds[2] = { -1, -1 };
	size_t n = 3;

	for (size_t i = 0; args[i] && n < 7; i++)
		argv[n++] = args[i];
	g->err = gitrepo__tmpfile_in(s->p->gitdir);
	g->out = NULL;
	g->pid = -1;
	if (g->err < 0 || pipe2(fds, O_CLOEXEC) || lseek(in, 0, SEEK_SET)) {
		if (fds[0] >= 0) {
			close(fds[0]);
			close(fds[1]);
		}
		return fail(s, HM_ERR_GIT, "git %s: %s", args[0], strerror(errno));
	}
	g->pid = gitrepo__git_start_bounded(argv, env, in, fds[1], g->err);
	close(fds[1]);
	if (g->pid < 0 || !(g->out = fdopen(fds[0], "r"))) {
		close(fds[0]);
		return fail(s, HM_ERR_GIT, "cannot run git %s: %s", args[0],
			    strerror(g->pid < 0 ? (int)-g->pid : errno));
	}
	return 0;
}

/* The end of pipe_open's git: r, what reading it came to, or git's own failure. */
static int pipe_close(struct push *s, const char *what, struct gitpipe *g, int r)
{
	int st = -1;

	if (g->out)
		fclose(g->out); /* a git stopped early dies of its broken pipe: r says why */
	if (g->pid > 0)
		st = gitrepo__git_wait(g->pid);
	if (!r && st) {
		char *w = g->err >= 0 ? gitrepo__last_words(g->err) : xstrdup("no temporary file");
		r = fail(s, HM_ERR_GIT, "git %s: %s", what, w);
		free(w);
	}
	if (g->err >= 0)
		close(g->err);
	return r;
}

/* A temporary file holding text, for git's input; -1 on failure. */
static int input_of(struct push *s, const char *text)
{
	int fd = gitrepo__tmpfile_in(s->p->gitdir);

	if (fd >= 0 && fdio_write_all(fd, text, strlen(text))) {
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		fail(s, HM_ERR_GIT, "a temporary file in %s: %s", s->p->gitdir, strerror(errno));
	return fd;
}

/* run_git with text (a buffer of ids, one per line: released here) as git's input. */
static int run_git_on(struct push *s, const char *const *args, struct buf *text, FILE **out)
{
	int in = input_of(s, text->data ? text->data : ""), r;

	buf_release(text);
	if (in < 0)
		return HM_ERR_GIT;
	r = run_git(s, args, in, out);
	close(in);
	return r;
}

/* The hook's input, one "OLD NEW REF" line per ref; only branches and tags, named as the API names them. */
static int read_updates(struct push *s)
{
	char *text = xstrdup(s->p->updates), *save = NULL;

	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		struct update u = { 0 };
		char ref[512];
		const char *name;
		if (strlen(l) > 600 || sscanf(l, "%40s %40s %511s", u.old, u.new_, ref) != 3 ||
		    !hex_is_lower(u.old, 40) || !hex_is_lower(u.new_, 40))
			continue;
		name = skip_prefix(ref, "refs/heads/");
		if (!name)
			name = skip_prefix(ref, "refs/tags/");
		if (!name || !mirror_upload_ref_name_ok(name)) {
			free(text);
			return fail(s, -EINVAL,
				    "%s: this mirror takes branches (refs/heads/) and tags (refs/tags/) only", ref);
		}
		if (!strcmp(u.new_, ZERO_ID) && skip_prefix(ref, "refs/heads/") && !strcmp(name, s->repo->follow_rev)) {
			free(text);
			return fail(s, -EINVAL, "%s: the default branch is not deleted", ref);
		}
		u.ref = xstrdup(ref);
		s->u = xreallocarray(s->u, s->nu + 1, sizeof(*s->u));
		s->u[s->nu++] = u;
	}
	free(text);
	return s->nu ? 0 : fail(s, -EINVAL, "no ref to update");
}

/* Each new value is a commit (an annotated tag is not kept: git tag NAME, without -a). */
static int check_types(struct push *s)
{
	struct buf in_text = { 0 };
	const char *args[] = { "cat-file", "--batch-check", NULL };
	char line[256];
	FILE *out = NULL;
	int r;

	for (size_t i = 0; i < s->nu; i++)
		if (strcmp(s->u[i].new_, ZERO_ID))
			buf_addf(&in_text, "%s\n", s->u[i].new_);
	if (!in_text.len)
		return 0;
	r = run_git_on(s, args, &in_text, &out);
	while (!r && fgets(line, sizeof(line), out))
		if (!strstr(line, " commit "))
			r = fail(s, -EINVAL, "%.40s is not a commit: this mirror keeps branches and lightweight tags "
				 "(git tag NAME, without -a or -m)", line);
	if (out)
		fclose(out);
	return r;
}

/* The commits the repository lacks, parents first. */
static int new_commits(struct push *s)
{
	const char **args = xcalloc(s->nu + 8, sizeof(*args));
	char line[128];
	size_t n = 0;
	FILE *out = NULL;
	int r;

	args[n++] = "rev-list";
	args[n++] = "--reverse";
	args[n++] = "--topo-order";
	for (size_t i = 0; i < s->nu; i++)
		if (strcmp(s->u[i].new_, ZERO_ID))
			args[n++] = s->u[i].new_;
	if (n == 3) {
		free(args);
		return 0; /* deletions only */
	}
	args[n++] = "--not";
	args[n++] = "--all";
	r = run_git(s, args, -1, &out);
	free(args);
	while (!r && fgets(line, sizeof(line), out)) {
		line[strcspn(line, "\n")] = '\0';
		if (strlen(line) != 40 || !hex_is_lower(line, 40))
			continue;
		if (s->nc >= PUSH_COMMITS_MAX) {
			r = fail(s, -EINVAL, "more than %d new commits in one push", PUSH_COMMITS_MAX);
			break;
		}
		s->c = grow(s->c, s->nc, &s->ccap, sizeof(*s->c));
		memset(&s->c[s->nc], 0, sizeof(s->c[s->nc]));
		memcpy(s->c[s->nc++].id, line, 41);
	}
	if (out)
		fclose(out);
	return r;
}

/* One object of cat-file --batch's output: "OID TYPE SIZE\n" then SIZE bytes and "\n". *data malloc'd. */
static int batch_next(struct push *s, FILE *out, char oid[41], char type[16], char **data, size_t *len)
{
	char head[160];
	long long size;

	if (!fgets(head, sizeof(head), out) || sscanf(head, "%40s %15s %lld", oid, type, &size) != 3 || size < 0)
		return fail(s, HM_ERR_GIT, "git cat-file answered '%.60s'", head);
	if (size >= SMALL_MAX) {
		/* refused by the caller, which reads no further: not read */
		*data = NULL;
		*len = (size_t)size;
		return 0;
	}
	*data = xmalloc((size_t)size + 1);
	if (fread(*data, 1, (size_t)size, out) != (size_t)size) {
		free(*data);
		*data = NULL;
		return fail(s, HM_ERR_GIT, "git cat-file's output ended early");
	}
	(*data)[size] = '\0';
	*len = (size_t)size;
	return fgetc(out) == '\n' ? 0 : fail(s, HM_ERR_GIT, "git cat-file's output is not in step");
}

/* Each new commit's object, parsed; its parent the repository's or an earlier one of the push. */
static int read_commits(struct push *s)
{
	const char *args[] = { "cat-file", "--batch", NULL };
	struct buf in_text = { 0 };
	struct gitpipe g;
	int r, in;

	if (!s->nc)
		return 0;
	for (size_t i = 0; i < s->nc; i++)
		buf_addf(&in_text, "%s\n", s->c[i].id);
	in = input_of(s, in_text.data);
	buf_release(&in_text);
	r = in < 0 ? HM_ERR_GIT : pipe_open(s, args, s->p->git_env, in, &g);
	for (size_t i = 0; i < s->nc && !r; i++) {
		struct pcommit *c = &s->c[i];
		char oid[41], type[16];
		const char *why;
		size_t len;
		if ((r = batch_next(s, g.out, oid, type, &c->raw, &len)))
			break;
		if (!c->raw)
			r = fail(s, -EINVAL, "commit %s is 10 MiB or more", c->id);
		else if (strcmp(oid, c->id) || strcmp(type, "commit"))
			r = fail(s, HM_ERR_GIT, "git cat-file answered %s for commit %s", oid, c->id);
		else if (gitobj_commit_parse(c->raw, len, &c->pc, &why))
			r = fail(s, -EINVAL, "commit %s: %s", c->id, why);
	}
	if (in >= 0) {
		r = pipe_close(s, "cat-file --batch", &g, r);
		close(in);
	}
	for (size_t i = 0; i < s->nc && !r; i++) {
		const char *parent = s->c[i].pc.parent;
		struct catalog_commit known;
		bool earlier = false;
		for (size_t j = 0; j < i && !earlier; j++)
			earlier = !strcmp(s->c[j].id, parent);
		if (!*parent || earlier)
			continue;
		if (catalog_commit_get(s->d->catalog, s->repo->id, parent, &known))
			r = fail(s, -EINVAL, "commit %s: its parent %s is not a commit of this repository", s->c[i].id,
				 parent);
		else
			catalog_commit_release(&known);
	}
	return r;
}

/* The index of blob oid in s->b, added when new. */
static size_t blob_index(struct push *s, const char *oid)
{
	json_t *v = json_object_get(s->bidx, oid);

	if (v)
		return (size_t)json_integer_value(v);
	s->b = grow(s->b, s->nb, &s->bcap, sizeof(*s->b));
	memset(&s->b[s->nb], 0, sizeof(s->b[s->nb]));
	memcpy(s->b[s->nb].oid, oid, 41);
	json_object_set_new(s->bidx, oid, json_integer((json_int_t)s->nb));
	return s->nb++;
}

/* One entry of ls-tree -r -z -l: "MODE TYPE OID SIZE\tPATH". */
static int tree_entry(struct push *s, struct pcommit *c, const char *e)
{
	const char *tab = strchr(e, '\t');
	char mode[16], type[16], oid[48];

	if (!tab || sscanf(e, "%15s %15s %47s", mode, type, oid) != 3 || strlen(oid) != 40 || !hex_is_lower(oid, 40))
		return fail(s, HM_ERR_GIT, "git ls-tree answered '%.80s'", e);
	if (strcmp(type, "blob") || strcmp(mode, "100644"))
		return fail(s, -EINVAL, "'%s' in commit %s is %s: this mirror keeps regular, non-executable files only "
			    "(mode 100644; not a symlink, submodule or executable)", tab + 1, c->id,
			    !strcmp(mode, "100755") ? "executable" : !strcmp(mode, "120000") ? "a symlink"
			    : !strcmp(type, "commit") ? "a submodule" : "of another kind");
	if (path_check_str(tab + 1))
		return fail(s, -EINVAL, "'%s' in commit %s is not a path a repository may hold", tab + 1, c->id);
	if (++s->entries > PUSH_ENTRIES_MAX)
		return fail(s, -EINVAL,
			    "the new commits list more than %d files in all (each commit counts every file of "
			    "its tree): push fewer commits at once",
			    PUSH_ENTRIES_MAX);
	if (c->n == c->cap) {
		size_t cap = c->cap;
		c->paths = grow(c->paths, c->n, &cap, sizeof(*c->paths));
		c->blob = grow(c->blob, c->n, &c->cap, sizeof(*c->blob));
	}
	c->paths[c->n] = xstrdup(tab + 1);
	c->blob[c->n++] = blob_index(s, oid);
	return 0;
}

/* Each new commit's files (ls-tree -r, one run per commit). */
static int read_trees(struct push *s)
{
	int r = 0;

	for (size_t i = 0; i < s->nc && !r; i++) {
		const char *args[] = { "ls-tree", "-r", "-z", "-l", "--full-tree", s->c[i].id, NULL };
		FILE *out = NULL;
		char *e = NULL;
		size_t cap = 0;
		ssize_t n;
		if ((r = run_git(s, args, -1, &out)))
			break;
		while (!r && (n = getdelim(&e, &cap, '\0', out)) > 0)
			if (e[0])
				r = tree_entry(s, &s->c[i], e);
		free(e);
		fclose(out);
	}
	return r;
}

/* A path blob b is at in one of the new commits, for a message. */
static const char *path_of(const struct push *s, const struct pblob *b)
{
	for (size_t i = 0; i < s->nc; i++)
		for (size_t j = 0; j < s->c[i].n; j++)
			if (&s->b[s->c[i].blob[j]] == b)
				return s->c[i].paths[j];
	return b->oid;
}

/* A blob read: a Git LFS pointer (its object uploaded for this repository, or one it may name without:
 * mirror_git_push.may_name), or a small file, written to the store. */
static int take_blob(struct push *s, struct pblob *b, const char *data, size_t len)
{
	char sha[65], canon[200];
	long long size;

	if ((int64_t)len >= SMALL_MAX)
		return fail(s, -EINVAL, "'%s' is 10 MiB or more outside Git LFS: track it with git lfs track, as "
			    "the Hub asks", path_of(s, b));
	if (len < POINTER_MAX && !strncmp(data, "version https://git-lfs.github.com/spec/v1\n", 43)) {
		if (sscanf(data, "version https://git-lfs.github.com/spec/v1\noid sha256:%64s\nsize %lld", sha,
			   &size) != 2 ||
		    !hex_is_lower(sha, 64) || size < 0 || gitobj_lfs_pointer(sha, size, canon, sizeof(canon)) != len ||
		    memcmp(canon, data, len))
			return fail(s, -EINVAL, "'%s' is a Git LFS pointer this mirror cannot keep as it is",
				    path_of(s, b));
		memcpy(b->sha256, sha, 65);
		b->size = size;
		b->lfs = true;
		mirror_upload_batch_name(s->batch, sha); /* looked for once held: flush_blobs */
		return 0;
	}
	b->size = (int64_t)len;
	{
		char oid[41];
		mirror_upload_batch_small(s->batch, data, len, b->sha256, oid); /* written at the flush */
	}
	return 0;
}

/* Hold the blobs read since the last flush, write the small ones, and find the LFS objects. */
static int flush_blobs(struct push *s, size_t upto)
{
	int e = mirror_upload_batch_flush(s->batch);

	if (e)
		return fail(s, e, "the store cannot take the pushed files: %s", err_str(e));
	for (; s->checked < upto; s->checked++) {
		const struct pblob *b = &s->b[s->checked];
		if (b->lfs && (!store_reuse(s->d->store, b->sha256, b->size) ||
			       !s->p->may_name(s->p->may_name_ud, s->d->catalog, b->sha256, s->repo->id)))
			return fail(s, -EPERM,
				    "'%s': its Git LFS object %s (%lld bytes) was not uploaded to this "
				    "repository: push with git-lfs installed (git lfs install)",
				    path_of(s, b), b->sha256, (long long)b->size);
	}
	return 0;
}

/* The ids of blobs[0..nb), one per line, in a temporary file for git's input; -1 on failure. */
static int blob_list(struct push *s)
{
	struct buf text = { 0 };
	int in;

	for (size_t i = 0; i < s->nb; i++)
		buf_addf(&text, "%s\n", s->b[i].oid);
	in = input_of(s, text.data ? text.data : "");
	buf_release(&text);
	return in;
}

/* The quarantine alone (what the push brought, not what the repository had): the quarantine's
 * environment without its alternates. NULL-ended, malloc'd strings borrowed from p. */
static const char **quarantine_only(const struct push *s, bool *found)
{
	const char **env = xcalloc(4, sizeof(*env));
	size_t n = 0;

	*found = false;
	for (size_t i = 0; s->p->git_env && s->p->git_env[i] && n < 3; i++)
		if (!strncmp(s->p->git_env[i], "GIT_OBJECT_DIRECTORY=", 21) ||
		    !strncmp(s->p->git_env[i], "GIT_QUARANTINE_PATH=", 20)) {
			*found |= !strncmp(s->p->git_env[i], "GIT_OBJECT_DIRECTORY=", 21);
			env[n++] = s->p->git_env[i];
		}
	return env;
}

/* Before any blob is read: their sizes (cat-file --batch-check, which reads no object whole). A file
 * of 10 MiB or more outside Git LFS is refused here, and the files the push brings (those of its
 * quarantine) must fit: at most PUSH_NEW_MAX of them, within the namespace's quota and the room of
 * the store's disk (each at least a block), so that a pack of kilobytes that inflates to gigabytes is
 * refused before it costs the store a byte. */
static int check_sizes(struct push *s)
{
	const char *args[] = { "cat-file", "--batch-check", NULL };
	bool quarantine;
	const char **env = quarantine_only(s, &quarantine);
	int64_t bytes = 0, disk = 0, block = 4096, room, used = 0;
	size_t n = 0;
	struct gitpipe g;
	char line[160], a[32], b[32], c[32];
	int in = s->nb ? blob_list(s) : -1, r;

	if (!s->nb) {
		free(env);
		return 0;
	}
	r = in < 0 ? HM_ERR_GIT : pipe_open(s, args, quarantine ? env : (const char *const *)s->p->git_env, in, &g);
	for (size_t i = 0; i < s->nb && !r; i++) {
		char oid[48], type[16];
		long long size;
		int k;
		if (!fgets(line, sizeof(line), g.out) || (k = sscanf(line, "%47s %15s %lld", oid, type, &size)) < 2 ||
		    strcmp(oid, s->b[i].oid)) {
			r = fail(s, HM_ERR_GIT, "git cat-file --batch-check answered '%.60s'", line);
		} else if (k == 2) {
			if (strcmp(type, "missing"))
				r = fail(s, HM_ERR_GIT, "git cat-file --batch-check answered '%.60s'", line);
			/* missing from the quarantine: the repository had it */
		} else if (strcmp(type, "blob")) {
			r = fail(s, HM_ERR_GIT, "%s is a %s, not a file", oid, type);
		} else if (size >= SMALL_MAX) {
			r = fail(s, -EINVAL,
				 "'%s' is 10 MiB or more outside Git LFS: track it with git lfs track, as the "
				 "Hub asks",
				 path_of(s, &s->b[i]));
		} else {
			n++;
			bytes += size;
			disk += size > block ? (size + block - 1) / block * block : block; /* a file takes a block */
		}
	}
	if (in >= 0) {
		r = pipe_close(s, "cat-file --batch-check", &g, r);
		close(in);
	}
	free(env);
	if (r)
		return r;
	if (n > PUSH_NEW_MAX)
		return fail(s, -EINVAL, "the push brings %zu new files: at most %d in one push (push in parts)", n,
			    PUSH_NEW_MAX);
	room = mirror_data_room(s->d, MIRROR_DATA_SPILL, &block);
	size_human(bytes, a, sizeof(a));
	if (room >= 0 && disk > room) {
		size_human(room, b, sizeof(b));
		return fail(s, -ENOSPC, "the mirror's disk has no room for this push's %zu new files (%s; %s free for "
			    "uploads)", n, a, b);
	}
	if (s->p->quota >= 0 && bytes > 0) {
		char *ns = xstrndup(s->repo->name, strcspn(s->repo->name, "/"));
		if (!catalog_namespace_bytes(s->d->catalog, "hf", ns, &used) && used + bytes > s->p->quota) {
			size_human(used, b, sizeof(b));
			size_human(s->p->quota, c, sizeof(c));
			r = fail(s, HM_ERR_QUOTA,
				 "The storage quota of namespace %s is exceeded: it holds %s, this push "
				 "brings %s of files, and its quota is %s",
				 ns, b, a, c);
		}
		free(ns);
	}
	return r;
}

/* Every blob the new commits name, read once, as git writes it (a pipe: nothing kept on disk but
 * the files themselves). */
static int read_blobs(struct push *s)
{
	const char *args[] = { "cat-file", "--batch", NULL };
	struct gitpipe g;
	int in = s->nb ? blob_list(s) : -1, r;

	if (!s->nb)
		return 0;
	r = in < 0 ? HM_ERR_GIT : pipe_open(s, args, s->p->git_env, in, &g);
	for (size_t i = 0; i < s->nb && !r; i++) {
		char oid[41], type[16], *data = NULL;
		size_t len;
		if (!(r = batch_next(s, g.out, oid, type, &data, &len)))
			r = strcmp(oid, s->b[i].oid) ? fail(s, HM_ERR_GIT, "git cat-file is not in step at %s", oid)
						     : take_blob(s, &s->b[i], data, len);
		free(data);
		if (!r && mirror_upload_batch_full(s->batch))
			r = flush_blobs(s, i + 1);
	}
	if (!r)
		r = flush_blobs(s, s->nb);
	if (in >= 0) {
		r = pipe_close(s, "cat-file --batch", &g, r);
		close(in);
	}
	return r;
}

/* Does each commit's tree rebuild from its files (every one a blob of mode 100644)? */
static int check_trees(struct push *s)
{
	for (size_t i = 0; i < s->nc; i++) {
		struct pcommit *c = &s->c[i];
		struct gitobj_file *g = xcalloc(c->n + 1, sizeof(*g));
		char tree[41];
		int e;
		for (size_t j = 0; j < c->n; j++)
			g[j] = (struct gitobj_file){ c->paths[j], s->b[c->blob[j]].oid };
		e = gitobj_tree_id(g, c->n, tree);
		free(g);
		if (e || strcmp(tree, c->pc.tree))
			return fail(s, -EINVAL,
				    "commit %s: its tree is not one this mirror can rebuild (a path that is a "
				    "file and a folder, or an entry out of git's order)",
				    c->id);
	}
	return 0;
}

/* Do the contents the push adds fit in the namespace's quota? (Under the upload lock.) */
static int check_quota(struct push *s)
{
	const char **sha = xcalloc(s->nb + 1, sizeof(*sha));
	int64_t *size = xcalloc(s->nb + 1, sizeof(*size));
	char *why = NULL, *ns = xstrndup(s->repo->name, strcspn(s->repo->name, "/"));
	int r = 0;

	for (size_t i = 0; i < s->nb; i++) {
		sha[i] = s->b[i].sha256;
		size[i] = s->b[i].size;
	}
	if (!mirror_upload_quota_room(s->d->catalog, ns, s->p->quota, sha, size, s->nb, &why))
		r = fail(s, HM_ERR_QUOTA, "%s", why);
	free(why);
	free(ns);
	free(sha);
	free(size);
	return r;
}

/* The commits and ref moves in one catalog transaction; the log's lines into *report. */
static int record(struct push *s, char **report)
{
	struct catalog_push_commit *cs = xcalloc(s->nc + 1, sizeof(*cs));
	struct catalog_push_ref *refs = xcalloc(s->nu + 1, sizeof(*refs));
	struct buf rep = { 0 };
	int e;

	for (size_t i = 0; i < s->nc; i++) {
		struct pcommit *c = &s->c[i];
		struct catalog_file *f = xcalloc(c->n + 1, sizeof(*f));
		for (size_t j = 0; j < c->n; j++) {
			const struct pblob *b = &s->b[c->blob[j]];
			f[j] = (struct catalog_file){ .path = c->paths[j], .size = b->size, .git_oid = b->oid,
						      .lfs_oid = b->lfs ? b->sha256 : NULL, .sha256 = b->sha256 };
		}
		cs[i] = (struct catalog_push_commit){{c->id, *c->pc.parent ? c->pc.parent : NULL, c->pc.tree,
						      c->pc.author, c->pc.at, c->pc.message, c->raw},
						     f,
						     c->n};
	}
	for (size_t i = 0; i < s->nu; i++) {
		const char *ref = s->u[i].ref, *name = skip_prefix(ref, "refs/heads/");
		refs[i] = (struct catalog_push_ref){ name ? name : skip_prefix(ref, "refs/tags/"), !name,
						      strcmp(s->u[i].old, ZERO_ID) ? s->u[i].old : NULL,
						      strcmp(s->u[i].new_, ZERO_ID) ? s->u[i].new_ : NULL };
		buf_addf(&rep, "%s %s %s %zu\n", refs[i].name, s->u[i].old, s->u[i].new_, s->nc);
	}
	e = catalog_local_push(s->d->catalog, s->repo->id, cs, s->nc, refs, s->nu);
	for (size_t i = 0; i < s->nc; i++)
		free((void *)cs[i].files);
	free(cs);
	free(refs);
	if (e == HM_ERR_CONFLICT)
		e = fail(s, e, "a ref moved while this push was made: fetch, then push again");
	else if (e)
		e = fail(s, e, "the catalog cannot record the push: %s", err_str(e));
	if (!e)
		*report = buf_detach(&rep, NULL);
	buf_release(&rep);
	return e;
}

static void push_release(struct push *s)
{
	for (size_t i = 0; i < s->nu; i++)
		free(s->u[i].ref);
	free(s->u);
	for (size_t i = 0; i < s->nc; i++) {
		free(s->c[i].raw);
		gitobj_commit_release(&s->c[i].pc);
		for (size_t j = 0; j < s->c[i].n; j++)
			free(s->c[i].paths[j]);
		free(s->c[i].paths);
		free(s->c[i].blob);
	}
	free(s->c);
	free(s->b);
	json_decref(s->bidx);
}

int mirror_git_receive(struct mirror_data *d, const struct catalog_repo *repo, const struct mirror_git_push *p,
		       char **report, char **errmsg)
{
	struct push s = { .d = d, .repo = repo, .p = p, .bidx = json_object() };
	int lock = -1, r;

	BUG_ON(!p->may_name);
	*report = NULL;
	*errmsg = NULL;
	s.batch = mirror_upload_batch_new(d, d->catalog, "push");
	r = read_updates(&s);
	if (!r)
		r = check_types(&s);
	if (!r)
		r = new_commits(&s);
	if (!r)
		r = read_commits(&s);
	if (!r)
		r = read_trees(&s);
	if (!r)
		r = check_sizes(&s);
	if (!r)
		r = read_blobs(&s);
	if (!r)
		r = check_trees(&s);
	if (!r && (lock = mirror_upload_lock(d)) < 0)
		r = fail(&s, lock, "the upload lock: %s", err_str(lock));
	if (!r)
		r = check_quota(&s);
	if (!r)
		r = record(&s, report);
	if (lock >= 0)
		close(lock);
	mirror_upload_batch_end(&s.batch); /* recorded (its commits keep the contents now), or not */
	if (r)
		*errmsg = s.why ? s.why : xstrdup(err_str(r));
	else
		free(s.why);
	push_release(&s);
	return r;
}
