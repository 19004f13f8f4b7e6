/*
 * mount.h - a torrent as a read-only FUSE filesystem, its files fetched on demand from the swarm.
 *
 * The files appear at once (the listing comes from the torrent); a read waits for the pieces it
 * touches, which the swarm is asked for before any other, while the whole torrent downloads in the
 * background. Every byte a read returns is in a piece whose bytes in the cache file matched the
 * torrent's hash (p2p_session_have_range). A mount is a view: the torrent belongs to the session
 * (the agent's), which keeps it, and keeps seeding it, after the view is gone. Several mounts of one
 * process run side by side, each with its own FUSE loop thread.
 */
#ifndef HM_P2P_MOUNT_H
#define HM_P2P_MOUNT_H

#include <stdbool.h>

struct p2p_session;
struct p2p_mount;

struct p2p_mount_config {
	struct p2p_session *ses;        /* holds the torrent; must outlive the mount */
	const char *btih;               /* the torrent in ses */
	const char *dir;                /* the mount point: an existing, empty folder */
	int read_timeout_s;             /* a read waits this long for its pieces, then fails (EIO); 0: 600 */
};

/*
 * Mount the files of cfg->btih on cfg->dir and serve them from a thread of their own. Returns once
 * the files are visible: 0 and *out, or an error with *errmsg (malloc'd). A folder left mounted by a
 * process that died (its FUSE connection gone: ENOTCONN) is detached first.
 */
int p2p_mount_start(const struct p2p_mount_config *cfg, struct p2p_mount **out, char **errmsg);

/* Has the mount been detached from outside (umount, fusermount3 -u)? Its thread has then ended. */
bool p2p_mount_gone(const struct p2p_mount *m);

/* Detach (unless gone already) and free. A mount whose files are open answers -EBUSY and stays, unless
 * lazy (MNT_DETACH: the folder is detached at once and the files open there keep reading): that is
 * for a process about to end, which leaves such a mount's memory to its end. Returns 0 or -errno with
 * *errmsg; *m is NULL after 0. */
int p2p_mount_stop(struct p2p_mount **m, bool lazy, char **errmsg);

#endif
