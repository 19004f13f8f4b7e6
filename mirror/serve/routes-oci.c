/*
 * routes-oci.c - the OCI Distribution API, read-only, under /v2/ (docs/protocols/oci.md): a snapshot
 * of a repo is a CNCF ModelPack artifact, a manifest with one raw layer per file whose digest is the
 * file's sha256 (its bytes the store's blob, no copy), and a config made from the snapshot's own
 * files. Repositories are named hf/ORG/NAME, hf-datasets/ORG/NAME, ms/ORG/NAME, ms-datasets/ORG/NAME;
 * a reference is a ref (its tag form), a full commit id or a manifest's digest. The manifest and config
 * are built from the snapshot alone (its commit, its files in path order, its config.json), so their
 * bytes and digests never change for one snapshot; a manifest asked by digest is found again by
 * building those of the repo's snapshots. Access follows the other fronts' rules (access.h): the
 * request's token comes as HTTP Basic (the token the password) or Bearer.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "base/buf.h"
#include "base/bug.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/hub.h"
#include "hub/oci.h"
#include "mirror/data.h"
#include "store/store.h"
#include "access.h"
#include "routes-int.h"
#include "routes-oci-int.h"

/* ---- answers ---- */

static void oci_error(struct httpd_req *req, int status, const char *code, const char *msg)
{
	json_t *body = json_pack("{s:[{s:s,s:s,s:n}]}", "errors", "code", code, "message", msg, "detail");
	char *text = json_dumps(body, JSON_COMPACT);

	httpd_add_header(req, "Docker-Distribution-API-Version", "registry/2.0");
	httpd_respond(req, status, "application/json", text, strlen(text));
	free(text);
	json_decref(body);
}

/* ---- the registry token flow ---- */

#define OCI_TOKEN_TTL 300      /* seconds a registry token stands for its mirror token */
#define OCI_TOKENS_MAX 4096    /* registry tokens kept; past it the oldest goes */
#define OCI_TOKEN_PREFIX "hmreg_"

/* The registry tokens this serve gave out (docs/protocols/oci.md, "Access"): each stands for a mirror
 * token, or for none (anonymous), until it expires. In memory, on the loop: a restarted serve forgets
 * them, and clients ask the token endpoint again on the 401 that follows. One table per process, as
 * a process serves one set of routes. */
static struct oci_regtoken {
	char id[sizeof(OCI_TOKEN_PREFIX) + 40];
	char *tok;        /* the mirror token (malloc'd), or NULL */
	int64_t expires;
} oci_regtokens[OCI_TOKENS_MAX];
static size_t oci_nregtokens;

static void oci_regtoken_drop(size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(oci_regtokens[i].tok);
	memmove(oci_regtokens, oci_regtokens + n, (oci_nregtokens - n) * sizeof(oci_regtokens[0]));
	oci_nregtokens -= n;
}

/* A new registry token for tok (may be NULL), or NULL when no random bytes came. */
static const char *oci_regtoken_issue(const char *tok, int64_t now)
{
	struct oci_regtoken *t;
	unsigned char r[20];
	size_t expired = 0;

	/* the table is in issue order, and every token lives as long: the expired are its head */
	while (expired < oci_nregtokens && oci_regtokens[expired].expires <= now)
		expired++;
	oci_regtoken_drop(expired ? expired : oci_nregtokens == OCI_TOKENS_MAX);
	if (RAND_bytes(r, sizeof(r)) != 1)
		return NULL;
	t = &oci_regtokens[oci_nregtokens++];
	memcpy(t->id, OCI_TOKEN_PREFIX, sizeof(OCI_TOKEN_PREFIX) - 1);
	hex_encode(r, sizeof(r), t->id + sizeof(OCI_TOKEN_PREFIX) - 1);
	t->tok = tok ? xstrdup(tok) : NULL;
	t->expires = now + OCI_TOKEN_TTL;
	return t->id;
}

/* The registry token id, live: its mirror token (NULL: anonymous) into *tok. */
static bool oci_regtoken_find(const char *id, int64_t now, const char **tok)
{
	for (size_t i = 0; i < oci_nregtokens; i++)
		if (!strcmp(oci_regtokens[i].id, id) && oci_regtokens[i].expires > now) {
			*tok = oci_regtokens[i].tok;
			return true;
		}
	return false;
}

/* The challenge of a 401: the token endpoint to ask, for this repository's pull when one is named. */
static void oci_challenge(struct oreq *o)
{
	char *base = mirror__self_base(o->req);

	if (o->ociname[0])
		httpd_add_headerf(o->req, "WWW-Authenticate",
				  "Bearer realm=\"%s/v2/token\",service=\"hubmirror\",scope=\"repository:%s:pull\"",
				  base, o->ociname);
	else
		httpd_add_headerf(o->req, "WWW-Authenticate", "Bearer realm=\"%s/v2/token\",service=\"hubmirror\"",
				  base);
	free(base);
}

/* 401 with the challenge registries' clients answer by asking the token endpoint (with the mirror's
 * token as the password, when they have one), or 403 to a valid token that may not read it. */
static void oci_refuse(struct oreq *o)
{
	bool valid = o->tok && o->rt->access && mirror_access_token_valid(o->rt->access, o->tok);

	if (!valid) {
		oci_challenge(o);
		oci_error(o->req, 401, "UNAUTHORIZED", "authentication required: the mirror's token as the password");
	} else {
		oci_error(o->req, 403, "DENIED", "this token may not read this repository on this mirror");
	}
}

