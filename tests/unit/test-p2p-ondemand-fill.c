/*
 * test-p2p-ondemand-fill.c - pieces that come to a session from elsewhere than its peers, the agent's
 * fills of a torrent read on demand (test-p2p-ondemand.c is the reading). C, with no peer, is handed
 * pieces (add_piece): the one a reader waits for is taken once, a piece of the wrong size is refused
 * and one with a wrong byte dropped by libtorrent's check, the right ones are had, readable and
 * seeded. Pieces written without libtorrent (write_piece, the direct fill) are had for reads at once
 * and checked against the torrent's v2 (SHA-256) hashes, not its v1 ones; the torrent handed over
 * whole (reseed) seeds to a peer; a file read back from the disk is checked the same way. Readers
 * waiting for different pieces (wait_range) are each woken by their own piece, not by another's. The
 * torrent is p2p-ondemand.h's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "base/err.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "p2p/p2p.h"
#include "test.h"
#include "p2p-files.h"
#include "p2p-ondemand.h"

static char *tmp_root;

/* ---- pieces from elsewhere (the agent's HTTP fill) ---- */

/* Piece p of the torrent as add_piece wants it: the bytes of the file it starts in, then zeros. */
static char *piece_bytes(const struct p2p_file_list *l, int p, size_t *len)
{
	int64_t at = (int64_t)p * l->piece_size;
	int64_t plen = p == l->pieces - 1 ? l->total - at : l->piece_size;
	char *buf = xcalloc(1, (size_t)plen);

	*len = (size_t)plen;
	for (size_t i = 0; i < l->n; i++) {
		const struct p2p_file_entry *e = &l->v[i];
		if (e->size && e->offset <= at && at < e->offset + e->size) {
			int64_t n = e->offset + e->size - at < plen ? e->offset + e->size - at : plen;
			for (int k = 0; k < NFILES; k++)
				if (!strcmp(rel[k], e->path)) {
					int fd = open(src[k], O_RDONLY);
					if (fd < 0 || pread(fd, buf, (size_t)n, at - e->offset) != (ssize_t)n)
						memset(buf, 0xee, (size_t)plen);
					if (fd >= 0)
						close(fd);
				}
		}
	}
	return buf;
}

static bool have_piece(struct p2p_session *c, const struct p2p_file_list *l, int p)
{
	unsigned char *had = xcalloc((size_t)l->pieces, 1);
	bool r = p2p_session_pieces_had(c, tor.btih, had, NULL, l->pieces) == 0 && had[p];

	free(had);
	return r;
}

/* C (no peer: only what it is handed) adds the torrent: its pieces as listed, files starting on
 * pieces, none had and none seen anywhere. Returns the big file's entry in l, or -1. */
static int handed_nothing_yet(struct p2p_session *c, const char *cdir, struct p2p_file_list *l)
{
	unsigned char *had;
	int *avail, model = -1, r = 1;
	double end;

	CHECK_INT(p2p_test_add(c, &tor, cdir, false), 0);
	CHECK_INT(p2p_session_files(c, tor.btih, l), 0);
	CHECK_INT(l->pieces, tor.pieces);
	CHECK(l->piece_size == tor.piece_size);
	CHECK(l->total == (int64_t)l->pieces * l->piece_size || l->total > (int64_t)(l->pieces - 1) * l->piece_size);
	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i].size)
			CHECK_INT(l->v[i].offset % l->piece_size, 0); /* files start on pieces */
		if (!strcmp(l->v[i].path, rel[F_MODEL]))
			model = (int)i;
	}
	CHECK(model >= 0);
	if (model < 0)
		return -1;
	had = xcalloc((size_t)l->pieces, 1);
	avail = xcalloc((size_t)l->pieces, sizeof(*avail));
	CHECK_INT(p2p_session_pieces_had(c, tor.btih, had, NULL, l->pieces - 1), -EINVAL);
	end = now_s() + 10;
	while (now_s() < end && (r = p2p_session_pieces_had(c, tor.btih, had, avail, l->pieces)) == 1)
		usleep(10000); /* libtorrent checks the (missing) files first */
	CHECK_INT(r, 0);
	for (int p = 0; p < l->pieces; p++) {
		CHECK_INT(had[p], 0);
		CHECK_INT(avail[p], 0); /* no peer */
	}
	CHECK_INT(p2p_session_pieces_had(c, "0000000000000000000000000000000000000000", had, NULL, l->pieces),
		  HM_ERR_NOT_FOUND);
	free(had);
	free(avail);
	return model;
}

