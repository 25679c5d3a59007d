/*
 * test_ch_escape.c - check tests for the ClickHouse escaping
 * (server/store/clickhouse_escape.c): literals and identifiers as
 * ClickHouse's lexer reads them, every byte reads back, the cap is all or
 * nothing and sticky, integer literals at their limits.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "server/store/clickhouse_escape.h"
#include "tests/testutil.h"

/* The text of one literal of @v (static buffer, test only). */
static const char *lit(const char *v, size_t n)
{
	static char out[1024];
	struct ch_sql s;

	ch_sql_init(&s, 0);
	TU_OK(ch_sql_str(&s, v, n));
	ck_assert_uint_lt(s.len, sizeof(out));
	memcpy(out, ch_sql_text(&s), s.len + 1);
	TU_EQ(ch_escape_len(v, n), s.len);
	ch_sql_free(&s);
	return out;
}

START_TEST(test_literals)
{
	ck_assert_str_eq(lit("", 0), "''");
	ck_assert_str_eq(lit("abc", 3), "'abc'");
	ck_assert_str_eq(lit("it's", 4), "'it\\'s'");
	ck_assert_str_eq(lit("a\\b", 3), "'a\\\\b'");
	ck_assert_str_eq(lit("a`b\"c", 5), "'a`b\"c'");
	ck_assert_str_eq(lit("l1\nl2\tx\r", 8), "'l1\\nl2\\tx\\r'");
	ck_assert_str_eq(lit("\0\x01\x1b\x7f", 4), "'\\x00\\x01\\x1B\\x7F'");
	ck_assert_str_eq(lit("caf\xc3\xa9\xff", 6), "'caf\xc3\xa9\xff'");
	ck_assert_str_eq(lit("\\", 1), "'\\\\'");	/* never a trailing backslash */
}
END_TEST

START_TEST(test_identifiers)
{
	struct ch_sql s;

	ch_sql_init(&s, 0);
	TU_OK(ch_sql_ident(&s, "next_comm"));
	TU_OK(ch_sql_raw(&s, ","));
	TU_OK(ch_sql_ident(&s, "a`b'c\\"));
	ck_assert_str_eq(ch_sql_text(&s), "`next_comm`,`a\\`b'c\\\\`");
	TU_ERR(ch_sql_ident(&s, ""), -EINVAL);
	TU_OK(ch_sql_err(&s));		/* an empty name is not sticky */
	ch_sql_free(&s);
}
END_TEST

/* Every byte value, in a literal and an identifier, reads back as itself. */
START_TEST(test_round_trip_every_byte)
{
	char in[257], out[1100];
	struct ch_sql s;
	size_t n;

	for (int i = 0; i < 256; i++)
		in[i] = (char)i;
	in[256] = '\0';
	ch_sql_init(&s, 0);
	TU_OK(ch_sql_str(&s, in, 256));
	ck_assert_int_eq(s.buf[0], '\'');
	ck_assert_int_eq(s.buf[s.len - 1], '\'');
	TU_OK(ch_unescape(s.buf + 1, s.len - 2, out, &n));
	TU_EQ(n, 256);
	ck_assert(memcmp(in, out, n) == 0);
	ch_sql_reset(&s);
	TU_OK(ch_sql_ident(&s, in + 1));
	TU_OK(ch_unescape(s.buf + 1, s.len - 2, out, &n));
	TU_EQ(n, 255);
	ck_assert(memcmp(in + 1, out, n) == 0);
	ch_sql_free(&s);
}
END_TEST

START_TEST(test_unescape_rules)
{
	char out[16];
	size_t n;

	TU_OK(ch_unescape("\\b\\f\\a\\v\\0\\q", 12, out, &n));
	TU_EQ(n, 6);
	ck_assert(memcmp(out, "\b\f\a\v\0q", 6) == 0);
	TU_OK(ch_unescape("\\x4a\\x4B", 8, out, &n));
	ck_assert(n == 2 && out[0] == 'J' && out[1] == 'K');
	TU_ERR(ch_unescape("ab\\", 3, out, &n), TC_ERR_SYNTAX);
	TU_ERR(ch_unescape("\\x4", 3, out, &n), TC_ERR_SYNTAX);
	TU_ERR(ch_unescape("\\xg0", 4, out, &n), TC_ERR_SYNTAX);
}
END_TEST

/* Past the cap: nothing of the literal is added, and the error sticks. */
START_TEST(test_cap_all_or_nothing)
{
	struct ch_sql s;

	ch_sql_init(&s, 12);
	TU_OK(ch_sql_raw(&s, "SELECT "));
	TU_ERR(ch_sql_cstr(&s, "a'b"), TC_ERR_TOO_LONG);	/* 'a\'b' is 6 bytes */
	ck_assert_str_eq(ch_sql_text(&s), "SELECT ");
	TU_ERR(ch_sql_raw(&s, "1"), TC_ERR_TOO_LONG);
	TU_ERR(ch_sql_u64(&s, 1), TC_ERR_TOO_LONG);
	TU_ERR(ch_sql_ident(&s, ""), TC_ERR_TOO_LONG);
	TU_ERR(ch_sql_err(&s), TC_ERR_TOO_LONG);
	ch_sql_reset(&s);
	TU_OK(ch_sql_cstr(&s, "0123456789"));	/* exactly 12 */
	TU_EQ(s.len, 12);
	ch_sql_free(&s);
	TU_EQ(s.len, 0);
	TU_EQ(s.max, 12);
}
END_TEST

START_TEST(test_integers)
{
	struct ch_sql s;

	ch_sql_init(&s, 0);
	TU_OK(ch_sql_u64(&s, UINT64_MAX));
	TU_OK(ch_sql_raw(&s, " "));
	TU_OK(ch_sql_i64(&s, INT64_MIN));
	TU_OK(ch_sql_raw(&s, " "));
	TU_OK(ch_sql_i64(&s, -1));
	TU_OK(ch_sql_addf(&s, " %s=%d", "x", 7));
	ck_assert_str_eq(ch_sql_text(&s), "18446744073709551615 -9223372036854775808 -1 x=7");
	ch_sql_free(&s);
}
END_TEST

static Suite *ch_escape_suite(void)
{
	Suite *s = suite_create("ch_escape");
	TCase *tc = tcase_create("escape");

	tcase_add_test(tc, test_literals);
	tcase_add_test(tc, test_identifiers);
	tcase_add_test(tc, test_round_trip_every_byte);
	tcase_add_test(tc, test_unescape_rules);
	tcase_add_test(tc, test_cap_all_or_nothing);
	tcase_add_test(tc, test_integers);
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(ch_escape_suite())
