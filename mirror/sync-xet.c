/*
 * sync-xet.c - a content job fetched through Xet (docs/protocols/xet.md, "Sync through Xet"): where
 * upstream states a file's Xet hash, the job asks for a Xet read token, then for the file's
 * reconstruction (v1: terms over xorbs, a signed URL and byte range for each), and writes the plain
 * file into the store's writer term by term. A term whose every chunk the catalog places in a stored
 * content (xet_ranges, filled by earlier syncs through Xet) is read from the store, each chunk checked
 * against its recorded hash; any other term's byte range is fetched, its chunks decoded as they stream
 * (uncompressed, LZ4, BG4-LZ4; one chunk's bytes held at a time) and hashed. The writer proves the whole
 * file as the plain path does (sha256 and the Xet file hash), the identity made of the chunks just
 * hashed, not chunked and hashed again (store.h, _given_chunks); only then are the file's chunks recorded
 * for the next revision. Whatever goes wrong before that falls back to the plain HTTP path
 * (sync-jobs.c), resuming from what was written; bytes that fail the proof are fetched again over plain
 * HTTP from the start.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/bug.h"
#include "base/err.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "hub/http/http.h"
#include "hub/hub.h"
#include "hub/upstream.h"
#include "hub/xet/xet.h"
#include "store.h"

#include "sync-int.h"

#define XET_TOKEN_MAX (64 * 1024)
#define XET_RECON_MAX (64 * 1024 * 1024)
#define XET_RECORD_MAX (XET_XORB_CHUNK_HEADER_LEN + 2 * XET_CHUNK_MAX)
/* stored chunks read (and hashed) in one turn of the loop before it is given back to the transfers */
#define XET_LOCAL_TURN (16 * 1024 * 1024)

struct term {
	char xorb[65];
	uint32_t start, end;    /* chunks [start, end) of the xorb */
	uint64_t len;           /* their bytes, unpacked */
	char *url;              /* owned: where its bytes are (a signed URL) */
	int64_t url_start, url_end; /* inclusive */
	uint32_t url_first;     /* the chunk url_start starts at */
};

struct mirror__sync_xet {
	struct mirror__sync_job *j;
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
	unsigned char *room;    /* one chunk, uncompressed */
	int fail;
	char *why;
	int64_t fetched;        /* bytes of xorbs received in this attempt */
	struct mirror__sync_xet *next_wait; /* in s->xet_wait */
};

static void xs_free(struct mirror__sync_xet **xp)
{
	struct mirror__sync_xet *x = *xp;

	if (!x)
		return;
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
	*xp = NULL;
}

void mirror__sync_xet_release(struct mirror__sync_job *j)
{
	xs_free(&j->xet);
}

bool mirror__sync_xet_wanted(const struct mirror__sync_job *j)
{
	return !j->s->cfg->no_xet && !j->xet_off && j->owner->spec.hub == HUB_HF && j->f->lfs &&
	       j->f->xet_hash[0] && j->f->size > 0 && j->owner->snap && j->owner->snap->commit[0];
}

