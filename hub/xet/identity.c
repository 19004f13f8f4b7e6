/*
 * identity.c - a file's Xet identity as its bytes stream: the chunker finds the boundaries, a keyed
 * BLAKE3 hasher takes each chunk's bytes as they pass (nothing is buffered), and finish() makes the
 * file hash of the chunks. Its compact form (docs/protocols/xet.md, "The identity file"):
 *
 *   magic "hmxetid" and a version byte (1)        8 bytes
 *   the file's size                               u64, little-endian
 *   the number of chunks                          u64, little-endian
 *   the file hash                                 32 bytes
 *   per chunk: its size (u32, little-endian), then its hash (32 bytes)
 *
 * Offsets are the sizes' running sum, so they cannot disagree with them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "blake3.h"
#include "base/bug.h"
#include "base/xmalloc.h"
#include "hub/xet/xet.h"
#include "hub/xet/xet-int.h"

#define ID_MAGIC "hmxetid"
#define ID_VERSION 1
#define ID_HEAD (8 + 8 + 8 + XET_HASH_LEN)
#define ID_PER_CHUNK (4 + XET_HASH_LEN)

struct xet_identity {
	struct xet_chunker chunker;
	blake3_hasher hasher;       /* over the current chunk's bytes */
	uint64_t size, chunk_start;
	struct xet_chunk *chunks;
	size_t n, cap;
	struct xet_hash file_hash;
	bool finished;
	bool given;                 /* its chunks are stated (xet_identity_add_chunk), not found */
};

static void data_hasher_init(blake3_hasher *b)
{
	blake3_hasher_init_keyed(b, xet__data_key);
}

struct xet_identity *xet_identity_new(void)
{
	struct xet_identity *id = xcalloc(1, sizeof(*id));
	xet_chunker_init(&id->chunker);
	data_hasher_init(&id->hasher);
	return id;
}

void xet_identity_free(struct xet_identity **idp)
{
	if (!*idp)
		return;
	free((*idp)->chunks);
	free(*idp);
	*idp = NULL;
}

static void push_chunk(struct xet_identity *id, uint64_t size, const struct xet_hash *h)
{
	if (id->n == id->cap) {
		id->cap = id->cap ? 2 * id->cap : 64;
		id->chunks = xreallocarray(id->chunks, id->cap, sizeof(*id->chunks));
	}
	BUG_ON(size == 0 || size > XET_CHUNK_MAX);
	id->chunks[id->n].offset = id->chunk_start;
	id->chunks[id->n].size = (uint32_t)size;
	id->chunks[id->n].hash = *h;
	id->n++;
	id->chunk_start += size;
}

static void end_chunk(struct xet_identity *id)
{
	struct xet_hash h;
	blake3_hasher_finalize(&id->hasher, h.b, XET_HASH_LEN);
	push_chunk(id, id->size - id->chunk_start, &h);
	data_hasher_init(&id->hasher);
}

struct xet_identity *xet_identity_new_given(void)
{
	struct xet_identity *id = xet_identity_new();
	id->given = true;
	return id;
}

int xet_identity_add_chunk(struct xet_identity *id, uint64_t size, const struct xet_hash *h)
{
	BUG_ON(id->finished || !id->given);
	/* what a chunker could have cut: within the bounds, and every chunk before the last at least the
	 * minimum (the identity file's reader holds the same) */
	if (size == 0 || size > XET_CHUNK_MAX || (id->n > 0 && id->chunks[id->n - 1].size < XET_CHUNK_MIN))
		return -EINVAL;
	id->size += size;
	push_chunk(id, size, h);
	return 0;
}

void xet_identity_update(struct xet_identity *id, const void *data, size_t n)
{
	const unsigned char *p = data;
	BUG_ON(id->finished || id->given);
	while (n > 0) {
		bool cut;
		size_t k = xet_chunker_scan(&id->chunker, p, n, &cut);
		blake3_hasher_update(&id->hasher, p, k);
		id->size += k;
		if (cut)
			end_chunk(id);
		p += k;
		n -= k;
	}
}

