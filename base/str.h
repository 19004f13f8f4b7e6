/*
 * str.h - small string helpers that keep byte counts out of the code.
 */
#ifndef HM_BASE_STR_H
#define HM_BASE_STR_H

#include <stddef.h>
#include <string.h>

/* The rest of s after prefix, or NULL when s does not start with it. */
static inline const char *skip_prefix(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(s, prefix, n) ? NULL : s + n;
}

/* Edits between a and b (Levenshtein), for "did you mean"; 99 when either is 63 bytes or longer. */
size_t str_distance(const char *a, const char *b);

#endif
