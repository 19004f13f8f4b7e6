/*
 * test-p2p-swarm.c - two libtorrent sessions on loopback, driven by a libuv loop the way the agent and
 * the mirror will drive theirs (libtorrent's thread wakes the loop through uv_async_send, the loop
 * drains the events). Seed A serves files in place (seed_mode), B downloads them over BitTorrent and ends
 * byte-identical and seeding; then what a corrupt seed file does (libtorrent leaves seed mode, rechecks
 * and keeps serving every other piece: B never finishes), a local-network upload cap that really slows a
 * transfer, a write error reported as an event and in the status, removing and re-adding, the error
 * codes, and a torrent above libtorrent's default load limits. No HTTP: peers are connected directly.
 */
#include <errno.h>
#include <fcntl.h>
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

static char *tmp_root; /* one directory for the whole run, removed at the end */
static uv_loop_t loop;
static uv_timer_t tick;  /* keeps uv_run(UV_RUN_ONCE) returning so run_until can look at the clock */

/* One session and what its events said about the torrent it is watching (want). */
struct peer {
	const char *name;
	struct p2p_session *s;
	uv_async_t async;
	int port;
	char want[41];
	int finished, pieces, errors;
	int other_events;  /* events of torrents other than want */
	int drain_failures;
	int nested;        /* what a drain from inside on_event returned */
	char error[256];
};

static struct peer A = { .name = "A" }, B = { .name = "B" }, C = { .name = "C" };

/* Whole file into memory (caller frees), NULL if it cannot be read. */
static unsigned char *slurp(const char *path, size_t *len)
{
	struct stat st;
	unsigned char *d;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return NULL;
	}
	d = xmalloc((size_t)st.st_size + 1);
	if (read(fd, d, (size_t)st.st_size) != st.st_size) {
		close(fd);
		free(d);
		return NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return d;
}

static int same_file(const char *a, const char *b)
{
	size_t la = 0, lb = 0;
	unsigned char *da = slurp(a, &la), *db = slurp(b, &lb);
	int same = da && db && la == lb && !memcmp(da, db, la);

	free(da);
	free(db);
	return same;
}

/* The libuv way: libtorrent's thread only pokes the loop. */
static void on_event(void *ud, const struct p2p_event *ev)
{
	struct peer *p = ud;

	/* Draining from inside a drain would free the alerts being walked: refused. */
	if (!p->nested)
		p->nested = p2p_session_drain(p->s, on_event, p);
	if (!ev->btih || strcmp(ev->btih, p->want)) {
		p->other_events++;
		return;
	}
	switch (ev->kind) {
	case P2P_EVENT_FINISHED:
		p->finished++;
		break;
	case P2P_EVENT_PIECE:
		p->pieces++;
		break;
	case P2P_EVENT_ERROR:
		p->errors++;
		snprintf(p->error, sizeof p->error, "%s", ev->message ? ev->message : "(null)");
		break;
	}
}

static void on_async(uv_async_t *h)
{
	struct peer *p = h->data;

	if (p2p_session_drain(p->s, on_event, p) < 0)
		p->drain_failures++;
}

static void on_tick(uv_timer_t *t)
{
}

/* Watch torrent btih from now on, with fresh counters. */
static void watch(struct peer *p, const char *btih)
{
	snprintf(p->want, sizeof p->want, "%s", btih);
	p->finished = p->pieces = p->errors = 0;
	p->error[0] = '\0';
}

/* Run the loop until done(arg) or seconds pass; returns done's last answer. */
static int run_until(int (*done)(void *), void *arg, double seconds)
{
	return p2p_test_run_until(&loop, done, arg, seconds);
}

static int is_finished(void *arg)
{
	return ((struct peer *)arg)->finished > 0;
}

static int never(void *arg)
{
	return 0;
}

static int start_peer(struct peer *p, int64_t local_upload_limit, bool lan)
{
	return p2p_test_session(&loop, p->name, local_upload_limit, lan, &p->s, &p->port, &p->async, on_async, p);
}

/* Add torrent t to p (save_path dir) and return 0 or the error, printing the message. */
static int add(struct peer *p, const struct p2p_torrent *t, const char *dir, bool seed, char *btih)
{
	struct p2p_add a = { .torrent = t->data, .len = t->len, .save_path = dir, .seed_mode = seed };
	char *err = NULL;
	int r = p2p_session_add(p->s, &a, btih, &err);

	if (r)
		printf("#   add to %s: %s\n", p->name, err ? err : "?");
	CHECK(r != 0 || err == NULL);
	free(err);
	return r;
}

