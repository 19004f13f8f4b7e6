/*
 * fill.c - the pieces only the mirror has, over plain HTTP ranges (docs/agent.md, "The mirror as the
 * source of last resort").
 *
 * An agent adds its snapshots with origin_last: the mirror's BitTorrent seed counts as a peer with
 * nothing, so peers trade what any of them has, and a piece no connected peer has (its availability is
 * 0) comes from here, asked of the torrent's web seed (the mirror's store) with Range requests.
 *
 * - Alone (the tracker knows no peer but the mirror): direct mode. libtorrent asks no peer (upload
 *   mode); runs of 4 MiB, three at once (one in the first FILL_WARY_MS), in order from the piece a reader waits for
 *   (p2p_session_take_wanted) or where the last run ended; each piece is checked against its v2 hash
 *   and written into the cache's files on libuv's thread pool (p2p_session_write_piece), readable at
 *   once; when all are in, the torrent is added again in seed mode (p2p_session_reseed), and when what
 *   reads asked for is in and none asked for more for FILL_HANDOVER_MS, it is added again with those
 *   pieces had (libtorrent offers them to peers; a read wanting more, still alone, goes direct again). The tracker
 *   is asked again meanwhile: when another agent shows up, direct mode ends once every write is done
 *   (libtorrent then checks the files) and the swarm way goes on.
 * - In a swarm: one piece at a time, handed to libtorrent (p2p_session_add_piece), which checks it as
 *   a piece from a peer; the reader's piece first, else a random piece nobody has (near where readers
 *   are). Requests say "X-Hubmirror-Fill: swarm": the mirror answers 409 for a range it just sent to
 *   another agent, and the piece is left to the swarm for a while (routes-p2p.c, fill_taken).
 *
 * Several mirrors (the torrent's web seeds: the mirror it came from, then its peer mirrors): each piece
 * is asked of one of them by its index (piece % mirrors in a swarm, the same for every agent, so each
 * mirror's 409 still sees the ranges it sent; alone, run by run in turn), so the mirrors share the work; a mirror whose
 * ranges failed FILL_FAILS times in a row is left alone for a while (1 s, doubling each time in a row up to
 * FILL_DOWN_MS), its pieces asked of the next one. When every mirror is left alone the fill rests
 * and asks again when the first is due: a mirror that restarts, or drops off the network for a
 * while, is taken up again (in direct mode nothing else would fetch: libtorrent asks no peer).
 *
 * Nothing is trusted unchecked, and a reader still reads only what p2p_session_have_range admits.
 * Everything here runs on the agent's loop (the writes on its thread pool); bytes arrive by hub_http.
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
#include "hub/http/http.h"
#include "p2p/p2p.h"

#define FILL_RUN_BYTES ((int64_t)4 << 20)   /* alone: bytes asked for in one request (at least a piece) */
#define FILL_PARALLEL 3                     /* alone: requests in flight per snapshot; in a swarm 1 */
#define FILL_WARY_MS 1500                   /* ...but 1 for this long after direct mode starts */
#define FILL_HANDOVER_MS 1000               /* direct: all in and nothing asked for this long: libtorrent
					     * takes the pieces (and offers them to peers) */
#define FILL_FAST_BPS ((int64_t)100 << 20)  /* ...unless one run at a time comes this fast (bytes/s) */
#define FILL_FAST_MIN ((int64_t)1 << 20)    /* ...measured on a run of this many bytes or more */
#define FILL_ELSEWHERE_MS 5000              /* a range the mirror said another agent has: left to peers */
#define FILL_AHEAD 64                       /* in a swarm with readers: pieces picked from past the last wait */
#define FILL_RETRY_MS 5000                  /* a piece handed over and still not had: fetched again */
#define FILL_TRIES 3                        /* ...at most this often (then peers and the web seed) */
#define FILL_WORK_MAX ((int64_t)16 << 20)  /* direct: bytes waiting for the thread pool before no new run
					     * (at least two pieces; see work_max) */
#define FILL_FAILS 3                        /* failed requests in a row before a mirror is left alone */
#define FILL_DOWN_MS 30000                  /* ...for 1 s, 2 s, 4 s ... up to this long */
#define FILL_PROBE_MS 2000                  /* ...or this, while nothing answers at all (connection refused
					     * or timed out): asking costs the mirror nothing, and a pull goes
					     * on within seconds once it is back (it took up to 30 s) */
