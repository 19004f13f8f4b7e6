/*
 * endpoint-mirror.c - step 1 of a request to the agent's local hub endpoint (endpoint.c has the whole
 * story): the mirror asked the same method, path and query with the client's Host, Authorization and
 * If-None-Match (a file request as HEAD; S3's signed headers as they are; a registry manifest passed
 * only when it is its digest), the answer's headers the client may see kept, a metadata answer kept
 * under <cache>/agent/http/ and served from there when the mirror cannot be reached, and relayed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "agent-int.h"
#include "base/buf.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "hub/http/http.h"
#include "hub/http/httpd.h"
#include "hub/hub.h"
#include "hub/oci.h"
#include "hub/s3.h"
#include "p2p/p2p.h"
#include "endpoint-int.h"

#define MAX_ANSWER (256u << 20)    /* a metadata answer taken from the mirror */

/* Headers of the mirror's answer that the client gets. */
static const char *const passed[] = {
	"Content-Type", "ETag", "X-Repo-Commit", "X-Error-Code", "X-Error-Message", "Link", "X-Linked-Size",
	"X-Linked-Etag", "Content-Disposition", "Accept-Ranges", "Location", "X-Request-Id", "Last-Modified",
	"x-amz-version-id", "x-amz-request-id", "Cache-Control", "Docker-Content-Digest",
	"Docker-Distribution-API-Version", "WWW-Authenticate", "X-Hubmirror-Repo",
	/* Xet (docs/agent.md, "Xet through the agent"): the mirror's URLs in them point here */
	"X-Xet-Hash", "X-Xet-Refresh-Route", "X-Xet-Access-Token", "X-Xet-Cas-Url", "X-Xet-Token-Expiration", NULL,
};

/* What a Xet client asks resolve for instead of the bytes (docs/protocols/xet.md) */
#define XET_FILEINFO "application/vnd.xet-fileinfo+json"

/* ---- step 1: the mirror ----------------------------------------------------------------------------- */

static void keep_header(void *ud, const char *name, const char *value)
{
	struct agent_ep *e = ud;

	if (!strcasecmp(name, "Content-Length"))
		e->clen = strtoll(value, NULL, 10);
	for (const char *const *p = passed; *p; p++)
		if (!strcasecmp(name, *p))
			json_object_set_new(e->headers, *p, json_string(value));
}

/* Where a metadata answer is kept for offline use: by the hash of its method, its target and its
 * credentials. An answer the mirror gave a token is replayed only to a request with that very
 * Authorization (a digest of it is in the key, not the token), never to one without it or with
 * another; the client's Host is not in the key (see keep_answer). */
static char *kept_path(const struct agent_ep *e)
{
	unsigned char md[SHA256_DIGEST_LENGTH], ad[SHA256_DIGEST_LENGTH];
	char hex[65], ahex[65] = "-", *key, *p;

	if (e->auth && *e->auth) {
		SHA256((const unsigned char *)e->auth, strlen(e->auth), ad);
		hex_encode(ad, sizeof(ad), ahex);
	}
	key = xasprintf("%s %s %s", e->file ? "FILE" : e->method, e->target, ahex);
	SHA256((const unsigned char *)key, strlen(key), md);
	hex_encode(md, sizeof(md), hex);
	p = agent_path_http(e->a, hex);
	free(key);
	return p;
}

/* In s, every "//from/" (a URL the mirror wrote for the Host it was asked with) as "//to/". */
static char *swap_host(const char *s, size_t len, const char *from, const char *to, size_t *out_len)
{
	char *pat = xasprintf("//%s/", from), *rep = xasprintf("//%s/", to);
	size_t plen = strlen(pat), rlen = strlen(rep);
	struct buf b;
	const char *p = s, *end = s + len, *hit;

	buf_init(&b);
	while (p < end && (hit = memmem(p, (size_t)(end - p), pat, plen))) {
		buf_add(&b, p, (size_t)(hit - p));
		buf_add(&b, rep, rlen);
		p = hit + plen;
	}
	buf_add(&b, p, (size_t)(end - p));
	*out_len = b.len;
	free(pat);
	free(rep);
	return buf_detach(&b, NULL);
}

/* Kept with the Host the mirror was asked for: a replay writes the asking client's own Host into the
 * URLs (pagination Links, Locations, bodies), so what one client's Host made the mirror write never
 * reaches another client (a `Host: evil.example` request cannot send later ones elsewhere). */
static void keep_answer(struct agent_ep *e)
{
	char *p = kept_path(e), *dir = agent_path_http(e->a, NULL), *s;
	json_t *j = json_pack("{s:i, s:O, s:s%, s:s?}", "status", (int)e->status, "headers", e->headers, "body",
			      e->answer ? e->answer : "", e->alen, "host", e->host);

	path_mkdirs(dir, 0700);
	s = json_dumps(j, JSON_COMPACT);
	if (s)
		path_write_atomic(p, s, strlen(s), 0600);
	free(s);
	json_decref(j);
	free(dir);
	free(p);
}

