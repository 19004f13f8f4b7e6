/*
 * agent-int.h - what the agent's files share (private to p2p/agent/).
 */
#ifndef HM_AGENT_INT_H
#define HM_AGENT_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>
#include <uv.h>

#include "agent.h"
#include "p2p/keep.h"

#define AGENT_TICK_MS 500 /* the agent's tick: status, the fill, the cache's bound (agent.c, on_tick) */

struct httpd;
struct httpd_req;
struct p2p_file_list;
struct p2p_mount;
struct p2p_session;

/* One mount point of a snapshot. */
struct agent_mount {
	char *dir;
	struct p2p_mount *m;
	json_t *name;                   /* the name it was mounted as (borrowed from s->names) */
	json_t *where;                  /* the hub caches it was linked into ({"hf_cache", ...}), owned */
};

/* A snapshot the agent holds: its torrent is in the session from the first mount (or the agent's
 * start, for one held before) until the agent ends. */
struct agent_snap {
	char btih[41];
	json_t *meta;                   /* the mirror's answer: spec fields, revision, commit, name, files */
	const char *spec;               /* borrowed from meta: "hf:org/name", "ms:datasets/o/n" */
	const char *revision, *commit, *name;
	/* Every name the snapshot was asked for, each its own entry of status with its own commit and
	 * hub cache links, sharing the torrent and the bytes: twins (an HF repo and its ModelScope copy
	 * with the same files have one torrent), and refs or commits with the same files. An array in
	 * meta ("names"), so a restart keeps them: {"spec", "revision", "commit", "asked" (the revision
	 * asked for, "" when none: what a plain mount gets offline), "taken_at", "synced_at"}. */
	json_t *names;
	json_t *links_done;             /* the pulls' links made: {"<id>": null or "why it failed"} */
	/* The files wanted (want.c): every one (want NULL), or those the array want names (meta's
	 * "want", so a restart keeps it): the union of what pulls with --include asked for and mounts
	 * prefetch. Only those are fetched in the background, verified, kept by sha256 and linked by
	 * pulls; "verified" means they are. A mount's reads and the local endpoint fetch what they read
	 * besides, piece by piece. */
	json_t *want;
	unsigned want_gen;              /* counts the times want grew */
	json_t *work_want;              /* the settle job's copy of want, and its want_gen */
	unsigned work_gen;
	unsigned damage_gen;            /* counts the times damage was found (agent_snap_damaged) */
	unsigned work_damage_gen;       /* ...when the settle job began */
	struct index_job *index_job;    /* keeping its contents by sha256 (check.c), or NULL */
	int damaged_seen;               /* p2p_torrent_status.damaged when last looked at */
	int pieces_seen;                /* pieces libtorrent had then (a drop: pieces lost in a recheck) */
	int64_t held_now, held_indexed; /* bytes libtorrent holds, and held when the last settle job began */
	int64_t unseen_now;             /* bytes the direct fill wrote that libtorrent does not count */
	uint64_t held_changed_ms;       /* uv_now when those last changed (a byte came) */
	bool evicting;                  /* a job takes cold pieces of it out of the cache (evict.c) */
	unsigned char *torrent;
	size_t tlen;
	struct p2p_known *known;        /* strings borrowed from meta */
	size_t nknown;
	char *save;                     /* <cache>/<btih> */
	struct agent_mount *mounts;
	size_t nmounts;
	/* mounts umount detached that still serve somebody: files open in them, or a copy of the mount
	 * in another mount namespace (a container started meanwhile); the tick frees each once it ends.
	 * The snapshot is kept (not evicted) while any is left. */
	struct p2p_mount **lingering;
	size_t nlingering;
	bool finished;                  /* libtorrent has every piece */
	bool verified;                  /* and every file's bytes are verified in the cache's files */
	bool indexed;                   /* contents kept by sha256 (or given up) */
	bool settling;                  /* a settle job (verifying its files) runs on the thread pool */
	bool swarming;                  /* libtorrent fetches pieces for it (not the direct fill): the tick
					 * gives it its share of the cache's room (swarm_room) */
	uint64_t settle_after;          /* uv_now before which no settle job starts (one just failed) */
	bool torrent_saved;             /* its torrent is in <cache>/agent/ (agent_snap_remember) */
	bool unchecked;                 /* taken back whole at a restart (seed mode), its files not read
					 * back since: a pull verifies them before it links (agent_snap_check) */
	int index_tries;
	int64_t scrubbed_at;            /* unix time the scrub last read it back whole (0: not yet) */
	int64_t scrub_damaged;          /* pieces the scrub found damaged in it since the agent started */
	bool pinned;                    /* never evicted (pull --pin) */
	uint64_t linked_ms;             /* uv_now when a pull last linked it (not evicted in the minute after) */
	int64_t last_used;              /* unix time of the last mount, umount or pull (agent_snap_used) */
	uint64_t use_seq;               /* the agent's use counter then: eviction order within a second;
					 * 0 for one taken back after a restart and not used since */
	json_t *pending_links;          /* hub caches to link the cache's files into once verified (pull):
					 * an array of {"hf_cache", "ms_cache", "ms_hub_cache", "name", "id"};
					 * each one's outcome goes to links_done under its id */
	uv_work_t work;
	bool work_verified;             /* the job's result, applied on the loop */
	/* The mirror's web seed is the source of last resort: a snapshot starts with peers only (the
	 * mirror's own BitTorrent seed among them), and the torrent's web seeds join when it has no
	 * other peer 1 s after it was added (a lone instance), or when it gets no byte for 3 s. */
	char **web_seeds;               /* (from meta's "sources": the mirrors told about now, see
					 * agent_sources; trackers likewise) */
	size_t nweb;
	char **trackers;
	size_t ntrackers;
	bool web_on;
	uint64_t added_ms;              /* uv_now when it was added */
	uint64_t replied_ms;            /* uv_now when the tracker's first answer was seen (0: not yet) */
	/* A lone instance takes pieces over HTTP ranges from the web seed (fill.c) */
	struct fill *fill;
	bool fill_tried;
	int64_t fill_bytes;             /* piece bytes the fill handed to libtorrent */
	int64_t last_done;              /* bytes had at the last tick, and how many ticks it stayed so */
	int still_ticks;
	/* the rate bytes come at now (status's "rate": over the last ticks, not since the start) and why
	 * none come (status's "waiting", "" when they do): agent.c's pace, from the tick */
	uint64_t pace_at[6];
	int64_t pace_have[6];
	unsigned pace_n;
	int64_t rate;
	char waiting[256];
	int64_t waiting_since;          /* unix time none came since (0: they come) */
	bool room_short;                /* libtorrent may bring nothing now: the bound has no room left for
					 * it and room is being made (swarm_room, from the tick) */
	int64_t last_error_at;          /* errors are logged once a minute at most; the others counted */
	int errors_unsaid;
	uint64_t retried_ms;            /* uv_now of the last p2p_session_retry after an error */
};

