/*
 * endpoint.c - the agent's local hub endpoint (agent --http HOST:PORT): the Hugging Face and ModelScope
 * APIs on the instance, so that HF_ENDPOINT / MODELSCOPE_DOMAIN clients (hf download, transformers,
 * vLLM, the ModelScope SDKs) work unchanged with their file bytes coming through the swarm and the
 * agent's cache (docs/agent.md, "The local endpoint").
 *
 * Every request is answered off the loop, in steps (httpd_defer, each step's done deferring the next):
 *  1. ask the mirror: the same method, path and query, with the client's Host (so the URLs the mirror
 *     writes, pagination Links among them, point back here), Authorization and If-None-Match. A file
 *     request (HF resolve, ModelScope repo?FilePath=) is asked as HEAD: the mirror's headers
 *     (commit, ETag, linked size, name) are the answer's, the bytes are not taken from it. A metadata
 *     answer is kept under <cache>/agent/http/ and served from there when the mirror cannot be reached.
 *  2. a file of a commit the agent does not hold: the snapshot's description and torrent from the
 *     mirror, then (on the loop) into the session like a pull;
 *  3. wait for the first bytes of the range to be verified in the cache file and open it;
 *  then the body goes out with sendfile as its pieces verify (httpd_respond_file_gated): a byte that
 *  has not passed its piece's hash is never sent, and a transfer that cannot finish is cut short.
 *
 * S3 requests (docs/protocols/s3.md: under /s3, or signed at the root) go the same way. The mirror
 * checks their signatures, so the agent sends the headers a request signed on with it unchanged; a
 * GetObject keeps its method (it is signed) and carries X-Hubmirror-Head, for the mirror to answer
 * its headers only, and the bytes come from the swarm like a resolve's. An S3 client shows no bearer
 * token: once the mirror admitted its signed request, the agent asks for the snapshot with a token of
 * its own (agent --token-file), as mount and pull ask with theirs; the mirror's answer to the signed
 * request carries nothing its client could not see.
 *
 * Registry requests (/v2/, docs/agent.md "The registry mirror"; oci.c) go the same way too: a manifest
 * is metadata, passed once its digest is checked, its layers remembered; a blob that is such a layer is
 * a file (asked as HEAD, the bytes from the swarm), a tar layer the file between its header and zeros,
 * sent as the file's pieces verify, its digest checked once the cache holds the file whole (start_tar);
 * any other blob is relayed.
 *
 * Xet reads (docs/agent.md "Xet through the agent"; xet.c): resolve, the read token and the
 * reconstructions are the mirror's answers relayed (a reconstruction's fetch URLs given their offsets),
 * never kept; a xorb range is the agent's own, made from the cache file once the mirror admitted it.
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
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/path.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "hub/hf.h"
#include "hub/http/http.h"
#include "hub/http/httpd.h"
#include "hub/hub.h"
#include "hub/ms.h"
#include "hub/oci.h"
#include "hub/s3.h"
#include "p2p/p2p.h"

#define READ_WAIT_S 600            /* a body waits this long for its next verified bytes */
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
#define XET_CAS "/xet-cas/"

struct agent_ep {
	struct agent *a;
	/* the request, copied */
	char *method, *target, *host, *auth, *inm, *range, *body, *ctype, *accept;
	size_t blen;
	bool xet_cas;                   /* a request to the CAS (a reconstruction): relayed with its Range */
	bool xet_info;                  /* the mirror answered resolve with Xet's file-info form */
	char *token;                    /* the bearer token of auth, for the snapshot calls */
	/* a file request: its repo, revision and path (NULL otherwise) */
	struct hub_spec spec;
	char *fpath;
	bool file;
	bool s3;                        /* an S3 request: its signed headers go to the mirror as they are */
	char **s3_headers;              /* "Name: value" lines of them, NULL-terminated */
	/* a registry request (oci.c): a manifest or a blob of oci_name, with its reference */
	enum agent_oci_kind oci;
	char *oci_name, *oci_ref;
	bool oci_layer;                 /* a blob that is a layer of a manifest passed: a file (layer) */
	bool ranged;                    /* a tar layer asked with a Range */
	bool tar_unchecked;             /* a tar layer streamed before its digest was checked */
	struct hub_oci_span sp;         /* a tar layer's range: its header's part, the file's, the zeros */
	struct agent_oci_layer layer;
	/* the mirror's answer */
	long status;
	json_t *headers;                /* {name: value} of passed[] */
	int64_t clen;                   /* its Content-Length (-1 none): a HEAD's says the body's size */
	char *answer;
	size_t alen;
	bool offline;                   /* the mirror did not answer: from the kept copy */
	/* step 2 */
	json_t *meta;
	char *tor;
	size_t tlen;
	char *why;
	/* step 3 and the body */
	char btih[41];
	int index;
	int64_t size, off, len;
	int fd;
	int64_t waited_since;           /* when the body last got no byte */
};

