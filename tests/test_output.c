/*
 * test_output.c - traceq's JSON/CSV namespace and the COMM rule
 * (traceq/output.c): over every event format of the running kernel (its
 * tracefs), no key repeats and every event field keeps its name, ours
 * giving way (cpuhp_enter's, ipi_send_cpu's and irq_matrix_*'s cpu);
 * pid 0 is swapper/N; CSV quotes what needs it.
 */
#include "config.h"

#include <check.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"
#include "traceq/output.h"

#define MAX_FIELDS	256

static const char *const meta[QMSG_META_COLS] = {
	"host", "cpu", "ts", "trace_ts", "pid", "comm"
};

/* The field names of format file @path into @names; return how many. */
static int format_fields(const char *path, char names[][128], int max)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int n = 0;

	if (!f)
		return -1;
	while (n < max && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "field:"), *semi, *name;

		if (!p || !(semi = strchr(p, ';')))
			continue;
		*semi = 0;
		name = strrchr(p, ' ');		/* __data_loc char[] name */
		name = name ? name + 1 : p + 6;
		name[strcspn(name, "[")] = 0;	/* char comm[16] */
		snprintf(names[n++], 128, "%s", name);
	}
	fclose(f);
	return n;
}

/* Keys of a reply with @names as its event fields; checks them. */
static bool check_keys(const char *event, char names[][128], int n)
{
	char *cols[QMSG_META_COLS + MAX_FIELDS];
	struct qmsg_reply rep = { .event = (char *)event, .cols = cols };
	struct out_keys k;
	bool collided = false;

	for (int i = 0; i < QMSG_META_COLS; i++)
		cols[i] = (char *)meta[i];
	for (int i = 0; i < n; i++)
		cols[QMSG_META_COLS + i] = names[i];
	rep.ncols = (uint32_t)(QMSG_META_COLS + n);
	TU_OK(out_keys_make(&rep, &k));
	for (uint32_t i = 0; i < k.n; i++) {
		if (!k.key[i])
			continue;
		ck_assert_msg(strcmp(k.key[i], k.event_key), "%s: key %s twice", event, k.key[i]);
		for (uint32_t j = i + 1; j < k.n; j++)
			ck_assert_msg(!k.key[j] || strcmp(k.key[i], k.key[j]),
				      "%s: key %s twice", event, k.key[i]);
		if (i >= QMSG_META_COLS)
			ck_assert_str_eq(k.key[i], cols[i]);	/* fields keep their names */
		else if (strcmp(k.key[i], meta[i]))
			collided = true;
	}
	out_keys_free(&k);
	return collided;
}

START_TEST(test_kernel_formats)
{
	static char names[MAX_FIELDS][128];
	const char *want[] = { "cpuhp/cpuhp_enter/", "ipi/ipi_send_cpu/",
			       "irq_matrix/irq_matrix_alloc/", "sched/sched_wakeup/" };
	int formats = 0, collided = 0, found = 0;
	glob_t g;

	if (glob("/sys/kernel/tracing/events/*/*/format", 0, NULL, &g) != 0) {
		printf("SKIP: no readable tracefs event formats\n");
		return;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		int n = format_fields(g.gl_pathv[i], names, MAX_FIELDS);
		bool c;

		if (n <= 0)
			continue;
		formats++;
		c = check_keys(g.gl_pathv[i], names, n);
		collided += c;
		for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++)
			if (strstr(g.gl_pathv[i], want[w])) {
				ck_assert_msg(c, "%s: expected a field named like ours", want[w]);
				found++;
			}
	}
	globfree(&g);
	printf("%d formats, %d with a field named like one of ours (%d of the "
	       "named ones present)\n", formats, collided, found);
	ck_assert_int_gt(formats, 100);
	ck_assert_int_gt(collided, 0);
}
END_TEST

START_TEST(test_ours_give_way)
{
	char *cols[] = { "host", "cpu", "ts", "trace_ts", "pid", "comm",
			 "common_pid", "cpu", "comm" };
	struct qmsg_reply rep = { .event = "x:y", .cols = cols, .ncols = 9 };
	struct out_keys k;

	TU_OK(out_keys_make(&rep, &k));
	ck_assert_str_eq(k.event_key, "event");
	ck_assert_str_eq(k.key[0], "host");
	ck_assert_str_eq(k.key[1], "_cpu");
	ck_assert_ptr_null(k.key[4]);		/* pid is common_pid */
	ck_assert_str_eq(k.key[5], "_comm");
	ck_assert_str_eq(k.key[7], "cpu");
	ck_assert_str_eq(k.key[8], "comm");
	out_keys_free(&k);
}
END_TEST

