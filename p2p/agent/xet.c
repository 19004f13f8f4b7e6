/*
 * xet.c - the agent's local endpoint answers Xet reads (docs/agent.md, "Xet through the agent";
 * docs/protocols/xet.md): the CAS's xorb byte ranges made from the cache's own files, whose bytes
 * come through the swarm like any read's.
 *
 * The mirror stays the authority on who may read what: resolve, xet-read-token and the
 * reconstruction are the mirror's answers relayed (endpoint-mirror.c), asked with the client's Host, so the
 * URLs in them point back here. What the agent adds is the bytes. A reconstruction's fetch URLs name
 * a run of a content's chunks (the mirror's virtual xorbs: SHA256/IDX) and carry the mirror's
 * capability; agent_xet_rewrite adds to each the file offset where its byte range starts (at=), which
 * the terms of the answer say. A fetch of such a URL (agent_xet_xorb) has its capability checked by
 * the mirror (a one-byte range of the same URL: 206 or refused), then the bytes are made here: from
 * that offset, where a chunk starts and the chunker's state is zero, hub/xet's chunker finds each
 * chunk's end in the verified bytes of the cache file, and each chunk goes out behind its header
 * (uncompressed), as the mirror's own virtual xorbs hold it. Nothing is stored twice, and no byte
 * is read before its piece passed its hash.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "agent-int.h"
#include "base/buf.h"
#include "base/bug.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "hub/http/http.h"
#include "hub/http/httpd.h"
#include "hub/xet/xet.h"
#include "p2p/p2p.h"

#define XORB_PREFIX "/xet-cas/xorb/"
#define MAX_RANGES 64               /* ranges in one xorb request (a reconstruction gives one a URL) */
#define MAX_AT 64                   /* offsets in one URL's at= */
#define WINDOW (4u << 20)           /* the file bytes read at a time */
#define RUN_MAX ((64u << 20) + (64u << 20) / 1024) /* a range's bytes: a xorb's, headers included */
#define READ_WAIT_S 600             /* a range waits this long for its next verified bytes */
#define BOUNDARY "hubmirror-agent-xet-7e1f0c2b9a"
#define BUDGET (256u << 20)         /* range bytes all xorb answers may hold in memory at once */

/* The memory the xorb answers being built and sent hold: a job reserves its ranges' bytes before it
 * reads any (waiting on its worker while others hold the budget; one alone always may), and gives
 * them back once its answer went to the server. One agent a process: the budget is the process's. */
static pthread_mutex_t budget_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t budget_freed = PTHREAD_COND_INITIALIZER;
static uint64_t budget_used;

static bool budget_take(uint64_t n, const atomic_bool *quit)
{
	bool got = false;

	pthread_mutex_lock(&budget_lock);
	while (!(got = budget_used == 0 || budget_used + n <= BUDGET) && !atomic_load(quit)) {
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 100000000; /* (to see the agent stop) */
		if (t.tv_nsec >= 1000000000) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&budget_freed, &budget_lock, &t);
	}
	if (got)
		budget_used += n;
	pthread_mutex_unlock(&budget_lock);
	return got;
}

static void budget_give(uint64_t n)
{
	pthread_mutex_lock(&budget_lock);
	BUG_ON(budget_used < n);
	budget_used -= n;
	pthread_cond_broadcast(&budget_freed);
	pthread_mutex_unlock(&budget_lock);
}

/* ---- the reconstruction, relayed: where each fetch URL's bytes start in the file -------------------- */

/* "bytes=A-..." -> A (0 when absent or unreadable: the mirror refuses what it cannot read) */
static int64_t range_start(const char *range)
{
	const char *p = range ? skip_prefix(range, "bytes=") : NULL;

	return p && *p >= '0' && *p <= '9' ? strtoll(p, NULL, 10) : 0;
}

/* The file offset of the term of hash h starting at chunk `start`, from offs ({"H/start": off}). */
static bool term_off(json_t *offs, const char *h, json_int_t start, json_int_t *off)
{
	char key[XET_HEX_LEN + 32];
	json_t *v;

	snprintf(key, sizeof(key), "%s/%" JSON_INTEGER_FORMAT, h, start);
	v = json_object_get(offs, key);
	if (!json_is_integer(v))
		return false;
	*off = json_integer_value(v);
	return true;
}

