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
#include "store/store.h"
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

static int redispatch(struct mirror_routes *rt, struct httpd_req *req);

static const struct mirror__fronts fronts = {
	.swarm_json = mirror__swarm_json,
	.swarm_stats = mirror__swarm_stats,
	.hf_write = mirror__hf_write,
	.hf_commit = mirror__hf_commit,
	.lfs_upload_batch = mirror__lfs_upload_batch,
	.lfs_put = mirror__lfs_put,
	.lfs_complete = mirror__lfs_complete,
	.lfs_verify = mirror__lfs_verify,
	.upload_url_ok = mirror__upload_url_ok,
	.git_lfs_object = mirror__git_lfs_object,
	.git_receive_repo = mirror__git_receive_repo,
	.xet_write_token = mirror__xet_write_token,
	.xet_batch = mirror__xet_batch,
	.xet_body = mirror__xet_body,
	.xet_file = mirror__xet_file,
	.xet_read_token = mirror__xet_read_token,
	.dispatch = redispatch,
};

struct mirror_routes *mirror_routes_new(struct mirror_data *d, const struct mirror_access *access)
{
	struct mirror_routes *r = xcalloc(1, sizeof(*r));

	r->data = d;
	r->access = access;
	r->swarm = mirror__swarm_new();
	r->fronts = &fronts;
	r->catalog_api = mirror__catalog_api_new();
	r->write = mirror__write_new();
	r->spool = mirror__spool_new();
	r->lfs = mirror__lfs_new();
	r->s3 = mirror__s3_new();
	r->xetw = mirror__xetw_new(d);
	r->pool = mirror__pool_new(d);
	{
		/* the data directory's key signs Xet tokens always, and the swarm's capabilities with tokens on */
		int e = mirror_p2p_secret(d, r->p2p_key);
		bool guarded = access && mirror_access_mode(access) != ACCESS_OPEN;
		r->have_p2p_key = !e && guarded;
		r->have_xet_key = !e;
		if (e)
			log_warn("serve", "no key for capabilities (%s): no Xet%s", err_str(e),
				 guarded ? ", and guarded repos get no torrent" : "");
	}
	return r;
}

/*
 * The URL map: the whole URL space in one place. A path that ends in '/' is a prefix; the routes
 * without a path take what the others leave, in order (the web page's own paths, then the Hub's URL
 * space). name labels the request in the access log and /metrics (a route may refine it). gate says
 * who may call it under --auth all: GATE_TOKEN a valid token; GATE_NONE anyone; GATE_CAPABILITY
 * anyone, because BitTorrent clients send no Authorization and the route checks the capability in
 * its URL; GATE_TOKEN_OR_CAP a valid token, or a request with a capability in its query (cap=),
 * which the route checks (an agent's, from an S3 answer: the torrent); GATE_TOKEN_OR_UPLOAD a valid
 * token, or an LFS object's PUT to an upload URL the batch API gave out, its capability checked here
 * (mirror__upload_url_ok: clients may send no Authorization there); GATE_ADMIN the operator's admin
 * token (the admin API's gate, whatever --auth says). get_only: other methods get a 405.
 */
enum gate { GATE_TOKEN, GATE_NONE, GATE_CAPABILITY, GATE_TOKEN_OR_CAP, GATE_TOKEN_OR_UPLOAD, GATE_ADMIN };
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
	{ "/api/p2p/torrent/", mirror__route_torrent, NULL, "torrent", GATE_TOKEN_OR_CAP, true, "hf" },
	{ "/api/p2p/preheat", mirror__route_preheat, NULL, "preheat", GATE_TOKEN, true, "hf" },
	{ "/api/catalog/requests", mirror__route_requests, NULL, "catalog_api", GATE_TOKEN, false, "hf" },
	{ "/api/catalog/", mirror__route_catalog, NULL, "catalog_api", GATE_TOKEN, false, "hf" },
	{ "/api/admin/requests/", mirror__route_decide, NULL, "admin", GATE_ADMIN, false, "hf" },
	{ "/api/admin/", mirror__route_admin, NULL, "admin", GATE_NONE, false, "hf" }, /* its own token */
	{ "/api/repos/", mirror__route_repos, NULL, "hf_repos", GATE_TOKEN, false, "hf" },
	/* the Xet CAS, one root: the uploads' routes take theirs and pass the rest to the reads' (both check
	 * their own tokens) */
	{ MIRROR__XET_CAS_PATH "/", mirror__route_xet_cas, NULL, "xet_cas", GATE_NONE, false, "hf" },
	{ "/xet-cas/", mirror__route_xet, NULL, "xet_cas", GATE_CAPABILITY, false, "hf" },
	{ "/api/validate-yaml", mirror__route_validate_yaml, NULL, "hf_validate_yaml", GATE_TOKEN, false, "hf" },
	{ "/api/v1/models/", mirror__route_ms, "model", "ms_api", GATE_TOKEN, false, "ms" },
	{ "/api/v1/datasets/", mirror__route_ms, "dataset", "ms_api", GATE_TOKEN, false, "ms" },
	{ "/s3", mirror__route_s3, NULL, "s3", GATE_NONE, false, "hf" },  /* its own signatures */
	{ "/s3/", mirror__route_s3, NULL, "s3", GATE_NONE, false, "hf" },
	{ "/v2", mirror__route_oci, NULL, "oci", GATE_NONE, false, "hf" },  /* its own challenge */
	{ "/v2/", mirror__route_oci, NULL, "oci", GATE_NONE, false, "hf" },
	{ NULL, mirror__route_s3_signed, NULL, "s3", GATE_NONE, false, "hf" },
	{ NULL, mirror__route_git, NULL, "git", GATE_TOKEN_OR_UPLOAD, false, "git" },
	{ NULL, mirror__route_web, NULL, "web", GATE_TOKEN, false, "hf" },
	{ NULL, mirror__route_hf, NULL, "hf", GATE_TOKEN, false, "hf" },
};

