/*
 * agent.c - the instance agent's process (see agent.h): one libuv loop for the control socket, the
 * session's events and a tick every 500 ms; one libtorrent session; FUSE mounts with threads of their
 * own (p2p/mount.h). A finished snapshot's check (hashing at idle priority) is check.c; the snapshot
 * table, and what of it survives the process in the cache, snaps.c; what mounts do besides FUSE,
 * mounts.c; the other rooms are named in agent-int.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent-int.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/path.h"
#include "base/size.h"
#include "base/xmalloc.h"
#include "hub/cache.h"
#include "hub/http/httpd.h"
#include "hub/hub.h"
#include "p2p/mount.h"
#include "p2p/p2p.h"

static void on_event(void *ud, const struct p2p_event *ev)
{
	struct agent *a = ud;
	struct agent_snap *s = agent_snap_find(a, ev->btih);

	if (s && ev->kind == P2P_EVENT_FINISHED) {
		s->finished = true;
	} else if (s && ev->kind == P2P_EVENT_ERROR) {
		/* a full disk fails every write in flight, in two words each: one line a minute per
		 * snapshot, saying how many more came */
		if (time(NULL) - s->last_error_at >= 60) {
			if (s->errors_unsaid)
				log_warn("agent", "%s: (%d more errors like the last)",
					s->spec ? s->spec : s->btih, s->errors_unsaid);
			log_warn("agent", "%s: %s", s->spec ? s->spec : s->btih, ev->message);
			s->last_error_at = time(NULL);
			s->errors_unsaid = 0;
		} else {
			s->errors_unsaid++;
		}
	}
}

static void on_wake(uv_async_t *h)
{
	struct agent *a = h->data;

	p2p_session_drain(a->ses, on_event, a);
}

static void wake_from_libtorrent(void *ud)
{
	uv_async_send(ud);
}

static void on_want(uv_async_t *h)
{
	agent_fill_poke(h->data);
}

void agent_snap_retry(struct agent *a, struct agent_snap *s, const struct p2p_torrent_status *st)
{
	int64_t need = st->total_wanted - st->total_done;
	char f[32];

	/* a write error (a full disk): once the disk has room for the rest, ask again (libtorrent
	 * itself would wait minutes); not in direct mode, where the fill holds libtorrent back itself */
	if (!st->error || agent_fill_direct(s) || uv_now(&a->loop) - s->retried_ms < 5000 || !agent_room_for(a, need))
		return;
	s->retried_ms = uv_now(&a->loop);
	size_human(agent_disk_free(a, NULL), f, sizeof(f));
	log_info("agent", "%s: the cache's disk has room again (%s free): going on",
		s->spec ? s->spec : s->btih, f);
	p2p_session_retry(a->ses, s->btih);
	agent_fill_again(s);
	agent_fill_soon(a);
	s->last_error_at = 0; /* a new error after this is said at once */
}

/* s was whole, and a check of its files found pieces damaged (libtorrent checked them again and
 * lacks them now): it downloads them anew, from peers, the fill or the web seed; verified and linked
 * again once whole. A restart meanwhile must not take it back as whole. */
void agent_snap_damaged(struct agent *a, struct agent_snap *s)
{
	if (s->finished || s->verified)
		log_info("agent", "%s: pieces in the cache failed their hash: fetching them again",
			s->spec ? s->spec : s->btih);
	s->finished = false;
	s->verified = false;
	s->unchecked = false;
	s->fill_tried = false;
	s->damage_gen++; /* a settle job running now found nothing worth believing */
	agent_shortcuts_drop(a, s); /* reads wait for the good bytes again (FUSE) */
	json_object_set_new(s->meta, "verified", json_false());
	json_object_del(s->meta, "whole");
	agent_snap_remember(a, s);
	agent_fill_soon(a);
}

