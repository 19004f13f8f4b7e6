/*
 * str.c - string helpers (str.h).
 */
#include <stdlib.h>

#include "str.h"
#include "xmalloc.h"

size_t str_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]), del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(*prev));
	}
	return prev[lb];
}

char **str_split(const char *s, const char *seps, size_t *n)
{
	char **v = xcalloc(1, sizeof(*v));
	size_t k = 0;

	while (s && *s) {
		size_t len;
		s += strspn(s, seps);
		len = strcspn(s, seps);
		if (!len)
			break;
		v = xreallocarray(v, k + 2, sizeof(*v));
		v[k++] = xstrndup(s, len);
		v[k] = NULL;
		s += len;
	}
	if (n)
		*n = k;
	return v;
}

void str_split_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}
