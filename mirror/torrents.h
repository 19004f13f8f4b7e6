/*
 * torrents.h - the swarm's torrents of the mirror's snapshots: made after a sync, kept as
 * <data>/torrents/<btih>.torrent with a catalog row, handed to peers with the mirror as tracker
 * and web seed.
 *
 * A snapshot's torrent is hybrid v1+v2 and deterministic (p2p_torrent_create): named after the repo
 * (the part after the org), its files the snapshot's, so every node that holds the same snapshot
 * makes the same info-hash. The stored file has no announce and no url-list: those name the mirror
 * a peer asked, and are spliced in when the torrent is served.
 */
#ifndef HM_MIRROR_TORRENTS_H
#define HM_MIRROR_TORRENTS_H

#include <stddef.h>
#include <stdint.h>

struct mirror_data;

/*
 * Make the torrents that snapshots pointed at by a ref lack: new snapshots after a sync, all of them
 * after an upgrade; a snapshot without a byte to share gets none. Call with the sync lock held: the
 * leftovers of a crashed run in the work folder are cleared first. Each file is written to a
 * temporary name, fsynced and renamed before its catalog row is recorded, so a crash leaves no row
 * without its file. *made (may be NULL) counts the new ones. A snapshot that fails does not stop the
 * others. Returns 0, or the first error with *errmsg (malloc'd, if errmsg) naming the repo.
 */
int mirror_torrents_make(struct mirror_data *d, int64_t now, size_t *made, char **errmsg);

/* <data>/torrents/<btih>.torrent, malloc'd. */
char *mirror_torrent_path(const struct mirror_data *d, const char *btih);

/*
 * The stored torrent btih with trackers and web seeds added, outside its info dictionary (so the
 * info-hash stays): announce[0] as "announce" and, with more than one, every one as a tier of its
 * own in "announce-list" (BEP 12: tried in order, this mirror first); the web seeds as "url-list"
 * (BEP 19). Either count may be 0. *out (malloc'd, *len bytes) is owned by the caller. Returns 0,
 * -errno (-ENOENT when the file is gone) or HM_ERR_TORRENT when the file is not a bencoded dictionary.
 */
int mirror_torrent_load(const struct mirror_data *d, const char *btih, const char *const *announce, size_t nannounce,
			const char *const *webseeds, size_t nwebseeds, char **out, size_t *len);

/* The data directory's secret key for capabilities in torrent URLs (access.h): <data>/p2p/secret,
 * 32 random bytes made on first use (mode 0600). Returns 0 or -errno. */
int mirror_p2p_secret(const struct mirror_data *d, unsigned char key[32]);

/* Remove torrent files no catalog row knows (after gc dropped snapshots). *removed counts them. */
int mirror_torrents_gc(struct mirror_data *d, size_t *removed);

#endif
