/*
 * mount.c - a torrent as a read-only FUSE filesystem (see mount.h).
 *
 * libfuse's multi-threaded loop calls the operations below from its worker threads; the p2p
 * session's range calls are safe from any thread. A read that finds its bytes missing asks the
 * swarm for them first (piece deadlines) and polls until the bytes are verified in the file.
 * Stopping is an unmount: the kernel then ends the loop's reads of /dev/fuse, and its thread returns.
 */
#define FUSE_USE_VERSION 35

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "mount.h"
#include "p2p.h"

/* Readahead of one file: where its reader is and how far ahead the swarm is asked to fetch. */
struct ahead {
	int64_t pos;                            /* the end of the last read */
	int64_t win;                            /* bytes wanted past it (0: the reader jumps around) */
	int64_t to;                             /* wanted up to here already */
};

#define READ_MAX (1008 << 10)     /* the largest read the kernel sends (see op_init) */
#define READ_AHEAD_KB 4096        /* the kernel's readahead on the mount (mount_readahead) */
#define TRIM_CHUNK (8 << 20)      /* the cache file's pages are let go in chunks of this (trim_behind) */
#define TRIM_LAG 8                /* chunks answered whole after one before its pages go */
#define TRIM_QUEUE 64             /* trims waiting for the trimmer thread, at most (more: left out) */

/* A chunk of a file the mount has answered whole: its pages in the cache file are a second copy. */
struct trim {
	size_t k;                               /* the entry of files.v */
	int64_t off, len;
};

/* What the trimmer thread does with a chunk: start its write-back, or let its pages go. */
struct trim_op {
	int fd;
	int64_t off, len;
	bool drop;
};

struct mnt {
	struct p2p_session *ses;
	char btih[41];
	char *dir;
	struct p2p_file_list files;
	const struct p2p_file_entry **sorted;   /* files by path (strcmp), for lookups and listings */
	int timeout_s;
	pthread_mutex_t mu;                     /* guards fds, ahead, answered and trims */
	int *fds;                               /* per entry of files.v, -1 until first read */
	struct ahead *ahead;                    /* per entry of files.v */
	uint32_t **answered;                    /* per entry: bytes answered of each TRIM_CHUNK (UINT32_MAX: all) */
	struct trim trims[TRIM_LAG];            /* the last chunks answered whole, oldest at trim_next */
	size_t ntrims, trim_next;
	/* the trimmer thread (trim_behind) and its queue, under mu */
	pthread_t trimmer;
	bool trimmer_started, trim_stop;
	pthread_cond_t trim_cv;
	struct trim_op tq[TRIM_QUEUE];
	size_t tq_head, tq_n;
	int64_t ahead_min, ahead_max;           /* the readahead window's first and largest size */
	time_t mounted_at;
	struct fuse *f;
	pthread_t loop;
	bool loop_started;
	atomic_bool gone;                       /* the loop ended: unmounted */
	atomic_bool detached;                   /* p2p_mount_detach ran: no more shortcuts */
	atomic_int busy;                        /* shortcut calls running: not freed meanwhile */
	dev_t dev;                              /* the mount's device, once known (mount_readahead) */
	unsigned char *direct;                  /* per entry of files.v: served by a shortcut */
	size_t ndirect;
	pthread_mutex_t short_mu;               /* one shortcut call at a time: made, or dropped */
	atomic_uint short_gen;                  /* p2p_mount_shortcuts_fence's count */
	atomic_bool closing;                    /* the owner ends: waiting reads give up */
};

static struct mnt *self(void)
{
	return fuse_get_context()->private_data;
}

static int by_path(const void *a, const void *b)
{
	return strcmp((*(const struct p2p_file_entry *const *)a)->path,
		      (*(const struct p2p_file_entry *const *)b)->path);
}

