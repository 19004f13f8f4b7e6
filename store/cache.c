/*
 * cache.c - the store with a bucket (store/bucket.h) behind it: every content is written
 * there, verified, before it is published; blobs/ becomes a cache of what was written or read last,
 * bounded by [store] cache-size; a content not in the cache is brought in from the bucket, verified
 * again, when it is asked for.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "store/bucket.h"
#include "store-int.h"
#include "store.h"

/* What blobs/ holds, walked: each file's size added to *total, and each kept in *v (may be NULL). */
struct cached_file {
	char sha256[65];
	int64_t size;
	int64_t atime_ns;
};

static int64_t walk_cache(const struct store *s, struct cached_file **v, size_t *n)
{
	DIR *dp = opendir(s->blobs), *sub;
	struct dirent *e, *f;
	int64_t total = 0;
	size_t cap = 0;

	if (v) {
		*v = NULL;
		*n = 0;
	}
	while (dp && (e = readdir(dp))) {
		char *d = xasprintf("%s/%s", s->blobs, e->d_name);
		sub = e->d_name[0] == '.' ? NULL : opendir(d);
		while (sub && (f = readdir(sub))) {
			struct stat st;
			if (!hex_is_lower(f->d_name, 64) ||
			    fstatat(dirfd(sub), f->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
				continue;
			total += st.st_size;
			if (!v)
				continue;
			if (*n == cap)
				*v = xreallocarray(*v, cap = cap ? cap * 2 : 64, sizeof(**v));
			memcpy((*v)[*n].sha256, f->d_name, 65);
			(*v)[*n].size = st.st_size;
			(*v)[(*n)++].atime_ns = (int64_t)st.st_atim.tv_sec * 1000000000 + st.st_atim.tv_nsec;
		}
		if (sub)
			closedir(sub);
		free(d);
	}
	if (dp)
		closedir(dp);
	return total;
}

int store__bucket_open(struct store *s)
{
	const char *why = NULL;
	int r;

	pthread_mutex_init(&s->trim_lock, NULL);
	if (!store_bucket_configured())
		return 0;
	r = store_bucket_open(&s->bucket, &why);
	if (r) {
		log_error("store", "the bucket: %s", why ? why : err_str(r));
		return r;
	}
	s->cache_max = store_bucket_cache_size();
	s->cached = walk_cache(s, NULL, NULL);
	return 0;
}

void store__bucket_close(struct store *s)
{
	store_bucket_free(&s->bucket);
	pthread_mutex_destroy(&s->trim_lock);
}

int store__bucket_put(struct store *s, int fd, const char *sha256, int64_t size)
{
	/* a put and gc's reap of the content never cross (store_reap) */
	int lk = store__stripe_lock(s, sha256, LOCK_SH), r;

	if (lk < 0) {
		log_warn("store", "cannot lock %.12s's stripe: %s", sha256, err_str(lk));
		return lk;
	}
	r = store_bucket_put_fd(s->bucket, fd, sha256, size);
	close(lk);

	if (r)
		log_warn("store", "cannot put %.12s in the bucket: %s (%s)", sha256, err_str(r), store_bucket_errmsg());
	return r;
}

static void trim(struct store *s, const char *keep, int64_t target);
static void make_room(struct store *s, int64_t n, const char *keep);

struct fill_ctx {
	struct store_writer *w;
	void (*progress)(void *ud, int64_t bytes);
	void *ud;
	int64_t told, size;
	bool kill; /* the test hook below */
};

static int fill_sink(void *ud, const void *data, size_t n)
{
	struct fill_ctx *f = ud;
	int r = store_writer_write(f->w, data, n);
	int64_t in = store_writer_flushed(f->w);

	if (in >= f->size)
		in = f->size - 1; /* the last byte goes out only once the whole is verified (fill_run) */
	if (!r && f->progress && in > f->told)
		f->progress(f->ud, f->told = in);
	if (f->kill && in >= f->size / 2)
		raise(SIGKILL);
	return r;
}

/* A test hook (tests/README.md, "Fault hooks"): with $HUBMIRROR_TEST_KILL=store-fill the process kills
 * itself (SIGKILL) once a fill of the cache has half of its content in the partial file, the answer
 * under way and the whole not yet verified: a crash mid-fill. Read in this one place (t0875). */
static bool test_kill_fill(void)
{
	const char *v = getenv("HUBMIRROR_TEST_KILL");

	return v && !strcmp(v, "store-fill");
}

int store_fill_begin(struct store *s, const char *sha256, int64_t size, struct store_writer **w)
{
	struct store_expect ex = { .sha256 = sha256, .size = size };
	int r;

	if (!s->bucket)
		return -ENOENT;
	/* a writer of its own: a fill never waits on, nor resumes, the mirror's own write of the content */
	r = store_writer_new_private(s, &ex, w);
	if (!r)
		store__writer_fill(*w);
	return r;
}

int store_fill_run(struct store *s, const char *sha256, struct store_writer **w,
			  int64_t size, void (*progress)(void *ud, int64_t bytes), void *ud)
{
	struct fill_ctx f = { *w, progress, ud, 0, size, test_kill_fill() };
	int r = store_bucket_get(s->bucket, sha256, 0, -1, fill_sink, &f);

	*w = NULL;
	if (r) {
		log_warn("store", "cannot read %.12s from the bucket: %s (%s)", sha256, err_str(r),
			 r == HM_ERR_NOT_FOUND ? "no such object" : store_bucket_errmsg());
		store_writer_abort(&f.w, false);
		return r == HM_ERR_NOT_FOUND ? -ENOENT : r;
	}
	f.told = store_writer_offset(f.w); /* (every byte taken) */
	/* Verified (the bucket's bytes hashed again) and every byte in the partial file: the reader takes
	 * the last of them now, not after the commit's fsync of the whole (1.8 s for 1 GiB on this
	 * machine's disk). The cache makes room for the content first, so that a client that has it
	 * never finds the cache past its bound (t0863 checks after each file). */
	r = store_writer_check(f.w);
	if (!r && progress) {
		make_room(s, f.told, sha256);
		progress(ud, store_writer_flushed(f.w));
	}
	r = store_writer_commit(&f.w, NULL); /* (publishes on the check's verdict) */
	if (r)
		log_warn("store", "the bucket's %.12s is not its content: %s", sha256, err_str(r));
	else
		store__cached(s, f.told, sha256);
	return r;
}

/* Evict what is needed for n bytes more to fit under the bound (keep: the content coming). */
static void make_room(struct store *s, int64_t n, const char *keep)
{
	pthread_mutex_lock(&s->trim_lock);
	trim(s, keep, s->cache_max - n);
	pthread_mutex_unlock(&s->trim_lock);
}

int store__restore(const struct store *s, const char *sha256, int64_t size)
{
	int r = store_bucket_restore(s->bucket, sha256, size);

	if (!r)
		log_warn("store", "%.12s was in the bucket's trash (another mirror's gc took it while this one "
			 "counted on it): put back", sha256);
	else if (r != HM_ERR_NOT_FOUND)
		log_warn("store", "cannot look for %.12s in the bucket's trash: %s (%s)", sha256, err_str(r),
			 store_bucket_errmsg());
	return r;
}

int store__fill(struct store *s, const char *sha256)
{
	struct store_writer *w = NULL;
	int64_t size = -1;
	int r = store_bucket_stat(s->bucket, sha256, &size);

	if (r == HM_ERR_NOT_FOUND && !store__restore(s, sha256, -1))
		r = store_bucket_stat(s->bucket, sha256, &size);

	if (r && r != HM_ERR_NOT_FOUND)
		log_warn("store", "cannot read %.12s from the bucket: %s (%s)", sha256, err_str(r),
			 store_bucket_errmsg());
	if (r)
		return r == HM_ERR_NOT_FOUND ? -ENOENT : r;
	if (store_streams_size(s, size)) {
		/* it would stay in the cache past its bound, pushing out everything else: such a content is
		 * read by ranges (store_read), never brought in whole */
		log_warn("store", "%.12s (%lld bytes) is bigger than the cache's bound (%lld): not brought in", sha256,
			 (long long)size, (long long)s->cache_max);
		return -EFBIG;
	}
	/* (which thread: a front's loop must never be the one waiting for the bucket; t0876 reads it) */
	log_debug("store", "%.12s: brought into the cache from the bucket, on thread %ld", sha256, (long)gettid());
	r = store_fill_begin(s, sha256, size, &w);
	return r ? r : store_fill_run(s, sha256, &w, size, NULL, NULL);
}

static int by_atime(const void *a, const void *b)
{
	const struct cached_file *x = a, *y = b;

	return x->atime_ns < y->atime_ns ? -1 : x->atime_ns > y->atime_ns;
}

/* Evict the least recently read until blobs/ holds at most target bytes. A content goes only when the
 * bucket holds it whole (one written before the bucket was configured stays). */
static void trim(struct store *s, const char *keep, int64_t target)
{
	struct cached_file *v;
	size_t n;
	int64_t said = atomic_load(&s->cached), total = walk_cache(s, &v, &n), there;

	if (n)
		qsort(v, n, sizeof(*v), by_atime); /* (v NULL when blobs/ holds nothing) */
	for (size_t i = 0; i < n && total > target; i++) {
		char *p;
		if ((keep && !strcmp(keep, v[i].sha256)) || store_bucket_stat(s->bucket, v[i].sha256, &there) ||
		    there != v[i].size)
			continue;
		p = store__blob_local(s, v[i].sha256);
		if (unlink(p) == 0)
			total -= v[i].size;
		free(p);
	}
	/* the count is what blobs/ holds now, and what writers published while the walk went on (their
	 * store__cached, not under the lock): setting it to the walk's total lost those, and the cache
	 * then went past its bound unseen (t0863: 6.5 MB of a 4 MiB cache after a sync's parallel
	 * fetches); one the walk saw is counted twice, and the next trim measures again */
	atomic_fetch_add(&s->cached, total - said);
	free(v);
}

void store__cached(struct store *s, int64_t n, const char *keep)
{
	/* (the sum as a plain value: clang does not compare an atomic assignment's result) */
	if (atomic_fetch_add(&s->cached, n) + n <= s->cache_max)
		return;
	pthread_mutex_lock(&s->trim_lock);
	if (s->cached > s->cache_max)
		trim(s, keep, s->cache_max);
	pthread_mutex_unlock(&s->trim_lock);
}

/* store_read's bytes from the bucket, into the caller's buffer (never past it). */
struct read_sink {
	char *buf;
	size_t len, got;
};

static int read_sink(void *ud, const void *data, size_t n)
{
	struct read_sink *r = ud;

	if (n > r->len - r->got)
		return HM_ERR_SIZE_MISMATCH;
	memcpy(r->buf + r->got, data, n);
	r->got += n;
	return 0;
}

/* store_read from the local file at p: 1 when blobs/ has no such file (the caller asks the bucket). */
static int read_local(const char *p, int64_t off, void *buf, size_t len, char **errmsg)
{
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOATIME), r = 0;
	size_t got = 0;

	if (fd < 0 && errno == EPERM) /* (O_NOATIME: only the file's owner may) */
		fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 1 : -errno;
	while (got < len && !r) {
		ssize_t k = pread(fd, (char *)buf + got, len - got, off + (int64_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			r = k < 0 ? -errno : HM_ERR_SIZE_MISMATCH;
		else
			got += (size_t)k;
	}
	close(fd);
	if (r && errmsg)
		*errmsg = xasprintf("reading %s: %s", p, err_str(r));
	return r;
}

int store_read(struct store *s, const char *sha256, int64_t off, void *buf, size_t len, char **errmsg)
{
	char *p = off < 0 ? NULL : store__blob_local(s, sha256);
	struct read_sink sink = { buf, len, 0 };
	int r;

	if (!p)
		return -EINVAL;
	r = read_local(p, off, buf, len, errmsg);
	free(p);
	if (r <= 0 || !s->bucket)
		return r > 0 ? -ENOENT : r;
	/* (which thread: a front's loop must never be the one waiting for the bucket; t0886 reads it) */
	log_debug("store", "%.12s: %zu bytes at %lld read from the bucket, not brought into the cache, on thread %ld",
		  sha256, len, (long long)off, (long)gettid());
	r = store_bucket_get(s->bucket, sha256, off, (int64_t)len, read_sink, &sink);
	if (!r && sink.got < len)
		r = HM_ERR_SIZE_MISMATCH;
	if (r == HM_ERR_NOT_FOUND)
		r = -ENOENT;
	if (r && errmsg)
		*errmsg = xasprintf("the bucket's %.12s at %lld: %s%s%s", sha256, (long long)off, err_str(r),
				    r == -ENOENT || r == HM_ERR_SIZE_MISMATCH ? "" : ": ",
				    r == -ENOENT || r == HM_ERR_SIZE_MISMATCH ? "" : store_bucket_errmsg());
	return r;
}

/* store_slurp's size: the local file's (*local set), else the bucket's object's (never asked when
 * local_only: -EAGAIN). */
static int slurp_size(struct store *s, const char *sha256, const char *p, bool local_only, int64_t *size,
		      bool *local)
{
	struct stat st;
	int r;

	*local = stat(p, &st) == 0;
	if (*local) {
		*size = st.st_size;
		return 0;
	}
	if (errno != ENOENT)
		return -errno;
	if (!s->bucket)
		return -ENOENT;
	if (local_only)
		return -EAGAIN;
	r = store_bucket_stat(s->bucket, sha256, size);
	if (r == HM_ERR_NOT_FOUND && !store__restore(s, sha256, -1))
		r = store_bucket_stat(s->bucket, sha256, size);
	return r == HM_ERR_NOT_FOUND ? -ENOENT : r;
}

int store_slurp(struct store *s, const char *sha256, size_t max, bool local_only, char **buf, size_t *len,
		char **errmsg)
{
	char *p = store__blob_local(s, sha256), *b = NULL, got[65];
	unsigned char md[32];
	int64_t size = -1;
	bool local = false;
	int r;

	*buf = NULL;
	*len = 0;
	if (errmsg)
		*errmsg = NULL;
	if (!p)
		return -EINVAL;
	r = slurp_size(s, sha256, p, local_only, &size, &local);
	if (!r && (uint64_t)size > max)
		r = -EFBIG;
	if (!r) {
		b = xmalloc((size_t)size + 1);
		r = local ? read_local(p, 0, b, (size_t)size, errmsg) : 1;
		/* (a local copy the cache let go just now: the bucket's, unless the caller may not wait on it) */
		if (r == 1)
			r = local_only && s->bucket ? -EAGAIN : store_read(s, sha256, 0, b, (size_t)size, errmsg);
	}
	if (!r && (!EVP_Digest(b, (size_t)size, md, NULL, EVP_sha256(), NULL) ||
		   (hex_encode(md, sizeof(md), got), strcmp(got, sha256)))) {
		/* never given: a damaged copy (the bucket's object overwritten, a disk's fault) is not the content */
		r = HM_ERR_HASH_MISMATCH;
		if (errmsg)
			*errmsg = xasprintf("the store's copy of %s (%s) hashes to %.12s, not to its name: damaged", sha256,
					    local ? p : "the bucket's object", got);
		log_warn("store", "the store's copy of %s (%s) hashes to %.12s, not to its name: damaged, not read",
			 sha256, local ? p : "the bucket's object", got);
	}
	if (r && r != HM_ERR_HASH_MISMATCH && errmsg && !*errmsg)
		*errmsg = xasprintf("%s: %s", sha256, r == -EFBIG ? "bigger than the caller reads whole" : err_str(r));
	free(p);
	if (r) {
		free(b);
		return r;
	}
	b[size] = '\0';
	*buf = b;
	*len = (size_t)size;
	return 0;
}

struct store_bucket *store_bucket_of(const struct store *s)
{
	return s->bucket;
}

const char *store_tmp_dir(const struct store *s)
{
	return s->tmp;
}
