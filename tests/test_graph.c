/*
 * test_graph.c - traceq's function_graph view (traceq/graph.c): leaf calls
 * on one line, nesting by depth, durations from entry/exit times, threads
 * kept apart, rows sorted by time, exits without their entries,
 * entries rebuilt for threads that recorded exits only, the cap on
 * the rows a view holds, and the walk the flame chart takes.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"
#include "traceq/graph.h"

static void add(struct graph *g, int64_t ts, int32_t pid, bool exit,
		uint64_t func, int32_t depth, const char *name)
{
	struct graph_row r = { .ts = ts, .pid = pid, .exit = exit,
			       .func = func, .depth = depth, .cpu = 1 };

	snprintf(r.comm, sizeof(r.comm), "p");
	snprintf(r.name, sizeof(r.name), "%s", name);
	TU_OK(graph_add(g, &r));
}

START_TEST(test_nesting_and_leaves)
{
	char *text = NULL, *p;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct graph *g;

	TU_OK(graph_new(f, &g));
	/* given out of order: the view sorts by time */
	add(g, 5000, 7, true, 0x10, 0, "outer");
	add(g, 1000, 7, false, 0x10, 0, "outer");
	add(g, 2000, 7, false, 0x20, 1, "leaf");
	add(g, 2500, 7, true, 0x20, 1, "leaf");
	add(g, 3000, 7, false, 0x30, 1, "mid");
	add(g, 3100, 7, false, 0x20, 2, "leaf");
	add(g, 3200, 7, true, 0x20, 2, "leaf");
	add(g, 4000, 7, true, 0x30, 1, "mid");
	graph_print(g);
	graph_free(g);
	fclose(f);
	p = text;
	ck_assert_ptr_nonnull(strstr(p, "|              | outer() {\n"));
	ck_assert_ptr_nonnull(p = strstr(p, "|      0.500 us |   leaf();\n"));
	ck_assert_ptr_nonnull(p = strstr(p, "|              |   mid() {\n"));
	ck_assert_ptr_nonnull(p = strstr(p, "|      0.100 us |     leaf();\n"));
	ck_assert_ptr_nonnull(p = strstr(p, "|      1.000 us |   } /* mid */\n"));
	ck_assert_ptr_nonnull(p = strstr(p, "|      4.000 us | } /* outer */\n"));
	ck_assert_ptr_nonnull(strstr(text, "  1)              p-7 | "));
	free(text);
}
END_TEST

START_TEST(test_threads_apart)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct graph *g;

	TU_OK(graph_new(f, &g));
	/* thread 8's entry between thread 7's entry and exit: 7's call is
	 * still a leaf, 8's call is still open at the end */
	add(g, 100, 7, false, 0x20, 0, "a");
	add(g, 150, 8, false, 0x30, 0, "b");
	add(g, 200, 7, true, 0x20, 0, "a");
	graph_print(g);
	graph_free(g);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, "p-7 |      0.100 us | a();\n"));
	ck_assert_ptr_nonnull(strstr(text, "p-8 |              | b() {\n"));
	free(text);
}
END_TEST

START_TEST(test_exit_without_entry)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct graph_row r = { .ts = 9000, .pid = 3, .exit = true,
			       .func = 0xabc, .depth = 1, .calltime = 100,
			       .rettime = 2100 };
	struct graph *g;

	TU_OK(graph_new(f, &g));
	TU_OK(graph_add(g, &r));
	graph_print(g);
	graph_free(g);
	fclose(f);
	/* its entry rebuilt from calltime: a leaf of rettime - calltime;
	 * no name: the address */
	ck_assert_ptr_nonnull(strstr(text, "|      2.000 us |   0xabc();\n"));
	free(text);
}
END_TEST

/* An exit whose thread has entries, but not its own (the query cut it
 * off): `}` with rettime - calltime. */
