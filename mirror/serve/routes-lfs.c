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
#include <openssl/rand.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/size.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/hf.h"
#include "hub/hfwrite.h"
#include "hub/hub.h"
#include "mirror/data.h"
#include "store/store-xet.h"
#include "mirror/xet-record.h"
#include "store/store.h"
#include "mirror/upload.h"
#include "access.h"
#include "routes-hf-int.h"
#include "routes-int.h"

/* ---- Git LFS: batch, PUT, verify -------------------------------------------------------------- */

/* An upload URL's capability: clients PUT an object to the batch's href, and not all of them send the
 * action's headers with it (@huggingface/hub sends none: on the Hub the URL is a presigned one). So
 * the href carries its own proof: "?cap=EXPIRES.NONCE.MAC&size=SIZE", the MAC an HMAC under the data
 * directory's key over the repo, the object, its size, the expiry and a nonce of this upload's own.
 * It lets its holder store that object's bytes for that repo, nothing more: the commit that names the
 * object still needs the token. It lasts as long as the upload may take (a quarter of an hour, and
 * more for a large object: UPLOAD_CAP_RATE), and once the object is in, it is spent (a proxy's log
 * that kept it gives nothing). A large object goes up in parts (the Hub's multipart transfer: the
 * batch's "chunk_size" and a URL per part, each with the capability), written in place into a file of
 * that upload's own (the nonce names it: store_parts_open), and checked whole when the client
 * says it is complete. */
#define UPLOAD_CAP_TTL 900
#define UPLOAD_CAP_RATE (4LL << 20)     /* bytes a second an upload is given time for, at least */
#define UPLOAD_CAP_MAX (24 * 3600)
#define UPLOAD_HOLD_S (24 * 3600)       /* an object uploaded is kept this long for its commit */
#define LFS_OBJECT_MAX (512LL << 30)    /* no object is larger, quota or not */
#define MULTIPART_CHUNK (64LL << 20)
#define MULTIPART_MIN (2 * MULTIPART_CHUNK)

/* What a valid capability says. */
struct upload_cap {
	int64_t size;
	char nonce[17];
};

/* Capabilities spent (their object went in), until they would have expired anyway: a ring. And the
 * uploads in parts streamed into the store's bucket (an object bigger than its local cache:
 * store_parts_stream_*), each under its capability's nonce until it is completed or the capability
 * expires; at most STREAMS_MAX at once (each holds up to about 100 MiB of memory while its parts move). */
#define SPENT_MAX 4096
#define STREAMS_MAX 32
struct mirror__lfs {
	pthread_mutex_t mu;
	struct {
		char nonce[17];
		long long expires;
	} spent[SPENT_MAX];
	size_t next;
	struct {
		char nonce[17];
		long long expires;
		struct store_parts_stream *ps; /* NULL: a free slot */
	} streams[STREAMS_MAX];
};

static struct mirror__lfs *lfs_of(struct mirror_routes *rt)
{
	return rt->lfs; /* (made by mirror_routes_new: mirror__lfs_new) */
}

struct mirror__lfs *mirror__lfs_new(void)
{
	struct mirror__lfs *l = xcalloc(1, sizeof(*l));

	pthread_mutex_init(&l->mu, NULL);
	return l;
}

void mirror__lfs_free(struct mirror__lfs **l)
{
	if (!l || !*l)
		return;
	for (size_t i = 0; i < STREAMS_MAX; i++)
		store_parts_stream_free(&(*l)->streams[i].ps); /* (an upload not completed is aborted) */
	pthread_mutex_destroy(&(*l)->mu);
	free(*l);
	*l = NULL;
}

static bool cap_spent(struct mirror__lfs *l, const char *nonce)
{
	long long now = (long long)time(NULL);
	bool yes = false;

	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < SPENT_MAX && !yes; i++)
		yes = l->spent[i].expires >= now && !strcmp(l->spent[i].nonce, nonce);
	pthread_mutex_unlock(&l->mu);
	return yes;
}

