/*
 * p2p.h - the swarm: a plain C view of libtorrent-rasterbar.
 *
 * Everything libtorrent is behind this header; no C++ type crosses it, and every function catches
 * exceptions and turns them into error codes (docs/CODING.md). The implementation is the shim,
 * p2p/shim*.cpp, the only C++ in the project.
 */
#ifndef HM_P2P_H
#define HM_P2P_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct p2p_session;

struct p2p_session_config {
	/* libtorrent listen_interfaces, e.g. "127.0.0.1:0" (port 0: any free port). Borrowed. */
	const char *listen_interfaces;
	/* Local service discovery (BEP 14). DHT, UPnP and NAT-PMP are always off inside a data center. */
	bool enable_lsd;
	/* Upload cap in bytes/s for peers on the local network (private ranges and loopback: libtorrent's
	 * local peer class, which ignores the global limits and unchoke slots). 0: unlimited. */
	int64_t local_upload_limit;
	/* Settings for a fast LAN: the buffers of libtorrent's high_performance_seed preset (send buffer
	 * watermarks, queued disk bytes, request queues, connection limits), uTP off (TCP only), and
	 * active-torrent limits raised so that hundreds of seeds stay active and announced. false: libtorrent's
	 * defaults for those. Give it to every node of a swarm: a peer with default settings dials uTP
	 * first and, refused, falls back to TCP only after a timeout (measured: 4 s more to connect). */
	bool lan_tuning;
	/* The mirror's own seed: its peer ids start with P2P_ORIGIN_PEER_ID, so agents can tell it from
	 * their peers (p2p_add.origin_last). */
	bool origin;
};

/* The start of the peer id of a mirror's seed (p2p_session_config.origin). */
#define P2P_ORIGIN_PEER_ID "-HM"


struct p2p_session_status {
	int listen_port;   /* TCP port the session listens on */
	bool dht;          /* settings as libtorrent reports them back */
	bool upnp;
	bool natpmp;
	bool lsd;
	bool multiple_connections_per_ip;
};

/*
 * Start a session and wait until it listens (at most a few seconds). cfg may be NULL (all defaults; a
 * zeroed config is the same). On success *out is the new session, owned by the caller
 * (p2p_session_free). On failure returns HM_ERR_TORRENT (-EINVAL for a negative local_upload_limit)
 * and, if errmsg is not NULL, sets *errmsg to a malloc'd message the caller frees; *out is untouched.
 */
int p2p_session_new(const struct p2p_session_config *cfg, struct p2p_session **out, char **errmsg);

/* Read back the settings in force and the listen port. Returns 0 or HM_ERR_TORRENT. */
int p2p_session_status(struct p2p_session *s, struct p2p_session_status *out);

/* Stop the session (aborts its network activity) and free it. Accepts NULL and *s == NULL. The wakeup
 * function (p2p_session_set_wakeup) is unregistered first and is never called once this has begun, so
 * free the session before closing the uv_async_t it signals. Blocks until libtorrent's threads end. */
void p2p_session_free(struct p2p_session **s);

/*
 * Torrents in a session. Every torrent is keyed by its v1 info-hash in lowercase hex (the "btih",
 * 40 characters; upper case is accepted too). The functions below may be called from any one thread at
 * a time or from several (the session's own table is locked); p2p_session_drain belongs to one thread,
 * the event loop's. Most of them wait for libtorrent's network thread to answer, which takes
 * microseconds unless a torrent is huge.
 */

