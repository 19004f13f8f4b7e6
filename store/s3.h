/*
 * s3.h - an S3 object client (AWS S3, Ceph RADOS Gateway, any S3-compatible store), the store's
 * bucket backend-to-be (issue #52: the store does not use it yet).
 *
 * One struct store_s3 per bucket (and prefix): every key given to it is relative to the prefix.
 * Requests are signed by libcurl (CURLOPT_AWS_SIGV4) with an unsigned payload over the transport
 * (x-amz-content-sha256: UNSIGNED-PAYLOAD: bodies stream, and are not read twice to be hashed), and
 * run on one libcurl multi handle the object owns, several at once where it helps: a multipart
 * upload keeps up to `parallel` parts in flight while the caller writes the next one. The calls
 * below block until their transfers end (the multi handle is driven with curl_multi_poll); one
 * thread at a time per object. A server reads without blocking its loop through store_s3_loop
 * (below): the same requests on a multi handle of the loop's, driven by libuv as hub/http's are.
 *
 * A request that got no answer (no connection, reset) or the server's own trouble (500, 502, 503,
 * 504) before any byte of it was handed on is sent again, `tries` times in all, 0.25 s after the
 * first failure and twice as long after each next one (8 tries: ~32 s, a gateway restarted); a part
 * of an upload the same. A read that broke after bytes went to its sink is the caller's to resume
 * (from where it broke), and reads on a loop are not sent again (yet).
 *
 * Errors: 0, or HM_ERR_CURL (the endpoint did not answer: libcurl's words), HM_ERR_AUTH (the keys
 * are refused: InvalidAccessKeyId, SignatureDoesNotMatch), -EACCES (they are known and lack the
 * permission: AccessDenied), HM_ERR_NOT_FOUND (404: no such key, upload or bucket; the code tells
 * which), HM_ERR_HTTP (any other answer), HM_ERR_UPSTREAM (an answer we cannot read), or a code the
 * caller's sink returned. store_s3_errcode()/store_s3_errmsg() then say more of the last failure.
 * Credentials are never logged nor put in a message.
 */
#ifndef HM_STORE_S3_H
#define HM_STORE_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

struct store_s3;

struct store_s3_config {
	const char *endpoint;       /* "https://host[:port]", no path; NULL: https://s3.REGION.amazonaws.com */
	const char *bucket;
	const char *prefix;         /* "" or NULL: the bucket's root; else "a/b" (a '/' is added) */
	const char *region;         /* NULL: us-east-1 */
	const char *access_key;
	const char *secret_key;
	const char *session_token;  /* NULL: none (else sent as x-amz-security-token) */
	size_t part_size;           /* a multipart upload's part; 0: 16 MiB; at least 5 MiB (S3's least) */
	int parallel;               /* parts in flight at once; 0: 4 */
	long connect_timeout_ms;    /* 0: 10 s */
	long stall_s;               /* a transfer that moves no byte this long fails; 0: 60 s */
	int page;                   /* a listing's page (max-keys, max-uploads); 0: the server's (1,000) */
	int tries;                  /* sends of a request in all (see above); 0: 8; 1: never again */
};

/* s3://BUCKET[/PREFIX] into its bucket and prefix (without slashes at its ends; "" when none), both
 * malloc'd. Returns 0, or -EINVAL with *why (static) saying what is wrong. */
int store_s3_url_parse(const char *url, char **bucket, char **prefix, const char **why);

/* A client of c's bucket; every string of c is copied. Returns 0 or -EINVAL (*why static). */
int store_s3_new(const struct store_s3_config *c, struct store_s3 **out, const char **why);
/* NULL-safe; sets *s to NULL. */
void store_s3_free(struct store_s3 **s);

/* S3's error code of the last failed call ("NoSuchBucket"), "" when it had none (a transport
 * failure); and words for a person: libcurl's, or the HTTP status, S3's code and message. Static
 * storage of the object, valid until its next call. */
const char *store_s3_errcode(const struct store_s3 *s);
const char *store_s3_errmsg(const struct store_s3 *s);

/* What HEAD says of an object. */
struct store_s3_stat {
	int64_t size;
	char etag[80];              /* as sent, quotes removed */
	int64_t mtime;              /* Last-Modified, unix seconds; 0 when unreadable */
};
int store_s3_head(struct store_s3 *s, const char *key, struct store_s3_stat *st);

/* Bytes [off, off + len) of key (len < 0: to its end), streamed to sink as they arrive; a non-zero
 * return of sink ends the transfer with that code. An answer that is not that range is refused
 * (HM_ERR_UPSTREAM) before any byte reaches sink. */
int store_s3_get(struct store_s3 *s, const char *key, int64_t off, int64_t len,
		 int (*sink)(void *ud, const void *data, size_t n), void *ud);

/* Put a small object from memory in one request. */
int store_s3_put(struct store_s3 *s, const char *key, const void *data, size_t n);

int store_s3_delete(struct store_s3 *s, const char *key);

