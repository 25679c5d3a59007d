/*
 * test_filter.c - unit tests for common/filter.* and common/query.*: parsing
 * and precedence, every operator, evaluation edge cases and globs, error
 * positions, exact SQL output, an executed cross-check of filter_eval()
 * against the generated SQL in an in-memory SQLite database, query parsing
 * and the caret rendering.
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
#include "common/query.h"
#include "common/tc_error.h"
#include "tests/testutil.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- a test event -------------------------------------------------------- */

enum { F_COMMON_PID, F_PREV_PID, F_PRIO, F_FLAGS, F_LEN, F_PREV_COMM, F_DELTA, F_STATE };

static const struct filter_field fields[] = {
	[F_COMMON_PID] = { "common_pid", FILTER_SIGNED, 4 },
	[F_PREV_PID] = { "prev_pid", FILTER_SIGNED, 4 },
	[F_PRIO] = { "prio", FILTER_SIGNED, 1 },
	[F_FLAGS] = { "flags", FILTER_UNSIGNED, 8 },
	[F_LEN] = { "len", FILTER_UNSIGNED, 2 },
	[F_PREV_COMM] = { "prev_comm", FILTER_STRING, 16 },
	[F_DELTA] = { "delta", FILTER_SIGNED, 8 },
	[F_STATE] = { "state", FILTER_UNSIGNED, 1 },
};

static const struct filter_schema schema = { fields, ARRAY_SIZE(fields) };

struct row {
	int64_t common_pid, prev_pid, prio, delta;
	uint64_t flags, len, state, cpu;
	const char *prev_comm, *comm;
	size_t comm_len;	/* 0: strlen(prev_comm) */
};

static int get_row(void *ctx, int idx, struct filter_value *v)
{
	const struct row *r = ctx;
	const int64_t *sv[] = { [F_COMMON_PID] = &r->common_pid, [F_PREV_PID] = &r->prev_pid,
				[F_PRIO] = &r->prio, [F_DELTA] = &r->delta };
	const uint64_t *uv[] = { [F_FLAGS] = &r->flags, [F_LEN] = &r->len,
				 [F_STATE] = &r->state };

	if (idx == FILTER_FIELD_CPU) {
		*v = (struct filter_value){ .kind = FILTER_UNSIGNED, .u = r->cpu };
	} else if (idx == FILTER_FIELD_COMM) {
		*v = (struct filter_value){ .kind = FILTER_STRING };
		v->str.s = r->comm;
		v->str.len = strlen(r->comm);
	} else if (idx == F_PREV_COMM) {
		*v = (struct filter_value){ .kind = FILTER_STRING };
		v->str.s = r->prev_comm;
		v->str.len = r->comm_len ? r->comm_len : strlen(r->prev_comm);
	} else if (idx >= 0 && idx < (int)ARRAY_SIZE(sv) && sv[idx]) {
		*v = (struct filter_value){ .kind = FILTER_SIGNED, .i = *sv[idx] };
	} else if (idx >= 0 && idx < (int)ARRAY_SIZE(uv) && uv[idx]) {
		*v = (struct filter_value){ .kind = FILTER_UNSIGNED, .u = *uv[idx] };
	} else {
		return -ENOENT;
	}
	return 0;
}

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

static struct filter *parse_bind(const char *text)
{
	struct filter_error err = { 0 };
	struct filter *f = NULL;
	int ret;

	ret = filter_parse(text, &f, &err);
	ck_assert_msg(ret == 0, "parse '%s': %s (%s at %zu)", text, tc_strerror(ret),
		      err.msg, err.pos);
	ret = filter_bind(f, &schema, &err);
	ck_assert_msg(ret == 0, "bind '%s': %s (%s at %zu)", text, tc_strerror(ret),
		      err.msg, err.pos);
	return f;
}

/* parse, bind and evaluate @text on @r */
static int match(const char *text, const struct row *r)
{
	struct filter *f = parse_bind(text);
	int ret = filter_eval(f, get_row, (void *)r);

	ck_assert_msg(ret >= 0, "eval '%s': %s", text, tc_strerror(ret));
	filter_free(f);
	return ret;
}

static const struct row base = {
	.common_pid = 100, .prev_pid = 0, .prio = 120, .flags = 0x5, .len = 64,
	.state = 1, .delta = -7, .cpu = 1, .prev_comm = "bash", .comm = "swapper/1",
};

/* ---- parsing and precedence ------------------------------------------- */

