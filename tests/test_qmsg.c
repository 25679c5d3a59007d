/*
 * test_qmsg - the query protocol codec: round trips and rejection of bad
 * requests and replies.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "common/tc_error.h"
#include "proto/qimport.h"
#include "proto/qmsg.h"
#include "tests/testutil.h"

static struct proto_buf encode_request(const struct qmsg_request *r)
{
	struct proto_buf b;

	proto_buf_init(&b);
	TU_OK(qmsg_request_encode(r, &b));
	return b;
}

START_TEST(request_round_trip)
{
	struct qmsg_request in = {
		.op = QOP_SELECT, .query = "sched_switch where prev_pid == 0",
		.limit = 100, .after_ts = -5, .after_id = 42, .from_ts = 1, .to_ts = 2,
		.host = "web*", .sync_ms = 9000,
	}, out;
	struct proto_buf b = encode_request(&in);

	TU_OK(qmsg_request_decode(b.data, b.len, &out));
	ck_assert_int_eq(out.op, QOP_SELECT);
	ck_assert_uint_eq(out.sync_ms, 9000);
	ck_assert_str_eq(out.query, in.query);
	ck_assert_str_eq(out.host, "web*");
	ck_assert_uint_eq(out.limit, 100);
	ck_assert_int_eq(out.after_ts, -5);
	ck_assert_uint_eq(out.after_id, 42);
	ck_assert_int_eq(out.from_ts, 1);
	ck_assert_int_eq(out.to_ts, 2);
	qmsg_request_free(&out);
	proto_buf_free(&b);
}
END_TEST

START_TEST(request_stats_needs_no_query)
{
	struct qmsg_request in = { .op = QOP_STATS }, out;
	struct proto_buf b = encode_request(&in);

	TU_OK(qmsg_request_decode(b.data, b.len, &out));
	ck_assert_ptr_null(out.query);
	ck_assert_uint_eq(out.sync_ms, 0);	/* not sent: no wait */
	qmsg_request_free(&out);
	proto_buf_free(&b);
}
END_TEST

START_TEST(request_every_prefix_rejected)
{
	struct qmsg_request in = { .op = QOP_COUNT, .query = "sched_switch" }, out;
	struct proto_buf b = encode_request(&in);

	for (size_t n = 0; n < b.len; n++)
		TU_ERR(qmsg_request_decode(b.data, n, &out), TC_ERR_MSG_MALFORMED);
	proto_buf_free(&b);
}
END_TEST

/* Pack a map from (key, packer-callback) pairs. */
static struct proto_buf pack_request(const char *bad_key, int variant)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct proto_buf b;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	msgpack_pack_str_with_body(&pk, "v", 1);
	if (!strcmp(bad_key, "v") && variant == 0)
		msgpack_pack_str_with_body(&pk, "1", 1);
	else if (!strcmp(bad_key, "v"))
		msgpack_pack_uint32(&pk, 99);
	else
		msgpack_pack_uint32(&pk, QMSG_VERSION);
	msgpack_pack_str_with_body(&pk, "op", 2);
	if (!strcmp(bad_key, "op"))
		msgpack_pack_uint32(&pk, variant ? 0 : 17);
	else
		msgpack_pack_uint32(&pk, QOP_SELECT);
	msgpack_pack_str_with_body(&pk, bad_key[0] == 'q' ? "q" : "limit",
				   bad_key[0] == 'q' ? 1 : 5);
	if (!strcmp(bad_key, "q"))
		msgpack_pack_str_with_body(&pk, "a\0b", 3);
	else if (!strcmp(bad_key, "limit"))
		msgpack_pack_uint32(&pk, QMSG_MAX_ROWS + 1);
	else
		msgpack_pack_uint32(&pk, 1);
	proto_buf_init(&b);
	TU_OK(proto_buf_append(&b, sb.data, sb.size));
	msgpack_sbuffer_destroy(&sb);
	return b;
}

