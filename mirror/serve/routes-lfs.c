/*
 * routes-lfs.c - Git LFS for the mirror's own repositories (docs/uploads.md): the upload batch, the
 * upload URLs' capabilities, the bodies the server streams (an object into the store's writer, a part
 * of one into its partial file; a commit's or a push's, spool.c's: mirror__claim_body), an object's PUT,
 * its verify, and a multipart upload's completion. The rest of the write side is routes-upload.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/size.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/hf.h"
#include "hub/hub.h"
#include "mirror/data.h"
#include "mirror/store.h"
#include "mirror/upload.h"
#include "access.h"
#include "routes-hf-int.h"
#include "routes-int.h"

/* ---- Git LFS: batch, PUT, verify -------------------------------------------------------------- */

/* An upload URL's capability: clients PUT an object to the batch's href, and not all of them send the
 * action's headers with it (@huggingface/hub sends none: on the Hub the URL is a presigned one). So
 * the href carries its own proof: "?cap=EXPIRES.MAC&size=SIZE", the MAC an HMAC under the data
 * directory's key over the repo, the object, its size and the expiry. It lets its holder store that
 * object's bytes for that repo for an hour, nothing more: the commit that names the object still
 * needs the token. A large object goes up in parts (the Hub's multipart transfer: the batch's
 * "chunk_size" and a URL per part, each with the capability), written in place into the object's
 * partial file, and is checked whole when the client says it is complete. */
#define UPLOAD_CAP_TTL 3600
#define MULTIPART_CHUNK (64LL << 20)
#define MULTIPART_MIN (2 * MULTIPART_CHUNK)

static void upload_mac(const struct mirror_routes *rt, const char *type, const char *name, const char *oid,
		       long long expires, int64_t size, char out[65])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char *msg = xasprintf("lfs-upload\nhf:%s:%s\n%s\n%lld\n%lld", type, name, oid, expires, (long long)size);

	HMAC(EVP_sha256(), rt->p2p_key, 32, (const unsigned char *)msg, strlen(msg), mac, &n);
	hex_encode(mac, 32, out);
	free(msg);
}

/* The query an upload URL carries: "cap=EXPIRES.MAC&size=SIZE". */
static char *upload_cap(const struct mirror_routes *rt, const char *type, const char *name, const char *oid,
			int64_t size)
{
	long long expires = (long long)time(NULL) + UPLOAD_CAP_TTL;
	char mac[65];

	upload_mac(rt, type, name, oid, expires, size, mac);
	return xasprintf("cap=%lld.%s&size=%lld", expires, mac, (long long)size);
}

/* Does req carry a capability for object oid of repo type/name? Then *size (may be NULL) is the size
 * it was given for. */
static bool upload_cap_ok(const struct mirror_routes *rt, const struct httpd_req *req, const char *type,
			  const char *name, const char *oid, int64_t *size)
{
	char *cap = rt->have_p2p_key ? httpd_query_param(req, "cap") : NULL, *sz = httpd_query_param(req, "size");
	char *end = NULL, *send = NULL, mac[65];
	long long expires = cap ? strtoll(cap, &end, 10) : 0, bytes = sz ? strtoll(sz, &send, 10) : -1;
	bool ok = false;

	if (cap && end && *end == '.' && strlen(end + 1) == 64 && expires >= (long long)time(NULL) && send && !*send &&
	    bytes >= 0) {
		upload_mac(rt, type, name, oid, expires, bytes, mac);
		ok = !CRYPTO_memcmp(mac, end + 1, 64);
	}
	if (ok && size)
		*size = bytes;
	free(cap);
	free(sz);
	return ok;
}

/* May repo_id name content oid of size as its own (in the store, and public, or uploaded or named by
 * the repo itself)? Otherwise a client could commit a pointer to another repo's private file and read
 * it: it must upload the bytes once. */
static bool object_held(struct mirror_routes *rt, struct catalog *cat, const char *oid, int64_t size, int64_t repo_id)
{
	return mirror_store_has(rt->data->store, oid, size) && catalog_blob_public_or_own(cat, oid, repo_id);
}

