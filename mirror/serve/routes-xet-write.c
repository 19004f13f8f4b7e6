/*
 * routes-xet-write.c - Xet uploads into the mirror's own repositories (docs/protocols/xet.md,
 * "Uploads"; docs/uploads.md): the write token (xet-write-token), the LFS batch's Xet answer, and the
 * CAS's write side under MIRROR__XET_CAS_PATH: xorbs, shards, and the global dedup query.
 *
 * Nothing a client says is believed. A xorb is read whole, every chunk decompressed and hashed and
 * the xorb hash recomputed against its URL (hub/xet: xet_xorb_parse), then kept apart from the store
 * (DATA/xet-uploads/<hash>) as the repo's for XORB_KEEP_S: a xorb is a client's packing of chunks,
 * not content, so the store never holds one. A shard's files are rebuilt from the xorbs the same
 * repo uploaded, or the virtual xorbs the dedup query lent it (made again from the store's bytes) of
 * contents it may name as its own (a shard naming any other xorb is refused: no other repo's private
 * chunks reach this one), each term's chunks verified against its verification hash and the file against its Xet hash
 * (and sha256, where the shard states it), and only then written into the store through its writer
 * as plain bytes, with the sha256 the store computes, held for the repo's commit as an LFS upload is
 * (catalog_hold). The commit then names the file by its sha256, as both clients send it.
 *
 * A xorb is the repo's, not the token's: anyone who may write a repo may read it too (a write grant
 * reads), so sharing chunks within the repo gives nobody anything. The tables of xorbs and of the
 * files shards made are kept as record files beside the xorbs (records below), so a serve restarted
 * between a client's xorbs, its shard and its commit goes on where it was; what is past its time goes
 * at the start and with each new upload.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>
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
#include "mirror/store-xet.h"
#include "mirror/store.h"
#include "access.h"
#include "routes-int.h"
#include "xet-token.h"

#define WRITE_TOKEN_TTL 3600           /* a write token's life; clients refresh it at its href */
#define XORB_KEEP_S (24 * 3600)        /* an uploaded xorb waits this long for the shard that names it */
#define FILE_HOLD_S (24 * 3600)        /* a file a shard made is kept this long for its commit */
#define LEND_S (24 * 3600)             /* a virtual xorb the dedup query lent a repo may be named this long */
#define LEND_MAX_CHUNKS (8 * 8192)     /* chunks one dedup answer lists at most (8 virtual xorbs' worth) */
#define LEND_MAX_CONTENTS 4            /* contents holding the chunk that one answer looks at */

/* One xorb uploaded for a repo. */
struct xorb_rec {
	struct xet_hash hash;
	int64_t repo_id;
	int64_t until;
};

/* One file a shard made for a repo: a commit may name it by its Xet hash. */
struct file_rec {
	struct xet_hash hash;
	char sha256[65];
	int64_t size, repo_id, until;
};

/* One virtual xorb the dedup query lent a repo: run `run` of stored content sha256. */
struct lend_rec {
	struct xet_hash hash;
	char sha256[65];
	uint32_t run;
	int64_t repo_id, until;
};

/* The front's part of the routes (rt->xetw). */
struct mirror__xetw {
	pthread_mutex_t mu;
	char *dir;                     /* DATA/xet-uploads */
	struct xorb_rec *xorbs;
	size_t n, cap;
	struct file_rec *files;
	size_t nfiles, capfiles;
	struct lend_rec *lends;
	size_t nlends, caplends;
};

/* ---- records: the tables on disk ---------------------------------------------------------------
 *
 * In x->dir beside each xorb (HEX, its bytes), one small text file per promise, written under a name
 * of its own and renamed (a crash leaves the old record, the new one, or a *.tmp that the next start
 * deletes): HEX.r<repo id> for a xorb a repo uploaded ("<until>\n"), f.<repo id>.HEX for a file a
 * shard made for a repo ("<sha256> <size> <until>\n"). A xorb that no live record names goes, as
 * does a record whose xorb is gone. */

static char *xorb_rec_name(const struct xet_hash *h, int64_t repo_id)
{
	char hex[XET_HEX_LEN + 1];
	xet_hash_hex(h, hex);
	return xasprintf("%s.r%lld", hex, (long long)repo_id);
}

static char *file_rec_name(const struct xet_hash *h, int64_t repo_id)
{
	char hex[XET_HEX_LEN + 1];
	xet_hash_hex(h, hex);
	return xasprintf("f.%lld.%s", (long long)repo_id, hex);
}