/* A piece of the wrong size is refused; one with a wrong byte is dropped by libtorrent's check. good
 * (len bytes) is piece first, the model's fourth. */
static void handed_wrong(struct p2p_session *c, const struct p2p_file_list *l, int model, int first,
			 const char *good, size_t len)
{
	char *bad;
	double end;

	CHECK_INT(p2p_session_add_piece(c, tor.btih, first, good, len - 1), -EINVAL);
	CHECK_INT(p2p_session_add_piece(c, tor.btih, l->pieces, good, len), -EINVAL);
	bad = xmalloc(len);
	memcpy(bad, good, len);
	bad[len / 2] ^= 1;
	CHECK_INT(p2p_session_add_piece(c, tor.btih, first, bad, len), 0);
	free(bad);
	end = now_s() + 1.5;
	while (now_s() < end && !have_piece(c, l, first))
		usleep(10000);
	CHECK(!have_piece(c, l, first));
	CHECK_INT(p2p_session_have_range(c, tor.btih, l->v[model].index, 3 * l->piece_size, l->piece_size), 0);
}

/* The right bytes: had, readable, and seeded like any piece (the last piece too, pad and all).
 * libtorrent drops a failed piece's blocks asynchronously and ignores blocks it still holds: the
 * good piece may need handing again (as the agent's fill does after a while) */
static void handed_right(struct p2p_session *c, const struct p2p_file_list *l, int model, int first,
			 const char *good)
{
	int last = first + 1;
	char *cpath = NULL, *tail;
	size_t len;
	double end;

	{
		char *next = piece_bytes(l, last, &len);
		double again = 0;
		CHECK_INT(p2p_session_add_piece(c, tor.btih, last, next, len), 0);
		free(next);
		end = now_s() + 10;
		while (now_s() < end && p2p_session_have_range(c, tor.btih, l->v[model].index, 3 * l->piece_size,
							       2 * l->piece_size) != 1) {
			if (now_s() >= again && !have_piece(c, l, first)) {
				CHECK_INT(p2p_session_add_piece(c, tor.btih, first, good, l->piece_size), 0);
				again = now_s() + 1;
			}
			usleep(10000);
		}
	}
	CHECK_INT(p2p_session_have_range(c, tor.btih, l->v[model].index, 3 * l->piece_size, 2 * l->piece_size), 1);
	CHECK_INT(p2p_session_file_path(c, tor.btih, l->v[model].index, &cpath), 0);
	CHECK(cpath && same_range(src[F_MODEL], cpath, 3 * l->piece_size, (size_t)(2 * l->piece_size)));
	tail = piece_bytes(l, l->pieces - 1, &len);
	CHECK_INT(p2p_session_add_piece(c, tor.btih, l->pieces - 1, tail, len), 0);
	end = now_s() + 10;
	while (now_s() < end && !have_piece(c, l, l->pieces - 1))
		usleep(10000);
	CHECK(have_piece(c, l, l->pieces - 1));
	free(tail);
	free(cpath);
}

TEST(pieces_from_elsewhere)
{
	struct p2p_session_config cfg = { .listen_interfaces = "127.0.0.1:0" };
	char *cdir = xasprintf("%s/C", tmp_root), *good = NULL;
	struct p2p_session *c = NULL;
	struct p2p_file_list l = { 0 };
	int model, first;
	size_t len;

	/* C has no peer: only what it is handed */
	CHECK_INT(p2p_session_new(&cfg, &c, NULL), 0);
	if (!c || (model = handed_nothing_yet(c, cdir, &l)) < 0)
		goto out;

	/* what a reader waits for, once */
	CHECK_INT(p2p_session_take_wanted(c, tor.btih), -1);
	first = (int)(l.v[model].offset / l.piece_size) + 3;
	CHECK_INT(p2p_session_want_range(c, tor.btih, l.v[model].index, 3 * l.piece_size, 2 * l.piece_size, 0), 0);
	CHECK_INT(p2p_session_take_wanted(c, tor.btih), first);
	CHECK_INT(p2p_session_take_wanted(c, tor.btih), -1);

	good = piece_bytes(&l, first, &len);
	handed_wrong(c, &l, model, first, good, len);
	handed_right(c, &l, model, first, good);
out:
	free(good);
	p2p_file_list_release(&l);
	p2p_session_free(&c);
	free(cdir);
}

