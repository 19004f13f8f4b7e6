/*
 * test-catalog-xet.c - where the chunks of upstream's xorbs lie in the store (schema v22, xet_ranges;
 * docs/protocols/xet.md, "Sync through Xet"): recorded in one go, found only in a content the store
 * holds (present), pointed at the newest place when recorded twice, and gone with their blob; and the
 * Xet hash upstream states for a content stored before its identity (v24, xet_stated).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "test.h"

static char dir[] = "/tmp/hm-test-catalog-xet-XXXXXX";

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define XORB "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define H1 "1111111111111111111111111111111111111111111111111111111111111111"
#define H2 "2222222222222222222222222222222222222222222222222222222222222222"

static int exec_sql(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open(path, &db);

	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

static struct catalog_xet_range range(const char *sha, uint32_t chunk, int64_t offset, uint32_t len, const char *h)
{
	struct catalog_xet_range r = { .chunk = chunk, .offset = offset, .length = len };

	snprintf(r.xorb, sizeof(r.xorb), "%s", XORB);
	snprintf(r.sha256, sizeof(r.sha256), "%s", sha);
	snprintf(r.hash, sizeof(r.hash), "%s", h);
	return r;
}

TEST(ranges_found_in_present_blobs_and_gone_with_them)
{
	char *path = xasprintf("%s/catalog.db", dir), *err = NULL;
	struct catalog *c = NULL;
	struct catalog_xet_range rs[2] = { range(SHA_A, 0, 0, 70000, H1), range(SHA_A, 1, 70000, 9000, H2) };
	struct catalog_xet_range moved = range(SHA_B, 1, 5, 9000, H2), got;

	CHECK_INT(catalog_open(path, &c, &err), 0);
	CHECK_INT(catalog_xet_ranges_add(c, rs, 2), 0);
	/* no blob row yet (a crash between the two): not found */
	CHECK_INT(catalog_xet_range_find(c, XORB, 0, &got), HM_ERR_NOT_FOUND);
	CHECK_INT(exec_sql(path, "INSERT INTO blobs (sha256, size, stored_at, present) VALUES "
				 "('" SHA_A "', 79000, 1, 1), ('" SHA_B "', 9005, 1, 0)"),
		  SQLITE_OK);
	CHECK_INT(catalog_xet_range_find(c, XORB, 1, &got), 0);
	CHECK(!strcmp(got.sha256, SHA_A) && got.offset == 70000 && got.length == 9000 && !strcmp(got.hash, H2));
	CHECK_INT(catalog_xet_range_find(c, XORB, 2, &got), HM_ERR_NOT_FOUND);
	/* recorded again, in a content not present: not found there (its old place is forgotten) */
	CHECK_INT(catalog_xet_ranges_add(c, &moved, 1), 0);
	CHECK_INT(catalog_xet_range_find(c, XORB, 1, &got), HM_ERR_NOT_FOUND);
	CHECK_INT(exec_sql(path, "UPDATE blobs SET present = 1 WHERE sha256 = '" SHA_B "'"), SQLITE_OK);
	CHECK_INT(catalog_xet_range_find(c, XORB, 1, &got), 0);
	CHECK(!strcmp(got.sha256, SHA_B) && got.offset == 5);
	/* a blob deleted (gc) takes its ranges with it */
	CHECK_INT(exec_sql(path, "DELETE FROM blobs WHERE sha256 = '" SHA_A "'"), SQLITE_OK);
	CHECK_INT(catalog_xet_range_find(c, XORB, 0, &got), HM_ERR_NOT_FOUND);
	CHECK_INT(exec_sql(path, "INSERT INTO blobs (sha256, size, stored_at, present) VALUES "
				 "('" SHA_A "', 79000, 1, 1)"),
		  SQLITE_OK);
	CHECK_INT(catalog_xet_range_find(c, XORB, 0, &got), HM_ERR_NOT_FOUND);
	catalog_free(&c);
	free(err);
	free(path);
}

