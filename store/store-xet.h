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
 * store_xet_identity reads the blob, so it runs on a worker, never on the loop.
 */
#ifndef HM_STORE_STORE_XET_H
#define HM_STORE_STORE_XET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct xet_identity;

/* What the content's Xet file hash must be (64 lowercase hex: upstream's xetHash), besides what
 * store_writer_new was told: _check refuses other bytes with HM_ERR_HASH_MISMATCH, as a
 * sha256 mismatch. NULL or malformed: nothing. */
struct store_writer;
void store_writer_expect_xet(struct store_writer *w, const char *xet_hash);

/* The path of blob sha256's identity file (64 lowercase hex, else NULL). Caller frees. */
char *store_xet_path(const struct store *s, const char *sha256);

/* Blob sha256's identity, read from its file, or computed from the blob (and its file written) when
 * the file is missing or does not parse or is not of the blob's size. 0 and *out (the caller's:
 * xet_identity_free), -ENOENT when the blob is not stored, or -errno. Blocking. */
int store_xet_identity(struct store *s, const char *sha256, struct xet_identity **out);

/* The Xet file hash in its text form (out: 65 bytes) from the identity file's header alone, without
 * checking the rest (a small content's from its bytes): cheap, for listings. 0, -ENOENT (no identity
 * file yet), -EBADMSG, or -errno. */
int store_xet_file_hash(const struct store *s, const char *sha256, char *out);

/* Blob sha256's identity file, parsed, if it is there, whole, and of size bytes; else NULL. Blocking. */
struct xet_identity *store_xet_read(const struct store *s, const char *sha256, int64_t size);

/* Read blob sha256's local file once, hashing it with SHA-256 and computing its Xet identity in the same
 * pass: *ok whether the bytes are the content, *size how many were read; when ok, the identity file is
 * written (a content under 8 KiB gets none, as ever). pace, if not NULL, is called after each read
 * of at most 1 MiB with its size, and a nonzero return stops the read and is returned (a background
 * job's rate and its stop). 0, -ENOENT (no local file: with a bucket, not in the cache), or -errno.
 * Blocking: verify, and serve's backfill on a thread of its own. */
int store_xet_check(struct store *s, const char *sha256, int (*pace)(void *ud, size_t n), void *ud,
			   bool *ok, int64_t *size);

/* gc's walk of the identity files (<dir>/xet/): a temporary one (".<sha256>.<nonce>", left by a process
 * killed between its open and its rename) older than age_s is removed, as are identity files older
 * than age_s of contents known() says are gone (0; > 0 known; < 0 an error, which stops the walk): a
 * crash between a blob's delete and its identity's leaves one. Younger ones may be a writer's at work
 * (its blob not yet recorded) and stay. With dry_run nothing is removed, only counted. 0 or -errno. */
int store_xet_sweep(const struct store *s, int64_t age_s, bool dry_run,
			   int (*known)(void *ud, const char *sha256), void *ud, int64_t *temps, int64_t *orphans);

#endif