START_TEST(test_precedence)
{
	struct row r = base;

	/* a || b && c: a true, b and c false -> true only if && binds tighter */
	ck_assert_int_eq(match("prev_pid == 0 || prio == 1 && len == 1", &r), 1);
	ck_assert_int_eq(match("(prev_pid == 0 || prio == 1) && len == 1", &r), 0);
	/* b && c || a */
	ck_assert_int_eq(match("prio == 1 && len == 1 || prev_pid == 0", &r), 1);
	ck_assert_int_eq(match("prio == 1 && (len == 1 || prev_pid == 0)", &r), 0);
	/* ! applies to the next predicate or group only */
	ck_assert_int_eq(match("!prev_pid == 1 && prio == 120", &r), 1);
	ck_assert_int_eq(match("!(prev_pid == 0 && prio == 1)", &r), 1);
	ck_assert_int_eq(match("!(prev_pid == 0) || prio == 1", &r), 0);
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
	static const struct {
		const char *text;
		int want;
	} cases[] = {
		{ "common_pid == 100", 1 }, { "common_pid != 100", 0 },
		{ "common_pid < 100", 0 }, { "common_pid < 101", 1 },
		{ "common_pid <= 100", 1 }, { "common_pid <= 99", 0 },
		{ "common_pid > 99", 1 }, { "common_pid > 100", 0 },
		{ "common_pid >= 100", 1 }, { "common_pid >= 101", 0 },
		{ "flags & 4", 1 }, { "flags & 2", 0 }, { "flags & 0x7", 1 },
		{ "delta < 0", 1 }, { "delta == -7", 1 }, { "delta & 1", 1 },
		{ "delta > -8", 1 }, { "delta >= -7", 1 }, { "delta <= -8", 0 },
		{ "common_pid == 0x64", 1 }, { "common_pid == 0144", 1 },
		{ "common_pid == +100", 1 }, { "len == 0X40", 1 },
		{ "CPU == 1", 1 }, { "cpu == 1", 1 }, { "common_cpu != 1", 0 },
		{ "CPU < 1", 0 },
	};
	size_t k;

	for (k = 0; k < ARRAY_SIZE(cases); k++)
		ck_assert_msg(match(cases[k].text, &r) == cases[k].want, "'%s' should be %d",
			      cases[k].text, cases[k].want);
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
	ck_assert_int_eq(match("prio & 0x7f", &r), 0);
	ck_assert_int_eq(match("flags == 18446744073709551615", &r), 1);
	ck_assert_int_eq(match("flags == 0xffffffffffffffff", &r), 1);
	/* unsigned order: UINT64_MAX is the largest, not -1 */
	ck_assert_int_eq(match("flags > 9223372036854775807", &r), 1);
	ck_assert_int_eq(match("flags > 0", &r), 1);
	ck_assert_int_eq(match("flags < 1", &r), 0);
	ck_assert_int_eq(match("delta == -9223372036854775808", &r), 1);
	ck_assert_int_eq(match("delta < 9223372036854775807", &r), 1);
	ck_assert_int_eq(match("delta < 0", &r), 1);
	ck_assert_int_eq(match("delta & 0x7fffffffffffffff", &r), 0);
	ck_assert_int_eq(match("delta & -9223372036854775808", &r), 1);
	ck_assert_int_eq(match("len == 65535 && state == 255 && state > 254", &r), 1);
	ck_assert_int_eq(match("len == -0", &r), 0);
	r.flags = 1ULL << 63;
	ck_assert_int_eq(match("flags > 9223372036854775807", &r), 1);
	ck_assert_int_eq(match("flags >= 9223372036854775808", &r), 1);
	ck_assert_int_eq(match("flags < 9223372036854775809", &r), 1);
	ck_assert_int_eq(match("flags < 5", &r), 0);
	ck_assert_int_eq(match("flags & 0x8000000000000000", &r), 1);
}
END_TEST

