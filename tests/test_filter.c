/*
 * test_filter.c - unit tests for common/filter.* and common/query.*: parsing
 * and precedence, every operator, evaluation edge cases and globs, error
 * positions, query parsing and the caret rendering. The SQL the SQLite
 * backend makes of a filter is tested in tests/test_sqlite_filter.c.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "common/query.h"
#include "common/tc_error.h"
#include "tests/filter_event.h"
#include "tests/testutil.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* parse, bind and evaluate @text on @r */
static int match(const char *text, const struct row *r)
{
	struct filter *f = parse_bind(text);
	int ret = filter_eval(f, get_row, (void *)r);

	ck_assert_msg(ret >= 0, "eval '%s': %s", text, tc_strerror(ret));
	filter_free(f);
	return ret;
}

/* ---- parsing and precedence ------------------------------------------- */

START_TEST(test_precedence)
{
	struct row r = base;

	/* a || b && c: a true, b and c false -> true only if && binds tighter */
	ck_assert_int_eq(match("prev_pid == 0 || prio == 1 && len == 1", &r), 1);
	TU_EQ(match("(prev_pid == 0 || prio == 1) && len == 1", &r), 0);
	/* b && c || a */
	ck_assert_int_eq(match("prio == 1 && len == 1 || prev_pid == 0", &r), 1);
	TU_EQ(match("prio == 1 && (len == 1 || prev_pid == 0)", &r), 0);
	/* ! applies to the next predicate or group only */
	ck_assert_int_eq(match("!prev_pid == 1 && prio == 120", &r), 1);
	ck_assert_int_eq(match("!(prev_pid == 0 && prio == 1)", &r), 1);
	TU_EQ(match("!(prev_pid == 0) || prio == 1", &r), 0);
	ck_assert_int_eq(match("!!prev_pid == 0", &r), 1);
	ck_assert_int_eq(match("! ( ! ( prev_pid == 0 ) )", &r), 1);
	/* long chains and whitespace variants */
	ck_assert_int_eq(match("prev_pid==0&&prio==120&&len==64&&state==1", &r), 1);
	ck_assert_int_eq(match("prev_pid==1||prio==1||len==1||state==1", &r), 1);
	ck_assert_int_eq(match("\t(prev_pid == 0)\n&& ((prio > 100))", &r), 1);
	/* the kernel documentation's example, with this event's fields */
	ck_assert_int_eq(match("((prio >= 10 && prio < 15) || prio == 120) && comm != bash",
			       &r), 1);
}
END_TEST

START_TEST(test_numeric_ops)
{
	struct row r = base;
	size_t k;

	for (k = 0; k < ARRAY_SIZE(numeric_cases); k++)
		ck_assert_msg(match(numeric_cases[k].text, &r) == numeric_cases[k].want,
			      "'%s' should be %d", numeric_cases[k].text, numeric_cases[k].want);
}
END_TEST

START_TEST(test_edges)
{
	struct row r = base;

	r.prev_pid = INT32_MIN;
	r.prio = -128;
	r.flags = UINT64_MAX;
	r.delta = INT64_MIN;
	r.len = 65535;
	r.state = 255;
	ck_assert_int_eq(match("prev_pid == -2147483648", &r), 1);
	ck_assert_int_eq(match("prev_pid < -2147483647", &r), 1);
	ck_assert_int_eq(match("prio == -128 && prio < 127", &r), 1);
	ck_assert_int_eq(match("prio & 0x80", &r), 1);
	TU_EQ(match("prio & 0x7f", &r), 0);
	ck_assert_int_eq(match("flags == 18446744073709551615", &r), 1);
	ck_assert_int_eq(match("flags == 0xffffffffffffffff", &r), 1);
	/* unsigned order: UINT64_MAX is the largest, not -1 */
	ck_assert_int_eq(match("flags > 9223372036854775807", &r), 1);
	ck_assert_int_eq(match("flags > 0", &r), 1);
	TU_EQ(match("flags < 1", &r), 0);
	ck_assert_int_eq(match("delta == -9223372036854775808", &r), 1);
	ck_assert_int_eq(match("delta < 9223372036854775807", &r), 1);
	ck_assert_int_eq(match("delta < 0", &r), 1);
	TU_EQ(match("delta & 0x7fffffffffffffff", &r), 0);
	ck_assert_int_eq(match("delta & -9223372036854775808", &r), 1);
	ck_assert_int_eq(match("len == 65535 && state == 255 && state > 254", &r), 1);
	TU_EQ(match("len == -0", &r), 0);
	r.flags = 1ULL << 63;
	ck_assert_int_eq(match("flags > 9223372036854775807", &r), 1);
	ck_assert_int_eq(match("flags >= 9223372036854775808", &r), 1);
	ck_assert_int_eq(match("flags < 9223372036854775809", &r), 1);
	TU_EQ(match("flags < 5", &r), 0);
	ck_assert_int_eq(match("flags & 0x8000000000000000", &r), 1);
}
END_TEST

