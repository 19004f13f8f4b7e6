/*
 * store.c - content-addressed blobs: temp file, streaming hashes, verify, fsync, rename.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "store.h"

struct mirror_store {
	char *dir;
	char *blobs;
	char *tmp;
};

struct mirror_store_writer {
	struct mirror_store *store;
	char *part_path;
	int fd;
	int64_t written;        /* bytes taken (hashed): in the file, or in buf on their way */
	int64_t flushed;        /* bytes in the file */
	char *buf;              /* bufcap bytes: libcurl hands bodies over 16 KiB at a time, and a
				 * pwrite each costs more than the copy (docs/benchmarks.md) */
	size_t buflen, bufcap;  /* bufcap: WRITE_BUF, or the whole file when it is smaller (most of a
				 * repo's files are: a megabyte each would be mapped and unmapped) */
	int64_t flushed_ms;     /* when the buffer last went out: it never holds bytes older than
				 * WRITE_AGE_MS (a crash loses no more; a reader of the partial file
				 * sees a slow download move) */
	int64_t size;           /* expected, or -1 */
	char sha256[65];        /* expected, or "" */
	char git_oid[41];       /* expected, or "" */
	EVP_MD_CTX *sha256_ctx;
	EVP_MD_CTX *sha1_ctx;   /* NULL unless a git oid is expected (needs the size up front) */
	bool checked;           /* mirror_store_writer_check ran: its result, and the sha256 it found */
	int check_result;
	char got256[65];
};

int mirror_store_open(const char *dir, struct mirror_store **out)
{
	struct mirror_store *s = xcalloc(1, sizeof(*s));
	int r;

	s->dir = xstrdup(dir);
	s->blobs = xasprintf("%s/blobs", dir);
	s->tmp = xasprintf("%s/tmp", dir);
	r = path_mkdirs(s->blobs, 0755);
	if (!r)
		r = path_mkdirs(s->tmp, 0700);
	if (r) {
		mirror_store_free(&s);
		return r;
	}
	*out = s;
	return 0;
}

void mirror_store_free(struct mirror_store **s)
{
	if (!s || !*s)
		return;
	free((*s)->dir);
	free((*s)->blobs);
	free((*s)->tmp);
	free(*s);
	*s = NULL;
}

char *mirror_store_blob_path(const struct mirror_store *s, const char *sha256)
{
	if (!hex_is_lower(sha256, 64))
		return NULL;
	return xasprintf("%s/%.2s/%s", s->blobs, sha256, sha256);
}

bool mirror_store_has(const struct mirror_store *s, const char *sha256, int64_t size)
{
	char *p = mirror_store_blob_path(s, sha256);
	struct stat st;
	bool ok;

	if (!p)
		return false;
	ok = stat(p, &st) == 0 && S_ISREG(st.st_mode) && (size < 0 || st.st_size == size);
	free(p);
	return ok;
}

#define WRITE_BUF (1 << 20)
#define WRITE_AGE_MS 100

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write the buffered bytes to the file. On failure the file is cut back to what landed whole and
 * the writer is of no further use (abort it; a resume re-hashes the file). */
static int writer_flush(struct mirror_store_writer *w)
{
	const char *p = w->buf;
	size_t left = w->buflen;
	int64_t off = w->flushed;

	while (left) {
		ssize_t k = pwrite(w->fd, p, left, off);
		if (k < 0) {
			int e = errno;
			if (e == EINTR)
				continue;
			if (ftruncate(w->fd, w->flushed) < 0) { /* commit will catch it */ }
			w->buflen = 0;
			return -e;
		}
		p += k;
		off += k;
		left -= (size_t)k;
	}
	w->flushed = off;
	w->buflen = 0;
	w->flushed_ms = now_ms();
	return 0;
}

static void writer_free(struct mirror_store_writer *w)
{
	free(w->buf);
	if (w->fd >= 0)
		close(w->fd);
	EVP_MD_CTX_free(w->sha256_ctx);
	EVP_MD_CTX_free(w->sha1_ctx);
	free(w->part_path);
	free(w);
}

