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

/* The statement idioms every file of the catalog repeats (catalog.c). */
/* Prepare sql on c's connection into *st: 0, or HM_ERR_SQLITE (*st is then NULL). */
int catalog__prepare(struct catalog *c, const char *sql, sqlite3_stmt **st);
/* Step a bound statement that returns no rows (INSERT, UPDATE, DELETE) and finalize it: 0 when it ran
 * to completion, else HM_ERR_SQLITE. */
int catalog__run(sqlite3_stmt *st);
/* catalog__run, and HM_ERR_NOT_FOUND when it changed no row (an UPDATE or DELETE of a repo not there). */
int catalog__run_changed(struct catalog *c, sqlite3_stmt *st);
/* Bind a repository's key, hub, type and name, as ?1, ?2 and ?3 (borrowed: SQLITE_STATIC). */
void catalog__bind_repo(sqlite3_stmt *st, const char *hub, const char *type, const char *name);
/* Step a bound query for its first row only and finalize it: 1 (a row), 0 (none) or HM_ERR_SQLITE. */
int catalog__has_row(sqlite3_stmt *st);
/* End a loop that stepped st's rows and called back on each (stopping at the first non-zero r): rc is
 * the last sqlite3_step's result, r the last callback's. Finalizes st; returns r, or HM_ERR_SQLITE
 * where the rows ended on an error rather than at their end. */
int catalog__rows_end(sqlite3_stmt *st, int rc, int r);
/* What the connection's last failed call means for a caller, taken before a rollback (which clears
 * it): -ENOSPC when the disk is full (SQLITE_FULL: the server answers 507 with the reason, as for the
 * store), else HM_ERR_SQLITE. */
int catalog__failed(struct catalog *c);

/* Number of migrations (= newest schema version) and the SQL that moves to_version-1 -> to_version. */
int catalog__migration_count(void);
const char *catalog__migration(int to_version);

/* Registers hm_rank() (rank.c), the search relevance, on a connection. SQLITE_OK or an error. */
int catalog__register_rank(sqlite3 *db);

/* catalog_repo_get that also finds removed (not yet collected) repos. */
int catalog__repo_get_any(struct catalog *c, const char *hub, const char *type, const char *name,
			  struct catalog_repo *out);

/* Columns in the order read_repo_row() (repos.c) expects; the head snapshot comes from the followed ref. */
#define REPO_SELECT \
	"r.id, r.hub, r.type, r.name, r.follow_rev, r.include_globs, r.exclude_globs, r.options, " \
	"r.added_at, r.sync_status, r.sync_error, coalesce(r.last_sync_at, 0), s.commit_id, " \
	"coalesce(s.file_count, 0), coalesce(s.total_size, 0), s.selection, " \
	"r.gated, coalesce(r.private, -1), r.card_data, r.tags, r.pipeline_tag, r.library_name, r.license, " \
	"coalesce(r.downloads, -1), coalesce(r.likes, -1), r.last_modified, r.refs_policy, " \
	"coalesce(r.refs_checked_at, 0), r.upstream_name, coalesce(r.tier, 0), r.upstream, " \
	"coalesce(r.origin_checked_at, 0), coalesce(r.created_at, 0), coalesce(r.last_ok_at, 0), r.local "
#define REPO_JOINS \
	"LEFT JOIN refs f ON f.repo_id = r.id AND f.name = r.follow_rev " \
	"LEFT JOIN snapshots s ON s.id = f.snapshot_id "
#define REPO_COLUMNS REPO_SELECT "FROM repos r " REPO_JOINS

/* A repo not among the keys of the JSON array bound at P (NULL: none hidden), nor under a namespace's
 * key there ("hf:model:acme/" and '*': compared as a prefix, without LIKE, whose wildcards names hold). */
#define HIDDEN_CLAUSE(P)                                                                                               \
	"(" P " IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(" P ") h WHERE "                                        \
	"h.value = (r.hub || ':' || r.type || ':' || r.name) OR (substr(h.value, -2) = '/*' AND "                      \
	"substr(r.hub || ':' || r.type || ':' || r.name, 1, length(h.value) - 1) = substr(h.value, 1, "                \
	"length(h.value) - 1))))"

/* catalog_snapshot_commit inside the caller's transaction (sync.c); ref_name NULL moves no ref;
 * *snapshot_id (may be NULL): the snapshot's row. */
struct catalog_file;
int catalog__snapshot_record(struct catalog *c, int64_t repo_id, const char *commit, const char *ref_name, bool tag,
			     const char *selection, const struct catalog_file *files, size_t n, int64_t *snapshot_id);

/* Fill *r from a row of REPO_SELECT (repos.c). */
void catalog__read_repo(sqlite3_stmt *st, struct catalog_repo *r);
/* Step a bound statement for one row and read it into out with read (when there is one); reset the
 * statement (a cached one stays usable). Returns 0, HM_ERR_NOT_FOUND (no row) or HM_ERR_SQLITE. */
int catalog__one_row(sqlite3_stmt *st, void (*read)(sqlite3_stmt *st, void *out), void *out);

/* Step st's REPO_SELECT rows: fn gets each repo (borrowed). Returns 0, fn's non-zero, HM_ERR_TIMEOUT
 * (a progress handler interrupted it) or HM_ERR_SQLITE. st is the caller's to finalize or reset. */
int catalog__repo_rows(sqlite3_stmt *st, int (*fn)(void *ud, const struct catalog_repo *r), void *ud);

#endif
