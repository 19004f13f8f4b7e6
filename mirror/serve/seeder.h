/*
 * seeder.h - the mirror as a BitTorrent seed of its snapshots' torrents (docs/p2p.md): those of the
 * heads (every snapshot a ref points at: branches, tags, followed revisions), and those of older
 * snapshots while peers hold their swarms (what agents hold); not the whole history, whose torrents
 * would each cost the seed memory for ever (a local repo's every commit has one).
 *
 * A libtorrent session on the serve loop. Each torrent is seeded from a folder of symlinks to the
 * store's blobs, <data>/p2p/seed/<btih>/<name>/<path>, in libtorrent's seed mode (no hashing at
 * start; each piece is verified the first time a peer asks for it). The catalog is scanned at start
 * and every rescan interval, so the heads that a sync (another process) or a commit made join, and
 * those that are heads no more (and no swarm holds), or that gc dropped, leave. An announce for a
 * torrent of the mirror's that is not seeded claims it: its folder is laid out on a worker and the
 * seed takes it before the announce is answered (routes-p2p.c). The tracker adds the mirror to the
 * swarms it seeds.
 */
#ifndef HM_MIRROR_SEEDER_H
#define HM_MIRROR_SEEDER_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

struct catalog;
struct catalog_torrent;
struct mirror_data;
struct mirror_seeder;
struct store;

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
/* And libtorrent takes peers for it already (a torrent just added checks its resume data first, and a
 * peer that connects meanwhile is turned away). */
bool mirror_seeder_ready(const struct mirror_seeder *s, const char *btih);

/* Torrents seeded, of those how many are no head's (a swarm holds them), and payload bytes uploaded to
 * peers since start. */
void mirror_seeder_stats(const struct mirror_seeder *s, int64_t *torrents, int64_t *held, int64_t *uploaded);

/* Who holds a swarm: held(ud, btih, btmh) is true while peers other than the mirror's seed announce the
 * torrent (the tracker's, routes-p2p.c); asked at each rescan for the torrents that are no head's. Until
 * it is set, such torrents stop being seeded at the next rescan. */
void mirror_seeder_set_held(struct mirror_seeder *s, bool (*held)(void *ud, const char *btih, const char *btmh),
			    void *ud);

/*
 * An announce for torrent t (one of the catalog's), which the seed does not have: when t's repo is
 * open to anyone and nothing is under way for it, mark it as being laid out and return the seed
 * folders' root (malloc'd) for mirror_seeder_lay_out on a worker; then mirror_seeder_claimed on the
 * loop, always (laid_out: that call's result), adds it or forgets the claim. NULL: nothing to do
 * (seeded already, being laid out, damaged, not open, or s NULL).
 */
char *mirror_seeder_claim(struct mirror_seeder *s, const struct catalog_torrent *t);
void mirror_seeder_claimed(struct mirror_seeder *s, const struct catalog_torrent *t, int laid_out);
/* Lay out t's seed folder below root (a claim's), its files' links into store, read through cat (the
 * caller's connection): safe on a worker. A folder that exists is whole and kept. Returns 0 or -errno. */
int mirror_seeder_lay_out(const char *root, const struct store *store, struct catalog *cat,
			  const struct catalog_torrent *t);

/* New access rules (SIGHUP's tokens file; borrowed as cfg->access was), applied by a rescan now. */
void mirror_seeder_set_access(struct mirror_seeder *s, const struct mirror_access *access);

/* Scan the catalog now (also runs on its timer). */
void mirror_seeder_rescan(struct mirror_seeder *s);

/* Stop and free; closes its libuv handles (run the loop once more to finish closing). NULL-safe. */
void mirror_seeder_free(struct mirror_seeder **s);

#endif
