/*
 * fill-int.h - what the two files of the HTTP fill share (fill.c: a snapshot's fill made, its mode
 * chosen from the swarm's status, stopped, and what status and eviction ask of it; fill-run.c: its
 * runs, chosen, asked of the mirrors and received, the pieces handed to libtorrent or checked and
 * written here). Nothing outside p2p/agent/ includes it, and nothing but those two files.
 */
#ifndef HM_P2P_AGENT_FILL_INT_H
#define HM_P2P_AGENT_FILL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent-int.h"
#include "p2p/p2p.h"

struct hub_http;
struct hub_http_req;

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

/* fill.c: f freed (its requests and writes all done); what direct mode wrote handed to libtorrent
 * (whole: it seeds; else it asks peers for the rest). */
void agent_fill_destroy(struct fill *f);
void agent_fill_direct_end(struct fill *f, bool whole);
/* fill-run.c: start runs while f may and pieces are left; the file bytes of piece p (its pad bytes
 * left out); pieces written here that libtorrent has now, no longer counted as written here; the bytes
 * the runs in flight have still to bring. */
void agent_fill_pump(struct fill *f);
int64_t agent_fill_file_bytes(const struct fill *f, int p);
void agent_fill_seen_by_libtorrent(struct fill *f);
int64_t agent_fill_inflight_bytes(const struct fill *f);

#endif