/* The gate kinds that let a request without a token through when it carries a capability of its own:
 * is this one such? */
static bool query_cap(struct mirror_routes *r, const struct httpd_req *req)
{
	(void)r;
	return httpd_query(req) && strstr(httpd_query(req), "cap=");
}

static bool upload_url(struct mirror_routes *r, const struct httpd_req *req)
{
	return mirror__has_local(r) && r->fronts->upload_url_ok(r, req);
}

static bool (*const gate_capability[GATE_ADMIN + 1])(struct mirror_routes *r, const struct httpd_req *req) = {
	[GATE_TOKEN_OR_CAP] = query_cap,
	[GATE_TOKEN_OR_UPLOAD] = upload_url,
};

/* May req reach route e? Under --auth all, a gate that wants a token opens only to a valid one (CORS
 * preflights aside), or to the capability its kind takes. Answers the refusal itself and returns false. */
static bool gate_open(struct mirror_routes *r, const struct route *e, struct httpd_req *req)
{
	char buf[512];
	const char *tok;

	if (e->gate == GATE_ADMIN) {
		httpd_set_route(req, e->name); /* a refusal is counted as the admin API's, as ever */
		return mirror__admin_gate(r, req);
	}
	if (e->gate == GATE_NONE || e->gate == GATE_CAPABILITY || !r->access ||
	    mirror_access_mode(r->access) != ACCESS_ALL || !strcmp(httpd_method(req), "OPTIONS"))
		return true;
	if (gate_capability[e->gate] && gate_capability[e->gate](r, req))
		return true; /* a capability instead: the route checks cap=, upload_url checked the URL's */
	tok = mirror__request_token(req, buf, sizeof(buf));
	if (mirror_access_token_valid(r->access, tok))
		return true;
	httpd_set_route(req, "auth");
	mirror__refuse(req, false, e->refusal);
	return false;
}

/* The one handler: find the path's route in the map, check its gate and method, call it. */
static int dispatch(void *ud, struct httpd_req *req);

static int redispatch(struct mirror_routes *rt, struct httpd_req *req)
{
	return dispatch(rt, req);
}

static int dispatch(void *ud, struct httpd_req *req)
{
	struct mirror_routes *r = ud;
	const char *path = httpd_path(req), *method = httpd_method(req);
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");

	if (mirror__route_s3_host(r, req) != HTTPD_PASS)
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
	mirror__swarm_set_peers(r->swarm, urls);
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
	mirror__catalog_api_set_budget(r->catalog_api, ms);
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
	mirror__write_set_loop(r);
}

void mirror_routes_stop(struct mirror_routes *r)
{
	if (!r)
		return;
	r->closing = true;
	mirror__bucket_reads_stop(r);
}

void mirror_routes_set_local(struct mirror_routes *r, const char *namespaces, const char *quota)
{
	mirror__write_set_local(r->write, namespaces, quota);
}

void mirror_routes_set_admin(struct mirror_routes *r, const struct mirror_admin *a)
{
	r->admin = *a;
}

void mirror_routes_set_write_bounds(struct mirror_routes *r, int64_t body_max, int64_t spool_max)
{
	mirror__spool_set_bounds(r->spool, body_max, spool_max);
}

void mirror_routes_free(struct mirror_routes **r)
{
	if (!r || !*r)
		return;
	mirror__spool_free(&(*r)->spool); /* every body was released before (httpd_free, the jobs) */
	free((*r)->counts);
	mirror__s3_free(&(*r)->s3);
	mirror__xetw_free(&(*r)->xetw);
	mirror__lfs_free(&(*r)->lfs);
	mirror__pool_free(&(*r)->pool);
	mirror__write_free(&(*r)->write);
	mirror__swarm_free(&(*r)->swarm);
	mirror__catalog_api_free(&(*r)->catalog_api);
	free(*r);
	*r = NULL;
}
