/*
 * test_proto.c - check tests for proto/: frame headers, every control
 * message (round trip and rejection of malformed input), and mutual TLS
 * with certificates the test makes itself.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <msgpack.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "common/tc_error.h"
#include "proto/frame.h"
#include "proto/msg.h"
#include "proto/printk.h"
#include "proto/symbols.h"
#include "proto/tls.h"
#include "tests/testutil.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* ---- frames ------------------------------------------------------------- */

START_TEST(test_frame_round_trip)
{
	struct frame_hdr h = {
		.type = FRAME_PAGE, .flags = FRAME_F_MISSED_EVENTS,
		.stream = 0x0102, .len = 0x00030405, .seq = 0x060708090a0b0c0dull,
	}, back;
	static const uint8_t want[FRAME_HDR_SIZE] = {
		2, 1, 0x01, 0x02, 0x00, 0x03, 0x04, 0x05,
		0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d,
	};
	uint8_t buf[FRAME_HDR_SIZE];

	frame_hdr_pack(&h, buf);
	ck_assert_mem_eq(buf, want, sizeof(want));
	TU_OK(frame_hdr_parse(buf, sizeof(buf), &back));
	ck_assert_uint_eq(back.type, h.type);
	ck_assert_uint_eq(back.flags, h.flags);
	ck_assert_uint_eq(back.stream, h.stream);
	ck_assert_uint_eq(back.len, h.len);
	ck_assert_uint_eq(back.seq, h.seq);
}
END_TEST

START_TEST(test_frame_truncated)
{
	struct frame_hdr h = { .type = FRAME_MSG, .len = 3 }, out = { .seq = 77 };
	uint8_t buf[FRAME_HDR_SIZE];
	size_t n;

	frame_hdr_pack(&h, buf);
	for (n = 0; n < FRAME_HDR_SIZE; n++) {
		TU_ERR(frame_hdr_parse(buf, n, &out), TC_ERR_FRAME_TRUNCATED);
		ck_assert_uint_eq(out.seq, 77);
	}
	TU_OK(frame_hdr_parse(buf, FRAME_HDR_SIZE, &out));
}
END_TEST

START_TEST(test_frame_bad_type)
{
	static const struct { uint8_t type, flags; } bad[] = {
		{ 0, 0 }, { 3, 0 }, { 255, 0 },
		{ FRAME_MSG, FRAME_F_MISSED_EVENTS }, { FRAME_PAGE, 2 },
		{ FRAME_PAGE, 0x80 },
	};
	struct frame_hdr h = { .len = 1 }, out;
	uint8_t buf[FRAME_HDR_SIZE];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		h.type = bad[i].type;
		h.flags = bad[i].flags;
		frame_hdr_pack(&h, buf);
		TU_ERR(frame_hdr_parse(buf, sizeof(buf), &out), TC_ERR_FRAME_BAD_TYPE);
	}
}
END_TEST

START_TEST(test_frame_too_large)
{
	struct frame_hdr h = { .type = FRAME_PAGE, .len = FRAME_MAX_PAYLOAD }, out;
	uint8_t buf[FRAME_HDR_SIZE];

	frame_hdr_pack(&h, buf);
	TU_OK(frame_hdr_parse(buf, sizeof(buf), &out));
	ck_assert_uint_eq(out.len, FRAME_MAX_PAYLOAD);
	h.len = FRAME_MAX_PAYLOAD + 1;
	frame_hdr_pack(&h, buf);
	TU_ERR(frame_hdr_parse(buf, sizeof(buf), &out), TC_ERR_FRAME_TOO_LARGE);
	h.len = UINT32_MAX;
	frame_hdr_pack(&h, buf);
	TU_ERR(frame_hdr_parse(buf, sizeof(buf), &out), TC_ERR_FRAME_TOO_LARGE);
}
END_TEST

/* ---- messages: samples and comparison ----------------------------------- */

static struct proto_cmdline sample_cmdlines[] = {
	{ 0, "<idle>" }, { 1, "systemd" }, { 4242, "0123456789abcde" },
	{ -7, "" }, { INT32_MAX, "kworker/0:1" },
};

static struct proto_tgid sample_tgids[] = {
	{ 1, 1 }, { 4243, 4242 }, { INT32_MAX, INT32_MIN }, { -1, 0 },
};

/* A message of @type with every field set to something non-default. */
static struct proto_msg sample(enum proto_msg_type type)
{
	struct proto_msg m = { .type = type };

	switch (type) {
	case MSG_HELLO:
		m.hello = (struct proto_hello){
			PROTO_VERSION, "host-a.example", "0123456789abcdef",
			"9f0e-boot", "6.18.0-1-amd64", "x86-tsc", 64, 4096, 8,
			true, { UINT64_MAX - 1, -1234567890123ll },
			0x0123456789abcdefull, true, UINT64_MAX - 7, 1ull << 50, 2863311531u, 31,
			"traceagent 0.1.0", true, true, "group-a",
		};
		break;
	case MSG_WELCOME:
		m.welcome = (struct proto_welcome){ PROTO_VERSION, 1ull << 40, true, true, 8, true };
		break;
	case MSG_HEADER_PAGE:
		m.header_page.text = "\tfield: u64 timestamp;\n";
		m.header_page.len = strlen(m.header_page.text);
		m.header_page.event = "# compressed entry header\n";
		m.header_page.event_len = strlen(m.header_page.event);
		break;
	case MSG_FORMAT:
		m.format = (struct proto_format){ "sched", "sched_switch",
			"name: sched_switch\nID: 316\n", 27, 3 };
		break;
	case MSG_CMDLINES:
		m.cmdlines.count = ARRAY_SIZE(sample_cmdlines);
		m.cmdlines.items = sample_cmdlines;
		m.cmdlines.tgids.count = ARRAY_SIZE(sample_tgids);
		m.cmdlines.tgids.items = sample_tgids;
		break;
	case MSG_CLOCK:
		m.clock = (struct proto_clock){ 123456789, INT64_MIN };
		break;
	case MSG_CPU_STATS:
		m.cpu_stats = (struct proto_cpu_stats){ 3, 1, 2, 3, 4, 5,
							UINT64_MAX, 6, 7, 8, 9,
							10, 11, 12 };
		break;
	case MSG_BYE:
		m.bye = (struct proto_bye){ 10, 20000 };
		break;
	case MSG_DONE:
		m.done = (struct proto_done){ 10, 19999, true };
		break;
	case MSG_ERROR:
		m.error = (struct proto_error){ TC_ERR_PROTO_VERSION,
						"unsupported protocol version 7" };
		break;
	case MSG_GROUP:
		m.group = (struct proto_group){ 7, -2, "myapp", "tsc",
			UINT64_MAX, 1ull << 50, 0x80000001u, 31,
			PROTO_USER_STREAM_BASE, 65, 8192 };
		break;
	case MSG_ACK:
		m.ack = (struct proto_ack){ 65535, UINT64_MAX - 3 };
		break;
	case MSG_SYMBOLS:
		m.symbols.group = 3;
		m.symbols.text = "401000 2a main\nffffffff81000000 10 _stext\n";
		m.symbols.len = strlen(m.symbols.text);
		break;
	case MSG_PRINTK:
		m.printk.text = "0xffffffff8281b87c : \"Start context switch\"\n"
				"0xffffffff82000000 : \"%s: a \\\"quoted\\\" one\\n\"\n";
		m.printk.len = strlen(m.printk.text);
		break;
	case MSG_FILTER:
		m.filter = (struct proto_filter){ "sched", "sched_switch",
			"prev_comm ~ \"k*\" && (prev_pid == 0 || CPU & 1)" };
		break;
	case MSG_FILTER_STATUS:
		m.filter_status = (struct proto_filter_status){ "sched", "sched_switch",
			"prev_comm != sleep", false,
			"prev_comm != sleep\n              ^\nparse_error: Invalid value" };
		break;
	case MSG_CLOCK_PROBE:
		m.clock_probe.id = UINT64_MAX - 9;
		break;
	case MSG_CLOCK_ECHO:
		m.clock_echo = (struct proto_clock_echo){ 7, 1000, UINT64_MAX };
		break;
	case MSG_CLOCK_MEASURE:
		m.clock_measure = (struct proto_clock_measure){ INT64_MAX, INT64_MIN, 17, 8 };
		break;
	case MSG_FREEZE:
		m.freeze = (struct proto_freeze){ UINT64_MAX, INT64_MIN, "by hand", "cert alice", true };
		break;
	case MSG_SNAP_BEGIN:
		m.snap_begin = (struct proto_snap_begin){ 3, UINT64_MAX };
		break;
	case MSG_SNAP_END:
		m.snap_end = (struct proto_snap_end){ 3, 1ull << 40, UINT64_MAX, 17, 5, INT64_MAX,
						      INT64_MAX };
		break;
	case MSG_FROZE:
		m.froze = (struct proto_froze){ "sched:sched_switch", UINT64_MAX };
		break;
	}
	return m;
}

static void hello_eq(const struct proto_hello *a, const struct proto_hello *b)
{
	ck_assert_uint_eq(a->version, b->version);
	ck_assert_str_eq(a->host, b->host);
	ck_assert_str_eq(a->machine_id, b->machine_id);
	ck_assert_str_eq(a->boot_id, b->boot_id);
	ck_assert_str_eq(a->kernel, b->kernel);
	ck_assert_str_eq(a->trace_clock, b->trace_clock);
	ck_assert_uint_eq(a->ncpus, b->ncpus);
	ck_assert_uint_eq(a->page_size, b->page_size);
	ck_assert_uint_eq(a->long_size, b->long_size);
	ck_assert_int_eq(a->big_endian, b->big_endian);
	ck_assert_uint_eq(a->clock.trace_ns, b->clock.trace_ns);
	ck_assert_int_eq(a->clock.realtime_ns, b->clock.realtime_ns);
	ck_assert_uint_eq(a->session, b->session);
	ck_assert_int_eq(a->pushdown, b->pushdown);
	ck_assert_uint_eq(a->tsc0, b->tsc0);
	ck_assert_uint_eq(a->tsc_mono0, b->tsc_mono0);
	ck_assert_uint_eq(a->tsc_mult, b->tsc_mult);
	ck_assert_uint_eq(a->tsc_shift, b->tsc_shift);
	ck_assert_str_eq(a->agent, b->agent);
	ck_assert_int_eq(a->clock_probe, b->clock_probe);
	ck_assert_int_eq(a->recorder, b->recorder);
	ck_assert_str_eq(a->group, b->group);
}

static void cmdlines_eq(const struct proto_cmdlines *a,
			const struct proto_cmdlines *b)
{
	uint32_t i;

	ck_assert_uint_eq(a->count, b->count);
	for (i = 0; i < a->count; i++) {
		ck_assert_int_eq(a->items[i].pid, b->items[i].pid);
		ck_assert_str_eq(a->items[i].comm, b->items[i].comm);
	}
	ck_assert_uint_eq(a->tgids.count, b->tgids.count);
	for (i = 0; i < a->tgids.count; i++) {
		ck_assert_int_eq(a->tgids.items[i].pid, b->tgids.items[i].pid);
		ck_assert_int_eq(a->tgids.items[i].tgid, b->tgids.items[i].tgid);
	}
}