/* First sorted entry whose path is >= key. */
static size_t lower_bound(const struct mnt *m, const char *key)
{
	size_t lo = 0, hi = m->files.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(m->sorted[mid]->path, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct p2p_file_entry *find_file(const struct mnt *m, const char *p)
{
	size_t i = lower_bound(m, p);

	return i < m->files.n && !strcmp(m->sorted[i]->path, p) ? m->sorted[i] : NULL;
}

/* Is p ("" for the root) a folder: some path starts with "p/"? */
static bool is_dir(const struct mnt *m, const char *p)
{
	char *prefix;
	size_t i, n;
	bool yes;

	if (!*p)
		return true;
	prefix = xasprintf("%s/", p);
	n = strlen(prefix);
	i = lower_bound(m, prefix);
	yes = i < m->files.n && !strncmp(m->sorted[i]->path, prefix, n);
	free(prefix);
	return yes;
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct mnt *m = self();
	const char *p = path[0] == '/' ? path + 1 : path;
	const struct p2p_file_entry *e;

	(void)fi;
	memset(st, 0, sizeof(*st));
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_mtime = st->st_ctime = st->st_atime = m->mounted_at;
	if ((e = find_file(m, p))) {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = e->size;
		st->st_blocks = (e->size + 511) / 512;
		return 0;
	}
	if (is_dir(m, p)) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		return 0;
	}
	return -ENOENT;
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	struct mnt *m = self();
	const char *p = path[0] == '/' ? path + 1 : path;
	char *prefix = *p ? xasprintf("%s/", p) : xstrdup("");
	size_t plen = strlen(prefix), last_len = 0;
	const char *last = NULL;

	(void)off;
	(void)fi;
	(void)flags;
	if (*p && !is_dir(m, p)) {
		free(prefix);
		return find_file(m, p) ? -ENOTDIR : -ENOENT;
	}
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	/* sorted paths keep a folder's entries together, and one child's paths together */
	for (size_t i = lower_bound(m, prefix); i < m->files.n && !strncmp(m->sorted[i]->path, prefix, plen); i++) {
		const char *child = m->sorted[i]->path + plen, *slash = strchr(child, '/');
		size_t len = slash ? (size_t)(slash - child) : strlen(child);
		char *name;

		if (last && len == last_len && !strncmp(child, last, len))
			continue;
		last = child;
		last_len = len;
		name = xstrndup(child, len);
		fill(buf, name, NULL, 0, 0);
		free(name);
	}
	free(prefix);
	return 0;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	struct mnt *m = self();
	const struct p2p_file_entry *e = find_file(m, path[0] == '/' ? path + 1 : path);

	if (!e)
		return is_dir(m, path + 1) ? -EISDIR : -ENOENT;
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EROFS;
	fi->fh = (uint64_t)(e - m->files.v);
	fi->keep_cache = 1; /* the content never changes: the kernel may keep it */
	return 0;
}

/* The file's descriptor in the cache folder, opened once (after its first verified bytes). */
static int file_fd(struct mnt *m, size_t k)
{
	int fd;

	pthread_mutex_lock(&m->mu);
	fd = m->fds[k];
	if (fd < 0) {
		char *path = NULL;
		if (!p2p_session_file_path(m->ses, m->btih, m->files.v[k].index, &path)) {
			fd = open(path, O_RDONLY | O_CLOEXEC);
			m->fds[k] = fd;
		}
		free(path);
	}
	pthread_mutex_unlock(&m->mu);
	return fd;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until bytes [off, off + n) of file k are verified in the cache (asking the swarm for them
 * first, then woken as pieces come, asking again each second). 0, -EINTR (the reader gave up: the kernel
 * interrupted the request), or -EIO.
 *
 * The wait ends as soon as nobody can want its answer: the reader was interrupted (a signal; a
 * killed reader whose request was a readahead is not, but then the next case comes once the last
 * user of the mount lets go), the session ended (the kernel aborted the connection: the last mount
 * of it, in every namespace, is gone), or the owner is closing. A worker stuck here would hold the
 * FUSE loop open (libfuse joins its workers, and never cancels one that is answering a request). */
static int wait_verified(struct mnt *m, const struct p2p_file_entry *e, off_t off, int64_t n)
{
	struct fuse_session *se = fuse_get_session(m->f);
	int64_t start = now_ms(), asked = -1000, looked = 0, t;
	int have;

	/* (HM_ERR_NOT_FOUND for a moment: the owner adds the torrent again, after taking pieces away from
	 * the cache; the pieces wanted are asked for again below). Woken as pieces come, at most 50 ms
	 * apart to look at the reader and the session. */
	while ((have = p2p_session_have_range(m->ses, m->btih, e->index, off, n)) == 0 || have == HM_ERR_NOT_FOUND) {
		struct p2p_torrent_status st;
		int w;
		if (fuse_interrupted())
			return -EINTR;
		if (fuse_session_exited(se) || m->closing)
			return -EIO;
		t = now_ms();
		if (t - asked >= 1000) {
			asked = t;
			if ((w = p2p_session_want_range(m->ses, m->btih, e->index, off, n, 0)) && w != HM_ERR_NOT_FOUND)
				return -EIO;
		}
		/* a torrent stopped by an error (a full disk) will not bring the bytes: fail now */
		if (t - looked >= 500) {
			looked = t;
			if (t - start >= 500 && !p2p_session_torrent_status(m->ses, m->btih, &st) && st.error)
				return -EIO;
		}
		if (t - start >= (int64_t)m->timeout_s * 1000)
			return -EIO;
		p2p_session_wait_range(m->ses, m->btih, e->index, off, n, 50);
	}
	return have < 0 ? -EIO : 0;
}

/* A reader of file k that reads on (each read near where the last one ended: several threads of
 * one reader, and the kernel's own readahead, send them a little out of order) gets the pieces
 * ahead of it wanted too, a window that doubles with each such read up to ahead_max; one that jumps
 * around gets only what it reads. Each piece is asked for once (p2p_session_want_range: it is then
 * wanted until it is had, with a deadline behind the reads that wait). */
static void read_ahead(struct mnt *m, size_t k, int64_t off, int64_t n)
{
	const struct p2p_file_entry *e = &m->files.v[k];
	struct ahead *r;
	int64_t from = 0, to = 0, end = off + n;

	pthread_mutex_lock(&m->mu);
	r = &m->ahead[k];
	if (off <= r->pos + m->ahead_min && end >= r->pos - m->ahead_min && r->pos) {
		r->win = r->win ? (2 * r->win < m->ahead_max ? 2 * r->win : m->ahead_max) : m->ahead_min;
		if (end > r->pos)
			r->pos = end;
	} else {
		r->win = 0;
		r->pos = end;
		r->to = end;
	}
	if (r->to < r->pos)
		r->to = r->pos;
	if (r->win && r->to < e->size && r->to < r->pos + r->win) {
		from = r->to;
		to = r->pos + r->win < e->size ? r->pos + r->win : e->size;
		r->to = to;
	}
	pthread_mutex_unlock(&m->mu);
	if (to > from)
		p2p_session_want_range(m->ses, m->btih, e->index, from, to - from, 100);
}

/* The trimmer thread: the syscalls of trim_behind, off the reads' way. Starting a chunk's write-back
 * allocates its blocks (ext4 reads block bitmaps from disk for it), and behind an fsync of anything
 * on the same disk that waits for the journal's flush: 0.1-0.3 s measured, during which a read that
 * made the call held its reader. */
static void *trimmer(void *arg)
{
	struct mnt *m = arg;

	pthread_mutex_lock(&m->mu);
	for (;;) {
		struct trim_op op;
		while (!m->tq_n && !m->trim_stop)
			pthread_cond_wait(&m->trim_cv, &m->mu);
		if (m->trim_stop)
			break;
		op = m->tq[m->tq_head];
		m->tq_head = (m->tq_head + 1) % TRIM_QUEUE;
		m->tq_n--;
		pthread_mutex_unlock(&m->mu);
		/* pages still dirty or under write-back stay (the kernel skips them): only a missed chance */
		if (op.drop)
			(void)posix_fadvise(op.fd, op.off, op.len, POSIX_FADV_DONTNEED);
		else
			(void)sync_file_range(op.fd, op.off, op.len, SYNC_FILE_RANGE_WRITE);
		pthread_mutex_lock(&m->mu);
	}
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

/* Under m->mu: queue op for the trimmer (started the first time; a full queue leaves op out). */
static void trim_queue(struct mnt *m, struct trim_op op)
{
	if (!m->trimmer_started) {
		if (pthread_create(&m->trimmer, NULL, trimmer, m) != 0)
			return; /* no trimmer: the pages stay (a cost, not an error) */
		m->trimmer_started = true;
	}
	if (m->tq_n == TRIM_QUEUE)
		return;
	m->tq[(m->tq_head + m->tq_n) % TRIM_QUEUE] = op;
	m->tq_n++;
	pthread_cond_signal(&m->trim_cv);
}

/* The kernel keeps what the mount answered in the mount's own page cache (keep_cache), so the cache
 * file's pages of it are a second copy of every byte read: a 100 GB load would hold 200 GB of page
 * cache, and every byte would take two new pages (on a VM whose host backs freed memory lazily, each
 * new page is a fault in the host: measured, writing 1 GiB into new page-cache pages cost 1.0
 * CPU-seconds, into pages let go and used again 0.14). So once a TRIM_CHUNK of file k has been
 * answered whole, its write-back starts, and TRIM_LAG chunks later (written, and long sent) its pages
 * are let go, both by the trimmer thread; the next pieces' writes take them again. A later read of
 * those bytes through the mount (the kernel dropped its own copy) reads the cache file from disk. Nothing here is
 * needed for correctness: a chunk counted whole too early only costs that read from disk. fd is file k's. */
static void trim_behind(struct mnt *m, size_t k, int fd, int64_t off, int64_t n)
{
	const struct p2p_file_entry *e = &m->files.v[k];
	int started = 0;  /* a read of at most READ_MAX ends at most two chunks */

	pthread_mutex_lock(&m->mu);
	if (!m->answered[k])
		m->answered[k] = xcalloc((size_t)((e->size + TRIM_CHUNK - 1) / TRIM_CHUNK), sizeof(uint32_t));
	for (int64_t c = off / TRIM_CHUNK; c * TRIM_CHUNK < off + n && started < 2; c++) {
		int64_t lo = c * TRIM_CHUNK, hi = lo + TRIM_CHUNK < e->size ? lo + TRIM_CHUNK : e->size;
		int64_t a = off > lo ? off : lo, b = off + n < hi ? off + n : hi;
		uint32_t *got = &m->answered[k][c];

		if (*got == UINT32_MAX)
			continue;
		*got += (uint32_t)(b - a);
		if (*got < hi - lo)
			continue;
		*got = UINT32_MAX;
		started++;
		trim_queue(m, (struct trim_op){ .fd = fd, .off = lo, .len = hi - lo });
		if (m->ntrims == TRIM_LAG) {
			struct trim *t = &m->trims[m->trim_next];
			trim_queue(m, (struct trim_op){.fd = m->fds[t->k], .off = t->off, .len = t->len, .drop = true});
		} else {
			m->ntrims++;
		}
		m->trims[m->trim_next] = (struct trim){ .k = k, .off = lo, .len = hi - lo };
		m->trim_next = (m->trim_next + 1) % TRIM_LAG;
	}
	pthread_mutex_unlock(&m->mu);
}

/* A read answered straight from the cache file: libfuse splices its bytes into /dev/fuse (no copy
 * through this process) once they are verified there. */
static int op_read_buf(const char *path, struct fuse_bufvec **bufp, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct mnt *m = self();
	size_t k = (size_t)fi->fh;
	const struct p2p_file_entry *e = &m->files.v[k];
	struct fuse_bufvec *bv;
	int64_t n;
	int fd, r;

	(void)path;
	bv = xmalloc(sizeof(*bv));
	*bv = FUSE_BUFVEC_INIT(0);
	*bufp = bv;
	if (off >= e->size)
		return 0;
	if (m->closing)
		return -EIO;
	n = e->size - off < (int64_t)size ? e->size - off : (int64_t)size;
	p2p_session_touch(m->ses, m->btih, e->index, off, n); /* read now: not evicted under the reader */
	read_ahead(m, k, off, n);
	if ((r = wait_verified(m, e, off, n)) != 0)
		return r;
	if ((fd = file_fd(m, k)) < 0)
		return -EIO;
	bv->buf[0].size = (size_t)n;
	bv->buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK | FUSE_BUF_FD_RETRY;
	bv->buf[0].fd = fd;
	bv->buf[0].pos = off;
	trim_behind(m, k, fd, off, n);
	return 0;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* move the file's pages into /dev/fuse rather than copy them through this process */
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	if (conn->capable & FUSE_CAP_SPLICE_MOVE)
		conn->want |= FUSE_CAP_SPLICE_MOVE;
	/* Reads of up to 1008 KiB: max_write sets the pages a request may carry (libfuse derives
	 * max_pages from it). Not 1 MiB: libfuse splices a read's bytes through a pipe that must hold
	 * them, their header and three pages, and pipes grow to 1 MiB (fs.pipe-max-size); past that it
	 * copies each read through a buffer it maps and unmaps (measured: a cold read of a held file at
	 * 336 MB/s instead of 1 GB/s). How many such reads the kernel sends ahead is the mount's
	 * readahead (mount_readahead). */
	conn->max_readahead = READ_MAX;
	conn->max_write = READ_MAX;
	cfg->kernel_cache = 1;
	cfg->entry_timeout = cfg->attr_timeout = cfg->negative_timeout = 3600; /* nothing ever changes */
	return fuse_get_context()->private_data;
}

/* The kernel's readahead on the mount: FUSE takes the smaller of what the server asks for and its
 * device's (the default 128 KiB), and only the device's setting can be raised, after the mount (root
 * only: others keep the default). 4 MiB: four reads in flight ahead of a sequential reader or a
 * loader's page faults; measured on a held checkpoint, a loader's cold load took 0.8 s instead of
 * 1.2 s (local disk: 0.5 s). The stat goes through the mount: its loop must run. */
static void mount_readahead(struct mnt *m, const char *dir)
{
	struct stat sb;
	char *p;
	FILE *f;

	if (stat(dir, &sb) < 0)
		return;
	m->dev = sb.st_dev;
	if (getuid() != 0)
		return;
	p = xasprintf("/sys/class/bdi/%u:%u/read_ahead_kb", major(sb.st_dev), minor(sb.st_dev));
	if ((f = fopen(p, "w"))) {
		fprintf(f, "%d\n", READ_AHEAD_KB);
		fclose(f);
	}
	free(p);
}

static const struct fuse_operations ops = {
	.init = op_init,
	.getattr = op_getattr,
	.readdir = op_readdir,
	.open = op_open,
	.read_buf = op_read_buf,
};

static void *serve_loop(void *arg)
{
	struct mnt *m = arg;
	struct fuse_loop_config lc = { .clone_fd = 0, .max_idle_threads = 16 };

	fuse_loop_mt(m->f, &lc);
	m->gone = true;
	return NULL;
}

static void mnt_free(struct mnt *m)
{
	if (m->f)
		fuse_destroy(m->f);
	if (m->trimmer_started) { /* (no read is left to queue more) */
		pthread_mutex_lock(&m->mu);
		m->trim_stop = true;
		pthread_cond_signal(&m->trim_cv);
		pthread_mutex_unlock(&m->mu);
		pthread_join(m->trimmer, NULL);
	}
	pthread_cond_destroy(&m->trim_cv);
	for (size_t i = 0; m->fds && i < m->files.n; i++)
		if (m->fds[i] >= 0)
			close(m->fds[i]);
	free(m->fds);
	for (size_t i = 0; m->answered && i < m->files.n; i++)
		free(m->answered[i]);
	free(m->answered);
	free(m->ahead);
	free(m->direct);
	free(m->sorted);
	free(m->dir);
	p2p_file_list_release(&m->files);
	pthread_mutex_destroy(&m->mu);
	pthread_mutex_destroy(&m->short_mu);
	free(m);
}

/* Unmount dir: directly as root, else through libfuse's setuid helper. Returns 0 or -errno. */
static int unmount_dir(const char *dir, bool lazy)
{
	pid_t pid;
	int st;

	if (getuid() == 0)
		return umount2(dir, lazy ? MNT_DETACH : 0) == 0 ? 0 : -errno;
	pid = fork();
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", lazy ? "-uz" : "-u", dir, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -EBUSY;
	return 0;
}

/* A folder a dead FUSE process left mounted answers ENOTCONN: detach it (and any stacked under it)
 * so it can be mounted again. statfs, because the kernel answers it from no cache (a stat may come
 * from attributes cached while the process lived). */
static void clear_stale(const char *dir)
{
	struct statfs sf;

	for (int i = 0; i < 8 && statfs(dir, &sf) < 0 && errno == ENOTCONN; i++)
		if (unmount_dir(dir, true))
			break;
}

static int list_files(struct mnt *m, char **errmsg)
{
	int r = p2p_session_files(m->ses, m->btih, &m->files);

	if (r) {
		if (errmsg)
			*errmsg = xasprintf("cannot list the torrent's files: %s", err_str(r));
		return r;
	}
	m->sorted = xcalloc(m->files.n ? m->files.n : 1, sizeof(*m->sorted));
	m->fds = xcalloc(m->files.n ? m->files.n : 1, sizeof(*m->fds));
	m->ahead = xcalloc(m->files.n ? m->files.n : 1, sizeof(*m->ahead));
	m->answered = xcalloc(m->files.n ? m->files.n : 1, sizeof(*m->answered));
	m->direct = xcalloc(m->files.n ? m->files.n : 1, 1);
	/* two pieces (at least 4 MiB) at first, up to eight (at least 128 MiB) */
	m->ahead_min = 2 * m->files.piece_size > (4 << 20) ? 2 * m->files.piece_size : 4 << 20;
	m->ahead_max = 8 * m->files.piece_size > (128 << 20) ? 8 * m->files.piece_size : 128 << 20;
	for (size_t i = 0; i < m->files.n; i++) {
		m->sorted[i] = &m->files.v[i];
		m->fds[i] = -1;
	}
	qsort(m->sorted, m->files.n, sizeof(*m->sorted), by_path);
	return 0;
}

int p2p_mount_start(const struct p2p_mount_config *cfg, struct p2p_mount **out, char **errmsg)
{
	struct mnt *m = xcalloc(1, sizeof(*m));
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	char *opts;
	int r;

	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->trim_cv, NULL);
	pthread_mutex_init(&m->short_mu, NULL);
	m->ses = cfg->ses;
	snprintf(m->btih, sizeof(m->btih), "%s", cfg->btih);
	m->dir = xstrdup(cfg->dir);
	m->timeout_s = cfg->read_timeout_s > 0 ? cfg->read_timeout_s : 600;
	m->mounted_at = time(NULL);
	if ((r = list_files(m, errmsg)) != 0) {
		mnt_free(m);
		return r;
	}
	clear_stale(cfg->dir);
	/* read-only; others may read it when we are root (allow_other needs root or fuse.conf) */
	opts = xasprintf("ro,fsname=hubmirror,subtype=hubmirror,default_permissions%s",
			 getuid() == 0 ? ",allow_other" : "");
	fuse_opt_add_arg(&args, "hubmirror");
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, opts);
	m->f = fuse_new(&args, &ops, sizeof(ops), m);
	fuse_opt_free_args(&args);
	free(opts);
	if (!m->f || fuse_mount(m->f, cfg->dir) != 0) {
		if (errmsg)
			*errmsg = xasprintf("cannot mount on %s (is it an empty folder, and is /dev/fuse there?)",
					    cfg->dir);
		mnt_free(m);
		return -EIO;
	}

	if ((r = pthread_create(&m->loop, NULL, serve_loop, m)) != 0) {
		if (errmsg)
			*errmsg = xasprintf("cannot start the mount's thread: %s", strerror(r));
		fuse_unmount(m->f);
		mnt_free(m);
		return -r;
	}
	m->loop_started = true;
	mount_readahead(m, cfg->dir);
	*out = (struct p2p_mount *)m;
	return 0;
}

bool p2p_mount_gone(const struct p2p_mount *pm)
{
	return ((const struct mnt *)pm)->gone;
}

int p2p_mount_detach(struct p2p_mount *pm, char **errmsg)
{
	struct mnt *m = (struct mnt *)pm;
	int r;

	m->detached = true;
	/* Lazily (with the shortcuts mounted inside it): the folder leaves this namespace at once,
	 * whatever holds the mount elsewhere (files
	 * open, a copy of it in another mount namespace: every container started meanwhile has one).
	 * A plain umount would refuse the first and leave the second serving; waiting for either here
	 * would hang the caller on others' processes. */
	if (m->gone || (r = unmount_dir(m->dir, true)) == 0 || m->gone)
		return 0;
	/* not mounted any more (detached from outside meanwhile): nothing left to detach */
	if (r == -EINVAL || r == -ENOENT)
		return 0;
	if (errmsg)
		*errmsg = xasprintf("cannot unmount %s: %s", m->dir, strerror(-r));
	return r;
}

bool p2p_mount_release(struct p2p_mount **pm)
{
	struct mnt *m = (struct mnt *)*pm;

	if (!m)
		return true;
	if (!m->gone || atomic_load(&m->busy))
		return false;
	if (m->loop_started)
		pthread_join(m->loop, NULL); /* it has returned: no wait */
	fuse_unmount(m->f); /* forgets the mount point (the connection is gone: unmounts nothing) */
	mnt_free(m);
	*pm = NULL;
	return true;
}

bool p2p_mount_release_ended(struct p2p_mount **pm, int max_ms)
{
	const struct timespec step = { .tv_nsec = 5 * 1000 * 1000 };

	for (int waited = 0; !p2p_mount_release(pm); waited += 5) {
		if (waited >= max_ms)
			return false;
		nanosleep(&step, NULL);
	}
	return true;
}

bool p2p_mount_connected(const struct p2p_mount *pm)
{
	const struct mnt *m = (const struct mnt *)pm;
	struct pollfd pfd = { .fd = -1 };

	if (m->gone)
		return false;
	/* the kernel ends the connection as the last mount of it goes (the superblock is destroyed
	 * before the unmount returns): /dev/fuse then polls POLLERR, before the loop has noticed */
	pfd.fd = fuse_session_fd(fuse_get_session(m->f));
	return !(poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLERR | POLLNVAL)));
}

