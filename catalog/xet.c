/*
 * xet.c - contents' Xet file hashes (schema v20, catalog.h): the CAS front finds a file by its Xet
 * hash, within the repo a token names; where the chunks of upstream's xorbs that a sync stored lie
 * (v22); the chunks the global dedup query answers for (v23); and the Xet hash upstream states for
 * a content stored before (v24).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "catalog-int.h"

/* Upstream's statement for content sha256 (xet_stated, v24): 0 with out (65 bytes) and *refused,
 * HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_xet_stated(struct catalog *c, const char *sha256, char *out, bool *refused)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (catalog__prepare(c, "SELECT xet_hash, refused FROM xet_stated WHERE sha256 = ?1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *h = (const char *)sqlite3_column_text(st, 0);
		if (h && strlen(h) == 64) {
			memcpy(out, h, 65);
			*refused = sqlite3_column_int(st, 1) != 0;
		} else {
			rc = SQLITE_DONE;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? HM_ERR_NOT_FOUND : HM_ERR_SQLITE;
}

static int run_one(struct catalog *c, const char *sql, const char *a, const char *b)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c, sql, &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, a, -1, SQLITE_STATIC);
	if (b)
		sqlite3_bind_text(st, 2, b, -1, SQLITE_STATIC);
	return catalog__run(st);
}

int catalog_blob_set_xet(struct catalog *c, const char *sha256, const char *xet_hash)
{
	char stated[65];
	bool refused = false;
	int r = catalog_xet_stated(c, sha256, stated, &refused);

	if (r == 0 && strcmp(stated, xet_hash)) {
		/* upstream names these bytes otherwise: not offered through Xet, and said once */
		if (!refused && run_one(c, "UPDATE xet_stated SET refused = 1 WHERE sha256 = ?1", sha256, NULL))
			return HM_ERR_SQLITE;
		return HM_ERR_HASH_MISMATCH;
	}
	if (r && r != HM_ERR_NOT_FOUND)
		return r;
	return run_one(c, "INSERT INTO blob_xet (sha256, xet_hash) VALUES (?1, ?2) "
		       "ON CONFLICT (sha256) DO UPDATE SET xet_hash = excluded.xet_hash", sha256, xet_hash);
}

int catalog_xet_stated_set(struct catalog *c, const char *sha256, const char *xet_hash)
{
	char known[65], stated[65];
	bool refused = false, differs;
	int r = catalog_blob_xet(c, sha256, known), s;

	if (r && r != HM_ERR_NOT_FOUND)
		return r;
	differs = r == 0 && strcmp(known, xet_hash);
	s = catalog_xet_stated(c, sha256, stated, &refused);
	if (s && s != HM_ERR_NOT_FOUND)
		return s;
	if (s == 0 && !strcmp(stated, xet_hash) && refused == differs)
		return differs;   /* nothing new: most listings, no write */
	if (sqlite3_exec(c->db, "SAVEPOINT xet_stated", NULL, NULL, NULL) != SQLITE_OK)
		return HM_ERR_SQLITE;
	r = run_one(c, differs ? "INSERT OR REPLACE INTO xet_stated (sha256, xet_hash, refused) VALUES (?1, ?2, 1)"
			       : "INSERT OR REPLACE INTO xet_stated (sha256, xet_hash, refused) VALUES (?1, ?2, 0)",
		    sha256, xet_hash);
	if (!r && differs)
		r = run_one(c, "DELETE FROM blob_xet WHERE sha256 = ?1", sha256, NULL);
	if (r)
		sqlite3_exec(c->db, "ROLLBACK TO xet_stated", NULL, NULL, NULL);
	sqlite3_exec(c->db, "RELEASE xet_stated", NULL, NULL, NULL);
	return r ? r : differs;
}