struct p2p_add {
	const unsigned char *torrent;   /* a bencoded .torrent, borrowed for the call */
	size_t len;
	const char *save_path;          /* the folder that holds the torrent's root folder; borrowed */
	/* The files are complete: no check at add, each piece is verified on its first request. If one
	 * fails, libtorrent (2.0.8) drops its peers, leaves seed mode, rechecks every file and carries on
	 * as a downloader missing the bad pieces, with no error: only the status (seeding and seed_mode
	 * false, pieces_have < num_pieces) tells. */
	bool seed_mode;
	/* BEP 16 super-seeding (for an origin seed): each peer is offered pieces no other peer has yet,
	 * one at a time, so the seed sends about one copy and the peers spread the rest. Only for a
	 * torrent the session has whole. */
	bool super_seed;
	/* Never download: libtorrent's upload mode. For a seed whose files are not its own to write (the
	 * mirror's are symlinks to its store): if a piece fails its check in seed mode, the torrent leaves
	 * seed mode but does not fetch the piece and write it through the link. */
	bool upload_only;
	/* Leave out the web seeds the torrent itself names (its url-list): peers only, until the caller
	 * adds them (p2p_session_add again with web_seeds; p2p_torrent_web_seeds lists them). */
	bool no_url_list;
	/* Take nothing from the mirror's seed (a peer whose id starts with P2P_ORIGIN_PEER_ID) over
	 * BitTorrent: it counts as a peer that has no piece, so what only the mirror has is left to the
	 * caller (the agent fetches it over HTTP: p2p_session_add_piece) and peers share the rest. */
	bool origin_last;
	const char *const *web_seeds;   /* extra BEP 19 URLs (added to the torrent's url-list); may be NULL */
	size_t nweb_seeds;
	/* The trackers to announce to instead of the torrent's own (its announce-list), each a tier of its
	 * own, in this order; NULL: the torrent's. Not part of the info-hash: a mirror that moved, or the
	 * mirrors the caller knows of now, take the place of those the torrent was made with. */
	const char *const *trackers;
	size_t ntrackers;
	/* Which pieces to fetch. select false: all of them. select true: only the pieces of the files
	 * want[0..nwant) names (libtorrent file indices, as p2p_torrent_files lists them; none when nwant
	 * is 0), until p2p_session_want_files or p2p_session_want_range asks for more. Piece priorities
	 * only: libtorrent writes the bytes of a file at file priority 0 into a part file, not into the
	 * file reads open. In hubmirror's torrents every file starts on a piece, so a piece is one file's. */
	bool select;
	const int *want;
	size_t nwant;
	/* Pieces the files hold already, verified before (by this process, or one before it): have[i] for
	 * piece i, nhave the torrent's piece count (else HM_ERR_USAGE). libtorrent takes them as had
	 * without reading them (its resume data), and p2p_session_have_range reads each one back from the
	 * file and hashes it before it admits it. NULL: libtorrent checks whatever files it finds. */
	const unsigned char *have;
	size_t nhave;
};

/*
 * Add a torrent to s, started and not auto-managed (libtorrent's queue never pauses it). *btih_out
 * (41 bytes, may be NULL) gets its v1 info-hash in lowercase hex. A torrent already in the session is
 * not added again: the call returns 0 and its hash, and adds a's web seeds to it (other fields of a are
 * ignored). Torrents up to 100 MB of metadata or INT_MAX pieces load (libtorrent's default limits are
 * 10 MB and 2 million pieces). Blocking: parses the whole torrent (a 20 MB one takes tens of ms).
 * Returns 0, HM_ERR_USAGE (NULL arguments, no save_path), HM_ERR_TORRENT (a torrent libtorrent cannot
 * load or add, or a v2-only torrent, which has no btih), with a malloc'd message in *errmsg if errmsg
 * is not NULL; *btih_out is written only on success.
 */
int p2p_session_add(struct p2p_session *s, const struct p2p_add *a, char *btih_out, char **errmsg);

/* Remove the torrent btih from s; its files stay on disk. Returns 0, or HM_ERR_NOT_FOUND if s has no
 * such torrent. Events already queued for it may still come out of p2p_session_drain. */
int p2p_session_remove(struct p2p_session *s, const char *btih);

/* Connect torrent btih to a peer known to have it: endpoint is "1.2.3.4:6881" or "[::1]:6881"
 * (borrowed; no host names). Asynchronous: libtorrent dials at its next one-second tick (uTP first
 * unless the session has lan_tuning), redials if the connection drops, and a failure shows only as no
 * peer. Returns 0, HM_ERR_NOT_FOUND (unknown btih), -EINVAL (a malformed endpoint) or HM_ERR_TORRENT. */
int p2p_session_connect(struct p2p_session *s, const char *btih, const char *endpoint);

struct p2p_torrent_status {
	bool seeding;           /* has every piece and has verified every piece (not merely in seed mode) */
	bool seed_mode;         /* added with seed_mode and still in it: complete by assumption, pieces are
	                         * verified as peers first ask for them; libtorrent leaves it once all are */
	bool paused;
	bool error;             /* stopped by an error, described in message */
	char message[256];      /* "" without an error; "<file>: <error>" or "<error>", cut to fit */
	double progress;        /* 0..1 of the wanted bytes (1 in seed mode) */
	int64_t total_wanted, total_done;   /* bytes of the wanted pieces, and of those we have (partial
	                                     * pieces count their finished blocks) */
	int64_t uploaded, downloaded;       /* payload bytes since the torrent was added to this session (a
	                                     * pause does not reset them) */
	int64_t from_web_seeds;             /* of downloaded, the payload received over BEP 19 / BEP 17 web
	                                     * seed connections, open or closed since */
	int peers, seeds;       /* connected peers (web seeds included), and those of them that are seeds */
	int known_peers;        /* peers known (from the tracker, or that connected), connected or not */
	bool tracker_replied;   /* a tracker has answered an announce (so known_peers holds its peers) */
	bool checking;          /* libtorrent is checking the files (at add, or after p2p_session_reseed) */
	bool finished;          /* has every wanted piece (every piece, unless some are not wanted) */
	int num_pieces, pieces_have;
	int64_t held;           /* bytes of every piece had, wanted or not (pad files not counted) */
	int damaged;            /* pieces found damaged in the files since the torrent was added to this
	                         * session (p2p_session_have_range, p2p_session_verify): they are fetched again */
};