void p2p_mount_close(struct p2p_mount *pm)
{
	((struct mnt *)pm)->closing = true;
}

int p2p_mount_shortcut(struct p2p_mount *pm, const char *path, const char *source, unsigned gen, char **errmsg)
{
	struct mnt *m = (struct mnt *)pm;
	const struct p2p_file_entry *e;
	struct stat tb, sb;
	char *target = NULL;
	int r = 0;

	atomic_fetch_add(&m->busy, 1);
	pthread_mutex_lock(&m->short_mu);
	if (gen != atomic_load(&m->short_gen)) {
		r = -ESTALE; /* the bytes were found damaged since the owner said they were good */
		goto out;
	}
	if (getuid() != 0 || !m->dev) {
		r = -EPERM;
		goto out;
	}
	if (m->detached || m->gone || m->closing || !(e = find_file(m, path))) {
		r = -ENOENT;
		goto out;
	}
	if (m->direct[e - m->files.v])
		goto out;
	target = xasprintf("%s/%s", m->dir, path);
	/* the target is this mount's file (not a later mount's on the same folder), the source a file
	 * of the size the torrent gives */
	if (stat(target, &tb) < 0 || tb.st_dev != m->dev || !S_ISREG(tb.st_mode) || lstat(source, &sb) < 0 ||
	    !S_ISREG(sb.st_mode) || sb.st_size != e->size) {
		r = -ESTALE;
		goto out;
	}
	/* read through the mount as the mount shows its files (0444: what the operator mounted for
	 * the containers); the cache's folder (0750) still keeps it from others by its own path */
	if ((sb.st_mode & 0777) != 0444 && chmod(source, 0444) < 0) {
		r = -errno;
		goto out;
	}
	if (mount(source, target, NULL, MS_BIND, NULL) < 0) {
		r = -errno;
		goto out;
	}
	if (mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0) {
		r = -errno;
		umount2(target, MNT_DETACH); /* never left writable */
		goto out;
	}
	m->direct[e - m->files.v] = 1;
	m->ndirect++;
out:
	if (r && r != -EPERM && r != -ENOENT && errmsg)
		*errmsg =
			xasprintf("cannot serve %s from the cache directly: %s", target ? target : path, strerror(-r));
	free(target);
	pthread_mutex_unlock(&m->short_mu);
	atomic_fetch_sub(&m->busy, 1);
	return r;
}

