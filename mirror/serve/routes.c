/*
 * routes.c - the handler chain, and the small routes that belong to no hub (/healthz).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>
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
#include "routes-int.h"
#include "routes.h"
#include "seeder.h"
#include "mirror/store.h"
#include "mirror/torrents.h"
#include "p2p/tracker.h"

static int route_healthz(struct mirror_routes *r, struct httpd_req *req, const char *rest, const char *arg)
{
	int v;
	char *body;

	(void)rest;
	(void)arg;
	v = catalog_stored_version(r->data->catalog);
	body = v > 0 ? xasprintf("{\"status\":\"ok\",\"schema\":%d}\n", v)
		     : xstrdup("{\"status\":\"error\",\"error\":\"catalog unreadable\"}\n");
	httpd_respond(req, v > 0 ? 200 : 503, "application/json", body, strlen(body));
	free(body);
	return 0;
}

struct mirror_routes *mirror_routes_new(struct mirror_data *d, const struct mirror_access *access)
{
	struct mirror_routes *r = xcalloc(1, sizeof(*r));

	r->data = d;
	r->access = access;
	r->tracker = p2p_tracker_new(NULL);
	r->search_budget_ms = 100; /* docs/security.md: no search holds a worker for long */
	mirror_routes_set_write_bounds(r, 0, 0);
	pthread_mutex_init(&r->pool_mu, NULL);
	pthread_mutex_init(&r->commit_mu, NULL);
	r->lfs = mirror__lfs_new();
	r->catalog_path = mirror_data_path(d, MIRROR_DATA_CATALOG);
	if (access && mirror_access_mode(access) != ACCESS_OPEN) {
		int e = mirror_p2p_secret(d, r->p2p_key);
		r->have_p2p_key = !e;
		if (e)
			log_warn("serve", "no key for the swarm's capabilities (%s): guarded repos get no torrent", err_str(e));
	}
	return r;
}

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
	return !mirror__private_local(r) && (!rt->access || mirror_access_allows(rt->access, NULL, r->hub, r->type, r->name));
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

	if (trusted == 1 && !mirror__send_blob(rt, req, f->sha256, f->size))
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

int mirror__send_blob(struct mirror_routes *rt, struct httpd_req *req, const char *sha256, int64_t size)
{
	char *blob = mirror_store_blob_path(rt->data->store, sha256);
	int fd = blob ? open(blob, O_RDONLY | O_CLOEXEC) : -1, rr;
	int64_t a = 0, b = 0;

	free(blob);
	if (fd < 0)
		return -1;
	httpd_add_header(req, "Accept-Ranges", "bytes");
	/* An empty file is a plain 200 to any Range (clients probe with bytes=0-0; a 416 breaks some). It
	 * still names its size in Content-Range, which @huggingface/hub and transformers.js read. */
	rr = size == 0 ? 0 : httpd_parse_range(httpd_header(req, "Range"), size, &a, &b);
	if (size == 0 && httpd_header(req, "Range"))
		httpd_add_header(req, "Content-Range", "bytes */0");
	if (rr < 0) {
		close(fd);
		httpd_add_headerf(req, "Content-Range", "bytes */%" PRId64, size);
		httpd_respond_str(req, 416, "text/plain", "range not satisfiable\n");
	} else if (rr > 0) {
		httpd_add_headerf(req, "Content-Range", "bytes %" PRId64 "-%" PRId64 "/%" PRId64, a, b, size);
		httpd_respond_file(req, 206, "application/octet-stream", fd, a, b - a + 1);
	} else {
		httpd_respond_file(req, 200, "application/octet-stream", fd, 0, size);
	}
	return 0;
}

/*
 * The URL map: the whole URL space in one place. A path that ends in '/' is a prefix; the routes
 * without a path take what the others leave, in order (the web page's own paths, then the Hub's URL
 * space). name labels the request in the access log and /metrics (a route may refine it). gate says
 * who may call it under --auth all: GATE_TOKEN a valid token; GATE_NONE anyone; GATE_CAPABILITY
 * anyone, because BitTorrent clients send no Authorization and the route checks the capability in
 * its URL. get_only: other methods get a 405.
 */
