/*
 * floor-read.c - the floor the read fronts stand on (docs/ARCHITECTURE.md): the
 * request's token, what it may see (hidden lists, visibility, the access check and its refusal), whether
 * a file's bytes may come from the store (the file-trust decision), sending a file or a blob, our own
 * origin and a repo's tier headers. Every front calls these; none of them calls a front.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>
#include <openssl/evp.h>

#include "base/buf.h"
#include "base/bug.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "access.h"
#include "mirror/data.h"
#include "hub/http/httpd.h"
#include "ondemand.h"
#include "floor-read-int.h"
#include "routes-int.h"
#include "store/store.h"
#include "store/bucket.h"

/* The operator token of a request: `Authorization: Bearer X` (Hugging Face clients, the new
 * ModelScope SDK), `Authorization: Basic` with the token as the password, or as the user when there is
 * no password (git: http://user:TOKEN@mirror/...), or the `m_session_id=X` cookie (ModelScope).
 * Returns a pointer into buf or NULL. */
const char *mirror__request_token(const struct httpd_req *req, char *buf, size_t cap)
{
	const char *h = httpd_header(req, "Authorization"), *c;

	if (h && !strncasecmp(h, "Bearer ", 7)) {
		snprintf(buf, cap, "%s", h + 7);
		return buf;
	}
	if (h && !strncasecmp(h, "Basic ", 6)) {
		const char *b64 = h + 6 + strspn(h + 6, " ");
		size_t n = strcspn(b64, " ");
		unsigned char dec[600];
		char *colon;
		int len;
		if (n == 0 || n > 4 * (sizeof(dec) - 1) / 3 || n % 4)
			return NULL;
		len = EVP_DecodeBlock(dec, (const unsigned char *)b64, (int)n);
		if (len < 0)
			return NULL;
		len -= (int)(n >= 2 && b64[n - 1] == '=') + (int)(n >= 2 && b64[n - 2] == '=');
		dec[len] = '\0';
		if (memchr(dec, '\0', (size_t)len))
			return NULL;
		colon = strchr((char *)dec, ':');
		if (colon && colon[1]) {
			snprintf(buf, cap, "%s", colon + 1);
		} else {
			if (colon)
				*colon = '\0';
			snprintf(buf, cap, "%s", (char *)dec);
		}
		return buf[0] ? buf : NULL;
	}
	c = httpd_header(req, "Cookie");
	if (c && (c = strstr(c, "m_session_id="))) {
		c += 13;
		snprintf(buf, cap, "%.*s", (int)strcspn(c, "; "), c);
		return buf;
	}
	return NULL;
}

void mirror__refuse(struct httpd_req *req, bool had_token, const char *style)
{
	const char *msg = had_token ? "You do not have access to this resource on this mirror."
				    : "Invalid username or password.";
	char *body;

	if (!had_token)
		httpd_add_header(req, "WWW-Authenticate", style && !strcmp(style, "git") ? "Basic realm=\"hubmirror\""
											: "Bearer realm=\"hubmirror\"");
	httpd_add_header(req, "Access-Control-Allow-Origin", "*");
	if (style && !strcmp(style, "ms")) {
		body = xasprintf("{\"Code\":%d,\"Success\":false,\"Data\":null,\"Message\":\"%s\",\"RequestId\":\"\"}",
				 had_token ? 403 : 401, msg);
	} else {
		httpd_add_header(req, "X-Error-Message", msg);
		body = xasprintf("{\"error\":\"%s\"}", msg);
	}
	httpd_respond(req, had_token ? 403 : 401, "application/json", body, strlen(body));
	free(body);
}

bool mirror__private_local(const struct catalog_repo *r)
{
	return r->local && r->private_ == 1;
}

bool mirror__anyone_reads(const struct mirror_routes *rt, const struct catalog_repo *r)
{
	return !mirror__private_local(r) &&
	       (!rt->access || mirror_access_allows(rt->access, NULL, r->hub, r->type, r->name));
}

char *mirror__hidden(const struct mirror_routes *rt, const struct httpd_req *req)
{
	char buf[512];

	return mirror__hidden_for(rt, mirror__request_token(req, buf, sizeof(buf)));
}

