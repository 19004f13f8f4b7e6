/*
 * store-xet.c - each stored blob's Xet identity file (see store-xet.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "catalog/catalog.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "hub/xet/xet.h"
#include "store/bucket.h"
#include "store-int.h"
#include "store-xet.h"
#include "store.h"

#define ID_HEAD 56                    /* magic and version, size, chunk count, file hash */
#define ID_MAX ((int64_t)1 << 31)     /* 2 GiB: the identity of a 4 TB file; none bigger is believed */
#define SMALL XET_CHUNK_MIN            /* a content smaller is one chunk: no identity file is kept for it */

char *mirror_store_xet_path(const struct mirror_store *s, const char *sha256)
{
	if (!hex_is_lower(sha256, 64))
		return NULL;
	return xasprintf("%s/xet/%.2s/%s", mirror__store_dir(s), sha256, sha256);
}

int mirror__store_read_chunks(int fd, int (*fn)(void *ud, const void *data, size_t n), void *ud, int64_t *total)
{
	struct stat st;
	/* (no bigger than the file: an empty partial file, a fresh download's, costs no megabyte) */
	size_t chunk = fstat(fd, &st) == 0 && st.st_size < (1 << 20) ? (size_t)st.st_size + 1 : (size_t)1 << 20;
	char *b = xmalloc(chunk);
	int64_t off = 0;
	int r = 0;

	for (;;) {
		ssize_t n = pread(fd, b, chunk, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		r = fn(ud, b, (size_t)n);
		if (r)
			break;
		off += n;
	}
	free(b);
	*total = off;
	return r;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int mirror__store_xet_save(const struct mirror_store *s, const char *sha256, const struct xet_identity *id)
{
	char *path = mirror_store_xet_path(s, sha256), *dir = NULL, *tmp = NULL;
	unsigned char *buf = NULL, nonce[8];
	char nhex[17];
	size_t len;
	int fd = -1, r;

	if (!path)
		return -EINVAL;
	if (xet_identity_size(id) < SMALL) {
		free(path);
		return 0;   /* none kept: computed from the blob when asked, for less than a file costs */
	}
	dir = xasprintf("%s/xet/%.2s", mirror__store_dir(s), sha256);
	if ((r = path_mkdirs(dir, 0755)) != 0)
		goto out;
	if (getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce)) {
		r = -EIO;
		goto out;
	}
	hex_encode(nonce, sizeof(nonce), nhex);
	/* a name of its own: two workers computing the same identity never write one file */
	tmp = xasprintf("%s/.%s.%s", dir, sha256, nhex);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	buf = xet_identity_serialize(id, &len);
	r = write_all(fd, buf, len);
	/* renamed whole, so no process sees a part of one; not fsynced: a machine's crash may leave one
	 * short or empty, which reads back as bad (every field is checked) and is computed again, and two
	 * fsyncs a file would double what a sync of many small files waits for */
	if (!r && rename(tmp, path) < 0)
		r = -errno;
out:
	if (fd >= 0)
		close(fd);
	if (r && tmp)
		unlink(tmp);
	free(buf);
	free(tmp);
	free(dir);
	free(path);
	return r;
}

void mirror__store_xet_drop(const struct mirror_store *s, const char *sha256)
{
	char *path = mirror_store_xet_path(s, sha256);

	if (path)
		unlink(path);
	free(path);
}

/* The identity file of sha256, parsed, if it is there, whole, and of size bytes. */
static struct xet_identity *read_identity(const struct mirror_store *s, const char *sha256, int64_t size)
{
	char *path = mirror_store_xet_path(s, sha256);
	struct xet_identity *id = NULL;
	unsigned char *buf = NULL;
	struct stat st;
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	ssize_t got = 0;

	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < ID_HEAD || st.st_size > ID_MAX)
		goto out;
	buf = xmalloc((size_t)st.st_size);
	while (got < st.st_size) {
		ssize_t k = pread(fd, buf + got, (size_t)(st.st_size - got), got);
		if (k <= 0)
			goto out;
		got += k;
	}
	if (xet_identity_parse(buf, (size_t)st.st_size, &id, NULL) == 0 && (int64_t)xet_identity_size(id) != size)
		xet_identity_free(&id);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(path);
	return id;
}

static int identity_update(void *id, const void *data, size_t n)
{
	xet_identity_update(id, data, n);
	return 0;
}