/* GET /v2/token: a registry token for the mirror token the client sent (Basic, the token the
 * password; or Bearer), or an anonymous one, whatever the scope asked: the grants are the mirror
 * token's, checked on each request. A token the mirror does not know is refused. */
static void oci_token(struct oreq *o)
{
	const struct mirror_access *a = o->rt->access;
	bool tokens = a && mirror_access_path(a);
	int64_t now = (int64_t)time(NULL);
	const char *id;
	char at[32];
	struct tm tm;
	time_t t = (time_t)now;

	if (tokens && ((o->tok && !mirror_access_token_valid(a, o->tok)) ||
		       (!o->tok && mirror_access_mode(a) == ACCESS_ALL))) {
		httpd_add_header(o->req, "WWW-Authenticate", "Basic realm=\"hubmirror\"");
		oci_error(o->req, 401, "UNAUTHORIZED",
			  o->tok ? "this mirror does not know that token" : "this mirror wants a token (the password)");
		return;
	}
	if (!(id = oci_regtoken_issue(tokens ? o->tok : NULL, now))) {
		oci_error(o->req, 500, "UNKNOWN", "no random bytes for a token");
		return;
	}
	gmtime_r(&t, &tm);
	strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	httpd_add_header(o->req, "Cache-Control", "no-store");
	mirror__respond_json(o->req, 200,
			     json_pack("{s:s,s:s,s:i,s:s}", "token", id, "access_token", id, "expires_in",
				       OCI_TOKEN_TTL, "issued_at", at));
}

/* ---- names ---- */

static const struct {
	const char *prefix, *hub, *type;
} oci_prefixes[] = {
	{ "hf", "hf", "model" },
	{ "hf-datasets", "hf", "dataset" },
	{ "ms", "ms", "model" },
	{ "ms-datasets", "ms", "dataset" },
};

/* A ref's name as an OCI tag ([A-Za-z0-9_][A-Za-z0-9._-]{0,127}): itself when valid, else each other
 * character made '-' (refs/pr/1 -> refs-pr-1), and a first character that may not start one made
 * '_'. out holds 129 bytes; false when the name is too long to be a tag. */
static bool oci_tag_of(const char *ref, char out[129])
{
	size_t n = strlen(ref);

	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = ref[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
			  ((c == '.' || c == '-') && i > 0);
		out[i] = ok ? c : (i == 0 ? '_' : '-');
	}
	out[n] = '\0';
	return true;
}

static bool oci_tag_valid(const char *s)
{
	char t[129];

	return oci_tag_of(s, t) && !strcmp(t, s);
}

/* The repo named ORG/NAME: the catalog's exact name, else the one name that matches it but for case
 * (OCI names are lowercase; the hubs' are not). Fills o->repo. 0, HM_ERR_NOT_FOUND or an error. */
static int oci_find_repo(struct oreq *o, const char *name)
{
	struct catalog *cat = o->rt->data->catalog;
	struct catalog_repo *all = NULL;
	size_t n = 0, hit = (size_t)-1;
	int r;

	if (hub_check_name(strcmp(o->hub, "ms") ? HUB_HF : HUB_MS, name))
		return HM_ERR_NOT_FOUND; /* (a name the hub could not have reaches no lookup) */
	r = catalog_repo_get(cat, o->hub, o->type, name, &o->repo);
	if (r != HM_ERR_NOT_FOUND)
		return r;
	if ((r = catalog_repo_list(cat, &all, &n)))
		return r;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(all[i].hub, o->hub) && !strcmp(all[i].type, o->type) && !strcasecmp(all[i].name, name))
			hit = hit == (size_t)-1 ? i : (size_t)-2;
	if (hit < n && catalog_repo_get(cat, o->hub, o->type, all[hit].name, &o->repo) == 0)
		r = 0;
	else
		r = HM_ERR_NOT_FOUND;
	catalog_repo_list_free(all, n);
	return r;
}

/* Find the repository and decide: 0 to go on, else answered (NAME_UNKNOWN for a repo the mirror lacks
 * or this request may not see, 401/403 for one it may not read). */
static int oci_open_repo(struct oreq *o, const char *name)
{
	const struct mirror_access *a = o->rt->access;
	int r = oci_find_repo(o, name);
	bool ok;

	if (r && r != HM_ERR_NOT_FOUND) {
		oci_error(o->req, 500, "UNKNOWN", "catalog error");
		return -1;
	}
	o->have_repo = r == 0;
	if (r || !mirror_access_visible(a, o->tok, &o->repo)) {
		oci_error(o->req, 404, "NAME_UNKNOWN", "repository name not known to this mirror");
		return -1;
	}
	if (a)
		ok = mirror_access_allows(a, o->tok, o->hub, o->type, o->repo.name) &&
		     mirror_access_private_allows(a, o->tok, &o->repo) && mirror_access_content_open(a, &o->repo);
	else
		ok = !mirror__private_local(&o->repo) && mirror_access_content_open(a, &o->repo);
	if (!ok) {
		oci_refuse(o);
		return -1;
	}
	return 0;
}

/* ---- lookups ---- */

struct oci_snaps {
	struct catalog_snapshot *v;
	size_t n;
};

