/*
 * routes-requests.c - users ask for repositories the mirror lacks (docs/http-api.md):
 *   GET  /api/catalog/requests[?state=pending|approved|declined]   the list (pending first)
 *   POST /api/catalog/requests {"spec", "reason"?}                  ask (a pending one gains a vote)
 *   POST /api/admin/requests/{id} {"decision": "approve"|"decline", "note"?}   the operator decides;
 *        approving tracks the repository and starts a sync of it (or it waits for the running one)
 * Under a tokens file, asking takes a valid token: the request records a short hash of it (never
 * the token), else the peer's address.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/sha.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/hub.h"
#include "mirror/data.h"
#include "access.h"
#include "routes-int.h"

#define REASON_MAX 1000
#define PENDING_MAX 1000

static void answer(struct httpd_req *req, int status, json_t *body)
{
	httpd_add_header(req, "Access-Control-Allow-Origin", "*");
	httpd_add_header(req, "Cache-Control", "no-store");
	mirror__respond_json(req, status, body);
}

static void refuse_json(struct httpd_req *req, int status, const char *msg)
{
	answer(req, status, json_pack("{s:s}", "error", msg));
}

json_t *mirror__request_json(const struct catalog_request *q, bool full)
{
	char *spec = xasprintf("%s:%s%s", q->hub, strcmp(q->type, "dataset") ? "" : "datasets/", q->name);
	json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:s, s:I, s:I}", "id", (json_int_t)q->id, "spec", spec, "hub",
			      q->hub, "type", q->type, "state", q->state, "votes", (json_int_t)q->votes, "requested_at",
			      (json_int_t)q->requested_at);

	json_object_set_new(o, "reason", q->reason ? json_string(q->reason) : json_null());
	json_object_set_new(o, "decided_at", q->decided_at ? json_integer(q->decided_at) : json_null());
	json_object_set_new(o, "note", q->note ? json_string(q->note) : json_null());
	if (full) {
		json_object_set_new(o, "requested_by", q->requested_by ? json_string(q->requested_by) : json_null());
		json_object_set_new(o, "decided_by", q->decided_by ? json_string(q->decided_by) : json_null());
	}
	free(spec);
	return o;
}

static int list_cb(void *ud, const struct catalog_request *q)
{
	json_array_append_new(ud, mirror__request_json(q, false));
	return 0;
}

/* A printable one-line text of at most max bytes (NUL and control bytes refused). */
static bool text_ok(json_t *v, size_t max)
{
	const unsigned char *s = (const unsigned char *)json_string_value(v);

	if (!s || json_string_length(v) > max)
		return false;
	for (; *s; s++)
		if (*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static void ask(struct mirror_routes *rt, struct httpd_req *req)
{
	size_t len = 0;
	const char *body = httpd_body(req, &len);
	json_t *b = body ? json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL) : NULL, *reason;
	struct hub_spec spec = { 0 };
	struct catalog_repo repo;
	char tokbuf[512], by[64];
	const char *tok = mirror__request_token(req, tokbuf, sizeof(tokbuf));
	int64_t id = 0;
	bool created = false;
	int e;

	if (rt->access && mirror_access_mode(rt->access) != ACCESS_OPEN &&
	    !mirror_access_token_valid(rt->access, tok)) {
		refuse_json(req, 401, "asking for a repository takes a token on this mirror");
		goto out;
	}
	if (!json_is_object(b) || !json_is_string(json_object_get(b, "spec")) ||
	    hub_spec_parse(json_string_value(json_object_get(b, "spec")), &spec) || spec.revision) {
		refuse_json(
			req, 400,
			"the body is {\"spec\": \"hf:ORG/NAME\" (or hf:datasets/..., ms:...), \"reason\": \"...\"}");
		goto out;
	}
	reason = json_object_get(b, "reason");
	if (reason && !json_is_null(reason) && !text_ok(reason, REASON_MAX)) {
		refuse_json(req, 400, "the reason is one line of text, at most 1000 bytes");
		goto out;
	}
	e = catalog_repo_get(rt->data->catalog, hub_kind_name(spec.hub), hub_type_name(spec.type), spec.name, &repo);
	if (!e) {
		/* a private repo nobody may see here is asked for like one the mirror lacks: the answer
		 * must not tell that it is tracked */
		bool seen = mirror__repo_visible(rt, req, &repo);
		catalog_repo_release(&repo);
		if (seen) {
			refuse_json(req, 409, "this repository is mirrored already");
			goto out;
		}
	}
	if (tok) {
		unsigned char md[SHA256_DIGEST_LENGTH];
		char hex[65];
		SHA256((const unsigned char *)tok, strlen(tok), md);
		hex_encode(md, sizeof(md), hex);
		snprintf(by, sizeof(by), "token:%.8s", hex);
	} else {
		snprintf(by, sizeof(by), "%s", httpd_peer(req));
	}
	e = catalog_request_add(rt->data->catalog, hub_kind_name(spec.hub), hub_type_name(spec.type), spec.name,
				json_string_value(reason), by, PENDING_MAX, &id, &created);
	if (e == HM_ERR_QUOTA) {
		refuse_json(req, 429, "too many requests are pending: the operator has to go through them first");
	} else if (e) {
		refuse_json(req, 500, "catalog error");
	} else {
		struct catalog_request q;
		if (created)
			log_info("requests", "%s asks for %s:%s%s (request %lld)", by, hub_kind_name(spec.hub),
				 spec.type == HUB_DATASET ? "datasets/" : "", spec.name, (long long)id);
		if (catalog_request_get(rt->data->catalog, id, &q)) {
			refuse_json(req, 500, "catalog error");
		} else {
			answer(req, created ? 201 : 200, mirror__request_json(&q, false));
			catalog_request_release(&q);
		}
	}
out:
	hub_spec_release(&spec);
	json_decref(b);
}

int mirror__route_requests(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	const char *m = httpd_method(req);

	(void)rest;
	(void)arg;
	if (!strcmp(m, "POST")) {
		ask(rt, req);
	} else if (!strcmp(m, "GET") || !strcmp(m, "HEAD")) {
		char *state = httpd_query_param(req, "state");
		json_t *a = json_array();
		int64_t pending = 0;
		if (state && strcmp(state, "pending") && strcmp(state, "approved") && strcmp(state, "declined")) {
			refuse_json(req, 400, "state is pending, approved or declined");
		} else if (catalog_requests_each(rt->data->catalog, state, 500, list_cb, a) ||
			   catalog_requests_pending(rt->data->catalog, &pending)) {
			refuse_json(req, 500, "catalog error");
		} else {
			answer(req, 200, json_pack("{s:O, s:I}", "requests", a, "pending", (json_int_t)pending));
		}
		json_decref(a);
		free(state);
	} else {
		refuse_json(req, 405, "GET or POST");
	}
	return 0;
}

static void decide(struct mirror_routes *rt, struct httpd_req *req, const char *idtext)
{
	size_t len = 0;
	const char *body = httpd_body(req, &len);
	json_t *b = body ? json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL) : NULL, *note, *o;
	const char *decision = json_string_value(json_object_get(b, "decision"));
	struct catalog_request q = { 0 };
	struct catalog *c = rt->data->catalog;
	char *end, *spec = NULL;
	long long id = strtoll(idtext, &end, 10);
	bool approve, sync_started = false;
	int e;

	if (end == idtext || *end || id <= 0) {
		refuse_json(req, 404, "no such request");
		goto out;
	}
	note = json_object_get(b, "note");
	if (!decision || (strcmp(decision, "approve") && strcmp(decision, "decline")) ||
	    (note && !json_is_null(note) && !text_ok(note, REASON_MAX))) {
		refuse_json(req, 400, "the body is {\"decision\": \"approve\"|\"decline\", \"note\": \"...\"}");
		goto out;
	}
	approve = !strcmp(decision, "approve");
	e = catalog_request_get(c, id, &q);
	if (e == HM_ERR_NOT_FOUND || (!e && strcmp(q.state, "pending"))) {
		refuse_json(req, e ? 404 : 409, e ? "no such request" : "this request was decided already");
		goto out;
	}
	if (e) {
		refuse_json(req, 500, "catalog error");
		goto out;
	}
	spec = xasprintf("%s:%s%s", q.hub, strcmp(q.type, "dataset") ? "" : "datasets/", q.name);
	if (approve &&
	    catalog_repo_add(c, q.hub, q.type, q.name, hub_default_revision(strcmp(q.hub, "ms") ? HUB_HF : HUB_MS),
			     NULL, NULL, NULL, NULL)) {
		refuse_json(req, 500, "catalog error");
		goto out;
	}
	e = catalog_request_decide(c, id, approve, "admin", json_string_value(note));
	if (e) {
		refuse_json(req, e == HM_ERR_NOT_FOUND ? 409 : 500,
			    e == HM_ERR_NOT_FOUND ? "decided meanwhile" : "catalog error");
		goto out;
	}
	if (approve && rt->admin.sync_now) {
		json_t *specs = json_pack("[s]", spec);
		int64_t run;
		sync_started = rt->admin.sync_now(rt->admin.ud, specs, false, &run) == 0;
		json_decref(specs);
	}
	log_info("admin", "%s: request %lld for %s %s%s", httpd_peer(req), id, spec, approve ? "approved" : "declined",
		 approve ? (sync_started ? ", syncing it now" : ", synced by the next run") : "");
	catalog_request_release(&q);
	if (catalog_request_get(c, id, &q)) {
		refuse_json(req, 500, "catalog error");
		goto out;
	}
	o = mirror__request_json(&q, true);
	json_object_set_new(o, "sync_started", json_boolean(sync_started));
	answer(req, 200, o);
out:
	catalog_request_release(&q);
	free(spec);
	json_decref(b);
}

int mirror__route_decide(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	(void)arg;
	if (strcmp(httpd_method(req), "POST"))
		return HTTPD_PASS; /* the admin API's own answer for what it has not */
	decide(rt, req, rest);
	return 0;
}