/* ---- pieces written without libtorrent, then handed to it (the agent's direct fill) ---- */

/* c adds the torrent into dir, waits for libtorrent's check of the (missing) files, and pauses its
 * downloads (direct mode: only what is written here comes); *l gets the file list. */
static bool added_direct(struct p2p_session *c, const char *dir, struct p2p_file_list *l)
{
	unsigned char *had;
	double end = now_s() + 10;
	int r = 1;

	CHECK_INT(p2p_test_add(c, &tor, dir, false), 0);
	CHECK_INT(p2p_session_files(c, tor.btih, l), 0);
	if (!l->pieces)
		return false;
	had = xcalloc((size_t)l->pieces, 1);
	while (now_s() < end && (r = p2p_session_pieces_had(c, tor.btih, had, NULL, l->pieces)) == 1)
		usleep(10000);
	free(had);
	CHECK_INT(r, 0);
	CHECK_INT(p2p_session_download_pause(c, tor.btih, true), 0);
	return r == 0;
}

TEST(direct_pieces)
{
	struct p2p_session_config cfg = { .listen_interfaces = "127.0.0.1:0", .lan_tuning = true };
	struct p2p_session *c = NULL, *e = NULL;
	struct p2p_session_status cs;
	struct p2p_torrent_status st = { 0 };
	struct p2p_file_list l = { 0 };
	char *cdir = xasprintf("%s/C2", tmp_root), *edir = xasprintf("%s/E2", tmp_root), ep[32], *err = NULL;
	double end;

	CHECK_INT(p2p_session_new(&cfg, &c, NULL), 0);
	CHECK_INT(p2p_session_new(&cfg, &e, NULL), 0);
	if (!c || !e || !added_direct(c, cdir, &l))
		goto out;
	for (int p = 0; p < l.pieces; p++) {
		size_t len;
		char *b = piece_bytes(&l, p, &len);
		if (p == 1) {
			b[7] ^= 1; /* a wrong byte: refused, nothing counts */
			CHECK_INT(p2p_session_write_piece(c, tor.btih, p, b, len), HM_ERR_HASH_MISMATCH);
			CHECK_INT(p2p_session_write_piece(c, tor.btih, p, b, len - 1), -EINVAL);
			b[7] ^= 1;
		}
		CHECK_INT(p2p_session_write_piece(c, tor.btih, p, b, len), 0);
		free(b);
	}
	/* had at once for reads, though libtorrent knows of none of it */
	for (size_t i = 0; i < l.n; i++)
		CHECK_INT(p2p_session_have_range(c, tor.btih, l.v[i].index, 0, l.v[i].size), 1);
	CHECK_INT(p2p_session_torrent_status(c, tor.btih, &st), 0);
	CHECK_INT(st.pieces_have, 0);
	for (int i = 0; i < NFILES; i++) {
		char *path = xasprintf("%s/OnDemand/%s", cdir, rel[i]);
		if (sizes[i])
			CHECK(same_file(src[i], path));
		free(path);
	}
	/* handed over whole: every piece had (not seed mode: nothing is hashed again), every file there
	 * (the empty one too), and it seeds to a peer */
	CHECK_INT(p2p_session_reseed(c, tor.btih, tor.data, tor.len, &err), 0);
	free(err);
	CHECK_INT(p2p_session_reseed(c, tor.btih, tor.data, 10, NULL) != 0, 1);
	end = now_s() + 10;
	while (now_s() < end && !(p2p_session_torrent_status(c, tor.btih, &st) == 0 && st.seeding))
		usleep(10000);
	CHECK(st.seeding && !st.seed_mode && st.finished);
	CHECK_INT(st.pieces_have, st.num_pieces);
	{
		char *empty = xasprintf("%s/OnDemand/%s", cdir, rel[F_EMPTY]);
		struct stat sb;
		CHECK(stat(empty, &sb) == 0 && sb.st_size == 0);
		free(empty);
	}
	for (size_t i = 0; i < l.n; i++)
		CHECK_INT(p2p_session_have_range(c, tor.btih, l.v[i].index, 0, l.v[i].size), 1);
	CHECK_INT(p2p_test_add(e, &tor, edir, false), 0);
	CHECK_INT(p2p_session_status(c, &cs), 0);
	snprintf(ep, sizeof(ep), "127.0.0.1:%d", cs.listen_port);
	CHECK_INT(p2p_session_connect(e, tor.btih, ep), 0);
	end = now_s() + 20;
	while (now_s() < end && !(p2p_session_torrent_status(e, tor.btih, &st) == 0 && st.seeding))
		usleep(20000);
	CHECK(st.seeding);
	CHECK_INT(p2p_session_torrent_status(c, tor.btih, &st), 0);
	CHECK(st.uploaded >= (int64_t)sizes[F_MODEL]);
out:
	p2p_file_list_release(&l);
	p2p_session_free(&e);
	p2p_session_free(&c);
	free(cdir);
	free(edir);
}