struct agent {
	const struct agent_config *cfg;
	uv_loop_t loop;
	struct p2p_session *ses;
	struct httpd *ctl;
	struct httpd *http;             /* the local hub endpoint, or NULL */
	char *http_listen;              /* owned: its HOST:PORT as given (--http, or POST /v1/http later) */
	uv_async_t wake;
	uv_async_t want_wake;           /* a mount's read or the endpoint waits for a piece: the fills look */
	uv_timer_t tick;
	uv_signal_t sigterm, sigint, sighup;
	struct agent_snap **snaps;
	size_t nsnaps;
	bool stopping;
	int lock_fd;                    /* <cache>/agent/lock, held while the agent runs */
	dev_t sock_dev;                 /* the control socket this agent made (removed at exit only */
	ino_t sock_ino;                 /* while it is still that one) */
	atomic_bool quit;               /* stopping, for worker threads: a body waiting for its first
					 * bytes gives up, so the loop (which waits for its jobs) can end */
	int64_t started_at;
	bool oci_checking;              /* a streamed tar layer's digest is being checked (endpoint-tar.c) */
	uint64_t link_counter;          /* the pulls' link ids */
	/* every pull's outcome by its link id (null: linked; a string: why not), the last 1024: a pull
	 * learns it even when its snapshot was evicted right after its link (status's "links") */
	json_t *links_done;
	struct agent_evict *evict;      /* the cache's size and eviction: evict.c's, owned */
	struct agent_fills *fills;      /* the fills' shared state: fill.c's, owned */
	/* <cache>/agent/ files written and not fsynced yet, and whether a job fsyncs some: snaps.c's
	 * (agent_snap_remember, agent_snaps_sync), no other file looks inside */
	struct agent_unsynced {
		char **path;
		size_t n;
		bool syncing;
	} unsynced;
	struct agent_preheat *preheat;  /* preheat.c's, owned */
	struct agent_scrub *scrub;      /* scrub.c's, owned */
};

