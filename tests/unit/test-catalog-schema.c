/*
 * test-catalog-schema.c - the catalog opens, migrates to the newest schema once, reopens without
 * redoing work, enforces its constraints, and refuses a database from a newer hubmirror.
 */
#include <stdlib.h>
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

int main(void)
{
	char *cmd;
	int r;

	if (!mkdtemp(dir))
		return 1;
	RUN(open_migrates_and_reopens);
	RUN(refuses_newer_schema);
	RUN(reports_unopenable_path);
	r = test_done();
	cmd = xasprintf("rm -rf %s", dir);
	if (system(cmd) != 0)
		r = 1;
	free(cmd);
	return r;
}
