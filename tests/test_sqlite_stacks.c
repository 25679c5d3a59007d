/*
 * test_sqlite_stacks.c - the SQLite writer's stacks in memory
 * (server/store/sqlite_stacks.c): equal frames get one id, different
 * frames never share one (not across a table that filled and started
 * again either), stacks it does not keep by id stay inline, and the SQL
 * that reads a stack column back.
 */
#include "config.h"

#include <check.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/store/sqlite_stacks.h"
#include "tests/testutil.h"

/* Frames of stack @n: @depth longs, distinct for every (n, depth). */
static void frames_of(uint64_t *f, unsigned depth, uint64_t n)
{
	for (unsigned i = 0; i < depth; i++)
		f[i] = 0xffffffff81000000ull + n * 64 + i;
}

START_TEST(test_same_frames_one_id)
{
	struct sq_store s = { 0 };
	uint64_t a[12], b[12];
	int64_t ia, ib, ia2;

	frames_of(a, 12, 1);
	frames_of(b, 12, 2);
	ck_assert_int_eq(sq_stack_id(&s, a, sizeof(a), &ia), SQ_STACK_FRESH);
	ck_assert_int_eq(sq_stack_id(&s, b, sizeof(b), &ib), SQ_STACK_FRESH);
	ck_assert_int_eq(sq_stack_id(&s, a, sizeof(a), &ia2), SQ_STACK_KNOWN);
	ck_assert_int_eq(ia, ia2);
	ck_assert_int_ne(ia, ib);
	/* a prefix of a is another stack */
	ck_assert_int_eq(sq_stack_id(&s, a, sizeof(a) - 8, &ib), SQ_STACK_FRESH);
	ck_assert_int_ne(ia, ib);
	sq_stacks_free(&s);
}
END_TEST

/*
 * 100,000 distinct stacks, three times the entries the table keeps: each
 * id handed out is new, a stack seen again is either its own id or a new
 * one, never another stack's.
 */
START_TEST(test_never_merged)
{
	enum { N = 100000 };
	struct sq_store s = { 0 };
	int64_t *id = calloc(N, sizeof(*id)), last = 0, got;
	uint64_t f[16];

	ck_assert_ptr_nonnull(id);
	for (unsigned round = 0; round < 2; round++)
		for (uint64_t n = 0; n < N; n++) {
			int r;

			frames_of(f, 4 + n % 12, n);
			r = sq_stack_id(&s, f, (4 + n % 12) * 8, &got);
			ck_assert_int_ge(r, 0);
			ck_assert_int_ne(r, SQ_STACK_INLINE);
			if (r == SQ_STACK_FRESH) {
				ck_assert_int_gt(got, last);	/* ids are never reused */
				last = got;
				id[n] = got;
			} else {
				ck_assert_int_eq(got, id[n]);
			}
		}
	free(id);
	sq_stacks_free(&s);
}
END_TEST

START_TEST(test_inline)
{
	struct sq_store s = { 0 };
	static uint8_t big[SQ_STACK_MAX + 8];
	int64_t id = 0;

	ck_assert_int_eq(sq_stack_id(&s, big, 0, &id), SQ_STACK_INLINE);
	ck_assert_int_eq(sq_stack_id(&s, big, sizeof(big), &id), SQ_STACK_INLINE);
	ck_assert_int_eq(sq_stack_id(&s, big, SQ_STACK_MAX, &id), SQ_STACK_FRESH);
	sq_stacks_forget(&s);
	ck_assert_int_eq(sq_stack_id(&s, big, SQ_STACK_MAX, &id), SQ_STACK_FRESH);
	ck_assert_int_eq(id, 2);
	sq_stacks_free(&s);
}
END_TEST

