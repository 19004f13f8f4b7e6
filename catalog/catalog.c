/*
 * catalog.c - opening the catalog database and migrating its schema; the prepared-statement cache and
 * the statement idioms the other files share.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog-int.h"

static int fail(sqlite3 *db, char **errmsg, const char *what)
{
	if (errmsg)
		*errmsg = xasprintf("%s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
	return HM_ERR_SQLITE;
}

static int read_version(sqlite3 *db, int *version)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_SQLITE;

	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW) {
		*version = sqlite3_column_int(st, 0);
		r = 0;
	}
	sqlite3_finalize(st);
	return r;
}

/* Run every migration above the stored version, each in its own transaction with its version bump. */
static int migrate(sqlite3 *db, char **errmsg)
{
	int stored, newest = catalog__migration_count();

	if (read_version(db, &stored))
		return fail(db, errmsg, "cannot read schema version");
	if (stored > newest) {
		if (errmsg)
			*errmsg = xasprintf("catalog schema version %d is newer than this hubmirror (%d)",
					    stored, newest);
		return HM_ERR_SCHEMA;
	}
	for (int v = stored + 1; v <= newest; v++) {
		char *bump = xasprintf("PRAGMA user_version = %d", v);
		int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);

		if (rc == SQLITE_OK)
			rc = sqlite3_exec(db, catalog__migration(v), NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(db, bump, NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
		free(bump);
		if (rc != SQLITE_OK) {
			int r = fail(db, errmsg, "schema migration failed");
			sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
			return r;
		}
	}
	return 0;
}

int catalog_open(const char *path, struct catalog **out, char **errmsg)
{
	sqlite3 *db = NULL;
	struct catalog *c;
	int r;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		r = fail(db, errmsg, "cannot open catalog");
		goto out;
	}
	/* A writer (sync) and readers (serve) in other processes: wait for locks instead of failing. */
	sqlite3_busy_timeout(db, 10000);
	if (sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;"
			     "PRAGMA synchronous = NORMAL;", NULL, NULL, NULL) != SQLITE_OK) {
		r = fail(db, errmsg, "cannot configure catalog");
		goto out;
	}
	r = migrate(db, errmsg);
	if (r)
		goto out;
	if (catalog__register_rank(db) != SQLITE_OK) {
		r = fail(db, errmsg, "cannot register the search ranking");
		goto out;
	}
	c = xcalloc(1, sizeof(*c));
	c->db = db;
	db = NULL;
	*out = c;
out:
	sqlite3_close(db);
	return r;
}

sqlite3_stmt *catalog__cached(struct catalog *c, const char *sql)
{
	size_t i;

	for (i = 0; i < CATALOG_STMT_CACHE && c->cache[i].sql; i++) {
		if (c->cache[i].sql == sql) {
			sqlite3_reset(c->cache[i].st);
			sqlite3_clear_bindings(c->cache[i].st);
			return c->cache[i].st;
		}
	}
	if (i == CATALOG_STMT_CACHE)
		return NULL; /* the cache is sized for the statements that use it; a bug if reached */
	if (sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &c->cache[i].st, NULL) != SQLITE_OK)
		return NULL;
	c->cache[i].sql = sql;
	return c->cache[i].st;
}

int catalog__prepare(struct catalog *c, const char *sql, sqlite3_stmt **st)
{
	return sqlite3_prepare_v2(c->db, sql, -1, st, NULL) == SQLITE_OK ? 0 : HM_ERR_SQLITE;
}

int catalog__run(sqlite3_stmt *st)
{
	int r = sqlite3_step(st) == SQLITE_DONE ? 0 : HM_ERR_SQLITE;

	sqlite3_finalize(st);
	return r;
}

int catalog__failed(struct catalog *c)
{
	return (sqlite3_extended_errcode(c->db) & 0xff) == SQLITE_FULL ? -ENOSPC : HM_ERR_SQLITE;
}

