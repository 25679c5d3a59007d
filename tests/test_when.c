/*
 * test_when.c - the times traceq's --since and --until take (traceq/when.c):
 * every form of when.h with known answers in UTC and in a zone with
 * daylight saving, fractions exact to the nanosecond, bare numbers and
 * impossible dates refused with a message, and overflow refused.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/tc_error.h"
#include "tests/testutil.h"
#include "traceq/when.h"

#define S	1000000000LL
/* 2026-11-26T15:49:48Z */
#define NOW	(1795708188LL * S + 123)

static struct when ok(const char *text)
{
	struct when w = { 0 };
	char err[1024] = "";
	int ret = when_parse(text, NOW, &w, err, sizeof(err));

	ck_assert_msg(ret == 0, "'%s': %d %s", text, ret, err);
	return w;
}

static void bad(const char *text, int code, const char *says)
{
	struct when w = { 0 };
	char err[1024] = "";
	int ret = when_parse(text, NOW, &w, err, sizeof(err));

	ck_assert_msg(ret == code, "'%s': %d, expected %d", text, ret, code);
	ck_assert_msg(strstr(err, says), "'%s': message '%s' lacks '%s'", text, err, says);
}

static void set_tz(const char *tz)
{
	setenv("TZ", tz, 1);
	tzset();
}

START_TEST(test_iso_utc_and_zones)
{
	set_tz("UTC");
	ck_assert_int_eq(ok("2026-11-26T10:15:00Z").ns, 1795688100LL * S);
	ck_assert_int_eq(ok("2026-11-26t10:15:00z").ns, 1795688100LL * S);
	ck_assert_int_eq(ok("2026-11-26T10:15:00+01:00").ns, (1795688100LL - 3600) * S);
	ck_assert_int_eq(ok("2026-11-26T10:15:00-0530").ns, (1795688100LL + 19800) * S);
	ck_assert_int_eq(ok("2026-11-26T10:15:00.25Z").ns, 1795688100LL * S + S / 4);
	ck_assert_int_eq(ok("2026-11-26T10:15:00.000000001Z").ns, 1795688100LL * S + 1);
	ck_assert_int_eq(ok("2026-11-26T10:15Z").ns, 1795688100LL * S);
	ck_assert_int_eq(ok("2026-11-26 10:15:00").ns, 1795688100LL * S);
	ck_assert_int_eq(ok("2026-11-26").ns, 1795651200LL * S);
	TU_EQ(ok("1970-01-01T00:00:00Z").ns, 0);
	ck_assert_int_eq(ok("1969-12-31T23:59:59Z").ns, -S);
	ck_assert_int_eq(ok("2026-11-26T10:15:00Z").base, WHEN_ABS);
}
END_TEST

START_TEST(test_local_time_follows_tz)
{
	/* Berlin: +01:00 in November, +02:00 in July */
	set_tz("Europe/Berlin");
	ck_assert_int_eq(ok("2026-11-26T10:15:00").ns, (1795688100LL - 3600) * S);
	ck_assert_int_eq(ok("2026-07-01T12:00:00").ns, (1782907200LL - 7200) * S);
	/* the zone in the text wins over TZ */
	ck_assert_int_eq(ok("2026-11-26T10:15:00Z").ns, 1795688100LL * S);
	set_tz("UTC");
}
END_TEST

START_TEST(test_time_of_day_is_today)
{
	set_tz("UTC");
	ck_assert_int_eq(ok("10:15").ns, 1795688100LL * S);
	ck_assert_int_eq(ok("10:15:30.5").ns, 1795688130LL * S + S / 2);
	ck_assert_int_eq(ok("00:00").ns, 1795651200LL * S);
}
END_TEST

