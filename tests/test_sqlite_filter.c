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
#include "tests/testutil.h"

static const char *column(void *ctx, int idx)
{
	static const char *const cols[] = {
		"\"common_pid\"", "\"prev_pid\"", "\"prio\"", "\"flags\"",
		"\"len\"", "\"prev_comm\"", "\"delta\"", "\"state\"",
	};

	if (idx == FILTER_FIELD_CPU)
		return "cpu";
	if (idx == FILTER_FIELD_COMM)
		return "comm";
	return idx >= 0 && idx < (int)ARRAY_SIZE(cols) ? cols[idx] : NULL;
}

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

		TU_OK(sq_filter_to_sql(f, column, NULL, &s));
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

		TU_OK(sq_filter_to_sql(f, column, NULL, &s));
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
	return idx == F_PRIO ? NULL : column(ctx, idx);
}

START_TEST(test_sql_errors)
{
	struct sq_filter_sql s = { 0 };
	struct filter *f = NULL;
	struct filter_error err;

	TU_OK(filter_parse("prev_pid == 1", &f, &err));
	TU_ERR(sq_filter_to_sql(f, column, NULL, &s), -EINVAL);
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

static uint32_t lcg(uint32_t *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state >> 8;
}

#define PICK(pool, st) ((pool)[lcg(st) % ARRAY_SIZE(pool)])

static void make_rows(void)
{
	static const int64_t i32[] = { INT32_MIN, -1000, -1, 0, 1, 2, 17, 1000, INT32_MAX };
	static const int64_t i8[] = { -128, -1, 0, 1, 120, 127 };
	static const int64_t i64[] = { INT64_MIN, -1, 0, 1, 5, INT64_MAX };
	static const uint64_t u64[] = {
		0, 1, 2, 3, 0x80, 0xff, INT64_MAX, 1ULL << 63, (1ULL << 63) + 5,
		UINT64_MAX - 1, UINT64_MAX, 0xffffffffffffff00ULL,
	};
	static const uint64_t u16[] = { 0, 1, 255, 256, 65535 };
	static const uint64_t u8[] = { 0, 1, 2, 4, 128, 255 };
	static const char *const strs[] = {
		"bash", "sh", "zsh", "", "basher", "ba*sh", "a[b", "x]y", "^", "-",
		"kworker/0:1", "systemd", "BASH", "b", "ab", "bash-5.2", "a?c", "abc",
		"it's", "123", "a\\b", "[!]",
	};
	static const char *const comms[] = { "bash", "swapper/0", "sshd", "kworker/1:0H" };
	uint32_t st = 42;
	size_t k;

	for (k = 0; k < NROWS; k++) {
		rows[k] = (struct row){
			.common_pid = PICK(i32, &st), .prev_pid = PICK(i32, &st),
			.prio = PICK(i8, &st), .delta = PICK(i64, &st),
			.flags = PICK(u64, &st), .len = PICK(u16, &st),
			.state = PICK(u8, &st), .cpu = lcg(&st) % 4,
			.prev_comm = PICK(strs, &st), .comm = PICK(comms, &st),
		};
	}
	/* make sure each string appears at least once */
	for (k = 0; k < ARRAY_SIZE(strs); k++)
		rows[k].prev_comm = strs[k];
}

static sqlite3 *make_db(void)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	size_t k;

	ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE ev(id INTEGER PRIMARY KEY, "
				      "common_pid INTEGER, prev_pid INTEGER, prio INTEGER, "
				      "flags INTEGER, len INTEGER, prev_comm TEXT, "
				      "delta INTEGER, state INTEGER, cpu INTEGER, comm TEXT)",
				      NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "INSERT INTO ev VALUES(?,?,?,?,?,?,?,?,?,?,?)",
					    -1, &st, NULL), SQLITE_OK);
	for (k = 0; k < NROWS; k++) {
		const struct row *r = &rows[k];

		sqlite3_bind_int64(st, 1, (int64_t)k);
		sqlite3_bind_int64(st, 2, r->common_pid);
		sqlite3_bind_int64(st, 3, r->prev_pid);
		sqlite3_bind_int64(st, 4, r->prio);
		sqlite3_bind_int64(st, 5, (int64_t)r->flags);	/* the bit pattern */
		sqlite3_bind_int64(st, 6, (int64_t)r->len);
		sqlite3_bind_text(st, 7, r->prev_comm, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 8, r->delta);
		sqlite3_bind_int64(st, 9, (int64_t)r->state);
		sqlite3_bind_int64(st, 10, (int64_t)r->cpu);
		sqlite3_bind_text(st, 11, r->comm, -1, SQLITE_STATIC);
		ck_assert_int_eq(sqlite3_step(st), SQLITE_DONE);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return db;
}

/* rows selected by the SQL for @f, as flags in @sel */
static void select_sql(sqlite3 *db, const struct filter *f, const char *text, bool *sel)
{
	struct sq_filter_sql s;
	sqlite3_stmt *st = NULL;
	char *q;
	size_t k;
	int rc;

	TU_OK(sq_filter_to_sql(f, column, NULL, &s));
	q = sqlite3_mprintf("SELECT id FROM ev WHERE %s", s.where);
	ck_assert_ptr_nonnull(q);
	rc = sqlite3_prepare_v2(db, q, -1, &st, NULL);
	ck_assert_msg(rc == SQLITE_OK, "'%s' -> '%s': %s", text, q, sqlite3_errmsg(db));
	ck_assert_int_eq(sqlite3_bind_parameter_count(st), (int)s.nbinds);
	for (k = 0; k < s.nbinds; k++) {
		if (s.binds[k].kind == FILTER_STRING)
			rc = sqlite3_bind_text(st, (int)k + 1, s.binds[k].str.s,
					       (int)s.binds[k].str.len, SQLITE_TRANSIENT);
		else
			rc = sqlite3_bind_int64(st, (int)k + 1, s.binds[k].i);
		ck_assert_int_eq(rc, SQLITE_OK);
	}
	memset(sel, 0, NROWS * sizeof(*sel));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		sel[sqlite3_column_int64(st, 0)] = true;
	ck_assert_int_eq(rc, SQLITE_DONE);
	sqlite3_finalize(st);
	sqlite3_free(q);
	sq_filter_sql_free(&s);
}

