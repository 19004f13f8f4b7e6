/*
 * mount.h - a torrent as a read-only FUSE filesystem, its files fetched on demand from the swarm.
 *
 * The files appear at once (the listing comes from the torrent); a read waits for the pieces it
 * touches, which the swarm is asked for before any other, while the whole torrent downloads in the
 * background into a cache folder. Every byte a read returns is in a piece
 * whose bytes in the cache file matched the torrent's hash (p2p_session_have_range).
 */
#ifndef HM_P2P_MOUNT_H
#define HM_P2P_MOUNT_H

#include <stdbool.h>
#include <stddef.h>

struct p2p_file_list;

/* A file of the torrent whose content is known by its sha256 (from the mirror's catalog). */
struct p2p_mount_known {
	const char *path;               /* as in the torrent, without its root folder */
	const char *sha256;             /* 64 lowercase hex digits */
};

struct p2p_mount_config {
	const unsigned char *torrent;   /* the .torrent (with its tracker and web seed), borrowed */
	size_t len;
	const char *dir;                /* the mount point (an existing, empty folder) */
	const char *cache_dir;          /* the bytes land in <cache_dir>/<btih>/<name>/<path> */
	const char *listen;             /* libtorrent listen interfaces; NULL: "0.0.0.0:0" */
	int read_timeout_s;             /* a read waits this long for its pieces, then fails (EIO); 0: 600 */
	/* The contents of the files, if known. Each content a finished torrent holds is kept as
	 * <cache_dir>/by-sha256/<sha256> (a hard link); a later torrent with that content (another
	 * revision) gets it placed before it starts, so only what changed is fetched (libtorrent checks
	 * what was placed against the torrent's hashes). */
	const struct p2p_mount_known *known;
	size_t nknown;
	const char *name;               /* the torrent's root folder name (needed to place contents) */
	/* Called once the files are visible in dir, from the mounting thread: links to them (the Hugging
	 * Face cache), telling a waiting parent. A non-zero return unmounts and is returned. May be NULL. */
	int (*on_mounted)(void *ud, const char *btih, const struct p2p_file_list *files);
	void *ud;
};

/*
 * Mount and serve until unmounted (umount / fusermount3 -u, or SIGINT/SIGTERM, which unmount).
 * Returns 0 after a clean unmount, or an error with *errmsg (malloc'd) when it could not mount.
 */
int p2p_mount_run(const struct p2p_mount_config *cfg, char **errmsg);

#endif
