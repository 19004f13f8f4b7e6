/*
 * gitobj.h - git object ids computed here, without git: the trees and commits of the mirror's own
 * (local) repositories, so that the commit id the Hub API answers after an upload is the id `git clone`
 * shows for the same commit (docs/uploads.md).
 *
 * Every file is a regular, non-executable blob (mode 100644), as the mirror's git side writes them
 * (mirror/gitrepo.c); a large file is its Git LFS pointer (gitobj_lfs_pointer).
 */
#ifndef HM_MIRROR_GITOBJ_H
#define HM_MIRROR_GITOBJ_H

#include <stddef.h>
#include <stdint.h>

/* The id of a git object of this type ("blob", "tree", "commit") and bytes: sha1("TYPE LEN\0" data).
 * out: 41 bytes, lowercase hex. */
void gitobj_id(const char *type, const void *data, size_t len, char out[41]);

/* The Git LFS pointer of content sha256 (64 lowercase hex) of size bytes, into buf (cap >= 160).
 * Returns its length. */
size_t gitobj_lfs_pointer(const char *sha256, int64_t size, char *buf, size_t cap);

/* One file of a tree: its path (segments split by '/', none empty, "." or "..") and its blob id. */
struct gitobj_file {
	const char *path;
	const char *blob;   /* 40 lowercase hex */
};

/* The id of the root tree holding files (n may be 0: the empty tree). files is sorted in place. Returns
 * 0, or -EINVAL for a bad path, two files of one path, or a path that is both a file and a folder. */
int gitobj_tree_id(struct gitobj_file *files, size_t n, char out[41]);

/* A commit object as git writes it: tree, parent (NULL for a root commit), author and committer (both
 * "NAME <EMAIL>", at unix time when, +0000), then message (which should end with a newline). Returns
 * the malloc'd bytes and their length in *len. */
char *gitobj_commit_text(const char *tree, const char *parent, const char *who, int64_t when, const char *message,
			 size_t *len);

#endif
