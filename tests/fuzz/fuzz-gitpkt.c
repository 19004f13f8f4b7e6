/*
 * fuzz-gitpkt.c - mirror/gitpkt.c, the pkt-line reader that sees a git upload-pack request before
 * git does. A request it accepts is a whole number of well-formed pkt-lines (walked again here,
 * independently: every length four hex digits, none 3, none past 65520 or the end), its counts
 * match that walk, and none of its lines asks for a sparse filter; a refused one says why.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mirror/gitpkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *b = (const char *)data;
	struct gitpkt_summary sum;
	size_t off = 0, lines = 0, flushes = 0, wants = 0, haves = 0;
	char *why = NULL;

	if (mirror_git_pkt_check(b, size, &sum, &why)) {
		if (!why || !*why)
			abort();
		free(why);
		return 0;
	}
	if (why)
		abort();
	while (off < size) {
		char hex[5];
		unsigned long n;
		char *end;
		if (size - off < 4)
			abort();
		memcpy(hex, b + off, 4);
		hex[4] = '\0';
		for (int i = 0; i < 4; i++)
			if (!isxdigit((unsigned char)hex[i]))
				abort();
		n = strtoul(hex, &end, 16);
		if (n == 3 || n > 65520 || (n >= 4 && n > size - off))
			abort();
		if (n < 4) {
			flushes++;
			off += 4;
			continue;
		}
		lines++;
		if (n - 4 >= 5 && !memcmp(b + off + 4, "want ", 5))
			wants++;
		if (n - 4 >= 9 && !memcmp(b + off + 4, "want-ref ", 9))
			wants++;
		if (n - 4 >= 5 && !memcmp(b + off + 4, "have ", 5))
			haves++;
		if (n - 4 >= 7 && !memcmp(b + off + 4, "filter ", 7)) {
			size_t l = n - 11;
			char *f = malloc(l + 1);
			memcpy(f, b + off + 11, l);
			f[l] = '\0';
			for (size_t i = 0; i < l; i++)
				f[i] = (char)tolower((unsigned char)f[i]);
			if (l < 500 && (strstr(f, "sparse:") || strstr(f, "sparse%3a")))
				abort();
			free(f);
		}
		off += n;
	}
	if (lines != sum.lines || flushes != sum.flushes || wants != sum.wants || haves != sum.haves)
		abort();
	return 0;
}