static void cpu_stats_eq(const struct proto_cpu_stats *a,
			 const struct proto_cpu_stats *b)
{
	ck_assert_uint_eq(a->cpu, b->cpu);
	ck_assert_uint_eq(a->pages, b->pages);
	ck_assert_uint_eq(a->events, b->events);
	ck_assert_uint_eq(a->bytes, b->bytes);
	ck_assert_uint_eq(a->overrun, b->overrun);
	ck_assert_uint_eq(a->dropped, b->dropped);
	ck_assert_uint_eq(a->commit_overrun, b->commit_overrun);
	ck_assert_uint_eq(a->resent_pages, b->resent_pages);
	ck_assert_uint_eq(a->lost_pages, b->lost_pages);
	ck_assert_uint_eq(a->lost_events, b->lost_events);
	ck_assert_uint_eq(a->pages_mmap, b->pages_mmap);
	ck_assert_uint_eq(a->pages_splice, b->pages_splice);
	ck_assert_uint_eq(a->pages_read, b->pages_read);
	ck_assert_uint_eq(a->copied_bytes, b->copied_bytes);
}

static void text_eq(const char *a, size_t alen, const char *b, size_t blen)
{
	ck_assert_uint_eq(alen, blen);
	ck_assert_mem_eq(a, b, alen);
	ck_assert_int_eq(b[blen], '\0');
}

static void msg_eq(const struct proto_msg *a, const struct proto_msg *b)
{
	ck_assert_int_eq(a->type, b->type);
	switch (a->type) {
	case MSG_HELLO:
		hello_eq(&a->hello, &b->hello);
		break;
	case MSG_WELCOME:
		ck_assert_uint_eq(a->welcome.version, b->welcome.version);
		ck_assert_uint_eq(a->welcome.host_id, b->welcome.host_id);
		ck_assert_int_eq(a->welcome.kallsyms, b->welcome.kallsyms);
		ck_assert_int_eq(a->welcome.printk_formats, b->welcome.printk_formats);
		ck_assert_uint_eq(a->welcome.clock_probes, b->welcome.clock_probes);
		ck_assert_int_eq(a->welcome.sym_modules, b->welcome.sym_modules);
		break;
	case MSG_HEADER_PAGE:
		text_eq(a->header_page.text, a->header_page.len,
			b->header_page.text, b->header_page.len);
		text_eq(a->header_page.event, a->header_page.event_len,
			b->header_page.event, b->header_page.event_len);
		break;
	case MSG_FORMAT:
		ck_assert_str_eq(a->format.system, b->format.system);
		ck_assert_str_eq(a->format.name, b->format.name);
		text_eq(a->format.text, a->format.len, b->format.text,
			b->format.len);
		ck_assert_uint_eq(a->format.group, b->format.group);
		break;
	case MSG_CMDLINES:
		cmdlines_eq(&a->cmdlines, &b->cmdlines);
		break;
	case MSG_CLOCK:
		ck_assert_uint_eq(a->clock.trace_ns, b->clock.trace_ns);
		ck_assert_int_eq(a->clock.realtime_ns, b->clock.realtime_ns);
		break;
	case MSG_CPU_STATS:
		cpu_stats_eq(&a->cpu_stats, &b->cpu_stats);
		break;
	case MSG_BYE:
		ck_assert_uint_eq(a->bye.pages, b->bye.pages);
		ck_assert_uint_eq(a->bye.events, b->bye.events);
		break;
	case MSG_DONE:
		ck_assert_uint_eq(a->done.pages, b->done.pages);
		ck_assert_uint_eq(a->done.events, b->done.events);
		ck_assert_int_eq(a->done.journaled, b->done.journaled);
		break;
	case MSG_ERROR:
		ck_assert_int_eq(a->error.code, b->error.code);
		ck_assert_str_eq(a->error.text, b->error.text);
		break;
	case MSG_GROUP:
		ck_assert_uint_eq(a->group.group, b->group.group);
		ck_assert_int_eq(a->group.pid, b->group.pid);
		ck_assert_str_eq(a->group.comm, b->group.comm);
		ck_assert_str_eq(a->group.clock, b->group.clock);
		ck_assert_uint_eq(a->group.tsc0, b->group.tsc0);
		ck_assert_uint_eq(a->group.mono0, b->group.mono0);
		ck_assert_uint_eq(a->group.mult, b->group.mult);
		ck_assert_uint_eq(a->group.shift, b->group.shift);
		ck_assert_uint_eq(a->group.first_stream, b->group.first_stream);
		ck_assert_uint_eq(a->group.nstreams, b->group.nstreams);
		ck_assert_uint_eq(a->group.page_size, b->group.page_size);
		break;
	case MSG_ACK:
		ck_assert_uint_eq(a->ack.stream, b->ack.stream);
		ck_assert_uint_eq(a->ack.seq, b->ack.seq);
		break;
	case MSG_SYMBOLS:
		ck_assert_uint_eq(a->symbols.group, b->symbols.group);
		text_eq(a->symbols.text, a->symbols.len, b->symbols.text,
			b->symbols.len);
		break;
	case MSG_PRINTK:
		text_eq(a->printk.text, a->printk.len, b->printk.text, b->printk.len);
		break;
	case MSG_FILTER:
		ck_assert_str_eq(a->filter.system, b->filter.system);
		ck_assert_str_eq(a->filter.name, b->filter.name);
		ck_assert_str_eq(a->filter.text, b->filter.text);
		break;
	case MSG_FILTER_STATUS:
		ck_assert_str_eq(a->filter_status.system, b->filter_status.system);
		ck_assert_str_eq(a->filter_status.name, b->filter_status.name);
		ck_assert_str_eq(a->filter_status.text, b->filter_status.text);
		ck_assert_int_eq(a->filter_status.ok, b->filter_status.ok);
		ck_assert_str_eq(a->filter_status.error, b->filter_status.error);
		break;
	case MSG_CLOCK_PROBE:
		ck_assert_uint_eq(a->clock_probe.id, b->clock_probe.id);
		break;
	case MSG_CLOCK_ECHO:
		ck_assert_uint_eq(a->clock_echo.id, b->clock_echo.id);
		ck_assert_uint_eq(a->clock_echo.recv_ns, b->clock_echo.recv_ns);
		ck_assert_uint_eq(a->clock_echo.send_ns, b->clock_echo.send_ns);
		break;
	case MSG_CLOCK_MEASURE:
		ck_assert_uint_eq(a->clock_measure.trace_ns, b->clock_measure.trace_ns);
		ck_assert_int_eq(a->clock_measure.realtime_ns, b->clock_measure.realtime_ns);
		ck_assert_uint_eq(a->clock_measure.uncertainty_ns, b->clock_measure.uncertainty_ns);
		ck_assert_uint_eq(a->clock_measure.probes, b->clock_measure.probes);
		break;
	case MSG_FREEZE:
		ck_assert_uint_eq(a->freeze.id, b->freeze.id);
		ck_assert_int_eq(a->freeze.asked_ns, b->freeze.asked_ns);
		ck_assert_str_eq(a->freeze.reason, b->freeze.reason);
		ck_assert_str_eq(a->freeze.who, b->freeze.who);
		ck_assert_int_eq(a->freeze.thaw, b->freeze.thaw);
		break;
	case MSG_SNAP_BEGIN:
		ck_assert_uint_eq(a->snap_begin.id, b->snap_begin.id);
		ck_assert_uint_eq(a->snap_begin.frozen_ns, b->snap_begin.frozen_ns);
		break;
	case MSG_SNAP_END:
		ck_assert_mem_eq(&a->snap_end, &b->snap_end, sizeof(a->snap_end));
		break;
	case MSG_FROZE:
		ck_assert_str_eq(a->froze.event, b->froze.event);
		ck_assert_uint_eq(a->froze.trace_ns, b->froze.trace_ns);
		break;
	}
}

/* Encode @m and check the frame header; the payload is buf.data + 16. */
static void encode_ok(const struct proto_msg *m, struct proto_buf *buf)
{
	struct frame_hdr h;

	proto_buf_init(buf);
	TU_OK(proto_msg_encode(m, buf));
	ck_assert_uint_gt(buf->len, FRAME_HDR_SIZE);
	TU_OK(frame_hdr_parse(buf->data, buf->len, &h));
	ck_assert_uint_eq(h.type, FRAME_MSG);
	ck_assert_uint_eq(h.flags, 0);
	ck_assert_uint_eq(h.seq, 0);
	ck_assert_uint_eq(h.len, buf->len - FRAME_HDR_SIZE);
}

/* ---- messages: round trips ---------------------------------------------- */

START_TEST(test_msg_round_trip)
{
	enum proto_msg_type type = (enum proto_msg_type)_i;
	struct proto_msg m = sample(type), back;
	struct proto_buf buf;

	encode_ok(&m, &buf);
	TU_OK(proto_msg_decode(buf.data + FRAME_HDR_SIZE, buf.len - FRAME_HDR_SIZE, &back));
	msg_eq(&m, &back);
	proto_msg_free(&back);
	proto_buf_free(&buf);
	ck_assert_ptr_null(buf.data);
}
END_TEST

/* An echo written before its probe was read, a measurement past int64: refused both ways. */
START_TEST(test_msg_clock_refused)
{
	struct proto_msg e = sample(MSG_CLOCK_ECHO), c = sample(MSG_CLOCK_MEASURE), back;
	struct proto_buf buf;

	e.clock_echo.send_ns = e.clock_echo.recv_ns - 1;
	proto_buf_init(&buf);
	TU_ERR(proto_msg_encode(&e, &buf), TC_ERR_MSG_MALFORMED);
	c.clock_measure.trace_ns = (uint64_t)INT64_MAX + 1;
	TU_ERR(proto_msg_encode(&c, &buf), TC_ERR_MSG_MALFORMED);
	c = sample(MSG_SNAP_END);	/* a freeze's moment past int64 */
	c.snap_end.off_ns = (uint64_t)INT64_MAX + 1;
	TU_ERR(proto_msg_encode(&c, &buf), TC_ERR_MSG_MALFORMED);
	ck_assert_uint_eq(buf.len, 0);
	/* by hand: {"t": "clock_echo", "id": 1, "recv_ns": 5, "send_ns": 4} */
	static const char bad[] = "\x84\xa1t\xaa" "clock_echo\xa2id\x01\xa7recv_ns\x05"
				  "\xa7send_ns\x04";
	TU_ERR(proto_msg_decode(bad, sizeof(bad) - 1, &back), TC_ERR_MSG_MALFORMED);
	proto_buf_free(&buf);
}
END_TEST

static void tcase_add_tests_clock(TCase *tc)
{
	tcase_add_test(tc, test_msg_clock_refused);
}

