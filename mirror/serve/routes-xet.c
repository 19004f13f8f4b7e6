/*
 * routes-xet.c - the Xet CAS's reads (docs/protocols/xet.md): xet-read-token, reconstructions (v1
 * and v2, with Range) and xorb byte ranges, all from the plain stored file.
 *
 * The mirror keeps no xorbs. A file's "virtual xorbs" are its chunks (its identity, store-xet.h) cut
 * into runs of at most MIRROR__XET_XORB_MAX bytes as a xorb would hold them uncompressed (an 8-byte
 * header before each chunk; floor-xet.c), each named by the xorb hash of its chunks; a byte range
 * of one is planned on a worker and sent from the loop as pieces: headers from memory, chunk data
 * from the blob with sendfile (httpd_respond_spliced). The URLs a reconstruction hands out carry a
 * capability of their own (a fetch token of xet-token.h, bound to the repo and to that run of that
 * content), since clients fetch them as presigned URLs, without the access token. Everything that
 * reads the store runs on a worker, but for the blob's bytes, which the loop sends with sendfile as
 * it sends a plain file's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/http/httpd.h"
#include "hub/xet/xet.h"
#include "mirror/data.h"
#include "store/store-xet.h"
#include "store/store.h"
#include "access.h"
#include "routes-int.h"
#include "xet-token.h"

#define FETCH_TTL 900                 /* seconds a fetch URL lives (a 403 makes clients ask again) */
#define MAX_RANGES 1024               /* ranges in one xorb request */
#define BOUNDARY "hubmirror-xet-3c9f1e7a5d2b4086"
#define XORB_PIECE ((size_t)8 << 20)  /* one read of the bucket, for a xorb of a content the cache never holds */

/* ---- virtual xorbs ------------------------------------------------------------------------------ */

/* Where chunk k of run r starts in the run's bytes (its header). */
static uint64_t run_offset(const struct xet_chunk *c, const struct mirror__xet_run *r, size_t k)
{
	uint64_t off = 0;

	for (size_t i = 0; i < k; i++)
		off += XET_XORB_CHUNK_HEADER_LEN + c[r->first + i].size;
	return off;
}

/* ---- xet-read-token ----------------------------------------------------------------------------- */

void mirror__xet_read_token(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
			    const char *commit)
{
	char buf[512], *base, *tok;
	const char *caller = mirror__request_token(req, buf, sizeof(buf));
	int64_t exp = (int64_t)time(NULL) + MIRROR__XET_TOKEN_TTL;
	struct mirror_xet_claims c = { MIRROR_XET_READ, repo->id, repo->hub, repo->type, repo->name,
				       (char *)commit, exp };

	mirror__hf_cors(req);
	tok = rt->have_xet_key ? mirror_xet_token_make(rt->access, rt->p2p_key, caller, &c) : NULL;
	if (!tok) {
		mirror__hf_error(req, 503, NULL, "Xet tokens are not available on this mirror", NULL);
		return;
	}
	base = mirror__self_base(req);
	/* the CAS is ours, at the address the client reached us by: every Xet read comes back here */
	httpd_add_header(req, "X-Xet-Access-Token", tok);
	httpd_add_headerf(req, "X-Xet-Token-Expiration", "%" PRId64, exp);
	httpd_add_headerf(req, "X-Xet-Cas-Url", "%s" MIRROR__XET_CAS, base);
	httpd_add_header(req, "Cache-Control", "no-store");
	mirror__respond_json(req, 200, json_pack("{s:s, s:I, s:s+}", "accessToken", tok, "exp", (json_int_t)exp,
						 "casUrl", base, MIRROR__XET_CAS));
	free(tok);
	free(base);
}

/* ---- the CAS's requests: whose, checked on the loop ---------------------------------------------- */

/* The repo a token (untrusted) names, and whether the token gives scope over it (subject: what a
 * fetch token must name). The repo's content policy too, as for every read. 0 with *r filled (the
 * caller releases it), or answered (401, 403 or 404) and -1. */
