/*
 * test-hub-cache.c - the Hugging Face cache layout a mount links into: refs/<rev> holds the commit,
 * snapshots/<commit>/<path> links to the file; names from the mirror that would leave the cache folder
 * (a revision, a commit, a path) write nothing.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "hub/cache.h"
#include "test.h"

static char *root;
static const char commit[] = "0123456789abcdef0123456789abcdef01234567";

static char *slurp(const char *path)
{
	char buf[256] = "";
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return xstrdup(buf);
}

TEST(links_a_snapshot)
{
	const char *paths[] = { "config.json", "sub/model.bin" };
	char *cache = xasprintf("%s/hf", root), *why = NULL, *ref, *link, *got, target[PATH_MAX];
	ssize_t n;

	CHECK_INT(hub_cache_link_hf(cache, "model", "acme/tiny", "main", commit, "/models/acme/tiny", paths, 2, &why),
		  0);
	CHECK(why == NULL);
	ref = xasprintf("%s/models--acme--tiny/refs/main", cache);
	got = slurp(ref);
	CHECK_STR(got, commit);
	link = xasprintf("%s/models--acme--tiny/snapshots/%s/sub/model.bin", cache, commit);
	n = readlink(link, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	CHECK_STR(target, "/models/acme/tiny/sub/model.bin");
	/* again (a second mount of the same snapshot): the links are replaced, not an error */
	CHECK_INT(hub_cache_link_hf(cache, "model", "acme/tiny", "refs/pr/1", commit, "/mnt/x", paths, 2, NULL), 0);
	free(got);
	got = xasprintf("%s/models--acme--tiny/refs/refs/pr/1", cache);
	CHECK(access(got, F_OK) == 0);
	free(got);
	free(ref);
	free(link);
	free(cache);
}

TEST(writes_nothing_outside)
{
	const char *bad_path[] = { "../../escape" }, *ok_path[] = { "a" };
	char *cache = xasprintf("%s/hf2", root), *why = NULL;

	CHECK_INT(hub_cache_link_hf(cache, "model", "acme/x", "../../../etc", commit, "/m", ok_path, 1, &why),
		  HM_ERR_PATH_UNSAFE);
	CHECK(why != NULL);
	free(why);
	CHECK_INT(hub_cache_link_hf(cache, "model", "acme/x", "main", "../../0123456789abcdef0123456789abcd", "/m",
				    ok_path, 1, NULL), HM_ERR_PATH_UNSAFE);
	CHECK_INT(hub_cache_link_hf(cache, "model", "../x", "main", commit, "/m", ok_path, 1, NULL),
		  HM_ERR_PATH_UNSAFE);
	CHECK_INT(hub_cache_link_hf(cache, "weights", "acme/x", "main", commit, "/m", ok_path, 1, NULL),
		  HM_ERR_PATH_UNSAFE);
	CHECK(access(cache, F_OK) != 0); /* nothing written yet */
	why = NULL;
	CHECK_INT(hub_cache_link_hf(cache, "model", "acme/x", "main", commit, "/m", bad_path, 1, &why),
		  HM_ERR_PATH_UNSAFE);
	free(why);
	free(cache);
}

int main(void)
{
	char tmpl[] = "/tmp/test-hub-cache-XXXXXX";

	root = test_tmpdir(tmpl);
	RUN(links_a_snapshot);
	RUN(writes_nothing_outside);
	test_rmtree(root);
	return test_done();
}
