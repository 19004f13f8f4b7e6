/*
 * respond.c - JSON answers, given at once (mirror__respond_json) or by a job on a worker (defer.c): the
 * body dumped with a weak ETag over it, and If-None-Match answered 304; and the answers in each hub's
 * words every front may give (the Hugging Face Hub's CORS and error headers, ModelScope's envelope,
 * the on-demand engine's refusals). Part of the floor: the routes and the deferred answers stand on it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "base/hex.h"
#include "base/xmalloc.h"
#include "hub/http/httpd.h"
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

/* ---- answers in a hub's words ---- */

static const char cors_expose[] =
	"X-Repo-Commit, X-Request-Id, X-Error-Code, X-Error-Message, ETag, Link, Accept-Ranges, "
	"Content-Range, X-Linked-Size, X-Linked-ETag, X-Xet-Hash, X-Xet-Refresh-Route, X-Xet-Cas-Url, "
	"X-Xet-Access-Token, X-Xet-Token-Expiration";

void mirror__hf_cors(struct httpd_req *req)
{
	httpd_add_header(req, "Access-Control-Allow-Origin", "*");
	httpd_add_header(req, "Access-Control-Expose-Headers", cors_expose);
}

/* The Hub's error answer: status, X-Error-Code (may be NULL), X-Error-Message, {"error": msg}. */
void mirror__hf_error(struct httpd_req *req, int status, const char *code, const char *msg, const char *commit)
{
	json_t *o = json_pack("{s:s}", "error", msg);

	mirror__hf_cors(req);
	if (code)
		httpd_add_header(req, "X-Error-Code", code);
	httpd_add_header(req, "X-Error-Message", msg);
	if (commit)
		httpd_add_header(req, "X-Repo-Commit", commit);
	mirror__respond_json(req, status, o);
}

void mirror__hf_refuse(struct httpd_req *req, int status, const char *type, const char *name, const char *msg)
{
	(void)type;
	(void)name;
	if (status == 404)
		mirror__hf_error(req, 404, "RepoNotFound", "Repository not found", NULL);
	else
		mirror__hf_error(req, status, NULL, msg, NULL);
}

/* mirror__hf_error for a deferred answer (on a worker): the same answer; CORS was added on the loop. */
void mirror__hf_job_error(struct mirror__job *j, int status, const char *code, const char *msg, const char *commit)
{
	if (code)
		mirror__job_header(j, "X-Error-Code", "%s", code);
	mirror__job_header(j, "X-Error-Message", "%s", msg);
	if (commit)
		mirror__job_header(j, "X-Repo-Commit", "%s", commit);
	json_decref(j->body);
	j->status = status;
	j->body = json_pack("{s:s}", "error", msg);
}

/* The envelope around data (consumed); on the loop or a worker. */
json_t *mirror__ms_envelope_json(int status, json_t *data, const char *message)
{
	char rid[40];
	struct timespec ts;
	uint64_t t;

	/* RequestId: only needs to be unique enough to quote in a bug report. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	snprintf(rid, sizeof(rid), "hm-%016" PRIx64 "-%04x", t, (unsigned)(t >> 7) & 0xffff);
	return json_pack("{s:i, s:b, s:o, s:s, s:s}", "Code", status, "Success", status == 200, "Data",
			 data ? data : json_null(), "Message", message, "RequestId", rid);
}

void mirror__ms_refuse(struct httpd_req *req, int status, const char *type, const char *name, const char *msg)
{
	char *m = status == 404 ? xasprintf("%s %s not found", type, name) : NULL;

	mirror__respond_json(req, status, mirror__ms_envelope_json(status, NULL, m ? m : msg));
	free(m);
}
