/*
 * xet.c - contents' Xet file hashes (schema v20, catalog.h): the CAS front finds a file by its Xet
 * hash, within the repo a token names.
 */
#include <string.h>

#include "base/err.h"
#include "catalog-int.h"

int catalog_blob_set_xet(struct catalog *c, const char *sha256, const char *xet_hash)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c, "INSERT INTO blob_xet (sha256, xet_hash) VALUES (?1, ?2) "
			     "ON CONFLICT (sha256) DO UPDATE SET xet_hash = excluded.xet_hash", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, xet_hash, -1, SQLITE_STATIC);
	return catalog__run(st);
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
