/*
 * routes.c - the handler chain, and the small routes that belong to no hub (/healthz).
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "base/hex.h"

#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "httpd.h"
#include "routes-int.h"
#include "routes.h"

static int on_healthz(void *ud, struct httpd_req *req)
{
	struct mirror_routes *r = ud;
	int v;
	char *body;

	if (strcmp(httpd_path(req), "/healthz"))
		return HTTPD_PASS;
	v = catalog_stored_version(r->data->catalog);
	body = v > 0 ? xasprintf("{\"status\":\"ok\",\"schema\":%d}\n", v)
		     : xstrdup("{\"status\":\"error\",\"error\":\"catalog unreadable\"}\n");
	httpd_respond(req, v > 0 ? 200 : 503, "application/json", body, strlen(body));
	free(body);
	return 0;
}

struct mirror_routes *mirror_routes_new(struct mirror_data *d)
{
	struct mirror_routes *r = xcalloc(1, sizeof(*r));

	r->data = d;
	return r;
}

void mirror_routes_install(struct mirror_routes *r, struct httpd *h)
{
	httpd_add_handler(h, on_healthz, r);
	httpd_add_handler(h, mirror__route_hf, r);
}

void mirror_routes_free(struct mirror_routes **r)
{
	if (!r || !*r)
		return;
	free(*r);
	*r = NULL;
}

void mirror__respond_json(struct httpd_req *req, int status, json_t *body)
{
	char *s = json_dumps(body, JSON_COMPACT), etag[48];
	unsigned char md[20];
	unsigned int n;
	const char *inm;
	size_t len = strlen(s);

	json_decref(body);
	if (status == 200) {
		/* A weak ETag over the body, as the Hub sends: clients revalidate with If-None-Match. */
		EVP_Digest(s, len, md, &n, EVP_sha1(), NULL);
		memcpy(etag, "W/\"", 3);
		hex_encode(md, 20, etag + 3);
		memcpy(etag + 43, "\"", 2);
		httpd_add_header(req, "ETag", etag);
		inm = httpd_header(req, "If-None-Match");
		if (inm && (strstr(inm, etag + 2) || !strcmp(inm, "*"))) {
			httpd_respond(req, 304, NULL, "", 0);
			free(s);
			return;
		}
	}
	httpd_respond(req, status, "application/json", s, len);
	free(s);
}
