/*
 * s3-upload.c - an object written as it streams (see s3.h): the bytes fill a part; a full part
 * starts on the multi handle while the next one fills, up to `parallel` in flight; the object
 * becomes visible only when CompleteMultipartUpload names every part (or, for an object smaller
 * than one part, with its one PUT at commit). Any failure aborts the upload, so that no part stays
 * behind to be billed; one that a crash leaves is found by store_s3_uploads().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/xmalloc.h"
#include "s3-int.h"

struct store_s3_upload {
	struct store_s3 *s;
	char *key;                  /* relative to the prefix */
	char *id;                   /* the multipart upload's id, once it is one */
	char *part;                 /* the part filling, part_size bytes */
	size_t part_len;
	int nparts;                 /* parts started */
	char **etags;               /* each started part's ETag once it is sent, by number - 1 */
	struct store__req **flight; /* the parts on their way */
	int nflight;
	int err;                    /* the first failure: every later call gives it */
};

int store_s3_upload_begin(struct store_s3 *s, const char *key, struct store_s3_upload **out)
{
	struct store_s3_upload *u = xcalloc(1, sizeof(*u));

	u->s = s;
	u->key = xstrdup(key);
	u->part = xmalloc(s->part_size);
	u->flight = xcalloc((size_t)s->parallel, sizeof(*u->flight));
	*out = u;
	return 0;
}

const char *store_s3_upload_id(const struct store_s3_upload *u)
{
	return u->id;
}

/* CreateMultipartUpload: the id the parts go under. */
static int create(struct store_s3_upload *u)
{
	struct store__req *r = store__req_new(u->s, "POST", u->key, "uploads=");
	int err;

	store__req_body(r, "", 0, false);
	err = store__run(r);
	if (!err) {
		u->id = store__xml_get(r->body.data, r->body.len, "UploadId");
		if (!u->id || !*u->id) {
			free(u->id);
			u->id = NULL;
			err = HM_ERR_UPSTREAM;
		}
	}
	store__req_free(&r);
	return err;
}

/* Take the parts that arrived off the flight; the first failure is the upload's. */
static void reap(struct store_s3_upload *u)
{
	for (int i = 0; i < u->nflight;) {
		struct store__req *r = u->flight[i];
		int err;
		if (!r->done) {
			i++;
			continue;
		}
		if (store__again(r)) {
			store__start(r); /* the same part, its bytes from the start */
			i++;
			continue;
		}
		err = store__result(r);
		if (!err && !r->etag[0])
			err = HM_ERR_UPSTREAM;
		if (!err)
			u->etags[r->part - 1] = xstrdup(r->etag);
		else if (!u->err)
			u->err = err;
		store__req_free(&r);
		u->flight[i] = u->flight[--u->nflight];
	}
}

/* The part filled so far goes (its buffer with it); a new one fills while it is on its way. */
static int send_part(struct store_s3_upload *u)
{
	struct store_s3 *s = u->s;
	struct store__req *r;
	char *q, *id;

	if (!u->id && (u->err = create(u)))
		return u->err;
	while (u->nflight >= s->parallel && !u->err) {
		store__wait_any(s);
		reap(u);
	}
	if (u->err)
		return u->err;
	u->nparts++;
	u->etags = xreallocarray(u->etags, (size_t)u->nparts, sizeof(*u->etags));
	u->etags[u->nparts - 1] = NULL;
	id = store__escape(u->id, false);
	q = xasprintf("partNumber=%d&uploadId=%s", u->nparts, id); /* canonical: names in byte order */
	r = store__req_new(s, "PUT", u->key, q);
	r->part = u->nparts;
	store__req_body(r, u->part, u->part_len, true);
	u->part = xmalloc(s->part_size);
	u->part_len = 0;
	store__start(r);
	u->flight[u->nflight++] = r;
	free(q);
	free(id);
	return 0;
}

