/*
 * routes-hf-int.h - what the files of the Hugging Face API share (routes-hf.c: helpers, the request
 * context, repo info, refs, listings and the router; routes-hf-tree.c: a snapshot's files listed;
 * routes-hf-file.c: resolve and raw). Nothing outside mirror/serve/ includes it.
 */
#ifndef HM_MIRROR_SERVE_ROUTES_HF_INT_H
#define HM_MIRROR_SERVE_ROUTES_HF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "catalog/catalog.h"
#include "hub/http/httpd.h"
#include "routes-int.h"

#define TREE_PAGE 1000  /* entries in a page of a tree listing */

/* One request to the Hugging Face API: its repo, resolved on demand. */
struct mirror__hf_req {
	struct mirror_routes *rt;
	struct httpd_req *req;
	const char *type;       /* "model" | "dataset" */
	char *name;             /* org/name */
	struct catalog_repo repo;
	bool repo_loaded;
	struct catalog_snapshot snap;
};

/* ---- routes-hf.c ---- */

bool mirror__hf_query_bool(const struct httpd_req *req, const char *name);
/* The Git LFS pointer of an entry, into out (cap bytes); its length. */
size_t mirror__hf_lfs_pointer(const struct catalog_entry *e, char *out, size_t cap);
/* A file's and a folder's entry as the tree and paths-info list them. */
json_t *mirror__hf_file_json(const struct catalog_entry *e, const struct catalog_snapshot *snap, bool expand);
json_t *mirror__hf_dir_json(const char *path, const struct catalog_snapshot *snap);
/* Resolve h's repo at rev (NULL: its default) into h->snap, or answer (and return nonzero); lite
 * skips what only an info answer needs. */
int mirror__hf_resolve_how(struct mirror__hf_req *h, const char *rev, bool lite);
int mirror__hf_resolve(struct mirror__hf_req *h, const char *rev);

/* ---- routes-hf-tree.c ---- */

void mirror__hf_tree(struct mirror__hf_req *h, const char *rev, const char *rev_raw, const char *subpath);
void mirror__hf_paths_info(struct mirror__hf_req *h, const char *rev);
void mirror__hf_treesize(struct mirror__hf_req *h, const char *rev, const char *subpath);

/* ---- routes-hf-file.c ---- */

void mirror__hf_file(struct mirror__hf_req *h, const char *rev, const char *path, bool raw);

#endif