START_TEST(test_strings)
{
	struct row r = base;

	ck_assert_int_eq(match("prev_comm == bash", &r), 1);
	ck_assert_int_eq(match("prev_comm == \"bash\"", &r), 1);
	ck_assert_int_eq(match("prev_comm == 'bash'", &r), 1);
	TU_EQ(match("prev_comm != bash", &r), 0);
	TU_EQ(match("prev_comm == bas", &r), 0);
	TU_EQ(match("prev_comm == basher", &r), 0);
	TU_EQ(match("prev_comm == \"ba sh\"", &r), 0);
	ck_assert_int_eq(match("COMM == swapper/1 && comm ~ swap*", &r), 1);
	/* a fixed char[16] with trailing NULs compares up to the first NUL */
	r.prev_comm = "bash\0\0\0\0\0\0\0\0\0\0\0";
	r.comm_len = 16;
	ck_assert_int_eq(match("prev_comm == bash", &r), 1);
	ck_assert_int_eq(match("prev_comm ~ \"*sh\"", &r), 1);
	/* quotes of the other kind are ordinary characters; quoted numbers are text */
	r.prev_comm = "it's";
	r.comm_len = 0;
	ck_assert_int_eq(match("prev_comm == \"it's\"", &r), 1);
	r.prev_comm = "123";
	ck_assert_int_eq(match("prev_comm == \"123\"", &r), 1);
	TU_EQ(match("prev_comm == '0123'", &r), 0);
	r.prev_comm = "";
	ck_assert_int_eq(match("prev_comm == \"\"", &r), 1);
	TU_EQ(match("prev_comm != ''", &r), 0);
}
END_TEST

START_TEST(test_globs)
{
	struct row r = base;
	char text[128];
	size_t k;

	for (k = 0; k < ARRAY_SIZE(glob_cases); k++) {
		snprintf(text, sizeof(text), "prev_comm ~ \"%s\"", glob_cases[k].pat);
		r.prev_comm = glob_cases[k].s;
		ck_assert_msg(match(text, &r) == glob_cases[k].want, "'%s' on \"%s\" should be %d",
			      glob_cases[k].pat, glob_cases[k].s, glob_cases[k].want);
	}
	/* a bare glob and an escaped quote-free pattern */
	r.prev_comm = "systemd-journal";
	ck_assert_int_eq(match("prev_comm ~ systemd-*", &r), 1);
	ck_assert_int_eq(match("prev_comm~*journal&&prev_comm~s*", &r), 1);
}
END_TEST

/* ---- errors --------------------------------------------------------------- */

struct err_case {
	const char *text;
	int code;
	size_t pos, len;
};

static void check_errors(const struct err_case *cases, size_t n, bool bind)
{
	struct filter_error err;
	struct filter *f;
	size_t k;
	int ret;

	for (k = 0; k < n; k++) {
		memset(&err, 0xa5, sizeof(err));
		f = NULL;
		ret = filter_parse(cases[k].text, &f, &err);
		if (bind) {
			ck_assert_msg(ret == 0, "'%s' should parse: %s", cases[k].text, err.msg);
			ret = filter_bind(f, &schema, &err);
		}
		ck_assert_msg(ret == cases[k].code && err.code == ret &&
			      err.pos == cases[k].pos && err.len == cases[k].len,
			      "'%s': got %s at %zu+%zu (%s), want %s at %zu+%zu",
			      cases[k].text, tc_strerror(ret), err.pos, err.len, err.msg,
			      tc_strerror(cases[k].code), cases[k].pos, cases[k].len);
		ck_assert_msg(strlen(err.msg) > 0 && strlen(err.msg) < sizeof(err.msg),
			      "'%s': no message", cases[k].text);
		if (!bind)
			ck_assert_ptr_null(f);
		filter_free(f);
	}
}

/* CPUS{list} as current kernels: '&' membership, '==' a one-CPU list */
START_TEST(test_cpus)
{
	static const struct err_case parse_errs[] = {
		{ "CPU & CPUS{}", TC_ERR_SYNTAX, 6, 6 },
		{ "CPU & CPUS{3-1}", TC_ERR_SYNTAX, 6, 9 },
		{ "CPU & CPUS{1,}", TC_ERR_SYNTAX, 6, 8 },
		{ "CPU & CPUS{70000}", TC_ERR_SYNTAX, 6, 11 },
		{ "CPU & CPUS{1x}", TC_ERR_SYNTAX, 6, 8 },
	};
	static const struct err_case bind_errs[] = {
		{ "CPU < CPUS{1}", TC_ERR_TYPE_MISMATCH, 4, 1 },
		{ "prev_comm == CPUS{1}", TC_ERR_TYPE_MISMATCH, 13, 7 },
	};
	struct row r = base;	/* cpu 1, prev_pid 0 */

	ck_assert_int_eq(match("CPU & CPUS{0-3}", &r), 1);
	TU_EQ(match("CPU & CPUS{2,4-7}", &r), 0);
	ck_assert_int_eq(match("CPU & CPUS{0,1}", &r), 1);
	ck_assert_int_eq(match("CPU == CPUS{1}", &r), 1);
	ck_assert_int_eq(match("CPU == CPUS{1-1}", &r), 1);
	TU_EQ(match("CPU == CPUS{1,2}", &r), 0);
	ck_assert_int_eq(match("CPU != CPUS{1,2}", &r), 1);
	TU_EQ(match("CPU != CPUS{1}", &r), 0);
	ck_assert_int_eq(match("prev_pid & CPUS{0}", &r), 1);
	ck_assert_int_eq(match("!(CPU & CPUS{1}) || prev_pid == 0", &r), 1);
	check_errors(parse_errs, ARRAY_SIZE(parse_errs), false);
	check_errors(bind_errs, ARRAY_SIZE(bind_errs), true);
}
END_TEST

