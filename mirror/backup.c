/*
 * backup.c - the catalog out and back (see backup.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backup.h"
#include "base/err.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "store/store.h"

int mirror_backup(struct mirror_data *d, const char *out, int64_t *bytes, char **errmsg)
{
	char *tmp = xasprintf("%s.tmp-%ld", out, (long)getpid());
	struct stat st;
	int r;

	unlink(tmp);
	r = catalog_backup(d->catalog, tmp, errmsg);
	if (!r && (r = path_fsync(tmp)) != 0 && errmsg)
		*errmsg = xasprintf("cannot write '%s': %s", tmp, strerror(-r));
	if (!r && rename(tmp, out) < 0) {
		r = -errno;
		if (errmsg)
			*errmsg = xasprintf("cannot rename to '%s': %s", out, strerror(errno));
	}
	if (r)
		unlink(tmp);
	else
		path_fsync_parent(out);
	if (!r && bytes)
		*bytes = stat(out, &st) == 0 ? (int64_t)st.st_size : 0;
	free(tmp);
	return r;
}

/* Copy src to dst (created anew, 0644 less the umask; never through a link) and fsync it. */
static int copy_file(const char *src, const char *dst)
{
	char buf[1 << 16];
	int in = open(src, O_RDONLY | O_CLOEXEC), out, r = 0;
	ssize_t n;

	if (in < 0)
		return -errno;
	unlink(dst);
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0) {
		r = -errno;
		close(in);
		return r;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		for (ssize_t off = 0; off < n; ) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				r = -errno;
				break;
			}
			off += w;
		}
		if (r)
			break;
	}
	if (!r && fsync(out) < 0)
		r = -errno;
	close(out);
	close(in);
	return r;
}

struct blob_scan {
	struct mirror_data *d;
	struct mirror_restore_report *rep;
	int err;
};

static int scan_blob(void *ud, const char *sha256, int64_t size)
{
	struct blob_scan *b = ud;

	b->rep->blobs++;
	if (store_has(b->d->store, sha256, size))
		return 0;
	b->rep->blobs_missing++;
	return 0;
}

static int mark_missing(void *ud, const char *sha256, int64_t size)
{
	struct blob_scan *b = ud;
	int n;

	if (store_has(b->d->store, sha256, size))
		return 0;
	n = catalog_blob_damaged(b->d->catalog, sha256);
	if (n < 0)
		return b->err = n;
	return 0;
}

static bool torrent_file_there(void *ud, const char *btih)
{
	char *p = mirror_data_torrent_path(ud, btih);
	bool there = access(p, R_OK) == 0;

	free(p);
	return there;
}

int mirror_restore(const char *dir, const char *file, struct mirror_restore_report *rep, char **errmsg)
{
	struct mirror_data hold = { .dir = (char *)dir, .lock_fd = -1, .serve_fd = -1 }, *d = NULL;
	struct blob_scan scan = { NULL, rep, 0 };
	char *cat = NULL, *tmp = NULL, *wal = NULL, *shm = NULL;
	long pid = 0;
	int r;

	memset(rep, 0, sizeof(*rep));
	r = catalog_file_check(file, &rep->version, &rep->repos, errmsg);
	if (r)
		return r;
	r = path_mkdirs(dir, 0755);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("cannot create data directory '%s': %s", dir, err_str(r));
		return r;
	}
	r = mirror_data_lock(&hold, false, &pid);
	if (r) {
		if (errmsg)
			*errmsg = r == HM_ERR_LOCKED
					  ? xasprintf("a sync (pid %ld) is using '%s': let it finish first", pid, dir)
					  : xasprintf("cannot lock '%s': %s", dir, err_str(r));
		return r;
	}
	r = mirror_data_serve_exclude(&hold);
	if (r) {
		if (errmsg)
			*errmsg = r == 1 ? xasprintf("a serve is running on '%s': stop it first", dir)
					 : xasprintf("cannot lock '%s': %s", dir, err_str(r));
		r = r == 1 ? HM_ERR_LOCKED : r;
		goto out;
	}
	cat = mirror_data_path(&hold, MIRROR_DATA_CATALOG);
	tmp = xasprintf("%s.restore-%ld", cat, (long)getpid());
	wal = xasprintf("%s-wal", cat);
	shm = xasprintf("%s-shm", cat);
	r = copy_file(file, tmp);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("cannot copy '%s' into '%s': %s", file, dir, err_str(r));
		unlink(tmp);
		goto out;
	}
	/* The old WAL goes first: left beside the new file, SQLite would replay it into it. */
	if ((unlink(wal) < 0 && errno != ENOENT) || (unlink(shm) < 0 && errno != ENOENT) || rename(tmp, cat) < 0) {
		r = -errno;
		if (errmsg)
			*errmsg = xasprintf("cannot put the catalog in place in '%s': %s", dir, strerror(errno));
		unlink(tmp);
		goto out;
	}
	path_fsync(dir);
	r = mirror_data_open(dir, &d, errmsg); /* migrates an older backup */
	if (r)
		goto out;
	scan.d = d;
	/* What the store lacks: its repos are marked damaged, and the next sync fetches it again. */
	r = catalog_blob_each(d->catalog, scan_blob, &scan);
	if (!r && rep->blobs_missing)
		r = catalog_blob_each(d->catalog, mark_missing, &scan);
	if (!r)
		r = scan.err;
	if (!r)
		r = catalog_torrents_drop_missing(d->catalog, torrent_file_there, d, &rep->torrents_dropped);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("catalog: %s", catalog_errmsg(d->catalog));
		goto out;
	}
	{
		struct catalog_repo *list = NULL;
		size_t n = 0;
		if (!catalog_repo_list(d->catalog, &list, &n))
			for (size_t i = 0; i < n; i++)
				rep->repos_damaged += list[i].sync_status && !strcmp(list[i].sync_status, "damaged");
		catalog_repo_list_free(list, n);
	}
out:
	mirror_data_free(&d);
	if (hold.lock_fd >= 0)
		close(hold.lock_fd);
	if (hold.serve_fd >= 0)
		close(hold.serve_fd);
	free(cat);
	free(tmp);
	free(wal);
	free(shm);
	return r;
}
