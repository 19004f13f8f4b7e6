/*
 * s3.c - the S3 client (see s3.h): the object, one request on its multi handle, and the calls made
 * of one request (head, get, put, delete).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "hubmirror-config.h"
#include "s3-int.h"

#define S3_BODY_MAX (1 << 20)   /* an answer's XML: a page of 1,000 keys is ~300 KiB */
#define S3_PART_MIN ((size_t)5 << 20)

int store_s3_url_parse(const char *url, char **bucket, char **prefix, const char **why)
{
	const char *b = url && !strncmp(url, "s3://", 5) ? url + 5 : NULL, *slash;
	size_t blen, plen;

	if (!b) {
		*why = "not s3://BUCKET[/PREFIX]";
		return -EINVAL;
	}
	slash = strchr(b, '/');
	blen = slash ? (size_t)(slash - b) : strlen(b);
	/* S3's rule for bucket names: 3 to 63 of a-z 0-9 . - */
	if (blen < 3 || blen > 63 || strspn(b, "abcdefghijklmnopqrstuvwxyz0123456789.-") < blen) {
		*why = "the bucket's name is 3 to 63 of a-z, 0-9, '.' and '-'";
		return -EINVAL;
	}
	slash = slash ? slash + 1 : b + blen;
	plen = strlen(slash);
	while (plen && slash[plen - 1] == '/')
		plen--;
	if (strstr(slash, "//") || (plen && (!strncmp(slash, "../", 3) || strstr(slash, "/../")))) {
		*why = "the prefix has an empty or '..' segment";
		return -EINVAL;
	}
	*bucket = xstrndup(b, blen);
	*prefix = xstrndup(slash, plen);
	return 0;
}

int store_s3_new(const struct store_s3_config *c, struct store_s3 **out, const char **why)
{
	struct store_s3 *s;
	const char *region = c->region && *c->region ? c->region : "us-east-1";
	size_t n;

	if (!c->bucket || !*c->bucket || !c->access_key || !*c->access_key || !c->secret_key || !*c->secret_key) {
		*why = "a bucket, an access key and a secret key are needed";
		return -EINVAL;
	}
	if (c->endpoint && strncmp(c->endpoint, "http://", 7) && strncmp(c->endpoint, "https://", 8)) {
		*why = "the endpoint is an http:// or https:// URL";
		return -EINVAL;
	}
	if (c->part_size && c->part_size < S3_PART_MIN) {
		*why = "a part is at least 5 MiB (S3's least)";
		return -EINVAL;
	}
	s = xcalloc(1, sizeof(*s));
	s->endpoint = c->endpoint ? xstrdup(c->endpoint) : xasprintf("https://s3.%s.amazonaws.com", region);
	n = strlen(s->endpoint);
	while (n && s->endpoint[n - 1] == '/')
		s->endpoint[--n] = '\0';
	s->bucket = xstrdup(c->bucket);
	s->prefix = c->prefix && *c->prefix ? xasprintf("%s/", c->prefix) : xstrdup("");
	s->sigv4 = xasprintf("aws:amz:%s:s3", region);
	s->userpwd = xasprintf("%s:%s", c->access_key, c->secret_key);
	if (c->session_token && *c->session_token)
		s->token_header = xasprintf("x-amz-security-token: %s", c->session_token);
	s->part_size = c->part_size ? c->part_size : (size_t)16 << 20;
	s->parallel = c->parallel > 0 ? c->parallel : 4;
	s->connect_timeout_ms = c->connect_timeout_ms > 0 ? c->connect_timeout_ms : 10000;
	s->stall_s = c->stall_s > 0 ? c->stall_s : 60;
	s->page = c->page > 0 ? c->page : 0;
	s->tries = c->tries > 0 ? c->tries : 8;
	s->multi = curl_multi_init();
	*out = s;
	return 0;
}

void store_s3_free(struct store_s3 **sp)
{
	struct store_s3 *s = sp ? *sp : NULL;

	if (!s)
		return;
	curl_multi_cleanup(s->multi);
	free(s->endpoint);
	free(s->bucket);
	free(s->prefix);
	free(s->sigv4);
	if (s->userpwd)
		memset(s->userpwd, 0, strlen(s->userpwd));
	free(s->userpwd);
	free(s->token_header);
	free(s->errmsg);
	free(s);
	*sp = NULL;
}

