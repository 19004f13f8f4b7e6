/*
 * routes-xet-write.c - Xet uploads into the mirror's own repositories (docs/protocols/xet.md,
 * "Uploads"; docs/uploads.md): the write token (xet-write-token), the LFS batch's Xet answer, and the
 * CAS's write side under MIRROR__XET_CAS_PATH: xorbs, shards, and the global dedup query.
 *
 * Nothing a client says is believed. A xorb is read whole, every chunk decompressed and hashed and
 * the xorb hash recomputed against its URL (hub/xet: xet_xorb_parse), then kept apart from the store
 * (DATA/xet-uploads/<hash>, or with a bucket its staging area: routes-xet-write-records.c) as the
 * repo's for MIRROR__XETW_XORB_KEEP_S: a xorb is a client's packing of chunks, not content, so the
 * store never holds one. A shard's files are rebuilt from the xorbs the same
 * repo uploaded, or the virtual xorbs the dedup query lent it (made again from the store's bytes) of
 * contents it may name as its own (a shard naming any other xorb is refused: no other repo's private
 * chunks reach this one), each term's chunks verified against its verification hash and the file against its Xet hash
 * (and sha256, where the shard states it), and only then written into the store through its writer
 * as plain bytes, with the sha256 the store computes, held for the repo's commit as an LFS upload is
 * (catalog_hold). The commit then names the file by its sha256, as both clients send it.
 *
 * A xorb is the repo's, not the token's: anyone who may write a repo may read it too (a write grant
 * reads), so sharing chunks within the repo gives nobody anything. The tables of xorbs and of the
 * files shards made are kept as record files beside the xorbs (routes-xet-write-records.c), so a
 * serve restarted between a client's xorbs, its shard and its commit goes on where it was; what is
 * past its time goes at the start and with each new upload. A shard's files are made in
 * routes-xet-write-shard.c; here: the write token, the LFS batch's answer, the CAS's bodies, xorbs,
 * the dedup query, the route.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/rand.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/http/httpd.h"
#include "hub/xet/shard.h"
#include "hub/xet/xet.h"
#include "mirror/data.h"
#include "store/store-xet.h"
#include "mirror/xet-record.h"
#include "store/store.h"
#include "access.h"
#include "routes-int.h"
#include "routes-xet-write-int.h"
#include "xet-token.h"

#define WRITE_TOKEN_TTL 3600           /* a write token's life; clients refresh it at its href */
#define LEND_MAX_CHUNKS (8 * 8192)     /* chunks one dedup answer lists at most (8 virtual xorbs' worth) */
#define LEND_MAX_CONTENTS 4            /* contents holding the chunk that one answer looks at */

/* ---- the write token -------------------------------------------------------------------------- */

/* A write token for repo, made for the caller's token; NULL when none can be made (no key for
 * capabilities, or a token without a write grant). *exp its end. */
static char *write_token(struct mirror_routes *rt, const struct httpd_req *req, const struct catalog_repo *repo,
			 const char *rev, int64_t *exp)
{
	char buf[512];
	const char *tok = mirror__request_token(req, buf, sizeof(buf));
	struct mirror_xet_claims c = {
		.scope = MIRROR_XET_WRITE, .repo_id = repo->id, .hub = repo->hub, .type = repo->type,
		.name = repo->name, .subject = (char *)rev, .exp = (int64_t)time(NULL) + WRITE_TOKEN_TTL,
	};

	if (!rt->have_xet_key || !tok)
		return NULL;
	*exp = c.exp;
	return mirror_xet_token_make(rt->access, rt->p2p_key, tok, &c);
}

static char *cas_url(const struct httpd_req *req)
{
	char *base = mirror__self_base(req), *u = xasprintf("%s%s", base, MIRROR__XET_CAS_PATH);
	free(base);
	return u;
}

/* A local repo this request may write, its row in *repo; else the refusal is answered. */
static bool writable_repo(struct mirror_routes *rt, struct httpd_req *req, const char *type, const char *name,
			  struct catalog_repo *repo)
{
	char *who = NULL;
	bool ok = mirror__write_gate(rt, req, type, name, &who);

	free(who);
	return ok && mirror__local_repo(rt, req, type, name, repo);
}

