/*
 * fill-run.c - the HTTP fill's runs (docs/agent.md, "The mirror as the source of last resort"): the
 * next run chosen (a reader's piece first, else where the last one ended, alone, or a piece nobody has
 * near the readers, in a swarm), room for it asked of eviction, its range asked of one of the mirrors,
 * and its answer taken piece by piece: handed to libtorrent (in a swarm) or checked and written on
 * libuv's thread pool (direct mode); a mirror whose ranges keep failing is left alone for a while.
 * The fill's life and mode are fill.c's (fill-int.h between them).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-int.h"
#include "base/err.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "fill-int.h"
#include "hub/http/http.h"
#include "p2p/p2p.h"

static void leave_alone(struct fill *f, int p, uint64_t ms)
{
	uint32_t until = (uint32_t)(uv_now(&f->a->loop) + ms);

	f->elsewhere[p] = until ? until : 1;
}

static int64_t piece_len(const struct fill *f, int p)
{
	return p == f->files.pieces - 1 ? f->files.total - (int64_t)p * f->files.piece_size : f->files.piece_size;
}

/* The file whose bytes hold torrent offset off, or NULL (a pad file's bytes). */
static const struct p2p_file_entry *file_at(const struct fill *f, int64_t off)
{
	size_t lo = 0, hi = f->files.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->files.v[mid].offset + f->files.v[mid].size <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < f->files.n && f->files.v[lo].offset <= off && off < f->files.v[lo].offset + f->files.v[lo].size)
		return &f->files.v[lo];
	return NULL;
}

/* The bytes piece p takes from fe (the piece starts inside it: files start on pieces). */
static int64_t file_part(const struct fill *f, const struct p2p_file_entry *fe, int p)
{
	int64_t at = (int64_t)p * f->files.piece_size, end = fe->offset + fe->size;
	int64_t len = piece_len(f, p);

	return at + len <= end ? len : end - at;
}

/* The file bytes of piece p (its pad bytes left out). */
int64_t agent_fill_file_bytes(const struct fill *f, int p)
{
	const struct p2p_file_entry *fe = file_at(f, (int64_t)p * f->files.piece_size);

	return fe ? file_part(f, fe, p) : 0;
}

#define FILL_SPARE 64                      /* piece buffers kept for later, at most (see spare_max) */

/* Direct: bytes handed to the thread pool and not yet written before no new run starts. The pool
 * (hashing, then the writes one at a time) is slower than the receiving, so this is how much the
 * fill runs ahead of it: each piece buffer in flight is memory touched anew, and on a VM whose host
 * backs freed memory lazily a page of it costs a fault there (measured: with 64 MiB, 19,000-33,000
 * page faults per GiB pulled; with 16 MiB, 5,600-8,500, 10-12% less CPU, no slower). */
static int64_t work_max(const struct fill *f)
{
	return FILL_WORK_MAX > 2 * f->files.piece_size ? FILL_WORK_MAX : 2 * f->files.piece_size;
}

/* Piece buffers kept for the next pieces: as many as can be in flight (waiting for the pool, and one
 * per run receiving), so that none is freed and taken anew while the fill runs. */
static int spare_max(const struct fill *f)
{
	int64_t n = (work_max(f) + FILL_PARALLEL * f->files.piece_size) / f->files.piece_size + 1;

	return n < FILL_SPARE ? (int)n : FILL_SPARE;
}

static char *buf_get(struct fill *f)
{
	return f->nspare ? f->spare[--f->nspare] : xmalloc((size_t)f->files.piece_size);
}

static void buf_put(struct fill *f, char *b)
{
	if (b && f->nspare < spare_max(f) && !f->gone) {
		if (!f->spare)
			f->spare = xcalloc(FILL_SPARE, sizeof(*f->spare));
		f->spare[f->nspare++] = b;
	} else {
		free(b);
	}
}

static void run_free(struct run *r)
{
	buf_put(r->f, r->buf);
	free(r);
}

static void run_start_piece(struct run *r)
{
	r->got = 0;
	r->piece_file_bytes = r->next < r->end ? file_part(r->f, r->fe, r->next) : 0;
}

static int on_response(void *ud, const struct hub_http_resp *resp)
{
	struct run *r = ud;
	const struct fill *f = r->f;
	long long start = -1;
	int64_t want = (int64_t)r->first * f->files.piece_size - r->fe->offset;

	if (f->gone)
		return -ECANCELED;
	/* exactly the range asked for, or nothing: a 200 would be the whole file */
	if (resp->status == 409)
		return -EALREADY; /* another agent has just fetched these bytes (a swarm fill) */
	if (resp->status == 200)
		r->whole = true; /* it ignored the Range: dropped (its bytes would be the file's first) */
	if (resp->status != 206 || !resp->content_range || sscanf(resp->content_range, "bytes %lld-", &start) != 1 ||
	    start != want)
		return HM_ERR_HTTP;
	r->ok = true;
	return 0;
}

