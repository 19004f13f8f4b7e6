/*
 * shard.c - a Xet shard read from untrusted bytes (shard.h; docs/protocols/xet.md, "Shards"):
 *
 *   header   tag (32 bytes) | version u64 (2) | footer size u64 (200)
 *   files    per file: hash | flags u32 | n u32 | 8 unused; n terms (xorb hash | flags u32 |
 *            bytes u32 | chunk start u32 | chunk end u32); with the verification flag, n entries
 *            (range hash | 16 unused); with the metadata flag, one (sha256 | 16 unused); then a
 *            bookend (32 bytes of 0xff, 16 of zero)
 *   xorbs    per xorb: hash | flags u32 | n u32 | bytes u32 | bytes on disk u32; n chunks (hash |
 *            offset u32 | bytes u32 | flags u32 | unused u32); then a bookend
 *   lookups  (not read)
 *   footer   version u64 (1) | files' offset | xorbs' offset | 6 lookup words | HMAC key (32) |
 *            created | expiry | 6 unused words | 3 byte counts | the footer's own offset
 *
 * Every record is 48 bytes; every count is checked against the bytes left before it is believed.
 * xet_shard_write makes the answer to the global dedup query: no files, the xorbs given, and the
 * lookup tables (xorbs: truncated hash u64 | index u32; chunks: truncated hash u64 | xorb index u32 |
 * chunk index u32; each sorted), a truncated hash being a hash's first 8 bytes read little-endian.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/bug.h"
#include "base/xmalloc.h"
#include "hub/xet/shard.h"

#define REC 48
#define HEADER_LEN 48
#define FOOTER_LEN 200
#define FLAG_VERIFICATION 0x80000000u
#define FLAG_METADATA 0x40000000u

static const unsigned char shard_tag[32] = {
	'H', 'F', 'R', 'e', 'p', 'o', 'M', 'e', 't', 'a', 'D', 'a', 't', 'a', 0, 85,
	105, 103, 69, 106, 123, 129, 87, 131, 165, 189, 217, 92, 205, 209, 74, 169,
};

static uint64_t le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;
	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int bad(char **errmsg, int rc, const char *why)
{
	if (errmsg)
		*errmsg = xstrdup(why);
	return rc;
}

static bool bookend(const unsigned char *p)
{
	for (int i = 0; i < XET_HASH_LEN; i++)
		if (p[i] != 0xff)
			return false;
	return true;
}

/* A section's records: [*pos, end) of p, 48 bytes each. */
struct cursor {
	const unsigned char *p;
	size_t pos, end;
};

static const unsigned char *next(struct cursor *c)
{
	const unsigned char *r;
	if (c->end - c->pos < REC)
		return NULL;
	r = c->p + c->pos;
	c->pos += REC;
	return r;
}

static size_t left(const struct cursor *c)
{
	return (c->end - c->pos) / REC;
}

static int read_file(struct cursor *c, const unsigned char *h, struct xet_shard_file *f, char **errmsg)
{
	uint32_t flags = (uint32_t)le(h + 32, 4);
	uint64_t n = le(h + 36, 4);
	size_t need = n + ((flags & FLAG_VERIFICATION) ? n : 0) + ((flags & FLAG_METADATA) ? 1 : 0);

	memcpy(f->hash.b, h, XET_HASH_LEN);
	f->verified = flags & FLAG_VERIFICATION;
	f->has_sha256 = flags & FLAG_METADATA;
	if (need > left(c))
		return bad(errmsg, -EBADMSG, "shard: a file's entries run past its section");
	f->terms = xreallocarray(NULL, n ? n : 1, sizeof(*f->terms));
	f->n = n;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *r = next(c);
		struct xet_shard_term *t = &f->terms[i];
		memcpy(t->xorb.b, r, XET_HASH_LEN);
		t->size = (uint32_t)le(r + 36, 4);
		t->start = (uint32_t)le(r + 40, 4);
		t->end = (uint32_t)le(r + 44, 4);
		memset(t->verify.b, 0, XET_HASH_LEN);
		if (t->start >= t->end || t->end - t->start > XET_XORB_MAX_CHUNKS)
			return bad(errmsg, -EBADMSG, "shard: a term's chunk range is empty or out of bounds");
		if (t->size == 0 || t->size > (uint64_t)(t->end - t->start) * XET_CHUNK_MAX)
			return bad(errmsg, -EBADMSG, "shard: a term's size cannot be its chunks'");
	}
	for (size_t i = 0; f->verified && i < n; i++)
		memcpy(f->terms[i].verify.b, next(c), XET_HASH_LEN);
	if (f->has_sha256)
		memcpy(f->sha256, next(c), 32);
	return 0;
}