/* v24: what upstream states for a content stored before its identity, and what it refuses */
TEST(stated_hash_checks_what_is_recorded)
{
	char *path = xasprintf("%s/stated.db", dir), *err = NULL, out[65], shas[4][65];
	struct catalog *c = NULL;
	int64_t sizes[4];
	bool refused = true;
	size_t n = 9;

	CHECK_INT(catalog_open(path, &c, &err), 0);
	CHECK_INT(exec_sql(path, "INSERT INTO blobs (sha256, size, stored_at, present) VALUES "
				 "('" SHA_A "', 79000, 1, 1), ('" SHA_B "', 9005, 1, 1)"),
		  SQLITE_OK);
	/* both unknown: both left to compute, in sha256 order, from after the cursor */
	CHECK_INT(catalog_xet_unknown(c, "", 4, shas, sizes, &n), 0);
	CHECK(n == 2 && !strcmp(shas[0], SHA_A) && !strcmp(shas[1], SHA_B) && sizes[1] == 9005);
	CHECK_INT(catalog_xet_unknown(c, SHA_A, 4, shas, sizes, &n), 0);
	CHECK(n == 1 && !strcmp(shas[0], SHA_B));
	/* upstream states H1 for A, not yet known: kept, nothing refused */
	CHECK_INT(catalog_xet_stated_set(c, SHA_A, H1), 0);
	CHECK_INT(catalog_xet_stated(c, SHA_A, out, &refused), 0);
	CHECK(!strcmp(out, H1) && !refused);
	/* our bytes make H2: not recorded, the statement refused, and A no longer left to compute */
	CHECK_INT(catalog_blob_set_xet(c, SHA_A, H2), HM_ERR_HASH_MISMATCH);
	CHECK_INT(catalog_blob_xet(c, SHA_A, out), HM_ERR_NOT_FOUND);
	CHECK_INT(catalog_xet_stated(c, SHA_A, out, &refused), 0);
	CHECK(refused);
	CHECK_INT(catalog_xet_unknown(c, "", 4, shas, sizes, &n), 0);
	CHECK(n == 1 && !strcmp(shas[0], SHA_B));
	/* B recorded as H2, then upstream states H1: the record goes, refused */
	CHECK_INT(catalog_blob_set_xet(c, SHA_B, H2), 0);
	CHECK_INT(catalog_xet_stated_set(c, SHA_B, H2), 0);
	CHECK_INT(catalog_blob_xet(c, SHA_B, out), 0);
	CHECK_INT(catalog_xet_stated_set(c, SHA_B, H1), 1);
	CHECK_INT(catalog_blob_xet(c, SHA_B, out), HM_ERR_NOT_FOUND);
	CHECK_INT(catalog_xet_unknown(c, "", 4, shas, sizes, &n), 0);
	CHECK_INT((int)n, 0);
	/* a statement that agrees with the bytes: recorded */
	CHECK_INT(catalog_xet_stated_set(c, SHA_A, H2), 0);
	CHECK_INT(catalog_blob_set_xet(c, SHA_A, H2), 0);
	CHECK_INT(catalog_blob_xet(c, SHA_A, out), 0);
	/* gone with the blob */
	CHECK_INT(exec_sql(path, "DELETE FROM blobs WHERE sha256 = '" SHA_A "'"), SQLITE_OK);
	CHECK_INT(catalog_xet_stated(c, SHA_A, out, &refused), HM_ERR_NOT_FOUND);
	catalog_free(&c);
	free(err);
	free(path);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(ranges_found_in_present_blobs_and_gone_with_them);
	RUN(stated_hash_checks_what_is_recorded);
	{
		char *rm = xasprintf("rm -rf %s", dir);
		if (system(rm) != 0)
			fprintf(stderr, "# could not remove %s\n", dir);
		free(rm);
	}
	return test_done();
}
