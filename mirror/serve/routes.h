/*
 * routes.h - what `serve` answers: the handler chain installed on the HTTP server. Each family of
 * routes lives in its own file (routes-hf.c for the Hugging Face API, ...) and answers from the
 * catalog and the store only: no request waits on upstream.
 */
#ifndef HM_MIRROR_ROUTES_H
#define HM_MIRROR_ROUTES_H

#include <uv.h>

struct httpd;
struct mirror_data;
struct mirror_routes;

struct mirror_access;

/* d and access (NULL: everything open) are borrowed and must outlive the routes. */
struct mirror_routes *mirror_routes_new(struct mirror_data *d, const struct mirror_access *access);
void mirror_routes_install(struct mirror_routes *r, struct httpd *h);
/* The mirror's BitTorrent seed (borrowed; NULL: none): the tracker adds it to the swarms it seeds. */
struct mirror_seeder;
void mirror_routes_set_seeder(struct mirror_routes *r, struct mirror_seeder *seeder);
/* Fetch on demand (borrowed; NULL: off). */
struct mirror_ondemand;
void mirror_routes_set_ondemand(struct mirror_routes *r, struct mirror_ondemand *od);
/* The deployment's other mirrors (comma-separated base URLs, copied): every torrent handed out
 * lists them after this one, as trackers (a tier each) and web seeds. */
void mirror_routes_set_peer_mirrors(struct mirror_routes *r, const char *urls);
/* serve's loop, for the routes' background work (the torrents of new commits); its timer handle is
 * closed by serve's closing walk. mirror_routes_stop, before that: nothing new starts, and work that
 * ends afterwards touches nothing of the loop's. */
void mirror_routes_set_loop(struct mirror_routes *r, uv_loop_t *loop);
void mirror_routes_stop(struct mirror_routes *r);
/* The local namespaces (comma-separated, copied): their repos are the mirror's own, created and
 * written through the upload API (docs/uploads.md), never fetched from upstream; quota (NULL: none),
 * "NS=BYTES,...": the bytes each may hold. */
void mirror_routes_set_local(struct mirror_routes *r, const char *namespaces, const char *quota);
/* The bounds of commit and push bodies (docs/uploads.md, "Bodies and their bounds"): the most one may
 * send, and what all those being received may hold at once; 0 keeps the default (1 GiB, 4 GiB). */
void mirror_routes_set_write_bounds(struct mirror_routes *r, int64_t body_max, int64_t spool_max);
/* New access rules (borrowed like mirror_routes_new's; a worker that took a reference to the old
 * ones keeps it until its answer is done). On the loop. */
void mirror_routes_set_access(struct mirror_routes *r, const struct mirror_access *access);
/* The S3 API's access keys (routes-s3.c, docs/protocols/s3.md): path (NULL: none) holds lines
 * ACCESS_KEY_ID SECRET_ACCESS_KEY [TOKEN], readable by its owner only; a request signed with a key acts
 * with its token. Returns 0, or an error with *errmsg (malloc'd) naming the line. */
int mirror_routes_set_s3_keys(struct mirror_routes *r, const char *path, char **errmsg);
/* The S3 API's own host name (borrowed): a request whose Host is it (any port) is S3's, path-style;
 * one to BUCKET.HOST is S3's with the bucket from the host (virtual-host style). */
void mirror_routes_set_s3_domain(struct mirror_routes *r, const char *domain);
/* How long one catalog search may run (milliseconds, > 0); past it the request gets a 400. */
void mirror_routes_set_search_budget(struct mirror_routes *r, int ms);
/* The operator's API (/api/admin/, routes-admin.c): what serve lets it do. token NULL: off. */
#include <stdbool.h>
#include <jansson.h>
struct mirror_admin {
	const char *token;                        /* borrowed; compared in constant time */
	void *ud;
	json_t *(*status)(void *ud);              /* the schedule and the running sync */
	/* 0 started (*run: its number), -EBUSY when one runs, or an error; json: its report in JSON */
	int (*sync_now)(void *ud, json_t *specs, bool json, int64_t *run);
	/* the report of sync run, lines from: {run, lines, next, running, exit}; NULL: no such run */
	json_t *(*report)(void *ud, int64_t run, int64_t from);
	void (*pause)(void *ud, bool paused);     /* the schedule */
};
void mirror_routes_set_admin(struct mirror_routes *r, const struct mirror_admin *a);
void mirror_routes_free(struct mirror_routes **r);

#endif
