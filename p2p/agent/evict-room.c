/*
 * evict-room.c - the room a writer asks for before its bytes come: on the cache's disk (a pull's
 * snapshot that would not fit is refused with what to do), and under the cache's bound (agent
 * --cache-size), where the fill's runs and libtorrent's downloads wait while what can go goes first
 * (snapshots nobody uses, chosen by the next sizing job; cold pieces, by a thinning job: evict.c), or,
 * when nothing ever can, come past the bound. The decision reads eviction's state (evict-int.h) and
 * starts its jobs; it measures nothing itself.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "agent-int.h"
#include "evict-int.h"
#include "base/log.h"
#include "base/size.h"
#include "base/xmalloc.h"
#include "p2p/p2p.h"

/* ---- room on the cache's disk -------------------------------------------------------------------- */

/* kept free beside a snapshot (the agent's own files, the log): 16 MiB, less on a small disk */
static int64_t margin(int64_t disk)
{
	return disk / 64 < ((int64_t)16 << 20) ? disk / 64 : (int64_t)16 << 20;
}

int64_t agent_disk_free(const struct agent *a, int64_t *disk_size)
{
	struct statvfs fs;

	if (statvfs(a->cfg->cache_dir, &fs) < 0)
		return -1;
	if (disk_size)
		*disk_size = (int64_t)fs.f_blocks * (int64_t)fs.f_frsize;
	return (int64_t)fs.f_bavail * (int64_t)fs.f_frsize;
}

/* strcmp for qsort and bsearch of strings */
static int by_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int64_t agent_snap_need(struct agent *a, json_t *meta, json_t *want, int64_t *total)
{
	const char *btih = json_string_value(json_object_get(meta, "btih"));
	struct agent_snap *s = btih ? agent_snap_find(a, btih) : NULL;
	struct p2p_file_list l = { 0 };
	const char **w = xcalloc(json_array_size(want) + 1, sizeof(*w));
	int64_t need = 0, all = 0, *held = NULL;
	size_t nw = 0, i;
	json_t *it;

	json_array_foreach(want, i, it)
		if (json_string_value(it))
			w[nw++] = json_string_value(it);
	qsort(w, nw, sizeof(*w), by_str);
	if (s && !p2p_session_files(a->ses, s->btih, &l)) {
		/* held: what the wanted files lack (the direct fill's bytes libtorrent does not count yet) */
		held = xcalloc(l.n + 1, sizeof(*held));
		if (!p2p_session_files_held(a->ses, s->btih, &l, held)) {
			for (size_t k = 0; k < l.n; k++)
				if (!want || bsearch(&l.v[k].path, w, nw, sizeof(*w), by_str)) {
					all += l.v[k].size;
					need += l.v[k].size - held[k];
				}
			if (a->evict->l.unseen)
				need -= a->evict->l.unseen(s);
			*total = all;
			goto out;
		}
	}
	json_array_foreach(json_object_get(meta, "files"), i, it) {
		int64_t size = json_integer_value(json_object_get(it, "size"));
		const char *sha = json_string_value(json_object_get(it, "sha256"));
		const char *path = json_string_value(json_object_get(it, "path"));
		char *kept;
		struct stat ks;
		if (want && (!path || !bsearch(&path, w, nw, sizeof(*w), by_str)))
			continue;
		kept = sha && strlen(sha) == 64 && !strchr(sha, '/') ? agent_path_kept(a, sha) : NULL;
		all += size;
		/* a content held for another snapshot is placed by a hard link: no new bytes */
		if (!kept || stat(kept, &ks) < 0 || ks.st_size != size)
			need += size;
		free(kept);
	}
	*total = all;
out:
	free(held);
	free(w);
	p2p_file_list_release(&l);
	return need > 0 ? need : 0;
}

bool agent_room_for(const struct agent *a, int64_t need)
{
	int64_t disk = 0, avail = agent_disk_free(a, &disk);

	return avail < 0 || need + margin(disk) <= avail;
}

char *agent_room_refusal(const struct agent *a, const char *spec, int64_t need, int64_t total)
{
	int64_t disk = 0, avail = agent_disk_free(a, &disk);
	char n[32], f[32], t[32], d[32];

	if (avail < 0 || need + margin(disk) <= avail)
		return NULL;
	size_human(need, n, sizeof(n));
	size_human(avail, f, sizeof(f));
	size_human(total, t, sizeof(t));
	size_human(disk, d, sizeof(d));
	if (total > disk)
		return xasprintf(
			"not enough room in the cache for %s: it needs %s more and the disk of %s has %s free; "
			"the snapshot alone (%s) is bigger than that whole disk (%s): give the agent a cache on a "
			"bigger one (agent --cache DIR), or take what fits: the files you need (pull --include "
			"PATTERN), or a mount (it fetches what is read)",
			spec, n, a->cfg->cache_dir, f, t, d);
	return xasprintf("not enough room in the cache for %s: it needs %s more and the disk of %s has %s free "
			 "(the snapshot is %s in all): free space there%s",
			 spec, n, a->cfg->cache_dir, f, t,
			 a->cfg->cache_size > 0
				 ? ", or unmount or unpin snapshots so that they can be evicted"
				 : ", or give the agent a --cache-size so that it evicts snapshots nobody uses");
}

