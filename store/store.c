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
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "hub/xet/xet.h"
#include "store/bucket.h"
#include "store-int.h"
#include "store-xet.h"
#include "store.h"

struct store_writer {
	struct store *store;
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
	struct xet_identity *xet; /* the Xet identity, in the same pass (store-xet.h) */
	char xet_hash[65];      /* expected (upstream's Xet hash), or "" */
	bool xet_given;         /* its chunks are stated by the writer's caller (_given_chunks) */
	bool xet_lost;          /* ... and some bytes came without them: computed from the file at check */
	bool private_;          /* its partial file is its own (store_writer_new_private) */
	bool fill;              /* a copy of the bucket's into the local cache: not put back there */
	struct store_bucket_put *put; /* streamed into the bucket, never on local disk (writer_stream) */
	struct store__behind *behind; /* a big fill's SHA-256 on a thread of its own (store-behind.c):
					* it owns buf, and takes each one the file got */
	bool checked;           /* store_writer_check ran: its result, and the sha256 it found */
	int check_result;
	char got256[65];
};

int store_open(const char *dir, struct store **out)
{
	struct store *s = xcalloc(1, sizeof(*s));
	int r;

	s->dir = xstrdup(dir);
	s->blobs = xasprintf("%s/blobs", dir);
	s->tmp = xasprintf("%s/tmp", dir);
	s->trash = xasprintf("%s/trash", dir);
	s->locks = xasprintf("%s/locks", dir);
	s->reap_cutoff = INT64_MAX;
	r = path_mkdirs(s->blobs, 0755);
	if (!r)
		r = path_mkdirs(s->tmp, 0700);
	if (!r)
		r = path_mkdirs(s->trash, 0700);
	if (!r)
		r = path_mkdirs(s->locks, 0700);
	if (!r)
		r = store__bucket_open(s);
	if (r) {
		store_free(&s);
		return r;
	}
	*out = s;
	return 0;
}

void store_free(struct store **s)
{
	if (!s || !*s)
		return;
	free((*s)->dir);
	free((*s)->blobs);
	free((*s)->tmp);
	free((*s)->trash);
	free((*s)->locks);
	store__bucket_close(*s);
	free(*s);
	*s = NULL;
}

const char *store__dir(const struct store *s)
{
	return s->dir;
}

char *store__blob_local(const struct store *s, const char *sha256)
{
	if (!hex_is_lower(sha256, 64))
		return NULL;
	return xasprintf("%s/%.2s/%s", s->blobs, sha256, sha256);
}

char *store_cache_path(const struct store *s, const char *sha256)
{
	return store__blob_local(s, sha256);
}

char *store_blob_path(const struct store *s, const char *sha256)
{
	char *p = store__blob_local(s, sha256);

	/* with a bucket, the local file is a cache: a content not in it is brought in (verified), and
	 * one read is the last the cache lets go (its access time) */
	if (p && s->bucket) {
		bool hit = !utimensat(AT_FDCWD, p, (struct timespec[]){ { 0, UTIME_NOW }, { 0, UTIME_OMIT } }, 0);
		store_bucket_count_cache(hit);
		if (!hit && store__fill((struct store *)s, sha256) == -EFBIG)
			FREE_AND_NULL(&p);
	}
	return p;
}

