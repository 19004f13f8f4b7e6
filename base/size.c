/*
 * size.c - byte counts for people (see size.h).
 */
#include <stdio.h>

#include "size.h"

void size_human(int64_t bytes, char *out, size_t outlen)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	int u = 0;

	if (bytes < 1024) {
		snprintf(out, outlen, "%lld B", (long long)bytes);
		return;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(out, outlen, "%.1f %s", v, units[u]);
}
