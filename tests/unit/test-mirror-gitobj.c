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
	n = gitobj_lfs_pointer("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 1234, ptr,
			       sizeof(ptr));
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
	/* a file and a folder of one name with paths between them in sort order (tests/fuzz/fuzz-gitcommit) */
	struct gitobj_file both_apart[] = { { "sub/dir/a.txt", b }, { "sub", b }, { "sub.txt", b }, { "sub-x", b } };
	struct gitobj_file apart_ok[] = { { "sub/dir/a.txt", b }, { "sub.txt", b }, { "sub-x", b }, { "su", b } };
	struct gitobj_file dots[] = { { "a/../b", b } };
	struct gitobj_file empty_seg[] = { { "a//b", b } };
	struct gitobj_file lead[] = { { "/a", b } };

	gitobj_id("blob", "", 0, b);
	CHECK_INT(gitobj_tree_id(dup, 2, tree), -22);
	CHECK_INT(gitobj_tree_id(both, 2, tree), -22);
	CHECK_INT(gitobj_tree_id(both_apart, 4, tree), -22);
	CHECK_INT(gitobj_tree_id(apart_ok, 4, tree), 0);
	CHECK_INT(gitobj_tree_id(dots, 1, tree), -22);
	CHECK_INT(gitobj_tree_id(empty_seg, 1, tree), -22);
	CHECK_INT(gitobj_tree_id(lead, 1, tree), -22);
}

/* A commit git wrote (author and committer apart, their time zones) is read field by field, and git
 * fast-import, given those fields, writes the very same object back. */
TEST(pushed_commit_parsed_and_rebuilt)
{
	const char *raw = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n"
			  "parent 1111111111111111111111111111111111111111\n"
			  "author Ann Dev <ann@example.com> 1700000000 +0800\n"
			  "committer Bob Ops <bob@example.com> 1700003600 -0530\n"
			  "\n"
			  "first checkpoint\n\ntrained 3 epochs\n";
	const char *root = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n"
			   "author A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n\nno newline at the end";
	struct gitobj_commit c;
	const char *why = NULL;
	char id[41], *cmd, *want;

	CHECK_INT(gitobj_commit_parse(raw, strlen(raw), &c, &why), 0);
	CHECK_STR(c.tree, "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
	CHECK_STR(c.parent, "1111111111111111111111111111111111111111");
	CHECK_STR(c.author, "Ann Dev <ann@example.com>");
	CHECK_STR(c.committer_line, "Bob Ops <bob@example.com> 1700003600 -0530");
	CHECK(c.at == 1700000000);
	CHECK_STR(c.message, "first checkpoint\n\ntrained 3 epochs\n");
	gitobj_commit_release(&c);
	CHECK_INT(gitobj_commit_parse(root, strlen(root), &c, &why), 0);
	CHECK_STR(c.parent, "");
	CHECK_STR(c.message, "no newline at the end");
	/* fast-import from the parsed fields: the same id as the object hashed */
	gitobj_id("commit", root, strlen(root), id);
	{
		FILE *f;
		char *path = xasprintf("%s/stream", dir);
		f = fopen(path, "w");
		fprintf(f, "commit refs/heads/x\nauthor %s\ncommitter %s\ndata %zu\n%s\n", c.author_line,
			c.committer_line, strlen(c.message), c.message);
		fclose(f);
		free(path);
	}
	cmd = xasprintf("git init -q --bare fi.git && git --git-dir fi.git fast-import --quiet <stream && "
			"git --git-dir fi.git rev-parse refs/heads/x");
	want = git_says(cmd);
	CHECK_STR(id, want ? want : "");
	free(want);
	free(cmd);
	gitobj_commit_release(&c);
}

/* What fast-import would not write back as it was, or what the mirror does not keep, is refused. */
TEST(unkept_commits_refused)
{
	static const char *const bad[] = {
		/* a merge */
		"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nparent 1111111111111111111111111111111111111111\n"
		"parent 2222222222222222222222222222222222222222\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 "
		"+0000\n\nm\n",
		/* a signature */
		"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n"
		"gpgsig -----BEGIN PGP SIGNATURE-----\n\nm\n",
		/* an encoding */
		"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n"
		"encoding ISO-8859-1\n\nm\n",
		/* no name, a zone out of range, no email, a short tree, no blank line */
		"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n\nm\n",
		"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@x> 1 +9900\ncommitter A <a@x> 1 "
		"+0000\n\nm\n",
		"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A a@x 1 +0000\ncommitter A <a@x> 1 +0000\n\nm\n",
		"tree 4b825dc642\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n\nm\n",
		"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n",
		"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a<b@x> 1 +0000\ncommitter A <a@x> 1 "
		"+0000\n\nm\n",
	};
	struct gitobj_commit c;
	const char *why;
	char nul[] = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 "
		     "+0000\n\na\0b";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		CHECK_INT(gitobj_commit_parse(bad[i], strlen(bad[i]), &c, &why), -22);
		CHECK(why != NULL);
	}
	CHECK_INT(gitobj_commit_parse(nul, sizeof(nul) - 1, &c, &why), -22);
	CHECK(strstr(why, "NUL") != NULL);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(blobs_trees_commits_match_git);
	RUN(empty_tree_and_lfs_pointer);
	RUN(bad_trees_refused);
	RUN(pushed_commit_parsed_and_rebuilt);
	RUN(unkept_commits_refused);
	{
		char *rm = xasprintf("rm -rf %s", dir);
		if (system(rm) != 0)
			fprintf(stderr, "# could not remove %s\n", dir);
		free(rm);
	}
	return test_done();
}