static int read_files(struct cursor *c, struct xet_shard *s, char **errmsg)
{
	size_t cap = 0;
	for (;;) {
		const unsigned char *h = next(c);
		int rc;
		if (!h)
			return bad(errmsg, -EBADMSG, "shard: the files' section has no bookend");
		if (bookend(h))
			return 0;
		if (s->nfiles == cap) {
			cap = cap ? 2 * cap : 8;
			s->files = xreallocarray(s->files, cap, sizeof(*s->files));
		}
		memset(&s->files[s->nfiles], 0, sizeof(s->files[0]));
		rc = read_file(c, h, &s->files[s->nfiles++], errmsg);
		if (rc < 0)
			return rc;
	}
}

static int read_xorb(struct cursor *c, const unsigned char *h, struct xet_shard_xorb *x, char **errmsg)
{
	uint64_t n = le(h + 36, 4);

	memcpy(x->hash.b, h, XET_HASH_LEN);
	if (n == 0 || n > XET_XORB_MAX_CHUNKS)
		return bad(errmsg, -EBADMSG, "shard: a xorb lists no chunks or more than a xorb may hold");
	if (n > left(c))
		return bad(errmsg, -EBADMSG, "shard: a xorb's chunks run past its section");
	x->chunks = xreallocarray(NULL, n, sizeof(*x->chunks));
	x->n = n;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *r = next(c);
		memcpy(x->chunks[i].hash.b, r, XET_HASH_LEN);
		x->chunks[i].size = (uint32_t)le(r + 36, 4);
		if (x->chunks[i].size == 0 || x->chunks[i].size > XET_CHUNK_MAX)
			return bad(errmsg, -EBADMSG, "shard: a xorb's chunk size is out of bounds");
	}
	return 0;
}

static int read_xorbs(struct cursor *c, struct xet_shard *s, char **errmsg)
{
	size_t cap = 0;
	for (;;) {
		const unsigned char *h = next(c);
		int rc;
		if (!h)
			return bad(errmsg, -EBADMSG, "shard: the xorbs' section has no bookend");
		if (bookend(h))
			return 0;
		if (s->nxorbs == cap) {
			cap = cap ? 2 * cap : 8;
			s->xorbs = xreallocarray(s->xorbs, cap, sizeof(*s->xorbs));
		}
		memset(&s->xorbs[s->nxorbs], 0, sizeof(s->xorbs[0]));
		rc = read_xorb(c, h, &s->xorbs[s->nxorbs++], errmsg);
		if (rc < 0)
			return rc;
	}
}