static char *lend_rec_name(const struct xet_hash *h, int64_t repo_id)
{
	char hex[XET_HEX_LEN + 1];
	xet_hash_hex(h, hex);
	return xasprintf("l.%lld.%s", (long long)repo_id, hex);
}

/* Write text as record name (atomically); a warning on failure: the upload goes on, only a restart
 * would forget it. */
static void record_put(const struct mirror__xetw *x, char *name, const char *text)
{
	char *path = xasprintf("%s/%s", x->dir, name);
	char *tmp = xasprintf("%s.%lx.tmp", path, (unsigned long)pthread_self());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), e = fd < 0 ? errno : 0;
	size_t n = strlen(text);

	if (!e && write(fd, text, n) != (ssize_t)n)
		e = EIO; /* (a few bytes: short only when the disk is full) */
	if (fd >= 0 && close(fd) && !e)
		e = errno;
	if (!e && rename(tmp, path))
		e = errno;
	if (e) {
		unlink(tmp);
		log_warn("upload", "%s: %s: a restart would forget this Xet upload", path, strerror(e));
	}
	free(tmp);
	free(path);
	free(name);
}

static void record_drop(const struct mirror__xetw *x, char *name)
{
	char *path = xasprintf("%s/%s", x->dir, name);
	unlink(path);
	free(path);
	free(name);
}

/* The text of record name in dir (at most 200 bytes), NUL-terminated in buf; false when unreadable. */
static bool record_read(int dir, const char *name, char *buf, size_t cap)
{
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	ssize_t k = fd < 0 ? -1 : read(fd, buf, cap - 1);

	if (fd >= 0)
		close(fd);
	if (k <= 0)
		return false;
	buf[k] = 0;
	return true;
}

static void xorbs_add(struct mirror__xetw *x, const struct xorb_rec *r)
{
	if (x->n == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 64;
		x->xorbs = xreallocarray(x->xorbs, x->cap, sizeof(*x->xorbs));
	}
	x->xorbs[x->n++] = *r;
}

static void lends_add(struct mirror__xetw *x, const struct lend_rec *r)
{
	if (x->nlends == x->caplends) {
		x->caplends = x->caplends ? 2 * x->caplends : 16;
		x->lends = xreallocarray(x->lends, x->caplends, sizeof(*x->lends));
	}
	x->lends[x->nlends++] = *r;
}

/* A lend record read back at the start (l.<repo id>.HEX: "<sha256> <run> <until>\n"): 1 when name is
 * one and live (into the table), 0 when it is one to go, -1 when name is no lend record. */
static int load_lend(struct mirror__xetw *x, int dir, const char *name, int64_t now)
{
	char hex[XET_HEX_LEN + 1], buf[200], sha[65];
	long long repo, until;
	unsigned run;
	struct lend_rec l;
	int used = 0;

	if (sscanf(name, "l.%lld.%64[0-9a-f]%n", &repo, hex, &used) != 2 || name[used] ||
	    xet_hash_from_hex(hex, &l.hash))
		return -1;
	if (!record_read(dir, name, buf, sizeof(buf)) || sscanf(buf, "%64[0-9a-f] %u %lld", sha, &run, &until) != 3 ||
	    !hex_is_lower(sha, 64) || until < now)
		return 0;
	memcpy(l.sha256, sha, 65);
	l.run = run;
	l.repo_id = repo;
	l.until = until;
	lends_add(x, &l);
	return 1;
}

static void files_add(struct mirror__xetw *x, const struct file_rec *r)
{
	if (x->nfiles == x->capfiles) {
		x->capfiles = x->capfiles ? 2 * x->capfiles : 64;
		x->files = xreallocarray(x->files, x->capfiles, sizeof(*x->files));
	}
	x->files[x->nfiles++] = *r;
}

/* One entry of the folder read back at the start: a live record into its table; true when the
 * entry is to go (a temporary file, a record past its time or that does not parse, a file record of
 * a content the store lost). Xorbs themselves are judged after (loaded_xorbs_sweep). */
