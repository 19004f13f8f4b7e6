/*
 * routes-admin.c - the operator's API under /api/admin/ (docs/http-api.md): the running sync and the
 * schedule, a sync now, pausing and resuming the schedule, adding and removing repositories. On only
 * with serve --admin-token-file, and only for a request bearing that token, compared in constant
 * time (their SHA-256 digests, so the length does not show either).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "base/err.h"
#include "base/log.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/hub.h"
#include "mirror/data.h"
#include "routes-int.h"

static void reply(struct httpd_req *req, int status, json_t *body)
{
	mirror__respond_json(req, status, body);
}

static void error(struct httpd_req *req, int status, const char *msg)
{
	if (status == 401)
		httpd_add_header(req, "WWW-Authenticate", "Bearer realm=\"hubmirror admin\"");
	reply(req, status, json_pack("{s:s}", "error", msg));
}

static bool token_ok(const struct mirror_routes *rt, struct httpd_req *req, bool *given)
{
	const char *h = httpd_header(req, "Authorization"), *t = h ? skip_prefix(h, "Bearer ") : NULL;
	unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];

	*given = t && *t;
	if (!*given)
		return false;
	SHA256((const unsigned char *)t, strlen(t), a);
	SHA256((const unsigned char *)rt->admin.token, strlen(rt->admin.token), b);
	return CRYPTO_memcmp(a, b, sizeof(a)) == 0;
}

/* The JSON body of a POST, or NULL (answered 400). */
static json_t *body_json(struct httpd_req *req, bool may_be_empty)
{
	size_t len = 0;
	const char *b = httpd_body(req, &len);
	json_t *j;

	if (!len && may_be_empty)
		return json_object();
	j = b ? json_loadb(b, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
	if (!json_is_object(j)) {
		json_decref(j);
		error(req, 400, "the body must be a JSON object");
		return NULL;
	}
	return j;
}

/* POST /api/admin/repos {"spec", "include"?, "exclude"?, "refs"?, "prefer_safetensors"?, "open"?,
 * "preheat"?}: track a repository (or change its options), as `hubmirror add` does. */
static void admin_add(struct mirror_routes *rt, struct httpd_req *req)
{
	json_t *b = body_json(req, false), *inc, *exc, *refs, *v;
	struct hub_spec spec = { 0 };
	char *is = NULL, *es = NULL, *rs = NULL, *os = NULL;
	json_t *opts = json_object();
	static const char *const flags[] = { "open", "preheat", "prefer_safetensors" };
	bool created = false;
	size_t i;
	struct catalog *c = rt->data->catalog;

	if (!b)
		return;
	inc = json_object_get(b, "include");
	exc = json_object_get(b, "exclude");
	refs = json_object_get(b, "refs");
	if (!json_is_string(json_object_get(b, "spec")) ||
	    hub_spec_parse(json_string_value(json_object_get(b, "spec")), &spec)) {
		error(req, 400, "spec must be hf:ORG/NAME, hf:datasets/ORG/NAME, ms:ORG/NAME or ms:datasets/ORG/NAME");
		goto out;
	}
	if ((inc && !json_is_array(inc)) || (exc && !json_is_array(exc)) ||
	    (refs && !json_is_string(refs) && !json_is_array(refs))) {
		error(req, 400, "include and exclude are arrays of globs; refs a word or an array of names");
		goto out;
	}
	json_array_foreach(inc, i, v)
		if (!json_is_string(v) || !json_string_length(v) || json_string_length(v) > 1024) {
			error(req, 400, "a glob must be a string of 1 to 1024 bytes");
			goto out;
		}
	json_array_foreach(exc, i, v)
		if (!json_is_string(v) || !json_string_length(v) || json_string_length(v) > 1024) {
			error(req, 400, "a glob must be a string of 1 to 1024 bytes");
			goto out;
		}
		if (json_is_string(refs) && strcmp(json_string_value(refs), "tags") &&
		    strcmp(json_string_value(refs), "default") && strcmp(json_string_value(refs), "all")) {
			error(req, 400, "refs is tags, default, all, or an array of ref names");
			goto out;
		}
	json_array_foreach(refs, i, v)
		if (!json_is_string(v) || hub_check_revision(json_string_value(v))) {
			error(req, 400, "a ref name is not a sane revision");
			goto out;
		}
	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		v = json_object_get(b, flags[i]);
		if (v && !json_is_boolean(v)) {
			error(req, 400, "open, preheat and prefer_safetensors are true or false");
			goto out;
		}
		if (json_is_true(v))
			json_object_set_new(opts, flags[i], json_true());
	}
	os = json_dumps(opts, JSON_COMPACT | JSON_SORT_KEYS); /* as add writes them */
	is = inc ? json_dumps(inc, JSON_COMPACT) : xstrdup("[]");
	es = exc ? json_dumps(exc, JSON_COMPACT) : xstrdup("[]");
	rs = !refs                  ? xstrdup("tags")
	     : json_is_string(refs) ? xstrdup(json_string_value(refs))
				    : json_dumps(refs, JSON_COMPACT);
	if (catalog_repo_add(c, hub_kind_name(spec.hub), hub_type_name(spec.type), spec.name,
			     spec.revision ? spec.revision : hub_default_revision(spec.hub), is, es, os, &created) ||
	    catalog_repo_set_refs(c, hub_kind_name(spec.hub), hub_type_name(spec.type), spec.name, rs)) {
		error(req, 500, "catalog error");
		goto out;
	}
	{
		char *s = hub_spec_format(&spec, 0);
		log_info("admin", "%s: %s %s", httpd_peer(req), created ? "tracking" : "options replaced for", s);
		reply(req, created ? 201 : 200, json_pack("{s:s, s:b}", "spec", s, "created", created));
		free(s);
	}
out:
	hub_spec_release(&spec);
	json_decref(b);
	free(is);
	free(es);
	free(rs);
	free(os);
	json_decref(opts);
}