static int oci_snap_add(void *ud, const struct catalog_snapshot *s)
{
	struct oci_snaps *l = ud;

	l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = *s;
	return 0;
}

enum oci_want { WANT_MANIFEST, WANT_BLOB /* a raw layer or a config */ };

static bool oci_art_has(const struct oci_art *a, const char *digest, enum oci_want want)
{
	return (want == WANT_BLOB && a->layer_size >= 0) || mirror__oci_art_doc(a, digest, want == WANT_MANIFEST);
}

/* The artifact of the repo's snapshot (of those wholly in the store) whose manifest, config or one of
 * whose raw layers (want) has digest digest. 0 (fills *a and *snap), HM_ERR_NOT_FOUND or an error. A
 * scan: the artifact of each snapshot is built until one matches (docs/protocols/oci.md); an image
 * whose layers' digests are not all kept was never given out, and is passed over. */
static int oci_find_digest(struct oreq *o, const char *digest, enum oci_want want, struct catalog_snapshot *snap,
			   struct oci_art *a)
{
	struct catalog *cat = o->rt->data->catalog;
	struct oci_snaps l = { NULL, 0 };
	int r = catalog_snapshots_each(cat, o->repo.id, oci_snap_add, &l);

	for (size_t i = 0; !r && i < l.n; i++) {
		if (catalog_snapshot_complete(cat, l.v[i].id) != 1)
			continue;
		*snap = l.v[i];
		r = mirror__oci_art_build(o, snap, want == WANT_BLOB && !o->image ? digest + 7 : NULL, a);
		if (r == 0 && oci_art_has(a, digest, want)) {
			free(l.v);
			return 0;
		}
		if (r == OCI_NEED_CONFIG)
			memcpy(o->config_need, a->config_sha, sizeof(o->config_need));
		mirror__oci_art_release(a);
		if (r == OCI_NEED_CONFIG) {
			free(l.v);
			return r;
		}
		r = 0;
	}
	free(l.v);
	return r ? r : HM_ERR_NOT_FOUND;
}

struct oci_tagfind {
	const char *tag;
	char *ref;     /* the one ref whose tag form is tag, malloc'd */
	int hits;
};

static int oci_tagfind_ref(void *ud, const char *name, const char *kind, const char *commit)
{
	struct oci_tagfind *f = ud;
	char t[129];

	(void)kind;
	(void)commit;
	if (oci_tag_of(name, t) && !strcmp(t, f->tag) && strcmp(name, f->tag)) {
		if (!f->hits++)
			f->ref = xstrdup(name);
	}
	return 0;
}

static bool is_digest(const char *s)
{
	return !strncmp(s, "sha256:", 7) && strlen(s) == 71 && hex_is_lower(s + 7, 64);
}

/* The snapshot a reference names: a ref by its name or tag form, a full commit id, or a manifest's
 * digest (then *a is built too, *built set). 0, HM_ERR_NOT_FOUND or an error. */
static int oci_resolve(struct oreq *o, const char *ref, struct catalog_snapshot *snap, struct oci_art *a, bool *built)
{
	struct catalog_repo lite;
	bool found = false;
	int r;

	*built = false;
	if (is_digest(ref)) {
		r = oci_find_digest(o, ref, WANT_MANIFEST, snap, a);
		*built = r == 0;
		return r;
	}
	r = catalog_resolve_lite(o->rt->data->catalog, o->hub, o->type, o->repo.name, ref, &lite, snap, &found);
	if (found)
		catalog_repo_release(&lite);
	if (r == HM_ERR_NOT_FOUND && oci_tag_valid(ref)) {
		struct oci_tagfind f = { ref, NULL, 0 };
		catalog_refs_each(o->rt->data->catalog, o->repo.id, oci_tagfind_ref, &f);
		if (f.hits == 1) {
			found = false;
			r = catalog_resolve_lite(o->rt->data->catalog, o->hub, o->type, o->repo.name, f.ref, &lite,
						 snap, &found);
			if (found)
				catalog_repo_release(&lite);
		}
		free(f.ref);
	}
	return r;
}

/* ---- the routes ---- */

static int oci_route(struct mirror_routes *rt, struct httpd_req *req, const char *rest, bool deferred,
		     json_t *configs);

/* The digests of an image's tar layers not kept yet, computed off the loop (each file read whole),
 * then kept, and the request routed again. */
struct oci_tarjob {
	struct mirror_routes *rt;
	char *rest;
	size_t n;
	struct oci_tarjob_file {
		char sha256[65];
		char *path, *file;
		int64_t size;
		unsigned char *header;
		size_t header_len;
		char digest[72];
		char *why; /* what failed, in the store's words (a read by ranges) */
		int r;
	} *f;
};

/* A content bigger than the cache's bound, read for its layer's digest by ranges from where the store has
 * it (store_read: the bucket's object, nothing brought into the cache), and hashed to its own id on the
 * way: the bucket's copy is not trusted blindly. */
#define OCI_TAR_RANGE ((size_t)8 << 20) /* one ranged GET: a 100 GB file in 12,800 of them */

struct oci_tar_ranges {
	struct store *st;
	const char *sha256;
	int64_t size;
	EVP_MD_CTX *md;
	char *why;
};