/* op 16, sql (traceq --sql): its text is the query; 6..15 are not ops (yet). */
START_TEST(request_sql)
{
	struct qmsg_request in = { .op = QOP_SQL, .query = "SELECT count(*) FROM sched_switch",
				   .limit = 10 }, out;
	struct proto_buf b = encode_request(&in);

	TU_OK(qmsg_request_decode(b.data, b.len, &out));
	ck_assert_int_eq(out.op, QOP_SQL);
	ck_assert_int_eq(out.op, 16);
	ck_assert_str_eq(out.query, in.query);
	ck_assert_uint_eq(out.limit, 10);
	qmsg_request_free(&out);
	proto_buf_free(&b);
	in.query = NULL;
	b = encode_request(&in);
	TU_ERR(qmsg_request_decode(b.data, b.len, &out), TC_ERR_MSG_MISSING);
	proto_buf_free(&b);
	in.op = 15;
	in.query = "x";
	b = encode_request(&in);
	TU_ERR(qmsg_request_decode(b.data, b.len, &out), TC_ERR_MSG_MALFORMED);
	proto_buf_free(&b);
}
END_TEST

START_TEST(request_bad_values)
{
	static const struct { const char *key; int variant; int err; } cases[] = {
		{ "v", 0, TC_ERR_MSG_MALFORMED },	/* version as a string */
		{ "v", 1, TC_ERR_PROTO_VERSION },	/* unknown version */
		{ "op", 0, TC_ERR_MSG_MALFORMED },	/* op out of range */
		{ "op", 1, TC_ERR_MSG_MALFORMED },	/* op 0 */
		{ "q", 0, TC_ERR_MSG_MALFORMED },	/* NUL inside the query */
		{ "limit", 0, TC_ERR_MSG_MALFORMED },	/* too many rows asked */
		{ "x", 0, TC_ERR_MSG_MISSING },		/* select without a query */
	};
	struct qmsg_request out;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct proto_buf b = pack_request(cases[i].key, cases[i].variant);

		ck_assert_msg(qmsg_request_decode(b.data, b.len, &out) == cases[i].err,
			      "case %zu (%s)", i, cases[i].key);
		proto_buf_free(&b);
	}
}
END_TEST

static struct proto_buf sample_reply(uint32_t nrows)
{
	static const char *const cols[] = { "a", "b", "c" };
	struct qmsg_writer *w;
	struct proto_buf b;

	proto_buf_init(&b);
	TU_OK(qmsg_reply_begin(&w, "sched:sched_switch", 3, cols));
	for (uint32_t r = 0; r < nrows; r++) {
		qmsg_put_int(w, -(int64_t)r);
		qmsg_put_str(w, "swapper/0", 9);
		if (r % 2)
			qmsg_put_nil(w);
		else
			qmsg_put_bin(w, "\x00\x01", 2);
	}
	ck_assert_uint_eq(qmsg_reply_rows(w), nrows);
	qmsg_reply_backlog(w, 12, 1 << 20);
	TU_OK(qmsg_reply_end(w, true, 77, 88, 5, &b));
	return b;
}

START_TEST(reply_round_trip)
{
	struct proto_buf b = sample_reply(4);
	struct qmsg_reply r;

	TU_OK(qmsg_reply_decode(b.data, b.len, &r));
	ck_assert(r.ok);
	ck_assert_str_eq(r.event, "sched:sched_switch");
	ck_assert_uint_eq(r.ncols, 3);
	ck_assert_str_eq(r.cols[2], "c");
	ck_assert_uint_eq(r.nrows, 4);
	ck_assert(r.more);
	ck_assert_int_eq(r.last_ts, 77);
	ck_assert_uint_eq(r.last_id, 88);
	ck_assert_uint_eq(r.count, 5);
	ck_assert_uint_eq(r.unstored, 12);
	ck_assert_uint_eq(r.journal_bytes, 1 << 20);
	ck_assert_int_eq(r.vals[3 * 3].kind, QV_INT);
	ck_assert_int_eq(r.vals[3 * 3].i, -3);
	ck_assert_int_eq(r.vals[0].kind, QV_UINT);	/* 0 packs as positive */
	ck_assert_str_eq(r.vals[1].s.p, "swapper/0");
	ck_assert_int_eq(r.vals[2].kind, QV_BIN);
	ck_assert_uint_eq(r.vals[2].s.len, 2);
	ck_assert_int_eq(r.vals[5].kind, QV_NIL);
	qmsg_reply_free(&r);
	proto_buf_free(&b);
}
END_TEST