/* A writer waits for a thinning job only when the last one took something out, or a second ago: one
 * whose pieces all stayed (read again meanwhile) would be followed by another just like it, and the
 * writer would wait for nothing. */
static bool thin_useful(struct agent *a)
{
	return !a->evict->thin_idle || uv_now(&a->loop) - a->evict->thin_ended_ms >= 1000;
}

#define OWN_GROWTH ((int64_t)64 << 10) /* kept free under the bound: the agent's own files in the cache
				      * (its log, the descriptions) grow between two measurements, and the
				      * estimate does not see it */
#define ROOM_WAIT_MS 5000       /* a writer waits this long at most for pieces read a moment ago to
				 * grow cold (they stay PIECE_IDLE_S at most) */

/* Could cold pieces go later, whenever they were read? Pieces of files nobody wants, of snapshots that
 * are not pinned: what a mount read besides its metadata and --prefetch. */
static bool cold_later(struct agent *a)
{
	bool any = false;

	for (size_t i = 0; !any && i < a->nsnaps; i++) {
		struct agent_snap *s = a->snaps[i];
		struct p2p_file_list l = { 0 };
		struct p2p_cold *v = NULL;
		size_t n = 0, nkeep = 0;
		int *keep;
		if (s->pinned || !s->want || p2p_session_files(a->ses, s->btih, &l))
			continue;
		keep = agent_want_indices(&l, s->want, &nkeep);
		any = !p2p_session_cold_pieces(a->ses, s->btih, keep, nkeep, 0, &v, &n) && n;
		free(v);
		free(keep);
		p2p_file_list_release(&l);
	}
	return any;
}

/* Nothing can go this moment. When pieces read a moment ago can go once they are cold (a second or
 * two), the writer waits for them (the fill asks again at each tick), ROOM_WAIT_MS at most: bytes
 * are admitted past the bound only when nothing else can ever make room (what is left is wanted,
 * pinned, or a pull's minute) or a reader keeps every piece warm for that long. */
static bool short_wait(struct agent *a)
{
	uint64_t now = uv_now(&a->loop);

	if (!cold_later(a))
		return false;
	if (!a->evict->short_since) {
		a->evict->short_since = now ? now : 1;
		a->evict->short_tick = a->evict->ticks;
	}
	/* (and as many ticks: an agent starved of CPU for seconds has not had the time to look) */
	if (now - a->evict->short_since < ROOM_WAIT_MS ||
	    a->evict->ticks - a->evict->short_tick < ROOM_WAIT_MS / AGENT_TICK_MS)
		return true;
	if (!a->evict->short_said) {
		char c[32];
		size_human(a->cfg->cache_size, c, sizeof(c));
		log_warn("agent", "waited %d s for room under the cache's %s: every piece that could go was read "
			 "this moment; bytes come past the bound until some grows cold", ROOM_WAIT_MS / 1000, c);
		a->evict->short_said = true;
	}
	return false;
}

/* The bound holds before bytes come, not after: when the cache would go past it, what can go goes
 * first (snapshots nobody uses, then cold pieces), and the writer waits for it. *why: the reason
 * (for the log). */