/* ---- direct mode: a piece checked and written on libuv's thread pool ---- */

struct write_job {
	uv_work_t w;
	struct fill *f;
	int piece;
	char *buf;
	size_t len;
	int64_t file_bytes;
	int result;
};

static void write_work(uv_work_t *w)
{
	struct write_job *j = w->data;

	j->result = p2p_session_write_piece(j->f->a->ses, j->f->btih, j->piece, j->buf, j->len);
}

static void write_done(uv_work_t *w, int status)
{
	struct write_job *j = w->data;
	struct fill *f = j->f;

	f->working--;
	f->working_bytes -= (int64_t)j->len;
	f->claimed[j->piece] = 0;
	f->tries[j->piece]++;
	if (status == 0 && j->result == 0) {
		f->mine[j->piece] = 1;
		f->direct_bytes += j->file_bytes;
		*f->bytes += (int64_t)j->len;
		f->a->fills->wrote(f->a, j->file_bytes); /* (room for it was made before the run: room_wait) */
	} else if (j->result == HM_ERR_HASH_MISMATCH) {
		leave_alone(f, j->piece, 0); /* wrong bytes: asked again (FILL_TRIES) */
	} else if (!f->gone && f->direct) {
		log_warn("agent", "%.12s: cannot write a piece into the cache (%s): libtorrent takes over",
			f->btih, err_str(status ? status : j->result));
		agent_fill_direct_end(f, false);
	}
	buf_put(f, j->buf);
	free(j);
	if (f->gone) {
		if (!f->inflight && !f->working)
			agent_fill_destroy(f);
	} else {
		agent_fill_pump(f);
	}
}

/* Hand run r's current piece (len bytes in r->buf) to the thread pool; r gets a new buffer. */
static void write_piece(struct fill *f, struct run *r, int64_t len)
{
	struct write_job *j = xcalloc(1, sizeof(*j));

	j->f = f;
	j->piece = r->next;
	j->buf = r->buf;
	j->len = (size_t)len;
	j->file_bytes = r->piece_file_bytes;
	j->w.data = j;
	r->buf = buf_get(f);
	f->working++;
	f->working_bytes += len;
	uv_queue_work(&f->a->loop, &j->w, write_work, write_done);
}

static int on_body(void *ud, const char *data, size_t n)
{
	struct run *r = ud;
	struct fill *f = r->f;

	if (f->gone || f->leaving)
		return -ECANCELED;
	while (n) {
		int64_t take;
		if (r->next >= r->end)
			return HM_ERR_HTTP; /* more than asked for */
		take = r->piece_file_bytes - r->got;
		if ((int64_t)n < take)
			take = (int64_t)n;
		memcpy(r->buf + r->got, data, (size_t)take);
		r->got += take;
		data += take;
		n -= (size_t)take;
		if (r->got == r->piece_file_bytes) {
			int64_t len = piece_len(f, r->next);
			memset(r->buf + r->got, 0, (size_t)(len - r->got)); /* the pad file after the file */
			if (f->direct) {
				/* checked and written on the thread pool; the piece stays claimed until then */
				write_piece(f, r, len);
			} else {
				if (p2p_session_add_piece(f->a->ses, f->btih, r->next, r->buf, (size_t)len))
					return -ECANCELED; /* the torrent is gone */
				leave_alone(f, r->next, FILL_RETRY_MS);
				f->claimed[r->next] = 0;
				f->tries[r->next]++;
				*f->bytes += len;
				f->a->fills->wrote(f->a, r->piece_file_bytes); /* libtorrent writes it */
			}
			r->next++;
			run_start_piece(r);
		}
	}
	return 0;
}

/* The mirror to ask for a run starting at piece first: in a swarm (runs of one piece) first % mirrors,
 * the same for every agent; alone, each run the next mirror in turn; or the next one not left alone;
 * -1 when every mirror is. */
static int pick_mirror(struct fill *f, int first)
{
	uint64_t now = uv_now(&f->a->loop);
	int run;

	if (!f->nbase)
		return -1;
	run = f->alone || f->direct ? (int)(f->runs_asked % (unsigned)f->nbase) : first % f->nbase;

	for (int k = 0; k < f->nbase; k++) {
		int m = (run + k) % f->nbase;
		if (f->down_until[m] <= now)
			return m;
	}
	return -1;
}

