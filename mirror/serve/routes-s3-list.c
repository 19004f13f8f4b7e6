/*
 * routes-s3-list.c - ListObjects v1 and v2 (docs/protocols/s3.md), built on a worker.
 *
 * A bucket's keys are ORG/NAME/REV/PATH over every visible repo of its hub and type and every ref of
 * each (a commit id, never listed, is listed under when a prefix names it). Each repo's revision is a
 * root, "ORG/NAME/REV/"; no root is a prefix of another (REV is one segment), so walking the roots in
 * byte order and each root's files in path order (the catalog's order, bytes too) gives the keys in
 * S3's order, and a position in the listing is a key: StartAfter, a v1 marker and a v2 continuation
 * token (the last key or common prefix, in hex) all resume after one. With a delimiter, a common prefix
 * stands for every key under it: the walk skips past them at once.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/s3.h"
#include "routes-int.h"

#define S3_MAX_KEYS 1000

struct item {
	char *key;
	bool prefix;             /* a common prefix, not a key */
	int64_t size, mtime;
	char sha256[65];
};

struct root {
	char *key;               /* ORG/NAME/REVSEG/ */
	char *name, *rev;
};

struct list_job {
	struct mirror__job j;
	const char *hub, *type;  /* static */
	char *bucket, *prefix, *delim, *after, *hidden, *request_id;
	char *start_after, *token_in; /* as the client sent them, echoed */
	long max;
	bool v2, url, fetch_owner;
	/* results */
	struct item *items;
	size_t n;
	bool truncated;
	struct root *roots;
	size_t nroots;
	char *last_prefix;       /* the last common prefix given, so it is given once */
};

