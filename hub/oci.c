/*
 * oci.c - a file as an OCI tar layer (oci.h): its header made by libarchive, its digest over the
 * header, the file and the tail.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <openssl/evp.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/xmalloc.h"
#include "oci.h"

struct tar_sink {
	struct buf out;
	bool header_done; /* what comes after the header is the entry's data, which libarchive is not given */
};

static la_ssize_t tar_sink_write(struct archive *a, void *ud, const void *p, size_t n)
{
	struct tar_sink *s = ud;

	(void)a;
	if (s->header_done)
		return -1; /* the entry's data: refused, so that freeing the writer does not write size zeros */
	buf_add(&s->out, p, n);
	return (la_ssize_t)n;
}

int hub_oci_tar_header(const char *path, int64_t size, unsigned char **out, size_t *len)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	struct tar_sink s = { .header_done = false };
	int r = -EINVAL;

	buf_init(&s.out);
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK || archive_write_set_bytes_per_block(a, 0))
		goto out;
	/* A name not ASCII goes as its bytes (UTF-8 on the hubs), in a pax record with hdrcharset=BINARY,
	 * never converted through the locale (serve runs in C's, where libarchive 3.6 cannot convert a
	 * UTF-8 name). Only then: the option puts that record in every header. */
	for (const char *p = path; *p; p++)
		if ((unsigned char)*p >= 0x80) {
			if (archive_write_set_options(a, "hdrcharset=BINARY") != ARCHIVE_OK)
				goto out;
			break;
		}
	if (archive_write_open2(a, &s, NULL, tar_sink_write, NULL, NULL) != ARCHIVE_OK)
		goto out;
	archive_entry_copy_pathname(e, path);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, size);
	archive_entry_set_mtime(e, 0, 0);
	if (archive_write_header(a, e) != ARCHIVE_OK || !s.out.len || s.out.len % 512)
		goto out;
	s.header_done = true;
	*out = (unsigned char *)buf_detach(&s.out, len);
	r = 0;
out:
	s.header_done = true;
	archive_write_free(a);
	archive_entry_free(e);
	buf_release(&s.out);
	return r;
}

int64_t hub_oci_tar_tail(int64_t size)
{
	return (512 - size % 512) % 512 + 1024;
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void hub_oci_tar_span(int64_t header_len, int64_t size, int64_t a, int64_t end, struct hub_oci_span *s)
{
	s->h0 = clamp(a, 0, header_len);
	s->h1 = clamp(end, 0, header_len);
	s->f0 = clamp(a - header_len, 0, size);
	s->f1 = clamp(end - header_len, 0, size);
	s->zeros = clamp(end - header_len - size, 0, INT64_MAX) - clamp(a - header_len - size, 0, INT64_MAX);
}

int hub_oci_tar_digest(const unsigned char *header, size_t header_len, const char *file, int64_t size,
		       char digest[72])
{
	return hub_oci_tar_digest_until(header, header_len, file, size, NULL, digest);
}

struct tar_fd {
	int fd;
	const atomic_bool *stop;
};

/* hub_oci_tar_digest's reader: the file's bytes in order, from its descriptor. */
static int tar_fd_read(void *ud, int64_t off, void *buf, size_t len)
{
	struct tar_fd *t = ud;
	char *p = buf;

	(void)off; /* (read in order: the descriptor's own offset is off) */
	if (t->stop && atomic_load(t->stop))
		return -ECANCELED;
	while (len > 0) {
		ssize_t n = read(t->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : HM_ERR_SIZE_MISMATCH;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int hub_oci_tar_digest_until(const unsigned char *header, size_t header_len, const char *file, int64_t size,
			     const atomic_bool *stop, char digest[72])
{
	struct tar_fd t = { .fd = open(file, O_RDONLY | O_CLOEXEC), .stop = stop };
	int r;

	if (t.fd < 0)
		return -errno;
	r = hub_oci_tar_digest_read(header, header_len, size, 0, tar_fd_read, &t, digest);
	close(t.fd);
	return r;
}

int hub_oci_tar_digest_read(const unsigned char *header, size_t header_len, int64_t size, size_t chunk_len,
			    hub_oci_read_fn rd, void *ud, char digest[72])
{
	static const unsigned char zeros[1536];
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	size_t cl = chunk_len ? chunk_len : HUB_OCI_READ_CHUNK;
	unsigned char *chunk = xmalloc(cl), sum[32];
	int r = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 ? 0 : -ENOMEM;

	if (!r)
		EVP_DigestUpdate(md, header, header_len);
	for (int64_t off = 0; !r && off < size;) {
		size_t n = size - off > (int64_t)cl ? cl : (size_t)(size - off);
		r = rd(ud, off, chunk, n);
		if (!r && EVP_DigestUpdate(md, chunk, n) != 1)
			r = -EIO;
		off += (int64_t)n;
	}
	if (!r) {
		EVP_DigestUpdate(md, zeros, (size_t)hub_oci_tar_tail(size));
		EVP_DigestFinal_ex(md, sum, NULL);
		memcpy(digest, "sha256:", 7);
		hex_encode(sum, 32, digest + 7);
	}
	free(chunk);
	EVP_MD_CTX_free(md);
	return r;
}