static void on_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct run *r = ud;
	struct fill *f = r->f;
	struct agent *a = f->a;

	(void)body;
	(void)len;
	f->inflight--;
	f->runs[r->slot] = NULL;
	/* pieces not received go back to the swarm (and to a later run) */
	for (int p = r->next; p < r->end; p++)
		f->claimed[p] = 0;
	if (!f->gone && result == -EALREADY) {
		/* its peers will have them: leave them to the swarm for a while */
		for (int p = r->next; p < r->end; p++)
			leave_alone(f, p, FILL_ELSEWHERE_MS);
	} else if (!f->gone && !f->leaving) {
		if (result || !r->ok || r->next < r->end) {
			bool silent = !resp || !resp->status; /* nothing answered: no HTTP status at all */
			if (!f->failing_since)
				f->failing_since = uv_now(&a->loop);
			if (r->whole)
				snprintf(f->why, sizeof(f->why), "%s", FILL_NO_RANGE);
			else if (result)
				snprintf(f->why, sizeof(f->why), "%s", err_str(result));
			else
				snprintf(f->why, sizeof(f->why), "HTTP %ld", resp ? resp->status : 0L);
			if (r->whole && f->no_range[r->mirror] < UCHAR_MAX)
				f->no_range[r->mirror]++;
			else if (!r->whole)
				f->no_range[r->mirror] = 0;
			if (++f->fails[r->mirror] >= FILL_FAILS) {
				int shift = f->downs[r->mirror] < 5 ? f->downs[r->mirror] : 5;
				uint64_t ms = (uint64_t)1000 << shift, most = silent ? FILL_PROBE_MS : FILL_DOWN_MS;
				f->fails[r->mirror] = 0;
				f->downs[r->mirror]++;
				f->down_until[r->mirror] = uv_now(&a->loop) + (ms < most ? ms : most);
				if (pick_mirror(f, r->first) < 0 && !f->resting) {
					f->resting = true;
					log_warn("agent",
						 "%.12s: the mirror%s HTTP ranges failed %d times (%s, HTTP %ld): "
						 "asking again in a moment (the swarm meanwhile)",
						 f->btih, f->nbase > 1 ? "s'" : "'s", FILL_FAILS,
						 r->whole ? FILL_NO_RANGE : result ? err_str(result) : "short answer",
						 resp ? resp->status : 0);
				}
			}
		} else {
			uint64_t ns = uv_hrtime() - r->started;
			if (r->len >= FILL_FAST_MIN && ns &&
			    r->len * (int64_t)1000000000 / (int64_t)ns >= FILL_FAST_BPS)
				f->fast = true;
			if (f->resting)
				log_info("agent", "%.12s: the mirror answers again", f->btih);
			f->resting = false;
			f->failing_since = 0;
			f->fails[r->mirror] = 0;
			f->downs[r->mirror] = 0;
			f->no_range[r->mirror] = 0;
		}
	}
	run_free(r);
	if (f->gone) {
		if (!f->inflight && !f->working)
			agent_fill_destroy(f);
	} else {
		agent_fill_pump(f);
	}
	if (a->stopping && a->fills->http && !hub_http_active(a->fills->http))
		hub_http_free(&a->fills->http); /* the last request is done (nothing uses the layer after this) */
}

static uint64_t rnd(struct fill *f)
{
	/* xorshift64: only to spread agents apart */
	f->rng ^= f->rng << 13;
	f->rng ^= f->rng >> 7;
	f->rng ^= f->rng << 17;
	return f->rng;
}

static bool wanted_here(const struct fill *f, int p)
{
	/* direct: every piece comes from here (libtorrent asks no peer); had 2: not wanted */
	return f->had[p] == 0 && !f->mine[p] && !f->claimed[p] && (f->direct || !f->avail[p]) &&
	       f->tries[p] < FILL_TRIES && (!f->elsewhere[p] || (int32_t)(f->elsewhere[p] - (uint32_t)f->now) <= 0);
}

/* Pieces written here that libtorrent has now (an eviction added the torrent again with every piece
 * had, those written here too): no longer counted as written here, else the cache's use counts them twice. */
void agent_fill_seen_by_libtorrent(struct fill *f)
{
	for (int p = 0; p < f->files.pieces; p++)
		if (f->mine[p] && f->had[p] == 1) {
			f->mine[p] = 0;
			f->direct_bytes -= agent_fill_file_bytes(f, p);
		}
}

