/*
 * bug.h - invariants in code. BUG_ON(cond) states what the code around it never lets be true: if it
 * is, the program is wrong, and it says where (file, line, the condition) on stderr and aborts, in
 * every build: a server that carries on past a broken invariant corrupts what it serves or stores.
 *
 * Only for what no input can cause. What the network, a file, a user or the machine can do (a short
 * read, a malformed request, a full disk) is an error and is returned (docs/CODING.md, "Errors and
 * ownership"); a test that reaches a BUG_ON has found a bug.
 */
#ifndef HM_BUG_H
#define HM_BUG_H

_Noreturn void bug_fail(const char *file, int line, const char *what);

#define BUG_ON(cond) \
	do { \
		if (__builtin_expect(!!(cond), 0)) \
			bug_fail(__FILE__, __LINE__, #cond); \
	} while (0)

#endif