char *mirror__hidden_for(const struct mirror_routes *rt, const char *token)
{
	char *guarded = rt->access ? mirror_access_hidden(rt->access, token) : NULL, *out;
	struct catalog_repo *priv = NULL;
	size_t n = 0;
	json_t *arr;

	/* and the private repos token may not see (mirror_access_visible): a scan of the repos, few private */
	if (catalog_repo_list_private(rt->data->catalog, &priv, &n) || !n) {
		catalog_repo_list_free(priv, n);
		return guarded;
	}
	arr = guarded ? json_loads(guarded, 0, NULL) : NULL;
	if (!json_is_array(arr)) {
		json_decref(arr);
		arr = json_array();
	}
	for (size_t i = 0; i < n; i++)
		if (!mirror_access_visible(rt->access, token, &priv[i]))
			json_array_append_new(arr, json_sprintf("%s:%s:%s", priv[i].hub, priv[i].type, priv[i].name));
	out = json_array_size(arr) ? json_dumps(arr, JSON_COMPACT) : NULL;
	json_decref(arr);
	free(guarded);
	catalog_repo_list_free(priv, n);
	return out;
}

int mirror__file_trusted(struct mirror_routes *rt, int64_t snapshot_id, const char *sha256)
{
	int t = catalog_snapshot_trusts(rt->data->catalog, snapshot_id, sha256, mirror_access_everyones_fn,
					(void *)rt->access);

	if (t == 0 && catalog_blob_present(rt->data->catalog, sha256) != 1)
		t = 1; /* the store lacks it anyway: fetched as any absent content */
	return t;
}

int mirror__send_file(struct mirror_routes *rt, struct httpd_req *req, int64_t snapshot_id,
		      struct mirror_ondemand_file *f)
{
	/* a provisional snapshot's content the store holds for another repo is served only once its
	 * own upstream's bytes were verified (docs/security.md, "What sync takes from a listing") */
	int trusted = mirror__file_trusted(rt, snapshot_id, f->sha256);
	/* with a bucket, a content the store never had (a listing's on demand) is not asked of the
	 * bucket, whose answer would be a 503, but fetched */
	bool absent = rt->ondemand && store_in_bucket(rt->data->store) &&
		      catalog_blob_present(rt->data->catalog, f->sha256) == 0;

	if (trusted == 1 && !absent && !mirror__send_blob(rt, req, f->sha256, f->size))
		return 0;
	/* a provisional snapshot's content, fetched now; or (catalog says yes, store says no) one verify
	 * quarantined, which the next sync brings back */
	f->untrusted = trusted == 0;
	if (!rt->ondemand || trusted < 0 || (trusted == 1 && catalog_blob_present(rt->data->catalog, f->sha256) != 0))
		return -1;
	return mirror_ondemand_send(rt, req, f);
}

bool mirror__repo_visible(const struct mirror_routes *rt, const struct httpd_req *req, const struct catalog_repo *r)
{
	char buf[512];

	return mirror_access_visible(rt->access, mirror__request_token(req, buf, sizeof(buf)), r);
}

void mirror__tier_headers(struct httpd_req *req, const struct catalog_repo *r)
{
	char b[24];

	if (r->tier <= 0)
		return;
	snprintf(b, sizeof(b), "%d", r->tier);
	httpd_add_header(req, "X-Hubmirror-Tier", b);
	if (r->origin_checked_at > 0) {
		snprintf(b, sizeof(b), "%lld", (long long)r->origin_checked_at);
		httpd_add_header(req, "X-Hubmirror-Origin-Checked", b);
	}
}

bool mirror__access_check(struct mirror_routes *rt, struct httpd_req *req, const char *hub, const char *type,
			  const char *name, const struct catalog_repo *r, const char *style)
{
	char buf[512];
	const char *tok = mirror__request_token(req, buf, sizeof(buf));

	/* a private repo of the mirror's own is its grantees' alone: nobody's without a tokens file */
	if (!rt->access && (!r || !mirror__private_local(r)))
		return true;
	if (rt->access && mirror_access_allows(rt->access, tok, hub, type, name) &&
	    (!r || mirror_access_private_allows(rt->access, tok, r)))
		return true;
	if (!rt->access) {
		mirror__refuse(req, false, style);
		return false;
	}
	mirror__refuse(req, tok != NULL && mirror_access_token_valid(rt->access, tok), style);
	return false;
}

/* Answer req with the blob's bytes from fd (consumed): whole, or the Range asked; with gate, as they
 * come (httpd_respond_file_gated; release(ud) runs once whatever the answer). */