static void cap_spend(struct mirror__lfs *l, const char *nonce, long long expires)
{
	pthread_mutex_lock(&l->mu);
	snprintf(l->spent[l->next].nonce, sizeof(l->spent[0].nonce), "%s", nonce);
	l->spent[l->next].expires = expires;
	l->next = (l->next + 1) % SPENT_MAX;
	pthread_mutex_unlock(&l->mu);
}

/* Take the streamed uploads whose capability expired off the table (l->mu held) into gone[]. */
static void streams_expired(struct mirror__lfs *l, struct store_parts_stream *gone[STREAMS_MAX])
{
	long long now = (long long)time(NULL);

	for (int i = 0; i < STREAMS_MAX; i++)
		if (l->streams[i].ps && l->streams[i].expires < now) {
			gone[i] = l->streams[i].ps;
			l->streams[i].ps = NULL;
		}
}

/* Drop the streamed uploads whose capability expired (a client that never completed: aborted). */
static void streams_reap(struct mirror__lfs *l)
{
	struct store_parts_stream *gone[STREAMS_MAX] = { 0 };

	pthread_mutex_lock(&l->mu);
	streams_expired(l, gone);
	pthread_mutex_unlock(&l->mu);
	for (int i = 0; i < STREAMS_MAX; i++)
		store_parts_stream_free(&gone[i]);
}

/* The streamed upload in parts of a capability (a reference of the caller's, to free), made with its
 * first part when create says so; NULL with *err: none (-ENOENT), -EAGAIN (STREAMS_MAX under way),
 * or store_parts_stream_new's error. Uploads whose capability expired are dropped first. */
static struct store_parts_stream *stream_get(struct mirror__lfs *l, struct store *store, const char *oid,
					     const struct upload_cap *cap, long long expires, bool create, int *err)
{
	struct store_parts_stream *ps = NULL, *gone[STREAMS_MAX] = { 0 };
	struct store_expect x = { .sha256 = oid, .size = cap->size };
	int free_slot = -1;

	*err = -ENOENT;
	pthread_mutex_lock(&l->mu);
	streams_expired(l, gone);
	for (int i = 0; i < STREAMS_MAX; i++) {
		if (l->streams[i].ps && !strcmp(l->streams[i].nonce, cap->nonce))
			ps = store_parts_stream_ref(l->streams[i].ps);
		else if (!l->streams[i].ps && free_slot < 0)
			free_slot = i;
	}
	if (!ps && create && free_slot < 0)
		*err = -EAGAIN;
	else if (!ps && create && !(*err = store_parts_stream_new(store, &x, MULTIPART_CHUNK, &ps))) {
		snprintf(l->streams[free_slot].nonce, sizeof(l->streams[0].nonce), "%s", cap->nonce);
		l->streams[free_slot].expires = expires;
		l->streams[free_slot].ps = store_parts_stream_ref(ps);
	}
	pthread_mutex_unlock(&l->mu);
	for (int i = 0; i < STREAMS_MAX; i++)
		store_parts_stream_free(&gone[i]);
	return ps;
}

/* Forget a streamed upload once its completion decided it (the last reference aborts what is left). */
static void stream_drop(struct mirror__lfs *l, const char *nonce)
{
	struct store_parts_stream *ps = NULL;

	pthread_mutex_lock(&l->mu);
	for (int i = 0; i < STREAMS_MAX && !ps; i++)
		if (l->streams[i].ps && !strcmp(l->streams[i].nonce, nonce)) {
			ps = l->streams[i].ps;
			l->streams[i].ps = NULL;
		}
	pthread_mutex_unlock(&l->mu);
	store_parts_stream_free(&ps);
}

static void upload_mac(const struct mirror_routes *rt, const char *type, const char *name, const char *oid,
		       long long expires, int64_t size, const char *nonce, char out[65])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char *msg = xasprintf("lfs-upload\nhf:%s:%s\n%s\n%lld\n%lld\n%s", type, name, oid, expires, (long long)size,
			      nonce);

	HMAC(EVP_sha256(), rt->p2p_key, 32, (const unsigned char *)msg, strlen(msg), mac, &n);
	hex_encode(mac, 32, out);
	free(msg);
}