START_TEST(test_strings)
{
	struct row r = base;

	ck_assert_int_eq(match("prev_comm == bash", &r), 1);
	ck_assert_int_eq(match("prev_comm == \"bash\"", &r), 1);
	ck_assert_int_eq(match("prev_comm == 'bash'", &r), 1);
	ck_assert_int_eq(match("prev_comm != bash", &r), 0);
	ck_assert_int_eq(match("prev_comm == bas", &r), 0);
	ck_assert_int_eq(match("prev_comm == basher", &r), 0);
	ck_assert_int_eq(match("prev_comm == \"ba sh\"", &r), 0);
	ck_assert_int_eq(match("COMM == swapper/1 && comm ~ swap*", &r), 1);
	/* a fixed char[16] with trailing NULs compares up to the first NUL */
	r.prev_comm = "bash\0\0\0\0\0\0\0\0\0\0\0";
	r.comm_len = 16;
	ck_assert_int_eq(match("prev_comm == bash", &r), 1);
	ck_assert_int_eq(match("prev_comm ~ \"*sh\"", &r), 1);
	/* quotes of the other kind are ordinary characters; numbers are text */
	r.prev_comm = "it's";
	r.comm_len = 0;
	ck_assert_int_eq(match("prev_comm == \"it's\"", &r), 1);
	r.prev_comm = "123";
	ck_assert_int_eq(match("prev_comm == 123", &r), 1);
	ck_assert_int_eq(match("prev_comm == 0123", &r), 0);
	r.prev_comm = "";
	ck_assert_int_eq(match("prev_comm == \"\"", &r), 1);
	ck_assert_int_eq(match("prev_comm != ''", &r), 0);
}
END_TEST