/* The header and footer: where the two sections are. */
static int read_frame(const unsigned char *p, size_t n, size_t *files, size_t *xorbs, size_t *foot,
		      char **errmsg)
{
	const unsigned char *f;
	if (n > XET_SHARD_MAX_BYTES)
		return bad(errmsg, -E2BIG, "shard: larger than a shard may be");
	if (n < HEADER_LEN + FOOTER_LEN || memcmp(p, shard_tag, sizeof(shard_tag)) != 0)
		return bad(errmsg, -EBADMSG, "shard: not a shard (no tag)");
	if (le(p + 32, 8) != 2 || le(p + 40, 8) != FOOTER_LEN)
		return bad(errmsg, -EBADMSG, "shard: a header version or footer size this reader does not know");
	*foot = n - FOOTER_LEN;
	f = p + *foot;
	if (le(f, 8) != 1 || le(f + 192, 8) != *foot)
		return bad(errmsg, -EBADMSG, "shard: a footer version this reader does not know, or misplaced");
	*files = le(f + 8, 8);
	*xorbs = le(f + 16, 8);
	if (*files != HEADER_LEN || *xorbs < *files || *xorbs > *foot)
		return bad(errmsg, -EBADMSG, "shard: its sections' offsets are out of order");
	return 0;
}

static bool zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

int xet_shard_parse(const void *buf, size_t n, struct xet_shard **out, char **errmsg)
{
	const unsigned char *p = buf;
	struct xet_shard *s = xcalloc(1, sizeof(*s));
	size_t files, xorbs, foot;
	struct cursor c;
	int rc = read_frame(p, n, &files, &xorbs, &foot, errmsg);

	if (rc < 0)
		goto out;
	c = (struct cursor){ .p = p, .pos = files, .end = xorbs };
	rc = read_files(&c, s, errmsg);
	if (rc == 0 && c.pos != xorbs)
		rc = bad(errmsg, -EBADMSG, "shard: bytes between the files' bookend and the xorbs");
	if (rc < 0)
		goto out;
	c = (struct cursor){ .p = p, .pos = xorbs, .end = foot };
	rc = read_xorbs(&c, s, errmsg);
	if (rc < 0)
		goto out;
	s->keyed = !zero(p + foot + 72, 32);
	*out = s;
	s = NULL;
out:
	xet_shard_free(&s);
	return rc;
}

void xet_shard_free(struct xet_shard **sp)
{
	struct xet_shard *s = *sp;
	if (!s)
		return;
	for (size_t i = 0; i < s->nfiles; i++)
		free(s->files[i].terms);
	for (size_t i = 0; i < s->nxorbs; i++)
		free(s->xorbs[i].chunks);
	free(s->files);
	free(s->xorbs);
	free(s);
	*sp = NULL;
}

/* ---- writing ---------------------------------------------------------------------------------- */

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

static uint64_t truncated(const struct xet_hash *h)
{
	return le(h->b, 8);
}

/* One entry of the chunk lookup table: truncated hash, xorb index, chunk index (sorted by the first). */
struct chunk_key {
	uint64_t t;
	uint32_t xorb, chunk;
};

static int chunk_key_cmp(const void *a, const void *b)
{
	const struct chunk_key *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->xorb != y->xorb)
		return x->xorb < y->xorb ? -1 : 1;
	return x->chunk < y->chunk ? -1 : x->chunk > y->chunk;
}

/* The xorb section at p: per xorb its header and chunks, then a bookend; *stored and *disk add up the
 * chunks' bytes (uncompressed, and with their 8-byte headers). Returns the bytes written. */
static size_t write_xorbs(unsigned char *p, const struct xet_shard_xorb *xorbs, size_t n, uint64_t *stored,
			  uint64_t *disk)
{
	unsigned char *q = p;

	for (size_t i = 0; i < n; i++) {
		uint64_t bytes = 0, offset = 0;
		for (size_t k = 0; k < xorbs[i].n; k++)
			bytes += xorbs[i].chunks[k].size;
		memcpy(q, xorbs[i].hash.b, XET_HASH_LEN);
		put_le(q + 36, xorbs[i].n, 4);
		put_le(q + 40, bytes, 4);
		put_le(q + 44, bytes + XET_XORB_CHUNK_HEADER_LEN * xorbs[i].n, 4);
		q += REC;
		for (size_t k = 0; k < xorbs[i].n; k++, q += REC) {
			memcpy(q, xorbs[i].chunks[k].hash.b, XET_HASH_LEN);
			put_le(q + 32, offset, 4);
			put_le(q + 36, xorbs[i].chunks[k].size, 4);
			offset += xorbs[i].chunks[k].size;
		}
		*stored += bytes;
		*disk += bytes + XET_XORB_CHUNK_HEADER_LEN * xorbs[i].n;
	}
	memset(q, 0xff, XET_HASH_LEN);
	return (size_t)(q + REC - p);
}