START_TEST(test_msg_names)
{
	static const char *const names[] = {
		"hello", "welcome", "header_page", "format", "cmdlines",
		"clock", "cpu_stats", "bye", "done", "error", "ack",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		ck_assert_str_eq(proto_msg_name((enum proto_msg_type)(i + 1)),
				 names[i]);
	ck_assert_str_eq(proto_msg_name(MSG_GROUP), "group");
	ck_assert_str_eq(proto_msg_name(MSG_SYMBOLS), "symbols");
	ck_assert_str_eq(proto_msg_name(MSG_FILTER), "filter");
	ck_assert_str_eq(proto_msg_name(MSG_FILTER_STATUS), "filter_status");
	ck_assert_str_eq(proto_msg_name((enum proto_msg_type)0), "unknown");
	ck_assert_str_eq(proto_msg_name((enum proto_msg_type)99), "unknown");
}
END_TEST

START_TEST(test_msg_encode_appends)
{
	struct proto_msg a = sample(MSG_BYE), b = sample(MSG_CLOCK), back;
	struct proto_buf buf;
	struct frame_hdr h1, h2;

	proto_buf_init(&buf);
	TU_OK(proto_msg_encode(&a, &buf));
	TU_OK(proto_msg_encode(&b, &buf));
	TU_OK(frame_hdr_parse(buf.data, buf.len, &h1));
	TU_OK(frame_hdr_parse(buf.data + FRAME_HDR_SIZE + h1.len,
			      buf.len - FRAME_HDR_SIZE - h1.len, &h2));
	ck_assert_uint_eq(2 * FRAME_HDR_SIZE + h1.len + h2.len, buf.len);
	TU_OK(proto_msg_decode(buf.data + 2 * FRAME_HDR_SIZE + h1.len, h2.len, &back));
	msg_eq(&b, &back);
	proto_msg_free(&back);
	proto_buf_free(&buf);
}
END_TEST

START_TEST(test_msg_null_strings_encode_empty)
{
	struct proto_msg m = sample(MSG_ERROR), back;
	struct proto_buf buf;

	m.error.text = NULL;
	encode_ok(&m, &buf);
	TU_OK(proto_msg_decode(buf.data + FRAME_HDR_SIZE, buf.len - FRAME_HDR_SIZE, &back));
	ck_assert_str_eq(back.error.text, "");
	proto_msg_free(&back);
	proto_buf_free(&buf);
}
END_TEST

START_TEST(test_msg_encode_limits)
{
	struct proto_msg m = sample(MSG_CMDLINES), back;
	struct proto_cmdline *items = calloc(PROTO_MAX_CMDLINES + 1,
					     sizeof(*items));
	struct proto_buf buf;
	char *big = malloc(PROTO_MAX_STRING + 2);
	uint32_t i;

	ck_assert_ptr_nonnull(items);
	ck_assert_ptr_nonnull(big);
	for (i = 0; i <= PROTO_MAX_CMDLINES; i++) {
		items[i].pid = (int32_t)i * 1000;
		memcpy(items[i].comm, "fifteen-chars-x", 16);
	}
	proto_buf_init(&buf);
	TU_OK(proto_msg_encode(&m, &buf));	/* kept */
	m.cmdlines.items = items;
	m.cmdlines.count = PROTO_MAX_CMDLINES + 1;
	TU_ERR(proto_msg_encode(&m, &buf), TC_ERR_TOO_LONG);
	/* 65536 full entries are more than one frame can carry */
	m.cmdlines.count = PROTO_MAX_CMDLINES;
	TU_ERR(proto_msg_encode(&m, &buf), TC_ERR_TOO_LONG);
	TU_OK(proto_msg_decode(buf.data + FRAME_HDR_SIZE, buf.len - FRAME_HDR_SIZE, &back));
	msg_eq(&back, &(struct proto_msg){ .type = MSG_CMDLINES,
		.cmdlines = sample(MSG_CMDLINES).cmdlines });
	proto_msg_free(&back);

	/* half of them fit, and survive the trip */
	proto_buf_free(&buf);
	m.cmdlines.count = PROTO_MAX_CMDLINES / 2;
	encode_ok(&m, &buf);
	TU_OK(proto_msg_decode(buf.data + FRAME_HDR_SIZE, buf.len - FRAME_HDR_SIZE, &back));
	msg_eq(&m, &back);
	proto_msg_free(&back);
	proto_buf_free(&buf);

	memset(big, 'x', PROTO_MAX_STRING + 1);
	m = sample(MSG_FORMAT);
	m.format.text = big;
	m.format.len = PROTO_MAX_STRING;
	encode_ok(&m, &buf);
	proto_buf_free(&buf);
	m.format.len = PROTO_MAX_STRING + 1;
	TU_ERR(proto_msg_encode(&m, &buf), TC_ERR_TOO_LONG);
	ck_assert_uint_eq(buf.len, 0);
	m.format.len = 3;
	big[1] = '\0';
	TU_ERR(proto_msg_encode(&m, &buf), TC_ERR_MSG_MALFORMED);
	m.type = (enum proto_msg_type)0;
	TU_ERR(proto_msg_encode(&m, &buf), TC_ERR_MSG_UNKNOWN);
	m.type = (enum proto_msg_type)42;
	TU_ERR(proto_msg_encode(&m, &buf), TC_ERR_MSG_UNKNOWN);
	ck_assert_uint_eq(buf.len, 0);
	proto_buf_free(&buf);
	free(items);
	free(big);
}
END_TEST

/* ---- messages: rejection ------------------------------------------------ */

/* Decode @len bytes and expect @want; a failed decode must not touch out. */
static void decode_fails(const void *p, size_t len, int want)
{
	struct proto_msg out = { .type = (enum proto_msg_type)77 };

	ck_assert_int_eq(proto_msg_decode(p, len, &out), want);
	ck_assert_int_eq(out.type, 77);
}

START_TEST(test_msg_every_prefix)
{
	struct proto_msg m = sample((enum proto_msg_type)_i);
	struct proto_buf buf;
	const uint8_t *payload;
	size_t len, n;

	encode_ok(&m, &buf);
	payload = buf.data + FRAME_HDR_SIZE;
	len = buf.len - FRAME_HDR_SIZE;
	for (n = 0; n < len; n++)
		decode_fails(payload, n, TC_ERR_MSG_MALFORMED);
	proto_buf_free(&buf);
}
END_TEST

START_TEST(test_msg_trailing_bytes)
{
	struct proto_msg m = sample((enum proto_msg_type)_i);
	struct proto_buf buf;
	size_t len;

	encode_ok(&m, &buf);
	len = buf.len - FRAME_HDR_SIZE;
	TU_OK(proto_msg_encode(&m, &buf));
	/* payload, then the next frame's header and payload */
	decode_fails(buf.data + FRAME_HDR_SIZE, buf.len - FRAME_HDR_SIZE,
		     TC_ERR_MSG_MALFORMED);
	buf.data[FRAME_HDR_SIZE + len] = 0xc0;	/* a msgpack nil */
	decode_fails(buf.data + FRAME_HDR_SIZE, len + 1, TC_ERR_MSG_MALFORMED);
	proto_buf_free(&buf);
}
END_TEST

/*
 * repack - rewrite the msgpack map of @m's encoding with the value of @key
 * replaced by the raw msgpack bytes @raw (or the pair dropped when @raw is
 * NULL), then append the pairs in @extra (raw key+value bytes).
 */
static void repack(const struct proto_msg *m, const char *key, const char *raw,
		   size_t rawlen, const char *extra, size_t extralen,
		   msgpack_sbuffer *out)
{
	struct proto_buf buf;
	msgpack_unpacked u;
	msgpack_packer pk;
	msgpack_object_kv *kv;
	uint32_t i, n;
	size_t off = 0;

	encode_ok(m, &buf);
	msgpack_unpacked_init(&u);
	ck_assert_int_eq(msgpack_unpack_next(&u, (const char *)buf.data +
					     FRAME_HDR_SIZE,
					     buf.len - FRAME_HDR_SIZE, &off),
			 MSGPACK_UNPACK_SUCCESS);
	msgpack_sbuffer_init(out);
	msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
	n = u.data.via.map.size - (key && !raw ? 1 : 0) + (extra ? 1 : 0);
	msgpack_pack_map(&pk, n);
	for (i = 0; i < u.data.via.map.size; i++) {
		kv = &u.data.via.map.ptr[i];
		if (key && kv->key.via.str.size == strlen(key) &&
		    !memcmp(kv->key.via.str.ptr, key, strlen(key))) {
			if (!raw)
				continue;
			msgpack_pack_object(&pk, kv->key);
			msgpack_sbuffer_write(out, raw, rawlen);
			continue;
		}
		msgpack_pack_object(&pk, kv->key);
		msgpack_pack_object(&pk, kv->val);
	}
	if (extra)
		msgpack_sbuffer_write(out, extra, extralen);
	msgpack_unpacked_destroy(&u);
	proto_buf_free(&buf);
}

#define RAW(s)	s, sizeof(s) - 1

static const struct bad_value {
	enum proto_msg_type type;
	const char *key;
	const char *raw;
	size_t len;
} bad_values[] = {
	{ MSG_HELLO, "v", RAW("\xa1" "1") },			/* "1" */
	{ MSG_HELLO, "v", RAW("\xff") },			/* -1 */
	{ MSG_HELLO, "ncpus", RAW("\xcf\0\0\0\x01\0\0\0\0") },	/* 2^32 */
	{ MSG_HELLO, "ncpus", RAW("\xc3") },			/* true */
	{ MSG_HELLO, "big_endian", RAW("\x01") },
	{ MSG_HELLO, "host", RAW("\xc4\x01x") },		/* bin */
	{ MSG_HELLO, "host", RAW("\xc0") },			/* nil */
	{ MSG_HELLO, "kernel", RAW("\xa3" "a\0b") },		/* NUL */
	{ MSG_HELLO, "trace_ns", RAW("\xfb") },			/* -5 */
	{ MSG_HELLO, "trace_ns", RAW("\xcb\x3f\xf0\0\0\0\0\0\0") }, /* 1.0 */
	{ MSG_HELLO, "realtime_ns", RAW("\xcf\xff\xff\xff\xff\xff\xff\xff\xff") },
	{ MSG_WELCOME, "host_id", RAW("\xff") },
	{ MSG_ERROR, "code", RAW("\xd3\xff\xff\xff\xff\x7f\xff\xff\xff") },
	{ MSG_ERROR, "code", RAW("\xce\x80\0\0\0") },		/* 2^31 */
	{ MSG_ERROR, "text", RAW("\x91\xa1x") },		/* ["x"] */
	{ MSG_CMDLINES, "cmdlines", RAW("\x80") },		/* {} */
	{ MSG_CMDLINES, "cmdlines", RAW("\x91\x91\x01") },	/* [[1]] */
	{ MSG_CMDLINES, "cmdlines", RAW("\x91\x93\x01\xa1x\x01") },
	{ MSG_CMDLINES, "cmdlines", RAW("\x91\x92\x01\xb0" "0123456789abcdef") },
	{ MSG_CMDLINES, "cmdlines", RAW("\x91\x92\xa1" "1\xa1x") },
	{ MSG_CMDLINES, "cmdlines", RAW("\x91\x92\x01\xa3" "a\0b") },
	{ MSG_CMDLINES, "cmdlines", RAW("\x91\x92\xce\x80\0\0\0\xa1x") },
	{ MSG_CMDLINES, "cmdlines", RAW("\x91\x81\x01\xa1x") },	/* [{1:"x"}] */
	{ MSG_FORMAT, "text", RAW("\xa3" "a\0b") },
	{ MSG_HEADER_PAGE, "text", RAW("\x90") },
	{ MSG_CPU_STATS, "commit_overrun", RAW("\xd0\x80") },	/* -128 */
	{ MSG_DONE, "events", RAW("\xc2") },			/* false */
	{ MSG_ACK, "stream", RAW("\xcf\0\0\0\x01\0\0\0\0") },	/* 2^32 */
	{ MSG_ACK, "seq", RAW("\xff") },			/* -1 */
	{ MSG_ACK, "seq", RAW("\xa1" "1") },			/* "1" */
	{ MSG_HELLO, "session", RAW("\xff") },			/* -1 */
	{ MSG_CPU_STATS, "lost_pages", RAW("\xc3") },		/* true */
	{ MSG_SYMBOLS, "group", RAW("\xff") },			/* -1 */
	{ MSG_SYMBOLS, "text", RAW("\x01") },			/* 1 */
	{ MSG_HELLO, "pushdown", RAW("\x01") },			/* 1 */
	{ MSG_FILTER, "system", RAW("\xc0") },			/* nil */
	{ MSG_FILTER, "name", RAW("\x01") },			/* 1 */
	{ MSG_FILTER, "text", RAW("\xc2") },			/* false */
	{ MSG_FILTER, "system", RAW("\xa0") },			/* "" */
	{ MSG_FILTER, "system", RAW("\xa2..") },		/* ".." */
	{ MSG_FILTER, "name", RAW("\xa5../ab") },		/* a path */
	{ MSG_FILTER, "name", RAW("\xa4" "a/bc") },		/* '/' */
	{ MSG_FILTER, "name", RAW("\xa2" ".x") },		/* leading '.' */
	{ MSG_FILTER, "name", RAW("\xa3" "a b") },		/* space */
	{ MSG_FILTER, "name", RAW("\xa3" "a\nb") },		/* newline */
	{ MSG_FILTER, "text", RAW("\xa3" "a\0b") },		/* NUL */
	{ MSG_FILTER_STATUS, "ok", RAW("\x00") },		/* 0 */
	{ MSG_FILTER_STATUS, "system", RAW("\xa1/") },		/* "/" */
	{ MSG_FILTER_STATUS, "error", RAW("\x91\xa1x") },	/* ["x"] */
};

START_TEST(test_msg_wrong_value)
{
	const struct bad_value *b = &bad_values[_i];
	struct proto_msg m = sample(b->type);
	msgpack_sbuffer sb;

	repack(&m, b->key, b->raw, b->len, NULL, 0, &sb);
	decode_fails(sb.data, sb.size, TC_ERR_MSG_MALFORMED);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* The required keys of each type, as PROTOCOL.md lists them. */
static const struct {
	enum proto_msg_type type;
	const char *keys[13];
} required[] = {
	{ MSG_HELLO, { "t", "v", "host", "machine_id", "boot_id", "kernel",
		       "trace_clock", "ncpus", "page_size", "long_size",
		       "big_endian", "trace_ns", "realtime_ns" } },
	{ MSG_WELCOME, { "t", "v", "host_id" } },
	{ MSG_HEADER_PAGE, { "t", "text" } },
	{ MSG_FORMAT, { "t", "system", "name", "text" } },
	{ MSG_CMDLINES, { "t", "cmdlines" } },
	{ MSG_CLOCK, { "t", "trace_ns", "realtime_ns" } },
	{ MSG_CPU_STATS, { "t", "cpu", "pages", "events", "bytes", "overrun",
			   "dropped", "commit_overrun" } },
	{ MSG_BYE, { "t", "pages", "events" } },
	{ MSG_DONE, { "t", "pages", "events" } },
	{ MSG_ERROR, { "t", "code" } },
	{ MSG_ACK, { "t", "stream", "seq" } },
	{ MSG_SYMBOLS, { "t", "group", "text" } },
	{ MSG_FILTER, { "t", "system", "name", "text" } },
	{ MSG_FILTER_STATUS, { "t", "system", "name", "text", "ok" } },
};

START_TEST(test_msg_missing_required)
{
	struct proto_msg m = sample(required[_i].type);
	msgpack_sbuffer sb;
	size_t k;

	for (k = 0; k < 13 && required[_i].keys[k]; k++) {
		repack(&m, required[_i].keys[k], NULL, 0, NULL, 0, &sb);
		decode_fails(sb.data, sb.size, TC_ERR_MSG_MISSING);
		msgpack_sbuffer_destroy(&sb);
	}
}
END_TEST

/*
 * FILTER's names become path components of the agent's instance and its
 * text goes to the kernel: the encoder refuses what the decoder rejects,
 * and the limits are exact.
 */
START_TEST(test_msg_filter_limits)
{
	static char name[PROTO_MAX_EVENT_NAME + 2], text[PROTO_MAX_FILTER + 2];
	static const char *const bad_names[] = { "", ".", "..", ".hidden", "a/b",
		"../../tracing_on", "a b", "sched\n", "\xc3\xa9v" };
	struct proto_msg m = sample(MSG_FILTER), back;
	struct proto_buf buf;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad_names); i++) {
		m.filter.name = (char *)bad_names[i];
		proto_buf_init(&buf);
		TU_ERR(proto_msg_encode(&m, &buf), TC_ERR_MSG_MALFORMED);
		ck_assert_uint_eq(buf.len, 0);
		proto_buf_free(&buf);
	}
	memset(name, 'x', PROTO_MAX_EVENT_NAME);
	m.filter.name = name;
	memset(text, 'y', PROTO_MAX_FILTER);
	m.filter.text = text;
	encode_ok(&m, &buf);		/* both at their limit */
	TU_OK(proto_msg_decode(buf.data + FRAME_HDR_SIZE, buf.len - FRAME_HDR_SIZE, &back));
	msg_eq(&m, &back);
	proto_msg_free(&back);
	proto_buf_free(&buf);
	name[PROTO_MAX_EVENT_NAME] = 'x';
	proto_buf_init(&buf);
	TU_ERR(proto_msg_encode(&m, &buf), TC_ERR_MSG_MALFORMED);
	name[PROTO_MAX_EVENT_NAME] = '\0';
	text[PROTO_MAX_FILTER] = 'y';
	TU_ERR(proto_msg_encode(&m, &buf), TC_ERR_MSG_MALFORMED);
	m.filter.text = "";		/* clears: allowed */
	encode_ok(&m, &buf);
	proto_buf_free(&buf);
}
END_TEST

