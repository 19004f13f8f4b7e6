/*
 * mount.c - a torrent as a read-only FUSE filesystem (see mount.h).
 *
 * libfuse's multi-threaded loop calls the operations below from its worker threads; the p2p
 * session's range calls are safe from any thread. A read that finds its bytes missing asks the
 * swarm for them first (piece deadlines) and polls until libtorrent has verified them.
 */
#define FUSE_USE_VERSION 35

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "mount.h"
#include "p2p-int.h"
#include "p2p.h"

struct mnt {
	struct p2p_session *ses;
	char btih[41];
	struct p2p_file_list files;
	const struct p2p_file_entry **sorted;   /* files by path (strcmp), for lookups and listings */
	int timeout_s;
	pthread_mutex_t mu;                     /* guards fds */
	int *fds;                               /* per entry of files.v, -1 until first read */
	time_t mounted_at;
	const struct p2p_mount_config *cfg;
	char *save;                             /* <cache>/<btih> */
	pthread_t watcher;
	bool watcher_started;
	atomic_bool stopping;
	bool finished;                          /* every piece had */
	bool indexed;                           /* contents kept by sha256 (index_known) */
};

static struct mnt *self(void)
{
	return fuse_get_context()->private_data;
}

static int by_path(const void *a, const void *b)
{
	return strcmp((*(const struct p2p_file_entry *const *)a)->path, (*(const struct p2p_file_entry *const *)b)->path);
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

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct mnt *m = self();
	size_t k = (size_t)fi->fh;
	const struct p2p_file_entry *e = &m->files.v[k];
	struct timespec nap = { 0, 5 * 1000 * 1000 };
	int64_t n, waited_ms = 0;
	size_t got = 0;
	int have, fd;

	(void)path;
	if (off >= e->size)
		return 0;
	n = e->size - off < (int64_t)size ? e->size - off : (int64_t)size;
	/* wait for verified bytes: ask for them first, then poll (asking again each second) */
	while ((have = p2p_session_have_range(m->ses, m->btih, e->index, off, n)) == 0) {
		if (waited_ms % 1000 == 0 && p2p_session_want_range(m->ses, m->btih, e->index, off, n, 0))
			return -EIO;
		if (waited_ms >= (int64_t)m->timeout_s * 1000)
			return -EIO;
		nanosleep(&nap, NULL);
		waited_ms += 5;
	}
	if (have < 0)
		return -EIO;
	fd = file_fd(m, k);
	if (fd < 0)
		return -EIO;
	while (got < (size_t)n) {
		ssize_t r = pread(fd, buf + got, (size_t)n - got, off + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EIO;
		got += (size_t)r;
	}
	return (int)got;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->kernel_cache = 1;
	cfg->entry_timeout = cfg->attr_timeout = cfg->negative_timeout = 3600; /* nothing ever changes */
	return fuse_get_context()->private_data;
}

/* ---- contents shared across torrents (revisions) ----------------------------------------------- */

static bool sha_ok(const char *s)
{
	size_t i = 0;

	for (; s && s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == 64;
}

/* Before the torrent starts: hard-link every known content the cache already holds into its place. */
static size_t place_known(const struct p2p_mount_config *cfg, const char *save)
{
	size_t placed = 0;

	for (size_t i = 0; cfg->name && i < cfg->nknown; i++) {
		const struct p2p_mount_known *k = &cfg->known[i];
		char *have, *dest, *slash;
		struct stat st;

		if (!sha_ok(k->sha256) || path_check_str(k->path) || path_check_str(cfg->name))
			continue;
		have = xasprintf("%s/by-sha256/%s", cfg->cache_dir, k->sha256);
		dest = xasprintf("%s/%s/%s", save, cfg->name, k->path);
		if (stat(have, &st) == 0 && S_ISREG(st.st_mode) && lstat(dest, &st) < 0) {
			slash = strrchr(dest, '/');
			*slash = '\0';
			if (!path_mkdirs(dest, 0755)) {
				*slash = '/';
				/* Only a content that is exactly the torrent's file stays placed: a piece libtorrent
				 * found wrong there would be fetched and written into this inode, which other
				 * snapshots share (the mirror names the sha256; the torrent's hashes decide). */
				if (link(have, dest) == 0) {
					if (p2p_torrent_verify_file(cfg->torrent, cfg->len, save, k->path) == 1)
						placed++;
					else
						unlink(dest);
				}
			}
		}
		free(have);
		free(dest);
	}
	return placed;
}

/* After the torrent is whole: keep each known content by its sha256, once every byte of the file is
 * verified in it against the torrent and its sha256 is computed here to be the one the mirror named
 * (a mirror that names a wrong one must not get a file kept under another content's name). Returns
 * how many files are not verified in the file yet (their last writes may still be pending when the
 * torrent reports itself finished): the watcher tries those again. */
static size_t index_known(struct mnt *m)
{
	char *dir = xasprintf("%s/by-sha256", m->cfg->cache_dir);
	size_t pending = 0;

	path_mkdirs(dir, 0755);
	for (size_t i = 0; i < m->cfg->nknown; i++) {
		const struct p2p_mount_known *k = &m->cfg->known[i];
		const struct p2p_file_entry *e = find_file(m, k->path);
		char *src = NULL, *dst, got[65];
		struct stat st;
		int have;

		if (!e || !sha_ok(k->sha256) || e->size == 0)
			continue;
		dst = xasprintf("%s/%s", dir, k->sha256);
		if (lstat(dst, &st) == 0) {
			free(dst); /* kept already (this torrent's earlier pass, or another's) */
			continue;
		}
		have = p2p_session_have_range(m->ses, m->btih, e->index, 0, e->size);
		pending += have == 0;
		if (have == 1 && !p2p_session_file_path(m->ses, m->btih, e->index, &src) &&
		    !p2p__file_sha256(src, got) && !strcmp(got, k->sha256) && link(src, dst) < 0) {
			/* another filesystem, or a race with another mount: the next torrent downloads it */
		}
		free(dst);
		free(src);
	}
	free(dir);
	return pending;
}

/* Drains the session's events (it has no loop of its own) and indexes the contents once whole. */
static void on_mount_event(void *ud, const struct p2p_event *ev)
{
	struct mnt *m = ud;

	if (ev->kind == P2P_EVENT_FINISHED)
		m->finished = true;
}

static void *watch(void *arg)
{
	struct mnt *m = arg;
	struct timespec nap = { 0, 200 * 1000 * 1000 };
	int tries = 0;

	while (!m->stopping) {
		struct p2p_torrent_status st;
		p2p_session_drain(m->ses, on_mount_event, m);
		if (!m->finished && !p2p_session_torrent_status(m->ses, m->btih, &st) && st.seeding)
			m->finished = true;
		/* A file whose last writes are pending is tried again, for a minute at most. Hashing a whole
		 * snapshot must not slow the reads it runs beside (the download often ends while a loader
		 * still reads): it runs at SCHED_IDLE, on CPU time nobody else wants. */
		if (m->finished && !m->indexed) {
			struct sched_param idle = { 0 }, normal = { 0 };
			pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
			if (index_known(m) == 0 || ++tries >= 300)
				m->indexed = true;
			pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal);
		}
		nanosleep(&nap, NULL);
	}
	return NULL;
}

static const struct fuse_operations ops = {
	.init = op_init,
	.getattr = op_getattr,
	.readdir = op_readdir,
	.open = op_open,
	.read = op_read,
};

int p2p_mount_run(const struct p2p_mount_config *cfg, char **errmsg)
{
	struct mnt m = { 0 };
	struct p2p_session_config sc = { 0 };
	struct p2p_add add = { 0 };
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config lc = { .clone_fd = 0, .max_idle_threads = 16 };
	struct fuse *f = NULL;
	char *opts = NULL, *save = NULL;
	int r;

	pthread_mutex_init(&m.mu, NULL);
	m.timeout_s = cfg->read_timeout_s > 0 ? cfg->read_timeout_s : 600;
	m.mounted_at = time(NULL);
	sc.listen_interfaces = cfg->listen ? cfg->listen : "0.0.0.0:0";
	sc.lan_tuning = true;
	r = p2p_session_new(&sc, &m.ses, errmsg);
	if (r)
		goto out;
	r = p2p_torrent_info_hash(cfg->torrent, cfg->len, m.btih, errmsg);
	if (r)
		goto out;
	/* the bytes of each torrent in a folder of their own: two revisions share a name, not a folder */
	save = xasprintf("%s/%s", cfg->cache_dir, m.btih);
	if (mkdir(save, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		if (errmsg)
			*errmsg = xasprintf("cannot create %s: %s", save, strerror(errno));
		goto out;
	}
	place_known(cfg, save);
	add.torrent = cfg->torrent;
	add.len = cfg->len;
	add.save_path = save;
	r = p2p_session_add(m.ses, &add, NULL, errmsg);
	if (r)
		goto out;
	r = p2p_session_files(m.ses, m.btih, &m.files);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("cannot list the torrent's files: %s", err_str(r));
		goto out;
	}
	m.sorted = xcalloc(m.files.n ? m.files.n : 1, sizeof(*m.sorted));
	m.fds = xcalloc(m.files.n ? m.files.n : 1, sizeof(*m.fds));
	for (size_t i = 0; i < m.files.n; i++) {
		m.sorted[i] = &m.files.v[i];
		m.fds[i] = -1;
	}
	qsort(m.sorted, m.files.n, sizeof(*m.sorted), by_path);

	/* read-only; others may read it when we are root (allow_other needs root or fuse.conf) */
	opts = xasprintf("ro,fsname=hubmirror,subtype=hubmirror,default_permissions%s", getuid() == 0 ? ",allow_other" : "");
	fuse_opt_add_arg(&args, "hubmirror");
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, opts);
	f = fuse_new(&args, &ops, sizeof(ops), &m);
	if (!f || fuse_mount(f, cfg->dir) != 0) {
		r = -EIO;
		if (errmsg)
			*errmsg = xasprintf("cannot mount on %s (is it an empty folder, and is /dev/fuse there?)", cfg->dir);
		if (f) {
			fuse_destroy(f);
			f = NULL;
		}
		goto out;
	}
	fuse_set_signal_handlers(fuse_get_session(f));
	m.cfg = cfg;
	if (pthread_create(&m.watcher, NULL, watch, &m) == 0)
		m.watcher_started = true;
	if (cfg->on_mounted && (r = cfg->on_mounted(cfg->ud, m.btih, &m.files)) != 0) {
		fuse_remove_signal_handlers(fuse_get_session(f));
		fuse_unmount(f);
		goto out;
	}
	r = fuse_loop_mt(f, &lc) == 0 ? 0 : -EIO;
	fuse_remove_signal_handlers(fuse_get_session(f));
	fuse_unmount(f);
out:
	if (m.watcher_started) {
		m.stopping = true;
		pthread_join(m.watcher, NULL);
	}
	if (f)
		fuse_destroy(f);
	fuse_opt_free_args(&args);
	for (size_t i = 0; m.fds && i < m.files.n; i++)
		if (m.fds[i] >= 0)
			close(m.fds[i]);
	free(m.fds);
	free(m.sorted);
	p2p_file_list_release(&m.files);
	p2p_session_free(&m.ses);
	pthread_mutex_destroy(&m.mu);
	free(opts);
	free(save);
	return r;
}
