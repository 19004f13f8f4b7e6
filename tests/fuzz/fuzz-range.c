/*
 * fuzz-range.c - the Range header, which decides which bytes of a blob leave. httpd_parse_range: an
 * answer of 1 must name a range inside the file, first byte not after the last; -1 only for a start
 * past the end. httpd_parse_ranges (several explicit ranges, as Xet asks a xorb's): a count in
 * [1, max] of pairs, each inside the body and not backwards, their lengths summing to at most the
 * bound; the pairs past the count, and all of them on a refusal, untouched.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hub/http/httpd.h"

#define RANGES_MAX 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_ranges(const char *h, uint64_t size, uint64_t max_total, size_t max)
{
	uint64_t r[RANGES_MAX + 1][2], total = 0;
	int n;

	memset(r, 0xa5, sizeof(r));
	n = httpd_parse_ranges(h, size, max_total, r, max);
	if (n == 0 || n < -1 || n > (int)max)
		abort();
	for (int i = 0; i < n; i++) {
		if (r[i][0] > r[i][1] || r[i][1] >= size || r[i][1] - r[i][0] >= max_total)
			abort();
		if (total > max_total - (r[i][1] - r[i][0] + 1))
			abort(); /* the sum past the bound (checked so that it cannot wrap) */
		total += r[i][1] - r[i][0] + 1;
	}
	for (size_t i = n > 0 ? (size_t)n : 0; i <= RANGES_MAX; i++)
		if (r[i][0] != 0xa5a5a5a5a5a5a5a5ull || r[i][1] != 0xa5a5a5a5a5a5a5a5ull)
			abort(); /* written only on success, and no further than the count */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int64_t sizes[] = { 0, 1, 2, 100, 65536, INT64_MAX / 2, INT64_MAX };
	static const uint64_t usizes[] = { 0, 1, 100, 65536, UINT64_MAX / 2, UINT64_MAX };
	static const uint64_t totals[] = { 1, 100, 65537, UINT64_MAX };
	char *h = malloc(size + 1);

	memcpy(h, data, size);
	h[size] = '\0';
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int64_t a = -7, b = -7;
		int r = httpd_parse_range(h, sizes[i], &a, &b);
		if (r == 1 && !(a >= 0 && a <= b && b < sizes[i]))
			abort();
		if (r != 1 && (a != -7 || b != -7))
			abort(); /* outputs written only on 1 */
		if (r < -1 || r > 1)
			abort();
	}
	for (size_t i = 0; i < sizeof(usizes) / sizeof(usizes[0]); i++)
		for (size_t k = 0; k < sizeof(totals) / sizeof(totals[0]); k++) {
			check_ranges(h, usizes[i], totals[k], RANGES_MAX);
			check_ranges(h, usizes[i], totals[k], 1);
		}
	free(h);
	return 0;
}