/* The control API's handler (control.c). */
int agent_control(void *ud, struct httpd_req *req);
/* What GET /v1/status answers (control-status.c), owned by the caller. */
json_t *agent_status_json(struct agent *a);

/* Remove s from the session and the table (the caller frees it with agent_snap_free; its files
 * stay). Only for a snapshot with no mount and no job running. */
void agent_snap_forget(struct agent *a, struct agent_snap *s);
void agent_snap_free(struct agent_snap *s);

/* The cache's size: from the tick, measure it (on a worker) when due and evict past the limit;
 * agent_evict_now makes the next tick measure. */
void agent_evict_tick(struct agent *a);
/* Eviction's state is its own (agent_evict_new; agent_evict_free once the loop's jobs are done).
 * agent_evict_recall: what an earlier run dropped and did not delete goes with the first sizing.
 * agent_cache_used: the bytes of disk the cache held at the last sizing (status). */
struct agent_evict *agent_evict_new(void);
/* Eviction and the fill meet here, not in each other's internals: neither calls the other's
 * functions; agent.c joins them at start. Eviction's listener (one; the fill's, agent_fill_new gives
 * it): thinned is called for each snapshot some of whose pieces (v, n of them; those with size 0
 * stayed) a thinning job took out of the cache, room once that job is done (a writer waiting for room
 * goes on); unseen tells the bytes of s written to the cache that libtorrent does not count yet (the
 * direct fill's), which agent_snap_need counts as held. Any of them may be NULL. The other way, the
 * fill asks for room through an agent_room_wait_fn (agent_room_wait, given to agent_fill_new), and
 * says what it wrote through an agent_wrote_fn (agent_evict_wrote, the same way). */
struct p2p_cold;
struct agent_evict_listener {
	void (*thinned)(void *ud, struct agent_snap *s, const struct p2p_cold *v, size_t n);
	void (*room)(void *ud);
	int64_t (*unseen)(const struct agent_snap *s);
	int64_t (*pending)(const struct agent_snap *s); /* bytes admitted, not written yet (agent_fill_pending) */
	void *ud;
};
void agent_evict_listen(struct agent *a, const struct agent_evict_listener *l);
void agent_evict_free(struct agent_evict **e);
void agent_evict_recall(struct agent *a);
int64_t agent_cache_used(const struct agent *a);
/* The direct fill is about to write bytes more (a run's; what the runs admitted before still bring is
 * counted too: the listener's pending): when the cache has a bound and those bytes would take
 * it past the bound, or its disk lacks the room, room is made first: snapshots nobody uses go (chosen
 * by the next sizing job, never from inside the call: the fill's own snapshot may be one), then cold
 * pieces (true: wait, the fill is poked when they are gone); false: write (there is room, or nothing
 * can go: past the bound the cache is over it, on a full disk the write fails). */
typedef bool agent_room_wait_fn(struct agent *a, int64_t bytes);
bool agent_room_wait(struct agent *a, int64_t bytes);
/* What libtorrent may bring from peers and web seeds (it writes those pieces itself) a second, all
 * snapshots together, from the tick: the room left under the bound (its share to each snapshot that
 * fetches from the swarm: p2p_session_set_room); when that is short, room is made as for the fill
 * (and 0 meanwhile); -1: no limit (no bound, or nothing can go). */
int64_t agent_swarm_room(struct agent *a);
/* The bytes libtorrent may write itself before the next tick (what it may have banked and a second of
 * the rate swarm_room gave it at this tick): eviction counts them as taken until that tick, when what
 * it wrote is counted. */
void agent_evict_swarm_allowed(struct agent *a, int64_t bytes);
/* What libtorrent wrote into the cache since the last tick (its downloads): from the tick, before
 * agent_evict_tick. The fill says what it writes itself (agent_evict_wrote) as it writes it. */