/* The query an upload URL carries: "cap=EXPIRES.NONCE.MAC&size=SIZE". */
static char *upload_cap(const struct mirror_routes *rt, const char *type, const char *name, const char *oid,
			int64_t size)
{
	long long ttl = UPLOAD_CAP_TTL + size / UPLOAD_CAP_RATE;
	long long expires = (long long)time(NULL) + (ttl < UPLOAD_CAP_MAX ? ttl : UPLOAD_CAP_MAX);
	unsigned char r[8];
	char mac[65], nonce[17];

	if (RAND_bytes(r, sizeof(r)) != 1)
		return NULL;
	hex_encode(r, sizeof(r), nonce);
	upload_mac(rt, type, name, oid, expires, size, nonce, mac);
	return xasprintf("cap=%lld.%s.%s&size=%lld", expires, nonce, mac, (long long)size);
}

/* Does req carry a live capability, not spent, for object oid of repo type/name? Then *cap (may be
 * NULL) says its size and nonce, and *expires (may be NULL) its end. */
static bool upload_cap_ok(struct mirror_routes *rt, const struct httpd_req *req, const char *type,
			  const char *name, const char *oid, struct upload_cap *cap, long long *expires_out)
{
	char *q = rt->have_p2p_key ? httpd_query_param(req, "cap") : NULL, *sz = httpd_query_param(req, "size");
	char *end = NULL, *send = NULL, mac[65], nonce[17];
	long long expires = q ? strtoll(q, &end, 10) : 0, bytes = sz ? strtoll(sz, &send, 10) : -1;
	bool ok = false;

	if (q && end && *end == '.' && strlen(end + 1) == 16 + 1 + 64 && end[17] == '.' &&
	    expires >= (long long)time(NULL) && send && !*send && bytes >= 0 && bytes <= LFS_OBJECT_MAX) {
		memcpy(nonce, end + 1, 16);
		nonce[16] = '\0';
		upload_mac(rt, type, name, oid, expires, bytes, nonce, mac);
		ok = hex_is_lower(nonce, 16) && !CRYPTO_memcmp(mac, end + 18, 64) && !cap_spent(lfs_of(rt), nonce);
	}
	if (ok && cap) {
		cap->size = bytes;
		memcpy(cap->nonce, nonce, sizeof(cap->nonce));
	}
	if (ok && expires_out)
		*expires_out = expires;
	free(q);
	free(sz);
	return ok;
}

/* Promise an object to a repo's commit for UPLOAD_HOLD_S (gc keeps it: catalog_hold), from before it
 * is published (or, for one already there, from the batch that says so). */
static int hold_upload(struct catalog *cat, int64_t repo_id, const char *oid)
{
	char owner[40];
	const char *v[1] = { oid };

	snprintf(owner, sizeof(owner), "upload:%lld", (long long)repo_id);
	return catalog_hold(cat, owner, (int64_t)time(NULL) + UPLOAD_HOLD_S, v, 1);
}

/* May repo_id name content oid of size as its own (in the store, and mirror_access_may_name: uploaded
 * for it, its own, or held by a repo everyone may read)? Otherwise a client could commit a pointer to
 * a private or guarded repo's file and read it: it must upload the bytes once. */
static bool object_held(struct mirror_routes *rt, struct catalog *cat, const char *oid, int64_t size, int64_t repo_id)
{
	return mirror_access_may_name(rt->access, cat, oid, repo_id) && store_reuse(rt->data->store, oid, size);
}