static void ep_free(struct agent_ep *e)
{
	free(e->method);
	free(e->target);
	free(e->host);
	free(e->auth);
	free(e->inm);
	free(e->range);
	free(e->body);
	free(e->ctype);
	free(e->accept);
	free(e->token);
	hub_spec_release(&e->spec);
	free(e->fpath);
	for (char **h = e->s3_headers; h && *h; h++)
		free(*h);
	free(e->s3_headers);
	free(e->oci_name);
	free(e->oci_ref);
	agent_oci_layer_release(&e->layer);
	json_decref(e->headers);
	free(e->answer);
	json_decref(e->meta);
	free(e->tor);
	free(e->why);
	if (e->fd >= 0)
		close(e->fd);
	free(e);
}

static char *dup_header(struct httpd_req *r, const char *name)
{
	const char *v = httpd_header(r, name);

	return v ? xstrdup(v) : NULL;
}

/* ---- which requests are files --------------------------------------------------------------------- */

/* HF: /{org}/{name}/resolve/{rev}/{path...} and /datasets/{org}/{name}/resolve/{rev}/{path...};
 * ModelScope: /api/v1/{models,datasets}/{owner}/{name}/repo?...FilePath=...&Revision=... (hub/ms.h) */
static void classify(struct agent_ep *e, struct httpd_req *r)
{
	struct hf_route_path hp = { 0 };
	char *spec = NULL, *fp = NULL, *rev = NULL;
	struct ms_path mp = { 0 };

	/* the Hub's grammar (hub/hf.h), the mirror's router's: refs/pr/N sent raw is one revision */
	if (!hf_parse_path(httpd_path(r), httpd_method(r), &hp) && hp.route == HF_ROUTE_FILE &&
	    !strcmp(hp.verb, "resolve") && strchr(hp.name, '/')) {
		spec = xasprintf("hf:%s%s@%s", !strcmp(hp.type, "dataset") ? "datasets/" : "", hp.name, hp.rev);
		fp = hp.sub;
		hp.sub = NULL;
	} else if (!ms_parse_path(httpd_path(r), httpd_method(r), &mp) && mp.route == MS_ROUTE_FILE && mp.name &&
		   (fp = httpd_query_param(r, MS_QUERY_FILE))) {
		/* ModelScope's grammar (hub/ms.h), as the mirror reads it */
		rev = httpd_query_param(r, MS_QUERY_REVISION);
		spec = xasprintf("ms:%s%s@%s", !strcmp(mp.type, "dataset") ? "datasets/" : "", mp.name,
				 rev && *rev ? rev : "master");
	}
	ms_path_release(&mp);
	if (spec && fp && !path_check_str(fp) && !hub_spec_parse(spec, &e->spec)) {
		e->file = true;
		e->fpath = fp;
		fp = NULL;
	}
	free(spec);
	free(fp);
	free(rev);
	hf_route_path_release(&hp);
}

/* An S3 request (under /s3, or signed at the root): the headers its signature covers, and Authorization,
 * for the mirror to check; a GetObject or HeadObject is a file of a repo's revision. */