/* Fill *out with the state of torrent btih. Returns 0, HM_ERR_NOT_FOUND or HM_ERR_TORRENT; *out is
 * written only on success. */
int p2p_session_torrent_status(struct p2p_session *s, const char *btih, struct p2p_torrent_status *out);

/* Session-wide payload totals since p2p_session_new, for metrics: every torrent's uploaded and
 * downloaded, including torrents removed since (their counts at removal). Monotonic. Returns 0 or
 * HM_ERR_TORRENT; the outputs are written only on success and may be NULL. */
int p2p_session_totals(struct p2p_session *s, int64_t *uploaded, int64_t *downloaded);

/*
 * What to tell each tracker as the session ends, for the caller to send after p2p_session_free: one
 * entry per torrent, tracker and info-hash (the v1 hash, and the v2 hash truncated to 20 bytes, which
 * libtorrent announces apart), with the session's listen port in *port. libtorrent 2.0.8 says
 * "stopped" only for a torrent it announced as "started", and a torrent that wanted nothing when it
 * was added (a partial seed) it announces as "paused" and never stops: the tracker keeps that peer
 * after it ended. Returns 0 (*out malloc'd, free with p2p_goodbyes_free) or HM_ERR_TORRENT.
 */
struct p2p_goodbye {
	char *url;                  /* an announce URL, as the torrent names it */
	unsigned char hash[20];
};
int p2p_session_goodbyes(struct p2p_session *s, struct p2p_goodbye **out, size_t *n, int *port);
void p2p_goodbyes_free(struct p2p_goodbye *g, size_t n);

/*
 * Events, the libuv way. p2p_session_set_wakeup registers fn, which libtorrent calls ON ITS OWN THREAD
 * (with its alert queue locked) when alerts start waiting: fn must do nothing but wake the loop, i.e.
 * uv_async_send. The loop thread then calls p2p_session_drain, which takes every waiting alert and
 * calls on_event for the ones below. fn is called again only after a drain has emptied the queue, so
 * drain from every wakeup. fn NULL unregisters. Registering while alerts wait calls fn at once. Set it
 * before adding torrents, or drain once after setting it.
 *
 * P2P_EVENT_FINISHED: the torrent has every wanted piece. Also posted right after adding a torrent
 *   with seed_mode (libtorrent counts it as finished at once).
 * P2P_EVENT_ERROR: a file error (message names the file and the operation), or the torrent stopped on
 *   an error (message as in p2p_torrent_status). One failure may give both.
 * P2P_EVENT_PIECE: piece `piece` passed libtorrent's check (downloaded, or found good by a recheck of
 *   the files, as after a failed seed_mode piece); not for the pieces seed_mode verifies as peers ask
 *   for them. A hint to look again, not a promise that the bytes are in the file: libtorrent checks a
 *   piece before the last of its blocks are written, so read only what p2p_session_have_range admits.
 *
 * Strings in an event are borrowed for the call of on_event. on_event may call the other p2p_session_*
 * functions but not p2p_session_drain (that returns -EBUSY). Events of a torrent removed meanwhile may
 * still come; events whose torrent is already gone from libtorrent are dropped.
 * Returns the number of events delivered; or, after delivering them, HM_ERR_TORRENT if libtorrent's
 * alert queue overflowed and alerts were lost (then poll p2p_session_torrent_status), or -EBUSY if
 * called from inside on_event.
 */
enum p2p_event_kind { P2P_EVENT_FINISHED, P2P_EVENT_ERROR, P2P_EVENT_PIECE };
struct p2p_event {
	enum p2p_event_kind kind;
	const char *btih;
	int piece;              /* P2P_EVENT_PIECE: the piece index; otherwise -1 */
	const char *message;    /* P2P_EVENT_ERROR: what failed; otherwise "" */
};
void p2p_session_set_wakeup(struct p2p_session *s, void (*fn)(void *ud), void *ud);
int p2p_session_drain(struct p2p_session *s, void (*on_event)(void *ud, const struct p2p_event *ev),
		      void *ud);

