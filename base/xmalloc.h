/*
 * xmalloc.h - allocation that never returns NULL.
 *
 * Out of memory is not an error we recover from: these abort the process with a message.
 * Everything they return is owned by the caller and released with free().
 */
#ifndef HM_XMALLOC_H
#define HM_XMALLOC_H

#include <stdarg.h>
#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
/* Like reallocarray: aborts on nmemb * size overflow. */
void *xreallocarray(void *p, size_t nmemb, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a fresh string; xvasprintf with the arguments of a variadic caller. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Free *pp and set it to NULL; accepts NULL and *pp == NULL. */
#define FREE_AND_NULL(pp) do { free(*(pp)); *(pp) = NULL; } while (0)

#endif
