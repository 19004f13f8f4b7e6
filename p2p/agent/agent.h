/*
 * agent.h - the instance agent: one long-lived process per machine that holds the swarm session, the
 * cache and every mount of the instance (docs/agent.md).
 *
 * It listens on a unix socket and speaks HTTP there (the control API below); `hubmirror mount`,
 * `umount` and `status` are its clients, and start it when none runs. A snapshot it fetched stays in
 * its cache and keeps seeding after its mount is gone, and after the agent restarts.
 *
 * Control API (JSON bodies, JSON answers; an error is {"error": "..."} with a 4xx/5xx status):
 *   GET  /v1/status   the agent, and each snapshot: spec, commit, bytes had and total, mounts, peers
 *   POST /v1/mount    {"spec", "dir", "mirror"?, "token"?, "hf_cache"?, "ms_cache"?, "ms_hub_cache"?}:
 *                     the mirror's current snapshot of spec; when the mirror cannot be reached, the
 *                     newest one the agent holds (the answer's "offline" says why)
 *   POST /v1/pull     {"spec", "mirror"?, "token"?, "hf_cache"?, "ms_cache"?, "ms_hub_cache"?, "pin"?}:
 *                     fetch the snapshot whole into the cache, no FUSE; once every file is verified
 *                     there, link it into the hub caches named (status: "verified"); pinned: never
 *                     evicted
 *   POST /v1/umount   {"dir"}
 *   POST /v1/stop     unmount everything and end
 */
#ifndef HM_AGENT_H
#define HM_AGENT_H

#include <stdbool.h>
#include <stdint.h>

struct agent_config {
	const char *mirror;             /* the default mirror URL for mounts that name none; may be NULL */
	const char *cache_dir;          /* the bytes: <cache>/<btih>/<name>/<path>; by-sha256/; agent/ */
	const char *socket_path;        /* the control socket */
	const char *listen;             /* libtorrent listen interfaces; NULL: "0.0.0.0:0" */
	int64_t upload_limit;           /* bytes/s to LAN peers; 0: unlimited */
	int64_t cache_size;             /* bytes the cache may hold; past it the least recently used
					 * snapshots that are neither mounted nor pinned are evicted;
					 * 0: no limit */
	int read_timeout_s;             /* a mount's read waits this long for its pieces; 0: 600 */
	int keep_pulled_s;              /* a pull's files are not evicted this long after it linked them
					 * (its caller loads them next); 0: 60, -1: not at all */
	const char *http;               /* the local hub endpoint's HOST:PORT (docs/agent.md); NULL: none */
	int preheat_every_s;            /* fetch what the mirror marks to preheat, this often; 0: never */
	bool no_fill;                   /* take the mirror's pieces over BitTorrent (its seed, then its web
					 * seed) rather than over HTTP ranges (fill.c) */
	int mirror_timeout_s;           /* a mirror that sends nothing this long is given up for the next
					 * (metadata, torrents, the endpoint's questions); 0: 20 */
	int64_t scrub_rate;             /* the background scrub reads back and hashes the verified
					 * snapshots at this many bytes/s; 0: never */
	int scrub_every_s;              /* ...a pass at most this often; 0: 7 days */
	const char *token;              /* the agent's own token of the mirror (--token-file), for the
					 * snapshots of guarded repos S3 clients read through the local endpoint
					 * (they show no bearer token); NULL: none. Never logged */
};

/*
 * Run the agent until it is told to stop (SIGTERM, SIGINT, POST /v1/stop). Once it listens, writes
 * "ok\n" to ready_fd (if >= 0) and closes it; if it cannot start, returns an error with *errmsg
 * (malloc'd) instead, and writes nothing. Returns 0 after a clean stop.
 */
int agent_run(const struct agent_config *cfg, int ready_fd, char **errmsg);

/* The control socket clients use: $HUBMIRROR_AGENT_SOCKET, or /run/hubmirror/agent.sock. */
const char *agent_socket_default(void);

/*
 * A call to the agent at socket: GET path (body NULL) or POST body. Returns 0 with *status and
 * *answer (the parsed JSON answer, a new reference, or NULL if it was not JSON); -ECONNREFUSED when no
 * agent listens there; another error with *errmsg (malloc'd).
 */
struct json_t;
int agent_call(const char *socket, const char *path, const char *body, long timeout_s, long *status,
	       struct json_t **answer, char **errmsg);

#endif