/* (Re)start the hashes from zero bytes. */
static int writer_reset_hashes(struct mirror_store_writer *w)
{
	if (!EVP_DigestInit_ex(w->sha256_ctx, EVP_sha256(), NULL))
		return -ENOMEM;
	if (w->sha1_ctx) {
		char hdr[48];
		int n = snprintf(hdr, sizeof(hdr), "blob %lld", (long long)w->size);
		if (!EVP_DigestInit_ex(w->sha1_ctx, EVP_sha1(), NULL) ||
		    !EVP_DigestUpdate(w->sha1_ctx, hdr, (size_t)n + 1)) /* header includes its NUL */
			return -ENOMEM;
	}
	return 0;
}

static int writer_hash(struct mirror_store_writer *w, const void *data, size_t n)
{
	if (!EVP_DigestUpdate(w->sha256_ctx, data, n))
		return -ENOMEM;
	if (w->sha1_ctx && !EVP_DigestUpdate(w->sha1_ctx, data, n))
		return -ENOMEM;
	return 0;
}

/* Read fd from its start to its end in 1 MiB chunks, each passed to fn (a non-zero return stops).
 * Returns 0 with the bytes read in *total, fn's non-zero, or -errno. */
static int read_chunks(int fd, int (*fn)(void *ud, const void *data, size_t n), void *ud, int64_t *total)
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

static int writer_hash_chunk(void *w, const void *data, size_t n)
{
	return writer_hash(w, data, n);
}

/* Feed the bytes already in the partial file through the hashes. */
static int writer_rehash(struct mirror_store_writer *w)
{
	int64_t off;
	int r = read_chunks(w->fd, writer_hash_chunk, w, &off);

	if (!r)
		w->written = w->flushed = off;
	return r;
}

int mirror_store_writer_new(struct mirror_store *s, const struct mirror_store_expect *expect,
			    bool resume, struct mirror_store_writer **out)
{
	struct mirror_store_writer *w;
	const char *key;
	int r;

	if (expect->sha256 && !hex_is_lower(expect->sha256, 64))
		return -EINVAL;
	if (expect->git_oid && (!hex_is_lower(expect->git_oid, 40) || expect->size < 0))
		return -EINVAL;
	key = expect->sha256 ? expect->sha256 : expect->git_oid;
	if (!key)
		return -EINVAL;

	w = xcalloc(1, sizeof(*w));
	w->store = s;
	w->fd = -1;
	w->size = expect->size;
	if (expect->sha256)
		memcpy(w->sha256, expect->sha256, 65);
	if (expect->git_oid)
		memcpy(w->git_oid, expect->git_oid, 41);
	w->sha256_ctx = EVP_MD_CTX_new();
	if (expect->git_oid)
		w->sha1_ctx = EVP_MD_CTX_new();
	if (!w->sha256_ctx || (expect->git_oid && !w->sha1_ctx)) {
		r = -ENOMEM;
		goto fail;
	}
	w->part_path = xasprintf("%s/%s.part", s->tmp, key);
	w->fd = open(w->part_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		r = -errno;
		goto fail;
	}
	/* One writer per content: a second download of the same blob must not interleave bytes. */
	if (flock(w->fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
		goto fail;
	}
	r = writer_reset_hashes(w);
	if (r)
		goto fail;
	if (resume) {
		r = writer_rehash(w);
		if (!r && w->size >= 0 && w->written > w->size)
			r = mirror_store_writer_truncate(w); /* more than promised: start over */
	} else {
		r = mirror_store_writer_truncate(w);
	}
	if (r)
		goto fail;
	*out = w;
	return 0;
fail:
	writer_free(w);
	return r;
}

char *mirror_store_part_path(const struct mirror_store *s, const char *key)
{
	if (!hex_is_lower(key, 64) && !hex_is_lower(key, 40))
		return NULL;
	return xasprintf("%s/%s.part", s->tmp, key);
}

int64_t mirror_store_writer_offset(const struct mirror_store_writer *w)
{
	return w->written;
}

int64_t mirror_store_writer_flushed(const struct mirror_store_writer *w)
{
	return w->flushed;
}

int mirror_store_writer_truncate(struct mirror_store_writer *w)
{
	w->buflen = 0;
	if (ftruncate(w->fd, 0) < 0)
		return -errno;
	w->written = w->flushed = 0;
	return writer_reset_hashes(w);
}

int mirror_store_writer_write(struct mirror_store_writer *w, const void *data, size_t n)
{
	int r;

	if (w->size >= 0 && (int64_t)n > w->size - w->written)
		return HM_ERR_SIZE_MISMATCH;
	r = writer_hash(w, data, n);
	if (r)
		return r;
	if (!w->buf) {
		w->bufcap = w->size > 0 && w->size < WRITE_BUF ? (size_t)w->size : WRITE_BUF;
		w->buf = xmalloc(w->bufcap);
	}
	if (w->buflen + n > w->bufcap && (r = writer_flush(w)) != 0)
		return r;
	if (n >= w->bufcap) {
		/* a big piece goes straight to the file */
		const char *save = w->buf;
		w->buf = (char *)data;
		w->buflen = n;
		r = writer_flush(w);
		w->buf = (char *)save;
		w->buflen = 0;
	} else {
		memcpy(w->buf + w->buflen, data, n);
		w->buflen += n;
		if (now_ms() - w->flushed_ms >= WRITE_AGE_MS)
			r = writer_flush(w);
	}
	if (!r)
		w->written += (int64_t)n;
	return r;
}

static int finish_digest(EVP_MD_CTX *ctx, char *hexout)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (!EVP_DigestFinal_ex(ctx, md, &n))
		return -ENOMEM;
	hex_encode(md, n, hexout);
	return 0;
}

