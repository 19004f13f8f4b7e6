/*
 * floor-bucket.c - of the read floor: a content the store's bucket holds and its local cache does not,
 * read straight from the bucket (docs/operations.md, "The store in an S3 bucket"): a range far into
 * it, and every read of a content bigger than the cache's bound, a whole one too; plain
 * (mirror__bucket_range_send) or framed as an OCI image's tar layer, its header before and its zeros
 * after (mirror__bucket_framed_send), the same read under both (range_open). The bytes before the
 * range are never read: ranged GETs of the range alone, a piece at a time, on serve's loop
 * (store_bucket_loop: libcurl on libuv, so the loop never waits on the bucket), each piece written
 * into a spool file of the answer's own (unlinked, its offsets the content's) that the answer follows
 * as it grows (httpd_respond_file_gated). The spool holds at most AHEAD bytes past what the client
 * took, plus the piece in flight, plus LAG behind it: what the client took is punched out of it, so a
 * read of 200 GB never puts 200 GB on the local disk (about 56 MiB per answer at most). The cache is
 * not filled by such a read: a loader reading a 100 GB file's tensors at random offsets would
 * otherwise pull the whole file into the cache for each, and push out what is read often; a content
 * bigger than the cache could only pass through it, over its bound.
 *
 * What is verified: the object under a content's id was completed in the bucket only once its bytes
 * hashed to the id (store/bucket.c), so a range of it is the content's unless the bucket damaged it
 * since; a range alone cannot be hashed to the id, so the bytes sent here are the bucket's as they
 * are, trusting the storage's own integrity (Ceph's checksums and scrubs, S3's). A read of the whole
 * (every byte, from the start in order) is hashed as its pieces come, read back from the spool on a
 * worker (one piece after another, never punched before it is hashed), and the answer's
 * last byte goes out only once the whole hashed to the id: bytes that are not the content's end it
 * short, the connection closed, and are logged. A read from the start of a content within the cache's
 * bound goes through the cache's fill instead, which hashes the whole before the cache keeps it, and
 * `verify` reads every object back (docs/security.md, "Every byte is verified").
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <uv.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "hub/http/httpd.h"
#include "mirror/data.h"
#include "store/store.h"
#include "store/bucket.h"
#include "routes-int.h"

#define PIECE ((int64_t)8 << 20) /* one ranged GET */
#define AHEAD ((int64_t)32 << 20) /* no next GET while this much waits in the spool for the client */
#define LAG ((int64_t)16 << 20)   /* what the client took is freed on the disk this far behind it */
#define HOLE_ALIGN ((int64_t)2 << 20)

struct bucket_range {
	struct mirror_routes *rt;
	char sha256[65];
	int fd;                     /* the spool (unlinked), at the content's offsets */
	int64_t next, end;          /* the next byte to ask for; one past the range's last */
	int64_t piece_end;          /* one past the last byte of the GET in flight */
	int64_t avail;              /* the spool holds the range's bytes before this */
	int64_t sent;               /* the client took those before this */
	int64_t punched;            /* the spool is freed below this */
	EVP_MD_CTX *md;             /* a read of the whole: its bytes hashed in order, on a worker */
	int64_t hashed;             /* the spool's bytes before this are hashed (never punched before) */
	int64_t hash_to;            /* the worker's hash goes up to this */
	int hash_err;               /* the worker could not read the spool */
	uv_work_t hw;
	bool inflight, hashing, failed, released;
	bool verified;              /* the whole hashed to its id: the answer's last byte may go */
};

static void range_free(struct bucket_range *g)
{
	close(g->fd);
	EVP_MD_CTX_free(g->md);
	free(g);
}

/* The whole came (a read of the whole): is it the content? Else the answer ends short, logged. */
static void range_check(struct bucket_range *g)
{
	unsigned char d[32];
	char hex[65];

	if (EVP_DigestFinal_ex(g->md, d, NULL) == 1) {
		hex_encode(d, sizeof(d), hex);
		g->verified = !strcmp(hex, g->sha256);
	}
	if (!g->verified) {
		log_warn("serve", "the store's bucket's %.12s is not its content (its %" PRId64 " bytes hash to "
			 "another id): the answer ends short", g->sha256, g->end);
		g->failed = true;
	}
}