/* Would the objects of a batch that the repo does not hold yet fit in its namespace's quota? */
static bool quota_ok_for(struct mirror_routes *rt, const struct catalog_repo *repo, json_t *objs, char **msg)
{
	size_t n = json_array_size(objs), k = 0, i;
	const char **sha = xcalloc(n + 1, sizeof(*sha));
	int64_t *size = xcalloc(n + 1, sizeof(*size));
	json_t *o;
	bool ok;

	json_array_foreach(objs, i, o) {
		const char *oid = json_string_value(json_object_get(o, "oid"));
		json_int_t sz = json_integer_value(json_object_get(o, "size"));
		if (oid && hex_is_lower(oid, 64) && sz > 0 && !object_held(rt, rt->data->catalog, oid, sz, repo->id)) {
			sha[k] = oid;
			size[k++] = sz;
		}
	}
	ok = mirror__quota_room(rt, rt->data->catalog, repo->name, sha, size, k, msg);
	free(sha);
	free(size);
	return ok;
}

bool mirror__upload_url_ok(const struct mirror_routes *rt, const struct httpd_req *req)
{
	char *type = NULL, *name = NULL, *oid = NULL;
	int part;
	bool ok = (!strcmp(httpd_method(req), "PUT") || !strcmp(httpd_method(req), "POST")) &&
		  mirror__git_lfs_object(httpd_path(req), &type, &name, &oid, &part) &&
		  (part != 0 || !strcmp(httpd_method(req), "PUT")) && upload_cap_ok(rt, req, type, name, oid, NULL);

	free(type);
	free(name);
	free(oid);
	return ok;
}

/* The upload action of one object: one PUT, or for a large one when the client takes them, parts. */
static json_t *upload_action(struct mirror_routes *rt, const char *base, const char *repo_path,
			     const struct catalog_repo *repo, const char *oid, int64_t size, bool multipart)
{
	char *cap = rt->have_p2p_key ? upload_cap(rt, repo->type, repo->name, oid, size) : NULL;
	char *href = xasprintf("%s/%s/info/lfs/objects/%s", base, repo_path, oid), *u;
	json_t *up, *header;
	int64_t parts;

	if (!multipart || !cap || size < MULTIPART_MIN) {
		u = cap ? xasprintf("%s?%s", href, cap) : xstrdup(href);
		up = json_pack("{s:s}", "href", u);
		free(u);
	} else {
		parts = (size + MULTIPART_CHUNK - 1) / MULTIPART_CHUNK;
		header = json_object();
		json_object_set_new(header, "chunk_size", json_sprintf("%lld", (long long)MULTIPART_CHUNK));
		for (int64_t i = 1; i <= parts; i++) {
			char key[24];
			snprintf(key, sizeof(key), "%lld", (long long)i);
			json_object_set_new(header, key, json_sprintf("%s/part/%lld?%s", href, (long long)i, cap));
		}
		u = xasprintf("%s/complete?%s", href, cap);
		up = json_pack("{s:s, s:o}", "href", u, "header", header);
		free(u);
	}
	free(cap);
	free(href);
	return up;
}

json_t *mirror__lfs_upload_batch(struct mirror_routes *rt, struct httpd_req *req, const char *repo_path,
				 const struct catalog_repo *repo, json_t *objs, bool multipart)
{
	const char *auth = httpd_header(req, "Authorization");
	char *base, *msg = NULL;
	json_t *out, *o;
	size_t i;

	if (!quota_ok_for(rt, repo, objs, &msg)) {
		json_t *e = json_pack("{s:s, s:s}", "message", msg, "error", msg);
		httpd_add_header(req, "X-Error-Message", msg);
		free(msg);
		return e; /* (the caller answers 403 when it sees no objects) */
	}
	base = mirror__self_base(req);
	out = json_array();
	json_array_foreach(objs, i, o) {
		const char *oid = json_string_value(json_object_get(o, "oid"));
		json_t *sz = json_object_get(o, "size"), *e, *act;
		if (!oid || !hex_is_lower(oid, 64) || !json_is_integer(sz) || json_integer_value(sz) < 0) {
			e = json_pack("{s:s, s:I, s:{s:i, s:s}}", "oid", oid && strlen(oid) < 100 ? oid : "", "size",
				      json_is_integer(sz) ? json_integer_value(sz) : (json_int_t)0, "error", "code", 422,
				      "message", "malformed object");
		} else if (object_held(rt, rt->data->catalog, oid, json_integer_value(sz), repo->id)) {
			e = json_pack("{s:s, s:I}", "oid", oid, "size", json_integer_value(sz)); /* no actions: there */
		} else {
			char *href = xasprintf("%s/%s/info/lfs/objects/%s", base, repo_path, oid);
			json_t *up = upload_action(rt, base, repo_path, repo, oid, json_integer_value(sz), multipart);
			if (auth && !json_object_get(up, "header"))
				json_object_set_new(up, "header", json_pack("{s:s}", "Authorization", auth));
			act = json_pack("{s:o, s:{s:s}}", "upload", up, "verify", "href", href);
			if (auth)
				json_object_set_new(json_object_get(act, "verify"), "header", json_pack("{s:s}", "Authorization", auth));
			free(href);
			e = json_pack("{s:s, s:I, s:b, s:o}", "oid", oid, "size", json_integer_value(sz), "authenticated", 1,
				      "actions", act);
		}
		json_array_append_new(out, e);
	}
	free(base);
	return json_pack("{s:s, s:o, s:s}", "transfer", "basic", "objects", out, "hash_algo", "sha256");
}