static int oci_tar_ranges_read(void *ud, int64_t off, void *buf, size_t len)
{
	struct oci_tar_ranges *t = ud;
	unsigned char d[32];
	char hex[65];
	int r = store_read(t->st, t->sha256, off, buf, len, t->why ? NULL : &t->why);

	if (!r && EVP_DigestUpdate(t->md, buf, len) != 1)
		r = -EIO;
	if (r || off + (int64_t)len < t->size)
		return r;
	if (EVP_DigestFinal_ex(t->md, d, NULL) != 1)
		return -EIO;
	hex_encode(d, sizeof(d), hex);
	if (strcmp(hex, t->sha256)) {
		free(t->why);
		t->why = xasprintf("the store's copy of %s (the bucket's object) hashes to %s: damaged, no digest kept",
				   t->sha256, hex);
		return HM_ERR_HASH_MISMATCH;
	}
	return 0;
}

static void oci_tarjob_ranges(struct oci_tarjob *j, struct oci_tarjob_file *f)
{
	struct oci_tar_ranges t = { .st = j->rt->data->store, .sha256 = f->sha256, .size = f->size,
				    .md = EVP_MD_CTX_new() };

	if (!t.md || EVP_DigestInit_ex(t.md, EVP_sha256(), NULL) != 1)
		f->r = -ENOMEM;
	else
		f->r = hub_oci_tar_digest_read(f->header, f->header_len, f->size, OCI_TAR_RANGE, oci_tar_ranges_read,
					       &t, f->digest);
	if (!f->r)
		log_info("oci", "%.12s (%" PRId64 " bytes): its tar layer's digest hashed from the store's ranges, "
			 "not brought into the cache", f->sha256, f->size);
	f->why = t.why;
	EVP_MD_CTX_free(t.md);
}

static void oci_tarjob_work(void *p)
{
	struct oci_tarjob *j = p;
	struct store *st = j->rt->data->store;

	for (size_t i = 0; i < j->n; i++) {
		struct oci_tarjob_file *f = &j->f[i];
		f->r = hub_oci_tar_header(f->path, f->size, &f->header, &f->header_len);
		if (f->r)
			continue;
		if (store_in_bucket(st) && store_streams_size(st, f->size)) {
			oci_tarjob_ranges(j, f); /* (bigger than the cache's bound: never brought in) */
			continue;
		}
		/* (here, not on the loop: with a bucket, a content not in the cache is brought in first) */
		f->file = store_blob_path(st, f->sha256);
		f->r = f->file ? hub_oci_tar_digest(f->header, f->header_len, f->file, f->size, f->digest) : -ENOENT;
	}
}

static void oci_tarjob_done(void *p, struct httpd_req *req)
{
	struct oci_tarjob *j = p;
	int64_t bytes = 0;

	for (size_t i = 0; i < j->n; i++) {
		struct oci_tarjob_file *f = &j->f[i];
		if (!f->r)
			f->r = catalog_oci_tar_put(j->rt->data->catalog, f->sha256, f->path, f->digest, f->header,
						   f->header_len);
		if (f->r)
			log_warn("oci", "the tar layer of %s (%s): %s", f->path, f->sha256,
				 f->why ? f->why : err_str(f->r));
		bytes += f->size;
		free(f->why);
		free(f->path);
		free(f->file);
		free(f->header);
	}
	log_info("oci", "%zu tar layers' digests computed (%" PRId64 " bytes read)", j->n, bytes);
	if (req)
		oci_route(j->rt, req, j->rest, true, NULL);
	free(j->f);
	free(j->rest);
	free(j);
}

/* Compute the digests a->missing lists off the loop; the request is answered when they are kept. */
static void oci_tarjob_start(struct oreq *o, const struct oci_art *a)
{
	struct oci_tarjob *j = xcalloc(1, sizeof(*j));
	size_t i;
	json_t *v;

	j->rt = o->rt;
	j->rest = xstrdup(o->rest);
	j->n = json_array_size(a->missing);
	j->f = xcalloc(j->n, sizeof(*j->f));
	json_array_foreach(a->missing, i, v) {
		struct oci_tarjob_file *f = &j->f[i];
		snprintf(f->sha256, sizeof(f->sha256), "%s", json_string_value(json_array_get(v, 0)));
		f->path = xstrdup(json_string_value(json_array_get(v, 1)));
		f->size = json_integer_value(json_array_get(v, 2));
	}
	/* (the aside lane: a model's weights take a while to read, and no other answer waits for them) */
	httpd_defer_aside(o->req, oci_tarjob_work, oci_tarjob_done, j);
}

/* A snapshot's config.json that only the store's bucket holds: read on a worker (store_slurp, nothing
 * brought into the cache, its bytes checked), kept in the request's configs, and the request routed
 * again, never waiting on the bucket on the loop. */
struct oci_cfgjob {
	struct mirror_routes *rt;
	char *rest;
	bool deferred;
	char sha256[65];
	json_t *configs;   /* o->configs and this one's (owned) */
};

static void oci_cfgjob_work(void *p)
{
	struct oci_cfgjob *j = p;
	char *text = NULL, *why = NULL;
	size_t len = 0;
	int r = store_slurp(j->rt->data->store, j->sha256, (size_t)OCI_CONFIG_MAX, false, &text, &len, &why);

	if (r && r != -ENOENT) {
		log_warn("oci", "config.json %.12s: %s", j->sha256, why ? why : err_str(r));
		json_object_set_new(j->configs, j->sha256, json_string(why ? why : err_str(r)));
	} else {
		json_t *c = r ? NULL : mirror__oci_config_parse(text, len);
		json_object_set_new(j->configs, j->sha256, c ? c : json_null());
	}
	free(text);
	free(why);
}