static bool load_entry(struct mirror__xetw *x, struct mirror_data *d, int dir, const char *name, int64_t now)
{
	char hex[XET_HEX_LEN + 1], buf[200], sha[65];
	long long repo, until, size;
	struct xet_hash h;
	int used = 0;

	if (strlen(name) > 4 && !strcmp(name + strlen(name) - 4, ".tmp"))
		return true;
	if ((used = load_lend(x, dir, name, now)) >= 0)
		return used == 0;
	if (sscanf(name, "%64[0-9a-f].r%lld%n", hex, &repo, &used) == 2 && !name[used] && !xet_hash_from_hex(hex, &h)) {
		struct stat st;
		if (!record_read(dir, name, buf, sizeof(buf)) || sscanf(buf, "%lld", &until) != 1 || until < now ||
		    fstatat(dir, hex, &st, 0))
			return true;
		xorbs_add(x, &(struct xorb_rec){ .hash = h, .repo_id = repo, .until = until });
		return false;
	}
	if (sscanf(name, "f.%lld.%64[0-9a-f]%n", &repo, hex, &used) == 2 && !name[used] &&
	    !xet_hash_from_hex(hex, &h)) {
		struct file_rec f = { .hash = h, .repo_id = repo };
		if (!record_read(dir, name, buf, sizeof(buf)) ||
		    sscanf(buf, "%64[0-9a-f] %lld %lld", sha, &size, &until) != 3 || !hex_is_lower(sha, 64) ||
		    until < now || !mirror_store_has(d->store, sha, size))
			return true;
		memcpy(f.sha256, sha, 65);
		f.size = size;
		f.until = until;
		files_add(x, &f);
		return false;
	}
	return false; /* a xorb's bytes, or not ours */
}

/* The xorbs (HEX) no live record names go. */
static void loaded_xorbs_sweep(struct mirror__xetw *x, DIR *dir)
{
	struct dirent *e;
	struct xet_hash h;

	rewinddir(dir);
	while ((e = readdir(dir))) {
		bool named = false;
		if (strlen(e->d_name) != XET_HEX_LEN || xet_hash_from_hex(e->d_name, &h))
			continue;
		for (size_t i = 0; i < x->n && !named; i++)
			named = !memcmp(x->xorbs[i].hash.b, h.b, XET_HASH_LEN);
		if (!named)
			unlinkat(dirfd(dir), e->d_name, 0);
	}
}

struct mirror__xetw *mirror__xetw_new(struct mirror_data *d)
{
	struct mirror__xetw *x = xcalloc(1, sizeof(*x));
	int64_t now = (int64_t)time(NULL);
	DIR *dir;
	struct dirent *e;

	pthread_mutex_init(&x->mu, NULL);
	x->dir = mirror_data_path(d, MIRROR_DATA_XET_UPLOADS);
	if (mkdir(x->dir, 0700) && errno != EEXIST)
		log_warn("upload", "%s: %s: Xet uploads cannot be kept", x->dir, strerror(errno));
	/* what an earlier serve promised and is still in its time, back into the tables */
	if ((dir = opendir(x->dir))) {
		while ((e = readdir(dir)))
			if (e->d_name[0] != '.' && load_entry(x, d, dirfd(dir), e->d_name, now))
				unlinkat(dirfd(dir), e->d_name, 0);
		loaded_xorbs_sweep(x, dir);
		closedir(dir);
	}
	if (x->n || x->nfiles || x->nlends)
		log_info("upload", "Xet uploads awaiting their shard or commit, taken back: xorbs %zu, files %zu, "
			 "lent xorbs %zu", x->n, x->nfiles, x->nlends);
	return x;
}

void mirror__xetw_free(struct mirror__xetw **xp)
{
	if (!xp || !*xp)
		return;
	pthread_mutex_destroy(&(*xp)->mu);
	free((*xp)->dir);
	free((*xp)->xorbs);
	free((*xp)->files);
	free((*xp)->lends);
	free(*xp);
	*xp = NULL;
}

static char *xorb_path(const struct mirror__xetw *x, const struct xet_hash *h)
{
	char hex[XET_HEX_LEN + 1];
	xet_hash_hex(h, hex);
	return xasprintf("%s/%s", x->dir, hex);
}

/* Forget the xorbs past their time, and their files (under x->mu). */
static void xorbs_sweep(struct mirror__xetw *x, int64_t now)
{
	size_t w = 0;
	for (size_t i = 0; i < x->n; i++) {
		bool others = false;
		if (x->xorbs[i].until >= now) {
			x->xorbs[w++] = x->xorbs[i];
			continue;
		}
		record_drop(x, xorb_rec_name(&x->xorbs[i].hash, x->xorbs[i].repo_id));
		for (size_t j = 0; j < x->n && !others; j++)
			others = j != i && x->xorbs[j].until >= now &&
				 !memcmp(x->xorbs[j].hash.b, x->xorbs[i].hash.b, XET_HASH_LEN);
		if (!others) {
			char *p = xorb_path(x, &x->xorbs[i].hash);
			unlink(p);
			free(p);
		}
	}
	x->n = w;
}

