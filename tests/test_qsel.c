/*
 * test_qsel - selections of several event types (server/query/queryd_sel.c) on
 * a store filled from the recorded capture (sched_switch, sched_wakeup,
 * print), with wall-clock times cut to 10 ms so that many rows of
 * different types share a ts: the merged answer is complete and in (ts,
 * type, rowid) order, paging by 7 rows gives the same rows as one page,
 * --reverse gives them backwards, and the subsystem filter leaves types
 * without its field unfiltered.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "proto/qmsg.h"
#include "server/ingest/decode.h"
#include "server/query/queryd_sel.h"
#include "server/store/store.h"
#include "tests/data/capture_load.h"
#include "tests/store_events.h"
#include "tests/testutil.h"

/* store_type()'s origin in these tests: host 1, no caps */
static const struct store_origin test_origin = { .host_id = 1, .boot_id = "b" };

#define CLOCK_OFFSET	1000000000000000000ll
#define BUCKET		10000000ll	/* 10 ms */
#define MAX_ROWS	65536

static struct capture cap;
static struct decoder *dec;
static const struct decode_type *types[CAPTURE_NFORMATS];
static struct store_writer *wr;	/* setup()'s */
static struct store_reader *st;
static uint64_t host;
static char dir[64], path[80];

static int insert_cb(void *ctx, const struct decode_event *ev)
{
	(void)ctx;
	TU_OK(ev_insert(wr, ev->type->user, host, ev,
			(int64_t)(ev->ts / BUCKET) * BUCKET + CLOCK_OFFSET));
	return 0;
}

static void setup(void)
{
	TU_OK(capture_load(&cap));
	TU_OK(capture_decoder(&cap, &dec, types));
	tu_tmpdir_make(dir, sizeof(dir), "qsel");
	snprintf(path, sizeof(path), "%s/store.db", dir);
	TU_OK(store_writer_open(path, &wr));
	TU_OK(store_host(wr, &cap.hello, NULL, &host));
	for (int i = 0; i < CAPTURE_NFORMATS; i++) {
		struct store_type *t;

		TU_OK(ev_type(wr, types[i], cap.formats[i].text, &test_origin, &t));
		((struct decode_type *)types[i])->user = t;
	}
	TU_OK(store_begin(wr));
	for (unsigned cpu = 0; cpu < cap.ncpus; cpu++)
		for (size_t off = 0; off < cap.raw_len[cpu]; off += cap.page_size)
			TU_OK(decoder_page(dec, cpu, cap.raw[cpu] + off, cap.page_size, insert_cb,
					   NULL, NULL));
	TU_OK(store_commit(wr));
	store_writer_close(wr);
	TU_OK(store_reader_open(path, &st));
}

static void teardown(void)
{
	store_reader_close(st);
	decoder_free(dec);
	capture_free(&cap);
	tu_tmpdir_remove(dir);
}

/* A row's identity and key, as the answer gave it. */
struct seen {
	char event[64];
	int64_t ts;
	uint64_t cpu, trace_ts;
};

/*
 * Every row of @query (@reverse), @limit rows a page, into @out; returns
 * how many. @resume: each page goes on from the state the page before
 * left (qsel_resume(), as the endpoint does with a parked state).
 */
static size_t walk_pages(const char *query, bool reverse, uint32_t limit, bool resume,
			 struct seen *out)
{
	struct qmsg_request r = { .op = QOP_SELECT, .query = (char *)query, .limit = limit,
				  .reverse = reverse };
	struct qsel *c = NULL;
	size_t n = 0;
	bool more;

	do {
		struct proto_buf b;
		struct qmsg_writer *w;
		struct qsel_page pg;
		struct qmsg_reply rep;

		proto_buf_init(&b);
		if (c)
			TU_OK(qsel_resume(c, &r, NULL));
		else
			TU_OK(qsel_compile(st, &r, NULL, &c, &b));
		TU_OK(qsel_select(st, &r, c, &w, &pg));
		qmsg_reply_last_type(w, pg.last_type);
		TU_OK(qmsg_reply_end(w, pg.more, pg.last_ts, pg.last_id, 0, &b));
		TU_OK(qmsg_reply_decode(b.data, b.len, &rep));
		ck_assert(rep.ok);
		for (uint32_t i = 0; i < rep.nrows; i++) {
			struct qmsg_reply v;
			const struct qmsg_value *row = qmsg_reply_row(&rep, i, &v);

			ck_assert_uint_lt(n, MAX_ROWS);
			snprintf(out[n].event, sizeof(out[n].event), "%s", v.event);
			out[n].cpu = row[1].u;
			out[n].ts = row[2].kind == QV_INT ? row[2].i : (int64_t)row[2].u;
			out[n].trace_ts = row[3].u;
			n++;
		}
		more = rep.more;
		ck_assert(!more || rep.nrows == limit);
		r.after_ts = rep.last_ts;
		r.after_id = rep.last_id;
		r.after_type = rep.last_type;
		qmsg_reply_free(&rep);
		if (!resume || !qsel_keepable(c, &r)) {
			qsel_free(c);
			c = NULL;
		}
		proto_buf_free(&b);
	} while (more);
	qsel_free(c);
	return n;
}

static size_t walk(const char *query, bool reverse, uint32_t limit, struct seen *out)
{
	return walk_pages(query, reverse, limit, false, out);
}

static uint64_t count(const char *query)
{
	struct qmsg_request r = { .op = QOP_COUNT, .query = (char *)query };
	struct proto_buf b;
	struct qsel *c;
	uint64_t n;

	proto_buf_init(&b);
	TU_OK(qsel_compile(st, &r, NULL, &c, &b));
	TU_OK(qsel_count(st, c, &n));
	qsel_free(c);
	proto_buf_free(&b);
	return n;
}