enum gate { GATE_TOKEN, GATE_NONE, GATE_CAPABILITY };
static const struct route {
	const char *path;
	mirror__route_fn fn;
	const char *arg;
	const char *name;
	enum gate gate;
	bool get_only;
	const char *refusal;     /* how a refused request is answered: "hf" or "ms" */
} url_map[] = {
	{ "/healthz", route_healthz, NULL, "healthz", GATE_NONE, true, "hf" },
	{ "/metrics", mirror__route_metrics, NULL, "metrics", GATE_TOKEN, true, "hf" },
	{ "/announce", mirror__route_announce, NULL, "announce", GATE_CAPABILITY, true, "hf" },
	{ "/p2p/seed/", mirror__route_webseed, NULL, "webseed", GATE_TOKEN, true, "hf" },
	{ "/p2p/kseed/", mirror__route_kseed, NULL, "webseed", GATE_CAPABILITY, true, "hf" },
	{ "/api/p2p/torrent/", mirror__route_torrent, NULL, "torrent", GATE_TOKEN, true, "hf" },
	{ "/api/p2p/preheat", mirror__route_preheat, NULL, "preheat", GATE_TOKEN, true, "hf" },
	{ "/api/catalog/", mirror__route_catalog, NULL, "catalog_api", GATE_TOKEN, false, "hf" },
	{ "/api/admin/", mirror__route_admin, NULL, "admin", GATE_NONE, false, "hf" }, /* its own token */
	{ "/api/repos/", mirror__route_repos, NULL, "hf_repos", GATE_TOKEN, false, "hf" },
	{ "/api/validate-yaml", mirror__route_validate_yaml, NULL, "hf_validate_yaml", GATE_TOKEN, false, "hf" },
	{ "/api/v1/models/", mirror__route_ms, "model", "ms_api", GATE_TOKEN, false, "ms" },
	{ "/api/v1/datasets/", mirror__route_ms, "dataset", "ms_api", GATE_TOKEN, false, "ms" },
	{ "/s3", mirror__route_s3, NULL, "s3", GATE_NONE, false, "hf" },  /* its own signatures */
	{ "/s3/", mirror__route_s3, NULL, "s3", GATE_NONE, false, "hf" },
	{ NULL, mirror__route_s3_signed, NULL, "s3", GATE_NONE, false, "hf" },
	{ NULL, mirror__route_git, NULL, "git", GATE_TOKEN, false, "git" },
	{ NULL, mirror__route_web, NULL, "web", GATE_TOKEN, false, "hf" },
	{ NULL, mirror__route_hf, NULL, "hf", GATE_TOKEN, false, "hf" },
};

/* May req reach route e? Under --auth all, only with a valid token (CORS preflights aside). Answers
 * the refusal itself and returns false. */
static bool gate_open(struct mirror_routes *r, const struct route *e, struct httpd_req *req)
{
	char buf[512];
	const char *tok;

	if (e->gate != GATE_TOKEN || !r->access || mirror_access_mode(r->access) != ACCESS_ALL ||
	    !strcmp(httpd_method(req), "OPTIONS") || (r->nlocal && mirror__upload_url_ok(r, req)))
		return true;
	if (e->fn == mirror__route_torrent && httpd_query(req) && strstr(httpd_query(req), "cap="))
		return true; /* the route checks the capability (an agent's, from an S3 answer) */
	tok = mirror__request_token(req, buf, sizeof(buf));
	if (mirror_access_token_valid(r->access, tok))
		return true;
	httpd_set_route(req, "auth");
	mirror__refuse(req, false, e->refusal);
	return false;
}

/* The one handler: find the path's route in the map, check its gate and method, call it. */
static int dispatch(void *ud, struct httpd_req *req);

int mirror__dispatch(struct mirror_routes *rt, struct httpd_req *req)
{
	return dispatch(rt, req);
}

static int dispatch(void *ud, struct httpd_req *req)
{
	struct mirror_routes *r = ud;
	const char *path = httpd_path(req), *method = httpd_method(req);
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");

	if (r->s3_domain && mirror__route_s3_host(r, req) != HTTPD_PASS)
		return 0; /* the S3 API's own host name: none of the map's paths there */
	for (size_t i = 0; i < sizeof(url_map) / sizeof(url_map[0]); i++) {
		const struct route *e = &url_map[i];
		const char *rest = path;
		size_t n = e->path ? strlen(e->path) : 0;

		if (e->path && (e->path[n - 1] == '/' ? strncmp(path, e->path, n) : strcmp(path, e->path)))
			continue;
		rest = path + n;
		if (!gate_open(r, e, req))
			return 0;
		if (e->path) {
			httpd_set_route(req, e->name);
			if (e->get_only && !get) {
				httpd_respond_str(req, 405, "text/plain", "method not allowed\n");
				return 0;
			}
		} else {
			httpd_set_route(req, e->name); /* the fallbacks refine it or pass */
		}
		if (e->fn(r, req, rest, e->arg) != HTTPD_PASS)
			return 0;
	}
	httpd_set_route(req, NULL);
	return HTTPD_PASS;
}

static void on_response_done(void *ud, const char *route, int status, uint64_t bytes)
{
	struct mirror_routes *r = ud;
	size_t i;

	for (i = 0; i < r->ncounts; i++)
		if (r->counts[i].status == status && !strcmp(r->counts[i].route, route))
			break;
	if (i == r->ncounts) {
		r->counts = xreallocarray(r->counts, r->ncounts + 1, sizeof(*r->counts));
		r->counts[i] = (struct route_count){ route, status, 0, 0 };
		r->ncounts++;
	}
	r->counts[i].requests++;
	r->counts[i].bytes += bytes;
}

