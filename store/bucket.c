/*
 * bucket.c - the store's bucket backend: contents under their ids in an S3 bucket, written verified.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/xmalloc.h"
#include "store/bucket.h"
#include "store-int.h"

#define POOL_MAX 8
#define CACHE_DEFAULT ((int64_t)10 << 30)

/* The process's configuration (store_bucket_configure), copied. */
static struct {
	bool set;
	struct store_s3_config c;
	int64_t cache_size;
} conf;

static _Atomic int64_t n_requests, n_in, n_out, n_errors, n_hits, n_misses, n_usec;
static _Thread_local char last_err[256];
static _Thread_local int64_t call_start_us; /* take() to put(): one call at a time per thread */

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct store_bucket {
	struct store_s3_config c;   /* conf's strings, borrowed: configured once, for the process */
	pthread_mutex_t lock;
	struct store_s3 *pool[POOL_MAX];
	int npool;
};

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void store_bucket_configure(const struct store_s3_config *c, int64_t cache_size)
{
	if (!c) {
		conf.set = false;
		return;
	}
	conf.c = *c;
	conf.c.endpoint = dup_or_null(c->endpoint);
	conf.c.bucket = dup_or_null(c->bucket);
	conf.c.prefix = dup_or_null(c->prefix);
	conf.c.region = dup_or_null(c->region);
	conf.c.access_key = dup_or_null(c->access_key);
	conf.c.secret_key = dup_or_null(c->secret_key);
	conf.c.session_token = dup_or_null(c->session_token);
	conf.cache_size = cache_size > 0 ? cache_size : CACHE_DEFAULT;
	conf.set = true;
}

bool store_bucket_configured(void)
{
	return conf.set;
}

int64_t store_bucket_cache_size(void)
{
	return conf.cache_size;
}

int store_bucket_open(struct store_bucket **out, const char **why)
{
	struct store_bucket *b;
	struct store_s3 *s = NULL;
	int r;

	if (!conf.set)
		return -ENOENT;
	r = store_s3_new(&conf.c, &s, why); /* checks the configuration once */
	if (r)
		return r;
	b = xcalloc(1, sizeof(*b));
	b->c = conf.c;
	pthread_mutex_init(&b->lock, NULL);
	b->pool[b->npool++] = s;
	*out = b;
	return 0;
}

void store_bucket_free(struct store_bucket **bp)
{
	struct store_bucket *b = bp ? *bp : NULL;

	if (!b)
		return;
	for (int i = 0; i < b->npool; i++)
		store_s3_free(&b->pool[i]);
	pthread_mutex_destroy(&b->lock);
	free(b);
	*bp = NULL;
}

/* A client of the pool's, or a new one; give it back with put(). */
static struct store_s3 *take(struct store_bucket *b)
{
	struct store_s3 *s = NULL;
	const char *why;

	call_start_us = now_us();
	pthread_mutex_lock(&b->lock);
	if (b->npool)
		s = b->pool[--b->npool];
	pthread_mutex_unlock(&b->lock);
	if (!s && store_s3_new(&b->c, &s, &why))
		return NULL; /* (the configuration was checked when the bucket opened) */
	return s;
}

/* Back into the pool; r is the call's result, noted for the counters and store_bucket_errmsg(). */
static int put(struct store_bucket *b, struct store_s3 *s, int r)
{
	n_requests++;
	n_usec += now_us() - call_start_us;
	if (r && r != HM_ERR_NOT_FOUND) {
		n_errors++;
		snprintf(last_err, sizeof(last_err), "%s", store_s3_errmsg(s));
	}
	pthread_mutex_lock(&b->lock);
	if (b->npool < POOL_MAX) {
		b->pool[b->npool++] = s;
		s = NULL;
	}
	pthread_mutex_unlock(&b->lock);
	store_s3_free(&s);
	return r;
}

/* For the staging area's calls (bucket-stage.c): a client of the pool and back, counted as these are. */
struct store_s3 *store__bucket_take(struct store_bucket *b)
{
	return take(b);
}

int store__bucket_give(struct store_bucket *b, struct store_s3 *s, int r, int64_t bytes_in, int64_t bytes_out)
{
	n_in += bytes_in;
	n_out += bytes_out;
	return put(b, s, r);
}

const char *store_bucket_errmsg(void)
{
	return last_err[0] ? last_err : "no error";
}

void store_bucket_stats(struct store_bucket_stats *out)
{
	out->requests = n_requests;
	out->bytes_in = n_in;
	out->bytes_out = n_out;
	out->errors = n_errors;
	out->cache_hits = n_hits;
	out->cache_misses = n_misses;
	out->seconds = (double)n_usec / 1e6;
}