static bool starts_with(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/* Is the listing full? One item more than asked says it is truncated. */
static bool full(struct list_job *lj)
{
	return lj->n > (size_t)lj->max;
}

static void add_item(struct list_job *lj, char *key, bool prefix, const struct catalog_entry *e, int64_t mtime)
{
	struct item *it;

	lj->items = xreallocarray(lj->items, lj->n + 1, sizeof(*lj->items));
	it = &lj->items[lj->n++];
	memset(it, 0, sizeof(*it));
	it->key = key;
	it->prefix = prefix;
	if (e) {
		it->size = e->size;
		memcpy(it->sha256, e->sha256, sizeof(it->sha256));
	}
	it->mtime = mtime;
	if (prefix) {
		free(lj->last_prefix);
		lj->last_prefix = xstrdup(key);
	}
}

/* A common prefix cp (consumed), unless it was just given or lies at or before the position. */
static void add_prefix(struct list_job *lj, char *cp)
{
	if ((lj->last_prefix && !strcmp(lj->last_prefix, cp)) || (lj->after && strcmp(cp, lj->after) <= 0)) {
		free(cp);
		return;
	}
	add_item(lj, cp, true, NULL, 0);
}

/* ---- the roots ---- */

struct repo_ref {
	int64_t id;
	char *name;
};

struct repos_ctx {
	struct repo_ref *v;
	size_t n;
	const char *prefix;
};

static int repo_cb(void *ud, const struct catalog_repo *r)
{
	struct repos_ctx *c = ud;
	char *k = xasprintf("%s/", r->name);
	size_t lk = strlen(k), lp = strlen(c->prefix);

	/* only a repo the prefix can reach: ORG/NAME/ starts with it, or it starts with ORG/NAME/ */
	if (!strncmp(k, c->prefix, lp < lk ? lp : lk)) {
		c->v = xreallocarray(c->v, c->n + 1, sizeof(*c->v));
		c->v[c->n].id = r->id;
		c->v[c->n++].name = xstrdup(r->name);
	}
	free(k);
	return 0;
}

struct refs_ctx {
	struct list_job *lj;
	const char *name;
};

static void add_root(struct list_job *lj, const char *name, const char *rev)
{
	char *seg = s3_rev_segment(rev), *key = xasprintf("%s/%s/", name, seg);
	size_t lk = strlen(key), lp = strlen(lj->prefix);

	free(seg);
	for (size_t i = 0; i < lj->nroots; i++)
		if (!strcmp(lj->roots[i].key, key)) {
			free(key);
			return;
		}
	if (strncmp(key, lj->prefix, lp < lk ? lp : lk)) {
		free(key);
		return;
	}
	lj->roots = xreallocarray(lj->roots, lj->nroots + 1, sizeof(*lj->roots));
	lj->roots[lj->nroots++] = (struct root){ key, xstrdup(name), xstrdup(rev) };
}

static int ref_cb(void *ud, const char *name, const char *kind, const char *commit)
{
	struct refs_ctx *c = ud;

	(void)kind;
	(void)commit;
	add_root(c->lj, c->name, name);
	return 0;
}

static int root_cmp(const void *a, const void *b)
{
	return strcmp(((const struct root *)a)->key, ((const struct root *)b)->key);
}

/* Every root the prefix can reach, sorted. The prefix's own ORG picks the repos to look at when it has
 * one; a revision it names that no ref has (a commit id) is a root too when it resolves. */
static int collect_roots(struct list_job *lj, struct catalog *cat)
{
	struct repos_ctx rc = { NULL, 0, lj->prefix };
	const char *s1 = strchr(lj->prefix, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL,
		   *s3 = s2 ? strchr(s2 + 1, '/') : NULL;
	char *author = s1 ? xstrndup(lj->prefix, (size_t)(s1 - lj->prefix)) : NULL;
	int r = catalog_repos_each(cat, lj->hub, lj->type, NULL, author, NULL, 0, lj->hidden, repo_cb, &rc);

	for (size_t i = 0; !r && i < rc.n; i++) {
		struct refs_ctx fc = { lj, rc.v[i].name };
		r = catalog_refs_each(cat, rc.v[i].id, ref_cb, &fc);
		if (!r && s3) {
			/* ORG/NAME/REV/...: REV may be a commit id */
			char *full = xstrndup(lj->prefix, (size_t)(s3 - lj->prefix + 1));
			struct s3_key k;
			if (!s3_key_parse(full, &k) && !strcmp(k.name, rc.v[i].name)) {
				struct catalog_repo repo;
				struct catalog_snapshot snap;
				bool found = false;
				if (!catalog_resolve_lite(cat, lj->hub, lj->type, k.name, k.rev, &repo, &snap, &found))
					add_root(lj, k.name, k.rev);
				if (found)
					catalog_repo_release(&repo);
				s3_key_release(&k);
			}
			free(full);
		}
	}
	for (size_t i = 0; i < rc.n; i++)
		free(rc.v[i].name);
	free(rc.v);
	free(author);
	if (lj->nroots)
		qsort(lj->roots, lj->nroots, sizeof(*lj->roots), root_cmp);
	return r;
}

/* ---- the walk ---- */

struct walk_ctx {
	struct list_job *lj;
	const struct root *root;
	const char *pp;          /* the prefix within the root */
	int64_t mtime;
	char *resume;            /* set when a common prefix was given: walk again after it */
};

static int walk_cb(void *ud, const struct catalog_entry *e)
{
	struct walk_ctx *w = ud;
	struct list_job *lj = w->lj;
	const char *rest = e->path + strlen(w->pp), *d = lj->delim ? strstr(rest, lj->delim) : NULL;

	if (full(lj))
		return 1;
	if (d) {
		size_t n = (size_t)(d - e->path) + strlen(lj->delim);
		add_prefix(lj, xasprintf("%s%.*s", w->root->key, (int)n, e->path));
		/* every path under it sorts before this one with 0xff after it (paths are UTF-8) */
		w->resume = xasprintf("%.*s\xff", (int)n, e->path);
		return 2;
	}
	add_item(lj, xasprintf("%s%s", w->root->key, e->path), false, e, w->mtime);
	return 0;
}

/* The keys of one root from the position on. */
static int walk_root(struct list_job *lj, struct catalog *cat, const struct root *rt)
{
	struct catalog_repo repo;
	struct catalog_snapshot snap;
	struct walk_ctx w = { lj, rt, "", 0, NULL };
	size_t lr = strlen(rt->key);
	char *after = NULL;
	bool found = false;
	int r = catalog_resolve_lite(cat, lj->hub, lj->type, rt->name, rt->rev, &repo, &snap, &found);

	if (found)
		catalog_repo_release(&repo);
	if (r)
		return r == HM_ERR_NOT_FOUND ? 0 : r; /* a ref that moved away meanwhile */
	w.mtime = snap.synced_at;
	w.pp = strlen(lj->prefix) > lr ? lj->prefix + lr : "";
	if (lj->after && starts_with(lj->after, rt->key)) {
		/* resuming inside this root; after a common prefix, past all of it */
		bool cp = lj->delim && *lj->delim && strlen(lj->after) >= strlen(lj->delim) &&
			  !strcmp(lj->after + strlen(lj->after) - strlen(lj->delim), lj->delim);
		after = xasprintf("%s%s", lj->after + lr, cp ? "\xff" : "");
	}
	for (;;) {
		r = catalog_snapshot_walk(cat, snap.id, w.pp, after, 0, walk_cb, &w);
		free(after);
		after = w.resume;
		w.resume = NULL;
		if (r != 2 || full(lj))
			break;
	}
	free(after);
	free(w.resume);
	return r == 1 || r == 2 ? 0 : r;
}

static int list_walk(struct list_job *lj, struct catalog *cat)
{
	size_t lp = strlen(lj->prefix);
	int r = 0;

	for (size_t i = 0; !r && i < lj->nroots && !full(lj); i++) {
		const struct root *rt = &lj->roots[i];
		size_t lr = strlen(rt->key);
		if (lj->after && strcmp(rt->key, lj->after) < 0 && !starts_with(lj->after, rt->key))
			continue; /* every key of it is before the position */
		if (lj->after && lj->delim && starts_with(rt->key, lj->after) && strcmp(rt->key, lj->after) &&
		    strlen(lj->after) >= strlen(lj->delim) &&
		    !strcmp(lj->after + strlen(lj->after) - strlen(lj->delim), lj->delim))
			continue; /* under the common prefix the listing resumes after */
		if (lj->delim && *lj->delim && lp < lr) {
			/* above the revision: the root is under a common prefix of its own */
			const char *d = strstr(rt->key + lp, lj->delim);
			if (d) {
				add_prefix(lj, xstrndup(rt->key, (size_t)(d - rt->key) + strlen(lj->delim)));
				continue;
			}
		}
		r = walk_root(lj, cat, rt);
	}
	if (full(lj)) {
		lj->truncated = true;
		lj->n--;
		free(lj->items[lj->n].key);
	}
	return r;
}

/* ---- the answer ---- */

/* A key or prefix, URL-encoded when the client asked (encoding-type=url: all but unreserved and '/'). */
static void add_name(struct buf *b, const char *s, bool url)
{
	struct buf e;

	if (!url) {
		s3_xml_add(b, s);
		return;
	}
	buf_init(&e);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    strchr("-_.~/", *p))
			buf_addch(&e, (char)*p);
		else
			buf_addf(&e, "%%%02X", *p);
	}
	s3_xml_add(b, e.data);
	buf_release(&e);
}