static bool same(const struct seen *a, const struct seen *b)
{
	return !strcmp(a->event, b->event) && a->ts == b->ts && a->cpu == b->cpu &&
	       a->trace_ts == b->trace_ts;
}

START_TEST(merged_pages_agree)
{
	static struct seen one[MAX_ROWS], small[MAX_ROWS], back[MAX_ROWS];
	uint64_t sw = count("sched_switch"), wk = count("sched_wakeup");
	size_t n, ties = 0;

	ck_assert_uint_gt(sw, 0);
	ck_assert_uint_gt(wk, 0);
	ck_assert_uint_eq(count("sched:*"), sw + wk);
	n = walk("sched:*", false, QMSG_MAX_ROWS, one);
	ck_assert_uint_eq(n, sw + wk);
	for (size_t i = 1; i < n; i++) {
		ck_assert_int_le(one[i - 1].ts, one[i].ts);
		if (one[i - 1].ts == one[i].ts && strcmp(one[i - 1].event, one[i].event))
			ties++;
	}
	ck_assert_uint_gt(ties, 10);	/* the test is about them */
	ck_assert_uint_eq(walk("sched_wakeup,sched_switch", false, 7, small), n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(same(&one[i], &small[i]), "row %zu differs", i);
	ck_assert_uint_eq(walk("sched:*", true, 7, back), n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(same(&one[i], &back[n - 1 - i]), "reverse row %zu differs", i);
	/* pages that go on from the state the page before left: the same rows */
	ck_assert_uint_eq(walk_pages("sched_wakeup,sched_switch", false, 7, true, small), n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(same(&one[i], &small[i]), "resumed row %zu differs", i);
	ck_assert_uint_eq(walk_pages("sched:*", true, 13, true, back), n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(same(&one[i], &back[n - 1 - i]), "resumed reverse row %zu differs", i);
}
END_TEST

/* The kernel's subsystem filter: sched_wakeup has no prev_pid and keeps no filter. */
START_TEST(subsystem_filter_semantics)
{
	uint64_t wk = count("sched_wakeup");
	uint64_t sw0 = count("sched_switch where prev_pid == 0");
	struct qmsg_request r = { .op = QOP_COUNT,
				  .query = (char *)"sched_wakeup where prev_pid == 0" };
	struct qmsg_reply rep;
	struct proto_buf b;
	struct qsel *c;

	ck_assert_uint_eq(count("sched:* where prev_pid == 0"), sw0 + wk);
	ck_assert_uint_eq(count("sched:* where pid == 1"),
			  count("sched_wakeup where pid == 1") + count("sched_switch"));
	/* no selected type takes it: the error of binding it */
	proto_buf_init(&b);
	ck_assert_int_eq(qsel_compile(st, &r, NULL, &c, &b), 1);
	TU_OK(qmsg_reply_decode(b.data, b.len, &rep));
	TU_ERR(rep.code, TC_ERR_UNKNOWN_FIELD);
	ck_assert_int_eq(rep.pos, 19);
	qmsg_reply_free(&rep);
	proto_buf_free(&b);
}
END_TEST

/* The error reply of compiling @query: its code, its message into @msg. */
static int compile_error(const char *query, char *msg, size_t len)
{
	struct qmsg_request r = { .op = QOP_COUNT, .query = (char *)query };
	struct qmsg_reply rep;
	struct proto_buf b;
	struct qsel *c = NULL;
	int code;

	proto_buf_init(&b);
	ck_assert_int_eq(qsel_compile(st, &r, NULL, &c, &b), 1);
	TU_OK(qmsg_reply_decode(b.data, b.len, &rep));
	ck_assert(!rep.ok);
	snprintf(msg, len, "%s", rep.error);
	code = rep.code;
	qmsg_reply_free(&rep);
	proto_buf_free(&b);
	return code;
}

/* An unknown event or field is named with the closest stored ones. */
START_TEST(unknown_names_suggest)
{
	char msg[512];

	TU_ERR(compile_error("sched_swich", msg, sizeof(msg)), TC_ERR_UNKNOWN_EVENT);
	ck_assert_str_eq(msg, "unknown event: sched_swich (did you mean 'sched_switch'?)");
	TU_ERR(compile_error("sched:sched_wakup where pid == 1", msg, sizeof(msg)),
	       TC_ERR_UNKNOWN_EVENT);
	ck_assert_str_eq(msg, "unknown event: sched:sched_wakup "
			 "(did you mean 'sched:sched_wakeup'?)");
	TU_ERR(compile_error("shed", msg, sizeof(msg)), TC_ERR_UNKNOWN_EVENT);
	ck_assert_str_eq(msg, "unknown event: shed (did you mean 'sched'?)");
	TU_ERR(compile_error("nothing_like_it", msg, sizeof(msg)), TC_ERR_UNKNOWN_EVENT);
	ck_assert_str_eq(msg, "unknown event: nothing_like_it");
	TU_ERR(compile_error("sched_switch where next_pd == 1", msg, sizeof(msg)),
	       TC_ERR_UNKNOWN_FIELD);
	ck_assert_str_eq(msg, "unknown field 'next_pd' (did you mean 'next_pid'?)");
	TU_ERR(compile_error("sched_switch where prev_comm == 5", msg, sizeof(msg)),
	       TC_ERR_TYPE_MISMATCH);
}
END_TEST

static Suite *qsel_suite(void)
{
	Suite *s = suite_create("qsel");
	TCase *tc = tcase_create("qsel");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tu_add_tests(tc, TU_TESTS(merged_pages_agree, subsystem_filter_semantics,
				  unknown_names_suggest));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(qsel_suite())