void mirror__xet_write_token(struct mirror_routes *rt, struct httpd_req *req, const char *type, const char *name,
			     const char *rev)
{
	struct catalog_repo repo;
	int64_t exp = 0;
	const char *at = strstr(httpd_path(req), "/xet-write-token/");
	char *t, *cas, *r = rev ? xstrdup(rev) : at && at[17] ? xstrdup(at + 17) : xstrdup("main");

	if (!writable_repo(rt, req, type, name, &repo)) {
		free(r);
		return;
	}
	/* (the revision only labels the token: a xorb or a shard is the repo's, whatever branch the
	 * commit that names its files goes to) */
	t = write_token(rt, req, &repo, r, &exp);
	free(r);
	if (!t) {
		mirror__hf_error(req, 501, NULL, "Xet uploads need the mirror's key: upload with HF_HUB_DISABLE_XET=1",
				 NULL);
	} else {
		cas = cas_url(req);
		mirror__hf_cors(req);
		/* the headers huggingface_hub reads (utils/_xet.py), and the JSON @huggingface/hub reads */
		httpd_add_header(req, "X-Xet-Access-Token", t);
		httpd_add_headerf(req, "X-Xet-Token-Expiration", "%lld", (long long)exp);
		httpd_add_header(req, "X-Xet-Cas-Url", cas);
		httpd_add_header(req, "Cache-Control", "no-store");
		mirror__respond_json(req, 200, json_pack("{s:s, s:I, s:s}", "accessToken", t, "exp", (json_int_t)exp,
							 "casUrl", cas));
		free(cas);
	}
	free(t);
	catalog_repo_release(&repo);
}

void mirror__xet_batch(struct mirror_routes *rt, struct httpd_req *req, const char *repo_path,
		       const struct catalog_repo *repo, json_t *answer)
{
	json_t *objs = json_object_get(answer, "objects"), *o;
	int64_t exp = 0;
	char *t = write_token(rt, req, repo, "main", &exp), *cas, *base, *href, expires[24], session[33];
	unsigned char r[16];
	size_t i;

	if (!t || !json_is_array(objs))
		goto out; /* (the basic transfer stays: every client takes it) */
	cas = cas_url(req);
	base = mirror__self_base(req);
	href = xasprintf("%s/api/%ss/%s/xet-write-token/main", base, repo->type, repo->name);
	snprintf(expires, sizeof(expires), "%lld", (long long)exp);
	/* a session id for the client's requests (it only labels them: nothing trusts it) */
	if (RAND_bytes(r, sizeof(r)) != 1)
		memset(r, 0, sizeof(r));
	hex_encode(r, sizeof(r), session);
	json_array_foreach(objs, i, o) {
		json_t *header;
		if (!json_object_get(o, "actions"))
			continue; /* (held already, or refused: as the basic answer says) */
		header = json_pack("{s:s, s:s, s:s, s:s}", "X-Xet-Session-Id", session, "X-Xet-Cas-Url", cas,
				   "X-Xet-Access-Token", t, "X-Xet-Token-Expiration", expires);
		json_object_set_new(o, "actions",
				    json_pack("{s:{s:s, s:o}}", "upload", "href", href, "header", header));
	}
	json_object_set_new(answer, "transfer", json_string("xet"));
	free(cas);
	free(base);
	free(href);
out:
	(void)repo_path;
	free(t);
}

/* ---- the CAS: who may write, and the bodies ------------------------------------------------------ */

/* The local repo a CAS request's token writes (Authorization: Bearer), in *repo; else *status and
 * *why (static) say why not. A read token writes nothing. */
static bool cas_writer(struct mirror_routes *rt, const struct httpd_req *req, enum mirror_xet_scope scope,
		       struct catalog_repo *repo, int *status, const char **why)
{
	const char *auth = httpd_header(req, "Authorization");
	struct mirror_xet_claims c;
	bool ok = false;

	*status = 401;
	*why = "a Xet token is needed (Authorization: Bearer)";
	if (!auth || strncasecmp(auth, "Bearer ", 7) || mirror_xet_token_parse(auth + 7, &c))
		return false;
	if (catalog_repo_get(rt->data->catalog, c.hub, c.type, c.name, repo)) {
		*why = "this token's repository is not here";
	} else if (!rt->have_xet_key ||
		   !mirror_xet_token_allows(rt->access, rt->p2p_key, auth + 7, scope, repo, NULL, (int64_t)time(NULL),
					    why)) {
		catalog_repo_release(repo);
	} else if (scope == MIRROR_XET_WRITE && (!repo->local || !mirror__local_namespace(rt, repo->name))) {
		*status = 403;
		*why = "a mirrored repository takes no uploads";
		catalog_repo_release(repo);
	} else {
		ok = true;
	}
	mirror_xet_claims_release(&c);
	return ok;
}