static void classify_s3(struct agent_ep *e, struct httpd_req *r)
{
	const char *path = httpd_path(r), *authz = httpd_header(r, "Authorization"), *q = httpd_query(r);
	const char *rest = s3_under_prefix(path), *hub, *type, *why;
	char *bucket = NULL, *key = NULL, **names;
	struct s3_sig sig;
	struct s3_key k;
	size_t n = 0;

	if (!rest && !s3_signed(authz, q))
		return;
	e->s3 = true;
	/* a signature this cannot read passes with Authorization alone: the mirror says what is wrong */
	if (s3_sig_parse(authz, q, httpd_header(r, "X-Amz-Date"), &sig, &why))
		sig.signed_headers = NULL;
	names = str_split(sig.signed_headers ? sig.signed_headers : "", ";", NULL);
	s3_sig_release(&sig);
	for (char **p = names; *p; p++)
		n++;
	e->s3_headers = xcalloc(n + 3, sizeof(*e->s3_headers));
	n = 0;
	for (char **p = names; *p; p++) {
		/* not the ones that frame the request or the connection: the agent's own request has its
		 * own, and a client's would desynchronise it (a GET "with" a Content-Length) */
		static const char *const framing[] = { "host", "content-length", "transfer-encoding", "connection",
						       "keep-alive", "te", "trailer", "upgrade", "expect", NULL };
		const char *v = httpd_header(r, *p);
		bool skip = !v || !**p;
		for (const char *const *f = framing; !skip && *f; f++)
			skip = !strcasecmp(*p, *f);
		if (!skip)
			e->s3_headers[n++] = xasprintf("%s: %s", *p, v);
	}
	if (authz)
		e->s3_headers[n++] = xasprintf("Authorization: %s", authz);
	str_split_free(names);
	if (!s3_path_parse(rest ? (*rest ? rest : "/") : path, &bucket, &key) && key &&
	    !s3_bucket(bucket, &hub, &type) && !s3_key_parse(key, &k)) {
		char *seg = xasprintf("%s:%s%s@%s", hub, !strcmp(type, "dataset") ? "datasets/" : "", k.name, k.rev);
		if (*k.path && !path_check_str(k.path) && !hub_spec_parse(seg, &e->spec)) {
			e->file = true;
			e->fpath = xstrdup(k.path);
		}
		free(seg);
		s3_key_release(&k);
	}
	free(bucket);
	free(key);
}

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

static void ask_mirror(void *job)
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

static void set_headers(struct httpd_req *r, json_t *headers, bool with_type)
{
	const char *k;
	json_t *v;

	json_object_foreach(headers, k, v)
		if (with_type || strcasecmp(k, "Content-Type"))
			httpd_add_header(r, k, json_string_value(v));
}

static void relay(struct agent_ep *e, struct httpd_req *r)
{
	const char *ct = json_string_value(json_object_get(e->headers, "Content-Type"));

	set_headers(r, e->headers, false);
	if (!strcmp(e->method, "HEAD") && e->clen > 0 && !e->alen)
		/* the length of the body a GET gets (a registry client reads a manifest's size there) */
		httpd_respond_file_framed(r, (int)e->status, ct ? ct : "application/octet-stream", NULL, 0, -1, 0, 0,
					  e->clen);
	else
		httpd_respond(r, (int)e->status, ct ? ct : "application/octet-stream", e->answer ? e->answer : "",
			      e->alen);
}

static void fail(struct httpd_req *r, int status, const char *msg)
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

/* ---- steps 2 and 3: the snapshot, the first bytes ------------------------------------------------- */

static void fetch_snapshot(void *job)
{
	struct agent_ep *e = job;
	struct hub_spec at = e->spec;
	const char *commit = json_string_value(json_object_get(e->headers, "X-Repo-Commit"));
	/* an S3 client has no bearer token: the mirror admitted its signed request for this object, and
	 * the agent takes the snapshot with its own, if it was given one */
	const char *token = e->token ? e->token : e->s3 ? e->a->cfg->token : NULL;
	int st;

	/* a registry client shows the mirror a registry token (docs/protocols/oci.md), good for /v2/ only:
	 * once the mirror admitted its request for this blob, the agent takes the snapshot with its own */
	if (e->oci_layer && (!token || !strncmp(token, "hmreg_", 6)))
		token = e->a->cfg->token;

	if (commit)
		at.revision = (char *)commit; /* the very commit the mirror answered for */
	st = agent_fetch_snapshot(e->a, e->a->cfg->mirror, token, &at, &e->meta, &e->tor, &e->tlen, &e->why);
	if (st && (e->s3 || e->oci_layer) && !token && (st == 401 || st == 403)) {
		free(e->why);
		e->why = xasprintf("this repository is guarded: this agent takes its snapshot for %s clients with a "
				   "token of its own, and has none (agent --token-file)", e->s3 ? "S3" : "registry");
	}
	if (st && !e->why)
		e->why = xstrdup("the mirror gave no snapshot");
}

