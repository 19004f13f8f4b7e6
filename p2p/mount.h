/*
 * mount.h - a torrent as a read-only FUSE filesystem, its files fetched on demand from the swarm.
 *
 * The files appear at once (the listing comes from the torrent); a read waits for the pieces it
 * touches, which the swarm is asked for before any other, and a reader that reads on has the pieces
 * ahead of it asked for too; what else downloads is the owner's choice (the pieces it wants). Every byte a read returns is in a piece whose bytes in the cache file matched the
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

/* Has the mount ended (detached in every mount namespace and no file open there)? Its loop has then
 * returned, and p2p_mount_release frees it without waiting. */
bool p2p_mount_gone(const struct p2p_mount *m);

/*
 * Detach the folder, lazily (MNT_DETACH), and return at once: the folder is free in this mount
 * namespace, while files open there, and copies of the mount in other mount namespaces (a container
 * started meanwhile has one), go on reading until they let go. Never waits on those users. 0 (also
 * when the folder was detached already), or -errno with *errmsg.
 */
int p2p_mount_detach(struct p2p_mount *m, char **errmsg);

/* Does the kernel's connection of the mount still serve somebody (a mount of it in some namespace, or
 * a file open in one)? Asked right after p2p_mount_detach, false means it ended with the detach. Never
 * blocks. */
bool p2p_mount_connected(const struct p2p_mount *m);

/* Free a mount whose loop has ended (p2p_mount_gone): true and *m NULL. false while it still
 * serves somebody (ask again later). Never blocks. */
bool p2p_mount_release(struct p2p_mount **m);

/* The owner ends: reads waiting for bytes give up (EIO) instead of waiting for them. */
void p2p_mount_close(struct p2p_mount *m);

#endif