static int cas_repo(struct mirror_routes *rt, struct httpd_req *req, const char *token, enum mirror_xet_scope scope,
		    const char *subject, struct catalog_repo *r)
{
	struct mirror_xet_claims c;
	const char *why = "no Xet token";
	int e = -1;

	if (!token || mirror_xet_token_parse(token, &c))
		goto refuse;
	e = catalog_repo_get(rt->data->catalog, c.hub, c.type, c.name, r);
	mirror_xet_claims_release(&c);
	if (e) {
		why = "the token's repo is not here";
		goto refuse;
	}
	if (!rt->have_xet_key ||
	    !mirror_xet_token_allows(rt->access, rt->p2p_key, token, scope, r, subject, (int64_t)time(NULL), &why)) {
		catalog_repo_release(r);
		goto refuse;
	}
	if (!mirror_access_content_open(rt->access, r)) {
		catalog_repo_release(r);
		why = "the repo's content is closed on this mirror";
		goto refuse;
	}
	return 0;
refuse:
	/* a 403 on a fetch URL makes @huggingface/hub ask for a new reconstruction (a fresh capability) */
	httpd_add_header(req, "X-Error-Message", why);
	httpd_respond_str(req, token ? 403 : 401, "text/plain", "Xet access refused\n");
	return -1;
}

/* The Bearer token of the request: the Xet access token (never an operator's: it is not one). */
static char *bearer(const struct httpd_req *req)
{
	const char *h = httpd_header(req, "Authorization");

	if (!h || strncasecmp(h, "Bearer ", 7))
		return NULL;
	return xstrdup(h + 7);
}

/* ---- reconstructions ---------------------------------------------------------------------------- */

struct recon_job {
	struct mirror__job j;
	struct store *store;         /* borrowed: the data directory's */
	struct mirror_access *access;       /* a reference: a reload may swap the routes' */
	unsigned char key[32];
	struct catalog_repo repo;           /* the token's, checked; what its fetch URLs are bound to */
	char file_hash[XET_HEX_LEN + 1];
	bool v2;
	int range;                          /* 0: the whole file; 1: [a, b] (b < 0: to the end) */
	int64_t a, b;
	char *base;
};

/* The fetch URL of run idx of content sha256, with its capability. NULL when none can be made. */
static char *fetch_url(struct recon_job *rj, const char *sha256, size_t idx)
{
	char *subject = xasprintf("%s/%zu", sha256, idx), *cap, *url = NULL;
	struct mirror_xet_claims c = { MIRROR_XET_FETCH, rj->repo.id, rj->repo.hub, rj->repo.type, rj->repo.name,
				       subject, (int64_t)time(NULL) + FETCH_TTL };

	cap = mirror_xet_token_make(rj->access, rj->key, NULL, &c);
	if (cap)
		url = xasprintf("%s" MIRROR__XET_CAS "/xorb/%s?cap=%s", rj->base, subject, cap);
	free(cap);
	free(subject);
	return url;
}

/* Add run ri's chunks [s, e) (indexes in the run) to the answer: a term, and where to fetch it. */
static void add_term(struct recon_job *rj, const char *sha256, const struct xet_chunk *c,
		     const struct mirror__xet_run *r, size_t ri, size_t s, size_t e, json_t *terms, json_t *where)
{
	char hex[XET_HEX_LEN + 1], *url = fetch_url(rj, sha256, ri);
	uint64_t unpacked = 0, from = run_offset(c, r, s), to = run_offset(c, r, e) - 1;
	json_t *list, *entry;

	for (size_t k = s; k < e; k++)
		unpacked += c[r->first + k].size;
	mirror__xet_run_hash(c, r, hex);
	json_array_append_new(terms, json_pack("{s:s, s:I, s:{s:I, s:I}}", "hash", hex, "unpacked_length",
					       (json_int_t)unpacked, "range", "start", (json_int_t)s, "end",
					       (json_int_t)e));
	if (rj->v2)
		entry = json_pack("{s:s?, s:[{s:{s:I, s:I}, s:{s:I, s:I}}]}", "url", url, "ranges", "chunks", "start",
				  (json_int_t)s, "end", (json_int_t)e, "bytes", "start", (json_int_t)from, "end",
				  (json_int_t)to);
	else
		entry = json_pack("{s:{s:I, s:I}, s:s?, s:{s:I, s:I}}", "range", "start", (json_int_t)s, "end",
				  (json_int_t)e, "url", url, "url_range", "start", (json_int_t)from, "end",
				  (json_int_t)to);
	/* two runs of equal chunks have one hash: both fetch entries go under it */
	list = json_object_get(where, hex);
	if (!list)
		json_object_set_new(where, hex, list = json_array());
	json_array_append_new(list, entry);
	free(url);
}

