/*
 * oci.h - a file as an OCI tar layer (docs/protocols/oci.md, "Tar layers"): what a container runtime
 * unpacks. The layer is the file's tar entry and the archive's end, made the same way every time, so
 * that its digest, computed once, names it for good: the header libarchive writes for a regular file
 * named by the file's path in its repo (pax restricted: plain ustar, with a pax record only for what
 * ustar cannot say: a long or non-ASCII name, a size past 8 GiB), mode 0644, owner 0:0, mtime 0, no
 * user or group names; then the file's bytes; then zeros to the 512-byte block and the two zero blocks
 * that end an archive. The header is kept with the digest (libarchive's next version may write
 * another), so only the file's bytes are read again.
 */
#ifndef HM_HUB_OCI_H
#define HM_HUB_OCI_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The tar header of a file named path (relative, as in its repo) of size bytes into *out (malloc'd,
 * a multiple of 512 bytes, *len). Returns 0 or -EINVAL (a name libarchive refuses). */
int hub_oci_tar_header(const char *path, int64_t size, unsigned char **out, size_t *len);

/* The zero bytes after a file of size bytes in its layer: its block's padding and the archive's end. */
int64_t hub_oci_tar_tail(int64_t size);

/* The layer's digest ("sha256:" and 64 hex digits) over header, the size bytes of the file at file
 * and the tail: the whole file is read (run it off the loop). Returns 0, -errno, or HM_ERR_SIZE_MISMATCH
 * when the file is not size bytes long. */
/* A byte range [a, end) of a layer of a header_len-byte header and a size-byte file, cut into the
 * header's part [h0, h1), the file's [f0, f1) and how many of the tail's zeros (the mirror's and the
 * agent's answers to a Range). */
struct hub_oci_span {
	int64_t h0, h1, f0, f1, zeros;
};
void hub_oci_tar_span(int64_t header_len, int64_t size, int64_t a, int64_t end, struct hub_oci_span *s);

int hub_oci_tar_digest(const unsigned char *header, size_t header_len, const char *file, int64_t size,
		       char digest[72]);
/* The same, given up with -ECANCELED once *stop is true (a daemon stopping; stop may be NULL). */
int hub_oci_tar_digest_until(const unsigned char *header, size_t header_len, const char *file, int64_t size,
			     const atomic_bool *stop, char digest[72]);
/* The same over a file read through rd: rd(ud, off, buf, len) puts the file's bytes [off, off + len)
 * in buf, all of them (called in order, off from 0 up to size, len at most chunk, or
 * HUB_OCI_READ_CHUNK when chunk is 0: a buffer of that size is held meanwhile), and returns 0 or an
 * error that ends the digest (returned as it is): a content read by ranges from a bucket, say (a
 * request per call: a bigger chunk makes fewer), and hashed to its own id on the way by the reader. */
#define HUB_OCI_READ_CHUNK ((size_t)1 << 20)
typedef int (*hub_oci_read_fn)(void *ud, int64_t off, void *buf, size_t len);
int hub_oci_tar_digest_read(const unsigned char *header, size_t header_len, int64_t size, size_t chunk,
			    hub_oci_read_fn rd, void *ud, char digest[72]);

#endif