START_TEST(test_exit_cut_off)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct graph_row r = { .ts = 9000, .pid = 3, .exit = true,
			       .func = 0xabc, .depth = 0, .calltime = 100,
			       .rettime = 2100 };
	struct graph *g;

	TU_OK(graph_new(f, &g));
	add(g, 8000, 3, false, 0x20, 1, "leaf");
	add(g, 8500, 3, true, 0x20, 1, "leaf");
	TU_OK(graph_add(g, &r));
	graph_print(g);
	graph_free(g);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, "|      0.500 us |   leaf();\n"));
	ck_assert_ptr_nonnull(strstr(text, "|      2.000 us | } /* 0xabc */\n"));
	free(text);
}
END_TEST

static void add_exit(struct graph *g, int64_t ts, int32_t pid, uint64_t func,
		     int32_t depth, uint64_t call, uint64_t ret,
		     const char *name)
{
	struct graph_row r = { .ts = ts, .pid = pid, .exit = true,
			       .func = func, .depth = depth, .cpu = 0,
			       .calltime = call, .rettime = ret };

	snprintf(r.comm, sizeof(r.comm), "p");
	snprintf(r.name, sizeof(r.name), "%s", name);
	TU_OK(graph_add(g, &r));
}

/* Exits only, in post-order, with a clock of 3 units per ns (a TSC):
 * the entries are rebuilt where the calls began and nest as they did. */
START_TEST(test_exits_only_rebuilt)
{
	char *text = NULL, *p;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct graph *g;

	TU_OK(graph_new(f, &g));
	/* outer [1000, 5000] ns { leaf [2000, 2500]; mid [3000, 4000]
	 * { leaf [3100, 3200] } }; thread 9: one call, scale unknown */
	add_exit(g, 2500, 7, 0x20, 1, 6000, 7500, "leaf");
	add_exit(g, 3200, 7, 0x20, 2, 9300, 9600, "leaf");
	add_exit(g, 4000, 7, 0x30, 1, 9000, 12000, "mid");
	add_exit(g, 5000, 7, 0x10, 0, 3000, 15000, "outer");
	add_exit(g, 4100, 9, 0x40, 0, 50, 350, "solo");
	graph_print(g);
	graph_free(g);
	fclose(f);
	p = text;
	ck_assert_ptr_nonnull(strstr(p, "p-7 |              | outer() {\n"));
	ck_assert_ptr_nonnull(p = strstr(p, "|      0.500 us |   leaf();\n"));
	ck_assert_ptr_nonnull(p = strstr(p, "|              |   mid() {\n"));
	ck_assert_ptr_nonnull(p = strstr(p, "|      0.100 us |     leaf();\n"));
	ck_assert_ptr_nonnull(p = strstr(p, "|      1.000 us |   } /* mid */\n"));
	ck_assert_ptr_nonnull(strstr(p, "|      4.000 us | } /* outer */\n"));
	ck_assert_ptr_nonnull(strstr(text, "p-9 |      0.300 us | solo();\n"));
	free(text);
}
END_TEST

/* The CI case: exits whose ts do not follow rettime on one line (the
 * collector's clock map, rounding), so the fitted entry of the second
 * leaf lands 7 ns before the exit of the recurse it follows. The ring's
 * clock orders them: the recurse closes first and the leaf is a sibling. */
START_TEST(test_exits_only_ring_order)
{
	char *text = NULL, *p;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct graph *g;

	TU_OK(graph_new(f, &g));
	add_exit(g, 1000, 7, 0x20, 2, 100, 110, "leaf");
	add_exit(g, 1010, 7, 0x30, 1, 90, 120, "recurse");
	add_exit(g, 1015, 7, 0x20, 1, 121, 130, "leaf");
	add_exit(g, 1040, 7, 0x10, 0, 80, 140, "run");
	graph_print(g);
	graph_free(g);
	fclose(f);
	p = text;
	ck_assert_ptr_nonnull(p = strstr(p, "| run() {\n"));
	ck_assert_ptr_nonnull(p = strstr(p, "|   recurse() {\n"));
	ck_assert_ptr_nonnull(p = strstr(p, "|     leaf();\n"));
	ck_assert_ptr_nonnull(p = strstr(p, "|   } /* recurse */\n"));
	ck_assert_ptr_nonnull(p = strstr(p, "|   leaf();\n"));
	ck_assert_ptr_nonnull(p = strstr(p, "| } /* run */\n"));
	ck_assert_ptr_null(strstr(text, "leaf() {"));
	free(text);
}
END_TEST