/* Let the web seeds in when the swarm cannot do without them (see struct agent_snap). */
static void web_seed_when_alone(struct agent *a, struct agent_snap *s, const struct p2p_torrent_status *st)
{
	struct p2p_add add = { 0 };
	bool alone, stalled;

	/* (not s->finished: a snapshot taken back in seed mode that finds a damaged piece leaves seed mode
	 * and downloads it again, and may need the web seed for that) */
	if (s->web_on || !s->nweb || st->seeding || st->seed_mode)
		return;
	/* alone, the HTTP fill fetches its pieces (fill.c), unless it gave up */
	alone = st->peers <= 1 && uv_now(&a->loop) - s->added_ms >= 1000 && !agent_fill_running(s);
	/* (the fill's bytes count: in direct mode libtorrent counts none until the end) */
	s->still_ticks = st->total_done + s->fill_bytes == s->last_done ? s->still_ticks + 1 : 0;
	s->last_done = st->total_done + s->fill_bytes;
	/* 3 s without a byte; with the fill running, 30 s: it takes what no peer has, so a stall with peers
	 * means slow peers (a starved machine), which libtorrent's web seed, asking the mirror for pieces
	 * other agents take too, would only duplicate; past 30 s it is the last resort all the same */
	stalled = s->still_ticks >= (agent_fill_running(s) ? 60 : 6);
	if (!alone && !stalled)
		return;
	add.torrent = s->torrent;
	add.len = s->tlen;
	add.save_path = s->save;
	add.web_seeds = (const char *const *)s->web_seeds;
	add.nweb_seeds = s->nweb;
	if (!p2p_session_add(a->ses, &add, NULL, NULL))
		s->web_on = true;
}

#define PACE_STALL_MS 3000      /* no byte for this long, with bytes to come: status says why */

/* uv_now when s last got a byte (or was added) */
static uint64_t quiet_since(const struct agent_snap *s)
{
	return s->held_changed_ms > s->added_ms ? s->held_changed_ms : s->added_ms;
}

/* Why no byte of s comes (s->waiting), in words for its user. */
static void stall_words(struct agent *a, struct agent_snap *s, const struct p2p_torrent_status *st, uint64_t now)
{
	int64_t failing = 0, still = (int64_t)(now - quiet_since(s)) / 1000;
	const char *why = NULL;
	int peers = st->peers - (s->web_on ? (int)s->nweb : 0);

	if (agent_fill_failing(s, now, &failing, &why))
		snprintf(s->waiting, sizeof(s->waiting), "waiting for the mirror (unreachable for %lld s: %s), "
			 "retrying", (long long)(failing / 1000), why);
	else if (peers <= 0 && !s->nweb)
		snprintf(s->waiting, sizeof(s->waiting), "waiting for peers: none connected, and the torrent names no "
			 "web seed (no byte for %lld s)", (long long)still);
	else if (peers <= 0)
		snprintf(s->waiting, sizeof(s->waiting), "waiting for the mirror and peers: no byte for %lld s",
			 (long long)still);
	else
		snprintf(s->waiting, sizeof(s->waiting), "no byte for %lld s from %d peer%s, nor from the mirror",
			 (long long)still, peers, peers == 1 ? "" : "s");
}

#define ROOM_WORDS "waiting for room in the cache"

bool agent_snap_room_words(struct agent *a, struct agent_snap *s, bool more)
{
	int64_t ms = 0;
	char c[32];

	/* (a fill runs only for pieces someone wants: a mount's reads too, which libtorrent's count of what
	 * is wanted may not show) */
	if (!agent_fill_room_waiting(s, uv_now(&a->loop), &ms) && !(s->room_short && s->swarming && more)) {
		if (!strncmp(s->waiting, ROOM_WORDS, strlen(ROOM_WORDS))) {
			s->waiting[0] = '\0'; /* room was made since the tick */
			s->waiting_since = 0;
		}
		return false;
	}
	/* said at once: the cause is known, and the bound's wait is what holds the reader */
	if (!s->waiting_since || strncmp(s->waiting, ROOM_WORDS, strlen(ROOM_WORDS)))
		s->waiting_since = time(NULL) - ms / 1000;
	size_human(a->cfg->cache_size, c, sizeof(c));
	snprintf(s->waiting, sizeof(s->waiting), ROOM_WORDS " (its bound of %s is reached): what was read least "
		 "recently leaves it first", c);
	return true;
}

/* The rate bytes of s come at now (over the last ~2.5 s of ticks), and why none come when none do. */
static void pace(struct agent *a, struct agent_snap *s, const struct p2p_torrent_status *st)
{
	uint64_t now = uv_now(&a->loop);
	int64_t have = st->total_done + agent_fill_unseen(s);
	unsigned k = s->pace_n % 6, oldest = s->pace_n >= 6 ? k : 0;
	bool more = !st->error && !st->seeding && !st->seed_mode && have < st->total_wanted;

	s->pace_at[k] = now;
	s->pace_have[k] = have;
	s->pace_n++;
	if (now > s->pace_at[oldest] && have >= s->pace_have[oldest])
		s->rate = (have - s->pace_have[oldest]) * 1000 / (int64_t)(now - s->pace_at[oldest]);
	else
		s->rate = 0;
	if (agent_snap_room_words(a, s, more))
		return;
	if (!more || now - quiet_since(s) < PACE_STALL_MS) {
		s->waiting[0] = '\0';
		s->waiting_since = 0;
		return;
	}
	if (!s->waiting_since)
		s->waiting_since = time(NULL) - (int64_t)(now - quiet_since(s)) / 1000;
	stall_words(a, s, st, now);
}

