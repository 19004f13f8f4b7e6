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
 *
 * This file holds a snapshot's fill made, its mode chosen from the swarm's status, stopped, and what
 * status and eviction ask of it; the runs themselves (which pieces, which mirror, the answers, the
 * writes) are fill-run.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-int.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "fill-int.h"
#include "hub/http/http.h"
#include "p2p/p2p.h"

void agent_fill_destroy(struct fill *f)
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

/* Hand what direct mode wrote to libtorrent (p2p_session_reseed: the pieces written count as had,
 * nothing is read again): whole, it seeds; else it asks peers for the rest (another agent came, a
 * write error, or pieces that kept failing). */
void agent_fill_direct_end(struct fill *f, bool whole)
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
		agent_fill_destroy(f);
		return NULL;
	}
	if (fill_bases(f, s)) {
		agent_fill_destroy(f);
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
	agent_fill_pump(s->fill);
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
		f->direct_bytes -= agent_fill_file_bytes(f, p);
	}
	if (f && !p2p_session_pieces_had(f->a->ses, f->btih, f->had, NULL, f->files.pieces))
		agent_fill_seen_by_libtorrent(f);
}

bool agent_fill_direct_done(const struct agent_snap *s)
{
	return s->fill && s->fill->direct && s->fill->all_in;
}

int64_t agent_fill_pending(const struct agent_snap *s)
{
	return s->fill ? agent_fill_inflight_bytes(s->fill) + s->fill->working_bytes : 0;
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
		agent_fill_destroy(f);
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
