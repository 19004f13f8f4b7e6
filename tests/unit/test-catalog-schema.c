/*
 * test-catalog-schema.c - the catalog opens, migrates to the newest schema once, reopens without
 * redoing work, enforces its constraints, and refuses a database from a newer hubmirror; search
 * ranks name hits first, keeps removed repos out of its index, and a v4 catalog's index is cleaned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "test.h"

static char dir[] = "/tmp/hm-test-catalog-XXXXXX";

static int exec_sql(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open(path, &db);

	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

static int count_sql(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int n = -1;

	if (sqlite3_open(path, &db) == SQLITE_OK && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

TEST(open_migrates_and_reopens)
{
	char *path = xasprintf("%s/catalog.db", dir);
	struct catalog *c = NULL;
	char *err = NULL;

	CHECK_INT(catalog_open(path, &c, &err), 0);
	CHECK(c != NULL);
	CHECK(catalog_schema_version() >= 1);
	CHECK_INT(catalog_stored_version(c), catalog_schema_version());
	catalog_free(&c);
	CHECK(c == NULL);
	CHECK_INT(catalog_open(path, &c, &err), 0);
	CHECK_INT(catalog_stored_version(c), catalog_schema_version());
	catalog_free(&c);

	/* Constraints hold: unknown hub, and a file pointing at a blob the store does not have. */
	CHECK(exec_sql(path, "PRAGMA foreign_keys=ON; INSERT INTO repos(hub,type,name,follow_rev,added_at) "
			     "VALUES ('gh','model','a/b','main',0)") != SQLITE_OK);
	CHECK_INT(exec_sql(path, "PRAGMA foreign_keys=ON; INSERT INTO repos(hub,type,name,follow_rev,added_at) "
				 "VALUES ('hf','model','a/b','main',0);"
				 "INSERT INTO snapshots(repo_id,commit_id,synced_at,file_count,total_size) "
				 "VALUES (1,'c',0,0,0)"), SQLITE_OK);
	CHECK(exec_sql(path, "PRAGMA foreign_keys=ON; INSERT INTO files(snapshot_id,path,size,sha256) "
			     "VALUES (1,'x',1,'nope')") != SQLITE_OK);
	free(path);
	free(err);
}

TEST(refuses_newer_schema)
{
	char *path = xasprintf("%s/newer.db", dir);
	struct catalog *c = NULL;
	char *err = NULL;

	CHECK_INT(exec_sql(path, "PRAGMA user_version = 9999"), SQLITE_OK);
	CHECK_INT(catalog_open(path, &c, &err), HM_ERR_SCHEMA);
	CHECK(c == NULL);
	CHECK(err != NULL && strstr(err, "newer") != NULL);
	free(err);
	free(path);
}

TEST(reports_unopenable_path)
{
	struct catalog *c = NULL;
	char *err = NULL;

	CHECK_INT(catalog_open("/nonexistent-dir/x/catalog.db", &c, &err), HM_ERR_SQLITE);
	CHECK(c == NULL);
	CHECK(err != NULL);
	free(err);
}

struct names {
	char got[8][64];
	int n;
};

static int collect(void *ud, const struct catalog_repo *r)
{
	struct names *nm = ud;

	if (nm->n < 8)
		snprintf(nm->got[nm->n++], sizeof(nm->got[0]), "%s", r->name);
	return 0;
}

static int64_t search(struct catalog *c, const char *q, const char *hub, struct names *nm)
{
	struct catalog_search s = { .q = q, .hub = hub, .gated = -1, .min_size = -1, .max_size = -1 };
	int64_t total = -1;

	memset(nm, 0, sizeof(*nm));
	if (catalog_search(c, &s, collect, nm, &total))
		return -2;
	return total;
}

