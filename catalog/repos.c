/*
 * repos.c - tracked repositories: add, remove, get, list; totals, runs and snapshots for browsing.
 * Search is in search.c, its ranking in rank.c.
 */
#include <ctype.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog-int.h"

static char *col_str(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? xstrdup((const char *)t) : NULL;
}

void catalog__read_repo(sqlite3_stmt *st, struct catalog_repo *r)
{
	r->id = sqlite3_column_int64(st, 0);
	r->hub = col_str(st, 1);
	r->type = col_str(st, 2);
	r->name = col_str(st, 3);
	r->follow_rev = col_str(st, 4);
	r->include_globs = col_str(st, 5);
	r->exclude_globs = col_str(st, 6);
	r->options = col_str(st, 7);
	r->added_at = sqlite3_column_int64(st, 8);
	r->sync_status = col_str(st, 9);
	r->sync_error = col_str(st, 10);
	r->last_sync_at = sqlite3_column_int64(st, 11);
	r->head_commit = col_str(st, 12);
	r->file_count = sqlite3_column_int64(st, 13);
	r->total_size = sqlite3_column_int64(st, 14);
	r->head_selection = col_str(st, 15);
	r->gated = col_str(st, 16);
	r->private_ = sqlite3_column_int(st, 17);
	r->card_data = col_str(st, 18);
	r->tags = col_str(st, 19);
	r->pipeline_tag = col_str(st, 20);
	r->library_name = col_str(st, 21);
	r->license = col_str(st, 22);
	r->downloads = sqlite3_column_int64(st, 23);
	r->likes = sqlite3_column_int64(st, 24);
	r->last_modified = col_str(st, 25);
	r->refs_policy = col_str(st, 26);
	r->refs_checked_at = sqlite3_column_int64(st, 27);
	r->upstream_name = col_str(st, 28);
	r->tier = sqlite3_column_int(st, 29);
	r->upstream = col_str(st, 30);
	r->origin_checked_at = sqlite3_column_int64(st, 31);
	r->created_at = sqlite3_column_int64(st, 32);
	r->last_ok_at = sqlite3_column_int64(st, 33);
	r->local = sqlite3_column_int(st, 34) != 0;
}

char *catalog_repo_selection(const struct catalog_repo *r)
{
	return xasprintf("%s\n%s\n%s", r->include_globs, r->exclude_globs, r->options);
}

void catalog_repo_release(struct catalog_repo *r)
{
	if (!r)
		return;
	free(r->hub);
	free(r->type);
	free(r->name);
	free(r->follow_rev);
	free(r->include_globs);
	free(r->exclude_globs);
	free(r->options);
	free(r->sync_status);
	free(r->sync_error);
	free(r->head_commit);
	free(r->head_selection);
	free(r->gated);
	free(r->card_data);
	free(r->tags);
	free(r->pipeline_tag);
	free(r->library_name);
	free(r->license);
	free(r->last_modified);
	free(r->refs_policy);
	free(r->upstream_name);
	free(r->upstream);
	memset(r, 0, sizeof(*r));
}

void catalog_repo_list_free(struct catalog_repo *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		catalog_repo_release(&list[i]);
	free(list);
}

int catalog_repo_add(struct catalog *c, const char *hub, const char *type, const char *name,
		     const char *follow_rev, const char *include_globs, const char *exclude_globs,
		     const char *options, bool *created)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_SQLITE, existed = 0;

	/* Was it tracked before? (Only to answer *created; the upsert below is one statement.) A repo of
	 * the mirror's own is never tracked from upstream under its name. */
	if (catalog__prepare(c, "SELECT removed_at IS NULL, local FROM repos WHERE hub=?1 AND type=?2 AND name=?3",
			     &st))
		goto out;
	catalog__bind_repo(st, hub, type, name);
	if (sqlite3_step(st) == SQLITE_ROW) {
		existed = sqlite3_column_int(st, 0);
		if (sqlite3_column_int(st, 1))
			r = HM_ERR_LOCAL;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (r == HM_ERR_LOCAL)
		goto out;

	if (catalog__prepare(c,
		"INSERT INTO repos (hub, type, name, follow_rev, include_globs, exclude_globs, options, added_at) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
		"ON CONFLICT (hub, type, name) DO UPDATE SET follow_rev = excluded.follow_rev, "
		"include_globs = excluded.include_globs, exclude_globs = excluded.exclude_globs, "
		"options = excluded.options, removed_at = NULL", &st))
		goto out;
	catalog__bind_repo(st, hub, type, name);
	sqlite3_bind_text(st, 4, follow_rev, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, include_globs ? include_globs : "[]", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, exclude_globs ? exclude_globs : "[]", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, options ? options : "{}", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, (sqlite3_int64)time(NULL));
	if (sqlite3_step(st) != SQLITE_DONE)
		goto out;
	if (created)
		*created = !existed;
	r = 0;
out:
	sqlite3_finalize(st);
	return r;
}