static void connect_to(struct peer *from, const char *btih, struct peer *to)
{
	char *ep = xasprintf("127.0.0.1:%d", to->port);

	CHECK_INT(p2p_session_connect(from->s, btih, ep), 0);
	free(ep);
}

/* Build the torrent name of files made under dir/name (sizes, seeds); fills paths[] with the sources. */
static int build(const char *dir, const char *name, const char *const *rel, const size_t *sizes, size_t n,
		 unsigned seed, char **src, struct p2p_torrent *t)
{
	struct p2p_file f[8];
	char *err = NULL;
	int r;

	for (size_t i = 0; i < n; i++) {
		char *sub = xasprintf("%s/%s", name, rel[i]);
		src[i] = make_file(dir, sub, sizes[i], seed + (unsigned)i);
		free(sub);
		f[i] = (struct p2p_file){ .path = rel[i], .size = (int64_t)sizes[i], .source = src[i] };
	}
	r = p2p_torrent_create(name, f, n, t, &err);
	if (r)
		printf("#   p2p_torrent_create %s: %s\n", name, err ? err : "?");
	free(err);
	return r;
}

/* ---- the main swarm: A seeds in place, B downloads ---- */

#define NMAIN 3
static const char *const main_rel[NMAIN] = { "config.json", "weights/model.bin", "weights/tokenizer.json" };
static const size_t main_sizes[NMAIN] = { 517, 1000000, 70000 };
static char *main_src[NMAIN];
static struct p2p_torrent main_t;
static char main_btih[41];
static double unlimited_seconds;

TEST(seed_and_download)
{
	char *adir = xasprintf("%s/a", tmp_root), *bdir = xasprintf("%s/b", tmp_root);
	char btih[41] = "", again[41] = "";
	struct p2p_torrent_status st;
	int64_t up0 = -1, down0 = -1, up, down;
	double t0;

	CHECK_INT(path_mkdirs(bdir, 0755), 0);
	CHECK_INT(build(adir, "Repo", main_rel, main_sizes, NMAIN, 10, main_src, &main_t), 0);
	if (!main_t.data)
		goto out;
	memcpy(main_btih, main_t.btih, sizeof main_btih);
	watch(&A, main_btih);
	watch(&B, main_btih);

	CHECK_INT(p2p_session_totals(A.s, &up0, &down0), 0);
	CHECK_INT(up0, 0);
	CHECK_INT(down0, 0);

	CHECK_INT(add(&A, &main_t, adir, true, btih), 0);
	CHECK_STR(btih, main_btih);
	/* The same torrent again: no error, the same key, still one torrent. */
	CHECK_INT(add(&A, &main_t, adir, true, again), 0);
	CHECK_STR(again, main_btih);
	CHECK_INT(add(&A, &main_t, adir, true, NULL), 0);

	CHECK_INT(p2p_session_torrent_status(A.s, main_btih, &st), 0);
	CHECK(st.seed_mode);
	CHECK(!st.seeding); /* complete by assumption only, nothing verified yet */
	CHECK(!st.paused);
	CHECK_INT(st.num_pieces, main_t.pieces);
	CHECK_INT(st.pieces_have, main_t.pieces);

	CHECK_INT(add(&B, &main_t, bdir, false, btih), 0);
	CHECK_INT(p2p_session_torrent_status(B.s, main_btih, &st), 0);
	CHECK(!st.seeding && !st.seed_mode && !st.error);
	CHECK_INT(st.pieces_have, 0);

	t0 = now_s();
	connect_to(&B, main_btih, &A);
	CHECK(run_until(is_finished, &B, 20));
	unlimited_seconds = now_s() - t0;
	printf("#   B finished in %.2f s (unlimited, lan_tuning seed)\n", unlimited_seconds);
	/* Let A's last events and status settle (its upload counters, leaving seed mode). */
	run_until(never, NULL, 0.3);

	CHECK_INT(B.finished, 1);
	CHECK_INT(B.pieces, main_t.pieces);   /* one event per verified piece */
	CHECK_INT(B.errors, 0);
	CHECK_INT(B.drain_failures, 0);
	CHECK_INT(B.nested, -EBUSY);
	/* A's seed-mode torrent counts as finished the moment it is added. */
	CHECK_INT(A.finished, 1);
	CHECK_INT(A.pieces, 0);
	CHECK_INT(A.errors, 0);
	CHECK_INT(A.drain_failures, 0);

	for (int i = 0; i < NMAIN; i++) {
		char *got = xasprintf("%s/Repo/%s", bdir, main_rel[i]);
		CHECK(same_file(main_src[i], got));
		free(got);
	}

	CHECK_INT(p2p_session_torrent_status(B.s, main_btih, &st), 0);
	CHECK(st.seeding);
	CHECK(!st.seed_mode);
	CHECK(!st.error);
	CHECK_STR(st.message, "");
	CHECK_INT(st.pieces_have, st.num_pieces);
	CHECK_INT(st.num_pieces, main_t.pieces);
	CHECK(st.progress == 1.0);
	CHECK_INT(st.total_wanted, 517 + 1000000 + 70000);
	CHECK_INT(st.total_done, st.total_wanted);
	CHECK(st.downloaded >= st.total_wanted);
	CHECK_INT(st.from_web_seeds, 0);
	CHECK_INT(st.uploaded, 0);

	/* Every piece has been asked for once, so A verified them all and left seed mode. */
	CHECK_INT(p2p_session_torrent_status(A.s, main_btih, &st), 0);
	CHECK(st.uploaded >= 517 + 1000000 + 70000);
	CHECK_INT(st.downloaded, 0);
	CHECK(st.seeding);
	CHECK(!st.seed_mode);
	CHECK(!st.error);

	CHECK_INT(p2p_session_totals(A.s, &up, NULL), 0);
	CHECK(up >= st.uploaded && up > up0);
	CHECK_INT(p2p_session_totals(B.s, NULL, &down), 0);
	CHECK(down >= 517 + 1000000 + 70000);
out:
	free(adir);
	free(bdir);
}

