/*
 * test_render.c - traceq's renderer (traceq/render.c) with the kernel's
 * printk_formats: records crafted from the formats of this kernel's
 * rcu:rcu_utilization (a "%s" of a const char *, a tracepoint_string) and
 * ftrace:bprint (trace_printk: its format is a printk_formats string),
 * printed with each host's own table as trace-cmd report prints them
 * from a trace.dat's copy, and as the bare address without one; and the
 * kernel's record-tgid column (--tgid); and trace-cmd's columns and
 * fastprint's event text, as render.c writes them itself, against
 * libtraceevent's (render_set_slow()) on edge rows.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"
#include "traceq/render.h"

static const char rcu_format[] =
	"name: rcu_utilization\nID: 424\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:const char * s;\toffset:8;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"%s\", REC->s\n";

static const char bprint_format[] =
	"name: bprint\nID: 6\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:const char * fmt;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:u32 buf[];\toffset:24;\tsize:0;\tsigned:0;\n\n"
	"print fmt: \"%ps: %s\", (void *)REC->ip, REC->fmt\n";

/* Host "a" and host "b" have different strings at the same address (KASLR). */
static const uint64_t addr_a[] = { 0xffffffff8281b87cull, 0xffffffff82000000ull };
static char *fmt_a[] = { "\"Start context switch\"", "\"hello from a\\n\"" };
static const uint64_t addr_b[] = { 0xffffffff8281b87cull };
static char *fmt_b[] = { "\"End context switch\"" };
static unsigned asked[3];

static size_t printk_of(void *ctx, const char *host, int64_t wall_ns, const uint64_t **addr,
			char *const **fmt)
{
	(void)ctx;
	ck_assert_int_eq(wall_ns, 1795725230000000000ll);
	if (!strcmp(host, "a")) {
		asked[0]++;
		*addr = addr_a;
		*fmt = fmt_a;
		return 2;
	}
	if (!strcmp(host, "b")) {
		asked[1]++;
		*addr = addr_b;
		*fmt = fmt_b;
		return 1;
	}
	asked[2]++;
	return 0;
}

static char *cols_rcu[] = { "host", "cpu", "ts", "trace_ts", "pid", "comm", "common_type",
			    "common_flags", "common_preempt_count", "common_pid", "s" };
static char *cols_bprint[] = { "host", "cpu", "ts", "trace_ts", "pid", "comm", "common_type",
			       "common_flags", "common_preempt_count", "common_pid", "ip", "fmt" };

/* One row of host @host whose last column (the pointer) is @ptr. */
static void row(struct qmsg_value *v, size_t ncols, char *host, uint64_t ptr)
{
	memset(v, 0, ncols * sizeof(*v));
	v[0] = (struct qmsg_value){ .kind = QV_STR, .s = { host, strlen(host) } };
	v[1] = (struct qmsg_value){ .kind = QV_UINT, .u = 1 };
	v[2] = (struct qmsg_value){ .kind = QV_INT, .i = 1795725230000000000ll };
	v[3] = (struct qmsg_value){ .kind = QV_UINT, .u = 28084710426000ull };
	v[4] = (struct qmsg_value){ .kind = QV_INT, .i = 16733 };
	v[5] = (struct qmsg_value){ .kind = QV_STR, .s = { "sh", 2 } };
	v[9] = v[4];
	v[ncols - 1] = (struct qmsg_value){ .kind = QV_UINT, .u = ptr };
}

static const char *print(struct render *r, struct qmsg_reply *rep, char *buf, size_t len)
{
	render_row(r, rep, rep->vals, 28084710426000ull, buf, len);
	return buf;
}

