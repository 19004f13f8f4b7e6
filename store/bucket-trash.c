/*
 * bucket-trash.c - the bucket's trash (bucket.h; docs/operations.md, section 8): what gc takes out of
 * blobs/, kept under trash/ until no mirror may count on it; a content put back from it, and gc's
 * sweep of it. A content over S3's most for one copy on the gateway (5 GiB) moves through this
 * process, hashed as it goes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/xmalloc.h"
#include "store/bucket.h"
#include "bucket-int.h"

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
	int64_t start = store__bucket_call_start();
	struct store_s3 *w;
	char got[65];
	int r;

	if (size <= copy_max()) {
		EVP_MD_CTX_free(t.ctx);
		return store_s3_copy(s, src, dst);
	}
	w = store__bucket_take(b);
	r = !w || !t.ctx || !EVP_DigestInit_ex(t.ctx, EVP_sha256(), NULL) ? -ENOMEM : store_s3_upload_begin(w, dst, &t.u);
	if (!r)
		r = store_s3_get(s, src, 0, -1, through_sink, &t);
	store__bucket_count(t.n, 0);
	if (!r)
		r = store__bucket_hex(t.ctx, got);
	if (!r && t.n != size)
		r = HM_ERR_SIZE_MISMATCH;
	else if (!r && strcmp(got, sha256))
		r = HM_ERR_HASH_MISMATCH;
	if (!r && !(r = store_s3_upload_commit(&t.u)))
		store__bucket_count(0, t.n);
	store_s3_upload_abort(&t.u);
	if (w)
		store__bucket_give(b, w, r, 0, 0);
	store__bucket_call_resume(start); /* (the caller's call is counted whole) */
	EVP_MD_CTX_free(t.ctx);
	return r;
}

int store_bucket_trash(struct store_bucket *b, const char *sha256)
{
	char *key = store_bucket_key(sha256), *dst = key ? trash_key(sha256) : NULL;
	struct store_s3 *s = dst ? store__bucket_take(b) : NULL;
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
	store__bucket_give(b, s, r, 0, 0);
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
	l->when[l->n++] = store__bucket_time(e->when);
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
	struct store_s3 *s = key ? store__bucket_take(b) : NULL;
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
	r = store__bucket_give(b, s, r, 0, 0);
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
	struct store_s3 *s = store__bucket_take(b);
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
	return store__bucket_give(b, s, r, 0, 0);
}
