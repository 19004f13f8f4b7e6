/*
 * bucket.h - the content-addressed store's bucket backend (issue #52): contents kept in an S3 bucket
 * (Ceph RGW, AWS S3) under the keys they have on disk, blobs/<h0h1>/<sha256>, below the bucket's
 * prefix. A content reaches its key only verified: the bytes stream into a multipart upload (one PUT
 * for a small one) while they are hashed, and the upload is completed only when they hashed to the
 * content's id and are of its size; any other end aborts it. So an object under a content id always
 * holds that content; a crash leaves at worst an unfinished upload, which store_bucket_sweep aborts.
 *
 * One struct store_bucket per process and data directory, shared by threads: each call takes an S3
 * client of its own from a small pool (an S3 client is one thread's at a time), so that a sync's
 * parallel commits upload at once.
 */
#ifndef HM_STORE_BUCKET_H
#define HM_STORE_BUCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/s3.h"

struct store_bucket;

/* The process's bucket: what `[store] url` (and its endpoint, region, keys) and `[store] cache-size`
 * say, set once by the command line before any store opens (NULL c: none, the data directory's store
 * alone). Every string is copied. cache_size: bytes the local disk keeps of the bucket's contents
 * (0: the default, 10 GiB). */
void store_bucket_configure(const struct store_s3_config *c, int64_t cache_size);
/* Whether a bucket is configured; its cache bound. */
bool store_bucket_configured(void);
int64_t store_bucket_cache_size(void);
/* A client of the configured bucket (the process's configuration is copied in). Returns 0, -ENOENT
 * (none configured) or -EINVAL (*why static). */
int store_bucket_open(struct store_bucket **out, const char **why);
void store_bucket_free(struct store_bucket **b);

/* The key of a content below the prefix: "blobs/ab/ab12..." (sha256: 64 lowercase hex). Caller frees. */
char *store_bucket_key(const char *sha256);

/* Whether the content is in the bucket (size -1: any), its size in *size (may be NULL). Returns 0,
 * HM_ERR_NOT_FOUND, or a code of s3.h. */
int store_bucket_stat(struct store_bucket *b, const char *sha256, int64_t *size);

/* Put the content read from fd (from its start to its end) under its key, verified: completed only when
 * the bytes hash to sha256 and are size bytes. Returns 0, HM_ERR_HASH_MISMATCH / HM_ERR_SIZE_MISMATCH
 * (nothing written), -errno (reading fd), or a code of s3.h. */
int store_bucket_put_fd(struct store_bucket *b, int fd, const char *sha256, int64_t size);

/* A content put as its bytes come (a fetch streamed into the bucket, never whole on local disk): a
 * thread of the put's own streams them into a multipart upload (its parts moving on while the caller
 * waits for more), and the caller's _write hands them over, waiting only while QUEUE_MAX bytes are
 * queued (the bucket slower than the source). Each byte is hashed as it is handed over; _commit
 * completes the upload only when they hashed to sha256 and are size bytes (HM_ERR_HASH_MISMATCH /
 * HM_ERR_SIZE_MISMATCH, aborted, else), _abort drops it; either frees *p. Nothing is visible under
 * the key before the commit; a crash leaves an unfinished upload (store_bucket_sweep). _begin and
 * _write on one thread, _commit or _abort on any one after. */
struct store_bucket_put;
int store_bucket_put_begin(struct store_bucket *b, const char *sha256, int64_t size, struct store_bucket_put **out);
int store_bucket_put_write(struct store_bucket_put *p, const void *data, size_t n);
int store_bucket_put_commit(struct store_bucket_put **p);
void store_bucket_put_abort(struct store_bucket_put **p);

/* Bytes [off, off + len) of the content (len < 0: to its end) to sink, as store_s3_get. */
int store_bucket_get(struct store_bucket *b, const char *sha256, int64_t off, int64_t len,
		     int (*sink)(void *ud, const void *data, size_t n), void *ud);

