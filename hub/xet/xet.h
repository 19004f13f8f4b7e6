/*
 * xet.h - a file's Xet identity, computed as its bytes stream by (docs/protocols/xet.md): the
 * content-defined chunks Xet cuts it into, each chunk's hash, the file hash built from them; the
 * hashes' text form; and the header every chunk of a xorb starts with. Pure computation: no I/O, no
 * threads, nothing of HTTP. Names carry `xet_` (the room's own prefix, as hub/http's are `httpd_`
 * and `hub_http_`).
 */
#ifndef HM_HUB_XET_H
#define HM_HUB_XET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XET_HASH_LEN 32
#define XET_HEX_LEN 64                  /* the text form, without its NUL */
#define XET_CHUNK_TARGET (64 * 1024)     /* the chunker's mean chunk size */
#define XET_CHUNK_MIN (XET_CHUNK_TARGET / 8)  /* no boundary before a chunk has this many bytes... */
#define XET_CHUNK_MAX (XET_CHUNK_TARGET * 2)  /* ...and one at this many, whatever the content */

/* A 32-byte hash as BLAKE3 gives it (the bytes, not the text form's word order). */
struct xet_hash {
	unsigned char b[XET_HASH_LEN];
};

/* Xet's text form of a hash: the 32 bytes read as four little-endian 64-bit words, each printed as
 * 16 lowercase hex digits, in order. out holds XET_HEX_LEN + 1 bytes. */
void xet_hash_hex(const struct xet_hash *h, char *out);
/* The reverse: exactly 64 hex digits (either case) and nothing after them. 0, or -EINVAL. */
int xet_hash_from_hex(const char *s, struct xet_hash *out);
bool xet_hash_is_zero(const struct xet_hash *h);

/* ---- content-defined chunking (gearhash) ---- */

/* The chunker's state between buffers: a plain value, xet_chunker_init() before the first. */
struct xet_chunker {
	uint64_t gear;   /* the rolling hash */
	uint64_t len;    /* bytes of the current chunk seen so far */
};
void xet_chunker_init(struct xet_chunker *c);
/* Scan data[0..n) as the continuation of the current chunk. Returns how many bytes of it belong to
 * the current chunk: if *cut, the chunk ends after them (a boundary; the chunker starts the next
 * chunk, and the caller calls again with the rest); else all n do and the chunk goes on. The last
 * chunk of a file ends at its end, which only the caller knows. */
size_t xet_chunker_scan(struct xet_chunker *c, const unsigned char *data, size_t n, bool *cut);
/* The first chunk of data[0..n) (a file's first bytes, at least its first 128 KiB or all of it) as
 * chunkers before the spec's fix cut it (@huggingface/xetchunk-wasm 0.2.0, docs/protocols/xet.md,
 * "Chunks"): its size when that chunker ends it at 8,128-8,191 bytes where the spec's does not, else 0
 * (both cut it alike). */
size_t xet_chunk_first_legacy(const unsigned char *data, size_t n);
/* The gear hash's table (for the unit test's reference chunker). */
extern const uint64_t xet_gear_table[256];

/* ---- hashes ---- */

/* A chunk's hash: BLAKE3 keyed with the spec's DATA_KEY over the chunk's bytes. */
void xet_chunk_hash(const void *data, size_t n, struct xet_hash *out);

/* One leaf or node of the aggregation tree: its hash and the bytes under it. */
struct xet_node {
	struct xet_hash hash;
	uint64_t size;
};
/* The root of Xet's aggregation tree over nodes[0..n): groups of children are cut where a child's
 * hash says so (mean 4, at most 9), each group hashed into a parent, until one is left. An empty list
 * gives the zero hash. nodes is overwritten (it is the work space). */
void xet_merkle_root(struct xet_node *nodes, size_t n, struct xet_hash *out);
/* A xorb's hash: the tree's root over its chunks. A file's hash: that root keyed once more (BLAKE3,
 * the all-zero key); the zero hash for an empty file. Both overwrite chunks, as above. */
void xet_xorb_hash(struct xet_node *chunks, size_t n, struct xet_hash *out);
void xet_file_hash(struct xet_node *chunks, size_t n, struct xet_hash *out);
/* The verification hash of a range of chunk hashes (a shard's term check): BLAKE3 keyed with the
 * spec's VERIFICATION_KEY over the hashes' bytes, concatenated. */
void xet_range_hash(const struct xet_hash *hashes, size_t n, struct xet_hash *out);

/* ---- a file's identity, streaming ---- */

struct xet_chunk {
	uint64_t offset;
	uint32_t size;
	struct xet_hash hash;
};
/* Made by xet_identity_new, fed with xet_identity_update (buffers of any size, in order), closed by
 * xet_identity_finish; then its chunks and file hash are read until xet_identity_free. */
struct xet_identity;
struct xet_identity *xet_identity_new(void);
void xet_identity_free(struct xet_identity **idp);
void xet_identity_update(struct xet_identity *id, const void *data, size_t n);
/* An identity whose chunks are stated, not found: a Xet fetch has each chunk's bytes as a xorb cut
 * them, and hashed them to check them, so it hands over each chunk's size and hash, in order, instead
 * of the bytes (xet_identity_update is not called on it). A size no chunker could have cut (0, over
 * XET_CHUNK_MAX, or after a chunk under XET_CHUNK_MIN) is refused with -EINVAL, the identity left as
 * it was. */