int mirror_store_writer_check(struct mirror_store_writer *w)
{
	char gotsha1[41];
	int r;

	if (w->checked)
		return w->check_result;
	r = writer_flush(w); /* the file must hold every byte before it is published */
	if (r)
		return r;
	w->checked = true;
	if (w->size >= 0 && w->written != w->size)
		return w->check_result = HM_ERR_SIZE_MISMATCH;
	r = finish_digest(w->sha256_ctx, w->got256);
	if (!r && w->sha1_ctx)
		r = finish_digest(w->sha1_ctx, gotsha1);
	if (!r && ((w->sha256[0] && strcmp(w->sha256, w->got256)) || (w->git_oid[0] && strcmp(w->git_oid, gotsha1))))
		r = HM_ERR_HASH_MISMATCH;
	return w->check_result = r;
}

int mirror_store_writer_commit(struct mirror_store_writer **wp, char *sha256_out)
{
	struct mirror_store_writer *w = *wp;
	char *got256 = w->got256, *final = NULL, *fandir = NULL;
	bool drop = false;
	int r;

	*wp = NULL;
	r = mirror_store_writer_check(w);
	if (r) {
		/* wrong bytes go; a short file stays for a resume */
		drop = r == HM_ERR_HASH_MISMATCH || (r == HM_ERR_SIZE_MISMATCH && w->written > w->size);
		goto out;
	}
	final = mirror_store_blob_path(w->store, got256);
	fandir = xasprintf("%s/%.2s", w->store->blobs, got256);
	if (fsync(w->fd) < 0) {
		r = -errno;
		goto out;
	}
	if (mkdir(fandir, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		goto out;
	}
	/* Same content already stored (another repo, revision or hub): keep the existing file. */
	if (mirror_store_has(w->store, got256, w->written)) {
		drop = true;
	} else if (rename(w->part_path, final) < 0) {
		r = -errno;
		goto out;
	} else {
		r = path_fsync(fandir);
	}
	if (!r && sha256_out)
		memcpy(sha256_out, got256, 65);
out:
	if (drop)
		unlink(w->part_path);
	free(final);
	free(fandir);
	writer_free(w);
	return r;
}

void mirror_store_writer_abort(struct mirror_store_writer **wp, bool keep_partial)
{
	struct mirror_store_writer *w = wp ? *wp : NULL;

	if (!w)
		return;
	if (!keep_partial)
		unlink(w->part_path);
	else if (w->buflen)
		writer_flush(w); /* what arrived stays for the resume (on failure, what landed whole) */
	writer_free(w);
	*wp = NULL;
}

/* ---- maintenance --------------------------------------------------------------------------- */

int mirror_store_remove(struct mirror_store *s, const char *sha256)
{
	char *p = mirror_store_blob_path(s, sha256);
	int r = 0;

	if (!p)
		return -EINVAL;
	if (unlink(p) < 0)
		r = -errno;
	free(p);
	return r;
}

int mirror_store_quarantine(struct mirror_store *s, const char *sha256)
{
	char *p = mirror_store_blob_path(s, sha256), *qdir = xasprintf("%s/quarantine", s->dir), *q = NULL;
	int r;

	if (!p) {
		free(qdir);
		return -EINVAL;
	}
	r = path_mkdirs(qdir, 0700);
	if (!r) {
		q = xasprintf("%s/%s.%lld", qdir, sha256, (long long)time(NULL));
		if (rename(p, q) < 0)
			r = -errno;
	}
	free(p);
	free(q);
	free(qdir);
	return r;
}

static int digest_chunk(void *ctx, const void *data, size_t n)
{
	EVP_DigestUpdate(ctx, data, n);
	return 0;
}

/* Hash the stored blob sha256 with md into hex (git: as git names a blob, "blob <size>" and its NUL
 * first); *size its length. Returns 0, -ENOENT or -errno. */
static int hash_blob(struct mirror_store *s, const char *sha256, bool git, char *hex, int64_t *size)
{
	char *p = mirror_store_blob_path(s, sha256), hdr[40];
	EVP_MD_CTX *ctx;
	struct stat st;
	int fd, r = 0;
	int64_t total = 0;

	if (!p)
		return -EINVAL;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	free(p);
	if (fd < 0)
		return -errno;
	ctx = EVP_MD_CTX_new();
	EVP_DigestInit_ex(ctx, git ? EVP_sha1() : EVP_sha256(), NULL);
	if (git) {
		if (fstat(fd, &st) < 0)
			r = -errno;
		else
			EVP_DigestUpdate(ctx, hdr, (size_t)snprintf(hdr, sizeof(hdr), "blob %lld", (long long)st.st_size) + 1);
	}
	if (!r)
		r = read_chunks(fd, digest_chunk, ctx, &total);
	if (!r && git && total != (int64_t)st.st_size)
		r = -EIO; /* it changed under us */
	if (!r)
		r = finish_digest(ctx, hex);
	if (!r)
		*size = total;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); /* a full verify should not evict the hot set */
	close(fd);
	EVP_MD_CTX_free(ctx);
	return r;
}

