/*
 * test-p2p-integrity.c - a read on demand never returns a byte that is not verified in the file.
 *
 * The race it hunts: libtorrent 2.0.8 hashes a piece as soon as every block of it has been received,
 * reading blocks that are still waiting to be written from its store buffer, so a piece can pass its
 * check (have_piece true, piece_finished posted) before the last of its blocks are in the file; a
 * pread() in that window returns the zeros of a sparse file (docs/p2p.md, "Which bytes a read may return").
 *
 * A seed in seed mode, its LAN upload capped so that pieces trickle in, serves a 48 MiB torrent to three
 * downloaders that also trade among themselves. On each downloader, reader threads wait for pieces the
 * way a mount's read does, but without sleeping between looks (so they land in any window there is), and
 * read each piece the moment p2p_session_have_range says yes; every byte is compared with the source.
 * Some readers go in file order (cp), some in a scattered order (a loader's random reads). Three rounds,
 * each on fresh downloaders. Before the fix this saw wrong bytes in every run on this machine.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
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

enum { NDOWN = 3, READERS = 2, ROUNDS = 3 };
static const size_t model_size = 48u * 1024 * 1024;

static char *tmp_root;
static struct p2p_torrent tor;
static unsigned char *model;        /* the source's bytes, for comparing */
static int model_index = -1;        /* libtorrent's file index of the model */

struct down {
	struct p2p_session *s;
	int port;
	char *path;                     /* where this downloader keeps the model */
};

struct reader {
	pthread_t thread;
	struct down *d;
	int order;                      /* 0: file order, else a scattered order seeded by it */
	int round, who;
	/* results */
	int pieces_read, bad_reads, errors, timeouts;
	char first_bad[200];
};

static int start(struct p2p_session **s, int *port, int64_t cap, bool lan)
{
	struct p2p_session_config cfg = { .listen_interfaces = "127.0.0.1:0", .local_upload_limit = cap,
					  .lan_tuning = lan };
	struct p2p_session_status st;
	char *err = NULL;

	if (p2p_session_new(&cfg, s, &err)) {
		printf("#   session: %s\n", err ? err : "?");
		free(err);
		return -1;
	}
	p2p_session_status(*s, &st);
	*port = st.listen_port;
	return 0;
}

static void connect_to(struct p2p_session *s, int port)
{
	char ep[32];

	snprintf(ep, sizeof ep, "127.0.0.1:%d", port);
	p2p_session_connect(s, tor.btih, ep);
}