void store_bucket_count_cache(bool hit)
{
	if (hit)
		n_hits++;
	else
		n_misses++;
}

char *store_bucket_key(const char *sha256)
{
	if (!hex_is_lower(sha256, 64))
		return NULL;
	return xasprintf("blobs/%.2s/%s", sha256, sha256);
}

/* HEAD of a content's object: its size and its Last-Modified. */
static int head_content(struct store_bucket *b, const char *sha256, struct store_s3_stat *st)
{
	char *key = store_bucket_key(sha256);
	struct store_s3 *s = key ? take(b) : NULL;
	int r;

	if (!s) {
		free(key);
		return key ? -ENOMEM : -EINVAL;
	}
	r = put(b, s, store_s3_head(s, key, st));
	free(key);
	return r;
}

int store_bucket_stat(struct store_bucket *b, const char *sha256, int64_t *size)
{
	struct store_s3_stat st;
	int r = head_content(b, sha256, &st);

	if (!r && size)
		*size = st.size;
	return r;
}

static int finish_hex(EVP_MD_CTX *ctx, char out[65])
{
	unsigned char md[32];
	unsigned n = 0;

	if (!EVP_DigestFinal_ex(ctx, md, &n) || n != 32)
		return -EIO;
	hex_encode(md, 32, out);
	return 0;
}

/* A test hook (tests/README.md, "Fault hooks"): with $HUBMIRROR_TEST_KILL=store-upload the process kills
 * itself (SIGKILL) once an upload of a content became a multipart upload, its first part sent or on its
 * way and the upload not complete: a crash mid-object. Read in this one place (t0864). */
static void test_kill_point(struct store_s3_upload *u)
{
	const char *v = getenv("HUBMIRROR_TEST_KILL");

	if (v && !strcmp(v, "store-upload") && store_s3_upload_id(u))
		raise(SIGKILL);
}

int store_bucket_put_fd(struct store_bucket *b, int fd, const char *sha256, int64_t size)
{
	char *key = store_bucket_key(sha256), *buf = NULL, got[65];
	struct store_s3 *s = key ? take(b) : NULL;
	struct store_s3_upload *u = NULL;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int64_t total = 0;
	int r;

	if (!key || !s || !ctx) {
		r = key ? -ENOMEM : -EINVAL;
		goto out;
	}
	buf = xmalloc(1 << 20);
	r = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) ? store_s3_upload_begin(s, key, &u) : -EIO;
	while (!r) {
		ssize_t k = pread(fd, buf, 1 << 20, total);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r = k < 0 ? -errno : 0;
			break;
		}
		total += k;
		if (!EVP_DigestUpdate(ctx, buf, (size_t)k))
			r = -EIO;
		else
			r = store_s3_upload_write(u, buf, (size_t)k);
		test_kill_point(u);
	}
	if (!r)
		r = finish_hex(ctx, got);
	if (!r && total != size)
		r = HM_ERR_SIZE_MISMATCH;
	else if (!r && strcmp(got, sha256))
		r = HM_ERR_HASH_MISMATCH;
	/* completed only now, the bytes sent being the content's; any other end drops the parts */
	if (!r)
		r = store_s3_upload_commit(&u);
	store_s3_upload_abort(&u);
	if (!r)
		n_out += total;
out:
	if (s)
		put(b, s, r);
	EVP_MD_CTX_free(ctx);
	free(buf);
	free(key);
	return r;
}

struct count_sink {
	int (*sink)(void *ud, const void *data, size_t n);
	void *ud;
};

static int counting(void *ud, const void *data, size_t n)
{
	struct count_sink *c = ud;

	n_in += (int64_t)n;
	return c->sink(c->ud, data, n);
}

int store_bucket_get(struct store_bucket *b, const char *sha256, int64_t off, int64_t len,
		     int (*sink)(void *ud, const void *data, size_t n), void *ud)
{
	char *key = store_bucket_key(sha256);
	struct store_s3 *s = key ? take(b) : NULL;
	struct count_sink c = { sink, ud };
	int r;

	if (!s) {
		free(key);
		return key ? -ENOMEM : -EINVAL;
	}
	r = put(b, s, store_s3_get(s, key, off, len, counting, &c));
	free(key);
	return r;
}

struct store_bucket_loop {
	struct store_s3 *s;
	struct store_s3_loop *l;
};

/* One read on the loop: the caller's sink and done, counted. */
struct loop_read {
	int (*sink)(void *ud, const void *data, size_t n);
	void (*done)(void *ud, int result);
	void *ud;
	int64_t start_us;
	bool sink_failed;           /* the caller's sink ended it: not the bucket's failure */
	const struct store_s3 *s;
};