/* On a worker: wait until the first bytes of the range are verified, then open the cache file. */
static void first_bytes(void *job)
{
	struct agent_ep *e = job;
	struct p2p_session *ses = e->a->ses;
	int64_t first = e->len < (1 << 20) ? e->len : (1 << 20);
	char *path = NULL;
	int have, waited = 0;

	p2p_session_want_range(ses, e->btih, e->index, e->off, e->len, 0);
	/* woken as pieces come, at most 50 ms apart (to see the agent stop) */
	while ((have = p2p_session_have_range(ses, e->btih, e->index, e->off, first)) <= 0 &&
	       (have == 0 || have == HM_ERR_NOT_FOUND) && waited < READ_WAIT_S * 20 && !atomic_load(&e->a->quit)) {
		p2p_session_wait_range(ses, e->btih, e->index, e->off, first, 50);
		if (++waited % 20 == 0)
			p2p_session_want_range(ses, e->btih, e->index, e->off, e->len, 0);
	}
	if (have == 1 && !p2p_session_file_path(ses, e->btih, e->index, &path))
		e->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (e->fd < 0 && !e->why)
		e->why = xstrdup(have == 0 ? "no peer and no mirror sent the file's bytes in time"
				 : "the file is not readable in the cache");
	free(path);
}

/* The gate of the body: how many bytes from off are verified now (see httpd_respond_file_gated). */
static int64_t gate(void *ud, int64_t off, int64_t len)
{
	struct agent_ep *e = ud;
	struct p2p_session *ses = e->a->ses;
	int64_t step = len;

	/* the whole chunk, else a smaller head of it (pieces are verified one by one) */
	for (; step >= (64 << 10) || step == len; step /= 4) {
		int have;
		p2p_session_touch(ses, e->btih, e->index, off, step); /* read now: not evicted under it */
		have = p2p_session_have_range(ses, e->btih, e->index, off, step);
		if (have < 0 && have != HM_ERR_NOT_FOUND) /* (not found: added again after an eviction) */
			return -1;
		if (have == 1) {
			e->waited_since = 0;
			return step;
		}
		if (step < (64 << 10))
			break;
	}
	if (!e->waited_since) {
		e->waited_since = (int64_t)time(NULL);
		p2p_session_want_range(ses, e->btih, e->index, off, e->off + e->len - off, 0);
	} else if ((int64_t)time(NULL) - e->waited_since > READ_WAIT_S) {
		return -1;
	}
	return 0;
}

static void tar_check_later(struct agent_ep *e);

static void gate_release(void *ud)
{
	struct agent_ep *e = ud;

	e->fd = -1; /* httpd closes it */
	if (e->tar_unchecked)
		tar_check_later(e);
	ep_free(e);
}

static void send_body(void *job, struct httpd_req *r)
{
	struct agent_ep *e = job;
	int fd = e->fd;

	if (!r) {
		ep_free(e);
		return;
	}
	if (fd < 0) {
		fail(r, 504, e->why ? e->why : "the file's bytes did not come");
		ep_free(e);
		return;
	}
	if (e->len != e->size)
		httpd_add_headerf(r, "Content-Range", "bytes %" PRId64 "-%" PRId64 "/%" PRId64, e->off,
				  e->off + e->len - 1, e->size);
	e->fd = -1;
	httpd_respond_file_gated(r, e->len != e->size ? 206 : 200, "application/octet-stream", fd, e->off, e->len,
				 gate, gate_release, e);
}

