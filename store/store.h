/*
 * store.h - the content-addressed blob store.
 *
 * Every distinct content is stored once, named by its sha256: <dir>/blobs/<h0h1>/<sha256>. Bytes are
 * written to <dir>/tmp/<key>.part on the same filesystem, hashed while they stream (SHA-256 always,
 * git blob SHA-1 when the size is known), checked against what upstream promised, fsynced and only
 * then renamed into blobs/. So a blob path that exists holds verified content; a crash leaves at worst
 * a .part file, which a later writer for the same content resumes (re-hashing what is there) or gc
 * removes.
 */
#ifndef HM_STORE_STORE_H
#define HM_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct store_writer;
struct store_bucket;

/* What the content must be. Any field may be absent (NULL / -1); at least one of sha256 and git_oid
 * should be given for the content to count as verified. Strings are borrowed for the call. */
struct store_expect {
	const char *sha256;   /* 64 lowercase hex */
	const char *git_oid;  /* 40 lowercase hex: sha1("blob <size>\0" + content); needs size */
	int64_t size;         /* -1 when unknown */
};

/* Open the store rooted at dir, creating dir/blobs and dir/tmp. *out is owned by the caller
 * (store_free). Returns 0 or -errno. */
int store_open(const char *dir, struct store **out);
void store_free(struct store **s);

/* Path of the blob with this sha256 (which must be 64 lowercase hex, else NULL). Caller frees. With a
 * bucket (store/bucket.h) the file is the local cache's: a content not there is brought in from the
 * bucket first, verified (blocking); the path of one the bucket does not hold either is still given.
 * A content bigger than the cache's bound is never brought in: NULL, logged (read it by ranges with
 * store_read, or whole when small with store_slurp). */
char *store_blob_path(const struct store *s, const char *sha256);

/* Where the blob's file is on local disk, whether it is there or not: with a bucket, the cache's copy,
 * never brought in (store_blob_path brings one within the cache's bound). NULL for a malformed sha256; caller frees. */
char *store_cache_path(const struct store *s, const char *sha256);

/* True if the blob is present with this size (size -1: any). */
bool store_has(const struct store *s, const char *sha256, int64_t size);
/* The size of a stored content, bringing it nowhere: its file in blobs/ (the directory's, or the cache's
 * copy), else, with a bucket, the bucket's object. A look, not a claim: hold the content first where gc
 * must not take it. Returns 0 with *size, -ENOENT, -EINVAL (a malformed sha256), or a code of the
 * bucket's (store_bucket_errmsg says more). */
int store_size(const struct store *s, const char *sha256, int64_t *size);
/* store_has for a writer that counts on the content instead of writing it (a commit's file, an
 * LFS object the client need not send, a push's, a bundle's): with a bucket, true only when the bucket
 * holds it and its object was re-stamped (store_bucket_touch), so that another mirror's gc sharing the
 * bucket takes it for one put after this mirror's live set (its catalog does not name it yet, maybe);
 * a content the cache holds and the bucket lost is false (written again). */
bool store_reuse(const struct store *s, const char *sha256, int64_t size);

/*
 * Start writing content that must match *expect. With resume, an existing partial file for the
 * same content is kept: its bytes are re-hashed and store_writer_offset() tells where to go on
 * (an HTTP Range start). Returns 0 and *out (owned: end it with _commit or _abort), -EBUSY when another
 * writer holds the same partial file, -EINVAL when expect names neither sha256 nor git_oid with a
 * size, or -errno.
 */
int store_writer_new(struct store *s, const struct store_expect *expect,
			    bool resume, struct store_writer **out);

/*
 * store_writer_new for content a user sends: the partial file is the writer's own
 * (tmp/<key>-<random>.part, created with O_EXCL), so it takes no other writer's lock (a slow upload never
 * keeps the mirror's own fetch of the content waiting), nobody else writes, resumes or follows it, and
 * a failed or abandoned one is deleted, never resumed. Returns 0 and *out, -EINVAL, or -errno.
 */
int store_writer_new_private(struct store *s, const struct store_expect *expect,
				    struct store_writer **out);

