/*
 * keep.h - contents kept across snapshots: an instance's cache holds each finished file once more by
 * its sha256 (<cache>/by-sha256/<sha256>, a hard link), so that a later snapshot with the same content
 * (another revision, another repo) gets it placed before its torrent starts and fetches only what
 * changed.
 *
 * The name is an index, never a proof: a content is kept under the sha256 the mirror names for it once
 * every byte of the file passed the torrent's hashes (the mirror made the torrent's v2 hashes from the
 * bytes it checked against that sha256, so no second pass over them here), and a kept content is
 * placed into a new torrent's folder only if every piece of it matches that torrent (libtorrent would
 * otherwise fetch the bad piece and write it into an inode other snapshots share). A name the mirror
 * got wrong costs a fetch, never a wrong byte. docs/security.md.
 */
#ifndef HM_P2P_KEEP_H
#define HM_P2P_KEEP_H

#include <stddef.h>

struct p2p_session;

/* A file of a torrent whose content the mirror names by its sha256. */
struct p2p_known {
	const char *path;               /* as in the torrent, without its root folder */
	const char *sha256;             /* 64 lowercase hex digits (anything else is ignored) */
};

/*
 * Before a torrent starts: hard-link every known content that <cache_dir>/by-sha256 holds to its place
 * <save>/<name>/<path>, and keep it there only if the torrent's hashes accept it whole. Paths that are
 * not safe relative paths are skipped. Blocking (reads what it places). Returns how many it placed.
 */
size_t p2p_keep_place(const char *cache_dir, const char *name, const struct p2p_known *known, size_t n,
		      const unsigned char *torrent, size_t len, const char *save);

/*
 * After the torrent btih of ses has every piece: keep each known content by its sha256, once every byte
 * of the file is verified (p2p_session_have_range). Returns how many are not verified in the file yet
 * (their last writes may be pending when the torrent says it finished): call again later for those.
 * Blocking (a piece not yet seen verified is read back): run it off any loop, at low priority.
 */
size_t p2p_keep_index(struct p2p_session *ses, const char *btih, const char *cache_dir,
		      const struct p2p_known *known, size_t n);

#endif
