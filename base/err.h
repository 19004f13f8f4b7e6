/*
 * err.h - error codes shared by every module.
 *
 * Functions return int: 0 on success, a negative errno value (-ENOENT, -EIO, ...) for system errors,
 * or one of the project codes below, which live in a reserved negative range so they never collide
 * with errno. err_str() turns either kind into text; it never returns NULL.
 */
#ifndef HM_ERR_H
#define HM_ERR_H

enum {
	HM_ERR_FIRST = -10000,
	HM_ERR_USAGE = HM_ERR_FIRST,  /* bad command line */
	HM_ERR_PATH_UNSAFE,           /* a path from the network would leave its place */
	HM_ERR_BAD_SPEC,              /* a repo SPEC such as hf:org/name is malformed */
	HM_ERR_HASH_MISMATCH,         /* content does not hash to what upstream promised */
	HM_ERR_SIZE_MISMATCH,         /* content is not the promised size */
	HM_ERR_JSON,                  /* malformed or unexpected JSON */
	HM_ERR_SQLITE,                /* the catalog database reported an error */
	HM_ERR_CURL,                  /* libcurl reported an error */
	HM_ERR_HTTP,                  /* an HTTP peer answered with an unexpected status */
	HM_ERR_TORRENT,               /* libtorrent reported an error */
	HM_ERR_NOT_FOUND,             /* no such repo, revision or file */
	HM_ERR_SCHEMA,                /* catalog schema is newer than this binary */
	HM_ERR_LOCKED,                /* another process holds the lock */
	HM_ERR_GATED,                 /* gated repo: no token, or the token is not approved */
	HM_ERR_AUTH,                  /* upstream refused our credentials (or the repo is private) */
	HM_ERR_DISABLED,              /* upstream disabled the repo */
	HM_ERR_UPSTREAM,              /* upstream answered something we cannot use */
	HM_ERR_TIMEOUT,               /* a query ran past its time budget and was abandoned */
	HM_ERR_QUOTA,                 /* the store quota leaves no room for it */
	HM_ERR_GIT,                   /* a git command (building or serving a git repository) failed */
	HM_ERR_EXISTS,                /* a repository of that name is there already */
	HM_ERR_CONFLICT,              /* a branch moved: its head is not the parent the commit was made on */
	HM_ERR_LOCAL,                 /* a repository of a local namespace: pushed here, never synced */
	HM_ERR_LAST                   /* keep last */
};

/* Describe code (0, -errno, or HM_ERR_*). Returns a static string, never NULL. */
const char *err_str(int code);

#endif
