/*
 * query.c - the lookups `serve` answers from: resolve a revision, read a snapshot's files, refs,
 * and repo listings. Read-only; safe while a sync writes (WAL).
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/xmalloc.h"
#include "catalog-int.h"

void catalog_entry_release(struct catalog_entry *e)
{
	if (!e)
		return;
	free(e->path);
	memset(e, 0, sizeof(*e));
}

static void copy_hex(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	size_t n = t ? strlen((const char *)t) : 0;

	if (n >= cap)
		n = 0;
	if (n)
		memcpy(dst, t, n);
	dst[n] = '\0';
}

static const char sql_resolve[] =
	"SELECT s.id, s.commit_id, s.synced_at, s.file_count, s.total_size, coalesce(s.pinned_at, 0) FROM refs f "
	"JOIN snapshots s ON s.id = f.snapshot_id WHERE f.repo_id = ?1 AND f.name = ?2 "
	"UNION ALL SELECT id, commit_id, synced_at, file_count, total_size, coalesce(pinned_at, 0) FROM snapshots "
	"WHERE repo_id = ?1 AND commit_id = ?2 LIMIT 1";

int catalog_resolve(struct catalog *c, const char *hub, const char *type, const char *name, const char *rev,
		    struct catalog_repo *repo, struct catalog_snapshot *snap, bool *repo_found)
{
	sqlite3_stmt *st;
	int r, rc;

	*repo_found = false;
	/* removed repos count too: they are served until gc */
	r = catalog__repo_get_any(c, hub, type, name, repo);
	if (r)
		return r;
	*repo_found = true;
	if (!rev || !strcmp(rev, "HEAD"))
		rev = repo->follow_rev;
	/* A ref first (a branch may be named like a hash); then a synced commit id. */
	st = catalog__cached(c, sql_resolve);
	if (!st)
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo->id);
	sqlite3_bind_text(st, 2, rev, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		snap->id = sqlite3_column_int64(st, 0);
		snap->repo_id = repo->id;
		copy_hex(snap->commit, sizeof(snap->commit), st, 1);
		snap->synced_at = sqlite3_column_int64(st, 2);
		snap->file_count = sqlite3_column_int64(st, 3);
		snap->total_size = sqlite3_column_int64(st, 4);
		snap->pinned_at = sqlite3_column_int64(st, 5);
		r = 0;
	} else {
		r = rc == SQLITE_DONE ? HM_ERR_NOT_FOUND : HM_ERR_SQLITE;
	}
	sqlite3_reset(st);
	return r;
}

