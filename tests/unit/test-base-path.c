/*
 * test-base-path.c - the guard that keeps network-supplied names inside the store, fed hostile input.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "test.h"

TEST(accepts_ordinary_paths)
{
	CHECK_INT(path_check_str("config.json"), 0);
	CHECK_INT(path_check_str("data/train/part-00001.parquet"), 0);
	CHECK_INT(path_check_str(".gitattributes"), 0);
	CHECK_INT(path_check_str("a/.hidden/..x/x.."), 0);   /* dots inside names are fine */
	CHECK_INT(path_check_str("unicode/\xe6\xa8\xa1\xe5\x9e\x8b.bin"), 0);
}

TEST(rejects_traversal)
{
	static const char *const bad[] = {
		"..", "../evil", "a/../../b", "a/..", "./a", "a/./b", ".", "a/.",
		"/etc/passwd", "/", "//x", "a//b", "a/", "", "..\\evil", "a\\b",
		"a\nb", "a\tb", "a\x7f" "b", "\x1b[31m",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = path_check_str(bad[i]);
		if (r != HM_ERR_PATH_UNSAFE)
			printf("#   accepted hostile path #%zu\n", i);
		CHECK_INT(r, HM_ERR_PATH_UNSAFE);
	}
	CHECK_INT(path_check_str(NULL), HM_ERR_PATH_UNSAFE);
}

TEST(rejects_embedded_nul)
{
	/* "a\0b" with its real length: a C string API would see only "a". */
	CHECK_INT(path_check("a\0b", 3), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check("a\0/../x", 7), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check("ab", 2), 0);
}

TEST(rejects_oversized)
{
	char *longname = xmalloc(PATH_MAX_COMPONENT + 2);
	char *longpath = xmalloc(PATH_MAX_LEN + 2);

	memset(longname, 'a', PATH_MAX_COMPONENT + 1);
	longname[PATH_MAX_COMPONENT + 1] = '\0';
	CHECK_INT(path_check_str(longname), HM_ERR_PATH_UNSAFE);
	longname[PATH_MAX_COMPONENT] = '\0';
	CHECK_INT(path_check_str(longname), 0);

	for (size_t i = 0; i < PATH_MAX_LEN + 1; i++)
		longpath[i] = (i % 100 == 99) ? '/' : 'b';
	longpath[PATH_MAX_LEN + 1] = '\0';
	CHECK_INT(path_check_str(longpath), HM_ERR_PATH_UNSAFE);
	free(longname);
	free(longpath);
}

/* Names that would break the tree, the swarm or git further down: refused at the one guard. */
TEST(rejects_names_that_break_later)
{
	char deep[64 * 2 + 8] = "";

	/* direction controls: U+202E (RLO) makes "x\u202Egnp.exe" display as "xexe.png" */
	CHECK_INT(path_check_str("x\xe2\x80\xaegnp.exe"), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check_str("a/\xe2\x81\xa6" "b"), HM_ERR_PATH_UNSAFE);   /* U+2066 LRI */
	CHECK_INT(path_check_str("\xe2\x80\x8fz"), HM_ERR_PATH_UNSAFE);    /* U+200F RLM */
	CHECK_INT(path_check_str("em\xe2\x80\x94" "dash"), 0);             /* U+2014: an ordinary mark */
	/* not UTF-8: a lone continuation byte, an overlong '/', a surrogate, a cut sequence */
	CHECK_INT(path_check_str("a\x80"), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check_str("a\xc0\xaf" "b"), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check_str("\xed\xa0\x80"), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check_str("x\xe6\xa8"), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check_str("\xf0\x9f\x98\x80.txt"), 0);          /* U+1F600 */
	/* git's own folder, in any case, anywhere */
	CHECK_INT(path_check_str(".git/config"), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check_str("sub/.GIT/hooks/x"), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check_str(".gitignore"), 0);
	/* what git takes for its folder on NTFS or HFS+, and refuses in a tree (it would break clones) */
	CHECK_INT(path_check_str(".git./x"), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check_str(".GIT . ./x"), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check_str("GIT~1/x"), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check_str("a/git~1"), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check_str(".g\xe2\x80\x8cit/config"), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check_str(".git\xef\xbb\xbf"), HM_ERR_PATH_UNSAFE);
	CHECK_INT(path_check_str("git~2/x"), 0);
	CHECK_INT(path_check_str(".git.d/x"), 0);
	CHECK_INT(path_check_str("\xe2\x80\x8dgitx"), 0);
	CHECK_INT(path_check_str("x.git"), 0);
	/* 64 components pass, 65 do not */
	for (int i = 0; i < 64; i++)
		snprintf(deep + strlen(deep), sizeof(deep) - strlen(deep), "%s", i ? "/d" : "d");
	CHECK_INT(path_check_str(deep), 0);
	snprintf(deep + strlen(deep), sizeof(deep) - strlen(deep), "/d");
	CHECK_INT(path_check_str(deep), HM_ERR_PATH_UNSAFE);
}

