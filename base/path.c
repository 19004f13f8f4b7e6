/*
 * path.c - the guard for untrusted paths, and small filesystem helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "path.h"
#include "xmalloc.h"

/* Length of the valid UTF-8 sequence at s (of at most n bytes), or 0: no overlong forms, no
 * surrogates, nothing past U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	/* direction controls: LRM, RLM, LRE..RLO, LRI..PDI */
	if (cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
		return 0;
	return len;
}

/* Would git take component c (n bytes) for its own folder on some file system, and so refuse a tree
 * holding it (core.protectNTFS, on by default, and core.protectHFS)? ".git" with trailing dots or
 * spaces (NTFS drops them), its 8.3 short name "git~1", and ".git" with characters HFS+ ignores inside
 * (zero-width joiners and the like). A mirrored repo holding such a path would break every clone. */
static bool is_dotgit(const char *c, size_t n)
{
	char plain[16];
	size_t m = 0;

	while (n && (c[n - 1] == '.' || c[n - 1] == ' '))
		n--;
	if ((n == 4 && !strncasecmp(c, ".git", 4)) || (n == 5 && !strncasecmp(c, "git~1", 5)))
		return true;
	/* without the code points HFS+ ignores: U+200C-U+200F, U+202A-U+202E, U+206A-U+206F, U+FEFF */
	for (size_t i = 0; i < n && m < sizeof(plain) - 1; i++) {
		const unsigned char *u = (const unsigned char *)c + i;
		if (i + 2 < n && ((u[0] == 0xe2 && u[1] == 0x80 &&
				   ((u[2] >= 0x8c && u[2] <= 0x8f) || (u[2] >= 0xaa && u[2] <= 0xae))) ||
				  (u[0] == 0xe2 && u[1] == 0x81 && u[2] >= 0xaa && u[2] <= 0xaf) ||
				  (u[0] == 0xef && u[1] == 0xbb && u[2] == 0xbf))) {
			i += 2;
			continue;
		}
		plain[m++] = c[i];
	}
	return m == 4 && !strncasecmp(plain, ".git", 4);
}

static int check_component(const char *c, size_t n)
{
	if (n == 0 || n > PATH_MAX_COMPONENT)
		return HM_ERR_PATH_UNSAFE;
	if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
		return HM_ERR_PATH_UNSAFE;
	if (is_dotgit(c, n))
		return HM_ERR_PATH_UNSAFE;
	for (size_t i = 0; i < n;) {
		unsigned char ch = (unsigned char)c[i];
		size_t l;
		if (ch < 0x20 || ch == 0x7f || ch == '\\')
			return HM_ERR_PATH_UNSAFE; /* includes NUL */
		l = utf8_len((const unsigned char *)c + i, n - i);
		if (!l)
			return HM_ERR_PATH_UNSAFE;
		i += l;
	}
	return 0;
}

int path_check(const char *p, size_t len)
{
	size_t start = 0, depth = 0;

	if (!p || len == 0 || len > PATH_MAX_LEN || p[0] == '/')
		return HM_ERR_PATH_UNSAFE;
	for (size_t i = 0; i <= len; i++) {
		if (i == len || p[i] == '/') {
			int r = check_component(p + start, i - start);
			if (r)
				return r;
			if (++depth > PATH_MAX_DEPTH)
				return HM_ERR_PATH_UNSAFE;
			start = i + 1;
		}
	}
	return 0;
}

int path_check_str(const char *p)
{
	return p ? path_check(p, strnlen(p, PATH_MAX_LEN + 1)) : HM_ERR_PATH_UNSAFE;
}

int path_join(const char *base, const char *rel, char **out)
{
	size_t blen;

	if (path_check_str(rel))
		return HM_ERR_PATH_UNSAFE;
	blen = strlen(base);
	while (blen > 1 && base[blen - 1] == '/')
		blen--;
	*out = xasprintf("%.*s/%s", (int)blen, base, rel);
	return 0;
}

