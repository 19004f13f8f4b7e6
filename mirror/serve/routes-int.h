/*
 * routes-int.h - shared by the routes-*.c files of mirror/; nothing outside this folder includes it.
 */
#ifndef HM_MIRROR_ROUTES_INT_H
#define HM_MIRROR_ROUTES_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "hub/http/httpd.h"
#include "routes.h"
#include "floor-read-int.h"
#include "floor-write-int.h"
#include "floor-xet-int.h"

struct mirror_data;

struct route_count {
	const char *route;      /* static */
	int status;
	uint64_t requests;
	uint64_t bytes;
};

struct mirror_access;
struct mirror__s3;
struct mirror__write;
struct mirror__spool;
struct mirror__pool;
struct mirror__catalog_api;
struct mirror__fronts;
struct hf_lfs_batch;
struct mirror__swarm;
struct p2p_tracker_stats;
struct catalog_repo;

struct mirror_routes {
	struct mirror_data *data;
	const struct mirror_access *access;   /* borrowed; NULL: open */
	struct httpd *httpd;
	struct route_count *counts;   /* requests by (route, status), for /metrics */
	size_t ncounts;
	struct mirror__swarm *swarm;  /* the swarm front's tracker, fill slots and peer mirrors (routes-p2p.c), owned */
	struct mirror_seeder *seeder; /* the mirror's own BitTorrent seed, borrowed; NULL: none */
	unsigned char p2p_key[32];    /* the data directory's key for capabilities (access.h) */
	bool have_p2p_key;            /* loaded: with tokens on, guarded repos get keyed torrents */
	bool have_xet_key;            /* the same key loaded, whatever the tokens: Xet tokens (xet-token.h) */
	struct mirror__catalog_api *catalog_api; /* the catalog API's search budget (routes-catalog.c), owned */
	struct mirror__pool *pool;    /* the workers' catalog connections (defer.c), owned */
	struct mirror_admin admin;    /* the operator's API; admin.token NULL: off */
	struct mirror_ondemand *ondemand; /* serve --on-demand; NULL: off. Borrowed */
	uv_loop_t *loop;              /* serve's (mirror_routes_set_loop): background work */
	bool closing;                 /* mirror_routes_stop: the seeder and the loop's handles are going */
	struct store_bucket_loop *bucket_loop; /* ranges read straight from the store's bucket (floor-bucket.c) */
	struct mirror__write *write;  /* the write floor's: local namespaces, quotas, the commit lock, new
				       * commits' torrents (floor-write.c), owned */
	struct mirror__spool *spool;  /* the spool's bounds and counts (spool.c), owned */
	struct mirror__lfs *lfs;      /* the upload URLs' state: capabilities spent (routes-lfs.c), owned */
	struct mirror__s3 *s3;        /* the S3 front's keys and host name (routes-s3.c), owned */
	struct mirror__xetw *xetw;    /* Xet uploads' xorbs, by repo (routes-xet-write-records.c), owned */
	const struct mirror__fronts *fronts; /* routes.c's table of what one front asks of another */
};

/* What one front asks of another, or the floor of a front: a table of pointers routes.c fills
 * (mirror_routes_new), so that a front calls the floor or this table, never another front's functions,
 * and the floor no front's (t0002's lint); routes.c, the map, is the one place that knows the fronts.
 * Each pointer is the function of the same name below (dispatch: routes.c's own). */
