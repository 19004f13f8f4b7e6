/*
 * fdio.c - whole reads and writes on a file descriptor (fdio.h).
 */
#include <errno.h>
#include <unistd.h>

#include "fdio.h"

int fdio_write_all(int fd, const void *p, size_t n)
{
	const char *b = p;

	while (n) {
		ssize_t k = write(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

int fdio_pwrite_all(int fd, const void *p, size_t n, off_t off)
{
	const char *b = p;

	while (n) {
		ssize_t k = pwrite(fd, b, n, off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		b += k;
		n -= (size_t)k;
		off += k;
	}
	return 0;
}

int fdio_pread_all(int fd, void *p, size_t n, off_t off)
{
	char *b = p;

	while (n) {
		ssize_t k = pread(fd, b, n, off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		b += k;
		n -= (size_t)k;
		off += k;
	}
	return 0;
}