static bool kept_answer(struct agent_ep *e)
{
	char *p = kept_path(e), *raw = NULL;
	const char *was, *k;
	size_t len = 0;
	json_t *j = NULL, *b, *v;

	if (!path_read_file(p, MAX_ANSWER * 2, &raw, &len))
		j = json_loadb(raw, len, 0, NULL);
	free(raw);
	free(p);
	b = json_object_get(j, "body");
	if (!json_is_string(b)) {
		json_decref(j);
		return false;
	}
	e->status = (long)json_integer_value(json_object_get(j, "status"));
	json_object_update(e->headers, json_object_get(j, "headers"));
	was = json_string_value(json_object_get(j, "host"));
	if (was && e->host && strcmp(was, e->host)) {
		json_object_foreach(e->headers, k, v) {
			size_t n;
			char *t = swap_host(json_string_value(v), json_string_length(v), was, e->host, &n);
			json_object_set_new(e->headers, k, json_stringn(t, n));
			free(t);
		}
		e->answer = swap_host(json_string_value(b), json_string_length(b), was, e->host, &e->alen);
	} else {
		e->alen = json_string_length(b);
		e->answer = xmalloc(e->alen + 1);
		memcpy(e->answer, json_string_value(b), e->alen + 1);
	}
	json_decref(j);
	return true;
}

/* A blob that is a layer of a manifest this agent passed: a file of a snapshot, asked of the mirror
 * as a file is (HEAD: may this request have it?), its bytes from the cache and the swarm. */
static void oci_blob_layer(struct agent_ep *e)
{
	if (agent_oci_layer_find(e->a, e->oci_name, e->oci_ref, &e->layer))
		return;
	if (hub_spec_parse(e->layer.spec, &e->spec) || !e->spec.revision) {
		agent_oci_layer_release(&e->layer);
		return;
	}
	e->file = e->oci_layer = true;
	e->fpath = xstrdup(e->layer.path);
}

/* A manifest the mirror gave is passed only when it is the digest it says (and was asked by); its
 * layers are remembered (oci.c). */
static void oci_manifest_check(struct agent_ep *e)
{
	const char *why = NULL;

	if (agent_oci_manifest(e->a, e->oci_name, e->oci_ref,
			       json_string_value(json_object_get(e->headers, "Docker-Content-Digest")),
			       json_string_value(json_object_get(e->headers, "X-Repo-Commit")),
			       json_string_value(json_object_get(e->headers, "X-Hubmirror-Repo")),
			       e->answer ? e->answer : "", e->alen, &why))
		e->why = xstrdup(why);
}

#define N_OWN 5

/* The headers the mirror is asked with: the client's Host; credentials other than a bearer token
 * (which .token carries): a registry client's Basic to the token endpoint (an S3 client's are among its
 * signed headers); If-None-Match (not for a file: its ETag is answered here), the S3 ones it signed,
 * Accept for a file (a Xet client asks for the file-info form), Range for the CAS (a reconstruction of
 * part of a file). own[N_OWN] gets what to free. */
static const char **mirror_headers(struct agent_ep *e, char **own)
{
	size_t n = 0, ns = 0;
	const char **hdrs;

	while (e->s3_headers && e->s3_headers[ns])
		ns++;
	hdrs = xcalloc(ns + N_OWN + 2, sizeof(*hdrs));
	own[0] = e->host ? xasprintf("Host: %s", e->host) : NULL;
	own[1] = e->auth && !e->token && !e->s3 ? xasprintf("Authorization: %s", e->auth) : NULL;
	own[2] = e->inm && (!e->file || e->s3) ? xasprintf("If-None-Match: %s", e->inm) : NULL;
	own[3] = e->accept && e->file && !e->s3 ? xasprintf("Accept: %s", e->accept) : NULL;
	own[4] = e->range && e->xet_cas ? xasprintf("Range: %s", e->range) : NULL;
	for (int i = 0; i < 2; i++)
		if (own[i])
			hdrs[n++] = own[i];
	for (size_t i = 0; i < ns; i++)
		if (strncasecmp(e->s3_headers[i], "If-None-Match:", 14) || !own[2])
			hdrs[n++] = e->s3_headers[i];
	for (int i = 2; i < N_OWN; i++)
		if (own[i])
			hdrs[n++] = own[i];
	if (e->s3 && e->file)
		hdrs[n++] = "X-Hubmirror-Head: 1"; /* its headers only: the bytes come from the swarm */
	hdrs[n] = NULL;
	return hdrs;
}

/* One call to the mirror at url: its answer into e. */
static int call_mirror(struct agent_ep *e, const char *url, const char *method, const char **hdrs, char **err)
{
	struct hub_http_call c = { .url = url, .max = MAX_ANSWER, .timeout_s = 300, .method = method,
				   .body = e->blen ? e->body : NULL, .body_len = e->blen, .body_type = e->ctype,
				   .headers = hdrs, .on_header = keep_header, .ud = e, .token = e->token,
				   .connect_timeout_ms = 5000, .stall_s = agent_mirror_stall_s(e->a),
				   .cancel = &e->a->quit };

	json_object_clear(e->headers);
	e->clen = -1;
	free(e->answer);
	e->answer = NULL;
	free(*err);
	*err = NULL;
	return hub_http_call_blocking(&c, &e->answer, &e->alen, &e->status, err);
}