int store_bucket_loop_new(struct store_bucket *b, uv_loop_t *loop, struct store_bucket_loop **out)
{
	struct store_bucket_loop *l = xcalloc(1, sizeof(*l));
	const char *why;

	if (store_s3_new(&b->c, &l->s, &why) || store_s3_loop_new(l->s, loop, &l->l)) {
		store_s3_free(&l->s);
		free(l);
		return -ENOMEM; /* (the configuration was checked when the bucket opened) */
	}
	*out = l;
	return 0;
}

static int loop_sink(void *ud, const void *data, size_t n)
{
	struct loop_read *x = ud;
	int r;

	n_in += (int64_t)n;
	r = x->sink(x->ud, data, n);
	x->sink_failed = r != 0;
	return r;
}

static void loop_done(void *ud, int result)
{
	struct loop_read *x = ud;

	n_requests++;
	n_usec += now_us() - x->start_us;
	if (result && result != HM_ERR_NOT_FOUND && result != -ECANCELED && !x->sink_failed) {
		n_errors++;
		snprintf(last_err, sizeof(last_err), "%s", store_s3_errmsg(x->s));
	}
	x->done(x->ud, result);
	free(x);
}

int store_bucket_loop_get(struct store_bucket_loop *l, const char *sha256, int64_t off, int64_t len,
			  int (*sink)(void *ud, const void *data, size_t n), void (*done)(void *ud, int result),
			  void *ud)
{
	char *key = store_bucket_key(sha256);
	struct loop_read *x;
	int r;

	if (!key)
		return -EINVAL;
	x = xcalloc(1, sizeof(*x));
	*x = (struct loop_read){ sink, done, ud, now_us(), false, l->s };
	r = store_s3_loop_get(l->l, key, off, len, loop_sink, loop_done, x);
	if (r)
		free(x);
	free(key);
	return r;
}

void store_bucket_loop_free(struct store_bucket_loop **lp)
{
	struct store_bucket_loop *l = lp ? *lp : NULL;

	if (!l)
		return;
	store_s3_loop_free(&l->l);
	store_s3_free(&l->s);
	free(l);
	*lp = NULL;
}

struct hash_sink {
	EVP_MD_CTX *ctx;
	int64_t n;
};

static int hashing(void *ud, const void *data, size_t n)
{
	struct hash_sink *h = ud;

	h->n += (int64_t)n;
	return EVP_DigestUpdate(h->ctx, data, n) ? 0 : -EIO;
}

int store_bucket_check(struct store_bucket *b, const char *sha256, bool *ok, int64_t *size)
{
	struct hash_sink h = { EVP_MD_CTX_new(), 0 };
	char got[65];
	int r;

	*ok = false;
	if (!h.ctx || !EVP_DigestInit_ex(h.ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(h.ctx);
		return -ENOMEM;
	}
	r = store_bucket_get(b, sha256, 0, -1, hashing, &h);
	if (!r)
		r = finish_hex(h.ctx, got);
	if (!r) {
		*ok = !strcmp(got, sha256);
		*size = h.n;
	}
	EVP_MD_CTX_free(h.ctx);
	return r;
}

/* One call of a client of the pool on content sha256's object. */
static int on_object(struct store_bucket *b, const char *sha256, int (*call)(struct store_s3 *s, const char *key))
{
	char *key = store_bucket_key(sha256);
	struct store_s3 *s = key ? take(b) : NULL;
	int r;

	if (!s) {
		free(key);
		return key ? -ENOMEM : -EINVAL;
	}
	r = put(b, s, call(s, key));
	free(key);
	return r;
}

int store_bucket_delete(struct store_bucket *b, const char *sha256)
{
	return on_object(b, sha256, store_s3_delete);
}

int store_bucket_touch(struct store_bucket *b, const char *sha256)
{
	return on_object(b, sha256, store_s3_touch);
}

struct each_ctx {
	int (*fn)(void *ud, const char *name, int64_t size);
	void *ud;
};

static int each_object(void *ud, const struct store_s3_entry *e)
{
	struct each_ctx *x = ud;
	const char *name = strrchr(e->key, '/');

	return x->fn(x->ud, name ? name + 1 : e->key, e->size);
}

int store_bucket_each(struct store_bucket *b, int (*fn)(void *ud, const char *name, int64_t size), void *ud)
{
	struct each_ctx x = { .fn = fn, .ud = ud };
	struct store_s3 *s = take(b);

	if (!s)
		return -ENOMEM;
	return put(b, s, store_s3_list(s, "blobs/", each_object, &x));
}

/* "2026-12-06T20:10:00.000Z" into unix seconds; 0 when unreadable (taken as old). */
static time_t iso_time(const char *when)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!when || !strptime(when, "%Y-%m-%dT%H:%M:%S", &tm))
		return 0;
	return timegm(&tm);
}

