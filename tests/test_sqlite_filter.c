/*
 * test_sqlite_filter.c - the SQLite backend's filter compiler
 * (server/store/sqlite_filter.*): the exact SQL and binds it writes for
 * each operator, the `FIELD == value` conjuncts it notes for field
 * indexes, its errors, and an executed cross-check of filter_eval()
 * against the SQL it writes, in an in-memory SQLite database.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "common/tc_error.h"
#include "server/store/sqlite_filter.h"
#include "tests/filter_event.h"
#include "tests/filter_sqlite.h"
#include "tests/testutil.h"

/* ---- SQL -------------------------------------------------------------------- */

static void binds_to_string(const struct sq_filter_sql *s, char *buf, size_t len)
{
	size_t k, n = 0;

	buf[0] = '\0';
	for (k = 0; k < s->nbinds && n < len; k++) {
		const struct filter_value *b = &s->binds[k];

		if (b->kind == FILTER_STRING) {
			ck_assert_uint_eq(strlen(b->str.s), b->str.len);
			n += (size_t)snprintf(buf + n, len - n, "%ss:%s", k ? "," : "", b->str.s);
		} else {
			n += (size_t)snprintf(buf + n, len - n, "%s%c:%" PRId64, k ? "," : "",
					      b->kind == FILTER_SIGNED ? 'i' : 'u', b->i);
		}
	}
}

START_TEST(test_sql_text)
{
	static const struct {
		const char *text, *where, *binds;
	} cases[] = {
		{ "prev_pid == 0", "\"prev_pid\" = ?", "i:0" },
		{ "prev_pid != -3", "\"prev_pid\" <> ?", "i:-3" },
		{ "prev_pid < -5 || prio >= 3 && len <= 7",
		  "(\"prev_pid\" < ? OR (\"prio\" >= ? AND \"len\" <= ?))", "i:-5,i:3,u:7" },
		{ "(prev_pid > 1 || prio < 2) && len > 3",
		  "((\"prev_pid\" > ? OR \"prio\" < ?) AND \"len\" > ?)", "i:1,i:2,u:3" },
		{ "!(prev_pid > 1 && state & 4)",
		  "NOT (\"prev_pid\" > ? AND ((\"state\" & ?) <> 0))", "i:1,u:4" },
		{ "!prev_pid == 1", "NOT (\"prev_pid\" = ?)", "i:1" },
		{ "!!prev_pid == 1", "NOT NOT (\"prev_pid\" = ?)", "i:1" },
		{ "prev_comm == bash", "\"prev_comm\" = ?", "s:bash" },
		{ "prev_comm != 'a b'", "\"prev_comm\" <> ?", "s:a b" },
		{ "prev_comm ~ \"[!a-c]*\"", "\"prev_comm\" GLOB ?", "s:[^a-c]*" },
		{ "prev_comm ~ 'a\\*b[*]?[]x]'", "\"prev_comm\" GLOB ?", "s:a[*]b[*]?[]x]" },
		{ "prev_comm ~ \"a[b\"", "\"prev_comm\" GLOB ?", "s:a[[]b" },
		{ "prev_comm ~ \"[^]\"", "\"prev_comm\" GLOB ?", "s:^" },
		{ "prev_comm ~ \"[!^-]\"", "\"prev_comm\" GLOB ?", "s:[^-^]" },
		{ "prev_comm ~ \"[-a^]\"", "\"prev_comm\" GLOB ?", "s:[-a^]" },
		{ "prev_comm ~ \"[a-fxyz0-3]\"", "\"prev_comm\" GLOB ?", "s:[0-3a-fx-z]" },
		{ "prev_comm ~ \"x[z-a]\" || prio == 1", "(0 OR \"prio\" = ?)", "i:1" },
		{ "prev_comm ~ \"[!a-$]*[]-]\"", "\"prev_comm\" GLOB ?", "s:?*[]-]" },
		{ "flags > 5", "(\"flags\" < 0 OR \"flags\" > ?)", "u:5" },
		{ "flags >= 0x8000000000000001", "(\"flags\" < 0 AND \"flags\" >= ?)",
		  "u:-9223372036854775807" },
		{ "flags < 5", "(\"flags\" >= 0 AND \"flags\" < ?)", "u:5" },
		{ "flags <= 0xffffffffffffff00", "(\"flags\" >= 0 OR \"flags\" <= ?)", "u:-256" },
		{ "flags == 18446744073709551615", "\"flags\" = ?", "u:-1" },
		{ "flags & 0x8000000000000000", "((\"flags\" & ?) <> 0)",
		  "u:-9223372036854775808" },
		{ "len < 5", "\"len\" < ?", "u:5" },
		{ "CPU == 1 && COMM == bash", "(cpu = ? AND comm = ?)", "u:1,s:bash" },
		{ "prev_comm == \"'; DROP TABLE ev; --\"", "\"prev_comm\" = ?",
		  "s:'; DROP TABLE ev; --" },
	};
	struct sq_filter_sql s;
	char buf[512];
	size_t k;

	for (k = 0; k < ARRAY_SIZE(cases); k++) {
		struct filter *f = parse_bind(cases[k].text);

		TU_OK(sq_filter_to_sql(f, sqlite_column, NULL, &s));
		ck_assert_msg(!strcmp(s.where, cases[k].where), "'%s': got '%s' want '%s'",
			      cases[k].text, s.where, cases[k].where);
		binds_to_string(&s, buf, sizeof(buf));
		ck_assert_msg(!strcmp(buf, cases[k].binds), "'%s': binds '%s' want '%s'",
			      cases[k].text, buf, cases[k].binds);
		sq_filter_sql_free(&s);
		ck_assert_ptr_null(s.where);
		filter_free(f);
	}
}
END_TEST