START_TEST(test_sql_crosscheck)
{
	static const char *const filters[] = {
		"prev_pid == 0", "prev_pid != 0", "prev_pid < 0", "prev_pid <= -1",
		"prev_pid > 17", "prev_pid >= 2147483647", "prev_pid & 1",
		"prev_pid == -2147483648", "common_pid > 1",
		"prio < 0 || prio > 100", "prio == -128 || prio == 127", "prio & 0x80",
		"flags == 0", "flags != 18446744073709551615", "flags > 5", "flags >= 5",
		"flags < 5", "flags <= 5", "flags > 9223372036854775807",
		"flags >= 9223372036854775808", "flags < 9223372036854775808",
		"flags <= 9223372036854775807", "flags > 18446744073709551614",
		"flags < 0xffffffffffffff00", "flags <= 0xffffffffffffff00",
		"flags >= 0xffffffffffffff00", "flags > 0x8000000000000004",
		"flags & 0x8000000000000000", "flags & 1", "flags & 0xf0",
		"len > 255", "len <= 256 && len != 0", "len & 0x100",
		"state & 0x80", "state >= 128", "state < 2",
		"delta < 0", "delta > 0", "delta == -9223372036854775808",
		"delta >= 9223372036854775807", "delta & 1", "delta & -9223372036854775808",
		"CPU == 1", "CPU >= 2 && CPU != 3", "common_cpu < 2",
		"COMM == bash", "comm ~ \"*[0-9]*\"", "COMM ~ 'k*' && CPU & 1",
		"prev_comm == bash", "prev_comm != bash", "prev_comm == \"\"",
		"prev_comm ~ \"*sh\"", "prev_comm ~ \"bash*\"", "prev_comm ~ \"*as*\"",
		"prev_comm ~ \"b?sh\"", "prev_comm ~ \"?\"", "prev_comm ~ \"??\"",
		"prev_comm ~ \"[abc]*\"", "prev_comm ~ \"[!abc]*\"", "prev_comm ~ \"[a-c]?\"",
		"prev_comm ~ \"*[]]*\"", "prev_comm ~ \"*[!]]\"", "prev_comm ~ \"a[b\"",
		"prev_comm ~ \"ba\\*sh\"", "prev_comm ~ \"ba*sh\"", "prev_comm ~ \"*\\?*\"",
		"prev_comm ~ \"^\"", "prev_comm ~ \"[^]\"", "prev_comm ~ \"[!^]*\"",
		"prev_comm ~ \"[-]\"", "prev_comm ~ \"[!-]*\"", "prev_comm ~ \"[!^-]*\"",
		"prev_comm ~ \"*[A-Z]*\"", "prev_comm ~ \"*[[]*\"", "prev_comm ~ \"[!]\"",
		"prev_comm ~ \"*[0-9]\"", "prev_comm ~ \"[z-a]\"", "prev_comm ~ \"[!z-a]*[]-]\"", "prev_comm ~ \"*'*\"",
		"prev_comm ~ \"a\\\\b\"", "prev_comm ~ \"*\\\\*\"", "prev_comm ~ \"\"",
		"!(prev_comm ~ \"*sh\")", "!prev_comm ~ \"[z-a]\"",
		"prev_comm ~ \"*sh\" && !(prio < 0 || flags > 5)",
		"(prev_pid == 0 || prev_pid == 1) && (flags & 3 || !(len > 255))",
		"!(!(CPU == 0) && !(comm == sshd)) || delta < 0 && state != 0",
		"prev_comm == '123' || prev_comm == \"it's\" || prev_comm == '[!]'",
		"prev_pid == 0 || prio == 1 && len == 1",
		"CPU & CPUS{0,2-3}", "CPU == CPUS{2}", "CPU != CPUS{2}", "CPU == CPUS{1-2}",
		"CPU != CPUS{0-1}", "prev_pid & CPUS{0-3}", "!(CPU & CPUS{1})",
		"prev_comm ~ \"!*sh\"", "prev_comm ~ \"![a-c]*\"", "!(prev_comm ~ \"!bash\")",
		"prev_comm ~ \"![z-a]\"",
	};
	bool by_sql[NROWS];
	size_t k, j, hits, some = 0;
	sqlite3 *db;

	make_rows();
	db = make_db();
	for (k = 0; k < ARRAY_SIZE(filters); k++) {
		struct filter *f = parse_bind(filters[k]);

		select_sql(db, f, filters[k], by_sql);
		for (j = 0, hits = 0; j < NROWS; j++) {
			int e = filter_eval(f, get_row, &rows[j]);

			ck_assert_int_ge(e, 0);
			ck_assert_msg(e == by_sql[j], "'%s' row %zu (prev_comm \"%s\" flags "
				      "%" PRIu64 "): eval %d, SQL %d", filters[k], j,
				      rows[j].prev_comm, rows[j].flags, e, by_sql[j]);
			hits += (size_t)e;
		}
		some += hits > 0 && hits < NROWS;
		filter_free(f);
	}
	/* the rows discriminate: most filters select some rows, not all */
	ck_assert_uint_ge(some, ARRAY_SIZE(filters) * 3 / 4);
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
