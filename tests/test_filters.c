/*
 * test_filters.c - unit tests for the collector's filter table
 * (server/ingest/filter_table.*): rule syntax and its errors, event and subsystem rules
 * with the kernel's "keeps its previous filter" semantics, host globs,
 * rule order, "0" clearing, and tables swapped as on a reload; and which
 * resolved filters are pushed down to agents (server/ingest/pushdown.*).
 */
#include "config.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "common/tc_error.h"
#include "server/ingest/filter_table.h"
#include "server/ingest/decode.h"
#include "server/ingest/pushdown.h"
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

	TU_OK(filter_table_new(&fs));
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

	TU_OK(filter_table_resolve(fs, host, sys, name, sc, &f, report, r));
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
	TU_EQ(r.n, 0);
	TU_OK(filter_table_resolve(fs, "h", "sched", "sched_switch", &sw, &f, NULL, NULL));
	TU_EQ(filter_eval(f, get, &idle), 0);
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
	TU_EQ(r.n, 0);
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

	TU_OK(filter_table_new(&fs));
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

/*
 * Events as push-down sees them: fields with the types their formats give
 * (what the kernel's filter goes by) and the filter's schema built from
 * them as sink.c does.
 */
static const struct decode_field switch_dfields[] = {
	{ .name = "common_pid", .kind = STORE_SIGNED, .size = 4, .type = "int" },
	{ .name = "prev_comm", .kind = STORE_STRING, .size = 16, .type = "char[16]" },
	{ .name = "prev_pid", .kind = STORE_SIGNED, .size = 4, .type = "pid_t" },
	{ .name = "next_pid", .kind = STORE_SIGNED, .size = 4, .type = "pid_t" },
};
static const struct decode_field wakeup_dfields[] = {
	{ .name = "common_pid", .kind = STORE_SIGNED, .size = 4, .type = "int" },
	{ .name = "comm", .kind = STORE_STRING, .size = 16, .type = "char[16]" },
	{ .name = "pid", .kind = STORE_SIGNED, .size = 4, .type = "pid_t" },
};
/* one field of each kind the kernel's filter tells apart */
static const struct decode_field kinds_dfields[] = {
	{ .name = "fixed", .kind = STORE_STRING, .size = 16, .type = "char[16]" },
	{ .name = "dyn", .kind = STORE_STRING, .size = 0, .type = "__data_loc char[]" },
	{ .name = "rel", .kind = STORE_STRING, .size = 0, .type = "__rel_loc char[]" },
	{ .name = "flex", .kind = STORE_STRING, .size = 0, .type = "char[]" },
	{ .name = "mac", .kind = STORE_STRING, .size = 6, .type = "u8[6]" },
	{ .name = "ptr", .kind = STORE_UNSIGNED, .size = 8, .type = "const char *" },
	{ .name = "num", .kind = STORE_SIGNED, .size = 4, .type = "int" },
};
static const struct decode_type switch_dt = {
	"sched", "sched_switch", 1, ARRAY_SIZE(switch_dfields), switch_dfields, NULL };
static const struct decode_type wakeup_dt = {
	"sched", "sched_wakeup", 2, ARRAY_SIZE(wakeup_dfields), wakeup_dfields, NULL };
static const struct decode_type kinds_dt = {
	"test", "kinds", 3, ARRAY_SIZE(kinds_dfields), kinds_dfields, NULL };

/* Parsed and bound to @t's fields: the text push-down would send, or NULL. */
static const char *pushed(const char *text, const struct decode_type *t, struct filter **f)
{
	struct filter_field ff[16];
	struct filter_schema schema = { ff, t->nfields };
	const char *why = NULL, *out;

	ck_assert_uint_le(t->nfields, ARRAY_SIZE(ff));
	for (unsigned i = 0; i < t->nfields; i++)
		ff[i] = (struct filter_field){
			t->fields[i].name,
			t->fields[i].kind == STORE_SIGNED ? FILTER_SIGNED :
			t->fields[i].kind == STORE_UNSIGNED ? FILTER_UNSIGNED : FILTER_STRING,
			t->fields[i].size };
	TU_OK(filter_parse(text, f, NULL));
	ck_assert_msg(filter_bind(*f, &schema, NULL) == 0, "%s does not bind", text);
	out = pushdown_text(*f, t, &why);
	ck_assert(out ? why == NULL : why != NULL);
	return out;
}

struct push_case {
	const char *text;
	const struct decode_type *t;
	bool pushable;
};

static void check_cases(const struct push_case *cases, size_t n)
{
	struct filter *f;

	for (size_t i = 0; i < n; i++) {
		const char *t = pushed(cases[i].text, cases[i].t, &f);

		ck_assert_msg(cases[i].pushable == (t != NULL), "%s: %s, expected %s",
			      cases[i].text, t ? "pushed" : "kept here",
			      cases[i].pushable ? "pushed" : "kept here");
		if (t)
			ck_assert_str_eq(t, cases[i].text);
		filter_free(f);
	}
}