/* Copy the object onto itself (CopyObject, its metadata replaced): the same bytes, a new Last-Modified.
 * Up to the 5 GiB a single copy may be (bigger: HM_ERR_UPSTREAM, as the gateway says). Returns 0,
 * HM_ERR_NOT_FOUND, or another code. */
int store_s3_touch(struct store_s3 *s, const char *key);
/* Copy object src to key on the server (CopyObject): up to the 5 GiB a single copy may be, as touch.
 * key's Last-Modified is the copy's. Returns 0, HM_ERR_NOT_FOUND (no src), or another code. (A copy in
 * parts, UploadPartCopy, is not offered: its two headers x-amz-copy-source and -range share a prefix,
 * and Debian 12's libcurl, 7.88, orders them in what it signs otherwise than the gateway does: RGW
 * answers SignatureDoesNotMatch.) */
int store_s3_copy(struct store_s3 *s, const char *src, const char *key);

/* An object written as it streams: nothing is visible under key until store_s3_upload_commit()
 * (a multipart upload once more than one part's bytes came, one PUT at commit else); abort, or a
 * failure, leaves nothing (the parts sent are dropped by AbortMultipartUpload). */
struct store_s3_upload;
int store_s3_upload_begin(struct store_s3 *s, const char *key, struct store_s3_upload **out);
int store_s3_upload_write(struct store_s3_upload *u, const void *data, size_t n);
/* The parts on their way move only while a call of the upload's drives them: a writer whose bytes come
 * slowly (a fetch streamed into the bucket) pumps between its writes, waiting up to wait_ms for one to
 * move on. Returns the upload's first failure (0: none); _busy: parts are on their way. */
int store_s3_upload_pump(struct store_s3_upload *u, int wait_ms);
bool store_s3_upload_busy(const struct store_s3_upload *u);
/* Complete and free *u (set to NULL) whatever the result. */
int store_s3_upload_commit(struct store_s3_upload **u);
/* Drop what was sent and free *u (set to NULL); NULL-safe. */
void store_s3_upload_abort(struct store_s3_upload **u);
/* The upload's id once it became multipart, else NULL (borrowed). */
const char *store_s3_upload_id(const struct store_s3_upload *u);

/* One listed object, or one unfinished multipart upload (upload_id set). key is relative to the
 * prefix. Borrowed for the callback. */
struct store_s3_entry {
	const char *key;
	int64_t size;               /* -1 for an upload */
	const char *upload_id;      /* NULL for an object */
	const char *when;           /* LastModified or Initiated as S3 writes it (ISO 8601) */
};
/* Every object whose key starts with prefix (relative; "" for all), page after page (ListObjectsV2),
 * in key order; a non-zero return of fn stops the walk with that code. */
int store_s3_list(struct store_s3 *s, const char *prefix, int (*fn)(void *ud, const struct store_s3_entry *e),
		  void *ud);
/* Every unfinished multipart upload under prefix (ListMultipartUploads), page after page. */
int store_s3_uploads(struct store_s3 *s, const char *prefix, int (*fn)(void *ud, const struct store_s3_entry *e),
		     void *ud);
/* Abort one unfinished upload: its parts are dropped. */
int store_s3_upload_drop(struct store_s3 *s, const char *key, const char *upload_id);

/* Reads on a libuv loop: every transfer of it runs on loop (libcurl's multi socket interface on
 * uv_poll and a uv_timer), several at once, and ends in a callback on the loop. One per loop, used
 * from the loop's thread only; its store_s3 must outlive it, and is free for blocking calls the while. */
struct store_s3_loop;
int store_s3_loop_new(struct store_s3 *s, uv_loop_t *loop, struct store_s3_loop **out);
/* Start a read of [off, off + len) of key (len < 0: to its end; len == 0 is -EINVAL, nothing
 * started) as store_s3_get() does it: sink gets the bytes on the loop as they arrive; done(ud,
 * result) runs once, on the loop, never from inside this call, with 0 or the codes of s3.h
 * (store_s3_errcode()/errmsg() say more while it runs). */
int store_s3_loop_get(struct store_s3_loop *l, const char *key, int64_t off, int64_t len,
		      int (*sink)(void *ud, const void *data, size_t n), void (*done)(void *ud, int result), void *ud);
/* Reads started and not yet done. */
size_t store_s3_loop_active(const struct store_s3_loop *l);
/* Cancel the reads in flight (each done with -ECANCELED, at once), close the loop's handles (run the
 * loop after, for their close callbacks) and free. NULL-safe; sets *l to NULL. */
void store_s3_loop_free(struct store_s3_loop **l);

/* Whether the bucket takes what a store does, step by step with a probe object of its own under
 * key (a few bytes): write it, stat and read it back, find it listed, delete it and find it gone.
 * Returns 0, or the first failure's code with *step ("write", "stat", "read", "list", "delete"), and
 * store_s3_errcode()/errmsg() of it. The probe is deleted on every path where it was written. */
int store_s3_probe(struct store_s3 *s, const char *key, const char **step);

#endif
