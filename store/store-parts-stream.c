/*
 * store-parts-stream.c - a user's upload in parts streamed into the store's bucket (store.h:
 * store_parts_stream_*), for a content bigger than the local cache: never whole on local disk.
 *
 * The parts feed one streamed writer (store_writer_stream: hashed as the bytes come, handed to a
 * multipart upload completed only once the whole hashed to the content), in file order, since SHA-256
 * is computed in it. The part whose turn it is (every part before it in the writer, nothing being
 * drained) goes in live as its bytes come; a part that comes ahead of its turn is spooled into an
 * unlinked file of its own in tmp/ (O_TMPFILE: a crash leaves nothing), and once it is whole and its
 * turn has come, a thread of the upload's own drains it into the writer. An upload may always have
 * SPOOL_MIN parts waiting spooled, and more while the spooled parts of all uploads together stay
 * within half the cache's bound (the room its operator gave local disk); a part beyond is refused
 * (-EAGAIN) until earlier ones went in.
 *
 * A live part cut short (a connection reset: clients send the part again, whole) has handed its first
 * bytes to the hash, which cannot take them back. So a live part's bytes are also kept, as they go in,
 * in a file of the upload's own (unlinked, in tmp/, one part at most): sent again, the part's first
 * bytes are compared with it instead of going in twice, and the rest goes in live. A part sent again
 * whose first bytes are not those is a lie, and breaks the upload (-EPIPE from then on, its multipart
 * upload aborted: the client starts it again).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/bug.h"
#include "base/err.h"
#include "base/fdio.h"
#include "base/xmalloc.h"
#include "store-int.h"
#include "store.h"

#define SPOOL_MIN 4             /* parts ahead of their turn an upload may always keep on local disk */

/* Bytes spooled by every upload of the process (one store per process that serves). */
static pthread_mutex_t spool_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t spool_total;

static void spool_give(int64_t n)
{
	pthread_mutex_lock(&spool_mu);
	spool_total -= n;
	pthread_mutex_unlock(&spool_mu);
}
#define DRAIN_BUF ((size_t)1 << 20)

enum part_state { PART_NONE, PART_LIVE, PART_SPOOLING, PART_SPOOLED, PART_IN };

struct store_parts_stream {
	struct store_writer *w;  /* streamed into the bucket; written by one side at a time (below) */
	int64_t size, part_size;
	int nparts;
	pthread_mutex_t mu;
	pthread_cond_t cv;       /* a part's state changed, or the end asked */
	pthread_t th;            /* the drain */
	int refs;
	int next;                /* the first part not in the writer yet (1-based; nparts + 1: all are) */
	bool draining;           /* the drain writes part next into the writer now */
	bool closing, stop;      /* being committed; the drain to end */
	bool joined;             /* the drain ended (by the commit) */
	unsigned char *state;    /* enum part_state, by part - 1 */
	int *fd;                 /* a spooled part's file, by part - 1 (-1: none) */
	int spooled;             /* parts spooling or spooled (each counted part_size in spool_total) */
	int err;                 /* the upload broken: every later call gives it */
	int kept_fd;             /* the live part's bytes as they went in (-1: none yet) */
	int64_t kept;            /* ... how many of part next's went in before it was cut (0: none) */
};

/* Room for one more spooled part of ps (its mutex held): within SPOOL_MIN, or the process's budget. */
static bool spool_take(const struct store *s, const struct store_parts_stream *ps)
{
	bool ok;

	pthread_mutex_lock(&spool_mu);
	ok = ps->spooled < SPOOL_MIN || spool_total + ps->part_size <= s->cache_max / 2;
	if (ok)
		spool_total += ps->part_size;
	pthread_mutex_unlock(&spool_mu);
	return ok;
}

struct store_parts_piece {
	struct store_parts_stream *ps;
	int part;
	bool live;
	int64_t off, left;       /* in the part */
	int64_t again;           /* live, sent again after a cut: its bytes before this went in already */
};

