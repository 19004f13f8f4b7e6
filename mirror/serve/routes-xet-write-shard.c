/*
 * routes-xet-write-shard.c - a Xet shard uploaded into one of the mirror's repositories
 * (routes-xet-write.c has the whole story): its files rebuilt from the xorbs the same repo
 * uploaded, or from the virtual xorbs the dedup query lent it (made again from the store's bytes),
 * each term's chunks verified against its verification hash and the file against its Xet hash (and
 * sha256, where the shard states it), and only then written into the store as plain bytes and held
 * for the repo's commit.
 *
 * With the store in a bucket the repo's xorbs are in its staging area (routes-xet-write-records.c):
 * of each, the table of chunks its upload's check read (kept beside it, checked against its name) is
 * read, then each term's chunks are read back by a ranged GET, each chunk hashed again against that
 * table, so what the job holds at once is the tables and one term's range, whatever the file's size;
 * the file itself streams into the store's writer (into the bucket, past the cache).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "base/bug.h"
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
#include "routes-int.h"
#include "routes-xet-write-int.h"

/* ---- a shard ------------------------------------------------------------------------------------ */

/* The xorbs a shard's job has open: each mapped and read once (a staged one's table alone: map NULL, its
 * terms read back by ranges). */
struct open_xorb {
	struct xet_hash hash;
	unsigned char *map;
	size_t len;
	struct xet_xorb *x;
};

/* A term's bytes read back from the bucket into memory, bounded. */
struct grow {
	unsigned char *b;
	size_t n, cap, max;
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
	int err;                        /* why xorb_open gave NULL when it is not the shard's fault (0: it is) */
	unsigned char room[XET_CHUNK_MAX];
	char why[300];
	struct grow range;              /* a term's bytes read back from the bucket's staging area */
};

