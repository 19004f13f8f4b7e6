/*
 * floor-read-int.h - the read floor of mirror/serve/ (floor-read.c): what every front that answers a
 * read stands on. Nothing outside this folder includes it; routes-int.h does, for every front.
 */
#ifndef HM_MIRROR_FLOOR_READ_INT_H
#define HM_MIRROR_FLOOR_READ_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct catalog_repo;
struct httpd_req;
struct mirror_ondemand_file;
struct mirror_routes;

/* The operator token of a request (Authorization: Bearer, or ModelScope's m_session_id cookie), in
 * buf; NULL when none. */
const char *mirror__request_token(const struct httpd_req *req, char *buf, size_t cap);

/* The repos this request may not read, for listings to leave out (mirror_access_hidden); malloc'd
 * JSON or NULL. */
char *mirror__hidden(const struct mirror_routes *rt, const struct httpd_req *req);
/* The same for a request acting with token (NULL: anonymous). */
char *mirror__hidden_for(const struct mirror_routes *rt, const char *token);
/* May a file of the snapshot, of content sha256, be sent from the store's copy? 1: yes (or the store
 * lacks it: fetched on demand as any absent content); 0: the store holds it for another repo and this
 * provisional snapshot may not name it yet, its bytes come from its own upstream first
 * (catalog_snapshot_trusts); < 0: a catalog error. */
int mirror__file_trusted(struct mirror_routes *rt, int64_t snapshot_id, const char *sha256);
/* Answer req (its headers added) with file f of snapshot snapshot_id: from the store when the snapshot
 * may name its content (mirror__file_trusted), else fetched on demand (f->untrusted set here). Returns
 * 0 when answered, -1 when it cannot be now: the caller answers 503 in its hub's words. */
int mirror__send_file(struct mirror_routes *rt, struct httpd_req *req, int64_t snapshot_id,
		      struct mirror_ondemand_file *f);
/* May this request see the repo here (mirror_access_visible, with its token)? A route answers for one
 * it may not as for a repo the mirror does not have: the same status, body and headers. */
bool mirror__repo_visible(const struct mirror_routes *rt, const struct httpd_req *req, const struct catalog_repo *r);

/* Our own origin as the client reached it ("http://host:port"), honouring X-Forwarded-Proto/Host
 * from a --trusted-proxy only. Caller frees. */
char *mirror__self_base(const struct httpd_req *req);

/* Answer with the bytes of blob sha256 (size bytes) as application/octet-stream, honouring one
 * "bytes=" Range (206, or 416 with the size), an empty file being a plain 200 to any Range. The
 * caller adds its own headers (ETag, ...) first. Returns 0 when answered, -1 when the store has no
 * such blob (verify quarantined it): nothing was sent, the caller answers 503 in its own style. With a
 * bucket behind the store, a content not in the local cache is streamed from it as a worker brings it
 * into the cache (verified once whole), or straight from the bucket for a far range and for a content
 * bigger than the cache's bound: 0, the answer coming later (a 503 when the bucket cannot give it). */
int mirror__send_blob(struct mirror_routes *rt, struct httpd_req *req, const char *sha256, int64_t size);

/* Where a Range's first byte must be, at least, for it to be read straight from the bucket rather than
 * through the cache's fill from the content's start (floor-bucket.c), for a content within the cache's
 * bound; one bigger than the bound is always read straight (store_streams_size). */
#define MIRROR__BUCKET_DIRECT_FROM ((int64_t)4 << 20)
/* Answer req with bytes [a, b] of content sha256 (size bytes), read straight from the store's bucket as
 * the client takes them, the cache left as it is (floor-bucket.c): 206 with its Content-Range, or with
 * whole a 200 of the whole ([0, size - 1]). A read of the whole (a whole, or a range of every byte) is
 * hashed as it comes, its last byte held back until the whole hashed to sha256. 0 when answered (a body
 * cut short, its connection closed, if the bucket fails on the way or its bytes are not the content's),
 * -1 when nothing was sent. On the loop. */
int mirror__bucket_range_send(struct mirror_routes *rt, struct httpd_req *req, const char *sha256, int64_t size,
			      int64_t a, int64_t b, bool whole);
/* The same read of the content's bytes [f0, f1) (f1 > f0), framed: head (head_len bytes, copied) before
 * them and zeros zero bytes after (an image's tar layer, hub/oci.h: its header, the file, the tail; a
 * Range of the layer cut with hub_oci_tar_span): a 200, or with content_range (the header's value) a
 * 206 of that range. A read of every byte of the content is hashed as it comes, its last byte
 * (and so the zeros) held back until the whole hashed to sha256. 0 when answered, -1 when nothing was
 * sent. On the loop. */
int mirror__bucket_framed_send(struct mirror_routes *rt, struct httpd_req *req, const char *content_range,
			       const char *sha256, int64_t size, const void *head, size_t head_len, int64_t f0,
			       int64_t f1, int64_t zeros);
/* An unlinked file in dir (the store's tmp/), read and written, for an answer's spool: O_TMPFILE, or a
 * name made and unlinked on a filesystem without it. The descriptor, or -1 (errno set). */
int mirror__bucket_spool_open(const char *dir);
/* serve stops: the reads from the bucket in flight are cancelled, their loop's handles closed. */
void mirror__bucket_reads_stop(struct mirror_routes *rt);

/* A repo's tier headers (X-Hubmirror-Tier, X-Hubmirror-Origin-Checked) on a metadata answer, for a
 * mirror that syncs from this one (docs/deployment.md); nothing before its first sync. */
void mirror__tier_headers(struct httpd_req *req, const struct catalog_repo *r);

/* May this request read repo (hub, type, name; r its row when the caller has it, else NULL)? If not,
 * the refusal has been answered (401 without a valid token, 403 with one) in the style of hub ("hf",
 * "ms" or NULL for plain JSON). With r, a private repo of the mirror's own is its grantees' alone
 * (mirror_access_private_allows). */
bool mirror__access_check(struct mirror_routes *rt, struct httpd_req *req, const char *hub, const char *type,
			  const char *name, const struct catalog_repo *r, const char *style);
/* The refusal mirror__access_check answers: 401 with a challenge without a valid token (had_token
 * false), 403 with one, in the style of style ("hf", "ms", "git" or NULL for plain JSON). */
void mirror__refuse(struct httpd_req *req, bool had_token, const char *style);
/* Is r a private repo of the mirror's own (a local namespace's)? */
bool mirror__private_local(const struct catalog_repo *r);
/* May anyone read r, without a token (not a private local repo, not guarded by the tokens file)? Its
 * swarm is then open, and needs no capability. */
bool mirror__anyone_reads(const struct mirror_routes *rt, const struct catalog_repo *r);

#endif
