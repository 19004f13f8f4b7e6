/*
 * p2p-ondemand.h - the torrent the on-demand unit tests read (test-p2p-ondemand*.c): "OnDemand", four
 * files of seeded pseudo-random bytes (a small one, an empty one, a big one and a middle one, so there
 * are pad files) made into an 8 MiB hybrid torrent; whether a range of two files is the same (adding a
 * torrent to a session is p2p-files.h's p2p_test_add). Header-only (static), like test.h; include
 * after p2p-files.h and what it needs.
 */
#ifndef HM_TEST_P2P_ONDEMAND_H
#define HM_TEST_P2P_ONDEMAND_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "p2p/p2p.h"

/* ---- the torrent ---- */

enum { F_CONFIG, F_EMPTY, F_MODEL, F_TOKENIZER, NFILES };
static const char *const rel[NFILES] = { "config.json", "empty.txt", "weights/model.bin", "weights/tok.json" };
static const size_t sizes[NFILES] = { 517, 0, 8000000, 300000 };
static char *src[NFILES];          /* the files it was made of, in dir/OnDemand */
static struct p2p_torrent tor;

/* Make the files in dir/OnDemand (src[]) and the torrent of them (tor); p2p_torrent_create's answer. */
static inline int ondemand_torrent(const char *dir)
{
	struct p2p_file f[NFILES];
	char *err = NULL;
	int r;

	for (int i = 0; i < NFILES; i++) {
		char *sub = xasprintf("OnDemand/%s", rel[i]);
		src[i] = make_file(dir, sub, sizes[i], 40u + (unsigned)i);
		free(sub);
		f[i] = (struct p2p_file){ .path = rel[i], .size = (int64_t)sizes[i], .source = src[i] };
	}
	r = p2p_torrent_create("OnDemand", f, NFILES, &tor, &err);
	if (err)
		printf("#   create: %s\n", err);
	free(err);
	return r;
}

static inline void ondemand_torrent_release(void)
{
	p2p_torrent_release(&tor);
	for (int i = 0; i < NFILES; i++) {
		free(src[i]);
		src[i] = NULL;
	}
}

/* ---- files and sessions ---- */

/* Do bytes [off, off + len) of files a and b match (and can both be read whole)? */
static inline int same_range(const char *a, const char *b, int64_t off, size_t len)
{
	unsigned char *da = xmalloc(len ? len : 1), *db = xmalloc(len ? len : 1);
	int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY);
	int same = fa >= 0 && fb >= 0 && pread(fa, da, len, off) == (ssize_t)len &&
		   pread(fb, db, len, off) == (ssize_t)len && !memcmp(da, db, len);

	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	free(da);
	free(db);
	return same;
}

static inline int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) || stat(b, &sb) || sa.st_size != sb.st_size)
		return 0;
	return same_range(a, b, 0, (size_t)sa.st_size);
}


#endif
