/*
 * gc.c - catalog side of `hubmirror gc` and `hubmirror verify`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog-int.h"

static int exec1(struct catalog *c, const char *sql, int64_t arg, int64_t *changes)
{
	sqlite3_stmt *st = NULL;
	int r;

	if (catalog__prepare(c, sql, &st))
		return HM_ERR_SQLITE;
	if (sqlite3_bind_parameter_count(st) >= 1)
		sqlite3_bind_int64(st, 1, arg);
	r = catalog__run(st);
	if (!r && changes)
		*changes = sqlite3_changes(c->db);
	return r;
}

int catalog_gc(struct catalog *c, int keep, bool dry_run, struct catalog_gc_stats *stats,
	       char (**dead)[65], size_t *ndead)
{
	sqlite3_stmt *st = NULL;
	char (*list)[65] = NULL;
	size_t n = 0, cap = 0;
	int r = HM_ERR_SQLITE;

	memset(stats, 0, sizeof(*stats));
	if (keep < 1)
		keep = 1;
	if (catalog_begin(c))
		return r;
	if (exec1(c, "DELETE FROM refs WHERE repo_id IN (SELECT id FROM repos WHERE removed_at IS NOT NULL)", 0, NULL))
		goto out;
	/* Rank each repo's snapshots newest first; keep ref targets and the first `keep`. */
	if (exec1(c,
		  "DELETE FROM snapshots WHERE id IN ("
		  " SELECT s.id FROM snapshots s JOIN repos r ON r.id = s.repo_id"
		  " WHERE r.removed_at IS NOT NULL OR ("
		  "  s.id NOT IN (SELECT snapshot_id FROM refs) AND"
		  "  (SELECT count(*) FROM snapshots s2 WHERE s2.repo_id = s.repo_id AND"
		  "   (s2.synced_at > s.synced_at OR (s2.synced_at = s.synced_at AND s2.id > s.id))) >= ?1))",
		  keep, &stats->snapshots_dropped))
		goto out;
	if (catalog__prepare(c, "SELECT sha256, size FROM blobs WHERE sha256 NOT IN (SELECT sha256 FROM files)", &st))
		goto out;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			list = xreallocarray(list, cap, sizeof(*list));
		}
		snprintf(list[n++], 65, "%s", (const char *)sqlite3_column_text(st, 0));
		stats->bytes_dropped += sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	st = NULL;
	if (exec1(c, "DELETE FROM blobs WHERE sha256 NOT IN (SELECT sha256 FROM files)", 0, &stats->blobs_dropped))
		goto out;
	r = 0;
out:
	sqlite3_finalize(st);
	if (r || dry_run || catalog_commit(c)) {
		catalog_rollback(c);
		if (!r && !dry_run)
			r = HM_ERR_SQLITE;
	}
	if (r) {
		free(list);
		return r;
	}
	*dead = list;
	*ndead = n;
	return 0;
}

int catalog_blob_known(struct catalog *c, const char *sha256)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c, "SELECT 1 FROM blobs WHERE sha256 = ?1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	return catalog__has_row(st);
}

int catalog_blob_each(struct catalog *c, int (*fn)(void *ud, const char *sha256, int64_t size), void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (catalog__prepare(c, "SELECT sha256, size FROM blobs ORDER BY sha256", &st))
		return HM_ERR_SQLITE;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = fn(ud, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1));
		if (r)
			break;
	}
	return catalog__rows_end(st, rc, r);
}

int catalog_blob_damaged(struct catalog *c, const char *sha256)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_SQLITE;

	if (catalog_begin(c))
		return r;
	if (catalog__prepare(c,
			     "UPDATE repos SET sync_status = 'damaged', sync_error = 'content failed verification; "
			     "the next sync fetches it again' WHERE id IN (SELECT s.repo_id FROM snapshots s "
			     "JOIN files f ON f.snapshot_id = s.id WHERE f.sha256 = ?1) AND removed_at IS NULL", &st))
		goto out;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		goto out;
	r = sqlite3_changes(c->db);
	sqlite3_finalize(st);
	st = NULL;
	/* A NULL selection never equals a repo's current one: the next sync lists and plans again, and
	 * planning fetches whatever the store lacks. */
	if (catalog__prepare(c, "UPDATE snapshots SET selection = NULL WHERE id IN "
			     "(SELECT snapshot_id FROM files WHERE sha256 = ?1)", &st)) {
		r = HM_ERR_SQLITE;
		goto out;
	}
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = HM_ERR_SQLITE;
out:
	sqlite3_finalize(st);
	if (r < 0 || catalog_commit(c)) {
		catalog_rollback(c);
		return HM_ERR_SQLITE;
	}
	return r;
}