/* ---- the staging area (bucket-stage.c): a Xet upload's xorbs, kept until a shard names them ----
 *
 * Objects under xet-uploads/ below the prefix, beside blobs/ and never under it: a client's packing
 * of chunks, not contents (docs/protocols/xet.md, "Uploads"). name is the key's part below
 * xet-uploads/: letters, digits, '.', '-', '_' and '/' between parts, never "..", at most 200 bytes
 * (-EINVAL else). Its bytes are the caller's to have checked; they are not content ids. */
/* Put data[0..n) as name, streamed into a multipart upload (one PUT when small): visible only whole. */
int store_bucket_stage_put(struct store_bucket *b, const char *name, const void *data, size_t n);
/* Bytes [off, off + len) of name (len < 0: to its end) to sink, as store_s3_get. HM_ERR_NOT_FOUND: gone. */
int store_bucket_stage_get(struct store_bucket *b, const char *name, int64_t off, int64_t len,
			   int (*sink)(void *ud, const void *data, size_t n), void *ud);
int store_bucket_stage_delete(struct store_bucket *b, const char *name);
/* gc's sweep: every object of the staging area written age_s seconds ago or more (the bucket's clock:
 * Last-Modified) deleted, and every unfinished upload to it started as long ago aborted (dry_run:
 * counted, nothing changed). *removed counts both. Returns 0 or the first failure's code. */
int store_bucket_stage_sweep(struct store_bucket *b, int64_t age_s, bool dry_run, int64_t *removed);

/* Ranged reads on a server's libuv loop (store_s3_loop): a client of the bucket of its own, its
 * transfers driven by the loop, counted as the blocking calls are. One per loop, used from its thread
 * only; b must outlive it. store_bucket_loop_get is store_s3_loop_get of the content's key (its
 * done(ud, result) runs once, on the loop, never from inside the call). _free cancels the reads in
 * flight (each done with -ECANCELED at once) and closes its handles (run the loop after). */
struct store_bucket_loop;
int store_bucket_loop_new(struct store_bucket *b, uv_loop_t *loop, struct store_bucket_loop **out);
int store_bucket_loop_get(struct store_bucket_loop *l, const char *sha256, int64_t off, int64_t len,
			  int (*sink)(void *ud, const void *data, size_t n), void (*done)(void *ud, int result),
			  void *ud);
void store_bucket_loop_free(struct store_bucket_loop **l);

/* Hash the content as the bucket holds it: *ok when it hashes to its name; its size in *size. Returns 0,
 * HM_ERR_NOT_FOUND, or a code of s3.h. */
int store_bucket_check(struct store_bucket *b, const char *sha256, bool *ok, int64_t *size);

int store_bucket_delete(struct store_bucket *b, const char *sha256);

/* Re-stamp the content's object (copied onto itself: its Last-Modified now), for a writer that counts
 * on a content it found in the bucket: another mirror's gc then takes it for one put after its own
 * live sets were written (docs/operations.md, section 8). Returns 0, HM_ERR_NOT_FOUND, or a code of
 * s3.h. */
int store_bucket_touch(struct store_bucket *b, const char *sha256);

/* Every object under blobs/ (name: the key's last part, which may not be a content id; size). A
 * non-zero return of fn stops the walk with it. */
int store_bucket_each(struct store_bucket *b, int (*fn)(void *ud, const char *name, int64_t size), void *ud);

/* Abort the unfinished uploads under blobs/ and trash/ started more than age_s seconds ago (a crashed writer's;
 * a running one's are younger). *aborted counts them. Returns 0 or the first failure's code. */
int store_bucket_sweep(struct store_bucket *b, int64_t age_s, int64_t *aborted);

/* The content's Last-Modified, unix seconds of the bucket's clock (0: unreadable). Returns 0,
 * HM_ERR_NOT_FOUND, or a code of s3.h. */
