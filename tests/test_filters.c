/*
 * test_filters.c - unit tests for the collector's filter table
 * (server/filter_table.*): rule syntax and its errors, event and subsystem rules
 * with the kernel's "keeps its previous filter" semantics, host globs,
 * rule order, "0" clearing, and tables swapped as on a reload; and which
 * resolved filters are pushed down to agents (server/pushdown.*).
 */
#include "config.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "common/tc_error.h"
#include "server/filter_table.h"
#include "server/pushdown.h"
#include "tests/testutil.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const struct filter_field switch_fields[] = {
	{ "common_pid", FILTER_SIGNED, 4 },
	{ "prev_comm", FILTER_STRING, 16 },
	{ "prev_pid", FILTER_SIGNED, 4 },
	{ "next_pid", FILTER_SIGNED, 4 },
};
static const struct filter_field wakeup_fields[] = {
	{ "common_pid", FILTER_SIGNED, 4 },
	{ "comm", FILTER_STRING, 16 },
	{ "pid", FILTER_SIGNED, 4 },
};
static const struct filter_schema sw = { switch_fields, ARRAY_SIZE(switch_fields) };
static const struct filter_schema wk = { wakeup_fields, ARRAY_SIZE(wakeup_fields) };

struct ev {
	int64_t common_pid, prev_pid, next_pid, pid;
};

static int get(void *ctx, int idx, struct filter_value *v)
{
	const struct ev *e = ctx;

	v->kind = FILTER_SIGNED;
	switch (idx) {
	case 0: v->i = e->common_pid; break;
	case 2: v->i = e->prev_pid; break;
	case 3: v->i = e->next_pid; break;
	default: v->kind = FILTER_STRING; v->str.s = "x"; v->str.len = 1; break;
	}
	return 0;
}

struct reports {
	int n;
	char last[1024];
};

static void report(void *ctx, const char *system, const char *name, const char *rule,
		   const char *why)
{
	struct reports *r = ctx;

	r->n++;
	snprintf(r->last, sizeof(r->last), "%s:%s|%s|%s", system, name, rule, why);
}

static struct filter_table *table(const char *const *rules, size_t n)
{
	struct filter_table *fs;
	char err[512];

