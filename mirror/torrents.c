/*
 * torrents.c - making, storing and handing out the torrents of snapshots (see torrents.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "p2p/p2p.h"
#include "store/store.h"
#include "torrents.h"

char *mirror_torrent_path(const struct mirror_data *d, const char *btih)
{
	return mirror_data_torrent_path(d, btih);
}

/*
 * A content the hashing threads read through the store (store_read): from the cache's file when it
 * holds it, else in ranges from the bucket, never brought into the cache. Its bytes are hashed to its
 * name as they pass, in order: p2p_torrent_create hands a file's ranges to its threads in order and
 * reads every range it handed out, so a read (its bytes fetched at once) waits for the ranges before
 * it to be hashed first, and the last one fails unless the whole hashed to the name. A torrent is the
 * proof peers check their bytes against: it is never made of bytes the bucket damaged.
 */
struct content {
	struct store *store;
	char sha256[65];
	int64_t size;
	pthread_mutex_t mu;
	pthread_cond_t turn;
	int64_t hashed;    /* bytes hashed: the next range to hash starts there */
	int failed;        /* a read failed, or the whole did not hash to the name: every later read fails */
	EVP_MD_CTX *ctx;   /* while it is hashed */
};

static struct content *content_new(struct store *s, const struct catalog_entry *e)
{
	struct content *c = xcalloc(1, sizeof(*c));

	c->store = s;
	snprintf(c->sha256, sizeof(c->sha256), "%s", e->sha256);
	c->size = e->size;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->turn, NULL);
	return c;
}

static void content_free(struct content *c)
{
	if (!c)
		return;
	EVP_MD_CTX_free(c->ctx);
	pthread_cond_destroy(&c->turn);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* The range [off, off + len) read, its turn come: hash it, and once the whole is in, check it. */
static int content_hash(struct content *c, int64_t off, const void *buf, size_t len, char **errmsg)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char hex[65];
	int r;

	if (off == 0 && !c->ctx) {
		c->ctx = EVP_MD_CTX_new();
		if (!c->ctx || !EVP_DigestInit_ex(c->ctx, EVP_sha256(), NULL))
			return -ENOMEM;
	}
	if (!c->ctx || !EVP_DigestUpdate(c->ctx, buf, len))
		return -ENOMEM;
	c->hashed += (int64_t)len;
	if (c->hashed < c->size)
		return 0;
	r = EVP_DigestFinal_ex(c->ctx, md, &n) && n == 32 ? 0 : -ENOMEM;
	EVP_MD_CTX_free(c->ctx);
	c->ctx = NULL;
	if (!r)
		hex_encode(md, 32, hex);
	if (!r && strcmp(hex, c->sha256)) {
		r = HM_ERR_HASH_MISMATCH;
		if (errmsg)
			*errmsg = xasprintf("content %.12s as the store gave it hashes to %.12s, not to its name "
					    "(`hubmirror verify` checks the store)", c->sha256, hex);
	}
	return r;
}

struct files {
	struct mirror_data *d;
	struct p2p_file *v;
	struct content **c;   /* by file, with a bucket: its reader's */
	size_t n, cap;
};

/* p2p_file.read: called on the hashing threads, several at once (store_read is thread-safe). */
static int read_content(void *ud, int64_t off, void *buf, size_t len, char **errmsg)
{
	struct content *c = ud;
	int r = store_read(c->store, c->sha256, off, buf, len, errmsg);

	pthread_mutex_lock(&c->mu);
	while (!c->failed && c->hashed != off)
		pthread_cond_wait(&c->turn, &c->mu);
	if (!r && c->failed)
		r = c->failed; /* (the torrent failed with the first one's words) */
	else if (!r)
		r = content_hash(c, off, buf, len, errmsg);
	if (r && !c->failed)
		c->failed = r;
	pthread_cond_broadcast(&c->turn);
	pthread_mutex_unlock(&c->mu);
	return r;
}