/*
 * Reading on demand (for a lazy mount: files appear at once, a read waits for the pieces it touches, and
 * the wanted pieces download in the background in libtorrent's usual rarest-first order).
 *
 * The flow of a read: p2p_session_have_range; if 0, p2p_session_want_range and wait (a P2P_EVENT_PIECE,
 * or poll have_range again), then pread() the file at p2p_session_file_path. Never through libtorrent's
 * read_piece (2.0.8 can stop the torrent on it). These calls may come from any thread, concurrently with
 * each other and with p2p_session_drain on the loop thread; none holds the session's lock across a call
 * into libtorrent.
 *
 * Files are named by libtorrent's file index (pad files have indices too, and are refused). A range
 * [offset, offset + len) must lie inside the file: offset and len >= 0, offset + len <= size, else
 * -EINVAL (not clamped: a read past the end is the caller's to cut to the size it listed). An unknown
 * btih is HM_ERR_NOT_FOUND (also when the torrent is removed during the call), an index out of range or
 * of a pad file -EINVAL, a failure inside libtorrent HM_ERR_TORRENT.
 */

/* A file of a torrent as a client shows it. */
struct p2p_file_entry {
	char *path;          /* inside the torrent, without its root folder: "config.json", "sub/a.bin";
	                      * owned by the list */
	int64_t size;
	int index;           /* libtorrent's file index, for the calls below */
	int64_t offset;      /* where its bytes start in the torrent's (pad files counted): in hubmirror's
	                      * torrents a multiple of the piece size */
};

/* The files of a torrent: v[0..n) in the torrent's order, pad files left out. */
struct p2p_file_list {
	struct p2p_file_entry *v;   /* owned */
	size_t n;
	char *name;                 /* the torrent's root folder (its name), owned */
	int64_t piece_size;         /* every piece's size but the last one's */
	int64_t total;              /* the torrent's bytes, pad files counted */
	int pieces;
};

/*
 * List the files of torrent btih (in the session; from its metadata, so it does not wait for
 * libtorrent). Paths are as libtorrent stores them (its loader has already made them safe), with the
 * leading "<name>/" cut off. A torrent of one bare file (no folder: not one hubmirror makes) lists that
 * file with path == name. Returns 0 and fills *out (release with p2p_file_list_release), or
 * HM_ERR_NOT_FOUND / HM_ERR_TORRENT with *out untouched.
 */
int p2p_session_files(struct p2p_session *s, const char *btih, struct p2p_file_list *out);

/* Free what l holds and clear it. Accepts NULL and a cleared or released list. */
void p2p_file_list_release(struct p2p_file_list *l);

/* The same list from a bencoded torrent, without a session (to choose the files of a p2p_add).
 * 0, or HM_ERR_USAGE / HM_ERR_TORRENT with *errmsg (malloc'd, if errmsg); *out written only on success. */
int p2p_torrent_files(const unsigned char *torrent, size_t len, struct p2p_file_list *out, char **errmsg);

/* Fetch these files too (libtorrent file indices; pad files and bad indices are skipped): their pieces
 * not had and not wanted yet get the default priority. Never lowers a priority. Asynchronous. 0, or
 * HM_ERR_NOT_FOUND / HM_ERR_TORRENT. */
int p2p_session_want_files(struct p2p_session *s, const char *btih, const int *index, size_t n);

/* held[i] = bytes of file l->v[i] in pieces libtorrent has (l from p2p_session_files of btih). 0, or an
 * error as for the calls below; held is written only on success. */
int p2p_session_files_held(struct p2p_session *s, const char *btih, const struct p2p_file_list *l, int64_t *held);

/* Where libtorrent keeps file index's bytes: <save_path>/<name>/<path> (<save_path>/<name> for a bare
 * one-file torrent), the save_path given to p2p_session_add joined as is. *out is malloc'd, the
 * caller frees it; written only on success. The file exists only once libtorrent has written to it
 * (a file with no verified piece yet may be missing or sparse). */
int p2p_session_file_path(struct p2p_session *s, const char *btih, int index, char **out);

/*
 * Are bytes [offset, offset + len) of file index in the file and verified, so that pread() of the file
 * returns exactly the torrent's bytes? 1 yes, 0 not yet, or an error (see above). An empty range (len
 * 0, and so any range of an empty file) is 1. The rule (docs/p2p.md, "Which bytes a read may return"):
 * a piece counts once libtorrent has it AND its bytes, read back from the file (pad files as zeros),
 * match the torrent's v1 piece hash; only then is it cached as had, and it stays had (libtorrent never
 * rewrites a piece it has, and this API never starts a recheck). No word of libtorrent's alone is
 * trusted: 2.0.8 passes a piece while blocks of it still wait to be written (a read then sees zeros).
 * So a piece libtorrent has whose writes are still pending answers 0 for a moment, a piece whose file
 * was damaged answers 0 until it is fixed, and a torrent in seed mode answers from its files.
 * Cost: a cached range costs a lock and a bit test per piece; a piece not seen yet one round trip to
 * libtorrent's network thread (3.4 us) and, if had, one pread and SHA-256 of the piece (its v2 hash,
 * docs/p2p.md "One hash per byte"; the bytes usually in the page cache); the scan stops at the first missing piece.
 * Safe from any thread; two threads may verify one piece at the same time (both get the same answer).
 */
