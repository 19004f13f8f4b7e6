/*
 * keep.c - contents kept by sha256 across snapshots (see keep.h).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hex.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "keep.h"
#include "p2p.h"

static int by_path(const void *a, const void *b)
{
	return strcmp((*(const struct p2p_file_entry *const *)a)->path,
		      (*(const struct p2p_file_entry *const *)b)->path);
}

size_t p2p_keep_place(const char *cache_dir, const char *name, const struct p2p_known *known, size_t n,
		      const unsigned char *torrent, size_t len, const char *save)
{
	size_t placed = 0;

	for (size_t i = 0; name && i < n; i++) {
		const struct p2p_known *k = &known[i];
		char *have, *dest, *slash;
		struct stat st;

		if (!k->sha256 || !hex_is_lower(k->sha256, 64) || path_check_str(k->path) || path_check_str(name))
			continue;
		have = xasprintf("%s/by-sha256/%s", cache_dir, k->sha256);
		dest = xasprintf("%s/%s/%s", save, name, k->path);
		if (stat(have, &st) == 0 && S_ISREG(st.st_mode) && lstat(dest, &st) < 0) {
			slash = strrchr(dest, '/');
			*slash = '\0';
			if (!path_mkdirs(dest, 0755)) {
				*slash = '/';
				/* Only a content that is exactly the torrent's file stays placed: a piece libtorrent
				 * found wrong there would be fetched and written into this inode, which other
				 * snapshots share (the mirror names the sha256; the torrent's hashes decide). */
				if (link(have, dest) == 0) {
					if (p2p_torrent_verify_file(torrent, len, save, k->path) == 1)
						placed++;
					else
						unlink(dest);
				}
			}
		}
		free(have);
		free(dest);
	}
	return placed;
}

size_t p2p_keep_index(struct p2p_session *ses, const char *btih, const char *cache_dir,
		      const struct p2p_known *known, size_t n)
{
	struct p2p_file_list files = { 0 };
	const struct p2p_file_entry **sorted;
	char *dir;
	size_t pending = 0;

	if (p2p_session_files(ses, btih, &files))
		return n;
	sorted = xcalloc(files.n ? files.n : 1, sizeof(*sorted));
	for (size_t i = 0; i < files.n; i++)
		sorted[i] = &files.v[i];
	qsort(sorted, files.n, sizeof(*sorted), by_path);
	dir = xasprintf("%s/by-sha256", cache_dir);
	path_mkdirs(dir, 0755);
	for (size_t i = 0; i < n; i++) {
		const struct p2p_known *k = &known[i];
		struct p2p_file_entry key = { .path = (char *)k->path }, *kp = &key;
		const struct p2p_file_entry **found = bsearch(&kp, sorted, files.n, sizeof(*sorted), by_path);
		char *src = NULL, *dst;
		struct stat st;
		int have;

		if (!found || !k->sha256 || !hex_is_lower(k->sha256, 64) || (*found)->size == 0)
			continue;
		dst = xasprintf("%s/%s", dir, k->sha256);
		if (lstat(dst, &st) == 0) {
			free(dst); /* kept already (this torrent's earlier pass, or another's) */
			continue;
		}
		have = p2p_session_have_range(ses, btih, (*found)->index, 0, (*found)->size);
		pending += have == 0;
		/* verified against the torrent's v2 hashes, which the mirror computed from the bytes it
		 * checked against this sha256: no second pass over them (keep.h) */
		if (have == 1 && !p2p_session_file_path(ses, btih, (*found)->index, &src) && link(src, dst) < 0) {
			/* another filesystem, or a race with another snapshot: the next torrent downloads it */
		}
		free(dst);
		free(src);
	}
	free(dir);
	free(sorted);
	p2p_file_list_release(&files);
	return pending;
}