int catalog__run_changed(struct catalog *c, sqlite3_stmt *st)
{
	int r = catalog__run(st);

	return !r && !sqlite3_changes(c->db) ? HM_ERR_NOT_FOUND : r;
}

void catalog__bind_repo(sqlite3_stmt *st, const char *hub, const char *type, const char *name)
{
	sqlite3_bind_text(st, 1, hub, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, type, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
}

int catalog__has_row(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : HM_ERR_SQLITE;
}

int catalog__rows_end(sqlite3_stmt *st, int rc, int r)
{
	sqlite3_finalize(st);
	if (!r && rc != SQLITE_DONE)
		r = HM_ERR_SQLITE;
	return r;
}

void catalog_free(struct catalog **c)
{
	if (!c || !*c)
		return;
	for (size_t i = 0; i < CATALOG_STMT_CACHE; i++)
		sqlite3_finalize((*c)->cache[i].st);
	sqlite3_close((*c)->db);
	free(*c);
	*c = NULL;
}

int catalog_schema_version(void)
{
	return catalog__migration_count();
}

int catalog_stored_version(struct catalog *c)
{
	int v = -1;

	if (read_version(c->db, &v))
		return HM_ERR_SQLITE;
	return v;
}

int catalog_begin(struct catalog *c)
{
	return sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? 0 : HM_ERR_SQLITE;
}

int catalog_commit(struct catalog *c)
{
	return sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : HM_ERR_SQLITE;
}

void catalog_rollback(struct catalog *c)
{
	sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
}

/* ---- backup and restore ------------------------------------------------------------------------ */

int catalog_backup(struct catalog *c, const char *dest, char **errmsg)
{
	sqlite3 *out = NULL;
	sqlite3_backup *b;
	int rc;

	if (sqlite3_open_v2(dest, &out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		int r = fail(out, errmsg, "cannot create the backup");
		sqlite3_close(out);
		return r;
	}
	/* One step over every page: the source is read in one transaction, so the copy is the catalog
	 * as of one moment, whatever a running sync or serve does meanwhile (WAL readers do not block). */
	b = sqlite3_backup_init(out, "main", c->db, "main");
	if (!b) {
		int r = fail(out, errmsg, "cannot start the backup");
		sqlite3_close(out);
		return r;
	}
	do {
		rc = sqlite3_backup_step(b, -1);
		if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
			sqlite3_sleep(50);
	} while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
	sqlite3_backup_finish(b);
	if (rc != SQLITE_DONE) {
		int r = fail(out, errmsg, "backup failed");
		sqlite3_close(out);
		return r;
	}
	/* a file that stands alone: no -wal beside it */
	rc = sqlite3_exec(out, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		int r = fail(out, errmsg, "backup failed");
		sqlite3_close(out);
		return r;
	}
	return sqlite3_close(out) == SQLITE_OK ? 0 : HM_ERR_SQLITE;
}

int catalog_file_check(const char *path, int *version, int64_t *repos, char **errmsg)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	char *uri = xasprintf("file:%s?mode=ro&immutable=1", path);
	int r = HM_ERR_SQLITE, v = 0;

	if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		r = fail(db, errmsg, "not an SQLite database");
		goto out;
	}
	if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW || strcmp((const char *)sqlite3_column_text(st, 0), "ok")) {
		r = fail(db, errmsg, "not a sound SQLite database (quick_check)");
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (read_version(db, &v) || v < 1) {
		r = fail(db, errmsg, "not a hubmirror catalog (no schema version)");
		goto out;
	}
	if (v > catalog__migration_count()) {
		if (errmsg)
			*errmsg = xasprintf("catalog schema version %d is newer than this hubmirror (%d)", v,
					    catalog__migration_count());
		r = HM_ERR_SCHEMA;
		goto out;
	}
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM repos", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		r = fail(db, errmsg, "not a hubmirror catalog (no repos)");
		goto out;
	}
	if (repos)
		*repos = sqlite3_column_int64(st, 0);
	if (version)
		*version = v;
	r = 0;
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(uri);
	return r;
}