/* ---- a registry mirror's tar layer: the file between its header and zeros ------------------------- */

/* Is the file at path of s the content digest ("sha256:...") names (a raw layer's digest)? */
static bool raw_layer_is(const struct agent_snap *s, const char *path, const char *digest)
{
	for (size_t i = 0; i < s->nknown; i++)
		if (!strcmp(s->known[i].path, path))
			return !strncmp(digest, "sha256:", 7) && !strcmp(s->known[i].sha256, digest + 7);
	return false;
}

/* On a worker: wait until every byte of the file is verified in the cache (4 MiB at a time, each
 * step with its own wait), open it, and check the layer's digest (once: oci.c remembers it). */
static void tar_whole(void *job)
{
	struct agent_ep *e = job;
	struct p2p_session *ses = e->a->ses;
	const int64_t step = 4 << 20;
	int64_t done = 0;
	char *path = NULL;
	const char *why = NULL;
	int have = 1, waited = 0;

	p2p_session_want_range(ses, e->btih, e->index, 0, e->size, 0);
	while (done < e->size && waited < READ_WAIT_S * 20 && !atomic_load(&e->a->quit)) {
		int64_t n = e->size - done < step ? e->size - done : step;
		have = p2p_session_have_range(ses, e->btih, e->index, done, n);
		if (have == 1) {
			done += n;
			waited = 0;
		} else if (have < 0 && have != HM_ERR_NOT_FOUND) {
			break;
		} else {
			p2p_session_wait_range(ses, e->btih, e->index, done, n, 50);
			if (++waited % 20 == 0)
				p2p_session_want_range(ses, e->btih, e->index, done, e->size - done, 0);
		}
	}
	if (done == e->size && (e->size == 0 || !p2p_session_file_path(ses, e->btih, e->index, &path)))
		e->fd = open(path ? path : "/dev/null", O_RDONLY | O_CLOEXEC);
	if (e->fd >= 0 && agent_oci_tar_check(e->a, e->oci_name, e->oci_ref, &e->layer, path ? path : "/dev/null",
					       e->size, &why)) {
		close(e->fd);
		e->fd = -1;
		e->why = xstrdup(why);
	}
	if (e->fd < 0 && !e->why)
		e->why = xstrdup(done < e->size ? "no peer and no mirror sent the file's bytes in time"
				 : "the file is not readable in the cache");
	free(path);
}

/* A streamed layer's digest, checked once its file is whole in the cache, off the loop (one at a time;
 * a GET meanwhile checks it itself): remembered when it matches, so that the next GET sends at once;
 * else said in the log, and the next GET refuses it (tar_whole). */
struct tar_check_job {
	uv_work_t w;
	struct agent *a;
	char *name, *digest, btih[41];
	int index;
	int64_t size;
	const char *why;
	bool done;
};

static void tar_check_work(uv_work_t *w)
{
	struct tar_check_job *j = w->data;
	struct agent_oci_layer l;
	char *path = NULL;

	if (atomic_load(&j->a->quit) || agent_oci_layer_find(j->a, j->name, j->digest, &l))
		return;
	if (!(l.header && l.checked_size == j->size) &&
	    !p2p_session_file_path(j->a->ses, j->btih, j->index, &path))
		j->done = !agent_oci_tar_check(j->a, j->name, j->digest, &l, path, j->size, &j->why);
	agent_oci_layer_release(&l);
	free(path);
}

static void tar_check_done(uv_work_t *w, int status)
{
	struct tar_check_job *j = w->data;

	(void)status;
	if (j->done)
		log_info("agent", "registry mirror: %s@%s checked (header, file and zeros)", j->name, j->digest);
	else if (j->why && !atomic_load(&j->a->quit))
		log_warn("agent", "registry mirror: %s@%s, streamed before its check: %s", j->name, j->digest, j->why);
	j->a->oci_checking = false;
	free(j->name);
	free(j->digest);
	free(j);
}

