/*
 * fdio.h - whole reads and writes on a file descriptor: a loop over short counts and EINTR, once.
 */
#ifndef HM_BASE_FDIO_H
#define HM_BASE_FDIO_H

#include <stddef.h>
#include <sys/types.h>

/* Write all n bytes (at the file offset, or at off). 0, or -errno (-EIO when nothing was written). */
int fdio_write_all(int fd, const void *p, size_t n);
int fdio_pwrite_all(int fd, const void *p, size_t n, off_t off);
/* Read all n bytes at off. 0, -errno, or -EIO when the file ends before. */
int fdio_pread_all(int fd, void *p, size_t n, off_t off);

#endif