TEST(lookups_and_refusals)
{
	struct p2p_torrent_status st;
	char upper[41];
	char *err = NULL;
	static const unsigned char junk[] = "d4:infod4:name1:xee";
	struct p2p_add a = { .torrent = junk, .len = sizeof junk - 1, .save_path = tmp_root };
	char btih[41] = "unchanged";
	const char *unknown = "0123456789abcdef0123456789abcdef01234567";

	/* Keys are case-insensitive hex. */
	for (int i = 0; i < 41; i++)
		upper[i] = (char)(main_btih[i] >= 'a' && main_btih[i] <= 'f' ? main_btih[i] - 32 : main_btih[i]);
	CHECK_INT(p2p_session_torrent_status(B.s, upper, &st), 0);

	CHECK_INT(p2p_session_torrent_status(B.s, unknown, &st), HM_ERR_NOT_FOUND);
	CHECK_INT(p2p_session_torrent_status(B.s, "xyz", &st), HM_ERR_NOT_FOUND);
	CHECK_INT(p2p_session_torrent_status(B.s, NULL, &st), HM_ERR_NOT_FOUND);
	CHECK_INT(p2p_session_remove(B.s, unknown), HM_ERR_NOT_FOUND);
	CHECK_INT(p2p_session_connect(B.s, unknown, "127.0.0.1:1"), HM_ERR_NOT_FOUND);

	CHECK_INT(p2p_session_connect(B.s, main_btih, "127.0.0.1"), -EINVAL);
	CHECK_INT(p2p_session_connect(B.s, main_btih, "127.0.0.1:0"), -EINVAL);
	CHECK_INT(p2p_session_connect(B.s, main_btih, "127.0.0.1:65536"), -EINVAL);
	CHECK_INT(p2p_session_connect(B.s, main_btih, "127.0.0.1:80x"), -EINVAL);
	CHECK_INT(p2p_session_connect(B.s, main_btih, "::1:6881"), -EINVAL);
	CHECK_INT(p2p_session_connect(B.s, main_btih, "[::1]"), -EINVAL);
	CHECK_INT(p2p_session_connect(B.s, main_btih, "example.org:80"), -EINVAL);
	CHECK_INT(p2p_session_connect(B.s, main_btih, ""), -EINVAL);
	CHECK_INT(p2p_session_connect(B.s, main_btih, NULL), -EINVAL);
	CHECK_INT(p2p_session_connect(B.s, main_btih, "[::1]:6881"), 0); /* nobody there: harmless */

	/* Not a torrent: libtorrent's message comes back, nothing is written. */
	CHECK_INT(p2p_session_add(B.s, &a, btih, &err), HM_ERR_TORRENT);
	CHECK(err != NULL && *err);
	if (err)
		printf("#   junk torrent: %s\n", err);
	free(err);
	err = NULL;
	CHECK_STR(btih, "unchanged");
	a.torrent = main_t.data;
	a.len = main_t.len;
	a.save_path = NULL;
	CHECK_INT(p2p_session_add(B.s, &a, btih, &err), HM_ERR_USAGE);
	free(err);
	CHECK_INT(p2p_session_add(B.s, NULL, btih, NULL), HM_ERR_USAGE);

	{
		struct p2p_session_config cfg = { .listen_interfaces = "127.0.0.1:0", .local_upload_limit = -1 };
		struct p2p_session *s = NULL;

		err = NULL;
		CHECK_INT(p2p_session_new(&cfg, &s, &err), -EINVAL);
		CHECK(s == NULL);
		CHECK(err != NULL);
		free(err);
	}
}