START_TEST(test_globs)
{
	static const struct {
		const char *pat, *s;
		int want;
	} cases[] = {
		{ "bash*", "bash", 1 }, { "bash*", "basher", 1 }, { "bash*", "bas", 0 },
		{ "*sh", "bash", 1 }, { "*sh", "zsh", 1 }, { "*sh", "shx", 0 },
		{ "*as*", "bash", 1 }, { "*as*", "sa", 0 }, { "ba*sh", "bash", 1 },
		{ "ba*sh", "baxxsh", 1 }, { "ba*sh", "basx", 0 }, { "b?sh", "bash", 1 },
		{ "b?sh", "bsh", 0 }, { "???", "abc", 1 }, { "???", "ab", 0 },
		{ "[abc]*", "bash", 1 }, { "[abc]*", "zsh", 0 }, { "[!abc]*", "bash", 0 },
		{ "[!abc]*", "zsh", 1 }, { "[a-c]?", "ab", 1 }, { "[a-c]?", "da", 0 },
		{ "[]]", "]", 1 }, { "[]]", "a", 0 }, { "[!]]", "a", 1 }, { "[!]]", "]", 0 },
		{ "[a-]", "-", 1 }, { "[a-]", "b", 0 }, { "a[b", "a[b", 1 }, { "a[b", "ab", 0 },
		{ "[!]", "[!]", 1 }, { "\\*", "*", 1 }, { "\\*", "x", 0 }, { "a\\", "a", 1 },
		{ "", "", 1 }, { "", "a", 0 }, { "*", "", 1 }, { "**a**", "xa", 1 },
		{ "*[0-9]", "kworker/0", 1 }, { "*[0-9]", "kworker/x", 0 },
		{ "*a*b*c*", "xaybzc", 1 }, { "*a*b*c*", "xaybz", 0 }, { "[z-a]", "m", 0 },
		{ "[^]", "^", 1 }, { "[!^-]", "a", 1 }, { "[!^-]", "-", 0 },
		{ "*?", "", 0 }, { "*?", "x", 1 }, { "*ab", "aab", 1 }, { "ab*ab", "abab", 1 },
	};
	struct row r = base;
	char text[128];
	size_t k;

	for (k = 0; k < ARRAY_SIZE(cases); k++) {
		snprintf(text, sizeof(text), "prev_comm ~ \"%s\"", cases[k].pat);
		r.prev_comm = cases[k].s;
		ck_assert_msg(match(text, &r) == cases[k].want, "'%s' on \"%s\" should be %d",
			      cases[k].pat, cases[k].s, cases[k].want);
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
	ck_assert_int_eq(match("CPU & CPUS{2,4-7}", &r), 0);
	ck_assert_int_eq(match("CPU & CPUS{0,1}", &r), 1);
	ck_assert_int_eq(match("CPU == CPUS{1}", &r), 1);
	ck_assert_int_eq(match("CPU == CPUS{1-1}", &r), 1);
	ck_assert_int_eq(match("CPU == CPUS{1,2}", &r), 0);
	ck_assert_int_eq(match("CPU != CPUS{1,2}", &r), 1);
	ck_assert_int_eq(match("CPU != CPUS{1}", &r), 0);
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

	ck_assert_int_eq(match("prev_comm ~ \"!b*\"", &r), 0);
	ck_assert_int_eq(match("prev_comm ~ \"!z*\"", &r), 1);
	ck_assert_int_eq(match("prev_comm ~ '!*sh'", &r), 0);
	ck_assert_int_eq(match("prev_comm ~ \"!\"", &r), 1);	/* not empty */
	ck_assert_int_eq(match("!(prev_comm ~ \"!bash\")", &r), 1);
	ck_assert_int_eq(match("prev_comm == \"!bash\"", &r), 0);	/* only for ~ */
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
	ck_assert_int_eq(filter_parse(text, &f, &err), 0);
	filter_free(f);
	f = NULL;
	memmove(text + 1, text, (size_t)n + 1);
	text[0] = '(';
	ck_assert_int_eq(filter_parse(text, &f, &err), TC_ERR_TOO_DEEP);
	ck_assert_uint_eq(err.pos, FILTER_MAX_DEPTH);
	ck_assert_uint_eq(err.len, 1);
	/* '!' counts as nesting too */
	memset(text, '!', FILTER_MAX_DEPTH + 1);
	strcpy(text + FILTER_MAX_DEPTH + 1, "prio == 1");
	ck_assert_int_eq(filter_parse(text, &f, &err), TC_ERR_TOO_DEEP);
	ck_assert_uint_eq(err.pos, FILTER_MAX_DEPTH);
	ck_assert_int_eq(filter_parse(text + 1, &f, &err), 0);
	filter_free(f);
	/* length: exactly FILTER_MAX_LEN parses, one byte more is rejected */
	n = sprintf(text, "prio == 1");
	memset(text + n, ' ', FILTER_MAX_LEN - (size_t)n);
	text[FILTER_MAX_LEN] = '\0';
	ck_assert_int_eq(filter_parse(text, &f, &err), 0);
	filter_free(f);
	f = NULL;
	strcpy(text + FILTER_MAX_LEN, " ");
	ck_assert_int_eq(filter_parse(text, &f, &err), TC_ERR_TOO_LONG);
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

	ck_assert_int_eq(filter_parse("prev_pid == 0 && CPU == 1 || prev_pid > 5", &f, &err), 0);
	/* unbound */
	ck_assert_int_eq(filter_eval(f, get_row, &r), -EINVAL);
	ck_assert_int_eq(filter_fields(f, &names, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(names[0], "prev_pid");
	ck_assert_str_eq(names[1], "CPU");
	ck_assert_str_eq(filter_text(f), "prev_pid == 0 && CPU == 1 || prev_pid > 5");
	ck_assert(!filter_uses_field(f, FILTER_FIELD_CPU));	/* unbound: nothing */
	/* bound to the test schema: prev_pid is index 1 */
	ck_assert_int_eq(filter_bind(f, &schema, &err), 0);
	ck_assert_int_eq(filter_eval(f, get_row, &r), 1);
	ck_assert(filter_uses_field(f, 1));
	ck_assert(filter_uses_field(f, FILTER_FIELD_CPU));
	ck_assert(!filter_uses_field(f, FILTER_FIELD_COMM));
	ck_assert(!filter_uses_field(f, 0));
	/* a failing bind keeps the previous binding */
	ck_assert_int_eq(filter_bind(f, &pid_string_schema, &err), TC_ERR_TYPE_MISMATCH);
	ck_assert_int_eq(filter_eval(f, get_row, &r), 1);
	ck_assert_int_eq(filter_dup(f, &d), 0);
	/* rebinding: prev_pid is now index 1 of 'other' ... which get_row serves as prev_pid
	 * too; the dup keeps the first binding */
	ck_assert_int_eq(filter_bind(f, &other_schema, &err), 0);
	ck_assert_int_eq(filter_eval(f, get_row, &r), 1);
	ck_assert_int_eq(filter_eval(d, get_row, &r), 1);
	filter_free(f);
	r.cpu = 0;
	ck_assert_int_eq(filter_eval(d, get_row, &r), 0);
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

	ck_assert_int_eq(filter_eval(f, get_fail, NULL), -EIO);
	ck_assert_int_eq(filter_eval(f, get_wrong_kind, NULL), TC_ERR_TYPE_MISMATCH);
	/* short-circuit: the || stops at the first true predicate */
	ck_assert_int_eq(filter_eval(g, get_wrong_kind, NULL), 1);
	filter_free(f);
	filter_free(g);
}
END_TEST

/* ---- SQL -------------------------------------------------------------------- */

static void binds_to_string(const struct filter_sql *s, char *buf, size_t len)
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
	struct filter_sql s;
	char buf[512];
	size_t k;

	for (k = 0; k < ARRAY_SIZE(cases); k++) {
		struct filter *f = parse_bind(cases[k].text);

		ck_assert_int_eq(filter_to_sql(f, column, NULL, &s), 0);
		ck_assert_msg(!strcmp(s.where, cases[k].where), "'%s': got '%s' want '%s'",
			      cases[k].text, s.where, cases[k].where);
		binds_to_string(&s, buf, sizeof(buf));
		ck_assert_msg(!strcmp(buf, cases[k].binds), "'%s': binds '%s' want '%s'",
			      cases[k].text, buf, cases[k].binds);
		filter_sql_free(&s);
		ck_assert_ptr_null(s.where);
		filter_free(f);
	}
}
END_TEST

/* filter_sql.eq: the `FIELD == value` conjuncts at the top, as "field:bind,..." */
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
	struct filter_sql s;
	char buf[512];

	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		struct filter *f = parse_bind(cases[k].text);
		size_t n = 0;

		ck_assert_int_eq(filter_to_sql(f, column, NULL, &s), 0);
		buf[0] = '\0';
		for (size_t i = 0; i < s.neq; i++) {
			ck_assert_int_ge(s.eq[i].field, 0);
			ck_assert_uint_lt(s.eq[i].bind, s.nbinds);
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s:%zu", i ? "," : "",
					      fields[s.eq[i].field].name, s.eq[i].bind);
		}
		ck_assert_msg(!strcmp(buf, cases[k].eq), "'%s': eq '%s' want '%s'",
			      cases[k].text, buf, cases[k].eq);
		filter_sql_free(&s);
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
	struct filter_sql s = { 0 };
	struct filter *f = NULL;
	struct filter_error err;

	ck_assert_int_eq(filter_parse("prev_pid == 1", &f, &err), 0);
	ck_assert_int_eq(filter_to_sql(f, column, NULL, &s), -EINVAL);
	filter_free(f);
	f = parse_bind("prev_pid == 1 || prio == 1");
	ck_assert_int_eq(filter_to_sql(f, no_column, NULL, &s), TC_ERR_UNKNOWN_FIELD);
	ck_assert_ptr_null(s.where);
	filter_free(f);
	filter_sql_free(NULL);
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
	struct filter_sql s;
	sqlite3_stmt *st = NULL;
	char *q;
	size_t k;
	int rc;

	ck_assert_int_eq(filter_to_sql(f, column, NULL, &s), 0);
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
	filter_sql_free(&s);
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
		"prev_comm == 123 || prev_comm == \"it's\" || prev_comm == '[!]'",
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

/* ---- queries ------------------------------------------------------------------ */

START_TEST(test_query_ok)
{
	struct filter_error err;
	struct query q;

	ck_assert_int_eq(query_parse("sched_switch", &q, &err), 0);
	ck_assert_ptr_null(q.system);
	ck_assert_str_eq(q.event, "sched_switch");
	ck_assert_ptr_null(q.filter);
	query_free(&q);
	ck_assert_ptr_null(q.event);

	ck_assert_int_eq(query_parse("sched:sched_switch where prev_pid == 0", &q, &err), 0);
	ck_assert_str_eq(q.system, "sched");
	ck_assert_str_eq(q.event, "sched_switch");
	ck_assert_ptr_nonnull(q.filter);
	ck_assert_uint_eq(q.filter_offset, 25);
	ck_assert_str_eq(filter_text(q.filter), "prev_pid == 0");
	query_free(&q);

	ck_assert_int_eq(query_parse("  sched:*\tWHERE common_pid == 1  ", &q, &err), 0);
	ck_assert_str_eq(q.system, "sched");
	ck_assert_ptr_null(q.event);
	ck_assert_uint_eq(q.filter_offset, 16);
	query_free(&q);

	ck_assert_int_eq(query_parse("sched", &q, &err), 0);
	ck_assert_ptr_null(q.system);
	ck_assert_str_eq(q.event, "sched");
	query_free(&q);

	ck_assert_int_eq(query_parse("xhci-hcd:xhci_urb_enqueue Where(len>0)", &q, &err), 0);
	ck_assert_str_eq(q.system, "xhci-hcd");
	ck_assert_str_eq(q.event, "xhci_urb_enqueue");
	ck_assert_uint_eq(q.filter_offset, 31);
	query_free(&q);
	query_free(NULL);
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
		{ "sched:sw*", TC_ERR_SYNTAX, 8, 1 },
		{ "sched:*x", TC_ERR_SYNTAX, 7, 1 },
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
	ck_assert_int_eq(query_parse(text, &q, &err), 0);
	ck_assert_uint_eq(q.filter_offset, 18);
	query_free(&q);
	/* QUERY_MAX_LEN bytes parse (leading blanks), one more does not */
	memmove(text + QUERY_MAX_LEN - n, text, n + 1);
	memset(text, ' ', QUERY_MAX_LEN - n);
	ck_assert_int_eq(query_parse(text, &q, &err), 0);
	ck_assert_uint_eq(q.filter_offset, QUERY_MAX_LEN - n + 18);
	query_free(&q);
	text[QUERY_MAX_LEN] = ' ';
	text[QUERY_MAX_LEN + 1] = '\0';
	ck_assert_int_eq(query_parse(text, &q, &err), TC_ERR_TOO_LONG);
	ck_assert_uint_eq(err.pos, QUERY_MAX_LEN);
	/* a filter part over FILTER_MAX_LEN is reported where it overflows */
	memset(text, ' ', QUERY_MAX_LEN);
	memcpy(text, "s where prio == 1", 17);
	text[QUERY_MAX_LEN - 1] = '\0';
	ck_assert_int_eq(query_parse(text, &q, &err), TC_ERR_TOO_LONG);
	ck_assert_uint_eq(err.pos, 8 + FILTER_MAX_LEN);
}
END_TEST

START_TEST(test_query_bind_position)
{
	const char *text = "sched_switch where prev_pid == 0 && nosuch > 3";
	struct filter_error err;
	struct query q;
	char buf[256];

	ck_assert_int_eq(query_parse(text, &q, &err), 0);
	ck_assert_int_eq(filter_bind(q.filter, &schema, &err), TC_ERR_UNKNOWN_FIELD);
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

	ck_assert_int_eq(filter_parse("prev_pid === 1", &f, &err), TC_ERR_BAD_OPERATOR);
	ck_assert_str_eq(err.msg, "unknown operator '==='");
	ck_assert_int_eq(filter_parse("(prev_pid == 1", &f, &err), TC_ERR_UNEXPECTED_END);
	filter_error_format("(prev_pid == 1", &err, buf, sizeof(buf));
	ck_assert_str_eq(buf, "error: this '(' is never closed\n  (prev_pid == 1\n  ^\n");
	ck_assert_int_eq(filter_parse("prev_comm == \"bash", &f, &err), TC_ERR_UNTERMINATED);
	ck_assert_str_eq(err.msg, "string has no closing \"");
	ck_assert_int_eq(filter_parse("prev_pid == 1 prio", &f, &err), TC_ERR_SYNTAX);
	ck_assert_str_eq(err.msg, "expected '&&' or '||', found 'prio'");
	ck_assert_int_eq(filter_parse("prio == 300", &f, &err), 0);
	ck_assert_int_eq(filter_bind(f, &schema, &err), TC_ERR_BAD_NUMBER);
	ck_assert_str_eq(err.msg, "'300' is out of range for signed 8-bit field 'prio'");
	filter_free(f);
}
END_TEST

static Suite *filter_suite(void)
{
	Suite *s = suite_create("filter");
	TCase *tc;

	tc = tcase_create("parse");
	tcase_add_test(tc, test_precedence);
	tcase_add_test(tc, test_syntax_errors);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_parse_messages);
	suite_add_tcase(s, tc);
	tc = tcase_create("eval");
	tcase_add_test(tc, test_numeric_ops);
	tcase_add_test(tc, test_edges);
	tcase_add_test(tc, test_strings);
	tcase_add_test(tc, test_globs);
	tcase_add_test(tc, test_cpus);
	tcase_add_test(tc, test_glob_not);
	tcase_add_test(tc, test_eval_errors);
	suite_add_tcase(s, tc);
	tc = tcase_create("bind");
	tcase_add_test(tc, test_bind_errors);
	tcase_add_test(tc, test_bind_rebind_dup);
	suite_add_tcase(s, tc);
	tc = tcase_create("sql");
	tcase_add_test(tc, test_sql_text);
	tcase_add_test(tc, test_sql_eq);
	tcase_add_test(tc, test_sql_errors);
	tcase_add_test(tc, test_sql_crosscheck);
	suite_add_tcase(s, tc);
	tc = tcase_create("query");
	tcase_add_test(tc, test_query_ok);
	tcase_add_test(tc, test_query_errors);
	tcase_add_test(tc, test_query_limits);
	tcase_add_test(tc, test_query_bind_position);
	tcase_add_test(tc, test_error_format);
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(filter_suite())
