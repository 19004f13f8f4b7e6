/*
 * xet-fetch.c - one content fetched through Xet into a store writer (xet-fetch.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/http/http.h"
#include "hub/hub.h"
#include "hub/upstream.h"
#include "hub/xet/xet.h"
#include "store/store.h"
#include "xet-fetch.h"

#define XET_TOKEN_MAX (64 * 1024)
#define XET_RECON_MAX (64 * 1024 * 1024)
#define XET_RECORD_MAX (XET_XORB_CHUNK_HEADER_LEN + 2 * XET_CHUNK_MAX)
#define XS_TERM_WHOLE 1  /* xs_on_body's stop: the term's chunks all came before its fetch range ended */

struct term {
	char xorb[65];
	uint32_t start, end;    /* chunks [start, end) of the xorb */
	uint64_t len;           /* their bytes, unpacked */
	char *url;              /* owned: where its bytes are (a signed URL) */
	int64_t url_start, url_end; /* inclusive */
	uint32_t url_first;     /* the chunk url_start starts at */
};

struct mirror_xet_fetch {
	struct mirror_xet_fetch_host h;  /* token_url, token and xet_hash owned copies */
	struct hub_http_req *req;       /* in flight, or NULL */
	char *access;           /* owned: the Xet read token; never logged */
	char *cas;              /* owned: the CAS's base URL */
	struct term *terms;
	size_t nterms, next;    /* the term being written */
	uint64_t pos;           /* the file's bytes the terms before `next` (and the current one's chunks) gave */
	int64_t skip;           /* the writer's offset when the attempt began: bytes below it are not written */
	struct catalog_xet_range *ranges;  /* the file's chunks, recorded once it is proven */
	size_t nranges, capranges;
	struct xet_xorb_decoder *dec;
	unsigned char *buf;     /* a fetched term's bytes not decoded yet: less than one chunk's record */
	size_t nbuf;
	uint32_t chunk;         /* the fetched term's next chunk (its index in the xorb) */
	bool term_whole;        /* its chunks all came: what its fetched range holds past them is not wanted */
	unsigned char *room;    /* one chunk, uncompressed */
	int fail;
	char *why;
	int64_t fetched;        /* bytes of xorbs received */
	bool orphan;            /* freed by its host while a request was in flight: its on_done frees it */
	/* a stored term being read (xs_local_term), resumed after a yield: its next chunk, and where the
	 * file and the ranges stood before it */
	bool lstarted;
	uint32_t lchunk;
	uint64_t lpos0;
	size_t lnr0;
};

static void xs_free(struct mirror_xet_fetch *x)
{
	free((char *)x->h.token_url);
	free((char *)x->h.token);
	free((char *)x->h.xet_hash);
	free(x->access);
	free(x->cas);
	for (size_t i = 0; i < x->nterms; i++)
		free(x->terms[i].url);
	free(x->terms);
	free(x->ranges);
	xet_xorb_decoder_free(&x->dec);
	free(x->buf);
	free(x->room);
	free(x->why);
	free(x);
}

void mirror_xet_fetch_free(struct mirror_xet_fetch **xp)
{
	struct mirror_xet_fetch *x = xp ? *xp : NULL;

	if (!x)
		return;
	*xp = NULL;
	if (x->req) {
		/* its on_done still comes (a cancelled transfer ends through it): x goes then */
		x->orphan = true;
		hub_http_cancel(x->req);
		return;
	}
	xs_free(x);
}

void mirror_xet_fetch_cancel(struct mirror_xet_fetch *x)
{
	if (x && x->req)
		hub_http_cancel(x->req);
}

bool mirror_xet_fetch_busy(const struct mirror_xet_fetch *x)
{
	return x && x->req;
}

int64_t mirror_xet_fetch_began_at(const struct mirror_xet_fetch *x)
{
	return x->skip;
}

int64_t mirror_xet_fetch_fetched(const struct mirror_xet_fetch *x)
{
	return x->fetched;
}