/* One fetch entry of hash h (v1: {range, url, url_range}; v2: {url, ranges: [{chunks, bytes}]}):
 * its URL gets at=BYTE:OFF for each range whose term's offset is known. */
static void entry_at(json_t *entry, const char *h, json_t *offs, bool v2)
{
	const char *url = json_string_value(json_object_get(entry, "url"));
	json_t *ranges = v2 ? json_object_get(entry, "ranges") : json_pack("[{s:O, s:O}]", "chunks",
		json_object_get(entry, "range"), "bytes", json_object_get(entry, "url_range"));
	struct buf at;
	size_t i;
	json_t *r;

	buf_init(&at);
	json_array_foreach(ranges, i, r) {
		json_int_t off, s = json_integer_value(json_object_get(json_object_get(r, "chunks"), "start"));
		json_int_t b = json_integer_value(json_object_get(json_object_get(r, "bytes"), "start"));
		if (term_off(offs, h, s, &off))
			buf_addf(&at, "%s%" JSON_INTEGER_FORMAT ":%" JSON_INTEGER_FORMAT, at.len ? "," : "", b, off);
	}
	if (url && at.len && i <= MAX_AT)
		json_object_set_new(entry, "url",
				    json_sprintf("%s%sat=%s", url, strchr(url, '?') ? "&" : "?", at.data));
	if (!v2)
		json_decref(ranges);
	buf_release(&at);
}

void agent_xet_rewrite(const char *range, char **answer, size_t *alen)
{
	json_t *j = json_loadb(*answer, *alen, 0, NULL), *terms = json_object_get(j, "terms"), *where, *offs, *t, *list;
	json_int_t off = range_start(range) - json_integer_value(json_object_get(j, "offset_into_first_range"));
	bool v2 = json_object_get(j, "xorbs") != NULL;
	const char *h;
	char *s;
	size_t i;

	where = json_object_get(j, v2 ? "xorbs" : "fetch_info");
	if (!json_is_array(terms) || !json_is_object(where)) {
		json_decref(j);
		return; /* not a reconstruction: relayed as it is */
	}
	/* each term's first byte in the file: the answer's first one, then each term's length on */
	offs = json_object();
	json_array_foreach(terms, i, t) {
		const char *th = json_string_value(json_object_get(t, "hash"));
		json_int_t s0 = json_integer_value(json_object_get(json_object_get(t, "range"), "start"));
		if (th && off >= 0) {
			s = xasprintf("%s/%" JSON_INTEGER_FORMAT, th, s0);
			json_object_set_new(offs, s, json_integer(off));
			free(s);
		}
		off += json_integer_value(json_object_get(t, "unpacked_length"));
	}
	json_object_foreach(where, h, list) {
		json_t *entry;
		json_array_foreach(list, i, entry)
			entry_at(entry, h, offs, v2);
	}
	s = json_dumps(j, JSON_COMPACT);
	if (s) {
		free(*answer);
		*answer = s;
		*alen = strlen(s);
	}
	json_decref(offs);
	json_decref(j);
}

/* ---- a xorb's byte ranges, from the cache file --------------------------------------------------- */

struct xorb_job {
	struct agent *a;
	char btih[41];
	int index;
	int64_t size;                   /* the file's */
	char *check;                    /* the mirror's URL of the same bytes (path and cap), for the check */
	char *range;                    /* the request's Range */
	uint64_t at[MAX_AT][2];         /* at=: byte of the run, file offset where a chunk starts there */
	size_t nat;
	int fd;
	/* the answer */
	int status;
	char *why;
	char *ctype;                    /* static */
	struct buf out;
	uint64_t r0, r1;                /* a single range's, for Content-Range */
	uint64_t reserved;              /* bytes of the budget it holds */
};

static void xorb_job_free(struct xorb_job *j)
{
	if (j->reserved)
		budget_give(j->reserved);
	free(j->check);
	free(j->range);
	free(j->why);
	buf_release(&j->out);
	if (j->fd >= 0)
		close(j->fd);
	free(j);
}