/* Is path a xorb's or a shard's upload (under MIRROR__XET_CAS_PATH)? *max its bound. */
static bool upload_path(const char *path, int64_t *max)
{
	const char *rest = path + strlen(MIRROR__XET_CAS_PATH);

	if (strncmp(path, MIRROR__XET_CAS_PATH, strlen(MIRROR__XET_CAS_PATH)))
		return false;
	if (!strncmp(rest, "/v1/xorbs/default/", 18)) {
		*max = XET_XORB_MAX_BYTES;
		return true;
	}
	if (!strcmp(rest, "/v1/shards")) {
		*max = XET_SHARD_MAX_BYTES;
		return true;
	}
	return false;
}

int mirror__xet_body(struct mirror_routes *rt, const struct httpd_req *r, char **type, char **name, int64_t *max)
{
	struct catalog_repo repo;
	const char *why;
	int status;

	if (strcmp(httpd_method(r), "POST") || !upload_path(httpd_path(r), max))
		return 0;
	if (!cas_writer(rt, r, MIRROR_XET_WRITE, &repo, &status, &why))
		return -1;
	*type = xstrdup(repo.type);
	*name = xstrdup(repo.name);
	catalog_repo_release(&repo);
	return 1;
}

static void cas_error(struct httpd_req *req, int status, const char *why)
{
	mirror__respond_json(req, status, json_pack("{s:s}", "error", why));
}

/* The spooled body of a CAS upload, or its refusal answered (NULL). */
struct mirror__commit_body *mirror__xet_cas_body(struct httpd_req *req)
{
	struct mirror__commit_body *s = httpd_body_take(req);
	const char *why = NULL;
	int status = 0;

	if (s && s->head.kind != MIRROR__SINK_COMMIT) {
		mirror__body_abandon(s);
		s = NULL;
	}
	if (!mirror__spool_ok(req, s, &status, &why)) {
		cas_error(req, status ? status : 400, why ? why : "an upload's body is needed");
		mirror__body_abandon(s);
		return NULL;
	}
	return s;
}