/* ---- a corrupt file under a seed_mode torrent ---- */

static struct p2p_torrent bad_t;
static int bad_pieces_settled(void *arg)
{
	struct p2p_torrent_status a, b;

	(void)arg;
	if (p2p_session_torrent_status(A.s, bad_t.btih, &a) || p2p_session_torrent_status(B.s, bad_t.btih, &b))
		return 0;
	return !a.seed_mode && a.pieces_have == a.num_pieces - 1 && b.pieces_have == b.num_pieces - 1;
}

TEST(corrupt_seed_file)
{
	static const char *const rel[] = { "blob.bin" };
	static const size_t sizes[] = { 512 * 1024 };   /* 8 pieces of 64 KiB */
	char *adir = xasprintf("%s/a", tmp_root), *bdir = xasprintf("%s/b", tmp_root);
	char *src[1] = { NULL };
	struct p2p_torrent_status a, b;
	char junk[100];
	int fd;

	CHECK_INT(build(adir, "Bad", rel, sizes, 1, 99, src, &bad_t), 0);
	if (!bad_t.data)
		goto out;
	CHECK_INT(bad_t.pieces, 8);
	/* 100 bytes inside piece 1 (65536..131071) change after hashing. */
	memset(junk, 'x', sizeof junk);
	fd = open(src[0], O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, junk, sizeof junk, 100000) == (ssize_t)sizeof junk);
	if (fd >= 0)
		close(fd);

	watch(&A, bad_t.btih);
	watch(&B, bad_t.btih);
	CHECK_INT(add(&A, &bad_t, adir, true, NULL), 0);
	CHECK_INT(add(&B, &bad_t, bdir, false, NULL), 0);
	connect_to(&B, bad_t.btih, &A);

	/* libtorrent 2.0.8: A verifies piece 1 when B asks for it, fails, leaves seed mode, drops its
	 * peers, rechecks its files (a piece event for each good one) and goes on as a downloader that
	 * lacks piece 1. No error says so. B connects again, gets the 7 others and waits forever for the
	 * last. (Who connects again, and when, is libtorrent's schedule: a try that missed waits a minute
	 * for the next. One CI run under ASan saw B stop at 6 pieces for 30 s, so the test asks B to connect
	 * every 3 s meanwhile, as an agent's tracker announces would: it checks what is traded, not that.) */
	{
		bool settled = false;
		for (int i = 0; i < 10 && !(settled = run_until(bad_pieces_settled, NULL, 3)); i++)
			connect_to(&B, bad_t.btih, &A); /* a no-op while connected */
		CHECK(settled); /* a bound, not a timing: a loaded ASan run needs more */
	}
	run_until(never, NULL, 1.0); /* a second more changes nothing */

	CHECK_INT(p2p_session_torrent_status(A.s, bad_t.btih, &a), 0);
	CHECK(!a.seeding);
	CHECK(!a.seed_mode);
	CHECK(!a.error);
	CHECK_INT(a.pieces_have, 7);
	CHECK_INT(a.num_pieces, 8);
	CHECK(a.progress < 1.0);
	CHECK_INT(A.errors, 0);
	CHECK_INT(A.finished, 1);  /* at add, in seed mode */
	CHECK_INT(A.pieces, 7);    /* the recheck */

	CHECK_INT(p2p_session_torrent_status(B.s, bad_t.btih, &b), 0);
	CHECK(!b.seeding);
	CHECK_INT(b.pieces_have, 7);
	CHECK_INT(B.finished, 0);
	CHECK_INT(B.pieces, 7);
	CHECK_INT(B.errors, 0);
