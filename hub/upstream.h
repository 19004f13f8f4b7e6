/*
 * upstream.h - the upstream hubs as the sync engine sees them: "what is revision R of repo X now,
 * and which files does it hold", for Hugging Face and ModelScope behind one call.
 *
 * Everything that arrives is checked before it is returned: commit ids are 40 lowercase hex, sha256
 * and git ids are hex of the right length, sizes are non-negative, and every path passes
 * path_check() (entries that fail are counted in skipped_unsafe and left out).
 */
#ifndef HM_HUB_UPSTREAM_H
#define HM_HUB_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "hub/http/http.h"
#include "hub/hub.h"

struct hub_client;

struct hub_client_config {
	const char *hf_base;   /* e.g. "https://huggingface.co" (no trailing slash needed); borrowed */
	const char *ms_base;   /* e.g. "https://www.modelscope.cn" */
	const char *hf_token;  /* NULL: anonymous. Never logged. */
	const char *ms_token;
};

struct hub_file {
	char *path;            /* owned; passed path_check() */
	int64_t size;
	char git_oid[41];      /* git blob id, "" when upstream does not say (ModelScope) */
	char sha256[65];       /* content sha256 (LFS oid / ModelScope Sha256), "" when unknown */
	bool lfs;
	char xet_hash[65];     /* the Xet file hash upstream states (HF's xetHash), "" when none */
	char *url;             /* owned: where to GET the bytes */
};

struct hub_snapshot {
	char commit[41];       /* HF: the commit id; ModelScope: a tree id (see upstream.c) */
	bool unchanged;        /* commit equals the known one: nothing listed */
	bool is_tag;           /* the revision is a tag upstream, not a branch (asked, with one more request,
				* when the snapshot changed and the revision is neither main/master nor a commit) */
	struct hub_file *files;
	size_t nfiles;
	size_t skipped_unsafe; /* entries whose path failed path_check() */
	json_t *meta;          /* owned: gated, private, tags, pipeline_tag, library_name, license,
				* card_data, downloads, likes, last_modified, created_at, upstream_name (HF: the repo's
				* name as upstream answers, a renamed repo's new one) (absent when unknown) */
	char *message;         /* owned: upstream's words on failure (X-Error-Message / Message) */
	uint64_t requests;     /* upstream requests this call made (pages included) */
	int upstream_tier;     /* the upstream is a hubmirror of this tier (its X-Hubmirror-Tier); 0: not a
				* hubmirror (the Hub itself) */
	int64_t origin_checked_at; /* that hubmirror's last check of the repo at the Hub (unix s); 0: unknown */
};

/*
 * Called once with result 0 (snap filled) or an error: HM_ERR_NOT_FOUND (repo or revision),
 * HM_ERR_AUTH, HM_ERR_GATED, HM_ERR_DISABLED, HM_ERR_UPSTREAM, HM_ERR_JSON, HM_ERR_HTTP, a transport
 * error. snap is always given (with message and requests on errors); the callee owns it and frees
 * it with hub_snapshot_free().
 */
typedef void (*hub_snapshot_cb)(void *ud, int result, struct hub_snapshot *snap);

/* Create a client on http (borrowed, must outlive it). cfg strings are copied. Returns 0, or -EINVAL
 * when a base URL is not http(s)://. */
int hub_client_new(struct hub_http *http, const struct hub_client_config *cfg, struct hub_client **out);
void hub_client_free(struct hub_client **c);

/*
 * Resolve spec->revision (spec->name on spec->hub) and, unless it equals known_commit (may be NULL),
 * list its files. spec is copied. Returns 0 (cb will run later, from the loop) or -EINVAL.
 * flags: HUB_FETCH_NEED_META: the caller lacks the repo's metadata (ModelScope: its visibility, one
 * more request); without it, an unchanged ModelScope model costs its listing only.
 * HUB_FETCH_KIND_KNOWN: the caller knows whether the revision is a tag (snap->is_tag stays false),
 * so a changed snapshot of a name that may be a tag costs no refs request. Hugging Face's answer always
 * carries the metadata. A ModelScope dataset (whose listing names no commit and may be many pages)
 * costs its info only when that says the same update time as known_stamp (the meta's last_modified
 * after the listing that gave known_commit; may be NULL): then it is unchanged; else its info and
 * its listing.
 */
#define HUB_FETCH_NEED_META 1u
#define HUB_FETCH_KIND_KNOWN 2u
int hub_snapshot_fetch(struct hub_client *c, const struct hub_spec *spec, const char *known_commit,
		       const char *known_stamp, unsigned flags, hub_snapshot_cb cb, void *ud);
void hub_snapshot_free(struct hub_snapshot **s);

/* One ref upstream lists for a repo. */
struct hub_ref {
	char *name;            /* owned: "dev", "v1.0", "refs/convert/parquet"; passed hub_check_revision() */
	const char *kind;      /* static: "branch", "tag" or "convert" */
	char commit[41];       /* the commit it points at; "" when upstream does not say (ModelScope) */
};

struct hub_refs {
	struct hub_ref *v;
	size_t n;
	char *message;         /* owned: upstream's words on failure */
	uint64_t requests;
};

/* Called once with result 0 (refs filled) or an error (as hub_snapshot_cb's); the callee owns refs
 * (always given) and frees it with hub_refs_free(). */
typedef void (*hub_refs_cb)(void *ud, int result, struct hub_refs *refs);

/*
 * The branches, tags and (Hugging Face) conversions of a repo: one request (HF GET .../refs, whose
 * entries name their commits; ModelScope models GET .../revisions, whose entries do not). ModelScope
 * datasets have no such call: -ENOTSUP. Entries with odd names or commits are left out. Returns 0 (cb
 * runs later, from the loop), -EINVAL or -ENOTSUP.
 */
int hub_refs_fetch(struct hub_client *c, const struct hub_spec *spec, hub_refs_cb cb, void *ud);
void hub_refs_free(struct hub_refs **r);

/* Where to GET the bytes of path in spec's repo: Hugging Face at commit, ModelScope at
 * spec->revision (its listings name no commit). Malloc'd. */
char *hub_file_url(const struct hub_client *c, const struct hub_spec *spec, const char *commit, const char *path);

/* The token to send for a hub (borrowed, may be NULL). */
const char *hub_client_token(const struct hub_client *c, enum hub_kind hub);

/* The base URL asked for hub's repos, without any user:password@ part (so it can be shown); caller
 * frees. */
char *hub_client_base(const struct hub_client *c, enum hub_kind hub);

/* Whether t (NULL: yes) can be sent as a bearer token and a cookie value: 1 to 4096 printable ASCII
 * bytes, no space, ';' or ','. */
bool hub_token_valid(const char *t);

/* Map an upstream error answer (status, X-Error-Code) of a content request to an error code. */
int hub_classify_error(enum hub_kind hub, long status, const char *error_code);

#endif
