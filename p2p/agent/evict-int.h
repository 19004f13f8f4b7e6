/*
 * evict-int.h - what the two files of the cache's eviction share (evict.c: the cache's size measured
 * and the jobs that make room, dropping snapshots and thinning cold pieces; evict-room.c: the room a
 * writer asks for, on the disk and under the bound, and whether it waits for it). Nothing outside
 * p2p/agent/ includes it, and nothing but those two files.
 */
#ifndef HM_P2P_AGENT_EVICT_INT_H
#define HM_P2P_AGENT_EVICT_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "agent-int.h"

/* Eviction's own state (struct agent points at it; no file outside evict*.c looks inside). */
struct agent_evict {
	bool sizing;                    /* a sizing job runs */
	bool deleting;                  /* ...and deletes dropped snapshots' files first */
	bool evicting;                  /* a job takes cold pieces out of the cache */
	/* The cache's use now, about: what the last sizing job measured, plus what was written into the
	 * cache since it began, less what thinning freed since. Counts that only grow, kept by whoever
	 * writes or frees (the fill as it writes or hands a piece over, libtorrent's downloads from the
	 * tick, a thinning job as it ends), so that no hand-over between the fill and libtorrent, no
	 * torrent added again and no tick that comes late makes bytes on disk count nowhere. */
	int64_t written, written_sized; /* bytes written into the cache: all, and when the last sizing began */
	int64_t freed, freed_sized;     /* bytes thinning freed: all, and when the last sizing began */
	int64_t written_walk, freed_walk; /* ...and when the one running began: the baseline of its result,
					 * taken when it ends (until then the estimate stays the last
					 * measurement and all written since, or a run admitted during a
					 * walk saw the cache as it was a walk ago: three shards whole) */
	int64_t lt_down;                /* libtorrent's payload downloaded at the last tick (-1: not yet) */
	int64_t lt_allowed;             /* bytes libtorrent may write itself before the next tick (banked and
					 * its rate): taken, for the fill, until that tick counts what it wrote */
	bool measured;                  /* a sizing job has measured the cache since the start */
	int64_t sized_at;               /* when the last one ended */
	size_t sized_nsnaps;            /* the table's size when it began (changed: measure) */
	int64_t cache_used;             /* bytes of disk the cache held then */
	char **drop;                    /* what dropped snapshots leave, deleted by the next sizing job */
	size_t ndrop;
	uint64_t drop_counter;          /* names of folders moved aside (agent_drop_files) */
	bool over_said;                 /* "over its size, nothing to drop" was logged */
	int64_t room_bytes;             /* a fill waits to write this much: the next sizing makes room */
	uint64_t room_asked_ms;         /* ...asked then (uv_now) */
	bool thin_idle;                 /* the last thinning job took nothing out (its pieces were read */
	uint64_t thin_ended_ms;         /* meanwhile, or shared): when it ended */
	uint64_t short_since;           /* a writer found no room and nothing that could go yet: since then
					 * (uv_now; 0: it has room, or room was made since) */
	uint64_t short_tick;            /* ...and the tick then (ticks: agent_evict_tick's count) */
	uint64_t ticks;
	bool short_said;                /* ...and waited ROOM_WAIT_MS for it, in vain (logged once) */
	uint64_t use_counter;           /* agent_snap_used's: the snapshots' use_seq */
	struct agent_evict_listener l;  /* the listener (agent_evict_listen: the fill's) */
};

#define PIECE_IDLE_S 2          /* a piece read (or asked for) this recently is in use: it stays; 1 s
				 * when the disk itself has no room left */

/* Can s go? Not while mounted, pinned, waiting to be linked, linked by a pull in the last minute
 * (--keep-pulled), or being checked or thinned on a worker. */
bool agent_snap_evictable(struct agent *a, const struct agent_snap *s);
/* The cache's use now, about: the last sizing's measure, plus what was written since, less what
 * thinning freed since. */
int64_t agent_evict_use_now(struct agent *a);
/* What the cache would hold with bytes more written (evict-room.c): its use now, the room kept for the
 * agent's own files, what libtorrent may write before the next tick and what the fills' runs admitted
 * still bring. A writer is admitted while it is within the bound; the sizing round that makes room
 * for one counts the same. */
int64_t agent_evict_need(struct agent *a, int64_t bytes);
/* Take cold pieces (none read in the last idle_s seconds) out of the snapshots that stay, about over
 * bytes, in a job on a worker. true: a job takes some out. */
bool agent_evict_thin(struct agent *a, int64_t over, int idle_s);

#endif
