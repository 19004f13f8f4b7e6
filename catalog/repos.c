/*
 * repos.c - tracked repositories: add, remove, get, list.
 */
#include <ctype.h>
#include <stdlib.h>
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

/* Columns in the order read_repo() expects; the head snapshot comes from the followed ref. */
#define REPO_SELECT \
	"r.id, r.hub, r.type, r.name, r.follow_rev, r.include_globs, r.exclude_globs, r.options, " \
	"r.added_at, r.sync_status, r.sync_error, coalesce(r.last_sync_at, 0), s.commit_id, " \
	"coalesce(s.file_count, 0), coalesce(s.total_size, 0), s.selection, " \
	"r.gated, coalesce(r.private, -1), r.card_data, r.tags, r.pipeline_tag, r.library_name, r.license, " \
	"coalesce(r.downloads, -1), coalesce(r.likes, -1), r.last_modified "
#define REPO_JOINS \
	"LEFT JOIN refs f ON f.repo_id = r.id AND f.name = r.follow_rev " \
	"LEFT JOIN snapshots s ON s.id = f.snapshot_id "
#define REPO_COLUMNS REPO_SELECT "FROM repos r " REPO_JOINS

static void read_repo(sqlite3_stmt *st, struct catalog_repo *r)
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

	/* Was it tracked before? (Only to answer *created; the upsert below is one statement.) */
	if (sqlite3_prepare_v2(c->db, "SELECT removed_at IS NULL FROM repos WHERE hub=?1 AND type=?2 AND name=?3",
			       -1, &st, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_text(st, 1, hub, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, type, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		existed = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	st = NULL;

	if (sqlite3_prepare_v2(c->db,
		"INSERT INTO repos (hub, type, name, follow_rev, include_globs, exclude_globs, options, added_at) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
		"ON CONFLICT (hub, type, name) DO UPDATE SET follow_rev = excluded.follow_rev, "
		"include_globs = excluded.include_globs, exclude_globs = excluded.exclude_globs, "
		"options = excluded.options, removed_at = NULL",
		-1, &st, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_text(st, 1, hub, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, type, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
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
	int r = HM_ERR_SQLITE;

	if (sqlite3_prepare_v2(c->db, "UPDATE repos SET removed_at = ?4 "
			       "WHERE hub=?1 AND type=?2 AND name=?3 AND removed_at IS NULL", -1, &st, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_text(st, 1, hub, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, type, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
	if (sqlite3_step(st) != SQLITE_DONE)
		goto out;
	r = sqlite3_changes(c->db) ? 0 : HM_ERR_NOT_FOUND;
out:
	sqlite3_finalize(st);
	return r;
}

static const char sql_repo_tracked[] =
	"SELECT " REPO_COLUMNS "WHERE r.hub=?1 AND r.type=?2 AND r.name=?3 AND r.removed_at IS NULL";
static const char sql_repo_any[] = "SELECT " REPO_COLUMNS "WHERE r.hub=?1 AND r.type=?2 AND r.name=?3";

static const char sql_repo_of_snapshot[] =
	"SELECT " REPO_COLUMNS "WHERE r.id = (SELECT repo_id FROM snapshots WHERE id = ?1)";

/* Step a bound single-row repo statement from the cache into out. */
static int repo_row(sqlite3_stmt *st, struct catalog_repo *out)
{
	int r = HM_ERR_SQLITE, rc = sqlite3_step(st);

	if (rc == SQLITE_ROW) {
		read_repo(st, out);
		r = 0;
	} else if (rc == SQLITE_DONE) {
		r = HM_ERR_NOT_FOUND;
	}
	sqlite3_reset(st);
	return r;
}

static int repo_get(struct catalog *c, const char *hub, const char *type, const char *name, bool tracked_only,
		    struct catalog_repo *out)
{
	sqlite3_stmt *st = catalog__cached(c, tracked_only ? sql_repo_tracked : sql_repo_any);

	if (!st)
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, hub, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, type, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
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

/* A repo not among the keys of the JSON array bound at P (NULL: none hidden). */
#define HIDDEN_CLAUSE(P) "(" P " IS NULL OR (r.hub || ':' || r.type || ':' || r.name) NOT IN (SELECT value FROM json_each(" P ")))"

int catalog_repos_each(struct catalog *c, const char *hub, const char *type, const char *search,
		       const char *author, const char *after, size_t limit, const char *hidden,
		       int (*fn)(void *ud, const struct catalog_repo *r), void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (sqlite3_prepare_v2(c->db, "SELECT " REPO_COLUMNS
			       "WHERE r.hub = ?1 AND r.type = ?2 AND s.id IS NOT NULL "
			       "AND (?3 IS NULL OR instr(lower(r.name), lower(?3)) > 0) "
			       "AND (?4 IS NULL OR substr(r.name, 1, length(?4) + 1) = ?4 || '/') "
			       "AND r.name > ?5 AND " HIDDEN_CLAUSE("?7") " ORDER BY r.name LIMIT ?6", -1, &st, NULL) != SQLITE_OK)
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
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct catalog_repo repo = { 0 };
		read_repo(st, &repo);
		r = fn(ud, &repo);
		catalog_repo_release(&repo);
		if (r)
			break;
	}
	if (!r && rc != SQLITE_DONE)
		r = HM_ERR_SQLITE;
	sqlite3_finalize(st);
	return r;
}

int catalog_repo_list(struct catalog *c, struct catalog_repo **out, size_t *n)
{
	sqlite3_stmt *st = NULL;
	struct catalog_repo *list = NULL;
	size_t len = 0, cap = 0;
	int rc;

	if (sqlite3_prepare_v2(c->db, "SELECT " REPO_COLUMNS "WHERE r.removed_at IS NULL "
			       "ORDER BY r.hub, r.type, r.name", -1, &st, NULL) != SQLITE_OK)
		return HM_ERR_SQLITE;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (len == cap) {
			cap = cap ? cap * 2 : 16;
			list = xreallocarray(list, cap, sizeof(*list));
		}
		memset(&list[len], 0, sizeof(*list));
		read_repo(st, &list[len++]);
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

const char *catalog_errmsg(struct catalog *c)
{
	return sqlite3_errmsg(c->db);
}

/*
 * The user's words, bounded (docs/security.md): every run of letters/digits is a word, so punctuation
 * can never be FTS syntax. Each prefix term makes FTS5 expand it over the whole vocabulary, so one
 * request of many words ran for minutes on a single loop: at most CATALOG_SEARCH_MAX_WORDS distinct
 * words (ASCII case folded, as the index folds it) of at most CATALOG_SEARCH_MAX_WORD bytes, and a lone
 * character (which would expand to a sixteenth of the vocabulary) matches as a whole word.
 * Calls fn(ud, word, len) per distinct word, in order; returns the count, or -1 when over a limit
 * (*why set).
 */
static int each_word(const char *q, void (*fn)(void *ud, const char *w, size_t n), void *ud, const char **why)
{
	const unsigned char *p = (const unsigned char *)q;
	const unsigned char *seen[CATALOG_SEARCH_MAX_WORDS];
	size_t seen_len[CATALOG_SEARCH_MAX_WORDS];
	int n = 0;

	while (*p) {
		const unsigned char *start;
		bool dup = false;
		while (*p && !(isalnum(*p) || *p >= 0x80))
			p++;
		start = p;
		while (*p && (isalnum(*p) || *p >= 0x80))
			p++;
		if (p == start)
			continue;
		if ((size_t)(p - start) > CATALOG_SEARCH_MAX_WORD) {
			*why = "a search word is too long (at most 64 bytes)";
			return -1;
		}
		for (int k = 0; k < n && !dup; k++)
			dup = seen_len[k] == (size_t)(p - start) && !strncasecmp((const char *)seen[k], (const char *)start, seen_len[k]);
		if (dup)
			continue;
		if (n == CATALOG_SEARCH_MAX_WORDS) {
			*why = "too many search words (at most 8)";
			return -1;
		}
		seen[n] = start;
		seen_len[n++] = (size_t)(p - start);
		if (fn)
			fn(ud, (const char *)start, (size_t)(p - start));
	}
	return n;
}

const char *catalog_search_refusal(const struct catalog_search *s)
{
	const char *why = NULL;

	if (s->q && each_word(s->q, NULL, NULL, &why) < 0)
		return why;
	if (s->sort && *s->sort && strcmp(s->sort, "relevance") && strcmp(s->sort, "name") && strcmp(s->sort, "size") &&
	    strcmp(s->sort, "last_synced") && strcmp(s->sort, "downloads") && strcmp(s->sort, "likes"))
		return "bad sort (relevance, name, size, last_synced, downloads, likes)";
	if (s->sort && !strcmp(s->sort, "relevance") && (!s->q || each_word(s->q, NULL, NULL, &why) <= 0))
		return "sort=relevance needs words to search";
	return NULL;
}

static void add_term(void *ud, const char *w, size_t n)
{
	struct buf *b = ud;

	if (b->len)
		buf_addch(b, ' ');
	buf_addch(b, '"');
	buf_add(b, w, n);
	buf_adds(b, n > 1 ? "\"*" : "\"");
}

/* The FTS5 query of q (see each_word), malloc'd; NULL when no word is left or q is refused. */
static char *fts_query(const char *q)
{
	struct buf b;
	const char *why = NULL;

	buf_init(&b);
	if (each_word(q, add_term, &b, &why) <= 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

/* sqlite's progress handler: interrupt the statement once the clock passes the deadline. */
static int past_deadline(void *ud)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 > *(int64_t *)ud;
}

/* The filters of s as the search's statements number them (?1 the FTS query, ?10/?11 the page). */
static void search_bind(sqlite3_stmt *st, const struct catalog_search *s, const char *fq)
{
	if (fq)
		sqlite3_bind_text(st, 1, fq, -1, SQLITE_STATIC);
	if (s->hub)
		sqlite3_bind_text(st, 2, s->hub, -1, SQLITE_STATIC);
	if (s->type)
		sqlite3_bind_text(st, 3, s->type, -1, SQLITE_STATIC);
	if (s->org)
		sqlite3_bind_text(st, 4, s->org, -1, SQLITE_STATIC);
	if (s->tag)
		sqlite3_bind_text(st, 5, s->tag, -1, SQLITE_STATIC);
	if (s->status)
		sqlite3_bind_text(st, 6, s->status, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 7, s->gated);
	sqlite3_bind_int64(st, 8, s->min_size);
	sqlite3_bind_int64(st, 9, s->max_size);
	if (s->hidden)
		sqlite3_bind_text(st, 12, s->hidden, -1, SQLITE_STATIC);
}

/* Run a page statement: fn gets each row's repo. Returns 0, fn's non-zero, HM_ERR_TIMEOUT (the
 * progress handler interrupted it) or HM_ERR_SQLITE. */
static int search_rows(sqlite3_stmt *st, int (*fn)(void *ud, const struct catalog_repo *r), void *ud)
{
	int r = 0, rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct catalog_repo repo = { 0 };
		read_repo(st, &repo);
		r = fn(ud, &repo);
		catalog_repo_release(&repo);
		if (r)
			return r;
	}
	return rc == SQLITE_DONE ? 0 : rc == SQLITE_INTERRUPT ? HM_ERR_TIMEOUT : HM_ERR_SQLITE;
}

int catalog_search(struct catalog *c, const struct catalog_search *s,
		   int (*fn)(void *ud, const struct catalog_repo *r), void *ud, int64_t *total)
{
	static const struct { const char *name, *expr; } sorts[] = {
		/* name, author, tags, pipeline tag, library, license, card: a hit in the name counts most */
		{ "relevance", "hm_rank(repo_fts, 10.0, 5.0, 3.0, 2.0, 2.0, 1.0, 0.5, 0.0)" },
		{ "name", "r.name" },
		{ "size", "coalesce(s.total_size, 0)" },
		{ "last_synced", "coalesce(r.last_sync_at, 0)" },
		{ "downloads", "coalesce(r.downloads, 0)" },
		{ "likes", "coalesce(r.likes, 0)" },
	};
	const char *order = NULL, *sort = s->sort && *s->sort ? s->sort : NULL;
	char *fq = NULL, *sql = NULL, *where, *from;
	sqlite3_stmt *st = NULL;
	bool sized, needs_snap, index_only, hub_facet, type_facet;
	int r = 0, rc;
	int64_t deadline = 0;

	if (catalog_search_refusal(s))
		return HM_ERR_USAGE;
	fq = s->q ? fts_query(s->q) : NULL;
	if (s->budget_ms > 0) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		deadline = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + s->budget_ms;
		sqlite3_progress_handler(c->db, 1000, past_deadline, &deadline);
	}

	/* The user's words never match the facets column; a hub or type filter becomes a facet term, so
	 * FTS5 narrows the matches itself (schema v7). Only known values make a term. */
	hub_facet = s->hub && (!strcmp(s->hub, "hf") || !strcmp(s->hub, "ms"));
	type_facet = s->type && (!strcmp(s->type, "model") || !strcmp(s->type, "dataset"));
	if (fq) {
		char *w = xasprintf("- {facets} : (%s)%s%s%s%s", fq, hub_facet ? " AND facets:hub" : "",
				    hub_facet ? s->hub : "", type_facet ? " AND facets:type" : "", type_facet ? s->type : "");
		free(fq);
		fq = w;
	}
	if (!sort)
		sort = fq ? "relevance" : "name";
	for (size_t i = 0; i < sizeof(sorts) / sizeof(sorts[0]); i++)
		if (!strcmp(sorts[i].name, sort))
			order = sorts[i].expr;
	if (!order || (!fq && !strcmp(sort, "relevance"))) {
		free(fq);
		sqlite3_progress_handler(c->db, 0, NULL, NULL);
		return HM_ERR_USAGE;
	}
	/* Only the clauses in use go into the SQL: FTS5's MATCH cannot sit under an OR, and the count
	 * needs the snapshot join only for size bounds (it is most of the cost at 100k repos). */
	sized = s->min_size >= 0 || s->max_size >= 0;
	needs_snap = sized || !strcmp(sort, "size");
	/* repo_fts holds exactly the live repos (schema v5): words without repo filters (or with hub and
	 * type filters, which are facet terms) count from the index alone, and with the relevance sort
	 * rank from it too. A row lookup in repos per match is what makes a common word slow (13k
	 * matches at 100k repos). */
	index_only = fq && (!s->hub || hub_facet) && (!s->type || type_facet) && !s->org && !s->tag && !s->status &&
		     s->gated < 0 && !sized && !s->hidden;
	from = xasprintf("repos r %s %s", needs_snap ? REPO_JOINS : "", fq ? "JOIN repo_fts ON repo_fts.rowid = r.id" : "");
	where = xasprintf("WHERE r.removed_at IS NULL AND %s%s%s%s%s%s%s%s%s%s",
			  fq ? "repo_fts MATCH ?1" : "?1 IS NULL",
			  /* with words, FTS must drive the join: a unary + keeps the planner off the (hub, type,
			   * name) index, which would run one FTS query per repo (2 s at 20k repos) */
			  s->hub ? (fq ? " AND +r.hub = ?2" : " AND r.hub = ?2") : "",
			  s->type ? (fq ? " AND +r.type = ?3" : " AND r.type = ?3") : "",
			  s->org ? " AND substr(r.name, 1, length(?4) + 1) = ?4 || '/'" : "",
			  s->tag ? " AND instr(coalesce(r.tags, ''), json_quote(?5)) > 0" : "",
			  s->status ? " AND r.sync_status = ?6" : "",
			  s->gated >= 0 ? " AND (?7 = 1) = (r.gated IS NOT NULL AND r.gated != 'false')" : "",
			  s->min_size >= 0 ? " AND coalesce(s.total_size, 0) >= ?8" : "",
			  s->max_size >= 0 ? " AND coalesce(s.total_size, 0) <= ?9" : "",
			  s->hidden ? " AND " HIDDEN_CLAUSE("?12") : "");
	for (int pass = total ? 0 : 1; pass < 2 && !r; pass++) {
		free(sql);
		/* Two steps: rank only ids (the sorter then holds two columns per match, not 26), then read
		 * the full rows of the one page. */
		if (pass == 0)
			sql = index_only ? xstrdup("SELECT count(*) FROM repo_fts WHERE repo_fts MATCH ?1")
					 : xasprintf("SELECT count(*) FROM %s %s", from, where);
		else if (index_only && !strcmp(sort, "relevance"))
			sql = xasprintf("SELECT " REPO_SELECT "FROM (SELECT rowid AS pid, %s AS k FROM repo_fts "
					"WHERE repo_fts MATCH ?1 ORDER BY k %s, pid LIMIT ?10 OFFSET ?11) p "
					"JOIN repos r ON r.id = p.pid " REPO_JOINS "ORDER BY p.k %s, r.id", order,
					s->desc ? "DESC" : "ASC", s->desc ? "DESC" : "ASC");
		else
			sql = xasprintf("SELECT " REPO_SELECT "FROM (SELECT r.id AS pid, %s AS k FROM %s %s "
					"ORDER BY k %s, r.id LIMIT ?10 OFFSET ?11) p JOIN repos r ON r.id = p.pid "
					REPO_JOINS "ORDER BY p.k %s, r.id", order, from, where,
					s->desc ? "DESC" : "ASC", s->desc ? "DESC" : "ASC");
		if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) {
			r = HM_ERR_SQLITE;
			break;
		}
		search_bind(st, s, fq);
		if (pass == 0) {
			if ((rc = sqlite3_step(st)) == SQLITE_ROW)
				*total = sqlite3_column_int64(st, 0);
			else
				r = rc == SQLITE_INTERRUPT ? HM_ERR_TIMEOUT : HM_ERR_SQLITE;
		} else {
			sqlite3_bind_int64(st, 10, s->limit ? (sqlite3_int64)s->limit : -1);
			sqlite3_bind_int64(st, 11, (sqlite3_int64)s->offset);
			r = search_rows(st, fn, ud);
		}
		sqlite3_finalize(st);
		st = NULL;
	}
	if (s->budget_ms > 0)
		sqlite3_progress_handler(c->db, 0, NULL, NULL);
	free(sql);
	free(where);
	free(from);
	free(fq);
	return r;
}

int catalog_totals(struct catalog *c, struct catalog_totals *out)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_SQLITE;

	memset(out, 0, sizeof(*out));
	if (sqlite3_prepare_v2(c->db,
		"SELECT (SELECT count(*) FROM repos WHERE removed_at IS NULL),"
		" (SELECT count(*) FROM repos r JOIN refs f ON f.repo_id = r.id AND f.name = r.follow_rev WHERE r.removed_at IS NULL),"
		" (SELECT count(*) FROM snapshots), (SELECT count(*) FROM files),"
		" (SELECT count(*) FROM blobs), (SELECT coalesce(sum(size), 0) FROM blobs),"
		" (SELECT coalesce(sum(s.total_size), 0) FROM refs f JOIN snapshots s ON s.id = f.snapshot_id),"
		" (SELECT coalesce(sum(total_size), 0) FROM snapshots)", -1, &st, NULL) != SQLITE_OK)
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

	if (sqlite3_prepare_v2(c->db, "SELECT id, started_at, coalesce(ended_at, 0), outcome, repos_ok, repos_failed, "
			       "files_fetched, bytes_fetched FROM sync_runs ORDER BY started_at DESC, id DESC LIMIT ?1",
			       -1, &st, NULL) != SQLITE_OK)
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
	if (!r && rc != SQLITE_DONE)
		r = HM_ERR_SQLITE;
	sqlite3_finalize(st);
	return r;
}

int catalog_snapshots_each(struct catalog *c, int64_t repo_id,
			   int (*fn)(void *ud, const char *commit, int64_t synced_at, int64_t files, int64_t size),
			   void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (sqlite3_prepare_v2(c->db, "SELECT commit_id, synced_at, file_count, total_size FROM snapshots "
			       "WHERE repo_id = ?1 ORDER BY synced_at DESC, id DESC", -1, &st, NULL) != SQLITE_OK)
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = fn(ud, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
		       sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3));
		if (r)
			break;
	}
	if (!r && rc != SQLITE_DONE)
		r = HM_ERR_SQLITE;
	sqlite3_finalize(st);
	return r;
}

int catalog_run_totals(struct catalog *c,
		       int (*fn)(void *ud, const char *outcome, int64_t runs, int64_t files, int64_t bytes), void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (sqlite3_prepare_v2(c->db, "SELECT coalesce(outcome, 'running'), count(*), sum(files_fetched), "
			       "sum(bytes_fetched) FROM sync_runs GROUP BY 1 ORDER BY 1", -1, &st, NULL) != SQLITE_OK)
		return HM_ERR_SQLITE;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = fn(ud, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
		       sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3));
		if (r)
			break;
	}
	if (!r && rc != SQLITE_DONE)
		r = HM_ERR_SQLITE;
	sqlite3_finalize(st);
	return r;
}