/* HELLO's pushdown and agent and FILTER_STATUS's error are optional: false and "". */
START_TEST(test_msg_filter_optional)
{
	struct proto_msg m = sample(MSG_HELLO), back;
	msgpack_sbuffer sb;

	repack(&m, "pushdown", NULL, 0, NULL, 0, &sb);
	TU_OK(proto_msg_decode(sb.data, sb.size, &back));
	ck_assert(!back.hello.pushdown);
	proto_msg_free(&back);
	msgpack_sbuffer_destroy(&sb);
	repack(&m, "tsc_mult", NULL, 0, NULL, 0, &sb);	/* the collector refuses it */
	TU_OK(proto_msg_decode(sb.data, sb.size, &back));
	ck_assert_uint_eq(back.hello.tsc_mult, 0);
	ck_assert_uint_eq(back.hello.tsc0, m.hello.tsc0);
	proto_msg_free(&back);
	msgpack_sbuffer_destroy(&sb);
	repack(&m, "agent", NULL, 0, NULL, 0, &sb);	/* an older agent */
	TU_OK(proto_msg_decode(sb.data, sb.size, &back));
	ck_assert_str_eq(back.hello.agent, "");
	proto_msg_free(&back);
	msgpack_sbuffer_destroy(&sb);
	m = sample(MSG_FILTER_STATUS);
	repack(&m, "error", NULL, 0, NULL, 0, &sb);
	TU_OK(proto_msg_decode(sb.data, sb.size, &back));
	ck_assert_str_eq(back.filter_status.error, "");
	proto_msg_free(&back);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_msg_optional_error_text)
{
	struct proto_msg m = sample(MSG_ERROR), back;
	msgpack_sbuffer sb;

	repack(&m, "text", NULL, 0, NULL, 0, &sb);
	TU_OK(proto_msg_decode(sb.data, sb.size, &back));
	ck_assert_int_eq(back.error.code, m.error.code);
	ck_assert_str_eq(back.error.text, "");
	proto_msg_free(&back);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* The delivery counters of cpu_stats and hello's session are optional: an
 * older agent that sends none of them decodes with zeros. */
START_TEST(test_msg_optional_counters)
{
	static const char *const keys[] = { "resent_pages", "lost_pages",
		"lost_events", "pages_mmap", "pages_splice", "pages_read",
		"copied_bytes" };
	struct proto_msg m = sample(MSG_CPU_STATS), back, cut;
	msgpack_sbuffer sb;
	size_t k;

	cut = m;
	for (k = 0; k < ARRAY_SIZE(keys); k++) {
		repack(&m, keys[k], NULL, 0, NULL, 0, &sb);
		TU_OK(proto_msg_decode(sb.data, sb.size, &back));
		msgpack_sbuffer_destroy(&sb);
		ck_assert_uint_eq(back.cpu_stats.commit_overrun, UINT64_MAX);
		cut.cpu_stats = back.cpu_stats;
		ck_assert_uint_eq(*(&cut.cpu_stats.resent_pages + k), 0);
	}
	m = sample(MSG_HELLO);
	repack(&m, "session", NULL, 0, NULL, 0, &sb);
	TU_OK(proto_msg_decode(sb.data, sb.size, &back));
	ck_assert_uint_eq(back.hello.session, 0);
	ck_assert_uint_eq(back.hello.ncpus, 64);
	proto_msg_free(&back);
	msgpack_sbuffer_destroy(&sb);
	/* an agent before snap_end's off_ns: the freeze's moment not known */
	m = sample(MSG_SNAP_END);
	repack(&m, "off_ns", NULL, 0, NULL, 0, &sb);
	TU_OK(proto_msg_decode(sb.data, sb.size, &back));
	ck_assert_uint_eq(back.snap_end.off_ns, 0);
	ck_assert_uint_eq(back.snap_end.last_ns, INT64_MAX);
	proto_msg_free(&back);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_msg_other_version_hello)
{
	static const char v2[] = "\x83\xa1t\xa5hello\xa1v\x02\xa4host\xa1h";
	struct proto_msg back;

	/* only "v" is needed to refuse a version we do not speak */
	TU_OK(proto_msg_decode(v2, sizeof(v2) - 1, &back));
	ck_assert_int_eq(back.type, MSG_HELLO);
	ck_assert_uint_eq(back.hello.version, 2);
	ck_assert_str_eq(back.hello.host, "h");
	ck_assert_str_eq(back.hello.kernel, "");
	ck_assert_str_eq(back.hello.trace_clock, "");
	ck_assert_uint_eq(back.hello.ncpus, 0);
	proto_msg_free(&back);
	/* the same with version 1 lacks required fields */
	decode_fails(RAW("\x83\xa1t\xa5hello\xa1v\x01\xa4host\xa1h"),
		     TC_ERR_MSG_MISSING);
}
END_TEST

START_TEST(test_msg_unknown_keys_ignored)
{
	static const char extra[] = "\xa6" "future\x93\x01\xc0\x81\xa1x\xc3";
	struct proto_msg m = sample(MSG_HELLO), back;
	msgpack_sbuffer sb;

	repack(&m, NULL, NULL, 0, extra, sizeof(extra) - 1, &sb);
	TU_OK(proto_msg_decode(sb.data, sb.size, &back));
	msg_eq(&m, &back);
	proto_msg_free(&back);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_msg_bad_maps)
{
	struct proto_msg m = sample(MSG_BYE);
	msgpack_sbuffer sb;

	decode_fails(RAW("\x81\xa1t\xa4nope"), TC_ERR_MSG_UNKNOWN);
	decode_fails(RAW("\x81\xa1t\xa0"), TC_ERR_MSG_UNKNOWN);
	decode_fails(RAW("\x81\xa1t\x01"), TC_ERR_MSG_MALFORMED);
	decode_fails(RAW("\x81\xa1x\xa3" "bye"), TC_ERR_MSG_MISSING);
	decode_fails(RAW("\x80"), TC_ERR_MSG_MISSING);
	decode_fails(RAW("\x92\xa1t\xa3" "bye"), TC_ERR_MSG_MALFORMED);
	decode_fails(RAW("\xa3" "bye"), TC_ERR_MSG_MALFORMED);
	decode_fails(RAW("\xc1"), TC_ERR_MSG_MALFORMED);
	decode_fails(RAW("\x82\xa1t\xa3" "bye\xa1t\xa3" "bye"),
		     TC_ERR_MSG_MALFORMED);
	/* a non-string key, a duplicate known key */
	repack(&m, NULL, NULL, 0, RAW("\x01\x02"), &sb);
	decode_fails(sb.data, sb.size, TC_ERR_MSG_MALFORMED);
	msgpack_sbuffer_destroy(&sb);
	repack(&m, NULL, NULL, 0, RAW("\xa5pages\x07"), &sb);
	decode_fails(sb.data, sb.size, TC_ERR_MSG_MALFORMED);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_msg_hostile_sizes)
{
	/* containers and strings announcing far more than the input holds */
	decode_fails(RAW("\xdf\xff\xff\xff\xff"), TC_ERR_MSG_MALFORMED);
	decode_fails(RAW("\x81\xa1t\xdd\xff\xff\xff\xff"), TC_ERR_MSG_MALFORMED);
	decode_fails(RAW("\x81\xa1t\xdb\xff\xff\xff\xff"), TC_ERR_MSG_MALFORMED);
	decode_fails(RAW("\x81\xa1t\xc6\x7f\xff\xff\xff"), TC_ERR_MSG_MALFORMED);
	decode_fails(RAW("\x81\xa1t\xc9\x7f\xff\xff\xff\x01"),
		     TC_ERR_MSG_MALFORMED);
	decode_fails(RAW("\x81\xa1t\xdc\x00\x03\x01\x02"), TC_ERR_MSG_MALFORMED);
	/* {"t": "bye", "z": [[[...1]]]}: map, then k nested arrays */
	{
		char deep[80];

		memset(deep, 0x91, sizeof(deep));
		memcpy(deep, "\x82\xa1t\xa3" "bye\xa1z", 9);
		deep[sizeof(deep) - 1] = 0x01;
		decode_fails(deep, sizeof(deep), TC_ERR_MSG_MALFORMED);
		deep[9 + 16] = 0x01;	/* 17 levels */
		decode_fails(deep, 9 + 17, TC_ERR_MSG_MALFORMED);
		deep[9 + 15] = 0x01;	/* 16 levels: parsed, lacks "pages" */
		decode_fails(deep, 9 + 16, TC_ERR_MSG_MISSING);
	}
	decode_fails("", FRAME_MAX_PAYLOAD + 1, TC_ERR_MSG_MALFORMED);
}
END_TEST

START_TEST(test_msg_long_strings)
{
	struct proto_msg m = sample(MSG_FORMAT), back;
	size_t n = PROTO_MAX_STRING + 1;
	char *raw = malloc(n + 5);
	msgpack_sbuffer sb;

	ck_assert_ptr_nonnull(raw);
	raw[0] = (char)0xdb;
	raw[1] = 0;
	raw[2] = (char)((n >> 16) & 0xff);
	raw[3] = (char)((n >> 8) & 0xff);
	raw[4] = (char)(n & 0xff);
	memset(raw + 5, 'y', n);
	repack(&m, "text", raw, n + 5, NULL, 0, &sb);
	decode_fails(sb.data, sb.size, TC_ERR_MSG_MALFORMED);
	msgpack_sbuffer_destroy(&sb);
	raw[4] = (char)((n - 1) & 0xff);	/* exactly the limit */
	repack(&m, "text", raw, n + 4, NULL, 0, &sb);
	TU_OK(proto_msg_decode(sb.data, sb.size, &back));
	ck_assert_uint_eq(strlen(back.format.text), PROTO_MAX_STRING);
	proto_msg_free(&back);
	msgpack_sbuffer_destroy(&sb);
	free(raw);
}
END_TEST

/* A msgpack str32 of @n bytes of 'h' (a peer string of that length). */
static char *str32(size_t n, size_t *len)
{
	char *raw = malloc(n + 5);

	ck_assert_ptr_nonnull(raw);
	raw[0] = (char)0xdb;
	raw[1] = (char)((n >> 24) & 0xff);
	raw[2] = (char)((n >> 16) & 0xff);
	raw[3] = (char)((n >> 8) & 0xff);
	raw[4] = (char)(n & 0xff);
	memset(raw + 5, 'h', n);
	*len = n + 5;
	return raw;
}

/* Each peer string's limit (PROTOCOL.md "Limits"): at it decodes, one over
 * it is refused with a line that names the key and the limit. */
static const struct { enum proto_msg_type type; const char *key; size_t max; } str_limits[] = {
	{ MSG_HELLO, "host", PROTO_MAX_HOST },
	{ MSG_HELLO, "kernel", PROTO_MAX_NAME },
	{ MSG_HELLO, "machine_id", PROTO_MAX_NAME },
	{ MSG_HELLO, "boot_id", PROTO_MAX_NAME },
	{ MSG_HELLO, "trace_clock", PROTO_MAX_CLOCK },
	{ MSG_HELLO, "agent", PROTO_MAX_AGENT },
	{ MSG_FORMAT, "system", PROTO_MAX_EVENT_NAME },
	{ MSG_FORMAT, "name", PROTO_MAX_EVENT_NAME },
	{ MSG_GROUP, "comm", PROTO_MAX_NAME },
	{ MSG_GROUP, "clock", PROTO_MAX_CLOCK },
	{ MSG_ERROR, "text", PROTO_MAX_ERROR_TEXT },
	{ MSG_FILTER_STATUS, "error", PROTO_MAX_FILTER_ERROR },
};

START_TEST(test_msg_string_limits)
{
	struct proto_msg m = sample(str_limits[_i].type), back, enc;
	const char *key = str_limits[_i].key;
	size_t max = str_limits[_i].max, len;
	struct proto_buf buf;
	msgpack_sbuffer sb;
	char why[256], want[256], *raw;

	raw = str32(max + 1, &len);
	repack(&m, key, raw, len, NULL, 0, &sb);
	TU_ERR(proto_msg_decode_why(sb.data, sb.size, &back, why, sizeof(why)),
	       TC_ERR_MSG_MALFORMED);
	snprintf(want, sizeof(want), "%s: '%s' of %zu bytes is over the limit of %zu bytes",
		 proto_msg_name(m.type), key, max + 1, max);
	ck_assert_str_eq(why, want);
	msgpack_sbuffer_destroy(&sb);
	free(raw);
	raw = str32(max, &len);
	repack(&m, key, raw, len, NULL, 0, &sb);
	TU_OK(proto_msg_decode_why(sb.data, sb.size, &back, why, sizeof(why)));
	ck_assert_str_eq(why, "");
	proto_msg_free(&back);
	msgpack_sbuffer_destroy(&sb);
	free(raw);
	/* the encoder refuses to send what would be refused */
	raw = calloc(1, max + 2);
	ck_assert_ptr_nonnull(raw);
	memset(raw, 'h', max + 1);
	enc = m;
	if (m.type == MSG_HELLO && !strcmp(key, "host")) enc.hello.host = raw;
	if (m.type == MSG_HELLO && !strcmp(key, "kernel")) enc.hello.kernel = raw;
	if (m.type == MSG_HELLO && !strcmp(key, "machine_id")) enc.hello.machine_id = raw;
	if (m.type == MSG_HELLO && !strcmp(key, "boot_id")) enc.hello.boot_id = raw;
	if (m.type == MSG_HELLO && !strcmp(key, "trace_clock")) enc.hello.trace_clock = raw;
	if (m.type == MSG_HELLO && !strcmp(key, "agent")) enc.hello.agent = raw;
	if (m.type == MSG_FORMAT && !strcmp(key, "system")) enc.format.system = raw;
	if (m.type == MSG_FORMAT && !strcmp(key, "name")) enc.format.name = raw;
	if (m.type == MSG_GROUP && !strcmp(key, "comm")) enc.group.comm = raw;
	if (m.type == MSG_GROUP && !strcmp(key, "clock")) enc.group.clock = raw;
	if (m.type == MSG_ERROR) enc.error.text = raw;
	if (m.type == MSG_FILTER_STATUS) enc.filter_status.error = raw;
	proto_buf_init(&buf);
	TU_ERR(proto_msg_encode(&enc, &buf), TC_ERR_TOO_LONG);
	proto_buf_free(&buf);
	free(raw);
}
END_TEST

START_TEST(test_msg_decode_why)
{
	struct proto_msg m = sample(MSG_HELLO), back;
	msgpack_sbuffer sb;
	char why[256];

	repack(&m, "ncpus", NULL, 0, NULL, 0, &sb);
	TU_ERR(proto_msg_decode_why(sb.data, sb.size, &back, why, sizeof(why)), TC_ERR_MSG_MISSING);
	ck_assert_str_eq(why, "hello: required 'ncpus' missing");
	msgpack_sbuffer_destroy(&sb);
	repack(&m, "ncpus", "\xa1x", 2, NULL, 0, &sb);
	TU_ERR(proto_msg_decode_why(sb.data, sb.size, &back, why, sizeof(why)),
	       TC_ERR_MSG_MALFORMED);
	ck_assert_str_eq(why, "hello: 'ncpus' has the wrong type or is out of range");
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* ---- TLS: a CA, leaves it signs, and an unrelated CA -------------------- */

static char tls_dir[64];

static const char *tls_path(const char *name)
{
	static char paths[8][128];
	static unsigned next;
	char *p = paths[next++ % 8];

	snprintf(p, 128, "%s/%s", tls_dir, name);
	return p;
}

static void add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v3;
	X509_EXTENSION *ext;

	X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
	ck_assert_ptr_nonnull(ext);
	ck_assert_int_eq(X509_add_ext(x, ext, -1), 1);
	X509_EXTENSION_free(ext);
}

/* A certificate for @cn and @key, signed by @ca (self-signed when NULL). */
static X509 *make_cert(const char *cn, EVP_PKEY *key, X509 *ca,
		       EVP_PKEY *ca_key, long serial)
{
	X509 *x = X509_new();
	X509_NAME *name = X509_get_subject_name(x);

	ck_assert_int_eq(X509_set_version(x, X509_VERSION_3), 1);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 24 * 3600);
	ck_assert_int_eq(X509_set_pubkey(x, key), 1);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
				   (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, ca ? X509_get_subject_name(ca) : name);
	if (!ca) {
		add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE");
		add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign");
	} else {
		add_ext(x, ca, NID_basic_constraints, "CA:FALSE");
		add_ext(x, ca, NID_ext_key_usage, "serverAuth,clientAuth");
	}
	ck_assert_int_gt(X509_sign(x, ca ? ca_key : key, EVP_sha256()), 0);
	return x;
}