/* Record xorb h as repo_id's (again: its time starts over). */
static void xorb_keep(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id)
{
	int64_t now = (int64_t)time(NULL);
	char until[24];
	size_t i;

	pthread_mutex_lock(&x->mu);
	xorbs_sweep(x, now);
	for (i = 0; i < x->n; i++)
		if (x->xorbs[i].repo_id == repo_id && !memcmp(x->xorbs[i].hash.b, h->b, XET_HASH_LEN))
			break;
	if (i == x->n)
		xorbs_add(x, &(struct xorb_rec){ .hash = *h, .repo_id = repo_id });
	x->xorbs[i].until = now + XORB_KEEP_S;
	snprintf(until, sizeof(until), "%lld\n", (long long)x->xorbs[i].until);
	record_put(x, xorb_rec_name(h, repo_id), until); /* (under mu: a sweep may not drop it between) */
	pthread_mutex_unlock(&x->mu);
}

/* Did repo_id upload xorb h, and is it still kept? */
static bool xorb_owned(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id)
{
	int64_t now = (int64_t)time(NULL);
	bool yes = false;

	pthread_mutex_lock(&x->mu);
	for (size_t i = 0; i < x->n && !yes; i++)
		yes = x->xorbs[i].repo_id == repo_id && x->xorbs[i].until >= now &&
		      !memcmp(x->xorbs[i].hash.b, h->b, XET_HASH_LEN);
	pthread_mutex_unlock(&x->mu);
	return yes;
}

/* Record virtual xorb h (run `run` of content sha) as lent to repo_id (its time starts over); the ones
 * past their time go. */
static void lend_keep(struct mirror__xetw *x, const struct xet_hash *h, const char *sha, uint32_t run,
		      int64_t repo_id)
{
	int64_t now = (int64_t)time(NULL);
	char text[120];
	size_t w = 0, i;

	pthread_mutex_lock(&x->mu);
	for (i = 0; i < x->nlends; i++) {
		if (x->lends[i].until >= now)
			x->lends[w++] = x->lends[i];
		else
			record_drop(x, lend_rec_name(&x->lends[i].hash, x->lends[i].repo_id));
	}
	x->nlends = w;
	for (i = 0; i < x->nlends; i++)
		if (x->lends[i].repo_id == repo_id && !memcmp(x->lends[i].hash.b, h->b, XET_HASH_LEN))
			break;
	if (i == x->nlends)
		lends_add(x, &(struct lend_rec){ 0 });
	x->lends[i] = (struct lend_rec){ .hash = *h, .run = run, .repo_id = repo_id, .until = now + LEND_S };
	memcpy(x->lends[i].sha256, sha, 65);
	snprintf(text, sizeof(text), "%s %u %lld\n", x->lends[i].sha256, run, (long long)x->lends[i].until);
	record_put(x, lend_rec_name(h, repo_id), text);
	pthread_mutex_unlock(&x->mu);
}

/* Was virtual xorb h lent to repo_id, in its time? Its content and run into sha and *run. */
static bool xorb_lent(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id, char sha[65], uint32_t *run)
{
	int64_t now = (int64_t)time(NULL);
	bool yes = false;

	pthread_mutex_lock(&x->mu);
	for (size_t i = 0; i < x->nlends && !yes; i++) {
		const struct lend_rec *l = &x->lends[i];
		if (l->repo_id == repo_id && l->until >= now && !memcmp(l->hash.b, h->b, XET_HASH_LEN)) {
			memcpy(sha, l->sha256, 65);
			*run = l->run;
			yes = true;
		}
	}
	pthread_mutex_unlock(&x->mu);
	return yes;
}

/* Record the file a shard made (its time starts over if it was there). */
static void file_keep(struct mirror__xetw *x, const struct xet_hash *h, const char *sha, int64_t size,
		      int64_t repo_id)
{
	int64_t now = (int64_t)time(NULL);
	char text[120];
	size_t w = 0, i;

	pthread_mutex_lock(&x->mu);
	for (i = 0; i < x->nfiles; i++) { /* (the ones past their time go) */
		if (x->files[i].until >= now)
			x->files[w++] = x->files[i];
		else
			record_drop(x, file_rec_name(&x->files[i].hash, x->files[i].repo_id));
	}
	x->nfiles = w;
	for (i = 0; i < x->nfiles; i++)
		if (x->files[i].repo_id == repo_id && !memcmp(x->files[i].hash.b, h->b, XET_HASH_LEN))
			break;
	if (i == x->nfiles)
		files_add(x, &(struct file_rec){ 0 });
	x->files[i] = (struct file_rec){ .hash = *h, .size = size, .repo_id = repo_id, .until = now + FILE_HOLD_S };
	memcpy(x->files[i].sha256, sha, 65);
	snprintf(text, sizeof(text), "%s %lld %lld\n", sha, (long long)size, (long long)x->files[i].until);
	record_put(x, file_rec_name(h, repo_id), text);
	pthread_mutex_unlock(&x->mu);
}

