/*
 * store-int.h - between the store's files (store.c, store-parts*.c, store-maint.c, cache.c,
 * store-behind.c, store-xet.c; store/ only): what the writer hands the identity file's code, the one
 * helper both read blobs with, the bucket's side, and a fill's hash behind its writes (the bucket
 * backend's own files share bucket-int.h).
 */
#ifndef HM_STORE_STORE_INT_H
#define HM_STORE_STORE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/types.h>

struct store_writer;
struct store_bucket;
struct xet_identity;

struct store {
	char *dir;
	char *blobs;
	char *tmp;
	char *trash;    /* a content gc moved aside while it asks whether a writer holds it (store_reap) */
	/* With a bucket (store/bucket.h): every content is there, and blobs/ is a cache of them, bounded */
	struct store_bucket *bucket;  /* NULL: the directory is the store */
	int64_t cache_max;            /* bytes blobs/ keeps at most once a write or a fill is over */
	_Atomic int64_t cached;       /* about what blobs/ holds (exact after each trim) */
	pthread_mutex_t trim_lock;
	char *locks;                  /* <dir>/locks: a content's stripe of the bucket's lock (below) */
	int64_t reap_cutoff;          /* store_reap_cutoff */
};

/* With a bucket, a look at a content (store_has) and its put hold its stripe's lock shared, and
 * gc's reap of it exclusive, so that a reap (asked, then deleted) never crosses them; a stripe is the
 * file locks/<h0h1>, one of 256. Returns the descriptor to close, or -errno. how: LOCK_SH, LOCK_EX,
 * with LOCK_NB (-EWOULDBLOCK when taken). */
int store__stripe_lock(const struct store *s, const char *sha256, int how);

/* ---- the bucket's side (cache.c) ---- */
/* Open the configured bucket for s (none: 0, s->bucket NULL); 0 or an error. */
int store__bucket_open(struct store *s);
void store__bucket_close(struct store *s);
/* Put the content in fd (verified as it streams) into the bucket: 0 or an error (logged). */
int store__bucket_put(struct store *s, int fd, const char *sha256, int64_t size);
/* Bring a content of the bucket's into blobs/, verified. 0 or an error (logged). */
int store__fill(struct store *s, const char *sha256);
/* A content the bucket lacks put back from its trash (store_bucket_restore), said in the log. 0,
 * HM_ERR_NOT_FOUND (not there either) or an error. */
int store__restore(const struct store *s, const char *sha256, int64_t size);
/* n bytes came into blobs/: past the bound, the least recently read contents go (each one only once
 * the bucket is seen to hold it), but keep, the content just come (NULL: none). */
void store__cached(struct store *s, int64_t n, const char *keep);
/* The local path of a blob, whether it is there or not. Caller frees. */
char *store__blob_local(const struct store *s, const char *sha256);
/* Mark a writer as a fill of the cache (its commit does not put the content back in the bucket). */
void store__writer_fill(struct store_writer *w);

/* ---- a fill's hash behind its writes (store-behind.c) ---- */
/* A thread that hashes into ctx (the writer's SHA-256, its alone until _finish) the buffers handed to
 * it, in order; it owns a ring of buffers of bufcap bytes each, *first the writer's to fill. _swap
 * queues full (n bytes) to be hashed and gives back an empty buffer, waiting while none is; _finish
 * (NULL-safe, sets *b NULL) hashes what is queued, stops the thread and frees every buffer (the
 * writer's too): 0, or -ENOMEM if a digest update failed. _new: 0 or -errno (no thread). */
struct store__behind;
int store__behind_new(EVP_MD_CTX *ctx, size_t bufcap, struct store__behind **b, char **first);
char *store__behind_swap(struct store__behind *b, char *full, size_t n);
int store__behind_finish(struct store__behind **b);

/* Is fd the file that path names now? A writer that opened a partial file by its name and then got
 * its lock may hold a file another writer published (renamed into blobs/) in between: never write it. */
bool store__fd_is_path(int fd, const char *path);
/* A random name part: 16 lowercase hex. */
void store__nonce16(char out[17]);
/* ctx's digest in lowercase hex into hexout (twice its size, and a NUL). 0 or -ENOMEM. */
int store__finish_digest(EVP_MD_CTX *ctx, char *hexout);

/* The store's root folder. */
const char *store__dir(const struct store *s);
/* Read fd from its start to its end in 1 MiB chunks, each passed to fn (a non-zero return stops).
 * Returns 0 with the bytes read in *total, fn's non-zero, or -errno. */
int store__read_chunks(int fd, int (*fn)(void *ud, const void *data, size_t n), void *ud, int64_t *total);
/* Write id (finished) as blob sha256's identity file, atomically. 0 or -errno. */
int store__xet_save(const struct store *s, const char *sha256, const struct xet_identity *id);
/* Delete blob sha256's identity file, if there is one. */
void store__xet_drop(const struct store *s, const char *sha256);

#endif