/* The answer for bytes [a, b] of a file of chunks c[0..nc). */
static json_t *recon_json(struct recon_job *rj, const char *sha256, const struct xet_chunk *c, size_t nc,
			  int64_t a, int64_t b)
{
	json_t *terms = json_array(), *where = json_object();
	struct mirror__xet_run *runs = NULL;
	size_t nr = mirror__xet_runs(c, nc, &runs), first = nc, last = 0;
	int64_t skip = 0;

	for (size_t i = 0; i < nc; i++) {
		if (first == nc && (int64_t)(c[i].offset + c[i].size) > a) {
			first = i;
			skip = a - (int64_t)c[i].offset;
		}
		if ((int64_t)c[i].offset <= b)
			last = i;
	}
	for (size_t ri = 0; first < nc && ri < nr; ri++) {
		size_t lo = runs[ri].first, hi = lo + runs[ri].n;   /* [lo, hi) */
		if (hi <= first || lo > last)
			continue;
		add_term(rj, sha256, c, &runs[ri], ri, (first > lo ? first : lo) - lo,
			 (last + 1 < hi ? last + 1 : hi) - lo, terms, where);
	}
	free(runs);
	return json_pack("{s:I, s:o, s:o}", "offset_into_first_range", (json_int_t)skip, "terms", terms,
			 rj->v2 ? "xorbs" : "fetch_info", where);
}

static void recon_build(struct mirror__job *j, struct catalog *cat)
{
	struct recon_job *rj = (struct recon_job *)j;
	struct xet_identity *id = NULL;
	const struct xet_chunk *c;
	char sha[65], got[XET_HEX_LEN + 1];
	int64_t size, a = 0, b;
	size_t nc;
	int e = catalog_repo_xet_file(cat, rj->repo.id, rj->file_hash, sha, &size);

	if (!e)
		e = store_xet_identity(rj->store, sha, &id);   /* computed again here when it must be */
	if (e) {
		j->status = e == HM_ERR_NOT_FOUND || e == -ENOENT ? 404 : 503;
		j->body = json_pack("{s:s}", "error", e == HM_ERR_NOT_FOUND || e == -ENOENT
			? "no file of this repo has that Xet hash here" : "the file cannot be read now");
		return;
	}
	xet_hash_hex(xet_identity_file_hash(id), got);
	size = (int64_t)xet_identity_size(id);
	b = size - 1;
	if (rj->range) {
		a = rj->a;
		if (rj->b >= 0 && rj->b < b)
			b = rj->b;
	}
	if (strcmp(got, rj->file_hash)) {
		/* the catalog's word and the bytes disagree: the bytes win, and this is not that file */
		j->status = 404;
		j->body = json_pack("{s:s}", "error", "no file of this repo has that Xet hash here");
	} else if (rj->range && (a >= size || a > b)) {
		j->status = 416;
		j->body = json_pack("{s:s}", "error", "range not satisfiable");
		mirror__job_header(j, "Content-Range", "bytes */%" PRId64, size);
	} else {
		c = xet_identity_chunks(id, &nc);
		j->status = 200;
		j->body = recon_json(rj, sha, c, nc, a, b);
	}
	xet_identity_free(&id);
}

static void recon_release(struct mirror__job *j)
{
	struct recon_job *rj = (struct recon_job *)j;

	mirror_access_free(&rj->access);
	catalog_repo_release(&rj->repo);
	free(rj->base);
	free(rj);
}

/* "bytes=A-B" or "bytes=A-" (a file's range in a reconstruction request): 1 and [*a, *b] (*b -1: to
 * the end), 0 when absent, -1 when malformed. */
static int file_range(const char *h, int64_t *a, int64_t *b)
{
	char *end;
	long long x, y = -1;

	if (!h)
		return 0;
	if (strncmp(h, "bytes=", 6) || h[6] < '0' || h[6] > '9')
		return -1;
	x = strtoll(h + 6, &end, 10);
	if (*end++ != '-')
		return -1;
	if (*end) {
		if (*end < '0' || *end > '9')
			return -1;
		y = strtoll(end, &end, 10);
		if (*end || y < x)
			return -1;
	}
	*a = x;
	*b = y;
	return 1;
}