int p2p_session_have_range(struct p2p_session *s, const char *btih, int index, int64_t offset, int64_t len);

/* p2p_session_have_range, and when the answer is 0, wait up to timeout_ms for pieces to come (woken
 * as they are admitted, not polled) and answer again. For a reader's wait loop. */
int p2p_session_wait_range(struct p2p_session *s, const char *btih, int index, int64_t offset, int64_t len,
			   int timeout_ms);

/*
 * Fetch those bytes first, and want them from now on (a piece that was not wanted gets the top
 * priority, and keeps it): give each piece they touch a deadline, deadline_ms from now for the first
 * and a few milliseconds later for each next one (libtorrent fetches earlier deadlines first), so they
 * are requested before any other piece. Pieces already had are left alone (libtorrent ignores a
 * deadline on a piece it has). Asynchronous: returns at once (0, or an error as above; deadline_ms < 0
 * is -EINVAL), and libtorrent acts on its network thread. Calling it again for the same range just
 * moves the deadlines. A deadline only orders requests: a piece past its deadline is still fetched
 * first, never dropped, until it arrives. With no peer that has the piece, nothing happens until one
 * comes. What a peer has already committed to send us is not recalled, so behind a busy link the wait
 * is about that peer's send buffer over its upload rate (measured on loopback from a seed capped at
 * 1 MiB/s: 0.5-1 s with libtorrent's default buffers, 0.5-3 s from a lan_tuning seed).
 */
int p2p_session_want_range(struct p2p_session *s, const char *btih, int index, int64_t offset, int64_t len,
			   int deadline_ms);

/* Called (on the caller's thread of p2p_session_want_range, so it must only wake a loop) when a call
 * with deadline_ms 0 (a reader waits) names a first missing piece that p2p_session_take_wanted does
 * not hold yet: the agent's fill looks at it at once. fn NULL unregisters. */
void p2p_session_set_want_notify(struct p2p_session *s, void (*fn)(void *ud), void *ud);

/*
 * Pieces from elsewhere (the agent's HTTP fill: docs/agent.md). p2p_session_pieces_had fills had[0..n)
 * (n must be the torrent's piece count, else -EINVAL) with 1 for each piece libtorrent has (whether or
 * not its bytes are written yet), 2 for a piece it neither has nor wants (priority 0), 0 for the
 * others (wanted and missing), and returns 0; a torrent still checking its files
 * counts every piece as had (so nothing is fetched twice) and returns 1: ask again soon. avail (may be
 * NULL) gets how many connected peers have each piece (a peer that origin_last hides counts for none).
 * p2p_session_add_piece hands libtorrent a whole piece (len must be that piece's size, pad bytes as zeros, else
 * -EINVAL): libtorrent copies it, writes it and checks its hashes as for a piece from a peer; a piece it has already is
 * left alone, and one that fails its check is dropped and fetched again from peers. Asynchronous, safe from any thread.
 * p2p_session_take_wanted returns the first missing piece of a p2p_session_want_range with deadline 0
 * (a reader waits for it), the oldest not taken yet (several readers wait at once: up to 64 are
 * kept), and forgets it; -1 when none is left.
 * Errors as for the calls above.
 */
int p2p_session_pieces_had(struct p2p_session *s, const char *btih, unsigned char *had, int *avail, int n);

/*
 * Writing pieces without libtorrent (the agent's direct fill, alone: docs/agent.md). It saves
 * libtorrent's two hashes per piece (SHA-1 and SHA-256 in a hybrid torrent) and its copies:
 * - p2p_session_download_pause: pause (or go on with) asking peers for pieces (libtorrent's upload
 *   mode: uploads go on), so that libtorrent writes nothing into the files meanwhile.
 * - p2p_session_write_piece: check data (a whole piece, pad bytes as zeros; len its size, else
 *   -EINVAL) against the torrent's v2 piece hash (HM_ERR_HASH_MISMATCH: nothing written), write its
 *   file parts into <save_path>/<name>/<path> (folders and files made as needed; -errno when a write
 *   fails: the piece then does not count), and count it as had for p2p_session_have_range. libtorrent
 *   does not know of it. Blocking (SHA-256 and a write of one piece); any thread.
 * - p2p_session_reseed: hand what the files hold to libtorrent: the torrent is removed and added again
 *   from its bytes (torrent, len: the same torrent, else HM_ERR_USAGE) with the same options and piece
 *   priorities, the pieces had for p2p_session_have_range (those p2p_session_write_piece wrote) given
 *   as had (libtorrent's resume data: nothing is read or hashed again; with every piece had, empty
 *   files are made and it seeds). Those pieces stay had; the upload and download counts start again.
 *   Trackers are kept (and the old torrent leaves without a "stopped" announce, which could reach the
 *   tracker after the new one's "started"); web seeds are not. 0, or an error with *errmsg (the torrent is then
 *   gone from s).
 */