/* A reply, and an error reply, say since when storing is held up, and why. */
START_TEST(stall_round_trip)
{
	struct proto_buf b = sample_reply(1);
	struct qmsg_writer *w;
	struct qmsg_reply r;

	TU_OK(qmsg_reply_decode(b.data, b.len, &r));	/* not held up: 0, no why */
	ck_assert_int_eq(r.stalled_since, 0);
	ck_assert_ptr_null(r.stalled_why);
	qmsg_reply_free(&r);
	proto_buf_free(&b);

	proto_buf_init(&b);
	TU_OK(qmsg_reply_begin(&w, NULL, 0, NULL));
	qmsg_reply_backlog(w, 3, 4096);
	qmsg_reply_stall(w, 1700000000123456789LL, "ClickHouse at h:1: refused");
	TU_OK(qmsg_reply_end(w, false, 0, 0, 0, &b));
	TU_OK(qmsg_reply_decode(b.data, b.len, &r));
	ck_assert(r.ok);
	ck_assert_int_eq(r.stalled_since, 1700000000123456789LL);
	ck_assert_str_eq(r.stalled_why, "ClickHouse at h:1: refused");
	qmsg_reply_free(&r);
	proto_buf_free(&b);

	proto_buf_init(&b);
	TU_OK(qmsg_reply_error_stall(TC_ERR_DB, "down", 7, 8192, 42, "why", &b));
	TU_OK(qmsg_reply_decode(b.data, b.len, &r));
	ck_assert(!r.ok);
	ck_assert_int_eq(r.code, TC_ERR_DB);
	ck_assert_str_eq(r.error, "down");
	ck_assert_uint_eq(r.unstored, 7);
	ck_assert_uint_eq(r.journal_bytes, 8192);
	ck_assert_int_eq(r.stalled_since, 42);
	ck_assert_str_eq(r.stalled_why, "why");
	qmsg_reply_free(&r);
	proto_buf_free(&b);
}
END_TEST

/* op 20 carries its spec; replies carry a histogram's Entries and Dropped. */
START_TEST(hist_round_trip)
{
	struct qmsg_request in = { .op = QOP_HIST, .query = "sched_switch",
				   .hist = "keys=next_comm" }, out;
	struct proto_buf b = encode_request(&in);
	static const char *const cols[] = { "next_comm", "hitcount" };
	struct qmsg_writer *w;
	struct qmsg_reply r;

	TU_OK(qmsg_request_decode(b.data, b.len, &out));
	ck_assert_int_eq(out.op, QOP_HIST);
	ck_assert_str_eq(out.hist, "keys=next_comm");
	qmsg_request_free(&out);
	proto_buf_free(&b);
	in.hist = NULL;		/* a hist request without its spec */
	b = encode_request(&in);
	TU_ERR(qmsg_request_decode(b.data, b.len, &out), TC_ERR_MSG_MISSING);
	proto_buf_free(&b);

	proto_buf_init(&b);
	TU_OK(qmsg_reply_begin(&w, "sched:sched_switch", 2, cols));
	qmsg_put_str(w, "sleep", 5);
	qmsg_put_uint(w, 3);
	qmsg_reply_hist(w, 128, 77);
	TU_OK(qmsg_reply_end(w, true, 9, 0, 300, &b));
	TU_OK(qmsg_reply_decode(b.data, b.len, &r));
	ck_assert_uint_eq(r.count, 300);
	ck_assert_uint_eq(r.entries, 128);
	ck_assert_uint_eq(r.dropped, 77);
	ck_assert_uint_eq(r.nrows, 1);
	qmsg_reply_free(&r);
	proto_buf_free(&b);
}
END_TEST

START_TEST(reply_error_round_trip)
{
	struct qmsg_reply r;
	struct proto_buf b;

	proto_buf_init(&b);
	TU_OK(qmsg_reply_error(TC_ERR_UNKNOWN_FIELD, "unknown field 'x'", 19, 1, &b));
	TU_OK(qmsg_reply_decode(b.data, b.len, &r));
	ck_assert(!r.ok);
	TU_ERR(r.code, TC_ERR_UNKNOWN_FIELD);
	ck_assert_str_eq(r.error, "unknown field 'x'");
	ck_assert_int_eq(r.pos, 19);
	ck_assert_int_eq(r.len, 1);
	qmsg_reply_free(&r);
	proto_buf_free(&b);
}
END_TEST

START_TEST(reply_every_prefix_rejected)
{
	struct proto_buf b = sample_reply(3);
	struct qmsg_reply r;

	for (size_t n = 0; n < b.len; n++)
		TU_ERR(qmsg_reply_decode(b.data, n, &r), TC_ERR_MSG_MALFORMED);
	proto_buf_free(&b);
}
END_TEST