/* a leading '!' inverts a glob, as the kernel's filter does */
START_TEST(test_glob_not)
{
	struct row r = base;	/* prev_comm "bash" */

	TU_EQ(match("prev_comm ~ \"!b*\"", &r), 0);
	ck_assert_int_eq(match("prev_comm ~ \"!z*\"", &r), 1);
	TU_EQ(match("prev_comm ~ '!*sh'", &r), 0);
	ck_assert_int_eq(match("prev_comm ~ \"!\"", &r), 1);	/* not empty */
	ck_assert_int_eq(match("!(prev_comm ~ \"!bash\")", &r), 1);
	TU_EQ(match("prev_comm == \"!bash\"", &r), 0);	/* only for ~ */
}
END_TEST

START_TEST(test_syntax_errors)
{
	static const struct err_case cases[] = {
		{ "", TC_ERR_SYNTAX, 0, 0 },
		{ "  \t ", TC_ERR_SYNTAX, 0, 0 },
		{ "prev_pid", TC_ERR_UNEXPECTED_END, 8, 0 },
		{ "prev_pid ==", TC_ERR_UNEXPECTED_END, 11, 0 },
		{ "prev_pid ==   ", TC_ERR_UNEXPECTED_END, 14, 0 },
		{ "prev_pid = 1", TC_ERR_BAD_OPERATOR, 9, 1 },
		{ "prev_pid === 1", TC_ERR_BAD_OPERATOR, 9, 3 },
		{ "prev_pid =~ 1", TC_ERR_BAD_OPERATOR, 9, 2 },
		{ "prev_pid <> 1", TC_ERR_BAD_OPERATOR, 9, 2 },
		{ "prev_pid && 1", TC_ERR_BAD_OPERATOR, 9, 2 },
		{ "prev_pid 1", TC_ERR_SYNTAX, 9, 1 },
		{ "prev_pid.ustring == 1", TC_ERR_SYNTAX, 8, 8 },
		{ "(prev_pid == 1", TC_ERR_UNEXPECTED_END, 0, 1 },
		{ "((prev_pid == 1) && (prio == 2)", TC_ERR_UNEXPECTED_END, 0, 1 },
		{ "prev_pid == 1)", TC_ERR_SYNTAX, 13, 1 },
		{ "prev_pid == 1 prio == 2", TC_ERR_SYNTAX, 14, 4 },
		{ "(prev_pid == 1 prio == 2)", TC_ERR_SYNTAX, 15, 4 },
		{ "prev_pid == 1 & prio == 2", TC_ERR_SYNTAX, 14, 1 },
		{ "prev_comm == \"bash", TC_ERR_UNTERMINATED, 13, 5 },
		{ "prev_comm == 'bash\" && x == 1", TC_ERR_UNTERMINATED, 13, 16 },
		{ "prev_pid == 1 &&", TC_ERR_UNEXPECTED_END, 16, 0 },
		{ "prev_pid == 1 || ", TC_ERR_UNEXPECTED_END, 17, 0 },
		{ "&& prev_pid == 1", TC_ERR_SYNTAX, 0, 1 },
		{ "1 == prev_pid", TC_ERR_SYNTAX, 0, 1 },
		{ "prev_pid == )", TC_ERR_SYNTAX, 12, 1 },
		{ "()", TC_ERR_SYNTAX, 1, 1 },
		{ "!", TC_ERR_UNEXPECTED_END, 1, 0 },
		{ "prev_pid == 1 && && prio == 1", TC_ERR_SYNTAX, 17, 1 },
		{ "prev_pid == 1 ||| prio == 1", TC_ERR_SYNTAX, 16, 1 },
	};

	check_errors(cases, ARRAY_SIZE(cases), false);
}
END_TEST