/* DELETE /api/admin/repos/{hub}/{type}/{org}/{name} */
static void admin_remove(struct mirror_routes *rt, struct httpd_req *req, const char *rest)
{
	char hub[8], type[16];
	const char *name;
	int e;

	if (sscanf(rest, "%7[a-z]/%15[a-z]/", hub, type) != 2 || (strcmp(hub, "hf") && strcmp(hub, "ms")) ||
	    (strcmp(type, "model") && strcmp(type, "dataset"))) {
		error(req, 404, "no such repository");
		return;
	}
	name = rest + strlen(hub) + strlen(type) + 2;
	if (hub_check_name(strcmp(hub, "hf") ? HUB_MS : HUB_HF, name)) {
		error(req, 404, "no such repository");
		return;
	}
	e = catalog_repo_remove(rt->data->catalog, hub, type, name);
	if (e == HM_ERR_NOT_FOUND)
		error(req, 404, "not tracked");
	else if (e)
		error(req, 500, "catalog error");
	else {
		log_info("admin", "%s: stopped tracking %s:%s%s", httpd_peer(req), hub,
			 strcmp(type, "dataset") ? "" : "datasets/", name);
		reply(req, 200, json_pack("{s:s}", "removed", name));
	}
}

/* POST /api/admin/sync {"specs"?: [...], "json"?: bool}: a sync now (the tracked repos named, or
 * all); the answer's "run" names its report (GET /api/admin/sync/report). */
