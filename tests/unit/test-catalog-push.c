/*
 * test-catalog-push.c - a git push recorded in the catalog (catalog_local_push, docs/uploads.md): its
 * commits and ref moves in one transaction, each ref moved only from where the pusher saw it; a stale
 * one records nothing at all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "test.h"

static char dir[] = "/tmp/hm-test-catalog-push-XXXXXX";

#define C1 "1111111111111111111111111111111111111111"
#define C2 "2222222222222222222222222222222222222222"
#define C3 "3333333333333333333333333333333333333333"
#define TREE "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
#define SHA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static struct catalog_file file = { .path = "a.txt", .size = 3, .git_oid = C3, .sha256 = SHA };

static struct catalog_push_commit commit(const char *id, const char *parent, const char *raw)
{
	return (struct catalog_push_commit){ { id, parent, TREE, "Ann <a@x>", 1700000000, "m\n", raw }, &file, 1 };
}

static int64_t repo_of(struct catalog *c)
{
	int64_t id = 0;
	struct catalog_push_commit first = commit(C1, NULL, NULL);
	struct catalog_push_ref main_ref = { "main", false, NULL, C1 };

	CHECK_INT(catalog_local_create(c, "hf", "model", "acme/pushed", false, NULL, NULL, NULL, 0, &id), 0);
	CHECK_INT(catalog_local_push(c, id, &first, 1, &main_ref, 1), 0);
	return id;
}

TEST(push_recorded_whole_or_not_at_all)
{
	char *path = xasprintf("%s/catalog.db", dir), *err = NULL, head[41];
	struct catalog *c = NULL;
	struct catalog_commit got;
	int64_t id;
	const char *raw = "tree " TREE "\nparent " C1 "\nauthor Ann <a@x> 1700000000 +0800\n"
			  "committer Bob <b@x> 1700000001 -0500\n\nm\n";
	struct catalog_push_commit two = commit(C2, C1, raw);
	struct catalog_push_ref stale[] = { { "v1", true, NULL, C2 }, { "main", false, C2, C2 } };
	struct catalog_push_ref good[] = { { "v1", true, NULL, C2 }, { "main", false, C1, C2 } };
	struct catalog_push_ref twice = { "v1", true, NULL, C1 };
	struct catalog_push_ref gone = { "v1", true, C2, NULL };

	CHECK_INT(catalog_open(path, &c, &err), 0);
	id = repo_of(c);
	/* main is not at C2: nothing of the push is kept, not even its commit or the tag before it */
	CHECK_INT(catalog_local_push(c, id, &two, 1, stale, 2), HM_ERR_CONFLICT);
	CHECK_INT(catalog_commit_get(c, id, C2, &got), HM_ERR_NOT_FOUND);
	CHECK_INT(catalog_local_head(c, id, "v1", head), HM_ERR_NOT_FOUND);
	CHECK_INT(catalog_local_head(c, id, "main", head), 0);
	CHECK_STR(head, C1);
	/* from where the pusher saw it: the commit, its object, the tag and main together */
	CHECK_INT(catalog_local_push(c, id, &two, 1, good, 2), 0);
	CHECK_INT(catalog_local_head(c, id, "main", head), 0);
	CHECK_STR(head, C2);
	CHECK_INT(catalog_local_head(c, id, "v1", head), 0);
	CHECK_STR(head, C2);
	CHECK_INT(catalog_commit_get(c, id, C2, &got), 0);
	CHECK_STR(got.parent, C1);
	CHECK_STR(got.raw ? got.raw : "", raw);
	catalog_commit_release(&got);
	CHECK_INT(catalog_commit_get(c, id, C1, &got), 0);
	CHECK(got.raw == NULL);
	catalog_commit_release(&got);
	/* a tag made again where it exists is stale too; deleting it from where it is works */
	CHECK_INT(catalog_local_push(c, id, NULL, 0, &twice, 1), HM_ERR_CONFLICT);
	CHECK_INT(catalog_local_push(c, id, NULL, 0, &gone, 1), 0);
	CHECK_INT(catalog_local_head(c, id, "v1", head), HM_ERR_NOT_FOUND);
	catalog_free(&c);
	free(err);
	free(path);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(push_recorded_whole_or_not_at_all);
	{
		char *rm = xasprintf("rm -rf %s", dir);
		if (system(rm) != 0)
			fprintf(stderr, "# could not remove %s\n", dir);
		free(rm);
	}
	return test_done();
}