/* Claim the next run: [*first, *end) of fe. 1: claimed; 0: nothing is left to fetch; -1: not now (libtorrent
 * checks the files, or is gone). */
static int next_run(struct fill *f, int *first, int *end, const struct p2p_file_entry **fe)
{
	int n = f->files.pieces, w, start, r;
	int64_t most = f->alone || f->direct ? FILL_RUN_BYTES : 1;

	/* (who else has a piece counts only in a swarm: direct mode asks libtorrent half as much) */
	if ((r = p2p_session_pieces_had(f->a->ses, f->btih, f->had, f->direct ? NULL : f->avail, n)) != 0) {
		if (r == 1)
			agent_fill_soon(f->a); /* libtorrent still checks the files */
		return -1;
	}
	agent_fill_seen_by_libtorrent(f);
	f->now = uv_now(&f->a->loop);
	if (f->hint >= 0 && !wanted_here(f, f->hint))
		f->hint = -1; /* it came, or comes from a peer, a run or another agent */
	/* the pieces readers wait for, oldest first (several readers: a loader's threads), those that
	 * came meanwhile skipped */
	while (f->hint < 0 && (w = p2p_session_take_wanted(f->a->ses, f->btih)) >= 0)
		if (w < n && wanted_here(f, w))
			f->hint = f->frontier = w;
	/* A reader's piece first. Agents reading the same model read it in the same order and ask for the
	 * same pieces at once: in a swarm the mirror sends a range once and answers the others 409 (they
	 * then take it from the first), see routes-p2p.c's fill_taken. */
	if (f->hint >= 0)
		start = f->hint;
	else if (!f->alone && !f->direct && !f->peers_seen)
		return -1; /* only what a reader waits for, until we know what the peers have */
	else if (f->alone || f->direct)
		start = f->cursor;
	else if (f->frontier >= 0)
		start = (f->frontier + (int)(rnd(f) % FILL_AHEAD)) % n; /* near where the readers are */
	else
		start = (int)(rnd(f) % (uint64_t)n); /* apart from the other agents */
	for (int k = 0; k < n; k++) {
		int p = (start + k) % n, q = p;
		const struct p2p_file_entry *e;
		int64_t bytes = 0;
		if (!wanted_here(f, p) || !(e = file_at(f, (int64_t)p * f->files.piece_size)))
			continue;
		/* on while the pieces are missing everywhere, unclaimed and in the same file */
		while (q < n && wanted_here(f, q) && bytes < most &&
		       (int64_t)q * f->files.piece_size < e->offset + e->size) {
			f->claimed[q] = 1;
			bytes += piece_len(f, q);
			q++;
		}
		*first = p;
		*end = q;
		*fe = e;
		f->cursor = q % n;
		return 1;
	}
	return 0;
}

/* Requests in flight at most: in a swarm one; alone FILL_PARALLEL, but one in the first FILL_WARY_MS of
 * direct mode, while the tracker is asked again who else is there (agents that start together each
 * find themselves alone at first, and on a slow mirror link their runs would fill its uplink with
 * bytes the others take too). Not where one run at a time already comes at FILL_FAST_BPS: there the
 * runs in flight are a few milliseconds of the link, and one at a time only leaves the agent idle
 * between them (a lone loader through a fresh mount took 8% longer). */
static int parallel(const struct fill *f)
{
	if (!f->alone && !f->direct)
		return 1;
	if (f->direct && !f->fast && !f->handed_over && uv_now(&f->a->loop) - f->direct_since < FILL_WARY_MS)
		return 1;
	return FILL_PARALLEL;
}

/* The bytes of pieces [first, end). */
static int64_t run_bytes(const struct fill *f, int first, int end)
{
	int64_t n = 0;

	for (int p = first; p < end; p++)
		n += piece_len(f, p);
	return n;
}

/* The bytes the runs in flight have still to bring (their pieces not received yet). */
int64_t agent_fill_inflight_bytes(const struct fill *f)
{
	int64_t n = 0;

	for (int i = 0; i < FILL_PARALLEL; i++)
		if (f->runs[i])
			n += run_bytes(f, f->runs[i]->next, f->runs[i]->end);
	return n;
}

/* Pieces neither had nor written that the fill asks for no more (FILL_TRIES reached). */
static int failing(const struct fill *f)
{
	int n = 0;

	for (int p = 0; p < f->files.pieces; p++)
		n += !f->had[p] && !f->mine[p] && f->tries[p] >= FILL_TRIES;
	return n;
}