struct stale {
	time_t now;
	int64_t age_s;
	char **v;                   /* key, upload id, key, upload id... */
	size_t n;
};

static int each_upload(void *ud, const struct store_s3_entry *e)
{
	struct stale *x = ud;

	if (x->now - iso_time(e->when) < x->age_s)
		return 0; /* a writer's that may be running */
	x->v = xreallocarray(x->v, x->n + 2, sizeof(*x->v));
	x->v[x->n++] = xstrdup(e->key);
	x->v[x->n++] = xstrdup(e->upload_id);
	return 0;
}

int store_bucket_sweep(struct store_bucket *b, int64_t age_s, int64_t *aborted)
{
	static const char *const under[] = { "blobs/", "trash/" }; /* (trash/: a copy in parts cut short) */
	struct stale x = { time(NULL), age_s, NULL, 0 };
	struct store_s3 *s = take(b);
	int r = 0;

	*aborted = 0;
	if (!s)
		return -ENOMEM;
	/* listed whole first: the aborts are requests of their own, after the walk */
	for (size_t i = 0; !r && i < sizeof(under) / sizeof(*under); i++)
		r = store_s3_uploads(s, under[i], each_upload, &x);
	for (size_t i = 0; !r && i < x.n; i += 2) {
		r = store_s3_upload_drop(s, x.v[i], x.v[i + 1]);
		if (r == HM_ERR_NOT_FOUND)
			r = 0; /* (finished or dropped meanwhile) */
		else if (!r)
			(*aborted)++;
	}
	for (size_t i = 0; i < x.n; i++)
		free(x.v[i]);
	free(x.v);
	return put(b, s, r);
}

int store_bucket_mtime(struct store_bucket *b, const char *sha256, int64_t *mtime)
{
	struct store_s3_stat st;
	int r = head_content(b, sha256, &st);

	if (!r)
		*mtime = st.mtime;
	return r;
}

/* ---- the trash: what gc takes out of blobs/, kept until no mirror may count on it --------------- */

/* trash/<h0h1>/<sha256>.<16 hex>: a key of its own for each move, never written again. */
static char *trash_key(const char *sha256)
{
	unsigned char rnd[8];
	char nonce[17];

	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return NULL;
	hex_encode(rnd, sizeof(rnd), nonce);
	return xasprintf("trash/%.2s/%s.%s", sha256, sha256, nonce);
}

/* The content a trash key holds ("trash/ab/<sha256>.<nonce>"), into sha (65); false: not such a key. */
static bool trash_sha(const char *key, char *sha)
{
	const char *name = strrchr(key, '/');
	size_t n = name ? strlen(name + 1) : 0;

	if (strncmp(key, "trash/", 6) || n != 64 + 1 + 16 || name[65] != '.')
		return false;
	memcpy(sha, name + 1, 64);
	sha[64] = '\0';
	return hex_is_lower(sha, 64) && !strncmp(key + 6, sha, 2) && hex_is_lower(name + 66, 16);
}

/* The largest object S3 copies in one request (CopyObject); a test may set it lower
 * ($HUBMIRROR_TEST_COPY_MAX, bytes: tests/README.md, "Fault hooks"; read in this one place, t0884). */
static int64_t copy_max(void)
{
	const char *v = getenv("HUBMIRROR_TEST_COPY_MAX");

	return v && atoll(v) > 0 ? atoll(v) : (int64_t)5 << 30;
}

/* A copy through this process: the bytes read, hashed and streamed into an upload to the new key. */
struct through {
	struct store_s3_upload *u;
	EVP_MD_CTX *ctx;
	int64_t n;
};

static int through_sink(void *ud, const void *data, size_t n)
{
	struct through *t = ud;

	t->n += (int64_t)n;
	if (!EVP_DigestUpdate(t->ctx, data, n))
		return -EIO;
	return store_s3_upload_write(t->u, data, n);
}

/* Content sha256's object src copied to dst: on the gateway up to copy_max(); a bigger one through this
 * process (read by s, written by a client of its own, completed only once the bytes hashed to sha256
 * and are size long; aborted else). */