static void cas_reconstruction(struct mirror_routes *rt, struct httpd_req *req, const char *hash, bool v2)
{
	struct recon_job *rj;
	struct catalog_repo r;
	char *token = bearer(req);
	int64_t a = 0, b = -1;
	int range = file_range(httpd_header(req, "Range"), &a, &b);

	httpd_set_route(req, v2 ? "xet_reconstruction_v2" : "xet_reconstruction");
	if (!hex_is_lower(hash, XET_HEX_LEN) || range < 0) {
		httpd_respond_str(req, 400, "text/plain", "bad file hash or range\n");
		free(token);
		return;
	}
	if (cas_repo(rt, req, token, MIRROR_XET_READ, NULL, &r)) {
		free(token);
		return;
	}
	free(token);
	rj = xcalloc(1, sizeof(*rj));
	rj->j.build = recon_build;
	rj->j.release = recon_release;
	rj->store = rt->data->store;
	rj->access = rt->access ? mirror_access_ref(rt->access) : NULL;
	memcpy(rj->key, rt->p2p_key, 32);
	rj->repo = r;
	memcpy(rj->file_hash, hash, XET_HEX_LEN + 1);
	rj->v2 = v2;
	rj->range = range;
	rj->a = a;
	rj->b = b;
	rj->base = mirror__self_base(req);
	mirror__defer(rt, req, &rj->j);
}

/* ---- xorb ranges -------------------------------------------------------------------------------- */

struct xorb_job {
	struct mirror__job j;
	struct store *store;
	char sha256[65];
	size_t idx;
	char *range;            /* the Range header, or NULL */
};

/* A xorb range's body as pieces (httpd_respond_spliced): chunk headers and multipart framing made
 * here, in mem; chunk data as pieces of the blob, which the loop sends with sendfile. */
struct splice {
	struct buf mem;
	struct httpd_part *parts;
	size_t n, cap;
};

/* Add len bytes: of the blob from off (file), or of bytes (copied). Pieces that follow each other in
 * the same place are one. */
static void splice_add(struct splice *s, bool file, uint64_t off, const void *bytes, uint64_t len)
{
	struct httpd_part *last = s->n ? &s->parts[s->n - 1] : NULL;

	if (!len)
		return;
	if (!file) {
		off = s->mem.len;
		buf_add(&s->mem, bytes, (size_t)len);
	}
	if (last && last->file == file && last->off + last->len == off) {
		last->len += len;
		return;
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->parts = xreallocarray(s->parts, s->cap, sizeof(*s->parts));
	}
	s->parts[s->n++] = (struct httpd_part){ off, len, file };
}

/* Add the run's bytes [from, to]: each chunk's header, then its bytes in the blob. */
static void xorb_bytes(const struct xet_chunk *c, const struct mirror__xet_run *r, uint64_t from, uint64_t to,
		       struct splice *s)
{
	uint64_t off = 0;

	for (size_t k = r->first; k < r->first + r->n && off <= to; k++) {
		unsigned char hdr[XET_XORB_CHUNK_HEADER_LEN];
		uint64_t data = off + XET_XORB_CHUNK_HEADER_LEN, end = data + c[k].size, lo, hi;   /* [off, end) */
		if (end > from) {
			xet_xorb_chunk_header_write(hdr, c[k].size);
			lo = from > off ? from : off;
			hi = to + 1 < end ? to + 1 : end;
			if (lo < data)
				splice_add(s, false, 0, hdr + (lo - off), (hi < data ? hi : data) - lo);
			if (hi > data) {
				uint64_t d0 = (lo > data ? lo : data) - data;
				splice_add(s, true, c[k].offset + d0, NULL, hi - data - d0);
			}
		}
		off = end;
	}
}

/* The body of ranges r[0..n) of the run (one range: its bytes; several: multipart/byteranges). */
static void xorb_body(const struct xet_chunk *c, const struct mirror__xet_run *run, uint64_t (*r)[2], size_t n,
		      struct splice *s)
{
	for (size_t i = 0; i < n; i++) {
		if (n > 1) {
			char *h = xasprintf("--" BOUNDARY "\r\nContent-Type: application/octet-stream\r\n"
					    "Content-Range: bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64 "\r\n\r\n", r[i][0],
					    r[i][1], run->len);
			splice_add(s, false, 0, h, strlen(h));
			free(h);
		}
		xorb_bytes(c, run, r[i][0], r[i][1], s);
		if (n > 1)
			splice_add(s, false, 0, "\r\n", 2);
	}
	if (n > 1)
		splice_add(s, false, 0, "--" BOUNDARY "--\r\n", strlen("--" BOUNDARY "--\r\n"));
}