static void write_pem(const char *name, X509 *cert, EVP_PKEY *key)
{
	FILE *f = fopen(tls_path(name), "w");

	ck_assert_ptr_nonnull(f);
	if (cert)
		ck_assert_int_eq(PEM_write_X509(f, cert), 1);
	if (key)
		ck_assert_int_eq(PEM_write_PrivateKey(f, key, NULL, NULL, 0,
						      NULL, NULL), 1);
	fclose(f);
}

/* Issue a leaf for @cn under @ca into NAME.pem / NAME.key. */
static void make_leaf(const char *name, const char *cn, X509 *ca,
		      EVP_PKEY *ca_key, long serial)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	char file[64];
	X509 *x;

	ck_assert_ptr_nonnull(key);
	x = make_cert(cn, key, ca, ca_key, serial);
	snprintf(file, sizeof(file), "%s.pem", name);
	write_pem(file, x, NULL);
	snprintf(file, sizeof(file), "%s.key", name);
	write_pem(file, NULL, key);
	X509_free(x);
	EVP_PKEY_free(key);
}

/* A CRL of @ca revoking the serial @revoked (none when 0) into @name. */
static void make_crl(const char *name, X509 *ca, EVP_PKEY *ca_key, long revoked)
{
	X509_CRL *crl = X509_CRL_new();
	ASN1_TIME *t = ASN1_TIME_new();
	FILE *f;

	ck_assert_int_eq(X509_CRL_set_version(crl, 1), 1);
	ck_assert_int_eq(X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca)), 1);
	X509_gmtime_adj(t, -60);
	X509_CRL_set1_lastUpdate(crl, t);
	X509_gmtime_adj(t, 24 * 3600);
	X509_CRL_set1_nextUpdate(crl, t);
	if (revoked) {
		X509_REVOKED *r = X509_REVOKED_new();
		ASN1_INTEGER *serial = ASN1_INTEGER_new();

		ASN1_INTEGER_set(serial, revoked);
		X509_REVOKED_set_serialNumber(r, serial);
		X509_REVOKED_set_revocationDate(r, t);
		X509_CRL_add0_revoked(crl, r);
		ASN1_INTEGER_free(serial);
	}
	X509_CRL_sort(crl);
	ck_assert_int_gt(X509_CRL_sign(crl, ca_key, EVP_sha256()), 0);
	f = fopen(tls_path(name), "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(PEM_write_X509_CRL(f, crl), 1);
	fclose(f);
	ASN1_TIME_free(t);
	X509_CRL_free(crl);
}

