/*
 * buf.c - growable buffer. Growth is geometric so appends are amortised O(1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "xmalloc.h"

static char empty_slot[1];

void buf_init(struct buf *b)
{
	b->data = empty_slot; /* no allocation until the first append */
	b->len = 0;
	b->cap = 0;
}

void buf_release(struct buf *b)
{
	if (b->cap)
		free(b->data);
	buf_init(b);
}

void buf_grow(struct buf *b, size_t extra)
{
	size_t want, cap;

	if (extra > (size_t)-1 / 2 - b->len)
		abort(); /* a length this big is a bug, not a workload */
	want = b->len + extra;
	if (want <= b->cap)
		return;
	cap = b->cap ? b->cap : 32;
	while (cap < want)
		cap *= 2;
	if (b->cap) {
		b->data = xrealloc(b->data, cap + 1);
	} else {
		b->data = xmalloc(cap + 1);
		b->data[0] = '\0';
	}
	b->cap = cap;
}

void buf_add(struct buf *b, const void *data, size_t n)
{
	if (!n)
		return;
	buf_grow(b, n);
	memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void buf_addch(struct buf *b, char c)
{
	buf_add(b, &c, 1);
}

void buf_vaddf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	if (!fmt)
		abort(); /* (said, so that -O2 under UBSan's checks knows it: "null format string") */
	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		abort();
	buf_grow(b, (size_t)n);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(b, fmt, ap);
	va_end(ap);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->cap)
		b->data[0] = '\0';
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *s;

	if (len)
		*len = b->len;
	s = b->cap ? b->data : xstrdup("");
	buf_init(b);
	return s;
}
