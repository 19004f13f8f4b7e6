/*
 * p2p.h - the swarm: a plain C view of libtorrent-rasterbar.
 *
 * Everything libtorrent is behind this header; no C++ type crosses it, and every function catches
 * exceptions and turns them into error codes (style.md). The implementation is p2p/shim.cpp, the only
 * C++ in the project.
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
};

struct p2p_session_status {
	int listen_port;   /* TCP port the session listens on */
	bool dht;          /* settings as libtorrent reports them back */
	bool upnp;
	bool natpmp;
	bool lsd;
	bool multiple_connections_per_ip;
};

/*
 * Start a session and wait until it listens (at most a few seconds). On success *out is the new
 * session, owned by the caller (p2p_session_free). On failure returns HM_ERR_TORRENT and, if errmsg
 * is not NULL, sets *errmsg to a malloc'd message the caller frees; *out is untouched.
 */
int p2p_session_new(const struct p2p_session_config *cfg, struct p2p_session **out, char **errmsg);

/* Read back the settings in force and the listen port. Returns 0 or HM_ERR_TORRENT. */
int p2p_session_status(struct p2p_session *s, struct p2p_session_status *out);

/* Stop the session (aborts its network activity) and free it. Accepts NULL and *s == NULL. */
void p2p_session_free(struct p2p_session **s);

/* libtorrent's version string, e.g. "2.0.8.0". Static. */
const char *p2p_version(void);

/*
 * Torrents of snapshots (p2p/torrent.c; the hashing is libtorrent's, in the shim).
 *
 * One torrent per snapshot, hybrid v1+v2 (so v1-only clients such as aria2c can join), deterministic:
 * every node that holds the same files builds the same bytes and so the same info-hashes, which is what
 * lets every mirror seed the same swarm (design.md "Distribution"). The layout is always
 * <name>/<path> with pad files (".pad/N") between files and after the last one unless it is the only
 * one: libtorrent 2.0.8 adds them in hybrid torrents so that every file starts on a piece; clients never
 * request them, and they are not to be shown to users.
 */

/* One file of a torrent: its path inside the torrent (relative, '/'-separated, as checked by
 * base/path.h), its size, and where its bytes are now (an absolute path to a file; for hubmirror a
 * content-addressed blob in the store). Borrowed. */
struct p2p_file {
	const char *path;
	int64_t size;
	const char *source;
};

struct p2p_torrent {
	unsigned char *data;  /* the bencoded .torrent (no announce, no url-list), owned; p2p_torrent_release */
	size_t len;
	char btih[41];        /* v1 info-hash, lowercase hex */
	char btmh[65];        /* v2 info-hash (sha256), lowercase hex; magnet form urn:btmh:1220<btmh> */
	int64_t piece_size;
	int64_t pieces;       /* number of pieces, counting the bytes of pad files */
};

/* The piece size for a torrent of total bytes: 64 KiB, doubled while total / piece > 1500, at most 16 MiB. */
int64_t p2p_torrent_piece_size(int64_t total);

/*
 * Build the torrent of files (any order; sorted by path inside) named name (one safe path
 * component: no '/', not "." or "..", not empty). Deterministic: the same name and file list with the
 * same contents give the same bytes and info-hashes on every node (hybrid v1+v2, flag no_attributes,
 * no creation date, no creator, no comment, piece size from p2p_torrent_piece_size). The hashes are
 * computed by libtorrent's set_piece_hashes over a temporary directory of symlinks
 * workdir/<unique>/<name>/<path> -> source, which is removed before returning, on success and on error.
 * workdir must exist; sources are only read. Every source must exist and have the stated size. A crash
 * can leave a workdir/.p2p-torrent-* behind: it holds symlinks only, and removing it is safe.
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
 * stated size (HM_ERR_SIZE_MISMATCH); a workdir that cannot hold the farm (-errno); a failure inside
 * libtorrent (HM_ERR_TORRENT).
 *
 * A snapshot of a single file gives a torrent whose one file sits in the <name> directory (libtorrent
 * adds no pad file after a lone file): the layout for which libtorrent 2.0.8 peers request a wrong
 * web-seed URL (libtorrent-notes.md), so such a swarm must not rely on the web seed alone.
 *
 * Blocking: reads every byte of every source (SHA-1 and SHA-256), so run it off the event loop. Loading
 * a torrent of many files (tens of thousands) needs raised load_torrent_limits on the reading side.
 *
 * Returns 0 and fills *out (the caller then owns out->data), or an error code, leaves *out untouched and
 * (if errmsg) sets *errmsg to a malloc'd message the caller frees.
 */
int p2p_torrent_create(const char *name, const struct p2p_file *files, size_t n, const char *workdir,
		       struct p2p_torrent *out, char **errmsg);

/* Free t->data and clear *t. Accepts NULL and a cleared or released struct. */
void p2p_torrent_release(struct p2p_torrent *t);

#endif