static void add_elem(struct buf *b, const char *tag, const char *v, bool url)
{
	buf_addf(b, "<%s>", tag);
	add_name(b, v ? v : "", url);
	buf_addf(b, "</%s>", tag);
}

static void list_xml(struct list_job *lj, struct buf *b)
{
	buf_adds(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	add_elem(b, "Name", lj->bucket, false);
	add_elem(b, "Prefix", lj->prefix, lj->url);
	if (lj->v2) {
		if (lj->token_in)
			add_elem(b, "ContinuationToken", lj->token_in, false);
		if (lj->start_after)
			add_elem(b, "StartAfter", lj->start_after, lj->url);
	} else {
		add_elem(b, "Marker", lj->after, lj->url);
	}
	if (lj->v2)
		buf_addf(b, "<KeyCount>%zu</KeyCount>", lj->n);
	buf_addf(b, "<MaxKeys>%ld</MaxKeys>", lj->max);
	if (lj->delim)
		add_elem(b, "Delimiter", lj->delim, lj->url);
	if (lj->url)
		buf_adds(b, "<EncodingType>url</EncodingType>");
	buf_addf(b, "<IsTruncated>%s</IsTruncated>", lj->truncated ? "true" : "false");
	if (lj->truncated && lj->n) {
		const char *last = lj->items[lj->n - 1].key;
		if (lj->v2) {
			char *hex = xmalloc(2 * strlen(last) + 1);
			hex_encode((const unsigned char *)last, strlen(last), hex);
			add_elem(b, "NextContinuationToken", hex, false);
			free(hex);
		} else {
			add_elem(b, "NextMarker", last, lj->url);
		}
	}
	for (size_t i = 0; i < lj->n; i++) {
		const struct item *it = &lj->items[i];
		char iso[25], etag[80];
		if (it->prefix)
			continue;
		s3_iso_date(it->mtime, iso);
		buf_adds(b, "<Contents>");
		add_elem(b, "Key", it->key, lj->url);
		s3_etag(it->sha256, etag);
		buf_addf(b, "<LastModified>%s</LastModified><ETag>", iso);
		s3_xml_add(b, etag);
		buf_addf(b, "</ETag><Size>%" PRId64 "</Size><StorageClass>STANDARD</StorageClass>", it->size);
		if (!lj->v2 || lj->fetch_owner)
			buf_adds(b, "<Owner><ID>hubmirror</ID><DisplayName>hubmirror</DisplayName></Owner>");
		buf_adds(b, "</Contents>");
	}
	for (size_t i = 0; i < lj->n; i++)
		if (lj->items[i].prefix) {
			buf_adds(b, "<CommonPrefixes>");
			add_elem(b, "Prefix", lj->items[i].key, lj->url);
			buf_adds(b, "</CommonPrefixes>");
		}
	buf_adds(b, "</ListBucketResult>\n");
}

static void list_build(struct mirror__job *job, struct catalog *cat)
{
	struct list_job *lj = (struct list_job *)job;
	struct buf b;
	int r = collect_roots(lj, cat);

	if (!r)
		r = list_walk(lj, cat);
	if (r) {
		char *xml = s3_error_xml("InternalError", "catalog error", NULL, lj->request_id);
		job->status = 500;
		job->ctype = "application/xml";
		job->text = xml;
		job->len = strlen(xml);
		return;
	}
	buf_init(&b);
	list_xml(lj, &b);
	job->status = 200;
	job->ctype = "application/xml";
	job->text = buf_detach(&b, &job->len);
}

static void list_release(struct mirror__job *job)
{
	struct list_job *lj = (struct list_job *)job;

	for (size_t i = 0; i < lj->n; i++)
		free(lj->items[i].key);
	free(lj->items);
	for (size_t i = 0; i < lj->nroots; i++) {
		free(lj->roots[i].key);
		free(lj->roots[i].name);
		free(lj->roots[i].rev);
	}
	free(lj->roots);
	free(lj->last_prefix);
	free(lj->bucket);
	free(lj->prefix);
	free(lj->delim);
	free(lj->after);
	free(lj->hidden);
	free(lj->request_id);
	free(lj->start_after);
	free(lj->token_in);
	free(lj);
}

/* The position a v2 continuation token names (hex of a key or common prefix), or NULL. */
static char *token_position(const char *t)
{
	size_t n = strlen(t);
	char *out;

	if (!n || n % 2 || n > 4096)
		return NULL;
	out = xmalloc(n / 2 + 1);
	if (hex_decode(t, (unsigned char *)out, n / 2) || memchr(out, '\0', n / 2)) {
		free(out);
		return NULL;
	}
	out[n / 2] = '\0';
	return out;
}

void mirror__s3_list(struct mirror_routes *rt, struct httpd_req *req, const char *bucket, const char *hub,
		     const char *type, const char *token, const char *request_id)
{
	const char *q = httpd_query(req);
	struct list_job *lj = xcalloc(1, sizeof(*lj));
	char *max = s3_query_get(q, "max-keys"), *enc = s3_query_get(q, "encoding-type"), *end = NULL;
	char *lt = s3_query_get(q, "list-type"), *fo = s3_query_get(q, "fetch-owner");

	lj->j.build = list_build;
	lj->j.release = list_release;
	lj->hub = hub;
	lj->type = type;
	lj->bucket = xstrdup(bucket);
	lj->request_id = xstrdup(request_id);
	lj->v2 = lt && !strcmp(lt, "2");
	lj->url = enc && !strcmp(enc, "url");
	lj->fetch_owner = fo && !strcmp(fo, "true");
	lj->prefix = s3_query_get(q, "prefix");
	if (!lj->prefix)
		lj->prefix = xstrdup("");
	lj->delim = s3_query_get(q, "delimiter");
	if (lj->delim && !*lj->delim) {
		free(lj->delim);
		lj->delim = NULL;
	}
	lj->max = max ? strtol(max, &end, 10) : S3_MAX_KEYS;
	if (max && (!*max || *end || lj->max < 0)) {
		char *xml = s3_error_xml("InvalidArgument", "max-keys must be a number from 0", NULL, request_id);
		httpd_respond(req, 400, "application/xml", xml, strlen(xml));
		free(xml);
		list_release(&lj->j);
		goto out;
	}
	if (lj->max > S3_MAX_KEYS)
		lj->max = S3_MAX_KEYS;
	if (lj->v2) {
		lj->token_in = s3_query_get(q, "continuation-token");
		lj->start_after = s3_query_get(q, "start-after");
		if (lj->token_in && !(lj->after = token_position(lj->token_in))) {
			char *xml = s3_error_xml("InvalidArgument", "The continuation token provided is incorrect",
						 NULL, request_id);
			httpd_respond(req, 400, "application/xml", xml, strlen(xml));
			free(xml);
			list_release(&lj->j);
			goto out;
		}
		if (!lj->after && lj->start_after && *lj->start_after)
			lj->after = xstrdup(lj->start_after);
	} else {
		lj->after = s3_query_get(q, "marker");
		if (lj->after && !*lj->after) {
			free(lj->after);
			lj->after = NULL;
		}
	}
	lj->hidden = mirror__hidden_for(rt, token);
	mirror__defer(rt, req, &lj->j);
out:
	free(max);
	free(enc);
	free(lt);
	free(fo);
}
