/*
 * test-p2p-ondemand.c - reading a torrent on demand, the libtorrent half of `hubmirror mount`.
 *
 * Seed A serves an 8 MiB hybrid torrent (a small file, an empty one, a big one and a middle one, so
 * there are pad files) in seed mode with its LAN upload capped at 1 MiB/s, so that a whole download
 * takes about 8 s. Downloader B lists the files, asks for the last 100 KiB of the big file and a range
 * of the small one, and must have them long before the rest; then, from another thread (as a FUSE
 * worker would) while the loop thread drains events, a range far ahead of the download in the middle of
 * the transfer, when the link is full of queued requests. Bytes are pread() from B's files and compared
 * with the sources; the refusals; full completion; and how long have_range takes on 1000 pieces.
 * The timings are printed; the checks leave room for a slow machine but fail if the wanted ranges
 * merely come in rarest-first order. Then other sessions take from A: some files only, the cold
 * pieces evicted; the mirror's seed as the source of last resort; a peer in upload mode kept. Pieces
 * that come from elsewhere than peers (the agent's fills) are test-p2p-ondemand-fill.c's; the torrent
 * is p2p-ondemand.h's.
 */
#include <errno.h>
#include <fcntl.h>
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
static uv_loop_t loop;
static uv_timer_t tick;  /* keeps uv_run(UV_RUN_ONCE) returning so run_until can look at the clock */

struct peer {
	const char *name;
	struct p2p_session *s;
	uv_async_t async;
	int port;
	char want[41];
	int finished, pieces, errors, drain_failures;
};

static struct peer A = { .name = "A" }, B = { .name = "B" };