const char *store_s3_errcode(const struct store_s3 *s)
{
	return s->errcode;
}

const char *store_s3_errmsg(const struct store_s3 *s)
{
	return s->errmsg ? s->errmsg : "";
}

char *store__escape(const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = xmalloc(strlen(s) * 3 + 1), *o = out;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    strchr("-._~", *p) || (keep_slash && *p == '/')) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

/* The answer's headers a call reads; a new response (a 100 Continue before the real one) starts over. */
static size_t on_header(char *line, size_t size, size_t n, void *ud)
{
	struct store__req *r = ud;
	size_t len = size * n, vlen;
	const char *colon = memchr(line, ':', len), *v;

	if (len > 5 && !strncmp(line, "HTTP/", 5)) {
		r->etag[0] = r->content_range[0] = '\0';
		r->length = -1;
		r->mtime = 0;
		return len;
	}
	if (!colon)
		return len;
	v = colon + 1;
	while (v < line + len && (*v == ' ' || *v == '\t'))
		v++;
	vlen = (size_t)(line + len - v);
	while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
		vlen--;
#define IS(name) ((size_t)(colon - line) == strlen(name) && !strncasecmp(line, name, strlen(name)))
	if (IS("ETag")) {
		if (vlen >= 2 && v[0] == '"' && v[vlen - 1] == '"') {
			v++;
			vlen -= 2;
		}
		snprintf(r->etag, sizeof(r->etag), "%.*s", (int)vlen, v);
	} else if (IS("Content-Length")) {
		r->length = strtoll(v, NULL, 10);
	} else if (IS("Content-Range")) {
		snprintf(r->content_range, sizeof(r->content_range), "%.*s", (int)vlen, v);
	} else if (IS("Last-Modified")) {
		char *t = xstrndup(v, vlen);
		time_t when = curl_getdate(t, NULL);
		r->mtime = when > 0 ? (int64_t)when : 0;
		free(t);
	}
#undef IS
	return len;
}

/* A ranged GET's answer is the range asked, or it is not given to the sink at all: 206 with that
 * Content-Range, or 200 when the whole object was asked. */
static bool range_ok(struct store__req *r)
{
	char want[96];

	if (r->want_off == 0 && r->want_len < 0)
		return r->status == 200 || (r->status == 206 && !strncmp(r->content_range, "bytes 0-", 8));
	if (r->status != 206)
		return false;
	if (r->want_len < 0)
		snprintf(want, sizeof(want), "bytes %" PRId64 "-", r->want_off);
	else
		snprintf(want, sizeof(want), "bytes %" PRId64 "-%" PRId64 "/", r->want_off,
			 r->want_off + r->want_len - 1);
	return !strncmp(r->content_range, want, strlen(want));
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
	struct store__req *r = ud;
	size_t len = size * n;

	curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &r->status);
	if (r->sink && r->status / 100 == 2) {
		if (!r->checked && !range_ok(r)) {
			r->sink_err = HM_ERR_UPSTREAM;
			return 0;
		}
		r->checked = true;
		r->sink_err = r->sink(r->ud, data, len);
		return r->sink_err ? 0 : len;
	}
	if (r->body.len + len > S3_BODY_MAX)
		return 0;
	buf_add(&r->body, data, len);
	return len;
}

static size_t on_read(char *dest, size_t size, size_t n, void *ud)
{
	struct store__req *r = ud;
	size_t len = size * n;

	if (len > r->src_len - r->src_off)
		len = r->src_len - r->src_off;
	memcpy(dest, r->src + r->src_off, len);
	r->src_off += len;
	return len;
}

/* Sending the body again (a redirect, a connection reused and closed) starts it over. */
static int on_seek(void *ud, curl_off_t off, int origin)
{
	struct store__req *r = ud;

	if (origin != SEEK_SET || off < 0 || (size_t)off > r->src_len)
		return CURL_SEEKFUNC_FAIL;
	r->src_off = (size_t)off;
	return CURL_SEEKFUNC_OK;
}