/* Pieces from peers and web seeds are libtorrent's to write, past the fill's wait for room: each
 * snapshot fetching from the swarm gets its share of the room the cache's bound has left, as a
 * download limit of an eighth of it a second: libtorrent lets a torrent bank up to 3 s of its limit
 * (a burst after a pause), and the limit is set again at each tick (half a second apart), so what
 * comes between two ticks stays within half the room even with a tick a second late, and that half
 * counts as taken for the fill (the other half is its own); with no room, nothing comes until room is
 * made. */
#define SWARM_SHARE 8   /* libtorrent's limit a second: this part of the room left */
#define SWARM_BANK_S 4  /* what it may write before the next tick counts it: 3 s banked, 1 s of a tick */
static void swarm_room(struct agent *a)
{
	size_t n = 0;
	int64_t room;

	if (a->cfg->cache_size <= 0)
		return;
	for (size_t i = 0; i < a->nsnaps; i++)
		n += a->snaps[i]->swarming && !a->snaps[i]->pinned;
	agent_evict_swarm_allowed(a, 0); /* (the last tick's: what it wrote is counted now) */
	room = n ? agent_swarm_room(a) : -1;
	agent_evict_swarm_allowed(a, room > 0 ? room / SWARM_SHARE * SWARM_BANK_S : 0);
	for (size_t i = 0; i < a->nsnaps; i++)
		a->snaps[i]->room_short = room == 0 && !a->snaps[i]->pinned;
	for (size_t i = 0; i < a->nsnaps; i++)
		if (a->snaps[i]->swarming)
			p2p_session_set_room(a->ses, a->snaps[i]->btih,
					     room < 0 || a->snaps[i]->pinned ? -1 : room / SWARM_SHARE / (int64_t)n);
}

static void on_tick(uv_timer_t *t)
{
	struct agent *a = t->data;

	p2p_session_drain(a->ses, on_event, a);
	for (size_t i = 0; i < a->nsnaps; i++) {
		struct agent_snap *s = a->snaps[i];
		struct p2p_torrent_status st;
		/* mounts detached from outside (a plain umount): their thread has ended */
		for (size_t k = 0; k < s->nmounts; k++) {
			if (p2p_mount_release(&s->mounts[k].m))
				agent_mount_forget(a, s, k--, NULL, NULL);
		}
		/* detached mounts whose last user (an open file, another namespace's copy) let go */
		for (size_t k = 0; k < s->nlingering; k++)
			if (p2p_mount_release(&s->lingering[k])) {
				s->lingering[k--] = s->lingering[--s->nlingering];
				agent_snap_used(a, s);
			}
		if (!p2p_session_torrent_status(a->ses, s->btih, &st)) {
			bool direct = agent_fill_direct(s);
			/* damage found in the files (a read's check, a verify), or pieces libtorrent had and
			 * lost in a check of the files (a piece that failed in seed mode, a full disk) */
			if (st.damaged > s->damaged_seen ||
			    (!st.checking && !direct && !s->evicting && st.pieces_have < s->pieces_seen &&
			     (s->finished || s->verified)))
				agent_snap_damaged(a, s);
			s->damaged_seen = st.damaged;
			if (!st.checking && !direct)
				s->pieces_seen = st.pieces_have;
			/* every wanted piece in (a mount's reads may want more for a while: it is not
			 * unverified for that, only not finished) */
			if (!st.checking)
				s->finished = direct ? agent_fill_direct_done(s) : st.finished || st.seeding;
			agent_snap_whole(a, s, &st);
			/* files a mount read whole meanwhile are kept by sha256 too (index_start) */
			if (s->finished && s->want && st.held > s->held_indexed && !s->index_job)
				s->indexed = false;
			if (st.held + agent_fill_unseen(s) != s->held_now + s->unseen_now)
				s->held_changed_ms = uv_now(&a->loop);
			s->held_now = st.held;
			s->unseen_now = agent_fill_unseen(s);
			pace(a, s, &st);
			agent_snap_retry(a, s, &st);
			web_seed_when_alone(a, s, &st);
			agent_fill_update(a, s, &st);
			/* (a mount that has what it wants too: a read that wants more comes between ticks) */
			s->swarming = !agent_fill_direct(s) && !st.seeding && !st.seed_mode;
		}
		agent_check_tick(a, s);
	}
	agent_evict_count(a);
	swarm_room(a);
	agent_evict_tick(a);
	agent_preheat_tick(a);
	agent_scrub_tick(a);
}

