/*
 * holds.c - contents promised to a writer (schema v19; catalog.h): an upload awaiting the commit that
 * names it, a commit's or a push's contents while it is made. gc and the store quota take no content a
 * live hold names. A hold is written (and committed) before the writer publishes or relies on its
 * content, so any gc that could see the content sees the hold (mirror/maint.c says the other half).
 */
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "catalog-int.h"

int catalog_hold(struct catalog *c, const char *owner, int64_t until, const char *const *sha256, size_t n)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_SQLITE;

	if (!n)
		return 0;
	if (catalog_begin(c))
		return catalog__failed(c);
	/* (a hold renewed keeps the later of its two ends) */
	if (catalog__prepare(c, "INSERT INTO holds (sha256, owner, until) VALUES (?1, ?2, ?3) "
			     "ON CONFLICT (sha256, owner) DO UPDATE SET until = max(until, excluded.until)", &st))
		goto out;
	sqlite3_bind_text(st, 2, owner, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, until);
	for (size_t i = 0; i < n; i++) {
		sqlite3_bind_text(st, 1, sha256[i], -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE) {
			r = catalog__failed(c);
			goto out;
		}
		sqlite3_reset(st);
	}
	r = 0;
out:
	sqlite3_finalize(st);
	if (!r && catalog_commit(c))
		r = catalog__failed(c);
	if (r)
		catalog_rollback(c);
	return r;
}

int catalog_hold_drop(struct catalog *c, const char *owner)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c, "DELETE FROM holds WHERE owner = ?1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, owner, -1, SQLITE_STATIC);
	return catalog__run(st);
}

int catalog_held(struct catalog *c, const char *sha256, int64_t now)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c, "SELECT 1 FROM holds WHERE sha256 = ?1 AND until > ?2", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now);
	return catalog__has_row(st);
}

int catalog_holds_sweep(struct catalog *c, int64_t now, bool dry_run, struct catalog_holds_stats *out)
{
	sqlite3_stmt *st = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (catalog__prepare(c, dry_run ? "SELECT count(*) FROM holds WHERE until <= ?1"
					: "DELETE FROM holds WHERE until <= ?1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, now);
	if (dry_run) {
		if (sqlite3_step(st) == SQLITE_ROW)
			out->expired = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	} else {
		if (catalog__run(st))
			return HM_ERR_SQLITE;
		out->expired = sqlite3_changes(c->db);
	}
	/* what stays, by kind: the contents no snapshot names yet (those a snapshot names are kept anyway) */
	if (catalog__prepare(c, "SELECT h.owner LIKE 'upload:%', count(DISTINCT h.sha256), max(h.until) FROM holds h "
			     "WHERE h.until > ?1 AND NOT EXISTS (SELECT 1 FROM files f WHERE f.sha256 = h.sha256) "
			     "GROUP BY h.owner LIKE 'upload:%'", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, now);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_int(st, 0)) {
			out->uploads += sqlite3_column_int64(st, 1);
			out->uploads_until = sqlite3_column_int64(st, 2);
		} else {
			out->writes += sqlite3_column_int64(st, 1);
		}
	}
	return catalog__rows_end(st, rc, 0);
}
