/*
 * bucket-stage.c - the bucket's staging area (bucket.h): a Xet upload's xorbs kept in the bucket under
 * xet-uploads/ until a shard names them, streamed there and read back by ranges, so that a store in a
 * bucket needs no local disk for them (docs/protocols/xet.md, "Uploads"); gc's sweep of what is past
 * its time, and of the unfinished uploads a crash left there.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "store/bucket.h"
#include "store/s3.h"
#include "bucket-int.h"

#define STAGE "xet-uploads/"
#define NAME_MAX_LEN 200

/* The key of name (below the prefix), or NULL when name is not one a caller may give. */
static char *stage_key(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (!n || n > NAME_MAX_LEN || name[0] == '/' || name[n - 1] == '/' || strstr(name, "..") ||
	    strstr(name, "//"))
		return NULL;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      strchr("./-_", *p)))
			return NULL;
	return xasprintf(STAGE "%s", name);
}

int store_bucket_stage_put(struct store_bucket *b, const char *name, const void *data, size_t n)
{
	char *key = stage_key(name);
	struct store_s3 *s = key ? store__bucket_take(b) : NULL;
	struct store_s3_upload *u = NULL;
	int r;

	if (!s) {
		free(key);
		return key ? -ENOMEM : -EINVAL;
	}
	/* (a multipart upload once more than a part's bytes: its parts go while the rest is handed over) */
	r = store_s3_upload_begin(s, key, &u);
	if (!r && (r = store_s3_upload_write(u, data, n)))
		store_s3_upload_abort(&u);
	if (!r)
		r = store_s3_upload_commit(&u);
	free(key);
	return store__bucket_give(b, s, r, 0, r ? 0 : (int64_t)n);
}

struct counted {
	int (*sink)(void *ud, const void *data, size_t n);
	void *ud;
	int64_t n;
};

static int counted_sink(void *ud, const void *data, size_t n)
{
	struct counted *c = ud;

	c->n += (int64_t)n;
	return c->sink(c->ud, data, n);
}

int store_bucket_stage_get(struct store_bucket *b, const char *name, int64_t off, int64_t len,
			   int (*sink)(void *ud, const void *data, size_t n), void *ud)
{
	char *key = stage_key(name);
	struct store_s3 *s = key ? store__bucket_take(b) : NULL;
	struct counted c = { sink, ud, 0 };
	int r;

	if (!s) {
		free(key);
		return key ? -ENOMEM : -EINVAL;
	}
	r = store_s3_get(s, key, off, len, counted_sink, &c);
	free(key);
	return store__bucket_give(b, s, r, c.n, 0);
}

int store_bucket_stage_delete(struct store_bucket *b, const char *name)
{
	char *key = stage_key(name);
	struct store_s3 *s = key ? store__bucket_take(b) : NULL;
	int r;

	if (!s) {
		free(key);
		return key ? -ENOMEM : -EINVAL;
	}
	r = store_s3_delete(s, key);
	free(key);
	return store__bucket_give(b, s, r == HM_ERR_NOT_FOUND ? 0 : r, 0, 0);
}

/* ---- gc's sweep ---- */

/* What the walks found past its time: key, upload id (NULL for an object), key, upload id... */
struct old {
	time_t now;
	int64_t age_s;
	char **v;
	size_t n;
};

/* "2026-12-06T20:10:00.000Z" into unix seconds; 0 when unreadable (taken as old). */
static time_t iso_seconds(const char *when)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!when || !strptime(when, "%Y-%m-%dT%H:%M:%S", &tm))
		return 0;
	return timegm(&tm);
}

static int note_old(void *ud, const struct store_s3_entry *e)
{
	struct old *o = ud;

	if (o->now - iso_seconds(e->when) < o->age_s)
		return 0;
	o->v = xreallocarray(o->v, o->n + 2, sizeof(*o->v));
	o->v[o->n++] = xstrdup(e->key);
	o->v[o->n++] = e->upload_id ? xstrdup(e->upload_id) : NULL;
	return 0;
}

int store_bucket_stage_sweep(struct store_bucket *b, int64_t age_s, bool dry_run, int64_t *removed)
{
	struct old o = { time(NULL), age_s, NULL, 0 };
	struct store_s3 *s = store__bucket_take(b);
	int r;

	*removed = 0;
	if (!s)
		return -ENOMEM;
	/* listed whole first: the deletes are requests of their own, after the walks */
	r = store_s3_list(s, STAGE, note_old, &o);
	if (!r)
		r = store_s3_uploads(s, STAGE, note_old, &o);
	for (size_t i = 0; !r && i < o.n; i += 2) {
		if (!dry_run)
			r = o.v[i + 1] ? store_s3_upload_drop(s, o.v[i], o.v[i + 1]) : store_s3_delete(s, o.v[i]);
		if (r == HM_ERR_NOT_FOUND)
			r = 0; /* (gone meanwhile: a shard's end, another gc) */
		else if (!r)
			(*removed)++;
	}
	for (size_t i = 0; i < o.n; i++)
		free(o.v[i]);
	free(o.v);
	return store__bucket_give(b, s, r, 0, 0);
}
