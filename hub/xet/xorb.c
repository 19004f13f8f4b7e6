/*
 * xorb.c - the header before each chunk in a xorb (docs/protocols/xet.md, "Xorbs"), 8 bytes:
 *
 *   version (u8, 0) | compressed size (u24 LE) | compression (u8) | uncompressed size (u24 LE)
 *
 * The mirror writes chunks uncompressed only; the clients' uploads come with LZ4 and BG4-LZ4 chunks,
 * which xet_xorb_chunk_read decompresses (liblz4's frame decoder) and xet_xorb_parse reads a whole
 * xorb with, every chunk hashed and the xorb hash recomputed from them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lz4frame.h>

#include "base/bug.h"
#include "base/xmalloc.h"
#include "hub/xet/xet.h"

#define XORB_VERSION 0

void xet_xorb_chunk_header_write(unsigned char *out, uint32_t size)
{
	BUG_ON(size == 0 || size > XET_CHUNK_MAX);
	out[0] = XORB_VERSION;
	out[1] = (unsigned char)size;
	out[2] = (unsigned char)(size >> 8);
	out[3] = (unsigned char)(size >> 16);
	out[4] = XET_COMPRESSION_NONE;
	out[5] = (unsigned char)size;
	out[6] = (unsigned char)(size >> 8);
	out[7] = (unsigned char)(size >> 16);
}

static uint32_t le24(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
}

static int fail(char **errmsg, int rc, const char *why)
{
	if (errmsg)
		*errmsg = xstrdup(why);
	return rc;
}

int xet_xorb_chunk_parse(const void *buf, size_t n, struct xet_xorb_chunk_header *hdr,
			 const unsigned char **data, size_t *used, char **errmsg)
{
	const unsigned char *p = buf;
	struct xet_xorb_chunk_header h;

	if (n < XET_XORB_CHUNK_HEADER_LEN)
		return fail(errmsg, -EBADMSG, "xorb: a chunk header is cut short");
	if (memcmp(p, "XETBLOB", 7) == 0)
		return fail(errmsg, -EBADMSG, "xorb: the footer where a chunk header should be");
	if (p[0] != XORB_VERSION)
		return fail(errmsg, -EBADMSG, "xorb: a chunk header of an unknown version");
	if (p[4] > XET_COMPRESSION_BG4_LZ4)
		return fail(errmsg, -EBADMSG, "xorb: a chunk of an unknown compression");
	h.version = p[0];
	h.compressed_size = le24(p + 1);
	h.compression = (enum xet_compression)p[4];
	h.uncompressed_size = le24(p + 5);
	if (h.uncompressed_size == 0 || h.uncompressed_size > XET_CHUNK_MAX)
		return fail(errmsg, -EBADMSG, "xorb: a chunk's size is out of bounds");
	if (h.compressed_size == 0 || h.compressed_size > 2 * XET_CHUNK_MAX)
		return fail(errmsg, -EBADMSG, "xorb: a chunk's compressed size is out of bounds");
	if (h.compression != XET_COMPRESSION_NONE) {
		*hdr = h;
		return fail(errmsg, -ENOTSUP, h.compression == XET_COMPRESSION_LZ4
			    ? "xorb: an LZ4-compressed chunk (xet_xorb_chunk_read decompresses it)"
			    : "xorb: a BG4-LZ4-compressed chunk (xet_xorb_chunk_read decompresses it)");
	}
	if (h.compressed_size != h.uncompressed_size)
		return fail(errmsg, -EBADMSG, "xorb: an uncompressed chunk whose two sizes differ");
	if (h.compressed_size > n - XET_XORB_CHUNK_HEADER_LEN)
		return fail(errmsg, -EBADMSG, "xorb: a chunk runs past the end of its xorb");
	*hdr = h;
	*data = p + XET_XORB_CHUNK_HEADER_LEN;
	*used = XET_XORB_CHUNK_HEADER_LEN + h.compressed_size;
	return 0;
}

struct xet_xorb_decoder {
	LZ4F_dctx *lz4;
	unsigned char grouped[XET_CHUNK_MAX];  /* BG4's bytes before they are put back in order */
};

struct xet_xorb_decoder *xet_xorb_decoder_new(void)
{
	struct xet_xorb_decoder *d = xcalloc(1, sizeof(*d));
	size_t rc = LZ4F_createDecompressionContext(&d->lz4, LZ4F_VERSION);
	BUG_ON(LZ4F_isError(rc));  /* it fails only out of memory, which aborts everywhere else too */
	return d;
}

void xet_xorb_decoder_free(struct xet_xorb_decoder **dp)
{
	if (!*dp)
		return;
	LZ4F_freeDecompressionContext((*dp)->lz4);
	free(*dp);
	*dp = NULL;
}

/* One LZ4 frame src[0..n) into dst, which must come out exactly want bytes long. The decoder is
 * given want bytes of room and no more, so a frame that claims more stops there and is refused. */
static int lz4_frame(LZ4F_dctx *lz4, const unsigned char *src, size_t n, unsigned char *dst, size_t want,
		     char **errmsg)
{
	size_t in = 0, out = 0, hint = 1;

	LZ4F_resetDecompressionContext(lz4);
	while (hint != 0) {
		size_t src_len = n - in, dst_len = want - out;
		if (src_len == 0)
			return fail(errmsg, -EBADMSG, "xorb: an LZ4 chunk's frame is cut short");
		hint = LZ4F_decompress(lz4, dst + out, &dst_len, src + in, &src_len, NULL);
		if (LZ4F_isError(hint))
			return fail(errmsg, -EBADMSG, "xorb: an LZ4 chunk is not a valid LZ4 frame");
		in += src_len;
		out += dst_len;
		if (hint != 0 && src_len == 0 && dst_len == 0)  /* no progress: the room is full */
			return fail(errmsg, -EBADMSG, "xorb: an LZ4 chunk decompresses past its stated size");
	}
	if (in != n)
		return fail(errmsg, -EBADMSG, "xorb: bytes after an LZ4 chunk's frame");
	if (out != want)
		return fail(errmsg, -EBADMSG, "xorb: an LZ4 chunk decompresses to another size than stated");
	return 0;
}