int mirror_store_xet_identity(struct mirror_store *s, const char *sha256, struct xet_identity **out)
{
	char *blob = mirror_store_blob_path(s, sha256);
	struct xet_identity *id = NULL;
	struct stat st;
	int64_t total;
	int fd = -1, r = 0;

	if (!blob)
		return -EINVAL;
	fd = open(blob, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	id = read_identity(s, sha256, st.st_size);
	if (!id) {
		/* none yet, or not one we believe: the blob's bytes say it again */
		id = xet_identity_new();
		r = mirror__store_read_chunks(fd, identity_update, id, &total);
		if (!r && total != st.st_size)
			r = -EIO;
		if (r) {
			xet_identity_free(&id);
			goto out;
		}
		xet_identity_finish(id);
		mirror__store_xet_save(s, sha256, id);   /* kept if it can be: computed again if not */
	}
	*out = id;
out:
	if (fd >= 0)
		close(fd);
	free(blob);
	return r;
}

/* The file hash of a small blob (under SMALL bytes, one chunk), from its bytes. */
static int small_file_hash(const struct mirror_store *s, const char *sha256, char *out)
{
	char *blob = mirror_store_blob_path(s, sha256), buf[SMALL];
	struct xet_identity *id;
	int fd = blob ? open(blob, O_RDONLY | O_CLOEXEC) : -1, r = 0;
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof(buf), 0) : -1;

	if (fd < 0 || n < 0)
		r = -errno;
	else if (n == (ssize_t)sizeof(buf))
		r = -ENOENT;   /* not small: its identity file is missing */
	if (!r) {
		id = xet_identity_new();
		xet_identity_update(id, buf, (size_t)n);
		xet_identity_finish(id);
		xet_hash_hex(xet_identity_file_hash(id), out);
		xet_identity_free(&id);
	}
	if (fd >= 0)
		close(fd);
	free(blob);
	return r;
}

int mirror_store_xet_file_hash(const struct mirror_store *s, const char *sha256, char *out)
{
	char *path = mirror_store_xet_path(s, sha256);
	unsigned char head[ID_HEAD];
	struct xet_hash h;
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1, r = 0;
	ssize_t k;

	if (!path)
		return -EINVAL;
	if (fd < 0) {
		r = errno == ENOENT ? small_file_hash(s, sha256, out) : -errno;
		goto out;
	}
	k = pread(fd, head, sizeof(head), 0);
	if (k != (ssize_t)sizeof(head) || memcmp(head, "hmxetid\1", 8)) {
		r = k < 0 ? -errno : -EBADMSG;
		goto out;
	}
	memcpy(h.b, head + 24, XET_HASH_LEN);
	xet_hash_hex(&h, out);
out:
	if (fd >= 0)
		close(fd);
	free(path);
	return r;
}

bool mirror_store_xet_dedup_eligible(const struct xet_hash *h)
{
	uint64_t w = 0;

	for (int i = 31; i >= 24; i--)
		w = w << 8 | h->b[i];
	return w % 1024 == 0;
}

/* The hash of content sha256's first chunk as a chunker before the spec's fix cuts it (xet.h:
 * xet_chunk_first_legacy), when that is not the spec's first chunk: @huggingface/hub asks the dedup
 * query for it, so it names the content too. true and *out, or false. */
struct head_buf {
	unsigned char *buf;
	size_t n;
};

static int head_sink(void *ud, const void *data, size_t n)
{
	struct head_buf *h = ud;

	if (n > XET_CHUNK_MAX - h->n)
		return -EOVERFLOW;
	memcpy(h->buf + h->n, data, n);
	h->n += n;
	return 0;
}

/* The content's first bytes (at most XET_CHUNK_MAX) into buf: from its local file, else (a bucket's
 * content not in the cache) a ranged read of the bucket's object, which was completed only verified;
 * the content is never brought into the cache for it. How many, or -1. */
static ssize_t content_head(const struct mirror_store *s, const char *sha256, int64_t size, unsigned char *buf)
{
	char *blob = mirror_store_cache_path(s, sha256);
	int fd = blob ? open(blob, O_RDONLY | O_CLOEXEC) : -1;
	struct head_buf h = { buf, 0 };
	ssize_t n = -1;

	free(blob);
	if (fd >= 0) {
		n = pread(fd, buf, XET_CHUNK_MAX, 0);
		close(fd);
	} else if (mirror_store_bucket(s) && size > 0 &&
		   !store_bucket_get(mirror_store_bucket(s), sha256, 0, size < XET_CHUNK_MAX ? size : XET_CHUNK_MAX,
				     head_sink, &h)) {
		n = (ssize_t)h.n;
	}
	return n;
}

static bool legacy_first(const struct mirror_store *s, const char *sha256, int64_t size, struct xet_hash *out)
{
	unsigned char *buf = xmalloc(XET_CHUNK_MAX);
	ssize_t n = content_head(s, sha256, size, buf);
	size_t first = n > 0 ? xet_chunk_first_legacy(buf, (size_t)n) : 0;

	if (first)
		xet_chunk_hash(buf, first, out);
	free(buf);
	return first > 0;
}