int store__stripe_lock(const struct store *s, const char *sha256, int how)
{
	char *p = xasprintf("%s/%.2s", s->locks, sha256);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600), r;

	free(p);
	if (fd < 0)
		return -errno;
	while ((r = flock(fd, how)) < 0 && errno == EINTR)
		;
	if (r < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

static bool has(const struct store *s, const char *sha256, int64_t size);

bool store_has(const struct store *s, const char *sha256, int64_t size)
{
	int lk;
	bool ok;

	if (!s->bucket || !hex_is_lower(sha256, 64))
		return has(s, sha256, size);
	/* a look and gc's reap of the content never cross (store_reap) */
	lk = store__stripe_lock(s, sha256, LOCK_SH);
	if (lk < 0)
		log_warn("store", "cannot lock %.12s's stripe: %s", sha256, err_str(lk));
	ok = lk >= 0 && has(s, sha256, size);
	if (lk >= 0)
		close(lk);
	return ok;
}

bool store_reuse(const struct store *s, const char *sha256, int64_t size)
{
	int64_t there = -1;
	int lk, r;

	if (!s->bucket || !hex_is_lower(sha256, 64))
		return has(s, sha256, size);
	lk = store__stripe_lock(s, sha256, LOCK_SH); /* (as store_has) */
	if (lk < 0) {
		log_warn("store", "cannot lock %.12s's stripe: %s", sha256, err_str(lk));
		return false;
	}
	r = store_bucket_stat(s->bucket, sha256, &there);
	if (!r && size >= 0 && there != size)
		r = HM_ERR_SIZE_MISMATCH;
	if (!r && (r = store_bucket_touch(s->bucket, sha256)) != 0 && r != HM_ERR_NOT_FOUND)
		log_warn("store", "cannot re-stamp %.12s in the bucket: %s (%s); it is written again", sha256,
			 err_str(r), store_bucket_errmsg());
	/* gone from blobs/ (another mirror's gc, maybe between the two): put back from the trash, which
	 * stamps it anew */
	if (r == HM_ERR_NOT_FOUND)
		r = store__restore(s, sha256, size);
	close(lk);
	return r == 0;
}

int store_size(const struct store *s, const char *sha256, int64_t *size)
{
	char *p = store__blob_local(s, sha256);
	struct stat st;
	int r;

	if (!p)
		return -EINVAL;
	r = stat(p, &st) == 0 ? (S_ISREG(st.st_mode) ? 0 : -EINVAL) : -errno;
	free(p);
	if (!r)
		*size = st.st_size;
	else if (r == -ENOENT && s->bucket && (r = store_bucket_stat(s->bucket, sha256, size)) == HM_ERR_NOT_FOUND)
		r = -ENOENT;
	return r;
}

static bool has(const struct store *s, const char *sha256, int64_t size)
{
	char *p = store__blob_local(s, sha256);
	struct stat st;
	int64_t there = -1;
	bool ok;

	if (!p)
		return false;
	ok = stat(p, &st) == 0 && S_ISREG(st.st_mode) && (size < 0 || st.st_size == size);
	free(p);
	if (!ok && s->bucket) {
		int r = store_bucket_stat(s->bucket, sha256, &there);
		if (r == HM_ERR_NOT_FOUND && !store__restore(s, sha256, size))
			r = store_bucket_stat(s->bucket, sha256, &there);
		if (r && r != HM_ERR_NOT_FOUND)
			log_warn("store", "cannot read %.12s from the bucket: %s (%s)", sha256, err_str(r),
				 store_bucket_errmsg());
		ok = !r && (size < 0 || there == size);
	}
	return ok;
}

#define WRITE_BUF (1 << 20)
#define WRITE_AGE_MS 100
#define BEHIND_FROM ((int64_t)16 << 20) /* a fill this big hashes behind its writes (store-behind.c) */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write the buffered bytes to the file. On failure the file is cut back to what landed whole and
 * the writer is of no further use (abort it; a resume re-hashes the file). */
static int writer_flush(struct store_writer *w)
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
	if (w->behind && w->buflen)
		w->buf = store__behind_swap(w->behind, w->buf, w->buflen);
	w->buflen = 0;
	w->flushed_ms = now_ms();
	return 0;
}

/* A fill's hash caught up with its writes, its thread stopped (the writer's buffer went with it). */
static int writer_behind_done(struct store_writer *w)
{
	if (!w->behind)
		return 0;
	w->buf = NULL;
	w->buflen = 0;
	return store__behind_finish(&w->behind);
}

static void writer_free(struct store_writer *w)
{
	store_bucket_put_abort(&w->put);
	writer_behind_done(w);
	free(w->buf);
	if (w->fd >= 0)
		close(w->fd);
	EVP_MD_CTX_free(w->sha256_ctx);
	EVP_MD_CTX_free(w->sha1_ctx);
	xet_identity_free(&w->xet);
	free(w->part_path);
	free(w);
}