/* A rows array whose length is no multiple of the column count. */
START_TEST(reply_ragged_rows_rejected)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct qmsg_reply r;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	msgpack_pack_str_with_body(&pk, "ok", 2);
	msgpack_pack_true(&pk);
	msgpack_pack_str_with_body(&pk, "cols", 4);
	msgpack_pack_array(&pk, 2);
	msgpack_pack_str_with_body(&pk, "a", 1);
	msgpack_pack_str_with_body(&pk, "b", 1);
	msgpack_pack_str_with_body(&pk, "rows", 4);
	msgpack_pack_array(&pk, 3);
	for (int i = 0; i < 3; i++)
		msgpack_pack_int(&pk, i);
	TU_ERR(qmsg_reply_decode(sb.data, sb.size, &r), TC_ERR_MSG_MALFORMED);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* A failure without its message, and an answer without "ok". */
START_TEST(reply_missing_fields)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct qmsg_reply r;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_str_with_body(&pk, "ok", 2);
	msgpack_pack_false(&pk);
	TU_ERR(qmsg_reply_decode(sb.data, sb.size, &r), TC_ERR_MSG_MISSING);
	msgpack_sbuffer_clear(&sb);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_str_with_body(&pk, "count", 5);
	msgpack_pack_uint64(&pk, 3);
	TU_ERR(qmsg_reply_decode(sb.data, sb.size, &r), TC_ERR_MSG_MISSING);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* A request over QMSG_MAX_REQUEST is refused before it is parsed; at the limit it is read. */
START_TEST(request_over_the_limit_rejected)
{
	char *q = malloc(QMSG_MAX_REQUEST);
	struct qmsg_request in = { .op = QOP_COUNT, .query = q }, out;
	struct proto_buf b;
	size_t over;

	ck_assert_ptr_nonnull(q);
	memset(q, 'x', QMSG_MAX_REQUEST - 1);
	q[QMSG_MAX_REQUEST - 1] = 0;
	b = encode_request(&in);
	over = b.len - QMSG_MAX_REQUEST;	/* what the rest of the map takes */
	TU_ERR(qmsg_request_decode(b.data, b.len, &out), TC_ERR_TOO_LONG);
	proto_buf_free(&b);
	q[QMSG_MAX_REQUEST - 1 - over] = 0;
	b = encode_request(&in);
	ck_assert_uint_eq(b.len, QMSG_MAX_REQUEST);
	TU_OK(qmsg_request_decode(b.data, b.len, &out));
	qmsg_request_free(&out);
	proto_buf_free(&b);
	free(q);
}
END_TEST

/* The selecting keys: after_type, end-relative flags, reverse, host and CPU lists. */
START_TEST(request_select_keys_round_trip)
{
	char *hosts[] = { "a*", "b" };
	uint32_t cpus[] = { 0, 2, 3 };
	struct qmsg_request in = {
		.op = QOP_SELECT, .query = "sched:*", .after_type = 7, .from_ts = -1000,
		.from_end = true, .to_end = true, .reverse = true, .hosts = hosts, .nhosts = 2,
		.cpus = cpus, .ncpus = 3,
	}, out;
	struct proto_buf b = encode_request(&in);

	TU_OK(qmsg_request_decode(b.data, b.len, &out));
	ck_assert_int_eq(out.after_type, 7);
	ck_assert_int_eq(out.from_ts, -1000);
	ck_assert(out.from_end && out.to_end && out.reverse);
	ck_assert_uint_eq(out.nhosts, 2);
	ck_assert_str_eq(out.hosts[1], "b");
	ck_assert_uint_eq(out.ncpus, 3);
	ck_assert_uint_eq(out.cpus[2], 3);
	qmsg_request_free(&out);
	for (size_t n = 0; n < b.len; n++)
		ck_assert_int_lt(qmsg_request_decode(b.data, n, &out), 0);
	proto_buf_free(&b);
	/* discovery ops: hosts needs no query, fields does */
	in = (struct qmsg_request){ .op = QOP_HOSTS };
	b = encode_request(&in);
	TU_OK(qmsg_request_decode(b.data, b.len, &out));
	ck_assert_int_eq(out.op, QOP_HOSTS);
	qmsg_request_free(&out);
	proto_buf_free(&b);
	in.op = QOP_FIELDS;
	b = encode_request(&in);
	TU_ERR(qmsg_request_decode(b.data, b.len, &out), TC_ERR_MSG_MISSING);
	proto_buf_free(&b);
}
END_TEST

