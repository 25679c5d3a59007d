/*
 * test_store.c - server/store/ on a temporary SQLite file, filled from the
 * real pages in tests/data, checked against a C-side scan of the same
 * decoded events.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/filter.h"
#include "common/hist.h"
#include "common/tc_error.h"
#include "server/ingest/decode.h"
#include "server/store/sqlite_hist.h"	/* white-box: sq_hist_grouped() */
#include "server/store/sqlite_read.h"	/* sq_count_where(): WHERE the filter cannot write */
#include "server/store/sqlite_util.h"	/* sq_int1() */
#include "server/store/sqlite_window.h"	/* sq_win_cap */
#include "server/store/store.h"
#include "tests/data/capture_load.h"
#include "tests/store_events.h"
#include "tests/testutil.h"

/* store_type()'s origin in these tests: host 1, no caps */
static const struct store_origin test_origin = { .host_id = 1, .boot_id = "b" };

#define TC_STR_(x) #x
#define TC_STR(x) TC_STR_(x)

#define CLOCK_OFFSET 1000000000000000000ll	/* wall = trace + this */
#define MAX_EVENTS 16384

static struct capture cap;
static struct decoder *dec;
static const struct decode_type *types[CAPTURE_NFORMATS];	/* switch, wakeup, print */
static struct store_writer *sw;	/* the ingest worker's */
static struct store_reader *sr;	/* a query worker's: sees what sw committed */

/* The reader as the SQLite backend's handle, for its white-box calls. */
static struct sq_store *sq(void)
{
	return sq_reader_of(sr);
}
static uint64_t host;
static char dir[64], path[80];
static bool ts_spread;	/* rows' ts are not trace_ts + CLOCK_OFFSET */

/* What the C-side scan saw while ingesting. */
static struct {
	unsigned n[CAPTURE_NFORMATS];
	int64_t prev_pid[MAX_EVENTS];	/* per sched_switch, in ingest order */
	uint64_t trace_ts_sum;		/* over sched_switch */
} seen;

#define ck_ok(expr) do { \
	int ret_ = (expr); \
	ck_assert_msg(ret_ >= 0, "%s: %s (writer: %s; reader: %s)", #expr, tc_strerror(ret_), \
		      store_errmsg(sw), store_errmsg(sr)); \
} while (0)

static int type_index(const struct decode_type *t)
{
	for (int i = 0; i < CAPTURE_NFORMATS; i++)
		if (types[i] == t)
			return i;
	return -1;
}

static int64_t field_i(const struct decode_event *ev, const char *name)
{
	struct store_value v;

	for (unsigned i = 0; i < ev->type->nfields; i++)
		if (!strcmp(ev->type->fields[i].name, name)) {
			TU_OK(decode_field_value(ev, i, &v));
			return v.i;
		}
	ck_abort_msg("no field %s", name);
	return 0;
}

static int insert_cb(void *ctx, const struct decode_event *ev)
{
	int ti = type_index(ev->type);

	(void)ctx;
	ck_assert_int_ge(ti, 0);
	ck_ok(ev_insert(sw, ev->type->user, host, ev, (int64_t)ev->ts + CLOCK_OFFSET));
	if (ti == 0) {
		ck_assert_uint_lt(seen.n[0], MAX_EVENTS);
		seen.prev_pid[seen.n[0]] = field_i(ev, "prev_pid");
		seen.trace_ts_sum += ev->ts;
	}
	seen.n[ti]++;
	return 0;
}

static void ingest(void)
{
	for (int i = 0; i < CAPTURE_NFORMATS; i++) {
		struct store_type *t;

		ck_ok(ev_type(sw, types[i], cap.formats[i].text, &test_origin, &t));
		((struct decode_type *)types[i])->user = t;
	}
	ck_ok(store_begin(sw));
	for (unsigned cpu = 0; cpu < cap.ncpus; cpu++)
		for (size_t off = 0; off < cap.raw_len[cpu]; off += cap.page_size) {
			struct decode_page_stats ps;

			ck_ok(decoder_page(dec, cpu, cap.raw[cpu] + off, cap.page_size, insert_cb,
					   NULL, &ps));
			ck_ok(store_cpu_received(sw, host, cpu, 1, ps.events, cap.page_size));
		}
	ck_ok(store_commit(sw));
}

static void setup(void)
{
	memset(&seen, 0, sizeof(seen));
	ts_spread = false;
	TU_OK(capture_load(&cap));
	TU_OK(capture_decoder(&cap, &dec, types));
	tu_tmpdir_make(dir, sizeof(dir), "store");
	snprintf(path, sizeof(path), "%s/store.db", dir);	/* SQLite creates it */
	TU_OK(store_writer_open(path, &sw));
	cap.hello.clock.trace_ns = 5;
	cap.hello.clock.realtime_ns = CLOCK_OFFSET + 5;
	ck_ok(store_host(sw, &cap.hello, "CN=capture-host", &host));
	ingest();
	TU_OK(store_reader_open(path, &sr));
}

/* Close the writer and the reader (the file can be changed under them). */
static void close_both(void)
{
	store_reader_close(sr);
	sr = NULL;
	store_writer_close(sw);
	sw = NULL;
}

/* Open the writer (which migrates the file), then the reader. */
static void open_both(void)
{
	TU_OK(store_writer_open(path, &sw));
	TU_OK(store_reader_open(path, &sr));
}

static void teardown(void)
{
	close_both();
	decoder_free(dec);
	dec = NULL;
	capture_free(&cap);
	tu_tmpdir_remove(dir);	/* the database, its -wal and -shm */
}

static struct store_schema *schema(struct store_reader *s, const char *system, const char *name)
{
	struct store_schema *sc = NULL;
	int ret = store_schema_get(s, system, name, &sc);

	ck_assert_msg(ret == 0, "%s: %s", name, store_errmsg(s));
	return sc;
}

static int col(const struct store_schema *sc, const char *name)
{
	for (size_t i = 0; i < sc->ncols; i++)
		if (!strcmp(sc->cols[i].name, name))
			return (int)i;
	ck_abort_msg("no column %s", name);
	return -1;
}

/* A store_query with a filter, bound as the query endpoint binds one. */
struct bound_query {
	struct store_query q;
	struct filter *f;
	struct filter_field *fields;
	size_t *col;
};

/*
 * @bq as the query of @sc's rows that match filter @text (NULL: every
 * row), every column a field of the filter; free with bound_query_free().
 */
static struct store_query *bound_query(struct bound_query *bq, const struct store_schema *sc,
				       const char *text)
{
	struct filter_error err = { 0 };

	memset(bq, 0, sizeof(*bq));
	bq->q.schema = sc;
	if (!text)
		return &bq->q;
	bq->fields = calloc(sc->ncols + 1, sizeof(*bq->fields));
	bq->col = calloc(sc->ncols + 1, sizeof(*bq->col));
	ck_assert(bq->fields && bq->col);
	for (size_t i = 0; i < sc->ncols; i++) {
		enum store_kind k = sc->cols[i].kind;

		bq->fields[i] = (struct filter_field){ sc->cols[i].name,
			k == STORE_SIGNED ? FILTER_SIGNED :
			k == STORE_UNSIGNED ? FILTER_UNSIGNED : FILTER_STRING, 8 };
		bq->col[i] = i;
	}
	ck_assert_msg(filter_parse(text, &bq->f, &err) == 0, "%s: %s", text, err.msg);
	ck_assert_msg(filter_bind(bq->f, &(struct filter_schema){ bq->fields, sc->ncols },
				  &err) == 0, "%s: %s", text, err.msg);
	bq->q.filter = bq->f;
	bq->q.field_col = bq->col;
	bq->q.nfields = sc->ncols;
	return &bq->q;
}

static void bound_query_free(struct bound_query *bq)
{
	filter_free(bq->f);
	free(bq->fields);
	free(bq->col);
}

struct rows {
	const struct store_schema *sc;
	size_t n;
	uint64_t rowid[MAX_EVENTS];
	int64_t ts[MAX_EVENTS];
	int64_t want_pid;	/* prev_pid every row must have, or -1 */
	uint64_t trace_ts_sum;
};

static int rows_cb(void *ctx, const struct store_row *r)
{
	struct rows *rs = ctx;

	ck_assert_uint_lt(rs->n, MAX_EVENTS);
	ck_assert_str_eq(r->host, "capture-host");
	if (!ts_spread)
		ck_assert_int_eq(r->ts, (int64_t)r->trace_ts + CLOCK_OFFSET);
	ck_assert_uint_eq(r->nvals, rs->sc->ncols);
	if (rs->want_pid >= 0)
		ck_assert_int_eq(r->vals[col(rs->sc, "prev_pid")].i, rs->want_pid);
	rs->rowid[rs->n] = r->rowid;
	rs->ts[rs->n] = r->ts;
	rs->trace_ts_sum += r->trace_ts;
	rs->n++;
	return 0;
}

START_TEST(test_where_matches_scan)
{
	struct store_schema *sc = schema(sr, "sched", "sched_switch");
	struct rows *rs = calloc(1, sizeof(*rs));
	int64_t pid = seen.prev_pid[seen.n[0] / 2];
	struct bound_query bq;
	unsigned want = 0;
	uint64_t count = 0;
	char text[64];

	for (unsigned i = 0; i < seen.n[0]; i++)
		want += seen.prev_pid[i] == pid;
	rs->sc = sc;
	rs->want_pid = pid;
	snprintf(text, sizeof(text), "prev_pid == %lld", (long long)pid);
	ck_assert_int_eq(store_select(sr, bound_query(&bq, sc, text), rows_cb, rs), (int)want);
	ck_assert_uint_eq(rs->n, want);
	for (size_t i = 1; i < rs->n; i++)
		ck_assert_int_ge(rs->ts[i], rs->ts[i - 1]);
	ck_ok(store_count(sr, &bq.q, &count));
	ck_assert_uint_eq(count, want);
	bound_query_free(&bq);
	ck_ok(store_count(sr, &(struct store_query){ .schema = sc }, &count));
	ck_assert_uint_eq(count, seen.n[0]);
	ck_ok(store_count(sr, bound_query(&bq, sc, "prev_pid == -12345 && CPU >= 0"), &count));
	ck_assert_uint_eq(count, 0);
	bound_query_free(&bq);
	free(rs);
	store_schema_free(sc);
}
END_TEST

/*
 * struct store_query at the boundary: the front refuses a field map
 * beyond the schema, the backend a filter that is not bound, and the host
 * glob picks the rows of the hosts it matches.
 */
START_TEST(test_query_checks)
{
	struct store_schema *sc = schema(sr, "sched", "sched_switch");
	struct filter *unbound = NULL;
	struct filter_error err;
	struct bound_query bq;
	size_t beyond = sc->ncols;
	uint64_t count = 0;

	bound_query(&bq, sc, "prev_pid >= 0");
	bq.q.field_col = &beyond;
	bq.q.nfields = 1;
	TU_ERR(store_count(sr, &bq.q, &count), -EINVAL);
	bound_query_free(&bq);
	TU_OK(filter_parse("prev_pid == 0", &unbound, &err));
	TU_ERR(store_count(sr, &(struct store_query){ .schema = sc, .filter = unbound },
			   &count), -EINVAL);
	filter_free(unbound);
	ck_ok(store_count(sr, &(struct store_query){ .schema = sc, .host_glob = "capture-*" },
			  &count));
	ck_assert_uint_eq(count, seen.n[0]);
	ck_ok(store_count(sr, &(struct store_query){ .schema = sc, .host_glob = "other" }, &count));
	ck_assert_uint_eq(count, 0);
	store_schema_free(sc);
}
END_TEST

START_TEST(test_keyset_paging)
{
	struct store_schema *sc = schema(sr, "sched", "sched_switch");
	struct rows *all = calloc(1, sizeof(*all)), *page = calloc(1, sizeof(*page));
	int64_t after_ts = 0;
	uint64_t after_rowid = 0;
	int got;

	all->sc = page->sc = sc;
	all->want_pid = page->want_pid = -1;
	do {
		size_t before = page->n;

		got = store_select(sr, &(struct store_query){ .schema = sc, .after_ts = after_ts,
							     .after_rowid = after_rowid, .limit = 7 },
				   rows_cb, page);
		ck_assert_int_ge(got, 0);
		ck_assert_int_le(got, 7);
		if (got) {
			after_ts = page->ts[page->n - 1];
			after_rowid = page->rowid[page->n - 1];
		}
		ck_assert_uint_eq(page->n, before + (size_t)got);
	} while (got == 7);
	ck_assert_int_eq(store_select(sr, &(struct store_query){ .schema = sc }, rows_cb, all),
			 (int)seen.n[0]);
	ck_assert_uint_eq(page->n, all->n);
	for (size_t i = 0; i < all->n; i++)	/* same rows, same order, each once */
		ck_assert_uint_eq(page->rowid[i], all->rowid[i]);
	ck_assert_uint_eq(all->trace_ts_sum, seen.trace_ts_sum);
	free(all);
	free(page);
	store_schema_free(sc);
}
END_TEST

struct marker_rows {
	const struct store_schema *sc;
	unsigned n;
	int pid;
	uint64_t trace_ts[64];	/* the first markers' */
};

static int marker_cb(void *ctx, const struct store_row *r)
{
	struct marker_rows *m = ctx;
	const struct store_value *v = &r->vals[col(m->sc, "buf")];
	char want[32];

	snprintf(want, sizeof(want), "tc-marker-%02u\n", ++m->n);
	ck_assert_int_eq(v->kind, STORE_STRING);
	ck_assert_uint_eq(v->str.len, strlen(want));
	ck_assert(memcmp(v->str.s, want, v->str.len) == 0);
	ck_assert_int_eq(r->pid, m->pid);
	if (m->n <= 64)
		m->trace_ts[m->n - 1] = r->trace_ts;
	ck_assert_ptr_nonnull(r->comm);
	ck_assert_str_eq(r->comm, "capture.sh");
	return 0;
}

START_TEST(test_markers_and_comm)
{
	struct store_schema *sc = schema(sr, NULL, "print");
	struct proto_cmdline cl = { .pid = cap.pid };
	struct proto_cmdlines cls = { .count = 1, .items = &cl };
	struct marker_rows m = { .sc = sc, .pid = cap.pid };
	struct sq_bind b = { .kind = STORE_STRING, .s = "capture.sh", .len = 10 };
	struct bound_query bq;
	uint64_t count = 0, other = 0;
	char want[64];

	strcpy(cl.comm, "capture.sh");
	ck_ok(store_cmdlines(sw, host, &cls));
	ck_assert_str_eq(sc->system, "ftrace");
	ck_assert_str_eq(sc->table, "ev_ftrace_print");
	bound_query(&bq, sc, "buf ~ \"tc-marker-*\" && comm == capture.sh");
	ck_assert_int_eq(store_select(sr, &bq.q, marker_cb, &m), (int)cap.markers);
	ck_assert_uint_eq(m.n, cap.markers);
	/* a count computes COMM only for a WHERE that reads it, and then must */
	ck_ok(store_count(sr, &bq.q, &count));
	ck_assert_uint_eq(count, cap.markers);
	bound_query_free(&bq);
	ck_ok(sq_count_where(sq(), sc, "\"buf\" LIKE 'tc-marker-%' AND _tc_comm = ?", &b, 1, NULL,
			     &count));
	ck_assert_uint_eq(count, cap.markers);	/* the filters' COMM column */
	bound_query(&bq, sc, "comm == nosuch");
	bq.q.win = &(struct store_window){ INT64_MIN, INT64_MAX };
	ck_ok(store_count(sr, &bq.q, &count));
	ck_assert_uint_eq(count, 0);
	bound_query_free(&bq);
	/*
	 * A rename between two markers (task_rename, as an agent's sink
	 * stores it): COMM is the new name from its time on, the old one
	 * before; the saved cmdlines' name (what rows print) stays.
	 */
	ck_assert_uint_ge(cap.markers, 3);
	ck_ok(store_comm_change(sw, host, &(struct store_comm_change){
		.pid = cap.pid, .trace_ts = (int64_t)m.trace_ts[1] + 1,
		.ts = (int64_t)m.trace_ts[1] + 1 + CLOCK_OFFSET, .tick_ns = 1,
		.old = "capture.sh", .comm = "renamed" }));
	bound_query(&bq, sc, "COMM == renamed");
	ck_ok(store_count(sr, &bq.q, &count));
	ck_assert_uint_eq(count, cap.markers - 2);
	bound_query_free(&bq);
	bound_query(&bq, sc, "buf ~ \"tc-marker-*\" && COMM == capture.sh");
	ck_ok(store_count(sr, &bq.q, &count));
	ck_assert_uint_eq(count, 2);
	bound_query_free(&bq);
	store_schema_free(sc);
	/*
	 * sched_wakeup has a field named comm (the woken task's): lower case
	 * reads it, as in the kernel; COMM is the task that ran the event,
	 * its pid's name (capture.sh only for cap.pid, here).
	 */
	sc = schema(sr, "sched", "sched_wakeup");
	bound_query(&bq, sc, "COMM == renamed || COMM == capture.sh");
	ck_ok(store_count(sr, &bq.q, &count));
	bound_query_free(&bq);
	snprintf(want, sizeof(want), "common_pid == %d", cap.pid);
	bound_query(&bq, sc, want);
	ck_ok(store_count(sr, &bq.q, &other));
	bound_query_free(&bq);
	ck_assert_uint_eq(count, other);
	bound_query(&bq, sc, "comm == capture.sh");
	ck_ok(store_count(sr, &bq.q, &count));
	bound_query_free(&bq);
	ck_ok(sq_count_where(sq(), sc, "\"comm\" = ?", &b, 1, NULL, &other));
	ck_assert_uint_eq(count, other);
	store_schema_free(sc);
}
END_TEST

