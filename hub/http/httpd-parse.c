/*
 * httpd-parse.c - the server's parsers of header and URL values that decide what a route sees and
 * what leaves (percent-decoding, Range, If-None-Match): pure functions, unit-tested on their own
 * (tests/unit/test-hub-httpd.c) and fuzzed (tests/fuzz/fuzz-range.c, fuzz-http.c).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/hex.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "httpd.h"

char *httpd_unescape(const char *s, size_t n, bool plus)
{
	struct buf b;

	buf_init(&b);
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (ch == '%') {
			int hi = i + 2 < n ? hex_digit(s[i + 1]) : -1, lo = i + 2 < n ? hex_digit(s[i + 2]) : -1;
			if (hi < 0 || lo < 0) {
				buf_release(&b);
				return NULL;
			}
			ch = (char)(hi * 16 + lo);
			i += 2;
		} else if (plus && ch == '+') {
			ch = ' ';
		}
		if (ch == '\0') {
			buf_release(&b);
			return NULL;
		}
		buf_addch(&b, ch);
	}
	return buf_detach(&b, NULL);
}

int httpd_parse_range(const char *h, int64_t size, int64_t *a, int64_t *b)
{
	char *end;
	long long x, y;

	if (!h || strncasecmp(h, "bytes=", 6) || strchr(h, ','))
		return 0; /* absent, another unit, or several ranges: RFC 9110 lets us send it all */
	h += 6;
	if (*h == '-') {
		y = strtoll(h + 1, &end, 10);
		if (end == h + 1 || *end || y <= 0)
			return 0;
		if (size == 0)
			return -1;
		*a = y >= size ? 0 : size - y;
		*b = size - 1;
		return 1;
	}
	x = strtoll(h, &end, 10);
	if (end == h || *end != '-' || x < 0)
		return 0;
	h = end + 1;
	if (*h) {
		y = strtoll(h, &end, 10);
		if (*end || y < x)
			return 0;
	} else {
		y = size - 1;
	}
	if (x >= size)
		return -1;
	*a = x;
	*b = y >= size ? size - 1 : y;
	return 1;
}

bool httpd_etag_matches(const char *inm, const char *etag)
{
	size_t n;

	if (!inm || !etag)
		return false;
	if (skip_prefix(etag, "W/"))
		etag += 2;
	n = strlen(etag);
	while (*inm) {
		const char *end;
		while (*inm == ' ' || *inm == '\t' || *inm == ',')
			inm++;
		if (*inm == '*')
			return true;
		if (skip_prefix(inm, "W/"))
			inm += 2;
		if (*inm != '"')
			return false;
		end = strchr(inm + 1, '"');
		if (!end)
			return false;
		if ((size_t)(end + 1 - inm) == n && !memcmp(inm, etag, n))
			return true;
		inm = end + 1;
	}
	return false;
}