TEST(join)
{
	char *out = NULL;

	CHECK_INT(path_join("/data/store/", "a/b.bin", &out), 0);
	CHECK_STR(out, "/data/store/a/b.bin");
	free(out);
	out = NULL;
	CHECK_INT(path_join("/data", "../etc/shadow", &out), HM_ERR_PATH_UNSAFE);
	CHECK(out == NULL);
	CHECK_INT(path_join("/data", "/etc/shadow", &out), HM_ERR_PATH_UNSAFE);
	CHECK(out == NULL);
}

TEST(mkdirs)
{
	char tmpl[] = "/tmp/hm-test-path-XXXXXX";
	char *dir, *file;
	FILE *f;

	CHECK(mkdtemp(tmpl) != NULL);
	dir = xasprintf("%s/x/y/z", tmpl);
	CHECK_INT(path_mkdirs(dir, 0755), 0);
	CHECK_INT(path_mkdirs(dir, 0755), 0); /* idempotent */
	file = xasprintf("%s/x/f", tmpl);
	f = fopen(file, "w");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	free(dir);
	dir = xasprintf("%s/x/f/sub", tmpl);
	CHECK_INT(path_mkdirs(dir, 0755), -ENOTDIR);
	unlink(file);
	free(dir);
	free(file);
	dir = xasprintf("rm -rf %s", tmpl);
	CHECK_INT(system(dir), 0);
	free(dir);
}

TEST(write_and_read_whole_files)
{
	char tmpl[] = "/tmp/hm-test-file-XXXXXX";
	char *dir = test_tmpdir(tmpl), *p = xasprintf("%s/f", dir), *got = NULL;
	size_t len = 0;
	struct stat st;

	CHECK_INT(path_write_atomic(p, "first", 5, 0640), 0);
	CHECK_INT(path_write_atomic(p, "second\0x", 8, 0640), 0); /* replaces it whole */
	CHECK_INT(path_read_file(p, 100, &got, &len), 0);
	CHECK(len == 8 && !memcmp(got, "second\0x", 8) && got[8] == '\0');
	CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0640);
	free(got);
	got = NULL;
	CHECK_INT(path_read_file(p, 7, &got, &len), -EFBIG);
	CHECK(got == NULL);
	CHECK_INT(path_read_file(dir, 100, &got, &len) < 0, 1); /* a folder is no file */
	free(got);
	free(p);
	p = xasprintf("%s/missing/f", dir);
	CHECK_INT(path_write_atomic(p, "x", 1, 0644), -ENOENT);
	CHECK_INT(path_read_file(p, 100, &got, &len), -ENOENT);
	CHECK_INT(test_rmtree(dir), 0);
	free(p);
}

int main(void)
{
	RUN(accepts_ordinary_paths);
	RUN(rejects_traversal);
	RUN(rejects_embedded_nul);
	RUN(rejects_oversized);
	RUN(rejects_names_that_break_later);
	RUN(join);
	RUN(mkdirs);
	RUN(write_and_read_whole_files);
	return test_done();
}