struct store__req *store__req_new(struct store_s3 *s, const char *method, const char *key, const char *query)
{
	struct store__req *r = xcalloc(1, sizeof(*r));
	char *full = key ? xasprintf("%s%s", s->prefix, key) : NULL, *path = full ? store__escape(full, true) : NULL;
	char *url = xasprintf("%s/%s%s%s%s%s", s->endpoint, s->bucket, path ? "/" : "", path ? path : "",
			      query ? "?" : "", query ? query : "");

	r->s = s;
	r->length = -1;
	r->want_len = -1;
	r->what = xasprintf("%s %s", method, full ? full : s->bucket);
	buf_init(&r->body);
	r->h = curl_easy_init();
	curl_easy_setopt(r->h, CURLOPT_URL, url);
	curl_easy_setopt(r->h, CURLOPT_PRIVATE, r);
	curl_easy_setopt(r->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(r->h, CURLOPT_AWS_SIGV4, s->sigv4);
	curl_easy_setopt(r->h, CURLOPT_USERPWD, s->userpwd);
	curl_easy_setopt(r->h, CURLOPT_CONNECTTIMEOUT_MS, s->connect_timeout_ms);
	curl_easy_setopt(r->h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(r->h, CURLOPT_LOW_SPEED_TIME, s->stall_s);
	curl_easy_setopt(r->h, CURLOPT_USERAGENT, "hubmirror/" HUBMIRROR_VERSION);
	curl_easy_setopt(r->h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(r->h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(r->h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->h, CURLOPT_ERRORBUFFER, r->errbuf);
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(r->h, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET"))
		curl_easy_setopt(r->h, CURLOPT_CUSTOMREQUEST, method);
	/* libcurl signs the payload's hash given here instead of hashing a body it streams */
	r->hdrs = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	if (s->token_header)
		r->hdrs = curl_slist_append(r->hdrs, s->token_header);
	curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->hdrs);
	free(url);
	free(path);
	free(full);
	return r;
}

void store__req_body(struct store__req *r, const char *data, size_t n, bool take)
{
	r->src = data;
	r->src_len = n;
	if (take)
		r->own = (char *)data;
	curl_easy_setopt(r->h, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(r->h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)n);
	curl_easy_setopt(r->h, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(r->h, CURLOPT_READDATA, r);
	curl_easy_setopt(r->h, CURLOPT_SEEKFUNCTION, on_seek);
	curl_easy_setopt(r->h, CURLOPT_SEEKDATA, r);
}

void store__req_free(struct store__req **rp)
{
	struct store__req *r = rp ? *rp : NULL;

	if (!r)
		return;
	if (!r->done && r->h)
		curl_multi_remove_handle(r->s->multi, r->h);
	curl_easy_cleanup(r->h);
	curl_slist_free_all(r->hdrs);
	buf_release(&r->body);
	free(r->own);
	free(r->what);
	free(r);
	*rp = NULL;
}

void store__start(struct store__req *r)
{
	curl_multi_add_handle(r->s->multi, r->h);
}

/* Take every finished transfer off the multi handle; how many there were. */
static int collect(struct store_s3 *s)
{
	CURLMsg *m;
	int left, done = 0;

	while ((m = curl_multi_info_read(s->multi, &left))) {
		struct store__req *r = NULL;
		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		r->cc = m->data.result;
		curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &r->status);
		r->done = true;
		curl_multi_remove_handle(s->multi, r->h);
		done++;
	}
	return done;
}

static void drive(struct store_s3 *s, struct store__req *until)
{
	int running = 0;

	for (;;) {
		int done;
		curl_multi_perform(s->multi, &running);
		done = collect(s);
		if (until ? until->done : done > 0 || running == 0)
			return;
		curl_multi_poll(s->multi, NULL, 0, 1000, NULL);
	}
}

void store__wait(struct store__req *r)
{
	if (!r->done)
		drive(r->s, r);
}

void store__wait_any(struct store_s3 *s)
{
	drive(s, NULL);
}

void store__pump(struct store_s3 *s, int wait_ms)
{
	int running = 0;

	curl_multi_perform(s->multi, &running);
	collect(s);
	if (running)
		curl_multi_poll(s->multi, NULL, 0, wait_ms, NULL);
	curl_multi_perform(s->multi, &running);
	collect(s);
}

/* The answer's error as S3 said it, into errcode and errmsg; the return code it stands for. */
static int answer_error(struct store__req *r)
{
	struct store_s3 *s = r->s;
	char *code = store__xml_get(r->body.data, r->body.len, "Code");
	char *msg = store__xml_get(r->body.data, r->body.len, "Message");
	int err;

	snprintf(s->errcode, sizeof(s->errcode), "%s", code ? code : "");
	if (r->status == 403 && code && (!strcmp(code, "InvalidAccessKeyId") || !strcmp(code, "SignatureDoesNotMatch")))
		err = HM_ERR_AUTH;
	else if (r->status == 403)
		err = -EACCES;
	else if (r->status == 404)
		err = HM_ERR_NOT_FOUND;
	else
		err = HM_ERR_HTTP;
	s->errmsg = xasprintf("%s: HTTP %ld%s%s%s%s", r->what, r->status, code ? " " : "", code ? code : "",
			      msg && *msg ? ": " : "", msg && *msg ? msg : "");
	free(code);
	free(msg);
	return err;
}

int store__result(struct store__req *r)
{
	struct store_s3 *s = r->s;
	char *root;

	s->errcode[0] = '\0';
	free(s->errmsg);
	s->errmsg = NULL;
	if (r->sink_err) {
		s->errmsg = xasprintf("%s: %s", r->what, r->sink_err == HM_ERR_UPSTREAM ?
				      "the answer is not the range asked" : err_str(r->sink_err));
		return r->sink_err;
	}
	if (r->cc != CURLE_OK) {
		s->errmsg = xasprintf("%s: %s", r->what, r->errbuf[0] ? r->errbuf : curl_easy_strerror(r->cc));
		return HM_ERR_CURL;
	}
	if (r->status / 100 != 2)
		return answer_error(r);
	/* CompleteMultipartUpload may answer 200 and then an <Error> in its body */
	root = r->body.len ? store__xml_root(r->body.data, r->body.len) : NULL;
	if (root && !strcmp(root, "Error")) {
		free(root);
		return answer_error(r);
	}
	free(root);
	log_debug("store", "%s: %ld", r->what, r->status);
	return 0;
}

bool store__again(struct store__req *r)
{
	bool trouble = r->status == 500 || r->status == 502 || r->status == 503 || r->status == 504;

	if (r->checked || r->sink_err || (r->cc == CURLE_OK && !trouble) || ++r->tries >= r->s->tries)
		return false;
	log_debug("store", "%s: %s, again (try %d)", r->what,
		  r->cc != CURLE_OK ? curl_easy_strerror(r->cc) : "the server's trouble", r->tries + 1);
	/* (CreateMultipartUpload sent twice leaves an upload nobody completes: the listing of
	 * unfinished uploads finds it) */
	usleep(250000u << (r->tries - 1 < 7 ? r->tries - 1 : 7));
	r->done = false;
	r->status = 0;
	r->cc = CURLE_OK;
	r->src_off = 0;
	r->errbuf[0] = '\0';
	buf_reset(&r->body);
	return true;
}

int store__run(struct store__req *r)
{
	do {
		store__start(r);
		store__wait(r);
	} while (store__again(r));
	return store__result(r);
}

int store_s3_head(struct store_s3 *s, const char *key, struct store_s3_stat *st)
{
	struct store__req *r = store__req_new(s, "HEAD", key, NULL);
	int err = store__run(r);

	if (!err) {
		st->size = r->length;
		st->mtime = r->mtime;
		snprintf(st->etag, sizeof(st->etag), "%s", r->etag);
	}
	store__req_free(&r);
	return err;
}

struct store__req *store__get_req(struct store_s3 *s, const char *key, int64_t off, int64_t len,
				  int (*sink)(void *ud, const void *data, size_t n), void *ud)
{
	struct store__req *r = store__req_new(s, "GET", key, NULL);
	char range[64];

	r->sink = sink;
	r->ud = ud;
	r->want_off = off;
	r->want_len = len;
	if (off > 0 || len > 0) {
		if (len > 0)
			snprintf(range, sizeof(range), "%" PRId64 "-%" PRId64, off, off + len - 1);
		else
			snprintf(range, sizeof(range), "%" PRId64 "-", off);
		curl_easy_setopt(r->h, CURLOPT_RANGE, range);
	}
	return r;
}

int store_s3_get(struct store_s3 *s, const char *key, int64_t off, int64_t len,
		 int (*sink)(void *ud, const void *data, size_t n), void *ud)
{
	struct store__req *r;
	int err;

	if (len == 0)
		return 0;
	r = store__get_req(s, key, off, len, sink, ud);
	err = store__run(r);
	store__req_free(&r);
	return err;
}

int store_s3_put(struct store_s3 *s, const char *key, const void *data, size_t n)
{
	struct store__req *r = store__req_new(s, "PUT", key, NULL);
	int err;

	store__req_body(r, data, n, false);
	err = store__run(r);
	store__req_free(&r);
	return err;
}

int store_s3_delete(struct store_s3 *s, const char *key)
{
	struct store__req *r = store__req_new(s, "DELETE", key, NULL);
	int err = store__run(r);

	store__req_free(&r);
	return err;
}

void store__copy_source(struct store__req *r, const char *src)
{
	struct store_s3 *s = r->s;
	char *full = xasprintf("%s/%s%s", s->bucket, s->prefix, src), *esc = store__escape(full, true);
	char *h = xasprintf("x-amz-copy-source: /%s", esc);

	r->hdrs = curl_slist_append(r->hdrs, h);
	curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->hdrs);
	free(h);
	free(esc);
	free(full);
}

/* CopyObject of src onto key in one request; replace: the metadata replaced (a copy onto itself must
 * change something for S3 to make it). */
static int copy_one(struct store_s3 *s, const char *src, const char *key, bool replace)
{
	struct store__req *r = store__req_new(s, "PUT", key, NULL);
	int err;

	store__copy_source(r, src);
	if (replace) {
		r->hdrs = curl_slist_append(r->hdrs, "x-amz-metadata-directive: REPLACE");
		curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->hdrs);
	}
	store__req_body(r, "", 0, false);
	err = store__run(r); /* (an <Error> in a 200's body is a failure: store__result) */
	store__req_free(&r);
	return err;
}

int store_s3_touch(struct store_s3 *s, const char *key)
{
	return copy_one(s, key, key, true);
}

int store_s3_copy(struct store_s3 *s, const char *src, const char *key)
{
	return copy_one(s, src, key, false);
}

static int probe_sink(void *ud, const void *data, size_t n)
{
	struct buf *b = ud;

	if (b->len + n > 4096)
		return -EFBIG;
	buf_add(b, data, n);
	return 0;
}

static int probe_seen(void *ud, const struct store_s3_entry *e)
{
	(*(int *)ud)++;
	return 0;
}

int store_s3_probe(struct store_s3 *s, const char *key, const char **step)
{
	static const char body[] = "hubmirror's probe of its store: written, read back and deleted at once\n";
	struct store_s3_stat st;
	struct buf got;
	int err, seen = 0;

	buf_init(&got);
	*step = "write";
	if ((err = store_s3_put(s, key, body, sizeof(body) - 1)))
		goto out;
	*step = "stat";
	err = store_s3_head(s, key, &st);
	if (!err && st.size != (int64_t)sizeof(body) - 1)
		err = HM_ERR_SIZE_MISMATCH;
	*step = "read";
	if (!err)
		err = store_s3_get(s, key, 0, -1, probe_sink, &got);
	if (!err && (got.len != sizeof(body) - 1 || memcmp(got.data, body, got.len)))
		err = HM_ERR_HASH_MISMATCH;
	*step = "list";
	if (!err)
		err = store_s3_list(s, key, probe_seen, &seen);
	if (!err && !seen)
		err = HM_ERR_NOT_FOUND;
	if (err) {
		/* what went wrong is said, not what the delete that follows says */
		char code[sizeof(s->errcode)], *msg = s->errmsg;
		snprintf(code, sizeof(code), "%s", s->errcode);
		s->errmsg = NULL;
		store_s3_delete(s, key);
		free(s->errmsg);
		s->errmsg = msg;
		snprintf(s->errcode, sizeof(s->errcode), "%s", code);
		goto out;
	}
	*step = "delete";
	if ((err = store_s3_delete(s, key)))
		goto out;
	err = store_s3_head(s, key, &st);
	err = err == HM_ERR_NOT_FOUND ? 0 : err ? err : HM_ERR_EXISTS;
out:
	buf_release(&got);
	return err;
}
