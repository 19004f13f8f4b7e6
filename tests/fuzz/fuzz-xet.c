/*
 * fuzz-xet.c - hub/xet's readers of bytes that come from elsewhere: the identity file
 * (xet_identity_parse) and a xorb's chunks (xet_xorb_chunk_parse), and the chunker on any bytes.
 * Invariants: an identity file that is accepted writes back byte for byte, its chunks tile the file
 * from 0 to its size, and its file hash is its chunks'; a xorb chunk that is accepted lies inside the
 * buffer, with its header's sizes equal; a refused one writes no result (but the header of a
 * compression we do not read); and the input's own identity is the same fed whole or a byte at a time
 * for its first bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hub/xet/xet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_identity(const uint8_t *data, size_t size)
{
	struct xet_identity *id = NULL;
	char *why = NULL;
	int rc = xet_identity_parse(data, size, &id, &why);
	if (rc == 0) {
		size_t n, len;
		uint64_t off = 0;
		const struct xet_chunk *c = xet_identity_chunks(id, &n);
		unsigned char *back = xet_identity_serialize(id, &len);
		if (why || len != size || memcmp(back, data, size) != 0)
			abort();
		for (size_t i = 0; i < n; i++) {
			if (c[i].offset != off || c[i].size == 0 || c[i].size > XET_CHUNK_MAX)
				abort();
			off += c[i].size;
		}
		if (off != xet_identity_size(id))
			abort();
		free(back);
	} else if (rc != -EBADMSG || id || !why) {
		abort();
	}
	free(why);
	xet_identity_free(&id);
}

static void check_xorb(const uint8_t *data, size_t size)
{
	size_t pos = 0;
	while (pos < size) {
		struct xet_xorb_chunk_header h = { .version = 7 };
		const unsigned char *d = NULL;
		size_t used = 0;
		int rc = xet_xorb_chunk_parse(data + pos, size - pos, &h, &d, &used, NULL);
		if (rc == -ENOTSUP && h.compression != XET_COMPRESSION_LZ4 && h.compression != XET_COMPRESSION_BG4_LZ4)
			abort();
		if (rc < 0) {
			if ((rc != -ENOTSUP && rc != -EBADMSG) || d || used)
				abort();
			return;
		}
		if (used != XET_XORB_CHUNK_HEADER_LEN + h.uncompressed_size || used > size - pos ||
		    h.compressed_size != h.uncompressed_size || d != data + pos + XET_XORB_CHUNK_HEADER_LEN)
			abort();
		pos += used;
	}
}

static void check_chunker(const uint8_t *data, size_t size)
{
	struct xet_identity *whole = xet_identity_new(), *bytes = xet_identity_new();
	size_t n1, n2, i;
	const struct xet_chunk *a, *b;
	xet_identity_update(whole, data, size);
	for (i = 0; i < size && i < 64; i++)
		xet_identity_update(bytes, data + i, 1);
	xet_identity_update(bytes, data + i, size - i);
	xet_identity_finish(whole);
	xet_identity_finish(bytes);
	a = xet_identity_chunks(whole, &n1);
	b = xet_identity_chunks(bytes, &n2);
	if (n1 != n2 || memcmp(xet_identity_file_hash(whole), xet_identity_file_hash(bytes), XET_HASH_LEN) != 0)
		abort();
	for (i = 0; i < n1; i++)
		if (a[i].size != b[i].size || memcmp(a[i].hash.b, b[i].hash.b, XET_HASH_LEN) != 0)
			abort();
	xet_identity_free(&whole);
	xet_identity_free(&bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_identity(data, size);
	check_xorb(data, size);
	check_chunker(data, size);
	return 0;
}
