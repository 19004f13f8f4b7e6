/*
 * bucket-live.c - what the bucket holds, listed (bucket.h): every content under blobs/, and the mirrors
 * that share the bucket, each one's live set (the contents its catalog names) written whole and read
 * back by gc (docs/operations.md, section 8).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/xmalloc.h"
#include "store/bucket.h"
#include "bucket-int.h"

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
	struct store_s3 *s = store__bucket_take(b);

	if (!s)
		return -ENOMEM;
	return store__bucket_give(b, s, store_s3_list(s, "blobs/", each_object, &x), 0, 0);
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
	if (!(l->s = store__bucket_take(b))) {
		free(l);
		return -ENOMEM;
	}
	key = xasprintf("mirrors/%s/live", id);
	r = store_s3_upload_begin(l->s, key, &l->u);
	free(key);
	if (r) {
		store__bucket_give(b, l->s, r, 0, 0);
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
		store__bucket_count(0, (int64_t)l->n);
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

	store__bucket_give(l->b, l->s, r, 0, 0);
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
		store__bucket_count(0, (int64_t)l->n);
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
	k->when[k->n++] = store__bucket_time(e->when);
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

	store__bucket_count((int64_t)n, 0);
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
	struct store_s3 *s = store__bucket_take(b);
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
	r = store__bucket_give(b, s, r, 0, 0);
	if (*bad)
		store__bucket_say(bad);
	return r;
}
