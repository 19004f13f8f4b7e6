/*
 * upstream-int.h - between the upstream client's files: upstream.c (the client, what both hubs share,
 * the entry points, refs), upstream-hf.c (Hugging Face) and upstream-ms.c (ModelScope), the way curl
 * keeps one file per TLS backend behind vtls_int.h. Private to hub/.
 */
#ifndef HM_HUB_UPSTREAM_INT_H
#define HM_HUB_UPSTREAM_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "upstream.h"

#define MAX_JSON (256u << 20)   /* one listing page or info answer */
#define MAX_PAGES 100000
#define MS_PAGE_SIZE 200

struct hub_client {
	struct hub_http *http;
	char *hf_base;
	char *ms_base;
	char *hf_token;
	char *ms_token;
};

/* One hub_snapshot_fetch in flight. */
struct upstream__fetch {
	struct hub_client *c;
	struct hub_spec spec;
	char *known;
	bool need_meta;        /* ask for the repo's info even when unchanged (ModelScope) */
	bool kind_known;       /* the caller knows whether the revision is a tag: do not ask */
	hub_snapshot_cb cb;
	void *ud;
	struct hub_snapshot *snap;
	size_t cap;
	char *origin_prefix;   /* HF: pages must start with this (scheme://host[:port]/) */
	int page;              /* ModelScope dataset pages */
	char *known_stamp;     /* ModelScope dataset: its info's last update time at the last listing */
	bool info_done;        /* ModelScope: the info was asked already (meta in snap) */
	hub_refs_cb refs_cb;   /* hub_refs_fetch: cb is unused, snap only carries message and requests */
	struct hub_refs *refs; /* its answer so far */
};

/* ---- upstream.c: what both hubs share ---- */

/* The fetch is over: its callback gets the snapshot (or the refs), and f is freed. */
void upstream__fetch_finish(struct upstream__fetch *f, int result);
/* The snapshot's message (what the caller shows): a copy of m, or none. */
void upstream__set_message(struct upstream__fetch *f, const char *m);
/* Add a file entry after checking it. Returns 0, or HM_ERR_UPSTREAM for a malformed entry. */
int upstream__add_file(struct upstream__fetch *f, const char *path, size_t pathlen, json_int_t size,
		       const char *git_oid, const char *sha256, bool lfs);
/* Common handling of a finished API request: transport errors, error statuses, JSON parse.
 * Returns 0 with *json set, or an error (message recorded). */
int upstream__api_answer(struct upstream__fetch *f, int result, const struct hub_http_resp *resp, const char *body,
			 size_t len, json_t **json);
/* GET url as JSON, with the hub's token; done gets the answer (a bad URL finishes the fetch). */
void upstream__request_json(struct upstream__fetch *f, const char *url,
			    void (*done)(void *, int, const struct hub_http_resp *, const char *, size_t));
/* Is the revision a name that may be a tag (not main/master, not a commit id, not refs/...)? */
bool upstream__maybe_tag(const char *rev);
/* The answer to "is the revision a tag?" (HF refs, ModelScope revisions); finishes the fetch. */
void upstream__tag_answer(struct upstream__fetch *f, int result, const struct hub_http_resp *resp, const char *body,
			  size_t len, bool ms);

/* Add the refs in arr (HF: {name, targetCommit}; ModelScope: {Revision}) as kind, their names under
 * prefix ("refs/convert/" for HF's conversions). Odd entries are left out. */
void upstream__refs_add(struct hub_refs *out, json_t *arr, const char *kind, const char *prefix, bool ms);

/* ---- each hub, behind one table of its functions (as curl reaches each TLS backend through its
 * struct Curl_ssl): upstream.c asks the hub's table, never its kind ---- */
struct upstream_hub {
	const char *token_cookie;  /* the token also sent as this cookie (static); NULL: none */
	/* resolve and list f->spec (f is set up; the answer ends in upstream__fetch_finish) */
	void (*fetch)(struct upstream__fetch *f);
	/* a file's URL: HF names a file by commit, ModelScope by spec's revision. Malloc'd. */
	char *(*file_url)(const struct hub_client *c, const struct hub_spec *spec, const char *commit,
			  const char *path);
	/* the URL of spec's refs (malloc'd), or NULL when the hub lists none for spec's type */
	char *(*refs_url)(const struct hub_client *c, const struct hub_spec *spec);
	/* read the refs' answer j into out: 0, or -1 when it is not the shape the hub answers */
	int (*refs_read)(struct hub_refs *out, json_t *j);
	/* hub_classify_error: a 403 without an error code means the repository is disabled */
	bool forbidden_is_disabled;
};
extern const struct upstream_hub upstream__hf, upstream__ms;
/* The table of hub. */
const struct upstream_hub *upstream__hub(enum hub_kind hub);

#endif