int catalog_repo_remove(struct catalog *c, const char *hub, const char *type, const char *name)
{
	sqlite3_stmt *st = NULL;
	int r;

	if (catalog__prepare(c, "UPDATE repos SET removed_at = ?4 "
			     "WHERE hub=?1 AND type=?2 AND name=?3 AND removed_at IS NULL", &st))
		return HM_ERR_SQLITE;
	catalog__bind_repo(st, hub, type, name);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
	r = catalog__run_changed(c, st);
	return r;
}

int catalog_repo_count_ondemand(struct catalog *c, int64_t *n)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_SQLITE;

	if (catalog__prepare(c, "SELECT count(*) FROM repos WHERE removed_at IS NULL AND "
			     "json_extract(coalesce(options, '{}'), '$.on_demand') IS NOT NULL", &st))
		return r;
	if (sqlite3_step(st) == SQLITE_ROW) {
		*n = sqlite3_column_int64(st, 0);
		r = 0;
	}
	sqlite3_finalize(st);
	return r;
}

int catalog_repo_forget(struct catalog *c, const char *hub, const char *type, const char *name)
{
	sqlite3_stmt *st = NULL;
	int r;

	if (catalog__prepare(c, "DELETE FROM repos WHERE hub=?1 AND type=?2 AND name=?3 "
			     "AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.repo_id = repos.id)", &st))
		return HM_ERR_SQLITE;
	catalog__bind_repo(st, hub, type, name);
	r = catalog__run_changed(c, st);
	return r;
}

static const char sql_repo_tracked[] =
	"SELECT " REPO_COLUMNS "WHERE r.hub=?1 AND r.type=?2 AND r.name=?3 AND r.removed_at IS NULL";
static const char sql_repo_any[] = "SELECT " REPO_COLUMNS "WHERE r.hub=?1 AND r.type=?2 AND r.name=?3";

static const char sql_repo_of_snapshot[] =
	"SELECT " REPO_COLUMNS "WHERE r.id = (SELECT repo_id FROM snapshots WHERE id = ?1)";

int catalog__one_row(sqlite3_stmt *st, void (*read)(sqlite3_stmt *st, void *out), void *out)
{
	int r = HM_ERR_SQLITE, rc = sqlite3_step(st);

	if (rc == SQLITE_ROW) {
		read(st, out);
		r = 0;
	} else if (rc == SQLITE_DONE) {
		r = HM_ERR_NOT_FOUND;
	}
	sqlite3_reset(st);
	return r;
}

static void read_repo_row(sqlite3_stmt *st, void *out)
{
	catalog__read_repo(st, out);
}

/* Step a bound single-row repo statement from the cache into out. */
static int repo_row(sqlite3_stmt *st, struct catalog_repo *out)
{
	return catalog__one_row(st, read_repo_row, out);
}

static int repo_get(struct catalog *c, const char *hub, const char *type, const char *name, bool tracked_only,
		    struct catalog_repo *out)
{
	sqlite3_stmt *st = catalog__cached(c, tracked_only ? sql_repo_tracked : sql_repo_any);

	if (!st)
		return HM_ERR_SQLITE;
	catalog__bind_repo(st, hub, type, name);
	return repo_row(st, out);
}

int catalog_snapshot_repo(struct catalog *c, int64_t snapshot_id, struct catalog_repo *out)
{
	sqlite3_stmt *st = catalog__cached(c, sql_repo_of_snapshot);

	if (!st)
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, snapshot_id);
	return repo_row(st, out);
}

int catalog_repo_get(struct catalog *c, const char *hub, const char *type, const char *name,
		     struct catalog_repo *out)
{
	return repo_get(c, hub, type, name, true, out);
}

int catalog__repo_get_any(struct catalog *c, const char *hub, const char *type, const char *name,
			  struct catalog_repo *out)
{
	return repo_get(c, hub, type, name, false, out);
}