START_TEST(test_limits)
{
	struct filter_error err;
	struct filter *f = NULL;
	char text[FILTER_MAX_LEN + 64];
	int k, n;

	/* FILTER_MAX_DEPTH parentheses parse, one more does not */
	n = 0;
	for (k = 0; k < FILTER_MAX_DEPTH; k++)
		text[n++] = '(';
	n += sprintf(text + n, "prio == 1");
	for (k = 0; k < FILTER_MAX_DEPTH; k++)
		text[n++] = ')';
	text[n] = '\0';
	TU_OK(filter_parse(text, &f, &err));
	filter_free(f);
	f = NULL;
	memmove(text + 1, text, (size_t)n + 1);
	text[0] = '(';
	TU_ERR(filter_parse(text, &f, &err), TC_ERR_TOO_DEEP);
	ck_assert_uint_eq(err.pos, FILTER_MAX_DEPTH);
	ck_assert_uint_eq(err.len, 1);
	/* '!' counts as nesting too */
	memset(text, '!', FILTER_MAX_DEPTH + 1);
	strcpy(text + FILTER_MAX_DEPTH + 1, "prio == 1");
	TU_ERR(filter_parse(text, &f, &err), TC_ERR_TOO_DEEP);
	ck_assert_uint_eq(err.pos, FILTER_MAX_DEPTH);
	TU_OK(filter_parse(text + 1, &f, &err));
	filter_free(f);
	/* length: exactly FILTER_MAX_LEN parses, one byte more is rejected */
	n = sprintf(text, "prio == 1");
	memset(text + n, ' ', FILTER_MAX_LEN - (size_t)n);
	text[FILTER_MAX_LEN] = '\0';
	TU_OK(filter_parse(text, &f, &err));
	filter_free(f);
	f = NULL;
	strcpy(text + FILTER_MAX_LEN, " ");
	TU_ERR(filter_parse(text, &f, &err), TC_ERR_TOO_LONG);
	ck_assert_uint_eq(err.pos, FILTER_MAX_LEN);
	ck_assert_ptr_null(f);
}
END_TEST

START_TEST(test_bind_errors)
{
	static const struct err_case cases[] = {
		{ "prev_pid == 0 && nosuch > 3", TC_ERR_UNKNOWN_FIELD, 17, 6 },
		{ "(prev_pid == 0) || !(Prio == 1)", TC_ERR_UNKNOWN_FIELD, 21, 4 },
		{ "prev_comm < 3", TC_ERR_TYPE_MISMATCH, 10, 1 },
		{ "prev_comm >= abc", TC_ERR_TYPE_MISMATCH, 10, 2 },
		{ "prev_comm & 3", TC_ERR_TYPE_MISMATCH, 10, 1 },
		{ "COMM > 1", TC_ERR_TYPE_MISMATCH, 5, 1 },
		{ "prev_pid ~ \"1*\"", TC_ERR_TYPE_MISMATCH, 9, 1 },
		{ "prev_pid == \"1\"", TC_ERR_TYPE_MISMATCH, 12, 3 },
		{ "prev_pid == '1'", TC_ERR_TYPE_MISMATCH, 12, 3 },
		{ "prev_pid == bash", TC_ERR_TYPE_MISMATCH, 12, 4 },
		{ "prev_pid == 12x", TC_ERR_BAD_NUMBER, 12, 3 },
		{ "prev_pid == 0x", TC_ERR_BAD_NUMBER, 12, 2 },
		{ "prev_pid == 08", TC_ERR_BAD_NUMBER, 12, 2 },
		{ "prev_pid == -", TC_ERR_BAD_NUMBER, 12, 1 },
		{ "prev_pid == 1.5", TC_ERR_BAD_NUMBER, 12, 3 },
		{ "prev_pid == 2147483648", TC_ERR_BAD_NUMBER, 12, 10 },
		{ "prev_pid == -2147483649", TC_ERR_BAD_NUMBER, 12, 11 },
		{ "prio == 128", TC_ERR_BAD_NUMBER, 8, 3 },
		{ "prio == -129", TC_ERR_BAD_NUMBER, 8, 4 },
		{ "len == 65536", TC_ERR_BAD_NUMBER, 7, 5 },
		{ "len == -1", TC_ERR_BAD_NUMBER, 7, 2 },
		{ "state & 256", TC_ERR_BAD_NUMBER, 8, 3 },
		{ "prio & 0x100", TC_ERR_BAD_NUMBER, 7, 5 },
		{ "prio == 0x80", TC_ERR_BAD_NUMBER, 8, 4 },
		{ "flags == 18446744073709551616", TC_ERR_BAD_NUMBER, 9, 20 },
		{ "flags == 0x10000000000000000", TC_ERR_BAD_NUMBER, 9, 19 },
		{ "flags == -1", TC_ERR_BAD_NUMBER, 9, 2 },
		{ "delta == 9223372036854775808", TC_ERR_BAD_NUMBER, 9, 19 },
		{ "delta == -9223372036854775809", TC_ERR_BAD_NUMBER, 9, 20 },
		{ "CPU == -1", TC_ERR_BAD_NUMBER, 7, 2 },
		{ "CPU == 4294967296", TC_ERR_BAD_NUMBER, 7, 10 },
	};

	check_errors(cases, ARRAY_SIZE(cases), true);
}
END_TEST

