/*
 * torrent.c - deterministic hybrid torrents of snapshots: the plain C half of p2p_torrent_create.
 *
 * Checks the arguments, sorts the files the way libtorrent lays out a hybrid torrent, picks the piece
 * size and calls the shim (shim-torrent.cpp), which hashes every file from its source.
 */
#include <errno.h>
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
#define PIECE_FLOOR ((int64_t)16 * 1024) /* BitTorrent v2's smallest piece */
#define PIECES_TARGET 1500

int64_t p2p_torrent_piece_size(int64_t total)
{
	int64_t piece = PIECE_MIN;

	while (piece < PIECE_MAX && total / piece > PIECES_TARGET)
		piece *= 2;
	return piece;
}

/* Pieces of the files at piece size p (every file starts a piece: hybrid layout), and the bytes they
 * span, pads included; both saturate instead of overflowing. */
static void layout_at(const int64_t *sizes, size_t n, int64_t p, int64_t *pieces, int64_t *spanned)
{
	*pieces = 0;
	*spanned = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t k = sizes[i] > 0 ? sizes[i] / p + (sizes[i] % p != 0) : 0;
		*pieces = *pieces > INT64_MAX - k ? INT64_MAX : *pieces + k;
		*spanned = k > INT64_MAX / p || *spanned > INT64_MAX - k * p ? INT64_MAX : *spanned + k * p;
	}
}

int64_t p2p_torrent_piece_size_for(const int64_t *sizes, size_t n)
{
	int64_t total = 0, piece, pieces, spanned, half_pieces, half_spanned;

	for (size_t i = 0; i < n; i++)
		total = sizes[i] > 0 && total > INT64_MAX - sizes[i] ? INT64_MAX
								     : total + (sizes[i] > 0 ? sizes[i] : 0);
	piece = p2p_torrent_piece_size(total);
	layout_at(sizes, n, piece, &pieces, &spanned);
	/* Many files smaller than a piece: each is padded to a whole piece, and the pads are hashed as
	 * zeros (100,000 files of 3 KB at 256 KiB: 26 GB to hash). Halve the piece while the pads
	 * outweigh the payload, unless that would add more than PIECES_TARGET pieces (the big files'). */
	while (piece > PIECE_FLOOR && spanned / 2 > total) {
		layout_at(sizes, n, piece / 2, &half_pieces, &half_spanned);
		if (half_pieces - pieces > PIECES_TARGET)
			break;
		piece /= 2;
		pieces = half_pieces;
		spanned = half_spanned;
	}
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

/* Check everything that needs no filesystem access. Returns 0 or an error with *errmsg set. */
static int check_args(const char *name, const struct p2p_file *files, size_t n, struct p2p_torrent *out,
		      char **errmsg)
{
	int64_t total = 0;

	if (!name || !out || (n && !files))
		return fail(errmsg, HM_ERR_USAGE, "torrent: missing name, files or output");
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
		} else if (!f->read && (!f->source || f->source[0] != '/')) {
			why = "needs an absolute source path or a reader";
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

/* Every source is a regular file of the stated size (stat follows symlinks: the store may use them); a
 * reader is taken at its word until it reads (it fails the torrent then). */
static int check_sources(const struct p2p_file **sorted, size_t n, char **errmsg)
{
	for (size_t i = 0; i < n; i++) {
		const struct p2p_file *f = sorted[i];
		struct stat st;
		int r = 0;
		char *qp, *qs;

		if (f->read)
			continue;
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

int p2p_torrent_create(const char *name, const struct p2p_file *files, size_t n, struct p2p_torrent *out,
		       char **errmsg)
{
	const struct p2p_file **sorted = NULL;
	int64_t *sizes = NULL;
	struct p2p__built built = { 0 };
	int64_t piece = 0;
	int r;

	r = check_args(name, files, n, out, errmsg);
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

	sizes = xreallocarray(NULL, n, sizeof(*sizes));
	for (size_t i = 0; i < n; i++)
		sizes[i] = sorted[i]->size;
	piece = p2p_torrent_piece_size_for(sizes, n);
	r = p2p__torrent_build(name, sorted, n, piece, &built, errmsg);
	if (r)
		goto out;

	memset(out, 0, sizeof(*out));
	out->data = built.data;
	out->len = built.len;
	built.data = NULL;
	hex_encode(built.v1, sizeof(built.v1), out->btih);
	hex_encode(built.v2, sizeof(built.v2), out->btmh);
	out->piece_size = piece;
	out->pieces = built.pieces;
out:
	free(built.data);
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
