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

/* s split on any of the bytes of seps, as strtok would (a run of them is one; none at either end
 * makes no empty item): a NULL-terminated array of fresh strings (none for s NULL), *n of them when n
 * is not NULL. Free with str_split_free (NULL-safe). The one list splitter: comma lists of options. */
char **str_split(const char *s, const char *seps, size_t *n);
void str_split_free(char **v);

/* Edits between a and b (Levenshtein), for "did you mean"; 99 when either is 63 bytes or longer. */
size_t str_distance(const char *a, const char *b);

#endif