/* Where the partial file of a content being written lives (key: its sha256, else its git id; which
 * a writer uses). Another reader may follow it as it grows. NULL for a malformed key; caller frees. */
char *store_part_path(const struct store *s, const char *key);

/* Bytes already in the partial file (the resume offset). */
int64_t store_writer_offset(const struct store_writer *w);

/* Bytes in the partial file itself (the writer buffers up to 1 MiB): what another reader of it may
 * take. Every byte is in once _check (or _commit) ran. */
int64_t store_writer_flushed(const struct store_writer *w);

/* Drop everything written so far (e.g. the server ignored our Range and restarts from 0). */
int store_writer_truncate(struct store_writer *w);

/* Append n bytes. Returns 0, HM_ERR_SIZE_MISMATCH past the expected size, or -errno (-ENOSPC...). */
int store_writer_write(struct store_writer *w, const void *data, size_t n);

/* Xet fetches: the identity (store-xet.h) is to be made of the chunks the caller states with
 * _write_chunk (each chunk's bytes and the hash the caller computed of them to check them), not found
 * again by the chunker and hashed twice. Only on a writer at offset 0 (-EINVAL otherwise). Bytes that
 * come through _write after all (a fallback to plain HTTP) make the identity computed from the file's
 * bytes at _check, as if this had not been asked. */
int store_writer_given_chunks(struct store_writer *w);
/* Append one chunk's n bytes, as _write, with its Xet chunk hash h (only read on a _given_chunks
 * writer). */
struct xet_hash;
int store_writer_write_chunk(struct store_writer *w, const void *data, size_t n,
				    const struct xet_hash *h);

/* Check what was written against the expectation (size, sha256, git id) without publishing it:
 * 0 when it matches, else HM_ERR_SIZE_MISMATCH or HM_ERR_HASH_MISMATCH. Once only (the digests are
 * finished): _commit then publishes (or drops) on that verdict, and may run on another thread. */
int store_writer_check(struct store_writer *w);

/*
 * Verify and publish: the file is made read-only and renamed into blobs/ (replacing a copy of the same
 * content there: the file under a blob's name is the one last verified). On success the blob is in the store, and
 * sha256_out (65 bytes, may be NULL) holds its hex name. On a size or hash mismatch the partial file
 * is deleted and HM_ERR_SIZE_MISMATCH / HM_ERR_HASH_MISMATCH returned; on an I/O error -errno with the
 * partial file kept for resume. Either way *w is freed and set to NULL.
 */
int store_writer_commit(struct store_writer **w, char *sha256_out);

/*
 * With a bucket behind the store, a content bigger than the local cache's bound (a sync's fetch, a
 * user's upload, a bundle's entry: not a fill of the cache, sha256 and size known, nothing written
 * yet) is streamed straight into the bucket as it comes, never whole on local disk: _stream switches
 * w to that (true), or leaves it as it is (false). Each byte is then hashed and handed to a multipart
 * upload (store_bucket_put_*; _write waits while 16 MiB are queued for it) completed by _commit only
 * once the whole hashed to the content, under the content's stripe lock as any put (gc's reap never
 * crosses it); nothing is kept in the cache, and there is no partial file to follow (a reader of one
 * must not ask for it).
 * _abort drops the upload whatever keep_partial says: a fetch resumed by a new writer (after a kill,
 * or a writer aborted) starts from zero; one that keeps the writer across a reset goes on from
 * _offset. _streams: whether w was switched.
 */
bool store_writer_stream(struct store_writer *w);
/* Whether a content of size bytes is one _stream switches to the bucket (a bucket behind the store,
 * and bigger than its cache's bound). */
bool store_streams_size(const struct store *s, int64_t size);
bool store_writer_streams(const struct store_writer *w);
/* Stop writing; keep_partial keeps the bytes for a later resume. Frees *w; accepts NULL. */
void store_writer_abort(struct store_writer **w, bool keep_partial);

/*
 * Uploads in parts (Git LFS multipart): the parts of upload id (8-64 lowercase hex, the upload's own:
 * no two uploads share one) of content oid go into a file of that upload's own, each written in place.
 * _parts_open: the file for one part's writer, locked shared so that no completion takes it while it
 * writes; pwrite the part's range into it, then close it (the lock goes with it) and mark the part
 * with _parts_done once it came whole. Returns the descriptor, -EBUSY (the upload is being completed),
 * -EINVAL or -errno.
 */