bool mirror__xet_file(struct mirror_routes *rt, int64_t repo_id, const char *xet_hash, char sha256[65],
		      int64_t *size)
{
	struct mirror__xetw *x = rt->xetw;
	int64_t now = (int64_t)time(NULL);
	struct xet_hash h;
	bool yes = false;

	if (xet_hash_from_hex(xet_hash, &h))
		return false;
	pthread_mutex_lock(&x->mu);
	for (size_t i = 0; i < x->nfiles && !yes; i++) {
		const struct file_rec *f = &x->files[i];
		if (f->repo_id == repo_id && f->until >= now && !memcmp(f->hash.b, h.b, XET_HASH_LEN)) {
			memcpy(sha256, f->sha256, 65);
			*size = f->size;
			yes = true;
		}
	}
	pthread_mutex_unlock(&x->mu);
	return yes;
}

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
static struct mirror__commit_body *cas_body(struct httpd_req *req)
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
static unsigned char *body_bytes(const struct mirror__commit_body *s, size_t *n)
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

/* Write buf[0..n) as the file of xorb h (atomically: a temporary name, then renamed). */
static int xorb_store(struct mirror__xetw *x, const struct xet_hash *h, const unsigned char *buf, size_t n)
{
	char *path = xorb_path(x, h), *tmp = xasprintf("%s.%ld.tmp", path, (long)pthread_self() & 0xffffff);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), e = 0;
	size_t put = 0;

	if (fd < 0)
		e = -errno;
	while (!e && put < n) {
		ssize_t k = write(fd, buf + put, n - put);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			e = k < 0 ? -errno : -EIO;
		else
			put += (size_t)k;
	}
	if (fd >= 0 && close(fd) && !e)
		e = -errno;
	if (!e && rename(tmp, path))
		e = -errno;
	if (e)
		unlink(tmp);
	free(tmp);
	free(path);
	return e;
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
	unsigned char *b = body_bytes(x->body, &n);
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
		xorb_keep(x->x, &x->hash, x->repo_id);
		xorb_answer(j, x, xorb, hex, xorb_store(x->x, &x->hash, b, n));
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
	if (!(s = cas_body(req)))
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

/* ---- a shard ------------------------------------------------------------------------------------ */

/* The xorbs a shard's job has open: each mapped and read once. */
struct open_xorb {
	struct xet_hash hash;
	unsigned char *map;
	size_t len;
	struct xet_xorb *x;
};

struct shard_job {
	struct mirror__job j;
	struct mirror_data *data;
	struct mirror__xetw *xw;
	struct mirror__commit_body *body;
	int64_t repo_id;
	char *name;
	/* the job's own */
	struct xet_xorb_decoder *dec;
	struct open_xorb *open;
	size_t nopen;
	unsigned char room[XET_CHUNK_MAX];
	char why[300];
};

static void shard_job_release(struct mirror__job *j)
{
	struct shard_job *s = (struct shard_job *)j;
	mirror__spool_release(s->body);
	for (size_t i = 0; i < s->nopen; i++) {
		munmap(s->open[i].map, s->open[i].len);
		xet_xorb_free(&s->open[i].x);
	}
	free(s->open);
	xet_xorb_decoder_free(&s->dec);
	free(s->name);
	free(s);
}

/* Why the shard is refused, in s->why (a, b and c one after the other). */
static int refuse(struct shard_job *s, const char *a, const char *b, const char *c)
{
	snprintf(s->why, sizeof(s->why), "%s%s%s", a, b, c);
	return -EBADMSG;
}

/* pread all n bytes at off. */
static int pread_all(int fd, unsigned char *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t k = pread(fd, p, n, (off_t)off);
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* Virtual xorb h (hex), lent to this repo by the dedup query, made again as a xorb from the stored
 * content's bytes (its run of chunks, each behind an uncompressed chunk's header) into an anonymous map
 * in o. 0, or -EBADMSG with s->why (not lent to this repo, or its content no longer stored). */
