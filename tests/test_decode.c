/*
 * test_decode.c - server/ingest/decode against real pages from this kernel
 * (tests/data, recorded by tests/data/capture.sh) and against pages broken
 * on purpose.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/kbuffer.h>

#include "common/tc_error.h"
#include "proto/frame.h"
#include "server/ingest/decode.h"
#include "tests/data/capture_load.h"
#include "tests/testutil.h"

static struct capture cap;
static struct decoder *dec;
static const struct decode_type *types[CAPTURE_NFORMATS];	/* switch, wakeup, print */

static void setup(void)
{
	TU_OK(capture_load(&cap));
	TU_OK(capture_decoder(&cap, &dec, types));
}

static void teardown(void)
{
	decoder_free(dec);
	dec = NULL;
	capture_free(&cap);
}

static int field_index(const struct decode_type *t, const char *name)
{
	for (unsigned i = 0; i < t->nfields; i++)
		if (!strcmp(t->fields[i].name, name))
			return (int)i;
	ck_abort_msg("no field %s in %s", name, t->name);
	return -1;
}

static struct store_value field(const struct decode_event *ev, const char *name)
{
	struct store_value v;
	int ret = decode_field_value(ev, (unsigned)field_index(ev->type, name), &v);

	ck_assert_msg(ret == 0, "%s: %s", name, tc_strerror(ret));
	return v;
}

/* Decode every page of every CPU through @fn; return the total events. */
static uint64_t decode_all(decode_event_fn fn, void *ctx, uint64_t *per_cpu)
{
	uint64_t total = 0;

	for (unsigned cpu = 0; cpu < cap.ncpus; cpu++) {
		ck_assert_uint_eq(cap.raw_len[cpu] % cap.page_size, 0);
		for (size_t off = 0; off < cap.raw_len[cpu]; off += cap.page_size) {
			struct decode_page_stats st;
			int ret = decoder_page(dec, cpu, cap.raw[cpu] + off, cap.page_size,
					       fn, ctx, &st);

			ck_assert_msg(ret == 0, "cpu%u page %zu: %s", cpu, off / cap.page_size,
				      tc_strerror(ret));
			ck_assert_uint_eq(st.unknown, 0);
			total += st.events;
			if (per_cpu)
				per_cpu[cpu] += st.events;
		}
	}
	return total;
}

static int count_cb(void *ctx, const struct decode_event *ev)
{
	(void)ctx;
	(void)ev;
	return 0;
}

START_TEST(test_types)
{
	const struct decode_type *sw = types[0], *pr = types[2];

	ck_assert_str_eq(sw->system, "sched");
	ck_assert_str_eq(sw->name, "sched_switch");
	ck_assert_str_eq(sw->fields[0].name, "common_type");
	ck_assert_str_eq(sw->fields[3].name, "common_pid");
	ck_assert_int_eq(sw->fields[3].kind, STORE_SIGNED);
	ck_assert_int_eq(sw->fields[field_index(sw, "prev_comm")].kind, STORE_STRING);
	ck_assert_uint_eq(sw->fields[field_index(sw, "prev_comm")].size, 16);
	/* the type text push-down classifies fields by, as the kernel's filter */
	ck_assert_str_eq(sw->fields[field_index(sw, "prev_comm")].type, "char[16]");
	ck_assert_str_eq(sw->fields[field_index(sw, "prev_pid")].type, "pid_t");
	ck_assert_int_eq(sw->fields[field_index(sw, "prev_pid")].kind, STORE_SIGNED);
	ck_assert_int_eq(sw->fields[field_index(sw, "common_type")].kind, STORE_UNSIGNED);
	ck_assert_uint_eq(sw->nfields, 11);
	ck_assert_int_eq(pr->fields[field_index(pr, "buf")].kind, STORE_STRING);
	ck_assert_str_eq(pr->fields[field_index(pr, "buf")].type, "char[]");
	ck_assert_int_eq(pr->fields[field_index(pr, "ip")].kind, STORE_UNSIGNED);
	ck_assert_str_eq(store_kind_name(STORE_BLOB), "blob");
}
END_TEST

START_TEST(test_entries_match_kernel)
{
	uint64_t per_cpu[CAPTURE_MAX_CPUS] = { 0 };
	uint64_t total = decode_all(count_cb, NULL, per_cpu);

	ck_assert_uint_gt(total, 0);
	for (unsigned cpu = 0; cpu < cap.ncpus; cpu++)
		ck_assert_msg(per_cpu[cpu] == cap.entries[cpu], "cpu%u: decoded %llu, kernel %llu",
			      cpu, (unsigned long long)per_cpu[cpu],
			      (unsigned long long)cap.entries[cpu]);
}
END_TEST