static int add_file(void *ud, const struct catalog_entry *e)
{
	struct files *f = ud;
	struct p2p_file *p;

	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 64;
		f->v = xreallocarray(f->v, f->cap, sizeof(*f->v));
		f->c = xreallocarray(f->c, f->cap, sizeof(*f->c));
	}
	p = &f->v[f->n];
	*p = (struct p2p_file){ .path = xstrdup(e->path), .size = e->size };
	f->c[f->n] = NULL;
	if (store_in_bucket(f->d->store)) {
		/* a snapshot bigger than the cache is hashed without ever being in it, nor churning it */
		struct content *c = content_new(f->d->store, e);
		p->read = read_content;
		p->ud = f->c[f->n] = c;
	} else {
		p->source = store_blob_path(f->d->store, e->sha256);
	}
	f->n++;
	return 0;
}

static void files_release(struct files *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free((char *)f->v[i].path);
		free((char *)f->v[i].source);
		content_free(f->c[i]);
	}
	free(f->v);
	free(f->c);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

struct pending {
	int64_t *ids;
	char **names;
	size_t n, cap;
};

static int add_pending(void *ud, int64_t snapshot_id, const char *name)
{
	struct pending *p = ud;

	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 16;
		p->ids = xreallocarray(p->ids, p->cap, sizeof(*p->ids));
		p->names = xreallocarray(p->names, p->cap, sizeof(*p->names));
	}
	p->ids[p->n] = snapshot_id;
	p->names[p->n] = xstrdup(name);
	p->n++;
	return 0;
}

/* One snapshot: hash, write the file, then record the row. */
static int make_one(struct mirror_data *d, const char *dir, int64_t snapshot_id,
		    const char *repo, int64_t now, char **errmsg)
{
	struct files f = { .d = d };
	struct p2p_torrent t = { 0 };
	struct catalog_torrent row = { 0 };
	const char *slash = strrchr(repo, '/');
	const char *name = slash ? slash + 1 : repo;
	char *path = NULL, *why = NULL;
	int r;

	r = catalog_snapshot_walk(d->catalog, snapshot_id, NULL, NULL, 0, add_file, &f);
	if (!r)
		r = p2p_torrent_create(name, f.v, f.n, &t, &why);
	else
		why = xasprintf("catalog: %s", catalog_errmsg(d->catalog));
	if (r)
		goto out;
	path = mirror_torrent_path(d, t.btih);
	r = path_write_atomic(path, t.data, t.len, 0640);
	if (r) {
		why = xasprintf("cannot write %s: %s", path, err_str(r));
		goto out;
	}
	row.snapshot_id = snapshot_id;
	memcpy(row.btih, t.btih, sizeof(row.btih));
	memcpy(row.btmh, t.btmh, sizeof(row.btmh));
	snprintf(row.name, sizeof(row.name), "%s", name);
	row.piece_size = t.piece_size;
	row.created_at = now;
	r = catalog_torrent_put(d->catalog, &row);
	if (r)
		why = xasprintf("catalog: %s", catalog_errmsg(d->catalog));
out:
	if (r && errmsg)
		*errmsg = xasprintf("torrent of %s: %s", repo, why ? why : err_str(r));
	free(why);
	free(path);
	p2p_torrent_release(&t);
	files_release(&f);
	return r;
}

int mirror_torrents_make(struct mirror_data *d, int64_t now, size_t *made, char **errmsg)
{
	struct pending p = { 0 };
	char *dir = mirror_data_path(d, MIRROR_DATA_TORRENTS), *work = mirror_data_path(d, MIRROR_DATA_TORRENT_WORK);
	size_t count = 0;
	int r;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		if (errmsg)
			*errmsg = xasprintf("cannot create %s: %s", dir, strerror(errno));
		goto out;
	}
	/* symlinks an older version's torrent making left after a crash (it hashed through them; the
	 * caller holds the sync lock: nobody else makes) */
	if (nftw(work, remove_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		log_warn("torrents", "cannot clear %s: %s", work, strerror(errno));
	r = catalog_torrent_missing_each(d->catalog, add_pending, &p);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("catalog: %s", catalog_errmsg(d->catalog));
		goto out;
	}
	/* one snapshot's failure (a path BitTorrent clients would rename, a blob gone) does not stop
	 * the others; the first error is returned */
	for (size_t i = 0; i < p.n; i++) {
		char *why = NULL;
		int e = make_one(d, dir, p.ids[i], p.names[i], now, &why);
		if (!e)
			count++;
		else if (e != -ENODATA && !r) {
			/* -ENODATA: no bytes at all (no files, or only empty ones): nothing to share */
			r = e;
			if (errmsg) {
				*errmsg = why;
				why = NULL;
			}
		}
		free(why);
	}
out:
	if (made)
		*made = count;
	for (size_t i = 0; i < p.n; i++)
		free(p.names[i]);
	free(p.names);
	free(p.ids);
	free(work);
	free(dir);
	return r;
}