static int copy_object(struct store_bucket *b, struct store_s3 *s, const char *src, const char *dst,
		       const char *sha256, int64_t size)
{
	struct through t = { NULL, EVP_MD_CTX_new(), 0 };
	int64_t start = call_start_us;
	struct store_s3 *w;
	char got[65];
	int r;

	if (size <= copy_max()) {
		EVP_MD_CTX_free(t.ctx);
		return store_s3_copy(s, src, dst);
	}
	w = take(b);
	r = !w || !t.ctx || !EVP_DigestInit_ex(t.ctx, EVP_sha256(), NULL) ? -ENOMEM : store_s3_upload_begin(w, dst, &t.u);
	if (!r)
		r = store_s3_get(s, src, 0, -1, through_sink, &t);
	n_in += t.n;
	if (!r)
		r = finish_hex(t.ctx, got);
	if (!r && t.n != size)
		r = HM_ERR_SIZE_MISMATCH;
	else if (!r && strcmp(got, sha256))
		r = HM_ERR_HASH_MISMATCH;
	if (!r && !(r = store_s3_upload_commit(&t.u)))
		n_out += t.n;
	store_s3_upload_abort(&t.u);
	if (w)
		put(b, w, r);
	call_start_us = start; /* (the caller's call is counted whole) */
	EVP_MD_CTX_free(t.ctx);
	return r;
}

int store_bucket_trash(struct store_bucket *b, const char *sha256)
{
	char *key = store_bucket_key(sha256), *dst = key ? trash_key(sha256) : NULL;
	struct store_s3 *s = dst ? take(b) : NULL;
	struct store_s3_stat st;
	int r;

	if (!s) {
		free(key);
		free(dst);
		return key ? -ENOMEM : -EINVAL;
	}
	/* copied first, deleted after: whatever the delete takes, the trash holds the same bytes */
	r = store_s3_head(s, key, &st);
	if (!r)
		r = copy_object(b, s, key, dst, sha256, st.size);
	if (!r)
		r = store_s3_delete(s, key);
	put(b, s, r);
	free(key);
	free(dst);
	return r;
}

/* A content's trash keys, listed (each a key and its size). */
struct trash_list {
	char **key;
	int64_t *size, *when;
	size_t n;
};

static int each_trash_key(void *ud, const struct store_s3_entry *e)
{
	struct trash_list *l = ud;
	char sha[65];

	if (!trash_sha(e->key, sha))
		return 0; /* (not one gc made: left alone) */
	l->key = xreallocarray(l->key, l->n + 1, sizeof(*l->key));
	l->size = xreallocarray(l->size, l->n + 1, sizeof(*l->size));
	l->when = xreallocarray(l->when, l->n + 1, sizeof(*l->when));
	l->key[l->n] = xstrdup(e->key);
	l->size[l->n] = e->size;
	l->when[l->n++] = iso_time(e->when);
	return 0;
}

static void trash_list_free(struct trash_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->key[i]);
	free(l->key);
	free(l->size);
	free(l->when);
}

/* Copy trash key src back under the content's key, and find it there of its size. */
static int trash_copy_back(struct store_bucket *b, struct store_s3 *s, const char *src, const char *sha256,
			   int64_t size)
{
	char *key = store_bucket_key(sha256);
	struct store_s3_stat st;
	int r = copy_object(b, s, src, key, sha256, size);

	if (!r)
		r = store_s3_head(s, key, &st);
	if (!r && st.size != size)
		r = HM_ERR_SIZE_MISMATCH;
	free(key);
	return r;
}

int store_bucket_restore(struct store_bucket *b, const char *sha256, int64_t size)
{
	char *key = store_bucket_key(sha256), *prefix = key ? xasprintf("trash/%.2s/%s.", sha256, sha256) : NULL;
	struct store_s3 *s = key ? take(b) : NULL;
	struct trash_list l = { NULL, NULL, NULL, 0 };
	int r;

	if (!s) {
		free(key);
		free(prefix);
		return key ? -ENOMEM : -EINVAL;
	}
	r = store_s3_list(s, prefix, each_trash_key, &l);
	if (!r)
		r = HM_ERR_NOT_FOUND;
	/* any of its keys: each holds the content's bytes (one gone meanwhile, expired: the next) */
	for (size_t i = 0; r == HM_ERR_NOT_FOUND && i < l.n; i++) {
		if (size >= 0 && l.size[i] != size)
			continue;
		r = trash_copy_back(b, s, l.key[i], sha256, l.size[i]);
	}
	trash_list_free(&l);
	r = put(b, s, r);
	free(key);
	free(prefix);
	return r;
}

/* One trash key, swept: put back when wanted (and gone from blobs/), deleted when wanted or old;
 * removed counts the unwanted deleted. */