static void tar_check_later(struct agent_ep *e)
{
	struct tar_check_job *j;

	if (e->a->oci_checking || atomic_load(&e->a->quit) ||
	    p2p_session_have_range(e->a->ses, e->btih, e->index, 0, e->size) != 1)
		return;
	j = xcalloc(1, sizeof(*j));
	j->a = e->a;
	j->name = xstrdup(e->oci_name);
	j->digest = xstrdup(e->oci_ref);
	memcpy(j->btih, e->btih, sizeof(j->btih));
	j->index = e->index;
	j->size = e->size;
	j->w.data = j;
	e->a->oci_checking = true;
	uv_queue_work(&e->a->loop, &j->w, tar_check_work, tar_check_done);
}

/* The layer's range: its header's part at once, then the file's as its pieces verify (the gate; e->off
 * and e->len are the file's part), then the zeros. */
static void tar_send(void *job, struct httpd_req *r)
{
	struct agent_ep *e = job;
	int fd = e->fd;

	if (!r) {
		ep_free(e);
		return;
	}
	if (fd < 0) {
		fail(r, 502, e->why ? e->why : "the file's bytes did not come");
		ep_free(e);
		return;
	}
	e->fd = -1;
	httpd_respond_file_framed_gated(r, e->ranged ? 206 : 200, "application/octet-stream",
					e->layer.header + e->sp.h0, (size_t)(e->sp.h1 - e->sp.h0), fd, e->sp.f0,
					e->sp.f1 - e->sp.f0, e->sp.zeros, gate, gate_release, e);
}

/* On the loop: the layer's header (the one checked before, else made again), the range of the whole
 * layer, then (not for HEAD) its bytes. A layer checked before, or whose file the cache lacks yet,
 * goes as the file's pieces verify (first_bytes, then the gate): every file byte has passed its
 * piece's hash, the header is hub/oci.c's, and the client checks the digest of the whole (the agent
 * too, after it: tar_check_later); one not checked yet whose file the cache holds whole is checked
 * first (tar_whole), and refused when it is not the manifest's digest. A range with none of the
 * file's bytes goes at once. */
static void start_tar(struct agent_ep *e, struct httpd_req *r)
{
	bool checked = e->layer.header && e->layer.checked_size == e->size;
	int64_t total, want, b = 0;
	int rr;

	if (!checked && e->layer.header) {
		free(e->layer.header);
		e->layer.header = NULL;
	}
	if (!e->layer.header && hub_oci_tar_header(e->fpath, e->size, &e->layer.header, &e->layer.header_len)) {
		fail(r, 502, "the layer's tar header cannot be made for this file's name");
		ep_free(e);
		return;
	}
	total = (int64_t)e->layer.header_len + e->size + hub_oci_tar_tail(e->size);
	json_object_set_new(e->headers, "Accept-Ranges", json_string("bytes")); /* once, the mirror's or not */
	set_headers(r, e->headers, false);
	rr = httpd_parse_range(e->range, total, &e->off, &b);
	if (rr < 0) {
		httpd_add_headerf(r, "Content-Range", "bytes */%" PRId64, total);
		fail(r, 416, "range not satisfiable");
		ep_free(e);
		return;
	}
	e->len = rr > 0 ? b - e->off + 1 : total;
	if (rr == 0)
		e->off = 0;
	else
		httpd_add_headerf(r, "Content-Range", "bytes %" PRId64 "-%" PRId64 "/%" PRId64, e->off, b, total);
	e->ranged = rr > 0;
	want = e->len;
	hub_oci_tar_span((int64_t)e->layer.header_len, e->size, e->off, e->off + e->len, &e->sp);
	e->off = e->sp.f0; /* from here on, the file's part (first_bytes, the gate) */
	e->len = e->sp.f1 - e->sp.f0;
	if (httpd_etag_matches(e->inm, json_string_value(json_object_get(e->headers, "ETag")))) {
		httpd_respond_str(r, 304, NULL, "");
	} else if (!strcmp(e->method, "HEAD")) {
		/* the headers of the answer, Content-Length included; no body */
		httpd_respond_file_framed(r, rr ? 206 : 200, "application/octet-stream", NULL, 0, -1, 0, 0, want);
	} else if (e->len == 0) { /* the header's part and zeros only */
		httpd_respond_file_framed(r, rr ? 206 : 200, "application/octet-stream", e->layer.header + e->sp.h0,
					  (size_t)(e->sp.h1 - e->sp.h0), -1, 0, 0, e->sp.zeros);
	} else {
		p2p_session_touch(e->a->ses, e->btih, e->index, e->off, e->len); /* read now: not evicted under it */
		if (!checked && p2p_session_have_range(e->a->ses, e->btih, e->index, 0, e->size) == 1) {
			httpd_defer(r, tar_whole, tar_send, e);
		} else {
			e->tar_unchecked = !checked; /* checked after it (tar_check_later) */
			httpd_defer(r, first_bytes, tar_send, e);
		}
		return;
	}
	ep_free(e);
}