/* rcu_utilization's %s: each host's string, the address for a host without. */
START_TEST(test_render_tracepoint_string)
{
	struct qmsg_value v[11];
	struct qmsg_reply rep = { .ok = true, .event = "rcu:rcu_utilization", .ncols = 11,
				  .cols = cols_rcu, .nrows = 1, .vals = v,
				  .format = (char *)rcu_format };
	struct render *r;
	char why[256], line[512];

	memset(asked, 0, sizeof(asked));
	TU_OK(render_new(RENDER_TRACECMD, NULL, NULL, &r));
	render_set_printk(r, printk_of, NULL);
	TU_OK(render_prepare(r, &rep, why, sizeof(why)));
	row(v, 11, "a", 0xffffffff8281b87cull);
	ck_assert_str_eq(print(r, &rep, line, sizeof(line)),
			 "              sh-16733 [001] 28084.710426: rcu_utilization:      "
			 "Start context switch");
	row(v, 11, "b", 0xffffffff8281b87cull);
	ck_assert_str_eq(strstr(print(r, &rep, line, sizeof(line)), "rcu_utilization:"),
			 "rcu_utilization:      End context switch");
	row(v, 11, "c", 0xffffffff8281b87cull);
	ck_assert_str_eq(strstr(print(r, &rep, line, sizeof(line)), "rcu_utilization:"),
			 "rcu_utilization:      ffffffff8281b87c");
	row(v, 11, "a", 0xffffffff8281b87cull);	/* a's handle is kept: not asked again */
	ck_assert_str_eq(strstr(print(r, &rep, line, sizeof(line)), "rcu_utilization:"),
			 "rcu_utilization:      Start context switch");
	ck_assert_uint_eq(asked[0], 1);
	ck_assert_uint_eq(asked[1], 1);
	ck_assert_uint_eq(asked[2], 1);
	render_free(r);

	/* the kernel's layout (no plugins) resolves it the same way */
	TU_OK(render_new(RENDER_KERNEL, NULL, NULL, &r));
	render_set_printk(r, printk_of, NULL);
	TU_OK(render_prepare(r, &rep, why, sizeof(why)));
	row(v, 11, "a", 0xffffffff8281b87cull);
	ck_assert_str_eq(strstr(print(r, &rep, line, sizeof(line)), "rcu_utilization:"),
			 "rcu_utilization: Start context switch");
	render_free(r);

	/* without a printk callback: the address, as before */
	TU_OK(render_new(RENDER_TRACECMD, NULL, NULL, &r));
	TU_OK(render_prepare(r, &rep, why, sizeof(why)));
	row(v, 11, "a", 0xffffffff8281b87cull);
	ck_assert_str_eq(strstr(print(r, &rep, line, sizeof(line)), "rcu_utilization:"),
			 "rcu_utilization:      ffffffff8281b87c");
	render_free(r);
}
END_TEST

/* trace_printk (ftrace:bprint): its format is a printk_formats string. */
START_TEST(test_render_bprint)
{
	struct qmsg_value v[12];
	struct qmsg_reply rep = { .ok = true, .event = "ftrace:bprint", .ncols = 12,
				  .cols = cols_bprint, .nrows = 1, .vals = v,
				  .format = (char *)bprint_format };
	struct render *r;
	char why[256], line[512];

	TU_OK(render_new(RENDER_TRACECMD, NULL, NULL, &r));
	render_set_printk(r, printk_of, NULL);
	TU_OK(render_prepare(r, &rep, why, sizeof(why)));
	row(v, 12, "a", 0xffffffff82000000ull);
	v[10] = (struct qmsg_value){ .kind = QV_UINT, .u = 0xffffffff81000100ull };
	print(r, &rep, line, sizeof(line));
	ck_assert_msg(strstr(line, "hello from a") != NULL, "%s", line);
	row(v, 12, "b", 0xffffffff82000000ull);
	v[10] = (struct qmsg_value){ .kind = QV_UINT, .u = 0xffffffff81000100ull };
	print(r, &rep, line, sizeof(line));
	ck_assert_msg(strstr(line, "NO FORMAT FOUND") != NULL, "%s", line);
	render_free(r);
}
END_TEST

static int32_t tgid_of(void *ctx, const char *host, int32_t pid)
{
	(void)ctx;
	return !strcmp(host, "a") && pid == 16733 ? 4242 : 0;
}

