/*
 * p2p-int.h - what the C files of p2p/ and the shim share; nothing outside p2p/ includes it.
 *
 * Names here are p2p__ (two underscores): internal, but across files of the folder.
 */
#ifndef HM_P2P_INT_H
#define HM_P2P_INT_H

#include <stddef.h>
#include <stdint.h>

/* What p2p__torrent_build hands back: raw hashes; torrent.c turns them into hex. */
struct p2p__built {
	unsigned char *data;   /* bencoded .torrent, malloc'd, owned by the caller */
	size_t len;
	unsigned char v1[20];  /* SHA-1 of the bencoded info dictionary */
	unsigned char v2[32];  /* SHA-256 of the same */
	int64_t pieces;
};

/*
 * The libtorrent half of p2p_torrent_create (shim-torrent.cpp). files[i] (already checked, sorted and
 * free of duplicates) is files[i]->path in the torrent, its bytes read from its source (a regular file
 * of its size) or its reader. Hashes every file itself (SHA-1 and SHA-256, one thread per core),
 * generates the hybrid torrent without creation date, creator or comment, loads it back to make sure
 * every path survives libtorrent's loader unchanged, and fills *out.
 * Returns 0, -errno or HM_ERR_SIZE_MISMATCH (a source that cannot be read whole), a reader's error,
 * HM_ERR_PATH_UNSAFE (a path the loader would rename) or HM_ERR_TORRENT, with a malloc'd message in
 * *errmsg (if not NULL) on error; *out is written only on success. Never throws.
 */
struct p2p_file;
int p2p__torrent_build(const char *name, const struct p2p_file *const *files, size_t n, int64_t piece_size,
		       struct p2p__built *out, char **errmsg);

#endif