static void send_fd(struct httpd_req *req, int fd, int64_t size, httpd_gate_fn gate, void (*release)(void *ud),
		    void *ud)
{
	int64_t a = 0, b = 0;
	int rr;

	httpd_add_header(req, "Accept-Ranges", "bytes");
	/* An empty file is a plain 200 to any Range (clients probe with bytes=0-0; a 416 breaks some). It
	 * still names its size in Content-Range, which @huggingface/hub and transformers.js read. */
	rr = size == 0 ? 0 : httpd_parse_range(httpd_header(req, "Range"), size, &a, &b);
	if (size == 0 && httpd_header(req, "Range"))
		httpd_add_header(req, "Content-Range", "bytes */0");
	if (rr < 0) {
		close(fd);
		if (release)
			release(ud);
		httpd_add_headerf(req, "Content-Range", "bytes */%" PRId64, size);
		httpd_respond_str(req, 416, "text/plain", "range not satisfiable\n");
		return;
	}
	if (rr > 0)
		httpd_add_headerf(req, "Content-Range", "bytes %" PRId64 "-%" PRId64 "/%" PRId64, a, b, size);
	else
		b = size - 1;
	if (gate)
		httpd_respond_file_gated(req, rr > 0 ? 206 : 200, "application/octet-stream", fd, a, b - a + 1, gate,
					 release, ud);
	else
		httpd_respond_file(req, rr > 0 ? 206 : 200, "application/octet-stream", fd, a, b - a + 1);
}

/*
 * A content the store's bucket holds and its local cache does not, within the cache's bound (one
 * bigger is read straight, floor-bucket.c): a worker brings it into the cache
 * (store_fill_run: verified as a whole once in), and the answer follows its partial file as it
 * grows, so the first bytes go out as soon as they came; the loop never waits on the bucket. Bytes
 * that turn out not to be the content (the bucket's copy damaged) end the answer short, the connection
 * closed, so a client never takes them for the whole. Two owners: the worker and the answer.
 */
struct bucket_read {
	_Atomic int refs;
	struct store *store;
	struct store_writer *w;
	char sha256[65];
	int64_t size;
	_Atomic int64_t avail;      /* bytes in the partial file, which the answer may send */
	_Atomic int state;          /* 0 coming, 1 in and verified, -1 failed */
	uv_work_t work;
};

static void bucket_read_unref(void *ud)
{
	struct bucket_read *b = ud;

	if (--b->refs == 0)
		free(b);
}

static void bucket_read_progress(void *ud, int64_t bytes)
{
	struct bucket_read *b = ud;

	b->avail = bytes;
}

static void bucket_read_work(uv_work_t *work)
{
	struct bucket_read *b = work->data;
	int r = store_fill_run(b->store, b->sha256, &b->w, b->size, bucket_read_progress, b);

	if (!r)
		b->avail = INT64_MAX; /* every byte is in the file */
	b->state = r ? -1 : 1;
}

static void bucket_read_after(uv_work_t *work, int status)
{
	(void)status;
	bucket_read_unref(work->data);
}

static int64_t bucket_read_gate(void *ud, int64_t offset, int64_t len)
{
	struct bucket_read *b = ud;
	int64_t avail = b->avail;

	if (avail > offset)
		return avail - offset < len ? avail - offset : len;
	return b->state < 0 ? -1 : 0;
}

/* Start the fill of sha256 and answer req from its partial file as it grows. 0, or -1 (nothing sent). */
static int send_from_bucket(struct mirror_routes *rt, struct httpd_req *req, const char *sha256, int64_t size)
{
	struct bucket_read *b = xcalloc(1, sizeof(*b));
	int fd = -1;

	b->store = rt->data->store;
	b->size = size;
	snprintf(b->sha256, sizeof(b->sha256), "%s", sha256);
	if (store_fill_begin(b->store, sha256, size, &b->w) ||
	    (fd = open(store_writer_path(b->w), O_RDONLY | O_CLOEXEC)) < 0) {
		store_writer_abort(&b->w, false);
		free(b);
		return -1;
	}
	b->refs = 2;
	b->work.data = b;
	if (uv_queue_work(rt->loop, &b->work, bucket_read_work, bucket_read_after)) {
		store_writer_abort(&b->w, false);
		close(fd);
		free(b);
		return -1;
	}
	store_bucket_count_cache(false);
	send_fd(req, fd, size, bucket_read_gate, bucket_read_unref, b);
	return 0;
}

