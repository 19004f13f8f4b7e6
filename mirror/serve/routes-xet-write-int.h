/*
 * routes-xet-write-int.h - what the Xet write side's files share (routes-xet-write.c: the write
 * token, the CAS's bodies, xorbs, the dedup query, the route; routes-xet-write-records.c: the tables
 * of xorbs, files and lent xorbs, kept on disk; routes-xet-write-shard.c: a shard's files rebuilt,
 * verified and stored). Nothing outside this folder includes it.
 */
#ifndef HM_MIRROR_ROUTES_XET_WRITE_INT_H
#define HM_MIRROR_ROUTES_XET_WRITE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct catalog_repo;
struct httpd_req;
struct mirror__commit_body;
struct mirror__xetw;
struct mirror_routes;
struct xet_hash;
struct xet_xorb;

#define MIRROR__XETW_XORB_KEEP_S (24 * 3600) /* an uploaded xorb waits this long for the shard that names it */
#define MIRROR__XETW_FILE_HOLD_S (24 * 3600) /* a file a shard made is kept this long for its commit */
#define MIRROR__XETW_LEND_S (24 * 3600)      /* a virtual xorb the dedup query lent a repo may be named this long */

/* ---- the tables (routes-xet-write-records.c); each call takes x's lock ---- */

/* Where xorb h's bytes are kept on local disk (DATA/xet-uploads/HEX), without a bucket: malloc'd. */
char *mirror__xetw_xorb_path(const struct mirror__xetw *x, const struct xet_hash *h);
/* Whether xorbs are kept in the bucket's staging area (store/bucket.h) rather than on local disk. */
bool mirror__xetw_staged(const struct mirror__xetw *x);
/* Keep xorb h's bytes buf[0..n) (checked already: xorb, as they read) for repo_id: its local file, or
 * its object in the bucket's staging area and its table beside it. 0 or an error. */
int mirror__xetw_xorb_put(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id,
			  const unsigned char *buf, size_t n, const struct xet_xorb *xorb);
/* The table of staged xorb h of repo_id, as its upload's check read it (no bytes: its chunks' hashes,
 * offsets and sizes, checked against h), from the bucket (mirror__xetw_staged only): a new xorb in
 * *out. 0, HM_ERR_NOT_FOUND (not kept), -EIO (a table that does not read back), or an error. */
int mirror__xetw_xorb_table(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id,
			    struct xet_xorb **out);
/* Bytes [off, off + len) (len < 0: to its end) of the staged xorb h of repo_id to sink, from the
 * bucket (mirror__xetw_staged only). 0, HM_ERR_NOT_FOUND (not kept), or an error. */
int mirror__xetw_xorb_get(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id, int64_t off,
			  int64_t len, int (*sink)(void *ud, const void *data, size_t n), void *ud);
/* Record xorb h as repo_id's (again: its time starts over); the xorbs past their time go. */
void mirror__xetw_xorb_keep(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id);
/* Did repo_id upload xorb h, and is it still kept? */
bool mirror__xetw_xorb_owned(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id);
/* Record virtual xorb h (run `run` of content sha) as lent to repo_id (its time starts over). */
void mirror__xetw_lend_keep(struct mirror__xetw *x, const struct xet_hash *h, const char *sha, uint32_t run,
			    int64_t repo_id);
/* Was virtual xorb h lent to repo_id, in its time? Its content and run into sha and *run. */
bool mirror__xetw_xorb_lent(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id, char sha[65],
			    uint32_t *run);
/* Record the file (content sha, size bytes) a shard made for repo_id (its time starts over). */
void mirror__xetw_file_keep(struct mirror__xetw *x, const struct xet_hash *h, const char *sha, int64_t size,
			    int64_t repo_id);

/* ---- the CAS's bodies (routes-xet-write.c) ---- */

/* The spooled body of a CAS upload, or its refusal answered (NULL). */
struct mirror__commit_body *mirror__xet_cas_body(struct httpd_req *req);
/* The spooled body whole in memory (it is bounded: XET_XORB_MAX_BYTES, XET_SHARD_MAX_BYTES), *n its
 * length; NULL when it cannot be read. */
unsigned char *mirror__xet_body_bytes(const struct mirror__commit_body *s, size_t *n);

/* ---- a shard (routes-xet-write-shard.c) ---- */

/* POST {cas}/shards of repo (its write was checked): the shard's files rebuilt, verified and stored,
 * on the write lane of the threadpool. */
void mirror__xet_shard_post(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo);

#endif
