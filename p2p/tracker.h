/*
 * tracker.h - an in-memory BitTorrent tracker: BEP 3 announces answered with BEP 23 compact peers
 * (IPv4, "peers") and BEP 7 compact IPv6 peers ("peers6").
 *
 * A pure module with no I/O and no clock: the HTTP route hands over the raw query string of
 * `GET /announce?...` and the connection's remote address, and sends the bencoded body written here
 * back with `Content-Type: text/plain` (status 200 even for a failure response, as BEP 3 wants).
 *
 * A peer is identified by (info-hash, IP from the connection, port from the announce); the "ip" query
 * parameter is never trusted. IPv4-mapped IPv6 addresses (a dual-stack listener) count as IPv4.
 * Peers expire 2 * interval after their last announce: lazily whenever their swarm is accessed, and
 * in a p2p_tracker_expire() sweep the server runs periodically. Memory is bounded by max_torrents,
 * max_peers and max_total_peers; when a limit is reached new swarms / peers get a failure response
 * while peers already known keep working. One address holds at most max_per_address places in a
 * swarm (its newest ports), so one host cannot fill a swarm or crowd others out of the answers. The
 * uploaded counts peers report are summed without overflow (metrics see them saturated).
 *
 * Not thread-safe: one tracker belongs to one thread (the libuv loop).
 */
#ifndef HM_P2P_TRACKER_H
#define HM_P2P_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct buf;
struct p2p_tracker;

#define P2P_TRACKER_DEFAULT_NUMWANT 50
#define P2P_TRACKER_MAX_NUMWANT 200

struct p2p_tracker_config {
	int interval;           /* seconds clients are told to wait between announces (default 120 if <= 0) */
	size_t max_torrents;    /* distinct info-hashes kept (default 100000 if 0) */
	size_t max_peers; /* per info-hash (default 100000 if 0: a cluster of 10,000 instances on one model fits) */
	size_t max_total_peers; /* across all info-hashes (default 1000000 if 0): the real memory bound */
	size_t max_per_address; /* peers (ports) of one IP address in one swarm (default 8 if 0); a new
	                         * port beyond it replaces that address's longest-silent peer */
};

/* A tracker with cfg's limits (cfg may be NULL: all defaults; it is copied, not kept). Seeds its hash
 * keys and PRNG from getrandom(). Never fails (out of memory aborts). The caller owns the result and
 * releases it with p2p_tracker_free(). */
struct p2p_tracker *p2p_tracker_new(const struct p2p_tracker_config *cfg);
/* Free *t and everything it holds; NULL-safe (t or *t), sets *t = NULL. */
void p2p_tracker_free(struct p2p_tracker **t);

enum p2p_tracker_event {
	P2P_TRACKER_EVENT_NONE,
	P2P_TRACKER_EVENT_STARTED,
	P2P_TRACKER_EVENT_STOPPED,
	P2P_TRACKER_EVENT_COMPLETED
};

struct p2p_tracker_announce {
	unsigned char info_hash[20];
	unsigned char peer_id[20];
	uint16_t port;          /* 1..65535 */
	int64_t uploaded, downloaded, left;
	enum p2p_tracker_event event;
	int numwant;            /* -1 when absent; else 0..INT_MAX as sent (the tracker caps it) */
	bool compact;           /* default true */
	bool no_peer_id;
};

/*
 * Parse an announce query: query[0..len) is the raw, percent-encoded query string without the '?'
 * (it needs no NUL terminator). info_hash and peer_id are required and must be exactly 20 bytes after
 * percent-decoding (%XX and literal characters both accepted; '+' is a literal '+'); port is required,
 * 1..65535; left is required; uploaded, downloaded (default 0) and left are non-negative decimal
 * integers; event is absent, empty, started, stopped, completed or paused (BEP 21; treated as none);
 * numwant is a non-negative integer (huge values saturate); compact and no_peer_id are 0 or 1.
 * Unknown parameters (ip, key, trackerid, ...) are ignored; a repeated parameter: the last one counts.
 * Returns 0 and fills *out, or HM_ERR_USAGE with *out untouched and *errmsg (if errmsg is not NULL) set to
 * a static human-readable reason, suitable for p2p_tracker_failure().
 */