/* ---- start and stop ------------------------------------------------------------------------------ */

static void close_cb(uv_handle_t *h)
{
	(void)h;
}

void agent_stop(struct agent *a)
{
	if (a->stopping)
		return;
	a->stopping = true;
	atomic_store(&a->quit, true);
	agent_fill_end(a);
	/* every mount detached, and reads still waiting told to give up; those still in use elsewhere
	 * (files open, another namespace's copy) end with this process, which closes their connections:
	 * their users then get ENOTCONN. A moment (1 s in all) for the others to end cleanly. */
	for (size_t i = 0; i < a->nsnaps; i++) {
		struct agent_snap *s = a->snaps[i];
		while (s->nmounts) {
			bool in_use;
			char *errmsg = NULL;
			p2p_mount_close(s->mounts[0].m);
			if (agent_mount_detach(a, s, 0, &in_use, NULL, NULL, &errmsg)) {
				log_warn("agent", "%s", errmsg ? errmsg : "cannot unmount");
				agent_mount_forget(a, s, 0, NULL, NULL); /* left to the process's end */
			}
			free(errmsg);
		}
	}
	for (size_t i = 0; i < a->nsnaps; i++)
		for (size_t k = 0; k < a->snaps[i]->nlingering; k++)
			p2p_mount_close(a->snaps[i]->lingering[k]);
	for (int t = 0; t < 100; t++) {
		bool left = false;
		for (size_t i = 0; i < a->nsnaps; i++)
			for (size_t k = 0; k < a->snaps[i]->nlingering; k++)
				if (p2p_mount_release(&a->snaps[i]->lingering[k]))
					a->snaps[i]->lingering[k--] = a->snaps[i]->lingering[--a->snaps[i]->nlingering];
				else
					left = true;
		if (!left)
			break;
		usleep(10 * 1000);
	}
	httpd_free(&a->ctl);
	httpd_free(&a->http);
	uv_timer_stop(&a->tick);
	uv_close((uv_handle_t *)&a->tick, close_cb);
	uv_close((uv_handle_t *)&a->sigterm, close_cb);
	uv_close((uv_handle_t *)&a->sigint, close_cb);
	uv_close((uv_handle_t *)&a->sighup, close_cb);
}

static void on_stop_timer(uv_timer_t *t)
{
	agent_stop(t->data);
}

int agent_http_start(struct agent *a, const char *listen, char **errmsg)
{
	struct httpd_config ec = {.listen = listen, .max_workers = 64, .max_waiting = 4096, .write_timeout_ms = 600000};
	int r = httpd_new(&a->loop, &ec, &a->http);

	if (r) {
		*errmsg = xasprintf("cannot listen on %s: %s", listen, uv_strerror(r));
		return r;
	}
	httpd_add_handler(a->http, agent_endpoint, a);
	free(a->http_listen);
	a->http_listen = xstrdup(listen);
	return 0;
}

void agent_stop_soon(struct agent *a)
{
	uv_timer_start(&a->tick, on_stop_timer, 100, 0);
}

static void on_signal(uv_signal_t *h, int signum)
{
	if (signum == SIGHUP) {
		/* systemd's reload, or a terminal that went away: the agent has nothing to read again */
		log_info("agent", "SIGHUP: nothing to reload; carrying on");
		return;
	}
	agent_stop(h->data);
}

/* Is an agent at path already? Then this one must not take the socket from it. Only a socket nobody
 * listens on (or none) is free: one that accepts and does not answer in 5 s is an agent that is slow
 * (stopped, or busy), not a dead one. 0 free, else -EADDRINUSE with *errmsg. */