/* Would the objects of a batch that the repo does not hold yet fit in its namespace's quota? */
static bool quota_ok_for(struct mirror_routes *rt, const struct catalog_repo *repo, const struct hf_lfs_batch *b,
			 char **msg)
{
	size_t k = 0;
	const char **sha = xcalloc(b->nobjects + 1, sizeof(*sha));
	int64_t *size = xcalloc(b->nobjects + 1, sizeof(*size));
	bool ok;

	for (size_t i = 0; i < b->nobjects; i++) {
		const struct hf_lfs_object *o = &b->objects[i];
		if (o->ok && o->size > 0 && !object_held(rt, rt->data->catalog, o->oid, o->size, repo->id)) {
			sha[k] = o->oid;
			size[k++] = o->size;
		}
	}
	ok = mirror__quota_room(rt, rt->data->catalog, repo->name, sha, size, k, msg);
	free(sha);
	free(size);
	return ok;
}

bool mirror__upload_url_ok(struct mirror_routes *rt, const struct httpd_req *req)
{
	char *type = NULL, *name = NULL, *oid = NULL;
	int part;
	bool ok = (!strcmp(httpd_method(req), "PUT") || !strcmp(httpd_method(req), "POST")) &&
		  rt->fronts->git_lfs_object(httpd_path(req), &type, &name, &oid, &part) &&
		  (part != 0 || !strcmp(httpd_method(req), "PUT")) &&
		  upload_cap_ok(rt, req, type, name, oid, NULL, NULL);

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
				 const struct catalog_repo *repo, const struct hf_lfs_batch *b)
{
	const char *auth = httpd_header(req, "Authorization");
	char *base, *msg = NULL;
	json_t *out;

	if (!quota_ok_for(rt, repo, b, &msg)) {
		json_t *e = json_pack("{s:s, s:s}", "message", msg, "error", msg);
		httpd_add_header(req, "X-Error-Message", msg);
		free(msg);
		return e; /* (the caller answers 403 when it sees no objects) */
	}
	streams_reap(lfs_of(rt)); /* (uploads in parts never completed, their URLs expired) */
	base = mirror__self_base(req);
	out = json_array();
	for (size_t i = 0; i < b->nobjects; i++) {
		const char *oid = b->objects[i].oid;
		json_int_t sz = b->objects[i].size;
		json_t *e, *act;
		if (!b->objects[i].ok) {
			e = json_pack("{s:s, s:I, s:{s:i, s:s}}", "oid", oid, "size", sz, "error", "code", 422,
				      "message", "malformed object");
		} else if (sz > LFS_OBJECT_MAX) {
			e = json_pack("{s:s, s:I, s:{s:i, s:s}}", "oid", oid, "size", sz, "error", "code", 422,
				      "message", "the object is larger than this mirror takes (512 GiB)");
		} else if (object_held(rt, rt->data->catalog, oid, sz, repo->id) &&
			   !hold_upload(rt->data->catalog, repo->id, oid)) {
			/* no actions: there, and kept for the commit as an upload would be */
			e = json_pack("{s:s, s:I}", "oid", oid, "size", sz);
		} else {
			char *href = xasprintf("%s/%s/info/lfs/objects/%s", base, repo_path, oid);
			json_t *up = upload_action(rt, base, repo_path, repo, oid, sz, b->multipart);
			if (auth && !json_object_get(up, "header"))
				json_object_set_new(up, "header", json_pack("{s:s}", "Authorization", auth));
			act = json_pack("{s:o, s:{s:s}}", "upload", up, "verify", "href", href);
			if (auth)
				json_object_set_new(json_object_get(act, "verify"), "header",
						    json_pack("{s:s}", "Authorization", auth));
			free(href);
			e = json_pack("{s:s, s:I, s:b, s:o}", "oid", oid, "size", sz, "authenticated", 1, "actions",
				      act);
		}
		json_array_append_new(out, e);
	}
	free(base);
	out = json_pack("{s:s, s:o, s:s}", "transfer", "basic", "objects", out, "hash_algo", "sha256");
	if (b->xet) /* (the client offers Xet: each upload goes there instead, docs/protocols/xet.md) */
		rt->fronts->xet_batch(rt, req, repo_path, repo, out);
	return out;
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
	else if (hold_upload(rt->data->catalog, repo->id, oid)) /* (kept for the commit from here too) */
		mirror__respond_json(req, 500, json_pack("{s:s}", "message", "catalog error"));
	else
		mirror__respond_json(req, 200, json_object());
	json_decref(in);
}

