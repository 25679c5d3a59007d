/*
 * test_histspec.c - the hist-trigger spec parser (common/hist.*): what the
 * kernel takes is taken and printed back as the kernel's trigger info
 * line; what it refuses, or we do not support, is refused with a message
 * and the position of the offending text.
 */
#include "config.h"

#include <check.h>
#include <string.h>

#include "common/hist.h"
#include "common/tc_error.h"
#include "tests/testutil.h"

/* @spec parses and prints back as @want. */
static void good(const char *spec, const char *want)
{
	struct filter_error err = { 0 };
	struct hist_spec h;
	char buf[512];
	int ret = hist_parse(spec, &h, &err);

	ck_assert_msg(ret == 0, "'%s': %s", spec, err.msg);
	hist_spec_format(&h, buf, sizeof(buf));
	ck_assert_str_eq(buf, want);
}

/* @spec is refused with @code, a message holding @words, at @pos. */
static void bad(const char *spec, int code, const char *words, size_t pos)
{
	struct filter_error err = { 0 };
	struct hist_spec h;
	int ret = hist_parse(spec, &h, &err);

	ck_assert_msg(ret == code, "'%s': %d (%s), want %d", spec, ret, err.msg, code);
	ck_assert_msg(strstr(err.msg, words), "'%s': '%s' lacks '%s'", spec, err.msg, words);
	ck_assert_msg(err.pos == pos, "'%s': at %zu, want %zu", spec, err.pos, pos);
}

START_TEST(test_kernel_forms)
{
	good("keys=next_comm", "hist:keys=next_comm:vals=hitcount:sort=hitcount:size=2048");
	/* the event's time, in buckets of ns: what the page's timeline summaries ask */
	good("keys=common_cpu,common_timestamp.buckets=1000000",
	     "hist:keys=common_cpu,common_timestamp.buckets=1000000:vals=hitcount:sort=hitcount:"
	     "size=2048");
	good("hist:key=call_site:val=bytes_req",
	     "hist:keys=call_site:vals=hitcount,bytes_req:sort=hitcount:size=2048");
	good("keys=next_comm:sort=hitcount.descending",
	     "hist:keys=next_comm:vals=hitcount:sort=hitcount.descending:size=2048");
	good("keys=common_pid.execname,prev_pid.log2:values=hitcount,prev_prio.hex:size=100",
	     "hist:keys=common_pid.execname,prev_pid.log2:vals=hitcount,prev_prio.hex"
	     ":sort=hitcount:size=128");
	good("keys=prev_pid.buckets=10,call_site.sym,x.hex:sort=prev_pid.descending,hitcount",
	     "hist:keys=prev_pid.buckets=10,call_site.sym,x.hex:vals=hitcount"
	     ":sort=prev_pid.buckets=10.descending,hitcount:size=2048");
	good("keys=a.bucket=0x10:size=131072",
	     "hist:keys=a.buckets=16:vals=hitcount:sort=hitcount:size=131072");
	/* the kernel (6.5 on) names the stack common_stacktrace, however written */
	good("keys=stacktrace", "hist:keys=common_stacktrace:vals=hitcount:sort=hitcount:size=2048");
	good("keys=common_pid,common_stacktrace:vals=prev_prio:sort=common_stacktrace",
	     "hist:keys=common_pid,common_stacktrace:vals=hitcount,prev_prio"
	     ":sort=common_stacktrace:size=2048");
	good("  keys=host,common_cpu:vals=len:sort=len.ascending  ",
	     "hist:keys=host,common_cpu:vals=hitcount,len:sort=len:size=2048");
}
END_TEST

START_TEST(test_sort_prefers_vals)
{
	struct hist_spec h;

	TU_OK(hist_parse("keys=len:vals=len:sort=len.descending", &h, NULL));
	ck_assert_int_eq(h.sort[0].by, HIST_SORT_VAL);
	ck_assert(h.sort[0].descending);
	TU_OK(hist_parse("keys=a,b:sort=b,a", &h, NULL));
	ck_assert_int_eq(h.nsort, 2);
	ck_assert_int_eq(h.sort[0].by, HIST_SORT_KEY);
	ck_assert_int_eq(h.sort[0].i, 1);
	TU_EQ(h.sort[1].i, 0);
}
END_TEST