/* On the loop, with the snapshot in the session: find the file, take the range, wait for its start. */
static void start_file(struct agent_ep *e, struct httpd_req *r, struct agent_snap *s)
{
	struct p2p_file_list files = { 0 };
	int rr;

	e->index = -1;
	memcpy(e->btih, s->btih, sizeof(e->btih));
	agent_snap_used(e->a, s);
	if (e->xet_info) {
		/* the file-info form, now that the snapshot whose bytes its xorb ranges will read is held */
		relay(e, r);
		ep_free(e);
		return;
	}
	if (!p2p_session_files(e->a->ses, s->btih, &files))
		for (size_t i = 0; i < files.n; i++)
			if (!strcmp(files.v[i].path, e->fpath)) {
				e->index = files.v[i].index;
				e->size = files.v[i].size;
			}
	p2p_file_list_release(&files);
	if (e->index < 0 || (e->oci_layer && !e->layer.tar && !raw_layer_is(s, e->fpath, e->oci_ref))) {
		fail(r, 502, e->index < 0 ? "the mirror's torrent does not hold the file it listed"
					  : "the snapshot's file is not the manifest's layer");
		ep_free(e);
		return;
	}
	if (e->oci_layer && e->layer.tar) {
		start_tar(e, r);
		return;
	}
	rr = httpd_parse_range(e->range, e->size, &e->off, &e->len);
	if (rr < 0) {
		httpd_add_headerf(r, "Content-Range", "bytes */%" PRId64, e->size);
		fail(r, 416, "range not satisfiable");
		ep_free(e);
		return;
	}
	if (rr > 0)
		e->len = e->len - e->off + 1; /* [off, b] */
	else
		e->len = e->size; /* off is 0 */
	set_headers(r, e->headers, false);
	if (httpd_etag_matches(e->inm, json_string_value(json_object_get(e->headers, "ETag")))) {
		httpd_respond_str(r, 304, NULL, "");
		ep_free(e);
		return;
	}
	if (e->len == 0 || !strcmp(e->method, "HEAD")) {
		/* the headers of the whole answer, Content-Length included; no body */
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (e->len != e->size)
			httpd_add_headerf(r, "Content-Range", "bytes %" PRId64 "-%" PRId64 "/%" PRId64, e->off,
					  e->off + e->len - 1, e->size);
		if (fd < 0)
			httpd_respond(r, 200, "application/octet-stream", "", 0);
		else
			httpd_respond_file(r, e->len != e->size ? 206 : 200, "application/octet-stream", fd, e->off,
					   e->len);
		ep_free(e);
		return;
	}
	httpd_defer(r, first_bytes, send_body, e);
}

static struct agent_snap *held_commit(struct agent *a, const char *commit)
{
	for (size_t i = 0; commit && i < a->nsnaps; i++)
		if (agent_snap_name_by_commit(a->snaps[i], commit))
			return a->snaps[i];
	return NULL;
}

static void snapshot_taken(void *job, struct httpd_req *r)
{
	struct agent_ep *e = job;
	char *why = NULL;
	struct agent_snap *s = NULL;
	char *canon;

	if (!r) {
		ep_free(e);
		return;
	}
	if (e->meta && e->tor) {
		json_t *none = json_array(); /* the file asked for comes piece by piece, nothing else */
		canon = hub_spec_format(&e->spec, 0);
		json_object_set_new(e->meta, "spec", json_string(canon));
		free(canon);
		s = agent_snap_add(e->a, json_incref(e->meta), (const unsigned char *)e->tor, e->tlen, e->spec.revision,
				   none, NULL, &why);
		json_decref(none);
	}
	if (!s) {
		fail(r, 502, why ? why : e->why ? e->why : "cannot take the snapshot");
		free(why);
		ep_free(e);
		return;
	}
	start_file(e, r, s);
}