/* The drain: a spooled part whose turn came goes into the writer, from its file. Locked on entry. */
static int drain_one(struct store_parts_stream *ps)
{
	int i = ps->next - 1, fd = ps->fd[i], r = 0;
	char *buf = xmalloc(DRAIN_BUF);
	off_t off = 0;

	ps->draining = true;
	pthread_mutex_unlock(&ps->mu);
	for (;;) {
		ssize_t n = pread(fd, buf, DRAIN_BUF, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : 0;
			break;
		}
		if ((r = store_writer_write(ps->w, buf, (size_t)n)) != 0)
			break;
		off += n;
	}
	free(buf);
	pthread_mutex_lock(&ps->mu);
	close(fd);
	ps->fd[i] = -1;
	ps->spooled--;
	spool_give(ps->part_size);
	ps->draining = false;
	if (!r && off != (i + 1 == ps->nparts ? ps->size - (int64_t)i * ps->part_size : ps->part_size))
		r = -EIO; /* (a spooled part is whole: its file shrank under us) */
	if (r) {
		ps->state[i] = PART_NONE;
		if (!ps->err)
			ps->err = r;
	} else {
		ps->state[i] = PART_IN;
		ps->next++;
	}
	pthread_cond_broadcast(&ps->cv);
	return r;
}

static void *drain_thread(void *ud)
{
	struct store_parts_stream *ps = ud;

	pthread_mutex_lock(&ps->mu);
	while (!ps->stop) {
		if (!ps->err && ps->next <= ps->nparts && ps->state[ps->next - 1] == PART_SPOOLED)
			drain_one(ps);
		else
			pthread_cond_wait(&ps->cv, &ps->mu);
	}
	pthread_mutex_unlock(&ps->mu);
	return NULL;
}

int store_parts_stream_new(struct store *s, const struct store_expect *expect, int64_t part_size,
			   struct store_parts_stream **out)
{
	struct store_parts_stream *ps;
	int r;

	if (!expect->sha256 || expect->size <= 0 || part_size <= 0 || !store_streams_size(s, expect->size) ||
	    (expect->size + part_size - 1) / part_size > 100000)
		return -EINVAL;
	ps = xcalloc(1, sizeof(*ps));
	if ((r = store_writer_new_private(s, expect, &ps->w)) != 0) {
		free(ps);
		return r;
	}
	if (!store_writer_stream(ps->w)) {
		store_writer_abort(&ps->w, false);
		free(ps);
		return HM_ERR_UPSTREAM; /* (the bucket's upload could not begin) */
	}
	ps->size = expect->size;
	ps->part_size = part_size;
	ps->nparts = (int)((expect->size + part_size - 1) / part_size);
	ps->next = 1;
	ps->refs = 1;
	ps->kept_fd = -1;
	ps->state = xcalloc((size_t)ps->nparts, 1);
	ps->fd = xmalloc((size_t)ps->nparts * sizeof(*ps->fd));
	for (int i = 0; i < ps->nparts; i++)
		ps->fd[i] = -1;
	pthread_mutex_init(&ps->mu, NULL);
	pthread_cond_init(&ps->cv, NULL);
	if ((r = -pthread_create(&ps->th, NULL, drain_thread, ps)) != 0) {
		store_writer_abort(&ps->w, false);
		pthread_mutex_destroy(&ps->mu);
		pthread_cond_destroy(&ps->cv);
		free(ps->state);
		free(ps->fd);
		free(ps);
		return r;
	}
	*out = ps;
	return 0;
}

struct store_parts_stream *store_parts_stream_ref(struct store_parts_stream *ps)
{
	pthread_mutex_lock(&ps->mu);
	ps->refs++;
	pthread_mutex_unlock(&ps->mu);
	return ps;
}

