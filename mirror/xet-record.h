/*
 * xet-record.h - a stored content's Xet identity in the catalog: its Xet hash, checked against what
 * upstream states, and the chunks the global dedup query answers for (docs/protocols/xet.md). The
 * identity itself is the store's (store/store-xet.h).
 */
#ifndef HM_MIRROR_XET_RECORD_H
#define HM_MIRROR_XET_RECORD_H

#include <stdbool.h>

struct catalog;
struct store;
struct xet_hash;

/* Record in catalog c the Xet hash of blob sha256 that its identity file states (catalog_blob_set_xet),
 * so listings and the CAS find it; nothing when there is no identity file. 0; -ENOENT (no identity
 * file); HM_ERR_HASH_MISMATCH when upstream states another Xet hash for it (catalog_xet_stated_set:
 * nothing recorded, the content is not offered through Xet, and a warning names both); another error
 * (a warning). */
int mirror_xet_record(const struct store *s, struct catalog *c, const char *sha256);

/* With the Xet hash, mirror_xet_record records the chunks the global dedup query answers for
 * (catalog_xet_dedup_set): the content's first (and, where older chunkers cut it otherwise, its first
 * as they cut it: the hash @huggingface/hub asks for), and those this says are eligible, as the spec's:
 * the hash's last 64-bit word (bytes 24-31, little-endian) is 0 mod 1024. Reads the identity file (36
 * bytes a chunk) and the blob's first 128 KiB: blocking. */
bool mirror_xet_dedup_eligible(const struct xet_hash *h);

#endif
