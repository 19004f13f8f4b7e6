/*
 * routes-web.c - the web page: GET/HEAD "/" (index.html) and "/assets/<name>", from the files of
 * mirror/serve/web/ that embed.py compiled into the binary (web_assets.c). Strong ETags computed at build
 * time answer If-None-Match with 304. index.html is revalidated on every load (no-cache) and pins
 * each asset by version ("assets/app.js?v=<hash>"), so a versioned asset may be kept for a year;
 * without the matching ?v= it is revalidated too. Paths that are not ours pass down the chain (an
 * HF repo may well be called "assets/...").
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hub/http/httpd.h"
#include "routes-int.h"
#include "web_assets.h"

/* The page talks to its own origin only; nothing may load from elsewhere. */
#define WEB_CSP "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " \
		"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static const struct web_asset *find_asset(const char *path)
{
	for (size_t i = 0; i < mirror__web_assets_count; i++)
		if (!strcmp(mirror__web_assets[i].path, path))
			return &mirror__web_assets[i];
	return NULL;
}

int mirror__route_web(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	const struct web_asset *a = find_asset(httpd_path(req));
	bool index;

	(void)rt;
	(void)rest;
	(void)arg;
	if (!a)
		return HTTPD_PASS;
	if (strcmp(httpd_method(req), "GET") && strcmp(httpd_method(req), "HEAD")) {
		httpd_add_header(req, "Allow", "GET, HEAD");
		httpd_respond_str(req, 405, "text/plain", "method not allowed\n");
		return 0;
	}
	index = !strcmp(a->path, "/");
	httpd_add_header(req, "ETag", a->etag);
	if (!index) {
		char *v = httpd_query_param(req, "v");
		httpd_add_header(req, "Cache-Control", v && !strcmp(v, a->version) ? "public, max-age=31536000, immutable"
										    : "no-cache");
		free(v);
	} else {
		httpd_add_header(req, "Cache-Control", "no-cache");
		httpd_add_header(req, "Content-Security-Policy", WEB_CSP);
		httpd_add_header(req, "Referrer-Policy", "no-referrer");
		httpd_add_header(req, "X-Frame-Options", "DENY");
	}
	httpd_add_header(req, "X-Content-Type-Options", "nosniff");
	if (httpd_etag_matches(httpd_header(req, "If-None-Match"), a->etag)) {
		httpd_respond_str(req, 304, NULL, "");
		return 0;
	}
	httpd_respond(req, 200, a->content_type, a->bytes, a->length);
	return 0;
}