void store_parts_stream_free(struct store_parts_stream **psp)
{
	struct store_parts_stream *ps = psp ? *psp : NULL;
	int left;

	if (!ps)
		return;
	*psp = NULL;
	pthread_mutex_lock(&ps->mu);
	left = --ps->refs;
	BUG_ON(left < 0);
	if (!left) {
		ps->stop = true;
		pthread_cond_broadcast(&ps->cv);
	}
	pthread_mutex_unlock(&ps->mu);
	if (left)
		return;
	if (!ps->joined)
		pthread_join(ps->th, NULL);
	store_writer_abort(&ps->w, false); /* (not committed: its multipart upload is aborted) */
	for (int i = 0; i < ps->nparts; i++)
		if (ps->fd[i] >= 0) {
			close(ps->fd[i]);
			spool_give(ps->part_size);
		}
	if (ps->kept_fd >= 0)
		close(ps->kept_fd);
	pthread_mutex_destroy(&ps->mu);
	pthread_cond_destroy(&ps->cv);
	free(ps->state);
	free(ps->fd);
	free(ps);
}

/* A spooled part's file: unlinked from the start, so that nothing stays of it after a crash. */
static int spool_open(struct store *s)
{
	int fd = open(store_tmp_dir(s), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	return fd < 0 ? -errno : fd;
}

int store_parts_stream_part(struct store *s, struct store_parts_stream *ps, int part,
			    struct store_parts_piece **out)
{
	struct store_parts_piece *p;
	int r = 0, i = part - 1, fd = -1;
	int64_t again = 0;

	if (part < 1 || part > ps->nparts)
		return -EINVAL;
	pthread_mutex_lock(&ps->mu);
	if (ps->err)
		r = ps->err;
	else if (ps->closing)
		r = -EBUSY;
	else if (ps->state[i] == PART_IN || ps->state[i] == PART_SPOOLED)
		r = -EALREADY;
	else if (ps->state[i] != PART_NONE)
		r = -EBUSY; /* (arriving now, in another request) */
	else if (part != ps->next || ps->draining) {
		if (!spool_take(s, ps))
			r = -EAGAIN;
		else if ((fd = spool_open(s)) < 0)
			spool_give(ps->part_size);
		if (fd < 0 && !r)
			r = fd;
	} else if (ps->kept_fd < 0 && (ps->kept_fd = spool_open(s)) < 0) {
		r = ps->kept_fd;
		ps->kept_fd = -1;
	}
	if (!r) {
		again = fd >= 0 ? 0 : ps->kept;
		ps->state[i] = fd >= 0 ? PART_SPOOLING : PART_LIVE;
		ps->fd[i] = fd;
		if (fd >= 0)
			ps->spooled++;
		ps->refs++;
	}
	pthread_mutex_unlock(&ps->mu);
	if (r)
		return r;
	p = xcalloc(1, sizeof(*p));
	p->ps = ps;
	p->part = part;
	p->live = fd < 0;
	p->left = part == ps->nparts ? ps->size - (int64_t)i * ps->part_size : ps->part_size;
	p->again = again;
	*out = p;
	return 0;
}

int64_t store_parts_piece_left(const struct store_parts_piece *p)
{
	return p->left;
}

/* A live part's bytes: those a cut copy of it sent in already (before p->again) compared with what was
 * kept of them, the rest kept and then handed to the writer. */
static int live_write(struct store_parts_piece *p, const void *data, size_t n)
{
	struct store_parts_stream *ps = p->ps;
	const char *c = data;
	char cmp[16384];

	while (n && p->off < p->again) {
		size_t k = n < sizeof(cmp) ? n : sizeof(cmp);
		int r;
		if ((int64_t)k > p->again - p->off)
			k = (size_t)(p->again - p->off);
		if ((r = fdio_pread_all(ps->kept_fd, cmp, k, (off_t)p->off)) != 0)
			return r;
		if (memcmp(cmp, c, k))
			return -EPIPE; /* not the bytes its cut copy sent: a lie, which the hash took in part */
		c += k;
		n -= k;
		p->off += (int64_t)k;
		p->left -= (int64_t)k;
	}
	while (n) {
		ssize_t w = pwrite(ps->kept_fd, c, n, p->off);
		int r;
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		if ((r = store_writer_write(ps->w, c, (size_t)w)) != 0)
			return r;
		c += w;
		n -= (size_t)w;
		p->off += w;
		p->left -= w;
	}
	return 0;
}

int store_parts_piece_write(struct store_parts_piece *p, const void *data, size_t n)
{
	struct store_parts_stream *ps = p->ps;
	const char *c = data;
	int r = 0;

	if ((int64_t)n > p->left)
		return HM_ERR_SIZE_MISMATCH;
	if (p->live) {
		/* the writer and the kept file are this part's alone while it is live: the drain waits for
		 * it (next, draining) */
		r = live_write(p, data, n);
		if (r) {
			pthread_mutex_lock(&ps->mu);
			if (!ps->err)
				ps->err = r; /* (the bucket's failure, or a lie: the upload is broken) */
			pthread_mutex_unlock(&ps->mu);
		}
		return r;
	}
	while (n && !r) {
		ssize_t w = pwrite(ps->fd[p->part - 1], c, n, p->off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			r = w < 0 ? -errno : -EIO;
			break;
		}
		c += w;
		n -= (size_t)w;
		p->off += w;
		p->left -= w;
	}
	return r;
}

int store_parts_piece_end(struct store_parts_piece **pp)
{
	struct store_parts_piece *p = pp ? *pp : NULL;
	struct store_parts_stream *ps;
	int i, r = 0;

	if (!p)
		return -EINVAL;
	*pp = NULL;
	ps = p->ps;
	i = p->part - 1;
	pthread_mutex_lock(&ps->mu);
	if (p->live && p->left) {
		/* its first bytes are in the hash already, and kept: sent again, they are compared */
		ps->state[i] = PART_NONE;
		if (p->off > ps->kept)
			ps->kept = p->off;
		r = ps->err ? ps->err : -EPIPE;
	} else if (p->live) {
		ps->state[i] = PART_IN;
		ps->next++;
		ps->kept = 0;
		/* its pages dropped, most never written back (a failure only leaves them: the part is in) */
		if (ftruncate(ps->kept_fd, 0) < 0) { }
		r = ps->err;
	} else if (p->left) {
		ps->state[i] = PART_NONE; /* dropped: it may come again */
		close(ps->fd[i]);
		ps->fd[i] = -1;
		ps->spooled--;
		spool_give(ps->part_size);
		r = -EPIPE;
	} else {
		ps->state[i] = PART_SPOOLED;
	}
	pthread_cond_broadcast(&ps->cv);
	pthread_mutex_unlock(&ps->mu);
	free(p);
	store_parts_stream_free(&ps);
	return r;
}

int store_parts_stream_commit(struct store_parts_stream *ps, int *missing)
{
	int r = 0;

	*missing = 0;
	pthread_mutex_lock(&ps->mu);
	for (int i = 0; i < ps->nparts && !r && !ps->err; i++)
		if (ps->state[i] == PART_LIVE || ps->state[i] == PART_SPOOLING)
			r = -EBUSY;
		else if (ps->state[i] == PART_NONE && !*missing)
			*missing = i + 1;
	if (!r && ps->err)
		r = ps->err;
	else if (!r && *missing)
		r = HM_ERR_SIZE_MISMATCH;
	if (r || ps->closing) {
		pthread_mutex_unlock(&ps->mu);
		return r ? r : -EBUSY;
	}
	ps->closing = true; /* decided: no part is taken from now on */
	while (ps->next <= ps->nparts && !ps->err)
		pthread_cond_wait(&ps->cv, &ps->mu);
	r = ps->err;
	ps->stop = true;
	pthread_cond_broadcast(&ps->cv);
	pthread_mutex_unlock(&ps->mu);
	pthread_join(ps->th, NULL);
	ps->joined = true; /* (the writer is this thread's alone now) */
	if (!r)
		r = store_writer_commit(&ps->w, NULL); /* completed in the bucket only if it hashed to the oid */
	pthread_mutex_lock(&ps->mu);
	if (!ps->err)
		ps->err = r ? r : -ESTALE; /* (spent either way) */
	pthread_mutex_unlock(&ps->mu);
	return r;
}