	ck_assert_int_eq(filter_table_new(&fs), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(filter_table_add(fs, rules[i], err, sizeof(err)) == 0, "%s: %s",
			      rules[i], err);
	return fs;
}

/* The effective filter's text for host/system:name, or "" for none. */
static const char *resolve(struct filter_table *fs, const char *host, const char *sys,
			   const char *name, const struct filter_schema *sc, struct reports *r)
{
	static char text[256];
	struct filter *f = (struct filter *)1;

	ck_assert_int_eq(filter_table_resolve(fs, host, sys, name, sc, &f, report, r), 0);
	snprintf(text, sizeof(text), "%s", f ? filter_text(f) : "");
	filter_free(f);
	return text;
}

START_TEST(test_event_rule)
{
	const char *rules[] = { "sched:sched_switch prev_pid != 0" };
	struct filter_table *fs = table(rules, 1);
	struct reports r = { 0 };
	struct filter *f = NULL;
	struct ev idle = { .prev_pid = 0 }, busy = { .prev_pid = 42 };

	ck_assert_str_eq(resolve(fs, "h", "sched", "sched_switch", &sw, &r), "prev_pid != 0");
	ck_assert_str_eq(resolve(fs, "h", "sched", "sched_wakeup", &wk, &r), "");
	ck_assert_str_eq(resolve(fs, "h", "irq", "sched_switch", &sw, &r), "");
	ck_assert_int_eq(r.n, 0);
	ck_assert_int_eq(filter_table_resolve(fs, "h", "sched", "sched_switch", &sw, &f,
					      NULL, NULL), 0);
	ck_assert_int_eq(filter_eval(f, get, &idle), 0);
	ck_assert_int_eq(filter_eval(f, get, &busy), 1);
	filter_free(f);
	filter_table_unref(fs);
}
END_TEST

START_TEST(test_subsystem_keeps_previous)
{
	/* sched_wakeup has no prev_pid: it keeps the common_pid filter */
	const char *rules[] = { "sched common_pid > 100", "sched prev_pid != 0" };
	struct filter_table *fs = table(rules, 2);
	struct reports r = { 0 };

	ck_assert_str_eq(resolve(fs, "h", "sched", "sched_switch", &sw, &r), "prev_pid != 0");
	ck_assert_int_eq(r.n, 0);
	ck_assert_str_eq(resolve(fs, "h", "sched", "sched_wakeup", &wk, &r), "common_pid > 100");
	ck_assert_int_eq(r.n, 1);
	ck_assert_msg(strstr(r.last, "sched:sched_wakeup|sched prev_pid != 0|") != NULL, "%s",
		      r.last);
	ck_assert_msg(strstr(r.last, "unknown field 'prev_pid'") != NULL, "%s", r.last);
	ck_assert_msg(strstr(r.last, "\n  ^") != NULL, "caret under the field: %s", r.last);
	filter_table_unref(fs);
}
END_TEST

START_TEST(test_type_error_keeps_previous)
{
	const char *rules[] = { "sched:sched_switch next_pid == 1",
				"sched:sched_switch prev_comm > 3" };
	struct filter_table *fs = table(rules, 2);
	struct reports r = { 0 };

	ck_assert_str_eq(resolve(fs, "h", "sched", "sched_switch", &sw, &r), "next_pid == 1");
	ck_assert_int_eq(r.n, 1);
	ck_assert_msg(strstr(r.last, "string field") != NULL, "%s", r.last);
	filter_table_unref(fs);
}
END_TEST

START_TEST(test_host_globs_and_order)
{
	const char *rules[] = { "sched prev_pid != 0", "[host=web*] sched:sched_switch next_pid == 7",
				"[host=db?] sched 0" };
	struct filter_table *fs = table(rules, 3);
	struct reports r = { 0 };

	ck_assert_str_eq(resolve(fs, "web12", "sched", "sched_switch", &sw, &r), "next_pid == 7");
	ck_assert_str_eq(resolve(fs, "api1", "sched", "sched_switch", &sw, &r), "prev_pid != 0");
	ck_assert_str_eq(resolve(fs, "db1", "sched", "sched_switch", &sw, &r), "");
	ck_assert_str_eq(resolve(fs, "db10", "sched", "sched_switch", &sw, &r), "prev_pid != 0");
	filter_table_unref(fs);
}
END_TEST

START_TEST(test_reload_swaps_tables)
{
	const char *a[] = { "sched:sched_switch prev_pid != 0" };
	const char *b[] = { "sched:sched_switch prev_pid == 0" };
	struct filter_table *old = table(a, 1), *held = filter_table_ref(old), *cur;
	struct reports r = { 0 };

	/* a reload replaces the table; a holder of the old one still resolves it */
	filter_table_unref(old);
	cur = table(b, 1);
	ck_assert_str_eq(resolve(held, "h", "sched", "sched_switch", &sw, &r), "prev_pid != 0");
	ck_assert_str_eq(resolve(cur, "h", "sched", "sched_switch", &sw, &r), "prev_pid == 0");
	ck_assert_uint_eq(filter_table_count(cur), 1);
	filter_table_unref(held);
	filter_table_unref(cur);
	ck_assert_str_eq(resolve(NULL, "h", "sched", "sched_switch", &sw, &r), "");
}
END_TEST

struct bad {
	const char *rule;
	int code;
	const char *caret;	/* the caret line expected under the rule */
};

START_TEST(test_rule_errors)
{
	static const struct bad bad[] = {
		{ "sched", TC_ERR_SYNTAX, "       ^" },
		{ "[host=web* sched x == 1", TC_ERR_SYNTAX, "  ^~~~~~" },
		{ "[host=] sched x == 1", TC_ERR_SYNTAX, "  ^~~~~~~" },
		{ "sched: x == 1", TC_ERR_SYNTAX, "  ^~~~~~" },
		{ "sched/x y == 1", TC_ERR_SYNTAX, "  ^~~~~" },
		{ "[host=a] sched prev_pid === 1", TC_ERR_BAD_OPERATOR, "                          ^" },
		{ "sched:sched_switch (prev_pid == 1", TC_ERR_UNEXPECTED_END, "\n                     ^\n" },
	};
	struct filter_table *fs;
	char err[512];

	ck_assert_int_eq(filter_table_new(&fs), 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		int ret = filter_table_add(fs, bad[i].rule, err, sizeof(err));

		ck_assert_msg(ret == bad[i].code, "%s: got %s", bad[i].rule, tc_strerror(ret));
		ck_assert_msg(strstr(err, bad[i].rule) != NULL, "%s", err);
		ck_assert_msg(strstr(err, bad[i].caret) != NULL, "'%s': caret '%s' not in:\n%s",
			      bad[i].rule, bad[i].caret, err);
	}
	ck_assert_uint_eq(filter_table_count(fs), 0);
	filter_table_unref(fs);
}
END_TEST

/* Bound to @schema: the text push-down would send, or NULL. */
static const char *pushed(const char *text, const struct filter_schema *schema, struct filter **f)
{
	const char *why = NULL, *out;

	ck_assert_int_eq(filter_parse(text, f, NULL), 0);
	ck_assert_int_eq(filter_bind(*f, schema, NULL), 0);
	out = pushdown_text(*f, &why);
	ck_assert(out ? why == NULL : why != NULL);
	return out;
}

START_TEST(test_pushdown_text)
{
	static const struct {
		const char *text;
		const struct filter_schema *schema;
		bool pushable;
	} cases[] = {
		{ "prev_pid == 0", &sw, true },
		{ "CPU == 1 && prev_comm ~ \"k*\"", &sw, true },
		{ "COMM == \"sleep\"", &sw, false },		/* the generic COMM */
		{ "prev_pid == 0 || !(comm != \"x\")", &sw, false },
		{ "comm == \"sleep\"", &wk, true },		/* the event's own field */
	};
	struct filter *f;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *t = pushed(cases[i].text, cases[i].schema, &f);

		ck_assert_msg(cases[i].pushable == (t != NULL), "%s", cases[i].text);
		if (t)
			ck_assert_str_eq(t, cases[i].text);
		filter_free(f);
	}
}
END_TEST