START_TEST(test_bind_rebind_dup)
{
	static const struct filter_field other[] = {
		{ "x", FILTER_STRING, 0 }, { "prev_pid", FILTER_UNSIGNED, 2 },
	};
	static const struct filter_schema other_schema = { other, ARRAY_SIZE(other) };
	static const struct filter_field pid_string[] = { { "prev_pid", FILTER_STRING, 0 } };
	static const struct filter_schema pid_string_schema = { pid_string, 1 };
	struct filter_error err;
	struct filter *f = NULL, *d = NULL;
	struct row r = base;
	const char *const *names;
	size_t n;

	TU_OK(filter_parse("prev_pid == 0 && CPU == 1 || prev_pid > 5", &f, &err));
	/* unbound */
	TU_ERR(filter_eval(f, get_row, &r), -EINVAL);
	TU_OK(filter_fields(f, &names, &n));
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(names[0], "prev_pid");
	ck_assert_str_eq(names[1], "CPU");
	ck_assert_str_eq(filter_text(f), "prev_pid == 0 && CPU == 1 || prev_pid > 5");
	ck_assert(!filter_uses_field(f, FILTER_FIELD_CPU));	/* unbound: nothing */
	/* bound to the test schema: prev_pid is index 1 */
	TU_OK(filter_bind(f, &schema, &err));
	ck_assert_int_eq(filter_eval(f, get_row, &r), 1);
	ck_assert(filter_uses_field(f, 1));
	ck_assert(filter_uses_field(f, FILTER_FIELD_CPU));
	ck_assert(!filter_uses_field(f, FILTER_FIELD_COMM));
	ck_assert(!filter_uses_field(f, 0));
	/* a failing bind keeps the previous binding */
	TU_ERR(filter_bind(f, &pid_string_schema, &err), TC_ERR_TYPE_MISMATCH);
	ck_assert_int_eq(filter_eval(f, get_row, &r), 1);
	TU_OK(filter_dup(f, &d));
	/* rebinding: prev_pid is now index 1 of 'other' ... which get_row serves as prev_pid
	 * too; the dup keeps the first binding */
	TU_OK(filter_bind(f, &other_schema, &err));
	ck_assert_int_eq(filter_eval(f, get_row, &r), 1);
	ck_assert_int_eq(filter_eval(d, get_row, &r), 1);
	filter_free(f);
	r.cpu = 0;
	TU_EQ(filter_eval(d, get_row, &r), 0);
	ck_assert_str_eq(filter_text(d), "prev_pid == 0 && CPU == 1 || prev_pid > 5");
	filter_free(d);
	filter_free(NULL);
}
END_TEST

static int get_fail(void *ctx, int idx, struct filter_value *v)
{
	return -EIO;
}

static int get_wrong_kind(void *ctx, int idx, struct filter_value *v)
{
	*v = (struct filter_value){ .kind = FILTER_SIGNED, .i = 1 };
	return 0;
}

START_TEST(test_eval_errors)
{
	struct filter *f = parse_bind("prev_comm == bash");
	struct filter *g = parse_bind("prev_pid == 1 || prev_pid == 2");

	TU_ERR(filter_eval(f, get_fail, NULL), -EIO);
	TU_ERR(filter_eval(f, get_wrong_kind, NULL), TC_ERR_TYPE_MISMATCH);
	/* short-circuit: the || stops at the first true predicate */
	ck_assert_int_eq(filter_eval(g, get_wrong_kind, NULL), 1);
	filter_free(f);
	filter_free(g);
}
END_TEST

/* ---- queries ------------------------------------------------------------------ */

START_TEST(test_query_ok)
{
	struct filter_error err;
	struct query q;

	TU_OK(query_parse("sched_switch", &q, &err));
	ck_assert_uint_eq(q.nsel, 1);
	ck_assert_ptr_null(q.sel[0].system);
	ck_assert_str_eq(q.sel[0].event, "sched_switch");
	ck_assert_ptr_null(q.filter);
	query_free(&q);
	ck_assert_ptr_null(q.sel);

	TU_OK(query_parse("sched:sched_switch where prev_pid == 0", &q, &err));
	ck_assert_str_eq(q.sel[0].system, "sched");
	ck_assert_str_eq(q.sel[0].event, "sched_switch");
	ck_assert_ptr_nonnull(q.filter);
	ck_assert_uint_eq(q.filter_offset, 25);
	ck_assert_str_eq(filter_text(q.filter), "prev_pid == 0");
	query_free(&q);

	TU_OK(query_parse("  sched:*\tWHERE common_pid == 1  ", &q, &err));
	ck_assert_str_eq(q.sel[0].system, "sched");
	ck_assert_str_eq(q.sel[0].event, "*");
	ck_assert_uint_eq(q.filter_offset, 16);
	query_free(&q);

	TU_OK(query_parse("sched", &q, &err));
	ck_assert_ptr_null(q.sel[0].system);
	ck_assert_str_eq(q.sel[0].event, "sched");
	query_free(&q);

	TU_OK(query_parse("xhci-hcd:xhci_urb_enqueue Where(len>0)", &q, &err));
	ck_assert_str_eq(q.sel[0].system, "xhci-hcd");
	ck_assert_str_eq(q.sel[0].event, "xhci_urb_enqueue");
	ck_assert_uint_eq(q.filter_offset, 31);
	query_free(&q);
	query_free(NULL);
}
END_TEST