int store_s3_upload_write(struct store_s3_upload *u, const void *data, size_t n)
{
	const char *p = data;

	while (n && !u->err) {
		size_t take = u->s->part_size - u->part_len;
		if (take > n)
			take = n;
		memcpy(u->part + u->part_len, p, take);
		u->part_len += take;
		p += take;
		n -= take;
		if (u->part_len == u->s->part_size)
			send_part(u);
	}
	return u->err;
}

bool store_s3_upload_busy(const struct store_s3_upload *u)
{
	return u->nflight > 0 && !u->err;
}

int store_s3_upload_pump(struct store_s3_upload *u, int wait_ms)
{
	if (u->nflight && !u->err) {
		store__pump(u->s, wait_ms);
		reap(u);
	}
	return u->err;
}

/* CompleteMultipartUpload naming every part with its ETag. */
static int complete(struct store_s3_upload *u)
{
	struct store__req *r;
	struct buf xml;
	char *q, *id = store__escape(u->id, false);
	int err;

	buf_init(&xml);
	buf_adds(&xml, "<CompleteMultipartUpload>");
	for (int i = 0; i < u->nparts; i++)
		buf_addf(&xml, "<Part><PartNumber>%d</PartNumber><ETag>\"%s\"</ETag></Part>", i + 1, u->etags[i]);
	buf_adds(&xml, "</CompleteMultipartUpload>");
	q = xasprintf("uploadId=%s", id);
	r = store__req_new(u->s, "POST", u->key, q);
	r->hdrs = curl_slist_append(r->hdrs, "Content-Type: application/xml");
	curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->hdrs);
	store__req_body(r, xml.data, xml.len, false);
	err = store__run(r);
	store__req_free(&r);
	buf_release(&xml);
	free(q);
	free(id);
	return err;
}

static void upload_free(struct store_s3_upload *u)
{
	for (int i = 0; i < u->nflight; i++)
		store__req_free(&u->flight[i]);
	for (int i = 0; i < u->nparts; i++)
		free(u->etags[i]);
	free(u->etags);
	free(u->flight);
	free(u->part);
	free(u->key);
	free(u->id);
	free(u);
}

/* Abort *u after a failure: what S3 said of the failure outlives the abort's own requests. */
static void abort_keeping_error(struct store_s3_upload **u)
{
	struct store_s3 *s = (*u)->s;
	char code[sizeof(s->errcode)], *msg = s->errmsg;

	snprintf(code, sizeof(code), "%s", s->errcode);
	s->errmsg = NULL;
	store_s3_upload_abort(u);
	free(s->errmsg);
	s->errmsg = msg;
	snprintf(s->errcode, sizeof(s->errcode), "%s", code);
}

int store_s3_upload_commit(struct store_s3_upload **up)
{
	struct store_s3_upload *u = *up;
	int err = u->err;

	*up = NULL;
	if (!err && !u->id) {
		err = store_s3_put(u->s, u->key, u->part, u->part_len);
	} else if (!err) {
		if (u->part_len)
			send_part(u);
		while (u->nflight && !u->err) {
			store__wait_any(u->s);
			reap(u);
		}
		err = u->err ? u->err : complete(u);
	}
	if (err && u->id)
		abort_keeping_error(&u);
	if (u)
		upload_free(u);
	return err;
}

void store_s3_upload_abort(struct store_s3_upload **up)
{
	struct store_s3_upload *u = up ? *up : NULL;

	if (!u)
		return;
	*up = NULL;
	/* the parts on their way end first: one still arriving after the abort would stay */
	while (u->nflight) {
		store__wait_any(u->s);
		reap(u);
	}
	if (u->id)
		store_s3_upload_drop(u->s, u->key, u->id);
	upload_free(u);
}

int store_s3_upload_drop(struct store_s3 *s, const char *key, const char *upload_id)
{
	char *id = store__escape(upload_id, false), *q = xasprintf("uploadId=%s", id);
	struct store__req *r = store__req_new(s, "DELETE", key, q);
	int err = store__run(r);

	store__req_free(&r);
	free(q);
	free(id);
	return err;
}
