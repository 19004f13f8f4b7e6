/*
 * gitrepo.h - a mirrored repository as a read-only git repository (docs/git.md).
 *
 * Each tracked repository gets, lazily, a bare repository <data>/git/<hub>/<type>/<org>/<name>.git
 * that git's own http-backend serves: one commit per snapshot a ref points at (the snapshot's
 * regular files as blobs, its large files as Git LFS pointers), and the ref as a branch or tag.
 * Commits are the mirror's own but deterministic (fixed author and date, no parent), so the same
 * snapshot is the same commit on every mirror.
 */
#ifndef HM_MIRROR_GITREPO_H
#define HM_MIRROR_GITREPO_H

#include <stdbool.h>
#include <stddef.h>

struct catalog;
struct catalog_repo;
struct mirror_data;

/* <data>/git, malloc'd: GIT_PROJECT_ROOT for http-backend. */
char *mirror_git_root(const struct mirror_data *d);

/*
 * Build or bring up to date the bare repository of repo (one of the catalog's, read through cat, which
 * may be a worker's own connection; the store through d) and set *rel (malloc'd) to its path below
 * mirror_git_root: "hf/model/org/name.git". Blocking (runs git fast-import over the snapshots not
 * built yet; the regular files are read from the store): call it on a worker. Builds of one
 * repository are serialised by a lock file beside it; an up-to-date repository costs a file read.
 * Returns 0, HM_ERR_NOT_FOUND (no ref has a complete snapshot), -ENOSPC (a step failed on a full disk;
 * a git init that failed leaves no folder behind) or an error with *errmsg (malloc'd).
 */
int mirror_git_prepare(struct mirror_data *d, struct catalog *cat, const struct catalog_repo *repo, char **rel,
		       char **errmsg);

/* mirror_git_prepare, the repository's build lock kept (its fd in *keep_lock, the caller's to close) when
 * it returns 0: a push holds it while receive-pack runs, so no build moves the refs meanwhile. */
int mirror_git_prepare_locked(struct mirror_data *d, struct catalog *cat, const struct catalog_repo *repo, char **rel,
			      int *keep_lock, char **errmsg);

/* Make the next mirror_git_prepare of repository rel build its refs again from the catalog (after a
 * push, whatever git did to them; call it holding the build lock). */
void mirror_git_invalidate(const struct mirror_data *d, const char *rel);

/* One request of a git client to a repository, as the server read it (gitrepo-backend.c). */
struct mirror_git_request {
	const char *rel;               /* the repository, below mirror_git_root (mirror_git_prepare) */
	const char *method;            /* GET or POST */
	const char *path_after;        /* after the repository: "/info/refs" or "/git-upload-pack" */
	const char *query;             /* may be NULL */
	const char *content_type;      /* the request's headers; each may be NULL */
	const char *content_encoding;
	const char *git_protocol;
	const char *body;              /* len bytes; may be empty */
	size_t len;
	/* a push into a local repository (path_after "/git-receive-pack", or "/info/refs" asking for it):
	 * its body is in body_fd (a spooled file, read from its start), and push_env (NULL-ended) tells the
	 * hook the data directory, repository, pusher and quota (mirror/gitpush.h) */
	bool push;
	int body_fd;
	const char *const *push_env;
};

/* git http-backend's answer: its body is in fd (an unlinked temporary file, the caller's to close)
 * from offset for length bytes. */
struct mirror_git_answer {
	int fd;
	long long offset, length;
	int status;                    /* the HTTP status */
	char *ctype;                   /* its Content-Type, malloc'd */
};

/*
 * Run git http-backend for request q: upload-pack, and receive-pack for a push (q->push) with
 * `hubmirror git-hook` as its pre-receive hook. On success fills
 * *a. Blocking: on a worker. Returns 0 or an error with *errmsg (a->fd is -1 then); the client's
 * doing, before git runs: -EFBIG (the body inflates past 10 MiB), -EINVAL (an encoding not known, an
 * upload-pack request whose pkt-lines are malformed: mirror/gitpkt.h), -EPERM (it asks for what is
 * not served, a sparse:oid filter); -ETIMEDOUT (the run passed its time bound); -ENOSPC (git failed
 * on a full disk: *errmsg says so).
 */
int mirror_git_backend(const struct mirror_data *d, const struct mirror_git_request *q, struct mirror_git_answer *a,
		       char **errmsg);

/* The git side of `hubmirror gc`: the repositories of repos no longer tracked go; the others lose the
 * objects no ref reaches (git gc --prune=now). Problems are logged, never fatal. */
struct mirror_git_gc_report {
	long long removed;     /* repositories deleted */
	long long collected;   /* repositories git gc ran on */
};
int mirror_git_gc(struct mirror_data *d, struct mirror_git_gc_report *rep);

#endif
