/*
 * gitpush.h - `git push` into a local repository (docs/uploads.md, "git push").
 *
 * git's own receive-pack takes the push (serve runs it through http-backend, mirror/gitrepo-backend.c)
 * into its quarantine; before any ref moves, its pre-receive hook runs `hubmirror git-hook`, which
 * calls mirror_git_receive: every new commit is read from the quarantine, checked (regular files only,
 * paths, Git LFS pointers whose objects were uploaded for the repository or that it may name without
 * (mirror_git_push.may_name), no file of 10 MiB or more outside LFS, the namespace's quota; sizes and
 * the disk's room asked of git before any file is read), its small files are written to the store,
 * and the commits and the ref moves are recorded in one catalog transaction. Only when that
 * transaction is made does the
 * hook let git move its refs: the catalog, from which the git repository is rebuilt, is the truth.
 */
#ifndef HM_MIRROR_GITPUSH_H
#define HM_MIRROR_GITPUSH_H

#include <stdbool.h>
#include <stdint.h>

struct catalog;
struct catalog_repo;
struct mirror_data;

struct mirror_git_push {
	const char *gitdir;            /* the repository receive-pack writes to */
	const char *const *git_env;    /* NULL-ended: the quarantine's GIT_OBJECT_DIRECTORY and company */
	const char *updates;           /* the hook's input: "OLD NEW REF\n" per ref */
	const char *who;               /* the pusher, for the log ("token@3") */
	int64_t quota;                 /* the namespace's quota in bytes, -1 for none */
	/* May the repo name content sha256 in a Git LFS pointer without its object being uploaded for
	 * it? serve's rule, which knows the tokens file (mirror_access_may_name: the hook loads the
	 * file serve names); ud is its. Required. */
	bool (*may_name)(void *ud, struct catalog *c, const char *sha256, int64_t repo_id);
	void *may_name_ud;
};

/*
 * Check and record push p into local repo repo of d. Returns 0 with *report (malloc'd: "REF OLD NEW
 * COMMITS\n" per ref moved, for serve's log), or an error with *errmsg (malloc'd) for the pusher:
 * -EINVAL (what the repository cannot hold, or a ref it does not take), -EPERM (an LFS object not
 * uploaded), HM_ERR_QUOTA, HM_ERR_CONFLICT (a ref moved meanwhile), or another error.
 */
int mirror_git_receive(struct mirror_data *d, const struct catalog_repo *repo, const struct mirror_git_push *p,
		       char **report, char **errmsg);

#endif