static bool fileinfo_answer(const struct agent_ep *e)
{
	const char *ct = json_string_value(json_object_get(e->headers, "Content-Type"));

	return e->file && !e->s3 && e->status == 200 && ct && strstr(ct, XET_FILEINFO);
}

/* Kept for offline use: metadata GETs and a file's headers (its bytes are in the snapshot); never an
 * answer that says no-store (a Xet token), the CAS's (capabilities that expire in minutes), a registry
 * token (the token flow's answer) nor a blob taken whole from the mirror (a config, or a layer of no
 * manifest passed). */
static bool keepable(const struct agent_ep *e)
{
	const char *cc = json_string_value(json_object_get(e->headers, "Cache-Control"));
	const char *t = e->target;

	if (e->status != 200 || (!e->file && strcmp(e->method, "GET")) || e->xet_cas ||
	    (cc && strstr(cc, "no-store")))
		return false;
	return !(e->oci == AGENT_OCI_BLOB && !e->file) && !(!strncmp(t, "/v2/token", 9) && (!t[9] || t[9] == '?'));
}

void agent_ep_ask_mirror(void *job)
{
	struct agent_ep *e = job;
	char *own[N_OWN], *url = NULL, *err = NULL, *m;
	const char **hdrs;
	int r = -EINVAL;

	if (e->oci == AGENT_OCI_BLOB)
		oci_blob_layer(e);
	hdrs = mirror_headers(e, own);
	/* the mirrors in turn: the first that can be reached answers */
	for (size_t i = 0; r && (m = agent_mirror_at(e->a->cfg->mirror, i)) != NULL; i++) {
		free(url);
		url = xasprintf("%s%s", m, e->target);
		free(m);
		r = call_mirror(e, url, e->file && !e->s3 ? "HEAD" : e->method, hdrs, &err);
	}
	/* a Xet client's resolve: the mirror answered the file-info form, whose body the client reads */
	e->xet_info = !r && fileinfo_answer(e);
	if (e->xet_info && !strcmp(e->method, "GET"))
		r = call_mirror(e, url, "GET", hdrs, &err);
	if (r) {
		e->xet_info = false;
		json_object_clear(e->headers);
		e->offline = (e->file || !strcmp(e->method, "GET")) && kept_answer(e);
		if (!e->offline)
			e->why = xasprintf("cannot reach the mirror at %s: %s", e->a->cfg->mirror, err ? err : "?");
	} else if (e->status == 200 && e->oci == AGENT_OCI_MANIFEST && !strcmp(e->method, "GET")) {
		oci_manifest_check(e);
		if (!e->why)
			keep_answer(e);
	} else if (keepable(e)) {
		keep_answer(e);
	} else if (e->xet_cas && e->status == 200 && e->answer) {
		/* a reconstruction: its fetch URLs learn where their bytes start in the file */
		agent_xet_rewrite(e->range, &e->answer, &e->alen);
	}
	free(err);
	free(url);
	for (int i = 0; i < N_OWN; i++)
		free(own[i]);
	free(hdrs);
}

void agent_ep_set_headers(struct httpd_req *r, json_t *headers, bool with_type)
{
	const char *k;
	json_t *v;

	json_object_foreach(headers, k, v)
		if (with_type || strcasecmp(k, "Content-Type"))
			httpd_add_header(r, k, json_string_value(v));
}

void agent_ep_relay(struct agent_ep *e, struct httpd_req *r)
{
	const char *ct = json_string_value(json_object_get(e->headers, "Content-Type"));

	agent_ep_set_headers(r, e->headers, false);
	if (!strcmp(e->method, "HEAD") && e->clen > 0 && !e->alen)
		/* the length of the body a GET gets (a registry client reads a manifest's size there) */
		httpd_respond_file_framed(r, (int)e->status, ct ? ct : "application/octet-stream", NULL, 0, -1, 0, 0,
					  e->clen);
	else
		httpd_respond(r, (int)e->status, ct ? ct : "application/octet-stream", e->answer ? e->answer : "",
			      e->alen);
}

void agent_ep_fail(struct httpd_req *r, int status, const char *msg)
{
	json_t *j = json_pack("{s:s}", "error", msg);
	char *s = json_dumps(j, JSON_COMPACT);

	if (s3_under_prefix(httpd_path(r)) || s3_signed(httpd_header(r, "Authorization"), httpd_query(r))) {
		/* an S3 client reads AWS's error XML */
		char *xml = s3_error_xml(status == 416 ? "InvalidRange" : status == 504 ? "SlowDown" : "InternalError",
					 msg, NULL, "");
		httpd_respond(r, status, "application/xml", xml, strlen(xml));
		free(xml);
		free(s);
		json_decref(j);
		return;
	}
	httpd_add_header(r, "X-Error-Message", msg);
	httpd_respond_str(r, status, "application/json", s);
	free(s);
	json_decref(j);
}