/* ---- streamed bodies: an object into the store (a commit or a push into a file: spool.c) ------- */


/* An LFS object's PUT: its bytes go straight through the store's writer, hashed as they arrive. A PUT
 * the writer cannot take (no right to write, an upload of the same object under way) is read and
 * dropped; its handler answers why. */
struct object_sink {
	struct mirror__sink head;       /* MIRROR__SINK_OBJECT, object_abandon */
	struct store_writer *w;  /* NULL: the bytes are dropped */
	int status;                     /* what went wrong, 0 while nothing did */
	const char *why;                /* static */
	/* a part of a multipart upload: written in place into that upload's own file (locked shared
	 * while fd is open: store_parts_open) */
	int fd;                         /* -1 for a whole object */
	int64_t off, left;              /* where the next byte goes, and how many more the part has */
	/* or, for an object bigger than the bucket's local cache, streamed into the bucket in order */
	struct store_parts_piece *piece;
	bool already;                   /* the part came whole before: its bytes are dropped */
	bool retry;                     /* the status is a 503 to come back from */
	bool capped;                    /* let in by an upload URL's capability ... */
	struct upload_cap cap;          /* ... this one */
	long long cap_expires;
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
	if (s->already)
		return 0;
	if (s->piece) {
		e = (int64_t)n > s->left ? HM_ERR_SIZE_MISMATCH : store_parts_piece_write(s->piece, p, n);
		if (!e) {
			s->left -= (int64_t)n;
			return 0;
		}
		s->status = e == HM_ERR_SIZE_MISMATCH ? 400 : e == -ENOSPC ? 507 : e == -EPIPE ? 409 : 500;
		s->why = e == HM_ERR_SIZE_MISMATCH ? "more bytes than the part has"
			 : e == -EPIPE ? "this part was cut short before, and its bytes that went into the bucket "
					 "are not these: the upload broke, start it again"
				       : "the store cannot take it";
		return 1;
	}
	if (!s->w)
		return 1;
	if ((e = store_writer_write(s->w, p, n))) {
		s->status = e == HM_ERR_SIZE_MISMATCH ? 400 : e == -ENOSPC ? 507 : 500;
		s->why = e == HM_ERR_SIZE_MISMATCH ? "more bytes than the object's size" : "the store cannot take it";
		store_writer_abort(&s->w, false);
		return 1;
	}
	return 0;
}

static void object_abandon(void *ud)
{
	struct object_sink *s = ud;

	store_writer_abort(&s->w, false);
	if (s->fd >= 0)
		close(s->fd);
	store_parts_piece_end(&s->piece); /* (cut short: dropped, to come again) */
	free(s);
}

/* A part of an object bigger than the bucket's local cache: its piece of the upload streamed into the
 * bucket (in now, spooled for its turn, or already in), or s->status and why. */
static void part_stream(struct mirror_routes *rt, struct object_sink *s, const char *oid, int part)
{
	struct store_parts_stream *ps = stream_get(lfs_of(rt), rt->data->store, oid, &s->cap, s->cap_expires, true,
						   &s->status);
	int e = ps ? store_parts_stream_part(rt->data->store, ps, part, &s->piece) : s->status;
	bool had = ps != NULL;

	store_parts_stream_free(&ps);
	s->status = 0;
	if (e == -EALREADY) {
		s->already = true;
	} else if (e == -EAGAIN) {
		s->status = 503;
		s->retry = true;
		s->why = had ? "parts of this upload wait for an earlier one: send the earlier parts first, or this "
			      "one again in a moment"
			    : "too many uploads in parts are under way: try again in a moment";
	} else if (e == -EBUSY) {
		s->status = 409;
		s->why = "this part is arriving in another request, or the upload is being completed";
	} else if (e && !had) {
		s->status = e == -ENOSPC ? 507 : 500;
		s->why = "the store cannot take it";
	} else if (e) {
		s->status = e == -ENOSPC ? 507 : 409;
		s->why = e == -ENOSPC ? "the store cannot take it"
				      : "this upload broke (a part sent again after it was cut short was not the "
					"same bytes, or the bucket failed): start it again";
	}
}