static int sweep_one(struct store_bucket *b, struct store_s3 *s, const char *tkey, int64_t size, int w,
		     bool old, struct store_bucket_trash_stats *st)
{
	char sha[65], *key;
	struct store_s3_stat hs;
	int r = 0;

	if (!trash_sha(tkey, sha) || (!w && !old))
		return 0;
	key = store_bucket_key(sha);
	if (w) {
		r = store_s3_head(s, key, &hs);
		if (r == HM_ERR_NOT_FOUND && !(r = trash_copy_back(b, s, tkey, sha, size)))
			st->restored++;
	}
	if (!r && (r = store_s3_delete(s, tkey)) == HM_ERR_NOT_FOUND)
		r = 0; /* (another mirror's gc swept it meanwhile) */
	else if (!r && !w)
		st->removed++;
	free(key);
	return r;
}

int store_bucket_trash_sweep(struct store_bucket *b, int64_t cutoff, int (*wanted)(void *ud, const char *sha256),
			     void *ud, struct store_bucket_trash_stats *st)
{
	struct trash_list l = { NULL, NULL, NULL, 0 };
	struct store_s3 *s = take(b);
	int r;

	memset(st, 0, sizeof(*st));
	if (!s)
		return -ENOMEM;
	r = store_s3_list(s, "trash/", each_trash_key, &l);
	for (size_t i = 0; !r && i < l.n; i++) {
		char sha[65];
		int w = trash_sha(l.key[i], sha) ? wanted(ud, sha) : 0;
		if (w < 0) {
			r = w;
			break;
		}
		if (!w && l.when[i] >= cutoff)
			st->young++;
		r = sweep_one(b, s, l.key[i], l.size[i], w, l.when[i] < cutoff, st);
		if (r == HM_ERR_HASH_MISMATCH || r == HM_ERR_SIZE_MISMATCH)
			r = 0; /* (a trash object that is not its content: kept, not put back; the others go on) */
	}
	trash_list_free(&l);
	return put(b, s, r);
}

/* ---- several mirrors on one bucket: their live sets ------------------------------------------- */

#define LIVE_HEAD "hubmirror-live 1\n"
#define LIVE_BUF (256 << 10)

struct store_bucket_live {
	struct store_bucket *b;
	struct store_s3 *s;
	struct store_s3_upload *u;
	char *buf;
	size_t n;
	int r;                      /* the first failure */
};

/* The first n bytes of id are a mirror's id: 8 to 64 lowercase hex. */
static bool id_ok(const char *id, size_t n)
{
	char copy[65];

	if (n < 8 || n > 64)
		return false;
	memcpy(copy, id, n);
	copy[n] = '\0';
	return hex_is_lower(copy, n);
}

int store_bucket_live_begin(struct store_bucket *b, const char *id, struct store_bucket_live **out)
{
	struct store_bucket_live *l;
	char *key;
	int r;

	if (!id_ok(id, strlen(id)))
		return -EINVAL;
	l = xcalloc(1, sizeof(*l));
	l->b = b;
	if (!(l->s = take(b))) {
		free(l);
		return -ENOMEM;
	}
	key = xasprintf("mirrors/%s/live", id);
	r = store_s3_upload_begin(l->s, key, &l->u);
	free(key);
	if (r) {
		put(b, l->s, r);
		free(l);
		return r;
	}
	l->buf = xmalloc(LIVE_BUF);
	memcpy(l->buf, LIVE_HEAD, l->n = strlen(LIVE_HEAD));
	*out = l;
	return 0;
}

int store_bucket_live_add(struct store_bucket_live *l, const char *sha256)
{
	if (l->r)
		return l->r;
	if (!hex_is_lower(sha256, 64))
		return -EINVAL;
	if (l->n + 65 > LIVE_BUF) {
		l->r = store_s3_upload_write(l->u, l->buf, l->n);
		n_out += (int64_t)l->n;
		l->n = 0;
	}
	memcpy(l->buf + l->n, sha256, 64);
	l->buf[l->n + 64] = '\n';
	l->n += 65;
	return l->r;
}

static void live_end(struct store_bucket_live **lp, int r)
{
	struct store_bucket_live *l = *lp;

	put(l->b, l->s, r);
	free(l->buf);
	free(l);
	*lp = NULL;
}

int store_bucket_live_commit(struct store_bucket_live **lp)
{
	struct store_bucket_live *l = *lp;
	int r = l->r;

	if (!r && l->n) {
		r = store_s3_upload_write(l->u, l->buf, l->n);
		n_out += (int64_t)l->n;
	}
	if (r)
		store_s3_upload_abort(&l->u);
	else
		r = store_s3_upload_commit(&l->u); /* (a live set appears whole or not at all) */
	live_end(lp, r);
	return r;
}

