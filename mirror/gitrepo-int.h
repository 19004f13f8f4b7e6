/*
 * gitrepo-int.h - what gitrepo.c (building the repositories) and gitrepo-backend.c (serving them) share:
 * running git. Nothing outside mirror/ includes it.
 */
#ifndef HM_MIRROR_GITREPO_INT_H
#define HM_MIRROR_GITREPO_INT_H

#include <stddef.h>
#include <sys/types.h>

/* in each repository: the refs it was built for (gitrepo.c) */
#define STATE_FILE "hubmirror-state"

/* An unlinked temporary file in dir, open for reading and writing; -1 with errno. */
int gitrepo__tmpfile_in(const char *dir);
/* Start git with argv, a clean environment plus extra_env, and in, out and err as its standard
 * files; its pid, or -errno. */
pid_t gitrepo__git_start(const char *const *argv, const char *const *extra_env, int in, int out, int err);
/* The same for git taking a push and all it runs (receive-pack, index-pack, the hook's own git runs),
 * under a soft limit of its data segment (RLIMIT_DATA: what malloc can take, file mappings aside), so
 * that a pack of a few kilobytes that inflates to gigabytes (a delta that copies its base a thousand
 * times) makes git fail ("Out of memory, malloc failed") instead of the machine swap. 1 GiB: git
 * holds one object of at most core.bigFileThreshold and its delta base cache (96 MiB). */
#define GITREPO_PUSH_DATA_KIB "1048576"
pid_t gitrepo__git_start_bounded(const char *const *argv, const char *const *extra_env, int in, int out, int err);
/* Wait for git to end; its exit status, or -1. */
int gitrepo__git_wait(pid_t pid);
/* The last line git wrote to err (an unlinked temporary file), for a message; malloc'd. */
char *gitrepo__last_words(int err);
/* Run git (argv) to its end, stderr into a temporary file in root: 0, or HM_ERR_GIT with *errmsg (may
 * be NULL) holding git's last words. */
int gitrepo__git_run(const char *root, const char *const *argv, int in, int out, char **errmsg);
/* A step that failed with r (and *errmsg) in root, said again when root's disk is full: git does not
 * tell (its writes fail silently, or its own words cannot be written either), so an HM_ERR_GIT with
 * less than GITREPO_FULL_BYTES left there is the disk's: -ENOSPC, *errmsg saying so first. Else r. */
#define GITREPO_FULL_BYTES (1 << 20)
int gitrepo__full_disk(const char *root, int r, char **errmsg);

#endif