static void oci_cfgjob_done(void *p, struct httpd_req *req)
{
	struct oci_cfgjob *j = p;

	if (req)
		oci_route(j->rt, req, j->rest, j->deferred, j->configs);
	json_decref(j->configs);
	free(j->rest);
	free(j);
}

static void oci_cfgjob_start(struct oreq *o)
{
	struct oci_cfgjob *j = xcalloc(1, sizeof(*j));

	j->rt = o->rt;
	j->rest = xstrdup(o->rest);
	j->deferred = o->deferred;
	memcpy(j->sha256, o->config_need, sizeof(j->sha256));
	/* (a copy: the worker adds to it while the loop may still hold the last one) */
	j->configs = o->configs ? json_deep_copy(o->configs) : json_object();
	httpd_defer(o->req, oci_cfgjob_work, oci_cfgjob_done, j);
}

static void oci_manifest(struct oreq *o, const char *ref)
{
	struct catalog_snapshot snap;
	struct oci_art a;
	const struct oci_doc *d;
	bool built = false;
	int r = oci_resolve(o, ref, &snap, &a, &built);
	char etag[80];

	if (r == OCI_NEED_CONFIG) {
		oci_cfgjob_start(o);
		return;
	}
	if (r) {
		oci_error(o->req, r == HM_ERR_NOT_FOUND ? 404 : 500,
			  r == HM_ERR_NOT_FOUND ? "MANIFEST_UNKNOWN" : "UNKNOWN",
			  r == HM_ERR_NOT_FOUND ? "manifest unknown to this mirror" : "catalog error");
		return;
	}
	if (!built && catalog_snapshot_complete(o->rt->data->catalog, snap.id) != 1) {
		oci_error(o->req, 404, "MANIFEST_UNKNOWN",
			  "this snapshot is not wholly in the mirror's store yet (fetched on demand or partly held): "
			  "the mirror serves its manifest once a sync has fetched every file");
		return;
	}
	if (!built && (r = mirror__oci_art_build(o, &snap, NULL, &a))) {
		if (r == OCI_INCOMPLETE && !o->deferred) {
			oci_tarjob_start(o, &a);
		} else if (r == OCI_NEED_CONFIG) {
			memcpy(o->config_need, a.config_sha, sizeof(o->config_need));
			oci_cfgjob_start(o);
		} else if (a.config_err) {
			char *msg = xasprintf("the snapshot's config.json cannot be read from the mirror's store: %s",
					      a.config_err);
			oci_error(o->req, 500, "UNKNOWN", msg);
			free(msg);
		} else {
			oci_error(o->req, 500, "UNKNOWN", "the snapshot's manifest could not be built");
		}
		mirror__oci_art_release(&a);
		return;
	}
	d = built ? mirror__oci_art_doc(&a, ref, true) : &a.docs[a.main];
	snprintf(etag, sizeof(etag), "\"%s\"", d->digest);
	httpd_add_header(o->req, "Docker-Distribution-API-Version", "registry/2.0");
	httpd_add_header(o->req, "Docker-Content-Digest", d->digest);
	httpd_add_header(o->req, "ETag", etag);
	httpd_add_header(o->req, "X-Repo-Commit", snap.commit);
	/* the repo in its own spelling (an OCI name is lowercase): an agent takes its snapshot by it */
	httpd_add_headerf(o->req, "X-Hubmirror-Repo", "%s:%s%s", o->repo.hub,
			  strcmp(o->repo.type, "dataset") ? "" : "datasets/", o->repo.name);
	if (httpd_header(o->req, "If-None-Match") && httpd_etag_matches(httpd_header(o->req, "If-None-Match"), etag))
		httpd_respond_str(o->req, 304, NULL, "");
	else
		httpd_respond(o->req, 200, d->type, d->text, d->len);
	mirror__oci_art_release(&a);
}

/* A tar layer (hub/oci.h): its header from the catalog, the file from the store, zeros; one Range. The
 * file from the local copy (with a bucket, the cache's, which oci_tar_fill brought in: never a fill on
 * the loop), or, for a content bigger than the cache's bound that the cache does not hold, straight from
 * the bucket as the client takes it (mirror__bucket_framed_send: the cache left as it is, a whole read
 * hashed to the content's id before its last byte goes). -1 when the store has no copy of it now. */
