/*
 * test-hub-xet-upload.c - hub/xet: what clients upload. Chunks compressed as both clients write them
 * (one LZ4 frame each, liblz4's encoder here; BG4's four byte groups before it) read back exactly, and
 * refused when the frame lies about its size or is not a frame; a whole xorb read and its hash
 * recomputed (a footer skipped, trailing junk, a wrong name and the bounds refused); a shard built
 * field by field read back, and refused when damaged anywhere (every truncation, every byte flipped
 * in its frame, counts that run past their section, empty terms).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lz4frame.h>

#include "base/buf.h"
#include "hub/xet/shard.h"
#include "hub/xet/xet.h"
#include "test.h"

/* Compressible bytes: runs of a few values, as model weights' high bytes are. */
static void fill(unsigned char *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		p[i] = (unsigned char)((i % 4 == 3) ? 0x3f : (seed >> 61));
	}
}

static void le(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* A chunk of data[0..n) behind its header into b, compressed as compression says. */
static void put_chunk(struct buf *b, const unsigned char *data, size_t n, int compression)
{
	unsigned char hdr[8], *z = NULL, *grouped = malloc(n);
	size_t zn = n;
	const unsigned char *src = data;

	if (compression == XET_COMPRESSION_BG4_LZ4) {
		size_t at = 0;
		for (size_t k = 0; k < 4; k++)
			for (size_t i = k; i < n; i += 4)
				grouped[at++] = data[i];
		src = grouped;
	}
	if (compression != XET_COMPRESSION_NONE) {
		z = malloc(LZ4F_compressFrameBound(n, NULL));
		zn = LZ4F_compressFrame(z, LZ4F_compressFrameBound(n, NULL), src, n, NULL);
		src = z;
	}
	hdr[0] = 0;
	le(hdr + 1, zn, 3);
	hdr[4] = (unsigned char)compression;
	le(hdr + 5, n, 3);
	buf_add(b, hdr, 8);
	buf_add(b, src, zn);
	free(z);
	free(grouped);
}

TEST(compressed_chunks)
{
	static unsigned char data[70001], out[XET_CHUNK_MAX];
	struct xet_xorb_decoder *dec = xet_xorb_decoder_new();
	struct xet_xorb_chunk_header h;
	struct buf b;
	size_t used;
	char *why = NULL;

	buf_init(&b);
	fill(data, sizeof(data), 1);
	for (int c = 0; c <= 2; c++) {
		buf_reset(&b);
		put_chunk(&b, data, sizeof(data), c);
		if (c)
			CHECK(b.len < sizeof(data));  /* it did compress */
		memset(out, 0, sizeof(out));
		CHECK_INT(xet_xorb_chunk_read(dec, b.data, b.len, &h, out, &used, NULL), 0);
		CHECK_INT(h.compression, c);
		CHECK_INT(h.uncompressed_size, sizeof(data));
		CHECK_INT(used, b.len);
		CHECK(memcmp(out, data, sizeof(data)) == 0);
	}
	/* the header says one byte less, or one more, than the frame holds */
	buf_reset(&b);
	put_chunk(&b, data, sizeof(data), XET_COMPRESSION_LZ4);
	le((unsigned char *)b.data + 5, sizeof(data) - 1, 3);
	CHECK_INT(xet_xorb_chunk_read(dec, b.data, b.len, &h, out, &used, &why), -EBADMSG);
	CHECK(why && strstr(why, "past its stated size"));
	free(why);
	why = NULL;
	le((unsigned char *)b.data + 5, sizeof(data) + 1, 3);
	CHECK_INT(xet_xorb_chunk_read(dec, b.data, b.len, &h, out, &used, &why), -EBADMSG);
	CHECK(why && strstr(why, "another size"));
	free(why);
	why = NULL;
	/* a frame cut short; junk for a frame; a raw LZ4 block (no frame) */
	le((unsigned char *)b.data + 5, sizeof(data), 3);
	CHECK_INT(xet_xorb_chunk_read(dec, b.data, b.len - 1, &h, out, &used, NULL), -EBADMSG);
	le((unsigned char *)b.data + 1, b.len - 9, 3);
	CHECK_INT(xet_xorb_chunk_read(dec, b.data, b.len - 1, &h, out, &used, NULL), -EBADMSG);
	memset((unsigned char *)b.data + 8, 0x5a, b.len - 8);
	CHECK_INT(xet_xorb_chunk_read(dec, b.data, b.len, &h, out, &used, &why), -EBADMSG);
	CHECK(why && strstr(why, "not a valid LZ4 frame"));
	free(why);
	buf_release(&b);
	xet_xorb_decoder_free(&dec);
	CHECK(dec == NULL);
}

/* A xorb of three chunks, one of each compression; its hash from the chunks' own. */
static void make_xorb(struct buf *b, struct xet_hash *hash, struct xet_hash chunk_hashes[3])
{
	static unsigned char data[3][50000];
	struct xet_node nodes[3];
	for (int i = 0; i < 3; i++) {
		fill(data[i], sizeof(data[i]), (uint64_t)i + 7);
		put_chunk(b, data[i], sizeof(data[i]), i);
		xet_chunk_hash(data[i], sizeof(data[i]), &nodes[i].hash);
		chunk_hashes[i] = nodes[i].hash;
		nodes[i].size = sizeof(data[i]);
	}
	xet_xorb_hash(nodes, 3, hash);
}

TEST(xorb_parse)
{
	struct xet_xorb_decoder *dec = xet_xorb_decoder_new();
	struct xet_hash want, hashes[3], other;
	struct xet_xorb *x = NULL;
	struct buf b;
	char *why = NULL;
	size_t chunks_end;

	buf_init(&b);
	make_xorb(&b, &want, hashes);
	chunks_end = b.len;
	buf_add(&b, "XETBLOB\x01 a footer, skipped", 27);
	CHECK_INT(xet_xorb_parse(dec, b.data, b.len, &want, &x, NULL), 0);
	CHECK(x != NULL);
	if (x) {
		CHECK_INT(x->n, 3);
		CHECK_INT(x->size, 150000);
		CHECK_INT(x->end, chunks_end);
		CHECK_INT(x->chunks[0].offset, 0);
		CHECK_INT(x->chunks[1].offset, 8 + 50000);
		for (int i = 0; i < 3; i++)
			CHECK(memcmp(x->chunks[i].hash.b, hashes[i].b, XET_HASH_LEN) == 0);
		CHECK(memcmp(x->hash.b, want.b, XET_HASH_LEN) == 0);
	}
	xet_xorb_free(&x);
	/* without a footer, and without a name to check */
	CHECK_INT(xet_xorb_parse(dec, b.data, chunks_end, NULL, &x, NULL), 0);
	xet_xorb_free(&x);
	/* named as another xorb */
	other = want;
	other.b[0] ^= 1;
	CHECK_INT(xet_xorb_parse(dec, b.data, b.len, &other, &x, &why), -EBADMSG);
	CHECK(x == NULL && why && strstr(why, "hash to"));
	free(why);
	why = NULL;
	/* one chunk byte changed: another chunk hash, so another xorb hash */
	((unsigned char *)b.data)[20] ^= 0xff;
	CHECK_INT(xet_xorb_parse(dec, b.data, b.len, &want, &x, NULL), -EBADMSG);
	((unsigned char *)b.data)[20] ^= 0xff;
	/* junk after the chunks that is not a footer; nothing at all; too large */
	CHECK_INT(xet_xorb_parse(dec, b.data, chunks_end + 5, &want, &x, NULL), -EBADMSG);
	CHECK_INT(xet_xorb_parse(dec, b.data, 0, NULL, &x, &why), -EBADMSG);
	CHECK(why && strstr(why, "no chunks"));
	free(why);
	CHECK_INT(xet_xorb_parse(dec, b.data, (size_t)XET_XORB_MAX_BYTES + 1, NULL, &x, NULL), -E2BIG);
	CHECK(x == NULL);
	buf_release(&b);
	xet_xorb_decoder_free(&dec);
}

/* The number of chunks is bounded before any is kept. */
TEST(xorb_chunk_bound)
{
	struct xet_xorb_decoder *dec = xet_xorb_decoder_new();
	size_t n = XET_XORB_MAX_CHUNKS + 1;
	unsigned char *p = calloc(n, 9);
	struct xet_xorb *x = NULL;
	char *why = NULL;
	for (size_t i = 0; i < n; i++) {
		p[9 * i + 1] = 1;
		p[9 * i + 5] = 1;
	}
	CHECK_INT(xet_xorb_parse(dec, p, 9 * (n - 1), NULL, &x, NULL), 0);
	if (x)
		CHECK_INT(x->n, XET_XORB_MAX_CHUNKS);
	xet_xorb_free(&x);
	CHECK_INT(xet_xorb_parse(dec, p, 9 * n, NULL, &x, &why), -E2BIG);
	CHECK(why && strstr(why, "more chunks"));
	free(why);
	free(p);
	xet_xorb_decoder_free(&dec);
}

/* A record of 48 bytes: a hash (its first byte h, the rest zero) and four u32. */
static void rec(struct buf *b, int h, uint32_t a, uint32_t c, uint32_t d, uint32_t e)
{
	unsigned char r[48] = { 0 };
	if (h == 0xff)
		memset(r, 0xff, 32);
	else
		r[0] = (unsigned char)h;
	le(r + 32, a, 4);
	le(r + 36, c, 4);
	le(r + 40, d, 4);
	le(r + 44, e, 4);
	buf_add(b, r, 48);
}

/* Two files (one with verification and sha256, one without) and one xorb of two chunks. */
static void make_shard(struct buf *b)
{
	static const unsigned char tag[32] = {
		'H', 'F', 'R', 'e', 'p', 'o', 'M', 'e', 't', 'a', 'D', 'a', 't', 'a', 0, 85,
		105, 103, 69, 106, 123, 129, 87, 131, 165, 189, 217, 92, 205, 209, 74, 169,
	};
	unsigned char w[8], foot[200] = { 0 };
	size_t xorbs;

	buf_add(b, tag, 32);
	le(w, 2, 8);
	buf_add(b, w, 8);
	le(w, 200, 8);
	buf_add(b, w, 8);
	rec(b, 0xa1, 0xc0000000u, 2, 0, 0);   /* file a1: verification and metadata, 2 terms */
	rec(b, 0x51, 0, 1000, 0, 2);          /*   xorb 51 chunks [0, 2) */
	rec(b, 0x52, 0, 10, 5, 6);            /*   xorb 52 chunk [5, 6) */
	rec(b, 0xe1, 0, 0, 0, 0);             /*   verification hashes */
	rec(b, 0xe2, 0, 0, 0, 0);
	rec(b, 0x5a, 0, 0, 0, 0);             /*   sha256 */
	rec(b, 0xa2, 0, 1, 0, 0);             /* file a2: 1 term, nothing else */
	rec(b, 0x51, 0, 600, 1, 2);
	rec(b, 0xff, 0, 0, 0, 0);
	xorbs = b->len;
	rec(b, 0x51, 0, 2, 1000, 900);        /* xorb 51: 2 chunks */
	rec(b, 0xc1, 0, 400, 0, 0);
	rec(b, 0xc2, 400, 600, 0, 0);
	rec(b, 0xff, 0, 0, 0, 0);
	le(foot, 1, 8);
	le(foot + 8, 48, 8);
	le(foot + 16, xorbs, 8);
	le(foot + 192, b->len, 8);
	buf_add(b, foot, sizeof(foot));
}

TEST(shard_parse)
{
	struct xet_shard *s = NULL;
	struct buf b;

	buf_init(&b);
	make_shard(&b);
	CHECK_INT(xet_shard_parse(b.data, b.len, &s, NULL), 0);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_INT(s->nfiles, 2);
	CHECK_INT(s->nxorbs, 1);
	CHECK(!s->keyed);
	CHECK_INT(s->files[0].hash.b[0], 0xa1);
	CHECK(s->files[0].verified && s->files[0].has_sha256);
	CHECK_INT(s->files[0].sha256[0], 0x5a);
	CHECK_INT(s->files[0].n, 2);
	CHECK_INT(s->files[0].terms[1].xorb.b[0], 0x52);
	CHECK_INT(s->files[0].terms[1].size, 10);
	CHECK_INT(s->files[0].terms[1].start, 5);
	CHECK_INT(s->files[0].terms[1].end, 6);
	CHECK_INT(s->files[0].terms[1].verify.b[0], 0xe2);
	CHECK(!s->files[1].verified && !s->files[1].has_sha256);
	CHECK_INT(s->files[1].terms[0].size, 600);
	CHECK_INT(s->xorbs[0].n, 2);
	CHECK_INT(s->xorbs[0].chunks[1].hash.b[0], 0xc2);
	CHECK_INT(s->xorbs[0].chunks[1].size, 600);
	xet_shard_free(&s);
	CHECK(s == NULL);
	buf_release(&b);
}

/* Every truncation, and every byte of the header, footer and records' counts changed, is refused or
 * read within bounds; the ones that must be refused are. */
TEST(shard_damaged)
{
	struct xet_shard *s = NULL;
	struct buf b;
	unsigned char *p;
	char *why = NULL;
	int refused = 0;

	buf_init(&b);
	make_shard(&b);
	p = (unsigned char *)b.data;
	for (size_t cut = 0; cut < b.len; cut++) {
		CHECK_INT(xet_shard_parse(p, cut, &s, NULL), -EBADMSG);
		CHECK(s == NULL);
	}
	for (size_t i = 0; i < b.len; i++) {
		p[i] ^= 0x80;
		if (xet_shard_parse(p, b.len, &s, NULL) < 0)
			refused++;
		xet_shard_free(&s);
		p[i] ^= 0x80;
	}
	CHECK(refused > 100);
	/* a file's term count that runs past its section */
	p[48 + 36] = 200;
	CHECK_INT(xet_shard_parse(p, b.len, &s, &why), -EBADMSG);
	CHECK(why && strstr(why, "run past"));
	free(why);
	why = NULL;
	p[48 + 36] = 2;
	/* an empty chunk range */
	p[96 + 44] = 0;
	CHECK_INT(xet_shard_parse(p, b.len, &s, &why), -EBADMSG);
	CHECK(why && strstr(why, "chunk range"));
	free(why);
	why = NULL;
	p[96 + 44] = 2;
	/* the files' bookend gone */
	memset(p + 48 * 9, 0, 32);
	CHECK_INT(xet_shard_parse(p, b.len, &s, NULL), -EBADMSG);
	memset(p + 48 * 9, 0xff, 32);
	CHECK_INT(xet_shard_parse(p, b.len, &s, NULL), 0);
	xet_shard_free(&s);
	CHECK_INT(xet_shard_parse(p, (size_t)XET_SHARD_MAX_BYTES + 1, &s, NULL), -E2BIG);
	buf_release(&b);
}

/* xet_shard_write: the dedup query's answer reads back as written, with its lookup tables where the
 * footer says, sorted, and the zero key (plain chunk hashes). */
static void test_shard_write(void)
{
	struct xet_shard_chunk ch[5];
	struct xet_shard_xorb xs[2] = { { .n = 3, .chunks = ch }, { .n = 2, .chunks = ch + 3 } };
	struct xet_shard *s = NULL;
	unsigned char *p;
	size_t len = 0;
	uint64_t prev = 0;

	for (int i = 0; i < 5; i++) {
		fill(ch[i].hash.b, XET_HASH_LEN, 100 + (uint64_t)i);
		ch[i].size = 9000 + 1000 * (uint32_t)i;
	}
	fill(xs[0].hash.b, XET_HASH_LEN, 1);
	fill(xs[1].hash.b, XET_HASH_LEN, 2);
	p = xet_shard_write(xs, 2, 1000, 2000, &len);
	CHECK_INT(len, 48 + 48 + (2 + 5 + 1) * 48 + 2 * 12 + 5 * 16 + 200);
	CHECK_INT(xet_shard_parse(p, len, &s, NULL), 0);
	if (s) {
		CHECK_INT(s->nfiles, 0);
		CHECK_INT(s->nxorbs, 2);
		CHECK(!s->keyed);
		CHECK(!memcmp(s->xorbs[1].hash.b, xs[1].hash.b, XET_HASH_LEN));
		CHECK_INT(s->xorbs[1].n, 2);
		CHECK(!memcmp(s->xorbs[1].chunks[1].hash.b, ch[4].hash.b, XET_HASH_LEN));
		CHECK_INT(s->xorbs[1].chunks[1].size, 13000);
	}
	xet_shard_free(&s);
	/* the chunk lookup: 5 entries of (truncated hash, xorb, chunk), sorted, at the footer's offset */
	{
		const unsigned char *f = p + len - 200, *t;
		uint64_t at = 0, n = 0;
		for (int i = 7; i >= 0; i--) {
			at = at << 8 | f[56 + i];
			n = n << 8 | f[64 + i];
		}
		CHECK_INT(n, 5);
		CHECK_INT(at, 48 + 48 + 8 * 48 + 2 * 12);
		for (uint64_t k = 0; k < n; k++) {
			uint64_t v = 0;
			t = p + at + 16 * k;
			for (int i = 7; i >= 0; i--)
				v = v << 8 | t[i];
			CHECK(v >= prev);
			prev = v;
			CHECK(t[8] < 2 && t[12] < 3);
			CHECK(!memcmp(t, ch[t[8] * 3 + t[12]].hash.b, 8));
		}
	}
	free(p);
}

int main(void)
{
	RUN(compressed_chunks);
	RUN(xorb_parse);
	RUN(xorb_chunk_bound);
	RUN(shard_parse);
	RUN(shard_damaged);
	RUN(shard_write);
	return test_done();
}