int store_parts_open(struct store *s, const char *oid, const char *id);
/* Mark part (1-based) of the upload whole. Returns 0 or -errno. */
int store_parts_done(struct store *s, const char *oid, const char *id, int part);
/*
 * Complete an upload of nparts parts: its file is taken off its name and locked alone (a part writer
 * that opened it before can no longer write it), every part must be marked whole, and the bytes, read
 * back from the file, must be expect->size (required) and hash to expect->sha256 (required); then the
 * file is made read-only and published, its Xet identity (computed in the same read) beside it as the
 * writer leaves one (store-xet.h). Returns 0; -ENOENT (no part came); -EBUSY (a part is still
 * being written: nothing changed, or the upload starts over when a retried part made a new file);
 * HM_ERR_SIZE_MISMATCH with *missing the first part not marked (nothing changed) or, *missing 0, the
 * file not of the size (dropped); HM_ERR_HASH_MISMATCH (dropped); -errno (dropped).
 */
int store_parts_commit(struct store *s, const struct store_expect *expect, const char *id,
			      int nparts, int *missing);
/* Forget an upload in parts (its files deleted). */
void store_parts_drop(struct store *s, const char *oid, const char *id);

/*
 * An upload in parts of a content bigger than the local cache, with a bucket behind the store
 * (store_streams_size): streamed into the bucket, never whole on local disk (store-parts-stream.c).
 * The parts feed one streamed writer in file order: the part whose turn it is goes in as its bytes
 * come; one ahead of its turn is spooled (an unlinked file in tmp/: 4 parts of an upload at once,
 * more while the spooled parts of every upload stay within half the cache's bound) and goes in,
 * from a thread of the upload's own, once it is whole and its turn came.
 * _new: expect's sha256 and size (both required), parts of part_size bytes (the last one shorter).
 * Returns 0, -EINVAL (no bucket, or the content within the cache's bound), or the writer's error.
 * _ref takes one more reference; _free drops one, and the last aborts an upload not committed.
 * NULL-safe.
 */
struct store_parts_stream;
struct store_parts_piece;
int store_parts_stream_new(struct store *s, const struct store_expect *expect, int64_t part_size,
			   struct store_parts_stream **out);
struct store_parts_stream *store_parts_stream_ref(struct store_parts_stream *ps);
void store_parts_stream_free(struct store_parts_stream **ps);
/* One part's bytes (1-based): *out to write them to, then end. Returns 0; -EALREADY (the part came
 * whole before: its bytes are not wanted again); -EBUSY (it is arriving now, or the upload is being
 * completed); -EAGAIN (no room to spool it: send the earlier ones first); -EPIPE or another
 * error (the upload is broken: a part that went in live was cut short and sent again with other
 * bytes, or the bucket failed; start it again); -EINVAL (no such part). A live part cut short may
 * come again: its bytes that went in are compared, not taken twice. */
int store_parts_stream_part(struct store *s, struct store_parts_stream *ps, int part,
			    struct store_parts_piece **out);
/* Bytes the part still lacks. */
int64_t store_parts_piece_left(const struct store_parts_piece *p);
/* Returns 0, HM_ERR_SIZE_MISMATCH (more than the part has: nothing taken), or -errno / the bucket's
 * error (then end it: the part is dropped, or the upload broken). */
int store_parts_piece_write(struct store_parts_piece *p, const void *data, size_t n);
/* The part ends: whole, it is in (or spooled for its turn); short, it is dropped and may come again
 * (a live one's bytes that went in are kept to be compared). Frees *p. Returns 0 when it was taken
 * whole. */
int store_parts_piece_end(struct store_parts_piece **p);
/* Complete: every part must be whole (else HM_ERR_SIZE_MISMATCH with *missing the first that is not,
 * nothing changed; -EBUSY while one arrives); then the spooled ones go in, and the writer commits:
 * the bucket's upload completed only if the whole hashed to the content and is of its size
 * (HM_ERR_HASH_MISMATCH / HM_ERR_SIZE_MISMATCH: aborted, nothing under the id). Once it got that far
 * the upload is spent, whatever the result (a later call gives it again). */