static int oci_send_tar(struct oreq *o, const struct catalog_oci_tar *t)
{
	int64_t hl = (int64_t)t->header_len, total = hl + t->size + hub_oci_tar_tail(t->size), a = 0, b = 0;
	struct store *st = o->rt->data->store;
	char *blob = store_in_bucket(st) ? store_cache_path(st, t->sha256) : store_blob_path(st, t->sha256);
	int fd = blob ? open(blob, O_RDONLY | O_CLOEXEC) : -1, rr;
	bool direct = fd < 0 && store_in_bucket(st) && store_streams_size(st, t->size);
	struct hub_oci_span sp;
	char range[80];

	free(blob);
	if (fd < 0 && !direct)
		return -1;
	if (fd >= 0 && store_in_bucket(st))
		futimens(fd, (struct timespec[]){ { 0, UTIME_NOW }, { 0, UTIME_OMIT } }); /* read last: kept */
	rr = httpd_parse_range(httpd_header(o->req, "Range"), total, &a, &b);
	if (rr < 0) {
		if (fd >= 0)
			close(fd);
		httpd_add_header(o->req, "Accept-Ranges", "bytes");
		httpd_add_headerf(o->req, "Content-Range", "bytes */%" PRId64, total);
		httpd_respond_str(o->req, 416, "text/plain", "range not satisfiable\n");
		return 0;
	}
	if (rr == 0) {
		a = 0;
		b = total - 1;
	}
	/* [a, b] cut into the header's part, the file's and the zeros' */
	hub_oci_tar_span(hl, t->size, a, b + 1, &sp);
	if (rr)
		snprintf(range, sizeof(range), "bytes %" PRId64 "-%" PRId64 "/%" PRId64, a, b, total);
	if (direct && sp.f1 > sp.f0)
		return mirror__bucket_framed_send(o->rt, o->req, rr ? range : NULL, t->sha256, t->size,
						  t->header + sp.h0, (size_t)(sp.h1 - sp.h0), sp.f0, sp.f1, sp.zeros);
	httpd_add_header(o->req, "Accept-Ranges", "bytes");
	if (rr)
		httpd_add_header(o->req, "Content-Range", range);
	httpd_respond_file_framed(o->req, rr ? 206 : 200, "application/octet-stream", t->header + sp.h0,
				  (size_t)(sp.h1 - sp.h0), sp.f1 > sp.f0 ? fd : (fd >= 0 ? close(fd) : 0, -1), sp.f0,
				  sp.f1 - sp.f0, sp.zeros);
	return 0;
}

/* A tar layer's content that the store's bucket holds and its cache does not: brought in on a worker
 * (the loop never waits on the bucket), then the request is routed again. */
struct oci_fill {
	struct mirror_routes *rt;
	char *rest;
	char sha256[65];
};

static void oci_fill_work(void *p)
{
	struct oci_fill *f = p;

	free(store_blob_path(f->rt->data->store, f->sha256));
}

static void oci_fill_done(void *p, struct httpd_req *req)
{
	struct oci_fill *f = p;

	if (req)
		oci_route(f->rt, req, f->rest, true, NULL);
	free(f->rest);
	free(f);
}

/* Whether t's content is to be brought into the cache first (then the request was deferred for it):
 * with a bucket, not in the cache, not once already for this request, and within the cache's bound
 * (one bigger is sent straight from the bucket: oci_send_tar). */
static bool oci_tar_fill(struct oreq *o, const struct catalog_oci_tar *t)
{
	struct store *st = o->rt->data->store;
	char *blob;
	bool there;
	struct oci_fill *f;

	if (!store_in_bucket(st) || o->deferred || store_streams_size(st, t->size))
		return false;
	blob = store_cache_path(st, t->sha256);
	there = !blob || access(blob, F_OK) == 0;
	free(blob);
	if (there)
		return false;
	f = xcalloc(1, sizeof(*f));
	f->rt = o->rt;
	f->rest = xstrdup(o->rest);
	snprintf(f->sha256, sizeof(f->sha256), "%s", t->sha256);
	httpd_defer_aside(o->req, oci_fill_work, oci_fill_done, f);
	return true;
}

/* An image's tar layer of that digest: 0 (answered, or deferred to be), HM_ERR_NOT_FOUND or an error. */
static int oci_blob_tar(struct oreq *o, const char *digest)
{
	struct catalog_oci_tar t;
	int r = catalog_oci_tar_find(o->rt->data->catalog, o->repo.id, digest, &t);

	if (r)
		return r;
	/* (a provisional snapshot's content held for another repo is not this one's yet) */
	if (mirror__file_trusted(o->rt, t.snapshot_id, t.sha256) != 1) {
		r = HM_ERR_NOT_FOUND;
	} else if (!oci_tar_fill(o, &t)) {
		httpd_add_header(o->req, "Docker-Content-Digest", digest);
		httpd_add_headerf(o->req, "ETag", "\"%s\"", digest);
		if (oci_send_tar(o, &t))
			oci_error(o->req, 404, "BLOB_UNKNOWN", "blob not in the mirror's store now");
	}
	free(t.header);
	return r;
}