int catalog_xet_unknown(struct catalog *c, const char *after, size_t max, char (*out)[65], int64_t *sizes, size_t *n)
{
	sqlite3_stmt *st = NULL;
	size_t k = 0;
	int rc;

	if (catalog__prepare(c, "SELECT b.sha256, b.size FROM blobs b WHERE b.present AND b.sha256 > ?1 "
			     "AND NOT EXISTS (SELECT 1 FROM blob_xet x WHERE x.sha256 = b.sha256) "
			     "AND NOT EXISTS (SELECT 1 FROM xet_stated s WHERE s.sha256 = b.sha256 AND s.refused) "
			     "ORDER BY b.sha256 LIMIT ?2", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, after ? after : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)max);
	while (k < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *h = (const char *)sqlite3_column_text(st, 0);
		if (!h || strlen(h) != 64)
			continue;
		memcpy(out[k], h, 65);
		sizes[k++] = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	if (k < max && rc != SQLITE_DONE)
		return HM_ERR_SQLITE;
	*n = k;
	return 0;
}

int catalog_blob_xet(struct catalog *c, const char *sha256, char *out)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (catalog__prepare(c, "SELECT xet_hash FROM blob_xet WHERE sha256 = ?1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *h = (const char *)sqlite3_column_text(st, 0);
		if (h && strlen(h) == 64)
			memcpy(out, h, 65);
		else
			rc = SQLITE_DONE;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? HM_ERR_NOT_FOUND : HM_ERR_SQLITE;
}

int catalog_repo_xet_file(struct catalog *c, int64_t repo_id, const char *xet_hash, char *sha256, int64_t *size)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (catalog__prepare(c, "SELECT b.sha256, b.size FROM blob_xet x JOIN blobs b ON b.sha256 = x.sha256 "
			     "WHERE x.xet_hash = ?2 AND b.present AND EXISTS (SELECT 1 FROM files f "
			     "JOIN snapshots s ON s.id = f.snapshot_id WHERE f.sha256 = b.sha256 AND s.repo_id = ?1) "
			     "LIMIT 1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, xet_hash, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *h = (const char *)sqlite3_column_text(st, 0);
		if (h && strlen(h) == 64) {
			memcpy(sha256, h, 65);
			*size = sqlite3_column_int64(st, 1);
		} else {
			rc = SQLITE_DONE;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? HM_ERR_NOT_FOUND : HM_ERR_SQLITE;
}

int catalog_xet_ranges_add(struct catalog *c, const struct catalog_xet_range *r, size_t n)
{
	sqlite3_stmt *st = NULL;
	int err = 0;

	if (catalog_begin(c))
		return HM_ERR_SQLITE;
	if (catalog__prepare(c, "INSERT INTO xet_ranges (xorb, chunk, sha256, offset, length, hash) "
			     "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (xorb, chunk) DO UPDATE SET "
			     "sha256 = excluded.sha256, offset = excluded.offset, length = excluded.length, "
			     "hash = excluded.hash", &st)) {
		catalog_rollback(c);
		return HM_ERR_SQLITE;
	}
	for (size_t i = 0; i < n && !err; i++) {
		sqlite3_bind_text(st, 1, r[i].xorb, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, r[i].chunk);
		sqlite3_bind_text(st, 3, r[i].sha256, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, r[i].offset);
		sqlite3_bind_int64(st, 5, r[i].length);
		sqlite3_bind_text(st, 6, r[i].hash, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE)
			err = HM_ERR_SQLITE;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (err) {
		catalog_rollback(c);
		return err;
	}
	return catalog_commit(c);
}

static void copy_text(char *out, sqlite3_stmt *st, int col)
{
	const char *t = (const char *)sqlite3_column_text(st, col);
	out[0] = '\0';
	if (t && strlen(t) == 64)
		memcpy(out, t, 65);
}

int catalog_xet_range_find(struct catalog *c, const char *xorb, uint32_t chunk, struct catalog_xet_range *out)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (catalog__prepare(c, "SELECT r.sha256, r.offset, r.length, r.hash FROM xet_ranges r "
			     "JOIN blobs b ON b.sha256 = r.sha256 WHERE r.xorb = ?1 AND r.chunk = ?2 AND b.present",
			     &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, xorb, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, chunk);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		struct catalog_xet_range r = {.chunk = chunk};
		snprintf(r.xorb, sizeof(r.xorb), "%s", xorb);
		copy_text(r.sha256, st, 0);
		r.offset = sqlite3_column_int64(st, 1);
		r.length = (uint32_t)sqlite3_column_int64(st, 2);
		copy_text(r.hash, st, 3);
		if (r.sha256[0] && r.hash[0])
			*out = r;
		else
			rc = SQLITE_DONE;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? HM_ERR_NOT_FOUND : HM_ERR_SQLITE;
}

int catalog_xet_dedup_set(struct catalog *c, const char *sha256, const char (*chunks)[65], size_t n)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;

	/* a savepoint: whether or not the caller is in a transaction, the rows change all or none */
	if (sqlite3_exec(c->db, "SAVEPOINT xet_dedup", NULL, NULL, NULL) != SQLITE_OK)
		return HM_ERR_SQLITE;
	if (catalog__prepare(c, "DELETE FROM xet_dedup WHERE sha256 = ?1", &st))
		rc = HM_ERR_SQLITE;
	if (!rc) {
		sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
		rc = catalog__run(st);
	}
	for (size_t i = 0; i < n && !rc; i++) {
		if (catalog__prepare(c, "INSERT OR IGNORE INTO xet_dedup (chunk, sha256) VALUES (?1, ?2)", &st)) {
			rc = HM_ERR_SQLITE;
			break;
		}
		sqlite3_bind_text(st, 1, chunks[i], 64, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, sha256, -1, SQLITE_STATIC);
		rc = catalog__run(st);
	}
	if (rc)
		sqlite3_exec(c->db, "ROLLBACK TO xet_dedup", NULL, NULL, NULL);
	sqlite3_exec(c->db, "RELEASE xet_dedup", NULL, NULL, NULL);
	return rc;
}

int catalog_xet_dedup_find(struct catalog *c, const char *chunk, char (*out)[65], size_t max, size_t *n)
{
	sqlite3_stmt *st = NULL;
	size_t k = 0;
	int rc;

	if (catalog__prepare(c, "SELECT d.sha256 FROM xet_dedup d JOIN blobs b ON b.sha256 = d.sha256 "
			     "WHERE d.chunk = ?1 AND b.present LIMIT ?2", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, chunk, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)max);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *h = (const char *)sqlite3_column_text(st, 0);
		if (h && strlen(h) == 64)
			memcpy(out[k++], h, 65);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return HM_ERR_SQLITE;
	*n = k;
	return 0;
}
