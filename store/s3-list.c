/*
 * s3-list.c - the S3 client's listings (objects, unfinished multipart uploads) and the XML its
 * answers come in, read with libxml2 (no network access, no entities expanded, no DTD loaded).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "s3-int.h"

static xmlDocPtr parse(const char *body, size_t n)
{
	if (!body || !n || n > INT32_MAX)
		return NULL;
	return xmlReadMemory(body, (int)n, "s3.xml", NULL, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
}

static bool named(xmlNodePtr e, const char *name)
{
	return e->type == XML_ELEMENT_NODE && !strcmp((const char *)e->name, name);
}

/* The text of e's first child element named name, malloc'd; NULL when there is none. */
static char *child_text(xmlNodePtr e, const char *name)
{
	for (xmlNodePtr c = e ? e->children : NULL; c; c = c->next)
		if (named(c, name)) {
			xmlChar *t = xmlNodeGetContent(c);
			char *out = xstrdup(t ? (const char *)t : "");
			xmlFree(t);
			return out;
		}
	return NULL;
}

char *store__xml_get(const char *body, size_t n, const char *name)
{
	xmlDocPtr doc = parse(body, n);
	char *out = doc ? child_text(xmlDocGetRootElement(doc), name) : NULL;

	xmlFreeDoc(doc);
	return out;
}

char *store__xml_root(const char *body, size_t n)
{
	xmlDocPtr doc = parse(body, n);
	xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
	char *out = root ? xstrdup((const char *)root->name) : NULL;

	xmlFreeDoc(doc);
	return out;
}

/* One page of a listing: what to ask for the next (NULL: the last page), and each entry to fn. */
struct page {
	const char *root;           /* ListBucketResult or ListMultipartUploadsResult */
	const char *item;           /* Contents or Upload */
	const char *strip;          /* the object's prefix, taken off every key (every key has it) */
	int (*fn)(void *ud, const struct store_s3_entry *e);
	void *ud;
	char *next[2];              /* V2's continuation token; or the uploads' key and upload-id markers */
};

static int page_item(struct page *p, xmlNodePtr it)
{
	char *key = child_text(it, "Key"), *size = child_text(it, "Size"), *id = child_text(it, "UploadId");
	char *when = child_text(it, id ? "Initiated" : "LastModified");
	struct store_s3_entry e = { 0 };
	int r = HM_ERR_UPSTREAM;

	if (key && !strncmp(key, p->strip, strlen(p->strip)) && (id || size)) {
		e.key = key + strlen(p->strip);
		e.size = size ? strtoll(size, NULL, 10) : -1;
		e.upload_id = id;
		e.when = when ? when : "";
		r = p->fn(p->ud, &e);
	}
	free(key);
	free(size);
	free(id);
	free(when);
	return r;
}

static int page_read(struct page *p, const char *body, size_t n)
{
	xmlDocPtr doc = parse(body, n);
	xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
	char *truncated;
	int r = 0;

	if (!root || strcmp((const char *)root->name, p->root)) {
		xmlFreeDoc(doc);
		return HM_ERR_UPSTREAM;
	}
	for (xmlNodePtr c = root->children; c && !r; c = c->next)
		if (named(c, p->item))
			r = page_item(p, c);
	truncated = child_text(root, "IsTruncated");
	if (!r && truncated && !strcmp(truncated, "true")) {
		if (!strcmp(p->item, "Contents")) {
			p->next[0] = child_text(root, "NextContinuationToken");
		} else {
			p->next[0] = child_text(root, "NextKeyMarker");
			p->next[1] = child_text(root, "NextUploadIdMarker");
		}
		if (!p->next[0] || !*p->next[0])
			r = HM_ERR_UPSTREAM; /* more pages and no way to ask for them */
	}
	free(truncated);
	xmlFreeDoc(doc);
	return r;
}

/* The query of a listing's page, canonical (see store__req_new): names in byte order. */
static char *page_query(struct store_s3 *s, const struct page *p, const char *prefix)
{
	char *full = xasprintf("%s%s", s->prefix, prefix ? prefix : "");
	char *pre = store__escape(full, false), *a = p->next[0] ? store__escape(p->next[0], false) : NULL;
	char *b = p->next[1] ? store__escape(p->next[1], false) : NULL, *q;

	char page[48] = "";

	if (!strcmp(p->item, "Contents")) {
		if (s->page)
			snprintf(page, sizeof(page), "&max-keys=%d", s->page);
		q = xasprintf("%s%s%slist-type=2%s&prefix=%s", a ? "continuation-token=" : "", a ? a : "", a ? "&" : "",
			      page, pre);
	} else {
		if (s->page)
			snprintf(page, sizeof(page), "max-uploads=%d&", s->page);
		q = xasprintf("%s%s%s%sprefix=%s%s%s&uploads=", a ? "key-marker=" : "", a ? a : "", a ? "&" : "", page,
			      pre, b ? "&upload-id-marker=" : "", b ? b : "");
	}
	free(full);
	free(pre);
	free(a);
	free(b);
	return q;
}

static int walk(struct store_s3 *s, struct page *p, const char *prefix)
{
	int r;

	do {
		char *q = page_query(s, p, prefix);
		struct store__req *req = store__req_new(s, "GET", NULL, q);
		free(q);
		free(p->next[0]);
		free(p->next[1]);
		p->next[0] = p->next[1] = NULL;
		r = store__run(req);
		if (!r)
			r = page_read(p, req->body.data, req->body.len);
		if (r == HM_ERR_UPSTREAM && !*store_s3_errmsg(s)) {
			free(s->errmsg);
			s->errmsg = xasprintf("%s: a listing's page that cannot be read", req->what);
		}
		store__req_free(&req);
	} while (!r && p->next[0]);
	free(p->next[0]);
	free(p->next[1]);
	return r;
}

int store_s3_list(struct store_s3 *s, const char *prefix, int (*fn)(void *ud, const struct store_s3_entry *e),
		  void *ud)
{
	struct page p = { .root = "ListBucketResult", .item = "Contents", .strip = s->prefix, .fn = fn,
			  .ud = ud };

	return walk(s, &p, prefix);
}

int store_s3_uploads(struct store_s3 *s, const char *prefix, int (*fn)(void *ud, const struct store_s3_entry *e),
		     void *ud)
{
	struct page p = { .root = "ListMultipartUploadsResult", .item = "Upload", .strip = s->prefix, .fn = fn,
			  .ud = ud };

	return walk(s, &p, prefix);
}
