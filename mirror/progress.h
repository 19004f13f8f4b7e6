/*
 * progress.h - how far a long operation is (verify, export, import: hours on terabytes), for a
 * terminal's progress line. The operation calls fn as it goes, often (per content and per chunk);
 * the caller decides how often to draw. A total of 0 is unknown.
 */
#ifndef HM_MIRROR_PROGRESS_H
#define HM_MIRROR_PROGRESS_H

#include <stdint.h>

struct mirror_progress {
	void (*fn)(void *ud, int64_t done_n, int64_t total_n, int64_t done_bytes, int64_t total_bytes);
	void *ud;
};

static inline void mirror_progress_say(const struct mirror_progress *p, int64_t done_n, int64_t total_n,
				       int64_t done_bytes, int64_t total_bytes)
{
	if (p && p->fn)
		p->fn(p->ud, done_n, total_n, done_bytes, total_bytes);
}

#endif
