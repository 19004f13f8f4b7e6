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