TEST(search_ranks_and_forgets_removed)
{
	char *path = xasprintf("%s/search.db", dir);
	struct catalog *c = NULL;
	struct catalog_repo_meta meta = { .private_ = -1, .downloads = -1, .likes = -1 };
	struct catalog_repo r;
	struct names nm;
	char *err = NULL;

	CHECK_INT(catalog_open(path, &c, &err), 0);
	CHECK_INT(catalog_repo_add(c, "hf", "model", "zed/poetry-bot", "main", NULL, NULL, NULL, NULL), 0);
	CHECK_INT(catalog_repo_add(c, "hf", "model", "acme/coder-qwen", "main", NULL, NULL, NULL, NULL), 0);
	CHECK_INT(catalog_repo_add(c, "ms", "model", "acme/qwen-coder", "main", NULL, NULL, NULL, NULL), 0);
	/* the card says qwen three times: still below any name hit */
	meta.card_data = "{\"description\": \"qwen qwen qwen\"}";
	CHECK_INT(catalog_repo_get(c, "hf", "model", "zed/poetry-bot", &r), 0);
	CHECK_INT(catalog_repo_set_sync(c, r.id, "ok", NULL, 1, &meta), 0);
	catalog_repo_release(&r);

	CHECK_INT(search(c, "qwen", NULL, &nm), 3);
	CHECK_STR(nm.got[0], "acme/qwen-coder"); /* earlier in the name */
	CHECK_STR(nm.got[1], "acme/coder-qwen");
	CHECK_STR(nm.got[2], "zed/poetry-bot");
	CHECK_INT(search(c, "qwen cod", NULL, &nm), 2); /* every word must match, each as a prefix */
	CHECK_INT(search(c, "qwen", "hf", &nm), 2);     /* a hub is a facet term: ranked in the index */
	CHECK_STR(nm.got[0], "acme/coder-qwen");
	CHECK_INT(search(c, "qwen", "ms", &nm), 1);
	CHECK_INT(search(c, "hubhf", NULL, &nm), 0);    /* user words never match the facets */
	CHECK_INT(search(c, "model", NULL, &nm), 0);

	/* removed: out of the results and of the index; tracked again: back */
	CHECK_INT(catalog_repo_remove(c, "hf", "model", "acme/coder-qwen"), 0);
	CHECK_INT(search(c, "qwen", NULL, &nm), 2);
	CHECK_INT(search(c, "qwen", "hf", &nm), 1);
	CHECK_INT(count_sql(path, "SELECT count(*) FROM repo_fts WHERE repo_fts MATCH 'coder'"), 1);
	CHECK_INT(catalog_repo_add(c, "hf", "model", "acme/coder-qwen", "main", NULL, NULL, NULL, NULL), 0);
	CHECK_INT(search(c, "qwen", NULL, &nm), 3);
	/* a sync status update does not rewrite the index row, and the row still matches */
	CHECK_INT(catalog_repo_get(c, "ms", "model", "acme/qwen-coder", &r), 0);
	CHECK_INT(catalog_repo_set_sync(c, r.id, "error", "boom", 2, NULL), 0);
	catalog_repo_release(&r);
	CHECK_INT(search(c, "coder", NULL, &nm), 2);
	catalog_free(&c);

	/* a catalog written at v4 with a removed repo still in the index: v5 takes it out */
	CHECK_INT(
		exec_sql(path,
			 "PRAGMA user_version = 4; DROP TABLE torrents; DROP TABLE blob_fetches;"
			 "ALTER TABLE repos DROP COLUMN refs_policy; ALTER TABLE repos DROP COLUMN refs_checked_at;"
			 "DROP INDEX repos_by_upstream_name; ALTER TABLE repos DROP COLUMN upstream_name;"
			 "ALTER TABLE snapshots DROP COLUMN pinned_at; DROP TABLE requests; ALTER TABLE blobs DROP "
			 "COLUMN present;"
			 "ALTER TABLE repos DROP COLUMN tier; ALTER TABLE repos DROP COLUMN upstream;"
			 "ALTER TABLE repos DROP COLUMN origin_checked_at; ALTER TABLE repos DROP COLUMN created_at;"
			 "ALTER TABLE repos DROP COLUMN last_ok_at; ALTER TABLE repos DROP COLUMN local; DROP TABLE "
			 "commits;"
			 "DROP TABLE holds; DROP TABLE oci_tars; DROP TRIGGER blob_xet_gone; DROP TABLE blob_xet;"
			 "DROP TRIGGER xet_ranges_gone; DROP TABLE xet_ranges;"
			 "DROP TRIGGER xet_dedup_gone; DROP TABLE xet_dedup;"
			 "DROP TRIGGER xet_stated_gone; DROP TABLE xet_stated;"
			 "UPDATE repos SET sync_status = 'ok', last_sync_at = 77 WHERE name = 'acme/qwen-coder';"
			 "UPDATE repos SET removed_at = 5 WHERE name = 'zed/poetry-bot';"
			 "INSERT INTO repo_fts (rowid, name) SELECT id, name FROM repos WHERE name = 'zed/poetry-bot';"
			 "DROP TRIGGER repos_fts_ai; DROP TRIGGER repos_fts_au;"
			 "CREATE TRIGGER repos_fts_ai AFTER INSERT ON repos BEGIN SELECT 1; END;"
			 "CREATE TRIGGER repos_fts_au AFTER UPDATE ON repos BEGIN SELECT 1; END;"),
		SQLITE_OK);
	CHECK_INT(catalog_open(path, &c, &err), 0);
	if (!c) {
		free(err);
		free(path);
		return;
	}
	CHECK_INT(catalog_stored_version(c), catalog_schema_version());
	CHECK_INT(search(c, "poetry", NULL, &nm), 0);
	CHECK_INT(search(c, "qwen", NULL, &nm), 2);
	/* v16: a repo whose last sync was ok has that time as its last success */
	CHECK_INT(catalog_repo_get(c, "ms", "model", "acme/qwen-coder", &r), 0);
	CHECK_INT(r.last_ok_at, 77);
	catalog_repo_release(&r);
	catalog_free(&c);
	free(err);
	free(path);
}

int main(void)
{
	int r;

	test_tmpdir(dir);
	RUN(open_migrates_and_reopens);
	RUN(refuses_newer_schema);
	RUN(reports_unopenable_path);
	RUN(search_ranks_and_forgets_removed);
	r = test_done();
	if (test_rmtree(dir))
		r = 1;
	return r;
}