/* The lookup tables at p: xorbs (truncated hash, index) and chunks (truncated hash, xorb, chunk), each
 * sorted; *nchunks counts the second's entries. Returns the bytes written. */
static size_t write_lookups(unsigned char *p, const struct xet_shard_xorb *xorbs, size_t n, size_t nchunks)
{
	struct chunk_key *x = xreallocarray(NULL, n ? n : 1, sizeof(*x));
	struct chunk_key *c = xreallocarray(NULL, nchunks ? nchunks : 1, sizeof(*c));
	unsigned char *q = p;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		x[i] = (struct chunk_key){ truncated(&xorbs[i].hash), (uint32_t)i, 0 };
		for (size_t j = 0; j < xorbs[i].n; j++)
			c[k++] = (struct chunk_key){ truncated(&xorbs[i].chunks[j].hash), (uint32_t)i, (uint32_t)j };
	}
	qsort(x, n, sizeof(*x), chunk_key_cmp);
	qsort(c, k, sizeof(*c), chunk_key_cmp);
	for (size_t i = 0; i < n; i++, q += 12) {
		put_le(q, x[i].t, 8);
		put_le(q + 8, x[i].xorb, 4);
	}
	for (size_t i = 0; i < k; i++, q += 16) {
		put_le(q, c[i].t, 8);
		put_le(q + 8, c[i].xorb, 4);
		put_le(q + 12, c[i].chunk, 4);
	}
	free(x);
	free(c);
	return (size_t)(q - p);
}

unsigned char *xet_shard_write(const struct xet_shard_xorb *xorbs, size_t n, uint64_t created, uint64_t expiry,
			       size_t *len)
{
	size_t nchunks = 0, size, xo, lo, fo;
	uint64_t stored = 0, disk = 0;
	unsigned char *p, *f;

	for (size_t i = 0; i < n; i++)
		nchunks += xorbs[i].n;
	size = HEADER_LEN + REC + (n + nchunks + 1) * REC + n * 12 + nchunks * 16 + FOOTER_LEN;
	p = xcalloc(1, size);
	memcpy(p, shard_tag, sizeof(shard_tag));
	put_le(p + 32, 2, 8);
	put_le(p + 40, FOOTER_LEN, 8);
	memset(p + HEADER_LEN, 0xff, XET_HASH_LEN);   /* no files: the files' bookend alone */
	xo = HEADER_LEN + REC;
	lo = xo + write_xorbs(p + xo, xorbs, n, &stored, &disk);
	fo = lo + write_lookups(p + lo, xorbs, n, nchunks);
	BUG_ON(fo + FOOTER_LEN != size);
	f = p + fo;
	put_le(f, 1, 8);
	put_le(f + 8, HEADER_LEN, 8);
	put_le(f + 16, xo, 8);
	put_le(f + 24, lo, 8);                        /* the file lookup: empty */
	put_le(f + 40, lo, 8);                        /* the xorb lookup */
	put_le(f + 48, n, 8);
	put_le(f + 56, lo + n * 12, 8);               /* the chunk lookup */
	put_le(f + 64, nchunks, 8);
	put_le(f + 104, created, 8);                  /* (the key, at 72, stays zero: plain chunk hashes) */
	put_le(f + 112, expiry, 8);
	put_le(f + 168, disk, 8);
	put_le(f + 176, stored, 8);
	put_le(f + 184, stored, 8);
	put_le(f + 192, fo, 8);
	*len = size;
	return p;
}