/* sched_switch's format with one more field after next_prio, as a new kernel might have. */
static char *evolved_format(void)
{
	const char *text = cap.formats[0].text;
	const char *at = strstr(text, "\tfield:int next_prio;");
	const char *eol = at ? strchr(at, '\n') : NULL;
	const char *extra = "\tfield:int extra_field;\toffset:64;\tsize:4;\tsigned:1;\n";
	char *out;

	ck_assert_ptr_nonnull(eol);
	out = malloc(strlen(text) + strlen(extra) + 1);
	memcpy(out, text, (size_t)(eol + 1 - text));
	strcpy(out + (eol + 1 - text), extra);
	strcat(out, eol + 1);
	return out;
}

static int evolved_insert_cb(void *ctx, const struct decode_event *ev)
{
	ck_ok(ev_insert(sw, ctx, host, ev, (int64_t)ev->ts + CLOCK_OFFSET));
	return 0;
}

START_TEST(test_schema_evolution)
{
	char *fmt = evolved_format();
	struct decoder *d2;
	const struct decode_type *t2;
	struct store_type *st2;
	struct store_schema *sc;
	struct bound_query bq;
	uint8_t page[4096] = { 0 };
	char text[64];
	uint64_t commit = 4 + 68, count = 0;
	uint32_t hdr = 17;	/* type_len 17: 68 bytes of data */
	uint16_t id;
	int32_t pid = 4242, extra = 77;

	TU_OK(decoder_new(&cap.hello, &d2));
	TU_OK(decoder_format(d2, "sched", "sched_switch", fmt, strlen(fmt), &t2));
	ck_assert_uint_eq(t2->nfields, types[0]->nfields + 1);
	ck_ok(ev_type(sw, t2, fmt, &test_origin, &st2));
	/* one event of the new layout */
	id = (uint16_t)t2->id;
	memcpy(page + 8, &commit, 8);
	memcpy(page + 16, &hdr, 4);
	memcpy(page + 20, &id, 2);
	memcpy(page + 20 + 4, &pid, 4);
	memcpy(page + 20 + 8, "evolved", 7);
	memcpy(page + 20 + 24, &pid, 4);
	memcpy(page + 20 + 64, &extra, 4);
	ck_ok(decoder_page(d2, 0, page, cap.page_size, evolved_insert_cb, st2, NULL));
	sc = schema(sr, "sched", "sched_switch");
	ck_assert_uint_eq(sc->ncols, types[0]->nfields + 1);
	ck_assert_str_eq(sc->cols[sc->ncols - 1].name, "extra_field");
	/* a filter has no IS NULL */
	ck_ok(sq_count_where(sq(), sc, "\"extra_field\" IS NULL", NULL, 0, NULL, &count));
	ck_assert_uint_eq(count, seen.n[0]);
	ck_ok(store_count(sr, bound_query(&bq, sc, "extra_field == 77 && prev_comm == evolved"),
			  &count));
	ck_assert_uint_eq(count, 1);
	bound_query_free(&bq);
	snprintf(text, sizeof(text), "prev_pid == %lld", (long long)seen.prev_pid[0]);
	ck_ok(store_count(sr, bound_query(&bq, sc, text), &count));
	ck_assert_uint_ge(count, 1);
	bound_query_free(&bq);
	store_schema_free(sc);
	decoder_free(d2);
	free(fmt);
}
END_TEST

/*
 * Rows inserted inside a transaction go in batches (sqlite_write.c): a
 * reader on the same store sees them before the COMMIT, a string that does
 * not fit what is left of a batch's buffer flushes it first, one bigger
 * than the whole buffer goes in alone, and every row keeps its values and
 * its place in the order.
 */
#define BIG_FORMAT \
	"name: tc_big\nID: 901\nformat:\n" \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n" \
	"\tfield:int seq;\toffset:8;\tsize:4;\tsigned:1;\n" \
	"\tfield:__data_loc char[] msg;\toffset:12;\tsize:4;\tsigned:0;\n\n" \
	"print fmt: \"%d\", REC->seq\n"
#define BIG_PAGE	(64u << 10)
#define BIG_ROWS	1500	/* several full batches of 512 rows, and a partial one */

static size_t big_len(int seq)
{
	return seq == 150 ? 40000 : seq % 7 == 0 ? 3000 : (size_t)(seq % 50);
}

static char big_char(int seq, size_t i)
{
	return (char)('a' + (seq + (int)i) % 26);
}

/* A page holding one tc_big event: seq @seq, msg of big_len(seq) bytes. */
static void big_page(uint8_t *page, int seq)
{
	size_t len = big_len(seq), data = (16 + len + 1 + 3) & ~(size_t)3;
	uint64_t ts = 1000000 + (uint64_t)seq * 1000, commit = 8 + data;
	uint32_t word = 0, rlen = (uint32_t)data + 4, loc = 16 | (uint32_t)len << 16;
	uint16_t id = 901;
	int32_t pid = 7, s32 = seq;
	uint8_t *rec = page + 16 + 8;

	memset(page, 0, BIG_PAGE);
	memcpy(page, &ts, 8);
	memcpy(page + 8, &commit, 8);
	memcpy(page + 16, &word, 4);	/* type_len 0: the length follows */
	memcpy(page + 20, &rlen, 4);
	memcpy(rec, &id, 2);
	memcpy(rec + 4, &pid, 4);
	memcpy(rec + 8, &s32, 4);
	memcpy(rec + 12, &loc, 4);
	for (size_t i = 0; i < len; i++)
		rec[16 + i] = (uint8_t)big_char(seq, i);
}

struct big_rows {
	const struct store_schema *sc;
	int next;
};

static int big_row_cb(void *ctx, const struct store_row *r)
{
	struct big_rows *b = ctx;
	const struct store_value *msg = &r->vals[col(b->sc, "msg")];
	int seq = (int)r->vals[col(b->sc, "seq")].i;

	ck_assert_int_eq(seq, b->next);
	ck_assert_int_eq(msg->kind, STORE_STRING);
	ck_assert_uint_eq(msg->str.len, big_len(seq));
	for (size_t i = 0; i < msg->str.len; i++)
		ck_assert_int_eq(msg->str.s[i], big_char(seq, i));
	b->next++;
	return 0;
}

START_TEST(test_batches)
{
	struct proto_hello hello = cap.hello;
	const struct decode_type *t;
	struct store_schema *sc;
	struct store_type *sty;
	struct big_rows rows = { 0 };
	struct decoder *d2;
	uint8_t *page = malloc(BIG_PAGE);
	uint64_t count = 0;

	ck_assert_ptr_nonnull(page);
	hello.page_size = BIG_PAGE;
	TU_OK(decoder_new(&hello, &d2));
	TU_OK(decoder_format(d2, "tc", "tc_big", BIG_FORMAT, strlen(BIG_FORMAT), &t));
	ck_ok(ev_type(sw, t, BIG_FORMAT, &test_origin, &sty));
	ck_ok(store_begin(sw));
	for (int seq = 0; seq < BIG_ROWS; seq++) {
		big_page(page, seq);
		ck_ok(decoder_page(d2, 0, page, BIG_PAGE, evolved_insert_cb, sty, NULL));
		if (seq == 100) {	/* mid-transaction: a reader sees none of it yet */
			sc = schema(sr, "tc", "tc_big");
			ck_ok(store_count(sr, &(struct store_query){ .schema = sc }, &count));
			ck_assert_uint_eq(count, 0);
			store_schema_free(sc);
		}
	}
	ck_ok(store_commit(sw));
	sc = schema(sr, "tc", "tc_big");
	rows.sc = sc;
	ck_assert_int_eq(store_select(sr, &(struct store_query){ .schema = sc }, big_row_cb, &rows),
			 BIG_ROWS);
	ck_assert_int_eq(rows.next, BIG_ROWS);
	store_schema_free(sc);
	decoder_free(d2);
	free(page);
}
END_TEST

/*
 * Batches go in on the store's writer thread. An INSERT that fails there
 * (here: a trigger another connection added) fails the calls after it and
 * the commit, which rolls the whole transaction back; the next one works.
 * More rows than the writer takes at a time, so the caller waits for it.
 */
#define FAIL_ROWS	5000
#define FAIL_SEQ	2500

struct try_insert {
	struct store_type *sty;
	int failed;
};

static int try_insert_cb(void *ctx, const struct decode_event *ev)
{
	struct try_insert *t = ctx;

	if (ev_insert(sw, t->sty, host, ev, (int64_t)ev->ts + CLOCK_OFFSET) < 0)
		t->failed++;
	return 0;
}

static int try_pages(struct decoder *d, uint8_t *page, struct try_insert *t, int n)
{
	for (int seq = 0; seq < n; seq++) {
		big_page(page, seq % BIG_ROWS == 150 ? 151 : seq);
		ck_ok(decoder_page(d, 0, page, BIG_PAGE, try_insert_cb, t, NULL));
	}
	return t->failed;
}

START_TEST(test_writer_failure)
{
	struct proto_hello hello = cap.hello;
	const struct decode_type *t;
	struct try_insert ti = { 0 };
	struct store_schema *sc;
	struct decoder *d2;
	uint8_t *page = malloc(BIG_PAGE);
	uint64_t count = 1;
	sqlite3 *db;

	ck_assert_ptr_nonnull(page);
	hello.page_size = BIG_PAGE;
	TU_OK(decoder_new(&hello, &d2));
	TU_OK(decoder_format(d2, "tc", "tc_big", BIG_FORMAT, strlen(BIG_FORMAT), &t));
	ck_ok(ev_type(sw, t, BIG_FORMAT, &test_origin, &ti.sty));
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	ck_assert_int_eq(sqlite3_exec(db, "CREATE TRIGGER tc_fail BEFORE INSERT ON ev_tc_tc_big"
				      " WHEN NEW.seq = " TC_STR(FAIL_SEQ) " BEGIN"
				      " SELECT RAISE(ABORT, 'boom'); END", NULL, NULL, NULL),
			 SQLITE_OK);
	ck_ok(store_begin(sw));
	try_pages(d2, page, &ti, FAIL_ROWS);
	ck_assert_int_lt(store_commit(sw), 0);
	ck_assert_ptr_nonnull(strstr(store_errmsg(sw), "boom"));
	sc = schema(sr, "tc", "tc_big");
	ck_ok(store_count(sr, &(struct store_query){ .schema = sc }, &count));
	ck_assert_uint_eq(count, 0);

	ck_assert_int_eq(sqlite3_exec(db, "DROP TRIGGER tc_fail", NULL, NULL, NULL), SQLITE_OK);
	ti.failed = 0;
	ck_ok(store_begin(sw));
	TU_EQ(try_pages(d2, page, &ti, FAIL_ROWS), 0);
	ck_ok(store_commit(sw));
	ck_ok(store_count(sr, &(struct store_query){ .schema = sc }, &count));
	ck_assert_uint_eq(count, FAIL_ROWS);
	store_schema_free(sc);
	sqlite3_close(db);
	decoder_free(d2);
	free(page);
}
END_TEST

START_TEST(test_reopen)
{
	struct store_reader *ro;
	struct store_schema *sc;
	uint64_t count = 0;
	uint64_t id2;

	TU_OK(store_reader_open(path, &ro));
	sc = schema(ro, "sched", "sched_wakeup");
	TU_OK(store_count(ro, &(struct store_query){ .schema = sc }, &count));
	ck_assert_uint_eq(count, seen.n[1]);
	store_schema_free(sc);
	store_reader_close(ro);
	store_writer_close(sw);
	sw = NULL;
	TU_OK(store_writer_open(path, &sw));
	ck_ok(store_host(sw, &cap.hello, NULL, &id2));
	ck_assert_uint_eq(id2, host);	/* same machine_id + name */
	sc = schema(sr, NULL, "sched_switch");
	ck_ok(store_count(sr, &(struct store_query){ .schema = sc }, &count));
	ck_assert_uint_eq(count, seen.n[0]);
	store_schema_free(sc);
	TU_ERR(store_reader_open("/nonexistent/dir/x.db", &ro), TC_ERR_DB);
}
END_TEST

/* The sched_switch rows @s sees; a negative code when the read fails. */
static int64_t switches(struct store_reader *s)
{
	struct store_schema *sc = NULL;
	uint64_t count = 0;
	int ret = store_schema_get(s, "sched", "sched_switch", &sc);

	if (ret == 0)
		ret = store_count(s, &(struct store_query){ .schema = sc }, &count);
	store_schema_free(sc);
	return ret < 0 ? ret : (int64_t)count;
}

/* An insert through @ctx's store_type of every sched_switch on a page. */
static int old_type_cb(void *ctx, const struct decode_event *ev)
{
	struct try_insert *t = ctx;

	if (ev->type == types[0] && ev_insert(sw, t->sty, host, ev, 0) < 0)
		t->failed++;
	return 0;
}

/* A commit that stores a counter: how the store notices a lost file. */
static int commit_one(void)
{
	int ret = store_begin(sw);

	if (ret == 0)
		ret = store_cpu_received(sw, host, 0, 1, 1, 1);
	return ret ?: store_commit(sw);
}

/*
 * The database removed under a writer and a reader (store.h, "the database
 * removed or replaced"): the writer's next commit fails and says so, every
 * call after it too, until the rollback re-creates the file; event types
 * of the old file refuse inserts; the reader fails until the new file is
 * there, then reads it.
 */
START_TEST(test_db_removed)
{
	struct try_insert old = { 0 };
	struct store_reader *ro;
	const char *note;
	char want[256];
	int64_t n0 = seen.n[0];
	uint64_t id;

	TU_OK(store_reader_open(path, &ro));
	ck_assert_int_eq(switches(ro), n0);
	TU_SYS(unlink(path));
	TU_ERR(switches(ro), TC_ERR_DB);
	ck_assert_msg(strstr(store_errmsg(ro), "not back yet"), "%s", store_errmsg(ro));

	TU_ERR(commit_one(), TC_ERR_DB);
	snprintf(want, sizeof(want), "database %s was removed or replaced; not storing until"
		 " it is back", path);
	ck_assert_str_eq(store_errmsg(sw), want);
	TU_ERR(store_host(sw, &cap.hello, NULL, &id), TC_ERR_DB);
	TU_ERR(switches(sr), TC_ERR_DB);
	ck_assert_uint_eq(store_generation(sw, NULL), 0);

	ck_ok(store_rollback(sw));	/* the path is opened again: a new file */
	ck_assert_uint_eq(store_generation(sw, &note), 1);
	ck_assert_msg(strstr(note, "re-created"), "%s", note);
	TU_SYS(access(path, F_OK));
	old.sty = types[0]->user;
	ck_ok(store_begin(sw));
	for (size_t off = 0; off < cap.raw_len[0]; off += cap.page_size)
		ck_ok(decoder_page(dec, 0, cap.raw[0] + off, cap.page_size, old_type_cb, &old,
				   NULL));
	ck_assert_int_gt(old.failed, 0);
	ck_ok(store_rollback(sw));
	ck_ok(store_host(sw, &cap.hello, "CN=capture-host", &host));
	ingest();		/* new types, into the new file */
	ck_assert_int_eq(switches(sr), n0);
	ck_ok(commit_one());	/* the new file is the one at the path */

	ck_assert_int_eq(switches(ro), n0);	/* the reader follows */
	ck_assert_uint_eq(store_generation(ro, NULL), 1);
	store_reader_close(ro);
	TU_OK(store_reader_open(path, &ro));
	ck_assert_int_eq(switches(ro), n0);
	store_reader_close(ro);
}
END_TEST

/* Another database moved over the path: the writer and the reader take it. */
START_TEST(test_db_replaced)
{
	struct store_writer *other;
	struct store_reader *ro;
	const char *note;
	char path2[96];
	uint64_t id;

	snprintf(path2, sizeof(path2), "%s/other.db", dir);
	TU_OK(store_writer_open(path2, &other));
	TU_OK(store_host(other, &cap.hello, NULL, &id));
	store_writer_close(other);	/* checkpointed: no -wal left */
	TU_OK(store_reader_open(path, &ro));
	ck_assert_int_eq(switches(ro), seen.n[0]);
	TU_SYS(rename(path2, path));

	TU_ERR(commit_one(), TC_ERR_DB);
	ck_ok(store_rollback(sw));
	ck_assert_uint_eq(store_generation(sw, &note), 1);
	ck_assert_msg(strstr(note, "reopened"), "%s", note);
	ck_ok(store_host(sw, &cap.hello, NULL, &id));
	TU_ERR(switches(sr), TC_ERR_UNKNOWN_EVENT);	/* its tables, not ours */
	TU_ERR(switches(ro), TC_ERR_UNKNOWN_EVENT);
	ck_assert_uint_eq(store_generation(ro, NULL), 1);
	ck_ok(commit_one());
	store_reader_close(ro);
}
END_TEST