static void oci_blob(struct oreq *o, const char *digest)
{
	struct catalog_snapshot snap;
	struct oci_art a;
	const struct oci_doc *d;
	int64_t size = 0;
	char etag[80];
	int r;

	if (!is_digest(digest)) {
		oci_error(o->req, 400, "DIGEST_INVALID", "a digest here is sha256: and 64 lowercase hex digits");
		return;
	}
	snprintf(etag, sizeof(etag), "\"%s\"", digest);
	httpd_add_header(o->req, "Docker-Distribution-API-Version", "registry/2.0");
	if (o->image && (r = oci_blob_tar(o, digest)) != HM_ERR_NOT_FOUND) {
		if (r)
			goto out;
		return;
	}
	r = o->image ? HM_ERR_NOT_FOUND : catalog_repo_content(o->rt->data->catalog, o->repo.id, digest + 7, &size);
	if (r == HM_ERR_NOT_FOUND) {
		/* a file of a snapshot no ref points at now (a manifest asked by digest), or a config */
		r = oci_find_digest(o, digest, WANT_BLOB, &snap, &a);
		if (r == OCI_NEED_CONFIG) {
			oci_cfgjob_start(o);
			return;
		}
		if (r)
			goto out;
		if ((d = mirror__oci_art_doc(&a, digest, false))) {
			httpd_add_header(o->req, "Docker-Content-Digest", digest);
			httpd_add_header(o->req, "ETag", etag);
			httpd_respond(o->req, 200, d->type, d->text, d->len);
			mirror__oci_art_release(&a);
			return;
		}
		size = a.layer_size;
		mirror__oci_art_release(&a);
		/* (a provisional snapshot's content held for another repo is not this one's yet) */
		if (mirror__file_trusted(o->rt, snap.id, digest + 7) != 1)
			r = HM_ERR_NOT_FOUND;
	}
	if (r == 0) {
		httpd_add_header(o->req, "Docker-Content-Digest", digest);
		httpd_add_header(o->req, "ETag", etag);
		if (mirror__send_blob(o->rt, o->req, digest + 7, size))
			oci_error(o->req, 404, "BLOB_UNKNOWN", "blob not in the mirror's store now");
		return;
	}
out:
	oci_error(o->req, r == HM_ERR_NOT_FOUND ? 404 : 500, r == HM_ERR_NOT_FOUND ? "BLOB_UNKNOWN" : "UNKNOWN",
		  r == HM_ERR_NOT_FOUND ? "blob unknown to this repository" : "catalog error");
}

static int oci_tag_add(void *ud, const char *name, const char *kind, const char *commit)
{
	json_t *tags = ud;
	char t[129];
	size_t i;
	json_t *v;

	(void)kind;
	(void)commit;
	if (!oci_tag_of(name, t))
		return 0;
	json_array_foreach(tags, i, v)
		if (!strcmp(json_string_value(v), t))
			return 0;
	json_array_append_new(tags, json_string(t));
	return 0;
}