void store_bucket_live_abort(struct store_bucket_live **lp)
{
	if (!*lp)
		return;
	store_s3_upload_abort(&(*lp)->u);
	live_end(lp, 0);
}

/* The live sets' keys, listed: mirrors/<id>/live with the time each was written. */
struct live_keys {
	char **id;
	int64_t *when;
	size_t n;
};

static int each_live_key(void *ud, const struct store_s3_entry *e)
{
	struct live_keys *k = ud;
	const char *id = e->key + strlen("mirrors/"), *slash = strchr(id, '/');

	if (!slash || strcmp(slash, "/live") || !id_ok(id, (size_t)(slash - id)))
		return 0; /* (not a live set: left alone) */
	k->id = xreallocarray(k->id, k->n + 1, sizeof(*k->id));
	k->when = xreallocarray(k->when, k->n + 1, sizeof(*k->when));
	k->id[k->n] = xstrndup(id, (size_t)(slash - id));
	k->when[k->n++] = iso_time(e->when);
	return 0;
}

/* One live set's bytes as they stream: split into lines (a line may straddle two chunks). */
struct live_read {
	int (*fn)(void *ud, const char *id, int64_t written, const char *sha256);
	void *ud;
	const char *id;
	int64_t when;
	char line[80];
	size_t n;
	bool head;
};

static int live_line(struct live_read *x)
{
	x->line[x->n] = '\0';
	if (!x->head) {
		x->head = true;
		return strcmp(x->line, "hubmirror-live 1") ? HM_ERR_UPSTREAM : 0;
	}
	if (x->n != 64 || !hex_is_lower(x->line, 64))
		return HM_ERR_UPSTREAM;
	return x->fn(x->ud, x->id, x->when, x->line);
}

static int live_sink(void *ud, const void *data, size_t n)
{
	struct live_read *x = ud;
	const char *p = data;
	int r = 0;

	n_in += (int64_t)n;
	for (size_t i = 0; !r && i < n; i++) {
		if (p[i] == '\n') {
			r = live_line(x);
			x->n = 0;
		} else if (x->n + 1 >= sizeof(x->line)) {
			r = HM_ERR_UPSTREAM;
		} else {
			x->line[x->n++] = p[i];
		}
	}
	return r;
}

int store_bucket_live_each(struct store_bucket *b, int (*fn)(void *ud, const char *id, int64_t written,
								  const char *sha256), void *ud)
{
	struct live_keys k = { NULL, NULL, 0 };
	struct store_s3 *s = take(b);
	char bad[128] = "";
	int r;

	if (!s)
		return -ENOMEM;
	r = store_s3_list(s, "mirrors/", each_live_key, &k);
	for (size_t i = 0; !r && i < k.n; i++) {
		struct live_read x = { .fn = fn, .ud = ud, .id = k.id[i], .when = k.when[i] };
		char *key = xasprintf("mirrors/%s/live", k.id[i]);
		r = fn(ud, k.id[i], k.when[i], NULL);
		if (!r)
			r = store_s3_get(s, key, 0, -1, live_sink, &x);
		if (!r && (x.n || !x.head))
			r = HM_ERR_UPSTREAM; /* (cut short, or empty: not a set this wrote) */
		if (r == HM_ERR_UPSTREAM)
			snprintf(bad, sizeof(bad), "%s is not a live set", key);
		free(key);
	}
	for (size_t i = 0; i < k.n; i++)
		free(k.id[i]);
	free(k.id);
	free(k.when);
	r = put(b, s, r);
	if (*bad)
		snprintf(last_err, sizeof(last_err), "%s", bad);
	return r;
}

/* ---- a put as the bytes come ---------------------------------------------------------------- */

#define QUEUE_MAX ((size_t)16 << 20) /* bytes handed over and not yet in the upload's parts */

struct chunk {
	struct chunk *next;
	size_t n;
	char data[];
};

struct store_bucket_put {
	struct store_bucket *b;
	struct store_s3 *s;
	struct store_s3_upload *u;
	char sha256[65];
	int64_t size, total;        /* expected; handed over so far */
	int64_t start_us;
	EVP_MD_CTX *ctx;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;          /* a chunk queued, room made, or the end asked */
	struct chunk *head, *tail;
	size_t queued;
	bool eof, cancel;
	int err;                    /* the thread's first failure */
};