int mirror_torrent_load(const struct mirror_data *d, const char *btih, const char *const *announce, size_t nannounce,
			const char *const *webseeds, size_t nwebseeds, char **out, size_t *len)
{
	char *path = mirror_torrent_path(d, btih), *data = NULL, *res;
	struct stat st;
	size_t n = 0, pos = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

	free(path);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (st.st_size < 2 || st.st_size > 64 * 1024 * 1024) {
		r = HM_ERR_TORRENT;
		goto out;
	}
	n = (size_t)st.st_size;
	data = xmalloc(n);
	while (pos < n) {
		ssize_t k = read(fd, data + pos, n - pos);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r = k < 0 ? -errno : HM_ERR_TORRENT;
			goto out;
		}
		pos += (size_t)k;
	}
	if (data[0] != 'd' || data[n - 1] != 'e') {
		r = HM_ERR_TORRENT;
		goto out;
	}
	/* bencoded keys are sorted: "announce" and "announce-list" sort before every key the file has
	 * (comment, created by, creation date, info, piece layers), "url-list" after them */
	{
		struct buf b;
		buf_init(&b);
		buf_adds(&b, "d");
		if (nannounce)
			buf_addf(&b, "8:announce%zu:%s", strlen(announce[0]), announce[0]);
		if (nannounce > 1) {
			buf_adds(&b, "13:announce-listl");
			for (size_t i = 0; i < nannounce; i++)
				buf_addf(&b, "l%zu:%se", strlen(announce[i]), announce[i]);
			buf_adds(&b, "e");
		}
		buf_add(&b, data + 1, n - 2);
		if (nwebseeds == 1)
			buf_addf(&b, "8:url-list%zu:%s", strlen(webseeds[0]), webseeds[0]);
		else if (nwebseeds > 1) {
			buf_adds(&b, "8:url-listl");
			for (size_t i = 0; i < nwebseeds; i++)
				buf_addf(&b, "%zu:%s", strlen(webseeds[i]), webseeds[i]);
			buf_adds(&b, "e");
		}
		buf_adds(&b, "e");
		res = buf_detach(&b, len);
		*out = res;
	}
out:
	free(data);
	close(fd);
	return r;
}

int mirror_torrents_gc(struct mirror_data *d, size_t *removed)
{
	char *dir = mirror_data_path(d, MIRROR_DATA_TORRENTS);
	DIR *dh = opendir(dir);
	struct dirent *e;
	size_t count = 0;
	int r = 0;

	if (!dh) {
		r = errno == ENOENT ? 0 : -errno;
		goto out;
	}
	while ((e = readdir(dh))) {
		size_t l = strlen(e->d_name);
		char btih[41];
		int k;

		if (l != 40 + strlen(".torrent") || strcmp(e->d_name + 40, ".torrent"))
			continue;
		memcpy(btih, e->d_name, 40);
		btih[40] = '\0';
		k = catalog_torrent_known(d->catalog, btih);
		if (k < 0) {
			r = k;
			break;
		}
		if (!k && unlinkat(dirfd(dh), e->d_name, 0) == 0)
			count++;
	}
	closedir(dh);
out:
	if (removed)
		*removed = count;
	free(dir);
	return r;
}

int mirror_p2p_secret(const struct mirror_data *d, unsigned char key[32])
{
	char *dir = mirror_data_path(d, MIRROR_DATA_P2P), *path = mirror_data_path(d, MIRROR_DATA_P2P_SECRET);
	char hex[65];
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, hex, 64);
		close(fd);
		hex[n > 0 ? n : 0] = '\0';
		if (n == 64 && !hex_decode(hex, key, 32))
			goto out;
		r = HM_ERR_TORRENT; /* damaged: made anew below */
	}
	r = 0;
	if (getrandom(key, 32, 0) != 32) {
		r = -errno;
		goto out;
	}
	hex_encode(key, 32, hex);
	path_mkdirs(dir, 0755);
	r = path_write_atomic(path, hex, 64, 0600);
out:
	free(path);
	free(dir);
	return r;
}