#define FILL_MIRRORS 8                      /* web seeds used, at most */
#define FILL_KNOWN_MS 1500                  /* peers the tracker named, not connected, count this long */
/* what status and a pull say of a mirror that answers a range with the whole file */
#define FILL_NO_RANGE "the mirror answered a range request with 200 and the whole file (it, or a proxy in " \
		      "front of it, ignores Range): the answer is dropped"


/* What the fills share, one per agent (struct agent points at it). */
struct agent_fills {
	struct hub_http *http;          /* their requests, from the first fill on */
	uv_timer_t soon;                /* look again in a moment (libtorrent was checking files) */
	bool ended;                     /* agent_fill_end ran */
	agent_room_wait_fn *room_wait;  /* eviction's, given to agent_fill_new: room on the cache's disk */
	agent_wrote_fn *wrote;          /* ...and what the fills wrote into the cache, as they write it */
};

struct fill {
	struct agent *a;
	char btih[41];
	bool gone;                      /* its snapshot was dropped: free once no request is in flight */
	bool on;                        /* requests may start */
	bool alone;                     /* no peer known but the mirror */
	bool peers_seen;                /* in a swarm: connected to a peer (or 2 s have passed) */
	bool given_up;                  /* every mirror failed FILL_FAILS times in a row: the swarm and web
					 * seed go on */
	int fails[FILL_MIRRORS];        /* per mirror: requests failed in a row */
	int downs[FILL_MIRRORS];        /* per mirror: times left alone in a row */
	uint64_t down_until[FILL_MIRRORS]; /* per mirror: left alone until then (uv_now ms) */
	bool resting;                   /* every mirror is left alone (said once in the log) */
	uint64_t failing_since;         /* uv_now of the first failed request since the last good one (0:
					 * none), and why the last one failed: status's "waiting" */
	char why[200];
	unsigned char no_range[FILL_MIRRORS]; /* per mirror: answers of 200 to a range, in a row */
	bool fast;                      /* a run of FILL_FAST_MIN bytes or more came at FILL_FAST_BPS or faster
					 * (see parallel) */
	struct p2p_file_list files;     /* with the piece layout */
	char *base[FILL_MIRRORS];       /* <web seed>/<name>/ of each mirror */
	int nbase;
	unsigned runs_asked;            /* runs started: alone, each goes to the next mirror */
	unsigned char *torrent;         /* the .torrent (for p2p_session_reseed) */
	size_t tlen;
	unsigned char *claimed;         /* per piece: a request fetches it */
	unsigned char *tries;           /* per piece: handed to libtorrent this often */
	/* Direct (alone, from the start): pieces are checked and written here, not by libtorrent, which
	 * asks no peer meanwhile; once all are in, the torrent is added again in seed mode */
	bool direct;
	bool direct_tried;
	uint64_t direct_since;          /* direct: when it started, when it last asked the tracker who else
					 * is there, and how often */
	uint64_t announced;
	int announces;
	bool leaving;                   /* another agent came: direct mode ends once no request is in
					 * flight and no write waits (then libtorrent takes the pieces written) */
	bool all_in;                    /* direct: every wanted piece is written (a snapshot of some files
					 * stays in direct mode FILL_HANDOVER_MS: reads may want more) */
	uint64_t idle_since;            /* direct: since when nothing was left to ask for (0: not) */
	uint64_t room_since;            /* a run waits for room in the cache since (uv_now; 0: none waits) */
	bool handed_over;               /* direct mode ended once: no wary start when it comes again */
	int working;                    /* pieces being checked and written on the thread pool */
	int64_t working_bytes;
	unsigned char *mine;            /* per piece: written here */
	int64_t direct_bytes;           /* of the file bytes (pads left out) */
	unsigned char *had;             /* per piece, refreshed before choosing a run */
	int *avail;                     /* per piece: how many connected peers have it (then) */
	int cursor;                     /* where the next run without a reader starts */
	int hint;                       /* the piece a reader waits for (-1: none) */
	uint32_t *elsewhere;            /* per piece: until when (ms of uv_now, 0: not) it is left alone:
					 * another agent has it, or it was handed over and libtorrent checks it
					 * (a piece that failed its check is dropped: fetched again after that) */
	uint64_t now;                   /* uv_now when the run is chosen */
	int frontier;                   /* the latest piece a reader waited for (-1: none yet) */
	uint64_t rng;
	struct run *runs[FILL_PARALLEL]; /* in flight */
	int inflight;
	int64_t *bytes;                 /* its snapshot's count of piece bytes handed to libtorrent */
	/* piece buffers to use again: a fresh one each piece (malloc maps pieces of 512 KiB and up) cost
	 * a page fault and a cleared page every 4 KiB it is written */
	char **spare;
	int nspare;
	int64_t bytes_gone;             /* where bytes points once the snapshot is dropped */
};