int catalog__repo_rows(sqlite3_stmt *st, int (*fn)(void *ud, const struct catalog_repo *r), void *ud)
{
	int r, rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct catalog_repo repo = { 0 };
		catalog__read_repo(st, &repo);
		r = fn(ud, &repo);
		catalog_repo_release(&repo);
		if (r)
			return r;
	}
	return rc == SQLITE_DONE ? 0 : rc == SQLITE_INTERRUPT ? HM_ERR_TIMEOUT : HM_ERR_SQLITE;
}

int catalog_repos_each(struct catalog *c, const char *hub, const char *type, const char *search,
		       const char *author, const char *after, size_t limit, const char *hidden,
		       int (*fn)(void *ud, const struct catalog_repo *r), void *ud)
{
	sqlite3_stmt *st = NULL;
	int r;

	if (catalog__prepare(c, "SELECT " REPO_COLUMNS
			     "WHERE r.hub = ?1 AND r.type = ?2 AND s.id IS NOT NULL "
			     "AND (?3 IS NULL OR instr(lower(r.name), lower(?3)) > 0) "
			     "AND (?4 IS NULL OR substr(r.name, 1, length(?4) + 1) = ?4 || '/') "
			     "AND r.name > ?5 AND " HIDDEN_CLAUSE("?7") " ORDER BY r.name LIMIT ?6", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, hub, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, type, -1, SQLITE_STATIC);
	if (search)
		sqlite3_bind_text(st, 3, search, -1, SQLITE_STATIC);
	if (author)
		sqlite3_bind_text(st, 4, author, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, after ? after : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, limit ? (sqlite3_int64)limit : -1);
	if (hidden)
		sqlite3_bind_text(st, 7, hidden, -1, SQLITE_STATIC);
	r = catalog__repo_rows(st, fn, ud);
	sqlite3_finalize(st);
	return r;
}

static int repo_list(struct catalog *c, bool private_only, struct catalog_repo **out, size_t *n)
{
	sqlite3_stmt *st = NULL;
	struct catalog_repo *list = NULL;
	size_t len = 0, cap = 0;
	int rc;

	if (catalog__prepare(c, private_only ? "SELECT " REPO_COLUMNS "WHERE r.removed_at IS NULL AND r.private = 1 "
					       "ORDER BY r.hub, r.type, r.name"
					     : "SELECT " REPO_COLUMNS "WHERE r.removed_at IS NULL "
					       "ORDER BY r.hub, r.type, r.name", &st))
		return HM_ERR_SQLITE;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (len == cap) {
			cap = cap ? cap * 2 : 16;
			list = xreallocarray(list, cap, sizeof(*list));
		}
		memset(&list[len], 0, sizeof(*list));
		catalog__read_repo(st, &list[len++]);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		catalog_repo_list_free(list, len);
		return HM_ERR_SQLITE;
	}
	*out = list;
	*n = len;
	return 0;
}

int catalog_repo_list(struct catalog *c, struct catalog_repo **out, size_t *n)
{
	return repo_list(c, false, out, n);
}

int catalog_repo_list_private(struct catalog *c, struct catalog_repo **out, size_t *n)
{
	return repo_list(c, true, out, n);
}

const char *catalog_errmsg(struct catalog *c)
{
	return sqlite3_errmsg(c->db);
}

int catalog_totals(struct catalog *c, struct catalog_totals *out)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_SQLITE;

	memset(out, 0, sizeof(*out));
	if (catalog__prepare(
		    c,
		    "SELECT (SELECT count(*) FROM repos WHERE removed_at IS NULL),"
		    " (SELECT count(*) FROM repos r JOIN refs f ON f.repo_id = r.id AND f.name = r.follow_rev WHERE "
		    "r.removed_at IS NULL),"
		    " (SELECT count(*) FROM snapshots), (SELECT count(*) FROM files),"
		    " (SELECT count(*) FROM blobs WHERE present), (SELECT coalesce(sum(size), 0) FROM blobs WHERE "
		    "present),"
		    " (SELECT coalesce(sum(s.total_size), 0) FROM refs f JOIN snapshots s ON s.id = f.snapshot_id),"
		    " (SELECT coalesce(sum(total_size), 0) FROM snapshots)",
		    &st))
		return r;
	if (sqlite3_step(st) == SQLITE_ROW) {
		out->repos = sqlite3_column_int64(st, 0);
		out->repos_synced = sqlite3_column_int64(st, 1);
		out->snapshots = sqlite3_column_int64(st, 2);
		out->files = sqlite3_column_int64(st, 3);
		out->blobs = sqlite3_column_int64(st, 4);
		out->unique_bytes = sqlite3_column_int64(st, 5);
		out->logical_bytes = sqlite3_column_int64(st, 6);
		out->dedup_saved_bytes = sqlite3_column_int64(st, 7) - out->unique_bytes;
		if (out->dedup_saved_bytes < 0)
			out->dedup_saved_bytes = 0;
		r = 0;
	}
	sqlite3_finalize(st);
	return r;
}

