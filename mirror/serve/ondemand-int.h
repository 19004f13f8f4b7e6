/*
 * ondemand-int.h - what ondemand.c (patterns, fetching, completing, the sweep) and ondemand-track.c
 * (tracking a repo a client asked for: the listing gate and the listing) share.
 */
#ifndef HM_MIRROR_ONDEMAND_INT_H
#define HM_MIRROR_ONDEMAND_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

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

struct fetch;
struct hub_http;
struct hub_client;

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

#endif
