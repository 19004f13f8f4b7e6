/*
 * seeder.h - the mirror as a BitTorrent seed of every snapshot torrent it made (docs/p2p.md).
 *
 * A libtorrent session on the serve loop. Each torrent is seeded from a folder of symlinks to the
 * store's blobs, <data>/p2p/seed/<btih>/<name>/<path>, in libtorrent's seed mode (no hashing at
 * start; each piece is verified the first time a peer asks for it). The catalog is scanned at start
 * and every rescan interval, so torrents that a sync (another process) made join, and those that gc
 * dropped leave. The tracker adds the mirror to the swarms it seeds (routes-p2p.c).
 */
#ifndef HM_MIRROR_SEEDER_H
#define HM_MIRROR_SEEDER_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

struct mirror_data;
struct mirror_seeder;

struct mirror_access;

struct mirror_seeder_config {
	const char *listen;            /* libtorrent listen interfaces, "0.0.0.0:6881" */
	int64_t upload_limit;          /* bytes/s to the swarm (LAN peers included); 0: unlimited */
	unsigned rescan_ms;            /* catalog rescan period; 0: 30 s */
	bool super_seed;               /* BEP 16: offer each peer pieces nobody has yet (about one copy out) */
	/* Who may read what (NULL: no tokens). Borrowed for the seeder's life. Only repos anyone may read
	 * without a token (mirror_access_public) are seeded: BitTorrent peers show no token, and the
	 * info-hash is no secret (anyone who can list the files can compute it). Guarded repos travel
	 * through the web seed and the tracker with a capability, and between the token holders' peers. */
	const struct mirror_access *access;
};

/*
 * Start seeding on loop. d is borrowed and must outlive the seeder. On success *out is owned by the
 * caller (mirror_seeder_free, before the loop closes). Returns 0 or HM_ERR_TORRENT with *errmsg.
 */
int mirror_seeder_new(uv_loop_t *loop, struct mirror_data *d, const struct mirror_seeder_config *cfg,
		      struct mirror_seeder **out, char **errmsg);

/* The TCP port peers reach the seeder on. */
int mirror_seeder_port(const struct mirror_seeder *s);

/* Whether the torrent with this v1 info-hash (hex) is being seeded. */
bool mirror_seeder_has(const struct mirror_seeder *s, const char *btih);

/* Torrents seeded, and payload bytes uploaded to peers since start. */
void mirror_seeder_stats(const struct mirror_seeder *s, int64_t *torrents, int64_t *uploaded);

/* New access rules (SIGHUP's tokens file; borrowed as cfg->access was), applied by a rescan now. */
void mirror_seeder_set_access(struct mirror_seeder *s, const struct mirror_access *access);

/* Scan the catalog now (also runs on its timer). */
void mirror_seeder_rescan(struct mirror_seeder *s);

/* Stop and free; closes its libuv handles (run the loop once more to finish closing). NULL-safe. */
void mirror_seeder_free(struct mirror_seeder **s);

#endif