out:
	free(src[0]);
	free(adir);
	free(bdir);
}

/* ---- an upload cap on the local peer class ---- */

TEST(local_upload_limit)
{
	static const char *const rel[] = { "one.bin", "two.bin" };
	static const size_t sizes[] = { 600 * 1024, 424 * 1024 };  /* 1 MiB */
	char *cdir = xasprintf("%s/c", tmp_root), *bdir = xasprintf("%s/b", tmp_root);
	char *src[2] = { NULL, NULL };
	struct p2p_torrent t = { 0 };
	struct p2p_torrent_status st;
	double t0, took;

	if (start_peer(&C, 256 * 1024, false)) {
		CHECK(0);
		goto out;
	}
	CHECK_INT(build(cdir, "Slow", rel, sizes, 2, 7, src, &t), 0);
	if (!t.data)
		goto out;
	watch(&C, t.btih);
	watch(&B, t.btih);
	CHECK_INT(add(&C, &t, cdir, true, NULL), 0);
	CHECK_INT(add(&B, &t, bdir, false, NULL), 0);
	t0 = now_s();
	connect_to(&B, t.btih, &C);
	CHECK(run_until(is_finished, &B, 15));
	took = now_s() - t0;
	printf("#   1 MiB at 256 KiB/s took %.2f s (%.2f s without a cap for about as much)\n", took,
	       unlimited_seconds);
	CHECK(took > 2.0);
	CHECK_INT(p2p_session_torrent_status(B.s, t.btih, &st), 0);
	CHECK(st.seeding);
	for (int i = 0; i < 2; i++) {
		char *got = xasprintf("%s/Slow/%s", bdir, rel[i]);
		CHECK(same_file(src[i], got));
		free(got);
	}
out:
	for (int i = 0; i < 2; i++)
		free(src[i]);
	p2p_torrent_release(&t);
	free(cdir);
	free(bdir);
}

/* ---- a torrent that cannot write its files ---- */

static int has_error(void *arg)
{
	return ((struct peer *)arg)->errors > 0;
}

TEST(write_error_is_reported)
{
	/* C's save_path is a regular file, so no folder can be made under it. */
	char *file = make_file(tmp_root, "not-a-folder", 10, 1);
	struct p2p_torrent_status st;

	if (!C.s || !main_t.data) {
		CHECK(0);
		goto out;
	}
	watch(&C, main_btih);
	CHECK_INT(add(&C, &main_t, file, false, NULL), 0);
	connect_to(&C, main_btih, &A);
	CHECK(run_until(has_error, &C, 10));
	printf("#   %d error event(s), the last: %s\n", C.errors, C.error);
	CHECK(C.error[0] != '\0');
	CHECK_INT(C.finished, 0);
	CHECK_INT(p2p_session_torrent_status(C.s, main_btih, &st), 0);
	printf("#   status: %s\n", st.message);
	CHECK(st.error);
	CHECK(st.paused);
	CHECK(!st.seeding);
	CHECK(st.message[0] != '\0');
	CHECK_INT(p2p_session_remove(C.s, main_btih), 0);
out:
	free(file);
}

/* ---- removal keeps the files and the totals ---- */

static int main_seeding_on_b(void *arg)
{
	struct p2p_torrent_status st;

	return !p2p_session_torrent_status(B.s, main_btih, &st) && st.seeding;
}

