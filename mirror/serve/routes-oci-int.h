/*
 * routes-oci-int.h - what the OCI front's files share (routes-oci.c: the registry's routes, its
 * token flow, names and lookups; routes-oci-artifact.c: a snapshot's artifact, the ModelPack
 * manifest or the image of tar layers, built from the snapshot alone). Nothing outside this folder
 * includes it.
 */
#ifndef HM_MIRROR_ROUTES_OCI_INT_H
#define HM_MIRROR_ROUTES_OCI_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "catalog/catalog.h"

struct httpd_req;
struct mirror_routes;

#define OCI_NPLAT 2 /* an image's platforms (its files are the same on each) */
#define OCI_CONFIG_MAX (4 << 20) /* the largest config.json read for the artifact's config */

/* One request's state: the repository named, the token it acts with, the repo's row once found. */
struct oreq {
	struct mirror_routes *rt;
	struct httpd_req *req;
	char tokbuf[512];
	const char *tok;          /* NULL: anonymous */
	const char *hub, *type;   /* static */
	const char *prefix;       /* "hf", "hf-datasets", ... (static) */
	struct catalog_repo repo;
	bool have_repo;
	bool image;               /* image/PREFIX/ORG/NAME: the image of tar layers, not the ModelPack artifact */
	bool deferred;            /* the layers' digests were computed for this request already */
	const char *rest;         /* the path after /v2/ */
	bool regtok;              /* the request came with a registry token of the token endpoint's */
	char ociname[512];        /* the repository as named ([image/]PREFIX/ORG/NAME), "" before */
	json_t *configs;          /* config.json's read on a worker for this request: sha256 -> the object
				   * (null: not JSON or none) or the error's words (borrowed; NULL: none) */
	char config_need[65];     /* OCI_NEED_CONFIG: the sha256 of the config.json to read on a worker */
};

/* A document of the artifact: a manifest, an index or a config, as served (JSON text) and its digest. */
struct oci_doc {
	char *text; /* malloc'd */
	size_t len;
	const char *type;
	char digest[72];
	bool manifest; /* a manifest or an index (else a config, a blob) */
};

#define OCI_MAX_DOCS (2 + 2 * OCI_NPLAT)

struct oci_art {
	struct oreq *o;
	const struct catalog_snapshot *snap;
	json_t *layers, *diffs;
	json_t *missing;           /* image: the files whose tar layer has no digest yet ([sha256, path, size]) */
	char config_sha[65];       /* the snapshot's config.json, "" when none */
	int64_t config_size;
	const char *format;        /* the weights' format, by the first weight file's kind */
	const char *want_layer;    /* a layer's sha256 asked for (oci_find_digest), or NULL */
	int64_t layer_size;        /* its size, once seen (else -1) */
	json_t *config;            /* config.json's object (NULL: none) */
	char *config_err;          /* why config.json could not be read (malloc'd; NULL: it was, or none) */
	/* the results: docs[main] is what a tag names (the artifact's manifest, the image's index) */
	struct oci_doc docs[OCI_MAX_DOCS];
	size_t ndocs, main;
};

#define OCI_INCOMPLETE 1 /* oci_art_build: an image whose tar layers' digests are not all kept yet */
#define OCI_NEED_CONFIG 2 /* oci_art_build: config.json is in the store's bucket only (a->config_sha: read
			   * it on a worker into o->configs, and build again) */

/* Build the artifact of snapshot snap of o's repo into *a (mirror__oci_art_release it), noting the size
 * of the layer of sha256 want_layer (NULL: none) if it has one. 0, OCI_INCOMPLETE (an image: a->missing
 * lists the files whose layer digests are to be computed), OCI_NEED_CONFIG, an error with
 * a->config_err (config.json could not be read: HM_ERR_HASH_MISMATCH, the store's copy is damaged) or
 * another error. */
int mirror__oci_art_build(struct oreq *o, const struct catalog_snapshot *snap, const char *want_layer,
			  struct oci_art *a);
/* A config.json's bytes as its JSON object, or NULL (not JSON, or not an object). */
json_t *mirror__oci_config_parse(const char *text, size_t len);
/* The artifact's manifest (or index), or config, of that digest, or NULL. */
const struct oci_doc *mirror__oci_art_doc(const struct oci_art *a, const char *digest, bool manifest);
void mirror__oci_art_release(struct oci_art *a);

#endif
