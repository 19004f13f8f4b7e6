/*
 * path.h - paths that come from the network, kept in their place.
 *
 * Upstream file names, HTTP request paths and archive entries are untrusted. path_check() is the one
 * guard every such name passes before it touches the filesystem: a name that passes is a relative
 * path that stays below whatever directory it is joined to.
 */
#ifndef HM_PATH_H
#define HM_PATH_H

#include <stddef.h>

#define PATH_MAX_LEN 4096       /* whole relative path, in bytes */
#define PATH_MAX_COMPONENT 240  /* one component, in bytes: BitTorrent clients (libtorrent) cut longer
                                 * ones, so a longer name could not travel the swarm unchanged */
#define PATH_MAX_DEPTH 64       /* components */

/*
 * Check the len bytes at p as an untrusted relative path. It must be non-empty, at most PATH_MAX_LEN
 * bytes, hold no NUL byte, not start with '/', and be made of '/'-separated components that are
 * non-empty (no "a//b", no trailing '/'), not "." or "..", at most PATH_MAX_COMPONENT bytes, and free
 * of ASCII control characters and backslashes (which other systems read as separators); at most
 * PATH_MAX_DEPTH components; valid UTF-8 without Unicode direction controls (U+200E, U+200F,
 * U+202A-U+202E, U+2066-U+2069: a name that displays as another, and that BitTorrent clients strip);
 * and no ".git" component in any letter case (git would take it for its own metadata).
 * Returns 0 or HM_ERR_PATH_UNSAFE.
 */
int path_check(const char *p, size_t len);

/* path_check() on a NUL-terminated string. */
int path_check_str(const char *p);

/*
 * Join base and an untrusted relative path rel (checked with path_check_str). On success *out is a
 * fresh string owned by the caller; on error *out is untouched. Returns 0 or HM_ERR_PATH_UNSAFE.
 */
int path_join(const char *base, const char *rel, char **out);

/* Create dir and its missing parents with mode (like mkdir -p). Returns 0 or -errno. */
int path_mkdirs(const char *dir, unsigned mode);
/* The same, and each folder it makes gets exactly mode, whatever the umask (folders others must pass
 * through, such as a mount point's parents: they hold no content). Folders already there keep theirs. */
int path_mkdirs_exact(const char *dir, unsigned mode);

/* Who owns path, or the nearest folder above it this process can see (for "it belongs to root"
 * when permission is what failed): the user's name, or "uid N". Malloc'd; "another user" when none
 * can be seen. */
char *path_owner_name(const char *path);
/* path_mkdirs, then take from dir itself every permission bit mode lacks (an existing directory made
 * by an older version, or under a looser umask): a data directory or cache others may not enter.
 * Returns 0 or -errno. */
int path_mkdirs_private(const char *dir, unsigned mode);

/* Write len bytes to path through a temporary name beside it (PATH.tmpPID, mode 0600 then mode),
 * fsynced and renamed over path, the folder fsynced: a reader, or a crash, sees the old file or the
 * new one whole.
 * Returns 0 or -errno (the temporary file removed). */
int path_write_atomic(const char *path, const void *data, size_t len, unsigned mode);
/* The same without either fsync, for a caller that must not wait for the disk (an fsync waits for
 * the journal, which on ext4 waits for every other file's data written before it: 0.3 s behind a
 * download's writes): a reader, or a crash of the process, sees the old file or the new one whole; a
 * crash of the machine may lose the new one until path_fsync(path) and path_fsync_parent(path). */
int path_write_replace(const char *path, const void *data, size_t len, unsigned mode);

/* fsync a file or a folder by path (a folder: the names in it, after a rename). Returns 0 or -errno. */
int path_fsync(const char *path);
/* Make a rename to path durable: fsync its folder (best effort: a folder that cannot be opened is
 * left). */
void path_fsync_parent(const char *path);

/* Read the whole file at path, at most max bytes, into *out (malloc'd, with a NUL after the *len
 * bytes; the caller frees). Returns 0, -EFBIG past max, or -errno; *out is set only on 0. */
int path_read_file(const char *path, size_t max, char **out, size_t *len);

#endif