/* The omit list: read back in order; one over QMSG_MAX_OMIT names is refused. */
START_TEST(request_omit)
{
	char *names[QMSG_MAX_OMIT + 1];
	struct qmsg_request in = { .op = QOP_SELECT, .query = "sys_exit", .omit = names }, out;
	struct proto_buf b;

	for (size_t i = 0; i <= QMSG_MAX_OMIT; i++)
		names[i] = i % 2 ? "common_flags" : "common_type";
	in.nomit = 2;
	b = encode_request(&in);
	TU_OK(qmsg_request_decode(b.data, b.len, &out));
	ck_assert_uint_eq(out.nomit, 2);
	ck_assert_str_eq(out.omit[0], "common_type");
	ck_assert_str_eq(out.omit[1], "common_flags");
	qmsg_request_free(&out);
	ck_assert_ptr_null(out.omit);
	proto_buf_free(&b);
	in.nomit = QMSG_MAX_OMIT + 1;
	b = encode_request(&in);
	TU_ERR(qmsg_request_decode(b.data, b.len, &out), TC_ERR_MSG_MALFORMED);
	proto_buf_free(&b);
}
END_TEST

/*
 * tail_writers' cursors (issue 35): a request's and a tail reply's round
 * trip; more than QMSG_MAX_CURSORS, or one not a number, is malformed.
 */
START_TEST(cursors_round_trip)
{
	static const char *const c0[] = { "x" };
	const char *const *cols[] = { c0 };
	const char *events[] = { "s:a" };
	uint32_t ncols[] = { 1 };
	struct qmsg_request in = { .op = QOP_TAIL_WRITERS, .query = "s:a" }, out;
	struct qmsg_writer *w;
	struct qmsg_reply r;
	struct proto_buf b;

	for (uint32_t i = 0; i < QMSG_MAX_CURSORS; i++)
		in.cursors[i] = (uint64_t)i << 40 | 7;
	in.ncursors = QMSG_MAX_CURSORS;
	b = encode_request(&in);
	TU_OK(qmsg_request_decode(b.data, b.len, &out));
	ck_assert_uint_eq(out.ncursors, QMSG_MAX_CURSORS);
	ck_assert_uint_eq(out.cursors[63], (uint64_t)63 << 40 | 7);
	qmsg_request_free(&out);
	proto_buf_free(&b);
	in.ncursors = 0;	/* a first page: none */
	b = encode_request(&in);
	TU_OK(qmsg_request_decode(b.data, b.len, &out));
	ck_assert_uint_eq(out.ncursors, 0);
	qmsg_request_free(&out);
	proto_buf_free(&b);

	proto_buf_init(&b);
	TU_OK(qmsg_reply_begin_tail(&w, 1, events, ncols, cols));
	qmsg_reply_tail(w, 0, false);
	qmsg_reply_cursors(w, in.cursors, QMSG_MAX_CURSORS + 5);	/* capped */
	TU_OK(qmsg_reply_end(w, false, 0, 0, 0, &b));
	TU_OK(qmsg_reply_decode(b.data, b.len, &r));
	ck_assert_uint_eq(r.ncursors, QMSG_MAX_CURSORS);
	ck_assert_uint_eq(r.cursors[1], (uint64_t)1 << 40 | 7);
	qmsg_reply_free(&r);
	proto_buf_free(&b);
}
END_TEST

/* A request's "cursors" of 65 numbers, or of a string: malformed. */
START_TEST(cursors_bad_rejected)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct qmsg_request out;

	for (int bad = 0; bad < 2; bad++) {
		msgpack_sbuffer_init(&sb);
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		msgpack_pack_map(&pk, 4);
		msgpack_pack_str_with_body(&pk, "v", 1);
		msgpack_pack_uint32(&pk, QMSG_VERSION);
		msgpack_pack_str_with_body(&pk, "op", 2);
		msgpack_pack_uint32(&pk, QOP_TAIL_WRITERS);
		msgpack_pack_str_with_body(&pk, "q", 1);
		msgpack_pack_str_with_body(&pk, "s:a", 3);
		msgpack_pack_str_with_body(&pk, "cursors", 7);
		msgpack_pack_array(&pk, bad ? 1 : QMSG_MAX_CURSORS + 1);
		for (int i = 0; i < (bad ? 1 : QMSG_MAX_CURSORS + 1); i++)
			if (bad)
				msgpack_pack_str_with_body(&pk, "1", 1);
			else
				msgpack_pack_uint64(&pk, 1);
		TU_ERR(qmsg_request_decode(sb.data, sb.size, &out), TC_ERR_MSG_MALFORMED);
		msgpack_sbuffer_destroy(&sb);
	}
}
END_TEST