static const char *const xet_offline[] = { "X-Xet-Hash", "X-Xet-Refresh-Route", "Link", NULL };

static void mirror_answered(void *job, struct httpd_req *r)
{
	struct agent_ep *e = job;
	struct agent_snap *s;

	if (!r) {
		ep_free(e);
		return;
	}
	if (e->why) {
		fail(r, 502, e->why);
		ep_free(e);
		return;
	}
	if (e->offline) {
		httpd_add_header(r, "X-Hubmirror-Offline", "answered from the agent's copy");
		/* no Xet without the mirror (it checks every Xet token): a Xet client reads plainly */
		for (const char *const *h = xet_offline; e->file && *h; h++)
			json_object_del(e->headers, *h);
	}
	if (!e->file || e->status != 200) {
		relay(e, r);
		ep_free(e);
		return;
	}
	/* (a layer's commit is the one its manifest named) */
	s = held_commit(e->a, e->oci_layer ? e->spec.revision
					   : json_string_value(json_object_get(e->headers, "X-Repo-Commit")));
	if (s)
		start_file(e, r, s);
	else if (!e->offline)
		httpd_defer(r, fetch_snapshot, snapshot_taken, e);
	else {
		fail(r, 502, "the mirror cannot be reached and this agent no longer holds the snapshot");
		ep_free(e);
	}
}

int agent_endpoint(void *ud, struct httpd_req *r)
{
	struct agent *a = ud;
	struct agent_ep *e = xcalloc(1, sizeof(*e));
	const char *q = httpd_query(r), *b;

	e->a = a;
	e->fd = -1;
	e->headers = json_object();
	e->clen = -1;
	e->method = xstrdup(httpd_method(r));
	e->target = xasprintf("%s%s%s", httpd_path(r), q ? "?" : "", q ? q : "");
	e->host = dup_header(r, "Host");
	e->auth = dup_header(r, "Authorization");
	e->inm = dup_header(r, "If-None-Match");
	e->range = dup_header(r, "Range");
	e->ctype = dup_header(r, "Content-Type");
	e->accept = dup_header(r, "Accept");
	e->xet_cas = skip_prefix(httpd_path(r), XET_CAS) != NULL;
	if (e->auth && !strncasecmp(e->auth, "Bearer ", 7))
		e->token = xstrdup(e->auth + 7);
	b = httpd_body(r, &e->blen);
	if (e->blen) {
		e->body = xmalloc(e->blen + 1);
		memcpy(e->body, b, e->blen);
		e->body[e->blen] = '\0';
	}
	if (!a->cfg->mirror) {
		fail(r, 502, "this agent has no mirror (agent --mirror URL)");
		ep_free(e);
		return 0;
	}
	if (agent_xet_is_xorb(httpd_path(r)) && (!strcmp(e->method, "GET") || !strcmp(e->method, "HEAD"))) {
		ep_free(e);
		agent_xet_xorb(a, r); /* a xorb's bytes: from the cache (xet.c) */
		return 0;
	}
	classify_s3(e, r);
	if (!e->s3 && (!strcmp(e->method, "GET") || !strcmp(e->method, "HEAD")))
		classify(e, r);
	if (!e->s3 && !e->file && (!strcmp(e->method, "GET") || !strcmp(e->method, "HEAD")))
		e->oci = agent_oci_path(httpd_path(r), &e->oci_name, &e->oci_ref); /* (its layer: off the loop) */
	else if (e->s3 && strcmp(e->method, "GET") && strcmp(e->method, "HEAD"))
		e->file = false;
	httpd_set_route(r, e->file ? "file" : e->oci == AGENT_OCI_BLOB ? "blob" : "proxy");
	httpd_defer(r, ask_mirror, mirror_answered, e);
	return 0;
}