static void on_event(void *ud, const struct p2p_event *ev)
{
	struct peer *p = ud;

	if (!ev->btih || strcmp(ev->btih, p->want))
		return;
	if (ev->kind == P2P_EVENT_FINISHED)
		p->finished++;
	else if (ev->kind == P2P_EVENT_PIECE)
		p->pieces++;
	else
		p->errors++;
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

static int run_until(int (*done)(void *), void *arg, double seconds)
{
	return p2p_test_run_until(&loop, done, arg, seconds);
}

static int start_peer(struct peer *p, int64_t local_upload_limit, bool lan)
{
	return p2p_test_session(&loop, p->name, local_upload_limit, lan, &p->s, &p->port, &p->async, on_async, p);
}

static void close_peer(struct peer *p)
{
	if (!p->s)
		return;
	p2p_session_free(&p->s);
	uv_close((uv_handle_t *)&p->async, NULL);
}

/* ---- the torrent (p2p-ondemand.h), as B has it ---- */

static char *adir, *bdir;
static int idx[NFILES];            /* libtorrent's file index of each, from p2p_session_files */
static char *bpath[NFILES];        /* where B keeps each */

static int torrent_progress(struct peer *p, double *progress)
{
	struct p2p_torrent_status st;
	int r = p2p_session_torrent_status(p->s, tor.btih, &st);

	*progress = r ? -1 : st.progress;
	return r;
}

/* What the loop waits for: ranges[] all had on B. */
struct want {
	int file;
	int64_t off, len;
};
static const struct want first_wants[] = {
	{ F_MODEL, 8000000 - 100 * 1024, 100 * 1024 },   /* the last 100 KiB of the big file */
	{ F_TOKENIZER, 123457, 4000 },                  /* a few bytes in the middle one */
	{ F_CONFIG, 100, 300 },                          /* and in the small one */
};
#define NFIRST (sizeof first_wants / sizeof first_wants[0])

static int first_wants_had(void *arg)
{
	for (size_t i = 0; i < NFIRST; i++) {
		const struct want *w = &first_wants[i];
		if (p2p_session_have_range(B.s, tor.btih, idx[w->file], w->off, w->len) != 1)
			return 0;
	}
	return 1;
}

TEST(list_files)
{
	struct p2p_file_list l = { 0 };
	char *p = NULL;

	adir = xasprintf("%s/a", tmp_root);
	bdir = xasprintf("%s/b", tmp_root);
	CHECK_INT(path_mkdirs(bdir, 0755), 0);
	CHECK_INT(ondemand_torrent(adir), 0);
	if (!tor.data)
		return;
	printf("#   %lld pieces of %lld bytes\n", (long long)tor.pieces, (long long)tor.piece_size);
	memcpy(A.want, tor.btih, 41);
	memcpy(B.want, tor.btih, 41);
	CHECK_INT(p2p_test_add(A.s, &tor, adir, true), 0);
	CHECK_INT(p2p_test_add(B.s, &tor, bdir, false), 0);

	CHECK_INT(p2p_session_files(B.s, tor.btih, &l), 0);
	CHECK_STR(l.name, "OnDemand");
	CHECK_INT(l.n, NFILES);  /* the pad files are left out */
	for (size_t i = 0; i < l.n && i < NFILES; i++) {
		CHECK_STR(l.v[i].path, rel[i]);
		CHECK_INT(l.v[i].size, sizes[i]);
		idx[i] = l.v[i].index;
	}
	/* Pads sit after config.json and the big file, so the indices skip some numbers. */
	printf("#   indices %d %d %d %d\n", idx[0], idx[1], idx[2], idx[3]);
	CHECK(idx[NFILES - 1] > NFILES - 1);
	p2p_file_list_release(&l);
	CHECK(l.v == NULL && l.n == 0 && l.name == NULL);
	p2p_file_list_release(&l);
	p2p_file_list_release(NULL);

	for (int i = 0; i < NFILES; i++) {
		char *want = xasprintf("%s/OnDemand/%s", bdir, rel[i]);
		CHECK_INT(p2p_session_file_path(B.s, tor.btih, idx[i], &bpath[i]), 0);
		CHECK_STR(bpath[i], want);
		free(want);
	}
	/* The seed's copy is where it was made. */
	CHECK_INT(p2p_session_file_path(A.s, tor.btih, idx[F_MODEL], &p), 0);
	CHECK_STR(p, src[F_MODEL]);
	free(p);
}

TEST(refusals)
{
	const char *unknown = "0123456789abcdef0123456789abcdef01234567";
	struct p2p_file_list l = { 0 };
	char *p = (char *)"untouched";
	int pad = idx[F_CONFIG] + 1;   /* the pad file after config.json */
	int64_t big = (int64_t)sizes[F_MODEL];

	CHECK_INT(p2p_session_files(B.s, unknown, &l), HM_ERR_NOT_FOUND);
	CHECK_INT(p2p_session_files(B.s, "nope", &l), HM_ERR_NOT_FOUND);
	CHECK(l.v == NULL);
	CHECK_INT(p2p_session_file_path(B.s, unknown, 0, &p), HM_ERR_NOT_FOUND);
	CHECK_INT(p2p_session_have_range(B.s, unknown, 0, 0, 1), HM_ERR_NOT_FOUND);
	CHECK_INT(p2p_session_want_range(B.s, unknown, 0, 0, 1, 0), HM_ERR_NOT_FOUND);

	CHECK(pad != idx[F_EMPTY]);
	CHECK_INT(p2p_session_file_path(B.s, tor.btih, -1, &p), -EINVAL);
	CHECK_INT(p2p_session_file_path(B.s, tor.btih, pad, &p), -EINVAL);
	CHECK_INT(p2p_session_file_path(B.s, tor.btih, 1000, &p), -EINVAL);
	CHECK_STR(p, "untouched");
	CHECK_INT(p2p_session_have_range(B.s, tor.btih, pad, 0, 1), -EINVAL);
	CHECK_INT(p2p_session_have_range(B.s, tor.btih, 1000, 0, 1), -EINVAL);
	CHECK_INT(p2p_session_want_range(B.s, tor.btih, -1, 0, 1, 0), -EINVAL);

	/* Ranges must lie inside the file. */
	CHECK_INT(p2p_session_have_range(B.s, tor.btih, idx[F_MODEL], big, 1), -EINVAL);
	CHECK_INT(p2p_session_have_range(B.s, tor.btih, idx[F_MODEL], big - 10, 11), -EINVAL);
	CHECK_INT(p2p_session_have_range(B.s, tor.btih, idx[F_MODEL], -1, 1), -EINVAL);
	CHECK_INT(p2p_session_have_range(B.s, tor.btih, idx[F_MODEL], 0, -1), -EINVAL);
	CHECK_INT(p2p_session_have_range(B.s, tor.btih, idx[F_MODEL], 1, INT64_MAX), -EINVAL);
	CHECK_INT(p2p_session_want_range(B.s, tor.btih, idx[F_MODEL], big, 1, 0), -EINVAL);
	CHECK_INT(p2p_session_want_range(B.s, tor.btih, idx[F_MODEL], 0, 1, -1), -EINVAL);
	CHECK_INT(p2p_session_have_range(B.s, tor.btih, idx[F_EMPTY], 0, 1), -EINVAL);
	CHECK_INT(p2p_session_have_range(B.s, tor.btih, idx[F_EMPTY], 1, 0), -EINVAL);

	/* Nothing downloaded yet: empty ranges are had, others not. */
	CHECK_INT(p2p_session_have_range(B.s, tor.btih, idx[F_EMPTY], 0, 0), 1);
	CHECK_INT(p2p_session_have_range(B.s, tor.btih, idx[F_MODEL], 0, 0), 1);
	CHECK_INT(p2p_session_have_range(B.s, tor.btih, idx[F_MODEL], big, 0), 1);
	CHECK_INT(p2p_session_have_range(B.s, tor.btih, idx[F_MODEL], 0, 1), 0);
	CHECK_INT(p2p_session_want_range(B.s, tor.btih, idx[F_EMPTY], 0, 0, 0), 0);

	/* The seed, in seed mode, has everything. */
	CHECK_INT(p2p_session_have_range(A.s, tor.btih, idx[F_MODEL], 0, big), 1);
	CHECK_INT(p2p_session_have_range(A.s, tor.btih, idx[F_CONFIG], 0, 517), 1);
	CHECK_INT(p2p_session_want_range(A.s, tor.btih, idx[F_MODEL], 0, big, 0), 0);
}

static double t_start;
static double first_seconds, first_progress;

TEST(wanted_ranges_come_first)
{
	char *ep = xasprintf("127.0.0.1:%d", A.port);

	/* What a mount does on a first read: ask, then wait. The peer connection is still being made. */
	CHECK_INT(p2p_session_connect(B.s, tor.btih, ep), 0);
	free(ep);
	t_start = now_s();
	for (size_t i = 0; i < NFIRST; i++) {
		const struct want *w = &first_wants[i];
		CHECK_INT(p2p_session_want_range(B.s, tor.btih, idx[w->file], w->off, w->len, 100), 0);
		/* Cheap to repeat. */
		CHECK_INT(p2p_session_want_range(B.s, tor.btih, idx[w->file], w->off, w->len, 100), 0);
	}
	CHECK(run_until(first_wants_had, NULL, 5));
	first_seconds = now_s() - t_start;
	CHECK_INT(torrent_progress(&B, &first_progress), 0);
	printf("#   wanted ranges (5 pieces) had after %.2f s, at %.0f%% of the torrent\n", first_seconds,
	       first_progress * 100);
	/* About 0.5 s to connect, and libtorrent's rate limiter lets the first bytes of a capped peer out
	 * only after about 1.5 s more (0.5 s in all without the cap). The wanted pieces are the first to
	 * come: B has little else when they are there (25% when libtorrent's first pieces were random).
	 * How soon, against the whole download's time, is checked once that is known (whole_download):
	 * an absolute bound failed on a loaded 2-core machine (3.7 s) with the order still right. */
	CHECK(first_progress < 0.15);
	for (size_t i = 0; i < NFIRST; i++) {
		const struct want *w = &first_wants[i];
		CHECK(same_range(src[w->file], bpath[w->file], w->off, (size_t)w->len));
	}
	CHECK_INT(B.errors, 0);
}

/* ---- a range far ahead, asked for from another thread in the middle of the download ---- */

struct worker {
	uv_thread_t thread;
	int file;
	int64_t off, len;
	double seconds;       /* from want_range to have_range == 1, or -1 */
	int polls, bad_answers;
	atomic_int done;
};

static void worker_main(void *arg)
{
	struct worker *w = arg;
	double t0 = now_s(), last_want = t0;
	int r;

	w->seconds = -1;
	if (p2p_session_want_range(B.s, tor.btih, idx[w->file], w->off, w->len, 50))
		w->bad_answers++;
	while (now_s() - t0 < 8) {
		r = p2p_session_have_range(B.s, tor.btih, idx[w->file], w->off, w->len);
		w->polls++;
		if (r == 1) {
			w->seconds = now_s() - t0;
			break;
		}
		if (r != 0)
			w->bad_answers++;
		/* What a FUSE read would do while it waits: ask again now and then. */
		if (now_s() - last_want > 0.2) {
			p2p_session_want_range(B.s, tor.btih, idx[w->file], w->off, w->len, 50);
			last_want = now_s();
		}
		usleep(2000);
	}
	atomic_store(&w->done, 1);
}

static int worker_done(void *arg)
{
	return atomic_load(&((struct worker *)arg)->done);
}

static int progress_at_least(void *arg)
{
	double p;

	return !torrent_progress(&B, &p) && p >= *(double *)arg;
}

TEST(want_ahead_while_busy)
{
	struct worker w;
	int64_t piece = tor.piece_size, big = (int64_t)sizes[F_MODEL];
	double at = 0.25, p0 = -1, p1 = -1;

	CHECK(run_until(progress_at_least, &at, 8));
	/* A piece can pass between choosing the range and the worker's first look: then it proves
	 * nothing, and another range is tried. */
	for (int attempt = 1; attempt <= 3; attempt++) {
		memset(&w, 0, sizeof w);
		w.file = F_MODEL;
		w.len = 150000;
		/* The first stretch of 150 kB from 80% of the big file on that B does not have yet. */
		for (int64_t off = big * 8 / 10; off + w.len <= big; off += piece) {
			if (p2p_session_have_range(B.s, tor.btih, idx[F_MODEL], off, w.len) == 0) {
				w.off = off;
				break;
			}
		}
		CHECK(w.off > 0);
		CHECK_INT(torrent_progress(&B, &p0), 0);
		CHECK_INT(uv_thread_create(&w.thread, worker_main, &w), 0);
		run_until(worker_done, &w, 10);  /* the loop drains meanwhile */
		uv_thread_join(&w.thread);
		CHECK_INT(torrent_progress(&B, &p1), 0);
		printf("#   from another thread at %.0f%%: %lld bytes at %lld had after %.2f s (%d polls), at %.0f%%\n",
		       p0 * 100, (long long)w.len, (long long)w.off, w.seconds, w.polls, p1 * 100);
		if (w.polls > 1 || w.off == 0)
			break;
	}
	CHECK(w.polls > 1);
	CHECK(w.seconds >= 0 && w.seconds < 2.0);
	CHECK(p1 < 0.6);
	CHECK_INT(w.bad_answers, 0);
	CHECK(same_range(src[F_MODEL], bpath[F_MODEL], w.off, (size_t)w.len));
}

static int b_finished(void *arg)
{
	return B.finished > 0;
}

TEST(whole_download)
{
	double took;

	CHECK(run_until(b_finished, NULL, 20));
	took = now_s() - t_start;
	printf("#   whole torrent on B after %.2f s (the wanted ranges after %.2f s)\n", took, first_seconds);
	CHECK(took > 4.0);  /* the cap held: the ranges were early, not the whole thing fast */
	CHECK(first_seconds * 2 < took);  /* measured 1.9 s of 9.9 s; 3.7 s of 11.8 s under load */
	CHECK_INT(B.pieces, tor.pieces);
	CHECK_INT(B.errors, 0);
	CHECK_INT(B.drain_failures, 0);
	for (int i = 0; i < NFILES; i++) {
		if (sizes[i])
			CHECK(same_file(src[i], bpath[i]));
		CHECK_INT(p2p_session_have_range(B.s, tor.btih, idx[i], 0, (int64_t)sizes[i]), 1);
	}
	/* Had pieces are left alone. */
	CHECK_INT(p2p_session_want_range(B.s, tor.btih, idx[F_MODEL], 0, (int64_t)sizes[F_MODEL], 0), 0);
}

/* ---- some files only (p2p_add.select, p2p_session_want_files, p2p_add.have) ---- */

/* The pieces [*first, *last] of entry i of l. */
static void pieces_of(const struct p2p_file_list *l, size_t i, int *first, int *last)
{
	*first = (int)(l->v[i].offset / l->piece_size);
	*last = (int)((l->v[i].offset + l->v[i].size - 1) / l->piece_size);
}

/* What some_files's steps share: F and G, F's file list and the states of its pieces, A's address. */
struct some {
	struct p2p_session *f, *g;
	struct p2p_file_list l;
	char *fdir, *gdir, ep[32], *err;
	unsigned char *had;
};

/* F wants config.json only: it fetches that and nothing else. */
static void some_config_only(struct some *s)
{
	struct p2p_torrent_status st = { 0 };
	struct p2p_file_list lt = { 0 };
	int want[1], first, last;
	double end;

	CHECK_INT(p2p_torrent_files(tor.data, tor.len, &lt, &s->err), 0);
	CHECK_INT(lt.n, NFILES);
	p2p_file_list_release(&lt);
	CHECK_INT(p2p_torrent_files(tor.data, 10, &s->l, NULL) != 0, 1);
	want[0] = idx[F_CONFIG];
	{
		struct p2p_add a = { .torrent = tor.data, .len = tor.len, .save_path = s->fdir, .select = true,
				     .want = want, .nwant = 1 };
		CHECK_INT(p2p_session_add(s->f, &a, NULL, &s->err), 0);
	}
	CHECK_INT(p2p_session_files(s->f, tor.btih, &s->l), 0);
	snprintf(s->ep, sizeof(s->ep), "127.0.0.1:%d", A.port);
	CHECK_INT(p2p_session_connect(s->f, tor.btih, s->ep), 0);
	end = now_s() + 40;
	while (now_s() < end && !(p2p_session_torrent_status(s->f, tor.btih, &st) == 0 && st.finished))
		usleep(20000);
	CHECK(st.finished && !st.seeding);
	CHECK(st.total_wanted < s->l.piece_size + 1);
	CHECK_INT(st.held, sizes[F_CONFIG]);
	CHECK_INT(p2p_session_have_range(s->f, tor.btih, idx[F_CONFIG], 0, sizes[F_CONFIG]), 1);
	{
		char *fcfg = xasprintf("%s/OnDemand/%s", s->fdir, rel[F_CONFIG]); /* F's own copy */
		CHECK(same_file(src[F_CONFIG], fcfg));
		free(fcfg);
	}
	s->had = xcalloc((size_t)s->l.pieces, 1);
	CHECK_INT(p2p_session_pieces_had(s->f, tor.btih, s->had, NULL, s->l.pieces), 0);
	pieces_of(&s->l, F_MODEL, &first, &last);
	CHECK_INT(s->had[first], 2); /* neither had nor wanted */
	CHECK_INT(s->had[last], 2);
}

/* The tokenizer too, and then the last 100 KiB of the model, asked for as a reader would. */
static void some_more(struct some *s)
{
	struct p2p_torrent_status st = { 0 };
	int64_t held[NFILES] = { 0 };
	int pair[2], first, last;
	struct stat sb;
	double end;

	pair[0] = idx[F_TOKENIZER];
	pair[1] = 9999; /* skipped */
	CHECK_INT(p2p_session_want_files(s->f, tor.btih, pair, 2), 0);
	CHECK_INT(p2p_session_want_range(s->f, tor.btih, idx[F_MODEL], sizes[F_MODEL] - 100 * 1024, 100 * 1024, 0), 0);
	end = now_s() + 40;
	while (now_s() < end &&
	       !(p2p_session_torrent_status(s->f, tor.btih, &st) == 0 && st.finished &&
		 p2p_session_have_range(s->f, tor.btih, idx[F_MODEL], sizes[F_MODEL] - 100 * 1024, 100 * 1024) == 1))
		usleep(20000);
	CHECK(st.finished && !st.seeding);
	CHECK_INT(p2p_session_have_range(s->f, tor.btih, idx[F_TOKENIZER], 0, sizes[F_TOKENIZER]), 1);
	CHECK_INT(p2p_session_have_range(s->f, tor.btih, idx[F_MODEL], 0, 4096), 0);
	CHECK_INT(p2p_session_files_held(s->f, tor.btih, &s->l, held), 0);
	CHECK_INT(held[F_CONFIG], sizes[F_CONFIG]);
	CHECK_INT(held[F_TOKENIZER], sizes[F_TOKENIZER]);
	CHECK(held[F_MODEL] >= 100 * 1024 && held[F_MODEL] <= 100 * 1024 + 2 * s->l.piece_size);
	CHECK_INT(p2p_session_pieces_had(s->f, tor.btih, s->had, NULL, s->l.pieces), 0);
	pieces_of(&s->l, F_MODEL, &first, &last);
	CHECK_INT(s->had[first], 2);
	CHECK_INT(s->had[last], 1);
	/* the model's file holds that range only (a sparse file), not 8 MB */
	{
		char *fmodel = xasprintf("%s/OnDemand/%s", s->fdir, rel[F_MODEL]);
		CHECK(stat(fmodel, &sb) == 0 && (int64_t)sb.st_blocks * 512 <= 100 * 1024 + 4 * s->l.piece_size);
		free(fmodel);
	}
}

/* Eviction: what is cold of the tokenizer and the model goes (config.json is kept), but for a
 * tokenizer piece read after it was found cold; then the model's range is read again */
static void some_evicted(struct some *s)
{
	struct p2p_torrent_status st = { 0 };
	struct p2p_cold *cold = NULL;
	size_t ncold = 0, evicted = 0;
	int64_t freed = 0, before;
	int keep[1] = { idx[F_CONFIG] }, first, last, tfirst, tlast;
	char *tok = xasprintf("%s/OnDemand/%s", s->fdir, rel[F_TOKENIZER]);
	struct stat tb;
	double end;

	CHECK_INT(p2p_session_torrent_status(s->f, tor.btih, &st), 0);
	before = st.held;
	CHECK_INT(p2p_session_cold_pieces(s->f, tor.btih, keep, 1, 0, &cold, &ncold), 0);
	pieces_of(&s->l, F_CONFIG, &first, &last);
	for (size_t i = 0; i < ncold; i++)
		CHECK(cold[i].piece != first);
	pieces_of(&s->l, F_TOKENIZER, &tfirst, &tlast);
	CHECK(ncold >= (size_t)(tlast - tfirst + 2));
	CHECK_INT(p2p_session_touch(s->f, tor.btih, idx[F_TOKENIZER], 0, 10), 0); /* read since */
	sleep(1); /* (touches count in seconds) */
	CHECK_INT(p2p_session_touch(s->f, tor.btih, idx[F_TOKENIZER], 0, 10), 0);
	CHECK_INT(p2p_session_evict_pieces(s->f, tor.btih, tor.data, tor.len, cold, ncold, &freed, &evicted, &s->err),
		  0);
	CHECK_INT(evicted, ncold - 1);
	CHECK(freed >= 100 * 1024 && freed < before);
	CHECK_INT(p2p_session_have_range(s->f, tor.btih, idx[F_TOKENIZER], 0, 10), 1); /* the piece read stays */
	CHECK_INT(p2p_session_have_range(s->f, tor.btih, idx[F_TOKENIZER], 0, sizes[F_TOKENIZER]), 0);
	CHECK_INT(p2p_session_have_range(s->f, tor.btih, idx[F_CONFIG], 0, sizes[F_CONFIG]), 1);
	CHECK(stat(tok, &tb) == 0 && (int64_t)tb.st_blocks * 512 <= 2 * s->l.piece_size);
	end = now_s() + 40;
	while (now_s() < end && !(p2p_session_torrent_status(s->f, tor.btih, &st) == 0 && !st.checking && st.finished))
		usleep(10000);
	CHECK_INT(st.held, before - freed);
	CHECK_INT(p2p_session_pieces_had(s->f, tor.btih, s->had, NULL, s->l.pieces), 0);
	CHECK_INT(s->had[tlast], 2); /* not wanted any more: not fetched again unasked */
	/* read again: fetched again from A, the same bytes */
	CHECK_INT(p2p_session_connect(s->f, tor.btih, s->ep), 0);
	CHECK_INT(p2p_session_want_range(s->f, tor.btih, idx[F_TOKENIZER], 0, sizes[F_TOKENIZER], 0), 0);
	end = now_s() + 40;
	while (now_s() < end && p2p_session_have_range(s->f, tor.btih, idx[F_TOKENIZER], 0, sizes[F_TOKENIZER]) != 1)
		usleep(20000);
	CHECK_INT(p2p_session_have_range(s->f, tor.btih, idx[F_TOKENIZER], 0, sizes[F_TOKENIZER]), 1);
	CHECK(same_file(src[F_TOKENIZER], tok));
	free(tok);
	free(cold);
}

/* G: F's config and tokenizer, their pieces given as had */
static void some_given_as_had(struct some *s)
{
	struct p2p_torrent_status st = { 0 };
	unsigned char *have;
	int pair[2], first, last;
	double end;

	CHECK_INT(path_mkdirs(s->gdir, 0755), 0);
	{
		char *cmd = xasprintf("cp -a '%s/OnDemand' '%s/'", s->fdir, s->gdir);
		CHECK_INT(system(cmd), 0);
		free(cmd);
	}
	have = xcalloc((size_t)s->l.pieces, 1);
	pieces_of(&s->l, F_CONFIG, &first, &last);
	for (int p = first; p <= last; p++)
		have[p] = 1;
	pieces_of(&s->l, F_TOKENIZER, &first, &last);
	for (int p = first; p <= last; p++)
		have[p] = 1;
	pair[1] = idx[F_TOKENIZER];
	pair[0] = idx[F_CONFIG];
	{
		struct p2p_add a = { .torrent = tor.data, .len = tor.len, .save_path = s->gdir, .select = true,
				     .want = pair, .nwant = 2, .have = have, .nhave = (size_t)s->l.pieces - 1 };
		CHECK_INT(p2p_session_add(s->g, &a, NULL, NULL), HM_ERR_USAGE); /* the wrong piece count */
		a.nhave = (size_t)s->l.pieces;
		CHECK_INT(p2p_session_add(s->g, &a, NULL, &s->err), 0);
	}
	end = now_s() + 40;
	while (now_s() < end && !(p2p_session_torrent_status(s->g, tor.btih, &st) == 0 && st.finished))
		usleep(10000);
	CHECK(st.finished && st.pieces_have == last - first + 2 && st.damaged == 0);
	CHECK_INT(p2p_session_have_range(s->g, tor.btih, idx[F_TOKENIZER], 0, sizes[F_TOKENIZER]), 1);
	{
		/* a byte of config.json flipped behind its back: the read's check finds it */
		char *cfgp = xasprintf("%s/OnDemand/%s", s->gdir, rel[F_CONFIG]);
		int fd = open(cfgp, O_RDWR);
		char c = 0;
		CHECK(fd >= 0 && pread(fd, &c, 1, 10) == 1);
		c ^= 1;
		CHECK(fd >= 0 && pwrite(fd, &c, 1, 10) == 1);
		if (fd >= 0)
			close(fd);
		free(cfgp);
	}
	CHECK_INT(p2p_session_have_range(s->g, tor.btih, idx[F_CONFIG], 0, sizes[F_CONFIG]), 0);
	CHECK_INT(p2p_session_torrent_status(s->g, tor.btih, &st), 0);
	CHECK_INT(st.damaged, 1);
	free(have);
}

/* F wants config.json only, then the tokenizer too, then a range of the model: it fetches those and
 * nothing else (the model's file is never written but for that range). G takes F's files back with
 * their pieces given as had: nothing is checked up front, a read checks each piece in the file and a
 * damaged one counts. */
TEST(some_files)
{
	struct p2p_session_config cfg = { .listen_interfaces = "127.0.0.1:0", .lan_tuning = true };
	struct some s = { 0 };

	s.fdir = xasprintf("%s/F", tmp_root);
	s.gdir = xasprintf("%s/G", tmp_root);
	CHECK_INT(p2p_session_new(&cfg, &s.f, NULL), 0);
	CHECK_INT(p2p_session_new(&cfg, &s.g, NULL), 0);
	if (s.f && s.g) {
		some_config_only(&s);
		some_more(&s);
		some_evicted(&s);
		some_given_as_had(&s);
	}
	free(s.err);
	free(s.had);
	p2p_file_list_release(&s.l);
	p2p_session_free(&s.g);
	p2p_session_free(&s.f);
	free(s.fdir);
	free(s.gdir);
}

/* ---- the mirror's seed as the source of last resort (origin_last) ---- */

static int64_t downloaded(struct p2p_session *c)
{
	struct p2p_torrent_status st;

	return p2p_session_torrent_status(c, tor.btih, &st) ? -1 : st.downloaded;
}

/* O seeds as a mirror does (origin); D adds the torrent with origin_last and is connected to it: D
 * sees O as a peer with nothing and takes no byte from it; E, without origin_last, downloads from O. */
TEST(origin_last)
{
	struct p2p_session_config ocfg = { .listen_interfaces = "127.0.0.1:0", .lan_tuning = true, .origin = true };
	struct p2p_session_config cfg = { .listen_interfaces = "127.0.0.1:0", .lan_tuning = true };
	struct p2p_session *o = NULL, *d = NULL, *e = NULL;
	struct p2p_session_status os;
	struct p2p_torrent_status st = { 0 };
	char *ddir = xasprintf("%s/D", tmp_root), *edir = xasprintf("%s/E", tmp_root), ep[32];
	struct p2p_add da = { .torrent = tor.data, .len = tor.len, .save_path = ddir, .origin_last = true };
	unsigned char *had = xcalloc((size_t)tor.pieces, 1);
	int *avail = xcalloc((size_t)tor.pieces, sizeof(*avail));
	double end;
	int max_avail = 0;

	CHECK_INT(p2p_session_new(&ocfg, &o, NULL), 0);
	CHECK_INT(p2p_session_new(&cfg, &d, NULL), 0);
	CHECK_INT(p2p_session_new(&cfg, &e, NULL), 0);
	if (!o || !d || !e)
		goto out;
	CHECK_INT(p2p_test_add(o, &tor, adir, true), 0);
	CHECK_INT(p2p_session_add(d, &da, NULL, NULL), 0);
	CHECK_INT(p2p_session_status(o, &os), 0);
	snprintf(ep, sizeof(ep), "127.0.0.1:%d", os.listen_port);
	CHECK_INT(p2p_session_connect(d, tor.btih, ep), 0);
	/* D, connected to O (libtorrent dials at its one-second tick: wait for it), has taken nothing
	 * and sees no piece anywhere. (E joins only after: once it has pieces, O's peer exchange may
	 * hand D its address, and D would rightly take them from E.) */
	end = now_s() + 40;
	while (now_s() < end && !(p2p_session_torrent_status(d, tor.btih, &st) == 0 && st.peers >= 1))
		usleep(20000);
	usleep(300000); /* and a moment for its messages */
	CHECK_INT(p2p_session_torrent_status(d, tor.btih, &st), 0);
	CHECK(st.peers >= 1);
	CHECK_INT(st.pieces_have, 0);
	CHECK(downloaded(d) == 0);
	CHECK_INT(p2p_session_pieces_had(d, tor.btih, had, avail, (int)tor.pieces), 0);
	for (int p = 0; p < tor.pieces; p++)
		if (avail[p] > max_avail)
			max_avail = avail[p];
	CHECK_INT(max_avail, 0);
	/* E (a plain peer) completes from O... */
	CHECK_INT(p2p_test_add(e, &tor, edir, false), 0);
	CHECK_INT(p2p_session_connect(e, tor.btih, ep), 0);
	end = now_s() + 40;
	while (now_s() < end && !(p2p_session_torrent_status(e, tor.btih, &st) == 0 && st.seeding))
		usleep(20000);
	CHECK(st.seeding);
	/* ...a plain peer's pieces count, and D downloads from it */
	{
		struct p2p_session_status es;
		CHECK_INT(p2p_session_status(e, &es), 0);
		snprintf(ep, sizeof(ep), "127.0.0.1:%d", es.listen_port);
		CHECK_INT(p2p_session_connect(d, tor.btih, ep), 0);
	}
	end = now_s() + 40;
	while (now_s() < end && !(p2p_session_torrent_status(d, tor.btih, &st) == 0 && st.seeding))
		usleep(20000);
	CHECK(st.seeding);
	CHECK(downloaded(d) >= (int64_t)(sizes[F_MODEL] + sizes[F_TOKENIZER]));
out:
	free(had);
	free(avail);
	p2p_session_free(&e);
	p2p_session_free(&d);
	p2p_session_free(&o);
	free(ddir);
	free(edir);
}

/* ---- how fast have_range is over 1000 pieces ---- */

TEST(have_range_speed)
{
	/* 1000 pieces of 64 KiB (the piece size for 62.5 MiB), in a sparse file: hashing zeros is quick. */
	const int64_t size = 1000 * 65536;
	char *dir = xasprintf("%s/speed", tmp_root), *sub = xasprintf("%s/Speed", dir);
	char *blob = xasprintf("%s/zeros.bin", sub);
	struct p2p_file f = { .path = "zeros.bin", .size = size, .source = blob };
	struct p2p_torrent t = { 0 };
	struct p2p_session_config cfg = { .listen_interfaces = "127.0.0.1:0" };
	struct p2p_session *c = NULL;
	struct p2p_torrent_status st;
	struct p2p_file_list l = { 0 };
	double t0, cold, warm, end;
	int fd, r = -1;

	CHECK_INT(path_mkdirs(sub, 0755), 0);
	fd = open(blob, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && ftruncate(fd, size) == 0);
	if (fd >= 0)
		close(fd);
	CHECK_INT(p2p_torrent_create("Speed", &f, 1, &t, NULL), 0);
	CHECK_INT(t.pieces, 1000);
	/* A session without a wakeup: nothing drains, so only have_range itself fills its cache. Added
	 * without seed mode, libtorrent checks the file and then has every piece. */
	CHECK_INT(p2p_session_new(&cfg, &c, NULL), 0);
	if (!c || !t.data)
		goto out;
	CHECK_INT(p2p_test_add(c, &t, dir, false), 0);
	end = now_s() + 40;
	while (now_s() < end && !(p2p_session_torrent_status(c, t.btih, &st) == 0 && st.seeding))
		usleep(10000);
	CHECK(st.seeding);
	CHECK_INT(p2p_session_files(c, t.btih, &l), 0);
	CHECK_INT(l.n, 1);
	if (l.n != 1)
		goto out;
	t0 = now_s();
	r = p2p_session_have_range(c, t.btih, l.v[0].index, 0, size);
	cold = now_s() - t0;
	CHECK_INT(r, 1);
	t0 = now_s();
	for (int i = 0; i < 100; i++)
		r = p2p_session_have_range(c, t.btih, l.v[0].index, 0, size);
	warm = (now_s() - t0) / 100;
	CHECK_INT(r, 1);
	printf("#   have_range over 1000 pieces: %.2f ms the first time (one look at libtorrent for all), %.1f us "
	       "cached\n",
	       cold * 1e3, warm * 1e6);
	CHECK(cold < 1.0);
	CHECK(warm < cold);
out:
	p2p_file_list_release(&l);
	p2p_session_free(&c);
	p2p_torrent_release(&t);
	free(blob);
	free(sub);
	free(dir);
}

/* ---- a peer in upload mode stays connected ---- */

/* F has nothing and is in upload mode (an agent alone at first, fetching from the mirror directly:
 * fill.c), G has nothing either and dials F. libtorrent's default closes such a connection ("an
 * uninteresting upload-only peer") and dials it again only much later, so the agents that came while
 * one was alone lost it for good; the sessions keep it (close_redundant_connections off). */
TEST(upload_only_peer_kept)
{
	struct p2p_session_config cfg = { .listen_interfaces = "127.0.0.1:0", .lan_tuning = true };
	struct p2p_session *f = NULL, *g = NULL;
	struct p2p_session_status fs;
	struct p2p_torrent_status st = { 0 };
	char *fdir = xasprintf("%s/F", tmp_root), *gdir = xasprintf("%s/G", tmp_root), ep[32];
	struct p2p_add fa = { .torrent = tor.data, .len = tor.len, .save_path = fdir, .upload_only = true };
	double end;
	int gaps = 0, samples = 0;

	CHECK_INT(p2p_session_new(&cfg, &f, NULL), 0);
	CHECK_INT(p2p_session_new(&cfg, &g, NULL), 0);
	if (!f || !g)
		goto out;
	CHECK_INT(p2p_session_add(f, &fa, NULL, NULL), 0);
	CHECK_INT(p2p_test_add(g, &tor, gdir, false), 0);
	CHECK_INT(p2p_session_status(f, &fs), 0);
	snprintf(ep, sizeof(ep), "127.0.0.1:%d", fs.listen_port);
	CHECK_INT(p2p_session_connect(g, tor.btih, ep), 0);
	end = now_s() + 40;
	while (now_s() < end && !(p2p_session_torrent_status(g, tor.btih, &st) == 0 && st.peers >= 1))
		usleep(20000);
	CHECK_INT(st.peers, 1);
	/* the bitfields and F's "upload only" go by in milliseconds; watch for 3 s */
	end = now_s() + 3;
	while (now_s() < end) {
		samples++;
		if (p2p_session_torrent_status(g, tor.btih, &st) || st.peers < 1)
			gaps++;
		usleep(20000);
	}
	printf("#   G without F in %d of %d looks over 3 s\n", gaps, samples);
	CHECK_INT(gaps, 0);
	CHECK_INT(p2p_session_torrent_status(f, tor.btih, &st), 0);
	CHECK_INT(st.peers, 1);
out:
	p2p_session_free(&f);
	p2p_session_free(&g);
	test_rmtree(fdir);
	test_rmtree(gdir);
	free(fdir);
	free(gdir);
}

int main(void)
{
	char tmpl[] = "/tmp/test-p2p-ondemand-XXXXXX";

	tmp_root = test_tmpdir(tmpl);
	uv_loop_init(&loop);
	uv_timer_init(&loop, &tick);
	uv_timer_start(&tick, on_tick, 20, 20);

	/* A's LAN upload is capped at 1 MiB/s: the whole torrent takes about 9 s. A has libtorrent's
	 * default send buffers: with lan_tuning's (up to 3 MiB read ahead for a peer) a capped seed holds
	 * up to 3 s of blocks it has committed to send before a new request, and a range wanted in the
	 * middle of a download took 0.5 to 3 s instead of 0.5 to 1 s. B is tuned as an agent would be. */
	if (start_peer(&A, 1024 * 1024, false) || start_peer(&B, 0, true)) {
		printf("Bail out! no libtorrent session\n");
		return 1;
	}
	RUN(list_files);
	if (tor.data) {
		RUN(refusals);
		RUN(wanted_ranges_come_first);
		RUN(want_ahead_while_busy);
		RUN(whole_download);
		RUN(origin_last);
		RUN(upload_only_peer_kept);
		RUN(some_files);
	}
	RUN(have_range_speed);

	close_peer(&A);
	close_peer(&B);
	uv_close((uv_handle_t *)&tick, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_INT(uv_loop_close(&loop), 0);
	ondemand_torrent_release();
	for (int i = 0; i < NFILES; i++)
		free(bpath[i]);
	free(adir);
	free(bdir);
	test_rmtree(tmp_root);
	return test_done();
}
