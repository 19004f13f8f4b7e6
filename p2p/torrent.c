/*
 * torrent.c - deterministic hybrid torrents of snapshots: the plain C half of p2p_torrent_create.
 *
 * Checks the arguments, sorts the files the way libtorrent lays out a hybrid torrent, lays out a farm
 * of symlinks workdir/<unique>/<name>/<path> -> source so that libtorrent's set_piece_hashes can read
 * the store's blobs under the torrent's own paths (no copy), calls the shim for the libtorrent part
 * and removes the farm again, whatever happened.
 */
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "p2p-int.h"
#include "p2p/p2p.h"

#define PIECE_MIN ((int64_t)64 * 1024)
#define PIECE_MAX P2P_MAX_PIECE
#define PIECES_TARGET 1500

int64_t p2p_torrent_piece_size(int64_t total)
{
	int64_t piece = PIECE_MIN;

	while (piece < PIECE_MAX && total / piece > PIECES_TARGET)
		piece *= 2;
	return piece;
}

/* Return code, and set *errmsg (if asked for) to the formatted message. */
__attribute__((format(printf, 3, 4)))
static int fail(char **errmsg, int code, const char *fmt, ...)
{
	if (errmsg) {
		struct buf b;
		va_list ap;

		buf_init(&b);
		va_start(ap, fmt);
		buf_vaddf(&b, fmt, ap);
		va_end(ap);
		*errmsg = buf_detach(&b, NULL);
	}
	return code;
}

/* An untrusted string made printable for a message: control bytes, '"' and '\' as \xNN. Caller frees. */
static char *quote(const char *s)
{
	struct buf b;

	buf_init(&b);
	if (!s) {
		buf_adds(&b, "(null)");
		return buf_detach(&b, NULL);
	}
	buf_addch(&b, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\')
			buf_addf(&b, "\\x%02x", *p);
		else
			buf_addch(&b, (char)*p);
	}
	buf_addch(&b, '"');
	return buf_detach(&b, NULL);
}

/*
 * Order paths component by component, comparing bytes as unsigned: the order of the keys of the v2
 * "file tree" and of libtorrent's canonical file list, so "a/b" sorts before "a-c" although '-' < '/'.
 * Mapping '/' below every byte a component may hold does exactly that, and it also puts every path
 * under "a/" right after "a", which is what the prefix check below relies on.
 */
static unsigned rank(unsigned char c)
{
	return c == '\0' ? 0 : c == '/' ? 1 : (unsigned)c + 2;
}

static int path_cmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	for (; *x && *x == *y; x++, y++)
		;
	return rank(*x) < rank(*y) ? -1 : rank(*x) > rank(*y) ? 1 : 0;
}

static int file_cmp(const void *a, const void *b)
{
	const struct p2p_file *const *fa = a, *const *fb = b;

	return path_cmp((*fa)->path, (*fb)->path);
}

/* nftw callback: remove everything below the farm, children first, never following a symlink. */
static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	if (remove(path) < 0 && errno != ENOENT)
		return errno;
	return 0;
}

/* Check everything that needs no filesystem access. Returns 0 or an error with *errmsg set. */
static int check_args(const char *name, const struct p2p_file *files, size_t n, const char *workdir,
		      struct p2p_torrent *out, char **errmsg)
{
	int64_t total = 0;

	if (!name || !workdir || !*workdir || !out || (n && !files))
		return fail(errmsg, HM_ERR_USAGE, "torrent: missing name, files, workdir or output");
	if (path_check_str(name) || strchr(name, '/')) {
		char *q = quote(name);
		int r = fail(errmsg, HM_ERR_PATH_UNSAFE, "torrent name %s is not one safe path component", q);
		free(q);
		return r;
	}
	if (n == 0)
		return fail(errmsg, -ENODATA, "torrent %s has no files: nothing to share", name);
	for (size_t i = 0; i < n; i++) {
		const struct p2p_file *f = &files[i];
		const char *why = NULL;
		int r = HM_ERR_USAGE;
		char *q;

		if (path_check_str(f->path)) {
			why = "is an unsafe path";
			r = HM_ERR_PATH_UNSAFE;
		} else if (f->size < 0 || f->size > INT64_MAX - total) {
			why = "has a bad size (or the sizes overflow)";
		} else if (!f->source || f->source[0] != '/') {
			why = "needs an absolute source path";
		}
		if (!why) {
			total += f->size;
			continue;
		}
		q = quote(f->path);
		fail(errmsg, r, "torrent file %s %s", q, why);
		free(q);
		return r;
	}
	/* libtorrent cannot make a torrent without a byte ("no file tree"); BitTorrent could not use it. */
	if (total == 0)
		return fail(errmsg, -ENODATA, "torrent %s has only empty files: nothing to share", name);
	return 0;
}

/* After sorting: no duplicates, no file that is a directory of another. */
static int check_sorted(const struct p2p_file **sorted, size_t n, char **errmsg)
{
	for (size_t i = 0; i + 1 < n; i++) {
		const char *a = sorted[i]->path, *b = sorted[i + 1]->path;
		size_t la = strlen(a);
		const char *what = NULL;

		if (!strcmp(a, b))
			what = "appears twice";
		else if (!strncmp(a, b, la) && b[la] == '/')
			what = "is a file and a directory";
		if (what) {
			char *qa = quote(a), *qb = quote(b);
			int r = fail(errmsg, HM_ERR_USAGE, "torrent file path %s %s (%s)", qa, what, qb);
			free(qa);
			free(qb);
			return r;
		}
	}
	return 0;
}