/* A content bigger than the cache's bound that the cache does not hold: the run's chunks read from the
 * store's bucket (store_read: never brought into the cache, which it would pass over its bound), each
 * hashed to its Xet chunk hash, into an unlinked file of the answer's own at their offsets in the
 * content (the rest of it a hole, the file as long as the content): at most a xorb's bytes on local
 * disk while the answer goes out. fd, or -errno (HM_ERR_HASH_MISMATCH: the bucket's bytes are not the
 * content's, logged). On a worker. */
static int xorb_spool(struct store *store, const char *sha256, const struct xet_chunk *c, size_t nc,
		      const struct mirror__xet_run *run)
{
	int fd = mirror__bucket_spool_open(store_tmp_dir(store)), r = 0;
	size_t k = run->first, end = run->first + run->n, cap = 0;
	unsigned char *buf = NULL;
	char *msg = NULL;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)(c[nc - 1].offset + c[nc - 1].size)) < 0)
		r = -errno;
	while (k < end && !r) {
		size_t j = k, len = 0;
		while (j < end && (j == k || len + c[j].size <= XORB_PIECE))
			len += c[j++].size; /* (a run's chunks follow each other in the content) */
		if (len > cap)
			buf = xrealloc(buf, cap = len);
		r = store_read(store, sha256, (int64_t)c[k].offset, buf, len, &msg);
		for (size_t i = k; !r && i < j; i++) {
			struct xet_hash h;
			xet_chunk_hash(buf + (c[i].offset - c[k].offset), c[i].size, &h);
			if (memcmp(h.b, c[i].hash.b, sizeof(h.b)))
				r = HM_ERR_HASH_MISMATCH;
		}
		if (!r && pwrite(fd, buf, len, (off_t)c[k].offset) != (ssize_t)len)
			r = -EIO;
		k = j;
	}
	if (r && !msg)
		msg = xstrdup(r == HM_ERR_HASH_MISMATCH ? "a chunk is not the content's (the bucket's copy damaged)"
							: err_str(r));
	if (r)
		log_warn("serve", "a xorb of %.12s from the store's bucket: %s", sha256, msg);
	free(msg);
	free(buf);
	if (r)
		close(fd);
	return r ? r : fd;
}

/* The blob of the run, open, when it holds every byte its chunks name: fd, or -errno. */
static int xorb_blob(struct store *store, const char *sha256, const struct xet_chunk *c, size_t nc,
		     const struct mirror__xet_run *run)
{
	/* one bigger than the cache's bound: its copy when the cache holds one, never brought in */
	bool big = nc && store_streams_size(store, (int64_t)(c[nc - 1].offset + c[nc - 1].size));
	char *path = big ? store_cache_path(store, sha256) : store_blob_path(store, sha256);
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -ENOENT;
	struct stat st;

	if (big && fd < 0) {
		free(path);
		return xorb_spool(store, sha256, c, nc, run);
	}
	if (path && fd < 0)
		fd = -errno;
	free(path);
	if (fd >= 0 && (fstat(fd, &st) || (nc && (uint64_t)st.st_size < c[nc - 1].offset + c[nc - 1].size))) {
		close(fd);
		fd = -EIO;   /* a blob shorter than its chunks: the loop could not send what it promised */
	}
	return fd;
}