int store_parts_stream_commit(struct store_parts_stream *ps, int *missing);

/* Delete a partial file (its path, as store_each gives it) unless a writer has it now, or may be
 * about to (a dot name under a minute old: a private writer's file before its lock): 0, -EBUSY (in
 * use: kept), or -errno. */
int store_partial_remove(const char *path);

/* Is name one of the store's partial files (a content being written, or an upload's parts): gc deletes
 * those older than its age. */
bool store_is_partial(const char *name);

#endif

/* ---- maintenance (gc, verify) ---- */

/* Delete a blob file. Returns 0, -ENOENT, or -errno. */
int store_remove(struct store *s, const char *sha256);

/*
 * Delete a blob unless a writer wants it: it is moved aside (<dir>/trash/) first, then wanted(ud,
 * sha256) is asked (1: keep, 0: delete, < 0: an error, kept), and it is put back when wanted. A writer
 * records its claim (a catalog hold) before it looks for a content, so the two cannot cross: either
 * wanted sees the claim, or the writer's look finds nothing and it writes the content again. With a
 * bucket, the look waits on the reap instead (a lock of the data directory's) and nothing is moved;
 * wanted may say STORE_REAP_SHARED (another mirror on the bucket names it: kept), a content the
 * bucket deletes goes to the bucket's trash first (store_bucket_trash_expire), and a content the
 * bucket got at or after the cutoff (store_reap_cutoff) is kept as STORE_REAP_YOUNG, as one
 * a writer is putting now. Returns 0 (deleted), 1 (kept), STORE_REAP_SHARED, STORE_REAP_YOUNG,
 * -ENOENT, or -errno (wanted's error: kept).
 */
#define STORE_REAP_SHARED 2
#define STORE_REAP_YOUNG 3
/* With a bucket: its contents last written at or after cutoff (unix seconds, the bucket's clock) are
 * kept by store_reap; INT64_MAX (the default): no age is looked at. */
void store_reap_cutoff(struct store *s, int64_t cutoff);
int store_reap(struct store *s, const char *sha256, int (*wanted)(void *ud, const char *sha256),
		      void *ud);
/* What a reap cut short (a crash) left aside: put back when wanted, else deleted. *restored: how many
 * went back. Returns 0 or an error. */
int store_trash_sweep(struct store *s, int (*wanted)(void *ud, const char *sha256), void *ud,
			     size_t *restored);
/* With a bucket, store_reap moves a content's object to the bucket's trash rather than deleting it
 * (store_bucket_trash: another mirror sharing the bucket may count on it from the moment its age was
 * looked at), and a look at a content that misses it there (store_has, store_reuse, a fill of the
 * cache, store_check) puts it back from the trash first. This is gc's pass over the trash, after
 * store_reap_cutoff: what wanted names is put back, what is older than the cutoff and unwanted goes
 * (store_bucket_trash_sweep). Without a bucket: 0, nothing done. */
struct store_bucket_trash_stats;
int store_bucket_trash_expire(struct store *s, int (*wanted)(void *ud, const char *sha256), void *ud,
			      struct store_bucket_trash_stats *st);

/* Move a blob that failed verification to <dir>/quarantine/<sha256>.<unix time> (kept for a human
 * to look at; never served). Returns 0 or -errno. */
int store_quarantine(struct store *s, const char *sha256);

/* Re-hash a stored blob: *ok tells whether it hashes to its name; *size is its size. Returns 0,
 * -ENOENT, or -errno. */
int store_check(struct store *s, const char *sha256, bool *ok, int64_t *size);

/* The git blob id of a stored blob (out: 41 bytes, lowercase hex) and its size. With a bucket, one the
 * cache does not hold is hashed from ranged reads (store_read), never brought in, and its sha256 checked
 * in the same pass. Returns 0, -ENOENT, HM_ERR_HASH_MISMATCH (the bucket's copy is not the content),
 * another code of the bucket's, or -errno. */
int store_git_oid(struct store *s, const char *sha256, char *out, int64_t *size);

