/*
 * sync-int.h - the sync engine's types, shared by sync.c (the run, listings, content jobs),
 * sync-twins.c (one content under two hubs' names) and sync-refs.c (the second pass over refs).
 * Not for use outside mirror/sync*.c.
 */
#ifndef HM_MIRROR_SYNC_INT_H
#define HM_MIRROR_SYNC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "hub/upstream.h"
#include "sync.h"

struct srepo;

struct want {
	struct hub_file *f;     /* borrowed from the repo's snapshot */
	char sha256[65];        /* filled when the content is in the store (or named absent) */
	bool absent;            /* provisional run: named by its sha256, not fetched (cfg.provisional) */
};

struct waiter {
	struct srepo *repo;
	size_t idx;             /* into repo->wants */
};

struct denial {
	struct srepo *repo;
	int err;
	char *text;
};

/* JOB_TWIN: waiting for a running job of the other kind of key and the same size, which may be the
 * same content (sync-twins.c) */
enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_OK, JOB_FAILED, JOB_TWIN };

struct mirror__sync_job {
	struct mirror__sync *s;
	enum job_state state;
	char key[65];
	struct hub_file *f;     /* the first wanting file: its URL and expectations (borrowed from its
				* repo's listing, which is freed when that repo finishes: not read
				* once the job ended) */
	int64_t size;           /* the content's size (the key's files all have it) */
	struct srepo *owner;    /* whose hub and token the request uses */
	struct waiter *waiters;
	size_t nwaiters, capwaiters;
	struct denial *denied;  /* repos whose own request for this content was refused */
	size_t ndenied;
	bool parked;            /* refused for all its waiters, who wait for the listings to end */
	struct store_writer *w;
	struct store_writer *committing; /* with a bucket: the writer a worker commits (uploads), w
						 * NULL meanwhile */
	uv_work_t commit_work;
	int commit_result;
	char commit_sha[65];
	struct hub_http_req *req;
	int tries;
	int64_t attempt_start;  /* writer offset when the attempt began */
	int64_t fetched;        /* bytes received over all attempts */
	long status;
	char result_sha[65];    /* the blob's name once JOB_OK */
	char *error_text;
	int fail;               /* error code set by on_response/on_body */
	struct mirror__sync_job *next;   /* queue link */
	struct mirror__sync_job **twins; /* JOB_TWIN jobs waiting for this one */
	size_t ntwins;
	struct mirror__sync_xet *xet;    /* the attempt through Xet (sync-xet.c), NULL when none */
	bool xet_off;           /* Xet failed for this content: the plain path from now on */
	bool xet_used;          /* the writer's bytes came through Xet */
};

struct srepo {
	struct mirror__sync *s;
	const struct catalog_repo *cr;
	struct mirror_sync_repo_result *res;
	struct hub_spec spec;
	struct hub_snapshot *snap;
	struct want *wants;
	size_t nwants;
	size_t pending;         /* wants whose content is not in the store yet */
	int error;
	char *error_text;
	bool is_public;         /* anyone may read its content (mirror__sync_repo_public), from its listing */
	/* the second pass: refs beyond the followed one */
	struct srepo *parent;   /* a ref's srepo: the repo's first-pass one; NULL in the first pass */
	char *ref_name;         /* owned: the ref it syncs (v1.0, dev, refs/convert/parquet) */
	bool ref_tag;
	char *ref_rev;          /* owned: the revision asked (HF: the ref's commit; ModelScope: its name) */
	char ref_known[41];     /* ModelScope: the commit the ref's snapshot has, "" when none */
	size_t ref_idx;         /* its entry in res->refs */
	json_t *keep;           /* first pass: the names of the wanted refs upstream has */
	bool refs_bad;          /* first pass: a wanted ref did not come in (nothing dropped, not checked) */
};

struct mirror__sync {
	struct mirror_data *d;
	const struct mirror_sync_config *cfg;
	uv_loop_t loop;
	uv_timer_t progress_timer;
	struct hub_http *http;
	struct hub_client *client;
	struct srepo *repos;
	size_t nrepos;
	size_t next_listing;    /* next repo to list */
	size_t listings_active;
	size_t repos_done;
	struct mirror__sync_job *queue_head, *queue_tail;
	size_t jobs_active;
	int64_t inflight_bytes;
	struct mirror__sync_job **jobs;      /* every job, for lookup by key and cleanup */
	size_t njobs, capjobs;
	struct mirror_sync_report *report;
	int64_t files_total, files_done;
	int64_t bytes_total, bytes_done;
	uint64_t started_ns;
	int64_t started_at;     /* unix seconds */
	uint64_t progress_last_ms; /* loop time sync.progress was last written */
	int64_t run_id;
	char *tokens_seen;      /* what sync.tokens should say after this run */
	bool tokens_changed;    /* since the last run: ask refused repos again */
	bool running;           /* inside uv_run (uv_stop ends it; outside, it would skip the closing run) */
	bool waiting_said;      /* the current wait upstream asked for is in the log */
	int unreachable[2];     /* per hub: repos in a row whose listing could not reach upstream */
	char *unreachable_why[2]; /* owned: the last one's error */
	struct srepo *first;    /* the first pass's repos (repos is the second pass's during it) */
	size_t nfirst;
	struct srepo *second;   /* the second pass: one per ref to list */
	size_t nsecond, capsecond;
	size_t refs_next;       /* next first-pass repo whose refs may be due */
	size_t refs_active;     /* refs listings in flight */
	int64_t quota_used;     /* the store's bytes as the catalog counts them (-1: not read yet), less
				 * what the quota dropped in this run */
	int64_t quota_reserved; /* bytes of the contents this run's planned repos will add */
	uv_idle_t xet_idle;     /* runs the Xet attempts that gave the loop back (sync-xet.c) */
	struct mirror__sync_xet *xet_wait; /* those attempts, in a list */
};