/* A part's place in its upload's own file: opened and locked, s->off and s->left set; or s->status. */
static void part_open(struct mirror_routes *rt, struct object_sink *s, const char *oid, int part)
{
	int64_t size = s->cap.size;

	s->off = (int64_t)(part - 1) * MULTIPART_CHUNK;
	s->left = size - s->off < MULTIPART_CHUNK ? size - s->off : MULTIPART_CHUNK;
	if (s->off >= size) {
		s->status = 400;
		s->why = "the object has no such part";
	} else if (store_streams_size(rt->data->store, size)) {
		part_stream(rt, s, oid, part);
	} else if ((s->fd = store_parts_open(rt->data->store, oid, s->cap.nonce)) < 0) {
		s->status = s->fd == -EBUSY ? 409 : s->fd == -ENOSPC ? 507 : 500;
		s->why = s->fd == -EBUSY ? "this upload is being completed" : "the store cannot take it";
		s->fd = -1;
	}
}

/* An LFS object's PUT, whole or a part: into the store's writer (or the partial file in place) when
 * the request may write it (a write grant, or the upload URL's capability); dropped otherwise. */
static struct object_sink *object_claim(struct mirror_routes *rt, struct httpd_req *r)
{
	struct object_sink *s = xcalloc(1, sizeof(*s));
	char buf[512], *type = NULL, *name = NULL, *oid = NULL, *end;
	const char *tok = mirror__request_token(r, buf, sizeof(buf)), *cl = httpd_header(r, "Content-Length");
	struct store_expect x = { .size = -1 };
	struct catalog_repo repo;
	int e, part = 0;