static int lent_map(struct shard_job *s, const struct xet_hash *h, const char *hex, struct open_xorb *o)
{
	struct mirror__xet_run *runs = NULL;
	struct xet_identity *id = NULL;
	const struct xet_chunk *c = NULL;
	char sha[65], *blob = NULL;
	size_t nc = 0, nr = 0;
	uint32_t run;
	unsigned char *p;
	int fd = -1, e = -EBADMSG;

	if (!xorb_lent(s->xw, h, s->repo_id, sha, &run))
		return refuse(s, "the shard names xorb ", hex,
			      ", which was not uploaded for this repository (nor lent to it)");
	if (!mirror_store_xet_identity(s->data->store, sha, &id)) {
		c = xet_identity_chunks(id, &nc);
		nr = mirror__xet_runs(c, nc, &runs);
	}
	if (!id || nr <= run || !(blob = mirror_store_blob_path(s->data->store, sha)) ||
	    (fd = open(blob, O_RDONLY | O_CLOEXEC)) < 0) {
		refuse(s, "xorb ", hex, " was lent from a content no longer stored: upload it");
		goto out;
	}
	o->len = runs[run].len;
	o->map = mmap(NULL, o->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (o->map == MAP_FAILED) {
		o->map = NULL;
		refuse(s, "no room to make xorb ", hex, " again");
		goto out;
	}
	p = o->map;
	for (size_t i = runs[run].first; i < runs[run].first + runs[run].n; i++) {
		xet_xorb_chunk_header_write(p, c[i].size);
		if (pread_all(fd, p + XET_XORB_CHUNK_HEADER_LEN, c[i].size, c[i].offset)) {
			munmap(o->map, o->len);
			o->map = NULL;
			refuse(s, "xorb ", hex, " was lent from a content that does not read back");
			goto out;
		}
		p += XET_XORB_CHUNK_HEADER_LEN + c[i].size;
	}
	e = 0;
out:
	if (fd >= 0)
		close(fd);
	free(blob);
	free(runs);
	xet_identity_free(&id);
	return e;
}

/* Xorb h as this repo uploaded it, read (and verified again: its file is ours, but cheap to trust
 * nothing); NULL with s->why when the repo did not upload it. */
static const struct open_xorb *xorb_open(struct shard_job *s, const struct xet_hash *h)
{
	char hex[XET_HEX_LEN + 1], *path, *why = NULL;
	struct open_xorb o = { .hash = *h };
	struct stat st;
	int fd;

	for (size_t i = 0; i < s->nopen; i++)
		if (!memcmp(s->open[i].hash.b, h->b, XET_HASH_LEN))
			return &s->open[i];
	xet_hash_hex(h, hex);
	if (!xorb_owned(s->xw, h, s->repo_id)) {
		if (lent_map(s, h, hex, &o))
			return NULL;
	} else {
		path = xorb_path(s->xw, h);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		free(path);
		if (fd < 0 || fstat(fd, &st) || st.st_size <= 0 ||
		    (o.map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
			if (fd >= 0)
				close(fd);
			refuse(s, "xorb ", hex, " is no longer kept: upload it again");
			return NULL;
		}
		close(fd);
		o.len = (size_t)st.st_size;
	}
	/* (a lent xorb too: its bytes are the store's, their hashes checked against its name all the same) */
	if (xet_xorb_parse(s->dec, o.map, o.len, h, &o.x, &why)) {
		munmap(o.map, o.len);
		refuse(s, "xorb ", hex, " does not read back");
		free(why);
		return NULL;
	}
	s->open = xreallocarray(s->open, s->nopen + 1, sizeof(*s->open));
	s->open[s->nopen] = o;
	return &s->open[s->nopen++];
}

/* What a file's rebuilding feeds: its chunk list (for the file hash), its sha256, and the store's
 * writer (NULL in the first pass, which only checks). */
struct rebuild {
	struct xet_node *nodes;
	size_t n, cap;
	EVP_MD_CTX *sha;
	struct mirror_store_writer *w;
	uint64_t size;
};

/* The chunks of term t, each decompressed, checked against the term and fed to r. */
static int rebuild_term(struct shard_job *s, const struct xet_shard_term *t, struct rebuild *r)
{
	const struct open_xorb *o = xorb_open(s, &t->xorb);
	struct xet_hash *hashes;
	struct xet_hash got;
	uint64_t bytes = 0;
	int e = 0;

	if (!o)
		return -EBADMSG;
	if (t->end > o->x->n)
		return refuse(s, "a term names chunks past the end of its xorb", "", "");
	hashes = xreallocarray(NULL, t->end - t->start, sizeof(*hashes));
	for (uint32_t i = t->start; i < t->end && !e; i++) {
		struct xet_xorb_chunk_header h;
		size_t used;
		const struct xet_xorb_entry *c = &o->x->chunks[i];
		if (xet_xorb_chunk_read(s->dec, o->map + c->offset, o->len - c->offset, &h, s->room, &used, NULL)) {
			e = refuse(s, "a chunk does not read back", "", "");
			break;
		}
		hashes[i - t->start] = c->hash;
		bytes += h.uncompressed_size;
		if (r->w) {
			if ((e = mirror_store_writer_write(r->w, s->room, h.uncompressed_size)))
				break;
			continue;
		}
		EVP_DigestUpdate(r->sha, s->room, h.uncompressed_size);
		if (r->n == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 256;
			r->nodes = xreallocarray(r->nodes, r->cap, sizeof(*r->nodes));
		}
		r->nodes[r->n++] = (struct xet_node){ c->hash, h.uncompressed_size };
	}
	if (!e && bytes != t->size)
		e = refuse(s, "a term's size is not its chunks'", "", "");
	if (!e && !r->w) {
		xet_range_hash(hashes, t->end - t->start, &got);
		if (memcmp(got.b, t->verify.b, XET_HASH_LEN))
			e = refuse(s, "a term's verification hash is not its chunks'", "", "");
	}
	r->size += bytes;
	free(hashes);
	return e;
}

/* The first pass over file f: every term checked, the file hash and sha256 computed. */
static int check_file(struct shard_job *s, const struct xet_shard_file *f, char sha_hex[65], uint64_t *size)
{
	struct rebuild r = { .sha = EVP_MD_CTX_new() };
	unsigned char md[32];
	struct xet_hash got;
	int e = 0;

	if (!f->verified)
		e = refuse(s, "a file without verification hashes", "", "");
	EVP_DigestInit_ex(r.sha, EVP_sha256(), NULL);
	for (size_t i = 0; i < f->n && !e; i++)
		e = rebuild_term(s, &f->terms[i], &r);
	if (!e) {
		EVP_DigestFinal_ex(r.sha, md, NULL);
		hex_encode(md, 32, sha_hex);
		xet_file_hash(r.nodes, r.n, &got);
		if (memcmp(got.b, f->hash.b, XET_HASH_LEN))
			e = refuse(s, "a file's chunks do not hash to its Xet hash", "", "");
		else if (f->has_sha256 && (xet_hash_from_hex(sha_hex, &got) || memcmp(got.b, f->sha256, 32)))
			/* (the shard holds the sha256's hex read as a Xet hash: in its word order) */
			e = refuse(s, "a file's bytes do not hash to the sha256 the shard says", "", "");
	}
	*size = r.size;
	free(r.nodes);
	EVP_MD_CTX_free(r.sha);
	return e;
}

/* The second pass: the file written into the store as its plain bytes, held for the repo's commit
 * first (gc's side: mirror/maint.h), then verified by the writer and published. */
static int write_file(struct shard_job *s, struct catalog *cat, const struct xet_shard_file *f, const char *sha,
		      uint64_t size)
{
	struct mirror_store_expect x = { .sha256 = sha, .size = (int64_t)size };
	struct rebuild r = { 0 };
	char owner[40];
	const char *v[1] = { sha };
	int e;

	snprintf(owner, sizeof(owner), "upload:%lld", (long long)s->repo_id);
	if ((e = catalog_hold(cat, owner, (int64_t)time(NULL) + FILE_HOLD_S, v, 1)))
		return e;
	if (!mirror_store_has(s->data->store, sha, (int64_t)size)) {
		if ((e = mirror_store_writer_new_private(s->data->store, &x, &r.w)))
			return e;
		for (size_t i = 0; i < f->n && !e; i++)
			e = rebuild_term(s, &f->terms[i], &r);
		if (e)
			mirror_store_writer_abort(&r.w, false);
		else
			e = mirror_store_writer_commit(&r.w, NULL);
		if (e)
			return e;
		mirror_store_xet_record(s->data->store, cat, sha);   /* the dedup query finds it from now on */
	}
	return catalog_blob_fetched(cat, sha, s->repo_id);
}

/* The xorbs the shard lists must be this repo's, chunk for chunk as their bytes say. */
static int check_xorbs(struct shard_job *s, const struct xet_shard *sh)
{
	for (size_t i = 0; i < sh->nxorbs; i++) {
		const struct xet_shard_xorb *l = &sh->xorbs[i];
		const struct open_xorb *o = xorb_open(s, &l->hash);
		if (!o)
			return -EBADMSG;
		if (l->n != o->x->n)
			return refuse(s, "the shard lists a xorb with another number of chunks than it has", "", "");
		for (size_t k = 0; k < l->n; k++)
			if (l->chunks[k].size != o->x->chunks[k].size ||
			    memcmp(l->chunks[k].hash.b, o->x->chunks[k].hash.b, XET_HASH_LEN))
				return refuse(s, "the shard's chunk hashes or sizes are not its xorbs'", "", "");
	}
	return 0;
}

static void shard_job_build(struct mirror__job *j, struct catalog *cat)
{
	struct shard_job *s = (struct shard_job *)j;
	struct xet_shard *sh = NULL;
	size_t n = 0, done = 0;
	unsigned char *b = body_bytes(s->body, &n);
	char *why = NULL;
	int e = b ? xet_shard_parse(b, n, &sh, &why) : -EIO;

	s->dec = xet_xorb_decoder_new();
	if (e && why)
		snprintf(s->why, sizeof(s->why), "%s", why);
	if (!e && sh->keyed)
		e = refuse(s, "a shard with keyed chunk hashes is not an upload", "", "");
	if (!e)
		e = check_xorbs(s, sh);
	for (size_t i = 0; !e && i < sh->nfiles; i++) {
		char sha[65], hex[XET_HEX_LEN + 1];
		uint64_t size = 0;
		xet_hash_hex(&sh->files[i].hash, hex);
		if (!(e = check_file(s, &sh->files[i], sha, &size)) &&
		    !(e = write_file(s, cat, &sh->files[i], sha, size))) {
			file_keep(s->xw, &sh->files[i].hash, sha, (int64_t)size, s->repo_id);
			log_info("upload", "hf:%s: Xet file %s in as sha256 %s (%llu bytes)", s->name, hex, sha,
				 (unsigned long long)size);
			done++;
		}
	}
	if (e == -EBADMSG || e == -E2BIG || e == HM_ERR_HASH_MISMATCH || e == HM_ERR_SIZE_MISMATCH) {
		log_warn("upload", "hf:%s: a shard refused: %s", s->name, s->why[0] ? s->why : err_str(e));
		j->status = e == -E2BIG ? 413 : 400;
		j->body = json_pack("{s:s}", "error", s->why[0] ? s->why : err_str(e));
	} else if (e) {
		j->status = e == -ENOSPC ? 507 : 500;
		j->body = json_pack("{s:s}", "error", err_str(e));
	} else {
		log_info("upload", "hf:%s: shard in (%zu files, %zu xorbs)", s->name, done, sh->nxorbs);
		j->status = 200;
		j->body = json_pack("{s:i}", "result", 1);
	}
	free(why);
	free(b);
	xet_shard_free(&sh);
}

static void shard_post(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo)
{
	struct mirror__commit_body *b = cas_body(req);
	struct shard_job *s;

	if (!b)
		return;
	s = xcalloc(1, sizeof(*s));
	s->j.build = shard_job_build;
	s->j.release = shard_job_release;
	s->data = rt->data;
	s->xw = rt->xetw;
	s->body = b;
	s->repo_id = repo->id;
	s->name = xstrdup(repo->name);
	mirror__defer_write(rt, req, &s->j);
}

/* ---- the global dedup query ------------------------------------------------------------------------
 *
 * GET {cas}/v1/chunks/default[-merkledb]/HASH: a stored content whose first chunk, or one of its eligible
 * chunks (mirror_store_xet_dedup_eligible), is HASH, and which the token's repo may name as its own
 * (mirror_access_may_name: its own, or one a repo everyone may read holds; never a private or guarded
 * repo's to another), is answered as a shard listing its virtual xorbs, from the run that holds HASH on
 * (at most LEND_MAX_CHUNKS chunks), each lent to the repo for LEND_S: a later shard of the repo may name
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
	int e = mirror_store_xet_identity(d->data->store, sha, &id);

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
		lend_keep(d->xw, &x->hash, sha, (uint32_t)ri, d->repo_id);
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
	j->text = (char *)xet_shard_write(xs, nx, (uint64_t)now, (uint64_t)(now + LEND_S), &j->len);
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
		shard_post(rt, req, &repo);
	catalog_repo_release(&repo);
	return 0;
}