int p2p_tracker_parse_announce(const char *query, size_t len, struct p2p_tracker_announce *out, const char **errmsg);

/*
 * Record the announce *a (borrowed for the call; as p2p_tracker_parse_announce() fills it) of the peer at
 * remote (borrowed; AF_INET or AF_INET6, only its address is used: the port comes from the announce)
 * and append the bencoded response body to out (an initialised buf, normally empty):
 *   d8:completei<seeders>e10:incompletei<leechers>e8:intervali<interval>e12:min intervali<interval/2>e
 *    5:peers<peers>[6:peers6<peers6>]e
 * Peers: up to numwant (default 50, at most 200) chosen at random among live peers of the info-hash,
 * never the announcing (ip, port) itself. Compact: 6-byte IPv4 entries in "peers" and, only when
 * there are any, 18-byte IPv6 entries in "peers6". Not compact: a BEP 3 list of dicts
 * (ip as text, "peer id" unless no_peer_id, port) holding both families. event=stopped removes the
 * peer and returns no peers; left == 0 makes the peer a seeder (complete). now is in seconds, from any
 * clock that only moves forward (monotonic or wall: caller's choice, but always the same one).
 *
 * out always receives a complete body to send. Returns 0 when the announce was recorded (or the peer
 * removed), or, with a failure response ("d14:failure reason...e") in out and nothing recorded:
 * -ENOSPC when a limit refused a new swarm or peer, -EAFNOSUPPORT when remote is neither IPv4 nor
 * IPv6, -EINVAL when a->port is 0.
 */
int p2p_tracker_announce(struct p2p_tracker *t, const struct p2p_tracker_announce *a, const struct sockaddr *remote,
		     int64_t now, struct buf *out);

/* Append the BEP 3 failure response d14:failure reason<len>:<reason>e to out. reason is borrowed. */
void p2p_tracker_failure(struct buf *out, const char *reason);

/* Drop every peer whose last announce is 2 * interval or more before now, and every swarm left empty.
 * Costs O(torrents) plus O(peers) of the swarms that have a peer due to expire. */
void p2p_tracker_expire(struct p2p_tracker *t, int64_t now);

struct p2p_tracker_stats {
	size_t torrents;     /* swarms with at least one peer */
	size_t peers;        /* across all swarms (a client in two swarms counts twice) */
	size_t seeders;      /* of those peers, how many have left == 0 */
	uint64_t announces;  /* every p2p_tracker_announce() call since p2p_tracker_new(), refused ones included */
	int64_t peer_uploaded; /* the live peers' "uploaded" as they last announced it: what peers have sent
	                        * (to each other and anyone) in their current sessions */
};

/* Fill *out. Counts are as of the last access or sweep: peers past their expiry that nothing has
 * touched since are still counted until the next p2p_tracker_expire(). */
void p2p_tracker_stats(const struct p2p_tracker *t, struct p2p_tracker_stats *out);

/* Seeders and leechers of one info-hash (0/0 if unknown), as of the last access or sweep (see
 * p2p_tracker_stats()). */
void p2p_tracker_swarm(const struct p2p_tracker *t, const unsigned char info_hash[20], size_t *seeders,
		       size_t *leechers);

/* Peers of one info-hash still live at now (not expired, whatever the last sweep) whose peer id is not
 * peer_id: whether anyone but that peer (the mirror's own seed) holds the swarm. O(its peers). */
size_t p2p_tracker_swarm_others(const struct p2p_tracker *t, const unsigned char info_hash[20],
				const unsigned char peer_id[20], int64_t now);

#endif