static int socket_free(const char *path, char **errmsg)
{
	long status = 0;
	json_t *j = NULL;
	char *err = NULL;
	int r = agent_call(path, "/v1/status", NULL, 5, &status, &j, &err);

	if (r == -ECONNREFUSED) {
		r = 0;
	} else if (r == -EACCES) {
		*errmsg = err; /* another user's agent: whose, and what to do */
		err = NULL;
		r = -EADDRINUSE;
	} else if (!r) {
		*errmsg = xasprintf("an agent (pid %lld) already runs at %s",
				    (long long)json_integer_value(json_object_get(j, "pid")), path);
		r = -EADDRINUSE;
	} else {
		*errmsg = xasprintf("an agent at %s does not answer (%s): stop it first (hubmirror agent --stop), or "
				 "give this one another --socket and --cache", path, err ? err : "no answer");
		r = -EADDRINUSE;
	}
	json_decref(j);
	free(err);
	return r;
}

/* One agent per cache: another would evict, check and rewrite what this one serves. An advisory lock
 * on <cache>/agent/lock, held for the process's life (the kernel lets go when it ends, however it
 * ends), naming its pid and socket for the refusal. */
static int lock_cache(struct agent *a, char **errmsg)
{
	char *dir = agent_path_state(a), *path = agent_path_lock(a), held[512] = "";
	int fd, r = 0;
	ssize_t n;

	path_mkdirs(dir, 0700);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		*errmsg = xasprintf("cannot open %s: %s", path, strerror(errno));
		r = -errno;
	} else if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		n = pread(fd, held, sizeof(held) - 1, 0);
		held[n > 0 ? n : 0] = '\0';
		held[strcspn(held, "\n")] = '\0';
		*errmsg = xasprintf("the cache %s is in use by another agent (%s): give this one a --cache of its own",
				 a->cfg->cache_dir, *held ? held : "pid unknown");
		close(fd);
		fd = -1;
		r = -EBUSY;
	} else {
		char *me = xasprintf("pid %ld, socket %s\n", (long)getpid(), a->cfg->socket_path);
		if (ftruncate(fd, 0) < 0 || pwrite(fd, me, strlen(me), 0) < 0) {
		} /* only the refusal's words */
		free(me);
	}
	a->lock_fd = fd;
	free(path);
	free(dir);
	return r;
}

/* Remove the control socket at exit, if it is still this agent's (an agent started after this one
 * lost it may have its own there now). */
static void unlink_own_socket(struct agent *a)
{
	struct stat st;

	if (a->sock_ino && stat(a->cfg->socket_path, &st) == 0 && st.st_ino == a->sock_ino && st.st_dev == a->sock_dev)
		unlink(a->cfg->socket_path);
}

static int start(struct agent *a, char **errmsg)
{
	struct p2p_session_config sc = { 0 };
	struct httpd_config hc = { 0 };
	char *listen, *sockdir = xstrdup(a->cfg->socket_path), *slash = strrchr(sockdir, '/');
	int r;

	if (slash && slash != sockdir) {
		*slash = '\0';
		path_mkdirs(sockdir, 0755);
	}
	free(sockdir);
	if ((r = socket_free(a->cfg->socket_path, errmsg)) != 0)
		return r;
	if ((r = path_mkdirs_private(a->cfg->cache_dir, 0750)) != 0) {
		*errmsg = xasprintf("cannot create %s: %s", a->cfg->cache_dir, err_str(r));
		return r;
	}
	if ((r = lock_cache(a, errmsg)) != 0)
		return r;
	unlink(a->cfg->socket_path); /* left by an agent that died */
	sc.listen_interfaces = a->cfg->listen ? a->cfg->listen : "0.0.0.0:0";
	sc.lan_tuning = true;
	sc.local_upload_limit = a->cfg->upload_limit;
	if ((r = p2p_session_new(&sc, &a->ses, errmsg)) != 0)
		return r;
	uv_async_init(&a->loop, &a->wake, on_wake);
	uv_unref((uv_handle_t *)&a->wake); /* the loop ends when the control socket and timers do */
	a->wake.data = a;
	p2p_session_set_wakeup(a->ses, wake_from_libtorrent, &a->wake);
	uv_async_init(&a->loop, &a->want_wake, on_want);
	uv_unref((uv_handle_t *)&a->want_wake);
	a->want_wake.data = a;
	p2p_session_set_want_notify(a->ses, wake_from_libtorrent, &a->want_wake);
	{
		/* the fill and eviction meet here, each through the other's callbacks (agent-int.h) */
		struct agent_evict_listener l;
		agent_fill_new(a, agent_room_wait, agent_evict_wrote, &l);
		agent_evict_listen(a, &l);
	}
	agent_snaps_recall(a);
	agent_evict_recall(a);
	/* the control socket is the agent's owner's alone: it mounts and reads tokens */
	listen = xasprintf("unix:%s", a->cfg->socket_path);
	hc.listen = listen;
	hc.max_connections = 256;
	hc.max_workers = 16; /* mounts and pulls asking the mirrors (a silent one holds a worker) */
	{
		mode_t old = umask(077);
		r = httpd_new(&a->loop, &hc, &a->ctl);
		umask(old);
	}
	free(listen);
	if (r) {
		*errmsg = xasprintf("cannot listen on %s: %s", a->cfg->socket_path, uv_strerror(r));
		return r;
	}
	{
		struct stat st;
		if (stat(a->cfg->socket_path, &st) == 0) {
			a->sock_ino = st.st_ino;
			a->sock_dev = st.st_dev;
		}
	}
	httpd_add_handler(a->ctl, agent_control, a);
	if (a->cfg->http && (r = agent_http_start(a, a->cfg->http, errmsg)) != 0)
		return r;
	uv_timer_init(&a->loop, &a->tick);
	a->tick.data = a;
	uv_timer_start(&a->tick, on_tick, AGENT_TICK_MS, AGENT_TICK_MS);
	uv_signal_init(&a->loop, &a->sigterm);
	uv_signal_init(&a->loop, &a->sigint);
	uv_signal_init(&a->loop, &a->sighup);
	a->sigterm.data = a->sigint.data = a->sighup.data = a;
	uv_signal_start(&a->sigterm, on_signal, SIGTERM);
	uv_signal_start(&a->sigint, on_signal, SIGINT);
	uv_signal_start(&a->sighup, on_signal, SIGHUP);
	return 0;
}