void agent_evict_count(struct agent *a);
void agent_evict_wrote(struct agent *a, int64_t bytes);
void agent_evict_now(struct agent *a);
/* Eviction's choice, pure (no agent, no I/O; tests/unit/test-p2p-agent-policy.c): of n snapshots, each
 * holding `held` bytes, last used at use_seq (the agent's use counter; 0: not since the start, older
 * than any counted) then last_used (unix time), busy ones never (mounted, pinned, linking, checked or
 * thinned), which go, least recently used first, until used is at most limit. Writes their indices
 * to pick (room for n) in that order and what is left to *used_after; returns how many. */
struct agent_evict_cand {
	int64_t held;
	int64_t last_used;
	uint64_t use_seq;
	bool busy;
};
size_t agent_evict_pick(const struct agent_evict_cand *c, size_t n, int64_t used, int64_t limit, size_t *pick,
			int64_t *used_after);
/* Room on the cache's disk (evict-room.c). agent_disk_free: bytes free (and the disk's size), or -1.
 * agent_snap_need: what a snapshot the mirror described (meta) would still add: its files (those of
 * the paths want names, or all), less the contents held already (by-sha256) or, for one held, what
 * it has of them; *total their size. agent_room_for:
 * do need bytes fit, with a margin? agent_room_refusal: NULL when they do, else why not and what to
 * do (malloc'd). */
int64_t agent_disk_free(const struct agent *a, int64_t *disk_size);
int64_t agent_snap_need(struct agent *a, json_t *meta, json_t *want, int64_t *total);
bool agent_room_for(const struct agent *a, int64_t need);
char *agent_room_refusal(const struct agent *a, const char *spec, int64_t need, int64_t total);
/* A snapshot dropped from the cache: its torrent and description go, and its folder moves to
 * <cache>/.dropped/ at once, to be deleted by the next sizing job (never under a snapshot taken again
 * meanwhile). From the loop. */
void agent_drop_files(struct agent *a, const char *btih);

/* The HTTP fill (fill.c): from the tick and after adding s, with its status: start, pause or go on
 * fetching pieces over HTTP while s is alone in its swarm. agent_fill_running: a fill fetches (or may
 * when alone). agent_fill_stop: drop s's fill (before s is dropped). agent_fill_end: the agent stops:
 * cancel every request; the layer goes once they are done. */
struct p2p_torrent_status;
void agent_fill_update(struct agent *a, struct agent_snap *s, const struct p2p_torrent_status *st);
bool agent_fill_running(const struct agent_snap *s);
/* s's fill asks the mirror and gets nothing (every request since the last good one failed): true with
 * how long (ms, by uv_now now) and the last failure's words (borrowed). */
bool agent_fill_failing(const struct agent_snap *s, uint64_t now, int64_t *for_ms, const char **why);
/* s's fill waits for room in the cache before its next run (agent_room_wait said wait): true with how
 * long (ms, by uv_now now). */
bool agent_fill_room_waiting(const struct agent_snap *s, uint64_t now, int64_t *for_ms);
/* s waits for room in the cache now (its fill, or libtorrent's room when more is wanted from the
 * swarm): s->waiting says so (true); else a wait for room it said is cleared (false). From the tick,
 * and from status (the moment it is asked). */
bool agent_snap_room_words(struct agent *a, struct agent_snap *s, bool more);
/* Why s's pieces can come from nowhere, or NULL: alone in its swarm, every mirror it asks answered
 * its ranges FILL_FAILS times in a row with the whole file (a 200: it, or a proxy in front of it,
 * ignores Range; such answers are dropped). status says it as the snapshot's error, and a pull ends
 * with it; a mirror that answers a range again clears it. (Static words.) */
const char *agent_fill_broken(const struct agent_snap *s);
/* The reason s's pieces failed is gone (a full disk has room): its fill asks again for every piece. */
void agent_fill_again(struct agent_snap *s);
/* s's web seeds changed (its mirrors moved, agent_snap_add): its fill asks the new ones from now on. */
void agent_fill_sources(struct agent *a, struct agent_snap *s);
/* s's fill writes its pieces itself (direct mode: libtorrent in upload mode on purpose). */
bool agent_fill_direct(const struct agent_snap *s);
/* ...and has written every piece s wants (libtorrent learns of them when direct mode ends). */
bool agent_fill_direct_done(const struct agent_snap *s);
/* A reader waits for a piece: look at the fills now (p2p_session_set_want_notify). */
void agent_fill_poke(struct agent *a);
/* File bytes the fill wrote that libtorrent does not count yet (direct mode): for status. */
int64_t agent_fill_unseen(const struct agent_snap *s);
/* Bytes of s's fill admitted under the cache's bound and not written yet (its runs in flight, the
 * pieces waiting to be written): taken, for eviction, until written. */