struct stat_sum {
	uint64_t pages, events, bytes, agent_events, overrun, dup_pages, lost_pages;
	uint64_t bad_pages, bad_events;
	uint64_t held[4];	/* rate_held_pages, rate_held_ms, quota_held_pages, quota_held_ms */
	unsigned calls;
};

static int stats_cb(void *ctx, const struct store_stats_host *h, uint32_t cpu, const char *key,
		    uint64_t v)
{
	struct stat_sum *s = ctx;

	ck_assert_str_eq(h->name, "capture-host");
	ck_assert_uint_lt(cpu, cap.ncpus);
	s->calls++;
	if (!strcmp(key, "pages"))
		s->pages += v;
	else if (!strcmp(key, "events"))
		s->events += v;
	else if (!strcmp(key, "bytes"))
		s->bytes += v;
	else if (!strcmp(key, "agent_events"))
		s->agent_events += v;
	else if (!strcmp(key, "overrun"))
		s->overrun += v;
	else if (!strcmp(key, "bad_pages"))
		s->bad_pages += v;
	else if (!strcmp(key, "bad_events"))
		s->bad_events += v;
	else if (!strcmp(key, "dup_pages"))
		s->dup_pages += v;
	else if (!strcmp(key, "lost_pages"))
		s->lost_pages += v;
	else if (!strcmp(key, "rate_held_pages"))
		s->held[0] += v;
	else if (!strcmp(key, "rate_held_ms"))
		s->held[1] += v;
	else if (!strcmp(key, "quota_held_pages"))
		s->held[2] += v;
	else if (!strcmp(key, "quota_held_ms"))
		s->held[3] += v;
	return 0;
}

START_TEST(test_counters)
{
	struct proto_cpu_stats cs = { .cpu = 0, .pages = 1, .events = 10, .overrun = 3,
				      .lost_pages = 4 };
	struct stat_sum sum = { 0 };
	size_t pages = 0;
	uint64_t events = 0, other;
	struct proto_hello h2 = cap.hello;

	for (unsigned cpu = 0; cpu < cap.ncpus; cpu++) {
		pages += cap.raw_len[cpu] / cap.page_size;
		events += cap.entries[cpu];
	}
	ck_ok(store_cpu_stats(sw, host, &cs));
	cs.events = 20;		/* agent-reported counters are set, not added */
	ck_ok(store_cpu_stats(sw, host, &cs));
	ck_ok(store_cpu_received(sw, host, 0, 2, 5, 100));
	ck_ok(store_cpu_duplicates(sw, host, 0, 7));
	ck_ok(store_cpu_not_stored(sw, host, 0, 3, 5));
	ck_ok(store_cpu_not_stored(sw, host, 0, 1, 0));	/* added to */
	ck_ok(store_cpu_held(sw, host, 1, &(struct store_held){ 2, 30, 1, 500 }));
	ck_ok(store_cpu_held(sw, host, 1, &(struct store_held){ 1, 3, 0, 0 }));	/* added to */
	ck_ok(store_stats(sr, NULL, stats_cb, &sum));
	ck_assert_uint_eq(sum.calls, 23 * cap.ncpus);
	ck_assert_uint_eq(sum.held[0], 3);
	ck_assert_uint_eq(sum.held[1], 33);
	ck_assert_uint_eq(sum.held[2], 1);
	ck_assert_uint_eq(sum.held[3], 500);
	ck_assert_uint_eq(sum.bad_pages, 4);
	ck_assert_uint_eq(sum.bad_events, 5);
	ck_assert_uint_eq(sum.dup_pages, 7);
	ck_assert_uint_eq(sum.lost_pages, 4);
	ck_assert_uint_eq(sum.pages, pages + 2);
	ck_assert_uint_eq(sum.events, events + 5);
	ck_assert_uint_eq(sum.bytes, pages * cap.page_size + 100);
	ck_assert_uint_eq(sum.agent_events, 20);
	ck_assert_uint_eq(sum.overrun, 3);
	ck_ok(store_host_clock(sw, host, -5));
	TU_ERR(store_host_clock(sw, host + 100, 1), -ENOENT);
	h2.host = (char *)"other-host";
	ck_ok(store_host(sw, &h2, NULL, &other));
	ck_assert_uint_ne(other, host);
}
END_TEST

struct drop_sum {
	uint64_t retention, calls;
};

static int drops_cb(void *ctx, const char *h, const char *system, const char *name,
		    const char *reason, uint64_t count)
{
	struct drop_sum *d = ctx;

	d->calls++;
	if (!strcmp(reason, "retention")) {
		ck_assert_str_eq(h, "");
		d->retention += count;
	} else {
		ck_assert_str_eq(reason, "filter");
		ck_assert_str_eq(h, "capture-host");
		ck_assert_str_eq(name, "sched_switch");
		ck_assert_uint_eq(count, 7);
	}
	return 0;
}

/* Rows of every captured event with ts < @cut (INT64_MAX: all). */
static uint64_t rows_before(int64_t cut)
{
	static const char *const names[][2] = {
		{ "sched", "sched_switch" }, { "sched", "sched_wakeup" }, { "ftrace", "print" },
	};
	struct sq_bind b = { .kind = STORE_SIGNED, .i = cut };
	uint64_t total = 0, n;

	for (int i = 0; i < 3; i++) {
		struct store_schema *sc = schema(sr, names[i][0], names[i][1]);

		ck_ok(sq_count_where(sq(), sc, "ts < ?", &b, 1, NULL, &n));
		total += n;
		store_schema_free(sc);
	}
	return total;
}

START_TEST(test_retention)
{
	uint64_t all = rows_before(INT64_MAX), before, removed = 0;
	int64_t cut = CLOCK_OFFSET + (int64_t)(seen.trace_ts_sum / seen.n[0]);
	struct drop_sum d = { 0 };

	ck_assert_uint_eq(all, seen.n[0] + seen.n[1] + seen.n[2]);
	before = rows_before(cut);
	ck_assert_uint_gt(before, 0);
	ck_assert_uint_lt(before, all);
	ck_ok(store_dropped(sw, host, "sched", "sched_switch", "filter", 3));
	ck_ok(store_dropped(sw, host, "sched", "sched_switch", "filter", 4));
	/* by age: exactly the rows older than the cut, oldest first */
	ck_ok(store_retain(sw, cut, 0, &removed));
	ck_assert_uint_eq(removed, before);
	ck_assert_uint_eq(rows_before(cut), 0);
	ck_assert_uint_eq(rows_before(INT64_MAX), all - before);
	/* by size: a limit below the fixed tables' pages removes every event */
	ck_ok(store_retain(sw, INT64_MIN, 1, &removed));
	ck_assert_uint_eq(removed, all - before);
	ck_assert_uint_eq(rows_before(INT64_MAX), 0);
	ck_ok(store_drops(sr, NULL, drops_cb, &d));
	ck_assert_uint_eq(d.retention, all);
	ck_assert_uint_ge(d.calls, 2);
}
END_TEST

/* ---- the live tail: rows in storage order from a cursor ---- */

struct tail_seen {
	uint64_t n[3];
	uint64_t last[3];	/* rowid of the last row of each type */
};

static int tail_cb(void *ctx, size_t i, const struct store_row *r)
{
	struct tail_seen *t = ctx;

	ck_assert_uint_lt(i, 3);
	ck_assert_uint_gt(r->rowid, t->last[i]);	/* a type's rows in storage order, once */
	t->last[i] = r->rowid;
	t->n[i]++;
	return 0;
}

/* Tail @qs from @from in pages of @page rows to the end; *@missed summed. */
static uint64_t tail_all(const struct store_query *const *qs, uint64_t from, size_t page,
			 struct tail_seen *seen_rows, uint64_t *missed, uint64_t *end)
{
	struct store_tail t = { .from = from, .max_rows = page };
	uint64_t pages = 0;

	*missed = 0;
	do {
		uint64_t before = seen_rows->n[0] + seen_rows->n[1] + seen_rows->n[2];

		ck_ok(store_tail(sr, qs, 3, &t, tail_cb, seen_rows));
		ck_assert_uint_le(seen_rows->n[0] + seen_rows->n[1] + seen_rows->n[2] - before,
				  page);
		ck_assert(!t.reset);
		*missed += t.missed;
		t.from = t.next;
		pages++;
	} while (t.more);
	*end = t.next;
	return pages;
}

START_TEST(test_tail)
{
	static const char *const names[][2] = {
		{ "sched", "sched_switch" }, { "sched", "sched_wakeup" }, { "ftrace", "print" },
	};
	struct store_schema *sc[3];
	struct store_query q[3];
	const struct store_query *qs[3] = { &q[0], &q[1], &q[2] };
	struct store_window win = { 1, INT64_MAX };
	struct tail_seen a = { 0 }, b = { 0 }, c = { 0 };
	struct store_tail t = { 0 };
	uint64_t all, missed, end, end2, removed = 0, before;
	int64_t cut = CLOCK_OFFSET + (int64_t)(seen.trace_ts_sum / seen.n[0]);

	for (int i = 0; i < 3; i++) {
		sc[i] = schema(sr, names[i][0], names[i][1]);
		q[i] = (struct store_query){ .schema = sc[i] };
	}
	all = seen.n[0] + seen.n[1] + seen.n[2];
	/* no cursor, no window: from the end, nothing yet */
	ck_ok(store_tail(sr, qs, 3, &t, tail_cb, &a));
	ck_assert_uint_eq(a.n[0] + a.n[1] + a.n[2], 0);
	ck_assert(!t.more);
	/* from the start: every row once, in pages of 100 (cut inside blocks) */
	ck_assert_uint_gt(tail_all(qs, 1, 100, &a, &missed, &end), all / 100);
	for (int i = 0; i < 3; i++)
		ck_assert_uint_eq(a.n[i], seen.n[i]);
	ck_assert_uint_eq(missed, 0);
	ck_assert_uint_eq(end, t.next);	/* the end: where "from now" began */
	ck_assert_uint_eq(end, all + 1);
	/* no cursor, a window from the start: the same rows */
	for (int i = 0; i < 3; i++)
		q[i].win = &win;
	tail_all(qs, 0, 10000, &b, &missed, &end2);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(b.n[i], seen.n[i]);
		q[i].win = NULL;
	}
	/* retention removes the oldest rows: a reader from the start missed them */
	before = rows_before(cut);
	ck_ok(store_retain(sw, cut, 0, &removed));
	ck_assert_uint_eq(removed, before);
	tail_all(qs, 1, 1000, &c, &missed, &end2);
	ck_assert_uint_eq(c.n[0] + c.n[1] + c.n[2], all - before);
	ck_assert_uint_gt(missed, 0);
	ck_assert_uint_le(missed, before);
	ck_assert_uint_eq(end2, end);
	/* a cursor past the end (another database): read from its start */
	t = (struct store_tail){ .from = end + 1000 };
	memset(&c, 0, sizeof(c));
	ck_ok(store_tail(sr, qs, 3, &t, tail_cb, &c));
	ck_assert(t.reset);
	ck_assert_uint_eq(c.n[0] + c.n[1] + c.n[2], all - before);
	for (int i = 0; i < 3; i++)
		store_schema_free(sc[i]);
}
END_TEST

/* ---- scopes: the hosts a reader may see, applied by every read ---- */

struct scope_seen {
	const char *want;	/* the only host a row may name; NULL: any */
	uint64_t n, filter;
	bool retention;
};

static int scope_row_cb(void *ctx, const struct store_row *r)
{
	struct scope_seen *s = ctx;

	if (s->want)
		ck_assert_str_eq(r->host, s->want);
	s->n++;
	return 0;
}

static int scope_stat_cb(void *ctx, const struct store_stats_host *h, uint32_t cpu,
			 const char *key, uint64_t v)
{
	struct scope_seen *s = ctx;

	if (s->want)
		ck_assert_str_eq(h->name, s->want);
	if (!strcmp(key, "events"))
		s->n += v;
	return 0;
}

static int scope_drop_cb(void *ctx, const char *h, const char *system, const char *name,
			 const char *reason, uint64_t count)
{
	struct scope_seen *s = ctx;

	if (!strcmp(reason, "retention")) {
		s->retention = true;
		return 0;
	}
	if (s->want)
		ck_assert_str_eq(h, s->want);
	s->filter += count;
	return 0;
}

/* What a reader of @scope (NULL: all) with host glob @glob sees, each read. */
static struct scope_seen scope_reads(const struct store_scope *scope, const char *glob,
				     const char *want)
{
	struct store_schema *sc = schema(sr, "sched", "sched_switch");
	struct store_query q = { .schema = sc, .scope = scope, .host_glob = glob };
	struct scope_seen rows = { .want = want }, stats = { .want = want };
	struct scope_seen drops = { .want = want };
	uint64_t count = 99;
	int n;

	n = store_select(sr, &q, scope_row_cb, &rows);
	ck_ok(n);
	ck_assert_uint_eq((uint64_t)n, rows.n);
	ck_ok(store_count(sr, &q, &count));
	ck_assert_uint_eq(count, rows.n);
	ck_ok(store_stats(sr, &q, scope_stat_cb, &stats));
	ck_ok(store_drops(sr, &q, scope_drop_cb, &drops));
	store_schema_free(sc);
	rows.filter = drops.filter;
	rows.retention = drops.retention;
	return rows;
}

/*
 * Two hosts with the same events: a scope shows each reader only its
 * hosts' rows, counts, CPU counters and drop counters (not the ones kept
 * for all hosts); an empty scope shows nothing; the host glob narrows
 * within a scope, never widens it.
 */
START_TEST(test_scope)
{
	static const char *const web[] = { "capture-*" }, *const db[] = { "db?", "other-host" };
	static const char *const both[] = { "capture-host", "other-host" };
	struct store_scope s_web = { web, 1 }, s_db = { db, 2 }, s_both = { both, 2 };
	struct store_scope none = { NULL, 0 }, big = { web, STORE_SCOPE_MAX + 1 };
	struct store_schema *sc = schema(sr, "sched", "sched_switch");
	struct store_query q = { .schema = sc, .scope = &big };
	struct proto_hello h2 = cap.hello;
	struct scope_seen r;
	uint64_t id;
	uint64_t n = seen.n[0], count;

	h2.host = (char *)"other-host";
	ck_ok(store_host(sw, &h2, NULL, &host));
	ingest();		/* the same events again, as other-host's */
	ck_ok(store_dropped(sw, host, "sched", "sched_switch", "filter", 5));
	ck_ok(store_dropped(sw, 0, "sched", "sched_switch", "retention", 1));
	r = scope_reads(NULL, NULL, NULL);
	ck_assert_uint_eq(r.n, 2 * n);
	ck_assert(r.retention);
	r = scope_reads(&s_web, NULL, "capture-host");
	ck_assert_uint_eq(r.n, n);
	ck_assert_uint_eq(r.filter, 0);
	ck_assert(!r.retention);
	r = scope_reads(&s_db, NULL, "other-host");
	ck_assert_uint_eq(r.n, n);
	ck_assert_uint_eq(r.filter, 5);
	ck_assert(!r.retention);
	r = scope_reads(&s_both, NULL, NULL);
	ck_assert_uint_eq(r.n, 2 * n);
	r = scope_reads(&none, NULL, NULL);
	ck_assert_uint_eq(r.n + r.filter, 0);
	r = scope_reads(&s_web, "other-*", NULL);	/* a glob cannot widen a scope */
	ck_assert_uint_eq(r.n + r.filter, 0);
	r = scope_reads(&s_both, "other-*", "other-host");
	ck_assert_uint_eq(r.n, n);
	TU_ERR(store_count(sr, &q, &count), -EINVAL);
	/* a host outside the scope is not found, as an unknown one (symbols op) */
	ck_ok(store_host_find(sr, "capture-host", NULL, &id));
	ck_ok(store_host_find(sr, "capture-host", &s_web, &id));
	TU_ERR(store_host_find(sr, "capture-host", &s_db, &id), -ENOENT);
	TU_ERR(store_host_find(sr, "capture-host", &none, &id), -ENOENT);
	TU_ERR(store_host_find(sr, "no-such-host", NULL, &id), -ENOENT);
	store_schema_free(sc);
}
END_TEST

struct usage {
	uint64_t capture, other;
	unsigned calls;
};

static int usage_cb(void *ctx, const char *h, uint64_t bytes)
{
	struct usage *u = ctx;

	u->calls++;
	if (!strcmp(h, "capture-host"))
		u->capture = bytes;
	else if (!strcmp(h, "other-host"))
		u->other += bytes;
	else
		ck_abort_msg("usage of an unknown host %s", h);
	return 0;
}

static struct usage usage(void)
{
	struct usage u = { 0 };

	ck_ok(store_host_usage(sw, usage_cb, &u));
	return u;
}

/*
 * Bytes stored per host name (quotas): the page bytes of its stored pages,
 * over every host id of the name; retention gives back its page bytes per
 * stored event for each row it removes, all of them once every row is gone.
 */
