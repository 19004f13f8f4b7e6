/*
 * fuzz-range.c - the Range header (httpd_parse_range), which decides which bytes of a blob leave:
 * an answer of 1 must name a range inside the file, first byte not after the last; -1 only for a
 * start past the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hub/http/httpd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int64_t sizes[] = { 0, 1, 2, 100, 65536, INT64_MAX / 2, INT64_MAX };
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
	free(h);
	return 0;
}
