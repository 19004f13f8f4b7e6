/*
 * shard.h - a Xet shard read from untrusted bytes (docs/protocols/xet.md, "Shards"): the files it
 * describes, each as terms (chunk ranges of xorbs) with their verification hashes, and the xorbs it
 * lists with their chunks. The reader checks the shard's form and bounds only; whether a term's
 * chunks are what it says is for whoever holds the xorbs (xet_range_hash, xet_file_hash).
 */
#ifndef HM_HUB_XET_SHARD_H
#define HM_HUB_XET_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hub/xet/xet.h"

/* Both clients cut a shard at 64 MiB. */
#define XET_SHARD_MAX_BYTES (64 * 1024 * 1024)

/* One term of a file: chunks [start, end) of a xorb, size bytes of them once decompressed, and the
 * verification hash of their chunk hashes (zero if the file has none). */
struct xet_shard_term {
	struct xet_hash xorb;
	uint32_t size;
	uint32_t start, end;
	struct xet_hash verify;
};
struct xet_shard_file {
	struct xet_hash hash;
	bool verified;                  /* it has a verification hash per term */
	bool has_sha256;                /* its metadata extension: the file's sha256, as both clients write it: */
	unsigned char sha256[32];       /* its hex read as a Xet hash (xet_hash_from_hex), not its bytes */
	size_t n;
	struct xet_shard_term *terms;   /* owned */
};
/* A xorb the shard lists: its chunks' hashes and sizes, in order. */
struct xet_shard_chunk {
	struct xet_hash hash;
	uint32_t size;
};
struct xet_shard_xorb {
	struct xet_hash hash;
	size_t n;
	struct xet_shard_chunk *chunks; /* owned */
};
struct xet_shard {
	size_t nfiles, nxorbs;
	struct xet_shard_file *files;   /* owned */
	struct xet_shard_xorb *xorbs;   /* owned */
	bool keyed;                     /* its chunk hashes are keyed (HMAC): not the chunks' own */
};

/* Read a shard, buf[0..n), at most XET_SHARD_MAX_BYTES: the header's tag and versions, the footer
 * where the header says and its offsets, each file's header, terms, verification and metadata
 * entries and each xorb's chunks, all inside their section and each section ended by its bookend.
 * The lookup tables after the sections are not read (they index what the sections say). 0 and a new
 * shard in *out (the caller's), or -EBADMSG (-E2BIG over the bound) with a malloc'd reason in
 * *errmsg (if not NULL). */
int xet_shard_parse(const void *buf, size_t n, struct xet_shard **out, char **errmsg);
void xet_shard_free(struct xet_shard **sp);

/* A shard that lists xorbs[0..n) with their chunks and no files (the global dedup query's answer):
 * the lookup tables made, the chunk hashes plain (a zero key), the chunks' offsets counted as their
 * uncompressed bytes, created and expiry (unix seconds) in the footer. Returns a malloc'd buffer of
 * *len bytes (the caller's), which xet_shard_parse reads back. */
unsigned char *xet_shard_write(const struct xet_shard_xorb *xorbs, size_t n, uint64_t created, uint64_t expiry,
			       size_t *len);

#endif