static bool must_wait(struct agent *a, int64_t bytes, int64_t over, const char **why)
{
	/* (not before the cache was measured once: the first sizing job runs at the first tick) */
	if (!a->evict->measured)
		return *why = "waits: the cache is not measured yet", true;
	if (over <= 0) {
		a->evict->short_since = 0;
		a->evict->short_said = false;
		return *why = "admitted: within the bound", false;
	}
	/* room on its way: the fill is poked once the files are gone (size_done, thin_done); and never a
	 * thinning job while the cache is measured: the walk would count its holes, and the estimate
	 * (what was measured, less what thinning freed since) would count them twice */
	if (a->evict->sizing || a->evict->evicting || a->evict->ndrop || a->evict->room_bytes)
		return *why = "waits: a sizing or thinning job makes room", true;
	/* Snapshots nobody uses go first, but not from here: the fill asking may be the one of a
	 * snapshot that goes (one the local endpoint or preheat fetches), and its caller still holds it.
	 * The next sizing job (at the next tick) chooses with these bytes counted, and pokes the fill. */
	if (uv_now(&a->loop) - a->evict->room_asked_ms >= 1000)
		for (size_t i = 0; i < a->nsnaps; i++)
			if (agent_snap_evictable(a, a->snaps[i])) {
				a->evict->room_bytes = bytes;
				a->evict->room_asked_ms = uv_now(&a->loop);
				agent_evict_now(a);
				return *why = "waits: snapshots nobody uses go", true;
			}
	/* twice what is missing, so that each run does not wait for a job of its own; never a piece read in
	 * the last PIECE_IDLE_S (touches are counted in whole seconds: with 1, a piece read a millisecond
	 * before the second turned was cold, and a reader that keeps a file in use lost its pieces) */
	if (thin_useful(a) && agent_evict_thin(a, over + bytes, PIECE_IDLE_S))
		return *why = "waits: cold pieces go", true;
	if (short_wait(a))
		return *why = "waits: pieces read a moment ago grow cold", true;
	return *why = "admitted PAST the bound: nothing can go", false;
}

/* Bytes admitted and not written yet: every fill's runs in flight and pieces waiting to be written. */
static int64_t pending(struct agent *a)
{
	int64_t n = 0;

	for (size_t i = 0; a->evict->l.pending && i < a->nsnaps; i++)
		n += a->evict->l.pending(a->snaps[i]);
	return n;
}

int64_t agent_evict_need(struct agent *a, int64_t bytes)
{
	/* (what libtorrent may write before the next tick is counted as taken: it counts only then, and a
	 * fill admitting the same room meanwhile would take it twice; so are what the runs admitted
	 * before, the fills' of every snapshot, still bring) */
	return agent_evict_use_now(a) + OWN_GROWTH + a->evict->lt_allowed + pending(a) + bytes;
}

static bool bound_wait(struct agent *a, int64_t bytes)
{
	int64_t use = agent_evict_use_now(a), due = pending(a);
	int64_t over = agent_evict_need(a, bytes) - a->cfg->cache_size;
	const char *why = "";
	bool wait = must_wait(a, bytes, over, &why);

	log_debug("agent", "room for %lld bytes: the cache holds about %lld of %lld (measured %lld%s, written %lld "
		  "and freed %lld since; %lld admitted to come, libtorrent's %lld taken): %s", (long long)bytes,
		  (long long)use, (long long)a->cfg->cache_size, (long long)a->evict->cache_used,
		  a->evict->sizing ? ", measuring" : "", (long long)(a->evict->written - a->evict->written_sized),
		  (long long)(a->evict->freed - a->evict->freed_sized), (long long)due, (long long)a->evict->lt_allowed,
		  why);
	return wait;
}

#define SWARM_ROOM ((int64_t)64 << 20) /* room is made for libtorrent once the bound has less than this
				      * left (a quarter of a bound smaller than 256 MiB) */

void agent_evict_swarm_allowed(struct agent *a, int64_t bytes)
{
	a->evict->lt_allowed = bytes > 0 ? bytes : 0;
}

int64_t agent_swarm_room(struct agent *a)
{
	int64_t left, want;

	if (a->cfg->cache_size <= 0)
		return -1;
	if (!a->evict->measured)
		return 0; /* the first sizing job runs at the first tick */
	left = a->cfg->cache_size - agent_evict_use_now(a) - OWN_GROWTH - pending(a); /* (the fills' runs admitted) */
	want = a->cfg->cache_size / 4 < SWARM_ROOM ? a->cfg->cache_size / 4 : SWARM_ROOM;
	if (left >= want)
		return left;
	/* short: room is made as for the fill, and libtorrent waits for it; with nothing that can go
	 * (bound_wait gives up), it goes on past the bound as the fill does */
	if (bound_wait(a, want))
		return left > 0 ? left : 0;
	return -1;
}

bool agent_room_wait(struct agent *a, int64_t bytes)
{
	int64_t disk = 0, avail;

	if (a->cfg->cache_size <= 0)
		return false; /* an unbounded cache evicts nothing: the write fails, as it always did */
	if (bound_wait(a, bytes))
		return true;
	bytes += pending(a); /* (on the disk too, what runs admitted before still bring) */
	avail = agent_disk_free(a, &disk);
	if (avail < 0 || bytes + margin(disk) <= avail)
		return false;
	/* cold pieces make room (a job of their own, never while the cache is measured); when none can go,
	 * the write goes on and fails */
	return a->evict->evicting || a->evict->sizing ||
	       (thin_useful(a) && agent_evict_thin(a, bytes + margin(disk) - avail + bytes, 1));
}