int mirror_store_check(struct mirror_store *s, const char *sha256, bool *ok, int64_t *size)
{
	char got[65];
	int r = hash_blob(s, sha256, false, got, size);

	if (!r)
		*ok = !strcmp(got, sha256);
	return r;
}

int mirror_store_git_oid(struct mirror_store *s, const char *sha256, char *out, int64_t *size)
{
	int64_t n;
	int r = hash_blob(s, sha256, true, out, &n);

	if (!r && size)
		*size = n;
	return r;
}

static int each_in_dir(const char *dir, const char *suffix, time_t now,
		       int (*fn)(void *, const char *, const char *, int64_t), void *ud)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	int r = 0;

	if (!dp)
		return errno == ENOENT ? 0 : -errno;
	while (!r && (e = readdir(dp))) {
		char *p;
		struct stat st;
		size_t n = strlen(e->d_name);

		if (e->d_name[0] == '.' || (suffix && (n < strlen(suffix) || strcmp(e->d_name + n - strlen(suffix), suffix))))
			continue;
		p = xasprintf("%s/%s", dir, e->d_name);
		if (lstat(p, &st) == 0 && S_ISREG(st.st_mode))
			r = fn(ud, e->d_name, p, (int64_t)(now - st.st_mtime));
		free(p);
	}
	closedir(dp);
	return r;
}

int mirror_store_each(struct mirror_store *s, bool partials,
		      int (*fn)(void *ud, const char *name, const char *path, int64_t age_s), void *ud)
{
	time_t now = time(NULL);
	DIR *dp = opendir(s->blobs);
	struct dirent *e;
	int r = 0;

	if (!dp)
		return -errno;
	while (!r && (e = readdir(dp))) {
		char *sub;
		if (e->d_name[0] == '.')
			continue;
		sub = xasprintf("%s/%s", s->blobs, e->d_name);
		r = each_in_dir(sub, NULL, now, fn, ud);
		free(sub);
	}
	closedir(dp);
	if (!r && partials)
		r = each_in_dir(s->tmp, ".part", now, fn, ud);
	return r;
}