static int range_sink(void *ud, const void *data, size_t n)
{
	struct bucket_range *g = ud;
	const char *p = data;

	if (g->released || g->avail + (int64_t)n > g->piece_end)
		return -ECANCELED;
	while (n > 0) {
		ssize_t w = pwrite(g->fd, p, n, g->avail);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
		g->avail += w;
	}
	return 0;
}

static void more(struct bucket_range *g);
static void hash_more(struct bucket_range *g);

/* On a worker: the spool's bytes [hashed, hash_to) into the hash, read back (in the page cache). */
static void hash_work(uv_work_t *w)
{
	struct bucket_range *g = w->data;
	unsigned char buf[1 << 16];

	for (int64_t at = g->hashed; at < g->hash_to && !g->hash_err;) {
		size_t n = g->hash_to - at < (int64_t)sizeof(buf) ? (size_t)(g->hash_to - at) : sizeof(buf);
		ssize_t k = pread(g->fd, buf, n, at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || EVP_DigestUpdate(g->md, buf, (size_t)k) != 1)
			g->hash_err = k < 0 ? -errno : -EIO;
		else
			at += k;
	}
}

static void hash_after(uv_work_t *w, int status)
{
	struct bucket_range *g = w->data;

	g->hashing = false;
	if (g->released) {
		if (!g->inflight)
			range_free(g);
		return;
	}
	if (status || g->hash_err) {
		log_warn("serve", "hashing %.12s from the store's bucket: %s", g->sha256,
			 status ? uv_strerror(status) : err_str(g->hash_err));
		g->failed = true;
		return;
	}
	g->hashed = g->hash_to;
	if (g->hashed == g->end)
		range_check(g);
	else
		hash_more(g);
	more(g); /* (the spool may take more now: below) */
}

/* A read of the whole: hash what came since, on a worker (one at a time, in order). */
static void hash_more(struct bucket_range *g)
{
	if (!g->md || g->hashing || g->failed || g->released || g->hashed >= g->avail)
		return;
	g->hash_to = g->avail;
	g->hw.data = g;
	if (uv_queue_work(g->rt->loop, &g->hw, hash_work, hash_after)) {
		g->failed = true;
		return;
	}
	g->hashing = true;
}

static void range_done(void *ud, int result)
{
	struct bucket_range *g = ud;

	g->inflight = false;
	if (g->released) {
		if (!g->hashing)
			range_free(g);
		return;
	}
	if (!result && g->avail == g->piece_end) {
		g->next = g->piece_end;
		hash_more(g);
		more(g);
		return;
	}
	if (result != -ECANCELED && g->avail > g->next && !g->rt->closing) {
		g->next = g->avail; /* it broke after bytes came: on from there */
		hash_more(g);
		more(g);
		return;
	}
	if (!g->rt->closing)
		log_warn("serve", "reading %.12s at %" PRId64 " from the store's bucket: %s (%s)", g->sha256, g->avail,
			 err_str(result ? result : HM_ERR_SIZE_MISMATCH), store_bucket_errmsg());
	g->failed = true; /* the answer ends short, its connection closed */
}

/* The next GET, when the last is done and the client has taken enough of the spool. */
static void more(struct bucket_range *g)
{
	int64_t n = g->end - g->next < PIECE ? g->end - g->next : PIECE;

	if (g->inflight || g->failed || g->released || n <= 0 || g->next - g->sent >= AHEAD)
		return;
	if (g->md && g->next - g->hashed >= AHEAD + LAG)
		return; /* the hash lags: what it has not read is not punched, and the spool stays as bounded */
	g->piece_end = g->next + n;
	if (g->rt->closing || !g->rt->bucket_loop ||
	    store_bucket_loop_get(g->rt->bucket_loop, g->sha256, g->next, n, range_sink, range_done, g)) {
		g->failed = true;
		return;
	}
	g->inflight = true;
}

static int64_t range_gate(void *ud, int64_t offset, int64_t len)
{
	struct bucket_range *g = ud;
	/* a read of the whole: its last byte only once the whole hashed to the id */
	int64_t avail = g->md && !g->verified && g->avail >= g->end ? g->end - 1 : g->avail;
	/* Only well behind what was handed to the socket: sendfile lends it the file's pages, and a hole
	 * punched through part of a page (or a large folio) zeroes that part in place, where bytes not yet
	 * sent may still be; LAG is more than a socket's send buffer holds. */
	int64_t hole = (offset - LAG) & ~(int64_t)(HOLE_ALIGN - 1);

	if (g->md && hole > g->hashed) /* (nor what the hash has not read yet) */
		hole = g->hashed & ~(int64_t)(HOLE_ALIGN - 1);
	if (offset > g->sent)
		g->sent = offset;
	if (hole > g->punched) { /* what the client took leaves the disk */
		if (fallocate(g->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, g->punched, hole - g->punched) == 0)
			g->punched = hole;
	}
	more(g);
	if (avail > offset)
		return avail - offset < len ? avail - offset : len;
	return g->failed ? -1 : 0;
}