int p2p_session_download_pause(struct p2p_session *s, const char *btih, bool pause);
/* After a write error (a full disk): clear the torrent's error, resume it (the error stopped it) and
 * take it out of the upload mode libtorrent put it in (it would try again by itself only after its
 * optimistic_disk_retry, minutes), so it asks for pieces again; a write that fails again gives the
 * error again. Its files are checked again (force_recheck), and until then reads verify each piece
 * in the file: bytes of a write that failed may be gone although libtorrent counts them as had. 0,
 * or as above. */
int p2p_session_retry(struct p2p_session *s, const char *btih);
/* Read back every piece libtorrent believes it has of torrent btih and hash it (blocking: the whole
 * torrent is read; from a worker thread). Pieces that fail (bit rot, another process, deleted files)
 * are no longer admitted by p2p_session_have_range, and the torrent's files are then checked again by
 * libtorrent, which fetches them anew. *checked: pieces read; *damaged: of those, how many failed.
 * (p2p_session_have_range does the same for a piece it reads back and finds damaged.) 0, or as above. */
int p2p_session_verify(struct p2p_session *s, const char *btih, int *checked, int *damaged);
/* The trackers (each a tier of its own, in this order) and web seeds of torrent btih from now on, in
 * place of the ones it has (from its torrent, an earlier call or p2p_session_add): it announces to
 * the new trackers at once. web_seeds NULL (nweb 0): none (p2p_session_add adds them again later).
 * Asynchronous; errors as above. */
int p2p_session_set_sources(struct p2p_session *s, const char *btih, const char *const *trackers, size_t ntrackers,
			    const char *const *web_seeds, size_t nweb);
/* Read back and hash the pieces of torrent btih libtorrent believes it has, from piece first on, until
 * about max_bytes are read (one piece at least): a background scrub's step (blocking; from a worker).
 * gentle: what the reads bring into the page cache that was not there is dropped again. Damage is
 * handled as by p2p_session_verify. *next: the piece to go on from (the piece count once past the
 * last); *checked, *damaged: pieces read and of those failed; *bytes: bytes read. 0, or as above. */
int p2p_session_verify_pieces(struct p2p_session *s, const char *btih, int first, int64_t max_bytes, bool gentle,
			      int *next, int *checked, int *damaged, int64_t *bytes);
/* Announce to the trackers now (their minimum interval ignored): a torrent that asks no peer learns of
 * new ones only this way. Asynchronous; errors as above. */
int p2p_session_reannounce(struct p2p_session *s, const char *btih);
/*
 * Bounding the cache (the agent's --cache-size while snapshots are mounted: docs/agent.md).
 * - p2p_session_touch: a reader reads bytes [offset, offset + len) of file index now; call it before
 *   p2p_session_have_range for those bytes. Errors as for the range calls.
 * - p2p_session_cold_pieces: the pieces of torrent btih that may go: had, of no file of keep[0..nkeep)
 *   (libtorrent file indices), not read for idle_s seconds (or never), least recently read first:
 *   *out (malloc'd, *n entries; the caller frees it).
 * - p2p_session_evict_pieces: take pieces (from p2p_session_cold_pieces) out of the cache: no read
 *   admits them from now on, those read since they were found cold stay (their size is set to 0),
 *   the others' bytes are freed (holes punched in the files; a file with another name, such as a
 *   content kept by sha256, is left whole) and the torrent is added again without them (as
 *   p2p_session_reseed does, upload mode kept; torrent, len: the same torrent) at priority 0, so they
 *   are fetched again only when a read asks for them. Pieces only p2p_session_write_piece wrote
 *   (libtorrent knows none of them) just lose their priority. *freed (bytes) and *evicted (pieces)
 *   may be NULL. Blocking (a syscall per piece and an add): from a worker. 0, or an error with
 *   *errmsg.
 */
struct p2p_cold {
	int piece;
	uint32_t touched;               /* when it was last read (opaque; 0: never) */
	int64_t size;                   /* the piece's bytes */
};
int p2p_session_touch(struct p2p_session *s, const char *btih, int index, int64_t offset, int64_t len);
/* The room the cache has for what libtorrent writes itself (pieces from peers and web seeds): torrent
 * btih brings at most room bytes a second from now on (its download limit; 0: nothing, libtorrent
 * asks and waits; negative: no limit). Pieces the caller writes (p2p_session_write_piece) or hands
 * over (p2p_session_add_piece) are the caller's to count. A torrent added again (p2p_session_reseed,
 * p2p_session_evict_pieces) keeps it. Asynchronous; errors as for the range calls. */
