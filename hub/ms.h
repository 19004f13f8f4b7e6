/*
 * ms.h - the ModelScope API's URL grammar, both directions (the URLs the upstream client writes, the
 * paths a client sends), the one place both sides read it: the mirror's routes
 * (mirror/serve/routes-ms.c) and the instance agent's local endpoint (p2p/agent/endpoint.c) parse a
 * client's path with this, so that they never disagree on what a URL names
 * (docs/protocols/modelscope.md).
 *
 * The API lives under /api/v1/models/ and /api/v1/datasets/; after the type, OWNER/NAME, then:
 *   (nothing)            the repository's info (GET or HEAD)
 *   revisions            its branches and tags
 *   repo/files           the file list, whole
 *   repo/tree            the file list, page by page
 *   repo                 one file's bytes: the query's FilePath and Revision (MS_QUERY_*) name it
 *   download/...         the SDK's download counter (POST; answered, not counted)
 * The old dataset SDK names a dataset by its numeric id instead of OWNER/NAME (datasets/{Id}/repo/tree);
 * that form is taken when the OWNER/NAME form names nothing.
 */
#ifndef HM_HUB_MS_H
#define HM_HUB_MS_H

#include <stdbool.h>
#include <stdint.h>

/* ---- out: the URLs a client writes (base: scheme://host[:port], no trailing slash) ---- */

/* {base}/api/v1/{models|datasets}/{name}[/{what}] (what NULL: the repository's info; escaped by the
 * caller). Malloc'd. */
char *ms_api_url(const char *base, bool dataset, const char *name, const char *what);
/* A file's bytes at revision rev: .../{name}/repo?Revision=REV&FilePath=PATH (both escaped here; a
 * dataset's with Source=SDK first, as the SDK asks). */
char *ms_file_url(const char *base, bool dataset, const char *name, const char *rev, const char *path);

/* ---- in: the paths a client sends ---- */

enum ms_route { MS_ROUTE_INFO, MS_ROUTE_REVISIONS, MS_ROUTE_FILES, MS_ROUTE_TREE, MS_ROUTE_FILE, MS_ROUTE_DOWNLOADED };

/* The query parameters of a file's download. */
#define MS_QUERY_FILE "FilePath"
#define MS_QUERY_REVISION "Revision"

struct ms_path {
	enum ms_route route;
	const char *type;   /* "model" or "dataset" (static) */
	char *name;         /* OWNER/NAME, each percent-decoded, a name hub_check_name takes;
			     * NULL when the path gave a numeric id */
	int64_t id;         /* the dataset's numeric id (the old SDK's form), else 0 */
};

/*
 * path: the request's path without its query; method: its method. Fills *p and returns 0 when path is
 * an API path above; -1 when it is not (nothing to free). A path under the API's prefixes that names
 * nothing is -1 too: the mirror's router, which sent it here by its prefix, answers that 404 in
 * ModelScope's envelope.
 */
int ms_parse_path(const char *path, const char *method, struct ms_path *p);
void ms_path_release(struct ms_path *p);

#endif