int64_t agent_fill_pending(const struct agent_snap *s);
void agent_fill_stop(struct agent *a, struct agent_snap *s);
/* The fills' shared state (their HTTP layer, a timer): made at start by agent_fill_new, which takes
 * how a direct fill asks for room on the cache's disk (room_wait), how it says what it wrote into the
 * cache (wrote: agent_evict_wrote), and writes to *l its side of
 * eviction's listener (for agent_evict_listen); agent_fill_end closes them as the agent stops
 * (NULL-safe), agent_fill_free frees them once the loop has run its last callbacks. */
typedef void agent_wrote_fn(struct agent *a, int64_t bytes);
void agent_fill_new(struct agent *a, agent_room_wait_fn *room_wait, agent_wrote_fn *wrote,
		    struct agent_evict_listener *l);
void agent_fill_end(struct agent *a);
void agent_fill_free(struct agent *a);
void agent_fill_soon(struct agent *a);

/* The background scrub (scrub.c): from the tick, read back and hash the verified snapshots at
 * agent --scrub-rate, a pass every --scrub-every; damage is fetched again (agent_snap_damaged). Its
 * state is its own (agent_scrub_new; agent_scrub_free once the loop's jobs are done);
 * agent_scrub_status: what it did, for status (a new object). */
struct agent_scrub *agent_scrub_new(void);
void agent_scrub_free(struct agent_scrub **c);
void agent_scrub_tick(struct agent *a);
int agent_scrub_every_s(const struct agent *a);
json_t *agent_scrub_status(const struct agent *a);

/* agent --preheat: from the tick, when due, fetch what the mirror marks to preheat (preheat.c). Its
 * state is its own (agent_preheat_new; agent_preheat_free once the loop's jobs are done). */
struct agent_preheat *agent_preheat_new(void);
void agent_preheat_free(struct agent_preheat **p);
void agent_preheat_tick(struct agent *a);

/* Ask the mirrors (a comma list, in turn; with token, may be NULL) for spec's snapshot: the
 * description (commit, ref, name, files with sha256; *meta, a new reference) and the torrent of that
 * commit (*tor, malloc'd; a guarded repo's carries the capability its swarm needs in its URLs).
 * Blocking (mirror.c): from a worker only. 0, or an HTTP status for the client with *errmsg
 * (malloc'd). */
struct hub_spec;
int agent_fetch_snapshot(struct agent *a, const char *mirrors, const char *token, const struct hub_spec *spec,
			 json_t **meta, char **tor, size_t *tlen, char **errmsg);
/* Where a snapshot's swarm is: {"trackers": [...], "web_seeds": [...]} (meta's "sources"), from had's
 * (those of an earlier run; NULL: the torrent's own, tor) put on the mirrors an agent is told about
 * now (mirrors, a comma list; answered: the one that gave the torrent, or NULL), see
 * agent_sources_rebase. A new reference. */
json_t *agent_sources(const char *mirrors, const char *answered, const char *tor, size_t tlen, json_t *had);
/* Pure (tests/unit/test-p2p-agent-policy.c): urls (strings; the first is the mirror's own, the others
 * its peer mirrors) moved onto the mirrors (a comma list; answered first when not NULL): each of
 * them with what follows marker ("/announce", "/p2p/") in the first URL, then the peer mirrors' URLs
 * as they were; the first URL's base itself only when it is one of them. A new array. */
json_t *agent_sources_rebase(const char *mirrors, const char *answered, json_t *urls, const char *marker);
/* Does arr hold the string str? */
bool agent_json_has(json_t *arr, const char *str);
/* How long a mirror may send nothing before the next one is asked (--mirror-timeout; 20 s). */
long agent_mirror_stall_s(const struct agent *a);
/* The handler of the local hub endpoint (endpoint.c). */
int agent_endpoint(void *ud, struct httpd_req *req);
/* Xet through the endpoint (xet.c). agent_xet_rewrite: a reconstruction the mirror answered (JSON,
 * *answer replaced) for a request with Range range (may be NULL): each fetch URL gets at=, where its
 * bytes start in the file. agent_xet_is_xorb: is path a fetch URL's? agent_xet_xorb answers one
 * (from the loop): the mirror checks its capability, the bytes come from the cache's verified file. */