/* Before the answer begins, a worker asks the bucket for the content (a HEAD): one it cannot give now
 * (the gateway down, the object gone) is answered 503 whole, never as a body cut short. */
struct bucket_probe {
	struct mirror_routes *rt;
	char sha256[65];
	int64_t size;
	bool there;
};

static void bucket_probe_work(void *job)
{
	struct bucket_probe *p = job;

	p->there = store_has(p->rt->data->store, p->sha256, p->size);
}

/* The answer to req of a content the bucket holds, read straight from it (floor-bucket.c): a range far
 * in, the bytes before it never waited for; any read of a content bigger than the cache's bound, which
 * the cache never keeps whole (a read of the whole hashed as it comes). 0 when answered, -1 when not
 * (the cache's fill answers). */
static int bucket_direct(struct bucket_probe *p, struct httpd_req *req)
{
	int64_t a = 0, b = p->size - 1;
	int rr = httpd_parse_range(httpd_header(req, "Range"), p->size, &a, &b);
	bool big = store_streams_size(p->rt->data->store, p->size);

	if (!big && (rr <= 0 || a < MIRROR__BUCKET_DIRECT_FROM))
		return -1;
	if (rr < 0) { /* (as send_fd answers it) */
		httpd_add_header(req, "Accept-Ranges", "bytes");
		httpd_add_headerf(req, "Content-Range", "bytes */%" PRId64, p->size);
		httpd_respond_str(req, 416, "text/plain", "range not satisfiable\n");
		return 0;
	}
	return mirror__bucket_range_send(p->rt, req, p->sha256, p->size, a, b, rr == 0);
}

static void bucket_probe_done(void *job, struct httpd_req *req)
{
	struct bucket_probe *p = job;

	if (req && p->there && !bucket_direct(p, req))
		req = NULL;
	if (req && (!p->there || send_from_bucket(p->rt, req, p->sha256, p->size))) {
		httpd_add_header(req, "Retry-After", "60");
		httpd_respond_str(req, 503, "text/plain", "the content cannot be read from the store's bucket now\n");
	}
	free(p);
}

int mirror__send_blob(struct mirror_routes *rt, struct httpd_req *req, const char *sha256, int64_t size)
{
	struct store *st = rt->data->store;
	char *blob = store_cache_path(st, sha256);
	int fd = blob ? open(blob, O_RDONLY | O_CLOEXEC) : -1;
	bool named = blob != NULL;

	if (fd >= 0 && store_in_bucket(st)) {
		futimens(fd, (struct timespec[]){ { 0, UTIME_NOW }, { 0, UTIME_OMIT } }); /* read last: kept */
		store_bucket_count_cache(true);
	}
	free(blob);
	if (fd < 0 && named && store_in_bucket(st) && rt->loop && size > 0) {
		struct bucket_probe *p = xcalloc(1, sizeof(*p));
		p->rt = rt;
		snprintf(p->sha256, sizeof(p->sha256), "%s", sha256);
		p->size = size;
		httpd_defer(req, bucket_probe_work, bucket_probe_done, p);
		return 0;
	}
	if (fd < 0)
		return -1;
	send_fd(req, fd, size, NULL, NULL, NULL);
	return 0;
}

/* Our own origin as the client reached it (for Link, torrents), honouring X-Forwarded-* from a
 * reverse proxy the operator named (serve --trusted-proxy) and from no one else: otherwise any client
 * could have the mirror write other hosts into the URLs it hands out (docs/security.md). */
char *mirror__self_base(const struct httpd_req *req)
{
	bool proxied = httpd_from_trusted_proxy(req);
	const char *proto = proxied ? httpd_header(req, "X-Forwarded-Proto") : NULL;
	const char *host = proxied ? httpd_header(req, "X-Forwarded-Host") : NULL;
	char *p = NULL, *h = NULL, *out;

	if (!host)
		host = httpd_header(req, "Host");
	if (!host || !*host || strpbrk(host, " /\\\"<>\r\n"))
		host = "localhost";
	if (!proto || (strcasecmp(proto, "http") && strcasecmp(proto, "https")))
		proto = httpd_is_tls(req) ? "https" : "http";
	/* only the first value of a comma list */
	p = xstrndup(proto, strcspn(proto, ","));
	h = xstrndup(host, strcspn(host, ", "));
	out = xasprintf("%s://%s", p, h);
	free(p);
	free(h);
	return out;
}