static void shard_job_release(struct mirror__job *j)
{
	struct shard_job *s = (struct shard_job *)j;
	mirror__spool_release(s->body);
	for (size_t i = 0; i < s->nopen; i++) {
		if (s->open[i].map)
			munmap(s->open[i].map, s->open[i].len);
		xet_xorb_free(&s->open[i].x);
	}
	free(s->open);
	free(s->range.b);
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

/* Virtual xorb h (hex), lent to this repo by the dedup query, made again as a xorb from the stored
 * content's bytes (its run of chunks, each behind an uncompressed chunk's header) into an anonymous map
 * in o. The run's bytes are one range of the content, read with store_read (the local file, or with a
 * bucket a ranged read of it: a content bigger than the cache is never brought into it) into the map's
 * tail, then moved forward chunk by chunk, each behind its header: a chunk's place ends where the next
 * one's bytes begin, so none is overwritten before it moved. 0, or -EBADMSG with s->why (not lent to
 * this repo, or its content no longer stored or readable). */
static int lent_map(struct shard_job *s, const struct xet_hash *h, const char *hex, struct open_xorb *o)
{
	struct mirror__xet_run *runs = NULL;
	struct xet_identity *id = NULL;
	const struct xet_chunk *c = NULL;
	char sha[65], *why = NULL;
	size_t nc = 0, nr = 0, first, n, bytes;
	uint64_t base;
	uint32_t run;
	unsigned char *p;
	int e = -EBADMSG, r;

	if (!mirror__xetw_xorb_lent(s->xw, h, s->repo_id, sha, &run))
		return refuse(s, "the shard names xorb ", hex,
			      ", which was not uploaded for this repository (nor lent to it)");
	if (!store_xet_identity(s->data->store, sha, &id)) {
		c = xet_identity_chunks(id, &nc);
		nr = mirror__xet_runs(c, nc, &runs);
	}
	if (!id || nr <= run) {
		refuse(s, "xorb ", hex, " was lent from a content no longer stored: upload it");
		goto out;
	}
	first = runs[run].first;
	n = runs[run].n;
	base = c[first].offset;
	bytes = (size_t)(c[first + n - 1].offset + c[first + n - 1].size - base);
	o->len = runs[run].len;
	BUG_ON(o->len != bytes + n * XET_XORB_CHUNK_HEADER_LEN); /* (a run is contiguous chunks) */
	o->map = mmap(NULL, o->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (o->map == MAP_FAILED) {
		o->map = NULL;
		refuse(s, "no room to make xorb ", hex, " again");
		goto out;
	}
	p = o->map;
	r = store_read(s->data->store, sha, (int64_t)base, p + n * XET_XORB_CHUNK_HEADER_LEN, bytes, &why);
	if (r) {
		log_warn("upload", "xorb %s lent from %.12s: %s", hex, sha, why ? why : err_str(r));
		munmap(o->map, o->len);
		o->map = NULL;
		refuse(s, "xorb ", hex, r == -ENOENT ? " was lent from a content no longer stored: upload it"
					  : " was lent from a content that does not read back");
		goto out;
	}
	for (size_t i = first; i < first + n; i++) {
		size_t k = i - first, off = (size_t)(c[i].offset - base);
		memmove(p + (k + 1) * XET_XORB_CHUNK_HEADER_LEN + off, p + n * XET_XORB_CHUNK_HEADER_LEN + off,
			c[i].size);
		xet_xorb_chunk_header_write(p + k * XET_XORB_CHUNK_HEADER_LEN + off, c[i].size);
	}
	e = 0;
out:
	free(why);
	free(runs);
	xet_identity_free(&id);
	return e;
}

static int grow_sink(void *ud, const void *data, size_t n)
{
	struct grow *g = ud;

	if (n > g->max - g->n)
		return -E2BIG;
	if (g->n + n > g->cap) {
		size_t c = g->cap ? 2 * g->cap : (size_t)1 << 20;
		while (c < g->n + n)
			c *= 2;
		g->cap = c < g->max ? c : g->max;
		g->b = xrealloc(g->b, g->cap);
	}
	memcpy(g->b + g->n, data, n);
	g->n += n;
	return 0;
}

/* Staged xorb h's (hex) table read from the bucket into o (o->map stays NULL: its terms are read back
 * by ranges). 0, or an error with s->why (-EBADMSG: not kept any more). */
static int staged_open(struct shard_job *s, const struct xet_hash *h, const char *hex, struct open_xorb *o)
{
	int e = mirror__xetw_xorb_table(s->xw, h, s->repo_id, &o->x);

	if (e == HM_ERR_NOT_FOUND)
		return refuse(s, "xorb ", hex, " is no longer kept: upload it again");
	if (e)
		snprintf(s->why, sizeof(s->why), "xorb %s: the bucket: %s", hex, err_str(e));
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
	if (!mirror__xetw_xorb_owned(s->xw, h, s->repo_id)) {
		if (lent_map(s, h, hex, &o))
			return NULL;
	} else if (mirror__xetw_staged(s->xw)) {
		/* (its table was checked when it came, and against its name as it was read back) */
		if ((s->err = staged_open(s, h, hex, &o)))
			return NULL;
	} else {
		path = mirror__xetw_xorb_path(s->xw, h);
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
	if (o.map && xet_xorb_parse(s->dec, o.map, o.len, h, &o.x, &why)) {
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
	struct store_writer *w;
	uint64_t size;
};

/* The bytes of term t's chunks in xorb o: its map (*base 0), or for a staged xorb the range read back
 * from the bucket into s->range (*base: where it starts in the xorb); *len how many. NULL with *e. */
static const unsigned char *term_bytes(struct shard_job *s, const struct open_xorb *o, const struct xet_shard_term *t,
				       uint64_t *base, size_t *len, int *e)
{
	uint64_t from, to;
	char hex[XET_HEX_LEN + 1];

	if (o->map) {
		*base = 0;
		*len = o->len;
		return o->map;
	}
	from = o->x->chunks[t->start].offset;
	to = t->end < o->x->n ? o->x->chunks[t->end].offset : o->x->end;
	s->range.n = 0;
	s->range.max = XET_XORB_MAX_BYTES;
	*e = to > from ? mirror__xetw_xorb_get(s->xw, &o->hash, s->repo_id, (int64_t)from, (int64_t)(to - from),
					       grow_sink, &s->range) : -EBADMSG;
	if (!*e && s->range.n != to - from)
		*e = -EIO;
	if (*e) {
		xet_hash_hex(&o->hash, hex);
		*e = *e == HM_ERR_NOT_FOUND ? refuse(s, "xorb ", hex, " is no longer kept: upload it again") : *e;
		return NULL;
	}
	*base = from;
	*len = s->range.n;
	return s->range.b;
}

/* The chunks of term t, each decompressed, checked against the term and fed to r. A staged xorb's
 * chunks, read back from the bucket, are hashed again against its table. */
static int rebuild_term(struct shard_job *s, const struct xet_shard_term *t, struct rebuild *r)
{
	const struct open_xorb *o = xorb_open(s, &t->xorb);
	const unsigned char *p;
	struct xet_hash *hashes;
	struct xet_hash got;
	uint64_t bytes = 0, base = 0;
	size_t len = 0;
	int e = 0;

	if (!o)
		return s->err ? s->err : -EBADMSG;
	if (t->end > o->x->n)
		return refuse(s, "a term names chunks past the end of its xorb", "", "");
	if (!(p = term_bytes(s, o, t, &base, &len, &e)))
		return e;
	hashes = xreallocarray(NULL, t->end - t->start, sizeof(*hashes));
	for (uint32_t i = t->start; i < t->end && !e; i++) {
		struct xet_xorb_chunk_header h;
		size_t used, at;
		const struct xet_xorb_entry *c = &o->x->chunks[i];
		at = c->offset - base;
		if (xet_xorb_chunk_read(s->dec, p + at, len - at, &h, s->room, &used, NULL)) {
			e = refuse(s, "a chunk does not read back", "", "");
			break;
		}
		if (!o->map)
			xet_chunk_hash(s->room, h.uncompressed_size, &got);
		if (!o->map && memcmp(got.b, c->hash.b, XET_HASH_LEN)) {
			snprintf(s->why, sizeof(s->why), "a chunk read back from the bucket is not the one uploaded");
			e = -EIO;
			break;
		}
		hashes[i - t->start] = c->hash;
		bytes += h.uncompressed_size;
		if (r->w) {
			if ((e = store_writer_write(r->w, s->room, h.uncompressed_size)))
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
	struct store_expect x = { .sha256 = sha, .size = (int64_t)size };
	struct rebuild r = { 0 };
	char owner[40];
	const char *v[1] = { sha };
	int e;

	snprintf(owner, sizeof(owner), "upload:%lld", (long long)s->repo_id);
	if ((e = catalog_hold(cat, owner, (int64_t)time(NULL) + MIRROR__XETW_FILE_HOLD_S, v, 1)))
		return e;
	if (!store_reuse(s->data->store, sha, (int64_t)size)) {
		if ((e = store_writer_new_private(s->data->store, &x, &r.w)))
			return e;
		store_writer_stream(r.w); /* (bigger than the bucket's cache: into it, not to disk) */
		for (size_t i = 0; i < f->n && !e; i++)
			e = rebuild_term(s, &f->terms[i], &r);
		if (e)
			store_writer_abort(&r.w, false);
		else
			e = store_writer_commit(&r.w, NULL);
		if (e)
			return e;
		mirror_xet_record(s->data->store, cat, sha);   /* the dedup query finds it from now on */
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
			return s->err ? s->err : -EBADMSG;
		if (l->n != o->x->n)
			return refuse(s, "the shard lists a xorb with another number of chunks than it has", "", "");
		for (size_t k = 0; k < l->n; k++)
			if (l->chunks[k].size != o->x->chunks[k].size ||
			    memcmp(l->chunks[k].hash.b, o->x->chunks[k].hash.b, XET_HASH_LEN))
				return refuse(s, "the shard's chunk hashes or sizes are not its xorbs'", "", "");
	}
	return 0;
}

/* A test hook (tests/README.md, "Fault hooks"): with $HUBMIRROR_TEST_KILL=xet-shard the process kills
 * itself (SIGKILL) when a shard's job starts: the upload's xorbs all kept, no file of it made yet, the
 * commit not sent. Read in this one place (t0883). */
static void test_kill_point(void)
{
	const char *v = getenv("HUBMIRROR_TEST_KILL");

	if (v && !strcmp(v, "xet-shard"))
		raise(SIGKILL);
}

static void shard_job_build(struct mirror__job *j, struct catalog *cat)
{
	struct shard_job *s = (struct shard_job *)j;
	struct xet_shard *sh = NULL;
	size_t n = 0, done = 0;
	unsigned char *b = mirror__xet_body_bytes(s->body, &n);
	char *why = NULL;
	int e = b ? xet_shard_parse(b, n, &sh, &why) : -EIO;

	test_kill_point();
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
			mirror__xetw_file_keep(s->xw, &sh->files[i].hash, sha, (int64_t)size, s->repo_id);
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
		log_warn("upload", "hf:%s: a shard failed: %s", s->name, s->why[0] ? s->why : err_str(e));
		j->status = e == -ENOSPC ? 507 : 500;
		j->body = json_pack("{s:s}", "error", s->why[0] ? s->why : err_str(e));
	} else {
		log_info("upload", "hf:%s: shard in (%zu files, %zu xorbs)", s->name, done, sh->nxorbs);
		j->status = 200;
		j->body = json_pack("{s:i}", "result", 1);
	}
	free(why);
	free(b);
	xet_shard_free(&sh);
}

void mirror__xet_shard_post(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo)
{
	struct mirror__commit_body *b = mirror__xet_cas_body(req);
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