static void tls_setup(void)
{
	EVP_PKEY *ca_key = EVP_EC_gen("P-256"), *other_key = EVP_EC_gen("P-256");
	X509 *ca, *other;
	FILE *f;

	tu_tmpdir_make(tls_dir, sizeof(tls_dir), "proto");
	ck_assert_ptr_nonnull(ca_key);
	ck_assert_ptr_nonnull(other_key);
	ca = make_cert("tracecollect test CA", ca_key, NULL, NULL, 1);
	other = make_cert("some other CA", other_key, NULL, NULL, 1);
	write_pem("ca.pem", ca, NULL);
	write_pem("other-ca.pem", other, NULL);
	make_leaf("server", "collector.test", ca, ca_key, 2);
	make_leaf("client", "agent-1.test", ca, ca_key, 3);
	make_leaf("rogue", "rogue-agent.test", other, other_key, 2);
	make_leaf("revoked", "agent-2.test", ca, ca_key, 4);
	make_crl("crl-4.pem", ca, ca_key, 4);
	make_crl("crl-none.pem", ca, ca_key, 0);
	f = fopen(tls_path("junk.pem"), "w");
	ck_assert_ptr_nonnull(f);
	fputs("this is not PEM\n", f);
	fclose(f);
	X509_free(ca);
	X509_free(other);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(other_key);
}

static void tls_teardown(void)
{
	tu_tmpdir_remove(tls_dir);
}

static SSL_CTX *ctx_for(enum tls_role role, const char *name, const char *ca)
{
	char cert[64], key[64], err[512] = "";
	struct tls_files files = { .cert = cert, .key = key, .ca = tls_path(ca) };
	SSL_CTX *ctx = NULL;
	int rc;

	snprintf(cert, sizeof(cert), "%s", tls_path(name));
	snprintf(key, sizeof(key), "%s", cert);
	memcpy(key + strlen(key) - 3, "key", 3);
	rc = tls_ctx_new(role, &files, &ctx, err, sizeof(err));
	ck_assert_msg(rc == 0, "tls_ctx_new: %s", err);
	return ctx;
}

/* A server context that also checks peers against the CRL file @crl. */
static SSL_CTX *server_with_crl(const char *crl)
{
	char err[512] = "";
	struct tls_files files = { .cert = tls_path("server.pem"), .key = tls_path("server.key"),
				   .ca = tls_path("ca.pem"), .crl = tls_path(crl) };
	SSL_CTX *ctx = NULL;

	ck_assert_msg(tls_ctx_new(TLS_ROLE_SERVER, &files, &ctx, err, sizeof(err)) == 0,
		      "tls_ctx_new: %s", err);
	return ctx;
}

/* One end of a handshake driven step by step over non-blocking sockets. */
struct side {
	SSL *ssl;
	int fd;
	int state;		/* 0 running, 1 done, -1 failed */
	char err[512];
};

static void side_step(struct side *sd, bool server)
{
	int r;

	if (sd->state)
		return;
	ERR_clear_error();
	r = server ? SSL_accept(sd->ssl) : SSL_connect(sd->ssl);
	if (r == 1) {
		sd->state = 1;
		return;
	}
	r = SSL_get_error(sd->ssl, r);
	if (r == SSL_ERROR_WANT_READ || r == SSL_ERROR_WANT_WRITE)
		return;
	sd->state = -1;
	/* both ends share this thread's error queue: read it now */
	tls_errors(sd->ssl, sd->err, sizeof(sd->err));
}

static void handshake(SSL_CTX *sctx, SSL_CTX *cctx, struct side *s,
		      struct side *c)
{
	int sv[2], i;

	TU_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	memset(s, 0, sizeof(*s));
	memset(c, 0, sizeof(*c));
	for (i = 0; i < 2; i++)
		TU_SYS(fcntl(sv[i], F_SETFL, O_NONBLOCK));
	s->fd = sv[0];
	c->fd = sv[1];
	s->ssl = SSL_new(sctx);
	c->ssl = SSL_new(cctx);
	SSL_set_fd(s->ssl, s->fd);
	SSL_set_fd(c->ssl, c->fd);
	/* bounded in steps, not time: each step makes progress or waits */
	for (i = 0; i < 1000 && (!s->state || !c->state); i++) {
		side_step(c, false);
		side_step(s, true);
	}
}

static void side_free(struct side *sd)
{
	SSL_free(sd->ssl);
	close(sd->fd);
}

START_TEST(test_tls_good_pair)
{
	SSL_CTX *sctx = ctx_for(TLS_ROLE_SERVER, "server.pem", "ca.pem");
	SSL_CTX *cctx = ctx_for(TLS_ROLE_CLIENT, "client.pem", "ca.pem");
	struct side s, c;
	char name[64], buf[8];
	int i, n = -1;

	handshake(sctx, cctx, &s, &c);
	ck_assert_msg(s.state == 1, "server: %s", s.err);
	ck_assert_msg(c.state == 1, "client: %s", c.err);
	ck_assert_int_ge(SSL_version(s.ssl), TLS1_2_VERSION);
	ck_assert_str_eq(tls_peer_subject(s.ssl, name, sizeof(name)),
			 "agent-1.test");
	ck_assert_str_eq(tls_peer_subject(c.ssl, name, sizeof(name)),
			 "collector.test");
	ck_assert_str_eq(tls_peer_subject(s.ssl, name, 6), "agent");
	ck_assert_int_eq(SSL_write(c.ssl, "ping", 4), 4);
	for (i = 0; i < 100 && n <= 0; i++)
		n = SSL_read(s.ssl, buf, sizeof(buf));
	ck_assert_int_eq(n, 4);
	ck_assert_mem_eq(buf, "ping", 4);
	side_free(&s);
	side_free(&c);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
}
END_TEST

START_TEST(test_tls_revoked_client)
{
	SSL_CTX *sctx = server_with_crl("crl-4.pem");
	SSL_CTX *good = ctx_for(TLS_ROLE_CLIENT, "client.pem", "ca.pem");
	SSL_CTX *bad = ctx_for(TLS_ROLE_CLIENT, "revoked.pem", "ca.pem");
	SSL_CTX *none = server_with_crl("crl-none.pem");
	struct side s, c;
	char name[64];

	handshake(sctx, good, &s, &c);
	ck_assert_msg(s.state == 1, "server: %s", s.err);
	ck_assert(tls_peer_has_name(s.ssl, "agent-1.test"));
	ck_assert(!tls_peer_has_name(s.ssl, "agent-1"));
	ck_assert(!tls_peer_has_name(s.ssl, "agent-1.test."));
	side_free(&s);
	side_free(&c);
	handshake(sctx, bad, &s, &c);
	ck_assert_int_eq(s.state, -1);
	ck_assert_msg(strstr(s.err, "certificate revoked"), "server: %s", s.err);
	ck_assert(!tls_peer_has_name(s.ssl, "agent-2.test"));
	side_free(&s);
	side_free(&c);
	/* a CRL that revokes nothing lets it in */
	handshake(none, bad, &s, &c);
	ck_assert_msg(s.state == 1, "server: %s", s.err);
	ck_assert_str_eq(tls_peer_subject(s.ssl, name, sizeof(name)), "agent-2.test");
	side_free(&s);
	side_free(&c);
	SSL_CTX_free(sctx);
	SSL_CTX_free(none);
	SSL_CTX_free(good);
	SSL_CTX_free(bad);
}
END_TEST

START_TEST(test_tls_cert_file_cn)
{
	char cn[64];

	TU_OK(tls_cert_file_cn(tls_path("client.pem"), cn, sizeof(cn)));
	ck_assert_str_eq(cn, "agent-1.test");
	TU_ERR(tls_cert_file_cn(tls_path("client.pem"), cn, 5), TC_ERR_TOO_LONG);
	TU_ERR(tls_cert_file_cn(tls_path("junk.pem"), cn, sizeof(cn)), TC_ERR_TLS);
	TU_ERR(tls_cert_file_cn(tls_path("absent.pem"), cn, sizeof(cn)), TC_ERR_TLS);
}
END_TEST

static int expiring;

static void count_expiry(void *arg, const char *what, const char *name, long days)
{
	expiring++;
	ck_assert_msg(days <= 1, "%s %s: %ld days", what, name, days);
}

START_TEST(test_tls_expiry)
{
	SSL_CTX *sctx = server_with_crl("crl-none.pem");

	/* the test's certificates and CRL are valid for a day, its CAs too */
	expiring = 0;
	ck_assert_int_eq(tls_ctx_expiry(sctx, 30, count_expiry, NULL), 3);
	ck_assert_int_eq(expiring, 3);
	TU_EQ(tls_ctx_expiry(sctx, 0, count_expiry, NULL), 0);
	SSL_CTX_free(sctx);
}
END_TEST

START_TEST(test_tls_client_from_other_ca)
{
	SSL_CTX *sctx = ctx_for(TLS_ROLE_SERVER, "server.pem", "ca.pem");
	SSL_CTX *cctx = ctx_for(TLS_ROLE_CLIENT, "rogue.pem", "ca.pem");
	struct side s, c;
	char name[64];

	handshake(sctx, cctx, &s, &c);
	ck_assert_int_eq(s.state, -1);
	ck_assert_msg(strstr(s.err, "certificate verify failed: "
			     "unable to get local issuer certificate"),
		      "server said: %s", s.err);
	ck_assert_str_eq(tls_peer_subject(s.ssl, name, sizeof(name)), "?");
	side_free(&s);
	side_free(&c);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
}
END_TEST

START_TEST(test_tls_server_from_other_ca)
{
	SSL_CTX *sctx = ctx_for(TLS_ROLE_SERVER, "rogue.pem", "ca.pem");
	SSL_CTX *cctx = ctx_for(TLS_ROLE_CLIENT, "client.pem", "ca.pem");
	struct side s, c;

	handshake(sctx, cctx, &s, &c);
	ck_assert_int_eq(c.state, -1);
	ck_assert_int_ne(s.state, 1);
	ck_assert_msg(strstr(c.err, "certificate verify failed: "
			     "unable to get local issuer certificate"),
		      "client said: %s", c.err);
	side_free(&s);
	side_free(&c);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
}
END_TEST

START_TEST(test_tls_client_without_cert)
{
	SSL_CTX *sctx = ctx_for(TLS_ROLE_SERVER, "server.pem", "ca.pem");
	SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
	struct side s, c;

	ck_assert_int_eq(SSL_CTX_load_verify_locations(cctx, tls_path("ca.pem"),
						       NULL), 1);
	SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);
	handshake(sctx, cctx, &s, &c);
	ck_assert_int_eq(s.state, -1);
	ck_assert_msg(strstr(s.err, "peer did not return a certificate"),
		      "server said: %s", s.err);
	side_free(&s);
	side_free(&c);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
}
END_TEST

/* tls_ctx_new must fail with TC_ERR_TLS, leave *out alone, and say @what. */
static void ctx_fails(const char *cert, const char *key, const char *ca,
		      const char *what1, const char *what2)
{
	struct tls_files files = { .cert = cert, .key = key, .ca = ca };
	SSL_CTX *ctx = (SSL_CTX *)&files;
	char err[512] = "";

	TU_ERR(tls_ctx_new(TLS_ROLE_SERVER, &files, &ctx, err, sizeof(err)), TC_ERR_TLS);
	ck_assert_ptr_eq(ctx, (SSL_CTX *)&files);
	ck_assert_msg(strstr(err, what1), "'%s' lacks '%s'", err, what1);
	ck_assert_msg(strstr(err, what2), "'%s' lacks '%s'", err, what2);
	TU_EQ(ERR_peek_error(), 0);
}