void mirror__lfs_verify(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
			const char *oid)
{
	size_t len;
	const char *body = httpd_body(req, &len);
	json_t *in = json_loadb(body ? body : "", len, 0, NULL);
	json_t *sz = json_object_get(in, "size");
	const char *o = json_string_value(json_object_get(in, "oid"));

	if (!o || strcmp(o, oid) || !json_is_integer(sz))
		mirror__respond_json(req, 422, json_pack("{s:s}", "message", "a verify is {\"oid\", \"size\"}"));
	else if (!object_held(rt, rt->data->catalog, oid, json_integer_value(sz), repo->id))
		mirror__respond_json(req, 404, json_pack("{s:s}", "message", "Object does not exist"));
	else
		mirror__respond_json(req, 200, json_object());
	json_decref(in);
}

/* ---- streamed bodies: an object into the store (a commit or a push into a file: spool.c) ------- */


/* An LFS object's PUT: its bytes go straight through the store's writer, hashed as they arrive. A PUT
 * the writer cannot take (no right to write, an upload of the same object under way) is read and
 * dropped; its handler answers why. */
struct object_sink {
	int kind;                       /* MIRROR__SINK_OBJECT */
	struct mirror_store_writer *w;  /* NULL: the bytes are dropped */
	int status;                     /* what went wrong, 0 while nothing did */
	const char *why;                /* static */
	/* a part of a multipart upload: written in place into the object's partial file */
	int fd;                         /* -1 for a whole object */
	int64_t off, left;              /* where the next byte goes, and how many more the part has */
};

static int part_data(struct object_sink *s, const char *p, size_t n)
{
	if ((int64_t)n > s->left) {
		s->status = 400;
		s->why = "more bytes than the part has";
		return 1;
	}
	while (n > 0) {
		ssize_t w = pwrite(s->fd, p, n, s->off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			s->status = errno == ENOSPC ? 507 : 500;
			s->why = "the store cannot take it";
			return 1;
		}
		p += w;
		n -= (size_t)w;
		s->off += w;
		s->left -= w;
	}
	return 0;
}

static int object_data(void *ud, const char *p, size_t n)
{
	struct object_sink *s = ud;
	int e;

	if (s->status)
		return 1;
	if (s->fd >= 0)
		return part_data(s, p, n);
	if (!s->w)
		return 1;
	if ((e = mirror_store_writer_write(s->w, p, n))) {
		s->status = e == HM_ERR_SIZE_MISMATCH ? 400 : e == -ENOSPC ? 507 : 500;
		s->why = e == HM_ERR_SIZE_MISMATCH ? "more bytes than the object's size" : "the store cannot take it";
		mirror_store_writer_abort(&s->w, false);
		return 1;
	}
	return 0;
}