int store_bucket_mtime(struct store_bucket *b, const char *sha256, int64_t *mtime);

/* The trash (docs/operations.md, section 8): gc never deletes a content's object outright, since
 * another mirror sharing the bucket may count on it from the moment gc looked at its age (a re-stamp,
 * a put of the same content) and S3's delete cannot be made conditional on that look. _trash copies
 * it on the server to a key of its own, trash/<h0h1>/<sha256>.<16 hex> (one never written again), and
 * deletes it from blobs/ only then. Returns 0, HM_ERR_NOT_FOUND (not in blobs/), or a code of s3.h
 * (nothing deleted when the copy failed). */
int store_bucket_trash(struct store_bucket *b, const char *sha256);
/* Put a content back from the trash under its key (copied on the server from any of its trash keys
 * of that size, size -1: any; found there after of its size). For a reader, a verify or a writer that
 * counts on a content and misses it. Returns 0, HM_ERR_NOT_FOUND (not in the trash either), or a code.
 * The bytes are not read here: they were the content's when gc moved them (completed only verified),
 * and a read of them hashes them as any read from the bucket. */
int store_bucket_restore(struct store_bucket *b, const char *sha256, int64_t size);
/* gc's pass over the trash: a trash key of a content wanted(ud, sha256) says is wanted (> 0) is put
 * back (when blobs/ lacks it) and deleted; one not wanted is deleted once the bucket got it before
 * cutoff (unix seconds of the bucket's clock: store_reap_cutoff's, so a trash key lives as long as the
 * content in blobs/ would have: until every mirror wrote a live set after it), else kept (young).
 * A failure of wanted (< 0) stops it with that code. */
struct store_bucket_trash_stats {
	int64_t restored, removed, young;
};
int store_bucket_trash_sweep(struct store_bucket *b, int64_t cutoff, int (*wanted)(void *ud, const char *sha256),
			     void *ud, struct store_bucket_trash_stats *st);

/* Several mirrors on one bucket (docs/operations.md, section 8): each writes the set of contents its
 * catalog names, its live set, to mirrors/<id>/live below the prefix ("hubmirror-live 1", then one
 * sha256 a line), replaced whole: begin, add each, commit (nothing is visible before; any failure
 * leaves the set before). id: the mirror's, 8 to 64 lowercase hex. */
struct store_bucket_live;
int store_bucket_live_begin(struct store_bucket *b, const char *id, struct store_bucket_live **out);
int store_bucket_live_add(struct store_bucket_live *l, const char *sha256);
/* Complete and free *l (set to NULL) whatever the result; abort: drop it (NULL-safe). */
int store_bucket_live_commit(struct store_bucket_live **l);
void store_bucket_live_abort(struct store_bucket_live **l);
/* Every mirror's live set in the bucket: fn(ud, id, written, NULL) once for each (written: when it
 * was, the bucket's clock), then fn(ud, id, written, sha256) for each content it names. A set that
 * does not read as one is HM_ERR_UPSTREAM (store_bucket_errmsg names it); a non-zero fn stops it. */
int store_bucket_live_each(struct store_bucket *b, int (*fn)(void *ud, const char *id, int64_t written,
								  const char *sha256), void *ud);

/* The last failure's words (store_s3_errmsg of the client that failed), for messages. Static storage
 * of the thread. */
const char *store_bucket_errmsg(void);

/* The backend's counters since the process started: calls made to the bucket (each one request or, for
 * a put or a listing, several), the seconds they took, bytes read and written, calls failed; and the
 * local cache's reads, found there (hits) or brought in from the bucket (misses). */
struct store_bucket_stats {
	int64_t requests, bytes_in, bytes_out, errors, cache_hits, cache_misses;
	double seconds;
};
void store_bucket_stats(struct store_bucket_stats *out);
/* Count a read of the local cache: hit (it was there) or a miss. */
void store_bucket_count_cache(bool hit);

#endif
