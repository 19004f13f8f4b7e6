/*
 * s3-int.h - between the S3 client's files: the object, one request on its multi handle, the XML
 * answers. s3.c: the object, requests and the calls of one request each; s3-upload.c: uploads;
 * s3-list.c: listings and the XML they and errors come in; s3-loop.c: reads on a libuv loop.
 */
#ifndef HM_STORE_S3_INT_H
#define HM_STORE_S3_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "base/buf.h"
#include "s3.h"

struct store_s3 {
	char *endpoint;             /* no '/' at its end */
	char *bucket;
	char *prefix;               /* "" or "a/b/" */
	char *sigv4;                /* "aws:amz:REGION:s3" */
	char *userpwd;              /* "ACCESS:SECRET": only ever given to libcurl */
	char *token_header;         /* "x-amz-security-token: ..." or NULL */
	size_t part_size;
	int parallel;
	long connect_timeout_ms;
	long stall_s;
	int page;
	int tries;
	CURLM *multi;
	char errcode[64];
	char *errmsg;
};

/* One request, on the object's multi handle from store__start() until done. */
struct store__req {
	struct store_s3 *s;
	CURL *h;
	struct curl_slist *hdrs;
	char *what;                 /* "GET key" for messages: never a credential or a query */
	/* the body sent: bytes of memory, owned when own is set */
	const char *src;
	size_t src_len, src_off;
	char *own;
	/* the answer */
	long status;
	struct buf body;            /* an answer's XML (bounded), or an error's, when not streamed */
	int (*sink)(void *ud, const void *data, size_t n);
	void *ud;
	int64_t want_off, want_len; /* a ranged GET: what the answer must be */
	bool checked;               /* a ranged GET's answer found to be the range asked */
	int sink_err;
	char etag[80];
	int64_t length;             /* Content-Length, -1 when absent */
	int64_t mtime;
	char content_range[96];
	int part;                   /* an upload's part number, 0 else */
	int tries;                  /* its sends that failed so far */
	void (*on_done)(void *ud, int result); /* a read on a loop (s3-loop.c): its end, from the loop */
	struct store__req *next;    /* a loop's reads in flight */
	bool done;
	CURLcode cc;
	char errbuf[CURL_ERROR_SIZE];
};

/* A request of method on key (NULL: the bucket itself) with query (NULL: none), written in the
 * canonical form SigV4 signs: names sorted, values encoded (store__escape), "name=" for no value.
 * libcurl before 8.3 signs the query as written, so it has to be written that way. */
struct store__req *store__req_new(struct store_s3 *s, const char *method, const char *key, const char *query);
/* Send n bytes of data as the body (PUT, or POST with a Content-Type of XML); take: data is
 * malloc'd and now the request's. */
void store__req_body(struct store__req *r, const char *data, size_t n, bool take);
void store__req_free(struct store__req **r);
void store__start(struct store__req *r);
/* Drive every request of s until r is done. */
void store__wait(struct store__req *r);
/* Drive every request of s until one more of them is done. */
void store__wait_any(struct store_s3 *s);
/* Move every request of s on, waiting up to wait_ms for one of them to be able to. */
void store__pump(struct store_s3 *s, int wait_ms);
/* r's outcome as the header's codes, with errcode/errmsg set when it failed. */
int store__result(struct store__req *r);
/* A ranged GET of key to sink, ready to start (store_s3_get's, and a loop's read). */
struct store__req *store__get_req(struct store_s3 *s, const char *key, int64_t off, int64_t len,
				  int (*sink)(void *ud, const void *data, size_t n), void *ud);
/* Whether r may be sent again (it failed for want of an answer, or with the server's trouble, and
 * handed no byte on) and has tries left; then it is made ready to be, after a pause that grows with
 * its tries. */
bool store__again(struct store__req *r);
/* Start r, wait for it (sending it again while store__again), and give its outcome. */
int store__run(struct store__req *r);

/* Add x-amz-copy-source naming src (relative to the prefix) to r's headers. */
void store__copy_source(struct store__req *r, const char *src);

/* s URI-encoded as SigV4 wants (all but A-Z a-z 0-9 - . _ ~; '/' kept when keep_slash). Caller frees. */
char *store__escape(const char *s, bool keep_slash);

/* The text of the first element named name under the document's root element (NULL: not there);
 * and the root's name. Caller frees; body may be any bytes (an answer not XML gives NULLs). */
char *store__xml_get(const char *body, size_t n, const char *name);
char *store__xml_root(const char *body, size_t n);

#endif