/* Rows of two types: each row its type's width, read back by qmsg_reply_row(). */
static struct proto_buf typed_reply(void)
{
	static const char *const c0[] = { "x" }, *const c1[] = { "y", "z" };
	const char *const *cols[] = { c0, c1 };
	const char *events[] = { "s:a", "s:b" };
	uint32_t ncols[] = { 1, 2 };
	struct qmsg_writer *w, *buf;
	struct proto_buf b;

	proto_buf_init(&b);
	TU_OK(qmsg_reply_begin_types(&w, 2, events, ncols, cols));
	qmsg_put_type(w, 1);
	qmsg_put_int(w, -1);
	qmsg_put_str(w, "zz", 2);
	qmsg_put_type(w, 0);
	TU_OK(qmsg_reply_begin(&buf, NULL, 1, c0));	/* a row buffer */
	qmsg_put_uint(buf, 9);
	qmsg_put_raw(w, qmsg_body(buf), qmsg_body_len(buf), 1);
	qmsg_writer_free(buf);
	ck_assert_uint_eq(qmsg_reply_rows(w), 2);
	qmsg_reply_last_type(w, 42);
	qmsg_reply_type_format(w, 1, "name: b\nformat:\n");	/* type 0 has none */
	qmsg_reply_type_format(w, 2, "out of range: ignored");
	TU_OK(qmsg_reply_end(w, true, 5, 6, 0, &b));
	return b;
}

START_TEST(reply_types_round_trip)
{
	struct proto_buf b = typed_reply();
	const struct qmsg_value *row;
	struct qmsg_reply r, view;

	TU_OK(qmsg_reply_decode(b.data, b.len, &r));
	ck_assert_uint_eq(r.ntypes, 2);
	ck_assert_uint_eq(r.nrows, 2);
	ck_assert_int_eq(r.last_type, 42);
	row = qmsg_reply_row(&r, 0, &view);
	ck_assert_str_eq(view.event, "s:b");
	ck_assert_uint_eq(view.ncols, 2);
	ck_assert_str_eq(view.cols[1], "z");
	ck_assert_int_eq(row[0].i, -1);
	ck_assert_str_eq(row[1].s.p, "zz");
	ck_assert_str_eq(view.format, "name: b\nformat:\n");
	row = qmsg_reply_row(&r, 1, &view);
	ck_assert_str_eq(view.event, "s:a");
	ck_assert_ptr_null(view.format);
	ck_assert_uint_eq(row[0].u, 9);
	qmsg_reply_free(&r);
	for (size_t n = 0; n < b.len; n++)
		TU_ERR(qmsg_reply_decode(b.data, n, &r), TC_ERR_MSG_MALFORMED);
	proto_buf_free(&b);
}
END_TEST

/* A row naming a type that is not there, or cut short. */
START_TEST(reply_types_bad_rows_rejected)
{
	for (int bad = 0; bad < 2; bad++) {
		msgpack_sbuffer sb;
		msgpack_packer pk;
		struct qmsg_reply r;

		msgpack_sbuffer_init(&sb);
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		msgpack_pack_map(&pk, 4);
		msgpack_pack_str_with_body(&pk, "ok", 2);
		msgpack_pack_true(&pk);
		msgpack_pack_str_with_body(&pk, "cols", 4);
		msgpack_pack_array(&pk, 0);
		msgpack_pack_str_with_body(&pk, "types", 5);
		msgpack_pack_array(&pk, 1);
		msgpack_pack_array(&pk, 3);
		msgpack_pack_str_with_body(&pk, "s:a", 3);
		msgpack_pack_str_with_body(&pk, "x", 1);
		msgpack_pack_str_with_body(&pk, "y", 1);
		msgpack_pack_str_with_body(&pk, "rows", 4);
		msgpack_pack_array(&pk, 2);
		msgpack_pack_uint32(&pk, bad ? 0 : 1);	/* type 1 does not exist */
		msgpack_pack_int(&pk, 5);		/* type 0 has two columns */
		TU_ERR(qmsg_reply_decode(sb.data, sb.size, &r), TC_ERR_MSG_MALFORMED);
		msgpack_sbuffer_destroy(&sb);
	}
}
END_TEST

