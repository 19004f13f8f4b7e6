/*
 * path.c - the guard for untrusted paths, and small filesystem helpers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "path.h"
#include "xmalloc.h"

static int check_component(const char *c, size_t n)
{
	if (n == 0 || n > PATH_MAX_COMPONENT)
		return HM_ERR_PATH_UNSAFE;
	if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
		return HM_ERR_PATH_UNSAFE;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)c[i];
		if (ch < 0x20 || ch == 0x7f || ch == '\\')
			return HM_ERR_PATH_UNSAFE; /* includes NUL */
	}
	return 0;
}

int path_check(const char *p, size_t len)
{
	size_t start = 0;

	if (!p || len == 0 || len > PATH_MAX_LEN || p[0] == '/')
		return HM_ERR_PATH_UNSAFE;
	for (size_t i = 0; i <= len; i++) {
		if (i == len || p[i] == '/') {
			int r = check_component(p + start, i - start);
			if (r)
				return r;
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

int path_mkdirs(const char *dir, unsigned mode)
{
	char *tmp = xstrdup(dir);
	int r = 0;

	for (char *s = tmp + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char saved = *s;
			*s = '\0';
			if (mkdir(tmp, mode) < 0 && errno != EEXIST) {
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
