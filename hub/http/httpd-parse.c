/*
 * httpd-parse.c - the server's parsers of header and URL values that decide what a route sees and
 * what leaves (percent-decoding, Range, a Range of several explicit ranges, If-None-Match): pure
 * functions, unit-tested on their own (tests/unit/test-hub-httpd.c) and fuzzed (tests/fuzz/fuzz-range.c,
 * fuzz-http.c).
 */
#include <limits.h>
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

/* A decimal number at *p into *v, *p moved past it: 0, or -1 for no digit or one that overflows. */
static int ranges_number(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*p = s;
	*v = x;
	return 0;
}

/* Walk the ranges of h; with r, write them there. The count, or -1 (see httpd_parse_ranges). */
static int ranges_walk(const char *h, uint64_t size, uint64_t max_total, size_t max, uint64_t (*r)[2])
{
	uint64_t total = 0;
	size_t n = 0;

	if (!h || strncasecmp(h, "bytes=", 6) || max > INT_MAX)
		return -1;
	h += 6;
	for (;;) {
		uint64_t x, y;
		while (*h == ' ' || *h == '\t')
			h++;
		if (n == max || ranges_number(&h, &x) || *h++ != '-' || ranges_number(&h, &y))
			return -1;
		if (y < x || y >= size || y - x >= max_total || total > max_total - (y - x + 1))
			return -1;
		total += y - x + 1;
		if (r) {
			r[n][0] = x;
			r[n][1] = y;
		}
		n++;
		while (*h == ' ' || *h == '\t')
			h++;
		if (!*h)
			return (int)n;
		if (*h++ != ',')
			return -1;
	}
}

int httpd_parse_ranges(const char *h, uint64_t size, uint64_t max_total, uint64_t (*r)[2], size_t max)
{
	int n = ranges_walk(h, size, max_total, max, NULL);

	if (n > 0)
		ranges_walk(h, size, max_total, max, r);
	return n;
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
