/*
 * xorb.c - the header before each chunk in a xorb (docs/protocols/xet.md, "Xorbs"), 8 bytes:
 *
 *   version (u8, 0) | compressed size (u24 LE) | compression (u8) | uncompressed size (u24 LE)
 *
 * The mirror writes chunks uncompressed only; a reader meets LZ4 and BG4-LZ4 from other writers
 * and is told plainly that this build does not read them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

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
			    ? "xorb: LZ4-compressed chunks are not supported"
			    : "xorb: BG4-LZ4-compressed chunks are not supported");
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