static void xs_set_why(struct mirror_xet_fetch *x, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void xs_set_why(struct mirror_xet_fetch *x, int err, const char *fmt, ...)
{
	va_list ap;
	char buf[512];

	if (x->fail)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	x->fail = err ? err : HM_ERR_UPSTREAM;
	free(x->why);
	x->why = xstrdup(buf);
}

/* The attempt ended: the host's turn (it may free x). */
static void xs_end(struct mirror_xet_fetch *x)
{
	x->h.on_end(x->h.ud, x, x->fail, x->why ? x->why : x->fail ? err_str(x->fail) : NULL);
}

static void xs_add_range(struct mirror_xet_fetch *x, const struct term *t, uint32_t chunk, uint32_t len,
			 const struct xet_hash *h)
{
	struct catalog_xet_range *r;

	if (x->nranges == x->capranges) {
		x->capranges = x->capranges ? 2 * x->capranges : 256;
		x->ranges = xreallocarray(x->ranges, x->capranges, sizeof(*x->ranges));
	}
	r = &x->ranges[x->nranges++];
	memset(r, 0, sizeof(*r));
	memcpy(r->xorb, t->xorb, 65);
	r->chunk = chunk;
	r->offset = (int64_t)x->pos;
	r->length = len;
	xet_hash_hex(h, r->hash);
}

/* One chunk of the file at x->pos: written (but what the writer already held), recorded. */
static int xs_put_chunk(struct mirror_xet_fetch *x, const struct term *t, uint32_t chunk, const unsigned char *data,
			uint32_t len, const struct xet_hash *h)
{
	int64_t skip = store_writer_offset(x->h.w) - (int64_t)x->pos;  /* never a byte twice */
	int r = 0;

	if (skip <= 0)  /* the whole chunk, and its hash: the identity is made of these (no second pass) */
		r = store_writer_write_chunk(x->h.w, data, len, h);
	else if (skip < (int64_t)len)
		r = store_writer_write(x->h.w, data + skip, len - (size_t)skip);
	if (r) {
		xs_set_why(x, r, "store: %s", err_str(r));
	} else {
		xs_add_range(x, t, chunk, len, h);
		if (skip < (int64_t)len && x->h.on_bytes)
			x->h.on_bytes(x->h.ud, 0, (int64_t)len - (skip > 0 ? skip : 0));
	}
	x->pos += len;
	return r;
}

/* A term every chunk of which the store holds: read and checked, chunk by chunk, each looked up as it
 * comes (xet_ranges). 1 when written, 0 when some chunk is not held (or no longer what was recorded):
 * fetch the term (what its good chunks wrote is not written again); 2 when the turn's bytes (from
 * `turn`) are read: the host's yield, then on from the same chunk. */
/* A stored chunk's bytes (r) into x->room, from where the store has them, never bringing a content into
 * the cache for one chunk of it: its file in blobs/ (the directory's, or the cache's copy), else with
 * a bucket a ranged read of it where the host allows (far_reads), else none (fetched from upstream). */
static bool stored_chunk(struct mirror_xet_fetch *x, const struct catalog_xet_range *r)
{
	char *path = store_cache_path(x->h.store, r->sha256), *why = NULL;
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1, e;
	bool ok;

	free(path);
	if (fd >= 0) {
		ok = pread(fd, x->room, r->length, r->offset) == (ssize_t)r->length;
		close(fd);
		return ok;
	}
	if (!store_in_bucket(x->h.store) || !x->h.far_reads)
		return false;
	e = store_read(x->h.store, r->sha256, r->offset, x->room, r->length, &why);
	free(why); /* (a chunk that cannot be read is fetched from upstream: nothing to say) */
	return e == 0;
}

static int xs_local_term(struct mirror_xet_fetch *x, const struct term *t, uint64_t turn)
{
	int ok = 1;

	if (!x->lstarted) {
		x->lstarted = true;
		x->lchunk = t->start;
		x->lpos0 = x->pos;
		x->lnr0 = x->nranges;
	}
	while (x->lchunk < t->end && ok && !x->fail) {
		struct catalog_xet_range r;
		struct xet_hash h, want;
		if (x->pos - turn >= x->h.local_turn)
			return 2;
		ok = !catalog_xet_range_find(x->h.catalog, t->xorb, x->lchunk, &r) && r.length > 0 &&
		     r.length <= XET_CHUNK_MAX && stored_chunk(x, &r);
		if (ok) {
			xet_chunk_hash(x->room, r.length, &h);
			ok = !xet_hash_from_hex(r.hash, &want) && !memcmp(h.b, want.b, sizeof(h.b));
		}
		if (ok) {
			xs_put_chunk(x, t, x->lchunk, x->room, r.length, &h);
			x->lchunk++;
		}
	}
	x->lstarted = false;
	if (!ok) {
		x->pos = x->lpos0;
		x->nranges = x->lnr0;
	}
	return ok;
}

/* Decode the whole chunk records at the front of x->buf, keep the rest. */
static int xs_decode(struct mirror_xet_fetch *x, const struct term *t)
{
	size_t at = 0;

	while (!x->fail && x->nbuf - at >= XET_XORB_CHUNK_HEADER_LEN) {
		const unsigned char *p = x->buf + at;
		size_t rec = XET_XORB_CHUNK_HEADER_LEN + ((size_t)p[1] | (size_t)p[2] << 8 | (size_t)p[3] << 16), used;
		struct xet_xorb_chunk_header hdr;
		struct xet_hash h;
		char *why = NULL;
		if (rec > XET_RECORD_MAX) {
			xs_set_why(x, HM_ERR_UPSTREAM, "xorb %.12s: a chunk of %zu bytes", t->xorb, rec);
			break;
		}
		if (x->nbuf - at < rec)
			break;
		if (x->chunk >= t->end) {
			/* a fetch range wider than the term (shared with other terms of the xorb): the term is
			 * whole, the transfer stops here (xs_on_body) */
			x->term_whole = true;
			at = x->nbuf;
			break;
		}
		if (xet_xorb_chunk_read(x->dec, p, rec, &hdr, x->room, &used, &why)) {
			xs_set_why(x, HM_ERR_UPSTREAM, "xorb %.12s: %s", t->xorb, why ? why : "a bad chunk");
			free(why);
			break;
		}
		if (x->chunk >= t->start) {
			xet_chunk_hash(x->room, hdr.uncompressed_size, &h);
			xs_put_chunk(x, t, x->chunk, x->room, hdr.uncompressed_size, &h);
		}
		x->chunk++;
		at += used;
	}
	memmove(x->buf, x->buf + at, x->nbuf - at);
	x->nbuf -= at;
	return x->fail;
}

static int xs_on_response(void *ud, const struct hub_http_resp *resp)
{
	struct mirror_xet_fetch *x = ud;
	const struct term *t = &x->terms[x->next];
	char want[48];
	int n = snprintf(want, sizeof(want), "bytes %lld-", (long long)t->url_start);

	if (x->orphan)
		return -ECANCELED;
	if (resp->status != 206 || !resp->content_range || strncmp(resp->content_range, want, (size_t)n)) {
		xs_set_why(x, resp->status >= 500 || resp->status == 429 ? HM_ERR_CURL : HM_ERR_UPSTREAM,
			   "xorb %.12s answered %ld%s", t->xorb, resp->status,
			   resp->status == 206 ? " at another range" : "");
		return x->fail;
	}
	return 0;
}

static int xs_on_body(void *ud, const char *data, size_t n)
{
	struct mirror_xet_fetch *x = ud;

	if (x->orphan)
		return -ECANCELED;
	x->fetched += (int64_t)n;
	if (x->h.on_bytes)
		x->h.on_bytes(x->h.ud, (int64_t)n, 0);
	while (n && !x->fail) {
		size_t take = XET_RECORD_MAX - x->nbuf < n ? XET_RECORD_MAX - x->nbuf : n;
		memcpy(x->buf + x->nbuf, data, take);
		x->nbuf += take;
		data += take;
		n -= take;
		xs_decode(x, &x->terms[x->next]);
		if (x->term_whole)
			return XS_TERM_WHOLE;
	}
	return x->fail;
}

static void xs_on_term(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct mirror_xet_fetch *x = ud;
	const struct term *t = &x->terms[x->next];

	(void)body;
	(void)len;
	x->req = NULL;
	if (x->orphan) {
		xs_free(x);
		return;
	}
	if (x->term_whole && result == XS_TERM_WHOLE)
		result = 0;
	if (!x->fail && result)
		xs_set_why(x, HM_ERR_CURL, "xorb %.12s: %s%s%s", t->xorb, err_str(result),
			   resp->transport_error ? ": " : "", resp->transport_error ? resp->transport_error : "");
	if (!x->fail && (x->nbuf || x->chunk != t->end))
		xs_set_why(x, HM_ERR_UPSTREAM, "xorb %.12s: its range ended short of the term", t->xorb);
	if (x->fail) {
		xs_end(x);
		return;
	}
	x->next++;
	mirror_xet_fetch_resume(x);
}

/* Write the terms from x->next on: the stored ones at once, up to the first to fetch, which starts;
 * after local_turn bytes of stored chunks, the host's yield (its loop's other work goes first). */
void mirror_xet_fetch_resume(struct mirror_xet_fetch *x)
{
	uint64_t turn = x->pos;

	for (; x->next < x->nterms && !x->fail; x->next++) {
		struct term *t = &x->terms[x->next];
		struct hub_http_req_opts o = {
			.url = t->url, .range_start = t->url_start, .range_len = t->url_end - t->url_start + 1,
			.on_response = xs_on_response, .on_body = xs_on_body, .on_done = xs_on_term, .ud = x,
		};
		if (!x->lstarted && x->pos + t->len <= (uint64_t)x->skip && x->pos + t->len < (uint64_t)x->h.size) {
			x->pos += t->len;  /* written by an earlier attempt: not recorded (its chunks unknown) */
			continue;
		}
		if (!x->lstarted && x->pos - turn >= x->h.local_turn) {
			x->h.yield(x->h.ud, x);
			return;
		}
		switch (xs_local_term(x, t, turn)) {
		case 2:
			x->h.yield(x->h.ud, x);
			return;
		case 1:
			continue;
		}
		if (x->fail)
			break;
		x->chunk = t->url_first;
		x->nbuf = 0;
		x->term_whole = false;
		x->req = hub_http_request(x->h.http, &o);
		if (!x->req)
			xs_set_why(x, HM_ERR_UPSTREAM, "xorb %.12s: a bad URL", t->xorb);
		else
			return;
	}
	if (!x->fail && x->pos != (uint64_t)x->h.size)
		xs_set_why(x, HM_ERR_UPSTREAM, "the reconstruction holds %llu bytes, not %lld",
			   (unsigned long long)x->pos, (long long)x->h.size);
	xs_end(x);
}

/* One term of a v1 reconstruction, with the fetch_info entry that covers it. */
static int xs_parse_term(json_t *jt, json_t *fetch, struct term *t)
{
	const char *h = NULL;
	json_int_t n = 0, a = -1, b = -1, best = -1;
	json_t *e;
	size_t i;

	if (json_unpack(jt, "{s:s, s:I, s:{s:I, s:I}}", "hash", &h, "unpacked_length", &n, "range", "start", &a,
			"end", &b) || strlen(h) != 64 || a < 0 || b <= a || b - a > XET_XORB_MAX_CHUNKS || n <= 0 ||
	    n > (json_int_t)(b - a) * XET_CHUNK_MAX)
		return -EBADMSG;
	snprintf(t->xorb, sizeof(t->xorb), "%s", h);
	t->start = (uint32_t)a;
	t->end = (uint32_t)b;
	t->len = (uint64_t)n;
	json_array_foreach(json_object_get(fetch, h), i, e) {
		const char *url = NULL;
		json_int_t fa = -1, fb = -1, ua = -1, ub = -1;
		if (json_unpack(e, "{s:{s:I, s:I}, s:s, s:{s:I, s:I}}", "range", "start", &fa, "end", &fb, "url", &url,
				"url_range", "start", &ua, "end", &ub) || fa > a || fb < b || ua < 0 || ub < ua ||
		    (strncmp(url, "https://", 8) && strncmp(url, "http://", 7)) || (best >= 0 && ub - ua >= best))
			continue;
		/* the narrowest range that holds the term: several terms of a xorb may each have their own,
		 * or share a wider one (its chunks past the term are not fetched: xs_decode) */
		free(t->url);
		t->url = xstrdup(url);
		t->url_start = ua;
		t->url_end = ub;
		t->url_first = (uint32_t)fa;
		best = ub - ua;
	}
	return best >= 0 ? 0 : -EBADMSG;
}

static void xs_on_reconstruction(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct mirror_xet_fetch *x = ud;
	json_t *root = NULL, *terms, *jt;
	size_t i;

	x->req = NULL;
	if (x->orphan) {
		xs_free(x);
		return;
	}
	if (result || resp->status != 200) {
		xs_set_why(x, HM_ERR_UPSTREAM, "the reconstruction: %s %ld", result ? err_str(result) : "status",
			   resp->status);
		goto out;
	}
	root = json_loadb(body, len, 0, NULL);
	terms = json_object_get(root, "terms");
	if (!json_is_array(terms) || json_integer_value(json_object_get(root, "offset_into_first_range")) != 0) {
		xs_set_why(x, HM_ERR_JSON, "the reconstruction is not one this client reads");
		goto out;
	}
	x->terms = xcalloc(json_array_size(terms) + 1, sizeof(*x->terms));
	json_array_foreach(terms, i, jt) {
		if (xs_parse_term(jt, json_object_get(root, "fetch_info"), &x->terms[x->nterms])) {
			xs_set_why(x, HM_ERR_JSON, "the reconstruction's term %zu is not one this client reads", i);
			break;
		}
		x->nterms++;
	}
out:
	json_decref(root);
	if (x->fail) {
		xs_end(x);
		return;
	}
	mirror_xet_fetch_resume(x);
}

static void xs_on_token(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct mirror_xet_fetch *x = ud;
	json_t *root = NULL;
	const char *tok = NULL, *cas = NULL;
	char *url = NULL;

	x->req = NULL;
	if (x->orphan) {
		xs_free(x);
		return;
	}
	if (result || resp->status != 200) {
		xs_set_why(x, HM_ERR_UPSTREAM, "no read token (%s %ld)", result ? err_str(result) : "status",
			   resp->status);
		goto out;
	}
	root = json_loadb(body, len, 0, NULL);
	if (json_unpack(root, "{s:s, s:s}", "accessToken", &tok, "casUrl", &cas) || !hub_token_valid(tok) ||
	    (strncmp(cas, "https://", 8) && strncmp(cas, "http://", 7))) {
		xs_set_why(x, HM_ERR_JSON, "the read token's answer is not one this client reads");
		goto out;
	}
	x->access = xstrdup(tok);
	x->cas = xstrdup(cas);
	url = xasprintf("%s%s/v1/reconstructions/%s", x->cas, x->cas[strlen(x->cas) - 1] == '/' ? "" : "",
			x->h.xet_hash);
	{
		struct hub_http_req_opts o = {
			.url = url, .token = x->access, .max_body = XET_RECON_MAX,
			.on_done = xs_on_reconstruction, .ud = x,
		};
		x->req = hub_http_request(x->h.http, &o);
	}
	if (!x->req)
		xs_set_why(x, HM_ERR_UPSTREAM, "a bad CAS URL");
out:
	free(url);
	json_decref(root);
	if (x->fail)
		xs_end(x);
}

void mirror_xet_fetch_start(const struct mirror_xet_fetch_host *h, struct mirror_xet_fetch **out)
{
	struct mirror_xet_fetch *x = xcalloc(1, sizeof(*x));
	struct hub_http_req_opts o = {
		.url = h->token_url, .token = h->token, .max_body = XET_TOKEN_MAX, .on_done = xs_on_token, .ud = x,
	};

	x->h = *h;
	x->h.token_url = xstrdup(h->token_url);
	x->h.token = h->token ? xstrdup(h->token) : NULL;
	x->h.xet_hash = xstrdup(h->xet_hash);
	x->skip = store_writer_offset(h->w);
	/* from the first byte, the file's identity is the chunks this fetch checks as they come */
	if (x->skip == 0)
		store_writer_given_chunks(h->w);
	x->dec = xet_xorb_decoder_new();
	x->buf = xmalloc(XET_RECORD_MAX);
	x->room = xmalloc(XET_CHUNK_MAX);
	*out = x;
	x->req = hub_http_request(h->http, &o);
	if (!x->req) {
		xs_set_why(x, HM_ERR_UPSTREAM, "a bad upstream URL");
		xs_end(x);
	}
}

int mirror_xet_fetch_record(struct mirror_xet_fetch *x, const char *sha256)
{
	for (size_t i = 0; i < x->nranges; i++)
		memcpy(x->ranges[i].sha256, sha256, 65);
	return x->nranges ? catalog_xet_ranges_add(x->h.catalog, x->ranges, x->nranges) : 0;
}