START_TEST(test_comm_of_pid0)
{
	char buf[OUT_COMM_MAX];
	struct qmsg_value row[QMSG_META_COLS] = {
		{ .kind = QV_STR, .s = { "h", 1 } }, { .kind = QV_UINT, .u = 3 },
		{ .kind = QV_INT, .i = 1 }, { .kind = QV_UINT, .u = 1 },
		{ .kind = QV_INT, .i = 0 }, { .kind = QV_NIL },
	};

	ck_assert_str_eq(out_comm(row, buf), "swapper/3");
	row[4].i = 42;
	ck_assert_ptr_null(out_comm(row, buf));
	row[5] = (struct qmsg_value){ .kind = QV_STR, .s = { "bash", 4 } };
	ck_assert_str_eq(out_comm(row, buf), "bash");
}
END_TEST

START_TEST(test_csv_quotes)
{
	char *cols[] = { "host", "cpu", "ts", "trace_ts", "pid", "comm", "common_pid", "s" };
	struct qmsg_value row[8] = {
		{ .kind = QV_STR, .s = { "h", 1 } }, { .kind = QV_UINT, .u = 0 },
		{ .kind = QV_INT, .i = 5 }, { .kind = QV_UINT, .u = 6 },
		{ .kind = QV_INT, .i = 7 }, { .kind = QV_STR, .s = { "a,b", 3 } },
		{ .kind = QV_INT, .i = 7 }, { .kind = QV_STR, .s = { "say \"hi\"", 8 } },
	};
	struct qmsg_reply rep = { .event = "x:y", .cols = cols, .ncols = 8 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct out_keys k;

	TU_OK(out_keys_make(&rep, &k));
	out_csv_header(f, &k);
	out_csv_row(f, &rep, &k, row);
	fclose(f);
	ck_assert_str_eq(text, "event,host,cpu,ts,trace_ts,comm,common_pid,s\r\n"
			       "x:y,h,0,5,6,\"a,b\",7,\"say \"\"hi\"\"\"\r\n");
	out_keys_free(&k);
	free(text);
}
END_TEST

/* The field=value layout's time: a time before 1970 with its '-'. */
START_TEST(test_fields_negative_time)
{
	char *cols[] = { "host", "cpu", "ts", "trace_ts", "pid", "comm", "common_pid", "n" };
	struct qmsg_value row[8] = {
		{ .kind = QV_STR, .s = { "h", 1 } }, { .kind = QV_UINT, .u = 0 },
		{ .kind = QV_INT, .i = -1500000000 }, { .kind = QV_UINT, .u = 6 },
		{ .kind = QV_INT, .i = 7 }, { .kind = QV_STR, .s = { "sh", 2 } },
		{ .kind = QV_INT, .i = 7 }, { .kind = QV_INT, .i = 1 },
	};
	struct qmsg_reply rep = { .event = "x:y", .cols = cols, .ncols = 8 };
	static const int64_t ts[] = { -1500000000, -500000, INT64_MIN, INT64_MAX, 0 };
	static const char *const want[] = {
		"] -1.500000: y:", "] -0.000500: y:", "] -9223372036.854775: y:",
		"] 9223372036.854775: y:", "] 0.000000: y:",
	};

	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		out_fields_row(f, &rep, row, ts[i]);
		fclose(f);
		ck_assert_msg(strstr(text, want[i]) != NULL, "%s: not in %s", want[i], text);
		free(text);
	}
}
END_TEST

static Suite *output_suite(void)
{
	Suite *s = suite_create("output");
	TCase *tc = tcase_create("output");

	/* test_kernel_formats reads every format of this kernel (2,000+): under
	 * ASan on a loaded machine that takes longer than check's default 4 s */
	tcase_set_timeout(tc, 120);

	tu_add_tests(tc, TU_TESTS(test_kernel_formats, test_ours_give_way, test_comm_of_pid0,
				  test_csv_quotes, test_fields_negative_time));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(output_suite())
