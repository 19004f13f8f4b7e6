/*
 * bucket-int.h - between the bucket backend's files (store/ only): bucket.c (the process's bucket, its
 * pool of S3 clients and counters, contents put and read), bucket-trash.c (gc's trash), bucket-live.c
 * (the listing of contents and the mirrors' live sets) and bucket-stage.c (the staging area). Each
 * call takes a client of the pool and gives it back, so that every file's calls are counted alike.
 */
#ifndef HM_STORE_BUCKET_INT_H
#define HM_STORE_BUCKET_INT_H

#include <stdint.h>
#include <time.h>

#include <openssl/types.h>

struct store_bucket;
struct store_s3;

/* A client of b's pool (NULL: none could be made), the call's clock started; give it back with _give,
 * which notes the call's result r and the bytes it moved for the counters (store_bucket_stats) and
 * store_bucket_errmsg, and returns r. */
struct store_s3 *store__bucket_take(struct store_bucket *b);
int store__bucket_give(struct store_bucket *b, struct store_s3 *s, int r, int64_t bytes_in, int64_t bytes_out);
/* Count bytes a call moved while it goes on (a stream's chunks, before its client is given back). */
void store__bucket_count(int64_t bytes_in, int64_t bytes_out);
/* When this thread's call began (_take sets it), and set back: a call that takes a second client for
 * a while (the trash's copy through this process) keeps the first call's whole time counted. */
int64_t store__bucket_call_start(void);
void store__bucket_call_resume(int64_t start_us);
/* Say msg as this thread's last failure (store_bucket_errmsg), over what _give noted. */
void store__bucket_say(const char *msg);

/* ctx's SHA-256 in lowercase hex into out. 0 or -EIO. */
int store__bucket_hex(EVP_MD_CTX *ctx, char out[65]);
/* An S3 listing's time, "2026-12-06T20:10:00.000Z", in unix seconds; 0 when unreadable (taken as old). */
time_t store__bucket_time(const char *when);

#endif