/* Every source is a regular file of the stated size (stat follows symlinks: the store may use them). */
static int check_sources(const struct p2p_file **sorted, size_t n, char **errmsg)
{
	for (size_t i = 0; i < n; i++) {
		const struct p2p_file *f = sorted[i];
		struct stat st;
		int r = 0;
		char *qp, *qs;

		if (stat(f->source, &st) < 0)
			r = -errno;
		else if (!S_ISREG(st.st_mode))
			r = -EINVAL;
		else if (st.st_size != f->size)
			r = HM_ERR_SIZE_MISMATCH;
		if (!r)
			continue;
		qp = quote(f->path);
		qs = quote(f->source);
		if (r == HM_ERR_SIZE_MISMATCH)
			fail(errmsg, r, "source %s of %s has %lld bytes, expected %lld", qs, qp,
			     (long long)st.st_size, (long long)f->size);
		else if (r == -EINVAL)
			fail(errmsg, r, "source %s of %s is not a regular file", qs, qp);
		else
			fail(errmsg, r, "source %s of %s: %s", qs, qp, err_str(r));
		free(qp);
		free(qs);
		return r;
	}
	return 0;
}

/* Lay out farm/<name>/<path> -> source for every file, making directories as needed. */
static int make_farm(const char *farm, const char *name, const struct p2p_file **sorted, size_t n,
		     char **errmsg)
{
	char *root = xasprintf("%s/%s", farm, name);
	const char *prev = NULL;   /* path of the previous file whose directory exists */
	size_t prev_dir = 0;       /* length of that directory part, 0 for the root */
	int r = 0;

	if (mkdir(root, 0700) < 0) {
		r = fail(errmsg, -errno, "creating %s: %s", root, err_str(-errno));
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const char *p = sorted[i]->path;
		const char *slash = strrchr(p, '/');
		size_t dir = slash ? (size_t)(slash - p) : 0;
		char *link;

		/* Sorted order keeps a directory's files together: mkdir only when the directory changes. */
		if (dir && !(prev && prev_dir == dir && !strncmp(prev, p, dir))) {
			char *d = xasprintf("%s/%.*s", root, (int)dir, p);
			int e = path_mkdirs(d, 0700);
			if (e)
				r = fail(errmsg, e, "creating %s: %s", d, err_str(e));
			free(d);
			if (r)
				goto out;
		}
		prev = p;
		prev_dir = dir;
		link = xasprintf("%s/%s", root, p);
		if (symlink(sorted[i]->source, link) < 0)
			r = fail(errmsg, -errno, "linking %s: %s", link, err_str(-errno));
		free(link);
		if (r)
			goto out;
	}
out:
	free(root);
	return r;
}

int p2p_torrent_create(const char *name, const struct p2p_file *files, size_t n, const char *workdir,
		       struct p2p_torrent *out, char **errmsg)
{
	const struct p2p_file **sorted = NULL;
	const char **paths = NULL;
	int64_t *sizes = NULL;
	struct p2p__built built = { 0 };
	char *farm = NULL;
	size_t wlen;
	int64_t total = 0;
	int r;

	r = check_args(name, files, n, workdir, out, errmsg);
	if (r)
		return r;
	sorted = xreallocarray(NULL, n, sizeof(*sorted));
	for (size_t i = 0; i < n; i++)
		sorted[i] = &files[i];
	qsort(sorted, n, sizeof(*sorted), file_cmp);
	r = check_sorted(sorted, n, errmsg);
	if (!r)
		r = check_sources(sorted, n, errmsg);
	if (r)
		goto out;

	wlen = strlen(workdir);
	while (wlen > 1 && workdir[wlen - 1] == '/')
		wlen--;
	farm = xasprintf("%.*s/.p2p-torrent-XXXXXX", (int)wlen, workdir);
	if (!mkdtemp(farm)) {
		r = fail(errmsg, -errno, "creating a temporary directory in %s: %s", workdir, err_str(-errno));
		FREE_AND_NULL(&farm);
		goto out;
	}
	r = make_farm(farm, name, sorted, n, errmsg);
	if (!r) {
		paths = xreallocarray(NULL, n, sizeof(*paths));
		sizes = xreallocarray(NULL, n, sizeof(*sizes));
		for (size_t i = 0; i < n; i++) {
			paths[i] = sorted[i]->path;
			sizes[i] = sorted[i]->size;
			total += sizes[i];
		}
		r = p2p__torrent_build(farm, name, paths, sizes, n, p2p_torrent_piece_size(total),
				       &built, errmsg);
	}
	/* The farm goes on every path; failing to remove it is an error too (the contract says gone). */
	{
		int e = nftw(farm, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		if (e && !r) {
			e = e > 0 ? -e : -errno;
			r = fail(errmsg, e, "removing %s: %s", farm, err_str(e));
		}
	}
	if (r)
		goto out;

	memset(out, 0, sizeof(*out));
	out->data = built.data;
	out->len = built.len;
	built.data = NULL;
	hex_encode(built.v1, sizeof(built.v1), out->btih);
	hex_encode(built.v2, sizeof(built.v2), out->btmh);
	out->piece_size = p2p_torrent_piece_size(total);
	out->pieces = built.pieces;
out:
	free(built.data);
	free(farm);
	free(paths);
	free(sizes);
	free(sorted);
	return r;
}

void p2p_torrent_release(struct p2p_torrent *t)
{
	if (!t)
		return;
	free(t->data);
	memset(t, 0, sizeof(*t));
}