static void object_abandon(void *ud)
{
	struct object_sink *s = ud;

	mirror_store_writer_abort(&s->w, false);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

void mirror__body_abandon(void *sink)
{
	const int *kind = sink;

	if (kind && *kind == MIRROR__SINK_OBJECT)
		object_abandon(sink);
	else if (kind)
		mirror__spool_release(sink);
}

/* Is path an LFS object's URL, whose repo may be written with this request's token? */
/* A part's place in the object's partial file: opened, s->off and s->left set; or s->status. */
static void part_open(struct mirror_routes *rt, struct object_sink *s, const char *oid, int part, int64_t size)
{
	char *path = mirror_store_part_path(rt->data->store, oid);

	s->off = (int64_t)(part - 1) * MULTIPART_CHUNK;
	s->left = size - s->off < MULTIPART_CHUNK ? size - s->off : MULTIPART_CHUNK;
	if (s->off >= size) {
		s->status = 400;
		s->why = "the object has no such part";
	} else if (!path || (s->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		s->status = 500;
		s->why = "the store cannot take it";
	}
	free(path);
}

/* An LFS object's PUT, whole or a part: into the store's writer (or the partial file in place) when
 * the request may write it (a write grant, or the upload URL's capability); dropped otherwise. */
static struct object_sink *object_claim(struct mirror_routes *rt, struct httpd_req *r)
{
	struct object_sink *s = xcalloc(1, sizeof(*s));
	char buf[512], *type = NULL, *name = NULL, *oid = NULL, *end;
	const char *tok = mirror__request_token(r, buf, sizeof(buf)), *cl = httpd_header(r, "Content-Length");
	struct mirror_store_expect x = { .size = -1 };
	struct catalog_repo repo;
	int64_t capped = -1;
	int e, part = 0;
	bool cap;

	s->kind = MIRROR__SINK_OBJECT;
	s->fd = -1;
	if (!mirror__git_lfs_object(httpd_path(r), &type, &name, &oid, &part) || part < 0) {
		free(type);
		free(name);
		free(oid);
		free(s);
		return NULL;
	}
	if (cl) {
		errno = 0;
		x.size = strtoll(cl, &end, 10);
		if (errno || *end || x.size < 0)
			x.size = -1;
	}
	x.sha256 = oid;
	cap = upload_cap_ok(rt, r, type, name, oid, &capped);
	if (cap && !part)
		x.size = capped; /* (a body of another size fails the writer's check) */
	/* the handler says why a refused one is refused; its bytes are dropped here */
	if (mirror__local_namespace(rt, name) && (cap || (!part && tok && mirror_access_may_write(rt->access, tok, "hf", type, name))) &&
	    !catalog_repo_get(rt->data->catalog, "hf", type, name, &repo)) {
		if (repo.local && part)
			part_open(rt, s, oid, part, capped);
		else if (repo.local && (e = mirror_store_writer_new(rt->data->store, &x, false, &s->w))) {
			s->status = e == -EBUSY ? 409 : 500;
			s->why = e == -EBUSY ? "this object is being uploaded already" : "the store cannot take it";
		}
		catalog_repo_release(&repo);
	}
	free(type);
	free(name);
	free(oid);
	return s;
}

bool mirror__claim_body(void *ud, struct httpd_req *r, struct httpd_body_sink *sink)
{
	struct mirror_routes *rt = ud;
	const char *m = httpd_method(r);

	if (!rt->nlocal)
		return false; /* nothing here takes writes */
	if (!strcmp(m, "PUT")) {
		struct object_sink *s = object_claim(rt, r);
		if (!s)
			return false;
		*sink = (struct httpd_body_sink){ object_data, object_abandon, s };
		return true;
	}
	if (!strcmp(m, "POST"))
		return mirror__spool_claim(rt, r, sink); /* a commit's or a push's body (spool.c) */
	return false;
}

/* ---- a PUT's end: the object published on a worker ------------------------------------------- */

struct put_job {
	struct mirror__job j;
	struct object_sink *s;
	int64_t repo_id;
	char oid[65];
	char *who, *name;
};

static void put_job_release(struct mirror__job *j)
{
	struct put_job *p = (struct put_job *)j;

	object_abandon(p->s);
	free(p->who);
	free(p->name);
	free(p);
}

static void put_job_build(struct mirror__job *j, struct catalog *cat)
{
	struct put_job *p = (struct put_job *)j;
	int e = mirror_store_writer_commit(&p->s->w, NULL); /* verify, fsync, rename */

	if (e == HM_ERR_HASH_MISMATCH || e == HM_ERR_SIZE_MISMATCH) {
		log_warn("upload", "hf:%s: an object refused from %s: its bytes are not %s", p->name, p->who, p->oid);
		j->status = 400;
		j->body = json_pack("{s:s}", "message", e == HM_ERR_HASH_MISMATCH ? "the bytes do not hash to the object's oid"
										   : "the bytes are not the object's size");
	} else if (e || catalog_blob_fetched(cat, p->oid, p->repo_id)) {
		j->status = 500;
		j->body = json_pack("{s:s}", "message", e ? err_str(e) : "catalog error");
	} else {
		j->status = 200;
		j->body = json_object();
	}
}

/* A part's end: whole, it is answered with its ETag (the client hands them back at the end). */
static void part_done(struct httpd_req *req, struct object_sink *s, int part)
{
	if (s->status || s->fd < 0 || s->left) {
		mirror__respond_json(req, s->status ? s->status : 400,
				     json_pack("{s:s}", "message", s->why ? s->why : "the part is short"));
	} else {
		httpd_add_headerf(req, "ETag", "\"part-%d\"", part);
		mirror__respond_json(req, 200, json_object());
	}
	object_abandon(s);
}

void mirror__lfs_put(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
		     const char *oid, int part)
{
	struct object_sink *s = httpd_body_take(req);
	struct put_job *p;
	char *who = NULL;

	if (!s || s->kind != MIRROR__SINK_OBJECT) {
		/* not claimed: no local namespaces here, or a body the claim did not take */
		mirror__body_abandon(s);
		mirror__respond_json(req, 403, json_pack("{s:s}", "message", "this repository takes no uploads"));
		return;
	}
	if (upload_cap_ok(rt, req, repo->type, repo->name, oid, NULL) && repo->local)
		who = xstrdup("an upload URL");
	else if (part || !mirror__write_gate(rt, req, repo->type, repo->name, &who) || !repo->local) {
		if (!httpd_answered(req))
			hf__error(req, 403, NULL, "A mirrored repository is read-only", NULL);
		object_abandon(s);
		free(who);
		return;
	}
	if (part) {
		part_done(req, s, part);
		free(who);
		return;
	}
	if (s->status || !s->w) {
		mirror__respond_json(req, s->status ? s->status : 500,
				     json_pack("{s:s}", "message", s->why ? s->why : "the object was not taken"));
		object_abandon(s);
		free(who);
		return;
	}
	p = xcalloc(1, sizeof(*p));
	p->j.build = put_job_build;
	p->j.release = put_job_release;
	p->s = s;
	p->repo_id = repo->id;
	snprintf(p->oid, sizeof(p->oid), "%s", oid);
	p->who = who;
	p->name = xstrdup(repo->name);
	mirror__defer(rt, req, &p->j);
}

/* ---- a multipart upload's end: the object checked whole on a worker ------------------------- */

struct complete_job {
	struct mirror__job j;
	struct mirror_data *data;
	int64_t repo_id, size;
	char oid[65];
};

static void complete_job_release(struct mirror__job *j)
{
	free(j);
}

static void complete_job_build(struct mirror__job *j, struct catalog *cat)
{
	struct complete_job *c = (struct complete_job *)j;
	struct mirror_store_expect x = { .sha256 = c->oid, .size = c->size };
	struct mirror_store_writer *w = NULL;
	int e = mirror_store_writer_new(c->data->store, &x, true, &w); /* re-reads what the parts wrote */

	if (!e && mirror_store_writer_offset(w) != c->size) {
		mirror_store_writer_abort(&w, true);
		e = HM_ERR_SIZE_MISMATCH;
	}
	if (!e)
		e = mirror_store_writer_commit(&w, NULL); /* verify, fsync, rename; wrong bytes go */
	if (!e && catalog_blob_fetched(cat, c->oid, c->repo_id))
		e = HM_ERR_SQLITE;
	j->status = !e ? 200 : e == -EBUSY ? 409 : e == HM_ERR_SIZE_MISMATCH || e == HM_ERR_HASH_MISMATCH ? 400 : 500;
	j->body = !e ? json_object()
		     : json_pack("{s:s}", "message", e == HM_ERR_SIZE_MISMATCH ? "parts are missing"
						     : e == HM_ERR_HASH_MISMATCH ? "the parts do not hash to the object's oid"
						     : err_str(e));
}

void mirror__lfs_complete(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
			  const char *oid)
{
	size_t len;
	const char *body = httpd_body(req, &len);
	json_t *in = json_loadb(body ? body : "", len, 0, NULL);
	int64_t size = -1;
	struct complete_job *c;

	if (!repo->local || !upload_cap_ok(rt, req, repo->type, repo->name, oid, &size)) {
		mirror__respond_json(req, 403, json_pack("{s:s}", "message", "this URL does not complete this object"));
	} else if (!json_is_array(json_object_get(in, "parts")) ||
		   (int64_t)json_array_size(json_object_get(in, "parts")) != (size + MULTIPART_CHUNK - 1) / MULTIPART_CHUNK) {
		mirror__respond_json(req, 400, json_pack("{s:s}", "message", "a completion lists every part"));
	} else {
		c = xcalloc(1, sizeof(*c));
		c->j.build = complete_job_build;
		c->j.release = complete_job_release;
		c->data = rt->data;
		c->repo_id = repo->id;
		c->size = size;
		snprintf(c->oid, sizeof(c->oid), "%s", oid);
		mirror__defer(rt, req, &c->j);
	}
	json_decref(in);
}