void agent_xet_rewrite(const char *range, char **answer, size_t *alen);
bool agent_xet_is_xorb(const char *path);
void agent_xet_xorb(struct agent *a, struct httpd_req *r);

/* ---- the endpoint as the node's registry mirror (oci.c; docs/agent.md, "The registry mirror") ---- */

/* What a path names: a manifest (/v2/NAME/manifests/REF) or a blob (/v2/NAME/blobs/DIGEST), with
 * *name and *ref (malloc'd), or AGENT_OCI_NONE (nothing written). */
enum agent_oci_kind { AGENT_OCI_NONE, AGENT_OCI_MANIFEST, AGENT_OCI_BLOB };
enum agent_oci_kind agent_oci_path(const char *path, char **name, char **ref);
/* A layer of a manifest the endpoint passed: a file of a snapshot. */
struct agent_oci_layer {
	char *spec;                     /* "hf:org/name@commit" */
	char *path;                     /* the file's path in it */
	bool tar;                       /* a tar layer (else the file's raw bytes) */
	unsigned char *header;          /* a tar layer's header, once checked (else NULL) */
	size_t header_len;
	int64_t checked_size;           /* the file's size the header was checked with, -1 none */
};
/* A manifest the mirror answered name's ref with (body): its sha256 must be digest (the mirror's
 * Docker-Content-Digest) and ref when ref is a digest, else -1 with *why (static). Its layers are
 * remembered, of the snapshot of repo (the mirror's X-Hubmirror-Repo; NULL: from the name) at commit
 * (X-Repo-Commit; NULL: the manifest's revision annotation). Blocking: from a worker. */
int agent_oci_manifest(struct agent *a, const char *name, const char *ref, const char *digest, const char *commit,
		       const char *repo, const char *body, size_t len, const char **why);
/* The layer digest of name, remembered from a manifest: 0 and *l (agent_oci_layer_release), or
 * HM_ERR_NOT_FOUND. Blocking. */
int agent_oci_layer_find(struct agent *a, const char *name, const char *digest, struct agent_oci_layer *l);
void agent_oci_layer_release(struct agent_oci_layer *l);
/* A tar layer: l's header (made by hub/oci.c when l has none checked for size) with the size bytes of
 * file (verified in the cache) and the tail is digest: 0 (remembered with the header: not read again
 * next time), or -1 with *why (static). Reads the whole file: from a worker. */
int agent_oci_tar_check(struct agent *a, const char *name, const char *digest, struct agent_oci_layer *l,
			const char *file, int64_t size, const char **why);

/* ---- the cache's layout on disk (layout.c): every path of it is built there ----
 *   <cache>/<btih>/                      a snapshot's files (libtorrent's save path)
 *   <cache>/by-sha256/<sha256>           contents kept by sha256 (hard links, p2p/keep.h)
 *   <cache>/agent/<btih>.torrent, .json  a snapshot's torrent and description (snaps.c)
 *   <cache>/agent/lock                   held by the one agent of this cache
 *   <cache>/agent/http/<key>             answers the local endpoint keeps for when the mirror is away
 *   <cache>/agent/oci/<key>              the layers of the manifests the endpoint passed (oci.c)
 *   <cache>/.dropped/                    dropped snapshots' files, deleted by the next sizing job
 * Each returns a malloc'd path; agent_path_http with key NULL is the folder. */
#define AGENT_KEPT_DIR "by-sha256"
char *agent_path_snap(const struct agent *a, const char *btih);
char *agent_path_kept(const struct agent *a, const char *sha256);
char *agent_path_state(const struct agent *a);
char *agent_path_torrent(const struct agent *a, const char *btih);
char *agent_path_desc(const struct agent *a, const char *btih);
char *agent_path_lock(const struct agent *a);
char *agent_path_http(const struct agent *a, const char *key);
char *agent_path_oci(const struct agent *a, const char *key);
char *agent_path_trash(const struct agent *a);

/* ---- the snapshot table (snaps.c): below the loop, control, eviction and preheat (it calls none
 * of them) ---- */

/* Write s's torrent (once) and description (meta) to <cache>/agent/ (a restart takes it back from
 * them): in place at once, a killed agent's successor finds them; made durable against a crash of
 * the machine by a job on a worker a moment later, never on the loop. agent_snaps_sync: what no job
 * made durable yet, now (the agent's end). */