/* Wait for bytes [off, off + len) as a mount's read does, minus the sleeps; then read and compare. */
static void read_piece(struct reader *r, int fd, int64_t off, int64_t len, unsigned char *buf)
{
	double t0 = now_s(), last_want = 0;
	int have;

	while ((have = p2p_session_have_range(r->d->s, tor.btih, model_index, off, len)) == 0) {
		if (now_s() - last_want > 0.1) {
			p2p_session_want_range(r->d->s, tor.btih, model_index, off, len, 0);
			last_want = now_s();
		}
		if (now_s() - t0 > 40) {
			r->timeouts++;
			return;
		}
		sched_yield();
	}
	if (have < 0 || pread(fd, buf, (size_t)len, off) != (ssize_t)len) {
		r->errors++;
		return;
	}
	r->pieces_read++;
	if (memcmp(buf, model + off, (size_t)len)) {
		int64_t i = 0, zeros = 0;
		while (buf[i] == model[off + i])
			i++;
		for (int64_t j = 0; j < len; j++)
			zeros += buf[j] == 0 && model[off + j] != 0;
		if (!r->bad_reads++)
			snprintf(r->first_bad, sizeof r->first_bad,
				 "round %d downloader %d: %lld bytes at %lld differ from offset %lld on "
				 "(%lld wrong zeros)",
				 r->round, r->who, (long long)len, (long long)off, (long long)(off + i),
				 (long long)zeros);
	}
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	int64_t piece = tor.piece_size, n = ((int64_t)model_size + piece - 1) / piece;
	int64_t *order = xcalloc((size_t)n, sizeof *order);
	unsigned char *buf = xmalloc((size_t)piece);
	unsigned seed = (unsigned)r->order * 2654435761u;
	int fd = -1;

	for (int64_t i = 0; i < n; i++)
		order[i] = i;
	for (int64_t i = n - 1; r->order && i > 0; i--) {
		int64_t j, t;
		seed = seed * 1103515245u + 12345u;
		j = (int64_t)(seed >> 8) % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (int64_t k = 0; k < n; k++) {
		int64_t off = order[k] * piece,
			len = (int64_t)model_size - off < piece ? (int64_t)model_size - off : piece;
		/* the file exists once libtorrent has written to it; open it at the first verified piece */
		if (fd < 0) {
			while (p2p_session_have_range(r->d->s, tor.btih, model_index, off, len) == 0)
				sched_yield();
			fd = open(r->d->path, O_RDONLY);
			if (fd < 0) {
				r->errors++;
				break;
			}
		}
		read_piece(r, fd, off, len, buf);
		if (r->timeouts)
			break;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	free(order);
	return NULL;
}

static char *src_model, *src_config;
static struct p2p_session *seed;
static int seed_port;
static int total_bad, total_read;

TEST(make_torrent)
{
	char *dir = xasprintf("%s/seed", tmp_root);
	struct p2p_file f[2];
	int fd;

	src_config = make_file(dir, "Race/config.json", 700, 7);
	src_model = make_file(dir, "Race/model.bin", model_size, 11);
	f[0] = (struct p2p_file){ .path = "config.json", .size = 700, .source = src_config };
	f[1] = (struct p2p_file){ .path = "model.bin", .size = (int64_t)model_size, .source = src_model };
	CHECK_INT(p2p_torrent_create("Race", f, 2, &tor, NULL), 0);
	model = xmalloc(model_size);
	fd = open(src_model, O_RDONLY);
	CHECK(fd >= 0 && read(fd, model, model_size) == (ssize_t)model_size);
	if (fd >= 0)
		close(fd);
	/* the seed sends 32 MiB/s in all: each downloader gets pieces from it and from the others */
	CHECK_INT(start(&seed, &seed_port, 32 << 20, true), 0);
	if (seed && tor.data) {
		struct p2p_file_list l = { 0 };
		CHECK_INT(p2p_test_add(seed, &tor, dir, true), 0);
		CHECK_INT(p2p_session_files(seed, tor.btih, &l), 0);
		for (size_t i = 0; i < l.n; i++)
			if (!strcmp(l.v[i].path, "model.bin"))
				model_index = l.v[i].index;
		p2p_file_list_release(&l);
	}
	printf("#   %lld pieces of %lld KiB\n", (long long)tor.pieces, (long long)tor.piece_size / 1024);
	CHECK(model_index >= 0);
	free(dir);
}

/* The loop thread's part: drain every downloader's events as they come (a mount drains too), and
 * read each piece the moment its P2P_EVENT_PIECE is out, if have_range says yes then: the event comes
 * when libtorrent's check passed, which may be before the piece is in the file. */
struct drainer {
	pthread_t thread;
	struct down *d;
	int fd[NDOWN];
	unsigned char *buf;
	int round, which;
	atomic_int stop;
	/* results */
	int events, reads, bad_reads;
	char first_bad[200];
};

static void on_piece(void *ud, const struct p2p_event *ev)
{
	struct drainer *dr = ud;
	int64_t piece = tor.piece_size, off, len;
	int fd;

	/* config.json and its pad fill piece 0; the model starts at piece 1 */
	if (ev->kind != P2P_EVENT_PIECE || ev->piece < 1)
		return;
	dr->events++;
	off = (int64_t)(ev->piece - 1) * piece;
	len = (int64_t)model_size - off < piece ? (int64_t)model_size - off : piece;
	if (p2p_session_have_range(dr->d[dr->which].s, tor.btih, model_index, off, len) != 1)
		return;
	if ((fd = dr->fd[dr->which]) < 0)
		fd = dr->fd[dr->which] = open(dr->d[dr->which].path, O_RDONLY);
	if (fd < 0 || pread(fd, dr->buf, (size_t)len, off) != (ssize_t)len)
		return;
	dr->reads++;
	if (memcmp(dr->buf, model + off, (size_t)len) && !dr->bad_reads++)
		snprintf(dr->first_bad, sizeof dr->first_bad, "round %d downloader %d: piece %d read on its event",
			 dr->round, dr->which, ev->piece);
}

static void *drain_main(void *arg)
{
	struct drainer *dr = arg;

	while (!atomic_load(&dr->stop)) {
		for (dr->which = 0; dr->which < NDOWN; dr->which++)
			p2p_session_drain(dr->d[dr->which].s, on_piece, dr);
		usleep(200);
	}
	return NULL;
}

static void one_round(int round)
{
	struct drainer dr = { 0 };
	struct down d[NDOWN] = { 0 };
	struct reader rd[NDOWN * READERS];
	double t0 = now_s();
	int bad = 0, read = 0, errors = 0, timeouts = 0;

	memset(rd, 0, sizeof rd);
	for (int i = 0; i < NDOWN; i++) {
		char *dir = xasprintf("%s/round%d/d%d", tmp_root, round, i);
		CHECK_INT(path_mkdirs(dir, 0755), 0);
		if (start(&d[i].s, &d[i].port, 0, true) || p2p_test_add(d[i].s, &tor, dir, false)) {
			CHECK(0);
			free(dir);
			goto out;
		}
		d[i].path = xasprintf("%s/Race/model.bin", dir);
		free(dir);
	}
	for (int i = 0; i < NDOWN; i++) {
		connect_to(d[i].s, seed_port);
		for (int j = 0; j < i; j++)
			connect_to(d[i].s, d[j].port);
	}
	dr.d = d;
	dr.round = round;
	dr.buf = xmalloc((size_t)tor.piece_size);
	for (int i = 0; i < NDOWN; i++)
		dr.fd[i] = -1;
	CHECK_INT(pthread_create(&dr.thread, NULL, drain_main, &dr), 0);
	for (int k = 0; k < NDOWN * READERS; k++) {
		rd[k].d = &d[k / READERS];
		rd[k].who = k / READERS;
		rd[k].round = round;
		rd[k].order = k % READERS ? k + round * 7 : 0;
		CHECK_INT(pthread_create(&rd[k].thread, NULL, reader_main, &rd[k]), 0);
	}
	for (int k = 0; k < NDOWN * READERS; k++) {
		pthread_join(rd[k].thread, NULL);
		bad += rd[k].bad_reads;
		read += rd[k].pieces_read;
		errors += rd[k].errors;
		timeouts += rd[k].timeouts;
		if (rd[k].bad_reads)
			printf("#   wrong bytes read: %s (%d wrong reads by this reader)\n", rd[k].first_bad,
			       rd[k].bad_reads);
	}
	atomic_store(&dr.stop, 1);
	pthread_join(dr.thread, NULL);
	for (int i = 0; i < NDOWN; i++)
		if (dr.fd[i] >= 0)
			close(dr.fd[i]);
	free(dr.buf);
	if (dr.bad_reads)
		printf("#   wrong bytes read: %s (%d wrong of %d read on their events)\n", dr.first_bad, dr.bad_reads,
		       dr.reads);
	printf("#   round %d: %d piece events, %d pieces read on them, %d wrong\n", round, dr.events, dr.reads,
	       dr.bad_reads);
	bad += dr.bad_reads;
	printf("#   round %d: %d pieces read by %d readers in %.1f s, %d wrong, %d errors, %d timeouts\n", round,
	       read, NDOWN * READERS, now_s() - t0, bad, errors, timeouts);
	total_bad += bad;
	total_read += read;
	CHECK_INT(bad, 0);
	CHECK_INT(errors, 0);
	CHECK_INT(timeouts, 0);
	/* every reader read every piece */
	CHECK_INT(read, NDOWN * READERS * tor.pieces - NDOWN * READERS /* config.json's piece */);
out:
	for (int i = 0; i < NDOWN; i++) {
		p2p_session_free(&d[i].s);
		free(d[i].path);
	}
}

TEST(readers_see_only_verified_bytes)
{
	for (int round = 1; round <= ROUNDS; round++)
		one_round(round);
	printf("#   %d rounds: %d pieces read, %d wrong\n", ROUNDS, total_read, total_bad);
}

/* Where libtorrent's word is no promise, the file decides: a torrent in seed mode (every piece "had"
 * by assumption) over a copy of the files with one block damaged admits every piece but that one, and
 * the damaged piece makes libtorrent check the files again, after which it lacks just that piece. */
TEST(seed_mode_reads_from_the_file)
{
	char *dir = xasprintf("%s/damaged", tmp_root), *copy = xasprintf("%s/Race/model.bin", dir), *cfg;
	struct p2p_session *s = NULL;
	int port, fd, bad_piece = 7;
	int64_t piece = tor.piece_size;
	unsigned char junk[16384];

	cfg = make_file(dir, "Race/config.json", 700, 7);
	fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, model, model_size) == (ssize_t)model_size);
	memset(junk, 0x5a, sizeof(junk));
	/* a block in the middle of the model's piece 7 (torrent piece 8) */
	CHECK(fd >= 0 && pwrite(fd, junk, sizeof(junk), (int64_t)bad_piece * piece + 16384) == (ssize_t)sizeof(junk));
	if (fd >= 0)
		close(fd);
	CHECK_INT(start(&s, &port, 0, true), 0);
	if (s && !p2p_test_add(s, &tor, dir, true)) {
		struct p2p_torrent_status st = { 0 };
		CHECK_INT(p2p_session_have_range(s, tor.btih, model_index, 0, piece), 1);
		CHECK_INT(p2p_session_have_range(s, tor.btih, model_index, (int64_t)bad_piece * piece, piece), 0);
		CHECK_INT(p2p_session_have_range(s, tor.btih, model_index, (int64_t)bad_piece * piece + 100, 10), 0);
		/* the damaged piece made libtorrent check the files again (it believed it had the piece):
		 * once that is done it lacks just that piece, and says so */
		for (int i = 0; i < 6000; i++) { /* up to a minute on a loaded machine */
			if (!p2p_session_torrent_status(s, tor.btih, &st) && !st.checking && !st.seed_mode)
				break;
			/* as a waiting reader does (the recheck is asked again every 10 s while it finds
			 * the piece damaged) */
			if (i % 100 == 99)
				p2p_session_have_range(s, tor.btih, model_index, (int64_t)bad_piece * piece, piece);
			usleep(10 * 1000);
		}
		CHECK(!st.seed_mode && !st.checking);
		CHECK_INT(st.pieces_have, st.num_pieces - 1);
		CHECK_INT(p2p_session_have_range(s, tor.btih, model_index, (int64_t)(bad_piece + 1) * piece, piece), 1);
		CHECK_INT(p2p_session_have_range(s, tor.btih, model_index, (int64_t)bad_piece * piece, piece), 0);
		CHECK_INT(p2p_session_have_range(s, tor.btih, model_index, 0, (int64_t)model_size), 0);
	}
	p2p_session_free(&s);
	free(cfg);
	free(copy);
	free(dir);
}

int main(void)
{
	char tmpl[] = "/tmp/test-p2p-integrity-XXXXXX";

	tmp_root = test_tmpdir(tmpl);
	RUN(make_torrent);
	if (tor.data && seed && model_index >= 0) {
		RUN(readers_see_only_verified_bytes);
		RUN(seed_mode_reads_from_the_file);
	}
	p2p_session_free(&seed);
	p2p_torrent_release(&tor);
	free(model);
	free(src_model);
	free(src_config);
	test_rmtree(tmp_root);
	return test_done();
}
