/*
 * test_log.c - check tests for the logger's escaping (common/log.c):
 * log_escape() leaves printable text and valid UTF-8 alone, writes
 * control characters, ANSI escapes, bidi overrides, backslashes and
 * invalid UTF-8 as \n / \xNN, and cuts long text with a marker.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "tests/testutil.h"

static const char *esc(const char *s)
{
	static char buf[LOG_ESC_LEN];

	return log_escape(s, buf, sizeof(buf));
}

START_TEST(test_plain_text_unchanged)
{
	ck_assert_str_eq(esc("web-01.example.com"), "web-01.example.com");
	ck_assert_str_eq(esc("6.18.0-rc1 #1 SMP"), "6.18.0-rc1 #1 SMP");
	ck_assert_str_eq(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
			 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	ck_assert_str_eq(esc(""), "");
	ck_assert_str_eq(esc(NULL), "(null)");
}
END_TEST

START_TEST(test_forged_line_escaped)
{
	const char *s = esc("vm\ntracecollectd[1]: info: conn: \x1b[31mroot logged in\x1b[0m");

	ck_assert_ptr_null(strchr(s, '\n'));
	ck_assert_ptr_null(strchr(s, '\x1b'));
	ck_assert_str_eq(s, "vm\\ntracecollectd[1]: info: conn: \\x1b[31mroot logged in"
			 "\\x1b[0m");
	ck_assert_str_eq(esc("a\\b\tc\rd\x7f\x01"), "a\\\\b\\tc\\rd\\x7f\\x01");
}
END_TEST

START_TEST(test_bad_utf8_and_c1)
{
	ck_assert_str_eq(esc("\xff\xfe"), "\\xff\\xfe");
	ck_assert_str_eq(esc("\xc0\xaf"), "\\xc0\\xaf");		/* overlong '/' */
	ck_assert_str_eq(esc("\xed\xa0\x80"), "\\xed\\xa0\\x80");	/* surrogate */
	ck_assert_str_eq(esc("x\xc3"), "x\\xc3");			/* cut short */
	ck_assert_str_eq(esc("\xc2\x9b" "31m"), "\\xc2\\x9b31m");	/* C1 CSI */
	ck_assert_str_eq(esc("a\xe2\x80\xae" "b"), "a\\xe2\\x80\\xaeb");	/* RLO */
	ck_assert_str_eq(esc("\xe2\x80\xa8"), "\\xe2\\x80\\xa8");	/* LINE SEP */
}
END_TEST

START_TEST(test_truncated_with_marker)
{
	size_t n = 256 * 1024;
	char *big = malloc(n + 1);
	const char *s;
	char small[40];

	ck_assert_ptr_nonnull(big);
	memset(big, 'h', n);
	big[n] = '\0';
	s = esc(big);
	ck_assert_uint_lt(strlen(s), LOG_ESC_LEN);
	ck_assert_ptr_nonnull(strstr(s, "...[+"));
	ck_assert_msg(strstr(s, " bytes]") && s[strlen(s) - 1] == ']', "%s", s);
	/* the marker counts what was left out */
	ck_assert_uint_eq(strspn(s, "h") + strtoul(strstr(s, "[+") + 2, NULL, 10), n);
	free(big);
	/* an escape is never cut in half */
	s = log_escape("\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01", small,
		       sizeof(small));
	ck_assert_msg(!strncmp(s, "\\x01", 4) && strstr(s, "...[+"), "%s", s);
	ck_assert_uint_eq((size_t)(strstr(s, "...") - s) % 4, 0);
	/* what fits is not cut */
	ck_assert_str_eq(log_escape("0123456789012345678901234567890123456", small,
				    sizeof(small)), "0123456789012345678901234567890123456");
}
END_TEST

/*
 * The same escaping for printed output: @n bytes (NULs too), into a buffer
 * cut at a whole character, or to a stream; and the quick look.
 */
START_TEST(test_escape_mem_and_file)
{
	static const char in[] = "a\x1b[2J\r\n\0\\ \xc2\x9b \xc3\xa9 \xff";
	static const char want[] = "a\\x1b[2J\\r\\n\\x00\\\\ \\xc2\\x9b \xc3\xa9 \\xff";
	char buf[64], small[5], *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert(log_escape_needed(in, sizeof(in) - 1));
	ck_assert(!log_escape_needed("plain text", 10));
	ck_assert(log_escape_needed("caf\xc3\xa9", 5));	/* looked at closely */
	ck_assert_uint_eq(log_escape_mem(in, sizeof(in) - 1, buf, sizeof(buf)), strlen(want));
	ck_assert_str_eq(buf, want);
	/* cut at a whole character: "a" and not half of "\x1b" */
	ck_assert_uint_eq(log_escape_mem(in, sizeof(in) - 1, small, sizeof(small)), 1);
	ck_assert_str_eq(small, "a");
	log_escape_file(f, in, sizeof(in) - 1);
	fclose(f);
	ck_assert_str_eq(text, want);
	free(text);
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("escape");

	tu_add_tests(tc, TU_TESTS(test_plain_text_unchanged, test_forged_line_escaped,
				  test_bad_utf8_and_c1, test_truncated_with_marker,
				  test_escape_mem_and_file));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(log_suite())