/*
 * QMSG_OPS: the numbers are the wire's; names for the log; an import op
 * or a free number is not a query request.
 */
START_TEST(op_table)
{
	static const struct { uint32_t op, num; const char *name; } ops[] = {
		{ QOP_SELECT, 1, "select" }, { QOP_COUNT, 2, "count" },
		{ QOP_STATS, 3, "stats" }, { QOP_DROPS, 4, "drops" },
		{ QOP_SYMBOLS, 5, "symbols" }, { QOP_HOSTS, 6, "hosts" },
		{ QOP_EVENTS, 7, "events" }, { QOP_FIELDS, 8, "fields" },
		{ QOP_LOSSES, 9, "losses" }, { QOP_HEADERS, 10, "headers" },
		{ QOP_SQL, 16, "sql" }, { QOP_HIST, 20, "hist" },
		{ QOP_IMPORT_BEGIN, 24, "import_begin" }, { QOP_IMPORT_MSG, 25, "import_msg" },
		{ QOP_IMPORT_PAGES, 26, "import_pages" }, { QOP_IMPORT_END, 27, "import_end" },
		{ QOP_PRINTK, 28, "printk" }, { QOP_TGIDS, 29, "tgids" },
		{ QOP_TAIL, 30, "tail" }, { QOP_SNAPSHOT, 31, "snapshot" },
		{ QOP_SNAPSHOTS, 32, "snapshots" }, { QOP_TAIL_WRITERS, 33, "tail_writers" },
	};
	struct qmsg_request in = { .query = "x", .hist = "keys=pid" }, out;
	struct proto_buf b;

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		ck_assert_uint_eq(ops[i].op, ops[i].num);
		ck_assert_str_eq(qmsg_op_name(ops[i].op), ops[i].name);
		ck_assert_int_ne(qmsg_op_class(ops[i].op), QOPC_UNKNOWN);
	}
	ck_assert_str_eq(qmsg_op_name(0), "unknown");
	ck_assert_str_eq(qmsg_op_name(34), "unknown");
	ck_assert_int_eq(qmsg_op_class(11), QOPC_UNKNOWN);
	ck_assert_int_eq(qmsg_op_class(QOP_IMPORT_END), QOPC_IMPORT);
	in.op = QOP_IMPORT_BEGIN;
	b = encode_request(&in);
	ck_assert_int_eq(qmsg_request_decode(b.data, b.len, &out), TC_ERR_MSG_MALFORMED);
	proto_buf_free(&b);
}
END_TEST

/*
 * An import BEGIN's sym_modules: round trip, absent as before (an older
 * traceq's: false), and encoded only when true (an older collector
 * ignores the key either way).
 */
START_TEST(qimport_sym_modules)
{
	struct qimport_request in = { .op = QOP_IMPORT_BEGIN, .file = "f.dat",
				      .digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				      .msg = (uint8_t *)"x", .msg_len = 1 }, out;
	struct proto_buf b;

	for (int with = 0; with < 2; with++) {
		in.sym_modules = with;
		proto_buf_init(&b);
		TU_OK(qimport_request_encode(&in, &b));
		ck_assert_int_eq(memmem(b.data, b.len, "sym_modules", 11) != NULL, with);
		TU_OK(qimport_request_decode(b.data, b.len, &out));
		ck_assert_int_eq(out.sym_modules, with);
		ck_assert_str_eq(out.file, "f.dat");
		qimport_request_free(&out);
		proto_buf_free(&b);
	}
}
END_TEST

static Suite *qmsg_suite(void)
{
	Suite *s = suite_create("qmsg");
	TCase *tc = tcase_create("codec");

	tu_add_tests(tc, TU_TESTS(request_round_trip, request_stats_needs_no_query,
					request_every_prefix_rejected, request_bad_values,
					reply_round_trip, reply_error_round_trip,
					reply_every_prefix_rejected, reply_ragged_rows_rejected,
					reply_missing_fields, request_over_the_limit_rejected,
					request_sql, request_select_keys_round_trip, request_omit,
					reply_types_round_trip, reply_types_bad_rows_rejected,
					hist_round_trip, stall_round_trip, op_table,
					cursors_round_trip, cursors_bad_rejected,
					qimport_sym_modules));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(qmsg_suite())