/* (Re)start the hashes from zero bytes. */
static int writer_reset_hashes(struct store_writer *w)
{
	if (!EVP_DigestInit_ex(w->sha256_ctx, EVP_sha256(), NULL))
		return -ENOMEM;
	xet_identity_free(&w->xet);
	if (!w->fill)
		w->xet = w->xet_given ? xet_identity_new_given() : xet_identity_new();
	w->xet_lost = false;
	if (w->sha1_ctx) {
		char hdr[48];
		int n = snprintf(hdr, sizeof(hdr), "blob %lld", (long long)w->size);
		if (!EVP_DigestInit_ex(w->sha1_ctx, EVP_sha1(), NULL) ||
		    !EVP_DigestUpdate(w->sha1_ctx, hdr, (size_t)n + 1)) /* header includes its NUL */
			return -ENOMEM;
	}
	return 0;
}

/* chunk: the bytes are one chunk whose size and hash the caller states (_write_chunk) */
static int writer_hash(struct store_writer *w, const void *data, size_t n, bool chunk)
{
	if (!EVP_DigestUpdate(w->sha256_ctx, data, n))
		return -ENOMEM;
	if (w->sha1_ctx && !EVP_DigestUpdate(w->sha1_ctx, data, n))
		return -ENOMEM;
	if (w->xet && !w->xet_given)
		xet_identity_update(w->xet, data, n);
	else if (w->xet && !chunk)
		w->xet_lost = true;
	return 0;
}

static int writer_hash_chunk(void *w, const void *data, size_t n)
{
	return writer_hash(w, data, n, false);
}

static int writer_xet_chunk(void *w, const void *data, size_t n)
{
	xet_identity_update(((struct store_writer *)w)->xet, data, n);
	return 0;
}

/* The identity of stated chunks that some bytes came without: computed from the file's bytes after all
 * (a Xet fetch that fell back to plain HTTP half way; rare, and one more read of the file). */
static int writer_xet_recompute(struct store_writer *w)
{
	int64_t off;
	int r;

	xet_identity_free(&w->xet);
	w->xet = xet_identity_new();
	w->xet_given = w->xet_lost = false;
	r = store__read_chunks(w->fd, writer_xet_chunk, w, &off);
	return r ? r : off == w->written ? 0 : -EIO;
}

/* Feed the bytes already in the partial file through the hashes. */
static int writer_rehash(struct store_writer *w)
{
	int64_t off;
	int r = store__read_chunks(w->fd, writer_hash_chunk, w, &off);

	if (!r)
		w->written = w->flushed = off;
	return r;
}

/* Is fd the file that path names now? A writer that opened a partial file by its name and then got
 * its lock may hold a file another writer published (renamed into blobs/) in between: never write it. */
bool store__fd_is_path(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* A random name part: 16 lowercase hex. */
void store__nonce16(char out[17])
{
	unsigned char b[8];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		memcpy(b, &ts.tv_nsec, 4);
		memcpy(b + 4, &(uint32_t){ (uint32_t)getpid() }, 4);
	}
	hex_encode(b, sizeof(b), out);
}

/* The partial file's descriptor for w: the content's shared partial file, locked (one writer per
 * content, resumable), or with private a new file of w's own, created with O_EXCL. */
