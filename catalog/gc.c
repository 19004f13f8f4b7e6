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
	/* Rank each repo's snapshots newest first; keep ref targets and the first `keep`. A local repo's
	 * commits are its history, the parents its newer commits name: all kept. */
	if (exec1(c,
		  "DELETE FROM snapshots WHERE id IN ("
		  " SELECT s.id FROM snapshots s JOIN repos r ON r.id = s.repo_id"
		  " WHERE r.removed_at IS NOT NULL OR (r.local = 0 AND"
		  "  s.id NOT IN (SELECT snapshot_id FROM refs) AND s.pinned_at IS NULL AND"
		  "  (SELECT count(*) FROM snapshots s2 WHERE s2.repo_id = s.repo_id AND"
		  "   (s2.synced_at > s.synced_at OR (s2.synced_at = s.synced_at AND s2.id > s.id))) >= ?1))",
		  keep, &stats->snapshots_dropped))
		goto out;
	/* a content no snapshot names goes, unless a writer holds it (an upload awaiting its commit, a
	 * commit or push in flight: catalog_hold) */
	if (catalog__prepare(c,
			     "SELECT sha256, size * present FROM blobs WHERE sha256 NOT IN (SELECT sha256 FROM files) "
			     "AND sha256 NOT IN (SELECT sha256 FROM holds WHERE until > unixepoch())",
			     &st))
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
	if (exec1(c, "DELETE FROM blobs WHERE sha256 NOT IN (SELECT sha256 FROM files) "
		  "AND sha256 NOT IN (SELECT sha256 FROM holds WHERE until > unixepoch())", 0, &stats->blobs_dropped))
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

int catalog_snapshot_pin(struct catalog *c, int64_t snapshot_id, bool pin)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c, "UPDATE snapshots SET pinned_at = CASE WHEN ?2 THEN coalesce(pinned_at, unixepoch()) "
			     "END WHERE id = ?1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, snapshot_id);
	sqlite3_bind_int(st, 2, pin);
	if (sqlite3_step(st) != SQLITE_DONE) {
		sqlite3_finalize(st);
		return HM_ERR_SQLITE;
	}
	sqlite3_finalize(st);
	return sqlite3_changes(c->db) ? 0 : HM_ERR_NOT_FOUND;
}

int catalog_store_bytes(struct catalog *c, int64_t *bytes)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (catalog__prepare(c, "SELECT coalesce(sum(size), 0) FROM blobs WHERE present", &st))
		return HM_ERR_SQLITE;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*bytes = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : HM_ERR_SQLITE;
}

struct sized_blob {
	char sha256[65];
	int64_t size;
};

/* The distinct contents of snapshot id (*out malloc'd, *n long). */
static int snapshot_blobs(struct catalog *c, int64_t id, struct sized_blob **out, size_t *n)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (catalog__prepare(
		    c,
		    "SELECT DISTINCT f.sha256, b.size * b.present FROM files f JOIN blobs b ON b.sha256 = f.sha256 "
		    "WHERE f.snapshot_id = ?1",
		    &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			*out = xreallocarray(*out, cap, sizeof(**out));
		}
		snprintf((*out)[*n].sha256, 65, "%s", (const char *)sqlite3_column_text(st, 0));
		(*out)[(*n)++].size = sqlite3_column_int64(st, 1);
	}
	return catalog__rows_end(st, rc, 0);
}

/* Drop blob sha256's row when no file names it any more: 1 (dropped), 0 (still named) or HM_ERR_SQLITE. */
static int blob_drop_unused(struct catalog *c, const char *sha256)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c, "DELETE FROM blobs WHERE sha256 = ?1 AND NOT EXISTS "
			     "(SELECT 1 FROM files WHERE sha256 = ?1) AND NOT EXISTS "
			     "(SELECT 1 FROM holds WHERE sha256 = ?1 AND until > unixepoch())", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	if (catalog__run(st))
		return HM_ERR_SQLITE;
	return sqlite3_changes(c->db) > 0;
}