struct markers {
	unsigned n;
	uint64_t ts[64];
	char text[64][32];
	int pid[64];
};

static int marker_cb(void *ctx, const struct decode_event *ev)
{
	struct markers *m = ctx;
	struct store_value v;

	if (ev->type != types[2])
		return 0;
	v = field(ev, "buf");
	ck_assert_int_eq(v.kind, STORE_STRING);
	if (v.str.len < 10 || memcmp(v.str.s, "tc-marker-", 10) != 0)
		return 0;
	ck_assert_uint_lt(m->n, 64);
	ck_assert_uint_lt(v.str.len, 32);
	memcpy(m->text[m->n], v.str.s, v.str.len);
	m->text[m->n][v.str.len] = '\0';
	m->ts[m->n] = ev->ts;
	m->pid[m->n] = ev->pid;
	m->n++;
	return 0;
}

START_TEST(test_markers)
{
	struct markers m = { 0 };
	char want[32];

	decode_all(marker_cb, &m, NULL);
	ck_assert_uint_eq(m.n, cap.markers);
	/* Markers may sit on different CPUs: order them by time. */
	for (unsigned i = 1; i < m.n; i++)
		for (unsigned j = i; j > 0 && m.ts[j - 1] > m.ts[j]; j--) {
			char tmp[32];
			uint64_t t = m.ts[j];

			m.ts[j] = m.ts[j - 1];
			m.ts[j - 1] = t;
			memcpy(tmp, m.text[j], 32);
			memcpy(m.text[j], m.text[j - 1], 32);
			memcpy(m.text[j - 1], tmp, 32);
		}
	for (unsigned i = 0; i < m.n; i++) {
		snprintf(want, sizeof(want), "tc-marker-%02u\n", i + 1);
		ck_assert_str_eq(m.text[i], want);
		ck_assert_int_eq(m.pid[i], cap.pid);
	}
}
END_TEST

struct order {
	uint64_t last[CAPTURE_MAX_CPUS];
	uint64_t switches;
};

static int order_cb(void *ctx, const struct decode_event *ev)
{
	struct order *o = ctx;
	struct store_value v;

	ck_assert_uint_lt(ev->cpu, cap.ncpus);
	ck_assert_msg(ev->ts >= o->last[ev->cpu], "cpu%u: ts went back", ev->cpu);
	o->last[ev->cpu] = ev->ts;
	ck_assert_int_ge(ev->pid, 0);
	if (ev->type != types[0])
		return 0;
	o->switches++;
	v = field(ev, "prev_comm");
	ck_assert_uint_gt(v.str.len, 0);
	ck_assert_uint_lt(v.str.len, 16);
	ck_assert_ptr_null(memchr(v.str.s, '\0', v.str.len));
	ck_assert_int_ge(field(ev, "prev_pid").i, 0);
	ck_assert_int_ge(field(ev, "next_pid").i, 0);
	v = field(ev, "prev_state");
	ck_assert_int_eq(v.kind, STORE_SIGNED);
	ck_assert_int_ge(v.i, 0);
	ck_assert_int_lt(v.i, 0x1000);
	ck_assert_int_eq(field(ev, "common_pid").i, field(ev, "prev_pid").i);
	ck_assert_int_eq(field(ev, "common_type").u, (uint64_t)types[0]->id);
	return 0;
}

START_TEST(test_order_and_switch_fields)
{
	struct order o = { { 0 }, 0 };

	decode_all(order_cb, &o, NULL);
	ck_assert_uint_gt(o.switches, cap.markers);
}
END_TEST

static int stop_cb(void *ctx, const struct decode_event *ev)
{
	unsigned *n = ctx;

	(void)ev;
	return ++*n == 3 ? 42 : 0;
}

START_TEST(test_callback_stops)
{
	struct decode_page_stats st;
	unsigned n = 0;
	unsigned cpu = cap.entries[0] >= 3 ? 0 : 1;

	ck_assert_int_eq(decoder_page(dec, cpu, cap.raw[cpu], cap.page_size, stop_cb, &n, &st), 42);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(st.events, 3);
}
END_TEST

/* ---- hand-made pages ---- */

static uint8_t page[65536];

static void page_init(uint64_t commit)
{
	memset(page, 0, sizeof(page));
	memcpy(page + 8, &commit, 8);
}

static void put4(size_t off, uint32_t v)
{
	memcpy(page + off, &v, 4);
}

static int page_decode(size_t len, struct decode_page_stats *st)
{
	unsigned n = 0;

	return decoder_page(dec, 0, page, len, count_cb, &n, st);
}