/* With a bucket behind the store (store/bucket.h): abort the unfinished uploads to it older than age_s
 * (a writer's that a crash cut short). *aborted counts them. Without one: 0, nothing done. */
int store_sweep_uploads(struct store *s, int64_t age_s, int64_t *aborted);
/*
 * Bytes [off, off + len) of the content into buf, all of them, from where the store has it, bringing
 * it nowhere: the local file when blobs/ holds it (the directory's store, or the cache's copy, its
 * access time left alone), else, with a bucket, a ranged read of the bucket (nothing enters the cache).
 * For a reader that goes through contents once without serving them, such as a snapshot's torrent
 * hashed from a bucket far bigger than the cache. Thread-safe (the hashing threads call it at once).
 * Returns 0; -ENOENT (no such content); HM_ERR_SIZE_MISMATCH (it ends before off + len); or another
 * error, with *errmsg (malloc'd, if errmsg) saying what failed (the bucket's words).
 */
int store_read(struct store *s, const char *sha256, int64_t off, void *buf, size_t len, char **errmsg);
/*
 * A small content's bytes, whole, in memory (*buf, malloc'd, with a NUL after the last byte; *len
 * bytes), from where the store has them, bringing it nowhere (store_read: the local file, else with a
 * bucket ranged reads of its object; nothing enters the cache), and checked against its sha256 before
 * they are given: a copy that hashes to another (the bucket's object damaged) is HM_ERR_HASH_MISMATCH,
 * logged, never read as the content. For a snapshot's config.json, .gitattributes, card. local_only:
 * never ask the bucket (for a caller on serve's loop, which must not wait on it): -EAGAIN when only
 * the bucket holds it (the caller reads it again on a worker). Returns 0; -EFBIG (bigger than max);
 * -ENOENT; -EINVAL (a malformed sha256); HM_ERR_SIZE_MISMATCH or another error, with *errmsg
 * (malloc'd, if errmsg) naming the content and what failed.
 */
int store_slurp(struct store *s, const char *sha256, size_t max, bool local_only, char **buf, size_t *len,
		char **errmsg);
/*
 * A content of the bucket's brought into the cache while a reader follows it (a server sending it as it
 * comes): _fill_begin makes the fill's own private writer (*w; its partial file at
 * store_writer_path, which the reader opens at once), _fill_run (blocking: a worker's) reads the
 * bucket into it (size: _fill_begin's), calling progress(ud, bytes) with what the partial file holds as
 * it grows (the last byte only once the whole hashed to its name, the cache's room made, before the
 * fsync; a big content is hashed on a thread of its own, behind the writes), and commits it or drops
 * it; *w is freed either way. Returns 0,
 * -ENOENT (no such content), HM_ERR_HASH_MISMATCH / HM_ERR_SIZE_MISMATCH (the bucket's bytes are not
 * it: nothing kept) or another error. Without a bucket, _fill_begin is -ENOENT.
 */
int store_fill_begin(struct store *s, const char *sha256, int64_t size, struct store_writer **w);
int store_fill_run(struct store *s, const char *sha256, struct store_writer **w,
			  int64_t size, void (*progress)(void *ud, int64_t bytes), void *ud);
/* The writer's partial file (borrowed). */
const char *store_writer_path(const struct store_writer *w);
/* Whether the store keeps its contents in a bucket (and blobs/ is a bounded cache of them). */
bool store_in_bucket(const struct store *s);
/* The bucket behind the store (borrowed; NULL: none), for a server's reads on its loop
 * (store_bucket_loop_new); and the store's folder for temporary files (tmp/, borrowed). */
struct store_bucket *store_bucket_of(const struct store *s);
const char *store_tmp_dir(const struct store *s);

/* Call fn for every file under blobs/ (with a bucket: every object under the bucket's blobs/, path then
 * being the cache's, which may not be there; name: what it is called, may not be a valid hash) and, with
 * partials, every .part file in tmp/ (with its age in seconds). Stops at fn's first non-zero. */
int store_each(struct store *s, bool partials,
		      int (*fn)(void *ud, const char *name, const char *path, int64_t age_s), void *ud);