int catalog_runs_each(struct catalog *c, size_t limit, int (*fn)(void *ud, const struct catalog_run *r), void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (catalog__prepare(c, "SELECT id, started_at, coalesce(ended_at, 0), outcome, repos_ok, repos_failed, "
			     "files_fetched, bytes_fetched FROM sync_runs ORDER BY started_at DESC, id DESC LIMIT ?1",
			     &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, limit ? (sqlite3_int64)limit : -1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct catalog_run run = {
			sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
			(const char *)sqlite3_column_text(st, 3), sqlite3_column_int64(st, 4),
			sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6), sqlite3_column_int64(st, 7),
		};
		r = fn(ud, &run);
		if (r)
			break;
	}
	return catalog__rows_end(st, rc, r);
}

int catalog_repo_results_each(struct catalog *c, int64_t repo_id, size_t limit,
			      int (*fn)(void *ud, const struct catalog_run *run, const struct catalog_repo_result *res),
			      void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (catalog__prepare(
		    c,
		    "SELECT r.id, r.started_at, coalesce(r.ended_at, 0), r.outcome, r.repos_ok, r.repos_failed, "
		    "r.files_fetched, r.bytes_fetched, x.outcome, x.commit_id, x.error, x.files_fetched, "
		    "x.bytes_fetched FROM sync_results x JOIN sync_runs r ON r.id = x.run_id WHERE x.repo_id = ?1 "
		    "ORDER BY r.started_at DESC, r.id DESC LIMIT ?2",
		    &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_int64(st, 2, limit ? (sqlite3_int64)limit : -1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct catalog_run run = {
			sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
			(const char *)sqlite3_column_text(st, 3), sqlite3_column_int64(st, 4),
			sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6), sqlite3_column_int64(st, 7),
		};
		struct catalog_repo_result res = {
			(const char *)sqlite3_column_text(st, 8),
			(const char *)sqlite3_column_text(st, 9),
			(const char *)sqlite3_column_text(st, 10),
			sqlite3_column_int64(st, 11),
			sqlite3_column_int64(st, 12),
		};
		r = fn(ud, &run, &res);
		if (r)
			break;
	}
	return catalog__rows_end(st, rc, r);
}

int catalog_snapshots_each(struct catalog *c, int64_t repo_id,
			   int (*fn)(void *ud, const struct catalog_snapshot *snap), void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (catalog__prepare(c, "SELECT id, commit_id, synced_at, file_count, total_size, coalesce(pinned_at, 0) "
			     "FROM snapshots WHERE repo_id = ?1 ORDER BY synced_at DESC, id DESC", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct catalog_snapshot sn = {
			.id = sqlite3_column_int64(st, 0),
			.repo_id = repo_id,
			.synced_at = sqlite3_column_int64(st, 2),
			.file_count = sqlite3_column_int64(st, 3),
			.total_size = sqlite3_column_int64(st, 4),
			.pinned_at = sqlite3_column_int64(st, 5),
		};
		snprintf(sn.commit, sizeof(sn.commit), "%s", (const char *)sqlite3_column_text(st, 1));
		r = fn(ud, &sn);
		if (r)
			break;
	}
	return catalog__rows_end(st, rc, r);
}

int catalog_run_totals(struct catalog *c,
		       int (*fn)(void *ud, const char *outcome, int64_t runs, int64_t files, int64_t bytes), void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (catalog__prepare(c, "SELECT coalesce(outcome, 'running'), count(*), sum(files_fetched), "
			     "sum(bytes_fetched) FROM sync_runs GROUP BY 1 ORDER BY 1", &st))
		return HM_ERR_SQLITE;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = fn(ud, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
		       sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3));
		if (r)
			break;
	}
	return catalog__rows_end(st, rc, r);
}