/* selectors: globs, comma lists, and what each names */
START_TEST(test_query_selectors)
{
	static const char *const want[][2] = {
		{ "sched", "sched_*" }, { NULL, "*" }, { NULL, "sched_switch" },
		{ NULL, "sched_wakeup" }, { "irq", "*" }, { "*", "softirq_[ex]*" },
	};
	const char *text = "sched:sched_* , *,sched_switch, sched_wakeup,irq:*,"
			   "*:softirq_[ex]* where CPU == 0";
	struct filter_error err;
	struct query q;
	size_t i;

	TU_OK(query_parse(text, &q, &err));
	ck_assert_uint_eq(q.nsel, ARRAY_SIZE(want));
	for (i = 0; i < q.nsel; i++) {
		if (want[i][0])
			ck_assert_str_eq(q.sel[i].system, want[i][0]);
		else
			ck_assert_ptr_null(q.sel[i].system);
		ck_assert_str_eq(q.sel[i].event, want[i][1]);
	}
	ck_assert_uint_eq(q.sel[0].pos, 0);
	ck_assert_uint_eq(q.sel[0].len, 13);
	ck_assert_uint_eq(q.sel[2].pos, 18);
	ck_assert_str_eq(filter_text(q.filter), "CPU == 0");
	ck_assert(query_sel_matches(&q.sel[0], "sched", "sched_switch"));
	ck_assert(!query_sel_matches(&q.sel[0], "irq", "sched_switch"));
	ck_assert(query_sel_matches(&q.sel[1], "irq", "irq_handler_entry"));
	ck_assert(query_sel_matches(&q.sel[5], "irq", "softirq_entry"));
	ck_assert(!query_sel_matches(&q.sel[5], "irq", "softirq_raise"));
	ck_assert(!query_sel_matches(&q.sel[2], "sched", "sched_wakeup"));
	query_free(&q);

	TU_OK(query_parse("*", &q, &err));
	ck_assert_uint_eq(q.nsel, 1);
	ck_assert_ptr_null(q.sel[0].system);
	ck_assert_str_eq(q.sel[0].event, "*");
	query_free(&q);

	/* more than QUERY_MAX_SELECTORS */
	char many[QUERY_MAX_SELECTORS * 2 + 8];
	for (i = 0; i <= QUERY_MAX_SELECTORS; i++)
		memcpy(many + 2 * i, "a,", 2);
	many[2 * i - 1] = '\0';
	TU_ERR(query_parse(many, &q, &err), TC_ERR_TOO_LONG);
}
END_TEST

START_TEST(test_query_errors)
{
	static const struct err_case cases[] = {
		{ "", TC_ERR_UNEXPECTED_END, 0, 0 },
		{ "   ", TC_ERR_UNEXPECTED_END, 3, 0 },
		{ "where x == 1", TC_ERR_SYNTAX, 0, 5 },
		{ "(sched)", TC_ERR_SYNTAX, 0, 7 },
		{ "sched:", TC_ERR_UNEXPECTED_END, 6, 0 },
		{ "sched: x", TC_ERR_SYNTAX, 6, 1 },
		{ "sched:sw(", TC_ERR_SYNTAX, 8, 1 },
		{ "sched_switch,", TC_ERR_UNEXPECTED_END, 13, 0 },
		{ "sched_switch,,x", TC_ERR_SYNTAX, 13, 2 },
		{ "a, where x == 1", TC_ERR_SYNTAX, 3, 5 },
		{ "a:b:c", TC_ERR_SYNTAX, 3, 2 },
		{ "sched_switch(x)", TC_ERR_SYNTAX, 12, 3 },
		{ "sched_switch foo", TC_ERR_SYNTAX, 13, 3 },
		{ "sched_switch wherex", TC_ERR_SYNTAX, 13, 6 },
		{ "sched_switch && x", TC_ERR_SYNTAX, 13, 2 },
		{ "sched_switch where", TC_ERR_UNEXPECTED_END, 13, 5 },
		{ "sched_switch WHERE   ", TC_ERR_UNEXPECTED_END, 13, 5 },
		{ "sched_switch where prev_pid = 1", TC_ERR_BAD_OPERATOR, 28, 1 },
		{ "sched:sched_switch  where (prev_pid == 1", TC_ERR_UNEXPECTED_END, 26, 1 },
		{ "s where prev_comm == \"x", TC_ERR_UNTERMINATED, 21, 2 },
	};
	struct filter_error err;
	struct query q, untouched;
	size_t k;
	int ret;

	for (k = 0; k < ARRAY_SIZE(cases); k++) {
		memset(&q, 0x5a, sizeof(q));
		untouched = q;
		ret = query_parse(cases[k].text, &q, &err);
		ck_assert_msg(ret == cases[k].code && err.pos == cases[k].pos &&
			      err.len == cases[k].len,
			      "'%s': got %s at %zu+%zu (%s), want %s at %zu+%zu",
			      cases[k].text, tc_strerror(ret), err.pos, err.len, err.msg,
			      tc_strerror(cases[k].code), cases[k].pos, cases[k].len);
		ck_assert(!memcmp(&q, &untouched, sizeof(q)));
	}
}
END_TEST