/* BG4: the chunk was split into four groups, bytes 0, 4, 8... then 1, 5, 9..., and so on; the
 * first n % 4 groups have one byte more. Put them back in order. */
static void bg4_regroup(const unsigned char *g, size_t n, unsigned char *out)
{
	size_t split = n / 4, rem = n % 4, start = 0;
	for (size_t k = 0; k < 4; k++) {
		size_t len = split + (k < rem ? 1 : 0);
		for (size_t i = 0; i < len; i++)
			out[4 * i + k] = g[start + i];
		start += len;
	}
}

int xet_xorb_chunk_read(struct xet_xorb_decoder *dec, const void *buf, size_t n,
			struct xet_xorb_chunk_header *hdr, unsigned char *out, size_t *used, char **errmsg)
{
	struct xet_xorb_chunk_header h;
	const unsigned char *data = NULL;
	size_t u = 0;
	int rc = xet_xorb_chunk_parse(buf, n, &h, &data, &u, errmsg);

	if (rc == 0) {
		memcpy(out, data, h.uncompressed_size);
		*hdr = h;
		*used = u;
		return 0;
	}
	if (rc != -ENOTSUP)
		return rc;
	if (errmsg) {
		free(*errmsg);
		*errmsg = NULL;
	}
	if (h.compressed_size > n - XET_XORB_CHUNK_HEADER_LEN)
		return fail(errmsg, -EBADMSG, "xorb: a chunk runs past the end of its xorb");
	data = (const unsigned char *)buf + XET_XORB_CHUNK_HEADER_LEN;
	if (h.compression == XET_COMPRESSION_LZ4) {
		rc = lz4_frame(dec->lz4, data, h.compressed_size, out, h.uncompressed_size, errmsg);
	} else {
		rc = lz4_frame(dec->lz4, data, h.compressed_size, dec->grouped, h.uncompressed_size, errmsg);
		if (rc == 0)
			bg4_regroup(dec->grouped, h.uncompressed_size, out);
	}
	if (rc < 0)
		return rc;
	*hdr = h;
	*used = XET_XORB_CHUNK_HEADER_LEN + h.compressed_size;
	return 0;
}

void xet_xorb_free(struct xet_xorb **xp)
{
	if (!*xp)
		return;
	free((*xp)->chunks);
	free(*xp);
	*xp = NULL;
}

/* Every chunk of buf[0..n) into x, each decompressed into one chunk's room and hashed. */
static int read_chunks(struct xet_xorb_decoder *dec, const unsigned char *p, size_t n, struct xet_xorb *x,
		       char **errmsg)
{
	unsigned char *room = xmalloc(XET_CHUNK_MAX);
	size_t pos = 0, cap = 0;
	int rc = 0;

	while (pos < n && !(n - pos >= 7 && memcmp(p + pos, "XETBLOB", 7) == 0)) {
		struct xet_xorb_chunk_header h;
		size_t used;
		if (x->n == XET_XORB_MAX_CHUNKS) {
			rc = fail(errmsg, -E2BIG, "xorb: more chunks than a xorb may hold");
			break;
		}
		rc = xet_xorb_chunk_read(dec, p + pos, n - pos, &h, room, &used, errmsg);
		if (rc < 0)
			break;
		if (x->n == cap) {
			cap = cap ? 2 * cap : 256;
			x->chunks = xreallocarray(x->chunks, cap, sizeof(*x->chunks));
		}
		xet_chunk_hash(room, h.uncompressed_size, &x->chunks[x->n].hash);
		x->chunks[x->n].offset = (uint32_t)pos;
		x->chunks[x->n].size = h.uncompressed_size;
		x->n++;
		x->size += h.uncompressed_size;
		pos += used;
	}
	x->end = pos;
	free(room);
	return rc;
}

int xet_xorb_parse(struct xet_xorb_decoder *dec, const void *buf, size_t n, const struct xet_hash *want,
		   struct xet_xorb **out, char **errmsg)
{
	struct xet_xorb *x = xcalloc(1, sizeof(*x));
	struct xet_node *nodes = NULL;
	int rc;

	if (n > XET_XORB_MAX_BYTES) {
		rc = fail(errmsg, -E2BIG, "xorb: larger than a xorb may be");
		goto out;
	}
	rc = read_chunks(dec, buf, n, x, errmsg);
	if (rc < 0)
		goto out;
	if (x->n == 0) {
		rc = fail(errmsg, -EBADMSG, "xorb: no chunks");
		goto out;
	}
	nodes = xreallocarray(NULL, x->n, sizeof(*nodes));
	for (size_t i = 0; i < x->n; i++) {
		nodes[i].hash = x->chunks[i].hash;
		nodes[i].size = x->chunks[i].size;
	}
	xet_xorb_hash(nodes, x->n, &x->hash);
	if (want && memcmp(want->b, x->hash.b, XET_HASH_LEN) != 0) {
		char got[XET_HEX_LEN + 1], named[XET_HEX_LEN + 1];
		xet_hash_hex(&x->hash, got);
		xet_hash_hex(want, named);
		if (errmsg)
			*errmsg = xasprintf("xorb: its chunks hash to %s, not to %s", got, named);
		rc = -EBADMSG;
		goto out;
	}
	*out = x;
	x = NULL;
out:
	free(nodes);
	xet_xorb_free(&x);
	return rc;
}