START_TEST(test_reject_length)
{
	page_init(0);
	TU_ERR(page_decode(cap.page_size + 8, NULL), TC_ERR_PAGE_MALFORMED);
	TU_ERR(page_decode(0, NULL), TC_ERR_PAGE_MALFORMED);
	TU_ERR(page_decode(15, NULL), TC_ERR_PAGE_MALFORMED);
	TU_OK(page_decode(cap.page_size, NULL));
	/* The unused tail may be left out, never committed data. */
	TU_OK(page_decode(16, NULL));
	TU_OK(page_decode(cap.page_size - 1, NULL));
	page_init(8);
	put4(16, 2u | (1u << 5));	/* one 8-byte event */
	put4(20, 0);
	TU_ERR(page_decode(23, NULL), TC_ERR_PAGE_MALFORMED);
}
END_TEST

START_TEST(test_reject_commit)
{
	page_init(cap.page_size - 16 + 4);
	TU_ERR(page_decode(cap.page_size, NULL), TC_ERR_PAGE_MALFORMED);
	page_init(0x7ffffff);
	TU_ERR(page_decode(cap.page_size, NULL), TC_ERR_PAGE_MALFORMED);
	page_init(6);	/* not a multiple of 4 */
	TU_ERR(page_decode(cap.page_size, NULL), TC_ERR_PAGE_MALFORMED);
	/* the stored missed count needs room after the data */
	page_init((cap.page_size - 16) | (3u << 30));
	TU_ERR(page_decode(cap.page_size, NULL), TC_ERR_PAGE_MALFORMED);
}
END_TEST

START_TEST(test_reject_event_past_commit)
{
	/* type_len 10 = 40 bytes of data, but only 8 committed */
	page_init(8);
	put4(16, 10);
	TU_ERR(page_decode(cap.page_size, NULL), TC_ERR_PAGE_MALFORMED);
	/* type_len 0 with a huge length word */
	page_init(16);
	put4(16, 0);
	put4(20, 0xfffffff0u);
	TU_ERR(page_decode(cap.page_size, NULL), TC_ERR_PAGE_MALFORMED);
	/* type_len 0 with a length word under 4 */
	put4(20, 2);
	TU_ERR(page_decode(cap.page_size, NULL), TC_ERR_PAGE_MALFORMED);
	/* padding whose length would wrap kbuffer's int cursor backwards */
	page_init(16);
	put4(16, KBUFFER_TYPE_PADDING);
	put4(20, 0xfffffffcu);
	TU_ERR(page_decode(cap.page_size, NULL), TC_ERR_PAGE_MALFORMED);
	/* time extend cut by the commit */
	page_init(4);
	put4(16, KBUFFER_TYPE_TIME_EXTEND);
	TU_ERR(page_decode(cap.page_size, NULL), TC_ERR_PAGE_MALFORMED);
	/* a real page whose commit is cut in the middle of an event */
	memcpy(page, cap.raw[1], cap.page_size);
	{
		uint64_t commit;

		memcpy(&commit, page + 8, 8);
		commit = ((commit & 0x7ffffff) > 100 ? 100 : 8) | (commit & ~0x7ffffffull);
		memcpy(page + 8, &commit, 8);
	}
	TU_ERR(page_decode(cap.page_size, NULL), TC_ERR_PAGE_MALFORMED);
}
END_TEST

START_TEST(test_missed_and_padding)
{
	struct decode_page_stats st;
	uint64_t count = 1234;

	/* one padding record of 8 bytes, then the stored missed count */
	page_init(12 | (3u << 30));
	put4(16, KBUFFER_TYPE_PADDING | (5u << 5));
	put4(20, 8);
	memcpy(page + 28, &count, 8);
	TU_OK(page_decode(cap.page_size, &st));
	ck_assert(st.missed_events);
	ck_assert_uint_eq(st.missed, 1234);
	ck_assert_uint_eq(st.padding, 1);
	ck_assert_uint_eq(st.events, 0);
	page_init(1u << 31);
	TU_OK(page_decode(cap.page_size, &st));
	ck_assert(st.missed_events);
	ck_assert_uint_eq(st.missed, 0);
}
END_TEST

START_TEST(test_unknown_type)
{
	struct decode_page_stats st;

	/* one 8-byte event of id 9999 */
	page_init(12);
	put4(16, 2);
	put4(20, 9999);
	TU_OK(page_decode(cap.page_size, &st));
	ck_assert_uint_eq(st.unknown, 1);
	ck_assert_uint_eq(st.events, 0);
}
END_TEST

START_TEST(test_garbage)
{
	unsigned seed = 12345;

	for (int round = 0; round < 2000; round++) {
		struct decode_page_stats st;
		size_t n = cap.page_size;
		int ret;

		for (size_t i = 0; i < n; i++)
			page[i] = (uint8_t)(rand_r(&seed) >> 7);
		if (round % 2) {	/* plausible commit */
			uint64_t commit = (uint64_t)(rand_r(&seed) % (n - 16)) & ~3ull;

			memcpy(page + 8, &commit, 8);
		}
		ret = page_decode(n, &st);
		ck_assert(ret == 0 || ret == TC_ERR_PAGE_MALFORMED);
	}
}
END_TEST