/* path_mkdirs and path_mkdirs_exact: with exact, each folder made gets mode whatever the umask. */
static int mkdirs(const char *dir, unsigned mode, bool exact)
{
	char *tmp = xstrdup(dir);
	int r = 0;

	for (char *s = tmp + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char saved = *s;
			*s = '\0';
			if (mkdir(tmp, mode) < 0) {
				if (errno != EEXIST) {
					r = -errno;
					break;
				}
			} else if (exact && chmod(tmp, mode) < 0) {
				r = -errno;
				break;
			}
			*s = saved;
			if (!saved)
				break;
		}
	}
	if (!r) {
		struct stat st;
		if (stat(dir, &st) < 0)
			r = -errno;
		else if (!S_ISDIR(st.st_mode))
			r = -ENOTDIR;
	}
	free(tmp);
	return r;
}

int path_mkdirs(const char *dir, unsigned mode)
{
	return mkdirs(dir, mode, false);
}

int path_mkdirs_exact(const char *dir, unsigned mode)
{
	return mkdirs(dir, mode, true);
}

int path_mkdirs_private(const char *dir, unsigned mode)
{
	struct stat st;
	int r = path_mkdirs(dir, mode);

	if (r)
		return r;
	if (stat(dir, &st) < 0)
		return -errno;
	if ((st.st_mode & 07777 & ~mode) && chmod(dir, st.st_mode & 07777 & mode) < 0)
		return -errno;
	return 0;
}

int path_fsync(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

void path_fsync_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? xstrndup(path, slash == path ? 1 : (size_t)(slash - path)) : xstrdup(".");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		if (fsync(fd) < 0) { /* the file is in place; only its durability is unproven */
		}
		close(fd);
	}
	free(dir);
}

static int write_replace(const char *path, const void *data, size_t len, unsigned mode, bool durable)
{
	char *tmp = xasprintf("%s.tmp%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), r = 0;
	size_t done = 0;

	if (fd < 0) {
		free(tmp);
		return -errno;
	}
	while (!r && done < len) {
		ssize_t n = write(fd, (const char *)data + done, len - done);
		if (n < 0 && errno != EINTR)
			r = -errno;
		else if (n > 0)
			done += (size_t)n;
	}
	if (!r && (fchmod(fd, mode) < 0 || (durable && fsync(fd) < 0)))
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r)
		unlink(tmp);
	else if (durable)
		path_fsync_parent(path);
	free(tmp);
	return r;
}

int path_write_atomic(const char *path, const void *data, size_t len, unsigned mode)
{
	return write_replace(path, data, len, mode, true);
}

int path_write_replace(const char *path, const void *data, size_t len, unsigned mode)
{
	return write_replace(path, data, len, mode, false);
}

int path_read_file(const char *path, size_t max, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;
	struct stat st;
	size_t got = 0;
	char *b;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_size < 0 || (size_t)st.st_size > max) {
		r = fstat(fd, &st) < 0 ? -errno : -EFBIG;
		close(fd);
		return r;
	}
	b = xmalloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, b + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	if (r) {
		free(b);
		return r;
	}
	b[got] = '\0';
	*out = b;
	*len = got;
	return 0;
}

char *path_owner_name(const char *path)
{
	char *p = xstrdup(path);
	struct stat st;
	bool seen = false;

	for (;;) {
		char *slash;
		if (stat(p, &st) == 0) {
			seen = true;
			break;
		}
		slash = strrchr(p, '/');
		if (!slash || slash == p)
			break;
		*slash = '\0';
	}
	free(p);
	if (seen) {
		struct passwd *pw = getpwuid(st.st_uid);
		return pw && pw->pw_name ? xstrdup(pw->pw_name) : xasprintf("uid %u", (unsigned)st.st_uid);
	}
	return xstrdup("another user");
}
