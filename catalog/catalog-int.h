/*
 * catalog-int.h - private to catalog/: nothing outside this folder includes it.
 */
#ifndef HM_CATALOG_INT_H
#define HM_CATALOG_INT_H

#include <sqlite3.h>

#include "catalog.h"

#define CATALOG_STMT_CACHE 16

struct catalog {
	sqlite3 *db;
	/* Prepared statements of the hot single-row lookups (serve answers thousands a second), keyed
	 * by the address of their static SQL text. */
	struct { const char *sql; sqlite3_stmt *st; } cache[CATALOG_STMT_CACHE];
};

/* A prepared statement for sql (a string literal: its address is the key), reset and unbound; owned
 * by the cache: end its use with sqlite3_reset, never finalize it. Only for statements that are
 * stepped to completion before the next use of the same SQL. NULL on error. */
sqlite3_stmt *catalog__cached(struct catalog *c, const char *sql);

/* Number of migrations (= newest schema version) and the SQL that moves to_version-1 -> to_version. */
int catalog__migration_count(void);
const char *catalog__migration(int to_version);

/* Registers hm_rank() (rank.c), the search relevance, on a connection. SQLITE_OK or an error. */
int catalog__register_rank(sqlite3 *db);

/* catalog_repo_get that also finds removed (not yet collected) repos. */
int catalog__repo_get_any(struct catalog *c, const char *hub, const char *type, const char *name,
			  struct catalog_repo *out);

#endif
