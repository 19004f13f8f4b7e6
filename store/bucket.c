/*
 * bucket.c - the store's bucket backend: contents under their ids in an S3 bucket, written verified;
 * the process's bucket, its pool of S3 clients and its counters. gc's trash is bucket-trash.c, the
 * listing of contents and the mirrors' live sets bucket-live.c (bucket-int.h between them).
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

#include "base/err.h"
#include "base/hex.h"
#include "base/xmalloc.h"
#include "store/bucket.h"
#include "bucket-int.h"

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

/* For the calls of the other files of the backend (bucket-int.h): a client of the pool and back, counted
 * as these are. */
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

void store__bucket_count(int64_t bytes_in, int64_t bytes_out)
{
	n_in += bytes_in;
	n_out += bytes_out;
}

int64_t store__bucket_call_start(void)
{
	return call_start_us;
}

void store__bucket_call_resume(int64_t start_us)
{
	call_start_us = start_us;
}

void store__bucket_say(const char *msg)
{
	snprintf(last_err, sizeof(last_err), "%s", msg);
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

int store__bucket_hex(EVP_MD_CTX *ctx, char out[65])
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
		r = store__bucket_hex(ctx, got);
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
		r = store__bucket_hex(h.ctx, got);
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

time_t store__bucket_time(const char *when)
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

	if (x->now - store__bucket_time(e->when) < x->age_s)
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
		r = store__bucket_hex(p->ctx, got);
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