struct xet_identity *xet_identity_new_given(void);
int xet_identity_add_chunk(struct xet_identity *id, uint64_t size, const struct xet_hash *h);
/* Ends the last chunk and computes the file hash. Once; update no more after it. */
void xet_identity_finish(struct xet_identity *id);
uint64_t xet_identity_size(const struct xet_identity *id);
/* The chunks (owned by id), *n of them; after finish. */
const struct xet_chunk *xet_identity_chunks(const struct xet_identity *id, size_t *n);
const struct xet_hash *xet_identity_file_hash(const struct xet_identity *id);

/* The identity's compact form, to keep beside a stored blob (docs/protocols/xet.md, "The identity
 * file"): a malloc'd buffer the caller frees, *len bytes. After finish. */
unsigned char *xet_identity_serialize(const struct xet_identity *id, size_t *len);
/* Read that form back: every field checked (magic, version, lengths, sizes, offsets, the file hash
 * recomputed from the chunks). 0 and a new finished identity in *out (the caller's), or -EBADMSG
 * with a malloc'd reason in *errmsg (if errmsg is not NULL). */
int xet_identity_parse(const void *buf, size_t len, struct xet_identity **out, char **errmsg);

/* ---- xorbs ---- */

#define XET_XORB_CHUNK_HEADER_LEN 8
enum xet_compression {
	XET_COMPRESSION_NONE = 0,
	XET_COMPRESSION_LZ4 = 1,
	XET_COMPRESSION_BG4_LZ4 = 2,  /* byte grouping of 4, then LZ4 */
};
/* The header before each chunk's bytes in a xorb. */
struct xet_xorb_chunk_header {
	uint8_t version;
	uint32_t compressed_size;    /* the bytes that follow the header */
	enum xet_compression compression;
	uint32_t uncompressed_size;  /* the chunk's own size */
};
/* The header of an uncompressed chunk of size bytes (0 < size <= XET_CHUNK_MAX) into
 * out[XET_XORB_CHUNK_HEADER_LEN]. */
void xet_xorb_chunk_header_write(unsigned char *out, uint32_t size);
/* Parse one chunk at buf[0..n) without copying it: its header and, for an uncompressed chunk,
 * where its bytes are (*data, hdr->uncompressed_size of them, inside buf) and how many bytes header
 * and data take (*used). 0; -EBADMSG for a header that is malformed or runs past n; -ENOTSUP for a
 * compressed chunk (LZ4, BG4-LZ4: xet_xorb_chunk_read decompresses those), *hdr still written. A
 * malloc'd reason in *errmsg for either (if errmsg is not NULL). */
int xet_xorb_chunk_parse(const void *buf, size_t n, struct xet_xorb_chunk_header *hdr,
			 const unsigned char **data, size_t *used, char **errmsg);

/* What reading compressed chunks needs between calls: an LZ4 frame decoder and a chunk's worth of
 * room for BG4's regrouping. One per thread; NULL-safe free. */
struct xet_xorb_decoder;
struct xet_xorb_decoder *xet_xorb_decoder_new(void);
void xet_xorb_decoder_free(struct xet_xorb_decoder **dp);
/* Read one chunk at buf[0..n) of any compression into out (XET_CHUNK_MAX bytes, the caller's): its
 * header, and how many bytes of buf it took (*used); the chunk is out[0..hdr->uncompressed_size).
 * Compressed chunks are each one LZ4 frame (both clients write frames, not raw blocks) that must
 * decode to exactly the header's size and end where the header says; nothing is written past that
 * size whatever the frame claims. 0, or -EBADMSG with a malloc'd reason (if errmsg is not NULL). */
int xet_xorb_chunk_read(struct xet_xorb_decoder *dec, const void *buf, size_t n,
			struct xet_xorb_chunk_header *hdr, unsigned char *out, size_t *used, char **errmsg);

/* A xorb's bounds: both clients close a xorb at 64 MiB of chunks or 8,192 chunks; the footer hf_xet
 * appends (the chunks' hashes and boundaries again) takes at most 44 bytes a chunk and a few more. */
#define XET_XORB_MAX_CHUNKS 8192
#define XET_XORB_MAX_BYTES (64 * 1024 * 1024 + XET_XORB_MAX_CHUNKS * 44 + 4096)

/* One chunk of a xorb read whole: its hash, its own size, and where its header starts. */
struct xet_xorb_entry {
	struct xet_hash hash;
	uint32_t offset;
	uint32_t size;
};
/* A xorb read and verified whole (xet_xorb_parse): its hash recomputed, its chunks in order. */
struct xet_xorb {
	struct xet_hash hash;
	size_t n;
	struct xet_xorb_entry *chunks;  /* owned */
	uint64_t size;                  /* the chunks' own bytes, added up */
	uint64_t end;                   /* where the last chunk ends: a footer, if any, starts here */
};
/* Read every chunk of the xorb buf[0..n) (at most XET_XORB_MAX_BYTES and XET_XORB_MAX_CHUNKS),
 * decompressing each, hash each and the xorb from them; if want is not NULL, the xorb's hash must be
 * it. What follows the last chunk must be nothing or a footer (it starts with "XETBLOB"; it repeats
 * what the chunks say, so it is not believed, only skipped). 0 and a new xorb in *out (the caller's),
 * or -EBADMSG (-E2BIG for the bounds) with a malloc'd reason in *errmsg (if not NULL). */
int xet_xorb_parse(struct xet_xorb_decoder *dec, const void *buf, size_t n, const struct xet_hash *want,
		   struct xet_xorb **out, char **errmsg);
void xet_xorb_free(struct xet_xorb **xp);

#endif