static void admin_sync(struct mirror_routes *rt, struct httpd_req *req)
{
	json_t *b = body_json(req, true), *specs, *v, *js;
	int64_t run = 0;
	size_t i;
	int e;

	if (!b)
		return;
	specs = json_object_get(b, "specs");
	if (specs && !json_is_array(specs)) {
		error(req, 400, "specs is an array of repository specs");
		goto out;
	}
	json_array_foreach(specs, i, v) {
		struct hub_spec s = { 0 };
		struct catalog_repo r;
		if (!json_is_string(v) || hub_spec_parse(json_string_value(v), &s) || s.revision) {
			hub_spec_release(&s);
			error(req, 400, "specs name tracked repositories (hf:ORG/NAME ..., no @REVISION)");
			goto out;
		}
		e = catalog_repo_get(rt->data->catalog, hub_kind_name(s.hub), hub_type_name(s.type), s.name, &r);
		hub_spec_release(&s);
		if (e) {
			error(req, 404, "a spec names a repository that is not tracked");
			goto out;
		}
		catalog_repo_release(&r);
	}
	js = json_object_get(b, "json");
	if (js && !json_is_boolean(js)) {
		error(req, 400, "json is true or false");
		goto out;
	}
	e = rt->admin.sync_now(rt->admin.ud, specs, json_is_true(js), &run);
	if (e == -EBUSY)
		error(req, 409, "a sync is running: see /api/admin/status");
	else if (e)
		error(req, 500, "cannot start the sync");
	else {
		log_info("admin", "%s: sync started (%s)", httpd_peer(req),
			 json_array_size(specs) ? "the repositories named" : "all");
		reply(req, 202, json_pack("{s:b, s:I}", "started", true, "run", (json_int_t)run));
	}
out:
	json_decref(b);
}

bool mirror__admin_gate(const struct mirror_routes *rt, struct httpd_req *req)
{
	bool given;

	if (!rt->admin.token) {
		error(req, 404, "the admin API is off (serve --admin-token-file)");
		return false;
	}
	if (!token_ok(rt, req, &given)) {
		error(req, given ? 403 : 401, given ? "wrong admin token" : "the admin API needs the admin token");
		return false;
	}
	return true;
}

int mirror__route_admin(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	const char *method = httpd_method(req);

	(void)arg;
	if (!mirror__admin_gate(rt, req))
		return 0;
	if (!strcmp(rest, "status") && !strcmp(method, "GET")) {
		reply(req, 200, rt->admin.status(rt->admin.ud));
	} else if (!strcmp(rest, "sync") && !strcmp(method, "POST")) {
		admin_sync(rt, req);
	} else if (!strcmp(rest, "sync/report") && !strcmp(method, "GET")) {
		/* ?run=N&from=K: the lines a sync run printed, from the K-th on, as a local sync prints them */
		char *rs = httpd_query_param(req, "run"), *fs = httpd_query_param(req, "from"), *end = NULL;
		long long run = rs ? strtoll(rs, &end, 10) : -1, from = 0;
		json_t *rep = NULL;
		if (!rs || *end || run < 1)
			error(req, 400, "give run=N (the number POST /api/admin/sync answered)");
		else if (fs && ((from = strtoll(fs, &end, 10)) < 0 || *end))
			error(req, 400, "from is a line number");
		else if (!(rep = rt->admin.report(rt->admin.ud, run, from)))
			error(req, 404, "no such sync run (this serve keeps the report of its last one)");
		else
			reply(req, 200, rep);
		free(rs);
		free(fs);
	} else if (!strcmp(rest, "schedule") && !strcmp(method, "POST")) {
		json_t *b = body_json(req, false), *p = b ? json_object_get(b, "paused") : NULL;
		if (b && !json_is_boolean(p))
			error(req, 400, "the body is {\"paused\": true|false}");
		else if (b) {
			rt->admin.pause(rt->admin.ud, json_is_true(p));
			log_info("admin", "%s: schedule %s", httpd_peer(req), json_is_true(p) ? "paused" : "resumed");
			reply(req, 200, json_pack("{s:b}", "paused", json_is_true(p)));
		}
		json_decref(b);
	} else if (!strcmp(rest, "repos") && !strcmp(method, "POST")) {
		admin_add(rt, req);
	} else if (skip_prefix(rest, "repos/") && !strcmp(method, "DELETE")) {
		admin_remove(rt, req, skip_prefix(rest, "repos/"));
	} else {
		error(req, 404, "no such admin call (status, sync, sync/report, schedule, repos)");
	}
	return 0;
}
