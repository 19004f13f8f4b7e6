/*
 * search.c - catalog search: the user's words, bounded, as an FTS5 query over repo_fts (schema v3,
 * v5, v7), ranked by hm_rank (rank.c), filtered, sorted and paged, within a time budget.
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

/*
 * The user's words, bounded (docs/security.md): every run of letters/digits is a word, so punctuation
 * can never be FTS syntax. Each prefix term makes FTS5 expand it over the whole vocabulary, so one
 * request of many words ran for minutes on a single loop: at most CATALOG_SEARCH_MAX_WORDS distinct
 * words (ASCII case folded, as the index folds it) of at most CATALOG_SEARCH_MAX_WORD bytes, and a lone
 * character (which would expand to a sixteenth of the vocabulary) matches as a whole word.
 * Calls fn(ud, word, len) per distinct word, in order; returns the count, or -1 when over a limit
 * (*errmsg set).
 */
static int each_word(const char *q, void (*fn)(void *ud, const char *w, size_t n), void *ud, const char **errmsg)
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
			*errmsg = "a search word is too long (at most 64 bytes)";
			return -1;
		}
		for (int k = 0; k < n && !dup; k++)
			dup = seen_len[k] == (size_t)(p - start) &&
			      !strncasecmp((const char *)seen[k], (const char *)start, seen_len[k]);
		if (dup)
			continue;
		if (n == CATALOG_SEARCH_MAX_WORDS) {
			*errmsg = "too many search words (at most 8)";
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
	const char *errmsg = NULL;

	if (s->q && each_word(s->q, NULL, NULL, &errmsg) < 0)
		return errmsg;
	if (s->sort && *s->sort && strcmp(s->sort, "relevance") && strcmp(s->sort, "name") && strcmp(s->sort, "size") &&
	    strcmp(s->sort, "last_synced") && strcmp(s->sort, "downloads") && strcmp(s->sort, "likes"))
		return "bad sort (relevance, name, size, last_synced, downloads, likes)";
	if (s->sort && !strcmp(s->sort, "relevance") && (!s->q || each_word(s->q, NULL, NULL, &errmsg) <= 0))
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
	const char *errmsg = NULL;

	buf_init(&b);
	if (each_word(q, add_term, &b, &errmsg) <= 0) {
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

/* How a search runs: what the filters and the sort make of the SQL (plan_make). */
struct plan {
	char *fq;          /* the FTS5 query with its facet terms; NULL without words */
	const char *sort;  /* the sort's name */
	const char *order; /* its expression */
	char *from, *where;
	bool index_only;   /* the count and the relevance ranking come from repo_fts alone */
};

/* The FTS5 query for fq (the user's words, taken), with the hub and type filters as facet terms when
 * hub_facet, type_facet. */
static char *match_query(char *fq, const struct catalog_search *s, bool hub_facet, bool type_facet)
{
	char *w = xasprintf("- {facets} : (%s)%s%s%s%s", fq, hub_facet ? " AND facets:hub" : "",
			    hub_facet ? s->hub : "", type_facet ? " AND facets:type" : "", type_facet ? s->type : "");

	free(fq);
	return w;
}

/* The WHERE clause of the filters in use, numbered as search_bind binds them; words: there are words
 * to match. */
static char *where_clause(const struct catalog_search *s, bool words)
{
	return xasprintf("WHERE r.removed_at IS NULL AND %s%s%s%s%s%s%s%s%s%s",
			 words ? "repo_fts MATCH ?1" : "?1 IS NULL",
			 /* with words, FTS must drive the join: a unary + keeps the planner off the (hub, type,
			  * name) index, which would run one FTS query per repo (2 s at 20k repos) */
			 s->hub ? (words ? " AND +r.hub = ?2" : " AND r.hub = ?2") : "",
			 s->type ? (words ? " AND +r.type = ?3" : " AND r.type = ?3") : "",
			 s->org ? " AND substr(r.name, 1, length(?4) + 1) = ?4 || '/'" : "",
			 s->tag ? " AND instr(coalesce(r.tags, ''), json_quote(?5)) > 0" : "",
			 s->status ? " AND r.sync_status = ?6" : "",
			 s->gated >= 0 ? " AND (?7 = 1) = (r.gated IS NOT NULL AND r.gated != 'false')" : "",
			 s->min_size >= 0 ? " AND coalesce(s.total_size, 0) >= ?8" : "",
			 s->max_size >= 0 ? " AND coalesce(s.total_size, 0) <= ?9" : "",
			 s->hidden ? " AND " HIDDEN_CLAUSE("?12") : "");
}

/* The plan of search s into *p (plan_release): its FTS query, its sort, and the SQL's FROM and WHERE.
 * HM_ERR_USAGE for a sort not known, or by relevance without words. */
static int plan_make(const struct catalog_search *s, struct plan *p)
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
	char *fq = s->q ? fts_query(s->q) : NULL;
	bool sized, needs_snap, hub_facet, type_facet;

	/* The user's words never match the facets column; a hub or type filter becomes a facet term, so
	 * FTS5 narrows the matches itself (schema v7). Only known values make a term. */
	hub_facet = s->hub && (!strcmp(s->hub, "hf") || !strcmp(s->hub, "ms"));
	type_facet = s->type && (!strcmp(s->type, "model") || !strcmp(s->type, "dataset"));
	if (fq)
		fq = match_query(fq, s, hub_facet, type_facet);
	if (!sort)
		sort = fq ? "relevance" : "name";
	for (size_t i = 0; i < sizeof(sorts) / sizeof(sorts[0]); i++)
		if (!strcmp(sorts[i].name, sort))
			order = sorts[i].expr;
	if (!order || (!fq && !strcmp(sort, "relevance"))) {
		free(fq);
		return HM_ERR_USAGE;
	}
	/* Only the clauses in use go into the SQL: FTS5's MATCH cannot sit under an OR, and the count
	 * needs the snapshot join only for size bounds (it is most of the cost at 100k repos). */
	sized = s->min_size >= 0 || s->max_size >= 0;
	needs_snap = sized || !strcmp(sort, "size");
	p->fq = fq;
	p->sort = sort;
	p->order = order;
	/* repo_fts holds exactly the live repos (schema v5): words without repo filters (or with hub and
	 * type filters, which are facet terms) count from the index alone, and with the relevance sort
	 * rank from it too. A row lookup in repos per match is what makes a common word slow (13k
	 * matches at 100k repos). */
	p->index_only = fq && (!s->hub || hub_facet) && (!s->type || type_facet) && !s->org && !s->tag && !s->status &&
			s->gated < 0 && !sized && !s->hidden;
	p->from = xasprintf("repos r %s %s", needs_snap ? REPO_JOINS : "",
			    fq ? "JOIN repo_fts ON repo_fts.rowid = r.id" : "");
	p->where = where_clause(s, fq != NULL);
	return 0;
}

/* Frees what plan_make made. */
static void plan_release(struct plan *p)
{
	free(p->where);
	free(p->from);
	free(p->fq);
}

/* The SQL of one pass (malloc'd): 0 counts the matches, 1 reads the page. Two steps for the page: rank
 * only ids (the sorter then holds two columns per match, not 26), then read the full rows of the one
 * page. */
static char *pass_sql(const struct catalog_search *s, const struct plan *p, int pass)
{
	const char *dir = s->desc ? "DESC" : "ASC";

	if (pass == 0)
		return p->index_only ? xstrdup("SELECT count(*) FROM repo_fts WHERE repo_fts MATCH ?1")
				     : xasprintf("SELECT count(*) FROM %s %s", p->from, p->where);
	if (p->index_only && !strcmp(p->sort, "relevance"))
		return xasprintf("SELECT " REPO_SELECT "FROM (SELECT rowid AS pid, %s AS k FROM repo_fts "
				 "WHERE repo_fts MATCH ?1 ORDER BY k %s, pid LIMIT ?10 OFFSET ?11) p "
				 "JOIN repos r ON r.id = p.pid " REPO_JOINS "ORDER BY p.k %s, r.id",
				 p->order, dir, dir);
	return xasprintf("SELECT " REPO_SELECT "FROM (SELECT r.id AS pid, %s AS k FROM %s %s "
			 "ORDER BY k %s, r.id LIMIT ?10 OFFSET ?11) p JOIN repos r ON r.id = p.pid "
			 REPO_JOINS "ORDER BY p.k %s, r.id", p->order, p->from, p->where, dir, dir);
}

/* One pass of search s as planned: 0 counts the matches into *total, 1 hands fn the page's repos.
 * Returns 0, fn's non-zero, HM_ERR_TIMEOUT or HM_ERR_SQLITE. */
static int search_pass(struct catalog *c, const struct catalog_search *s, const struct plan *p, int pass,
		       int (*fn)(void *ud, const struct catalog_repo *r), void *ud, int64_t *total)
{
	char *sql = pass_sql(s, p, pass);
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) {
		free(sql);
		return HM_ERR_SQLITE;
	}
	search_bind(st, s, p->fq);
	if (pass == 0) {
		if ((rc = sqlite3_step(st)) == SQLITE_ROW)
			*total = sqlite3_column_int64(st, 0);
		else
			r = rc == SQLITE_INTERRUPT ? HM_ERR_TIMEOUT : HM_ERR_SQLITE;
	} else {
		sqlite3_bind_int64(st, 10, s->limit ? (sqlite3_int64)s->limit : -1);
		sqlite3_bind_int64(st, 11, (sqlite3_int64)s->offset);
		r = catalog__repo_rows(st, fn, ud);
	}
	sqlite3_finalize(st);
	free(sql);
	return r;
}

int catalog_search(struct catalog *c, const struct catalog_search *s,
		   int (*fn)(void *ud, const struct catalog_repo *r), void *ud, int64_t *total)
{
	struct plan p;
	int64_t deadline = 0, count = 0;
	int r = 0;

	if (catalog_search_refusal(s))
		return HM_ERR_USAGE;
	if (s->budget_ms > 0) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		deadline = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + s->budget_ms;
		sqlite3_progress_handler(c->db, 1000, past_deadline, &deadline);
	}
	if (plan_make(s, &p)) {
		sqlite3_progress_handler(c->db, 0, NULL, NULL);
		return HM_ERR_USAGE;
	}
	for (int pass = total ? 0 : 1; pass < 2 && !r; pass++)
		r = search_pass(c, s, &p, pass, fn, ud, &count);
	if (s->budget_ms > 0)
		sqlite3_progress_handler(c->db, 0, NULL, NULL);
	plan_release(&p);
	if (!r && total)
		*total = count; /* written only when both passes went through */
	return r;
}