int agent_run(const struct agent_config *cfg, int ready_fd, char **errmsg)
{
	struct agent *a = xcalloc(1, sizeof(*a));
	struct p2p_goodbye *bye = NULL;
	size_t nbye = 0;
	int r, port = 0;

	a->cfg = cfg;
	a->lock_fd = -1;
	a->links_done = json_object();
	a->started_at = time(NULL);
	a->evict = agent_evict_new();
	a->preheat = agent_preheat_new();
	a->scrub = agent_scrub_new();
	uv_loop_init(&a->loop);
	a->loop.data = a;
	signal(SIGPIPE, SIG_IGN);
	/* the local endpoint's bodies wait on worker threads for their first bytes, up to 64 at once,
	 * and mounts and pulls asking a silent mirror hold up to 16 (the control socket's workers),
	 * beside the agent's own jobs (direct writes, checks, sizing): libuv reads this once, at its
	 * first job. Each idle thread costs a stack, so no more than those need. */
	setenv("UV_THREADPOOL_SIZE", cfg->http ? "80" : "24", 0);
	r = start(a, errmsg);
	if (!r) {
		if (ready_fd >= 0) {
			if (write(ready_fd, "ok\n", 3) < 0) { /* the parent is gone: carry on */
			}
			close(ready_fd);
		}
		uv_run(&a->loop, UV_RUN_DEFAULT);
		unlink_own_socket(a);
	} else {
		httpd_free(&a->ctl);
		httpd_free(&a->http);
		agent_fill_end(a);
	}
	/* libtorrent first: it must not signal the async handle once that is closed; then the goodbyes
	 * it did not say (p2p_session_goodbyes) */
	if (!a->ses || p2p_session_goodbyes(a->ses, &bye, &nbye, &port))
		nbye = 0;
	p2p_session_free(&a->ses);
	agent_say_goodbyes(bye, nbye, port);
	p2p_goodbyes_free(bye, nbye);
	if (a->wake.loop)
		uv_close((uv_handle_t *)&a->wake, close_cb);
	if (a->want_wake.loop)
		uv_close((uv_handle_t *)&a->want_wake, close_cb);
	uv_run(&a->loop, UV_RUN_DEFAULT);
	agent_snaps_sync(a); /* (the loop's last jobs are done: nothing is left but to wait here) */
	uv_loop_close(&a->loop);
	agent_fill_free(a);
	agent_evict_free(&a->evict);
	agent_preheat_free(&a->preheat);
	agent_scrub_free(&a->scrub);
	for (size_t i = 0; i < a->nsnaps; i++)
		agent_snap_free(a->snaps[i]);
	free(a->snaps);
	json_decref(a->links_done);
	if (a->lock_fd >= 0)
		close(a->lock_fd);
	free(a->http_listen);
	free(a);
	return r;
}