START_TEST(test_host_usage)
{
	uint64_t all = rows_before(INT64_MAX), bytes = 0, before, removed = 0, other, other2;
	int64_t cut = CLOCK_OFFSET + (int64_t)(seen.trace_ts_sum / seen.n[0]);
	struct proto_hello h2 = cap.hello;
	struct usage u;
	double per_row;

	for (unsigned cpu = 0; cpu < cap.ncpus; cpu++)
		bytes += cap.raw_len[cpu] / cap.page_size * cap.page_size;
	per_row = (double)bytes / (double)all;
	h2.host = (char *)"other-host";
	ck_ok(store_host(sw, &h2, NULL, &other));
	h2.machine_id = (char *)"another-machine";	/* the same name, another host id */
	ck_ok(store_host(sw, &h2, NULL, &other2));
	ck_assert_uint_ne(other, other2);
	ck_ok(store_begin(sw));
	ck_ok(store_cpu_received(sw, other, 0, 1, 10, 3000));
	ck_ok(store_cpu_received(sw, other2, 3, 1, 10, 2000));
	ck_ok(store_commit(sw));
	u = usage();
	ck_assert_uint_eq(u.calls, 2);
	ck_assert_uint_eq(u.capture, bytes);
	ck_assert_uint_eq(u.other, 5000);

	before = rows_before(cut);
	ck_ok(store_retain(sw, cut, 0, &removed));
	ck_assert_uint_eq(removed, before);
	u = usage();	/* each of the 3 tables rounds up by less than a byte */
	ck_assert_uint_le(u.capture, bytes - (uint64_t)(before * per_row));
	ck_assert_uint_ge(u.capture + 3, bytes - (uint64_t)(before * per_row));
	ck_assert_uint_eq(u.other, 5000);	/* not a row of theirs went */
	ck_ok(store_retain(sw, INT64_MIN, 1, &removed));
	ck_assert_uint_eq(rows_before(INT64_MAX), 0);
	u = usage();
	ck_assert_uint_eq(u.capture, 0);
	ck_assert_uint_eq(u.other, 5000);
}
END_TEST

/* store_span_fn: the highest page of each stream into ctx's array. */
static int span_high(void *ctx, const struct store_span *sp)
{
	uint64_t *seqs = ctx;

	if (sp->hi > seqs[sp->stream])
		seqs[sp->stream] = sp->hi;
	return 0;
}

/* The highest stored page of streams 0..@n-1 of a session into @seqs. */
static int stream_highs(struct store_writer *w, uint64_t h, const char *boot, uint64_t session,
			uint64_t *seqs, uint32_t n)
{
	memset(seqs, 0, n * sizeof(*seqs));
	return store_stream_marks(w, h, boot, session, n, span_high, seqs);
}

/* Stream marks: never go down, are per session, roll back with the
 * transaction that set them, and survive reopening the database. */
START_TEST(test_stream_marks)
{
	uint64_t seqs[3] = { 9, 9, 9 };

	ck_ok(stream_highs(sw, host, "boot-a", 42, seqs, 3));
	ck_assert_uint_eq(seqs[0] | seqs[1] | seqs[2], 0);
	ck_ok(store_begin(sw));
	ck_ok(store_stream_mark(sw, host, "boot-a", 42, 1, 17, 17));
	ck_ok(store_stream_mark(sw, host, "boot-a", 42, 1, 5, 5));	/* lower: ignored */
	ck_ok(store_stream_mark(sw, host, "boot-a", 43, 2, 99, 99));	/* other session */
	ck_ok(store_stream_mark(sw, host, "boot-b", 42, 0, 98, 98));	/* other boot */
	ck_ok(stream_highs(sw, host, "boot-a", 42, seqs, 3));	/* sees the txn */
	ck_assert_uint_eq(seqs[1], 17);
	ck_ok(store_commit(sw));
	ck_ok(store_begin(sw));
	ck_ok(store_stream_mark(sw, host, "boot-a", 42, 0, 3, 3));
	TU_OK(store_commit(sw));
	ck_ok(store_begin(sw));
	ck_ok(store_stream_mark(sw, host, "boot-a", 42, 1, 1000, 1000));
	store_writer_close(sw);		/* closing with the transaction open: rollback */
	TU_OK(store_writer_open(path, &sw));
	ck_ok(stream_highs(sw, host, "boot-a", 42, seqs, 3));
	ck_assert_uint_eq(seqs[0], 3);
	ck_assert_uint_eq(seqs[1], 17);
	ck_assert_uint_eq(seqs[2], 0);
	ck_ok(stream_highs(sw, host, "boot-a", 43, seqs, 2));	/* stream 2 cut off */
	ck_assert_uint_eq(seqs[0] | seqs[1], 0);
	TU_ERR(stream_highs(sw, host, NULL, 42, seqs, 3), -EINVAL);
}
END_TEST

/*
 * Journal marks: set and read inside a transaction, kept by a commit, gone
 * with a rollback, replaced (not only raised: a file's mark is its own),
 * forgotten by range.
 */
START_TEST(test_journal_marks)
{
	uint64_t pos = 7;

	ck_ok(store_journal_mark_get(sw, 5, &pos));
	ck_assert_uint_eq(pos, 0);
	ck_ok(store_begin(sw));
	ck_ok(store_journal_mark(sw, 5, 4096));
	ck_ok(store_journal_mark(sw, 6, 100));
	ck_ok(store_journal_mark(sw, 9, 300));
	ck_ok(store_journal_mark_get(sw, 5, &pos));	/* sees the txn */
	ck_assert_uint_eq(pos, 4096);
	ck_ok(store_commit(sw));
	ck_ok(store_begin(sw));
	ck_ok(store_journal_mark(sw, 5, 8192));
	ck_ok(store_journal_forget(sw, 6, 8));
	store_writer_close(sw);		/* with the transaction open: rollback */
	TU_OK(store_writer_open(path, &sw));
	ck_ok(store_journal_mark_get(sw, 5, &pos));
	ck_assert_uint_eq(pos, 4096);
	ck_ok(store_journal_mark_get(sw, 6, &pos));
	ck_assert_uint_eq(pos, 100);
	ck_ok(store_begin(sw));
	ck_ok(store_journal_forget(sw, 6, UINT64_MAX));
	ck_ok(store_commit(sw));
	ck_ok(store_journal_mark_get(sw, 6, &pos));
	ck_assert_uint_eq(pos, 0);
	ck_ok(store_journal_mark_get(sw, 9, &pos));
	ck_assert_uint_eq(pos, 0);
	ck_ok(store_journal_mark_get(sw, 5, &pos));	/* below the range: kept */
	ck_assert_uint_eq(pos, 4096);
	TU_ERR(store_journal_mark_get(sw, 5, NULL), -EINVAL);
}
END_TEST

/* store_boot_programs()' callback: the programs seen, in order. */
struct progs_seen {
	unsigned n;
	uint32_t group[4], first[4], nstreams[4];
	int64_t since[4];
};

static int progs_seen_fn(void *ctx, const struct store_program *p)
{
	struct progs_seen *ps = ctx;

	ck_assert_uint_lt(ps->n, 4);
	ps->group[ps->n] = p->group;
	ps->first[ps->n] = p->first_stream;
	ps->nstreams[ps->n] = p->nstreams;
	ps->since[ps->n++] = p->since_ns;
	return 0;
}

/* Programs and their symbols: which program names which row's address. */
START_TEST(test_symbols)
{
	struct store_program a = { .boot_id = "boot-a", .session = 42, .group = 1, .pid = 100,
				   .comm = "app", .first_stream = 32768, .nstreams = 3,
				   .since_ns = 1000 };
	struct store_program b = a, k = a;
	uint64_t ida, ida2, idb, idk;
	char name[64];

	b.group = 2, b.pid = 200, b.since_ns = 2000;
	k.group = 0, k.pid = 0, k.comm = "kernel", k.since_ns = 500;
	ck_ok(store_program(sw, host, &a, &ida));
	ck_ok(store_program(sw, host, &a, &ida2));	/* a reconnect: same row */
	ck_assert_uint_eq(ida, ida2);
	ck_ok(store_program(sw, host, &b, &idb));
	ck_ok(store_program(sw, host, &k, &idk));
	ck_assert_uint_ne(ida, idb);
	{
		/* a boot's programs (not the kernel's row), once each, by since */
		struct progs_seen ps = { 0 };

		ck_ok(store_boot_programs(sr, host, "boot-a", 10, progs_seen_fn, &ps));
		ck_assert_uint_eq(ps.n, 2);
		ck_assert_uint_eq(ps.group[0], 1);
		ck_assert_uint_eq(ps.group[1], 2);
		ck_assert_uint_eq(ps.first[0], 32768);
		ck_assert_uint_eq(ps.nstreams[0], 3);
		ck_assert_int_eq(ps.since[1], 2000);
		memset(&ps, 0, sizeof(ps));
		ck_ok(store_boot_programs(sr, host, "boot-a", 1, progs_seen_fn, &ps));
		ck_assert_uint_eq(ps.n, 1);
		memset(&ps, 0, sizeof(ps));
		ck_ok(store_boot_programs(sr, host, "boot-z", 10, progs_seen_fn, &ps));
		ck_assert_uint_eq(ps.n, 0);
	}
	ck_ok(store_symbol(sw, ida, 0x1000, 0x20, "run", NULL));
	ck_ok(store_symbol(sw, ida, 0x1000, 0x20, "run", NULL));	/* resent: kept once */
	ck_ok(store_symbol(sw, ida, 0x1100, 0, "asm_stub", NULL));
	ck_ok(store_symbol(sw, idb, 0x1000, 0x10, "other", NULL));
	ck_ok(store_symbol(sw, idk, 0xffffffff81000000ull, 0, "_stext", NULL));
	ck_ok(store_symbol(sw, idk, 0xffffffff81000100ull, 0, "vfs_read", NULL));

	/* SYM_IS(FN, PID, TS, ADDR, WANT): FN (store_symbol_name or _sized) names it WANT */
#define SYM_IS(fn, pid, ts, addr, want) do { \
		ck_ok(fn(sr, host, pid, ts, addr, name, sizeof(name))); \
		ck_assert_str_eq(name, want); \
	} while (0)
	SYM_IS(store_symbol_name, 100, 3000, 0x1000, "run");
	SYM_IS(store_symbol_name, 100, 3000, 0x1006, "run+0x6");
	/* pid 200's program first: its own symbol, smaller */
	SYM_IS(store_symbol_name, 200, 3000, 0x1006, "other+0x6");
	/* not b's: a's covers it */
	SYM_IS(store_symbol_name, 200, 3000, 0x1016, "run+0x16");
	/* a thread (no program has its pid): by address, latest first */
	SYM_IS(store_symbol_name, 101, 3000, 0x1008, "other+0x8");
	/* before b was announced only a existed */
	SYM_IS(store_symbol_name, 101, 1500, 0x1008, "run+0x8");
	TU_ERR(store_symbol_name(sr, host, 100, 900, 0x1000, name, sizeof(name)), -ENOENT);
	TU_ERR(store_symbol_name(sr, host, 100, 3000, 0x1100 + 0x10000, name,
				 sizeof(name)), -ENOENT);	/* 64 KiB past the unsized stub */
	SYM_IS(store_symbol_name, 100, 3000, 0x1104, "asm_stub+0x4");
	TU_ERR(store_symbol_name(sr, host, 100, 3000, 0x800, name, sizeof(name)), -ENOENT);
	/* kernel addresses: unsized kallsyms symbols, top bit set */
	SYM_IS(store_symbol_name, 100, 3000, 0xffffffff81000150ull, "vfs_read+0x50");
	TU_ERR(store_symbol_name(sr, host + 1, 100, 3000, 0x1000, name,
				 sizeof(name)), -ENOENT);
	/*
	 * sized (%pS): to the next greater address of the same table, an alias
	 * not counted, whatever size was stored; the last symbol unsized
	 */
	ck_ok(store_symbol(sw, idk, 0xffffffff81000100ull, 0, "ksys_read", NULL));
	ck_ok(store_symbol(sw, idk, 0xffffffff81000180ull, 0, "vfs_write", NULL));
	SYM_IS(store_symbol_sized, 100, 3000, 0xffffffff81000000ull, "_stext+0x0/0x100");
	SYM_IS(store_symbol_sized, 100, 3000, 0xffffffff81000150ull, "vfs_read+0x50/0x80");
	SYM_IS(store_symbol_sized, 100, 3000, 0xffffffff81000190ull, "vfs_write+0x10");
	/* stored 0x20: asm_stub is next */
	SYM_IS(store_symbol_sized, 100, 3000, 0x1006, "run+0x6/0x100");
	SYM_IS(store_symbol_sized, 200, 3000, 0x1006, "other+0x6");	/* b's only symbol */
	SYM_IS(store_symbol_name, 100, 3000, 0x1006, "run+0x6");	/* unsized, as before */
	/* a module's symbol: sprint_symbol()'s " [MODULE]" after %pS, not after the name */
	ck_ok(store_symbol(sw, idk, 0xffffffffc0001000ull, 0, "e1000_xmit", "e1000"));
	ck_ok(store_symbol(sw, idk, 0xffffffffc0001080ull, 0, "e1000_poll", ""));
	SYM_IS(store_symbol_sized, 100, 3000, 0xffffffffc0001010ull,
	       "e1000_xmit+0x10/0x80 [e1000]");
	SYM_IS(store_symbol_name, 100, 3000, 0xffffffffc0001010ull, "e1000_xmit+0x10");
	/* "": no module */
	SYM_IS(store_symbol_sized, 100, 3000, 0xffffffffc0001090ull, "e1000_poll+0x10");
	TU_ERR(store_symbol_sized(sr, host, 100, 3000, 0x800, name, sizeof(name)), -ENOENT);
	TU_ERR(store_symbol_sized(sr, host, 100, 3000, 0x1000, name, 0), -EINVAL);
	TU_ERR(store_program(sw, host, NULL, &ida), -EINVAL);
	TU_ERR(store_symbol(sw, ida, 1, 1, NULL, NULL), -EINVAL);
#undef SYM_IS
}
END_TEST

struct printk_seen {
	size_t n;
	uint64_t addr[8];
	char fmt[8][32];
};

static int printk_seen_fn(void *ctx, uint64_t addr, const char *fmt)
{
	struct printk_seen *p = ctx;

	ck_assert_uint_lt(p->n, 8);
	p->addr[p->n] = addr;
	snprintf(p->fmt[p->n++], sizeof(p->fmt[0]), "%s", fmt);
	return 0;
}

/*
 * printk_formats per host and boot: held once one line is, kept once per
 * address, and read back for the boot that was up at the time asked.
 */
START_TEST(test_printk_formats)
{
	struct printk_seen pk = { 0 };
	bool held = true;

	ck_ok(store_printk_held(sw, host, "boot-a", &held));
	ck_assert(!held);
	ck_ok(store_printk_put(sw, host, "boot-a", 1000, 0xffffffff8281b87cull,
			       "\"Start context switch\"", 22));
	ck_ok(store_printk_put(sw, host, "boot-a", 1000, 0xffffffff8281b87cull,
			       "\"Start context switch\"", 22));	/* resent: once */
	ck_ok(store_printk_put(sw, host, "boot-a", 1000, 0xffffffff8281b869ull,
			       "\"End context switch\"xx", 20));	/* @len counts */
	ck_ok(store_printk_put(sw, host, "boot-b", 5000, 0xffffffff9281b87cull,
			       "\"Start context switch\"", 22));
	ck_ok(store_printk_held(sw, host, "boot-a", &held));
	ck_assert(held);
	ck_ok(store_printk_held(sw, host + 1, "boot-a", &held));
	ck_assert(!held);

	ck_ok(store_printk_list(sr, host, 3000, 100, printk_seen_fn, &pk));
	ck_assert_uint_eq(pk.n, 2);
	ck_assert_uint_eq(pk.addr[0], 0xffffffff8281b869ull);
	ck_assert_str_eq(pk.fmt[0], "\"End context switch\"");
	ck_assert_uint_eq(pk.addr[1], 0xffffffff8281b87cull);
	pk.n = 0;	/* after boot-b came: its table */
	ck_ok(store_printk_list(sr, host, 6000, 100, printk_seen_fn, &pk));
	ck_assert_uint_eq(pk.n, 1);
	ck_assert_uint_eq(pk.addr[0], 0xffffffff9281b87cull);
	pk.n = 0;	/* before any: the first boot's */
	ck_ok(store_printk_list(sr, host, 10, 100, printk_seen_fn, &pk));
	ck_assert_uint_eq(pk.n, 2);
	pk.n = 0;
	ck_ok(store_printk_list(sr, host, 3000, 1, printk_seen_fn, &pk));
	ck_assert_uint_eq(pk.n, 1);
	pk.n = 0;
	ck_ok(store_printk_list(sr, host + 1, 3000, 100, printk_seen_fn, &pk));
	ck_assert_uint_eq(pk.n, 0);
	TU_ERR(store_printk_put(sw, host, NULL, 1, 1, "x", 1), -EINVAL);
	TU_ERR(store_printk_list(sr, host, 1, 1, NULL, NULL), -EINVAL);
}
END_TEST

