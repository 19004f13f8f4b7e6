/*
 * buf.h - a growable byte buffer, always NUL-terminated so it can be used as a C string.
 *
 * A plain struct: buf_init() before use, buf_release() to free. Appends never fail (they abort on
 * out of memory through xmalloc). data may hold NUL bytes; len counts them.
 */
#ifndef HM_BUF_H
#define HM_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *data;   /* owned; never NULL after buf_init; data[len] == '\0' */
	size_t len;
	size_t cap;   /* allocated bytes, not counting the terminator slot */
};

void buf_init(struct buf *b);
void buf_release(struct buf *b);
/* Make room for at least extra more bytes. */
void buf_grow(struct buf *b, size_t extra);
void buf_add(struct buf *b, const void *data, size_t n);
void buf_adds(struct buf *b, const char *s);
void buf_addch(struct buf *b, char c);
void buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vaddf(struct buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Empty the buffer, keeping its memory. */
void buf_reset(struct buf *b);
/* Take the string out: the caller owns and frees the result; b is left empty and initialised. */
char *buf_detach(struct buf *b, size_t *len);

#endif