START_TEST(test_pushdown_queue)
{
	struct pushdown_q q = { 0 };
	struct proto_msg *msgs;
	size_t n;

	ck_assert_int_eq(pushdown_queue(&q, "sched", "sched_switch", "prev_pid == 0"), 0);
	ck_assert_int_eq(pushdown_queue(&q, "irq", "irq_handler_entry", NULL), 0);
	pushdown_take(&q, &msgs, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(q.n, 0);
	ck_assert_int_eq(msgs[0].type, MSG_FILTER);
	ck_assert_str_eq(msgs[0].filter.name, "sched_switch");
	ck_assert_str_eq(msgs[0].filter.text, "prev_pid == 0");
	ck_assert_str_eq(msgs[1].filter.system, "irq");
	ck_assert_str_eq(msgs[1].filter.text, "");	/* NULL: clear */
	for (size_t i = 0; i < n; i++)
		proto_msg_free(&msgs[i]);
	free(msgs);
	ck_assert_int_eq(pushdown_queue(&q, "sched", "x", "y"), 0);
	pushdown_q_free(&q);
	ck_assert_uint_eq(q.n, 0);
	ck_assert_ptr_null(q.msgs);
}
END_TEST

static Suite *filters_suite(void)
{
	Suite *s = suite_create("filters");
	TCase *tc = tcase_create("table");

	tu_add_tests(tc, TU_TESTS(test_event_rule, test_subsystem_keeps_previous,
					test_type_error_keeps_previous, test_host_globs_and_order,
					test_reload_swaps_tables, test_rule_errors,
					test_pushdown_text, test_pushdown_queue));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(filters_suite())