struct mirror__fronts {
	/* the catalog API's swarm of a snapshot, the swarm's counters for /metrics (routes-p2p.c) */
	json_t *(*swarm_json)(struct mirror_routes *rt, int64_t snapshot_id, const struct catalog_repo *repo,
			      const char *base);
	void (*swarm_stats)(const struct mirror_routes *rt, struct p2p_tracker_stats *ts, uint64_t *fill_deduped);
	/* the Hub API's writes under the hf front's paths (routes-upload.c), and the commit (routes-commit.c) */
	void (*hf_write)(struct mirror_routes *rt, struct httpd_req *req, const char *type, const char *name,
			 const char *action, const char *rev);
	void (*hf_commit)(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
			  const char *rev, const char *who);
	/* Git LFS uploads under git's paths (routes-lfs.c), and git's grammar of an LFS object's URL
	 * (routes-git.c) */
	json_t *(*lfs_upload_batch)(struct mirror_routes *rt, struct httpd_req *req, const char *repo_path,
				    const struct catalog_repo *repo, const struct hf_lfs_batch *b);
	void (*lfs_put)(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
			const char *oid, int part);
	void (*lfs_complete)(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
			     const char *oid);
	void (*lfs_verify)(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
			   const char *oid);
	bool (*upload_url_ok)(struct mirror_routes *rt, const struct httpd_req *req);
	bool (*git_lfs_object)(const char *path, char **type, char **name, char **oid, int *part);
	/* git's grammar of a push's URL (routes-git.c), for the spool's claim of its body (spool.c: the floor
	 * calls up into no front) */
	bool (*git_receive_repo)(const char *path, char **type, char **name);
	/* Xet uploads (routes-xet-write.c): the write token under hf's paths, the LFS batch's Xet answer,
	 * and, for the spool's claim, whether a body is a xorb's or a shard's that may be sent */
	void (*xet_write_token)(struct mirror_routes *rt, struct httpd_req *req, const char *type, const char *name,
				const char *rev);
	void (*xet_batch)(struct mirror_routes *rt, struct httpd_req *req, const char *repo_path,
			  const struct catalog_repo *repo, json_t *answer);
	int (*xet_body)(struct mirror_routes *rt, const struct httpd_req *r, char **type, char **name, int64_t *max);
	/* ... and, for a commit's lfsFile that names a xetHash (routes-commit.c, on a worker) */
	bool (*xet_file)(struct mirror_routes *rt, int64_t repo_id, const char *xet_hash, char sha256[65],
			 int64_t *size);
	/* the Hub API's xet-read-token, under the hf front's paths (routes-xet.c) */
	void (*xet_read_token)(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
			       const char *commit);
	/* route req again from the start, through the map (an answer that had to wait for an on-demand
	 * listing: ondemand-track.c) */
	int (*dispatch)(struct mirror_routes *rt, struct httpd_req *req);
};

/*
 * A route of the URL map (routes.c): called for a path the map gives it, with rest = the path after
 * the route's prefix and arg = the map's argument for it. Answers the request (returns 0), or returns
 * HTTPD_PASS when the path is not one of its own (only the routes without a prefix do: web, hf).
 */
typedef int (*mirror__route_fn)(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);