START_TEST(test_relative_to_now_and_end)
{
	struct when w;

	ck_assert_int_eq(ok("now").ns, NOW);
	ck_assert_int_eq(ok("-10m").ns, NOW - 600 * S);
	ck_assert_int_eq(ok("now-2h").ns, NOW - 7200 * S);
	ck_assert_int_eq(ok("now+1d").ns, NOW + 86400 * S);
	ck_assert_int_eq(ok("-1.5h").ns, NOW - 5400 * S);
	ck_assert_int_eq(ok("-90s").ns, NOW - 90 * S);
	ck_assert_int_eq(ok("-250ms").ns, NOW - 250000000LL);
	ck_assert_int_eq(ok("-3min").ns, NOW - 180 * S);
	w = ok("end-10s");
	ck_assert_int_eq(w.base, WHEN_END);
	ck_assert_int_eq(w.ns, -10 * S);
	w = ok("end");
	ck_assert_int_eq(w.base, WHEN_END);
	TU_EQ(w.ns, 0);
	bad("end+10s", TC_ERR_SYNTAX, "newest");
}
END_TEST

START_TEST(test_raw_needs_a_unit)
{
	ck_assert_int_eq(ok("@1795693277.745s").ns, 1795693277745000000LL);
	ck_assert_int_eq(ok("@1795693277745000000ns").ns, 1795693277745000000LL);
	ck_assert_int_eq(ok("@1795693277745ms").ns, 1795693277745000000LL);
	ck_assert_int_eq(ok("@5us").ns, 5000);
	ck_assert_int_eq(ok("@0.000000001s").ns, 1);
	/* digits past the nanosecond are cut, not rounded */
	ck_assert_int_eq(ok("@0.0000000019s").ns, 1);
	bad("@1795693277", TC_ERR_SYNTAX, "needs a unit");
	bad("@s", TC_ERR_SYNTAX, "needs a unit");
}
END_TEST

START_TEST(test_refused_with_the_forms)
{
	bad("1795693277", TC_ERR_SYNTAX, "bare number");
	bad("1795693277", TC_ERR_SYNTAX, "ISO 8601");
	bad("1795693277.5", TC_ERR_SYNTAX, "bare number");
	bad("", TC_ERR_SYNTAX, "empty");
	bad("yesterday", TC_ERR_SYNTAX, "not a time");
	bad("2026-02-30", TC_ERR_SYNTAX, "not a time");
	bad("2026-13-01", TC_ERR_SYNTAX, "not a time");
	bad("2026-11-26T25:00Z", TC_ERR_SYNTAX, "not a time");
	bad("2026-11-26T10:15:00+25:00", TC_ERR_SYNTAX, "not a time");
	bad("2026-11-26T10:15:00Zjunk", TC_ERR_SYNTAX, "not a time");
	bad("10m", TC_ERR_SYNTAX, "not a time");
	bad("-10", TC_ERR_SYNTAX, "not a time");
	bad("-10 m", TC_ERR_SYNTAX, "not a time");
}
END_TEST

START_TEST(test_overflow_refused)
{
	bad("@9999999999999999999s", -ERANGE, "out of range");
	bad("@99999999999999999999999ns", -ERANGE, "out of range");
	bad("-999999999d", -ERANGE, "out of range");
	bad("end-9999999999999d", -ERANGE, "out of range");
}
END_TEST

/*
 * The now that traceq and traceq --serve give when_parse() is the wall
 * clock: "-1m" is a minute before the time of day (it was CLOCK_MONOTONIC,
 * so a relative --since fell near 1970 and bounded nothing).
 */
START_TEST(test_now_is_the_wall_clock)
{
	time_t before = time(NULL);
	int64_t now = when_now_ns();
	time_t after = time(NULL);
	struct when w;
	char err[256];

	ck_assert_int_ge(now / 1000000000, (int64_t)before);
	ck_assert_int_le(now / 1000000000, (int64_t)after);
	TU_OK(when_parse("-1m", when_now_ns(), &w, err, sizeof(err)));
	ck_assert_int_ge(w.ns / 1000000000, (int64_t)before - 60);
	ck_assert_int_le(w.ns / 1000000000, (int64_t)time(NULL) - 60);
}
END_TEST

static Suite *when_suite(void)
{
	Suite *s = suite_create("when");
	TCase *tc = tcase_create("parse");

	tu_add_tests(tc, TU_TESTS(test_iso_utc_and_zones, test_local_time_follows_tz,
				  test_time_of_day_is_today, test_relative_to_now_and_end,
				  test_raw_needs_a_unit, test_refused_with_the_forms,
				  test_overflow_refused, test_now_is_the_wall_clock));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(when_suite())