int catalog_quota_evict(struct catalog *c, int64_t need, bool (*held)(void *ud, const char *sha256), void *ud,
			int64_t *freed, int64_t *dropped, char (**dead)[65], size_t *ndead)
{
	sqlite3_stmt *cand = NULL;
	char (*list)[65] = NULL;
	size_t n = 0, cap = 0;
	int r = HM_ERR_SQLITE, rc = SQLITE_DONE;

	*freed = *dropped = 0;
	*dead = NULL;
	*ndead = 0;
	if (catalog_begin(c))
		return r;
	/* Removed repos' snapshots first (gc drops them anyway), then tracked repos' old ones, oldest
	 * first; a ref target or a pinned snapshot of a tracked repo is never a candidate. */
	if (catalog__prepare(
		    c,
		    "SELECT s.id FROM snapshots s JOIN repos r ON r.id = s.repo_id WHERE r.removed_at IS NOT NULL"
		    " OR (r.local = 0 AND s.pinned_at IS NULL AND s.id NOT IN (SELECT snapshot_id FROM refs))"
		    " ORDER BY r.removed_at IS NULL, s.synced_at, s.id",
		    &cand))
		goto out;
	while (*freed < need && (rc = sqlite3_step(cand)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(cand, 0);
		struct sized_blob *bl = NULL;
		size_t nb = 0, i;
		int e = snapshot_blobs(c, id, &bl, &nb);

		if (!e)
			e = exec1(c, "DELETE FROM refs WHERE snapshot_id = ?1", id, NULL);
		if (!e)
			e = exec1(c, "DELETE FROM snapshots WHERE id = ?1", id, NULL);
		for (i = 0; !e && i < nb; i++) {
			if (held && held(ud, bl[i].sha256))
				continue; /* the running sync names it: the row stays, the next gc decides */
			e = blob_drop_unused(c, bl[i].sha256);
			if (e == 1) {
				if (n == cap) {
					cap = cap ? cap * 2 : 64;
					list = xreallocarray(list, cap, sizeof(*list));
				}
				memcpy(list[n++], bl[i].sha256, 65);
				*freed += bl[i].size;
				e = 0;
			}
		}
		free(bl);
		if (e)
			goto out;
		(*dropped)++;
	}
	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		r = 0;
out:
	sqlite3_finalize(cand);
	if (r || *freed < need || catalog_commit(c)) {
		catalog_rollback(c);
		free(list);
		if (!r && *freed >= need)
			r = HM_ERR_SQLITE;
		*dropped = 0;
		return r;
	}
	*dead = list;
	*ndead = n;
	return 0;
}

int catalog_blob_stored_at(struct catalog *c, const char *sha256, int64_t *at)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (catalog__prepare(c, "SELECT stored_at FROM blobs WHERE sha256 = ?1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*at = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? HM_ERR_NOT_FOUND : HM_ERR_SQLITE;
}

int catalog_blob_set_present(struct catalog *c, const char *sha256)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(
		    c, "UPDATE blobs SET present = 1, stored_at = unixepoch() WHERE sha256 = ?1 AND NOT present", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	return catalog__run(st);
}

int catalog_snapshot_complete(struct catalog *c, int64_t snapshot_id)
{
	sqlite3_stmt *st = NULL;
	int r;

	if (catalog__prepare(c, "SELECT 1 FROM files f JOIN blobs b ON b.sha256 = f.sha256 "
			     "WHERE f.snapshot_id = ?1 AND NOT b.present LIMIT 1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, snapshot_id);
	r = catalog__has_row(st);
	return r < 0 ? r : !r;
}

int catalog_blob_present(struct catalog *c, const char *sha256)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c, "SELECT 1 FROM blobs WHERE sha256 = ?1 AND present", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	return catalog__has_row(st);
}

int catalog_blob_known(struct catalog *c, const char *sha256)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c, "SELECT 1 FROM blobs WHERE sha256 = ?1 UNION ALL "
			     "SELECT 1 FROM holds WHERE sha256 = ?1 AND until > unixepoch() LIMIT 1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	return catalog__has_row(st);
}

int catalog_blob_each(struct catalog *c, int (*fn)(void *ud, const char *sha256, int64_t size), void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (catalog__prepare(c, "SELECT sha256, size FROM blobs WHERE present ORDER BY sha256", &st))
		return HM_ERR_SQLITE;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = fn(ud, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1));
		if (r)
			break;
	}
	return catalog__rows_end(st, rc, r);
}

int catalog_named_each(struct catalog *c, int (*fn)(void *ud, const char *sha256), void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (catalog__prepare(c, "SELECT sha256 FROM blobs UNION "
			     "SELECT sha256 FROM holds WHERE until > unixepoch() ORDER BY 1", &st))
		return HM_ERR_SQLITE;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = fn(ud, (const char *)sqlite3_column_text(st, 0));
		if (r)
			break;
	}
	return catalog__rows_end(st, rc, r);
}

int catalog_blob_uses(struct catalog *c, const char *sha256, int max,
		      int (*fn)(void *ud, const char *hub, const char *type, const char *name, const char *commit,
				const char *path),
		      void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (catalog__prepare(c, "SELECT r.hub, r.type, r.name, s.commit_id, f.path FROM files f "
				"JOIN snapshots s ON s.id = f.snapshot_id JOIN repos r ON r.id = s.repo_id "
				"WHERE f.sha256 = ?1 ORDER BY s.synced_at DESC, r.name, f.path LIMIT ?2", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, max);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = fn(ud, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
		       (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3),
		       (const char *)sqlite3_column_text(st, 4));
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
