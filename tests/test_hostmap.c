/*
 * test_hostmap.c - check tests for the name -> host-glob tables
 * (server/conn/hostmap.c): `host-map` and `freeze-group` lines, the errors
 * that name their key and form, which host a name allows (lines of one
 * name add up), and a host's names (freeze groups: distinct, in order,
 * cut at the caller's max).
 */
#include "config.h"

#include <check.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/conn/hostmap.h"
#include "tests/testutil.h"

static char err[256];

START_TEST(test_parse_errors_name_their_key)
{
	struct hostmap *m = NULL;

	TU_ERR(hostmap_add(&m, "freeze-group", "team1", err, sizeof(err)), TC_ERR_CONFIG);
	ck_assert_str_eq(err, "freeze-group: expected 'NAME GLOB[,GLOB...]', got 'team1'");
	TU_ERR(hostmap_add(&m, "host-map", "gw", err, sizeof(err)), TC_ERR_CONFIG);
	ck_assert_str_eq(err, "host-map: expected 'CN GLOB[,GLOB...]', got 'gw'");
	TU_ERR(hostmap_add(&m, "freeze-group", "team1 a,,b", err, sizeof(err)), TC_ERR_CONFIG);
	ck_assert_str_eq(err, "freeze-group: empty glob in 'a,,b'");
	ck_assert_uint_eq(hostmap_count(m), 0);
	hostmap_free(m);
}
END_TEST

START_TEST(test_allows_adds_lines_up)
{
	struct hostmap *m = NULL;

	ck_assert(!hostmap_allows(NULL, "team1", "a"));
	TU_OK(hostmap_add(&m, "freeze-group", "team1 web-*", err, sizeof(err)));
	TU_OK(hostmap_add(&m, "freeze-group", "team2  db-1,web-2", err, sizeof(err)));
	TU_OK(hostmap_add(&m, "freeze-group", "team1 lb-1 ", err, sizeof(err)));
	ck_assert_uint_eq(hostmap_count(m), 3);
	ck_assert(hostmap_allows(m, "team1", "web-7"));
	ck_assert(hostmap_allows(m, "team1", "lb-1"));
	ck_assert(!hostmap_allows(m, "team1", "db-1"));
	ck_assert(!hostmap_allows(m, "team1", "web"));	/* the whole name */
	ck_assert(hostmap_allows(m, "team2", "db-1"));
	ck_assert(!hostmap_allows(m, "team3", "db-1"));
	ck_assert(!hostmap_allows(m, "team", "web-7"));	/* the whole group name */
	hostmap_free(m);
}
END_TEST

START_TEST(test_names_distinct_in_order_capped)
{
	struct hostmap *m = NULL;
	const char *out[4] = { 0 };

	ck_assert_uint_eq(hostmap_names(NULL, "web-2", out, 4), 0);
	TU_OK(hostmap_add(&m, "freeze-group", "team2 web-2", err, sizeof(err)));
	TU_OK(hostmap_add(&m, "freeze-group", "team1 web-*", err, sizeof(err)));
	TU_OK(hostmap_add(&m, "freeze-group", "team2 web-*,db-*", err, sizeof(err)));
	TU_OK(hostmap_add(&m, "freeze-group", "team3 db-*", err, sizeof(err)));
	ck_assert_uint_eq(hostmap_names(m, "web-2", out, 4), 2);
	ck_assert_str_eq(out[0], "team2");
	ck_assert_str_eq(out[1], "team1");
	ck_assert_uint_eq(hostmap_names(m, "db-1", out, 4), 2);
	ck_assert_str_eq(out[0], "team2");
	ck_assert_str_eq(out[1], "team3");
	ck_assert_uint_eq(hostmap_names(m, "db-1", out, 1), 1);
	ck_assert_str_eq(out[0], "team2");
	ck_assert_uint_eq(hostmap_names(m, "lb-1", out, 4), 0);
	hostmap_free(m);
}
END_TEST

static Suite *hostmap_suite(void)
{
	Suite *s = suite_create("hostmap");
	TCase *tc = tcase_create("hostmap");

	tu_add_tests(tc, TU_TESTS(test_parse_errors_name_their_key, test_allows_adds_lines_up,
				  test_names_distinct_in_order_capped));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(hostmap_suite())
