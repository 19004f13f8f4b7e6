/*
 * hf.h - the Hugging Face Hub's URL grammar, both directions (the URLs the upstream client writes, the
 * paths a client sends), the one place both sides read it: the mirror's routes
 * (mirror/serve/routes-hf.c) and the instance agent's local endpoint (p2p/agent/endpoint.c) parse a
 * client's path with these, so that they never disagree on what a URL names (docs/protocols/huggingface.md).
 *
 * Paths arrive as raw segments (split on '/', still percent-encoded), because the grammar depends on
 * what was encoded: a revision sent encoded (refs%2Fpr%2F1) is one segment, the same revision sent
 * raw (refs/pr/1) is three.
 */
#ifndef HM_HUB_HF_H
#define HM_HUB_HF_H

#include <stdbool.h>
#include <stddef.h>

/* ---- out: the URLs a client writes (base: scheme://host[:port], no trailing slash) ---- */

/* {base}/api/{models|datasets}/{name}/{what}: what ("revision/REV", "refs", "tree/COMMIT?...") is
 * escaped by the caller. Malloc'd. */
char *hf_api_url(const char *base, bool dataset, const char *name, const char *what);
/* A listing: {base}/api/{models|datasets}?{key}={value}&limit={limit} (value escaped here), as the
 * owner's repositories, key "author". Malloc'd. */
char *hf_list_url(const char *base, bool dataset, const char *key, const char *value, int limit);
/* A revision as one segment of a URL (malloc'd): escaped, '/' too (refs/pr/1 as refs%2Fpr%2F1), and
 * a revision "refs" with its first byte encoded, so that no reader takes it for the start of refs/pr/N. */
char *hf_rev_segment(const char *rev);
/* A file's bytes: {base}/[datasets/]{name}/resolve/{rev}/{path}, rev escaped here as one segment
 * (hf_rev_segment: refs/pr/1 as refs%2Fpr%2F1; a commit id as it is), path escaped here ('/' kept). */
char *hf_resolve_url(const char *base, bool dataset, const char *name, const char *rev, const char *path);

/* ---- in: the paths a client sends ---- */

/* A path's raw segments: split on every '/' (a leading one dropped; empty segments kept, so that
 * "a//b" is three and names nothing a single slash would), still percent-encoded. */
struct hf_path {
	char **v;
	size_t n;
	char *copy;     /* the segments' storage */
};
void hf_path_split(struct hf_path *p, const char *path);
void hf_path_release(struct hf_path *p);

/* v[from..n) decoded and joined with '/' (malloc'd); NULL if a segment does not decode. */
char *hf_join_decoded(char *const *v, size_t n, size_t from);

/*
 * The revision at raw segment v[i] of v[0..n): one segment, percent-decoded, or, sent raw, the three
 * segments of refs/pr/N or refs/convert/NAME (what the Hub takes). Returns it (malloc'd) and sets *used
 * to the segments it took, or returns NULL (*used 0) when there is none there or it does not decode.
 */
char *hf_take_revision(char *const *v, size_t n, size_t i, size_t *used);

/*
 * A file URL: [datasets/]ORG/NAME/VERB/REVISION/PATH... (VERB: "resolve" or "raw"). On a match
 * fills *type ("model" or "dataset", static), and malloc'd, decoded *org, *name, *rev and
 * *path (PATH's segments decoded and joined with '/'), and returns 0; -1 when v is no such URL (nothing
 * set). What it returns has passed the project's guards: ORG/NAME hub_check_name, REVISION
 * hub_check_revision, PATH path_check (tests/fuzz/fuzz-hfpath holds it to that).
 */
int hf_parse_file_url(char *const *v, size_t n, const char *verb, const char **type, char **org, char **name,
		      char **rev, char **path);

/*
 * The routes: what a client's path names, the one enumeration the mirror's routes
 * (mirror/serve/routes-hf.c) dispatch on. T is models or datasets; REPO is ORG/NAME (or a legacy bare
 * NAME) as sent, a name hub_check_name takes; REV one revision (hf_take_revision) unless said.
 */
enum hf_route {
	HF_ROUTE_LIST,          /* api/T (GET, HEAD) */
	HF_ROUTE_INFO,          /* api/T/REPO, and api/T/REPO/revision/REV (rev: the rest, decoded) */
	HF_ROUTE_TREE,          /* api/T/REPO/tree/REV[/PATH] (sub: PATH decoded, "" when none) */
	HF_ROUTE_PATHS_INFO,    /* POST api/T/REPO/paths-info/REV (rev: the rest, decoded) */
	HF_ROUTE_REFS,          /* api/T/REPO/refs */
	HF_ROUTE_COMMITS,       /* api/T/REPO/commits/REV[/...] */
	HF_ROUTE_TREESIZE,      /* api/T/REPO/treesize/REV[/PATH] (sub: PATH decoded and path_check'd, or NULL) */
	HF_ROUTE_WRITE,         /* POST api/T/REPO/{preupload|commit}/REV, POST or DELETE api/T/REPO/{branch|tag}/REV
				 * (verb: which; rev: the rest, decoded) */
	HF_ROUTE_XET_READ,      /* api/T/REPO/xet-read-token... */
	HF_ROUTE_XET_WRITE,     /* api/T/REPO/xet-write-token... */
	HF_ROUTE_FILE,          /* GET or HEAD [datasets/]REPO/{resolve|raw}/REV/PATH (verb: which; sub: PATH) */
	HF_ROUTE_NO_REPO,       /* api/T/ and no repository name there: 404 RepoNotFound */
	HF_ROUTE_NOT_FOUND,     /* api/T/REPO/ and nothing of the above: 404 */
	HF_ROUTE_BAD,           /* one of the above with a bad revision or path: 400 (why says which) */
};

struct hf_route_path {
	enum hf_route route;
	const char *label;      /* the route's name for metrics (static): hf_list, hf_info, hf_tree, ... */
	const char *type;       /* "model" or "dataset" (static) */
	char *name;             /* REPO as sent; NULL for HF_ROUTE_LIST and HF_ROUTE_NO_REPO */
	const char *verb;       /* HF_ROUTE_WRITE, HF_ROUTE_FILE: the segment that named it (static) */
	char *rev;              /* decoded, where the route has one */
	char *sub;              /* the path after it, decoded, where the route has one */
	const char *why;        /* HF_ROUTE_BAD: "bad path" or "bad revision or path" (static) */
};

/*
 * path: the request's path without its query; method: its method. Fills *p and returns 0 when path is
 * under the API (api/models, api/datasets) or is a file URL; -1 when it is neither (nothing to free):
 * the mirror's router passes it on.
 */
int hf_parse_path(const char *path, const char *method, struct hf_route_path *p);
void hf_route_path_release(struct hf_route_path *p);

#endif