/* sq_filter_sql.eq: the `FIELD == value` conjuncts at the top, as "field:bind,..." */
START_TEST(test_sql_eq)
{
	static const struct {
		const char *text, *eq;
	} cases[] = {
		{ "prev_pid == 0", "prev_pid:0" },
		{ "prev_pid == 0 && prev_comm == bash", "prev_pid:0,prev_comm:1" },
		{ "prio > 1 && (prev_pid == 2 && flags == 3)", "prev_pid:1,flags:2" },
		{ "prev_pid == 0 || prio == 1", "" },
		{ "prio == 1 && (prev_pid == 0 || len == 2) && flags == 3", "prio:0,flags:3" },
		{ "!(prev_pid == 0)", "" },
		{ "!(prev_pid == 0 && prio == 1) && len == 2", "len:2" },
		{ "prev_pid != 0 && prev_comm ~ \"b*\"", "" },
		{ "CPU == 1 && COMM == bash && prev_pid == 3", "prev_pid:2" },
		{ "state & 4 && CPU & CPUS{1} && prio == 5", "prio:3" },
		{ "prev_pid == 1 && prev_pid == 2 && prev_pid == 3 && prev_pid == 4 &&"
		  " prev_pid == 5 && prev_pid == 6 && prev_pid == 7 && prev_pid == 8 &&"
		  " prev_pid == 9", "prev_pid:0,prev_pid:1,prev_pid:2,prev_pid:3,prev_pid:4,"
		  "prev_pid:5,prev_pid:6,prev_pid:7" },
	};
	struct sq_filter_sql s;
	char buf[512];

	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		struct filter *f = parse_bind(cases[k].text);
		size_t n = 0;

		TU_OK(sq_filter_to_sql(f, sqlite_column, NULL, &s));
		buf[0] = '\0';
		for (size_t i = 0; i < s.neq; i++) {
			ck_assert_int_ge(s.eq[i].field, 0);
			ck_assert_uint_lt(s.eq[i].bind, s.nbinds);
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s:%zu", i ? "," : "",
					      fields[s.eq[i].field].name, s.eq[i].bind);
		}
		ck_assert_msg(!strcmp(buf, cases[k].eq), "'%s': eq '%s' want '%s'",
			      cases[k].text, buf, cases[k].eq);
		sq_filter_sql_free(&s);
		filter_free(f);
	}
}
END_TEST

static const char *no_column(void *ctx, int idx)
{
	return idx == F_PRIO ? NULL : sqlite_column(ctx, idx);
}

START_TEST(test_sql_errors)
{
	struct sq_filter_sql s = { 0 };
	struct filter *f = NULL;
	struct filter_error err;

	TU_OK(filter_parse("prev_pid == 1", &f, &err));
	TU_ERR(sq_filter_to_sql(f, sqlite_column, NULL, &s), -EINVAL);
	filter_free(f);
	f = parse_bind("prev_pid == 1 || prio == 1");
	TU_ERR(sq_filter_to_sql(f, no_column, NULL, &s), TC_ERR_UNKNOWN_FIELD);
	ck_assert_ptr_null(s.where);
	filter_free(f);
	sq_filter_sql_free(NULL);
}
END_TEST

/* ---- SQLite cross-check ---------------------------------------------------- */

#define NROWS 64

static struct row rows[NROWS];

START_TEST(test_sql_crosscheck)
{
	bool by_sql[NROWS];
	size_t k, j, hits, some = 0;
	sqlite3 *db;

	make_rows(rows, NROWS);
	db = make_db(rows, NROWS);
	for (k = 0; k < ARRAY_SIZE(crosscheck_filters); k++) {
		struct filter *f = parse_bind(crosscheck_filters[k]);

		select_sql(db, f, crosscheck_filters[k], by_sql, NROWS);
		for (j = 0, hits = 0; j < NROWS; j++) {
			int e = filter_eval(f, get_row, &rows[j]);

			ck_assert_int_ge(e, 0);
			ck_assert_msg(e == by_sql[j], "'%s' row %zu (prev_comm \"%s\" flags "
				      "%" PRIu64 "): eval %d, SQL %d", crosscheck_filters[k], j,
				      rows[j].prev_comm, rows[j].flags, e, by_sql[j]);
			hits += (size_t)e;
		}
		some += hits > 0 && hits < NROWS;
		filter_free(f);
	}
	/* the rows discriminate: most filters select some rows, not all */
	ck_assert_uint_ge(some, ARRAY_SIZE(crosscheck_filters) * 3 / 4);
	sqlite3_close(db);
}
END_TEST

static Suite *sqlite_filter_suite(void)
{
	Suite *s = suite_create("sqlite_filter");
	TCase *tc = tcase_create("sql");

	tu_add_tests(tc, TU_TESTS(test_sql_text, test_sql_eq, test_sql_errors,
					test_sql_crosscheck));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(sqlite_filter_suite())