/* CMDLINES' tgids land in the tgids table, later values replacing earlier ones. */
START_TEST(test_tgids)
{
	struct proto_tgid t1[] = { { 10, 10 }, { 11, 10 } }, t2[] = { { 11, 12 } };
	struct proto_cmdlines c = { .tgids = { 2, t1 } };
	int64_t v = 0;

	ck_ok(store_cmdlines(sw, host, &c));
	c.tgids = (struct proto_tgids){ 1, t2 };
	ck_ok(store_cmdlines(sw, host, &c));
	ck_ok(sq_int1(sq(), "SELECT tgid FROM tgids WHERE pid = ?", 11, -1, &v));
	ck_assert_int_eq(v, 12);
	ck_ok(sq_int1(sq(), "SELECT count(*) FROM tgids WHERE tgid = ?", 10, -1, &v));
	ck_assert_int_eq(v, 1);
	c.tgids = (struct proto_tgids){ 1, NULL };
	TU_ERR(store_cmdlines(sw, host, &c), -EINVAL);
}
END_TEST

START_TEST(test_names_and_errors)
{
	char *fmt = strdup(cap.formats[0].text);
	char *idl = strstr(fmt, "ID: ");
	struct decoder *d2;
	const struct decode_type *t2;
	struct store_type *st2;
	struct store_schema *sc;
	uint64_t count;

	/* the same event name in a second system, with another id */
	ck_assert_ptr_nonnull(idl);
	memcpy(idl, "ID: 9", 5);
	TU_OK(decoder_new(&cap.hello, &d2));
	TU_OK(decoder_format(d2, "other\"sys", "sched_switch", fmt, strlen(fmt), &t2));
	ck_ok(ev_type(sw, t2, fmt, &test_origin, &st2));
	TU_ERR(store_schema_get(sr, NULL, "sched_switch", &sc), TC_ERR_AMBIGUOUS);
	ck_assert_ptr_nonnull(strstr(store_errmsg(sr), "other\"sys"));
	ck_assert_ptr_nonnull(strstr(store_errmsg(sr), "sched"));
	sc = schema(sr, "other\"sys", "sched_switch");
	ck_assert_str_eq(sc->table, "ev_other_sys_sched_switch");
	ck_ok(store_count(sr, &(struct store_query){ .schema = sc }, &count));
	ck_assert_uint_eq(count, 0);
	TU_ERR(sq_count_where(sq(), sc, "no_such_column = 1", NULL, 0, NULL, &count), TC_ERR_DB);
	TU_ERR(sq_count_where(sq(), sc, "1); DROP TABLE hosts; --", NULL, 0, NULL, &count),
	       TC_ERR_DB);
	store_schema_free(sc);
	TU_ERR(store_schema_get(sr, NULL, "no_such_event", &sc), TC_ERR_UNKNOWN_EVENT);
	TU_ERR(store_schema_get(sr, "ftrace", "sched_switch", &sc), TC_ERR_UNKNOWN_EVENT);
	decoder_free(d2);
	free(fmt);
}
END_TEST

static int list_cb(void *ctx, const struct store_schema *sc)
{
	unsigned *n = ctx;

	ck_assert_str_eq(sc->system, "sched");
	ck_assert_ptr_nonnull(sc->table);
	ck_assert_uint_eq(sc->ncols, 0);	/* names only: store_schema_get() has them */
	(*n)++;
	return 0;
}

START_TEST(test_list)
{
	unsigned n = 0;

	ck_ok(store_schema_list(sr, "sched", list_cb, &n));
	ck_assert_uint_eq(n, 2);
	TU_ERR(store_schema_list(sr, "nosys", list_cb, &n), TC_ERR_UNKNOWN_EVENT);
}
END_TEST

/* ---- the time index (ts_blocks), checked with SQL of our own ---- */

static sqlite3 *raw_open(void)
{
	sqlite3 *db = NULL;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

static int64_t raw_int(sqlite3 *db, const char *sql, int64_t arg)
{
	sqlite3_stmt *stmt = NULL;
	int64_t v;

	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK, "%s: %s", sql,
		      sqlite3_errmsg(db));
	sqlite3_bind_int64(stmt, 1, arg);
	ck_assert_int_eq(sqlite3_step(stmt), SQLITE_ROW);
	v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return v;
}

/* ---- store_hist ---- */

/* The kernel's hist_field_log2(): ilog2(roundup_pow_of_two(v)) on x86-64. */
static uint64_t kernel_log2(uint64_t v)
{
	uint64_t p = 1;
	unsigned n = 0;

	if (v > (1ull << 63))
		return 0;	/* roundup_pow_of_two() shifts 1 by 64: 1 */
	while (p < v)
		p <<= 1, n++;
	return n;
}

/* The rows' histogram by prev_pid.log2 (at most 65 keys), scanned in C. */
struct hist_ref {
	const struct store_schema *sc;
	uint64_t hits[65], sum[65];
	int64_t first[65];
	uint64_t rows;
};

static int hist_ref_cb(void *ctx, const struct store_row *r)
{
	struct hist_ref *h = ctx;
	uint64_t k = kernel_log2((uint64_t)r->vals[col(h->sc, "prev_pid")].i);

	if (!h->hits[k] || r->ts < h->first[k])
		h->first[k] = r->ts;
	h->hits[k]++;
	h->sum[k] += (uint64_t)r->vals[col(h->sc, "prev_state")].i;
	h->rows++;
	return 0;
}

struct hist_got {
	size_t n;
	uint64_t key[65], hits[65], sum[65];
};

static int hist_got_cb(void *ctx, const struct store_hist_entry *e)
{
	struct hist_got *g = ctx;

	ck_assert_uint_lt(g->n, 65);
	g->key[g->n] = (uint64_t)e->keys[0].i;
	g->hits[g->n] = e->hitcount;
	g->sum[g->n++] = e->sums[0];
	return 0;
}

/*
 * keys=prev_pid.log2:vals=prev_state:sort=prev_state with a row planted
 * at prev_pid -5 (log2 0: the kernel's u64 is over 2^63) and prev_state
 * -1 (the sum wraps): every key's hitcount and u64 sum as the C scan
 * has them, sorted by the sum in unsigned order; with size=2 only the two
 * keys seen first are kept, the rest are Dropped.
 */
START_TEST(test_hist_matches_scan)
{
	struct store_schema *sc = schema(sr, "sched", "sched_switch");
	struct store_query q = { .schema = sc };
	struct hist_spec sp = { .nkeys = 1, .nvals = 1, .nsort = 1, .size = 2048 };
	int kcol[1] = { col(sc, "prev_pid") }, vcol[1] = { col(sc, "prev_state") };
	struct store_hist h = { .spec = &sp, .key_col = kcol, .val_col = vcol };
	struct hist_ref *ref = calloc(1, sizeof(*ref));
	struct hist_got got = { 0 };
	struct store_hist_totals tot;
	size_t nkeys = 0, k1 = 65, k2 = 65;
	char sql[512];
	sqlite3 *db = raw_open();

	snprintf(sql, sizeof(sql), "UPDATE \"%s\" SET \"%s\" = -5, \"%s\" = -1 WHERE rowid = "
		 "(SELECT max(rowid) FROM \"%s\")", sc->table, sc->cols[kcol[0]].column,
		 sc->cols[vcol[0]].column, sc->table);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	snprintf(sp.keys[0].name, sizeof(sp.keys[0].name), "prev_pid");
	sp.keys[0].mod = HIST_MOD_LOG2;
	snprintf(sp.vals[0].name, sizeof(sp.vals[0].name), "prev_state");
	sp.sort[0] = (struct hist_sort){ .by = HIST_SORT_VAL, .i = 0 };
	ref->sc = sc;
	ck_assert_int_gt(store_select(sr, &q, hist_ref_cb, ref), 0);

	ck_ok(store_hist(sr, &q, &h, hist_got_cb, &got, &tot));
	for (size_t k = 0; k < 65; k++)
		nkeys += ref->hits[k] != 0;
	ck_assert_uint_ge(nkeys, 3);
	ck_assert_uint_eq(got.n, nkeys);
	ck_assert_uint_eq(tot.entries, nkeys);
	ck_assert_uint_eq(tot.hits, ref->rows);
	ck_assert_uint_eq(tot.dropped, 0);
	ck_assert_uint_gt(ref->sum[0], 1ull << 63);	/* wrapped through -1 */
	for (size_t i = 0; i < got.n; i++) {
		ck_assert_uint_eq(got.hits[i], ref->hits[got.key[i]]);
		ck_assert_uint_eq(got.sum[i], ref->sum[got.key[i]]);
		if (i)	/* unsigned order of the sums */
			ck_assert_uint_le(got.sum[i - 1], got.sum[i]);
	}

	for (size_t k = 0; k < 65; k++) {	/* the two keys seen first */
		if (!ref->hits[k])
			continue;
		if (k1 == 65 || ref->first[k] < ref->first[k1])
			k2 = k1, k1 = k;
		else if (k2 == 65 || ref->first[k] < ref->first[k2])
			k2 = k;
	}
	sp.size = 2;
	memset(&got, 0, sizeof(got));
	ck_ok(store_hist(sr, &q, &h, hist_got_cb, &got, &tot));
	ck_assert_uint_eq(got.n, 2);
	ck_assert_uint_eq(tot.entries, 2);
	ck_assert(got.key[0] == k1 || got.key[0] == k2);
	ck_assert(got.key[1] == k1 || got.key[1] == k2);
	ck_assert_uint_eq(tot.hits, ref->hits[k1] + ref->hits[k2]);
	ck_assert_uint_eq(tot.dropped, ref->rows - tot.hits);

	h.offset = 1, h.limit = 5;	/* a page: the second entry only */
	memset(&got, 0, sizeof(got));
	ck_ok(store_hist(sr, &q, &h, hist_got_cb, &got, &tot));
	ck_assert_uint_eq(got.n, 1);
	ck_assert_uint_eq(tot.entries, 2);
	free(ref);
	store_schema_free(sc);
}
END_TEST

/* Entries as lines, to compare two ways of computing a histogram. */
struct hist_lines {
	size_t nkeys, nvals, n;
	char line[4096][160];
};

static int hist_line_cb(void *ctx, const struct store_hist_entry *e)
{
	struct hist_lines *l = ctx;
	char *p = l->line[l->n];
	size_t len = sizeof(l->line[0]), at = 0;

	ck_assert_uint_lt(l->n, 4096);
	for (size_t i = 0; i < l->nkeys && at < len; i++) {
		if (e->keys[i].kind == STORE_STRING)
			at += (size_t)snprintf(p + at, len - at, "'%.*s' ", (int)e->keys[i].str.len,
					       e->keys[i].str.s);
		else if (e->keys[i].kind == STORE_BLOB)	/* a stack: its length, its first long */
			at += (size_t)snprintf(p + at, len - at, "[%zu:%llx] ", e->keys[i].blob.len,
					       e->keys[i].blob.len >= 8 ?
					       (unsigned long long)*(const uint64_t *)e->keys[i].blob.p :
					       0ull);
		else
			at += (size_t)snprintf(p + at, len - at, "%lld ", (long long)e->keys[i].i);
		if (e->comm[i] && at < len)
			at += (size_t)snprintf(p + at, len - at, "(%s) ", e->comm[i]);
	}
	for (size_t i = 0; i < l->nvals && at < len; i++)
		at += (size_t)snprintf(p + at, len - at, "s%zu=%llu ", i,
				       (unsigned long long)e->sums[i]);
	if (at < len)
		snprintf(p + at, len - at, "hc=%llu h=%llu lt=%lld", (unsigned long long)e->hitcount,
			 (unsigned long long)e->host_id, (long long)e->last_ts);
	l->n++;
	return 0;
}

/*
 * The in-memory histogram (store_hist(): keys that fit) and the grouped
 * statement (sq_hist_grouped(): the fallback) give the same entries in
 * the same order, and the same totals, for specs with every kind of key,
 * modifier and sort, truncation by size, and pages.
 */
START_TEST(test_hist_two_ways)
{
	struct store_schema *sc = schema(sr, "sched", "sched_switch");
	struct store_query q = { .schema = sc };
	struct {
		const char *spec;
		int k[3], v[2];
		uint64_t offset;
		uint32_t limit, size;	/* size: 0 as the spec says; else (below 65) this */
	} cases[] = {
		{ "keys=prev_pid:sort=hitcount.descending", { col(sc, "prev_pid") }, { 0 }, 0, 0, 0 },
		{ "keys=prev_comm,next_pid:vals=prev_state,next_prio:sort=next_pid.descending,"
		  "hitcount:size=128", { col(sc, "prev_comm"), col(sc, "next_pid") },
		  { col(sc, "prev_state"), col(sc, "next_prio") }, 0, 0, 0 },
		{ "keys=prev_comm,next_pid:size=128", { col(sc, "prev_comm"), col(sc, "next_pid") },
		  { 0 }, 5, 7, 0 },
		{ "keys=prev_comm,next_pid", { col(sc, "prev_comm"), col(sc, "next_pid") },
		  { 0 }, 0, 0, 3 },
		{ "keys=prev_pid.log2,common_cpu,host:vals=prev_state:sort=prev_state",
		  { col(sc, "prev_pid"), STORE_HIST_CPU, STORE_HIST_HOST },
		  { col(sc, "prev_state") }, 0, 0, 0 },
		{ "keys=next_pid.buckets=100:vals=common_cpu", { col(sc, "next_pid") },
		  { STORE_HIST_CPU }, 0, 0, 0 },
		{ "keys=common_pid.execname:sort=common_pid.descending", { col(sc, "common_pid") },
		  { 0 }, 0, 0, 0 },
	};
	struct hist_lines *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));

	ck_assert(a && b);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct hist_spec sp;
		struct store_hist h = { .spec = &sp, .key_col = cases[c].k, .val_col = cases[c].v,
					.offset = cases[c].offset, .limit = cases[c].limit };
		struct store_hist_totals ta, tb;

		TU_OK(hist_parse(cases[c].spec, &sp, NULL));
		if (cases[c].size)
			sp.size = cases[c].size;
		memset(a, 0, sizeof(*a));
		memset(b, 0, sizeof(*b));
		a->nkeys = b->nkeys = sp.nkeys;
		a->nvals = b->nvals = sp.nvals;
		ck_ok(store_hist(sr, &q, &h, hist_line_cb, a, &ta));
		ck_ok(sq_hist_grouped(sq(), &q, &h, hist_line_cb, b, &tb));
		ck_assert_msg(a->n == b->n && a->n > 0, "%s: %zu and %zu entries", cases[c].spec,
			      a->n, b->n);
		for (size_t i = 0; i < a->n; i++)
			ck_assert_msg(!strncmp(a->line[i], b->line[i], 159), "%s: entry %zu: %s | %s",
				      cases[c].spec, i, a->line[i], b->line[i]);
		ck_assert_uint_eq(ta.hits, tb.hits);
		ck_assert_uint_eq(ta.entries, tb.entries);
		ck_assert_uint_eq(ta.dropped, tb.dropped);
		ck_assert_int_eq(ta.max_ts, tb.max_ts);
		ck_assert_uint_eq(ta.hits + ta.dropped, seen.n[0]);
		if (cases[c].size)
			ck_assert_uint_gt(ta.dropped, 0);
	}
	free(a);
	free(b);
	store_schema_free(sc);
}
END_TEST

/* A kernel_stack row of the test: common_pid, then its frames. */
struct kstack_row {
	int32_t pid;
	uint64_t frames[20];
};

static int kstack_value(const void *src, unsigned i, struct store_value *out)
{
	const struct kstack_row *k = src;

	memset(out, 0, sizeof(*out));
	if (i == 0) {
		out->kind = STORE_SIGNED;
		out->i = k->pid;
	} else {
		out->kind = STORE_BLOB;
		out->blob.p = k->frames;
		out->blob.len = sizeof(k->frames);
	}
	return 0;
}

/*
 * Stack records after two of three sched_switch rows (rowid % 3 != 0), on
 * their CPU at their ts (an event comes first at one ts), 20 frames of
 * one of 7 stacks by prev_pid; the last 4 frames differ per row, below
 * the 16 a key keeps. Return: the (cpu, ts) pairs stacked, the hits a
 * common_stacktrace histogram of every row counts.
 */
static int64_t store_stacks(const struct store_schema *sc)
{
	static const char fmt[] = "name: kernel_stack\nID: 4\nformat:\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
		"\tfield:unsigned long caller[8];\toffset:8;\tsize:64;\tsigned:0;\n\n"
		"print fmt: \"\"\n";
	static const struct store_field f[] = { { "common_pid", STORE_SIGNED, 4, "int" },
						{ "caller", STORE_BLOB, 0, "unsigned long[8]" } };
	struct store_type_desc d = { "ftrace", "kernel_stack", fmt, 2, f };
	struct store_type *t;
	sqlite3 *db;
	sqlite3_stmt *st;
	char sql[256];
	int64_t want;

	ck_ok(store_type(sw, &d, &test_origin, &t));
	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	snprintf(sql, sizeof(sql), "SELECT cpu, ts, \"prev_pid\" FROM \"%s\" WHERE rowid %% 3 != 0"
		 " ORDER BY rowid", sc->table);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	ck_ok(store_begin(sw));
	for (uint64_t n = 0; sqlite3_step(st) == SQLITE_ROW; n++) {
		struct kstack_row k = { .pid = 1 };
		struct store_event ev = { .host_id = host, .cpu = (uint32_t)sqlite3_column_int(st, 0),
					  .ts = sqlite3_column_int64(st, 1), .nvals = 2,
					  .value = kstack_value, .src = &k };

		ev.trace_ts = (uint64_t)(ev.ts - CLOCK_OFFSET);
		for (unsigned i = 0; i < 20; i++)
			k.frames[i] = 0xffffffff81000000ull + (uint64_t)(sqlite3_column_int64(st, 2) % 7)
				      * 0x1000 + i * 8 + (i >= 16 ? n * 0x100000 : 0);
		ck_ok(store_insert(sw, t, &ev));
	}
	sqlite3_finalize(st);
	ck_ok(store_commit(sw));
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM (SELECT DISTINCT cpu, ts FROM \"%s\""
		 " WHERE rowid %% 3 != 0)", sc->table);
	want = raw_int(db, sql, 0);
	sqlite3_close(db);
	return want;
}

