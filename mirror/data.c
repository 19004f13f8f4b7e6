/*
 * data.c - opening a data directory: one place that knows its layout.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/err.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "store/store.h"

const char *mirror_data_default_dir(void)
{
	const char *e = getenv("HUBMIRROR_DATA");
	return e && *e ? e : "/var/lib/hubmirror";
}

/* The names of the layout (data.h) that a new mirror's command may make: taken back by
 * mirror_data_unmake when the command fails, those that were not there before it. */
static const char *const layout[] = { "catalog.db", "catalog.db-wal", "catalog.db-shm", "catalog.db-journal",
				      "store", "torrents", "p2p", "sync.lock", "sync.tokens", "sync.progress",
				      "serve.lock", "serve.admin" };
#define NLAYOUT (sizeof(layout) / sizeof(layout[0]))

/* What of the layout is there already (a bit per name, from bit 8 up), and whether the catalog and
 * the folder are (MIRROR_DATA_MADE_*, set when absent): into d->made before data_open makes them. */
static void made_before(struct mirror_data *d, const char *dir)
{
	struct stat st;

	d->made = 0;
	if (stat(dir, &st) < 0)
		d->made |= MIRROR_DATA_MADE_DIR;
	for (size_t i = 0; i < NLAYOUT; i++) {
		char *p = xasprintf("%s/%s", dir, layout[i]);
		if (lstat(p, &st) == 0)
			d->made |= 1u << (8 + i);
		else if (i == 0)
			d->made |= MIRROR_DATA_MADE_CATALOG;
		free(p);
	}
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -errno : 0;
}

int mirror_data_unmake(struct mirror_data **d)
{
	char *dir;
	unsigned made;
	int r = 0;

	if (!d || !*d)
		return 0;
	made = (*d)->made;
	dir = xstrdup((*d)->dir);
	mirror_data_free(d); /* closed first: the catalog's files, the locks */
	if (made & MIRROR_DATA_MADE_CATALOG) {
		for (size_t i = 0; i < NLAYOUT; i++) {
			char *p;
			int e;
			if (made & (1u << (8 + i)))
				continue; /* there before: not ours */
			p = xasprintf("%s/%s", dir, layout[i]);
			e = nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
			if (e < 0 && errno != ENOENT && !r)
				r = -errno;
			else if (e > 0 && !r)
				r = -EIO;
			free(p);
		}
		if ((made & MIRROR_DATA_MADE_DIR) && rmdir(dir) < 0 && !r)
			r = -errno;
	}
	free(dir);
	return r;
}

static int data_open(const char *dir, bool create, struct mirror_data **out, char **errmsg)
{
	struct mirror_data *d = xcalloc(1, sizeof(*d));
	char *p = NULL, *cerr = NULL, *abs;
	struct stat st;
	int r;

	d->dir = xstrdup(dir);
	d->lock_fd = -1;
	d->serve_fd = -1;
	p = xasprintf("%s/catalog.db", dir);
	if (create)
		made_before(d, dir);
	if (stat(p, &st) < 0 ? errno != ENOENT || !create : access(p, create ? R_OK | W_OK : R_OK) < 0) {
		r = -errno;
		if (errmsg && r == -ENOENT)
			*errmsg = xasprintf(
				"no mirror in '%s' (%s): check --data or HUBMIRROR_DATA; "
				"'hubmirror add' makes one with the repos it tracks, 'hubmirror init' an empty one",
				dir, stat(dir, &st) < 0 ? "no such directory" : "it holds no catalog.db");
		else if (errmsg && (r == -EACCES || r == -EPERM)) {
			char *who = path_owner_name(p);
			*errmsg = xasprintf("cannot open '%s': %s: the mirror belongs to %s (run hubmirror as that "
					    "user, or with sudo)", p, err_str(r), who);
			free(who);
		} else if (errmsg)
			*errmsg = xasprintf("cannot open '%s': %s", p, err_str(r));
		goto fail;
	}
	r = path_mkdirs_private(dir, 0750);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("cannot create data directory '%s': %s", dir, err_str(r));
		goto fail;
	}
	/* Absolute from here on (`--data d` works from any folder): the torrents of a local repo's
	 * commits name their files by absolute paths, and no path the mirror keeps or hands a job should
	 * depend on the folder the command was started in. */
	abs = realpath(dir, NULL);
	if (abs) {
		free(d->dir);
		d->dir = abs;
		dir = abs;
		free(p);
		p = xasprintf("%s/catalog.db", dir);
	}
	r = catalog_open(p, &d->catalog, &cerr);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("'%s': %s", p, cerr ? cerr : err_str(r));
		goto fail;
	}
	/* made 0644 by an older version: the umask (main.c) keeps new ones 0640 */
	for (const char *const *sfx = (const char *const[]){ "", "-wal", "-shm", NULL }; *sfx; sfx++) {
		char *f = xasprintf("%s%s", p, *sfx);
		if (stat(f, &st) == 0 && (st.st_mode & 0137))
			chmod(f, st.st_mode & 0640);
		free(f);
	}
	free(p);
	p = xasprintf("%s/store", dir);
	r = store_open(p, &d->store);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("cannot open store '%s': %s", p, err_str(r));
		goto fail;
	}
	free(p);
	*out = d;
	return 0;