int p2p_session_set_room(struct p2p_session *s, const char *btih, int64_t room);
int p2p_session_cold_pieces(struct p2p_session *s, const char *btih, const int *keep, size_t nkeep, int idle_s,
			    struct p2p_cold **out, size_t *n);
int p2p_session_evict_pieces(struct p2p_session *s, const char *btih, const unsigned char *torrent, size_t len,
			     struct p2p_cold *pieces, size_t n, int64_t *freed, size_t *evicted, char **errmsg);

int p2p_session_write_piece(struct p2p_session *s, const char *btih, int piece, const char *data, size_t len);
int p2p_session_reseed(struct p2p_session *s, const char *btih, const unsigned char *torrent, size_t len,
		       char **errmsg);
int p2p_session_add_piece(struct p2p_session *s, const char *btih, int piece, const char *data, size_t len);
int p2p_session_take_wanted(struct p2p_session *s, const char *btih);

/*
 * Does the file at <save_path>/<name>/<path> hold exactly what the torrent says file path (inside
 * its root folder, as p2p_session_files lists it) holds? Reads it and checks every piece of it against
 * the torrent's v2 hashes (v1 for a torrent without them), without a session: for contents placed from elsewhere
 * (another revision) before a torrent starts, since a piece that fails there would be downloaded and written into the
 * placed file. A piece shared with another real file (not in hubmirror's torrents, which align files
 * to pieces) counts as a mismatch. Returns 1 (an empty file too), 0 (a mismatch, or the file is
 * missing or short), HM_ERR_NOT_FOUND (no such file in the torrent), HM_ERR_USAGE or HM_ERR_TORRENT.
 * Blocking: reads the whole file.
 */
int p2p_torrent_verify_file(const unsigned char *torrent, size_t len, const char *save_path, const char *path);

/* The web seeds (BEP 19 url-list) a .torrent names: *out, a NULL-terminated array of *n malloc'd
 * strings (the caller frees each and the array). Returns 0, HM_ERR_USAGE or HM_ERR_TORRENT. */
int p2p_torrent_web_seeds(const unsigned char *torrent, size_t len, char ***out, size_t *n);

/* The trackers a .torrent names (announce-list, or announce), in tier order: as
 * p2p_torrent_web_seeds. */
int p2p_torrent_trackers(const unsigned char *torrent, size_t len, char ***out, size_t *n);

/* libtorrent's version string, e.g. "2.0.8.0". Static. */
const char *p2p_version(void);

/*
 * Torrents of snapshots (p2p/torrent.c; the hashing is libtorrent's, in the shim).
 *
 * One torrent per snapshot, hybrid v1+v2 (so v1-only clients such as aria2c can join), deterministic:
 * every node that holds the same files builds the same bytes and so the same info-hashes, which is what
 * lets every mirror seed the same swarm (docs/p2p.md). The layout is always
 * <name>/<path> with pad files (".pad/N") between files and after the last one unless it is the only
 * one: libtorrent 2.0.8 adds them in hybrid torrents so that every file starts on a piece; clients never
 * request them, and they are not to be shown to users.
 */

/* One file of a torrent: its path inside the torrent (relative, '/'-separated, as checked by
 * base/path.h), its size, and where its bytes are now: an absolute path to a file (for hubmirror a
 * content-addressed blob in the store), or, when read is set, a reader of them (for hubmirror a
 * content read in ranges from the store's bucket, never brought to local disk whole). Borrowed. */
struct p2p_file {
	const char *path;
	int64_t size;
	const char *source;   /* the file; NULL (or anything: not looked at) when read is set */
	/*
	 * The reader: put bytes [off, off + len) of the file (len > 0, off + len <= size) in buf, all of
	 * them, and return 0; or return a negative code (-errno, an HM_ERR_*; HM_ERR_SIZE_MISMATCH for a
	 * source shorter than size) and, if errmsg is not NULL, may set *errmsg to a malloc'd message that
	 * says why, which p2p_torrent_create frees or passes on. Any error fails the torrent with it, never
	 * a torrent of wrong hashes. Called from p2p_torrent_create's hashing threads, each call for 8 MiB of
	 * whole pieces (one piece, when pieces are bigger; less at the file's end): several at once, for one
	 * file's ranges too, so it must be thread-safe. A file's ranges cover it once, and are handed to the
	 * threads in order of offset; every range handed out is read, even after another read failed. So a
	 * call may wait, once its bytes are in, for the calls of the ranges before it to be done (a reader
	 * that hashes the whole file in order, to check it against its name, as hubmirror's does).
	 */
	int (*read)(void *ud, int64_t off, void *buf, size_t len, char **errmsg);
	void *ud;             /* read's, borrowed */
};