START_TEST(test_tls_ctx_errors)
{
	char cert[128], key[128], ca[128], junk[128], ckey[128], missing[128];

	snprintf(cert, sizeof(cert), "%s", tls_path("server.pem"));
	snprintf(key, sizeof(key), "%s", tls_path("server.key"));
	snprintf(ca, sizeof(ca), "%s", tls_path("ca.pem"));
	snprintf(junk, sizeof(junk), "%s", tls_path("junk.pem"));
	snprintf(ckey, sizeof(ckey), "%s", tls_path("client.key"));
	snprintf(missing, sizeof(missing), "%s", tls_path("nope.pem"));

	ctx_fails(missing, key, ca, missing, "No such file or directory");
	ctx_fails(cert, missing, ca, missing, "No such file or directory");
	ctx_fails(cert, key, missing, missing, "No such file or directory");
	ctx_fails(junk, key, ca, junk, "no usable PEM certificate");
	ctx_fails(cert, junk, ca, junk, "no usable unencrypted PEM private key");
	ctx_fails(cert, cert, ca, cert, "private key");
	ctx_fails(cert, key, junk, junk, "no usable PEM CA certificate");
	ctx_fails(cert, ckey, ca, "does not match certificate", ckey);
	ctx_fails(cert, key, "/tmp", "CA file /tmp", "Is a directory");
	ctx_fails(NULL, key, ca, "no certificate configured", "");
	ctx_fails(cert, key, "", "no CA file configured", "");
}
END_TEST

START_TEST(test_tls_errors_empty)
{
	char buf[64] = "x";

	ERR_clear_error();
	ck_assert_str_eq(tls_errors(NULL, buf, sizeof(buf)), "");
	ERR_raise_data(ERR_LIB_SSL, SSL_R_CERTIFICATE_VERIFY_FAILED, "extra %d", 1);
	ck_assert_str_eq(tls_errors(NULL, buf, sizeof(buf)),
			 "certificate verify failed (extra 1)");
	TU_EQ(ERR_peek_error(), 0);
}
END_TEST

/*
 * "tgids" is optional (older agents), capped at PROTO_MAX_TGIDS before
 * anything is allocated, and each entry is exactly [i32, i32].
 */
START_TEST(test_msg_tgids_limits)
{
	struct proto_msg m = sample(MSG_CMDLINES), back;
	struct proto_tgid *items = calloc(PROTO_MAX_TGIDS + 1, sizeof(*items));
#define TG_HEAD "\x83\xa1t\xa8" "cmdlines\xa8" "cmdlines\x90\xa5tgids"
#define TG(s) { TG_HEAD s, sizeof(TG_HEAD s) - 1 }
	static const struct { const char *p; size_t len; } bad[] = {
		TG("\x91\x91\x01"),			/* [pid] */
		TG("\x91\x93\x01\x02\x03"),		/* [pid, tgid, ?] */
		TG("\x91\x92\x01\xa1x"),		/* tgid a string */
		TG("\x91\x92\x01\xcf\x80\0\0\0\0\0\0\0"),	/* out of i32 */
		TG("\xa0"),				/* not an array */
	};
	static const char old[] = "\x82\xa1t\xa8" "cmdlines\xa8" "cmdlines\x91\x92\x05\xa2sh";
	struct proto_buf buf;
	uint8_t *hostile;
	size_t n = 0;

	ck_assert_ptr_nonnull(items);
	proto_buf_init(&buf);
	m.cmdlines.count = 0;
	m.cmdlines.tgids.items = items;
	m.cmdlines.tgids.count = PROTO_MAX_TGIDS + 1;
	TU_ERR(proto_msg_encode(&m, &buf), TC_ERR_TOO_LONG);
	proto_buf_free(&buf);	/* encode_ok() starts a buffer of its own */
	m.cmdlines.tgids.count = PROTO_MAX_TGIDS;	/* 65536 fit one frame */
	encode_ok(&m, &buf);
	TU_OK(proto_msg_decode(buf.data + FRAME_HDR_SIZE, buf.len - FRAME_HDR_SIZE, &back));
	ck_assert_uint_eq(back.cmdlines.tgids.count, PROTO_MAX_TGIDS);
	proto_msg_free(&back);
	proto_buf_free(&buf);

	/* an older agent's CMDLINES has no "tgids": none */
	TU_OK(proto_msg_decode(old, sizeof(old) - 1, &back));
	ck_assert_uint_eq(back.cmdlines.count, 1);
	ck_assert_uint_eq(back.cmdlines.tgids.count, 0);
	proto_msg_free(&back);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		TU_ERR(proto_msg_decode(bad[i].p, bad[i].len, &back), TC_ERR_MSG_MALFORMED);

	/* an array announcing PROTO_MAX_TGIDS + 1 entries, present or not */
	hostile = malloc(64 + (PROTO_MAX_TGIDS + 1) * 3);
	ck_assert_ptr_nonnull(hostile);
	memcpy(hostile, TG_HEAD "\xdd\0\x01\0\x01", sizeof(TG_HEAD) - 1 + 5);
	n = sizeof(TG_HEAD) - 1 + 5;
	for (uint32_t i = 0; i <= PROTO_MAX_TGIDS; i++, n += 3)
		memcpy(hostile + n, "\x92\x01\x01", 3);
	TU_ERR(proto_msg_decode(hostile, n, &back), TC_ERR_MSG_MALFORMED);
	free(hostile);
	free(items);
#undef TG
#undef TG_HEAD
}
END_TEST

/* ---- printk_formats text (proto/printk.h) ------------------------------- */

static int printk_count_fn(void *ctx, uint64_t addr, const char *fmt, size_t len)
{
	(void)ctx;
	(void)addr;
	(void)fmt;
	(void)len;
	return 0;
}

struct printk_seen {
	size_t n;
	uint64_t addr[4];
	char fmt[4][64];
};

static int printk_collect(void *ctx, uint64_t addr, const char *fmt, size_t len)
{
	struct printk_seen *s = ctx;

	ck_assert_uint_lt(s->n, 4);
	ck_assert_uint_lt(len, sizeof(s->fmt[0]));
	s->addr[s->n] = addr;
	memcpy(s->fmt[s->n], fmt, len);
	s->fmt[s->n][len] = '\0';
	s->n++;
	return 0;
}

START_TEST(test_printk_parse)
{
	static const char text[] = "0xffffffff8281b87c : \"Start context switch\"\n"
				   "0xFFFF : \"%s: tab\\there\\n\"\n"
				   "0x0 : \"\xc3\xa9\"\n";
	struct printk_seen seen = { 0 };

	TU_OK(proto_printk_parse(text, strlen(text), printk_collect, &seen, NULL));
	ck_assert_uint_eq(seen.n, 3);
	ck_assert_uint_eq(seen.addr[0], 0xffffffff8281b87cull);
	ck_assert_str_eq(seen.fmt[0], "\"Start context switch\"");
	ck_assert_uint_eq(seen.addr[1], 0xffff);
	ck_assert_str_eq(seen.fmt[1], "\"%s: tab\\there\\n\"");
	ck_assert_uint_eq(seen.addr[2], 0);
	TU_OK(proto_printk_parse("", 0, printk_collect, &seen, NULL));
}
END_TEST

static const char *const bad_printk_texts[] = {
	"0xffff : \"x\"",		/* no newline */
	"ffff : \"x\"\n",		/* no 0x */
	"0x : \"x\"\n",		/* no digits */
	"0x11112222333344445 : \"x\"\n",	/* 17 digits */
	"0xffff: \"x\"\n",		/* not " : " */
	"0xffff : \n",			/* empty format */
	"0xfffg : \"x\"\n",
	"0xffff : \"a\tb\"\n",	/* control byte */
	"0xffff : \"a\x1b[31m\"\n",
	"0xffff : \"a\x7f\"\n",
	"\n",
	"0x1 : \"ok\"\n" "0x2 \"bad\"\n",
};

START_TEST(test_printk_rejects)
{
	struct printk_seen seen = { 0 };
	const char *t = bad_printk_texts[_i];
	size_t line = 0, want = _i == ARRAY_SIZE(bad_printk_texts) - 1 ? 2 : 1;

	TU_ERR(proto_printk_parse(t, strlen(t), printk_collect, &seen, &line),
	       TC_ERR_MSG_MALFORMED);
	ck_assert_uint_eq(line, want);
}
END_TEST

/* A format of PROTO_PRINTK_MAX_FMT bytes is one; one more is refused. */
START_TEST(test_printk_long_format)
{
	char *text = malloc(PROTO_PRINTK_MAX_FMT + 32);
	size_t n = (size_t)sprintf(text, "0x1 : ");

	ck_assert_ptr_nonnull(text);
	memset(text + n, 'x', PROTO_PRINTK_MAX_FMT);
	text[n + PROTO_PRINTK_MAX_FMT] = '\n';
	TU_OK(proto_printk_parse(text, n + PROTO_PRINTK_MAX_FMT + 1, printk_count_fn, NULL, NULL));
	memset(text + n, 'x', PROTO_PRINTK_MAX_FMT + 1);
	text[n + PROTO_PRINTK_MAX_FMT + 1] = '\n';
	TU_ERR(proto_printk_parse(text, n + PROTO_PRINTK_MAX_FMT + 2,
				  printk_count_fn, NULL, NULL), TC_ERR_MSG_MALFORMED);
	free(text);
}
END_TEST

/* The agent keeps the good lines only. */
START_TEST(test_printk_clean)
{
	char text[] = "0x1 : \"a\"\n"
		      "0x2 : \"b\x1b\"\n"		/* control byte: out */
		      "junk\n"
		      "0x3 : \"c\\n\"\n"
		      "0x4 : \"cut";			/* no newline: out */
	static const char want[] = "0x1 : \"a\"\n0x3 : \"c\\n\"\n";
	size_t n = proto_printk_clean(text, strlen(text));

	ck_assert_uint_eq(n, strlen(want));
	ck_assert_mem_eq(text, want, n);
	TU_OK(proto_printk_parse(text, n, printk_count_fn, NULL, NULL));
}
END_TEST

/* The agent's cut: whole lines, at most PROTO_PRINTK_CHUNK bytes. */
START_TEST(test_printk_chunk)
{
	static const char line[] = "0xffffffff8281b87c : \"Start context switch\"\n";
	size_t l = strlen(line), lines = PROTO_PRINTK_CHUNK / l + 10, cut;
	char *text = malloc(lines * l + 8);

	ck_assert_ptr_nonnull(text);
	for (size_t i = 0; i < lines; i++)
		memcpy(text + i * l, line, l);
	cut = proto_printk_chunk(text, lines * l);
	ck_assert_uint_eq(cut, (PROTO_PRINTK_CHUNK / l) * l);
	ck_assert_uint_eq(proto_printk_chunk(text, 3 * l), 3 * l);
	ck_assert_uint_eq(proto_printk_chunk(text, 3 * l - 1), 2 * l);	/* cut line */
	ck_assert_uint_eq(proto_printk_chunk(text, 0), 0);
	free(text);
}
END_TEST

/* ---- symbol text (proto/symbols.h) ------------------------------------- */

struct sym_seen {
	size_t n;
	uint64_t addr[4], size[4];
	char name[4][PROTO_SYM_MAX_NAME + 1];
	char module[4][PROTO_SYM_MAX_MODULE + 1];	/* "": none */
};

