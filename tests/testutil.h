/*
 * testutil.h - what every check suite under tests/ shares: assertions on
 * our return codes that say what a code means (tc_strerror()), on libc
 * calls (strerror(errno)) and on plain integers, a private temporary
 * directory per test, and main().
 *
 * Header-only (static inline): a suite is one .c file linked with the
 * module it tests, and these need nothing beyond libc, check and
 * common/tc_error.
 *
 *   START_TEST(test_x) { TU_OK(f(a)); TU_ERR(f(NULL), -EINVAL); } END_TEST
 *   TU_SYS(mkdir(sub, 0700)); TU_EQ(count_rows(db), 0);
 *   static void setup(void) { tu_tmpdir_make(dir, sizeof(dir), "x"); }
 *   static void teardown(void) { TU_OK(tu_tmpdir_remove(dir)); }
 *   TU_MAIN(x_suite())
 */
#ifndef TESTS_TESTUTIL_H
#define TESTS_TESTUTIL_H

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/tc_error.h"

/*
 * tu_strerror - what a return value means: "success" for 0, tc_strerror()
 * for a negative code (-errno or TC_ERR_*), and for a positive value (a
 * count, never an error code) that it is one.
 */
static inline const char *tu_strerror(long long v)
{
	if (v > 0)
		return "a positive value, not an error code";
	if (v < -0x7fffffffLL)
		return "out of the error codes' range";
	return tc_strerror((int)v);
}

/*
 * TU_OK - assert that @expr (a function returning 0 or a negative code)
 * returns 0. On failure the message gives the expression, the value and
 * what the value means.
 */
#define TU_OK(expr) do { \
	long long tu_ret_ = (expr); \
	ck_assert_msg(tu_ret_ == 0, "%s returned %lld: %s", #expr, tu_ret_, \
		      tu_strerror(tu_ret_)); \
} while (0)

/*
 * TU_ERR - assert that @expr returns exactly @code (a negative code:
 * -errno or TC_ERR_*). On failure the message gives both values and what
 * each means.
 */
#define TU_ERR(expr, code) do { \
	long long tu_ret_ = (expr), tu_want_ = (code); \
	ck_assert_msg(tu_ret_ == tu_want_, "%s returned %lld (%s), not %s = %lld (%s)", \
		      #expr, tu_ret_, tu_strerror(tu_ret_), #code, tu_want_, \
		      tu_strerror(tu_want_)); \
} while (0)

/*
 * TU_SYS - assert that @expr, a libc call returning 0 or -1 with errno
 * set (mkdir(), chmod(), pipe(), ...), returns 0. On failure the message
 * gives the expression, the value and strerror(errno).
 */
#define TU_SYS(expr) do { \
	long long tu_ret_ = (expr); \
	int tu_errno_ = errno; \
	ck_assert_msg(tu_ret_ == 0, "%s returned %lld: %s", #expr, tu_ret_, \
		      strerror(tu_errno_)); \
} while (0)

/*
 * TU_EQ - assert that the integers @a and @b are equal: a count, a flag,
 * a field read back (TU_EQ(n, 0) for "none"). On failure the message gives
 * both expressions and their values, and a negative @a read as an error
 * code (for a call that returns a count or an error).
 */
#define TU_EQ(a, b) do { \
	long long tu_a_ = (a), tu_b_ = (b); \
	ck_assert_msg(tu_a_ == tu_b_, "%s is %lld, not %s = %lld%s%s%s", #a, tu_a_, #b, \
		      tu_b_, tu_a_ < 0 ? " (as an error code: " : "", \
		      tu_a_ < 0 ? tu_strerror(tu_a_) : "", tu_a_ < 0 ? ")" : ""); \
} while (0)

/*
 * tu_tmpdir_make - create a private directory (mode 0700, mkdtemp) for one
 * test: /tmp/tc-test-@name-XXXXXX, its path written to @dir (@size bytes).
 * Fails the test when it cannot. Pair with tu_tmpdir_remove() in the
 * teardown; checked fixtures (tcase_add_checked_fixture) give each test a
 * directory of its own.
 */
static inline void tu_tmpdir_make(char *dir, size_t size, const char *name)
{
	int n = snprintf(dir, size, "/tmp/tc-test-%s-XXXXXX", name);

	ck_assert_msg(n > 0 && (size_t)n < size, "tmpdir name for %s does not fit", name);
	ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
}

/* One entry of tu_tmpdir_remove()'s walk: children come before their directory. */
static inline int tu_tmpdir_remove_one(const char *path, const struct stat *st, int flag,
				       struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) ? -errno : 0;
}

/*
 * tu_tmpdir_remove - remove @dir and everything in it (symlinks are
 * removed, never followed).
 *
 * Return: 0; -errno of the first entry that could not be removed (the
 * walk stops there) or of the walk itself (-ENOENT for no @dir).
 */
static inline int tu_tmpdir_remove(const char *dir)
{
	int rc = nftw(dir, tu_tmpdir_remove_one, 16, FTW_DEPTH | FTW_PHYS);

	return rc == -1 ? -errno : rc;
}

/*
 * tu_run - run @s and any further suites given, up to a NULL, in one
 * runner with srunner_run_all(sr, CK_ENV): CK_VERBOSITY picks the output,
 * CK_RUN_SUITE / CK_RUN_CASE / CK_INCLUDE_TAGS pick what runs, and
 * CK_FORK=no runs the tests in-process (for gdb or valgrind).
 *
 * Return: EXIT_SUCCESS when no test failed, else EXIT_FAILURE; for main().
 */
__attribute__((sentinel)) static inline int tu_run(Suite *s, ...)
{
	SRunner *sr = srunner_create(s);
	va_list ap;
	Suite *more;
	int failed;

	va_start(ap, s);
	while ((more = va_arg(ap, Suite *)))
		srunner_add_suite(sr, more);
	va_end(ap);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * tu_add_tests - add each test of @tests, a NULL-terminated list, to @tc
 * (tcase_add_test() for each, in order). TU_TESTS(t1, t2, ...) makes the
 * list, so a case reads as the list of its tests:
 *
 *   tu_add_tests(tc, TU_TESTS(test_a, test_b, test_c));
 */
static inline void tu_add_tests(TCase *tc, const TTest *const *tests)
{
	for (; *tests; tests++)
		tcase_add_test(tc, *tests);
}

#define TU_TESTS(...) ((const TTest *const[]){ __VA_ARGS__, NULL })

/*
 * TU_MAIN - main() of a suite that needs nothing before or after its
 * tests: TU_MAIN(x_suite()), or TU_MAIN(x_suite(), y_suite()) for several.
 * A suite with more to do (skip without tracefs, sweep up after) writes
 * its main() around tu_run(x_suite(), NULL).
 */
#define TU_MAIN(...) \
	int main(void) \
	{ \
		return tu_run(__VA_ARGS__, NULL); \
	}

#endif