START_TEST(test_pushdown_text)
{
	static const struct push_case cases[] = {
		{ "prev_pid == 0", &switch_dt, true },
		{ "CPU == 1 && prev_comm ~ \"k*\"", &switch_dt, true },
		{ "COMM == \"sleep\"", &switch_dt, false },	/* the generic COMM */
		{ "prev_pid == 0 || !(comm != \"x\")", &switch_dt, false },
		{ "comm == \"sleep\"", &wakeup_dt, true },	/* the event's own field */
		/* the issue's: the kernel matched it against the array's last bytes */
		{ "prev_comm ~ \"*/1\"", &switch_dt, false },
		/* one predicate the kernel evaluates otherwise keeps the whole filter */
		{ "prev_pid == 0 || prev_comm ~ \"*sh\"", &switch_dt, false },
		{ "prev_pid == 0 && !(prev_comm ~ \"*sh\")", &switch_dt, false },
		{ "prev_pid == 0 || prev_comm ~ \"ba*\"", &switch_dt, true },
	};

	check_cases(cases, ARRAY_SIZE(cases));
}
END_TEST

/*
 * The rule table: each kind of field the kernel's filter tells apart
 * (trace_events_filter.c, filter_assign_type()) by each way it matches a
 * string (filter_parse_regex()): pushed only where the kernel keeps
 * exactly what we keep. The fixed and __data_loc rows were checked
 * against the kernel (tracefs instances, sched_switch's char[16] comms,
 * sched_process_fork's __data_loc ones); tests/test_pushdown.sh does it
 * end to end.
 */
START_TEST(test_pushdown_rules)
{
	static const struct push_case cases[] = {
		/* char[16]: the array's size is the string's length */
		{ "fixed == \"bash\"", &kinds_dt, true },
		{ "fixed != \"bash\"", &kinds_dt, true },
		{ "fixed ~ \"bash\"", &kinds_dt, true },
		{ "fixed ~ \"!bash\"", &kinds_dt, true },
		{ "fixed == \"0123456789abcdef\"", &kinds_dt, true },		/* 16 */
		{ "fixed == \"0123456789abcdefg\"", &kinds_dt, false },	/* 17 */
		{ "fixed ~ \"ba*\"", &kinds_dt, true },
		{ "fixed ~ \"!ba*\"", &kinds_dt, true },
		{ "fixed ~ \"*sh\"", &kinds_dt, false },
		{ "fixed ~ \"!*sh\"", &kinds_dt, false },
		{ "fixed ~ \"*\"", &kinds_dt, false },
		{ "fixed ~ \"*as*\"", &kinds_dt, false },
		{ "fixed ~ \"b?sh\"", &kinds_dt, false },
		{ "fixed ~ \"[b]ash\"", &kinds_dt, false },
		{ "fixed ~ \"b*h\"", &kinds_dt, false },
		{ "fixed ~ \"ba**\"", &kinds_dt, false },
		{ "fixed ~ \"ba\\*\"", &kinds_dt, false },
		{ "fixed ~ \"1*\"", &kinds_dt, false },	/* compared literally */
		{ "fixed ~ \"!1*\"", &kinds_dt, false },
		{ "fixed ~ \"123\"", &kinds_dt, true },
		/* __data_loc and __rel_loc: the stored length, NUL included */
		{ "dyn == \"bash\"", &kinds_dt, true },
		{ "dyn == \"0123456789abcdefg\"", &kinds_dt, true },
		{ "dyn ~ \"ba*\"", &kinds_dt, true },
		{ "dyn ~ \"*sh\"", &kinds_dt, true },
		{ "dyn ~ \"!*sh\"", &kinds_dt, true },
		{ "dyn ~ \"*as*\"", &kinds_dt, true },
		{ "dyn ~ \"b?sh\"", &kinds_dt, true },
		{ "dyn ~ \"[b]a*h\"", &kinds_dt, true },
		{ "dyn ~ \"1*\"", &kinds_dt, false },
		{ "dyn ~ \"123\"", &kinds_dt, true },
		{ "rel ~ \"*sh\"", &kinds_dt, true },
		{ "rel ~ \"1?\"", &kinds_dt, false },
		/* not strings of the kernel's kinds */
		{ "flex == \"bash\"", &kinds_dt, false },
		{ "flex ~ \"ba*\"", &kinds_dt, false },
		{ "mac == \"abcdef\"", &kinds_dt, false },
		{ "ptr == 0", &kinds_dt, false },
		{ "ptr != 0 || num == 1", &kinds_dt, false },
		/* numbers and CPU */
		{ "num == 1", &kinds_dt, true },
		{ "num & 4 && CPU < 2", &kinds_dt, true },
		{ "num == 1 && (dyn ~ \"*sh\" || !(fixed ~ \"ba*\"))", &kinds_dt, true },
		{ "num == 1 && (dyn ~ \"*sh\" || !(fixed ~ \"*a*\"))", &kinds_dt, false },
	};

	check_cases(cases, ARRAY_SIZE(cases));
}
END_TEST

START_TEST(test_pushdown_queue)
{
	struct pushdown_q q = { 0 };
	struct proto_msg *msgs;
	size_t n;

	TU_OK(pushdown_queue(&q, "sched", "sched_switch", "prev_pid == 0"));
	TU_OK(pushdown_queue(&q, "irq", "irq_handler_entry", NULL));
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
	TU_OK(pushdown_queue(&q, "sched", "x", "y"));
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
					test_pushdown_text, test_pushdown_rules,
					test_pushdown_queue));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(filters_suite())
