/*
 * s3.h - the S3 API's grammar, the one place it is read (docs/protocols/s3.md): path-style paths,
 * buckets and keys, the answers' XML, and AWS Signature Version 4 as a server checks it. The mirror's
 * routes (mirror/serve/routes-s3.c) read S3 requests through this.
 *
 * Buckets are the hubs' repo kinds: hf (Hugging Face models), hf-datasets, ms (ModelScope models),
 * ms-datasets. A key is ORG/NAME/REV/PATH: REV a branch, a tag or a commit id, with a '/' of a ref
 * written %2F and a '%' %25 (refs/pr/1 is refs%2Fpr%2F1), so that a revision is always one segment.
 */
#ifndef HM_HUB_S3_H
#define HM_HUB_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;

/* ---- buckets and keys ---- */

/* The hub ("hf" | "ms") and repo type ("model" | "dataset") of a bucket (static strings); -1 for a
 * bucket that is none of the four. */
int s3_bucket(const char *bucket, const char **hub, const char **type);
/* The bucket of a hub and type; NULL for none. */
const char *s3_bucket_name(const char *hub, const char *type);

/* A path-style path (raw, percent-encoded, without the query; any prefix already taken off): "/" is
 * the service (*bucket and *key NULL), "/B" or "/B/" a bucket (*key NULL), "/B/K" an object. Both
 * decoded, malloc'd. Returns 0, or -1 for a path that is not one (a bad escape, a NUL). */
int s3_path_parse(const char *raw_path, char **bucket, char **key);

struct s3_key {
	char *name;     /* ORG/NAME */
	char *rev;      /* the revision, %2F and %25 decoded */
	char *path;     /* the file's path in the repo ("" when the key ends at the revision) */
};
/* Split a key ORG/NAME/REV/PATH (PATH may be empty when the key is ORG/NAME/REV/). Returns 0, or -1
 * when the key has fewer parts or an empty one before PATH (nothing to free then). */
int s3_key_parse(const char *key, struct s3_key *k);
void s3_key_release(struct s3_key *k);
/* A revision as a key's segment: '%' as %25, '/' as %2F. Malloc'd. */
char *s3_rev_segment(const char *rev);

/* Is the request signed the AWS way: an Authorization header of Signature Version 4 (or of version
 * 2, which a server refuses in S3's words), or a presigned URL's X-Amz-Credential? At a server's root
 * such a request is S3's. authz and raw_query may be NULL. */
bool s3_signed(const char *authz, const char *raw_query);
/* The rest of a path under the /s3 prefix ("" for "/s3" itself, "/B/K" for "/s3/B/K"), or NULL. */
const char *s3_under_prefix(const char *path);
/* With the operator's S3 host name domain (serve --s3-domain): is host (a Host header's value, a port
 * allowed) that name (path-style; *bucket NULL) or BUCKET.domain (virtual-host style; *bucket the
 * bucket, lowercased, malloc'd)? false for any other host or none. */
bool s3_host_bucket(const char *host, const char *domain, char **bucket);

/* ---- queries ---- */

/* Does the raw query have parameter name (with or without a value; names compared decoded)? */
bool s3_query_has(const char *raw_query, const char *name);
/* Its value, decoded (malloc'd; "" for a parameter without '='), or NULL. */
char *s3_query_get(const char *raw_query, const char *name);

/* ---- answers ---- */

/* s with XML's five special characters escaped, appended to b. */
void s3_xml_add(struct buf *b, const char *s);
/* An error document: <Error><Code>..</Code><Message>..</Message><Resource>..</Resource>
 * <RequestId>..</RequestId></Error> (resource may be NULL). Malloc'd. */
char *s3_error_xml(const char *code, const char *message, const char *resource, const char *request_id);
/* An object's ETag (with its quotes) from its content's SHA-256: in the shape of a multipart object's
 * ("SHA256-1"), not an MD5's, so that tools which check an MD5 ETag (s3cmd, rclone) leave it alone.
 * out: 80 bytes. */
void s3_etag(const char *sha256, char out[80]);
/* An HTTP date (RFC 7231, "Thu, 03 Dec 2026 06:00:00 GMT") of t into out (30 bytes), and an ISO 8601
 * one as listings give ("2026-12-03T06:00:00.000Z", 25 bytes). */
void s3_http_date(int64_t t, char out[30]);
void s3_iso_date(int64_t t, char out[25]);
/* Parse an HTTP date (the three forms RFC 7231 accepts); -1 when it is none. */
int64_t s3_parse_http_date(const char *s);

/* ---- AWS Signature Version 4 ---- */

struct s3_sig {
	char access_key[129];
	char scope_date[9];     /* YYYYMMDD */
	char region[65];
	char service[33];
	char amz_date[17];      /* YYYYMMDDTHHMMSSZ: X-Amz-Date (header or query) */
	char signature[65];     /* lowercase hex */
	char *signed_headers;   /* "host;x-amz-content-sha256;x-amz-date", as the client listed them */
	int64_t expires;        /* a presigned URL's X-Amz-Expires (seconds), 0 for a signed header */
	bool presigned;
};

/* The request's signature: from authz (its Authorization header, may be NULL) or, when that is
 * absent, from the query's X-Amz-* (a presigned URL); amz_date_header is its X-Amz-Date header (may be
 * NULL). Returns 0; 1 when the request carries none (anonymous); -1 when it carries one this cannot
 * read (another scheme, a field missing or malformed, signed headers without host, a query naming a
 * parameter twice): *why (static) says what. */
int s3_sig_parse(const char *authz, const char *raw_query, const char *amz_date_header, struct s3_sig *out,
		 const char **why);
void s3_sig_release(struct s3_sig *s);
/* The time of an X-Amz-Date, or -1. */
int64_t s3_amz_time(const char *amz_date);

/* The signature the request should carry, as lowercase hex into out, for the secret key: header(ud,
 * NAME) gives a header's value (NULL when absent), payload_hash is the x-amz-content-sha256 the client
 * sent (a header signature; NULL: the hash of an empty body) and is UNSIGNED-PAYLOAD for a presigned
 * URL. The canonical request takes the raw path as sent (S3 signs it unnormalised) and the query less
 * X-Amz-Signature, each name and value encoded again as SigV4 says. Returns 0, -1 when the query cannot
 * be decoded. */
int s3_sig_expected(const struct s3_sig *s, const char *secret, const char *method, const char *raw_path,
		    const char *raw_query, const char *(*header)(void *ud, const char *name), void *ud,
		    const char *payload_hash, char out[65]);

#endif
