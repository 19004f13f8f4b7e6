/*
 * routes-xet-write-records.c - the Xet write side's tables (routes-xet-write.c has the whole story):
 * the xorbs each repo uploaded, the files its shards made, the virtual xorbs the dedup query lent it, each with
 * its time; kept as small record files beside the xorbs in DATA/xet-uploads, so a serve restarted
 * between a client's xorbs, its shard and its commit goes on where it was, and read back at the start
 * (mirror__xetw_new). What is past its time goes at the start and with each new upload.
 *
 * With the store in a bucket, a xorb's bytes are not kept on local disk but in the bucket's staging
 * area (store/bucket.h: xet-uploads/<mirror id>/<repo id>/HEX below its prefix), and read back from
 * there by ranges (routes-xet-write-shard.c); the record files stay local. What serve does not delete
 * at a record's end (a crash, a serve that takes no more uploads) gc does past the same time
 * (mirror_gc_xet_staged).
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "hub/xet/xet.h"
#include "mirror/data.h"
#include "mirror/share.h"
#include "store/bucket.h"
#include "store/store.h"
#include "routes-int.h"
#include "routes-xet-write-int.h"


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
	struct store_bucket *bucket;   /* the store's bucket, borrowed (NULL: xorbs on local disk, in dir) */
	char mirror_id[33];            /* with a bucket: the staging area's part of this mirror's */
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
		    (!x->bucket && fstatat(dir, hex, &st, 0)))
			return true; /* (a staged xorb the bucket lost: the shard naming it hears so) */
		xorbs_add(x, &(struct xorb_rec){ .hash = h, .repo_id = repo, .until = until });
		return false;
	}
	if (sscanf(name, "f.%lld.%64[0-9a-f]%n", &repo, hex, &used) == 2 && !name[used] &&
	    !xet_hash_from_hex(hex, &h)) {
		struct file_rec f = { .hash = h, .repo_id = repo };
		if (!record_read(dir, name, buf, sizeof(buf)) ||
		    sscanf(buf, "%64[0-9a-f] %lld %lld", sha, &size, &until) != 3 || !hex_is_lower(sha, 64) ||
		    until < now || !store_has(d->store, sha, size))
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
	if ((x->bucket = store_bucket_of(d->store)) && mirror_share_id(d, x->mirror_id)) {
		log_warn("upload", "no mirror id: Xet uploads are kept on local disk, in %s", x->dir);
		x->bucket = NULL;
	}
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

char *mirror__xetw_xorb_path(const struct mirror__xetw *x, const struct xet_hash *h)
{
	char hex[XET_HEX_LEN + 1];
	xet_hash_hex(h, hex);
	return xasprintf("%s/%s", x->dir, hex);
}

/* xorb h of repo_id's name in the bucket's staging area. */
static char *staged_name(const struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id)
{
	char hex[XET_HEX_LEN + 1];
	xet_hash_hex(h, hex);
	return xasprintf("%s/%lld/%s", x->mirror_id, (long long)repo_id, hex);
}

bool mirror__xetw_staged(const struct mirror__xetw *x)
{
	return x->bucket != NULL;
}

/* Write buf[0..n) as the local file of xorb h (atomically: a temporary name, then renamed). */
static int xorb_file_put(struct mirror__xetw *x, const struct xet_hash *h, const unsigned char *buf, size_t n)
{
	char *path = mirror__xetw_xorb_path(x, h);
	char *tmp = xasprintf("%s.%lx.tmp", path, (unsigned long)pthread_self());
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

/* ---- a staged xorb's table ---------------------------------------------------------------------
 *
 * Beside a staged xorb, NAME.idx: its chunks as the upload's check read them, so that a shard reads
 * the table (a few hundred KiB at most) and then only its terms' ranges, never the whole xorb again.
 * "HMXORBI1", the chunks' count (u32) and where the last one ends (u64), then each chunk's hash (32
 * bytes), offset and size (u32 each), little-endian. Read back, every field is bounded and the xorb
 * hash is recomputed from the hashes and sizes against the xorb's name; each chunk read back by range
 * is hashed again against the table (routes-xet-write-shard.c). */

#define IDX_MAGIC "HMXORBI1"
#define IDX_HEAD 20
#define IDX_ENTRY 40

static void le_put(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t le_get(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The table of xorb as bytes (malloc'd, *n long). */
static unsigned char *idx_write(const struct xet_xorb *xorb, size_t *n)
{
	unsigned char *b = xmalloc(IDX_HEAD + xorb->n * IDX_ENTRY), *p = b + IDX_HEAD;

	memcpy(b, IDX_MAGIC, 8);
	le_put(b + 8, xorb->n, 4);
	le_put(b + 12, xorb->end, 8);
	for (size_t i = 0; i < xorb->n; i++, p += IDX_ENTRY) {
		memcpy(p, xorb->chunks[i].hash.b, XET_HASH_LEN);
		le_put(p + 32, xorb->chunks[i].offset, 4);
		le_put(p + 36, xorb->chunks[i].size, 4);
	}
	*n = IDX_HEAD + xorb->n * IDX_ENTRY;
	return b;
}

/* b[0..n) read back as xorb h's table: a new xorb (no bytes) in *out, or -EBADMSG. */
static int idx_read(const unsigned char *b, size_t n, const struct xet_hash *h, struct xet_xorb **out)
{
	struct xet_xorb *x;
	struct xet_node *nodes;
	struct xet_hash got;
	uint64_t count, end, at = 0;
	int e = 0;

	if (n < IDX_HEAD || memcmp(b, IDX_MAGIC, 8))
		return -EBADMSG;
	count = le_get(b + 8, 4);
	end = le_get(b + 12, 8);
	if (!count || count > XET_XORB_MAX_CHUNKS || n != IDX_HEAD + count * IDX_ENTRY || end > XET_XORB_MAX_BYTES)
		return -EBADMSG;
	x = xcalloc(1, sizeof(*x));
	x->chunks = xreallocarray(NULL, count, sizeof(*x->chunks));
	nodes = xreallocarray(NULL, count, sizeof(*nodes));
	for (size_t i = 0; i < count && !e; i++) {
		const unsigned char *p = b + IDX_HEAD + i * IDX_ENTRY;
		struct xet_xorb_entry *c = &x->chunks[i];
		memcpy(c->hash.b, p, XET_HASH_LEN);
		c->offset = (uint32_t)le_get(p + 32, 4);
		c->size = (uint32_t)le_get(p + 36, 4);
		/* (each chunk after the one before, behind a header, inside the xorb) */
		if ((i && c->offset < at) || c->offset >= end || !c->size || c->size > XET_CHUNK_MAX)
			e = -EBADMSG;
		at = (uint64_t)c->offset + XET_XORB_CHUNK_HEADER_LEN;
		nodes[i] = (struct xet_node){ c->hash, c->size };
		x->size += c->size;
	}
	x->n = count;
	x->end = end;
	x->hash = *h;
	if (!e) {
		xet_xorb_hash(nodes, count, &got);
		e = memcmp(got.b, h->b, XET_HASH_LEN) ? -EBADMSG : 0;
	}
	free(nodes);
	if (e)
		xet_xorb_free(&x);
	else
		*out = x;
	return e;
}

int mirror__xetw_xorb_put(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id,
			  const unsigned char *buf, size_t n, const struct xet_xorb *xorb)
{
	char *name, *idx;
	unsigned char *table;
	size_t tn;
	int e;

	if (!x->bucket)
		return xorb_file_put(x, h, buf, n);
	name = staged_name(x, h, repo_id);
	idx = xasprintf("%s.idx", name);
	table = idx_write(xorb, &tn);
	/* (the xorb first: a table found means its xorb was put whole) */
	e = store_bucket_stage_put(x->bucket, name, buf, n);
	if (!e)
		e = store_bucket_stage_put(x->bucket, idx, table, tn);
	if (e)
		log_warn("upload", "xorb %s: the bucket's staging area: %s", name, store_bucket_errmsg());
	free(table);
	free(idx);
	free(name);
	return e;
}

/* A table read back, into room of its greatest size. */
struct idx_sink {
	unsigned char *b;
	size_t n, cap;
};

static int idx_sink(void *ud, const void *data, size_t n)
{
	struct idx_sink *g = ud;

	if (n > g->cap - g->n)
		return -E2BIG;
	memcpy(g->b + g->n, data, n);
	g->n += n;
	return 0;
}

int mirror__xetw_xorb_table(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id,
			    struct xet_xorb **out)
{
	char *name = staged_name(x, h, repo_id), *idx = xasprintf("%s.idx", name);
	struct idx_sink g = { xmalloc(IDX_HEAD + XET_XORB_MAX_CHUNKS * IDX_ENTRY), 0,
			      IDX_HEAD + XET_XORB_MAX_CHUNKS * IDX_ENTRY };
	int e = x->bucket ? store_bucket_stage_get(x->bucket, idx, 0, -1, idx_sink, &g) : -ENOENT;

	if (e && e != HM_ERR_NOT_FOUND && x->bucket)
		log_warn("upload", "xorb %s: the bucket's staging area: %s", name, store_bucket_errmsg());
	if (!e && idx_read(g.b, g.n, h, out)) {
		log_warn("upload", "xorb %s: its table in the bucket does not read back", name);
		e = -EIO;
	}
	free(g.b);
	free(idx);
	free(name);
	return e;
}

int mirror__xetw_xorb_get(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id, int64_t off,
			  int64_t len, int (*sink)(void *ud, const void *data, size_t n), void *ud)
{
	char *name = staged_name(x, h, repo_id);
	int e = x->bucket ? store_bucket_stage_get(x->bucket, name, off, len, sink, ud) : -ENOENT;

	if (e && e != HM_ERR_NOT_FOUND && x->bucket)
		log_warn("upload", "xorb %s: the bucket's staging area: %s", name, store_bucket_errmsg());
	free(name);
	return e;
}

/* Delete the staged xorbs named in v[0..n) (past their time; outside x->mu: requests to the bucket). */
static void staged_drop(struct mirror__xetw *x, char **v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *idx = xasprintf("%s.idx", v[i]);
		/* (the table first: a xorb without one is no longer kept) */
		if (store_bucket_stage_delete(x->bucket, idx) || store_bucket_stage_delete(x->bucket, v[i]))
			log_warn("upload", "xorb %s past its time: %s (gc removes it)", v[i], store_bucket_errmsg());
		free(idx);
		free(v[i]);
	}
	free(v);
}

/* Forget the xorbs past their time, and their files (under x->mu); with a bucket, the names of the
 * staged ones to delete into *drop (*ndrop of them), for the caller to delete once it let go of mu. */
static void xorbs_sweep(struct mirror__xetw *x, int64_t now, char ***drop, size_t *ndrop)
{
	size_t w = 0;
	for (size_t i = 0; i < x->n; i++) {
		bool others = false;
		if (x->xorbs[i].until >= now) {
			x->xorbs[w++] = x->xorbs[i];
			continue;
		}
		record_drop(x, xorb_rec_name(&x->xorbs[i].hash, x->xorbs[i].repo_id));
		if (x->bucket) { /* (one object per repo: no other record names it) */
			*drop = xreallocarray(*drop, *ndrop + 1, sizeof(**drop));
			(*drop)[(*ndrop)++] = staged_name(x, &x->xorbs[i].hash, x->xorbs[i].repo_id);
			continue;
		}
		for (size_t j = 0; j < x->n && !others; j++)
			others = j != i && x->xorbs[j].until >= now &&
				 !memcmp(x->xorbs[j].hash.b, x->xorbs[i].hash.b, XET_HASH_LEN);
		if (!others) {
			char *p = mirror__xetw_xorb_path(x, &x->xorbs[i].hash);
			unlink(p);
			free(p);
		}
	}
	x->n = w;
}

/* Record xorb h as repo_id's (again: its time starts over). */
void mirror__xetw_xorb_keep(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id)
{
	int64_t now = (int64_t)time(NULL);
	char until[24], **drop = NULL;
	size_t i, ndrop = 0;

	pthread_mutex_lock(&x->mu);
	xorbs_sweep(x, now, &drop, &ndrop);
	for (i = 0; i < x->n; i++)
		if (x->xorbs[i].repo_id == repo_id && !memcmp(x->xorbs[i].hash.b, h->b, XET_HASH_LEN))
			break;
	if (i == x->n)
		xorbs_add(x, &(struct xorb_rec){ .hash = *h, .repo_id = repo_id });
	x->xorbs[i].until = now + MIRROR__XETW_XORB_KEEP_S;
	snprintf(until, sizeof(until), "%lld\n", (long long)x->xorbs[i].until);
	record_put(x, xorb_rec_name(h, repo_id), until); /* (under mu: a sweep may not drop it between) */
	pthread_mutex_unlock(&x->mu);
	if (ndrop)
		staged_drop(x, drop, ndrop);
}

/* Did repo_id upload xorb h, and is it still kept? */
bool mirror__xetw_xorb_owned(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id)
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
void mirror__xetw_lend_keep(struct mirror__xetw *x, const struct xet_hash *h, const char *sha, uint32_t run,
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
	x->lends[i] = (struct lend_rec){ .hash = *h, .run = run, .repo_id = repo_id,
					 .until = now + MIRROR__XETW_LEND_S };
	memcpy(x->lends[i].sha256, sha, 65);
	snprintf(text, sizeof(text), "%s %u %lld\n", x->lends[i].sha256, run, (long long)x->lends[i].until);
	record_put(x, lend_rec_name(h, repo_id), text);
	pthread_mutex_unlock(&x->mu);
}

/* Was virtual xorb h lent to repo_id, in its time? Its content and run into sha and *run. */
bool mirror__xetw_xorb_lent(struct mirror__xetw *x, const struct xet_hash *h, int64_t repo_id, char sha[65],
			    uint32_t *run)
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
void mirror__xetw_file_keep(struct mirror__xetw *x, const struct xet_hash *h, const char *sha, int64_t size,
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
	x->files[i] = (struct file_rec){ .hash = *h, .size = size, .repo_id = repo_id,
					 .until = now + MIRROR__XETW_FILE_HOLD_S };
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
