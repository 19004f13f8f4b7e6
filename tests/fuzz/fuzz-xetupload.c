/*
 * fuzz-xetupload.c - hub/xet's readers of what Xet clients upload: a chunk of any compression
 * (xet_xorb_chunk_read, liblz4's frames under it), a whole xorb (xet_xorb_parse) and a shard
 * (xet_shard_parse). Invariants: an accepted chunk took no more bytes than it was given and, when
 * uncompressed, reads back as its own bytes; an accepted xorb's chunks tile it from 0 to its end in
 * order, each within the chunk bounds, their sizes add up, and it is accepted again under the hash it
 * was given (and refused under another); an accepted shard's terms are non-empty ranges within the
 * bounds and its xorbs' chunks sized within them; a refusal says why and gives nothing.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hub/xet/shard.h"
#include "hub/xet/xet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct xet_xorb_decoder *dec;

static void check_chunk(const uint8_t *data, size_t size)
{
	static unsigned char out[XET_CHUNK_MAX];
	struct xet_xorb_chunk_header h;
	size_t used = 0;
	char *why = NULL;
	int rc = xet_xorb_chunk_read(dec, data, size, &h, out, &used, &why);
	if (rc == 0) {
		if (why || used > size || used != XET_XORB_CHUNK_HEADER_LEN + h.compressed_size)
			abort();
		if (h.compression == XET_COMPRESSION_NONE && memcmp(out, data + 8, h.uncompressed_size) != 0)
			abort();
	} else if (rc != -EBADMSG || !why || used) {
		abort();
	}
	free(why);
}

static void check_xorb(const uint8_t *data, size_t size)
{
	struct xet_xorb *x = NULL, *again = NULL;
	struct xet_hash other;
	uint64_t pos = 0, total = 0;
	char *why = NULL;
	int rc = xet_xorb_parse(dec, data, size, NULL, &x, &why);

	if (rc < 0) {
		if ((rc != -EBADMSG && rc != -E2BIG) || !why || x)
			abort();
		free(why);
		return;
	}
	if (why || x->n == 0 || x->end > size)
		abort();
	for (size_t i = 0; i < x->n; i++) {
		if (x->chunks[i].offset != pos || x->chunks[i].size == 0 || x->chunks[i].size > XET_CHUNK_MAX)
			abort();
		pos = i + 1 < x->n ? x->chunks[i + 1].offset : x->end;
		total += x->chunks[i].size;
	}
	if (total != x->size)
		abort();
	if (xet_xorb_parse(dec, data, size, &x->hash, &again, NULL) != 0)
		abort();
	other = x->hash;
	other.b[31] ^= 1;
	xet_xorb_free(&again);
	if (xet_xorb_parse(dec, data, size, &other, &again, NULL) != -EBADMSG || again)
		abort();
	xet_xorb_free(&x);
}

static void check_shard(const uint8_t *data, size_t size)
{
	struct xet_shard *s = NULL;
	char *why = NULL;
	int rc = xet_shard_parse(data, size, &s, &why);

	if (rc < 0) {
		if (rc != -EBADMSG || !why || s)
			abort();
		free(why);
		return;
	}
	for (size_t i = 0; i < s->nfiles; i++)
		for (size_t j = 0; j < s->files[i].n; j++) {
			const struct xet_shard_term *t = &s->files[i].terms[j];
			if (t->start >= t->end || t->size == 0 || t->end - t->start > XET_XORB_MAX_CHUNKS)
				abort();
		}
	for (size_t i = 0; i < s->nxorbs; i++) {
		if (s->xorbs[i].n == 0)
			abort();
		for (size_t j = 0; j < s->xorbs[i].n; j++)
			if (s->xorbs[i].chunks[j].size == 0 || s->xorbs[i].chunks[j].size > XET_CHUNK_MAX)
				abort();
	}
	xet_shard_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dec)
		dec = xet_xorb_decoder_new();
	check_chunk(data, size);
	check_xorb(data, size);
	check_shard(data, size);
	return 0;
}