/* ---- readers waiting for pieces: each woken by its own ---- */

struct waiter_arg {
	struct p2p_session *c;
	int index;
	int64_t off, len;
	int got;
	atomic_bool done;
};

static void *wait_one(void *ud)
{
	struct waiter_arg *w = ud;

	/* a minute: far past what the test waits for each wake, so a return means a wake */
	w->got = p2p_session_wait_range(w->c, tor.btih, w->index, w->off, w->len, 60000);
	atomic_store(&w->done, true);
	return NULL;
}

static bool done_within(struct waiter_arg *w, double secs)
{
	double end = now_s() + secs;

	while (!atomic_load(&w->done) && now_s() < end)
		usleep(5000);
	return atomic_load(&w->done);
}

TEST(readers_woken_for_their_piece)
{
	struct p2p_session_config cfg = { .listen_interfaces = "127.0.0.1:0" };
	struct p2p_session *c = NULL;
	struct p2p_file_list l = { 0 };
	struct waiter_arg w[3];
	pthread_t th[3];
	char *cdir = xasprintf("%s/C4", tmp_root);
	int model = -1, first, started = 0;

	CHECK_INT(p2p_session_new(&cfg, &c, NULL), 0);
	if (!c || !added_direct(c, cdir, &l))
		goto out;
	for (size_t i = 0; i < l.n; i++)
		if (!strcmp(l.v[i].path, rel[F_MODEL]))
			model = (int)i;
	CHECK(model >= 0 && l.v[model].size >= 6 * l.piece_size);
	if (model < 0 || l.v[model].size < 6 * l.piece_size)
		goto out;
	first = (int)(l.v[model].offset / l.piece_size);
	/* three readers of the model's pieces 1, 3 and 5, waiting at once */
	for (int i = 0; i < 3; i++) {
		w[i] = (struct waiter_arg){ .c = c, .index = l.v[model].index, .off = (2 * i + 1) * l.piece_size,
					    .len = l.piece_size };
		atomic_init(&w[i].done, false);
		if (pthread_create(&th[i], NULL, wait_one, &w[i]) == 0)
			started++;
	}
	CHECK_INT(started, 3);
	usleep(200000); /* (a reader not asleep yet finds its piece there: it passes, untested) */
	/* the middle one's piece: it wakes, the others sleep on */
	{
		size_t len;
		char *b = piece_bytes(&l, first + 3, &len);
		CHECK_INT(p2p_session_write_piece(c, tor.btih, first + 3, b, len), 0);
		free(b);
	}
	CHECK(done_within(&w[1], 10));
	CHECK_INT(w[1].got, 1);
	CHECK(!atomic_load(&w[0].done) && !atomic_load(&w[2].done));
	/* then theirs */
	for (int i = 0; i < 3; i += 2) {
		size_t len;
		char *b = piece_bytes(&l, first + 2 * i + 1, &len);
		CHECK_INT(p2p_session_write_piece(c, tor.btih, first + 2 * i + 1, b, len), 0);
		free(b);
		CHECK(done_within(&w[i], 10));
		CHECK_INT(w[i].got, 1);
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
out:
	p2p_file_list_release(&l);
	p2p_session_free(&c);
	free(cdir);
}

/* ---- the shim's own checks are SHA-256 (the torrent's v2 hashes), one pass per byte ---- */

/* A copy of tor whose v1 hash of piece p is wrong (the info dictionary's "pieces"; its info-hash
 * changes with it, its v2 hashes do not). */
static struct p2p_torrent v1_broken(int p)
{
	struct p2p_torrent t = tor;
	unsigned char *at;
	char *err = NULL;

	t.data = xmalloc(tor.len);
	memcpy(t.data, tor.data, tor.len);
	at = memmem(t.data, t.len, "6:pieces", 8);
	if (at) {
		at += 8;
		while (*at >= '0' && *at <= '9')
			at++;
		at[1 + 20 * p] ^= 0x55; /* past the ':' */
	}
	if (p2p_torrent_info_hash(t.data, t.len, t.btih, &err))
		printf("#   info-hash: %s\n", err ? err : "?");
	free(err);
	return t;
}

TEST(v2_checks)
{
	struct p2p_session_config cfg = { .listen_interfaces = "127.0.0.1:0", .lan_tuning = true };
	struct p2p_session *c = NULL;
	struct p2p_file_list l = { 0 };
	struct p2p_torrent t = v1_broken(1);
	char *dir = xasprintf("%s/V2", tmp_root);

	CHECK(strcmp(t.btih, tor.btih) != 0);
	CHECK_INT(p2p_session_new(&cfg, &c, NULL), 0);
	if (!c)
		goto out;
	CHECK_INT(p2p_test_add(c, &t, dir, false), 0);
	CHECK_INT(p2p_session_download_pause(c, t.btih, true), 0);
	CHECK_INT(p2p_session_files(c, t.btih, &l), 0);
	for (int p = 0; p < l.pieces; p++) {
		size_t len;
		char *b = piece_bytes(&l, p, &len);
		/* piece 1's v1 hash is wrong and its bytes are right: the v2 hashes decide */
		CHECK_INT(p2p_session_write_piece(c, t.btih, p, b, len), 0);
		b[0] ^= 1; /* (every piece starts with its file's bytes; a pad's are not written) */
		CHECK_INT(p2p_session_write_piece(c, t.btih, p, b, len), HM_ERR_HASH_MISMATCH);
		free(b);
	}
	for (size_t i = 0; i < l.n; i++)
		CHECK_INT(p2p_session_have_range(c, t.btih, l.v[i].index, 0, l.v[i].size), 1);
	/* a file read back from the disk is checked the same way, and a byte changed there is found */
	CHECK_INT(p2p_torrent_verify_file(t.data, t.len, dir, rel[F_MODEL]), 1);
	CHECK_INT(p2p_torrent_verify_file(t.data, t.len, dir, rel[F_CONFIG]), 1);
	{
		char *path = xasprintf("%s/OnDemand/%s", dir, rel[F_MODEL]);
		int fd = open(path, O_WRONLY);
		CHECK(fd >= 0 && pwrite(fd, "X", 1, (off_t)sizes[F_MODEL] - 1) == 1);
		if (fd >= 0)
			close(fd);
		CHECK_INT(p2p_torrent_verify_file(t.data, t.len, dir, rel[F_MODEL]), 0);
		free(path);
	}
out:
	p2p_file_list_release(&l);
	p2p_session_free(&c);
	free(t.data);
	free(dir);
}

int main(void)
{
	char tmpl[] = "/tmp/test-p2p-ondemand-fill-XXXXXX";
	char *adir;

	tmp_root = test_tmpdir(tmpl);
	adir = xasprintf("%s/a", tmp_root);
	if (ondemand_torrent(adir) || !tor.data) {
		printf("Bail out! no torrent\n");
		test_rmtree(tmp_root);
		return 1;
	}
	RUN(pieces_from_elsewhere);
	RUN(direct_pieces);
	RUN(readers_woken_for_their_piece);
	RUN(v2_checks);

	ondemand_torrent_release();
	free(adir);
	test_rmtree(tmp_root);
	return test_done();
}