START_TEST(test_read_sql)
{
	struct store_col cols[] = { { "common_pid", "common_pid", STORE_SIGNED },
				    { "caller", "caller", STORE_BLOB } };
	struct store_schema sc = { .system = "ftrace", .name = "kernel_stack", .ncols = 2,
				   .cols = cols };
	struct sq_buf b = { 0 };

	ck_assert(!store_col_is_stack(&sc, 0));
	ck_assert(store_col_is_stack(&sc, 1));
	sq_col_read(&b, &sc, 0, "main.", "e.");
	sq_buf_str(&b, " ");
	sq_col_read(&b, &sc, 1, "main.", "e.");
	ck_assert_str_eq(b.s, "e.\"common_pid\" coalesce((SELECT frames FROM main.stacks"
			 " WHERE id = e.\"caller\"), e.\"caller\")");
	free(b.s);
	sc.name = "function";	/* another event's caller is a plain column */
	ck_assert(!store_col_is_stack(&sc, 1));
}
END_TEST

/* One integer of @sql (with a ? that is 0) on @s's connection. */
static int64_t one(struct sq_store *s, const char *sql)
{
	int64_t v = -1;

	TU_OK(sq_int1(s, sql, 0, -1, &v));
	return v;
}

/*
 * The sweep after retention: of stacks 1..4, rows reference 1 (a kernel
 * stack) and 3 (a user stack), a row of before 0016 holds frames and
 * another event's blob column holds the integer 2 (not a stack column):
 * 2 and 4 go, 1 and 3 stay, and the next id handed out is past them all.
 */
START_TEST(test_sweep)
{
	struct store_handle h = { 0 };
	struct sq_store s = { .h = &h };
	uint64_t f[4];
	int64_t id;

	ck_assert_int_eq(sqlite3_open(":memory:", &s.db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(s.db,
		"CREATE TABLE event_types (id INTEGER PRIMARY KEY, system, name, table_name);"
		"CREATE TABLE event_fields (type_id, name, col, kind);"
		"CREATE TABLE stacks (id INTEGER PRIMARY KEY, frames BLOB NOT NULL);"
		"CREATE TABLE ks (caller BLOB); CREATE TABLE us (caller BLOB);"
		"CREATE TABLE fn (caller BLOB);"
		"INSERT INTO event_types VALUES (1, 'ftrace', 'kernel_stack', 'ks'),"
		" (2, 'ftrace', 'user_stack', 'us'), (3, 'ftrace', 'function', 'fn');"
		"INSERT INTO event_fields VALUES (1, 'caller', 'caller', 'blob'),"
		" (2, 'caller', 'caller', 'blob'), (3, 'caller', 'caller', 'blob');"
		"INSERT INTO stacks VALUES (1, x'01'), (2, x'02'), (3, x'03'), (4, x'04');"
		"INSERT INTO ks VALUES (1), (1), (x'0102030405060708');"
		"INSERT INTO us VALUES (3); INSERT INTO fn VALUES (2);",
		NULL, NULL, NULL), SQLITE_OK);
	TU_OK(sq_stacks_sweep(&s));
	ck_assert_int_eq(one(&s, "SELECT count(*) FROM stacks WHERE ? = 0"), 2);
	ck_assert_int_eq(one(&s, "SELECT count(*) FROM stacks WHERE id IN (1, 3) AND ? = 0"), 2);
	frames_of(f, 4, 7);
	ck_assert_int_eq(sq_stack_id(&s, f, sizeof(f), &id), SQ_STACK_FRESH);
	ck_assert_int_eq(id, 4);
	/* no stack column anywhere: nothing to sweep, nothing swept */
	ck_assert_int_eq(sqlite3_exec(s.db, "DELETE FROM event_fields WHERE type_id < 3",
				      NULL, NULL, NULL), SQLITE_OK);
	TU_OK(sq_stacks_sweep(&s));
	ck_assert_int_eq(one(&s, "SELECT count(*) FROM stacks WHERE ? = 0"), 2);
	sq_stacks_free(&s);
	sq_cache_free(&s);
	sqlite3_close(s.db);
}
END_TEST

static Suite *sqlite_stacks_suite(void)
{
	Suite *s = suite_create("sqlite_stacks");
	TCase *tc = tcase_create("stacks");

	tu_add_tests(tc, TU_TESTS(test_same_frames_one_id, test_never_merged, test_inline,
				  test_read_sql, test_sweep));
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(sqlite_stacks_suite())