void agent_snap_remember(struct agent *a, struct agent_snap *s);
void agent_snaps_sync(struct agent *a);
/* Take back the snapshots an earlier run held (their bytes are in the cache); at start. */
void agent_snaps_recall(struct agent *a);

/* The snapshot with this btih, or NULL. */
struct agent_snap *agent_snap_find(struct agent *a, const char *btih);
/* Take a snapshot the mirror described (meta, consumed: its "spec" says which was asked for) with
 * its torrent (copied): place the contents the cache holds, add it to the session, and remember it on
 * disk. asked: the revision asked for (NULL or "" for none). want: the paths to fetch (an array,
 * borrowed), or NULL for every file; for a snapshot held already they are wanted besides what it
 * wants. Returns the snapshot (an existing one if the agent has its torrent already: the name is
 * added to it) with *name (borrowed from s->names), or NULL with *errmsg. */
struct agent_snap *agent_snap_add(struct agent *a, json_t *meta, const unsigned char *torrent, size_t tlen,
			    const char *asked, json_t *want, json_t **name, char **errmsg);
/* Link the files of s (found under dir) as name (one of s->names) into the hub caches where names
 * ({"hf_cache", "ms_cache", "ms_hub_cache"}, each optional; only those of the name's hub are used):
 * every file (a mount's folder), or with wanted_only those s wants (a pull: what the cache holds).
 * 0, or an error and *errmsg (malloc'd). */
int agent_snap_link(struct agent *a, const struct agent_snap *s, json_t *name, json_t *where, const char *dir,
		    bool wanted_only, char **errmsg);

/* The hub cache links made into s's own files: agent_snap_linked records where (remembered in meta,
 * "hub_links"); agent_snap_unlink_hubs takes every recorded one into s->save away (s leaves the
 * cache: evicted, dropped), returning how many. agent_hub_unlink: the links of name (spec, revision,
 * commit) in the caches where names ({"hf_cache", "ms_cache", "ms_hub_cache"}) that point into
 * target (and the folders that leaves empty), how many. */
void agent_snap_linked(struct agent *a, struct agent_snap *s, json_t *name, json_t *where);
size_t agent_snap_unlink_hubs(struct agent_snap *s);
size_t agent_hub_unlink(json_t *name, json_t *where, const char *target);

/* ---- which files (want.c) ---- */

/* The paths of meta's files a pull takes with these --include and --exclude patterns (arrays of
 * strings; NULL or empty for none): a new array, or NULL when neither is given (every file). */
json_t *agent_select(json_t *meta, json_t *include, json_t *exclude);
/* The paths a mount fetches in the background: prefetch NULL (the default: metadata, see
 * hub_is_metadata), "all" (NULL: every file), "none" (an empty array), or an array of patterns
 * (matching files and the metadata). A new array, or NULL for every file. */
json_t *agent_prefetch(json_t *meta, json_t *prefetch);
/* s wants the paths of want too (NULL: every file): libtorrent fetches their pieces from now on, and
 * s is verified again once they are in. Remembered on disk. */
void agent_snap_want(struct agent *a, struct agent_snap *s, json_t *want);
/* After a mount with the default prefetch (or patterns): the shards that the snapshot's safetensors
 * indexes name join what s wants once the indexes are read, when they fit in the cache (weights.c). */
void agent_weights_prefetch(struct agent *a, struct agent_snap *s);
/* The file indices of l whose paths want names (every one for want NULL), in l's order: *n of them,
 * malloc'd. */
int *agent_want_indices(const struct p2p_file_list *l, json_t *want, size_t *n);
/* Are the wanted files of s (want: a copy of s->want, or NULL for all) every byte verified in the
 * cache (p2p_session_have_range)? Blocking: from a worker. */
bool agent_verify_wanted(struct agent *a, const char *btih, json_t *want);
/* The contents s knows by sha256 (s->known) of the files it wants: *n of them, malloc'd (strings
 * borrowed from s->meta); and in *others (*nothers, malloc'd, NULL for none) those of the files it
 * does not want that libtorrent has whole (read through a mount). */
struct p2p_known *agent_wanted_known(struct agent *a, const struct agent_snap *s, size_t *n, struct p2p_known **others,
				     size_t *nothers);
