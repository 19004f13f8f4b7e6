/*
 * upload.h - the mirror's own repositories (local namespaces; docs/uploads.md): made, committed to
 * and deleted by their users through the Hugging Face API's write side, stored like mirrored ones.
 *
 * A commit's files are in the store before it is made (an LFS object uploaded and verified, a small
 * file written from the commit's body); the commit itself is the catalog transaction that records its
 * tree and moves its branch, so a crash leaves the old revision or the new one, never half of one.
 * Commit ids are git's (mirror/gitobj.h): parents, author, time and message as git would write them.
 */
#ifndef HM_MIRROR_UPLOAD_H
#define HM_MIRROR_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct catalog;
struct catalog_repo;
struct mirror_data;

/* (A copy of a file the repo has is an ADD of its content: clients send copies of large files as
 * lfsFile lines naming the source's sha256, and re-send small ones whole.) */
enum mirror_upload_kind { MIRROR_UP_ADD, MIRROR_UP_DELETE, MIRROR_UP_DELETE_FOLDER };

/* One operation of a commit, applied in order to the parent's files. */
struct mirror_upload_op {
	enum mirror_upload_kind kind;
	char *path;            /* the file (a folder for DELETE_FOLDER, without its trailing '/') */
	char sha256[65];       /* ADD: the content, which the store holds */
	int64_t size;          /* ADD */
	char git_oid[41];      /* ADD of a regular file: its git blob id */
	bool lfs;              /* ADD: a large file, a Git LFS pointer in git */
};

struct mirror_upload_commit {
	const char *branch;    /* committed to */
	const char *parent;    /* the head the client built on (40 hex), or NULL: whatever it is now */
	bool new_branch;       /* the branch does not exist yet (a repository's first commit) */
	const char *summary;   /* the message's first line */
	const char *description; /* the rest, or NULL */
	const char *author;    /* "NAME <EMAIL>", also the committer */
	const struct mirror_upload_op *ops;
	size_t nops;
};

/*
 * Make a commit on repo (a local one) from uc and move its branch there. out: the commit id, 41 bytes.
 * Returns 0; HM_ERR_CONFLICT (uc->parent is not the branch's head: the Hub's 412); HM_ERR_NOT_FOUND
 * (no such branch, or a deletion names a file or folder that is not there); HM_ERR_PATH_UNSAFE or
 * -EINVAL (a path that may not be, or is a file and a folder at once); HM_ERR_SQLITE. On an error,
 * *errmsg (malloc'd, may be NULL) says which path or revision.
 */
int mirror_upload_commit(struct catalog *cat, const struct catalog_repo *repo, const struct mirror_upload_commit *uc,
			 char out[41], char **errmsg);
void mirror_upload_op_release(struct mirror_upload_op *op);

/*
 * Make local repo hub/type/name (private or not), with its first commit on main holding the usual
 * .gitattributes (the large-file patterns the Hub's repos start with; written to d's store), the two in
 * one catalog transaction (a local repo of that name without any commit, which an older version could
 * leave, is taken over: catalog_local_create). *repo_id (may be NULL): its catalog row. Returns 0,
 * HM_ERR_EXISTS (a repository of that name, mirrored or local), -ENOSPC (a full disk), or an error
 * (the repo is not left half made).
 */
int mirror_upload_create(struct mirror_data *d, struct catalog *cat, const char *hub, const char *type,
			 const char *name, bool private_, const char *author, int64_t *repo_id, char **errmsg);

/* Write n bytes to d's store as a regular file: *sha256 (65 bytes) and git_oid (41) set. Returns 0 or
 * an error (-ENOSPC...). The caller holds the content from gc first: mirror_upload_batch does. */
int mirror_upload_put_small(struct mirror_data *d, const void *data, size_t n, char sha256[65], char git_oid[41]);

/*
 * A writer's contents, held from gc from before they are written or looked for until the writer is
 * done (catalog_hold; mirror/maint.h): a commit's small files and the LFS objects it names, a push's.
 * Files and names are added as they are read; a flush holds all that came since the last one (one
 * transaction), then writes the small files the store lacks; only after a flush may the caller look
 * for a named content in the store. _end lets go of the holds: after the commit that names the
 * contents is recorded (its snapshot then keeps them), or failed. kind: "commit" or "push".
 */
struct mirror_upload_batch;
struct mirror_upload_batch *mirror_upload_batch_new(struct mirror_data *d, struct catalog *cat, const char *kind);
/* A small file: sha256 (65 bytes) and git_oid (41) now, its bytes (copied) written at the next flush. */
void mirror_upload_batch_small(struct mirror_upload_batch *b, const void *data, size_t n, char sha256[65],
			       char git_oid[41]);
/* A content named by its sha256 (an LFS object), held at the next flush. */
void mirror_upload_batch_name(struct mirror_upload_batch *b, const char *sha256);
/* Worth a flush now (many files, or many bytes, wait)? */
bool mirror_upload_batch_full(const struct mirror_upload_batch *b);
/* Hold what came since the last flush, then write the small files. Returns 0, HM_ERR_SQLITE, or the
 * store's error (-ENOSPC...). */
int mirror_upload_batch_flush(struct mirror_upload_batch *b);
/* Let go of b's holds and free it (accepts NULL). */
void mirror_upload_batch_end(struct mirror_upload_batch **b);

/* Does a file go through Git LFS (the Hub's preupload answer)? When gitattributes (the revision's
 * .gitattributes text, may be NULL) marks its path filter=lfs, when it is 10 MiB or more, or when its
 * sample (its first bytes) holds a NUL byte (binary). */
bool mirror_upload_wants_lfs(const char *gitattributes, const char *path, int64_t size, const void *sample,
			     size_t sample_len);

/* Is n a branch or tag name the write side takes (main, v1.0, feature/x; not refs/..., no "..", ".lock")? */
bool mirror_upload_ref_name_ok(const char *n);

/* Do contents sha[i] of size[i] (n of them) fit in namespace ns's quota (bytes; -1: none), counting only
 * those its local repos do not hold yet, each once? False with *msg (malloc'd, the Hub's words). */
bool mirror_upload_quota_room(struct catalog *cat, const char *ns, int64_t quota, const char *const *sha,
			      const int64_t *size, size_t n, char **msg);

/* The lock every commit into a local repo holds while it checks its quota and records itself (serve's
 * commit API and a git push's hook, which is another process): an flock on <data>/upload.lock. Returns
 * its fd (close it to unlock) or -errno. */
int mirror_upload_lock(struct mirror_data *d);

#endif