START_TEST(test_refused)
{
	bad("", TC_ERR_SYNTAX, "keys= is missing", 0);
	bad("vals=len", TC_ERR_SYNTAX, "keys= is missing", 8);
	bad("keys=", TC_ERR_SYNTAX, "names no field", 5);
	bad("keys=a,", TC_ERR_SYNTAX, "field name is missing", 7);
	bad("keys=a,b,c,d", TC_ERR_SYNTAX, "too many keys", 11);
	bad("keys=a:vals=b,c,d", TC_ERR_SYNTAX, "too many values", 16);
	bad("keys=a.foo", TC_ERR_SYNTAX, "unknown modifier '.foo'", 7);
	bad("keys=a.sym-offset", TC_ERR_SYNTAX, "not supported", 7);
	bad("keys=a.buckets", TC_ERR_SYNTAX, "buckets wants a size", 7);
	bad("keys=a.buckets=0", TC_ERR_BAD_NUMBER, "above 0", 15);
	bad("keys=a.buckets=x", TC_ERR_BAD_NUMBER, "above 0", 15);
	bad("keys=a:vals=b.log2", TC_ERR_SYNTAX, "only the .hex", 12);
	bad("keys=a:sort=b", TC_ERR_UNKNOWN_FIELD, "must be hitcount, a key or a val", 12);
	bad("keys=a:sort=a.up", TC_ERR_SYNTAX, "want descending or ascending", 14);
	bad("keys=a:sort=a,hitcount,a", TC_ERR_SYNTAX, "too many sort fields", 23);
	bad("keys=a:size=64", TC_ERR_BAD_NUMBER, "65..131072", 12);
	bad("keys=a:size=131073", TC_ERR_BAD_NUMBER, "65..131072", 12);
	bad("keys=a:size=-1", TC_ERR_BAD_NUMBER, "65..131072", 12);
	bad("keys=a:pause", TC_ERR_SYNTAX, "live trigger", 7);
	bad("keys=a:name=x", TC_ERR_SYNTAX, "not supported", 7);
	bad("keys=a:ts0=common_timestamp", TC_ERR_SYNTAX, "variables", 7);
	bad("keys=a:onmax($x).save(a)", TC_ERR_SYNTAX, "actions", 7);
	bad("keys=a::vals=b", TC_ERR_SYNTAX, "empty attribute", 7);
	bad("keys=a+b", TC_ERR_SYNTAX, "not a field name", 5);
	bad("keys=$x", TC_ERR_SYNTAX, "not a field name", 5);
	bad("keys=a:vals=common_timestamp", TC_ERR_SYNTAX, "a key only", 12);
	bad("keys=common_stacktrace.hex", TC_ERR_SYNTAX, "takes no modifier", 23);
	bad("keys=stacktrace,common_stacktrace", TC_ERR_SYNTAX, "a key once", 16);
	bad("keys=a:vals=common_stacktrace", TC_ERR_SYNTAX, "a key only", 12);
	bad("keys=a if prev_pid > 0", TC_ERR_SYNTAX, "EVENT where FILTER", 7);
	bad("keys=a:keys=b", TC_ERR_SYNTAX, "keys given twice", 7);
	bad("keys=a:sort=a:sort=a", TC_ERR_SYNTAX, "sort given twice", 14);
	bad("bogus", TC_ERR_SYNTAX, "want keys=", 0);
}
END_TEST

START_TEST(test_bounded)
{
	static char big[HIST_SPEC_MAX + 100];
	char name[200];
	struct hist_spec h;

	memset(big, 'a', sizeof(big) - 1);
	memcpy(big, "keys=", 5);
	bad(big, TC_ERR_TOO_LONG, "longer than", HIST_SPEC_MAX);
	memset(name, 'b', sizeof(name));
	snprintf(name, sizeof(name), "keys=%0100d", 0);
	name[5] = 'x';
	bad(name, TC_ERR_TOO_LONG, "too long", 5);
	TU_ERR(hist_parse(NULL, &h, NULL), TC_ERR_SYNTAX);
}
END_TEST

static Suite *histspec_suite(void)
{
	Suite *s = suite_create("histspec");
	TCase *tc = tcase_create("parse");

	tu_add_tests(tc, TU_TESTS(test_kernel_forms, test_sort_prefers_vals, test_refused,
				  test_bounded));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(histspec_suite())