/* The content's size: its local file's, else (a bucket's content not in the cache) the bucket's; the
 * content is never brought into the cache for it. -1: neither has it. */
static int64_t content_size(const struct mirror_store *s, const char *sha256)
{
	char *blob = mirror_store_cache_path(s, sha256);
	struct stat st;
	int64_t size = -1;

	if (blob && !stat(blob, &st))
		size = st.st_size;
	else if (blob && mirror_store_bucket(s) && store_bucket_stat(mirror_store_bucket(s), sha256, &size))
		size = -1;
	free(blob);
	return size;
}

/* Record in c the chunks of content sha256 that the global dedup query answers for: its first, and
 * the eligible ones (a thousandth of the rest), from its identity file, and its first as older
 * chunkers cut it; nothing without an identity file. */
static void record_dedup(const struct mirror_store *s, struct catalog *c, const char *sha256)
{
	int64_t size = content_size(s, sha256);
	struct xet_identity *id = size >= 0 ? read_identity(s, sha256, size) : NULL;
	const struct xet_chunk *ch;
	char (*hex)[65];
	struct xet_hash alias;
	size_t n, k = 0;

	if (!id)
		return;
	ch = xet_identity_chunks(id, &n);
	hex = xcalloc(n + 1, sizeof(*hex));
	for (size_t i = 0; i < n; i++)
		if (i == 0 || mirror_store_xet_dedup_eligible(&ch[i].hash))
			xet_hash_hex(&ch[i].hash, hex[k++]);
	if (legacy_first(s, sha256, size, &alias))
		xet_hash_hex(&alias, hex[k++]);
	if (catalog_xet_dedup_set(c, sha256, (const char (*)[65])hex, k))
		log_warn("store", "catalog: %s", catalog_errmsg(c));
	free(hex);
	xet_identity_free(&id);
}

int mirror_store_xet_record(const struct mirror_store *s, struct catalog *c, const char *sha256)
{
	char xh[XET_HEX_LEN + 1], stated[XET_HEX_LEN + 1];
	bool refused;
	int r;

	if ((r = mirror_store_xet_file_hash(s, sha256, xh)) != 0)
		return r;
	r = catalog_blob_set_xet(c, sha256, xh);
	if (r == HM_ERR_HASH_MISMATCH) {
		if (!catalog_xet_stated(c, sha256, stated, &refused))
			log_warn("store", "content %.12s: upstream states Xet hash %s, its bytes make %s: not offered "
				 "through Xet", sha256, stated, xh);
		return r;
	}
	if (r) {
		log_warn("store", "catalog: %s", catalog_errmsg(c));
		return r;
	}
	record_dedup(s, c, sha256);
	return 0;
}

struct check_pass {
	EVP_MD_CTX *md;
	struct xet_identity *id;
	int (*pace)(void *ud, size_t n);
	void *ud;
};

static int check_update(void *ud, const void *data, size_t n)
{
	struct check_pass *p = ud;

	EVP_DigestUpdate(p->md, data, n);
	xet_identity_update(p->id, data, n);
	return p->pace ? p->pace(p->ud, n) : 0;
}

int mirror_store_xet_check(struct mirror_store *s, const char *sha256, int (*pace)(void *ud, size_t n), void *ud,
			   bool *ok, int64_t *size)
{
	char *blob = mirror__store_blob_local(s, sha256), got[65];
	struct check_pass p = { EVP_MD_CTX_new(), xet_identity_new(), pace, ud };
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int64_t total = 0;
	int fd = blob ? open(blob, O_RDONLY | O_CLOEXEC) : -1, r;

	if (fd < 0) {
		r = blob ? -errno : -EINVAL;
		goto out;
	}
	EVP_DigestInit_ex(p.md, EVP_sha256(), NULL);
	r = mirror__store_read_chunks(fd, check_update, &p, &total);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);   /* a walk over the store should not evict the hot set */
	if (r)
		goto out;
	EVP_DigestFinal_ex(p.md, md, &mdlen);
	hex_encode(md, mdlen, got);
	*ok = mdlen == 32 && !strcmp(got, sha256);
	*size = total;
	if (*ok) {
		xet_identity_finish(p.id);
		r = mirror__store_xet_save(s, sha256, p.id);
	}
out:
	if (fd >= 0)
		close(fd);
	xet_identity_free(&p.id);
	EVP_MD_CTX_free(p.md);
	free(blob);
	return r;
}