/* The name of s whose commit is commit, or NULL. */
json_t *agent_snap_name_by_commit(const struct agent_snap *s, const char *commit);
/* The newest name held of spec (canonical) at revision (a ref, a commit, or NULL: the one a plain
 * request gets), and its snapshot; NULL when none. */
json_t *agent_held(struct agent *a, const char *spec, const char *revision, struct agent_snap **s);

/* s was whole, and pieces of it were found damaged in the cache: it is neither finished nor verified
 * until they are fetched again (a restart meanwhile does not take it back whole). */
void agent_snap_damaged(struct agent *a, struct agent_snap *s);

/* ---- a finished snapshot's check (check.c) ---- */

/* From the loop's tick, for each snapshot: once finished, its wanted files verified (a settle job),
 * then linked and shortcut; once verified and quiet, its contents kept by sha256 (an index job). */
void agent_check_tick(struct agent *a, struct agent_snap *s);
/* The calling thread (a worker of libuv's pool) on CPU and disk time nobody else wants (SCHED_IDLE and
 * the idle I/O class), or back to normal; a job puts it back before it ends (the pool is shared). */
void agent_thread_idle(bool idle);
/* A pull of s is about to link it: one taken back whole at a restart is verified first. */
void agent_snap_check(struct agent *a, struct agent_snap *s);
/* Once s is verified: make the links pulls asked for (pending_links), to the cache's own files. */
void agent_link_pending(struct agent *a, struct agent_snap *s);
/* Every piece of a verified snapshot that wants some files is in (a mount read the rest): remembered,
 * so that a restart takes it back whole, in seed mode, not only the files it wants. */
void agent_snap_whole(struct agent *a, struct agent_snap *s, const struct p2p_torrent_status *st);

/* ---- mounts (mounts.c) ---- */

/* Once s is verified: its mounts serve its wanted files straight from the cache (read-only bind
 * mounts, p2p_mount_shortcut), as root. */
void agent_shortcuts(struct agent *a, struct agent_snap *s);
/* s's cache bytes were found damaged: its mounts serve everything through FUSE again. */
void agent_shortcuts_drop(struct agent *a, struct agent_snap *s);

/* Detach mount k of s (lazily: it never waits for the mount's users) and drop it from s->mounts; a
 * mount still in use elsewhere lingers until its users let go. 0 with *in_use set, or -errno with
 * *errmsg (malloc'd; the mount then stays). The hub cache links it made go with it: to the cache's
 * verified files (*relinked of them), or away (*unlinked); either may be NULL. */
int agent_mount_detach(struct agent *a, struct agent_snap *s, size_t k, bool *in_use, size_t *relinked,
		       size_t *unlinked, char **errmsg);
/* Drop mount k of s from s->mounts (one already detached: from outside, or at the agent's end), its
 * hub cache links as agent_mount_detach says. */
void agent_mount_forget(struct agent *a, struct agent_snap *s, size_t k, size_t *relinked, size_t *unlinked);

/* End: unmount everything (lazily), close the control socket; the loop then ends. Not from inside a
 * control handler (it frees the server): there, agent_stop_soon (once the answer is out). */
void agent_stop(struct agent *a);
void agent_stop_soon(struct agent *a);
/* Start the local hub endpoint on listen (HOST:PORT), at start (--http) or later (POST /v1/http). 0,
 * or a libuv error with *errmsg. */
int agent_http_start(struct agent *a, const char *listen, char **errmsg);

/* The i-th base URL of a comma-separated list of mirrors (trimmed; malloc'd), NULL past the end. */
char *agent_mirror_at(const char *list, size_t i);
/* Tell each tracker the agent is gone (p2p_session_goodbyes: libtorrent does not for every torrent),
 * after the session ended; blocking, 5 s at most. */
struct p2p_goodbye;
void agent_say_goodbyes(const struct p2p_goodbye *g, size_t n, int port);

/* After a write error (a full disk): once the cache's disk has room for what s still lacks, clear
 * the error and go on (at most every 5 s; from the tick, and at a new mount or pull of s). */
struct p2p_torrent_status;
void agent_snap_retry(struct agent *a, struct agent_snap *s, const struct p2p_torrent_status *st);

/* s was mounted, unmounted, pulled or read through the endpoint now: the last to go. */
void agent_snap_used(struct agent *a, struct agent_snap *s);

#endif
