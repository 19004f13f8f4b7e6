/*
 * ondemand.h - repositories the mirror does not track, fetched when a client asks for them
 * (serve --on-demand PATTERNS; docs/commands/serve.md).
 *
 * A request for a repository that is not tracked but matches a pattern (a glob over its spec, such
 * as every repo of one organisation: docs/commands/serve.md) tracks it (marked as added on demand,
 * with who asked) and lists it upstream on a worker thread: the sync engine in its provisional mode fetches the small
 * files upstream names by git id and records the snapshot at once, naming the large ones by their sha256 without
 * fetching them; then the request is answered as for any tracked repository. A file whose content the store does not
 * hold yet is fetched from upstream the first time it is asked for, through the store's writer (hashed as it lands),
 * and streamed to that client, and to every other client asking for it meanwhile, from the partial file as its bytes
 * arrive: one upstream transfer however many ask. The last byte goes out only once the whole content verified; a
 * content that fails its hash is never kept, and every client's connection is closed short of the promised length, so
 * no client holds a wrong file it believes complete. The nightly sync completes the snapshot like any other.
 */
#ifndef HM_MIRROR_ONDEMAND_H
#define HM_MIRROR_ONDEMAND_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

struct mirror_ondemand;
struct mirror_routes;
struct httpd_req;
struct buf;

struct mirror_ondemand_config {
	const char *patterns;       /* comma-separated specs with globs; copied */
	const char *data_dir;       /* the serve's data directory (a worker opens it again) */
	const char *hf_base;        /* upstreams (NULL: the public hubs); copied */
	const char *ms_base;
	const char *hf_token;       /* NULL: anonymous; copied, never logged */
	const char *ms_token;
	double ttl_s;               /* a repo tracked on demand that nobody asks for this long stops being
				     * tracked (its contents go with the next gc); 0: 30 days */
	/* to complete a snapshot now (mirror_ondemand_complete): the sync run as a child, as serve's */
	const char *self_exe;
	const char *config_path;    /* may be NULL */
	const char *hf_token_file;  /* may be NULL */
	const char *ms_token_file;
	int64_t quota_bytes;        /* [store] quota: a fetch that would take the store past it is refused
				     * (the sync makes room: sync-quota.c); 0: none */
	int max_repos;              /* repos tracked on demand at once; past it a new one is refused (503)
				     * until one expires; 0: 1000 */
};

/* Check the patterns and set up the upstream client on loop. Returns 0, or -EINVAL with *errmsg. */
int mirror_ondemand_new(uv_loop_t *loop, const struct mirror_ondemand_config *cfg, struct mirror_ondemand **out,
			char **errmsg);
/* On the way out, after httpd_free: cancel the transfers in flight (running loop until they ended;
 * partial files are kept for a resume) and close the upstream client. Then, after the last uv_run
 * (listings on workers have ended), mirror_ondemand_free. */
void mirror_ondemand_stop(struct mirror_ondemand *od, uv_loop_t *loop);
void mirror_ondemand_free(struct mirror_ondemand **od);

/* Does a pattern cover the repo (hub "hf"/"ms", type "model"/"dataset", name org/name)? */
bool mirror_ondemand_covers(const struct mirror_ondemand *od, const char *hub, const char *type, const char *name);

/* How the front that asked answers a request the engine refuses, in its hub's own style: status 404
 * (the repository, type and name, is nowhere; msg NULL), 429 or 503 (msg says why; the engine has set
 * Retry-After). The engine knows no hub's error format. */
typedef void (*mirror_ondemand_refuse_fn)(struct httpd_req *req, int status, const char *type, const char *name,
					  const char *msg);

/* The repo is not tracked: when a pattern covers it and it was not tried in the last minute, track
 * and list it on a worker and answer req afterwards as if it had been tracked all along (1: req is
 * taken); else 0 (the caller answers "not found"). One listing runs at a time, and at most 60 start
 * a minute (20 for one client address): past that req is answered 503 or 429 with Retry-After (1),
 * so a flood of names neither waits on workers nor costs the upstream more than the budget. A
 * listing that fails leaves no row behind. A fetch that would take the store past its quota
 * (mirror_ondemand_config.quota_bytes) is not started (the caller answers 503). */
int mirror_ondemand_track(struct mirror_routes *rt, struct httpd_req *req, const char *hub, const char *type,
			  const char *name, mirror_ondemand_refuse_fn refuse);

/* An instance wants the whole snapshot of a repo tracked on demand (its torrent, for mount or
 * pull) while it is provisional: run the sync of it now, as a child process (`hubmirror sync --local
 * --wait SPEC`: it fetches what the store lacks, records the snapshot and makes its torrent), unless
 * one runs already. At most two run at once. Returns 0 (running), 1 (others run: ask again), or -1. */
int mirror_ondemand_complete(struct mirror_routes *rt, const char *hub, const char *type, const char *name);

/* A client asked for repo_id, a repo tracked on demand: it stays tracked for another TTL. Cheap (in
 * memory; written down each minute, or each second under a short TTL). */
void mirror_ondemand_touch(struct mirror_routes *rt, int64_t repo_id);

/* What a file answer needs to fetch one content on demand. Strings borrowed for the call. */
struct mirror_ondemand_file {
	const char *hub, *type, *name;
	const char *commit;         /* the snapshot's */
	const char *revision;       /* the followed revision (ModelScope downloads by it) */
	const char *path;
	const char *sha256;
	int64_t size;
	int64_t repo_id;            /* the repo asked for (its verified fetch is recorded as its own) */
	bool untrusted;             /* the store holds the content, but this repo may not name it yet
	                             * (catalog_snapshot_trusts): its bytes come from its upstream first */
};

/* Answer req (its headers already added) with the content, fetched now or being fetched, streamed as
 * it lands (Range honoured). Returns 0 (answered), or -1 when it cannot (the caller answers 503). */
int mirror_ondemand_send(struct mirror_routes *rt, struct httpd_req *req, const struct mirror_ondemand_file *f);

/* Prometheus lines: repos tracked on demand, contents fetched, bytes, transfers running. */
void mirror_ondemand_metrics(const struct mirror_ondemand *od, struct buf *b);

#endif
