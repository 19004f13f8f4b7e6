/*
 * respond.c - JSON answers, given at once (mirror__respond_json) or by a job on a worker (defer.c): the
 * body dumped with a weak ETag over it, and If-None-Match answered 304. Both the routes and the
 * deferred answers stand on it.
 */
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "base/hex.h"
#include "routes-int.h"

char *mirror__json_dump(json_t *body, size_t *len, char etag[48])
{
	char *s;
	unsigned char md[20];
	unsigned int n;
	json_t *rid;

	if (!body)
		return NULL;
	if (etag && (rid = json_object_get(body, "RequestId"))) {
		/* ModelScope's envelope names each answer (RequestId, its last member): the tag is over the
		 * rest, so that the same content keeps the same tag and If-None-Match works */
		json_incref(rid);
		json_object_del(body, "RequestId");
		s = json_dumps(body, JSON_COMPACT);
		json_object_set_new(body, "RequestId", rid);
		EVP_Digest(s ? s : "", s ? strlen(s) : 0, md, &n, EVP_sha1(), NULL);
		free(s);
	}
	s = json_dumps(body, JSON_COMPACT);
	*len = s ? strlen(s) : 0;
	if (etag && !json_object_get(body, "RequestId"))
		EVP_Digest(s ? s : "", *len, md, &n, EVP_sha1(), NULL);
	json_decref(body);
	if (etag) {
		/* A weak ETag over the body, as the Hub sends: clients revalidate with If-None-Match. */
		memcpy(etag, "W/\"", 3);
		hex_encode(md, 20, etag + 3);
		memcpy(etag + 43, "\"", 2);
	}
	return s;
}

void mirror__respond_dumped(struct httpd_req *req, int status, const char *text, size_t len, const char *etag)
{
	/* A value built from request bytes that are not UTF-8 makes jansson give NULL: answer plainly
	 * instead of trusting every caller to have checked. */
	if (!text) {
		httpd_respond_str(req, status >= 400 ? status : 400, "application/json", "{\"error\":\"bad request\"}");
		return;
	}
	if (etag) {
		httpd_add_header(req, "ETag", etag);
		if (httpd_etag_matches(httpd_header(req, "If-None-Match"), etag)) {
			httpd_respond_str(req, 304, NULL, "");
			return;
		}
	}
	httpd_respond(req, status, "application/json", text, len);
}

void mirror__respond_json(struct httpd_req *req, int status, json_t *body)
{
	char etag[48], *s;
	size_t len = 0;

	s = mirror__json_dump(body, &len, status == 200 ? etag : NULL);
	mirror__respond_dumped(req, status, s, len, status == 200 ? etag : NULL);
	free(s);
}