struct run {
	struct fill *f;
	struct hub_http_req *req;
	int slot;
	int mirror;                     /* which base it asked */
	const struct p2p_file_entry *fe;
	int first, end;                 /* pieces [first, end) */
	int next;                       /* the piece being received */
	int64_t piece_file_bytes;       /* of piece next, how many come from the file (the rest is pad) */
	char *buf;                      /* piece next, filled up to got */
	int64_t got;
	bool ok;                        /* the answer is the 206 asked for */
	bool whole;                     /* ...or a 200: the whole file, the Range ignored (dropped) */
	int64_t len;                    /* bytes asked for */
	uint64_t started;               /* uv_hrtime at the request */
};

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
static int64_t file_bytes_of(const struct fill *f, int p)
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

static void fill_free(struct fill *f)
{
	for (int i = 0; i < f->nspare; i++)
		free(f->spare[i]);
	free(f->spare);
	p2p_file_list_release(&f->files);
	for (int i = 0; i < f->nbase; i++)
		free(f->base[i]);
	free(f->torrent);
	free(f->claimed);
	free(f->had);
	free(f->avail);
	free(f->elsewhere);
	free(f->tries);
	free(f->mine);
	free(f);
}

static void pump(struct fill *f);

static void run_free(struct run *r)
{
	buf_put(r->f, r->buf);
	free(r);
}

/* Hand what direct mode wrote to libtorrent (p2p_session_reseed: the pieces written count as had,
 * nothing is read again): whole, it seeds; else it asks peers for the rest (another agent came, a
 * write error, or pieces that kept failing). */
