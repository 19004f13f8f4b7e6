/*
 * test-base-core.c - errors, buffers, allocation helpers, hex, log levels.
 */
#include <errno.h>
#include <stdlib.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
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

TEST(log_levels)
{
	enum log_level l;

	CHECK_INT(log_parse_level("debug", &l), 0);
	CHECK_INT(l, LOG_LEVEL_DEBUG);
	CHECK_INT(log_parse_level("loud", &l), HM_ERR_USAGE);
}

int main(void)
{
	RUN(err_str_covers_both_ranges);
	RUN(buf_grows_and_detaches);
	RUN(xmalloc_family);
	RUN(hex);
	RUN(log_levels);
	return test_done();
}
