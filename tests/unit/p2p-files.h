/*
 * p2p-files.h - helpers shared by the p2p unit tests that move real files between sessions: a
 * temporary tree's removal, a clock, and files of seeded pseudo-random bytes. Header-only (static),
 * like test.h; include after <ftw.h>, <fcntl.h>, <uv.h> and base/path.h, base/xmalloc.h.
 */
#ifndef HM_TEST_P2P_FILES_H
#define HM_TEST_P2P_FILES_H

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	remove(path);
	return 0;
}

static double now_s(void)
{
	return (double)uv_hrtime() / 1e9;
}

/* Write len pseudo-random bytes (seeded) to dir/rel, creating folders; returns the path (caller frees). */
static char *make_file(const char *dir, const char *rel, size_t len, unsigned seed)
{
	char *path = xasprintf("%s/%s", dir, rel);
	char *parent = xstrdup(path);
	unsigned char *d = xmalloc(len ? len : 1);
	int fd;

	*strrchr(parent, '/') = '\0';
	if (path_mkdirs(parent, 0755)) {
		printf("Bail out! mkdir %s\n", parent);
		exit(1);
	}
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		d[i] = (unsigned char)(seed >> 16);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, d, len) != (ssize_t)len) {
		printf("Bail out! cannot write %s\n", path);
		exit(1);
	}
	close(fd);
	free(d);
	free(parent);
	return path;
}


#endif
