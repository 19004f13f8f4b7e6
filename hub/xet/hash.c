/*
 * hash.c - Xet's hashes (docs/protocols/xet.md, "Hashes"): chunk hashes, the aggregation tree that
 * makes xorb and file hashes of them, the verification hash of a range, and the text form.
 * Every hash is BLAKE3 in keyed mode; the keys are the spec's constants.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "blake3.h"
#include "base/bug.h"
#include "base/hex.h"
#include "hub/xet/xet.h"
#include "hub/xet/xet-int.h"

/* The key of chunk hashes (the spec's DATA_KEY). */
const uint8_t xet__data_key[32] = {
	102, 151, 245, 119, 91, 149, 80, 222, 49, 53, 203, 172, 165, 151, 24, 28,
	157, 228, 33, 16, 155, 235, 43, 88, 180, 208, 176, 75, 147, 173, 242, 41,
};
/* The key of the aggregation tree's inner nodes (INTERNAL_NODE_KEY). */
static const uint8_t node_key[32] = {
	1, 126, 197, 199, 165, 71, 41, 150, 253, 148, 102, 102, 180, 138, 2, 230,
	93, 221, 83, 111, 55, 199, 109, 210, 248, 99, 82, 230, 74, 83, 113, 63,
};
/* The key of a file hash over the tree's root: all zero (no salt). */
static const uint8_t file_key[32];
/* The key of a range's verification hash (VERIFICATION_KEY). */
static const uint8_t verification_key[32] = {
	127, 24, 87, 214, 206, 86, 237, 102, 18, 127, 249, 19, 231, 165, 195, 243,
	164, 205, 38, 213, 181, 219, 73, 230, 65, 36, 152, 127, 40, 251, 148, 195,
};

/* Children per parent: a cut after a child whose hash is 0 mod 4 (mean 4), never before the third
 * child, never more than 9. */
#define XET_BRANCH 4
#define XET_GROUP_MAX (2 * XET_BRANCH + 1)

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void xet_hash_hex(const struct xet_hash *h, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (int w = 0; w < 4; w++) {
		uint64_t v = le64(h->b + 8 * w);
		for (int d = 15; d >= 0; d--) {
			out[16 * w + d] = digits[v & 0xf];
			v >>= 4;
		}
	}
	out[XET_HEX_LEN] = '\0';
}

int xet_hash_from_hex(const char *s, struct xet_hash *out)
{
	struct xet_hash h;
	if (strlen(s) != XET_HEX_LEN)
		return -EINVAL;
	for (int w = 0; w < 4; w++) {
		uint64_t v = 0;
		for (int d = 0; d < 16; d++) {
			int x = hex_digit(s[16 * w + d]);
			if (x < 0)
				return -EINVAL;
			v = v << 4 | (uint64_t)x;
		}
		for (int i = 0; i < 8; i++)
			h.b[8 * w + i] = (unsigned char)(v >> (8 * i));
	}
	*out = h;
	return 0;
}

bool xet_hash_is_zero(const struct xet_hash *h)
{
	static const struct xet_hash zero;
	return memcmp(h->b, zero.b, XET_HASH_LEN) == 0;
}

static void keyed(const uint8_t key[32], const void *data, size_t n, struct xet_hash *out)
{
	blake3_hasher b;
	blake3_hasher_init_keyed(&b, key);
	blake3_hasher_update(&b, data, n);
	blake3_hasher_finalize(&b, out->b, XET_HASH_LEN);
}

void xet_chunk_hash(const void *data, size_t n, struct xet_hash *out)
{
	keyed(xet__data_key, data, n, out);
}

/* How many of nodes[0..n) the next parent takes. */
static size_t group_len(const struct xet_node *nodes, size_t n)
{
	size_t end = n < XET_GROUP_MAX ? n : XET_GROUP_MAX;
	if (n <= 2)
		return n;
	for (size_t i = 2; i < end; i++)
		if (le64(nodes[i].hash.b + 24) % XET_BRANCH == 0)
			return i + 1;
	return end;
}

/* A parent of nodes[0..n): the node key over one line per child, "<hash as text> : <size>\n". */
static void parent(const struct xet_node *nodes, size_t n, struct xet_node *out)
{
	char line[XET_HEX_LEN + 32];
	blake3_hasher b;
	uint64_t size = 0;

	BUG_ON(n == 0 || n > XET_GROUP_MAX);
	blake3_hasher_init_keyed(&b, node_key);
	for (size_t i = 0; i < n; i++) {
		int k;
		xet_hash_hex(&nodes[i].hash, line);
		k = snprintf(line + XET_HEX_LEN, sizeof(line) - XET_HEX_LEN, " : %llu\n",
			     (unsigned long long)nodes[i].size);
		BUG_ON(k <= 0 || (size_t)k >= sizeof(line) - XET_HEX_LEN);
		blake3_hasher_update(&b, line, XET_HEX_LEN + (size_t)k);
		size += nodes[i].size;
	}
	blake3_hasher_finalize(&b, out->hash.b, XET_HASH_LEN);
	out->size = size;
}

void xet_merkle_root(struct xet_node *nodes, size_t n, struct xet_hash *out)
{
	if (n == 0) {
		memset(out->b, 0, XET_HASH_LEN);
		return;
	}
	/* each level is written over the one below it: parent k is made from nodes at or after k */
	while (n > 1) {
		size_t w = 0, r = 0;
		while (r < n) {
			size_t g = group_len(nodes + r, n - r);
			struct xet_node p;
			parent(nodes + r, g, &p);
			nodes[w++] = p;
			r += g;
		}
		n = w;
	}
	*out = nodes[0].hash;
}

void xet_xorb_hash(struct xet_node *chunks, size_t n, struct xet_hash *out)
{
	xet_merkle_root(chunks, n, out);
}

void xet_file_hash(struct xet_node *chunks, size_t n, struct xet_hash *out)
{
	struct xet_hash root;
	if (n == 0) {
		memset(out->b, 0, XET_HASH_LEN);
		return;
	}
	xet_merkle_root(chunks, n, &root);
	keyed(file_key, root.b, XET_HASH_LEN, out);
}

void xet_range_hash(const struct xet_hash *hashes, size_t n, struct xet_hash *out)
{
	blake3_hasher b;
	blake3_hasher_init_keyed(&b, verification_key);
	for (size_t i = 0; i < n; i++)
		blake3_hasher_update(&b, hashes[i].b, XET_HASH_LEN);
	blake3_hasher_finalize(&b, out->b, XET_HASH_LEN);
}