	s->head.kind = MIRROR__SINK_OBJECT;
	s->head.abandon = object_abandon;
	s->fd = -1;
	if (!rt->fronts->git_lfs_object(httpd_path(r), &type, &name, &oid, &part) || part < 0) {
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
	s->capped = upload_cap_ok(rt, r, type, name, oid, &s->cap, &s->cap_expires);
	if (s->capped && !part)
		x.size = s->cap.size; /* (a body of another size fails the writer's check) */
	/* the handler says why a refused one is refused; its bytes are dropped here */
	if (mirror__local_namespace(rt, name) &&
	    (s->capped || (!part && tok && mirror_access_may_write(rt->access, tok, "hf", type, name))) &&
	    !catalog_repo_get(rt->data->catalog, "hf", type, name, &repo)) {
		if (!repo.local) {
			/* (refused by the handler) */
		} else if (part) {
			part_open(rt, s, oid, part);
		} else if (x.size < 0 || x.size > LFS_OBJECT_MAX) {
			s->status = x.size < 0 ? 411 : 413;
			s->why = x.size < 0 ? "an object's PUT says its length"
					    : "the object is larger than this mirror takes";
		} else if ((e = store_writer_new_private(rt->data->store, &x, &s->w))) {
			/* (a writer of its own: it waits for no one, and no one for it) */
			s->status = e == -ENOSPC ? 507 : 500;
			s->why = "the store cannot take it";
		} else {
			/* bigger than the bucket's local cache: into the bucket as it comes, not to disk */
			store_writer_stream(s->w);
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

	if (!mirror__has_local(rt))
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
	struct mirror__lfs *lfs;
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
	/* held for its commit before it is published (gc's side: mirror/maint.h), then verified,
	 * fsynced, made read-only and renamed */
	int e = hold_upload(cat, p->repo_id, p->oid);

	if (e)
		store_writer_abort(&p->s->w, false);
	else
		e = store_writer_commit(&p->s->w, NULL);

	if (e == HM_ERR_HASH_MISMATCH || e == HM_ERR_SIZE_MISMATCH) {
		log_warn("upload", "hf:%s: an object refused from %s: its bytes are not %s", p->name, p->who, p->oid);
		j->status = 400;
		j->body = json_pack("{s:s}", "message",
				    e == HM_ERR_HASH_MISMATCH ? "the bytes do not hash to the object's oid"
							      : "the bytes are not the object's size");
	} else if (e || catalog_blob_fetched(cat, p->oid, p->repo_id)) {
		j->status = e == -ENOSPC ? 507 : 500;
		j->body = json_pack("{s:s}", "message",
				    e == -ENOSPC ? "No space left on the mirror's disk: the object cannot be kept"
				    : e          ? err_str(e)
						 : "catalog error");
	} else {
		if (p->s->capped)
			cap_spend(p->lfs, p->s->cap.nonce, p->s->cap_expires);
		j->status = 200;
		j->body = json_object();
	}
}

/* A part's end: whole, it is marked so (a completion takes no upload with a part missing) and answered
 * with its ETag (the client hands them back at the end). */
static void part_done(struct mirror_routes *rt, struct httpd_req *req, struct object_sink *s, const char *oid,
		      int part)
{
	int e = -EINVAL;

	if (!s->status && s->fd >= 0 && !s->left) {
		close(s->fd); /* (its lock with it: the part is written) */
		s->fd = -1;
		e = store_parts_done(rt->data->store, oid, s->cap.nonce, part);
	} else if (!s->status && s->already) {
		e = 0; /* (a part sent again after it came whole: its first copy is the one hashed) */
	} else if (!s->status && s->piece && !s->left && (e = store_parts_piece_end(&s->piece)) != 0) {
		s->status = 409;
		s->why = "this upload broke (a part sent again after it was cut short was not the same bytes, or "
			 "the bucket failed): start it again";
	}
	if (s->retry)
		httpd_add_header(req, "Retry-After", "5");
	if (e) {
		mirror__respond_json(req, s->status ? s->status : s->left ? 400 : 500,
				     json_pack("{s:s}", "message", s->why ? s->why : s->left ? "the part is short"
											: "the store cannot take it"));
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

	if (!s || s->head.kind != MIRROR__SINK_OBJECT) {
		/* not claimed: no local namespaces here, or a body the claim did not take */
		mirror__body_abandon(s);
		mirror__respond_json(req, 403, json_pack("{s:s}", "message", "this repository takes no uploads"));
		return;
	}
	if (s->capped && repo->local)
		who = xstrdup("an upload URL");
	else if (part || !mirror__write_gate(rt, req, repo->type, repo->name, &who) || !repo->local) {
		if (!httpd_answered(req))
			mirror__hf_error(req, 403, NULL, "A mirrored repository is read-only", NULL);
		object_abandon(s);
		free(who);
		return;
	}
	if (part) {
		part_done(rt, req, s, oid, part);
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
	p->lfs = lfs_of(rt);
	p->repo_id = repo->id;
	snprintf(p->oid, sizeof(p->oid), "%s", oid);
	p->who = who;
	p->name = xstrdup(repo->name);
	mirror__defer_write(rt, req, &p->j);
}

/* ---- a multipart upload's end: the object checked whole on a worker ------------------------- */

struct complete_job {
	struct mirror__job j;
	struct mirror_data *data;
	struct mirror__lfs *lfs;
	int64_t repo_id;
	struct upload_cap cap;
	long long cap_expires;
	char oid[65];
};

static void complete_job_release(struct mirror__job *j)
{
	free(j);
}

/* An upload in parts streamed into the bucket: completed there only if the whole hashed to the oid. */
static int complete_streamed(struct complete_job *c, int *missing)
{
	struct store_parts_stream *ps = stream_get(c->lfs, c->data->store, c->oid, &c->cap, c->cap_expires, false,
						   &(int){ 0 });
	int e = ps ? store_parts_stream_commit(ps, missing) : -ENOENT;

	if (ps && e != -EBUSY && !(e == HM_ERR_SIZE_MISMATCH && *missing))
		stream_drop(c->lfs, c->cap.nonce); /* (decided: in the bucket, or aborted) */
	store_parts_stream_free(&ps);
	if (e == HM_ERR_HASH_MISMATCH)
		log_warn("upload", "an object in parts refused: its bytes are not %s", c->oid);
	return e;
}

static void complete_job_build(struct mirror__job *j, struct catalog *cat)
{
	struct complete_job *c = (struct complete_job *)j;
	struct store_expect x = { .sha256 = c->oid, .size = c->cap.size };
	int missing = 0, parts = (int)((c->cap.size + MULTIPART_CHUNK - 1) / MULTIPART_CHUNK);
	/* held for its commit first; then its file is taken from the part writers, every part must have
	 * come whole, and the bytes in it are hashed, made read-only and published */
	int e = hold_upload(cat, c->repo_id, c->oid);

	if (!e && store_streams_size(c->data->store, c->cap.size))
		e = complete_streamed(c, &missing);
	else if (!e)
		e = store_parts_commit(c->data->store, &x, c->cap.nonce, parts, &missing);
	if (!e && catalog_blob_fetched(cat, c->oid, c->repo_id))
		e = HM_ERR_SQLITE;
	if (!e) {
		mirror_xet_record(c->data->store, cat, c->oid); /* its Xet hash, from the identity */
		cap_spend(c->lfs, c->cap.nonce, c->cap_expires);
	}
	j->status = !e                                                                       ? 200
		    : e == -EBUSY                                                            ? 409
		    : e == -ENOENT || e == HM_ERR_SIZE_MISMATCH || e == HM_ERR_HASH_MISMATCH ||
				      e == -EPIPE                                                    ? 400
		    : e == -ENOSPC                                                           ? 507
											     : 500;
	if (!e)
		j->body = json_object();
	else if (e == HM_ERR_SIZE_MISMATCH && missing)
		j->body = json_pack("{s:s, s:i}", "message", "a part is missing: send it, then complete again", "part",
				    missing);
	else
		j->body = json_pack("{s:s}", "message",
				    e == -ENOENT                ? "no part of this upload came"
				    : e == -EBUSY               ? "a part of this upload is still being written"
				    : e == HM_ERR_SIZE_MISMATCH ? "the parts are not the object's size"
				    : e == HM_ERR_HASH_MISMATCH ? "the parts do not hash to the object's oid"
				    : e == -EPIPE ? "this upload broke (a part sent again after it was cut short "
						    "was not the same bytes): start it again"
						  : err_str(e));
}

void mirror__lfs_complete(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
			  const char *oid)
{
	size_t len;
	const char *body = httpd_body(req, &len);
	json_t *in = json_loadb(body ? body : "", len, 0, NULL);
	struct upload_cap cap;
	long long expires = 0;
	struct complete_job *c;

	if (!repo->local || !upload_cap_ok(rt, req, repo->type, repo->name, oid, &cap, &expires)) {
		mirror__respond_json(req, 403, json_pack("{s:s}", "message", "this URL does not complete this object"));
	} else if (!json_is_array(json_object_get(in, "parts")) ||
		   (int64_t)json_array_size(json_object_get(in, "parts")) !=
			   (cap.size + MULTIPART_CHUNK - 1) / MULTIPART_CHUNK) {
		mirror__respond_json(req, 400, json_pack("{s:s}", "message", "a completion lists every part"));
	} else {
		c = xcalloc(1, sizeof(*c));
		c->j.build = complete_job_build;
		c->j.release = complete_job_release;
		c->data = rt->data;
		c->lfs = lfs_of(rt);
		c->repo_id = repo->id;
		c->cap = cap;
		c->cap_expires = expires;
		snprintf(c->oid, sizeof(c->oid), "%s", oid);
		/* (hashing an object whole takes long: on the writers' lane, never in front of reads) */
		mirror__defer_write(rt, req, &c->j);
	}
	json_decref(in);
}