static int sym_collect(void *ctx, const struct proto_sym *sym)
{
	struct sym_seen *s = ctx;

	ck_assert_uint_lt(s->n, 4);
	ck_assert_uint_eq(strlen(sym->name), sym->name_len);
	s->addr[s->n] = sym->addr;
	s->size[s->n] = sym->size;
	strcpy(s->name[s->n], sym->name);
	if (sym->module)
		ck_assert_uint_gt(strlen(sym->module), 0);
	strcpy(s->module[s->n], sym->module ? sym->module : "");
	s->n++;
	return 0;
}

START_TEST(test_sym_round_trip)
{
	struct sym_seen seen = { 0 };
	struct proto_buf b;
	char longname[PROTO_SYM_MAX_NAME + 40];

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	proto_buf_init(&b);
	TU_OK(proto_sym_append(&b, 0x401000, 0x2a, "main", NULL));
	TU_OK(proto_sym_append(&b, UINT64_MAX, 0, "a b\tc", ""));
	TU_OK(proto_sym_append(&b, 0, 1, longname, longname));
	TU_OK(proto_sym_append(&b, 0xffffffffc0001000ull, 0x40, "e1000_xmit", "e1000 x"));
	TU_ERR(proto_sym_append(&b, 0, 1, "", "mod"), -EINVAL);
	TU_OK(proto_sym_parse((char *)b.data, b.len, sym_collect, &seen, NULL));
	ck_assert_uint_eq(seen.n, 4);
	ck_assert_uint_eq(seen.addr[0], 0x401000);
	ck_assert_uint_eq(seen.size[0], 0x2a);
	ck_assert_str_eq(seen.name[0], "main");
	ck_assert_str_eq(seen.module[0], "");
	ck_assert_uint_eq(seen.addr[1], UINT64_MAX);
	ck_assert_str_eq(seen.name[1], "a?b?c");
	ck_assert_str_eq(seen.module[1], "");
	ck_assert_uint_eq(strlen(seen.name[2]), PROTO_SYM_MAX_NAME);
	ck_assert_uint_eq(strlen(seen.module[2]), PROTO_SYM_MAX_MODULE);	/* cut */
	ck_assert_str_eq(seen.name[3], "e1000_xmit");
	ck_assert_str_eq(seen.module[3], "e1000?x");
	ck_assert_int_eq(memcmp(b.data + b.len - 23, " 40 e1000_xmit e1000?x\n", 23), 0);
	TU_OK(proto_sym_parse("", 0, sym_collect, &seen, NULL));
	proto_buf_free(&b);
}
END_TEST

static const char *const bad_sym_texts[] = {
	"401000 2a main",		/* no newline */
	"401000 2a\n",			/* no name */
	"401000 2a \n",			/* empty name */
	"401000 main\n",		/* no size */
	"0x401000 2a main\n",		/* 0x prefix */
	"401000 2A main\n",		/* upper case */
	"11112222333344445 2a main\n",	/* 17 digits */
	" 401000 2a main\n",		/* empty address */
	"401000  2a main\n",		/* empty size */
	"401000 2a ma in x\n",		/* a space in the module */
	"401000 2a main \n",		/* an empty module */
	"401000 2a  mod\n",		/* an empty name before a module */
	"401000 2a ma\x01in\n",		/* control byte */
	"401000 2a ma\xc3\xa9\n",	/* not ASCII */
	"\n",
	"1 1 ok\n" "zz 1 bad\n",
};

START_TEST(test_sym_rejects)
{
	struct sym_seen seen = { 0 };
	const char *t = bad_sym_texts[_i];
	size_t line = 0, want = _i == ARRAY_SIZE(bad_sym_texts) - 1 ? 2 : 1;

	TU_ERR(proto_sym_parse(t, strlen(t), sym_collect, &seen, &line), TC_ERR_MSG_MALFORMED);
	ck_assert_uint_eq(line, want);
}
END_TEST

START_TEST(test_sym_long_name_rejected)
{
	char text[PROTO_SYM_MAX_NAME + 16];
	struct sym_seen seen = { 0 };
	size_t n;

	n = (size_t)sprintf(text, "1 1 ");
	memset(text + n, 'y', PROTO_SYM_MAX_NAME + 1);
	n += PROTO_SYM_MAX_NAME + 1;
	text[n++] = '\n';
	TU_ERR(proto_sym_parse(text, n, sym_collect, &seen, NULL), TC_ERR_MSG_MALFORMED);
	TU_ERR(proto_sym_parse(text + 1, n - 1, sym_collect, &seen, NULL), TC_ERR_MSG_MALFORMED);
	ck_assert_uint_eq(seen.n, 0);
	n = (size_t)sprintf(text, "1 1 f ");	/* a module one byte too long */
	memset(text + n, 'm', PROTO_SYM_MAX_MODULE + 1);
	n += PROTO_SYM_MAX_MODULE + 1;
	text[n++] = '\n';
	TU_ERR(proto_sym_parse(text, n, sym_collect, &seen, NULL), TC_ERR_MSG_MALFORMED);
	text[n - 2] = '\n';	/* PROTO_SYM_MAX_MODULE bytes: taken */
	TU_OK(proto_sym_parse(text, n - 1, sym_collect, &seen, NULL));
	ck_assert_uint_eq(seen.n, 1);
	ck_assert_uint_eq(strlen(seen.module[0]), PROTO_SYM_MAX_MODULE);
}
END_TEST

START_TEST(test_sym_format)
{
	char buf[32];

	proto_sym_format(buf, sizeof(buf), "run", 0);
	ck_assert_str_eq(buf, "run");
	proto_sym_format(buf, sizeof(buf), "run", 0x1f);
	ck_assert_str_eq(buf, "run+0x1f");
	proto_sym_format(buf, 4, "recurse", 0);
	ck_assert_str_eq(buf, "rec");
	/* %pS: the offset always, the size when known */
	proto_sym_format_sized(buf, sizeof(buf), "run", 0, 0x40, NULL);
	ck_assert_str_eq(buf, "run+0x0/0x40");
	proto_sym_format_sized(buf, sizeof(buf), "run", 0x1f, 0x40, "");
	ck_assert_str_eq(buf, "run+0x1f/0x40");
	proto_sym_format_sized(buf, sizeof(buf), "run", 0x1f, 0, NULL);
	ck_assert_str_eq(buf, "run+0x1f");
	proto_sym_format_sized(buf, 8, "recurse", 0x1f, 0x40, NULL);
	ck_assert_str_eq(buf, "recurse");
	/* sprint_symbol(): a module's symbol ends in " [MODULE]" */
	proto_sym_format_sized(buf, sizeof(buf), "e1000_xmit", 0x1f, 0x40, "e1000");
	ck_assert_str_eq(buf, "e1000_xmit+0x1f/0x40 [e1000]");
	proto_sym_format_sized(buf, sizeof(buf), "e1000_xmit", 0x1f, 0, "e1000");
	ck_assert_str_eq(buf, "e1000_xmit+0x1f [e1000]");
	proto_sym_format_sized(buf, 22, "e1000_xmit", 0x1f, 0x40, "e1000");
	ck_assert_str_eq(buf, "e1000_xmit+0x1f/0x40 ");	/* cut to fit */
	buf[0] = 'x';
	proto_sym_format_sized(buf, 0, "run", 0, 0x40, NULL);
	ck_assert_int_eq(buf[0], 'x');
}
END_TEST

static Suite *proto_suite(void)
{
	Suite *s = suite_create("proto");
	TCase *frame = tcase_create("frame");
	TCase *msg = tcase_create("msg");
	TCase *tls = tcase_create("tls");

	tu_add_tests(frame, TU_TESTS(test_frame_round_trip, test_frame_truncated,
					test_frame_bad_type, test_frame_too_large));
	suite_add_tcase(s, frame);

	tcase_add_loop_test(msg, test_msg_round_trip, MSG_HELLO, MSG_ACK + 1);
	tcase_add_loop_test(msg, test_msg_round_trip, MSG_GROUP, MSG_GROUP + 1);
	tcase_add_loop_test(msg, test_msg_every_prefix, MSG_GROUP, MSG_GROUP + 1);
	tcase_add_loop_test(msg, test_msg_round_trip, MSG_SYMBOLS, MSG_SYMBOLS + 1);
	tcase_add_loop_test(msg, test_msg_round_trip, MSG_FILTER, MSG_FILTER_STATUS + 1);
	tcase_add_loop_test(msg, test_msg_round_trip, MSG_CLOCK_PROBE, MSG_FROZE + 1);
	tcase_add_loop_test(msg, test_msg_every_prefix, MSG_CLOCK_PROBE, MSG_FROZE + 1);
	tcase_add_tests_clock(msg);
	tcase_add_loop_test(msg, test_msg_every_prefix, MSG_FILTER, MSG_FILTER_STATUS + 1);
	tcase_add_loop_test(msg, test_msg_trailing_bytes, MSG_FILTER,
			    MSG_FILTER_STATUS + 1);
	tcase_add_test(msg, test_msg_filter_limits);
	tcase_add_test(msg, test_msg_filter_optional);
	tcase_add_loop_test(msg, test_msg_every_prefix, MSG_SYMBOLS, MSG_SYMBOLS + 1);
	tcase_add_loop_test(msg, test_msg_trailing_bytes, MSG_SYMBOLS, MSG_SYMBOLS + 1);
	tu_add_tests(msg, TU_TESTS(test_msg_names, test_msg_encode_appends,
					test_msg_null_strings_encode_empty, test_msg_encode_limits));
	tcase_add_loop_test(msg, test_msg_every_prefix, MSG_HELLO, MSG_ACK + 1);
	tcase_add_loop_test(msg, test_msg_trailing_bytes, MSG_HELLO,
			    MSG_ACK + 1);
	tcase_add_loop_test(msg, test_msg_wrong_value, 0, ARRAY_SIZE(bad_values));
	tcase_add_loop_test(msg, test_msg_missing_required, 0,
			    ARRAY_SIZE(required));
	tu_add_tests(msg, TU_TESTS(test_msg_optional_error_text, test_msg_optional_counters,
					test_msg_other_version_hello, test_msg_unknown_keys_ignored,
					test_msg_bad_maps, test_msg_hostile_sizes,
					test_msg_long_strings, test_sym_round_trip));
	tcase_add_loop_test(msg, test_sym_rejects, 0, ARRAY_SIZE(bad_sym_texts));
	tcase_add_test(msg, test_sym_long_name_rejected);
	tcase_add_loop_test(msg, test_msg_string_limits, 0, ARRAY_SIZE(str_limits));
	tcase_add_test(msg, test_msg_decode_why);
	tcase_add_test(msg, test_sym_format);
	tcase_add_loop_test(msg, test_msg_round_trip, MSG_PRINTK, MSG_PRINTK + 1);
	tcase_add_loop_test(msg, test_msg_every_prefix, MSG_PRINTK, MSG_PRINTK + 1);
	tcase_add_loop_test(msg, test_msg_trailing_bytes, MSG_PRINTK, MSG_PRINTK + 1);
	tu_add_tests(msg, TU_TESTS(test_msg_tgids_limits, test_printk_parse,
				   test_printk_long_format, test_printk_chunk, test_printk_clean));
	tcase_add_loop_test(msg, test_printk_rejects, 0, ARRAY_SIZE(bad_printk_texts));
	suite_add_tcase(s, msg);

	tcase_add_unchecked_fixture(tls, tls_setup, tls_teardown);
	tu_add_tests(tls, TU_TESTS(test_tls_good_pair, test_tls_client_from_other_ca,
					test_tls_server_from_other_ca, test_tls_client_without_cert,
					test_tls_ctx_errors, test_tls_errors_empty,
					test_tls_revoked_client, test_tls_cert_file_cn,
					test_tls_expiry));
	suite_add_tcase(s, tls);
	return s;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	return tu_run(proto_suite(), NULL);
}