static void oci_tags(struct oreq *o)
{
	json_t *tags = json_array();
	char *name = xasprintf("%s/%s", o->prefix, o->repo.name);

	catalog_refs_each(o->rt->data->catalog, o->repo.id, oci_tag_add, tags);
	for (char *p = name; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
	httpd_add_header(o->req, "Docker-Distribution-API-Version", "registry/2.0");
	mirror__respond_json(o->req, 200, json_pack("{s:s,s:o}", "name", name, "tags", tags));
	free(name);
}

/* The repositories this request may see, with a snapshot, lowercased, in the hubs' order. */
static void oci_catalog(struct oreq *o)
{
	struct catalog_repo *all = NULL;
	size_t n = 0;
	char *hidden = mirror__hidden_for(o->rt, o->tok);
	json_t *hid = hidden ? json_loads(hidden, 0, NULL) : NULL, *names = json_array();

	if (catalog_repo_list(o->rt->data->catalog, &all, &n)) {
		oci_error(o->req, 500, "UNKNOWN", "catalog error");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char *key = xasprintf("%s:%s:%s", all[i].hub, all[i].type, all[i].name), *nm;
		bool skip = !all[i].head_commit || !mirror_access_visible(o->rt->access, o->tok, &all[i]);
		size_t j;
		json_t *v;
		json_array_foreach(hid, j, v)
			skip = skip || !strcmp(json_string_value(v), key);
		free(key);
		if (skip)
			continue;
		nm = xasprintf("%s%s/%s", all[i].hub, strcmp(all[i].type, "dataset") ? "" : "-datasets", all[i].name);
		for (char *p = nm; *p; p++)
			*p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
		json_array_append_new(names, json_string(nm));
		free(nm);
	}
	httpd_add_header(o->req, "Docker-Distribution-API-Version", "registry/2.0");
	mirror__respond_json(o->req, 200, json_pack("{s:O}", "repositories", names));
out:
	catalog_repo_list_free(all, n);
	json_decref(names);
	json_decref(hid);
	free(hidden);
}

/* Split rest at '/' into seg (the first 7); returns how many there are. Writes into dup. */
static size_t oci_split(char *dup, char *seg[7])
{
	char *save = NULL;
	size_t n = 0;

	for (char *p = strtok_r(dup, "/", &save); p; p = strtok_r(NULL, "/", &save))
		if (n++ < 7)
			seg[n - 1] = p;
	return n;
}

/* The repository's path segments (seg, n as oci_split gave them) past "image/": how many there are,
 * *image set when they came after it. */
static size_t oci_unimage(char **seg[], size_t n, bool *image)
{
	*image = n > 0 && !strcmp((*seg)[0], "image");
	if (*image)
		(*seg)++;
	return *image ? n - 1 : n;
}

/* Is rest one of the registry's paths ("", _catalog, token, [image/]PREFIX/ORG/NAME/{manifests/X|blobs/X|
 * tags/list})? Any other under /v2/ is passed on: a Hub repo of an org named v2 is the Hub API's. */
static bool oci_ours(const char *rest)
{
	char *dup = xstrdup(rest), *all[7] = { 0 }, **seg = all;
	bool prefix = false, ours, image;
	size_t n = oci_unimage(&seg, oci_split(dup, all), &image);

	for (size_t i = 0; n == 5 && i < sizeof(oci_prefixes) / sizeof(oci_prefixes[0]); i++)
		prefix = prefix || !strcmp(seg[0], oci_prefixes[i].prefix);
	ours = !*rest || !strcmp(rest, "_catalog") || !strcmp(rest, "token") ||
	       (prefix && (!strcmp(seg[3], "manifests") || !strcmp(seg[3], "blobs") ||
			   (!strcmp(seg[3], "tags") && !strcmp(seg[4], "list"))));
	free(dup);
	return ours;
}

/* rest: [image/]PREFIX/ORG/NAME/{manifests/REF|blobs/DIGEST|tags/list} */
static void oci_named(struct oreq *o, const char *rest)
{
	char *dup = xstrdup(rest), *all[7] = { 0 }, **seg = all, *ref = NULL, *name = NULL;
	size_t n = oci_unimage(&seg, oci_split(dup, all), &o->image);

	for (size_t i = 0; n >= 4 && i < sizeof(oci_prefixes) / sizeof(oci_prefixes[0]); i++)
		if (!strcmp(seg[0], oci_prefixes[i].prefix)) {
			o->prefix = oci_prefixes[i].prefix;
			o->hub = oci_prefixes[i].hub;
			o->type = oci_prefixes[i].type;
		}
	if (!o->prefix || n != 5 || (strcmp(seg[3], "manifests") && strcmp(seg[3], "blobs") &&
				     (strcmp(seg[3], "tags") || strcmp(seg[4], "list")))) {
		oci_error(o->req, 404, "NAME_UNKNOWN",
			  "not a repository of this mirror: [image/] hf/, hf-datasets/, ms/ or ms-datasets/ ORG/NAME");
		goto out;
	}
	name = xasprintf("%s/%s", seg[1], seg[2]);
	snprintf(o->ociname, sizeof(o->ociname), "%s%s/%s", o->image ? "image/" : "", o->prefix, name);
	ref = httpd_unescape(seg[4], strlen(seg[4]), false);
	if (!ref || oci_open_repo(o, name))
		goto out;
	if (!strcmp(seg[3], "manifests"))
		oci_manifest(o, ref);
	else if (!strcmp(seg[3], "blobs"))
		oci_blob(o, ref);
	else
		oci_tags(o);
out:
	if (!ref && name) /* (%00, or no percent-encoding) */
		oci_error(o->req, 404, strcmp(seg[3], "blobs") ? "MANIFEST_UNKNOWN" : "BLOB_UNKNOWN",
			  "no such reference");
	free(ref);
	free(name);
	free(dup);
}

/* Route a request of the registry's (again after its layers' digests were computed: deferred; or after
 * config.json's were read on a worker: configs). */
static int oci_route(struct mirror_routes *rt, struct httpd_req *req, const char *rest, bool deferred,
		     json_t *configs)
{
	struct oreq o;
	const char *m = httpd_method(req);

	memset(&o, 0, sizeof(o));
	o.rt = rt;
	o.req = req;
	o.rest = rest;
	o.deferred = deferred;
	o.configs = configs;
	o.tok = mirror__request_token(req, o.tokbuf, sizeof(o.tokbuf));
	if (strcmp(m, "GET") && strcmp(m, "HEAD")) {
		httpd_add_header(req, "Allow", "GET, HEAD");
		oci_error(req, 405, "UNSUPPORTED", "this mirror's registry is read-only");
		return 0;
	}
	if (!strcmp(rest, "token")) {
		oci_token(&o);
		return 0;
	}
	if (o.tok && !strncmp(o.tok, OCI_TOKEN_PREFIX, sizeof(OCI_TOKEN_PREFIX) - 1)) {
		const char *mapped = NULL;
		if (!oci_regtoken_find(o.tok, (int64_t)time(NULL), &mapped)) {
			oci_challenge(&o);
			oci_error(req, 401, "UNAUTHORIZED",
				  "registry token unknown or expired: ask the token endpoint again");
			return 0;
		}
		o.regtok = true;
		o.tok = mapped ? o.tokbuf : NULL;
		if (mapped)
			snprintf(o.tokbuf, sizeof(o.tokbuf), "%s", mapped);
	}
	/* under --auth all nothing goes without a valid token; /v2/ itself asks any client with no valid
	 * token for one when the mirror has tokens, the way registries say "send your credentials" (a
	 * registry token of the token endpoint's, anonymous too, is one) */
	if (rt->access && mirror_access_path(rt->access) && !mirror_access_token_valid(rt->access, o.tok) &&
	    (mirror_access_mode(rt->access) == ACCESS_ALL || (!*rest && !o.regtok))) {
		oci_refuse(&o);
		return 0;
	}
	if (!*rest) {
		httpd_add_header(req, "Docker-Distribution-API-Version", "registry/2.0");
		httpd_respond_str(req, 200, "application/json", "{}");
	} else if (!strcmp(rest, "_catalog")) {
		oci_catalog(&o);
	} else {
		oci_named(&o, rest);
	}
	if (o.have_repo)
		catalog_repo_release(&o.repo);
	return 0;
}

int mirror__route_oci(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	(void)arg;
	if (!oci_ours(rest))
		return HTTPD_PASS;
	return oci_route(rt, req, rest, false, NULL);
}
