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

/* A commit object as a git client pushed it (docs/uploads.md), read by gitobj_commit_parse. */
struct gitobj_commit {
	char tree[41];
	char parent[41];       /* "" for a root commit */
	char *author_line;     /* "NAME <EMAIL> TIME TZ", as the object has it */
	char *committer_line;
	char *author;          /* "NAME <EMAIL>" of the author line */
	int64_t at;            /* the author's time */
	char *message;         /* everything after the blank line */
};

/*
 * Read commit object raw (len bytes). Only what git fast-import writes back byte for byte is taken
 * (the mirror rebuilds its git repositories from the catalog with it): "tree", at most one "parent",
 * "author", "committer", a blank line, the message; no merge, no signature or other header, no NUL, an
 * ident "NAME <EMAIL> SECONDS +HHMM" with a name. Returns 0 (c filled: gitobj_commit_release), or
 * -EINVAL with *why saying what is refused.
 */
int gitobj_commit_parse(const char *raw, size_t len, struct gitobj_commit *c, const char **why);
void gitobj_commit_release(struct gitobj_commit *c);

#endif