static void range_release(void *ud)
{
	struct bucket_range *g = ud;

	g->released = true;
	if (!g->inflight && !g->hashing)
		range_free(g);
}

/* (floor-read-int.h) */
int mirror__bucket_spool_open(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	char *p;

	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd;
	p = xasprintf("%s/range-XXXXXX", dir); /* (a filesystem without O_TMPFILE) */
	fd = mkostemp(p, O_CLOEXEC);
	if (fd >= 0)
		unlink(p);
	free(p);
	return fd;
}

/* The read of bytes [a, b] of content sha256 (size bytes) set up, the first GET left for the gate: *out
 * is the spool's descriptor for the answer, *gp the gate's state (range_gate, range_release). A read of
 * the whole is hashed as it comes. 0, or -1 when nothing was set up. */
static int range_open(struct mirror_routes *rt, const char *sha256, int64_t size, int64_t a, int64_t b, int *out,
		      struct bucket_range **gp)
{
	struct store *st = rt->data->store;
	struct bucket_range *g;
	int fd;

	if (!rt->loop || rt->closing || a < 0 || b < a || b >= size)
		return -1;
	if (!rt->bucket_loop && (!store_bucket_of(st) ||
				 store_bucket_loop_new(store_bucket_of(st), rt->loop, &rt->bucket_loop)))
		return -1;
	fd = mirror__bucket_spool_open(store_tmp_dir(st));
	*out = fd >= 0 ? dup(fd) : -1;
	if (*out < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	g = xcalloc(1, sizeof(*g));
	g->rt = rt;
	snprintf(g->sha256, sizeof(g->sha256), "%s", sha256);
	g->fd = fd;
	g->next = g->avail = g->sent = a;
	g->punched = a;
	g->end = b + 1;
	if (a == 0 && b == size - 1) { /* from the start in order: hashed as it comes */
		g->md = EVP_MD_CTX_new();
		if (!g->md || EVP_DigestInit_ex(g->md, EVP_sha256(), NULL) != 1) {
			close(*out);
			range_free(g);
			return -1;
		}
	}
	store_bucket_count_cache(false);
	*gp = g;
	return 0;
}

int mirror__bucket_range_send(struct mirror_routes *rt, struct httpd_req *req, const char *sha256, int64_t size,
			      int64_t a, int64_t b, bool whole)
{
	struct bucket_range *g;
	int out;

	if (range_open(rt, sha256, size, a, b, &out, &g))
		return -1;
	httpd_add_header(req, "Accept-Ranges", "bytes");
	if (!whole)
		httpd_add_headerf(req, "Content-Range", "bytes %" PRId64 "-%" PRId64 "/%" PRId64, a, b, size);
	/* the first GET starts when the body does (never for a HEAD) */
	httpd_respond_file_gated(req, whole ? 200 : 206, "application/octet-stream", out, a, b - a + 1, range_gate,
				 range_release, g);
	return 0;
}

int mirror__bucket_framed_send(struct mirror_routes *rt, struct httpd_req *req, const char *content_range,
			       const char *sha256, int64_t size, const void *head, size_t head_len, int64_t f0,
			       int64_t f1, int64_t zeros)
{
	struct bucket_range *g;
	int out;

	if (f1 <= f0 || range_open(rt, sha256, size, f0, f1 - 1, &out, &g))
		return -1;
	httpd_add_header(req, "Accept-Ranges", "bytes");
	if (content_range)
		httpd_add_header(req, "Content-Range", content_range);
	/* (the gate is asked with the content's offsets: the zeros go once its last byte has, verified) */
	httpd_respond_file_framed_gated(req, content_range ? 206 : 200, "application/octet-stream", head, head_len,
					out, f0, f1 - f0, zeros, range_gate, range_release, g);
	return 0;
}

void mirror__bucket_reads_stop(struct mirror_routes *rt)
{
	store_bucket_loop_free(&rt->bucket_loop); /* each read in flight done with -ECANCELED */
}