START_TEST(test_query_limits)
{
	static char text[QUERY_MAX_LEN + 2];
	struct filter_error err;
	struct query q;
	size_t n;

	n = (size_t)sprintf(text, "sched_switch where!(prio == 1)");
	TU_OK(query_parse(text, &q, &err));
	ck_assert_uint_eq(q.filter_offset, 18);
	query_free(&q);
	/* QUERY_MAX_LEN bytes parse (leading blanks), one more does not */
	memmove(text + QUERY_MAX_LEN - n, text, n + 1);
	memset(text, ' ', QUERY_MAX_LEN - n);
	TU_OK(query_parse(text, &q, &err));
	ck_assert_uint_eq(q.filter_offset, QUERY_MAX_LEN - n + 18);
	query_free(&q);
	text[QUERY_MAX_LEN] = ' ';
	text[QUERY_MAX_LEN + 1] = '\0';
	TU_ERR(query_parse(text, &q, &err), TC_ERR_TOO_LONG);
	ck_assert_uint_eq(err.pos, QUERY_MAX_LEN);
	/* a filter part over FILTER_MAX_LEN is reported where it overflows */
	memset(text, ' ', QUERY_MAX_LEN);
	memcpy(text, "s where prio == 1", 17);
	text[QUERY_MAX_LEN - 1] = '\0';
	TU_ERR(query_parse(text, &q, &err), TC_ERR_TOO_LONG);
	ck_assert_uint_eq(err.pos, 8 + FILTER_MAX_LEN);
}
END_TEST

START_TEST(test_query_bind_position)
{
	const char *text = "sched_switch where prev_pid == 0 && nosuch > 3";
	struct filter_error err;
	struct query q;
	char buf[256];

	TU_OK(query_parse(text, &q, &err));
	TU_ERR(filter_bind(q.filter, &schema, &err), TC_ERR_UNKNOWN_FIELD);
	err.pos += q.filter_offset;
	ck_assert_uint_eq(err.pos, 36);
	filter_error_format(text, &err, buf, sizeof(buf));
	ck_assert_str_eq(buf, "error: unknown field 'nosuch'\n"
			 "  sched_switch where prev_pid == 0 && nosuch > 3\n"
			 "                                      ^~~~~~\n");
	query_free(&q);
}
END_TEST

/* ---- error rendering ------------------------------------------------------------ */

START_TEST(test_error_format)
{
	struct filter_error e = { .code = TC_ERR_UNKNOWN_FIELD, .pos = 17, .len = 6 };
	const char *want = "error: unknown field 'nosuch'\n"
			   "  prev_pid == 0 && nosuch > 3\n"
			   "                   ^~~~~~\n";
	char buf[256], small[16];
	int n;

	strcpy(e.msg, "unknown field 'nosuch'");
	n = filter_error_format("prev_pid == 0 && nosuch > 3", &e, buf, sizeof(buf));
	ck_assert_str_eq(buf, want);
	ck_assert_int_eq(n, (int)strlen(want));
	/* truncation: snprintf-style return, always terminated */
	n = filter_error_format("prev_pid == 0 && nosuch > 3", &e, small, sizeof(small));
	ck_assert_int_eq(n, (int)strlen(want));
	ck_assert_str_eq(small, "error: unknown ");
	/* end of input: a lone caret past the text */
	e = (struct filter_error){ .pos = 11, .len = 0 };
	strcpy(e.msg, "eof");
	filter_error_format("prev_pid ==", &e, buf, sizeof(buf));
	ck_assert_str_eq(buf, "error: eof\n  prev_pid ==\n             ^\n");
	/* tabs stay tabs, newlines become spaces, UTF-8 takes one column */
	e = (struct filter_error){ .pos = 4, .len = 3 };
	strcpy(e.msg, "m");
	filter_error_format("a\tb\nxyz", &e, buf, sizeof(buf));
	ck_assert_str_eq(buf, "error: m\n  a\tb xyz\n   \t  ^~~\n");
	e = (struct filter_error){ .pos = 13, .len = 1 };
	strcpy(e.msg, "m");
	filter_error_format("comm == \"\xc3\xa9\" & x", &e, buf, sizeof(buf));
	ck_assert_str_eq(buf, "error: m\n  comm == \"\xc3\xa9\" & x\n              ^\n");
	e = (struct filter_error){ .pos = 8, .len = 4 };
	strcpy(e.msg, "m");
	filter_error_format("comm == \"\xc3\xa9\" & x", &e, buf, sizeof(buf));
	ck_assert_str_eq(buf, "error: m\n  comm == \"\xc3\xa9\" & x\n          ^~~\n");
	/* a position past the end is clamped */
	e = (struct filter_error){ .pos = 99, .len = 5 };
	strcpy(e.msg, "m");
	filter_error_format("ab", &e, buf, sizeof(buf));
	ck_assert_str_eq(buf, "error: m\n  ab\n    ^\n");
}
END_TEST