static void xs_set_why(struct mirror__sync_xet *x, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void xs_set_why(struct mirror__sync_xet *x, int err, const char *fmt, ...)
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

/* The attempt ended: the file is whole in the writer (commit it), or Xet failed (the plain path). */
static void xs_end(struct mirror__sync_xet *x)
{
	struct mirror__sync_job *j = x->j;
	bool progressed = mirror_store_writer_offset(j->w) > x->skip, again;

	if (!x->fail) {
		j->xet_used = true;
		mirror__sync_job_commit(j);
		return;
	}
	/* a transfer's fault is resumed through Xet as the plain path resumes (progress, or tries left);
	 * anything else, or no tries left, goes over plain HTTP */
	if (progressed)
		j->tries = 0;
	again = x->fail == HM_ERR_CURL && (progressed || ++j->tries < j->s->cfg->max_file_tries);
	log_info("sync", "%s: Xet: %s; %s", j->f->path, x->why ? x->why : err_str(x->fail),
		 again ? "trying again" : "over plain HTTP");
	mirror_store_writer_abort(&j->w, true);
	if (!again) {
		j->xet_off = true;
		j->tries = 0;
	}
	xs_free(&j->xet);
	mirror__sync_job_start(j);
}

static void xs_add_range(struct mirror__sync_xet *x, const struct term *t, uint32_t chunk, uint32_t len,
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
static int xs_put_chunk(struct mirror__sync_xet *x, const struct term *t, uint32_t chunk, const unsigned char *data,
			uint32_t len, const struct xet_hash *h)
{
	int64_t skip = mirror_store_writer_offset(x->j->w) - (int64_t)x->pos;  /* never a byte twice */
	int r = 0;

	if (skip <= 0)  /* the whole chunk, and its hash: the identity is made of these (no second pass) */
		r = mirror_store_writer_write_chunk(x->j->w, data, len, h);
	else if (skip < (int64_t)len)
		r = mirror_store_writer_write(x->j->w, data + skip, len - (size_t)skip);
	if (r) {
		xs_set_why(x, r, "store: %s", err_str(r));
	} else {
		xs_add_range(x, t, chunk, len, h);
		if (skip < (int64_t)len)
			x->j->s->bytes_done += (int64_t)len - (skip > 0 ? skip : 0);  /* the progress line's */
	}
	x->pos += len;
	return r;
}

/* A term every chunk of which the store holds: read and checked, chunk by chunk. 1 when written, 0 when
 * some chunk is not held (or no longer what was recorded): fetch the term. */
static int xs_local_term(struct mirror__sync_xet *x, const struct term *t)
{
	struct mirror__sync *s = x->j->s;
	struct catalog_xet_range *rs = xcalloc(t->end - t->start, sizeof(*rs));
	uint64_t pos0 = x->pos;
	size_t nr0 = x->nranges;
	int ok = 1;

	for (uint32_t c = t->start; c < t->end && ok; c++)
		ok = !catalog_xet_range_find(s->d->catalog, t->xorb, c, &rs[c - t->start]) &&
		     rs[c - t->start].length > 0 && rs[c - t->start].length <= XET_CHUNK_MAX;
	for (uint32_t c = t->start; c < t->end && ok && !x->fail; c++) {
		const struct catalog_xet_range *r = &rs[c - t->start];
		char *path = mirror_store_blob_path(s->d->store, r->sha256);
		int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
		struct xet_hash h, want;
		ok = fd >= 0 && pread(fd, x->room, r->length, r->offset) == (ssize_t)r->length;
		if (fd >= 0)
			close(fd);
		free(path);
		if (ok) {
			xet_chunk_hash(x->room, r->length, &h);
			ok = !xet_hash_from_hex(r->hash, &want) && !memcmp(h.b, want.b, sizeof(h.b));
		}
		if (ok)
			xs_put_chunk(x, t, c, x->room, r->length, &h);
	}
	free(rs);
	if (!ok) {  /* the term is fetched; what its good chunks wrote is not written again */
		x->pos = pos0;
		x->nranges = nr0;
	}
	return ok;
}

static void xs_next(struct mirror__sync_xet *x);

/* Decode the whole chunk records at the front of x->buf, keep the rest. */
static int xs_decode(struct mirror__sync_xet *x, const struct term *t)
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
			xs_set_why(x, HM_ERR_UPSTREAM, "xorb %.12s: more chunks than its range holds", t->xorb);
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
	struct mirror__sync_xet *x = ud;
	const struct term *t = &x->terms[x->next];
	char want[48];
	int n = snprintf(want, sizeof(want), "bytes %lld-", (long long)t->url_start);

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
	struct mirror__sync_xet *x = ud;
	struct mirror__sync_job *j = x->j;

	x->fetched += (int64_t)n;
	j->fetched += (int64_t)n;
	j->s->report->bytes_fetched += (int64_t)n;
	j->owner->res->bytes_fetched += (int64_t)n;
	while (n && !x->fail) {
		size_t take = XET_RECORD_MAX - x->nbuf < n ? XET_RECORD_MAX - x->nbuf : n;
		memcpy(x->buf + x->nbuf, data, take);
		x->nbuf += take;
		data += take;
		n -= take;
		xs_decode(x, &x->terms[x->next]);
	}
	return x->fail;
}

static void xs_on_term(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct mirror__sync_xet *x = ud;
	const struct term *t = &x->terms[x->next];

	(void)body;
	(void)len;
	x->j->req = NULL;
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
	xs_next(x);
}

static void xs_on_idle(uv_idle_t *h)
{
	struct mirror__sync *s = h->data;
	struct mirror__sync_xet *x = s->xet_wait;

	s->xet_wait = NULL;
	uv_idle_stop(h);
	while (x) {
		struct mirror__sync_xet *next = x->next_wait;
		x->next_wait = NULL;
		xs_next(x);
		x = next;
	}
}

/* Write the terms from x->next on: the stored ones at once, up to the first to fetch, which starts;
 * after XET_LOCAL_TURN bytes of stored chunks, the loop's other work goes first. */
static void xs_next(struct mirror__sync_xet *x)
{
	struct mirror__sync_job *j = x->j;
	uint64_t turn = x->pos;

	for (; x->next < x->nterms && !x->fail; x->next++) {
		struct term *t = &x->terms[x->next];
		struct hub_http_req_opts o = {
			.url = t->url, .range_start = t->url_start, .range_len = t->url_end - t->url_start + 1,
			.on_response = xs_on_response, .on_body = xs_on_body, .on_done = xs_on_term, .ud = x,
		};
		if (x->pos + t->len <= (uint64_t)x->skip && x->pos + t->len < (uint64_t)j->f->size) {
			x->pos += t->len;  /* written by an earlier attempt: not recorded (its chunks unknown) */
			continue;
		}
		if (x->pos - turn >= XET_LOCAL_TURN) {
			x->next_wait = j->s->xet_wait;
			j->s->xet_wait = x;
			uv_idle_start(&j->s->xet_idle, xs_on_idle);
			return;
		}
		if (xs_local_term(x, t))
			continue;
		if (x->fail)
			break;
		x->chunk = t->url_first;
		x->nbuf = 0;
		j->req = hub_http_request(j->s->http, &o);
		if (!j->req)
			xs_set_why(x, HM_ERR_UPSTREAM, "xorb %.12s: a bad URL", t->xorb);
		else
			return;
	}
	if (!x->fail && x->pos != (uint64_t)j->f->size)
		xs_set_why(x, HM_ERR_UPSTREAM, "the reconstruction holds %llu bytes, not %lld",
			   (unsigned long long)x->pos, (long long)j->f->size);
	xs_end(x);
}

/* One term of a v1 reconstruction, with the fetch_info entry that covers it. */
static int xs_parse_term(struct mirror__sync_xet *x, json_t *jt, json_t *fetch, struct term *t)
{
	const char *h = NULL;
	json_int_t n = 0, a = -1, b = -1;
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
		    (strncmp(url, "https://", 8) && strncmp(url, "http://", 7)))
			continue;
		t->url = xstrdup(url);
		t->url_start = ua;
		t->url_end = ub;
		t->url_first = (uint32_t)fa;
		return 0;
	}
	(void)x;
	return -EBADMSG;
}

