/*
 * store-parts.c - a user's upload sent in parts (store.h: store_parts_*): each part kept under the
 * upload's id until the last, then the whole hashed and put in the store as one content.
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
#include "base/log.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "hub/xet/xet.h"
#include "store/bucket.h"
#include "store-int.h"
#include "store-xet.h"
#include "store.h"

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
	} else if (!store__fd_is_path(fd, p)) {
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
	store__nonce16(nonce);
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
		r = store__finish_digest(h.ctx, got);
	if (!r && (total != expect->size || strcmp(got, expect->sha256)))
		r = HM_ERR_HASH_MISMATCH;
	if (r)
		goto out;
	if (s->bucket && (r = store__bucket_put(s, fd, got, total)) != 0)
		goto out;
	final = store__blob_local(s, got);
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