uint64_t mirror__route_bytes(const struct mirror_routes *rt, const char *route)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < rt->ncounts; i++)
		if (!strcmp(rt->counts[i].route, route))
			sum += rt->counts[i].bytes;
	return sum;
}

void mirror__metrics_requests(struct mirror_routes *rt, struct buf *b)
{
	for (size_t i = 0; i < rt->ncounts; i++)
		buf_addf(b, "hubmirror_http_requests_total{route=\"%s\",status=\"%d\"} %llu\n", rt->counts[i].route,
			 rt->counts[i].status, (unsigned long long)rt->counts[i].requests);
}

void mirror_routes_set_peer_mirrors(struct mirror_routes *r, const char *urls)
{
	char **list = str_split(urls, ", ", NULL);

	for (char **p = list; *p; p++) {
		char *t = *p;
		size_t n = strlen(t);
		while (n && t[n - 1] == '/')
			t[--n] = '\0';
		if (!n)
			continue;
		r->peer_mirrors = xreallocarray(r->peer_mirrors, r->npeer_mirrors + 1, sizeof(*r->peer_mirrors));
		r->peer_mirrors[r->npeer_mirrors++] = xstrdup(t);
	}
	str_split_free(list);
}

void mirror_routes_set_ondemand(struct mirror_routes *r, struct mirror_ondemand *od)
{
	r->ondemand = od;
}

void mirror_routes_set_access(struct mirror_routes *r, const struct mirror_access *access)
{
	r->access = access;
}

void mirror_routes_set_seeder(struct mirror_routes *r, struct mirror_seeder *seeder)
{
	r->seeder = seeder;
	if (seeder) /* what agents hold stays seeded: the tracker knows who holds a swarm */
		mirror_seeder_set_held(seeder, mirror__swarm_held, r);
}

void mirror_routes_set_search_budget(struct mirror_routes *r, int ms)
{
	r->search_budget_ms = ms > 0 ? ms : r->search_budget_ms;
}

void mirror_routes_install(struct mirror_routes *r, struct httpd *h)
{
	r->httpd = h;
	httpd_set_observer(h, on_response_done, r);
	httpd_add_handler(h, dispatch, r);
	httpd_set_body_claim(h, mirror__claim_body, r);
}

void mirror_routes_set_loop(struct mirror_routes *r, uv_loop_t *loop)
{
	r->loop = loop;
	uv_timer_init(loop, &r->torrents_timer);
	r->torrents_timer.data = r;
}

void mirror_routes_stop(struct mirror_routes *r)
{
	if (r)
		r->closing = true;
}

void mirror_routes_set_local(struct mirror_routes *r, const char *namespaces, const char *quota)
{
	char **list = str_split(namespaces, ", ", NULL);

	for (char **p = list; *p; p++)
		if (**p) {
			r->local = xreallocarray(r->local, r->nlocal + 1, sizeof(*r->local));
			r->local_quota = xreallocarray(r->local_quota, r->nlocal + 1, sizeof(*r->local_quota));
			r->local_quota[r->nlocal] = -1;
			r->local[r->nlocal++] = xstrdup(*p);
		}
	str_split_free(list);
	list = quota ? str_split(quota, ", ", NULL) : NULL;
	for (char **p = list; p && *p; p++) {
		char *eq = strchr(*p, '=');
		if (!eq)
			continue;
		*eq = '\0';
		for (size_t i = 0; i < r->nlocal; i++)
			if (!strcasecmp(r->local[i], *p))
				r->local_quota[i] = strtoll(eq + 1, NULL, 10);
	}
	if (list)
		str_split_free(list);
}

void mirror_routes_set_admin(struct mirror_routes *r, const struct mirror_admin *a)
{
	r->admin = *a;
}

void mirror_routes_set_write_bounds(struct mirror_routes *r, int64_t body_max, int64_t spool_max)
{
	r->write_body_max = body_max > 0 ? body_max : (int64_t)1 << 30;
	r->write_spool_max = spool_max > 0 ? spool_max : (int64_t)4 << 30;
}

void mirror_routes_free(struct mirror_routes **r)
{
	if (!r || !*r)
		return;
	BUG_ON((*r)->spool_bytes || (*r)->spool_promised); /* every body is released before (httpd_free, the jobs) */
	free((*r)->counts);
	mirror__s3_free(*r);
	mirror__lfs_free(&(*r)->lfs);
	mirror__pool_free(*r);
	pthread_mutex_destroy(&(*r)->pool_mu);
	pthread_mutex_destroy(&(*r)->commit_mu);
	for (size_t i = 0; i < (*r)->nlocal; i++)
		free((*r)->local[i]);
	free((*r)->local);
	free((*r)->local_quota);
	free((*r)->catalog_path);
	for (size_t i = 0; i < (*r)->npeer_mirrors; i++)
		free((*r)->peer_mirrors[i]);
	free((*r)->peer_mirrors);
	p2p_tracker_free(&(*r)->tracker);
	free(*r);
	*r = NULL;
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