START_TEST(test_formats)
{
	const struct decode_type *t, *again;
	struct decoder *d;
	struct proto_hello h = cap.hello;

	TU_OK(decoder_new(&h, &d));
	TU_ERR(decoder_format(d, "sched", "sched_switch", "garbage", 7, &t), TC_ERR_FORMAT_PARSE);
	TU_ERR(decoder_format(d, "sched", "other", cap.formats[0].text,
			      cap.formats[0].len, &t), TC_ERR_FORMAT_PARSE);
	TU_OK(decoder_format(d, "sched", "sched_switch", cap.formats[0].text,
			     cap.formats[0].len, &t));
	TU_OK(decoder_format(d, "sched", "sched_switch", cap.formats[0].text,
			     cap.formats[0].len, &again));
	ck_assert_ptr_eq(t, again);
	decoder_free(d);
	h.long_size = 4;
	TU_OK(decoder_new(&h, &d));
	TU_ERR(decoder_header_page(d, cap.header_page, cap.header_page_len), TC_ERR_FORMAT_PARSE);
	decoder_free(d);
	h.long_size = 3;
	TU_ERR(decoder_new(&h, &d), -EINVAL);
	h.long_size = 8;
	h.page_size = 100;
	TU_ERR(decoder_new(&h, &d), -EINVAL);
	h.page_size = FRAME_MAX_PAYLOAD;	/* a page travels in one frame */
	TU_OK(decoder_new(&h, &d));
	decoder_free(d);
	h.page_size = FRAME_MAX_PAYLOAD + 8;
	TU_ERR(decoder_new(&h, &d), -EINVAL);
}
END_TEST

/*
 * An agent's format whose __data_loc field claims offset 4294967292, which
 * libtraceevent keeps as the int -4, or one past the record.
 */
#define LOC_FORMAT(off) \
	"name: tc_loc\nID: 902\nformat:\n" \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n" \
	"\tfield:__data_loc char[] msg;\toffset:" off ";\tsize:4;\tsigned:0;\n\n" \
	"print fmt: \"%s\", __get_str(msg)\n"

static int loc_cb(void *ctx, const struct decode_event *ev)
{
	struct store_value v;

	*(int *)ctx = decode_field_value(ev, ev->type->nfields - 1, &v);
	return 0;
}

START_TEST(test_reject_data_loc_offset)
{
	static const char *const fmts[] = { LOC_FORMAT("4294967292"), LOC_FORMAT("16") };
	uint8_t pg[4096] = { 0 };
	uint64_t commit = 4 + 16;
	uint32_t hdr = 4, loc = 4u << 16 | 8;	/* 16 bytes of data; "msg" at 8, 4 long */
	uint16_t id = 902;

	memcpy(pg + 8, &commit, 8);
	memcpy(pg + 16, &hdr, 4);
	memcpy(pg + 20, &id, 2);
	memcpy(pg + 20 + 8, &loc, 4);
	memcpy(pg + 20 + 12, "abcd", 4);
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		const struct decode_type *t;
		struct decoder *d;
		int got = 1;

		TU_OK(decoder_new(&cap.hello, &d));
		if (decoder_format(d, "tc", "tc_loc", fmts[i], strlen(fmts[i]), &t) == 0) {
			ck_assert_str_eq(t->fields[t->nfields - 1].name, "msg");
			ck_assert_str_eq(t->fields[t->nfields - 1].type, "__data_loc char[]");
			TU_OK(decoder_page(d, 0, pg, cap.page_size, loc_cb, &got, NULL));
			ck_assert_msg(got == TC_ERR_PAGE_MALFORMED, "format %zu: %d", i, got);
		}
		decoder_free(d);
	}
}
END_TEST

static Suite *decode_suite(void)
{
	Suite *s = suite_create("decode");
	TCase *real = tcase_create("real-pages");
	TCase *bad = tcase_create("malformed");

	tcase_add_checked_fixture(real, setup, teardown);
	tu_add_tests(real, TU_TESTS(test_types, test_entries_match_kernel, test_markers,
					test_order_and_switch_fields, test_callback_stops,
					test_formats));
	suite_add_tcase(s, real);
	tcase_add_checked_fixture(bad, setup, teardown);
	tu_add_tests(bad, TU_TESTS(test_reject_length, test_reject_commit,
					test_reject_event_past_commit, test_missed_and_padding,
					test_unknown_type, test_garbage,
					test_reject_data_loc_offset));
	suite_add_tcase(s, bad);
	return s;
}

TU_MAIN(decode_suite())