static void direct_end(struct fill *f, bool whole)
{
	char *err = NULL;

	f->direct = false;
	if (p2p_session_reseed(f->a->ses, f->btih, f->torrent, f->tlen, &err)) {
		log_warn("agent", "%.12s: %s", f->btih, err ? err : "cannot add the torrent again");
		f->given_up = true;
	}
	/* libtorrent has them now: a later direct mode counts only what it writes itself */
	memset(f->mine, 0, (size_t)f->files.pieces);
	f->direct_bytes = 0;
	free(err);
	if (!whole)
		agent_fill_soon(f->a); /* libtorrent takes the pieces now */
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
		direct_end(f, false);
	}
	buf_put(f, j->buf);
	free(j);
	if (f->gone) {
		if (!f->inflight && !f->working)
			fill_free(f);
	} else {
		pump(f);
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
			fill_free(f);
	} else {
		pump(f);
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
static void seen_by_libtorrent(struct fill *f)
{
	for (int p = 0; p < f->files.pieces; p++)
		if (f->mine[p] && f->had[p] == 1) {
			f->mine[p] = 0;
			f->direct_bytes -= file_bytes_of(f, p);
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
	seen_by_libtorrent(f);
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
static int64_t inflight_bytes(const struct fill *f)
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
static void pump(struct fill *f)
{
	struct agent *a = f->a;

	if (f->leaving) {
		/* every write done before libtorrent looks at the files: it then never writes a piece
		 * that counts as had here */
		if (!f->inflight && !f->working) {
			f->leaving = false;
			direct_end(f, false);
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
					direct_end(f, all);
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

/* f's mirrors: <web seed>/<name>/ of each of s's web seeds (FILL_MIRRORS at most); 0, or -1 for none. */
static int fill_bases(struct fill *f, const struct agent_snap *s)
{
	char *name = hub_url_escape(f->files.name, false);

	for (int i = 0; i < f->nbase; i++)
		free(f->base[i]);
	f->nbase = 0;
	/* the web seeds' URLs of a multi-file torrent, as BEP 19 clients build them: <url>/<name>/<path> */
	for (size_t i = 0; i < s->nweb && f->nbase < FILL_MIRRORS; i++) {
		const char *w = s->web_seeds[i];
		if (!*w)
			continue;
		f->base[f->nbase++] = xasprintf("%s%s%s/", w, w[strlen(w) - 1] == '/' ? "" : "/", name);
	}
	free(name);
	return f->nbase ? 0 : -1;
}

void agent_fill_sources(struct agent *a, struct agent_snap *s)
{
	struct fill *f = s->fill;

	if (!f) {
		s->fill_tried = false; /* none was made (no web seed then), or it went: try again */
		agent_fill_soon(a);
		return;
	}
	/* the mirrors moved: every one is new, nothing they failed counts, and a fill that gave up (every
	 * mirror failed) goes on (runs in flight keep their index: a failure of theirs counts for
	 * whichever mirror has it now, harmless) */
	if (fill_bases(f, s))
		f->given_up = true;
	else
		f->given_up = false;
	f->resting = false;
	memset(f->fails, 0, sizeof(f->fails));
	memset(f->downs, 0, sizeof(f->downs));
	memset(f->down_until, 0, sizeof(f->down_until));
	memset(f->no_range, 0, sizeof(f->no_range));
	agent_fill_soon(a);
}

/* A new fill for s, or NULL when it has no web seed or no pieces to fetch. */
static struct fill *fill_new(struct agent *a, struct agent_snap *s)
{
	struct fill *f;

	if (!s->nweb || a->cfg->no_fill)
		return NULL;
	if (!a->fills->http) {
		struct hub_http_config hc = { .max_tries = 1, .connect_timeout_ms = 5000, .stall_timeout_s = 20 };
		if (hub_http_new(&a->loop, &hc, &a->fills->http))
			return NULL;
	}
	f = xcalloc(1, sizeof(*f));
	f->a = a;
	f->bytes = &s->fill_bytes;
	f->torrent = xmalloc(s->tlen);
	memcpy(f->torrent, s->torrent, s->tlen);
	f->tlen = s->tlen;
	memcpy(f->btih, s->btih, sizeof(f->btih));
	if (p2p_session_files(a->ses, s->btih, &f->files) || f->files.pieces <= 0 || f->files.piece_size <= 0) {
		fill_free(f);
		return NULL;
	}
	if (fill_bases(f, s)) {
		fill_free(f);
		return NULL;
	}
	f->claimed = xcalloc((size_t)f->files.pieces, 1);
	f->had = xcalloc((size_t)f->files.pieces, 1);
	f->avail = xcalloc((size_t)f->files.pieces, sizeof(*f->avail));
	f->elsewhere = xcalloc((size_t)f->files.pieces, sizeof(*f->elsewhere));
	f->tries = xcalloc((size_t)f->files.pieces, 1);
	f->mine = xcalloc((size_t)f->files.pieces, 1);
	f->cursor = (int)(((uint64_t)uv_hrtime() / 1000) % (uint64_t)f->files.pieces);
	f->hint = f->frontier = -1;
	f->rng = uv_hrtime() | 1;
	return f;
}

void agent_fill_update(struct agent *a, struct agent_snap *s, const struct p2p_torrent_status *st)
{
	/* alone: no peer but (at most) the mirror's seed, connected or known; web seed connections are
	 * not peers here */
	int peers = st->peers - (s->web_on ? (int)s->nweb : 0);
	/* (finished: every wanted piece is had; a read that wants more makes it unfinished again) */
	bool want = !a->stopping && !st->seeding && !st->seed_mode && !st->error && !st->paused && !st->finished, alone;

	/* Peers the tracker named count until libtorrent has had time to dial them (it does at its next
	 * one-second tick), then only those connected: a name can be a peer that is gone (killed, its
	 * machine down: the tracker keeps it for two intervals), and counting it kept a lone agent out of
	 * direct mode, its snapshot coming a piece at a time (a 512 MiB load: 8 s instead of 1). */
	if (st->tracker_replied && !s->replied_ms)
		s->replied_ms = uv_now(&a->loop);
	if (st->known_peers > peers && (!s->replied_ms || uv_now(&a->loop) - s->replied_ms < FILL_KNOWN_MS))
		peers = st->known_peers;
	/* not before the tracker has said who else is there (or kept quiet for 2 s): agents starting
	 * together would each take the whole snapshot from the mirror */
	alone = peers <= 1 && (st->tracker_replied || uv_now(&a->loop) - s->added_ms >= 2000);
	if (!s->fill && want && !s->fill_tried) {
		s->fill_tried = true;
		s->fill = fill_new(a, s);
	}
	if (!s->fill)
		return;
	if (st->seeding || st->seed_mode) {
		agent_fill_stop(a, s); /* done (or added again whole): its memory goes */
		return;
	}
	s->fill->on = want;
	s->fill->alone = alone;
	/* in a swarm, what peers have is known once they are connected: libtorrent dials the peers the
	 * tracker named at its next one-second tick */
	s->fill->peers_seen = st->peers >= 2 || uv_now(&a->loop) - s->added_ms >= 2000;
	/* in direct mode libtorrent asks no peer, and peers that come see one with nothing: ask the
	 * tracker who else is there, every second */
	if (s->fill->direct && !s->fill->leaving) {
		uint64_t now = uv_now(&a->loop), since = now - s->fill->direct_since;
		/* soon after it started (agents starting together), then every second */
		if (s->fill->announces < 3 ? since >= 200u * (1u << s->fill->announces)
					   : now - s->fill->announced >= 1000) {
			s->fill->announced = now;
			s->fill->announces++;
			p2p_session_reannounce(a->ses, s->btih);
		}
		if (since < 3000)
			agent_fill_soon(a); /* and look at the answers at once */
	}
	/* another agent came: it is better served by this one's pieces through libtorrent */
	if (s->fill->direct && !alone && !s->fill->leaving && peers > 1) {
		log_info("agent", "%s: %d peers now: libtorrent takes over what was fetched",
			s->spec ? s->spec : s->btih, peers);
		s->fill->leaving = true;
		for (int i = 0; i < FILL_PARALLEL; i++)
			if (s->fill->runs[i])
				hub_http_cancel(s->fill->runs[i]->req);
	}
	/* Alone: the direct mode, once (libtorrent has asked no peer for anything: the mirror's seed is
	 * hidden from it, no other peer is known and its web seed is out) */
	if (want && alone && !s->fill->direct_tried && !s->web_on && !st->checking && !s->fill->given_up) {
		s->fill->direct_tried = true;
		s->fill->direct = !p2p_session_download_pause(a->ses, s->btih, true);
		s->fill->direct_since = s->fill->announced = uv_now(&a->loop);
		if (s->fill->direct)
			log_info("agent", "%s: alone in its swarm: fetching it over HTTP ranges from the mirror",
				s->spec ? s->spec : s->btih);
	}
	if (want && !st->tracker_replied && uv_now(&a->loop) - s->added_ms < 2000)
		agent_fill_soon(a); /* look again as soon as the tracker answers */
	pump(s->fill);
}

bool agent_fill_failing(const struct agent_snap *s, uint64_t now, int64_t *for_ms, const char **why)
{
	const struct fill *f = s->fill;

	if (!f || !f->failing_since || !f->on)
		return false;
	*for_ms = (int64_t)(now - f->failing_since);
	*why = f->why;
	return true;
}

bool agent_fill_room_waiting(const struct agent_snap *s, uint64_t now, int64_t *for_ms)
{
	const struct fill *f = s->fill;

	if (!f || !f->on || !f->room_since || f->given_up)
		return false;
	*for_ms = now > f->room_since ? (int64_t)(now - f->room_since) : 0;
	return true;
}

const char *agent_fill_broken(const struct agent_snap *s)
{
	const struct fill *f = s->fill;
	int n = 0;

	if (!f || !(f->alone || f->direct) || !f->nbase)
		return NULL;
	for (int i = 0; i < f->nbase; i++)
		n += f->no_range[i] >= FILL_FAILS;
	return n == f->nbase ? FILL_NO_RANGE : NULL;
}

bool agent_fill_running(const struct agent_snap *s)
{
	return s->fill && !s->fill->given_up;
}

void agent_fill_again(struct agent_snap *s)
{
	struct fill *f = s->fill;

	if (!f)
		return;
	/* pieces whose writes failed (a full disk) counted as tries: they are worth asking again */
	memset(f->tries, 0, (size_t)f->files.pieces);
	memset(f->elsewhere, 0, (size_t)f->files.pieces * sizeof(*f->elsewhere));
	memset(f->fails, 0, sizeof(f->fails));
	memset(f->down_until, 0, sizeof(f->down_until));
}

bool agent_fill_direct(const struct agent_snap *s)
{
	return s->fill && s->fill->direct;
}

/* Pieces taken out of the cache (eviction's listener; those with size 0 stayed): the direct fill no
 * longer counts them as written, and fetches them again when read. */
static void forget(void *ud, struct agent_snap *s, const struct p2p_cold *v, size_t n)
{
	struct fill *f = s->fill;

	for (size_t i = 0; f && i < n; i++) {
		int p = v[i].piece;
		if (!v[i].size || p < 0 || p >= f->files.pieces || !f->mine[p])
			continue;
		f->mine[p] = 0;
		f->tries[p] = 0;
		f->direct_bytes -= file_bytes_of(f, p);
	}
	if (f && !p2p_session_pieces_had(f->a->ses, f->btih, f->had, NULL, f->files.pieces))
		seen_by_libtorrent(f);
}

bool agent_fill_direct_done(const struct agent_snap *s)
{
	return s->fill && s->fill->direct && s->fill->all_in;
}

int64_t agent_fill_pending(const struct agent_snap *s)
{
	return s->fill ? inflight_bytes(s->fill) + s->fill->working_bytes : 0;
}

int64_t agent_fill_unseen(const struct agent_snap *s)
{
	return s->fill && s->fill->direct ? s->fill->direct_bytes : 0;
}

void agent_fill_stop(struct agent *a, struct agent_snap *s)
{
	struct fill *f = s->fill;

	(void)a;
	s->fill = NULL;
	if (!f)
		return;
	f->gone = true;
	f->on = false;
	f->bytes = &f->bytes_gone;
	if (!f->inflight && !f->working) {
		fill_free(f);
		return;
	}
	/* the last on_done frees it */
	for (int i = 0; i < FILL_PARALLEL; i++)
		if (f->runs[i])
			hub_http_cancel(f->runs[i]->req);
}

static void on_soon(uv_timer_t *t)
{
	struct agent *a = t->data;

	for (size_t i = 0; i < a->nsnaps; i++) {
		struct p2p_torrent_status st;
		if ((a->snaps[i]->fill || !a->snaps[i]->fill_tried) &&
		    !p2p_session_torrent_status(a->ses, a->snaps[i]->btih, &st))
			agent_fill_update(a, a->snaps[i], &st);
	}
}

void agent_fill_poke(struct agent *a)
{
	if (!a->stopping)
		on_soon(&a->fills->soon);
}

void agent_fill_soon(struct agent *a)
{
	if (a->fills && !a->stopping && !uv_is_active((uv_handle_t *)&a->fills->soon))
		uv_timer_start(&a->fills->soon, on_soon, 20, 0);
}

static void room_made(void *ud)
{
	agent_fill_soon(ud);
}

void agent_fill_new(struct agent *a, agent_room_wait_fn *room_wait, agent_wrote_fn *wrote,
		    struct agent_evict_listener *l)
{
	a->fills = xcalloc(1, sizeof(*a->fills));
	uv_timer_init(&a->loop, &a->fills->soon);
	a->fills->soon.data = a;
	a->fills->room_wait = room_wait;
	a->fills->wrote = wrote;
	*l = (struct agent_evict_listener){
		.thinned = forget,
		.room = room_made,
		.unseen = agent_fill_unseen,
		.pending = agent_fill_pending,
		.ud = a,
	};
}

void agent_fill_end(struct agent *a)
{
	if (!a->fills || a->fills->ended)
		return;
	a->fills->ended = true;
	uv_close((uv_handle_t *)&a->fills->soon, NULL);
	for (size_t i = 0; i < a->nsnaps; i++)
		agent_fill_stop(a, a->snaps[i]);
	if (a->fills->http && !hub_http_active(a->fills->http))
		hub_http_free(&a->fills->http);
}

void agent_fill_free(struct agent *a)
{
	if (!a->fills)
		return;
	free(a->fills); /* (its HTTP layer went with the last request: on_done, agent_fill_end) */
	a->fills = NULL;
}
