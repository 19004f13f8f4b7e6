/*
 * store-maint.c - the store's upkeep (store.h): a content removed, gc's reap through the trash (and
 * what a writer held meanwhile put back; with a bucket, the bucket's trash and its expiry), quarantine,
 * a content checked against its name, the walk of every content and partial file, the sweep of a
 * bucket's unfinished uploads.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
#include "store/bucket.h"
#include "store-int.h"
#include "store-xet.h"
#include "store.h"

int store_remove(struct store *s, const char *sha256)
{
	char *p = store__blob_local(s, sha256);
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
	char *p = store__blob_local(s, sha256), *fandir = xasprintf("%s/%.2s", s->blobs, sha256);
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

/* A test hook (tests/README.md, "Fault hooks"): with $HUBMIRROR_TEST_STOP=bucket-reap:SHA256 the
 * process stops itself (SIGSTOP) in gc's reap of that content with a bucket, its age looked at and
 * found old, its object not yet moved to the trash: the window in which another mirror sharing the
 * bucket may re-stamp or put it. Read in this one place (t0884). */
static void test_stop_reap(const char *sha256)
{
	const char *v = getenv("HUBMIRROR_TEST_STOP");

	if (v && !strncmp(v, "bucket-reap:", 12) && !strcmp(v + 12, sha256))
		raise(SIGSTOP);
}

/* store_reap with a bucket: under the content's stripe lock, which a look at it (store_has)
 * and a put of it hold shared, it is asked, then its age looked at, then moved to the bucket's trash
 * and deleted from the cache. A writer holds a content before it looks for it, so either wanted sees
 * its hold, or its look waits for the move and finds it in the trash (and puts it back) or nowhere
 * (and writes the content again); a put running now keeps the lock, and the content is left to the
 * next gc. Another mirror's writer takes no lock of this data directory: what it re-stamps or puts
 * between the look at the age and the move is in the trash, and comes back from there
 * (store_bucket_trash_expire). */
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
	test_stop_reap(sha256);
	r = store_bucket_trash(s->bucket, sha256);
	if (r == HM_ERR_NOT_FOUND)
		r = -ENOENT;
	if (r && r != -ENOENT) {
		close(lk); /* (not copied to the trash: nothing deleted, the cache's copy kept) */
		return r;
	}
	p = store__blob_local(s, sha256);
	if (unlink(p) == 0 && r == -ENOENT)
		r = 0;
	free(p);
	store__xet_drop(s, sha256);
	close(lk);
	return r;
}

int store_bucket_trash_expire(struct store *s, int (*wanted)(void *ud, const char *sha256), void *ud,
			      struct store_bucket_trash_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!s->bucket)
		return 0;
	return store_bucket_trash_sweep(s->bucket, s->reap_cutoff, wanted, ud, st);
}

void store_reap_cutoff(struct store *s, int64_t cutoff)
{
	s->reap_cutoff = cutoff;
}

int store_reap(struct store *s, const char *sha256, int (*wanted)(void *ud, const char *sha256),
		      void *ud)
{
	char *p = store__blob_local(s, sha256), *aside, nonce[17];
	int r = 0, w;

	if (!p)
		return -EINVAL;
	if (s->bucket) {
		free(p);
		return reap_bucket(s, sha256, wanted, ud);
	}
	store__nonce16(nonce);
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
	char *p = store__blob_local(s, sha256), *qdir = xasprintf("%s/quarantine", s->dir), *q = NULL;
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
		r = store__finish_digest(ctx, hex);
	if (!r)
		*size = total;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); /* a full verify should not evict the hot set */
	close(fd);
	EVP_MD_CTX_free(ctx);
	return r;
}

#define HASH_RANGE ((size_t)8 << 20) /* one ranged read of the bucket (hash_ranges) */