/*
 * A common_stacktrace key (STORE_HIST_STACK): the in-memory histogram and
 * the grouped statement give the same entries in the same order, alone,
 * with other keys and vals, sorted by the stack, sizes that drop; the
 * rows without a stack record are not counted (Hits + Dropped are the
 * stacked rows, not all rows), and stacks that differ below 16 frames are
 * one entry (at most 7 by prev_pid). (A query's filter not stealing a
 * dropped row's stack: test_hist_stacks.sh (b).)
 */
START_TEST(test_hist_stacks_two_ways)
{
	struct store_schema *sc = schema(sr, "sched", "sched_switch"), *ks;
	struct store_query q = { .schema = sc };
	int64_t want = store_stacks(sc);
	struct {
		const char *spec;
		int k[3], v[2];
		uint32_t size;
	} cases[] = {
		{ "keys=common_stacktrace", { STORE_HIST_STACK }, { 0 }, 0 },
		{ "keys=common_stacktrace,prev_pid:vals=next_prio:sort=common_stacktrace.descending",
		  { STORE_HIST_STACK, col(sc, "prev_pid") }, { col(sc, "next_prio") }, 0 },
		{ "keys=next_comm,stacktrace:sort=hitcount.descending",
		  { col(sc, "next_comm"), STORE_HIST_STACK }, { 0 }, 3 },
	};
	struct hist_lines *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));

	ck_assert(a && b);
	ck_assert_int_gt(want, 10);
	ks = schema(sr, "ftrace", "kernel_stack");
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct hist_spec sp;
		struct store_hist h = { .spec = &sp, .key_col = cases[c].k, .val_col = cases[c].v,
					.stacks = ks, .stack_col = (size_t)col(ks, "caller"),
					.stack_bytes = 16 * 8 };
		struct store_hist_totals ta, tb;

		TU_OK(hist_parse(cases[c].spec, &sp, NULL));
		if (cases[c].size)
			sp.size = cases[c].size;
		memset(a, 0, sizeof(*a));
		memset(b, 0, sizeof(*b));
		a->nkeys = b->nkeys = sp.nkeys;
		a->nvals = b->nvals = sp.nvals;
		ck_ok(store_hist(sr, &q, &h, hist_line_cb, a, &ta));
		ck_ok(sq_hist_grouped(sq(), &q, &h, hist_line_cb, b, &tb));
		ck_assert_msg(a->n == b->n && a->n > 0, "%s: %zu and %zu entries", cases[c].spec,
			      a->n, b->n);
		for (size_t i = 0; i < a->n; i++)
			ck_assert_msg(!strcmp(a->line[i], b->line[i]), "%s: entry %zu: %s | %s",
				      cases[c].spec, i, a->line[i], b->line[i]);
		ck_assert_uint_eq(ta.hits, tb.hits);
		ck_assert_uint_eq(ta.entries, tb.entries);
		ck_assert_uint_eq(ta.dropped, tb.dropped);
		ck_assert_uint_eq(ta.hits + ta.dropped, (uint64_t)want);
		ck_assert_uint_lt(ta.hits + ta.dropped, seen.n[0]);
		if (c == 0)
			ck_assert_uint_le(ta.entries, 7);
		if (cases[c].size)
			ck_assert_uint_gt(ta.dropped, 0);
	}
	free(a);
	free(b);
	store_schema_free(ks);
	store_schema_free(sc);
}
END_TEST

/*
 * Every row of @table lies in exactly one block of @type_id, and every
 * block's range and ts bounds are exactly those of its rows.
 */
static void check_blocks_of(sqlite3 *db, const char *table, int64_t type_id)
{
	char sql[512];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM \"%s\" AS e WHERE (SELECT count(*)"
		 " FROM ts_blocks AS b WHERE b.type_id = ?1 AND e.rowid BETWEEN b.lo AND b.hi)"
		 " != 1", table);
	TU_EQ(raw_int(db, sql, type_id), 0);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM ts_blocks AS b WHERE type_id = ?1 AND"
		 " (lo, hi, min_ts, max_ts, span) IS NOT (SELECT min(rowid), max(rowid),"
		 " min(ts), max(ts), max(ts) - min(ts) FROM \"%s\" WHERE rowid BETWEEN b.lo"
		 " AND b.hi)", table);
	TU_EQ(raw_int(db, sql, type_id), 0);
}

static void check_blocks(void)
{
	sqlite3 *db = raw_open();
	sqlite3_stmt *stmt = NULL;

	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT id, table_name FROM event_types", -1,
					    &stmt, NULL), SQLITE_OK);
	while (sqlite3_step(stmt) == SQLITE_ROW)
		check_blocks_of(db, (const char *)sqlite3_column_text(stmt, 1),
				sqlite3_column_int64(stmt, 0));
	sqlite3_finalize(stmt);
	/* batches of several hundred rows still make blocks of 64 at most */
	ck_assert_int_le(raw_int(db, "SELECT coalesce(max(hi - lo + 1), 0) FROM ts_blocks", 0), 64);
	TU_EQ(raw_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
				     " AND name LIKE 'ev\\_%\\_ts' ESCAPE '\\'", 0), 0);
	sqlite3_close(db);
}

/*
 * sched_switch's (rowid, ts) in (ts, rowid) order, by SQLite alone: all of
 * them, or (@pid >= 0) those with that prev_pid, read without any index.
 */
static struct rows *reference_of(int64_t pid)
{
	struct rows *rs = calloc(1, sizeof(*rs));
	sqlite3 *db = raw_open();
	sqlite3_stmt *stmt = NULL;

	ck_assert_ptr_nonnull(rs);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT rowid, ts FROM ev_sched_sched_switch"
					    " NOT INDEXED WHERE ?1 < 0 OR prev_pid = ?1"
					    " ORDER BY ts, rowid", -1, &stmt, NULL), SQLITE_OK);
	sqlite3_bind_int64(stmt, 1, pid);
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		ck_assert_uint_lt(rs->n, MAX_EVENTS);
		rs->rowid[rs->n] = (uint64_t)sqlite3_column_int64(stmt, 0);
		rs->ts[rs->n++] = sqlite3_column_int64(stmt, 1);
	}
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return rs;
}

static struct rows *reference(void)
{
	return reference_of(-1);
}

/* The capture's sched_switch events again, each in a block of its own. */
static int reinsert_cb(void *ctx, const struct decode_event *ev)
{
	(void)ctx;
	if (type_index(ev->type) == 0)
		ck_ok(ev_insert(sw, ev->type->user, host, ev, (int64_t)ev->ts + CLOCK_OFFSET));
	return 0;
}

static void reinsert_unbatched(void)
{
	for (unsigned cpu = cap.ncpus; cpu-- > 0;)
		for (size_t off = 0; off < cap.raw_len[cpu]; off += cap.page_size) {
			struct decode_page_stats ps;

			ck_ok(decoder_page(dec, cpu, cap.raw[cpu] + off, cap.page_size,
					   reinsert_cb, NULL, &ps));
		}
}

/*
 * Pages of @limit rows from @win through store_select() must be the rows
 * of @ref in [from, to), in order, each once, and store_count() must count
 * them. With @pid >= 0 (-1: every row), the query is `prev_pid == pid`.
 */
static void check_window_of(const struct store_schema *sc, const struct rows *ref,
			    int64_t pid, const struct store_window *win, size_t limit)
{
	struct rows *page = calloc(1, sizeof(*page));
	struct bound_query bq;
	size_t want = 0, k = 0;
	uint64_t n = 0;
	char text[64];
	int got;

	snprintf(text, sizeof(text), "prev_pid == %lld", (long long)pid);
	bound_query(&bq, sc, pid >= 0 ? text : NULL);
	bq.q.win = win;
	bq.q.limit = limit;
	page->sc = sc;
	page->want_pid = pid;
	for (size_t i = 0; i < ref->n; i++)
		want += ref->ts[i] >= win->from_ts && ref->ts[i] < win->to_ts;
	do {
		got = store_select(sr, &bq.q, rows_cb, page);
		ck_assert_int_ge(got, 0);
		if (got) {
			bq.q.after_ts = page->ts[page->n - 1];
			bq.q.after_rowid = page->rowid[page->n - 1];
		}
	} while (limit && (size_t)got == limit);
	ck_assert_uint_eq(page->n, want);
	for (size_t i = 0; i < ref->n; i++) {
		if (ref->ts[i] < win->from_ts || ref->ts[i] >= win->to_ts)
			continue;
		ck_assert_uint_eq(page->rowid[k], ref->rowid[i]);
		ck_assert_int_eq(page->ts[k], ref->ts[i]);
		k++;
	}
	ck_ok(store_count(sr, &bq.q, &n));
	ck_assert_uint_eq(n, want);
	bound_query_free(&bq);
	free(page);
}

static void check_window(const struct store_schema *sc, const struct rows *ref,
			 const struct store_window *win, size_t limit)
{
	check_window_of(sc, ref, -1, win, limit);
}

/*
 * Blocks overlap in time (CPU after CPU, batched and one row each): time
 * order, keyset pages and windows must still be exactly SQLite's ORDER BY
 * ts, rowid over the whole table.
 */
START_TEST(test_time_index)
{
	struct store_schema *sc = schema(sr, "sched", "sched_switch");
	struct rows *ref;
	int64_t lo, hi, mid;
	static const size_t limits[] = { 1, 7, 100, 0 };

	reinsert_unbatched();	/* more than SQ_BLOCKS_FIRST blocks, all overlapping */
	check_blocks();
	ref = reference();
	ck_assert_uint_eq(ref->n, 2 * seen.n[0]);
	lo = ref->ts[0];
	hi = ref->ts[ref->n - 1];
	mid = ref->ts[ref->n / 2];
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		check_window(sc, ref, &(struct store_window){ INT64_MIN, INT64_MAX }, limits[i]);
		check_window(sc, ref, &(struct store_window){ mid, INT64_MAX }, limits[i]);
		check_window(sc, ref, &(struct store_window){ lo + 1, mid }, limits[i]);
		check_window(sc, ref, &(struct store_window){ mid, mid + 1 }, limits[i]);
		check_window(sc, ref, &(struct store_window){ hi + 1, INT64_MAX }, limits[i]);
		check_window(sc, ref, &(struct store_window){ INT64_MIN, lo }, limits[i]);
	}
	/* windows too big to keep: SQLite sorts them, the same rows come */
	sq_win_cap = 2048;
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		check_window(sc, ref, &(struct store_window){ INT64_MIN, INT64_MAX }, limits[i]);
		check_window(sc, ref, &(struct store_window){ lo + 1, mid }, limits[i]);
	}
	sq_win_cap = (size_t)32 << 20;
	free(ref);
	store_schema_free(sc);
}
END_TEST

/* The first two sched_switch events once more, 5 s apart (@ctx counts them). */
static int wide_cb(void *ctx, const struct decode_event *ev)
{
	unsigned *i = ctx;

	if (type_index(ev->type) == 0 && *i < 2) {
		struct decode_event later = *ev;

		later.ts += *i * 5000000000ull;
		ck_ok(ev_insert(sw, ev->type->user, host, &later,
				   (int64_t)later.ts + CLOCK_OFFSET));
		(*i)++;
	}
	return 0;
}

/*
 * One block far wider than the others (a late page among hundreds of
 * narrow blocks): reads find it by its span, not by reaching back from
 * every window's start, and every window and page still holds exactly
 * SQLite's rows in (ts, rowid) order, the wide block's included.
 */
START_TEST(test_wide_block)
{
	struct store_schema *sc = schema(sr, "sched", "sched_switch");
	static const size_t limits[] = { 1, 7, 100, 0 };
	unsigned i = 0;
	struct rows *ref;
	sqlite3 *db;
	int64_t lo, hi, mid;

	reinsert_unbatched();
	ck_ok(store_begin(sw));
	for (size_t off = 0; i < 2 && off < cap.raw_len[0]; off += cap.page_size) {
		struct decode_page_stats ps;

		ck_ok(decoder_page(dec, 0, cap.raw[0] + off, cap.page_size, wide_cb, &i, &ps));
	}
	ck_ok(store_commit(sw));
	ck_assert_uint_eq(i, 2);
	check_blocks();
	db = raw_open();
	/* more than 64 blocks, one of them (only) 5 s wide */
	ck_assert_int_gt(raw_int(db, "SELECT count(*) FROM ts_blocks WHERE type_id = ?1",
				 sc->type_id), 64);
	TU_EQ(raw_int(db, "SELECT count(*) FROM ts_blocks WHERE type_id = ?1"
				     " AND span >= 5000000000", sc->type_id), 1);
	sqlite3_close(db);
	ref = reference();
	lo = ref->ts[0];
	hi = ref->ts[ref->n - 1];
	mid = ref->ts[ref->n / 2];
	for (size_t k = 0; k < sizeof(limits) / sizeof(limits[0]); k++) {
		check_window(sc, ref, &(struct store_window){ INT64_MIN, INT64_MAX }, limits[k]);
		check_window(sc, ref, &(struct store_window){ mid, INT64_MAX }, limits[k]);
		check_window(sc, ref, &(struct store_window){ lo + 1, mid }, limits[k]);
		check_window(sc, ref, &(struct store_window){ mid, hi }, limits[k]);
		check_window(sc, ref, &(struct store_window){ hi, INT64_MAX }, limits[k]);
	}
	free(ref);
	store_schema_free(sc);
}
END_TEST

/*
 * Retention by age keeps the blocks exact: cut ones shrink to the rows
 * they keep, so rows inserted afterwards (whose rowids may follow a
 * deleted one) never fall into an old block.
 */
START_TEST(test_retention_blocks)
{
	int64_t cut = CLOCK_OFFSET + (int64_t)(seen.trace_ts_sum / seen.n[0]);
	struct store_schema *sc = schema(sr, "sched", "sched_switch");
	uint64_t removed = 0, n = 0, total;
	struct rows *ref;

	reinsert_unbatched();
	ck_ok(store_count(sr, &(struct store_query){ .schema = sc }, &total));
	ck_ok(store_retain(sw, cut, 0, &removed));
	ck_assert_uint_gt(removed, 0);
	check_blocks();
	ck_ok(store_count(sr, &(struct store_query){
		.schema = sc, .win = &(struct store_window){ INT64_MIN, cut } }, &n));
	ck_assert_uint_eq(n, 0);
	ingest();		/* batched again, after the cut rows */
	reinsert_unbatched();
	check_blocks();
	ref = reference();
	check_window(sc, ref, &(struct store_window){ INT64_MIN, INT64_MAX }, 100);
	check_window(sc, ref, &(struct store_window){ cut, INT64_MAX }, 7);
	free(ref);
	store_schema_free(sc);
}
END_TEST

/* sched_switch again, in one transaction, every other row an hour later. */
static int spread_cb(void *ctx, const struct decode_event *ev)
{
	unsigned *i = ctx;
	int64_t later = (*i)++ % 2 ? 3600000000000ll : 0;

	if (type_index(ev->type) == 0)
		ck_ok(ev_insert(sw, ev->type->user, host, ev,
				   (int64_t)ev->ts + CLOCK_OFFSET + later));
	return 0;
}

/*
 * Batches whose rows lie an hour apart become several blocks, none wider
 * than 10 s (the widest bounds how far back every query of the type
 * reads), and time order stays exact.
 */
START_TEST(test_wide_batches)
{
	struct store_schema *sc = schema(sr, "sched", "sched_switch");
	unsigned i = 0;
	struct rows *ref;
	sqlite3 *db;

	ts_spread = true;
	ck_ok(store_begin(sw));
	for (unsigned cpu = 0; cpu < cap.ncpus; cpu++)
		for (size_t off = 0; off < cap.raw_len[cpu]; off += cap.page_size) {
			struct decode_page_stats ps;

			ck_ok(decoder_page(dec, cpu, cap.raw[cpu] + off, cap.page_size, spread_cb,
					   &i, &ps));
		}
	ck_ok(store_commit(sw));
	check_blocks();
	db = raw_open();
	ck_assert_int_le(raw_int(db, "SELECT max(span) FROM ts_blocks", 0), 10000000000ll);
	/* without the split, a batch holding both hours would span one */
	ck_assert_int_gt(raw_int(db, "SELECT max(max_ts) - min(min_ts) FROM ts_blocks", 0),
			 3000000000000ll);
	sqlite3_close(db);
	ref = reference();
	check_window(sc, ref, &(struct store_window){ INT64_MIN, INT64_MAX }, 7);
	check_window(sc, ref, &(struct store_window){ ref->ts[ref->n / 2], INT64_MAX }, 100);
	free(ref);
	store_schema_free(sc);
}
END_TEST

