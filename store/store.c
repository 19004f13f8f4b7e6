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

static char *blob_local(const struct store *s, const char *sha256)
{
	if (!hex_is_lower(sha256, 64))
		return NULL;
	return xasprintf("%s/%.2s/%s", s->blobs, sha256, sha256);
}

char *store__blob_local(const struct store *s, const char *sha256)
{
	return blob_local(s, sha256);
}

char *store_cache_path(const struct store *s, const char *sha256)
{
	return blob_local(s, sha256);
}

char *store_blob_path(const struct store *s, const char *sha256)
{
	char *p = blob_local(s, sha256);

	/* with a bucket, the local file is a cache: a content not in it is brought in (verified), and
	 * one read is the last the cache lets go (its access time) */
	if (p && s->bucket) {
		bool hit = !utimensat(AT_FDCWD, p, (struct timespec[]){ { 0, UTIME_NOW }, { 0, UTIME_OMIT } }, 0);
		store_bucket_count_cache(hit);
		if (!hit)
			store__fill((struct store *)s, sha256);
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
	if (!r && (r = store_bucket_touch(s->bucket, sha256)) != 0)
		log_warn("store", "cannot re-stamp %.12s in the bucket: %s (%s); it is written again", sha256,
			 err_str(r), store_bucket_errmsg());
	close(lk);
	return r == 0;
}

static bool has(const struct store *s, const char *sha256, int64_t size)
{
	char *p = blob_local(s, sha256);
	struct stat st;
	int64_t there = -1;
	bool ok;

	if (!p)
		return false;
	ok = stat(p, &st) == 0 && S_ISREG(st.st_mode) && (size < 0 || st.st_size == size);
	free(p);
	if (!ok && s->bucket) {
		int r = store_bucket_stat(s->bucket, sha256, &there);
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
static bool fd_is_path(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* A random name part: 16 lowercase hex. */
static void nonce16(char out[17])
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
			nonce16(nonce);
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
		if (fd_is_path(w->fd, w->part_path))
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

static int finish_digest(EVP_MD_CTX *ctx, char *hexout)
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
	r = finish_digest(w->sha256_ctx, w->got256);
	if (!r && w->sha1_ctx)
		r = finish_digest(w->sha1_ctx, gotsha1);
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
	final = blob_local(w->store, got256);
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

/* ---- uploads in parts ------------------------------------------------------------------------ */

/* An upload in parts (store.h) lives in two files of its own: tmp/<oid>-<id>.parts, the bytes, each
 * part written in place by a writer that holds the file shared; and tmp/<oid>-<id>.done, a byte per
 * part, '1' once that part came whole. The completion takes the bytes' file from under its name and
 * locks it alone, so a part writer that opened it before can only find that out, never write. */

static bool upload_id_ok(const char *id)
{
	size_t n = strlen(id);

	return n >= 8 && n <= 64 && hex_is_lower(id, n);
}

static char *parts_path(const struct store *s, const char *oid, const char *id, const char *ext)
{
	if (!hex_is_lower(oid, 64) || !upload_id_ok(id))
		return NULL;
	return xasprintf("%s/%s-%s.%s", s->tmp, oid, id, ext);
}

int store_parts_open(struct store *s, const char *oid, const char *id)
{
	char *p = parts_path(s, oid, id, "parts");
	int fd, r;

	if (!p)
		return -EINVAL;
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
	} else if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? -EBUSY : -errno; /* being completed */
	} else if (!fd_is_path(fd, p)) {
		r = -EBUSY; /* a completion took it between the open and the lock */
	} else {
		free(p);
		return fd;
	}
	if (fd >= 0)
		close(fd);
	free(p);
	return r;
}

int store_parts_done(struct store *s, const char *oid, const char *id, int part)
{
	char *p = parts_path(s, oid, id, "done");
	int fd, r = 0;

	if (!p || part < 1)
		return -EINVAL;
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || pwrite(fd, "1", 1, part - 1) != 1)
		r = -errno;
	if (fd >= 0)
		close(fd);
	free(p);
	return r;
}

/* The first part (1-based) of n the done file does not mark whole; 0 when all are. */
static int parts_missing(const char *done, int n)
{
	int fd = open(done, O_RDONLY | O_CLOEXEC), first = 1;
	char *mark = xcalloc((size_t)n + 1, 1);
	ssize_t got = fd >= 0 ? pread(fd, mark, (size_t)n, 0) : -1;

	for (int i = 0; got >= 0 && i < n; i++, first++)
		if (mark[i] != '1')
			break;
	if (got >= 0 && first > n)
		first = 0;
	if (fd >= 0)
		close(fd);
	free(mark);
	return first;
}

/* A completed upload's bytes read back: its sha256 and its Xet identity in the one pass. */
struct parts_hash {
	EVP_MD_CTX *ctx;
	struct xet_identity *xet;
};

static int parts_chunk(void *ud, const void *data, size_t n)
{
	struct parts_hash *h = ud;

	xet_identity_update(h->xet, data, n);
	return EVP_DigestUpdate(h->ctx, data, n) ? 0 : -ENOMEM;
}

int store_parts_commit(struct store *s, const struct store_expect *expect, const char *id,
			      int nparts, int *missing)
{
	char *p = parts_path(s, expect->sha256 ? expect->sha256 : "", id, "parts"), nonce[17], got[65];
	char *done = p ? parts_path(s, expect->sha256, id, "done") : NULL, *taken = NULL, *final = NULL, *fandir = NULL;
	struct parts_hash h = { 0 };
	bool gone = false;
	int64_t total = 0;
	struct stat st;
	int fd = -1, r;

	*missing = 0;
	if (!p || expect->size < 0)
		return -EINVAL;
	nonce16(nonce);
	taken = xasprintf("%s/%s-%s.%s.taken", s->tmp, expect->sha256, id, nonce);
	/* off its name first: a part writer that opens it from now on gets a new file (its retry's) */
	if (rename(p, taken) < 0) {
		r = -errno;
		taken[0] = '\0';
		goto out;
	}
	fd = open(taken, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? -EBUSY : -errno; /* a part is still being written */
		goto out;
	}
	if ((*missing = parts_missing(done, nparts)) != 0) {
		r = HM_ERR_SIZE_MISMATCH;
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	gone = true; /* from here on the upload is decided: published, or dropped */
	if (st.st_size != expect->size) {
		r = HM_ERR_SIZE_MISMATCH;
		goto out;
	}
	/* hashed from what is in the file, now that nobody else may write it; its Xet identity in the
	 * same read, as the writer computes one (store-xet.h) */
	h.ctx = EVP_MD_CTX_new();
	h.xet = xet_identity_new();
	if (!h.ctx || !EVP_DigestInit_ex(h.ctx, EVP_sha256(), NULL)) {
		r = -ENOMEM;
		goto out;
	}
	r = store__read_chunks(fd, parts_chunk, &h, &total);
	if (!r)
		r = finish_digest(h.ctx, got);
	if (!r && (total != expect->size || strcmp(got, expect->sha256)))
		r = HM_ERR_HASH_MISMATCH;
	if (r)
		goto out;
	if (s->bucket && (r = store__bucket_put(s, fd, got, total)) != 0)
		goto out;
	final = blob_local(s, got);
	fandir = xasprintf("%s/%.2s", s->blobs, got);
	if (fchmod(fd, 0400) < 0 || fsync(fd) < 0 || (mkdir(fandir, 0755) < 0 && errno != EEXIST) ||
	    rename(taken, final) < 0) {
		r = -errno;
		goto out;
	}
	taken[0] = '\0';
	r = path_fsync(fandir);
	if (!r) {
		xet_identity_finish(h.xet);
		store__xet_save(s, got, h.xet); /* (none is computed again when needed) */
	}
	if (!r && s->bucket)
		store__cached(s, total, got);
out:
	if (taken[0] && !gone && renameat2(AT_FDCWD, taken, AT_FDCWD, p, RENAME_NOREPLACE) < 0) {
		gone = true; /* a retried part made a new file under the name meanwhile: the upload starts over */
		r = -EBUSY;
	}
	if (taken[0] && gone)
		unlink(taken);
	if (gone || !r)
		unlink(done);
	if (fd >= 0)
		close(fd); /* (the lock goes with it: a part writer that waited finds the name gone) */
	EVP_MD_CTX_free(h.ctx);
	xet_identity_free(&h.xet);
	free(final);
	free(fandir);
	free(taken);
	free(done);
	free(p);
	return r;
}

void store_parts_drop(struct store *s, const char *oid, const char *id)
{
	char *p = parts_path(s, oid, id, "parts"), *done = parts_path(s, oid, id, "done");

	if (p)
		unlink(p);
	if (done)
		unlink(done);
	free(p);
	free(done);
}

/* ---- maintenance --------------------------------------------------------------------------- */

int store_remove(struct store *s, const char *sha256)
{
	char *p = blob_local(s, sha256);
	int r = 0;

	if (!p)
		return -EINVAL;
	if (unlink(p) < 0)
		r = -errno;
	if (s->bucket) {
		int b = store_bucket_delete(s->bucket, sha256);
		r = b == HM_ERR_NOT_FOUND ? r : b;
	}
	store__xet_drop(s, sha256);
	free(p);
	return r;
}

/* Put a content moved aside back under its name (unless a writer published it again meanwhile). */
static int trash_restore(struct store *s, const char *aside, const char *sha256)
{
	char *p = blob_local(s, sha256), *fandir = xasprintf("%s/%.2s", s->blobs, sha256);
	int r = 0;

	if ((mkdir(fandir, 0755) < 0 && errno != EEXIST) || (link(aside, p) < 0 && errno != EEXIST))
		r = -errno;
	else
		r = path_fsync(fandir);
	if (!r)
		unlink(aside);
	free(p);
	free(fandir);
	return r;
}

/* store_reap with a bucket: under the content's stripe lock, which a look at it (store_has)
 * and a put of it hold shared, it is asked, then its age looked at, then deleted there and from the
 * cache. A writer holds a content before it looks for it, so either wanted sees its hold, or its look
 * waits for the delete and finds nothing (and writes the content again); a put running now keeps the
 * lock, and the content is left to the next gc. */
static int reap_bucket(struct store *s, const char *sha256, int (*wanted)(void *ud, const char *sha256),
		       void *ud)
{
	int lk = store__stripe_lock(s, sha256, LOCK_EX | LOCK_NB), w, r = 0;
	int64_t mtime = 0;
	char *p;

	if (lk < 0)
		return lk == -EWOULDBLOCK ? STORE_REAP_YOUNG : lk;
	w = wanted(ud, sha256);
	if (!w && s->reap_cutoff != INT64_MAX) {
		r = store_bucket_mtime(s->bucket, sha256, &mtime);
		if (!r && mtime >= s->reap_cutoff)
			w = STORE_REAP_YOUNG;
		else if (r && r != HM_ERR_NOT_FOUND)
			w = r;
	}
	if (w) {
		close(lk);
		return w;
	}
	r = store_bucket_delete(s->bucket, sha256);
	if (r == HM_ERR_NOT_FOUND)
		r = -ENOENT;
	p = blob_local(s, sha256);
	if (unlink(p) == 0 && r == -ENOENT)
		r = 0;
	free(p);
	store__xet_drop(s, sha256);
	close(lk);
	return r;
}

void store_reap_cutoff(struct store *s, int64_t cutoff)
{
	s->reap_cutoff = cutoff;
}

int store_reap(struct store *s, const char *sha256, int (*wanted)(void *ud, const char *sha256),
		      void *ud)
{
	char *p = blob_local(s, sha256), *aside, nonce[17];
	int r = 0, w;

	if (!p)
		return -EINVAL;
	if (s->bucket) {
		free(p);
		return reap_bucket(s, sha256, wanted, ud);
	}
	nonce16(nonce);
	aside = xasprintf("%s/%s.%s", s->trash, sha256, nonce);
	/* Moved aside first, asked after: a writer holds a content before it looks for it in the store,
	 * so either this question sees its hold, or the writer's look comes after the move and does not
	 * find the content (and writes it again). */
	if (rename(p, aside) < 0) {
		r = -errno;
	} else if ((w = wanted(ud, sha256)) != 0) {
		r = trash_restore(s, aside, sha256);
		if (!r)
			r = w > 0 ? 1 : w;
	} else if (unlink(aside) < 0) {
		r = -errno;
	} else {
		store__xet_drop(s, sha256);
	}
	free(p);
	free(aside);
	return r;
}

int store_trash_sweep(struct store *s, int (*wanted)(void *ud, const char *sha256), void *ud,
			     size_t *restored)
{
	DIR *dp = opendir(s->trash);
	struct dirent *e;
	int r = 0;

	*restored = 0;
	if (!dp)
		return errno == ENOENT ? 0 : -errno;
	while (!r && (e = readdir(dp))) {
		char sha[65], *aside;
		int w;
		if (e->d_name[0] == '.' || strlen(e->d_name) < 66 || e->d_name[64] != '.')
			continue;
		memcpy(sha, e->d_name, 64);
		sha[64] = '\0';
		if (!hex_is_lower(sha, 64))
			continue;
		aside = xasprintf("%s/%s", s->trash, e->d_name);
		w = wanted(ud, sha);
		if (w < 0) {
			r = w;
		} else if (w > 0) {
			r = trash_restore(s, aside, sha);
			if (!r)
				(*restored)++;
		} else {
			unlink(aside);
		}
		free(aside);
	}
	closedir(dp);
	return r;
}

int store_quarantine(struct store *s, const char *sha256)
{
	char *p = blob_local(s, sha256), *qdir = xasprintf("%s/quarantine", s->dir), *q = NULL;
	int r;

	if (!p) {
		free(qdir);
		return -EINVAL;
	}
	r = path_mkdirs(qdir, 0700);
	if (!r) {
		q = xasprintf("%s/%s.%lld", qdir, sha256, (long long)time(NULL));
		if (rename(p, q) < 0 && (!s->bucket || errno != ENOENT))
			r = -errno;
		/* the bucket's copy is what verify read: it goes, never to be served */
		if (!r && s->bucket && (r = store_bucket_delete(s->bucket, sha256)) == HM_ERR_NOT_FOUND)
			r = 0;
		store__xet_drop(s, sha256);
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

/* Hash the file p (taken: freed here) with sha256 or, git, sha1 into hex (git: as git names a blob,
 * "blob <size>" and its NUL first); *size its length. Returns 0, -ENOENT or -errno. */
static int hash_file(char *p, bool git, char *hex, int64_t *size)
{
	char hdr[40];
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
			EVP_DigestUpdate(ctx, hdr,
					 (size_t)snprintf(hdr, sizeof(hdr), "blob %lld", (long long)st.st_size) + 1);
	}
	if (!r)
		r = store__read_chunks(fd, digest_chunk, ctx, &total);
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

static int hash_blob(struct store *s, const char *sha256, bool git, char *hex, int64_t *size)
{
	return hash_file(store_blob_path(s, sha256), git, hex, size); /* (brought in from a bucket) */
}

/* The cache's copy hashed as it is (nothing brought in). */
static int hash_local(struct store *s, const char *sha256, char *hex, int64_t *size)
{
	return hash_file(blob_local(s, sha256), false, hex, size);
}

/* store_check with a bucket: the bucket's copy read back and hashed; a cached copy that is not
 * the content leaves the cache. */
static int check_bucket(struct store *s, const char *sha256, bool *ok, int64_t *size)
{
	char got[65], *p = blob_local(s, sha256);
	int64_t n;
	int r = store_bucket_check(s->bucket, sha256, ok, size);

	if (r == HM_ERR_NOT_FOUND)
		r = -ENOENT;
	if (p && access(p, F_OK) == 0 && (hash_local(s, sha256, got, &n) || strcmp(got, sha256))) {
		log_warn("verify", "the cache's copy of %.12s is not its content: dropped", sha256);
		unlink(p);
	}
	free(p);
	return r;
}

int store_check(struct store *s, const char *sha256, bool *ok, int64_t *size)
{
	char got[65];
	int r;

	if (s->bucket)
		return check_bucket(s, sha256, ok, size);
	r = hash_blob(s, sha256, false, got, size);

	if (!r)
		*ok = !strcmp(got, sha256);
	return r;
}

int store_git_oid(struct store *s, const char *sha256, char *out, int64_t *size)
{
	int64_t n;
	int r = hash_blob(s, sha256, true, out, &n);

	if (!r && size)
		*size = n;
	return r;
}

static bool ends_with(const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);

	return n > k && !strcmp(name + n - k, suffix);
}

bool store_is_partial(const char *name)
{
	return ends_with(name, ".part") || ends_with(name, ".parts") || ends_with(name, ".done") ||
	       ends_with(name, ".taken");
}

static int each_in_dir(const char *dir, bool partials_only, time_t now,
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

		/* (a user's partial file is made under a dot name: one a crash left there is a partial too) */
		if ((e->d_name[0] == '.' && !partials_only) || (partials_only && !store_is_partial(e->d_name)))
			continue;
		p = xasprintf("%s/%s", dir, e->d_name);
		if (lstat(p, &st) == 0 && S_ISREG(st.st_mode))
			r = fn(ud, e->d_name, p, (int64_t)(now - st.st_mtime));
		free(p);
	}
	closedir(dp);
	return r;
}

int store_partial_remove(const char *path)
{
	const char *base = strrchr(path, '/');
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;
	struct stat st;

	if (fd < 0)
		return -errno;
	/* A dot name is a private writer's file between its creation and its lock (writer_open): a gc that
	 * locked it first would delete it under the writer, whose rename then fails (a commit's 507).
	 * The window lasts microseconds; a dot name a crash left is taken once a minute old. */
	if ((base ? base[1] : path[0]) == '.' && fstat(fd, &st) == 0 && time(NULL) - st.st_mtime < 60)
		r = -EBUSY;
	/* a writer holds its partial file locked while it writes (an upload's parts file, shared) */
	else if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
	else if (unlink(path) < 0)
		r = -errno;
	close(fd);
	return r;
}

struct each_bucket {
	struct store *s;
	int (*fn)(void *ud, const char *name, const char *path, int64_t age_s);
	void *ud;
};

/* A bucket's object as store_each names it: its path is the cache's (which may not be there). */
static int each_bucket_object(void *ud, const char *name, int64_t size)
{
	struct each_bucket *x = ud;
	char *p = hex_is_lower(name, 64) ? blob_local(x->s, name) : xstrdup("");
	int r = x->fn(x->ud, name, p, 0);

	(void)size;
	free(p);
	return r;
}

int store_each(struct store *s, bool partials,
		      int (*fn)(void *ud, const char *name, const char *path, int64_t age_s), void *ud)
{
	time_t now = time(NULL);
	DIR *dp;
	struct dirent *e;
	int r = 0;

	if (s->bucket) {
		struct each_bucket x = { s, fn, ud };
		r = store_bucket_each(s->bucket, each_bucket_object, &x);
		return !r && partials ? each_in_dir(s->tmp, true, now, fn, ud) : r;
	}
	if (!(dp = opendir(s->blobs)))
		return -errno;
	while (!r && (e = readdir(dp))) {
		char *sub;
		if (e->d_name[0] == '.')
			continue;
		sub = xasprintf("%s/%s", s->blobs, e->d_name);
		r = each_in_dir(sub, false, now, fn, ud);
		free(sub);
	}
	closedir(dp);
	if (!r && partials)
		r = each_in_dir(s->tmp, true, now, fn, ud);
	return r;
}

void store__writer_fill(struct store_writer *w)
{
	/* no Xet identity either: the content's was kept when it was written (store/xet/, which the cache's
	 * eviction leaves), or is computed from the cache's copy when asked; not computed again on every
	 * fill, a cold read's CPU (docs/benchmarks.md, "The store in an S3 bucket") */
	w->fill = true;
	xet_identity_free(&w->xet);
}

int store_sweep_uploads(struct store *s, int64_t age_s, int64_t *aborted)
{
	*aborted = 0;
	return s->bucket ? store_bucket_sweep(s->bucket, age_s, aborted) : 0;
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
