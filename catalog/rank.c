/*
 * rank.c - hm_rank(), the relevance of a repo to a search, as an FTS5 auxiliary function.
 *
 * FTS5's bm25() reads each match's column sizes from the index's docsize table: one B-tree lookup
 * per match, which at 100,000 repos and a common word (13,000 matches) is most of a search's time.
 * Repo text is short and its columns mean different things, so length normalisation buys little;
 * hm_rank() scores from the match's position lists alone, which FTS5 already holds in memory:
 *
 *   score = sum over query words, over columns with a hit, of  weight(column) * (1 - 0.5^hits)
 *           + for the first hit in the name:  weight(name) * 0.25 / (1 + its token offset)
 *
 * so a word in the name outweighs the same word in the card however often the card repeats it,
 * two query words found beat one, and "qwen-coder" comes before "coder-qwen" for "qwen". Like
 * bm25() the result is negated: ORDER BY hm_rank(...) ascending puts the best first.
 *
 * Usage: hm_rank(repo_fts, w0, w1, ...): one weight per column, in column order; columns without a
 * weight count 1.0. Column 0 is the name.
 */
#include <sqlite3.h>

#include "catalog-int.h"

#define MAX_COLS 16

static void hm_rank(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int nval,
		    sqlite3_value **val)
{
	int phrases = api->xPhraseCount(fts), cols = api->xColumnCount(fts);
	double score = 0, w[MAX_COLS];

	if (cols > MAX_COLS)
		cols = MAX_COLS;
	for (int c = 0; c < cols; c++)
		w[c] = c < nval ? sqlite3_value_double(val[c]) : 1.0;
	for (int p = 0; p < phrases; p++) {
		int hits[MAX_COLS] = { 0 }, first_name_off = -1, col, off;
		Fts5PhraseIter it;

		if (api->xPhraseFirst(fts, p, &it, &col, &off) != SQLITE_OK) {
			sqlite3_result_error(ctx, "hm_rank: cannot read the match", -1);
			return;
		}
		for (; col >= 0; api->xPhraseNext(fts, &it, &col, &off)) {
			if (col >= cols)
				continue;
			hits[col]++;
			if (col == 0 && (first_name_off < 0 || off < first_name_off))
				first_name_off = off;
		}
		for (int c = 0; c < cols; c++) {
			double miss = 1.0;
			for (int h = 0; h < hits[c] && h < 8; h++)
				miss *= 0.5;
			score += w[c] * (1.0 - miss);
		}
		if (first_name_off >= 0 && cols > 0)
			score += w[0] * 0.25 / (1.0 + first_name_off);
	}
	sqlite3_result_double(ctx, -score);
}

int catalog__register_rank(sqlite3 *db)
{
	fts5_api *fts = NULL;
	sqlite3_stmt *st = NULL;
	int rc;

	/* The documented way to reach the FTS5 API of a connection: SELECT fts5(?) with a pointer. */
	if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, NULL) != SQLITE_OK)
		return SQLITE_ERROR;
	sqlite3_bind_pointer(st, 1, (void *)&fts, "fts5_api_ptr", NULL);
	sqlite3_step(st);
	sqlite3_finalize(st);
	if (!fts || fts->iVersion < 2)
		return SQLITE_ERROR;
	rc = fts->xCreateFunction(fts, "hm_rank", NULL, hm_rank, NULL);
	return rc;
}