/*
 * A database of schema 4 (a per-row ts index on each event table, no
 * ts_blocks) is migrated: blocks cover its rows, the indexes are gone,
 * and queries return what they did.
 */
/* A host's agent version: its latest HELLO's (NULL when that named none), with its id. */
struct host_seen {
	uint64_t id;
	char agent[64];
	int n;
};

static int host_seen_fn(void *ctx, const struct store_host_info *h)
{
	struct host_seen *hs = ctx;

	hs->id = h->id;
	snprintf(hs->agent, sizeof(hs->agent), "%s", h->agent ? h->agent : "(null)");
	hs->n++;
	return 0;
}

START_TEST(test_host_agent)
{
	struct proto_hello h = cap.hello;
	struct host_seen hs = { 0 };
	uint64_t id;

	ck_ok(store_hosts(sr, NULL, host_seen_fn, &hs));	/* the capture's HELLO names none */
	ck_assert_int_eq(hs.n, 1);
	ck_assert_uint_eq(hs.id, host);
	ck_assert_str_eq(hs.agent, "(null)");
	h.agent = "traceagent 9.8.7";
	ck_ok(store_host(sw, &h, "CN=capture-host", &id));
	ck_assert_uint_eq(id, host);
	hs.n = 0;
	ck_ok(store_hosts(sr, NULL, host_seen_fn, &hs));
	ck_assert_int_eq(hs.n, 1);
	ck_assert_str_eq(hs.agent, "traceagent 9.8.7");
	h.agent = "";	/* an older agent again */
	ck_ok(store_host(sw, &h, "CN=capture-host", &id));
	hs.n = 0;
	ck_ok(store_hosts(sr, NULL, host_seen_fn, &hs));
	ck_assert_str_eq(hs.agent, "(null)");
}
END_TEST

/* Whether a reader of @scope may know of @sc (store_type_seen()). */
static bool type_seen(const struct store_schema *sc, const struct store_scope *scope)
{
	bool yes = false;

	ck_ok(store_type_seen(sr, sc, scope, &yes));
	return yes;
}

/*
 * A type is known to a scope when one of its hosts sent a format of it;
 * for a type with rows stored before formats were kept per host (0013's
 * formats: field types ''), when the scope has a row of it, even after
 * another host sent the same format again.
 */
START_TEST(test_type_seen)
{
	static const char *const web[] = { "capture-*" }, *const db[] = { "db?", "other-host" };
	struct store_scope s_web = { web, 1 }, s_db = { db, 2 }, none = { NULL, 0 };
	struct store_scope big = { web, STORE_SCOPE_MAX + 1 };
	struct store_schema *sc = schema(sr, "sched", "sched_switch");
	struct proto_hello h2 = cap.hello;
	bool yes;
	sqlite3 *db3;

	ck_assert(type_seen(sc, NULL));
	ck_assert(type_seen(sc, &s_web));
	ck_assert(!type_seen(sc, &s_db));
	ck_assert(!type_seen(sc, &none));
	TU_ERR(store_type_seen(sr, sc, &big, &yes), -EINVAL);
	store_schema_free(sc);
	close_both();
	db3 = raw_open();	/* as 0013 left a store: no host_formats, types '' */
	ck_assert_int_eq(sqlite3_exec(db3, "DELETE FROM host_formats; "
				      "UPDATE format_fields SET type = ''", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db3);
	open_both();
	sc = schema(sr, "sched", "sched_switch");
	ck_assert(type_seen(sc, &s_web));
	ck_assert(!type_seen(sc, &s_db));
	h2.host = (char *)"other-host";	/* sends the same format, no rows */
	ck_ok(store_host(sw, &h2, NULL, &host));
	for (int i = 0; i < CAPTURE_NFORMATS; i++) {
		struct store_origin o = { .host_id = host, .boot_id = "b2" };
		struct store_type *t;

		ck_ok(ev_type(sw, types[i], cap.formats[i].text, &o, &t));
	}
	ck_assert(type_seen(sc, &s_web));	/* its rows, still */
	ck_assert(type_seen(sc, &s_db));	/* it sent the format */
	store_schema_free(sc);
}
END_TEST

START_TEST(test_migrate_ts_index)
{
	struct store_schema *sc = schema(sr, "sched", "sched_switch");
	struct rows *before = reference(), *after;
	sqlite3 *db;
	sqlite3_stmt *q = NULL;

	store_schema_free(sc);
	close_both();
	db = raw_open();
	ck_assert_int_eq(sqlite3_exec(db, "DROP TABLE ts_blocks; DROP TABLE journal_marks; "
				      "ALTER TABLE cpus DROP COLUMN bad_pages; "
				      "ALTER TABLE cpus DROP COLUMN bad_events; "
				      "ALTER TABLE cpus DROP COLUMN rate_held_pages; "
				      "ALTER TABLE cpus DROP COLUMN rate_held_ms; "
				      "ALTER TABLE cpus DROP COLUMN quota_held_pages; "
				      "ALTER TABLE cpus DROP COLUMN quota_held_ms; "
				      "ALTER TABLE hosts DROP COLUMN freed_bytes; "
				      "ALTER TABLE hosts DROP COLUMN agent; "
				      "DROP TABLE printk_formats; DROP TABLE tgids; DROP TABLE comm_changes; "
				      "DROP TABLE formats; DROP TABLE format_fields; "
				      "DROP TABLE host_formats; DROP TABLE losses; DROP TABLE host_boots; "
				      "DROP TABLE clock_points; DROP TABLE stacks; DROP TABLE snapshot_hosts; DROP TABLE snapshots; "
				      "ALTER TABLE hosts DROP COLUMN clock_measured_ns; "
				      "ALTER TABLE hosts DROP COLUMN clock_uncertainty_ns; "
				      "ALTER TABLE hosts DROP COLUMN clock_drift_ppb; "
				      "ALTER TABLE hosts DROP COLUMN clock_disagree_ns; "
				      "ALTER TABLE hosts DROP COLUMN clock_source; "
				      "ALTER TABLE symbols DROP COLUMN module; "
				      "PRAGMA user_version = 4",
				      NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT table_name FROM event_types", -1, &q,
					    NULL), SQLITE_OK);
	while (sqlite3_step(q) == SQLITE_ROW) {
		char ddl[256];
		const char *t = (const char *)sqlite3_column_text(q, 0);

		snprintf(ddl, sizeof(ddl), "CREATE INDEX \"%s_ts\" ON \"%s\" (ts)", t, t);
		ck_assert_int_eq(sqlite3_exec(db, ddl, NULL, NULL, NULL), SQLITE_OK);
		snprintf(ddl, sizeof(ddl), "ALTER TABLE \"%s\" DROP COLUMN _tc_fmt", t);
		ck_assert_int_eq(sqlite3_exec(db, ddl, NULL, NULL, NULL), SQLITE_OK);
	}
	sqlite3_finalize(q);
	sqlite3_close(db);
	open_both();
	check_blocks();
	after = reference();
	sc = schema(sr, "sched", "sched_switch");
	check_window(sc, after, &(struct store_window){ INT64_MIN, INT64_MAX }, 7);
	ck_assert_uint_eq(after->n, before->n);
	ck_assert(memcmp(after->rowid, before->rowid, before->n * sizeof(before->rowid[0])) == 0);
	db = raw_open();
	TU_EQ(raw_int(db, "PRAGMA user_version", 0), 18);	/* and on to 0018 */
	sqlite3_close(db);
	free(before);
	free(after);
	store_schema_free(sc);
}
END_TEST

/* ---- field indexes ---- */

static int64_t ix_count(const char *name)
{
	sqlite3 *db = raw_open();
	sqlite3_stmt *stmt = NULL;
	int64_t n;

	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE"
					    " type = 'index' AND name GLOB ?", -1, &stmt, NULL),
			 SQLITE_OK);
	sqlite3_bind_text(stmt, 1, name, -1, SQLITE_STATIC);
	ck_assert_int_eq(sqlite3_step(stmt), SQLITE_ROW);
	n = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return n;
}

static void set_indexes(const char *spec, unsigned want_created, unsigned want_dropped)
{
	struct store_indexes ix = { 0 };
	unsigned created = 99, dropped = 99;
	char err[256] = "";

	ck_assert_msg(store_index_parse(&ix, spec, err, sizeof(err)) == 0, "%s: %s", spec, err);
	ck_ok(store_set_indexes(sw, &ix, &created, &dropped));
	ck_assert_uint_eq(created, want_created);
	ck_assert_uint_eq(dropped, want_dropped);
	store_indexes_free(&ix);
}

/*
 * A select that promises prev_pid == X reads the field index: its pages,
 * windows and counts are SQLite's own ORDER BY over the matching rows, and
 * they stay so with the time blocks gone (which the block path needs: it
 * then finds nothing, so the index path is the one that ran).
 */
START_TEST(test_field_index)
{
	struct store_schema *sc = schema(sr, "sched", "sched_switch");
	int64_t pid = seen.prev_pid[seen.n[0] / 2];
	struct sq_bind plain = { .kind = STORE_SIGNED, .i = pid };
	static const size_t limits[] = { 1, 7, 100, 0 };
	struct rows *ref, *got = calloc(1, sizeof(*got));
	sqlite3 *db;
	int64_t mid;

	set_indexes("sched:sched_switch prev_pid, next_pid", 2, 0);
	TU_EQ(ix_count("ix:ev_sched_sched_switch:*"), 2);
	set_indexes("sched:sched_switch prev_pid", 0, 1);	/* next_pid goes */
	TU_EQ(ix_count("ix:ev_sched_sched_switch:next_pid"), 0);
	reinsert_unbatched();	/* rows after the index was made are in it too */
	ref = reference_of(pid);
	ck_assert_uint_ge(ref->n, 4);
	mid = ref->ts[ref->n / 2];
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
			check_window_of(sc, ref, pid, &(struct store_window){ INT64_MIN, INT64_MAX },
					limits[i]);
			check_window_of(sc, ref, pid, &(struct store_window){ mid, INT64_MAX },
					limits[i]);
			check_window_of(sc, ref, pid, &(struct store_window){ ref->ts[0] + 1, mid },
					limits[i]);
		}
		if (pass)
			break;
		db = raw_open();
		ck_assert_int_eq(sqlite3_exec(db, "DELETE FROM ts_blocks", NULL, NULL, NULL),
				 SQLITE_OK);
		sqlite3_close(db);
	}
	/* no promise (plain.eq_column): the (now empty) blocks */
	got->sc = sc;
	got->want_pid = pid;
	ck_assert_int_eq(sq_select_where(sq(), sc, "\"prev_pid\" = ?", &plain, 1, NULL, 0, 0, 10, false,
					 NULL, rows_cb, got), 0);
	set_indexes("none", 0, 1);
	TU_EQ(ix_count("ix:*"), 0);
	free(got);
	free(ref);
	store_schema_free(sc);
}
END_TEST

/* Indexes named before their table or column exists come with it. */
START_TEST(test_field_index_later)
{
	char *fmt = evolved_format();
	struct decoder *d2;
	const struct decode_type *t2;
	struct store_type *st2;

	set_indexes("sched:sched_w* pid", 1, 0);	/* sched_wakeup's pid */
	set_indexes("sched pid extra_field", 0, 0);	/* kept; no extra_field yet */
	TU_EQ(ix_count("ix:ev_sched_sched_wakeup:pid"), 1);
	TU_OK(decoder_new(&cap.hello, &d2));
	TU_OK(decoder_format(d2, "sched", "sched_switch", fmt, strlen(fmt), &t2));
	ck_ok(ev_type(sw, t2, fmt, &test_origin, &st2));
	TU_EQ(ix_count("ix:ev_sched_sched_switch:extra_field"), 1);
	decoder_free(d2);
	free(fmt);
}
END_TEST

START_TEST(test_index_parse)
{
	static const struct {
		const char *spec;
		int ret;
		size_t n;
	} cases[] = {
		{ "sched:sched_switch prev_pid", 0, 1 },
		{ "  sched:sched_switch prev_pid,next_pid  ", 0, 2 },
		{ "sched prev_pid next_pid,, pid", 0, 3 },
		{ "*:sys_* id", 0, 1 },
		{ "none", 0, 0 },
		{ " none ", 0, 0 },
		{ "", TC_ERR_CONFIG, 0 },
		{ "sched:sched_switch", TC_ERR_CONFIG, 0 },
		{ "sched: prev_pid", TC_ERR_CONFIG, 0 },
		{ ":x prev_pid", TC_ERR_CONFIG, 0 },
		{ "a:b:c prev_pid", TC_ERR_CONFIG, 0 },
		{ "sched:sched_switch prev-pid", TC_ERR_CONFIG, 0 },
		{ "sched:sched_switch \"pid\"", TC_ERR_CONFIG, 0 },
		{ "sched;drop pid", TC_ERR_CONFIG, 0 },
		{ "sched:x pid\n", TC_ERR_CONFIG, 0 },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct store_indexes ix = { 0 };
		char err[256] = "";
		int ret = store_index_parse(&ix, cases[k].spec, err, sizeof(err));

		ck_assert_msg(ret == cases[k].ret, "'%s': %d (%s)", cases[k].spec, ret, err);
		ck_assert_uint_eq(ix.n, cases[k].n);
		if (ret)
			ck_assert_msg(strstr(err, "SYSTEM[:EVENT] FIELD"), "'%s': %s",
				      cases[k].spec, err);
		store_indexes_free(&ix);
	}
}
END_TEST

/* ---- user SQL (store_sql()) ---- */

struct sql_rows {
	size_t n;
	size_t ncols;
	char names[8][32];
	int64_t v[MAX_EVENTS][2];	/* the first two columns, as integers */
	char text[64];			/* the first row's first column, when text */
};

static int sql_cb(void *ctx, size_t ncols, const char *const *names,
		  const struct store_sql_value *vals)
{
	struct sql_rows *r = ctx;

	if (!vals) {		/* the columns, first */
		r->ncols = ncols;
		for (size_t i = 0; i < ncols && i < 8; i++)
			snprintf(r->names[i], sizeof(r->names[i]), "%s", names[i]);
		return 0;
	}
	ck_assert_uint_lt(r->n, MAX_EVENTS);
	ck_assert_uint_eq(ncols, r->ncols);
	for (size_t i = 0; i < ncols && i < 2; i++)
		r->v[r->n][i] = vals[i].kind == STORE_SQL_INT ? vals[i].i : -1;
	if (r->n == 0 && vals[0].kind == STORE_SQL_TEXT)
		snprintf(r->text, sizeof(r->text), "%s", (const char *)vals[0].p);
	r->n++;
	return 0;
}

static struct store_reader *sql_reader(void)
{
	struct store_reader *ro = NULL;

	TU_OK(store_reader_open(path, &ro));
	return ro;
}

static int sql_run(struct store_reader *ro, const char *text, struct sql_rows *r, uint64_t max_rows)
{
	struct store_sql_limits lim = { .max_rows = max_rows, .time_ms = 60000 };

	memset(r, 0, sizeof(*r));
	return store_sql(ro, text, NULL, &lim, sql_cb, r);
}

/* A GROUP BY over the sched_switch view adds up to the events stored. */
START_TEST(test_sql_group_by)
{
	static struct sql_rows r;
	struct store_reader *ro = sql_reader();
	uint64_t sum = 0;
	int ret;

	ret = sql_run(ro, "SELECT prev_pid, count(*) AS n FROM sched_switch"
		      " GROUP BY prev_pid ORDER BY prev_pid", &r, 0);
	ck_assert_msg(ret == 0, "%s", store_errmsg(ro));
	ck_assert_str_eq(r.names[0], "prev_pid");
	ck_assert_str_eq(r.names[1], "n");
	for (size_t g = 0; g < r.n; g++) {
		uint64_t want = 0;

		for (unsigned k = 0; k < seen.n[0]; k++)
			want += seen.prev_pid[k] == r.v[g][0];
		ck_assert_uint_eq((uint64_t)r.v[g][1], want);
		sum += (uint64_t)r.v[g][1];
	}
	ck_assert_uint_gt(seen.n[0], 0);
	ck_assert_uint_eq(sum, seen.n[0]);
	TU_OK(sql_run(ro, "SELECT count(*), sum(trace_ts) FROM sched__sched_switch"
		      " WHERE host = 'capture-host'", &r, 0));
	ck_assert_uint_eq(r.n, 1);
	ck_assert_uint_eq((uint64_t)r.v[0][0], seen.n[0]);
	ck_assert_uint_eq((uint64_t)r.v[0][1], seen.trace_ts_sum);
	TU_OK(sql_run(ro, "SELECT count(*), count(prev_pid) FROM SCHED_SWITCH AS s"
		      " JOIN hosts AS h ON h.host = s.host"
		      " WHERE s.cpu IN (SELECT cpu FROM stats)", &r, 0));
	ck_assert_uint_eq((uint64_t)r.v[0][0], seen.n[0]);
	ck_assert_uint_eq((uint64_t)r.v[0][1], seen.n[0]);
	TU_OK(sql_run(ro, "SELECT host FROM hosts", &r, 0));
	ck_assert_str_eq(r.text, "capture-host");
	TU_OK(sql_run(ro, "SELECT cpu, events FROM stats ORDER BY cpu", &r, 0));
	ck_assert_uint_eq(r.n, cap.ncpus);
	TU_OK(sql_run(ro, "SELECT count(*) FROM drops", &r, 0));
	/* the views are listed in the TEMP schema */
	TU_OK(sql_run(ro, "SELECT name FROM sqlite_temp_master WHERE name = 'stats'",
		      &r, 0));
	ck_assert_str_eq(r.text, "stats");
	store_reader_close(ro);
}
END_TEST

