/*
 * store-int.h - between store.c and store-xet.c (mirror/ only): what the writer hands the identity
 * file's code, and the one helper both read blobs with.
 */
#ifndef HM_MIRROR_STORE_INT_H
#define HM_MIRROR_STORE_INT_H

#include <stddef.h>
#include <stdint.h>

struct mirror_store;
struct xet_identity;

/* The store's root folder. */
const char *mirror__store_dir(const struct mirror_store *s);
/* Read fd from its start to its end in 1 MiB chunks, each passed to fn (a non-zero return stops).
 * Returns 0 with the bytes read in *total, fn's non-zero, or -errno. */
int mirror__store_read_chunks(int fd, int (*fn)(void *ud, const void *data, size_t n), void *ud, int64_t *total);
/* Write id (finished) as blob sha256's identity file, atomically. 0 or -errno. */
int mirror__store_xet_save(const struct mirror_store *s, const char *sha256, const struct xet_identity *id);
/* Delete blob sha256's identity file, if there is one. */
void mirror__store_xet_drop(const struct mirror_store *s, const char *sha256);

#endif