/* hash_blob of a content the cache does not hold, from ranged reads of the bucket (store_read), never
 * brought into the cache. Its sha256 is computed in the same pass: bytes that are not the content (the
 * bucket's copy damaged) are HM_ERR_HASH_MISMATCH, logged, never a git id of it. */
static int hash_ranges(struct store *s, const char *sha256, bool git, char *hex, int64_t *size)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new(), *sum = EVP_MD_CTX_new();
	char hdr[40], got[65], *buf = NULL, *why = NULL;
	int64_t n = -1, off = 0;
	int r = store_size(s, sha256, &n);

	if (r == -ENOENT && !store__restore(s, sha256, -1))
		r = store_size(s, sha256, &n);
	if (!r && (!md || !sum))
		r = -ENOMEM;
	if (!r) {
		EVP_DigestInit_ex(md, git ? EVP_sha1() : EVP_sha256(), NULL);
		EVP_DigestInit_ex(sum, EVP_sha256(), NULL);
		if (git)
			EVP_DigestUpdate(md, hdr, (size_t)snprintf(hdr, sizeof(hdr), "blob %lld", (long long)n) + 1);
		buf = xmalloc(HASH_RANGE);
	}
	while (!r && off < n) {
		size_t k = n - off < (int64_t)HASH_RANGE ? (size_t)(n - off) : HASH_RANGE;
		if (!(r = store_read(s, sha256, off, buf, k, &why))) {
			EVP_DigestUpdate(md, buf, k);
			EVP_DigestUpdate(sum, buf, k);
		}
		off += (int64_t)k;
	}
	if (!r && !(r = store__finish_digest(md, hex)) && !(r = store__finish_digest(sum, got)) && strcmp(got, sha256)) {
		r = HM_ERR_HASH_MISMATCH;
		why = xasprintf("its bytes hash to %.12s, not to its name (the bucket's copy damaged)", got);
	}
	if (r && r != -ENOENT)
		log_warn("store", "hashing %.12s from the bucket: %s", sha256, why ? why : err_str(r));
	if (!r) {
		*size = n;
		log_debug("store", "%.12s: its %s hashed from the bucket's ranges (%lld bytes), not brought into the cache",
			  sha256, git ? "git id" : "sha256", (long long)n);
	}
	free(why);
	free(buf);
	EVP_MD_CTX_free(md);
	EVP_MD_CTX_free(sum);
	return r;
}

/* The cache's copy, or the local store's file; else with a bucket its object by ranges: a reader that
 * goes through contents once (a twin's git id) never brings them in (one bigger than the cache would
 * stay past its bound, and the rest push out what is read often). */
static int hash_blob(struct store *s, const char *sha256, bool git, char *hex, int64_t *size)
{
	int r = hash_file(store__blob_local(s, sha256), git, hex, size);

	return r == -ENOENT && s->bucket ? hash_ranges(s, sha256, git, hex, size) : r;
}

/* The cache's copy hashed as it is (nothing brought in). */
static int hash_local(struct store *s, const char *sha256, char *hex, int64_t *size)
{
	return hash_file(store__blob_local(s, sha256), false, hex, size);
}

/* store_check with a bucket: the bucket's copy read back and hashed; a cached copy that is not
 * the content leaves the cache. */
static int check_bucket(struct store *s, const char *sha256, bool *ok, int64_t *size)
{
	char got[65], *p = store__blob_local(s, sha256);
	int64_t n;
	int r = store_bucket_check(s->bucket, sha256, ok, size);

	if (r == HM_ERR_NOT_FOUND && !store__restore(s, sha256, -1))
		r = store_bucket_check(s->bucket, sha256, ok, size); /* (another mirror's gc took it) */
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
	char *p = hex_is_lower(name, 64) ? store__blob_local(x->s, name) : xstrdup("");
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


int store_sweep_uploads(struct store *s, int64_t age_s, int64_t *aborted)
{
	*aborted = 0;
	return s->bucket ? store_bucket_sweep(s->bucket, age_s, aborted) : 0;
}