/* sync-record.c: a repo's end (recorded, reported, or failed with the words that say why) */
/* The repo failed (the first error stays): err and a printf-style text, or the text as is. */
void mirror__sync_repo_fail(struct srepo *r, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void mirror__sync_repo_fail_text(struct srepo *r, int err, const char *text);
/* Every file of r is in (or failed): record its snapshot and report it. */
void mirror__sync_repo_finish(struct srepo *r);
/* The caller's line for a repo whose first pass ended, at once (sync-record.c). */
void mirror__sync_report_repo(struct mirror__sync *s, struct mirror_sync_repo_result *res);

/* sync.c: the run, selection, listings */
void mirror__sync_start_listings(struct mirror__sync *s);

/* sync-progress.c: sync.progress written (running, or the run's end), the caller's progress line told
 * (done: the last time), and the timer that does both */
void mirror__sync_progress_write(struct mirror__sync *s, bool running);
void mirror__sync_progress_tell(struct mirror__sync *s, bool done);
void mirror__sync_on_progress(uv_timer_t *t);

/* sync-jobs.c: the content jobs (one per sha256 or git id), their queue and their waiters */
void mirror__sync_enqueue(struct mirror__sync *s, struct mirror__sync_job *j);
struct mirror__sync_job *mirror__sync_job_find(struct mirror__sync *s, const char *key);
void mirror__sync_job_insert(struct mirror__sync *s, struct mirror__sync_job *j);
void mirror__sync_job_add_waiter(struct mirror__sync_job *j, struct srepo *r, size_t idx);
/* Whether r may take a content fetched for j's owner (a guarded repo's contents stay its own). */
bool mirror__sync_may_take(const struct mirror__sync_job *j, const struct srepo *r);
bool mirror__sync_repo_public(const struct srepo *r);
/* Start the jobs parked while a listing ran, and what the queue allows. */
void mirror__sync_flush_parked(struct mirror__sync *s);
void mirror__sync_pump(struct mirror__sync *s);
/* Tell every file waiting on j its content (sha256) or the error; returns how many waiters stayed
 * (they may not take content fetched for j's owner: the caller fetches it again for them). */
size_t mirror__sync_job_notify(struct mirror__sync_job *j, int err, const char *sha256);

/* sync-jobs.c, for sync-xet.c: start (or go on with) a job's transfer; commit its writer */
void mirror__sync_job_start(struct mirror__sync_job *j);
void mirror__sync_job_commit(struct mirror__sync_job *j);

/* sync-xet.c: a job fetched through Xet (docs/protocols/xet.md, "Sync through Xet"). _wanted: upstream
 * states the file's Xet hash and nothing turned Xet off. _start: with j->w made, write the file into it
 * from stored chunks and fetched xorb ranges; ends in mirror__sync_job_commit, or in
 * mirror__sync_job_start again with j->xet_off set (the plain path) or not (a fault to resume).
 * _record: once the content is stored as sha256, remember where its chunks lie. _release: free. */
bool mirror__sync_xet_wanted(const struct mirror__sync_job *j);
void mirror__sync_xet_start(struct mirror__sync_job *j);
void mirror__sync_xet_record(struct mirror__sync_job *j, const char *sha256);
void mirror__sync_xet_release(struct mirror__sync_job *j);

/* sync-twins.c: before j starts, a job of the other kind of key and the same size may bring its
 * content: 1 (taken from one that ended), 2 (waiting for one that runs), 0 (fetch it). When k ends
 * (sha256 its content, NULL on failure), its waiting twins take it or are queued. */
int mirror__sync_twin_check(struct mirror__sync *s, struct mirror__sync_job *j);
void mirror__sync_twins_release(struct mirror__sync_job *k, const char *sha256);

/* sync-quota.c: reserve room under the store quota for the contents r will fetch, dropping old
 * snapshots if need be. 0, or the error r now fails with (outcome "quota" when it cannot fit). */
int mirror__sync_quota_admit(struct srepo *r);

/* sync-refs.c: the second pass, after the first pass's loop ended. */
void mirror__sync_refs_pass(struct mirror__sync *s);

#endif