struct buf;
/* /metrics (routes-metrics.c), and the request counters it prints. */
int mirror__route_metrics(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
void mirror__metrics_requests(struct mirror_routes *rt, struct buf *b);
/* Bytes sent in answers of route (static name), all statuses. */
uint64_t mirror__route_bytes(const struct mirror_routes *rt, const char *route);

/* Hugging Face API (routes-hf.c): the Hub's URL space, what no prefix of the map claimed. */
int mirror__route_hf(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);

/* The Xet CAS's reads (routes-xet.c, docs/protocols/xet.md): /xet-cas/..., and xet-read-token for repo
 * at commit (the hf front checked the caller as for a resolve). */
int mirror__route_xet(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
void mirror__xet_read_token(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
			    const char *commit);

/* ModelScope API (routes-ms.c): arg is the repo type, "model" or "dataset". */
int mirror__route_ms(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);

/* The swarm: torrents, tracker and web seed (routes-p2p.c), and the swarm of a snapshot for the
 * catalog API: {btih, btmh, torrent (URL), piece_size, seeders, leechers}, or JSON null when the
 * snapshot (0: none) has no torrent. base: our origin (mirror__self_base). */
int mirror__route_announce(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
int mirror__route_webseed(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
int mirror__route_kseed(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
int mirror__route_torrent(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
int mirror__route_preheat(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
struct catalog_repo;
json_t *mirror__swarm_json(struct mirror_routes *rt, int64_t snapshot_id, const struct catalog_repo *repo,
			   const char *base);
/* The tracker's counters, and the fill requests answered 409. */
void mirror__swarm_stats(const struct mirror_routes *rt, struct p2p_tracker_stats *ts, uint64_t *fill_deduped);
/* The swarm front's part of the routes (rt->swarm): the tracker, when it was swept, the fill slots;
 * mirror_routes_new makes it, mirror_routes_free frees it. */
struct mirror__swarm *mirror__swarm_new(void);
void mirror__swarm_free(struct mirror__swarm **sw);
/* serve --peer-mirror: the base URLs of the deployment's other mirrors (a list, ", " between them), web
 * seeds of the torrents beside this one. */
void mirror__swarm_set_peers(struct mirror__swarm *sw, const char *urls);
/* mirror_seeder_set_held's question (ud: the routes): do peers other than the mirror's own seed hold
 * the swarm of the torrent with v1 hash btih or v2 hash btmh now? */
bool mirror__swarm_held(void *ud, const char *btih, const char *btmh);

/* The S3 API (routes-s3.c): under /s3, and at the root for a signed request or one to --s3-domain
 * (else it passes). */
int mirror__route_s3(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
int mirror__route_s3_signed(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
/* A request to the --s3-domain host (or a bucket under it), before any other route: S3's whatever its
 * path (HTTPD_PASS for any other Host, and without --s3-domain). */
int mirror__route_s3_host(struct mirror_routes *rt, struct httpd_req *req);
/* ListObjects (v1, and v2 with list-type=2) of a bucket, built on a worker (routes-s3-list.c): token is
 * what the request acts with (NULL: anonymous), request_id its x-amz-request-id. */
void mirror__s3_list(struct mirror_routes *rt, struct httpd_req *req, const char *bucket, const char *hub,
		     const char *type, const char *token, const char *request_id);
/* The S3 front's part of the routes (rt->s3), which mirror_routes_new makes and mirror_routes_free frees. */
struct mirror__s3 *mirror__s3_new(void);
void mirror__s3_free(struct mirror__s3 **s3);

/* The OCI Distribution API, read-only, under /v2/ (routes-oci.c; docs/protocols/oci.md). */
int mirror__route_oci(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);

/* The web page and its assets, embedded at build time (routes-web.c). */
int mirror__route_web(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
/* git clone over HTTP and Git LFS (routes-git.c); passes what is not a git URL. */
int mirror__route_git(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);

/* Catalog browsing API (routes-catalog.c); the JSON shape of a repo is mirror/repojson.h's. */
int mirror__route_catalog(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
/* The catalog API's part of the routes (rt->catalog_api): the longest one search may hold a worker (serve
 * --search-budget; ms <= 0 keeps it), which mirror_routes_new makes and mirror_routes_free frees. */
struct mirror__catalog_api *mirror__catalog_api_new(void);
void mirror__catalog_api_free(struct mirror__catalog_api **c);
void mirror__catalog_api_set_budget(struct mirror__catalog_api *c, int ms);
int mirror__route_admin(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
/* The admin API's gate (GATE_ADMIN): on, and the admin token given? Else the refusal is answered. */
bool mirror__admin_gate(const struct mirror_routes *rt, struct httpd_req *req);

/* routes-requests.c: /api/catalog/requests, and the admin's decision (POST /api/admin/requests/{id}: rest
 * is the id; it passes any other method, which the admin API answers). */
int mirror__route_requests(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
int mirror__route_decide(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
struct catalog_request;
json_t *mirror__request_json(const struct catalog_request *q, bool full);

/* ---- JSON answers (respond.c) ---- */

/* Send body (consumed) as compact JSON. */
void mirror__respond_json(struct httpd_req *req, int status, json_t *body);
/* The two halves of it: body (consumed) as compact JSON text (malloc'd; NULL when body is NULL, e.g.
 * a value built from bytes that are not UTF-8), with its weak ETag in etag when not NULL (any
 * thread); and sending that text (NULL: a 400), a 304 when etag (may be NULL) matches the request's
 * If-None-Match. */
char *mirror__json_dump(json_t *body, size_t *len, char etag[48]);
void mirror__respond_dumped(struct httpd_req *req, int status, const char *text, size_t len, const char *etag);

/* Answers in a hub's words (respond.c), for any front. */
/* The CORS headers every Hugging Face answer carries. */
void mirror__hf_cors(struct httpd_req *req);
/* The Hub's error answer: status, X-Error-Code (may be NULL), X-Error-Message, {"error": msg}. */
void mirror__hf_error(struct httpd_req *req, int status, const char *code, const char *msg, const char *commit);
/* The same from a job's build (on a worker; CORS was added on the loop). */
struct mirror__job;
void mirror__hf_job_error(struct mirror__job *j, int status, const char *code, const char *msg, const char *commit);
/* ModelScope's answer envelope {Code, Message, Success, Data, RequestId}: on the loop or a worker. */
json_t *mirror__ms_envelope_json(int status, json_t *data, const char *message);
/* The on-demand engine's refusals (mirror_ondemand_refuse_fn) in each hub's own style: the Hugging Face
 * Hub's error headers and body, ModelScope's envelope. */
void mirror__hf_refuse(struct httpd_req *req, int status, const char *type, const char *name, const char *msg);
void mirror__ms_refuse(struct httpd_req *req, int status, const char *type, const char *name, const char *msg);

/*
 * A route's answer built off the loop (defer.c). On the loop the route checks the request, allocates
 * a struct that starts with this one, copies into it what the answer needs, sets build and release,
 * adds the CORS headers of every answer, then calls mirror__defer. On a worker, with a catalog
 * connection of its own, build sets status and body (JSON, consumed), and headers with
 * mirror__job_header; or, for an answer that is not JSON, status, ctype (static) and text/len
 * (malloc'd, sent as they are: no ETag), or status and a file (fd, fd_offset, fd_length, ctype_own; or fd,
 * parts and part_mem: a body spliced from the file's bytes and bytes made in memory). It must touch
 * neither the request nor the loop nor rt->data->catalog. Then the answer is sent (or dropped, if the client is gone)
 * and release frees the route's struct. A build that sets no status gives a 503.
 */
struct catalog;
struct mirror__job {
	void (*build)(struct mirror__job *j, struct catalog *cat);
	void (*release)(struct mirror__job *j);
	int status;
	json_t *body;
	const char *ctype;        /* NULL: JSON (body); else the type of text */
	char *text;
	size_t len;
	/* or a body in a file: fd >= 1 (consumed), from fd_offset for fd_length bytes, of type ctype_own
	 * (malloc'd, freed by defer.c) */
	int fd;
	long long fd_offset, fd_length;
	char *ctype_own;
	/* ... or spliced from pieces of that file and of part_mem (httpd_respond_spliced): parts set
	 * (malloc'd, freed by defer.c) */
	struct httpd_part *parts;
	size_t nparts;
	char *part_mem;
	size_t part_mem_len;
	/* defer.c's */
	struct mirror_routes *rt;
	char **headers;           /* name, value, ... */
	size_t nheaders;
	char etag[48];
};
void mirror__defer(struct mirror_routes *rt, struct httpd_req *req, struct mirror__job *j);
/* The same on the server's aside lane (httpd_defer_aside): git's runs, which may take long, wait
 * for each other there and never hold the workers repo info, search and stats answer on. */
void mirror__defer_aside(struct mirror_routes *rt, struct httpd_req *req, struct mirror__job *j);
/* The same on the write lane (httpd_defer_write): uploads published, completions hashed, commits made
 * wait there for each other, never in front of the reads on the main lane. */
void mirror__defer_write(struct mirror_routes *rt, struct httpd_req *req, struct mirror__job *j);
void mirror__job_header(struct mirror__job *j, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* ---- the write fronts: local repos (routes-upload.c, routes-commit.c, routes-lfs.c; docs/uploads.md;
 * what they share is floor-write-int.h's) ---- */

/* httpd_claim_fn: the bodies of LFS PUTs and commits, when the mirror has local namespaces. */
struct httpd_body_sink;
bool mirror__claim_body(void *ud, struct httpd_req *r, struct httpd_body_sink *sink);
/* POST /api/validate-yaml: any card goes (huggingface_hub asks before committing a README.md) */
int mirror__route_validate_yaml(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
/* /api/repos/create and /api/repos/delete */
int mirror__route_repos(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
/* POST /api/{models|datasets}/ORG/NAME/{preupload|commit}/REV, POST or DELETE .../{branch|tag}/X:
 * action is that segment. */
void mirror__hf_write(struct mirror_routes *rt, struct httpd_req *req, const char *type, const char *name,
		      const char *action, const char *rev);
/* The commit, once the writer and the repo were checked (routes-commit.c). */
void mirror__hf_commit(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
		       const char *rev, const char *who);
/* Git LFS for uploads (from routes-git.c, on a local repo): a batch's answer for the request b (an
 * answer without "objects" is a refusal: over the namespace's quota, 403), an object's PUT and its
 * verify. */
struct hf_lfs_batch;
json_t *mirror__lfs_upload_batch(struct mirror_routes *rt, struct httpd_req *req, const char *repo_path,
				 const struct catalog_repo *repo, const struct hf_lfs_batch *b);
/* part: 0 the whole object, N its part N of a multipart upload */
void mirror__lfs_put(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
		     const char *oid, int part);
/* A multipart upload's completion: the object checked whole (on a worker) and kept, or refused. */
void mirror__lfs_complete(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
			  const char *oid);
void mirror__lfs_verify(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
			const char *oid);
/* Is req an LFS object's PUT to an upload URL the batch API gave out (its capability checked)? It
 * passes --auth all's gate without a token, as BitTorrent clients' capability URLs do. */
bool mirror__upload_url_ok(struct mirror_routes *rt, const struct httpd_req *req);
/* The upload URLs' state, which mirror_routes_new makes and mirror_routes_free frees. */
struct mirror__lfs *mirror__lfs_new(void);
void mirror__lfs_free(struct mirror__lfs **l);
/* Is path an LFS object's URL (routes-git.c), or of a part of one (.../OID/part/N) or of its
 * completion (.../OID/complete)? Then *type, *name and *oid (malloc'd) say which, and *part: 0 for the
 * object, N for its part N, -1 for the completion. */
bool mirror__git_lfs_object(const char *path, char **type, char **name, char **oid, int *part);
/* Is path a git push's POST ([datasets/]ORG/NAME[.git]/git-receive-pack)? Then *type and *name (malloc'd). */
bool mirror__git_receive_repo(const char *path, char **type, char **name);


/* Xet uploads into local repos (routes-xet-write.c; docs/protocols/xet.md, "Uploads"). The CAS's
 * address under our origin (the casUrl of write tokens), and its route: xorbs, shards, the dedup query
 * (other paths pass). */
#define MIRROR__XET_CAS_PATH "/xet-cas" /* one CAS for reads and writes: floor-xet-int.h's MIRROR__XET_CAS */
int mirror__route_xet_cas(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg);
/* GET /api/{models,datasets}/ORG/NAME/xet-write-token/REV: a write token for a local repo the caller
 * may write (mirror__write_gate), {accessToken, exp, casUrl}. */
void mirror__xet_write_token(struct mirror_routes *rt, struct httpd_req *req, const char *type, const char *name,
			     const char *rev);
/* The LFS upload batch's answer to a client that offers "xet": each object to upload gets the Xet
 * headers (X-Xet-Cas-Url, -Access-Token, -Token-Expiration, -Session-Id) and the token's refresh URL,
 * and the transfer is "xet"; unchanged (basic) when no write token can be made. */
void mirror__xet_batch(struct mirror_routes *rt, struct httpd_req *req, const char *repo_path,
		       const struct catalog_repo *repo, json_t *answer);
/* Is r a POST of a xorb or a shard (0: no)? 1 when its Xet token writes the repo, *type and *name
 * (malloc'd) naming it and *max the body's bound; -1 when it does not. On the loop. */
int mirror__xet_body(struct mirror_routes *rt, const struct httpd_req *r, char **type, char **name, int64_t *max);
/* The file a shard made for repo_id (in the last 24 hours) whose Xet hash is xet_hash (64 hex): its
 * sha256 and size, true; false for a hash no shard of that repo made. Thread-safe. */
bool mirror__xet_file(struct mirror_routes *rt, int64_t repo_id, const char *xet_hash, char sha256[65],
		      int64_t *size);
/* The front's part of the routes (rt->xetw): mirror_routes_new makes it (taking back from the records
 * in DATA/xet-uploads what an earlier serve promised and is still in its time, the rest deleted),
 * mirror_routes_free frees it. */
struct mirror_data;
struct mirror__xetw *mirror__xetw_new(struct mirror_data *d);
void mirror__xetw_free(struct mirror__xetw **x);

/* The workers' catalog connections, defer.c's part of the routes (rt->pool): mirror_routes_new makes it,
 * mirror_routes_free closes its idle connections and frees it, once no job runs. */
struct mirror__pool *mirror__pool_new(struct mirror_data *d);
void mirror__pool_free(struct mirror__pool **p);
/* A catalog connection of the pool for a worker that is no mirror__job's (NULL when none opens), and
 * back (NULL-safe). */
struct catalog *mirror__pool_take(struct mirror_routes *rt);
void mirror__pool_give(struct mirror_routes *rt, struct catalog *c);

#endif