static void job_fail(struct xorb_job *j, int status, const char *why)
{
	j->status = status;
	free(j->why);
	j->why = xstrdup(why);
}

static void keep_error(void *ud, const char *name, const char *value)
{
	struct xorb_job *j = ud;

	if (!strcasecmp(name, "X-Error-Message") && !j->why)
		j->why = xstrdup(value);
}

/* The mirror checks the URL's capability: the first byte of the same run, asked as the client would.
 * 0 when it admits it; else the job's answer is set. */
static int check_cap(struct xorb_job *j)
{
	const char *hdrs[] = { "Range: bytes=0-0", NULL };
	char *m, *url = NULL, *err = NULL, *body = NULL;
	long status = 0;
	size_t len;
	int r = -EINVAL;

	for (size_t i = 0; r && (m = agent_mirror_at(j->a->cfg->mirror, i)) != NULL; i++) {
		struct hub_http_call c = { .max = 4096, .timeout_s = 60, .headers = hdrs, .connect_timeout_ms = 5000,
					   .stall_s = agent_mirror_stall_s(j->a), .cancel = &j->a->quit,
					   .on_header = keep_error, .ud = j };
		free(url);
		free(err);
		free(body);
		err = body = NULL;
		url = xasprintf("%s%s", m, j->check);
		free(m);
		c.url = url;
		r = hub_http_call_blocking(&c, &body, &len, &status, &err);
	}
	if (r)
		job_fail(j, 502, "the mirror cannot be reached to check this fetch URL");
	else if (status != 206 && status != 200)
		j->status = (int)status;   /* 401, 403 (a client then asks for a new reconstruction), 404 */
	free(url);
	free(err);
	free(body);
	return r || (status != 206 && status != 200) ? -1 : 0;
}

/* Bytes [off, off + n) of the file, once their pieces are verified, into dst. 0, or -1 (answer set). */
static int read_verified(struct xorb_job *j, int64_t off, size_t n, unsigned char *dst)
{
	struct p2p_session *ses = j->a->ses;
	int have, waited = 0;
	char *path = NULL;
	ssize_t got;

	for (;;) {
		p2p_session_touch(ses, j->btih, j->index, off, (int64_t)n); /* read now: not evicted under it */
		have = p2p_session_have_range(ses, j->btih, j->index, off, (int64_t)n);
		if (have == 1 || (have < 0 && have != HM_ERR_NOT_FOUND) || waited >= READ_WAIT_S * 20 ||
		    atomic_load(&j->a->quit))
			break;
		if (waited++ % 20 == 0)
			p2p_session_want_range(ses, j->btih, j->index, off, (int64_t)n, 0);
		p2p_session_wait_range(ses, j->btih, j->index, off, (int64_t)n, 50);
	}
	if (have != 1) {
		job_fail(j, 504, "no peer and no mirror sent the file's bytes in time");
		return -1;
	}
	/* opened once bytes are in it (libtorrent makes the file with its first piece) */
	if (j->fd < 0 && !p2p_session_file_path(ses, j->btih, j->index, &path)) {
		j->fd = open(path, O_RDONLY | O_CLOEXEC);
		free(path);
	}
	got = j->fd < 0 ? -1 : pread(j->fd, dst, n, off);
	if (got != (ssize_t)n) {
		job_fail(j, 503, "the file is not readable in the cache");
		return -1;
	}
	return 0;
}

struct window {
	unsigned char *b;
	int64_t start;                  /* the file bytes [start, start + len) */
	size_t len;
};

/* The window holds [p, p + XET_CHUNK_MAX), or the file's end before that. */
static int window_at(struct xorb_job *j, struct window *w, int64_t p)
{
	int64_t end = p + XET_CHUNK_MAX < j->size ? p + XET_CHUNK_MAX : j->size;
	size_t n;

	if (p >= w->start && end <= w->start + (int64_t)w->len)
		return 0;
	n = (size_t)(j->size - p < WINDOW ? j->size - p : WINDOW);
	w->start = p;
	w->len = 0;
	if (read_verified(j, p, n, w->b))
		return -1;
	w->len = n;
	return 0;
}