struct p2p_torrent {
	unsigned char *data;  /* the bencoded .torrent (no announce, no url-list), owned; p2p_torrent_release */
	size_t len;
	char btih[41];        /* v1 info-hash, lowercase hex */
	char btmh[65];        /* v2 info-hash (sha256), lowercase hex; magnet form urn:btmh:1220<btmh> */
	int64_t piece_size;
	int64_t pieces;       /* number of pieces, counting the bytes of pad files */
};

/* The largest piece size p2p_torrent_piece_size picks (so the largest pad file a torrent has). */
#define P2P_MAX_PIECE ((int64_t)16 * 1024 * 1024)

/* The piece size for a torrent of total bytes: 64 KiB, doubled while total / piece > 1500, at most 16 MiB. */
int64_t p2p_torrent_piece_size(int64_t total);

/* The piece size p2p_torrent_create uses for files of these sizes: p2p_torrent_piece_size of their
 * total, then halved (down to 16 KiB) while the pads of the hybrid layout (each file starts a piece)
 * span more bytes than the files, unless halving adds more than 1,500 pieces. A snapshot of a few big
 * files keeps the total's size; one of 100,000 small files gets small pieces (docs/p2p.md). */
int64_t p2p_torrent_piece_size_for(const int64_t *sizes, size_t n);

/*
 * Build the torrent of files (any order; sorted by path inside) named name (one safe path
 * component: no '/', not "." or "..", not empty). Deterministic: the same name and file list with the
 * same contents give the same bytes and info-hashes on every node (hybrid v1+v2, flag no_attributes,
 * no creation date, no creator, no comment, piece size from p2p_torrent_piece_size_for). The hashes are
 * computed from each file's source or reader (only read), exactly as libtorrent's set_piece_hashes would
 * over the files laid out under their paths: a file's reader gives the same torrent as a source path
 * holding the same bytes. Every source must exist and have the stated size.
 *
 * Files are sorted component by component, byte-wise ("a/b" before "a-c"): the order of the v2 file
 * tree and of libtorrent's canonical layout. Empty files are allowed (listed, no piece).
 *
 * Nothing to share: n == 0 (files may then be NULL), or only empty files, returns -ENODATA; BitTorrent
 * has no torrent of zero bytes, so a caller skips such a snapshot rather than failing on it.
 * Refused: a NULL argument (HM_ERR_USAGE); a bad name or a path that fails path_check
 * (HM_ERR_PATH_UNSAFE); two files with the same path, or a file whose path is a directory of another
 * ("a" and "a/b") (HM_ERR_USAGE); a path that BitTorrent clients would not write back unchanged, such as
 * a component over 240 bytes or with Unicode direction marks (HM_ERR_PATH_UNSAFE); a negative size, or
 * sizes that overflow int64_t together (HM_ERR_USAGE); a source that is not an absolute path
 * (HM_ERR_USAGE), missing or not a regular file (-errno or -EINVAL); a source whose size is not the
 * stated size, or that cannot be read whole (HM_ERR_SIZE_MISMATCH, -errno); a reader's error (its
 * code, and its message after the file's path); a failure inside libtorrent (HM_ERR_TORRENT).
 *
 * A snapshot of a single file gives a torrent whose one file sits in the <name> directory (libtorrent
 * adds no pad file after a lone file): the layout for which libtorrent 2.0.8 peers request a wrong
 * web-seed URL (docs/libtorrent.md), so such a swarm must not rely on the web seed alone.
 *
 * Blocking: reads every byte of every source (SHA-1 and SHA-256), so run it off the event loop. Loading
 * a torrent of many files (tens of thousands) needs raised load_torrent_limits on the reading side.
 *
 * Returns 0 and fills *out (the caller then owns out->data), or an error code, leaves *out untouched and
 * (if errmsg) sets *errmsg to a malloc'd message the caller frees.
 */
int p2p_torrent_create(const char *name, const struct p2p_file *files, size_t n, struct p2p_torrent *out,
		       char **errmsg);

/* Free t->data and clear *t. Accepts NULL and a cleared or released struct. */
void p2p_torrent_release(struct p2p_torrent *t);

/* The v1 info-hash (lowercase hex, 41 bytes with the NUL) of a bencoded torrent, without adding it
 * anywhere. Returns 0, or HM_ERR_TORRENT with *errmsg (malloc'd, if errmsg) when it is not a torrent
 * with a v1 hash. */
int p2p_torrent_info_hash(const unsigned char *torrent, size_t len, char *btih_out, char **errmsg);

#endif
