/*
 * test-mirror-gitobj.c - the ids of blobs, trees and commits computed without git are the ones git
 * itself gives the same files and commit (git runs here as the referee).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "mirror/gitobj.h"
#include "test.h"

static char dir[] = "/tmp/hm-test-gitobj-XXXXXX";

/* The first line git prints for cmd, run in dir (NULL on failure). */
static char *git_says(const char *cmd)
{
	char *full = xasprintf("cd %s && %s", dir, cmd), line[256];
	FILE *p = popen(full, "r");
	char *out = NULL;

	free(full);
	if (p && fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		out = xstrdup(line);
	}
	if (p && pclose(p) != 0) {
		free(out);
		out = NULL;
	}
	return out;
}

static void put(const char *path, const char *content)
{
	char *full = xasprintf("%s/%s", dir, path), *slash;
	FILE *f;

	for (slash = strchr(full + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(full, 0755);
		*slash = '/';
	}
	f = fopen(full, "w");
	fputs(content, f);
	fclose(f);
	free(full);
}

/* Paths whose order tells git's tree sort from a naive one: "a.txt" < "a/" < "a0", "a-b" < "a/". */
static const char *const paths[] = { "a/b", "a.txt", "a-b", "a0", "dir/sub/x.bin", "dir/y", "README.md",
				     "empty", "a/c/d" };
static const char *const bodies[] = { "one\n", "two\n", "three\n", "four\n", "five\n", "six\n", "# hi\n", "",
				      "deep\n" };
#define NFILES (sizeof(paths) / sizeof(paths[0]))

TEST(blobs_trees_commits_match_git)
{
	struct gitobj_file files[NFILES];
	char blobs[NFILES][41], tree[41], commit[41], second[41], *want, *text;
	size_t len;

	for (size_t i = 0; i < NFILES; i++) {
		put(paths[i], bodies[i]);
		gitobj_id("blob", bodies[i], strlen(bodies[i]), blobs[i]);
		files[i] = (struct gitobj_file){ paths[i], blobs[i] };
	}
	want = git_says("git init -q . && git add -A && git write-tree");
	CHECK(want != NULL);
	CHECK_INT(gitobj_tree_id(files, NFILES, tree), 0);
	CHECK_STR(tree, want ? want : "");
	free(want);

	text = gitobj_commit_text(tree, NULL, "hubmirror <u@x>", 1700000000, "first\n\nbody\n", &len);
	gitobj_id("commit", text, len, commit);
	free(text);
	want = git_says("GIT_AUTHOR_NAME=hubmirror GIT_AUTHOR_EMAIL=u@x GIT_COMMITTER_NAME=hubmirror "
			"GIT_COMMITTER_EMAIL=u@x GIT_AUTHOR_DATE='1700000000 +0000' "
			"GIT_COMMITTER_DATE='1700000000 +0000' git commit-tree -m first -m body $(git write-tree)");
	CHECK_STR(commit, want ? want : "");
	free(want);

	/* a child commit, with a parent line */
	text = gitobj_commit_text(tree, commit, "hubmirror <u@x>", 1700000060, "second\n", &len);
	gitobj_id("commit", text, len, second);
	free(text);
	{
		char *cmd = xasprintf("GIT_AUTHOR_NAME=hubmirror GIT_AUTHOR_EMAIL=u@x GIT_COMMITTER_NAME=hubmirror "
				      "GIT_COMMITTER_EMAIL=u@x GIT_AUTHOR_DATE='1700000060 +0000' "
				      "GIT_COMMITTER_DATE='1700000060 +0000' git commit-tree -p %s -m second %s",
				      commit, tree);
		want = git_says(cmd);
		free(cmd);
	}
	CHECK_STR(second, want ? want : "");
	free(want);
}

TEST(empty_tree_and_lfs_pointer)
{
	char tree[41], ptr[200], id[41], *want;
	size_t n;

	CHECK_INT(gitobj_tree_id(NULL, 0, tree), 0);
	CHECK_STR(tree, "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
	n = gitobj_lfs_pointer("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 1234, ptr, sizeof(ptr));
	CHECK_STR(ptr, "version https://git-lfs.github.com/spec/v1\noid sha256:"
		       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nsize 1234\n");
	gitobj_id("blob", ptr, n, id);
	put("ptr", ptr);
	want = git_says("git hash-object ptr");
	CHECK_STR(id, want ? want : "");
	free(want);
}

TEST(bad_trees_refused)
{
	char b[41], tree[41];
	struct gitobj_file dup[] = { { "x", b }, { "x", b } };
	struct gitobj_file both[] = { { "x", b }, { "x/y", b } };
	struct gitobj_file dots[] = { { "a/../b", b } };
	struct gitobj_file empty_seg[] = { { "a//b", b } };
	struct gitobj_file lead[] = { { "/a", b } };

	gitobj_id("blob", "", 0, b);
	CHECK_INT(gitobj_tree_id(dup, 2, tree), -22);
	CHECK_INT(gitobj_tree_id(both, 2, tree), -22);
	CHECK_INT(gitobj_tree_id(dots, 1, tree), -22);
	CHECK_INT(gitobj_tree_id(empty_seg, 1, tree), -22);
	CHECK_INT(gitobj_tree_id(lead, 1, tree), -22);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(blobs_trees_commits_match_git);
	RUN(empty_tree_and_lfs_pointer);
	RUN(bad_trees_refused);
	{
		char *rm = xasprintf("rm -rf %s", dir);
		if (system(rm) != 0)
			fprintf(stderr, "# could not remove %s\n", dir);
		free(rm);
	}
	return test_done();
}