static int writer_open(struct store *s, struct store_writer *w, const char *key, bool private_)
{
	for (int tries = 0; tries < 4; tries++) {
		if (private_) {
			char nonce[17], *hidden;
			int e = 0;
			store__nonce16(nonce);
			free(w->part_path);
			w->part_path = xasprintf("%s/%s-%s.part", s->tmp, key, nonce);
			/* made under a name gc does not look at, locked, then named: gc deletes no partial
			 * file a writer has locked, and this one is locked from before it has its name
			 * (nobody else takes it: the lock only tells gc that it is in use) */
			hidden = xasprintf("%s/.%s-%s.part", s->tmp, key, nonce);
			w->fd = open(hidden, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
			if (w->fd < 0)
				e = errno == EEXIST ? EEXIST : -errno;
			else if (flock(w->fd, LOCK_EX | LOCK_NB) < 0 || rename(hidden, w->part_path) < 0)
				e = -errno;
			if (e < 0 && w->fd >= 0)
				unlink(hidden);
			free(hidden);
			if (e == EEXIST)
				continue;
			return e;
		}
		w->fd = open(w->part_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (w->fd < 0)
			return -errno;
		/* One writer per content: a second download of the same blob must not interleave bytes. */
		if (flock(w->fd, LOCK_EX | LOCK_NB) < 0)
			return errno == EWOULDBLOCK ? -EBUSY : -errno;
		if (store__fd_is_path(w->fd, w->part_path))
			return 0;
		close(w->fd); /* the writer before published it meanwhile: a new partial file under the name */
		w->fd = -1;
	}
	return -EBUSY;
}

static int writer_new(struct store *s, const struct store_expect *expect, bool resume,
		      bool private_, struct store_writer **out)
{
	struct store_writer *w;
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
	w->private_ = private_;
	r = writer_open(s, w, key, private_);
	if (r)
		goto fail;
	r = writer_reset_hashes(w);
	if (r)
		goto fail;
	if (resume) {
		r = writer_rehash(w);
		if (!r && w->size >= 0 && w->written > w->size)
			r = store_writer_truncate(w); /* more than promised: start over */
	} else {
		r = store_writer_truncate(w);
	}
	if (r)
		goto fail;
	*out = w;
	return 0;
fail:
	if (private_ && w->fd >= 0)
		unlink(w->part_path);
	writer_free(w);
	return r;
}

int store_writer_new(struct store *s, const struct store_expect *expect,
			    bool resume, struct store_writer **out)
{
	return writer_new(s, expect, resume, false, out);
}

int store_writer_new_private(struct store *s, const struct store_expect *expect,
				    struct store_writer **out)
{
	return writer_new(s, expect, false, true, out);
}

char *store_part_path(const struct store *s, const char *key)
{
	if (!hex_is_lower(key, 64) && !hex_is_lower(key, 40))
		return NULL;
	return xasprintf("%s/%s.part", s->tmp, key);
}

void store_writer_expect_xet(struct store_writer *w, const char *xet_hash)
{
	if (xet_hash && hex_is_lower(xet_hash, 64))
		memcpy(w->xet_hash, xet_hash, 65);
}

int64_t store_writer_offset(const struct store_writer *w)
{
	return w->written;
}

int64_t store_writer_flushed(const struct store_writer *w)
{
	return w->flushed;
}

int store_writer_truncate(struct store_writer *w)
{
	if (w->put && w->written) { /* the bytes sent are dropped with their upload: a new one from zero */
		int r;
		store_bucket_put_abort(&w->put);
		if ((r = store_bucket_put_begin(w->store->bucket, w->sha256, w->size, &w->put)) != 0)
			return r;
	}
	w->buflen = 0;
	writer_behind_done(w); /* (its hash is reset below) */
	if (ftruncate(w->fd, 0) < 0)
		return -errno;
	w->written = w->flushed = 0;
	return writer_reset_hashes(w);
}

int store_writer_given_chunks(struct store_writer *w)
{
	/* (not a writer streamed into the bucket: its bytes are not here to compute the identity from, if
	 * some came without their chunk; nor a fill of the cache, which makes no identity) */
	if (w->written != 0 || w->put || w->fill)
		return -EINVAL;
	xet_identity_free(&w->xet);
	w->xet = xet_identity_new_given();
	w->xet_given = true;
	w->xet_lost = false;
	return 0;
}

static int writer_write(struct store_writer *w, const void *data, size_t n, bool chunk);

int store_writer_write(struct store_writer *w, const void *data, size_t n)
{
	return writer_write(w, data, n, false);
}

int store_writer_write_chunk(struct store_writer *w, const void *data, size_t n,
				    const struct xet_hash *h)
{
	bool chunk = w->xet_given && !w->xet_lost;
	int r = writer_write(w, data, n, chunk);

	if (!r && chunk && xet_identity_add_chunk(w->xet, n, h))
		w->xet_lost = true;   /* no chunker would have cut it: the file's bytes will say */
	return r;
}

/* The buffer, at the first bytes: a big fill's comes from its hash's thread, which takes the buffers the
 * file got (only the fill's SHA-256 to compute: no git oid, no Xet identity); without one, inline. */
static void writer_buffer(struct store_writer *w)
{
	w->bufcap = w->size > 0 && w->size < WRITE_BUF ? (size_t)w->size : WRITE_BUF;
	if (w->fill && w->size >= BEHIND_FROM && !w->written && !w->sha1_ctx && !w->xet &&
	    store__behind_new(w->sha256_ctx, w->bufcap, &w->behind, &w->buf) == 0)
		return;
	w->buf = xmalloc(w->bufcap);
}

/* Behind: every byte goes through the buffers, which the hash's thread reads after the file got them. */
static int writer_write_behind(struct store_writer *w, const char *data, size_t n)
{
	int r = 0;

	while (n && !r) {
		size_t k = w->bufcap - w->buflen < n ? w->bufcap - w->buflen : n;
		memcpy(w->buf + w->buflen, data, k);
		w->buflen += k;
		w->written += (int64_t)k;
		data += k;
		n -= k;
		if (w->buflen == w->bufcap || now_ms() - w->flushed_ms >= WRITE_AGE_MS)
			r = writer_flush(w);
	}
	return r;
}

static int writer_write(struct store_writer *w, const void *data, size_t n, bool chunk)
{
	int r;

	if (w->size >= 0 && (int64_t)n > w->size - w->written)
		return HM_ERR_SIZE_MISMATCH;
	if (!w->put && !w->buf)
		writer_buffer(w);
	if (w->behind)
		return writer_write_behind(w, data, n);
	r = writer_hash(w, data, n, chunk);
	if (!r && w->put && !(r = store_bucket_put_write(w->put, data, n)))
		w->written += (int64_t)n;
	if (r || w->put)
		return r;
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

int store__finish_digest(EVP_MD_CTX *ctx, char *hexout)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (!EVP_DigestFinal_ex(ctx, md, &n))
		return -ENOMEM;
	hex_encode(md, n, hexout);
	return 0;
}

int store_writer_check(struct store_writer *w)
{
	char gotsha1[41], gotxet[65];
	int r;

	if (w->checked)
		return w->check_result;
	r = writer_flush(w); /* the file must hold every byte before it is published */
	if (!r)
		r = writer_behind_done(w); /* every byte hashed */
	if (r)
		return r;
	w->checked = true;
	if (w->size >= 0 && w->written != w->size)
		return w->check_result = HM_ERR_SIZE_MISMATCH;
	r = store__finish_digest(w->sha256_ctx, w->got256);
	if (!r && w->sha1_ctx)
		r = store__finish_digest(w->sha1_ctx, gotsha1);
	if (!r && w->xet && w->xet_given && (w->xet_lost || xet_identity_size(w->xet) != (uint64_t)w->written))
		r = writer_xet_recompute(w);
	gotxet[0] = '\0';
	if (w->xet) {
		xet_identity_finish(w->xet);
		xet_hash_hex(xet_identity_file_hash(w->xet), gotxet);
	}
	/* upstream's Xet hash, where it says one, is a second proof of the bytes */
	if (!r && ((w->sha256[0] && strcmp(w->sha256, w->got256)) || (w->git_oid[0] && strcmp(w->git_oid, gotsha1)) ||
		   (w->xet_hash[0] && strcmp(w->xet_hash, gotxet))))
		r = HM_ERR_HASH_MISMATCH;
	return w->check_result = r;
}

/* A streamed writer's upload completed (the object made visible) under its content's stripe lock,
 * shared: gc's reap of the content (asked, aged, deleted) never crosses it (store_reap). */
static int commit_streamed(struct store_writer *w)
{
	int lk = store__stripe_lock(w->store, w->got256, LOCK_SH), r;

	if (lk < 0) {
		log_warn("store", "cannot lock %.12s's stripe: %s", w->got256, err_str(lk));
		store_bucket_put_abort(&w->put);
		return lk;
	}
	r = store_bucket_put_commit(&w->put);
	close(lk);
	return r;
}

int store_writer_commit(struct store_writer **wp, char *sha256_out)
{
	struct store_writer *w = *wp;
	char *got256 = w->got256, *final = NULL, *fandir = NULL;
	bool drop = false;
	int r;

	*wp = NULL;
	r = store_writer_check(w);
	if (r) {
		/* wrong bytes go; a short file stays for a resume (not a private one: none resumes it) */
		drop = r == HM_ERR_HASH_MISMATCH || (r == HM_ERR_SIZE_MISMATCH && w->written > w->size) || w->private_;
		goto out;
	}
	if (w->put) { /* streamed: completed in the bucket now (hashed there too), nothing kept here */
		r = commit_streamed(w);
		if (r)
			log_warn("store", "cannot put %.12s in the bucket: %s (%s)", got256, err_str(r),
				 store_bucket_errmsg());
		else
			store__xet_save(w->store, got256, w->xet);
		if (!r && sha256_out)
			memcpy(sha256_out, got256, 65);
		drop = true; /* (the empty partial file, its lock) */
		goto out;
	}
	final = store__blob_local(w->store, got256);
	fandir = xasprintf("%s/%.2s", w->store->blobs, got256);
	if (fsync(w->fd) < 0 || (mkdir(fandir, 0755) < 0 && errno != EEXIST)) {
		r = -errno;
		drop = w->private_;
		goto out;
	}
	/* with a bucket, the content goes there first, verified again as it streams; the local file is
	 * then the cache's copy */
	if (w->store->bucket && !w->fill && (r = store__bucket_put(w->store, w->fd, got256, w->written))) {
		drop = w->private_ || r == HM_ERR_HASH_MISMATCH || r == HM_ERR_SIZE_MISMATCH;
		goto out;
	}
	/* Published read-only: no descriptor opened for writing after this, and no write through one held
	 * before (only this writer has the file: its lock, or its own name), reaches a blob. The same
	 * content stored already (another repo, revision or hub) is replaced by the copy just verified:
	 * the file under a blob's name is always the last one checked. */
	if (fchmod(w->fd, 0400) < 0 || rename(w->part_path, final) < 0) {
		r = -errno;
		drop = w->private_;
		goto out;
	}
	r = path_fsync(fandir);
	if (!r && w->xet)
		store__xet_save(w->store, got256, w->xet);   /* none is computed again when needed */
	if (!r && sha256_out)
		memcpy(sha256_out, got256, 65);
	if (!r && w->store->bucket)
		store__cached(w->store, w->written, got256);
out:
	if (drop)
		unlink(w->part_path);
	free(final);
	free(fandir);
	writer_free(w);
	return r;
}

void store_writer_abort(struct store_writer **wp, bool keep_partial)
{
	struct store_writer *w = wp ? *wp : NULL;

	if (!w)
		return;
	if (!keep_partial || w->private_ || w->put)
		unlink(w->part_path);
	else if (w->buflen)
		writer_flush(w); /* what arrived stays for the resume (on failure, what landed whole) */
	writer_free(w);
	*wp = NULL;
}

void store__writer_fill(struct store_writer *w)
{
	/* no Xet identity either: the content's was kept when it was written (store/xet/, which the cache's
	 * eviction leaves), or is computed from the cache's copy when asked; not computed again on every
	 * fill, a cold read's CPU (docs/benchmarks.md, "The store in an S3 bucket") */
	w->fill = true;
	xet_identity_free(&w->xet);
}

bool store_writer_stream(struct store_writer *w)
{
	struct store *s = w->store;

	if (!store_streams_size(s, w->size) || w->fill || !w->sha256[0] || w->written ||
	    w->put)
		return false;
	if (w->xet_given) {  /* (see _given_chunks: chunked here after all) */
		xet_identity_free(&w->xet);
		w->xet = xet_identity_new();
		w->xet_given = false;
	}
	return store_bucket_put_begin(s->bucket, w->sha256, w->size, &w->put) == 0;
}

bool store_streams_size(const struct store *s, int64_t size)
{
	return s->bucket && size > s->cache_max;
}

bool store_writer_streams(const struct store_writer *w)
{
	return w->put != NULL;
}

bool store_in_bucket(const struct store *s)
{
	return s->bucket != NULL;
}

const char *store_writer_path(const struct store_writer *w)
{
	return w->part_path;
}