/* Append the run's bytes [x, y] to j->out, walking chunk by chunk from run byte `from`, where a chunk
 * starts at file offset `off`. 0, or -1 with the answer set. */
static int walk(struct xorb_job *j, struct window *w, uint64_t from, int64_t off, uint64_t x, uint64_t y)
{
	uint64_t q = from;
	int64_t p = off;

	while (q <= y) {
		unsigned char hdr[XET_XORB_CHUNK_HEADER_LEN];
		struct xet_chunker c;
		uint64_t data;
		size_t avail, s;
		bool cut;
		if (p >= j->size) {
			job_fail(j, 416, "the range runs past the file's chunks");
			return -1;
		}
		if (window_at(j, w, p))
			return -1;
		avail = w->start + (int64_t)w->len - p < XET_CHUNK_MAX ? (size_t)(w->start + (int64_t)w->len - p)
			: XET_CHUNK_MAX;
		xet_chunker_init(&c);
		s = xet_chunker_scan(&c, w->b + (p - w->start), avail, &cut); /* no cut: the file's last chunk */
		xet_xorb_chunk_header_write(hdr, (uint32_t)s);
		/* the chunk's header is run bytes [q, data), its bytes [data, data + s) */
		data = q + XET_XORB_CHUNK_HEADER_LEN;
		for (uint64_t k = q > x ? q : x; k < data && k <= y; k++)
			buf_add(&j->out, &hdr[k - q], 1);
		if (y >= data && x < data + s) {
			uint64_t d0 = x > data ? x - data : 0, d1 = y - data < s - 1 ? y - data : s - 1;
			buf_add(&j->out, w->b + (p - w->start) + d0, (size_t)(d1 - d0 + 1));
		}
		q = data + s;
		p += (int64_t)s;
	}
	return 0;
}

/* Where range [x, ...] is walked from: the at= pair with the greatest run byte at or before x. */
static const uint64_t *walk_from(const struct xorb_job *j, uint64_t x)
{
	const uint64_t *best = NULL;

	for (size_t i = 0; i < j->nat; i++)
		if (j->at[i][0] <= x && (!best || j->at[i][0] > best[0]))
			best = j->at[i];
	return best;
}

static void xorb_build(void *job)
{
	struct xorb_job *j = job;
	struct window w = { .b = NULL, .start = 0, .len = 0 };
	uint64_t r[MAX_RANGES][2];
	/* explicit ranges, at most a xorb's bytes in all (what is asked of one run of chunks) */
	int rn = httpd_parse_ranges(j->range, UINT64_MAX, RUN_MAX, r, MAX_RANGES);
	size_t n = rn > 0 ? (size_t)rn : 0;

	if (rn < 0) {
		job_fail(j, 416, "a Range of explicit byte ranges is needed");
		return;
	}
	if (check_cap(j))
		return;
	for (size_t i = 0; i < n; i++)
		j->reserved += r[i][1] - r[i][0] + 1;
	j->reserved += WINDOW;
	if (!budget_take(j->reserved, &j->a->quit)) {
		j->reserved = 0;
		job_fail(j, 503, "the agent stops");
		return;
	}
	w.b = xmalloc(WINDOW);
	for (size_t i = 0; i < n; i++) {
		const uint64_t *from = walk_from(j, r[i][0]);
		if (!from) {
			job_fail(j, 416, "the range starts before any chunk this URL names");
			break;
		}
		if (n > 1)
			buf_addf(&j->out, "--" BOUNDARY "\r\nContent-Type: application/octet-stream\r\n"
				 "Content-Range: bytes %" PRIu64 "-%" PRIu64 "/*\r\n\r\n", r[i][0], r[i][1]);
		if (walk(j, &w, from[0], (int64_t)from[1], r[i][0], r[i][1]))
			break;
		if (n > 1)
			buf_adds(&j->out, "\r\n");
	}
	free(w.b);
	if (j->status)
		return;
	if (n > 1)
		buf_adds(&j->out, "--" BOUNDARY "--\r\n");
	j->status = 206;
	j->ctype = n > 1 ? "multipart/byteranges; boundary=" BOUNDARY : "application/octet-stream";
	j->r0 = r[0][0];
	j->r1 = r[0][1];
}

