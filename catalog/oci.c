/*
 * oci.c - the OCI tar layers' digests (schema v20; catalog.h): a file as a tar layer (hub/oci.h) is
 * named by the digest of its bytes, computed once over the whole file and kept here with the header it
 * was computed with, keyed by the content and the path the entry is named by. The layer's bytes are
 * never stored: the header from here, the file from the store, zeros.
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog-int.h"

static const char sql_tar_get[] = "SELECT digest, length(header) FROM oci_tars WHERE sha256 = ?1 AND path = ?2";

int catalog_oci_tar_get(struct catalog *c, const char *sha256, const char *path, char digest[72], size_t *header_len)
{
	sqlite3_stmt *st = catalog__cached(c, sql_tar_get);
	int rc, r = HM_ERR_SQLITE;

	if (!st)
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 0) == 71) {
		memcpy(digest, sqlite3_column_text(st, 0), 72);
		*header_len = (size_t)sqlite3_column_int64(st, 1);
		r = 0;
	} else if (rc == SQLITE_DONE || rc == SQLITE_ROW) {
		r = HM_ERR_NOT_FOUND;
	}
	sqlite3_reset(st);
	return r;
}

int catalog_oci_tar_put(struct catalog *c, const char *sha256, const char *path, const char *digest,
			const unsigned char *header, size_t header_len)
{
	sqlite3_stmt *st = NULL;

	/* (two first pulls at once computed the same digest: the first row stays) */
	if (catalog__prepare(c, "INSERT OR IGNORE INTO oci_tars (sha256, path, digest, header) VALUES (?1, ?2, ?3, ?4)",
			     &st))
		return catalog__failed(c);
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, digest, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 4, header, (int)header_len, SQLITE_STATIC);
	return catalog__run(st) ? catalog__failed(c) : 0;
}

int catalog_oci_tar_find(struct catalog *c, int64_t repo_id, const char *digest, struct catalog_oci_tar *out)
{
	sqlite3_stmt *st = NULL;
	int rc, r;

	/* a layer of one of the repo's snapshots whose content the store holds, a ref's snapshot first */
	if (catalog__prepare(c, "SELECT t.sha256, t.header, f.size, f.snapshot_id FROM oci_tars t "
			     "JOIN files f ON f.sha256 = t.sha256 AND f.path = t.path "
			     "JOIN snapshots s ON s.id = f.snapshot_id JOIN blobs b ON b.sha256 = t.sha256 "
			     "WHERE t.digest = ?1 AND s.repo_id = ?2 AND b.present = 1 "
			     "ORDER BY EXISTS (SELECT 1 FROM refs r WHERE r.snapshot_id = s.id) DESC, s.id DESC "
			     "LIMIT 1",
			     &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, digest, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, repo_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 0) == 64) {
		size_t n = (size_t)sqlite3_column_bytes(st, 1);
		memcpy(out->sha256, sqlite3_column_text(st, 0), 65);
		out->header = xmalloc(n ? n : 1);
		memcpy(out->header, sqlite3_column_blob(st, 1), n);
		out->header_len = n;
		out->size = sqlite3_column_int64(st, 2);
		out->snapshot_id = sqlite3_column_int64(st, 3);
		r = 0;
	} else {
		r = rc == SQLITE_DONE || rc == SQLITE_ROW ? HM_ERR_NOT_FOUND : HM_ERR_SQLITE;
	}
	sqlite3_finalize(st);
	return r;
}