START_TEST(test_empty)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct graph *g;

	TU_OK(graph_new(f, &g));
	graph_print(g);
	graph_free(g);
	fclose(f);
	ck_assert_uint_eq(len, 0);
	free(text);
}
END_TEST

/* Past graph_max_rows rows a view refuses the next one (lowered here from 2^20). */
START_TEST(test_rows_capped)
{
	struct graph_row r = { .ts = 1, .pid = 1, .func = 0x10 };
	size_t keep = graph_max_rows;
	struct graph *g;

	ck_assert_uint_eq(graph_max_rows, GRAPH_MAX_ROWS);
	graph_max_rows = 3000;
	TU_OK(graph_new(stdout, &g));
	for (int i = 0; i < 3000; i++)
		TU_OK(graph_add(g, &r));
	TU_ERR(graph_add(g, &r), -E2BIG);
	graph_free(g);
	graph_max_rows = keep;
}
END_TEST

/* What graph_walk() tells, in the order told. */
struct walked {
	struct graph_call c[8];
	char name[8][128];
	int n, opens;
};

static void walk_open(void *arg, const struct graph_row *e)
{
	(void)e;
	((struct walked *)arg)->opens++;
}

static void walk_call(void *arg, const struct graph_call *c)
{
	struct walked *w = arg;

	ck_assert_int_lt(w->n, 8);
	w->c[w->n] = *c;
	snprintf(w->name[w->n++], sizeof(w->name[0]), "%s", c->exit->name);
}

/* The walk --serve's flame chart takes: the exits-only thread above, each
 * call's start and duration where the print puts them, seq ordering the
 * calls as entered (outer before inner), leaves told apart. */
START_TEST(test_walk_calls)
{
	static const struct graph_ops ops = { .open = walk_open, .call = walk_call };
	static const char *const entered[] = { "outer", "leaf", "mid", "leaf" };
	static const int64_t start[] = { 1000, 2000, 3000, 3100 }, ns[] = { 4000, 500, 1000, 100 };
	struct walked w = { 0 };
	struct graph *g;
	int order[4];

	TU_OK(graph_new(NULL, &g));
	add_exit(g, 2500, 7, 0x20, 1, 6000, 7500, "leaf");
	add_exit(g, 3200, 7, 0x20, 2, 9300, 9600, "leaf");
	add_exit(g, 4000, 7, 0x30, 1, 9000, 12000, "mid");
	add_exit(g, 5000, 7, 0x10, 0, 3000, 15000, "outer");
	TU_OK(graph_walk(g, &ops, &w));
	ck_assert_int_eq(w.n, 4);
	ck_assert_int_eq(w.opens, 2);	/* outer, mid */
	for (int i = 0; i < 4; i++) {	/* by seq */
		order[i] = 0;
		for (int j = 0; j < 4; j++)
			order[i] += w.c[j].seq < w.c[i].seq;
	}
	for (int i = 0; i < 4; i++) {
		int k = order[i];

		ck_assert_str_eq(w.name[i], entered[k]);
		ck_assert_int_eq(w.c[i].start, start[k]);
		ck_assert_int_eq(w.c[i].ns, ns[k]);
		ck_assert(w.c[i].leaf == !strcmp(w.name[i], "leaf"));
	}
	graph_free(g);
}
END_TEST

static Suite *graph_suite(void)
{
	Suite *s = suite_create("graph");
	TCase *tc = tcase_create("graph");

	tu_add_tests(tc, TU_TESTS(test_nesting_and_leaves, test_threads_apart,
					test_exit_without_entry, test_exit_cut_off,
					test_exits_only_rebuilt, test_exits_only_ring_order,
					test_empty, test_rows_capped, test_walk_calls));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(graph_suite())