static void xorb_done(void *job, struct httpd_req *r)
{
	struct xorb_job *j = job;

	if (r && j->status != 206) {
		httpd_add_header(r, "X-Error-Message", j->why ? j->why : "refused by the mirror");
		httpd_respond_str(r, j->status, "text/plain", "Xet fetch refused\n");
	} else if (r) {
		if (!strcmp(j->ctype, "application/octet-stream"))
			httpd_add_headerf(r, "Content-Range", "bytes %" PRIu64 "-%" PRIu64 "/*", j->r0, j->r1);
		httpd_respond(r, 206, j->ctype, j->out.data ? j->out.data : "", j->out.len);
	}
	xorb_job_free(j);
}

bool agent_xet_is_xorb(const char *path)
{
	return skip_prefix(path, XORB_PREFIX) != NULL;
}

/* at=B:O,B:O... into j->at. 0, or -1. */
static int parse_at(struct xorb_job *j, const char *s)
{
	char *end;

	for (const char *p = s; p && *p; p = *end == ',' ? end + 1 : NULL) {
		if (j->nat == MAX_AT || *p < '0' || *p > '9')
			return -1;
		j->at[j->nat][0] = strtoull(p, &end, 10);
		if (*end != ':' || end[1] < '0' || end[1] > '9')
			return -1;
		j->at[j->nat++][1] = strtoull(end + 1, &end, 10);
		if (*end && *end != ',')
			return -1;
	}
	return j->nat ? 0 : -1;
}

/* The held snapshot and file whose content is sha256 (from the mirror's description of each). */
static bool find_content(struct agent *a, const char *sha256, struct xorb_job *j)
{
	for (size_t i = 0; i < a->nsnaps; i++) {
		struct agent_snap *s = a->snaps[i];
		for (size_t k = 0; k < s->nknown; k++) {
			struct p2p_file_list files = { 0 };
			bool found = false;
			if (strcmp(s->known[k].sha256, sha256) || p2p_session_files(a->ses, s->btih, &files))
				continue;
			for (size_t f = 0; f < files.n && !found; f++)
				if (!strcmp(files.v[f].path, s->known[k].path)) {
					j->index = files.v[f].index;
					j->size = files.v[f].size;
					found = true;
				}
			p2p_file_list_release(&files);
			if (found) {
				memcpy(j->btih, s->btih, sizeof(j->btih));
				agent_snap_used(a, s);
				return true;
			}
		}
	}
	return false;
}

void agent_xet_xorb(struct agent *a, struct httpd_req *r)
{
	const char *rest = skip_prefix(httpd_path(r), XORB_PREFIX), *q = httpd_query(r), *slash;
	struct xorb_job *j = xcalloc(1, sizeof(*j));
	char sha[65] = "", *at = httpd_query_param(r, "at"), *cap = httpd_query_param(r, "cap");

	httpd_set_route(r, "xet_xorb");
	j->a = a;
	j->fd = -1;
	buf_init(&j->out);
	slash = rest ? strchr(rest, '/') : NULL;
	if (slash && slash - rest == 64) {
		memcpy(sha, rest, 64);
		sha[64] = '\0';
	}
	if (!hex_is_lower(sha, 64) || !cap || !*cap || !at || parse_at(j, at) || strspn(slash + 1, "0123456789") !=
	    strlen(slash + 1) || !slash[1]) {
		httpd_respond_str(r, 404, "text/plain", "no such xorb here\n");
		goto out;
	}
	if (!find_content(a, sha, j)) {
		httpd_add_header(r, "X-Error-Message", "this agent holds no file of that content: "
				 "resolve the file through this endpoint first");
		httpd_respond_str(r, 404, "text/plain", "no such xorb here\n");
		goto out;
	}
	/* the same URL on the mirror (which reads cap= and nothing else of the query) */
	j->check = xasprintf("%s?%s", httpd_path(r), q);
	j->range = httpd_header(r, "Range") ? xstrdup(httpd_header(r, "Range")) : NULL;
	free(at);
	free(cap);
	httpd_defer(r, xorb_build, xorb_done, j);
	return;
out:
	free(at);
	free(cap);
	xorb_job_free(j);
}