int catalog_repo_alias(struct catalog *c, const char *hub, const char *type, const char *name, char **tracked)
{
	sqlite3_stmt *st = NULL;
	int rc;

	/* the tracked one first, should two repos answer to the same upstream name */
	if (catalog__prepare(c, "SELECT name FROM repos WHERE hub = ?1 AND type = ?2 AND upstream_name = ?3 "
			     "ORDER BY removed_at IS NOT NULL, id LIMIT 1", &st))
		return HM_ERR_SQLITE;
	catalog__bind_repo(st, hub, type, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*tracked = xstrdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? HM_ERR_NOT_FOUND : HM_ERR_SQLITE;
}

static const char sql_resolve_lite[] =
	"SELECT r.id, r.follow_rev, r.gated, r.options, s.id, s.commit_id, s.synced_at, s.file_count, s.total_size, "
	"coalesce(r.private, -1), coalesce(s.pinned_at, 0), r.local "
	"FROM repos r LEFT JOIN refs f ON f.repo_id = r.id AND f.name = coalesce(?4, r.follow_rev) "
	"LEFT JOIN snapshots s ON s.id = f.snapshot_id WHERE r.hub = ?1 AND r.type = ?2 AND r.name = ?3";

int catalog_resolve_lite(struct catalog *c, const char *hub, const char *type, const char *name, const char *rev,
			 struct catalog_repo *repo, struct catalog_snapshot *snap, bool *repo_found)
{
	sqlite3_stmt *st = catalog__cached(c, sql_resolve_lite);
	const unsigned char *t;
	bool have_snap = false;
	int rc;

	*repo_found = false;
	if (!st)
		return HM_ERR_SQLITE;
	if (rev && !strcmp(rev, "HEAD"))
		rev = NULL;
	catalog__bind_repo(st, hub, type, name);
	if (rev)
		sqlite3_bind_text(st, 4, rev, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		return rc == SQLITE_DONE ? HM_ERR_NOT_FOUND : HM_ERR_SQLITE;
	}
	memset(repo, 0, sizeof(*repo));
	repo->id = sqlite3_column_int64(st, 0);
	repo->hub = xstrdup(hub);
	repo->type = xstrdup(type);
	repo->name = xstrdup(name);
	repo->follow_rev = xstrdup((const char *)sqlite3_column_text(st, 1));
	repo->gated = (t = sqlite3_column_text(st, 2)) ? xstrdup((const char *)t) : NULL;
	repo->options = (t = sqlite3_column_text(st, 3)) ? xstrdup((const char *)t) : NULL;
	repo->private_ = sqlite3_column_int(st, 9);
	repo->local = sqlite3_column_int(st, 11) != 0;
	repo->downloads = repo->likes = -1;
	*repo_found = true;
	if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
		snap->id = sqlite3_column_int64(st, 4);
		snap->repo_id = repo->id;
		copy_hex(snap->commit, sizeof(snap->commit), st, 5);
		snap->synced_at = sqlite3_column_int64(st, 6);
		snap->file_count = sqlite3_column_int64(st, 7);
		snap->total_size = sqlite3_column_int64(st, 8);
		snap->pinned_at = sqlite3_column_int64(st, 10);
		have_snap = true;
	}
	sqlite3_reset(st);
	if (have_snap)
		return 0;
	if (!rev)
		return HM_ERR_NOT_FOUND;
	/* not a ref: maybe a synced commit id (the general lookup tries both, in that order) */
	{
		struct catalog_repo full = { 0 };
		bool found = false;
		int r = catalog_resolve(c, hub, type, name, rev, &full, snap, &found);
		if (found)
			catalog_repo_release(&full);
		return r;
	}
}

static void read_entry(sqlite3_stmt *st, struct catalog_entry *e)
{
	e->path = xstrdup((const char *)sqlite3_column_text(st, 0));
	e->size = sqlite3_column_int64(st, 1);
	copy_hex(e->git_oid, sizeof(e->git_oid), st, 2);
	copy_hex(e->lfs_oid, sizeof(e->lfs_oid), st, 3);
	copy_hex(e->sha256, sizeof(e->sha256), st, 4);
	copy_hex(e->xet_hash, sizeof(e->xet_hash), st, 5);
}

/* a content's Xet hash, when the mirror knows it (blob_xet, schema v20) */
#define XET_COL "(SELECT xet_hash FROM blob_xet x WHERE x.sha256 = files.sha256)"

static const char sql_file[] =
	"SELECT path, size, git_oid, lfs_oid, sha256, " XET_COL " FROM files WHERE snapshot_id = ?1 AND path = ?2";

static void read_entry_row(sqlite3_stmt *st, void *out)
{
	read_entry(st, out);
}

int catalog_snapshot_file(struct catalog *c, int64_t snapshot_id, const char *path, struct catalog_entry *out)
{
	sqlite3_stmt *st = catalog__cached(c, sql_file);

	if (!st)
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, snapshot_id);
	sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
	return catalog__one_row(st, read_entry_row, out);
}

