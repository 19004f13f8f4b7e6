/*
 * routes-web.c - the web page: GET/HEAD "/" (index.html) and "/assets/<name>", from the files of
 * mirror/serve/web/ that embed.py compiled into the binary (web_assets.c). Strong ETags computed at build
 * time answer If-None-Match with 304. index.html is revalidated on every load (no-cache) and pins
 * each asset by version ("assets/app.js?v=<hash>"), so a versioned asset may be kept for a year;
 * without the matching ?v= it is revalidated too. Paths that are not ours pass down the chain (an
 * HF repo may well be called "assets/...").
 *
 * A browser that opens a repository's address on the Hub's pattern (ORG/NAME, datasets/ORG/NAME, the
 * Hub's ORG/NAME/tree/REV/DIR and ORG/NAME/blob/REV/PATH pages, ModelScope's models/ORG/NAME) is sent
 * to the page's view of it (docs/commands/serve.md). Only a GET or HEAD that asks for text/html: API
 * clients and git send other Accepts (and git's own paths were taken up the chain).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "hub/hf.h"
#include "hub/http/http.h"
#include "hub/http/httpd.h"
#include "hub/hub.h"
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

/* Does the request's Accept name text/html (as a browser's navigation does)? */
static bool wants_html(struct httpd_req *req)
{
	const char *a = httpd_header(req, "Accept");
	static const char want[] = "text/html";

	for (; a && *a; a++)
		if (!strncasecmp(a, want, sizeof(want) - 1))
			return true;
	return false;
}

/*
 * A Hub-style repository address: "#/repo/HUB/TYPE/ORG/NAME[?dir=DIR]", relative to the page (so
 * that a mirror behind a prefix sends it under the prefix too) and made of checked parts only: ORG/NAME
 * as hub_check_name takes it (letters, digits, '.', '_', '-': no '%', no '/'), REV hub_check_revision's,
 * DIR decoded, path_check_str'd and escaped again. NULL when the path is no such address.
 */
static char *hub_page_location(const char *path)
{
	struct hf_path s;
	enum hub_kind kind = HUB_HF;
	const char *type = "model";
	size_t base = 0, used = 0, at;
	char *full = NULL, *rev = NULL, *dir = NULL, *loc = NULL;

	hf_path_split(&s, path);
	if (s.n >= 1 && !strcmp(s.v[0], "datasets")) {
		type = "dataset";
		base = 1;
	} else if (s.n >= 1 && !strcmp(s.v[0], "models")) {
		kind = HUB_MS; /* modelscope.cn/models/ORG/NAME */
		base = 1;
	}
	if (s.n < base + 2)
		goto out;
	full = xasprintf("%s/%s", s.v[base], s.v[base + 1]);
	if (base + 2 == s.n && strlen(full) > 4 && !strcmp(full + strlen(full) - 4, ".git"))
		full[strlen(full) - 4] = '\0'; /* a clone URL pasted into the browser: the repo it clones */
	if (hub_check_name(kind, full))
		goto out;
	at = base + 2;
	if (at == s.n || (at + 1 == s.n && !*s.v[at])) {
		dir = xstrdup("");
	} else if (kind == HUB_HF && (!strcmp(s.v[at], "tree") || !strcmp(s.v[at], "blob"))) {
		bool blob = !strcmp(s.v[at], "blob");
		rev = hf_take_revision(s.v, s.n, at + 1, &used);
		if (!rev || hub_check_revision(rev))
			goto out;
		dir = hf_join_decoded(s.v, s.n, at + 1 + used);
		if (!dir)
			goto out;
		if (blob) { /* the file's folder */
			char *slash = strrchr(dir, '/');
			if (!*dir)
				goto out;
			if (slash)
				*slash = '\0';
			else
				dir[0] = '\0';
		}
		if (dir[0] && dir[strlen(dir) - 1] == '/')
			dir[strlen(dir) - 1] = '\0'; /* tree/main/sub/ */
		if (*dir && path_check_str(dir))
			goto out;
	} else {
		goto out;
	}
	{
		struct buf b;
		buf_init(&b);
		/* up to the page from the path's last folder: /ORG/NAME is "../", /datasets/ORG/NAME "../../" */
		for (size_t i = 1; i < s.n; i++)
			buf_addf(&b, "../");
		buf_addf(&b, "#/repo/%s/%s/%s", hub_kind_name(kind), type, full);
		if (*dir) {
			char *e = hub_url_escape(dir, false);
			buf_addf(&b, "?dir=%s", e);
			free(e);
		}
		loc = buf_detach(&b, NULL);
	}
out:
	free(full);
	free(rev);
	free(dir);
	hf_path_release(&s);
	return loc;
}

int mirror__route_web(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	const struct web_asset *a = find_asset(httpd_path(req));
	bool index;

	(void)rt;
	(void)rest;
	(void)arg;
	if (!a) {
		char *loc;
		if ((strcmp(httpd_method(req), "GET") && strcmp(httpd_method(req), "HEAD")) || !wants_html(req) ||
		    !(loc = hub_page_location(httpd_path(req))))
			return HTTPD_PASS;
		httpd_set_route(req, "web_redirect");
		httpd_add_header(req, "Location", loc);
		httpd_add_header(req, "Cache-Control", "no-cache");
		httpd_respond_str(req, 302, "text/plain", "see the repository's page\n");
		free(loc);
		return 0;
	}
	if (strcmp(httpd_method(req), "GET") && strcmp(httpd_method(req), "HEAD")) {
		httpd_add_header(req, "Allow", "GET, HEAD");
		httpd_respond_str(req, 405, "text/plain", "method not allowed\n");
		return 0;
	}
	index = !strcmp(a->path, "/");
	httpd_add_header(req, "ETag", a->etag);
	if (!index) {
		char *v = httpd_query_param(req, "v");
		httpd_add_header(req, "Cache-Control",
				 v && !strcmp(v, a->version) ? "public, max-age=31536000, immutable" : "no-cache");
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