fail:
	free(p);
	free(cerr);
	mirror_data_free(&d);
	return r;
}

int mirror_data_open(const char *dir, struct mirror_data **out, char **errmsg)
{
	return data_open(dir, false, out, errmsg);
}

int mirror_data_create(const char *dir, struct mirror_data **out, char **errmsg)
{
	return data_open(dir, true, out, errmsg);
}

void mirror_data_free(struct mirror_data **d)
{
	if (!d || !*d)
		return;
	mirror_data_unlock(*d);
	if ((*d)->serve_fd >= 0)
		close((*d)->serve_fd);
	catalog_free(&(*d)->catalog);
	store_free(&(*d)->store);
	free((*d)->dir);
	free(*d);
	*d = NULL;
}

char *mirror_data_path(const struct mirror_data *d, enum mirror_data_place place)
{
	return mirror_data_path_in(d->dir, place);
}

char *mirror_data_path_in(const char *dir, enum mirror_data_place place)
{
	static const char *const rel[] = {
		[MIRROR_DATA_TORRENTS] = "torrents",
		[MIRROR_DATA_TORRENT_WORK] = "torrents/.work",
		[MIRROR_DATA_P2P] = "p2p",
		[MIRROR_DATA_P2P_SECRET] = "p2p/secret",
		[MIRROR_DATA_SEED] = "p2p/seed",
		[MIRROR_DATA_SPILL] = "store/tmp",
		[MIRROR_DATA_LOCK] = "sync.lock",
		[MIRROR_DATA_SYNC_TOKENS] = "sync.tokens",
		[MIRROR_DATA_SYNC_PROGRESS] = "sync.progress",
		[MIRROR_DATA_CATALOG] = "catalog.db",
		[MIRROR_DATA_SERVE_LOCK] = "serve.lock",
		[MIRROR_DATA_SERVE_ADMIN] = "serve.admin",
		[MIRROR_DATA_XET_UPLOADS] = "xet-uploads",
	};

	return xasprintf("%s/%s", dir, rel[place]);
}

char *mirror_data_torrent_path(const struct mirror_data *d, const char *btih)
{
	return xasprintf("%s/torrents/%s.torrent", d->dir, btih);
}

int mirror_data_lock(struct mirror_data *d, bool wait, long *holder_pid)
{
	char *p = mirror_data_path(d, MIRROR_DATA_LOCK), pid[32];
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644), n;

	free(p);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0) {
		int e = errno;
		if (holder_pid) {
			ssize_t k = pread(fd, pid, sizeof(pid) - 1, 0);
			pid[k > 0 ? k : 0] = '\0';
			*holder_pid = strtol(pid, NULL, 10);
		}
		close(fd);
		return e == EWOULDBLOCK ? HM_ERR_LOCKED : -e;
	}
	/* The pid is only for the "who holds it" message; the flock is the lock. */
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) < 0) {
		/* the lock is held all the same */
	}
	d->lock_fd = fd;
	return 0;
}

static int serve_lock_op(struct mirror_data *d, int op, int *fd_out)
{
	char *p = mirror_data_path(d, MIRROR_DATA_SERVE_LOCK);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	free(p);
	if (fd < 0)
		return -errno;
	if (flock(fd, op | LOCK_NB) < 0) {
		int e = errno;
		close(fd);
		return e == EWOULDBLOCK ? 1 : -e;
	}
	*fd_out = fd;
	return 0;
}

int mirror_data_serve_lock(struct mirror_data *d)
{
	int fd = -1, r = serve_lock_op(d, LOCK_SH, &fd);

	if (r == 1)
		return -EWOULDBLOCK; /* a restore holds it for a moment */
	if (!r)
		d->serve_fd = fd;
	return r;
}

bool mirror_data_serve_running(const char *dir)
{
	char *p = mirror_data_path_in(dir, MIRROR_DATA_SERVE_LOCK);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	bool held = false;

	free(p);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		held = errno == EWOULDBLOCK;
	close(fd); /* releases the probe's lock, if it got it */
	return held;
}

int mirror_data_serve_exclude(struct mirror_data *d)
{
	int fd = -1, r = serve_lock_op(d, LOCK_EX, &fd);

	if (!r)
		d->serve_fd = fd;
	return r;
}

void mirror_data_unlock(struct mirror_data *d)
{
	if (d && d->lock_fd >= 0) {
		close(d->lock_fd);
		d->lock_fd = -1;
	}
}

int64_t mirror_data_room(const struct mirror_data *d, enum mirror_data_place place, int64_t *block)
{
	char *path = mirror_data_path(d, place);
	struct statvfs fs;
	int64_t size, free_, reserve;
	int r = statvfs(path, &fs) ? -errno : 0;

	free(path);
	if (r)
		return r;
	size = (int64_t)fs.f_blocks * (int64_t)fs.f_frsize;
	free_ = (int64_t)fs.f_bavail * (int64_t)fs.f_frsize;
	reserve = size / 20 < ((int64_t)1 << 30) ? size / 20 : (int64_t)1 << 30;
	if (block)
		*block = fs.f_frsize > 0 ? (int64_t)fs.f_frsize : 4096;
	return free_ > reserve ? free_ - reserve : 0;
}