unsigned p2p_mount_shortcut_gen(const struct p2p_mount *pm)
{
	return atomic_load(&((const struct mnt *)pm)->short_gen);
}

void p2p_mount_shortcuts_fence(struct p2p_mount *pm)
{
	atomic_fetch_add(&((struct mnt *)pm)->short_gen, 1);
}

size_t p2p_mount_shortcuts(const struct p2p_mount *pm)
{
	return ((const struct mnt *)pm)->ndirect;
}

void p2p_mount_hold(struct p2p_mount *pm, bool hold)
{
	atomic_fetch_add(&((struct mnt *)pm)->busy, hold ? 1 : -1);
}

void p2p_mount_shortcuts_drop(struct p2p_mount *pm)
{
	struct mnt *m = (struct mnt *)pm;

	atomic_fetch_add(&m->busy, 1);
	pthread_mutex_lock(&m->short_mu);
	for (size_t k = 0; k < m->files.n && !m->detached; k++) {
		char *target;
		if (!m->direct[k])
			continue;
		target = xasprintf("%s/%s", m->dir, m->files.v[k].path);
		if (umount2(target, MNT_DETACH) == 0 || errno == EINVAL || errno == ENOENT) {
			m->direct[k] = 0;
			m->ndirect--;
		}
		free(target);
	}
	pthread_mutex_unlock(&m->short_mu);
	atomic_fetch_sub(&m->busy, 1);
}
