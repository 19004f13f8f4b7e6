/*
 * requests.c - users' requests for repositories the mirror does not track (see catalog.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog-int.h"

static char *col_dup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? xstrdup((const char *)t) : NULL;
}

static void read_request(sqlite3_stmt *st, struct catalog_request *q)
{
	memset(q, 0, sizeof(*q));
	q->id = sqlite3_column_int64(st, 0);
	q->hub = col_dup(st, 1);
	q->type = col_dup(st, 2);
	q->name = col_dup(st, 3);
	q->reason = col_dup(st, 4);
	q->requested_by = col_dup(st, 5);
	q->requested_at = sqlite3_column_int64(st, 6);
	q->state = col_dup(st, 7);
	q->decided_at = sqlite3_column_int64(st, 8);
	q->decided_by = col_dup(st, 9);
	q->note = col_dup(st, 10);
	q->votes = sqlite3_column_int64(st, 11);
}

#define REQUEST_COLS "id, hub, type, name, reason, requested_by, requested_at, state, coalesce(decided_at, 0), " \
		     "decided_by, note, votes"

void catalog_request_release(struct catalog_request *q)
{
	if (!q)
		return;
	free(q->hub);
	free(q->type);
	free(q->name);
	free(q->reason);
	free(q->requested_by);
	free(q->state);
	free(q->decided_by);
	free(q->note);
	memset(q, 0, sizeof(*q));
}

int catalog_request_add(struct catalog *c, const char *hub, const char *type, const char *name, const char *reason,
			const char *by, int64_t max_pending, int64_t *id, bool *created)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_SQLITE, rc;
	int64_t pending = 0;

	*created = false;
	if (catalog_begin(c))
		return r;
	/* one open request per repo: asking again adds a vote */
	if (catalog__prepare(c, "UPDATE requests SET votes = votes + 1 WHERE hub = ?1 AND type = ?2 AND name = ?3 "
			     "AND state = 'pending' RETURNING id", &st))
		goto out;
	catalog__bind_repo(st, hub, type, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		st = NULL;
		r = 0;
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (rc != SQLITE_DONE)
		goto out;
	if (catalog__prepare(c, "SELECT count(*) FROM requests WHERE state = 'pending'", &st))
		goto out;
	if (sqlite3_step(st) == SQLITE_ROW)
		pending = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (max_pending > 0 && pending >= max_pending) {
		r = HM_ERR_QUOTA;
		goto out;
	}
	if (catalog__prepare(c, "INSERT INTO requests (hub, type, name, reason, requested_by, requested_at) "
			     "VALUES (?1, ?2, ?3, ?4, ?5, ?6)", &st))
		goto out;
	catalog__bind_repo(st, hub, type, name);
	if (reason && *reason)
		sqlite3_bind_text(st, 4, reason, -1, SQLITE_STATIC);
	if (by)
		sqlite3_bind_text(st, 5, by, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)time(NULL));
	if (catalog__run(st)) {
		st = NULL;
		goto out;
	}
	st = NULL;
	*id = sqlite3_last_insert_rowid(c->db);
	*created = true;
	r = 0;
out:
	sqlite3_finalize(st);
	if (r || catalog_commit(c)) {
		catalog_rollback(c);
		if (!r)
			r = HM_ERR_SQLITE;
	}
	return r;
}

int catalog_request_get(struct catalog *c, int64_t id, struct catalog_request *out)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (catalog__prepare(c, "SELECT " REQUEST_COLS " FROM requests WHERE id = ?1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		read_request(st, out);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? HM_ERR_NOT_FOUND : HM_ERR_SQLITE;
}

int catalog_request_decide(struct catalog *c, int64_t id, bool approve, const char *by, const char *note)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (catalog__prepare(c, "UPDATE requests SET state = ?2, decided_at = ?3, decided_by = ?4, note = ?5 "
			     "WHERE id = ?1 AND state = 'pending'", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, approve ? "approved" : "declined", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL));
	if (by)
		sqlite3_bind_text(st, 4, by, -1, SQLITE_STATIC);
	if (note && *note)
		sqlite3_bind_text(st, 5, note, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return HM_ERR_SQLITE;
	return sqlite3_changes(c->db) ? 0 : HM_ERR_NOT_FOUND;
}

int catalog_requests_each(struct catalog *c, const char *state, size_t limit,
			  int (*fn)(void *ud, const struct catalog_request *q), void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	/* pending first (most asked for first), then the decided, newest first */
	if (catalog__prepare(c, "SELECT " REQUEST_COLS " FROM requests WHERE ?1 IS NULL OR state = ?1 "
			     "ORDER BY state != 'pending', CASE WHEN state = 'pending' THEN -votes END, "
			     "coalesce(decided_at, requested_at) DESC, id DESC LIMIT ?2", &st))
		return HM_ERR_SQLITE;
	if (state)
		sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, limit ? (sqlite3_int64)limit : -1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct catalog_request q;
		read_request(st, &q);
		r = fn(ud, &q);
		catalog_request_release(&q);
		if (r)
			break;
	}
	return catalog__rows_end(st, rc, r);
}

int catalog_ondemand_touch(struct catalog *c, int64_t repo_id, int64_t at)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c, "UPDATE repos SET options = json_set(options, '$.on_demand.last', ?2) "
			     "WHERE id = ?1 AND json_type(options, '$.on_demand') = 'object'", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_int64(st, 2, at);
	return catalog__run(st);
}

int catalog_ondemand_expire(struct catalog *c, int64_t before, int (*fn)(void *ud, const char *spec), void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (catalog__prepare(c,
			     "UPDATE repos SET removed_at = unixepoch() WHERE removed_at IS NULL AND "
			     "json_type(options, '$.on_demand') = 'object' AND coalesce(json_extract(options, "
			     "'$.on_demand.last'), json_extract(options, '$.on_demand.at'), 0) < ?1 "
			     "RETURNING hub || ':' || CASE type WHEN 'dataset' THEN 'datasets/' ELSE '' END || name",
			     &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, before);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (!r && fn)
			r = fn(ud, (const char *)sqlite3_column_text(st, 0));
	return catalog__rows_end(st, rc, 0) ? HM_ERR_SQLITE : r;
}

int catalog_requests_pending(struct catalog *c, int64_t *n)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (catalog__prepare(c, "SELECT count(*) FROM requests WHERE state = 'pending'", &st))
		return HM_ERR_SQLITE;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : HM_ERR_SQLITE;
}