TEST(remove_and_add_again)
{
	char *bdir = xasprintf("%s/b", tmp_root);
	char *kept = xasprintf("%s/Repo/%s", bdir, main_rel[1]);
	struct p2p_torrent_status st;
	int64_t down_before = -1, down_after = -1;

	CHECK_INT(p2p_session_totals(B.s, NULL, &down_before), 0);
	CHECK_INT(p2p_session_remove(B.s, main_btih), 0);
	CHECK_INT(p2p_session_remove(B.s, main_btih), HM_ERR_NOT_FOUND);
	CHECK_INT(p2p_session_torrent_status(B.s, main_btih, &st), HM_ERR_NOT_FOUND);
	CHECK_INT(p2p_session_connect(B.s, main_btih, "127.0.0.1:1"), HM_ERR_NOT_FOUND);
	/* The removed torrent's bytes stay in the session's totals, and its files on disk. */
	CHECK_INT(p2p_session_totals(B.s, NULL, &down_after), 0);
	CHECK_INT(down_after, down_before);
	CHECK(same_file(main_src[1], kept));

	/* Added again without seed_mode, libtorrent checks the files it finds and seeds. */
	watch(&B, main_btih);
	CHECK_INT(add(&B, &main_t, bdir, false, NULL), 0);
	CHECK(run_until(main_seeding_on_b, NULL, 10));
	CHECK_INT(p2p_session_torrent_status(B.s, main_btih, &st), 0);
	CHECK_INT(st.downloaded, 0);
	CHECK_INT(st.pieces_have, st.num_pieces);
	free(kept);
	free(bdir);
}

/* ---- a torrent above libtorrent's default load limits (10 MB, 2,097,152 pieces) ---- */

TEST(huge_torrent_loads)
{
	enum { PIECES = 2500000 };  /* 50 MB of piece hashes, 38 GiB of 16 KiB pieces */
	const int64_t length = (int64_t)PIECES * 16384;
	char *head = xasprintf("d4:infod6:lengthi%llde4:name4:huge12:piece lengthi16384e6:pieces%d:",
			       (long long)length, PIECES * 20);
	size_t hl = strlen(head), len = hl + (size_t)PIECES * 20 + 2;
	unsigned char *buf = xcalloc(1, len);
	char *dir = xasprintf("%s/huge", tmp_root);
	struct p2p_add a = { .torrent = buf, .len = len, .save_path = dir };
	struct p2p_torrent_status st;
	char btih[41] = "", *err = NULL;
	double t0 = now_s();
	int r;

	memcpy(buf, head, hl);
	for (size_t i = 0; i < (size_t)PIECES * 20; i++)
		buf[hl + i] = (unsigned char)(i * 7 + (i >> 11));
	memcpy(buf + len - 2, "ee", 2);
	CHECK_INT(path_mkdirs(dir, 0755), 0);
	r = p2p_session_add(B.s, &a, btih, &err);
	if (r)
		printf("#   huge: %s\n", err ? err : "?");
	CHECK_INT(r, 0);
	free(err);
	if (!r) {
		CHECK_INT(p2p_session_torrent_status(B.s, btih, &st), 0);
		CHECK_INT(st.num_pieces, PIECES);
		CHECK_INT(st.total_wanted, length);
		CHECK_INT(p2p_session_remove(B.s, btih), 0);
	}
	printf("#   %zu bytes, %d pieces: added, read back and removed in %.2f s\n", len, PIECES, now_s() - t0);
	free(buf);
	free(head);
	free(dir);
}

static void close_peer(struct peer *p)
{
	if (!p->s)
		return;
	p2p_session_free(&p->s);  /* first: the wakeup is never called after this */
	uv_close((uv_handle_t *)&p->async, NULL);
}

int main(void)
{
	char tmpl[] = "/tmp/test-p2p-swarm-XXXXXX";
	int ok;

	tmp_root = test_tmpdir(tmpl);
	uv_loop_init(&loop);
	uv_timer_init(&loop, &tick);
	uv_timer_start(&tick, on_tick, 20, 20);

	ok = !start_peer(&A, 0, true) && !start_peer(&B, 0, true);
	if (!ok) {
		printf("Bail out! no libtorrent session\n");
		return 1;
	}
	RUN(seed_and_download);
	RUN(lookups_and_refusals);
	RUN(corrupt_seed_file);
	RUN(local_upload_limit);
	RUN(write_error_is_reported);
	RUN(remove_and_add_again);
	RUN(huge_torrent_loads);

	close_peer(&A);
	close_peer(&B);
	close_peer(&C);
	uv_close((uv_handle_t *)&tick, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_INT(uv_loop_close(&loop), 0);
	p2p_torrent_release(&main_t);
	p2p_torrent_release(&bad_t);
	for (int i = 0; i < NMAIN; i++)
		free(main_src[i]);
	test_rmtree(tmp_root);
	return test_done();
}
