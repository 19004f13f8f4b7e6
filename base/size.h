/*
 * size.h - byte counts for people: "512 B", "99.0 MiB", "1.5 TiB" (binary units, one decimal).
 */
#ifndef HM_BASE_SIZE_H
#define HM_BASE_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* bytes as a short human size into out (at most outlen bytes, NUL included). */
void size_human(int64_t bytes, char *out, size_t outlen);

#endif