int catalog_snapshot_walk(struct catalog *c, int64_t snapshot_id, const char *prefix, const char *after,
			  size_t limit, int (*fn)(void *ud, const struct catalog_entry *e), void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;
	size_t plen = prefix ? strlen(prefix) : 0;

	char *upper = NULL;
	/* one lower bound, the higher of the two: given both (path > ?2 AND path >= ?3), sqlite ranges
	 * over the first and filters by the second, scanning every path of the snapshot below prefix */
	bool from_prefix = plen && (!after || strcmp(after, prefix) < 0);

	/* The primary key (snapshot_id, path) serves the cursor and the prefix as one range scan: every
	 * path that starts with prefix sorts in [prefix, prefix with its last byte + 1). */
	if (plen) {
		upper = xstrdup(prefix);
		upper[plen - 1]++;
	}
	if (catalog__prepare(c, !plen
		? "SELECT path, size, git_oid, lfs_oid, sha256, " XET_COL " FROM files WHERE snapshot_id = ?1 "
		  "AND path > ?2 ORDER BY path LIMIT ?4"
		: from_prefix
		? "SELECT path, size, git_oid, lfs_oid, sha256, " XET_COL " FROM files WHERE snapshot_id = ?1 "
		  "AND path >= ?2 AND path < ?3 ORDER BY path LIMIT ?4"
		: "SELECT path, size, git_oid, lfs_oid, sha256, " XET_COL " FROM files WHERE snapshot_id = ?1 "
		  "AND path > ?2 AND path < ?3 ORDER BY path LIMIT ?4", &st)) {
		free(upper);
		return HM_ERR_SQLITE;
	}
	sqlite3_bind_int64(st, 1, snapshot_id);
	sqlite3_bind_text(st, 2, from_prefix ? prefix : after ? after : "", -1, SQLITE_STATIC);
	if (plen)
		sqlite3_bind_text(st, 3, upper, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, limit ? (sqlite3_int64)limit : -1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct catalog_entry e;
		read_entry(st, &e);
		r = fn(ud, &e);
		catalog_entry_release(&e);
		if (r)
			break;
	}
	r = catalog__rows_end(st, rc, r);
	free(upper);
	return r;
}

int catalog_refs_each(struct catalog *c, int64_t repo_id,
		      int (*fn)(void *ud, const char *name, const char *kind, const char *commit), void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (catalog__prepare(c, "SELECT f.name, f.kind, s.commit_id FROM refs f JOIN snapshots s "
			     "ON s.id = f.snapshot_id WHERE f.repo_id = ?1 ORDER BY f.name", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = fn(ud, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
		       (const char *)sqlite3_column_text(st, 2));
		if (r)
			break;
	}
	return catalog__rows_end(st, rc, r);
}

int catalog_repo_name_by_id(struct catalog *c, int64_t id, const char *hub, const char *type, char **name)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_SQLITE, rc;

	if (catalog__prepare(c, "SELECT name FROM repos WHERE id = ?1 AND hub = ?2 AND type = ?3", &st))
		return r;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, hub, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, type, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*name = xstrdup((const char *)sqlite3_column_text(st, 0));
		r = 0;
	} else if (rc == SQLITE_DONE) {
		r = HM_ERR_NOT_FOUND;
	}
	sqlite3_finalize(st);
	return r;
}

int catalog_repo_content(struct catalog *c, int64_t repo_id, const char *sha256, int64_t *size)
{
	sqlite3_stmt *st = NULL;
	int r;

	/* files_by_blob finds the content's files first; few of them, each checked against the refs */
	if (catalog__prepare(c, "SELECT f.size FROM files f JOIN refs r ON r.snapshot_id = f.snapshot_id "
			     "JOIN blobs b ON b.sha256 = f.sha256 "
			     "WHERE f.sha256 = ?2 AND r.repo_id = ?1 AND b.present = 1 LIMIT 1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, sha256, -1, SQLITE_STATIC);
	r = sqlite3_step(st);
	if (r == SQLITE_ROW) {
		if (size)
			*size = sqlite3_column_int64(st, 0);
		r = 0;
	} else {
		r = r == SQLITE_DONE ? HM_ERR_NOT_FOUND : HM_ERR_SQLITE;
	}
	sqlite3_finalize(st);
	return r;
}
