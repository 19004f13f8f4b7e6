/*
 * test.h - a tiny unit test harness: TAP output, one executable per module topic.
 *
 *   TEST(name) { CHECK(x == 1); CHECK_STR(a, "b"); }
 *   int main(void) { RUN(name); return test_done(); }
 *
 * A failed CHECK prints the expression, file and line, and marks the test failed; test_done()
 * returns 1 if anything failed, so meson sees the failure. A test that needs files makes its folder
 * with test_tmpdir() and removes it with test_rmtree().
 */
#ifndef HM_TEST_H
#define HM_TEST_H

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failures_total;
static int test_current_failed;
static int test_count;

#define TEST(name) static void test_##name(void)

#define CHECK(expr) do { \
	if (!(expr)) { \
		printf("#   %s:%d: check failed: %s\n", __FILE__, __LINE__, #expr); \
		test_current_failed = 1; \
	} } while (0)

#define CHECK_INT(a, b) do { \
	long long a_ = (long long)(a), b_ = (long long)(b); \
	if (a_ != b_) { \
		printf("#   %s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a, a_, #b, b_); \
		test_current_failed = 1; \
	} } while (0)

#define CHECK_STR(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	if (!a_ || !b_ || strcmp(a_, b_)) { \
		printf("#   %s:%d: %s is \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a, \
		       a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
		test_current_failed = 1; \
	} } while (0)

#define RUN(name) do { \
	test_current_failed = 0; \
	test_##name(); \
	test_count++; \
	printf("%s %d - %s\n", test_current_failed ? "not ok" : "ok", test_count, #name); \
	test_failures_total += test_current_failed; \
	fflush(stdout); \
	} while (0)

static inline int test_done(void)
{
	printf("1..%d\n", test_count);
	return test_failures_total ? 1 : 0;
}

/* mkdtemp(tmpl) ("/tmp/NAME-XXXXXX"), or a TAP "Bail out!" and exit 1. Returns tmpl. */
static inline char *test_tmpdir(char *tmpl)
{
	if (!mkdtemp(tmpl)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		exit(1);
	}
	return tmpl;
}

static int test_rm_failed;

static inline int test_rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	if (remove(path))
		test_rm_failed = 1;
	return 0;
}

/* Remove dir and everything in it (links are removed, not followed). 0, or -1 if anything stayed. */
static inline int test_rmtree(const char *dir)
{
	test_rm_failed = 0;
	if (nftw(dir, test_rm_entry, 16, FTW_DEPTH | FTW_PHYS))
		return -1;
	return test_rm_failed ? -1 : 0;
}

#endif
