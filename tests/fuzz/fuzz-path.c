/*
 * fuzz-path.c - base/path.h, the one guard every name from the network passes: whatever it accepts
 * must stay below the folder it is joined to (no absolute path, no "." or ".." component, no empty
 * component, no control byte), and path_join must agree with it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	char *s, *joined = NULL;
	size_t start = 0;

	if (path_check(p, size))
		return 0;
	/* accepted: check the promise independently */
	if (!size || p[0] == '/')
		abort();
	for (size_t i = 0; i <= size; i++) {
		if (i == size || p[i] == '/') {
			size_t n = i - start;
			if (n == 0 || (n == 1 && p[start] == '.') || (n == 2 && p[start] == '.' && p[start + 1] == '.'))
				abort();
			start = i + 1;
		} else if ((unsigned char)p[i] < 0x20 || p[i] == '\\') {
			abort();
		}
	}
	s = malloc(size + 1); /* not strndup: ASan's strndup may look one byte past an unterminated input */
	memcpy(s, p, size);
	s[size] = '\0';
	if (path_join("/base", s, &joined) || strncmp(joined, "/base/", 6) || strcmp(joined + 6, s))
		abort();
	free(joined);
	free(s);
	return 0;
}
