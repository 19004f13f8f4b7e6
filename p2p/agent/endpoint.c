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
 * sent as the file's pieces verify, its digest checked once the cache holds the file whole (endpoint-tar.c);
 * any other blob is relayed.
 *
 * Xet reads (docs/agent.md "Xet through the agent"; xet.c): resolve, the read token and the
 * reconstructions are the mirror's answers relayed (a reconstruction's fetch URLs given their offsets),
 * never kept; a xorb range is the agent's own, made from the cache file once the mirror admitted it.
 *
 * Step 1 is endpoint-mirror.c's, a tar layer endpoint-tar.c's; endpoint-int.h is what they share.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent-int.h"
#include "base/err.h"
#include "base/path.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "hub/hf.h"
#include "hub/http/httpd.h"
#include "hub/hub.h"
#include "hub/ms.h"
#include "hub/oci.h"
#include "hub/s3.h"
#include "p2p/p2p.h"
#include "endpoint-int.h"

/* The Xet CAS's prefix, whose reconstructions are relayed with their Range */
#define XET_CAS "/xet-cas/"

void agent_ep_free(struct agent_ep *e)
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
void agent_ep_first_bytes(void *job)
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
int64_t agent_ep_gate(void *ud, int64_t off, int64_t len)
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

void agent_ep_gate_release(void *ud)
{
	struct agent_ep *e = ud;

	e->fd = -1; /* httpd closes it */
	if (e->tar_unchecked)
		agent_ep_tar_check_later(e);
	agent_ep_free(e);
}

int agent_ep_body_fd(struct agent_ep *e, struct httpd_req *r, int status)
{
	int fd = e->fd;

	if (r && fd < 0)
		agent_ep_fail(r, status, e->why ? e->why : "the file's bytes did not come");
	if (!r || fd < 0) {
		agent_ep_free(e);
		return -1;
	}
	e->fd = -1;
	return fd;
}

static void send_body(void *job, struct httpd_req *r)
{
	struct agent_ep *e = job;
	int fd = agent_ep_body_fd(e, r, 504);

	if (fd < 0)
		return;
	if (e->len != e->size)
		httpd_add_headerf(r, "Content-Range", "bytes %" PRId64 "-%" PRId64 "/%" PRId64, e->off,
				  e->off + e->len - 1, e->size);
	httpd_respond_file_gated(r, e->len != e->size ? 206 : 200, "application/octet-stream", fd, e->off, e->len,
				 agent_ep_gate, agent_ep_gate_release, e);
}

static void start_file(struct agent_ep *e, struct httpd_req *r, struct agent_snap *s)
{
	struct p2p_file_list files = { 0 };
	int rr;

	e->index = -1;
	memcpy(e->btih, s->btih, sizeof(e->btih));
	agent_snap_used(e->a, s);
	if (e->xet_info) {
		/* the file-info form, now that the snapshot whose bytes its xorb ranges will read is held */
		agent_ep_relay(e, r);
		agent_ep_free(e);
		return;
	}
	if (!p2p_session_files(e->a->ses, s->btih, &files))
		for (size_t i = 0; i < files.n; i++)
			if (!strcmp(files.v[i].path, e->fpath)) {
				e->index = files.v[i].index;
				e->size = files.v[i].size;
			}
	p2p_file_list_release(&files);
	if (e->index < 0 || (e->oci_layer && !e->layer.tar && !agent_ep_raw_layer_is(s, e->fpath, e->oci_ref))) {
		agent_ep_fail(r, 502, e->index < 0 ? "the mirror's torrent does not hold the file it listed"
					  : "the snapshot's file is not the manifest's layer");
		agent_ep_free(e);
		return;
	}
	if (e->oci_layer && e->layer.tar) {
		agent_ep_start_tar(e, r);
		return;
	}
	rr = httpd_parse_range(e->range, e->size, &e->off, &e->len);
	if (rr < 0) {
		httpd_add_headerf(r, "Content-Range", "bytes */%" PRId64, e->size);
		agent_ep_fail(r, 416, "range not satisfiable");
		agent_ep_free(e);
		return;
	}
	if (rr > 0)
		e->len = e->len - e->off + 1; /* [off, b] */
	else
		e->len = e->size; /* off is 0 */
	agent_ep_set_headers(r, e->headers, false);
	if (httpd_etag_matches(e->inm, json_string_value(json_object_get(e->headers, "ETag")))) {
		httpd_respond_str(r, 304, NULL, "");
		agent_ep_free(e);
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
		agent_ep_free(e);
		return;
	}
	httpd_defer(r, agent_ep_first_bytes, send_body, e);
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
		agent_ep_free(e);
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
		agent_ep_fail(r, 502, why ? why : e->why ? e->why : "cannot take the snapshot");
		free(why);
		agent_ep_free(e);
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
		agent_ep_free(e);
		return;
	}
	if (e->why) {
		agent_ep_fail(r, 502, e->why);
		agent_ep_free(e);
		return;
	}
	if (e->offline) {
		httpd_add_header(r, "X-Hubmirror-Offline", "answered from the agent's copy");
		/* no Xet without the mirror (it checks every Xet token): a Xet client reads plainly */
		for (const char *const *h = xet_offline; e->file && *h; h++)
			json_object_del(e->headers, *h);
	}
	if (!e->file || e->status != 200) {
		agent_ep_relay(e, r);
		agent_ep_free(e);
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
		agent_ep_fail(r, 502, "the mirror cannot be reached and this agent no longer holds the snapshot");
		agent_ep_free(e);
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
		agent_ep_fail(r, 502, "this agent has no mirror (agent --mirror URL)");
		agent_ep_free(e);
		return 0;
	}
	if (agent_xet_is_xorb(httpd_path(r)) && (!strcmp(e->method, "GET") || !strcmp(e->method, "HEAD"))) {
		agent_ep_free(e);
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
	httpd_defer(r, agent_ep_ask_mirror, mirror_answered, e);
	return 0;
}