/* --tgid: the kernel's record-tgid column, in both layouts. */
START_TEST(test_render_tgid)
{
	struct qmsg_value v[11];
	struct qmsg_reply rep = { .ok = true, .event = "rcu:rcu_utilization", .ncols = 11,
				  .cols = cols_rcu, .nrows = 1, .vals = v,
				  .format = (char *)rcu_format };
	struct render *r;
	char why[256], line[512];

	TU_OK(render_new(RENDER_KERNEL, NULL, NULL, &r));
	render_set_printk(r, printk_of, NULL);
	render_set_tgid(r, tgid_of, NULL);
	TU_OK(render_prepare(r, &rep, why, sizeof(why)));
	row(v, 11, "a", 0xffffffff8281b87cull);
	ck_assert_str_eq(print(r, &rep, line, sizeof(line)),
			 "              sh-16733   (   4242) [001] ..... 28084.710426: "
			 "rcu_utilization: Start context switch");
	row(v, 11, "b", 0xffffffff8281b87cull);
	ck_assert_msg(strstr(print(r, &rep, line, sizeof(line)), "sh-16733   (-------) [001] "),
		      "%s", line);
	render_free(r);

	TU_OK(render_new(RENDER_TRACECMD, NULL, NULL, &r));
	render_set_tgid(r, tgid_of, NULL);
	TU_OK(render_prepare(r, &rep, why, sizeof(why)));
	row(v, 11, "a", 0xffffffff8281b87cull);
	ck_assert_msg(strstr(print(r, &rep, line, sizeof(line)),
			     "              sh-16733 (   4242) [001] 28084.710426: "), "%s", line);
	render_free(r);
}
END_TEST

static const char enter_format[] =
	"name: sys_enter\nID: 443\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;\n\n"
	"print fmt: \"NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)\", REC->id, REC->args[0], "
	"REC->args[1], REC->args[2], REC->args[3], REC->args[4], REC->args[5]\n";

/* A name past trace-cmd's 20 columns, a format fastprint does not take. */
static const char long_format[] =
	"name: a_name_longer_than_twenty\nID: 900\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:int v;\toffset:8;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"v=%d%s\", REC->v, REC->v > 3 ? \" big\" : \"\"\n";

/* A text that ends its own line: trace-cmd drops that newline. */
static const char newline_format[] =
	"name: ends_line\nID: 901\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:int v;\toffset:8;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"v=%d\\n\", REC->v\n";

static char *cols_enter[] = { "host", "cpu", "ts", "trace_ts", "pid", "comm", "common_type",
			      "common_flags", "common_preempt_count", "common_pid", "id",
			      "args" };
static char *cols_long[] = { "host", "cpu", "ts", "trace_ts", "pid", "comm", "common_type",
			     "common_flags", "common_preempt_count", "common_pid", "v" };

/* Row @i of the edge rows: pids, comms, CPUs and times that need care. */
static void edge_row(struct qmsg_value *v, size_t ncols, int i, unsigned char *args)
{
	static char *const comms[] = { "sh", "", "a-comm-longer-than-16", "<idle>", "x y" };
	static const int64_t pids[] = { 16733, 0, 1, -5, 2147483647, 99999 };
	static const uint64_t cpus[] = { 1, 0, 7, 123, 1000, 0xffffffffull };
	static const uint64_t times[] = { 28084710426000ull, 0, 499, 500, 999999499,
					  999999500, 18446744073709551115ull, 123456789012345678ull };
	char *comm = comms[i % 5];

	row(v, ncols, i % 3 ? "a" : "b", 0);
	v[1] = (struct qmsg_value){ .kind = QV_UINT, .u = cpus[i % 6] };
	v[3] = (struct qmsg_value){ .kind = QV_UINT, .u = times[i % 8] };
	v[4] = (struct qmsg_value){ .kind = QV_INT, .i = pids[i % 6] };
	v[5] = i % 7 == 3 ? (struct qmsg_value){ .kind = QV_NIL } :
		(struct qmsg_value){ .kind = QV_STR, .s = { comm, strlen(comm) } };
	v[9] = v[4];
	if (i % 11 == 5)	/* the record's pid is not the row's */
		v[9] = (struct qmsg_value){ .kind = QV_INT, .i = 77 };
	if (args) {
		for (int b = 0; b < 48; b++)
			args[b] = (unsigned char)(i * 37 + b * 11);
		v[10] = (struct qmsg_value){ .kind = QV_INT, .i = i % 2 ? -i : i * 1000 };
		v[11] = (struct qmsg_value){ .kind = QV_BIN, .s = { (char *)args, 48 } };
	} else {
		v[10] = (struct qmsg_value){ .kind = QV_INT, .i = i - 3 };
	}
}