/* No run that the cache's bound or its disk has no room for while eviction can make it (room is made
 * before the bytes come, and a read waits for it rather than fail on a full disk): what it asks for,
 * beside what the runs of every fill admitted before still bring and what waits to be written (in a
 * swarm too: a piece handed to libtorrent is written there; agent_fill_pending). true: run
 * [first, end) waits (its pieces unclaimed, the same run next time), and status says why
 * (agent_fill_room_waiting). */
static bool waits_for_room(struct fill *f, int first, int end)
{
	struct agent *a = f->a;

	if (!a->fills->room_wait(a, run_bytes(f, first, end))) {
		f->room_since = 0;
		return false;
	}
	for (int p = first; p < end; p++)
		f->claimed[p] = 0;
	f->cursor = first;
	if (!f->room_since)
		f->room_since = uv_now(&a->loop) ? uv_now(&a->loop) : 1;
	return true;
}

/* Start requests while the fill may run and pieces are left. */
void agent_fill_pump(struct fill *f)
{
	struct agent *a = f->a;

	if (f->leaving) {
		/* every write done before libtorrent looks at the files: it then never writes a piece
		 * that counts as had here */
		if (!f->inflight && !f->working) {
			f->leaving = false;
			agent_fill_direct_end(f, false);
		}
		return;
	}

	while (f->on && !f->given_up && !a->stopping && f->inflight < parallel(f) && f->working_bytes < work_max(f)) {
		struct hub_http_req_opts o = { 0 };
		const struct p2p_file_entry *fe;
		struct run *r;
		char *path, *url;
		int first, end, got;
		if ((got = next_run(f, &first, &end, &fe)) != 1) {
			f->room_since = 0;
			if (!got && f->direct && !f->inflight && !f->working) {
				/* nothing left to ask for: all in (or pieces that kept failing). What is in goes
				 * to libtorrent once no read asked for more for FILL_HANDOVER_MS, and libtorrent
				 * offers it to the next instance; a snapshot of some files goes direct again
				 * when a read wants more while it is alone */
				bool all = true, wanted = true;
				for (int p = 0; wanted && p < f->files.pieces; p++) {
					all &= f->had[p] == 1 || f->mine[p];
					wanted = f->had[p] || f->mine[p];
				}
				f->all_in = wanted;
				if (!f->idle_since)
					f->idle_since = uv_now(&a->loop);
				if (!wanted)
					log_warn("agent", "%.12s: %d %s failing over HTTP ranges (%d tries each): "
						 "libtorrent takes over", f->btih, failing(f),
						 failing(f) == 1 ? "piece kept" : "pieces kept", FILL_TRIES);
				if (all || !wanted || uv_now(&a->loop) - f->idle_since >= FILL_HANDOVER_MS) {
					agent_fill_direct_end(f, all);
					f->direct_tried = !wanted || all;
					f->handed_over = true;
				}
			}
			return;
		}
		if (waits_for_room(f, first, end))
			return;
		f->all_in = false;
		f->idle_since = 0;
		r = xcalloc(1, sizeof(*r));
		r->f = f;
		if ((r->mirror = pick_mirror(f, first)) < 0) {
			/* every mirror failed lately: the pieces go back, asked again once one is due */
			for (int p = first; p < end; p++)
				f->claimed[p] = 0;
			free(r);
			return;
		}
		f->runs_asked++;
		for (r->slot = 0; f->runs[r->slot]; r->slot++)
			;
		r->fe = fe;
		r->first = r->next = first;
		r->end = end;
		r->buf = buf_get(f);
		run_start_piece(r);
		path = hub_url_escape(fe->path, true);
		url = xasprintf("%s%s", f->base[r->mirror], path);
		o.url = url;
		o.range_start = (int64_t)first * f->files.piece_size - fe->offset;
		o.range_len = (int64_t)(end - 1) * f->files.piece_size + file_part(f, fe, end - 1) - fe->offset -
			      o.range_start;
		r->len = o.range_len;
		r->started = uv_hrtime();
		o.header = f->alone || f->direct ? NULL : "X-Hubmirror-Fill: swarm";
		o.on_response = on_response;
		o.on_body = on_body;
		o.on_done = on_done;
		o.ud = r;
		f->inflight++;
		f->runs[r->slot] = r;
		if (!(r->req = hub_http_request(a->fills->http, &o))) {
			f->inflight--;
			f->runs[r->slot] = NULL;
			for (int p = first; p < end; p++)
				f->claimed[p] = 0;
			run_free(r);
			f->given_up = true;
		}
		free(url);
		free(path);
	}
}

