/*
 * ondemand-int.h - what ondemand.c (patterns, fetching, the sweep), ondemand-track.c (tracking a repo
 * a client asked for: the listing gate and the listing), ondemand-xet.c (a content's fetch through
 * Xet) and ondemand-complete.c (a snapshot completed for an instance) share.
 */
#ifndef HM_MIRROR_ONDEMAND_INT_H
#define HM_MIRROR_ONDEMAND_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "hub/hub.h"

#define RETRY_AFTER_S 60       /* a repo tried is not tried again sooner */
#define LISTINGS_PER_MIN 60    /* new listings upstream, all clients together */
#define CLIENT_LISTINGS_PER_MIN 20 /* ... and one client address */
#define CLIENT_SLOTS 64
#define COMPLETIONS_MAX 2      /* child syncs completing a snapshot at once */
#define STALL_S 120            /* a followed partial file that does not grow for this long is given up */
#define TRIED_SLOTS 256
#define OD_XET_TURN (1 << 20)  /* stored chunks a Xet fetch reads on the loop in one turn: then requests go */
#define OD_XET_BAD 16          /* contents whose Xet bytes failed the proof, fetched plain from then on */
#define OD_STREAM_RETRY_S "30"  /* Retry-After for a content being fetched straight into the bucket */

struct hub_http;
struct hub_client;
struct mirror_ondemand_file;
struct mirror_routes;
struct mirror_xet_fetch;
struct store_writer;
struct hub_http_req;

/* VERIFIED: every byte in and checked (clients may take the last one); being fsynced and renamed
 * into the store on a worker, so the loop never waits on the disk */
enum fetch_state { FETCH_RUNNING, FETCH_VERIFIED, FETCH_OK, FETCH_FAILED };

struct fetch {
	struct mirror_ondemand *od;
	struct mirror_routes *rt;
	struct fetch *next;
	char sha256[65];
	int64_t size;
	enum fetch_state state;
	int refs;                      /* clients + the transfer */
	struct store_writer *w; /* NULL when following another process's writer; the worker's while
	                         * VERIFIED (its commit sets it NULL there): the loop reads writes then */
	bool writes;                   /* this process's writer (w at the start), not a follower */
	bool streams;                  /* ... which streams into the bucket: no partial file to follow */
	struct hub_http_req *req;
	int64_t have;                  /* bytes in the partial file */
	char *part_path;
	int64_t last_growth;           /* following: when the partial file last grew */
	char *spec;                    /* for the log */
	uv_work_t work;                /* the commit, off the loop */
	int commit_result;
	int64_t repo_id;               /* whose request it is: its verified bytes count as its fetch */
	bool own_bytes;                /* this process's writer verified them (not followed) */
	bool xet_stated;               /* upstream stated the Xet hash the writer checked */
	int64_t from;                  /* where the plain request's range starts */
	char *url;                     /* owned: the plain file URL upstream */
	enum hub_kind kind;
	struct mirror_xet_fetch *xet;  /* the transfer through Xet, or NULL */
	struct fetch *next_wait;       /* in od->xet_wait: a Xet transfer giving the loop back */
};

struct touch {
	int64_t repo_id;
	int64_t at;
};

struct completion {
	uv_process_t proc;
	struct mirror_ondemand *od;
	char *spec;
	struct completion *next;
};

struct mirror_ondemand {
	struct completion *completions; /* syncs running to complete a snapshot for an instance */
	char *self_exe, *config_path, *hf_token_file, *ms_token_file;
	struct mirror_routes *rt;      /* for the sweep's catalog (set by the first touch) */
	uv_loop_t *loop;
	double ttl_s;                  /* repos nobody asked for this long stop being tracked */
	uv_timer_t sweep;              /* writes the touches down and expires, every sweep period */
	bool sweep_on;
	struct touch *touches;         /* asked for since the last sweep */
	size_t ntouches;
	char **patterns;
	size_t npatterns;
	char *data_dir;
	char *hf_base, *ms_base, *hf_token, *ms_token;
	int64_t quota_bytes;
	int max_repos;
	int64_t held_bytes, held_at;   /* the store's size (a sum over the catalog), read at most every 10 s */
	struct hub_http *http;
	struct hub_client *client;
	struct fetch *fetches;         /* contents being fetched or followed */
	pthread_mutex_t mu;            /* tried[] and the counters the workers touch */
	pthread_mutex_t list_mu;       /* one listing at a time */
	struct { char key[160]; int64_t at; } tried[TRIED_SLOTS];
	size_t tried_next;
	/* the listing gate, on the loop: one listing at a time, and so many a minute (docs/security.md) */
	bool listing;
	int64_t window_at;             /* the minute the counts below are of */
	int window_listings;
	struct { char addr[48]; int n; } clients[CLIENT_SLOTS];
	size_t nclients;
	uint64_t refused_busy, refused_rate, refused_quota;
	uint64_t repos_tracked, listings_failed, fetches_total, fetches_failed, bytes_fetched;
	uv_idle_t xet_idle;            /* runs the Xet fetches that gave the loop back (xet_wait) */
	bool xet_idle_on;
	struct fetch *xet_wait;
	bool stopping;
	char xet_bad[OD_XET_BAD][65];
	size_t xet_bad_next;
};

/* "hf:org/name", "ms:datasets/org/name": the spec as the log and the catalog's options say it. */
char *mirror__od_spec_text(const char *hub, const char *type, const char *name);

/* A content's fetch (ondemand.c): a reference dropped (the last frees it); its end, counted and
 * logged (FETCH_OK: the content is in the store); every byte in, checked then committed on a worker,
 * the transfer's reference going with it; a plain request from byte `from` (false: the URL makes
 * none). */
void mirror__od_fetch_unref(struct fetch *f);
void mirror__od_fetch_end(struct fetch *f, enum fetch_state st, const char *why);
void mirror__od_fetch_verify(struct fetch *f);
bool mirror__od_fetch_plain(struct fetch *f, int64_t from);
/* Through Xet (ondemand-xet.c): the transfer started, holding the fetch's reference (false: not
 * through Xet, for the plain request); a content whose Xet bytes failed the proof, fetched plain from
 * then on by this serve. */
bool mirror__od_fetch_xet(struct fetch *f, const struct mirror_ondemand_file *in);
void mirror__od_xet_remember_bad(struct mirror_ondemand *od, const char *sha256);
/* The syncs completing snapshots for instances (ondemand-complete.c) stopped: serve stops. */
void mirror__od_completions_stop(struct mirror_ondemand *od);

#endif