/* The spooled body whole in memory (it is bounded: XET_XORB_MAX_BYTES, XET_SHARD_MAX_BYTES). */
unsigned char *mirror__xet_body_bytes(const struct mirror__commit_body *s, size_t *n)
{
	unsigned char *b = xmalloc(s->got ? (size_t)s->got : 1);
	size_t got = 0;

	while (got < (size_t)s->got) {
		ssize_t k = pread(s->fd, b + got, (size_t)s->got - got, (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			free(b);
			return NULL;
		}
		got += (size_t)k;
	}
	*n = got;
	return b;
}

/* ---- a xorb ------------------------------------------------------------------------------------ */

struct xorb_job {
	struct mirror__job j;
	struct mirror__xetw *x;
	struct mirror__commit_body *body;
	struct xet_hash hash;
	int64_t repo_id;
	char *name;
};

static void xorb_job_release(struct mirror__job *j)
{
	struct xorb_job *x = (struct xorb_job *)j;
	mirror__spool_release(x->body);
	free(x->name);
	free(x);
}

/* The answer to a xorb read whole: stored (e 0), or why not. */
static void xorb_answer(struct mirror__job *j, const struct xorb_job *x, const struct xet_xorb *xorb, const char *hex,
			int e)
{
	if (e) {
		j->status = e == -ENOSPC ? 507 : 500;
		j->body = json_pack("{s:s}", "error", err_str(e));
		return;
	}
	log_info("upload", "hf:%s: xorb %s in (%zu chunks, %llu bytes)", x->name, hex, xorb->n,
		 (unsigned long long)xorb->size);
	j->status = 200;
	j->body = json_pack("{s:b}", "was_inserted", 1);
}

static void xorb_job_build(struct mirror__job *j, struct catalog *cat)
{
	struct xorb_job *x = (struct xorb_job *)j;
	struct xet_xorb_decoder *dec = xet_xorb_decoder_new();
	struct xet_xorb *xorb = NULL;
	char *why = NULL, hex[XET_HEX_LEN + 1];
	size_t n = 0;
	unsigned char *b = mirror__xet_body_bytes(x->body, &n);
	int e;

	(void)cat;
	xet_hash_hex(&x->hash, hex);
	if (!b) {
		j->status = 500;
		j->body = json_pack("{s:s}", "error", "the upload could not be read back");
	} else if ((e = xet_xorb_parse(dec, b, n, &x->hash, &xorb, &why))) {
		log_warn("upload", "hf:%s: xorb %s refused: %s", x->name, hex, why);
		j->status = e == -E2BIG ? 413 : 400;
		j->body = json_pack("{s:s}", "error", why);
	} else {
		/* recorded first: a sweep of an older record of the same xorb, on another worker, then sees
		 * this one and leaves the file; if storing fails, a shard naming it hears it is not kept */
		mirror__xetw_xorb_keep(x->x, &x->hash, x->repo_id);
		xorb_answer(j, x, xorb, hex, mirror__xetw_xorb_put(x->x, &x->hash, x->repo_id, b, n, xorb));
	}
	free(why);
	free(b);
	xet_xorb_free(&xorb);
	xet_xorb_decoder_free(&dec);
}

static void xorb_post(struct mirror_routes *rt, struct httpd_req *req, const char *hex,
		      const struct catalog_repo *repo)
{
	struct xorb_job *x;
	struct xet_hash h;
	struct mirror__commit_body *s;

	if (xet_hash_from_hex(hex, &h)) {
		mirror__body_abandon(httpd_body_take(req));
		cas_error(req, 400, "a xorb's URL names its hash: 64 hex digits");
		return;
	}
	if (!(s = mirror__xet_cas_body(req)))
		return;
	x = xcalloc(1, sizeof(*x));
	x->j.build = xorb_job_build;
	x->j.release = xorb_job_release;
	x->x = rt->xetw;
	x->body = s;
	x->hash = h;
	x->repo_id = repo->id;
	x->name = xstrdup(repo->name);
	mirror__defer_write(rt, req, &x->j);
}
/* ---- the global dedup query ------------------------------------------------------------------------
 *
 * GET {cas}/v1/chunks/default[-merkledb]/HASH: a stored content whose first chunk, or one of its eligible
 * chunks (mirror_xet_dedup_eligible), is HASH, and which the token's repo may name as its own
 * (mirror_access_may_name: its own, or one a repo everyone may read holds; never a private or guarded
 * repo's to another), is answered as a shard listing its virtual xorbs, from the run that holds HASH on
 * (at most LEND_MAX_CHUNKS chunks), each lent to the repo for MIRROR__XETW_LEND_S: a later shard of the repo may name
 * them, and its file is then made from the stored bytes (lent_map). Anything else is a 404. */

struct dedup_job {
	struct mirror__job j;
	struct mirror_data *data;
	struct mirror__xetw *xw;
	const struct mirror_access *access;
	int64_t repo_id;
	char chunk[XET_HEX_LEN + 1];
};

/* The virtual xorbs of content sha from the run that holds chunk want on (from the first, for the
 * other name the index knows its first chunk by), into *xs (*nx of them) and lent to repo_id. 0, or
 * -errno when its identity cannot be had. */
static int dedup_lend(struct dedup_job *d, const char *sha, const struct xet_hash *want, struct xet_shard_xorb **xs,
		      size_t *nx)
{
	struct mirror__xet_run *runs = NULL;
	struct xet_identity *id = NULL;
	const struct xet_chunk *c;
	size_t nc, nr, at, listed = 0;
	int e = store_xet_identity(d->data->store, sha, &id);

	if (e)
		return e;
	c = xet_identity_chunks(id, &nc);
	for (at = 0; at < nc && memcmp(c[at].hash.b, want->b, XET_HASH_LEN); at++)
		;
	if (at == nc)
		at = 0; /* the index's other name for its first chunk (store-xet.h: as older chunkers cut it) */
	nr = mirror__xet_runs(c, nc, &runs);
	for (size_t ri = 0; ri < nr && at < nc && listed < LEND_MAX_CHUNKS; ri++) {
		struct xet_shard_xorb *x;
		char hex[XET_HEX_LEN + 1];
		if (runs[ri].first + runs[ri].n <= at)
			continue;
		*xs = xreallocarray(*xs, *nx + 1, sizeof(**xs));
		x = &(*xs)[(*nx)++];
		x->n = runs[ri].n;
		x->chunks = xreallocarray(NULL, x->n, sizeof(*x->chunks));
		for (size_t k = 0; k < x->n; k++) {
			const struct xet_chunk *ck = &c[runs[ri].first + k];
			x->chunks[k] = (struct xet_shard_chunk){ ck->hash, ck->size };
		}
		mirror__xet_run_hash(c, &runs[ri], hex);
		xet_hash_from_hex(hex, &x->hash);
		mirror__xetw_lend_keep(d->xw, &x->hash, sha, (uint32_t)ri, d->repo_id);
		listed += x->n;
	}
	free(runs);
	xet_identity_free(&id);
	return 0;
}

static void dedup_build(struct mirror__job *j, struct catalog *cat)
{
	struct dedup_job *d = (struct dedup_job *)j;
	char found[LEND_MAX_CONTENTS][65];
	struct xet_shard_xorb *xs = NULL;
	struct xet_hash want;
	size_t n = 0, nx = 0;
	int64_t now = (int64_t)time(NULL);

	xet_hash_from_hex(d->chunk, &want);
	if (catalog_xet_dedup_find(cat, d->chunk, found, LEND_MAX_CONTENTS, &n))
		n = 0;
	for (size_t i = 0; i < n && !nx; i++)
		if (mirror_access_may_name(d->access, cat, found[i], d->repo_id))
			dedup_lend(d, found[i], &want, &xs, &nx);
	if (!nx) {
		j->status = 404;
		j->body = json_pack("{s:s}", "error", "no such chunk");
		return;
	}
	j->text = (char *)xet_shard_write(xs, nx, (uint64_t)now, (uint64_t)(now + MIRROR__XETW_LEND_S), &j->len);
	j->ctype = "application/octet-stream";
	j->status = 200;
	for (size_t i = 0; i < nx; i++)
		free(xs[i].chunks);
	free(xs);
}

static void dedup_release(struct mirror__job *j)
{
	free(j);
}

static void dedup_query(struct mirror_routes *rt, struct httpd_req *req, const char *hex,
			const struct catalog_repo *repo)
{
	struct dedup_job *d;
	struct xet_hash h;

	if (xet_hash_from_hex(hex, &h)) {
		cas_error(req, 404, "no such chunk");
		return;
	}
	d = xcalloc(1, sizeof(*d));
	d->j.build = dedup_build;
	d->j.release = dedup_release;
	d->data = rt->data;
	d->xw = rt->xetw;
	d->access = rt->access;
	d->repo_id = repo->id;
	xet_hash_hex(&h, d->chunk);
	mirror__defer(rt, req, &d->j);
}

/* ---- the route ------------------------------------------------------------------------------------ */

int mirror__route_xet_cas(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	const char *m = httpd_method(req), *why = NULL, *hex;
	bool post = !strcmp(m, "POST"), get = !strcmp(m, "GET") || !strcmp(m, "HEAD");
	struct catalog_repo repo;
	int status;

	(void)arg;
	if (post && !strncmp(rest, "v1/xorbs/default/", 17)) {
		hex = rest + 17;
		httpd_set_route(req, "xet_xorb");
	} else if (post && !strcmp(rest, "v1/shards")) {
		hex = NULL;
		httpd_set_route(req, "xet_shard");
	} else if (get && (!strncmp(rest, "v1/chunks/default-merkledb/", 27) ||
			   !strncmp(rest, "v1/chunks/default/", 18))) {
		/* the global dedup query (above) */
		httpd_set_route(req, "xet_dedup");
		if (!cas_writer(rt, req, MIRROR_XET_WRITE, &repo, &status, &why)) {
			cas_error(req, status, why);
			return 0;
		}
		dedup_query(rt, req, rest + (!strncmp(rest, "v1/chunks/default-merkledb/", 27) ? 27 : 18), &repo);
		catalog_repo_release(&repo);
		return 0;
	} else {
		return HTTPD_PASS; /* (the CAS's reads are another front's) */
	}
	if (!cas_writer(rt, req, MIRROR_XET_WRITE, &repo, &status, &why)) {
		mirror__body_abandon(httpd_body_take(req));
		cas_error(req, status, why);
		return 0;
	}
	if (hex)
		xorb_post(rt, req, hex, &repo);
	else
		mirror__xet_shard_post(rt, req, &repo);
	catalog_repo_release(&repo);
	return 0;
}
