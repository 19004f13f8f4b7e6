/*
 * bug.c - a broken invariant's last words (see bug.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "bug.h"

_Noreturn void bug_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "hubmirror: BUG at %s:%d: %s\n", file, line, what);
	fflush(stderr);
	abort();
}
