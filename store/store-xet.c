/*
 * store-xet.c - each stored blob's Xet identity file (see store-xet.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/err.h"
#include "base/fdio.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "hub/xet/xet.h"
#include "store-int.h"
#include "store-xet.h"
#include "store.h"

#define ID_HEAD 56                    /* magic and version, size, chunk count, file hash */
#define ID_MAX ((int64_t)1 << 31)     /* 2 GiB: the identity of a 4 TB file; none bigger is believed */
#define FAR_READ ((size_t)8 << 20)    /* one ranged read of the bucket (identity_far) */
#define SMALL XET_CHUNK_MIN            /* a content smaller is one chunk: no identity file is kept for it */

char *store_xet_path(const struct store *s, const char *sha256)
{
	if (!hex_is_lower(sha256, 64))
		return NULL;
	return xasprintf("%s/xet/%.2s/%s", store__dir(s), sha256, sha256);
}

int store__read_chunks(int fd, int (*fn)(void *ud, const void *data, size_t n), void *ud, int64_t *total)
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

int store__xet_save(const struct store *s, const char *sha256, const struct xet_identity *id)
{
	char *path = store_xet_path(s, sha256), *dir = NULL, *tmp = NULL;
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
	dir = xasprintf("%s/xet/%.2s", store__dir(s), sha256);
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
	r = fdio_write_all(fd, buf, len);
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

void store__xet_drop(const struct store *s, const char *sha256)
{
	char *path = store_xet_path(s, sha256);

	if (path)
		unlink(path);
	free(path);
}

struct xet_identity *store_xet_read(const struct store *s, const char *sha256, int64_t size)
{
	char *path = store_xet_path(s, sha256);
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

/* With a bucket, a content bigger than the cache's bound that the cache does not hold, and no identity
 * file of it: computed from ranged reads of the bucket, never bringing the content into the cache
 * (store_blob_path would, past its bound), and kept only when those bytes hash to the content's id
 * (HM_ERR_HASH_MISMATCH, logged, when not: the bucket's copy damaged). 1 when that was not the case
 * (the caller goes through the blob), 0 with *out, or an error. */
static int identity_far(struct store *s, const char *sha256, struct xet_identity **out)
{
	char *blob = store_cache_path(s, sha256);
	bool cached = blob && access(blob, F_OK) == 0;
	struct xet_identity *id;
	int64_t size = -1, off = 0;
	char *buf, *why = NULL, got[65];
	unsigned char digest[32];
	EVP_MD_CTX *md;
	int r = 0;

	free(blob);
	if (!store_in_bucket(s) || cached || store_size(s, sha256, &size) || !store_streams_size(s, size))
		return 1;
	md = EVP_MD_CTX_new();
	if (!md)
		return -ENOMEM;
	id = xet_identity_new();
	buf = xmalloc(FAR_READ);
	EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	while (off < size && !r) {
		size_t k = size - off < (int64_t)FAR_READ ? (size_t)(size - off) : FAR_READ;
		if ((r = store_read(s, sha256, off, buf, k, &why)) == 0) {
			xet_identity_update(id, buf, k);
			EVP_DigestUpdate(md, buf, k);
		}
		off += (int64_t)k;
	}
	free(buf);
	if (!r) {
		EVP_DigestFinal_ex(md, digest, NULL);
		hex_encode(digest, sizeof(digest), got);
		if (strcmp(got, sha256)) {
			r = HM_ERR_HASH_MISMATCH;
			why = xasprintf("its bytes hash to %.12s, not to its name (the bucket's copy damaged)", got);
		}
	}
	EVP_MD_CTX_free(md);
	if (r) {
		log_warn("store", "the Xet identity of %.12s, from the bucket: %s", sha256, why ? why : err_str(r));
		free(why);
		xet_identity_free(&id);
		return r == HM_ERR_SIZE_MISMATCH ? -EIO : r;
	}
	xet_identity_finish(id);
	store__xet_save(s, sha256, id);   /* kept if it can be: computed again if not */
	*out = id;
	return 0;
}

int store_xet_identity(struct store *s, const char *sha256, struct xet_identity **out)
{
	struct xet_identity *id = NULL;
	struct stat st;
	int64_t total;
	int fd = -1, r = 0;
	char *blob;

	/* with a bucket, the identity kept is read without bringing the content into the cache (its size
	 * from the cache's copy, else the bucket's object): a content bigger than the cache's bound would
	 * stay there over it, for a Xet client's reconstruction or xorbs */
	if (store_in_bucket(s) && hex_is_lower(sha256, 64) && !store_size(s, sha256, &total) &&
	    (id = store_xet_read(s, sha256, total))) {
		*out = id;
		return 0;
	}
	if ((r = identity_far(s, sha256, out)) <= 0)
		return r;
	r = 0;
	blob = store_blob_path(s, sha256);
	if (!blob)
		return -EINVAL;
	fd = open(blob, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	id = store_xet_read(s, sha256, st.st_size);
	if (!id) {
		/* none yet, or not one we believe: the blob's bytes say it again */
		id = xet_identity_new();
		r = store__read_chunks(fd, identity_update, id, &total);
		if (!r && total != st.st_size)
			r = -EIO;
		if (r) {
			xet_identity_free(&id);
			goto out;
		}
		xet_identity_finish(id);
		store__xet_save(s, sha256, id);   /* kept if it can be: computed again if not */
	}
	*out = id;
out:
	if (fd >= 0)
		close(fd);
	free(blob);
	return r;
}

/* The file hash of a small blob (under SMALL bytes, one chunk), from its bytes (store_slurp: with a
 * bucket, never brought into the cache; a bigger one is not read at all). */
static int small_file_hash(const struct store *s, const char *sha256, char *out)
{
	struct xet_identity *id;
	char *buf = NULL;
	size_t n = 0;
	int r = store_slurp((struct store *)s, sha256, SMALL - 1, false, &buf, &n, NULL);

	if (r == -EFBIG)
		r = -ENOENT;   /* not small: its identity file is missing */
	if (!r) {
		id = xet_identity_new();
		xet_identity_update(id, buf, n);
		xet_identity_finish(id);
		xet_hash_hex(xet_identity_file_hash(id), out);
		xet_identity_free(&id);
	}
	free(buf);
	return r;
}

int store_xet_file_hash(const struct store *s, const char *sha256, char *out)
{
	char *path = store_xet_path(s, sha256);
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

int store_xet_check(struct store *s, const char *sha256, int (*pace)(void *ud, size_t n), void *ud,
			   bool *ok, int64_t *size)
{
	char *blob = store__blob_local(s, sha256), got[65];
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
	r = store__read_chunks(fd, check_update, &p, &total);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);   /* a walk over the store should not evict the hot set */
	if (r)
		goto out;
	EVP_DigestFinal_ex(p.md, md, &mdlen);
	hex_encode(md, mdlen, got);
	*ok = mdlen == 32 && !strcmp(got, sha256);
	*size = total;
	if (*ok) {
		xet_identity_finish(p.id);
		r = store__xet_save(s, sha256, p.id);
	}
out:
	if (fd >= 0)
		close(fd);
	xet_identity_free(&p.id);
	EVP_MD_CTX_free(p.md);
	free(blob);
	return r;
}

/* ".<sha256>.<nonce>": a name store__xet_save writes before its rename. */
static bool temp_name(const char *n)
{
	char a[65], b[17];

	if (strlen(n) != 1 + 64 + 1 + 16 || n[0] != '.' || n[65] != '.')
		return false;
	memcpy(a, n + 1, 64);
	a[64] = 0;
	memcpy(b, n + 66, 16);
	b[16] = 0;
	return hex_is_lower(a, 64) && hex_is_lower(b, 16);
}

/* One <dir>/xet/<h0h1>/ folder of store_xet_sweep. */
static int sweep_dir(const char *dir, time_t cutoff, bool dry_run, int (*known)(void *ud, const char *sha256),
		     void *ud, int64_t *temps, int64_t *orphans)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int r = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while (!r && (e = readdir(d))) {
		const char *n = e->d_name;
		bool temp = temp_name(n);
		struct stat st;
		int k = 0;
		if (!temp && !hex_is_lower(n, 64))
			continue;
		if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) || st.st_mtime > cutoff)
			continue;
		if (!temp && (k = known(ud, n)) != 0) {
			r = k < 0 ? k : 0;
			continue;
		}
		if (!dry_run && unlinkat(dirfd(d), n, 0) < 0)
			continue;
		(*(temp ? temps : orphans))++;
	}
	closedir(d);
	return r;
}

int store_xet_sweep(const struct store *s, int64_t age_s, bool dry_run,
			   int (*known)(void *ud, const char *sha256), void *ud, int64_t *temps, int64_t *orphans)
{
	char *top = xasprintf("%s/xet", store__dir(s));
	time_t cutoff = time(NULL) - (time_t)age_s;
	DIR *d = opendir(top);
	struct dirent *e;
	int r = 0;

	if (!d) {
		r = errno == ENOENT ? 0 : -errno;
		free(top);
		return r;
	}
	while (!r && (e = readdir(d))) {
		char *sub;
		if (!hex_is_lower(e->d_name, 2))
			continue;
		sub = xasprintf("%s/%s", top, e->d_name);
		r = sweep_dir(sub, cutoff, dry_run, known, ud, temps, orphans);
		free(sub);
	}
	closedir(d);
	free(top);
	return r;
}
