/*
 * test-hub-httpd.c - the HTTP server's parsers that decide what leaves the server: Range (which bytes
 * of a blob), percent-decoding (which path a route sees). The server itself is driven over sockets
 * by the integration tests and by tests/fuzz/fuzz-http.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hub/httpd.h"
#include "test.h"

static int range(const char *h, int64_t size, int64_t *a, int64_t *b)
{
	*a = *b = -7;
	return httpd_parse_range(h, size, a, b);
}

TEST(range_forms)
{
	int64_t a, b;

	CHECK_INT(range("bytes=0-99", 1000, &a, &b), 1);
	CHECK(a == 0 && b == 99);
	CHECK_INT(range("bytes=900-", 1000, &a, &b), 1);          /* open end */
	CHECK(a == 900 && b == 999);
	CHECK_INT(range("bytes=-100", 1000, &a, &b), 1);          /* the last 100 */
	CHECK(a == 900 && b == 999);
	CHECK_INT(range("bytes=-5000", 1000, &a, &b), 1);         /* more than there is: all of it */
	CHECK(a == 0 && b == 999);
	CHECK_INT(range("bytes=10-5000", 1000, &a, &b), 1);       /* the end is cut to the size */
	CHECK(a == 10 && b == 999);
	CHECK_INT(range("BYTES=0-0", 1000, &a, &b), 1);           /* the unit in any case */
	CHECK(a == 0 && b == 0);
}

TEST(range_refusals)
{
	int64_t a, b;

	CHECK_INT(range(NULL, 1000, &a, &b), 0);                  /* absent: the whole body */
	CHECK_INT(range("items=0-1", 1000, &a, &b), 0);           /* another unit */
	CHECK_INT(range("bytes=0-1,5-9", 1000, &a, &b), 0);       /* several ranges: the whole body */
	CHECK_INT(range("bytes=5-1", 1000, &a, &b), 0);           /* backwards */
	CHECK_INT(range("bytes=x-1", 1000, &a, &b), 0);
	CHECK_INT(range("bytes=-0", 1000, &a, &b), 0);
	CHECK_INT(range("bytes=1-2x", 1000, &a, &b), 0);
	CHECK(a == -7 && b == -7);                                /* written only on 1 */
	CHECK_INT(range("bytes=1000-", 1000, &a, &b), -1);        /* starts past the end: 416 */
	CHECK_INT(range("bytes=-1", 0, &a, &b), -1);
	CHECK_INT(range("bytes=99999999999999999999-", 1000, &a, &b), -1); /* saturates, still past */
}

TEST(unescape)
{
	char *s;

	s = httpd_unescape("a%2Fb%20c+d", 11, false);
	CHECK_STR(s, "a/b c+d");
	free(s);
	s = httpd_unescape("a+b", 3, true);                        /* form encoding */
	CHECK_STR(s, "a b");
	free(s);
	s = httpd_unescape("%e6%a8%a1", 9, false);                 /* UTF-8 bytes pass through */
	CHECK_STR(s, "\xe6\xa8\xa1");
	free(s);
	CHECK(httpd_unescape("a%00b", 5, false) == NULL);          /* a NUL would cut the path */
	CHECK(httpd_unescape("%zz", 3, false) == NULL);
	CHECK(httpd_unescape("%4", 2, false) == NULL);             /* a cut escape */
	s = httpd_unescape("abcdef", 3, false);                    /* only n bytes */
	CHECK_STR(s, "abc");
	free(s);
}

TEST(if_none_match)
{
	CHECK(httpd_etag_matches("\"abc\"", "\"abc\""));
	CHECK(httpd_etag_matches("W/\"abc\"", "\"abc\""));            /* weak comparison */
	CHECK(httpd_etag_matches("\"abc\"", "W/\"abc\""));
	CHECK(httpd_etag_matches("\"x\", W/\"abc\"", "\"abc\""));      /* a list */
	CHECK(httpd_etag_matches("*", "\"abc\""));
	CHECK(!httpd_etag_matches("\"abcd\"", "\"abc\""));           /* not a substring match */
	CHECK(!httpd_etag_matches("\"xabc\"", "\"abc\""));
	CHECK(!httpd_etag_matches("abc", "\"abc\""));                /* unquoted: malformed */
	CHECK(!httpd_etag_matches(NULL, "\"abc\""));
	CHECK(!httpd_etag_matches("\"abc", "\"abc\""));             /* unterminated */
}

int main(void)
{
	RUN(range_forms);
	RUN(range_refusals);
	RUN(unescape);
	RUN(if_none_match);
	return test_done();
}