/* Each kind of statement that is not a read of the views is refused, and changes nothing. */
START_TEST(test_sql_refused)
{
	static const struct {
		const char *text;
		int ret;
		const char *says;
	} cases[] = {
		{ "INSERT INTO sched_switch (cpu) VALUES (1)", -EACCES, "not allowed" },
		{ "INSERT INTO ev_sched_sched_switch (host_id, cpu, ts, trace_ts) VALUES (1, 1, 1, 1)",
		  -EACCES, "not allowed" },
		{ "UPDATE ev_sched_sched_switch SET cpu = 7", -EACCES, "not allowed in --sql: UPDATE" },
		{ "DELETE FROM ev_sched_sched_switch", -EACCES, "not allowed in --sql: DELETE" },
		{ "DROP TABLE ev_sched_sched_switch", -EACCES, "not allowed" },
		{ "DROP VIEW sched_switch", -EACCES, "not allowed" },
		{ "CREATE TABLE t (x)", -EACCES, "a change of the schema" },
		{ "CREATE TEMP TABLE t (x)", -EACCES, "a change of the schema" },
		{ "CREATE TEMP VIEW v AS SELECT * FROM main.hosts", -EACCES, "a change of the schema" },
		{ "ATTACH DATABASE 'x.db' AS x", -EACCES, "ATTACH" },
		{ "PRAGMA writable_schema = 1", -EACCES, "PRAGMA" },
		{ "PRAGMA table_info(hosts)", -EACCES, "PRAGMA" },
		{ "SELECT load_extension('/nonexistent.so')", -EACCES, "load_extension" },
		{ "SELECT * FROM ev_sched_sched_switch", -EACCES, "ev_sched_sched_switch" },
		{ "SELECT name FROM main.hosts", -EACCES, "hosts" },
		{ "SELECT count(*) FROM journal_marks", -EACCES, "journal_marks" },
		{ "SELECT count(*) FROM sqlite_master", -EACCES, "sqlite_master" },
		{ "SELECT * FROM sqlite_master", -EACCES, "sqlite_master" },
		{ "SELECT * FROM pragma_table_info('hosts')", -EACCES, "not allowed" },
		{ "WITH sched_switch AS (SELECT * FROM main.journal_marks) SELECT * FROM sched_switch",
		  -EACCES, "journal_marks" },
		{ "SELECT count(*) FROM sched_switch; DELETE FROM ev_sched_sched_switch",
		  TC_ERR_SYNTAX, "one statement" },
		{ "SELECT 1; SELECT 2", TC_ERR_SYNTAX, "one statement" },
		{ "BEGIN IMMEDIATE", -EACCES, "not allowed" },
		{ "SELEC 1", TC_ERR_SYNTAX, "syntax error" },
	};
	static struct sql_rows r;
	struct store_reader *ro = sql_reader();
	sqlite3 *db = raw_open();
	int64_t rows = raw_int(db, "SELECT count(*) FROM ev_sched_sched_switch WHERE ? = 1", 1);
	int64_t objs = raw_int(db, "SELECT count(*) FROM sqlite_master WHERE ? = 1", 1);

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		int ret = sql_run(ro, cases[k].text, &r, 0);

		ck_assert_msg(ret == cases[k].ret && strstr(store_errmsg(ro), cases[k].says),
			      "'%s': %d %s (%s)", cases[k].text, ret, tc_strerror(ret),
			      store_errmsg(ro));
		ck_assert_uint_eq(r.n, 0);
	}
	TU_EQ(raw_int(db, "SELECT count(*) FROM ev_sched_sched_switch WHERE ? = 1", 1),
			 rows);
	TU_EQ(raw_int(db, "SELECT count(*) FROM sqlite_master WHERE ? = 1", 1), objs);
	TU_EQ(raw_int(db, "SELECT count(*) FROM ev_sched_sched_switch WHERE cpu = ?", 7),
			 0);
	ck_assert_int_eq(access("x.db", F_OK), -1);
	/* and the reader still answers */
	TU_OK(sql_run(ro, "SELECT count(*) FROM sched_switch", &r, 0));
	ck_assert_uint_eq((uint64_t)r.v[0][0], seen.n[0]);
	sqlite3_close(db);
	store_reader_close(ro);
}
END_TEST

/* A statement that never ends is stopped by the time limit; rows by the row limit. */
START_TEST(test_sql_limits)
{
	static struct sql_rows r;
	struct store_reader *ro = sql_reader();
	struct store_sql_limits lim = { .time_ms = 100 };
	int ret;

	ret = store_sql(ro, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)"
			" SELECT count(*) FROM c", NULL, &lim, sql_cb, &r);
	ck_assert_msg(ret == TC_ERR_TIMEOUT && strstr(store_errmsg(ro), "time limit"),
		      "%d %s", ret, store_errmsg(ro));
	ck_assert_int_eq(sql_run(ro, "SELECT cpu, ts FROM sched_switch", &r, 5), 1);
	ck_assert_uint_eq(r.n, 5);
	TU_OK(sql_run(ro, "SELECT cpu, ts FROM sched_switch LIMIT 5", &r, 5));
	ck_assert_uint_eq(r.n, 5);
	TU_ERR(sql_run(ro, "SELECT zeroblob(2000000)", &r, 0), TC_ERR_TOO_LONG);
	store_reader_close(ro);
}
END_TEST

/* A scoped asker is refused: the views are not restricted by host. */
START_TEST(test_sql_scoped)
{
	static const char *const web[] = { "capture-*" };
	struct store_scope scope = { web, 1 };
	struct store_sql_limits lim = { 0 };
	static struct sql_rows r;
	struct store_reader *ro = sql_reader();
	int ret = store_sql(ro, "SELECT count(*) FROM sched_switch", &scope, &lim, sql_cb, &r);

	ck_assert_msg(ret == -EACCES && strstr(store_errmsg(ro), "scope"), "%d %s", ret,
		      store_errmsg(ro));
	ck_assert_uint_eq(r.n, 0);
	store_reader_close(ro);
}
END_TEST

/* ---- issue 33: losses and boots ---- */

struct loss_seen {
	unsigned n;
	uint32_t cpu[16];
	int64_t ts[16], count[16], id[16];
	char host[16][32];
};

static int loss_seen_fn(void *ctx, const struct store_loss_row *x)
{
	struct loss_seen *ls = ctx;

	ck_assert_uint_lt(ls->n, 16);
	ls->cpu[ls->n] = x->l.cpu;
	ls->ts[ls->n] = x->l.ts;
	ls->count[ls->n] = x->l.count;
	ls->id[ls->n] = x->id;
	snprintf(ls->host[ls->n], sizeof(ls->host[0]), "%s", x->host);
	ck_assert_str_eq(x->boot_id, "boot-a");
	ls->n++;
	return 0;
}

static struct loss_seen losses_of(const struct store_query *q)
{
	struct loss_seen ls = { 0 };

	ck_ok(store_losses(sr, q, loss_seen_fn, &ls));
	return ls;
}

/*
 * Losses are kept once per (host, boot, CPU, page timestamp): written
 * again (a journal replay, a resend past the marks) they add nothing.
 * Read back in time order within a window, CPUs, hosts and the scope,
 * keyset paged both ways; retention takes those of its time.
 */
START_TEST(test_losses)
{
	static const char *const web[] = { "capture-*" }, *const other[] = { "other-*" };
	struct store_scope s_web = { web, 1 }, s_other = { other, 1 };
	const struct store_loss l[] = {
		{ .cpu = 1, .ts = 3000, .trace_ts = 30, .count = 7 },
		{ .cpu = 0, .ts = 1000, .trace_ts = 10, .count = -1 },
		{ .cpu = 1, .ts = 2000, .trace_ts = 20, .count = 5 },
	};
	struct store_window win = { 1500, INT64_MAX };
	uint32_t cpu1 = 1;
	struct store_query q = { 0 };
	struct loss_seen ls;
	uint64_t removed = 0;

	ck_ok(store_begin(sw));
	ck_ok(store_losses_put(sw, host, "boot-a", l, 3));
	ck_ok(store_losses_put(sw, host, "boot-a", l, 2));	/* replayed: nothing new */
	ck_ok(store_commit(sw));
	ls = losses_of(&q);
	ck_assert_uint_eq(ls.n, 3);
	ck_assert_int_eq(ls.ts[0], 1000);
	ck_assert_int_eq(ls.count[0], -1);
	ck_assert_int_eq(ls.ts[1], 2000);
	ck_assert_int_eq(ls.count[2], 7);
	ck_assert_str_eq(ls.host[0], "capture-host");
	q.win = &win;
	ck_assert_uint_eq(losses_of(&q).n, 2);
	q.cpus = &cpu1;
	q.ncpus = 1;
	q.win = NULL;
	ck_assert_uint_eq(losses_of(&q).n, 2);
	q.ncpus = 0;
	q.scope = &s_web;
	ck_assert_uint_eq(losses_of(&q).n, 3);
	q.scope = &s_other;	/* another host's asker sees none */
	ck_assert_uint_eq(losses_of(&q).n, 0);
	q.scope = NULL;
	q.host_glob = "nope*";
	ck_assert_uint_eq(losses_of(&q).n, 0);
	q.host_glob = NULL;
	/* paging: after the first, one at a time; and backwards */
	q.limit = 1;
	q.after_ts = ls.ts[0];
	q.after_rowid = (uint64_t)ls.id[0];
	ls = losses_of(&q);
	ck_assert_uint_eq(ls.n, 1);
	ck_assert_int_eq(ls.ts[0], 2000);
	q.reverse = true;
	q.limit = 0;
	ls = losses_of(&q);
	ck_assert_uint_eq(ls.n, 0);	/* nothing before the first */
	q.after_ts = 2500;
	q.after_rowid = 1;
	ls = losses_of(&q);
	ck_assert_uint_eq(ls.n, 2);
	ck_assert_int_eq(ls.ts[0], 2000);
	ck_assert_int_eq(ls.ts[1], 1000);
	/* retention by age takes the losses of its time */
	ck_ok(store_begin(sw));
	ck_ok(store_retain(sw, 2500, 0, &removed));
	ck_ok(store_commit(sw));
	q = (struct store_query){ 0 };
	ls = losses_of(&q);
	ck_assert_uint_eq(ls.n, 1);
	ck_assert_int_eq(ls.ts[0], 3000);
	TU_ERR(store_losses(sr, NULL, loss_seen_fn, &ls), -EINVAL);
	TU_ERR(store_losses_put(sw, host, NULL, l, 1), -EINVAL);
	ck_ok(store_losses_put(sw, host, "boot-a", NULL, 0));
}
END_TEST

struct boot_seen {
	unsigned n;
	char boot[32], header_page[64], header_event[64], clock[16];
	bool has_event;
	uint32_t long_size, page_size;
	bool big_endian;
	unsigned nformats;
	int64_t last_id;
};

static int boot_seen_fn(void *ctx, const struct store_boot *b)
{
	struct boot_seen *bs = ctx;

	bs->n++;
	snprintf(bs->boot, sizeof(bs->boot), "%s", b->boot_id);
	snprintf(bs->header_page, sizeof(bs->header_page), "%.*s", (int)b->header_page_len,
		 b->header_page ? b->header_page : "");
	bs->has_event = b->header_event != NULL;
	snprintf(bs->header_event, sizeof(bs->header_event), "%.*s", (int)b->header_event_len,
		 b->header_event ? b->header_event : "");
	snprintf(bs->clock, sizeof(bs->clock), "%s", b->trace_clock ? b->trace_clock : "");
	bs->long_size = b->long_size;
	bs->page_size = b->page_size;
	bs->big_endian = b->big_endian;
	return 0;
}

static int format_seen_fn(void *ctx, int64_t id, const char *system, const char *name,
			  const char *text)
{
	struct boot_seen *bs = ctx;

	ck_assert(id > bs->last_id);
	ck_assert(system && name && strstr(text, name));
	bs->last_id = id;
	bs->nformats++;
	return 0;
}

/*
 * A boot as HELLO and HEADER_PAGE describe it: what one call leaves out
 * keeps what another stored; the boot up at a time is the last one first
 * seen by then; its formats are those the host sent in it.
 */
START_TEST(test_boots)
{
	struct store_boot b1 = { .boot_id = "b", .since = 1000, .kernel = "6.1.0",
				 .trace_clock = "mono", .long_size = 8, .page_size = 4096 };
	struct store_boot h1 = { .boot_id = "b", .since = 9999, .header_page = "hp-text",
				 .header_page_len = 7, .header_event = "he-text!",
				 .header_event_len = 7 };
	struct store_boot b2 = { .boot_id = "c", .since = 5000, .trace_clock = "x86-tsc",
				 .long_size = 4, .big_endian = true };
	struct boot_seen bs = { 0 };

	/* a host stored before boots were kept: its hosts row */
	ck_ok(store_boot_get(sr, host, INT64_MAX, boot_seen_fn, &bs));
	ck_assert_uint_eq(bs.n, 1);
	ck_assert_uint_eq(bs.long_size, 0);
	ck_assert(!bs.has_event);
	ck_ok(store_boot(sw, host, &b1));
	ck_ok(store_boot(sw, host, &h1));	/* a later connection's HEADER_PAGE */
	ck_ok(store_boot(sw, host, &b1));	/* and its HELLO again: the texts stay */
	ck_ok(store_boot(sw, host, &b2));
	memset(&bs, 0, sizeof(bs));
	ck_ok(store_boot_get(sr, host, 3000, boot_seen_fn, &bs));
	ck_assert_str_eq(bs.boot, "b");
	ck_assert_str_eq(bs.header_page, "hp-text");
	ck_assert_str_eq(bs.header_event, "he-text");	/* its length counts */
	ck_assert_str_eq(bs.clock, "mono");
	ck_assert_uint_eq(bs.long_size, 8);
	ck_assert_uint_eq(bs.page_size, 4096);
	ck_assert(!bs.big_endian);
	memset(&bs, 0, sizeof(bs));
	ck_ok(store_boot_get(sr, host, 10, boot_seen_fn, &bs));	/* before any: the first */
	ck_assert_str_eq(bs.boot, "b");
	memset(&bs, 0, sizeof(bs));
	ck_ok(store_boot_get(sr, host, INT64_MAX, boot_seen_fn, &bs));
	ck_assert_str_eq(bs.boot, "c");
	ck_assert_uint_eq(bs.long_size, 4);
	ck_assert(bs.big_endian);
	ck_assert(!bs.has_event);
	TU_ERR(store_boot_get(sr, host + 100, 1, boot_seen_fn, &bs), -ENOENT);
	/* the formats of boot "b" (test_origin's), paged */
	memset(&bs, 0, sizeof(bs));
	ck_ok(store_boot_formats(sr, host, "b", 0, 1000, format_seen_fn, &bs));
	ck_assert_uint_eq(bs.nformats, CAPTURE_NFORMATS);
	bs.nformats = 0;
	bs.last_id = 0;
	ck_ok(store_boot_formats(sr, host, "b", 0, 2, format_seen_fn, &bs));
	ck_assert_uint_eq(bs.nformats, 2);
	ck_ok(store_boot_formats(sr, host, "b", bs.last_id, 1000, format_seen_fn, &bs));
	ck_assert_uint_eq(bs.nformats, CAPTURE_NFORMATS);
	bs.nformats = 0;
	ck_ok(store_boot_formats(sr, host, "c", 0, 1000, format_seen_fn, &bs));
	ck_assert_uint_eq(bs.nformats, 0);
	TU_ERR(store_boot(sw, host, &(struct store_boot){ 0 }), -EINVAL);
}
END_TEST

static Suite *store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("sqlite");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tu_add_tests(tc, TU_TESTS(test_where_matches_scan, test_query_checks,
					test_keyset_paging, test_markers_and_comm,
					test_schema_evolution, test_reopen, test_counters, test_host_usage,
					test_stream_marks, test_journal_marks, test_symbols,
					test_printk_formats, test_tgids, test_losses, test_boots,
					test_names_and_errors, test_list, test_retention, test_tail,
					test_batches, test_writer_failure, test_time_index,
					test_retention_blocks, test_migrate_ts_index, test_host_agent,
					test_wide_batches, test_wide_block, test_field_index, test_field_index_later,
					test_index_parse, test_db_removed, test_db_replaced,
					test_scope, test_type_seen, test_sql_group_by, test_sql_refused,
					test_sql_limits, test_sql_scoped, test_hist_matches_scan,
					test_hist_two_ways, test_hist_stacks_two_ways));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(store_suite())