/* The same rows through render.c's own writing and through libtraceevent. */
static void compare_paths(const char *format, const char *event, char **cols, size_t ncols,
			  bool tgid)
{
	struct qmsg_value v[12];
	unsigned char args[48];
	struct qmsg_reply rep = { .ok = true, .event = (char *)event, .ncols = (uint32_t)ncols,
				  .cols = cols, .nrows = 1, .vals = v, .format = (char *)format };
	struct render *fast, *slow;
	char why[256], a[512], b[512];

	TU_OK(render_new(RENDER_TRACECMD, NULL, NULL, &fast));
	TU_OK(render_new(RENDER_TRACECMD, NULL, NULL, &slow));
	render_set_slow(slow, true);
	if (tgid) {
		render_set_tgid(fast, tgid_of, NULL);
		render_set_tgid(slow, tgid_of, NULL);
	}
	TU_OK(render_prepare(fast, &rep, why, sizeof(why)));
	TU_OK(render_prepare(slow, &rep, why, sizeof(why)));
	for (int i = 0; i < 200; i++) {
		size_t len = i % 13 == 4 ? (size_t)(i % 50 + 1) : sizeof(a);	/* cut lines too */
		size_t na, nb;

		edge_row(v, ncols, i, ncols == 12 ? args : NULL);
		if (tgid && i % 2)
			v[4] = v[9] = (struct qmsg_value){ .kind = QV_INT, .i = 16733 };
		na = render_row(fast, &rep, v, v[3].u, a, len);
		nb = render_row(slow, &rep, v, v[3].u, b, len);
		ck_assert_msg(na == nb && !strcmp(a, b), "%s row %d:\nours:          \"%s\"\n"
			      "libtraceevent: \"%s\"", event, i, a, b);
	}
	render_free(fast);
	render_free(slow);
}

START_TEST(test_render_own_columns)
{
	compare_paths(enter_format, "raw_syscalls:sys_enter", cols_enter, 12, false);
	compare_paths(enter_format, "raw_syscalls:sys_enter", cols_enter, 12, true);
	compare_paths(long_format, "test:a_name_longer_than_twenty", cols_long, 11, false);
	compare_paths(rcu_format, "rcu:rcu_utilization", cols_rcu, 11, true);
	compare_paths(newline_format, "test:ends_line", cols_long, 11, false);
}
END_TEST

/*
 * A time before 1970 (a negative wall clock) prints with its '-', in
 * both layouts and both of trace-cmd's paths, not as libtraceevent's
 * unsigned 18446744073.709551.
 */
START_TEST(test_render_negative_time)
{
	static const int64_t ts[] = { -1500000, -28084710426000ll, INT64_MIN };
	static const char *const want[] = { " -0.001500: ", "-28084.710426: ",
					    "-9223372036.854776: " };
	static const enum render_style style[] = { RENDER_TRACECMD, RENDER_TRACECMD,
						   RENDER_KERNEL };
	struct qmsg_value v[11];
	struct qmsg_reply rep = { .ok = true, .event = "rcu:rcu_utilization", .ncols = 11,
				  .cols = cols_rcu, .nrows = 1, .vals = v,
				  .format = (char *)rcu_format };
	char why[256], line[512];

	for (size_t k = 0; k < 3; k++) {
		struct render *r;

		TU_OK(render_new(style[k], NULL, NULL, &r));
		render_set_slow(r, k == 1);
		TU_OK(render_prepare(r, &rep, why, sizeof(why)));
		for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
			row(v, 11, "a", 0xffffffff8281b87cull);
			render_row(r, &rep, v, ts[i], line, sizeof(line));
			ck_assert_msg(strstr(line, want[i]) != NULL, "style %zu: %s: not in \"%s\"",
				      k, want[i], line);
		}
		render_free(r);
	}
}
END_TEST

static Suite *render_suite(void)
{
	Suite *s = suite_create("render");
	TCase *tc = tcase_create("printk");

	tu_add_tests(tc, TU_TESTS(test_render_tracepoint_string, test_render_bprint,
				  test_render_tgid, test_render_own_columns,
				  test_render_negative_time));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(render_suite())