static void xs_on_reconstruction(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct mirror__sync_xet *x = ud;
	json_t *root = NULL, *terms, *jt;
	size_t i;

	x->j->req = NULL;
	if (result || resp->status != 200) {
		xs_set_why(x, HM_ERR_UPSTREAM, "the reconstruction: %s %ld", result ? err_str(result) : "status",
			   resp->status);
		goto out;
	}
	root = json_loadb(body, len, 0, NULL);
	terms = json_object_get(root, "terms");
	if (!json_is_array(terms) || json_integer_value(json_object_get(root, "offset_into_first_range")) != 0) {
		xs_set_why(x, HM_ERR_JSON, "the reconstruction is not one this sync reads");
		goto out;
	}
	x->terms = xcalloc(json_array_size(terms) + 1, sizeof(*x->terms));
	json_array_foreach(terms, i, jt) {
		if (xs_parse_term(x, jt, json_object_get(root, "fetch_info"), &x->terms[x->nterms])) {
			xs_set_why(x, HM_ERR_JSON, "the reconstruction's term %zu is not one this sync reads", i);
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
	xs_next(x);
}

static void xs_on_token(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct mirror__sync_xet *x = ud;
	struct mirror__sync_job *j = x->j;
	json_t *root = NULL;
	const char *tok = NULL, *cas = NULL;
	char *url = NULL;

	j->req = NULL;
	if (result || resp->status != 200) {
		xs_set_why(x, HM_ERR_UPSTREAM, "no read token (%s %ld)", result ? err_str(result) : "status",
			   resp->status);
		goto out;
	}
	root = json_loadb(body, len, 0, NULL);
	if (json_unpack(root, "{s:s, s:s}", "accessToken", &tok, "casUrl", &cas) || !hub_token_valid(tok) ||
	    (strncmp(cas, "https://", 8) && strncmp(cas, "http://", 7))) {
		xs_set_why(x, HM_ERR_JSON, "the read token's answer is not one this sync reads");
		goto out;
	}
	x->access = xstrdup(tok);
	x->cas = xstrdup(cas);
	url = xasprintf("%s%s/v1/reconstructions/%s", x->cas, x->cas[strlen(x->cas) - 1] == '/' ? "" : "",
			j->f->xet_hash);
	{
		struct hub_http_req_opts o = {
			.url = url, .token = x->access, .max_body = XET_RECON_MAX,
			.on_done = xs_on_reconstruction, .ud = x,
		};
		j->req = hub_http_request(j->s->http, &o);
	}
	if (!j->req)
		xs_set_why(x, HM_ERR_UPSTREAM, "a bad CAS URL");
out:
	free(url);
	json_decref(root);
	if (x->fail)
		xs_end(x);
}

void mirror__sync_xet_start(struct mirror__sync_job *j)
{
	struct mirror__sync_xet *x = xcalloc(1, sizeof(*x));
	char *base = hub_client_base(j->s->client, HUB_HF);
	char *name = hub_url_escape(j->owner->spec.name, true);
	char *url = xasprintf("%s/api/%s/%s/xet-read-token/%s", base,
			      j->owner->spec.type == HUB_DATASET ? "datasets" : "models", name, j->owner->snap->commit);
	struct hub_http_req_opts o = {
		.url = url, .token = hub_client_token(j->s->client, HUB_HF), .max_body = XET_TOKEN_MAX,
		.on_done = xs_on_token, .ud = x,
	};

	BUG_ON(j->xet || !j->w);
	x->j = j;
	x->skip = mirror_store_writer_offset(j->w);
	/* from the first byte, the file's identity is the chunks this fetch checks as they come */
	if (x->skip == 0)
		mirror_store_writer_given_chunks(j->w);
	x->dec = xet_xorb_decoder_new();
	x->buf = xmalloc(XET_RECORD_MAX);
	x->room = xmalloc(XET_CHUNK_MAX);
	j->xet = x;
	j->req = hub_http_request(j->s->http, &o);
	free(url);
	free(name);
	free(base);
	if (!j->req) {
		xs_set_why(x, HM_ERR_UPSTREAM, "a bad upstream URL");
		xs_end(x);
	}
}

/* The job's content is in the store: record where the chunks of upstream's xorbs that made it lie. */
void mirror__sync_xet_record(struct mirror__sync_job *j, const char *sha256)
{
	struct mirror__sync_xet *x = j->xet;

	if (!x)
		return;
	for (size_t i = 0; i < x->nranges; i++)
		memcpy(x->ranges[i].sha256, sha256, 65);
	if (x->nranges && catalog_xet_ranges_add(j->s->d->catalog, x->ranges, x->nranges))
		log_warn("sync", "catalog: %s", catalog_errmsg(j->s->d->catalog));
	xs_free(&j->xet);
}
