/*
 * store-xet.h - each stored blob's Xet identity (docs/protocols/xet.md), kept beside it.
 *
 * The store's writer computes a content's identity (its chunks and Xet file hash, hub/xet/xet.h) in
 * the same pass as its sha256, and once the blob is published writes the identity's compact form to
 * <dir>/xet/<h0h1>/<sha256> (a temporary name, then renamed: a process never sees a part of one).
 * (Not fsynced: a crash of the machine may leave one short, which reads back as bad.) A content under
 * 8 KiB (one chunk) gets none: its identity is computed from its bytes whenever asked, cheaper than a
 * file. gc and quarantine delete it with its blob. One that is missing or does not parse (a blob stored
 * before, a crash) is computed again from the blob when first needed:
 * mirror_store_xet_identity reads the blob, so it runs on a worker, never on the loop.
 */
#ifndef HM_MIRROR_STORE_XET_H
#define HM_MIRROR_STORE_XET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mirror_store;
struct xet_identity;

/* What the content's Xet file hash must be (64 lowercase hex: upstream's xetHash), besides what
 * mirror_store_writer_new was told: _check refuses other bytes with HM_ERR_HASH_MISMATCH, as a
 * sha256 mismatch. NULL or malformed: nothing. */
struct mirror_store_writer;
void mirror_store_writer_expect_xet(struct mirror_store_writer *w, const char *xet_hash);

/* The path of blob sha256's identity file (64 lowercase hex, else NULL). Caller frees. */
char *mirror_store_xet_path(const struct mirror_store *s, const char *sha256);

/* Blob sha256's identity, read from its file, or computed from the blob (and its file written) when
 * the file is missing or does not parse or is not of the blob's size. 0 and *out (the caller's:
 * xet_identity_free), -ENOENT when the blob is not stored, or -errno. Blocking. */
int mirror_store_xet_identity(struct mirror_store *s, const char *sha256, struct xet_identity **out);

/* The Xet file hash in its text form (out: 65 bytes) from the identity file's header alone, without
 * checking the rest (a small content's from its bytes): cheap, for listings. 0, -ENOENT (no identity
 * file yet), -EBADMSG, or -errno. */
int mirror_store_xet_file_hash(const struct mirror_store *s, const char *sha256, char *out);

/* Record in catalog c the Xet hash of blob sha256 that its identity file states (catalog_blob_set_xet),
 * so listings and the CAS find it; nothing when there is no identity file. 0; -ENOENT (no identity
 * file); HM_ERR_HASH_MISMATCH when upstream states another Xet hash for it (catalog_xet_stated_set:
 * nothing recorded, the content is not offered through Xet, and a warning names both); another error
 * (a warning). */
struct catalog;
int mirror_store_xet_record(const struct mirror_store *s, struct catalog *c, const char *sha256);

/* Read blob sha256's local file once, hashing it with SHA-256 and computing its Xet identity in the same
 * pass: *ok whether the bytes are the content, *size how many were read; when ok, the identity file is
 * written (a content under 8 KiB gets none, as ever). pace, if not NULL, is called after each read
 * of at most 1 MiB with its size, and a nonzero return stops the read and is returned (a background
 * job's rate and its stop). 0, -ENOENT (no local file: with a bucket, not in the cache), or -errno.
 * Blocking: verify, and serve's backfill on a thread of its own. */
int mirror_store_xet_check(struct mirror_store *s, const char *sha256, int (*pace)(void *ud, size_t n), void *ud,
			   bool *ok, int64_t *size);
/* ... and with it, the chunks the global dedup query answers for (catalog_xet_dedup_set): the content's
 * first (and, where older chunkers cut it otherwise, its first as they cut it: the hash
 * @huggingface/hub asks for), and those this says are eligible, as the spec's: the hash's last 64-bit
 * word (bytes 24-31, little-endian) is 0 mod 1024. Reads the identity file (36 bytes a chunk) and the
 * blob's first 128 KiB: blocking. */
struct xet_hash;
bool mirror_store_xet_dedup_eligible(const struct xet_hash *h);

/* gc's walk of the identity files (<dir>/xet/): a temporary one (".<sha256>.<nonce>", left by a process
 * killed between its open and its rename) older than age_s is removed, as are identity files older
 * than age_s of contents known() says are gone (0; > 0 known; < 0 an error, which stops the walk): a
 * crash between a blob's delete and its identity's leaves one. Younger ones may be a writer's at work
 * (its blob not yet recorded) and stay. With dry_run nothing is removed, only counted. 0 or -errno. */
int mirror_store_xet_sweep(const struct mirror_store *s, int64_t age_s, bool dry_run,
			   int (*known)(void *ud, const char *sha256), void *ud, int64_t *temps, int64_t *orphans);

#endif
