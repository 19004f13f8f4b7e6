/*
 * torrents.c - the swarm's torrents of snapshots (schema v6): which snapshot has which info-hashes,
 * so the tracker answers only for torrents of this mirror and the web seed maps a hash to files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog-int.h"

#define TORRENT_COLUMNS "snapshot_id, btih, btmh, name, piece_size, created_at"

static const char sql_by_snapshot[] = "SELECT " TORRENT_COLUMNS " FROM torrents WHERE snapshot_id = ?1";
/* btih, the truncated v2 hash (a prefix of btmh: a range on its index), or the whole v2 hash */
static const char sql_by_hash[] = "SELECT " TORRENT_COLUMNS " FROM torrents WHERE snapshot_id = coalesce("
				  "(SELECT snapshot_id FROM torrents WHERE btih = ?1 LIMIT 1),"
				  "(SELECT snapshot_id FROM torrents WHERE btmh >= ?1 AND btmh < ?1 || 'g' LIMIT 1))";

static void read_torrent(sqlite3_stmt *st, struct catalog_torrent *out)
{
	memset(out, 0, sizeof(*out));
	out->snapshot_id = sqlite3_column_int64(st, 0);
	snprintf(out->btih, sizeof(out->btih), "%s", (const char *)sqlite3_column_text(st, 1));
	snprintf(out->btmh, sizeof(out->btmh), "%s", (const char *)sqlite3_column_text(st, 2));
	snprintf(out->name, sizeof(out->name), "%s", (const char *)sqlite3_column_text(st, 3));
	out->piece_size = sqlite3_column_int64(st, 4);
	out->created_at = sqlite3_column_int64(st, 5);
}

static void read_torrent_row(sqlite3_stmt *st, void *out)
{
	read_torrent(st, out);
}

static int get_one(sqlite3_stmt *st, struct catalog_torrent *out)
{
	return catalog__one_row(st, read_torrent_row, out);
}

int catalog_torrent_put(struct catalog *c, const struct catalog_torrent *t)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c,
			     "INSERT OR REPLACE INTO torrents (" TORRENT_COLUMNS ") VALUES (?1,?2,?3,?4,?5,?6)", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, t->snapshot_id);
	sqlite3_bind_text(st, 2, t->btih, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, t->btmh, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, t->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, t->piece_size);
	sqlite3_bind_int64(st, 6, t->created_at);
	return catalog__run(st);
}

int catalog_torrent_get(struct catalog *c, int64_t snapshot_id, struct catalog_torrent *out)
{
	sqlite3_stmt *st = catalog__cached(c, sql_by_snapshot);

	if (!st)
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, snapshot_id);
	return get_one(st, out);
}

int catalog_torrent_find(struct catalog *c, const char *hash_hex, struct catalog_torrent *out)
{
	sqlite3_stmt *st;
	size_t n = strlen(hash_hex);

	if (n != 40 && n != 64)
		return HM_ERR_NOT_FOUND;
	st = catalog__cached(c, sql_by_hash);
	if (!st)
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, hash_hex, -1, SQLITE_STATIC);
	return get_one(st, out);
}

int catalog_torrent_missing_each(struct catalog *c, int (*fn)(void *ud, int64_t snapshot_id, const char *name),
				 void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (catalog__prepare(c, "SELECT DISTINCT s.id, r.name FROM refs f JOIN snapshots s ON s.id = f.snapshot_id "
			     "JOIN repos r ON r.id = s.repo_id LEFT JOIN torrents t ON t.snapshot_id = s.id "
			     "WHERE t.snapshot_id IS NULL AND NOT EXISTS (SELECT 1 FROM files x JOIN blobs b ON "
			     "b.sha256 = x.sha256 WHERE x.snapshot_id = s.id AND NOT b.present) ORDER BY s.id", &st))
		return HM_ERR_SQLITE;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = fn(ud, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1));
		if (r)
			break;
	}
	return catalog__rows_end(st, rc, r);
}

int catalog_torrent_known(struct catalog *c, const char *btih)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c, "SELECT 1 FROM torrents WHERE btih = ?1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, btih, -1, SQLITE_STATIC);
	return catalog__has_row(st);
}

/* fn for each torrent sql (a SELECT of TORRENT_COLUMNS) gives, until it returns non-zero. */
static int torrents_of(struct catalog *c, const char *sql, int (*fn)(void *ud, const struct catalog_torrent *t),
		       void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (catalog__prepare(c, sql, &st))
		return HM_ERR_SQLITE;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct catalog_torrent t;
		read_torrent(st, &t);
		r = fn(ud, &t);
		if (r)
			break;
	}
	return catalog__rows_end(st, rc, r);
}

int catalog_torrents_each(struct catalog *c, int (*fn)(void *ud, const struct catalog_torrent *t), void *ud)
{
	return torrents_of(c, "SELECT " TORRENT_COLUMNS " FROM torrents ORDER BY snapshot_id", fn, ud);
}

int catalog_torrents_heads_each(struct catalog *c, int (*fn)(void *ud, const struct catalog_torrent *t), void *ud)
{
	return torrents_of(c, "SELECT " TORRENT_COLUMNS " FROM torrents WHERE snapshot_id IN "
			   "(SELECT snapshot_id FROM refs) ORDER BY snapshot_id", fn, ud);
}

int catalog_torrents_drop_missing(struct catalog *c, bool (*have)(void *ud, const char *btih), void *ud,
				  int64_t *dropped)
{
	sqlite3_stmt *st = NULL;
	int64_t *gone = NULL;
	size_t n = 0, cap = 0;
	int r = HM_ERR_SQLITE, rc;

	*dropped = 0;
	if (catalog__prepare(c, "SELECT snapshot_id, btih FROM torrents", &st))
		return HM_ERR_SQLITE;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *btih = (const char *)sqlite3_column_text(st, 1);
		if (btih && have(ud, btih))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			gone = xreallocarray(gone, cap, sizeof(*gone));
		}
		gone[n++] = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	st = NULL;
	if (rc != SQLITE_DONE)
		goto out;
	/* after the walk: rows are not deleted under a running SELECT */
	for (size_t i = 0; i < n; i++) {
		if (catalog__prepare(c, "DELETE FROM torrents WHERE snapshot_id = ?1", &st))
			goto out;
		sqlite3_bind_int64(st, 1, gone[i]);
		if (catalog__run(st))
			goto out;
		st = NULL;
		(*dropped)++;
	}
	r = 0;
out:
	free(gone);
	return r;
}