static void xorb_build(struct mirror__job *j, struct catalog *cat)
{
	struct xorb_job *xj = (struct xorb_job *)j;
	struct xet_identity *id = NULL;
	struct mirror__xet_run *runs = NULL;
	struct splice s = { .parts = NULL, .n = 0, .cap = 0 };
	uint64_t (*r)[2] = NULL;
	size_t nc, nr = 0, n = 1;
	int fd = -1, e, rn;

	(void)cat;
	buf_init(&s.mem);
	e = store_xet_identity(xj->store, xj->sha256, &id);
	if (!e) {
		const struct xet_chunk *c = xet_identity_chunks(id, &nc);
		nr = mirror__xet_runs(c, nc, &runs);
		if (xj->idx >= nr) {
			e = -ENOENT;
			goto out;
		}
		r = xcalloc(MAX_RANGES, sizeof(*r));
		r[0][0] = 0;
		r[0][1] = runs[xj->idx].len - 1;
		/* at most the run's length in all: overlapping ranges may not ask it many times over (the
		 * pieces of the answer are planned here, in memory) */
		rn = xj->range ? httpd_parse_ranges(xj->range, runs[xj->idx].len, runs[xj->idx].len, r, MAX_RANGES) : 1;
		if (rn < 0) {
			j->status = 416;
			j->ctype = "text/plain";
			j->text = xstrdup("range not satisfiable\n");
			j->len = strlen(j->text);
			mirror__job_header(j, "Content-Range", "bytes */%" PRIu64, runs[xj->idx].len);
			goto out;
		}
		n = (size_t)rn;
		fd = xorb_blob(xj->store, xj->sha256, c, nc, &runs[xj->idx]);
		e = fd < 0 ? fd : 0;
		if (!e)
			xorb_body(c, &runs[xj->idx], r, n, &s);
	}
out:
	if (e) {
		j->status = e == -ENOENT ? 404 : 503;
		j->ctype = "text/plain";
		j->text = xstrdup(e == -ENOENT ? "no such xorb\n" : "the xorb cannot be read now\n");
		j->len = strlen(j->text);
	} else if (!j->status) {
		/* the body goes out from the loop as the socket takes it: nothing of the blob is read here */
		j->status = xj->range ? 206 : 200;
		j->ctype_own = xstrdup(n > 1 ? "multipart/byteranges; boundary=" BOUNDARY : "application/octet-stream");
		if (xj->range && n == 1)
			mirror__job_header(j, "Content-Range", "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, r[0][0],
					   r[0][1], runs[xj->idx].len);
		j->fd = fd;
		fd = -1;
		j->parts = s.parts;
		j->nparts = s.n;
		j->part_mem = buf_detach(&s.mem, &j->part_mem_len);
		s.parts = NULL;
	}
	if (fd >= 0)
		close(fd);
	buf_release(&s.mem);
	free(s.parts);
	free(r);
	free(runs);
	xet_identity_free(&id);
}

static void xorb_release(struct mirror__job *j)
{
	struct xorb_job *xj = (struct xorb_job *)j;

	free(xj->range);
	free(xj);
}

/* rest: SHA256/IDX, with ?cap= */
static void cas_xorb(struct mirror_routes *rt, struct httpd_req *req, const char *rest)
{
	struct catalog_repo r;
	struct xorb_job *xj;
	const char *slash = strchr(rest, '/');
	char *cap = httpd_query_param(req, "cap"), *end = NULL;
	unsigned long idx = slash ? strtoul(slash + 1, &end, 10) : 0;

	httpd_set_route(req, "xet_xorb");
	if (!slash || slash - rest != 64 || !end || *end || end == slash + 1 || (slash[1] == '0' && slash[2])) {
		httpd_respond_str(req, 404, "text/plain", "no such xorb\n");
		free(cap);
		return;
	}
	/* the capability names this run of this content: rest itself */
	if (cas_repo(rt, req, cap, MIRROR_XET_FETCH, rest, &r)) {
		free(cap);
		return;
	}
	free(cap);
	catalog_repo_release(&r);
	xj = xcalloc(1, sizeof(*xj));
	xj->j.build = xorb_build;
	xj->j.release = xorb_release;
	xj->store = rt->data->store;
	memcpy(xj->sha256, rest, 64);
	xj->idx = idx;
	xj->range = httpd_header(req, "Range") ? xstrdup(httpd_header(req, "Range")) : NULL;
	mirror__defer(rt, req, &xj->j);
}

/* The CAS: /xet-cas/v1/reconstructions/H, /xet-cas/v2/reconstructions/H, /xet-cas/xorb/SHA/IDX. */
int mirror__route_xet(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	const char *t, *method = httpd_method(req);

	(void)arg;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		httpd_respond_str(req, 405, "text/plain", "method not allowed\n");
		return 0;
	}
	if ((t = skip_prefix(rest, "v1/reconstructions/")))
		cas_reconstruction(rt, req, t, false);
	else if ((t = skip_prefix(rest, "v2/reconstructions/")))
		cas_reconstruction(rt, req, t, true);
	else if ((t = skip_prefix(rest, "xorb/")))
		cas_xorb(rt, req, t);
	else
		httpd_respond_str(req, 404, "text/plain", "not found\n");
	return 0;
}
