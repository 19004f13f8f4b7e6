/*
 * mount.h - a torrent as a read-only FUSE filesystem, its files fetched on demand from the swarm.
 *
 * The files appear at once (the listing comes from the torrent); a read waits for the pieces it
 * touches, which the swarm is asked for before any other, and a reader that reads on has the pieces
 * ahead of it asked for too; what else downloads is the owner's choice (the pieces it wants). Every byte a read returns
 * is in a piece whose bytes in the cache file matched the torrent's hash (p2p_session_have_range). A mount is a view:
 * the torrent belongs to the session (the agent's), which keeps it, and keeps seeding it, after the view is gone.
 * Several mounts of one process run side by side, each with its own FUSE loop thread.
 */
#ifndef HM_P2P_MOUNT_H
#define HM_P2P_MOUNT_H

#include <stdbool.h>
#include <stddef.h>

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

/* p2p_mount_release for a mount whose connection has ended (p2p_mount_connected said false): its loop
 * returns a moment later (its threads wind down), and this waits for that, at most max_ms. true and
 * *m NULL once released; false if it still runs then (p2p_mount_release later). */
bool p2p_mount_release_ended(struct p2p_mount **m, int max_ms);

/* The owner ends: reads waiting for bytes give up (EIO) instead of waiting for them. */
void p2p_mount_close(struct p2p_mount *m);

/*
 * Serve the file path (as the mount lists it) straight from source, a file of the owner's cache that
 * holds it whole, verified, and stays so while mounted (never emptied, rewritten or deleted): a
 * read-only bind mount of source over the file's place in the mount. Opens from then on read the
 * cache's file as a local file, with no FUSE request and no copy through this process (a loader on a
 * held checkpoint as fast as on local disk); files open before go on through FUSE. p2p_mount_detach
 * takes them with the mount. Root only. Blocking (path lookups go through the mount: its loop must
 * run, so never from a thread the mount's reads wait on). 0 (also when it is served so already),
 * -EPERM (not root: nothing done), -ENOENT (no such file, or the mount is detached), -ESTALE (the
 * folder holds another mount now, source is not that file, or gen is older than the last fence), or
 * -errno with *errmsg.
 */
int p2p_mount_shortcut(struct p2p_mount *m, const char *path, const char *source, unsigned gen, char **errmsg);
/* The owner's word that its cache's bytes are good, for p2p_mount_shortcut's gen: taken when the
 * files were found verified. p2p_mount_shortcuts_fence ends it at once (the owner found them damaged;
 * not blocking): a shortcut asked for before the fence, on a job that runs after it, is not made
 * (-ESTALE). */
unsigned p2p_mount_shortcut_gen(const struct p2p_mount *m);
void p2p_mount_shortcuts_fence(struct p2p_mount *m);
/* Serve every file through FUSE again (the shortcuts detached, lazily: files open through them read
 * on): the owner found the cache's bytes damaged (fence first). Blocking, as p2p_mount_shortcut;
 * never at once with it (a shortcut being made is either made before and dropped, or refused). */
void p2p_mount_shortcuts_drop(struct p2p_mount *m);
/* How many files are so served. */
size_t p2p_mount_shortcuts(const struct p2p_mount *m);
/* Keep m from being freed (p2p_mount_release says false) while a job of the owner's that will call
 * p2p_mount_shortcut waits for its thread: hold true before it is queued, false when it is done. */
void p2p_mount_hold(struct p2p_mount *m, bool hold);

#endif
