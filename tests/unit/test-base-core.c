/*
 * test-base-core.c - errors, buffers, allocation helpers, hex, log levels and lines.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/bug.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "test.h"

TEST(err_str_covers_both_ranges)
{
	CHECK_STR(err_str(0), "success");
	CHECK_STR(err_str(-ENOENT), "No such file or directory");
	CHECK_STR(err_str(HM_ERR_PATH_UNSAFE), "unsafe path");
	CHECK_STR(err_str(HM_ERR_HASH_MISMATCH), "content hash mismatch");
	for (int c = HM_ERR_FIRST; c < HM_ERR_LAST; c++)
		CHECK(strcmp(err_str(c), "unknown error") != 0); /* every project code has text */
	CHECK_STR(err_str(HM_ERR_LAST), "unknown error");
	CHECK_STR(err_str(12345), "unknown error");
}

TEST(buf_grows_and_detaches)
{
	struct buf b;
	char *s;
	size_t n;

	buf_init(&b);
	CHECK_STR(b.data, "");
	for (int i = 0; i < 1000; i++)
		buf_addf(&b, "%d,", i);
	CHECK(b.len > 2000);
	CHECK(b.data[b.len] == '\0');
	CHECK(!strncmp(b.data, "0,1,2,", 6));
	buf_reset(&b);
	CHECK_INT(b.len, 0);
	buf_add(&b, "a\0b", 3);
	CHECK_INT(b.len, 3);
	CHECK(b.data[1] == '\0' && b.data[2] == 'b');
	s = buf_detach(&b, &n);
	CHECK_INT(n, 3);
	CHECK_INT(b.len, 0);
	free(s);
	s = buf_detach(&b, NULL); /* empty buffer detaches to an owned "" */
	CHECK_STR(s, "");
	free(s);
	buf_release(&b);
}

TEST(xmalloc_family)
{
	char *s = xasprintf("%s-%d", "x", 42);
	char *t = xstrndup("abcdef", 3);

	CHECK_STR(s, "x-42");
	CHECK_STR(t, "abc");
	FREE_AND_NULL(&s);
	CHECK(s == NULL);
	free(t);
}

TEST(hex)
{
	unsigned char in[] = { 0x00, 0xab, 0xff, 0x10 };
	char out[9];

	hex_encode(in, 4, out);
	CHECK_STR(out, "00abff10");
	CHECK(hex_is_lower("00abff10", 8));
	CHECK(!hex_is_lower("00ABff10", 8));
	CHECK(!hex_is_lower("00abff1", 8));
	CHECK(!hex_is_lower("00abff100", 8));
	CHECK(!hex_is_lower(NULL, 8));
}

/* BUG_ON: nothing when the condition is false; when true, the place and the condition on stderr and
 * an abort (in a child, its stderr read back through a pipe) */
TEST(bug_on)
{
	int fd[2], st = 0;
	char out[256] = "";
	ssize_t n;
	pid_t pid;

	BUG_ON(1 + 1 == 3);
	CHECK_INT(pipe(fd), 0);
	pid = fork();
	if (pid == 0) {
		dup2(fd[1], 2);
		signal(SIGABRT, SIG_DFL);
		BUG_ON(2 > 1);
		_exit(0);
	}
	close(fd[1]);
	n = read(fd[0], out, sizeof(out) - 1);
	close(fd[0]);
	CHECK(n > 0);
	CHECK_INT(waitpid(pid, &st, 0), pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(out, "BUG at ") && strstr(out, "test-base-core.c:") && strstr(out, ": 2 > 1"));
}

/* str_split: strtok's rule (runs of separators are one, none at the ends makes no empty item) */
TEST(str_split_lists)
{
	size_t n = 9;
	char **v = str_split(" a, b,,c ,", ", ", &n);

	CHECK_INT(n, 3);
	CHECK_STR(v[0], "a");
	CHECK_STR(v[1], "b");
	CHECK_STR(v[2], "c");
	CHECK(v[3] == NULL);
	str_split_free(v);
	v = str_split(NULL, ",", &n);
	CHECK_INT(n, 0);
	CHECK(v && v[0] == NULL);
	str_split_free(v);
	v = str_split(",,,", ",", &n);
	CHECK_INT(n, 0);
	str_split_free(v);
	str_split_free(NULL);
}

TEST(log_levels)
{
	enum log_level l;

	CHECK_INT(log_parse_level("debug", &l), 0);
	CHECK_INT(l, LOG_LEVEL_DEBUG);
	CHECK_INT(log_parse_level("loud", &l), HM_ERR_USAGE);
}

/* A message with control bytes from the network stays one line: a name with a newline cannot forge
 * a line of its own in the log. */
TEST(log_lines_cannot_be_forged)
{
	int fds[2], saved = dup(STDERR_FILENO);
	char got[512] = "";
	ssize_t n;

	CHECK(saved >= 0 && pipe(fds) == 0);
	if (saved < 0)
		return;
	dup2(fds[1], STDERR_FILENO);
	log_msg(LOG_LEVEL_ERROR, "ondemand", "%s: not tracked",
		"acme/x\n2026-01-01T00:00:00Z info  admin: tracking\x1b[2J");
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fds[1]);
	n = read(fds[0], got, sizeof(got) - 1);
	close(fds[0]);
	got[n > 0 ? n : 0] = '\0';
	CHECK(strchr(got, '\n') == got + strlen(got) - 1); /* the only newline ends the line */
	CHECK(strstr(got, "acme/x\\x0a2026-01-01T00:00:00Z info  admin: tracking\\x1b[2J: not tracked") != NULL);
	CHECK(strchr(got, 0x1b) == NULL);
}

int main(void)
{
	RUN(err_str_covers_both_ranges);
	RUN(buf_grows_and_detaches);
	RUN(xmalloc_family);
	RUN(hex);
	RUN(bug_on);
	RUN(str_split_lists);
	RUN(log_levels);
	RUN(log_lines_cannot_be_forged);
	return test_done();
}
