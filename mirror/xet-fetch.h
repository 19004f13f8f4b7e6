/*
 * xet-fetch.h - one content fetched from upstream through Xet into a store writer (docs/protocols/xet.md,
 * "Sync through Xet"): the sync's (sync-xet.c) and serve's on-demand fetch's (mirror/serve/ondemand.c).
 *
 * With the writer made: the Xet read token (GET token_url with the hub's token), the file's v1
 * reconstruction from the CAS the token names, then the terms in order, written into the writer as the
 * plain file. A term all of whose chunks the catalog places in a stored content (xet_ranges) is read
 * from the store, each chunk checked against its recorded hash; any other term's byte range is fetched
 * from its signed URL and its chunk records decoded as they stream (one chunk held at a time), each
 * chunk hashed. Bytes the writer already held (a resumed attempt) are not written again. From a
 * writer at offset 0, the writer's Xet identity is made of those chunks and their hashes
 * (store_writer_given_chunks): not chunked and hashed a second time. On the loop:
 * after local_turn bytes of stored chunks, the host's yield is called and the fetch waits for
 * mirror_xet_fetch_resume (the host's other work goes first). The end is on_end: fail 0 with the
 * whole file in the writer (unproven: the host checks and commits it, then mirror_xet_fetch_record),
 * HM_ERR_CURL for a transfer's fault (a new attempt may resume), another error for anything this
 * cannot read (the plain path). The token and URLs are never logged.
 */
#ifndef HM_MIRROR_XET_FETCH_H
#define HM_MIRROR_XET_FETCH_H

#include <stdbool.h>
#include <stdint.h>

struct catalog;
struct hub_http;
struct hub_http_req;
struct store;
struct store_writer;
struct mirror_xet_fetch;

struct mirror_xet_fetch_host {
	struct hub_http *http;
	struct catalog *catalog;        /* the loop's connection: where stored chunks lie */
	struct store *store;
	struct store_writer *w;  /* borrowed: the file is written into it */
	const char *token_url;          /* {hub}/api/{models,datasets}/NAME/xet-read-token/COMMIT (copied) */
	const char *token;              /* the hub's token for it, or NULL (copied; never logged) */
	const char *xet_hash;           /* upstream's, 64 hex (copied) */
	int64_t size;
	uint64_t local_turn;            /* stored chunks' bytes read in one turn of the loop */
	bool far_reads;                 /* with a bucket, a stored chunk the cache does not hold is read
	                                 * from the bucket (a blocking ranged read: a sync's loop may; serve's
	                                 * may not, and fetches it from upstream instead) */
	/* xorb bytes received (fetched) and file bytes newly written (written), as they come */
	void (*on_bytes)(void *ud, int64_t fetched, int64_t written);
	/* the host calls mirror_xet_fetch_resume(x) soon, from its loop (an idle turn) */
	void (*yield)(void *ud, struct mirror_xet_fetch *x);
	void (*on_end)(void *ud, struct mirror_xet_fetch *x, int fail, const char *why);
	void *ud;
};

/* Start; *out is the host's (mirror_xet_fetch_free: after on_end, from on_end, or to give up). A URL
 * that makes no request ends it at once (on_end before this returns). */
void mirror_xet_fetch_start(const struct mirror_xet_fetch_host *h, struct mirror_xet_fetch **out);
void mirror_xet_fetch_resume(struct mirror_xet_fetch *x);
/* The writer's offset when it began: a fault after it wrote more is progress. */
int64_t mirror_xet_fetch_began_at(const struct mirror_xet_fetch *x);
/* Xorb bytes it received from upstream. */
int64_t mirror_xet_fetch_fetched(const struct mirror_xet_fetch *x);
/* The content is in the store as sha256: record where the chunks of upstream's xorbs that made it lie
 * (one transaction). 0 or HM_ERR_SQLITE. */
int mirror_xet_fetch_record(struct mirror_xet_fetch *x, const char *sha256);
/* Cancel the request in flight, if any: it ends through on_end (fail set), as a fault would. */
void mirror_xet_fetch_cancel(struct mirror_xet_fetch *x);
/* Is a request of it in flight? */
bool mirror_xet_fetch_busy(const struct mirror_xet_fetch *x);
/* Free; a request in flight is cancelled (no on_end: it goes when the request ends). NULL-safe. */
void mirror_xet_fetch_free(struct mirror_xet_fetch **x);

#endif
