/*
 * filter_sqlite.h - filter_event.h's rows in an in-memory SQLite table and
 * the rows a filter selects there through the SQLite backend's compiler
 * (server/store/sqlite_filter.c): what tests/test_sqlite_filter.c and
 * tests/test_chfilter.c (SQLite beside ClickHouse) both run.
 */
#ifndef TESTS_FILTER_SQLITE_H
#define TESTS_FILTER_SQLITE_H

#include <check.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "server/store/sqlite_filter.h"
#include "tests/filter_event.h"
#include "tests/testutil.h"

/* the SQL of each field of the test event: table ev's columns */
static inline const char *sqlite_column(void *ctx, int idx)
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

/*
 * make_db - an in-memory database whose table ev holds @rows (id = index;
 * unsigned values as their bit pattern, as the store keeps them).
 */
static inline sqlite3 *make_db(const struct row *rows, size_t nrows)
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
	for (k = 0; k < nrows; k++) {
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

/* the rows of make_db() that the SQL for @f selects, as flags in @sel[0..nrows) */
static inline void select_sql(sqlite3 *db, const struct filter *f, const char *text,
			      bool *sel, size_t nrows)
{
	struct sq_filter_sql s;
	sqlite3_stmt *st = NULL;
	char *q;
	size_t k;
	int rc;

	TU_OK(sq_filter_to_sql(f, sqlite_column, NULL, &s));
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
	memset(sel, 0, nrows * sizeof(*sel));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		sel[sqlite3_column_int64(st, 0)] = true;
	ck_assert_int_eq(rc, SQLITE_DONE);
	sqlite3_finalize(st);
	sqlite3_free(q);
	sq_filter_sql_free(&s);
}

#endif
