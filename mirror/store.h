/*
 * store.h - the content-addressed blob store.
 *
 * Every distinct content is stored once, named by its sha256: <dir>/blobs/<h0h1>/<sha256>. Bytes are
 * written to <dir>/tmp/<key>.part on the same filesystem, hashed while they stream (SHA-256 always,
 * git blob SHA-1 when the size is known), checked against what upstream promised, fsynced and only
 * then renamed into blobs/. So a blob path that exists holds verified content; a crash leaves at worst
 * a .part file, which a later writer for the same content resumes (re-hashing what is there) or gc
 * removes.
 */
#ifndef HM_STORE_H
#define HM_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mirror_store;
struct mirror_store_writer;

/* What the content must be. Any field may be absent (NULL / -1); at least one of sha256 and git_oid
 * should be given for the content to count as verified. Strings are borrowed for the call. */
struct mirror_store_expect {
	const char *sha256;   /* 64 lowercase hex */
	const char *git_oid;  /* 40 lowercase hex: sha1("blob <size>\0" + content); needs size */
	int64_t size;         /* -1 when unknown */
};

/* Open the store rooted at dir, creating dir/blobs and dir/tmp. *out is owned by the caller
 * (mirror_store_free). Returns 0 or -errno. */
int mirror_store_open(const char *dir, struct mirror_store **out);
void mirror_store_free(struct mirror_store **s);

/* Path of the blob with this sha256 (which must be 64 lowercase hex, else NULL). Caller frees. */
char *mirror_store_blob_path(const struct mirror_store *s, const char *sha256);

/* True if the blob is present with this size (size -1: any). */
bool mirror_store_has(const struct mirror_store *s, const char *sha256, int64_t size);

/*
 * Start writing content that must match *expect. With resume, an existing partial file for the
 * same content is kept: its bytes are re-hashed and mirror_store_writer_offset() tells where to go on
 * (an HTTP Range start). Returns 0 and *out (owned: end it with _commit or _abort), -EBUSY when another
 * writer holds the same partial file, -EINVAL when expect names neither sha256 nor git_oid with a
 * size, or -errno.
 */
int mirror_store_writer_new(struct mirror_store *s, const struct mirror_store_expect *expect,
			    bool resume, struct mirror_store_writer **out);

/* Where the partial file of a content being written lives (key: its sha256, else its git id; which
 * a writer uses). Another reader may follow it as it grows. NULL for a malformed key; caller frees. */
char *mirror_store_part_path(const struct mirror_store *s, const char *key);

/* Bytes already in the partial file (the resume offset). */
int64_t mirror_store_writer_offset(const struct mirror_store_writer *w);

/* Bytes in the partial file itself (the writer buffers up to 1 MiB): what another reader of it may
 * take. Every byte is in once _check (or _commit) ran. */
int64_t mirror_store_writer_flushed(const struct mirror_store_writer *w);

/* Drop everything written so far (e.g. the server ignored our Range and restarts from 0). */
int mirror_store_writer_truncate(struct mirror_store_writer *w);

/* Append n bytes. Returns 0, HM_ERR_SIZE_MISMATCH past the expected size, or -errno (-ENOSPC...). */
int mirror_store_writer_write(struct mirror_store_writer *w, const void *data, size_t n);

/* Check what was written against the expectation (size, sha256, git id) without publishing it:
 * 0 when it matches, else HM_ERR_SIZE_MISMATCH or HM_ERR_HASH_MISMATCH. Once only (the digests are
 * finished): _commit then publishes (or drops) on that verdict, and may run on another thread. */
int mirror_store_writer_check(struct mirror_store_writer *w);

/*
 * Verify and publish. On success the blob is in the store (or already was: same content), and
 * sha256_out (65 bytes, may be NULL) holds its hex name. On a size or hash mismatch the partial file
 * is deleted and HM_ERR_SIZE_MISMATCH / HM_ERR_HASH_MISMATCH returned; on an I/O error -errno with the
 * partial file kept for resume. Either way *w is freed and set to NULL.
 */
int mirror_store_writer_commit(struct mirror_store_writer **w, char *sha256_out);

/* Stop writing; keep_partial keeps the bytes for a later resume. Frees *w; accepts NULL. */
void mirror_store_writer_abort(struct mirror_store_writer **w, bool keep_partial);

#endif

/* ---- maintenance (gc, verify) ---- */

/* Delete a blob file. Returns 0, -ENOENT, or -errno. */
int mirror_store_remove(struct mirror_store *s, const char *sha256);

/* Move a blob that failed verification to <dir>/quarantine/<sha256>.<unix time> (kept for a human
 * to look at; never served). Returns 0 or -errno. */
int mirror_store_quarantine(struct mirror_store *s, const char *sha256);

/* Re-hash a stored blob: *ok tells whether it hashes to its name; *size is its size. Returns 0,
 * -ENOENT, or -errno. */
int mirror_store_check(struct mirror_store *s, const char *sha256, bool *ok, int64_t *size);

/* The git blob id of a stored blob (out: 41 bytes, lowercase hex) and its size. Returns 0, -ENOENT or
 * -errno. */
int mirror_store_git_oid(struct mirror_store *s, const char *sha256, char *out, int64_t *size);

/* Call fn for every file under blobs/ (name: what it is called, may not be a valid hash) and, with
 * partials, every .part file in tmp/ (with its age in seconds). Stops at fn's first non-zero. */
int mirror_store_each(struct mirror_store *s, bool partials,
		      int (*fn)(void *ud, const char *name, const char *path, int64_t age_s), void *ud);