static void compute_file_hash(struct xet_identity *id)
{
	struct xet_node *nodes = xreallocarray(NULL, id->n ? id->n : 1, sizeof(*nodes));
	for (size_t i = 0; i < id->n; i++) {
		nodes[i].hash = id->chunks[i].hash;
		nodes[i].size = id->chunks[i].size;
	}
	xet_file_hash(nodes, id->n, &id->file_hash);
	free(nodes);
}

void xet_identity_finish(struct xet_identity *id)
{
	BUG_ON(id->finished);
	if (!id->given && id->size > id->chunk_start)
		end_chunk(id);
	compute_file_hash(id);
	id->finished = true;
}

uint64_t xet_identity_size(const struct xet_identity *id)
{
	return id->size;
}

const struct xet_chunk *xet_identity_chunks(const struct xet_identity *id, size_t *n)
{
	BUG_ON(!id->finished);
	*n = id->n;
	return id->chunks;
}

const struct xet_hash *xet_identity_file_hash(const struct xet_identity *id)
{
	BUG_ON(!id->finished);
	return &id->file_hash;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;
	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

unsigned char *xet_identity_serialize(const struct xet_identity *id, size_t *len)
{
	size_t total = ID_HEAD + id->n * ID_PER_CHUNK;
	unsigned char *buf = xmalloc(total), *p = buf;

	BUG_ON(!id->finished);
	memcpy(p, ID_MAGIC, 7);
	p[7] = ID_VERSION;
	put_le(p + 8, id->size, 8);
	put_le(p + 16, id->n, 8);
	memcpy(p + 24, id->file_hash.b, XET_HASH_LEN);
	p += ID_HEAD;
	for (size_t i = 0; i < id->n; i++, p += ID_PER_CHUNK) {
		put_le(p, id->chunks[i].size, 4);
		memcpy(p + 4, id->chunks[i].hash.b, XET_HASH_LEN);
	}
	*len = total;
	return buf;
}

static int bad(char **errmsg, const char *why)
{
	if (errmsg)
		*errmsg = xstrdup(why);
	return -EBADMSG;
}

/* The chunks of an identity file, after its header: each a size a chunker could have cut. */
static int parse_chunks(struct xet_identity *id, const unsigned char *p, uint64_t n, char **errmsg)
{
	struct xet_hash h;
	for (uint64_t i = 0; i < n; i++, p += ID_PER_CHUNK) {
		uint64_t size = get_le(p, 4);
		if (size == 0 || size > XET_CHUNK_MAX)
			return bad(errmsg, "identity: a chunk's size is out of bounds");
		if (size < XET_CHUNK_MIN && i + 1 < n)
			return bad(errmsg, "identity: a chunk before the last is under the minimum size");
		if (size > id->size - id->chunk_start)
			return bad(errmsg, "identity: the chunks run past the file's size");
		memcpy(h.b, p + 4, XET_HASH_LEN);
		push_chunk(id, size, &h);
	}
	if (id->chunk_start != id->size)
		return bad(errmsg, "identity: the chunks do not add up to the file's size");
	return 0;
}

int xet_identity_parse(const void *buf, size_t len, struct xet_identity **out, char **errmsg)
{
	const unsigned char *p = buf;
	struct xet_identity *id = NULL;
	struct xet_hash want;
	uint64_t n;
	int rc;

	if (len < ID_HEAD || memcmp(p, ID_MAGIC, 7) != 0)
		return bad(errmsg, "identity: not an identity file (no magic)");
	if (p[7] != ID_VERSION)
		return bad(errmsg, "identity: unknown version");
	n = get_le(p + 16, 8);
	if (n > (len - ID_HEAD) / ID_PER_CHUNK || len - ID_HEAD != n * ID_PER_CHUNK)
		return bad(errmsg, "identity: its length does not match its chunk count");
	id = xet_identity_new();
	id->size = get_le(p + 8, 8);
	memcpy(want.b, p + 24, XET_HASH_LEN);
	rc = parse_chunks(id, p + ID_HEAD, n, errmsg);
	if (rc < 0)
		goto out;
	compute_file_hash(id);
	if (memcmp(id->file_hash.b, want.b, XET_HASH_LEN) != 0) {
		rc = bad(errmsg, "identity: the file hash is not its chunks' hash");
		goto out;
	}
	id->finished = true;
	*out = id;
	id = NULL;
out:
	xet_identity_free(&id);
	return rc;
}