/* The put's thread: the queue into the upload, pumping its parts while the queue is empty. */
static void *put_thread(void *ud)
{
	struct store_bucket_put *p = ud;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct chunk *c = p->head;
		if (c && !p->err && !p->cancel) {
			int r;
			p->head = c->next;
			if (!p->head)
				p->tail = NULL;
			pthread_mutex_unlock(&p->mu);
			r = store_s3_upload_write(p->u, c->data, c->n);
			test_kill_point(p->u);
			pthread_mutex_lock(&p->mu);
			p->queued -= c->n;
			free(c);
			if (r && !p->err)
				p->err = r;
			pthread_cond_broadcast(&p->cv);
			continue;
		}
		if (p->eof || p->cancel || p->err)
			break;
		if (store_s3_upload_busy(p->u)) {
			int r;
			pthread_mutex_unlock(&p->mu);
			r = store_s3_upload_pump(p->u, 20);
			pthread_mutex_lock(&p->mu);
			if (r && !p->err) {
				p->err = r;
				pthread_cond_broadcast(&p->cv);
			}
		} else {
			pthread_cond_wait(&p->cv, &p->mu);
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int store_bucket_put_begin(struct store_bucket *b, const char *sha256, int64_t size, struct store_bucket_put **out)
{
	char *key = store_bucket_key(sha256);
	struct store_bucket_put *p;
	int r;

	if (!key || size < 0) {
		free(key);
		return -EINVAL;
	}
	p = xcalloc(1, sizeof(*p));
	p->b = b;
	memcpy(p->sha256, sha256, 65);
	p->size = size;
	p->start_us = now_us();
	p->s = take(b);
	p->ctx = EVP_MD_CTX_new();
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	r = !p->s || !p->ctx || !EVP_DigestInit_ex(p->ctx, EVP_sha256(), NULL) ? -ENOMEM
										 : store_s3_upload_begin(p->s, key, &p->u);
	if (!r)
		r = -pthread_create(&p->th, NULL, put_thread, p);
	free(key);
	if (r) {
		store_s3_upload_abort(&p->u);
		if (p->s)
			put(p->b, p->s, r);
		EVP_MD_CTX_free(p->ctx);
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		free(p);
		return r;
	}
	*out = p;
	return 0;
}

int store_bucket_put_write(struct store_bucket_put *p, const void *data, size_t n)
{
	struct chunk *c;
	int r;

	if ((int64_t)n > p->size - p->total)
		return HM_ERR_SIZE_MISMATCH;
	if (!EVP_DigestUpdate(p->ctx, data, n))
		return -EIO;
	p->total += (int64_t)n;
	c = xmalloc(sizeof(*c) + n);
	c->next = NULL;
	c->n = n;
	memcpy(c->data, data, n);
	pthread_mutex_lock(&p->mu);
	while (p->queued >= QUEUE_MAX && !p->err)
		pthread_cond_wait(&p->cv, &p->mu);
	r = p->err;
	if (!r) {
		if (p->tail)
			p->tail->next = c;
		else
			p->head = c;
		p->tail = c;
		p->queued += n;
		c = NULL;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	free(c);
	return r;
}

/* Stop the thread (cancel: drop what is queued) and free the queue; the thread's failure. */
static int put_stop(struct store_bucket_put *p, bool cancel)
{
	pthread_mutex_lock(&p->mu);
	p->eof = true;
	p->cancel = cancel;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->th, NULL);
	while (p->head) {
		struct chunk *c = p->head;
		p->head = c->next;
		free(c);
	}
	return p->err;
}

static void put_free(struct store_bucket_put *p, int r)
{
	store_s3_upload_abort(&p->u);
	call_start_us = p->start_us; /* (the counters take the put's whole time) */
	put(p->b, p->s, r);
	EVP_MD_CTX_free(p->ctx);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}

int store_bucket_put_commit(struct store_bucket_put **pp)
{
	struct store_bucket_put *p = *pp;
	char got[65];
	int r;

	*pp = NULL;
	r = put_stop(p, false);
	if (!r)
		r = finish_hex(p->ctx, got);
	if (!r && p->total != p->size)
		r = HM_ERR_SIZE_MISMATCH;
	else if (!r && strcmp(got, p->sha256))
		r = HM_ERR_HASH_MISMATCH;
	/* completed only now, the bytes sent being the content's; any other end drops the parts */
	if (!r)
		r = store_s3_upload_commit(&p->u);
	if (!r)
		n_out += p->total;
	put_free(p, r);
	return r;
}

void store_bucket_put_abort(struct store_bucket_put **pp)
{
	struct store_bucket_put *p = pp ? *pp : NULL;

	if (!p)
		return;
	*pp = NULL;
	put_stop(p, true);
	put_free(p, 0);
}