START_TEST(test_parse_messages)
{
	struct filter_error err;
	struct filter *f = NULL;
	char buf[512];

	TU_ERR(filter_parse("prev_pid === 1", &f, &err), TC_ERR_BAD_OPERATOR);
	ck_assert_str_eq(err.msg, "unknown operator '===' (did you mean '=='?)");
	TU_ERR(filter_parse("(prev_pid == 1", &f, &err), TC_ERR_UNEXPECTED_END);
	filter_error_format("(prev_pid == 1", &err, buf, sizeof(buf));
	ck_assert_str_eq(buf, "error: this '(' is never closed\n  (prev_pid == 1\n  ^\n");
	TU_ERR(filter_parse("prev_comm == \"bash", &f, &err), TC_ERR_UNTERMINATED);
	ck_assert_str_eq(err.msg, "string has no closing \"");
	TU_ERR(filter_parse("prev_pid == 1 prio", &f, &err), TC_ERR_SYNTAX);
	ck_assert_str_eq(err.msg, "expected '&&' or '||', found 'prio'");
	TU_OK(filter_parse("prio == 300", &f, &err));
	TU_ERR(filter_bind(f, &schema, &err), TC_ERR_BAD_NUMBER);
	ck_assert_str_eq(err.msg, "'300' is out of range for signed 8-bit field 'prio'");
	filter_free(f);
}
END_TEST

/* Errors a person can act on: the operator meant, the field meant, quoting. */
START_TEST(test_suggestions)
{
	static const struct {
		const char *text, *want;
	} ops[] = {
		{ "prev_pid = 1", "unknown operator '=' (did you mean '=='?)" },
		{ "prev_pid => 1", "unknown operator '=>' (did you mean '>='?)" },
		{ "prev_pid =< 1", "unknown operator '=<' (did you mean '<='?)" },
		{ "prev_comm <> x", "unknown operator '<>' (did you mean '!='?)" },
		{ "prev_comm =~ x", "unknown operator '=~' (did you mean '~'?)" },
		{ "prev_pid && 1", "unknown operator '&&' (did you mean '&'?)" },
	};
	static const struct {
		const char *text;
		int code;
		const char *want;
	} binds[] = {
		{ "prev_pd == 1", TC_ERR_UNKNOWN_FIELD,
		  "unknown field 'prev_pd' (did you mean 'prev_pid'?)" },
		{ "prevcomm == x", TC_ERR_UNKNOWN_FIELD,
		  "unknown field 'prevcomm' (did you mean 'prev_comm'?)" },
		{ "pid == 1", TC_ERR_UNKNOWN_FIELD,
		  "unknown field 'pid' (did you mean 'prev_pid' or 'common_pid'?)" },
		{ "zzzzzz == 1", TC_ERR_UNKNOWN_FIELD, "unknown field 'zzzzzz'" },
		{ "prev_comm == 5", TC_ERR_TYPE_MISMATCH,
		  "'prev_comm' is a string and 5 a number: to compare with the text, "
		  "quote it (\"5\")" },
		{ "COMM != -1", TC_ERR_TYPE_MISMATCH,
		  "'COMM' is a string and -1 a number: to compare with the text, "
		  "quote it (\"-1\")" },
	};
	struct filter_error err;
	struct filter *f = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		TU_ERR(filter_parse(ops[i].text, &f, &err), TC_ERR_BAD_OPERATOR);
		ck_assert_str_eq(err.msg, ops[i].want);
	}
	for (size_t i = 0; i < ARRAY_SIZE(binds); i++) {
		TU_OK(filter_parse(binds[i].text, &f, &err));
		ck_assert_int_eq(filter_bind(f, &schema, &err), binds[i].code);
		ck_assert_str_eq(err.msg, binds[i].want);
		filter_free(f);
	}
	/* quoted, the text compares */
	TU_OK(filter_parse("prev_comm == \"5\" || COMM == '-1'", &f, &err));
	TU_OK(filter_bind(f, &schema, &err));
	filter_free(f);
}
END_TEST

static Suite *filter_suite(void)
{
	Suite *s = suite_create("filter");
	TCase *tc;

	tc = tcase_create("parse");
	tu_add_tests(tc, TU_TESTS(test_precedence, test_syntax_errors, test_limits,
					test_parse_messages));
	suite_add_tcase(s, tc);
	tc = tcase_create("eval");
	tu_add_tests(tc, TU_TESTS(test_numeric_ops, test_edges, test_strings, test_globs,
					test_cpus, test_glob_not, test_eval_errors));
	suite_add_tcase(s, tc);
	tc = tcase_create("bind");
	tcase_add_test(tc, test_bind_errors);
	tcase_add_test(tc, test_query_selectors);
	tcase_add_test(tc, test_bind_rebind_dup);
	tcase_add_test(tc, test_suggestions);
	suite_add_tcase(s, tc);
	tc = tcase_create("query");
	tu_add_tests(tc, TU_TESTS(test_query_ok, test_query_errors, test_query_limits,
					test_query_bind_position, test_error_format));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(filter_suite())
