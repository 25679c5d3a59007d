/*
 * test_dedup.c - the collector's exactly-once marks (server/ingest/dedup.c),
 * reached through libserver.la, on a temporary SQLite store: which pages
 * count as resends, marks shared by the live connections of one agent
 * session and kept apart between sessions, marks that survive a commit
 * and a reopened store, and marks that a rolled-back transaction takes
 * back (dedup_reload()).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/tc_error.h"
#include "proto/msg.h"
#include "server/ingest/dedup.h"
#include "server/store/store.h"
#include "tests/testutil.h"

#define ck_ok(expr) do { \
	int ret_ = (expr); \
	ck_assert_msg(ret_ == 0, "%s: %s (%s)", #expr, tc_strerror(ret_), \
		      st ? store_errmsg(st) : ""); \
} while (0)

#define NSTREAMS 4

static char path[64];
static struct store_writer *st;
static uint64_t host;
static struct dedup *list;	/* the live sessions, as the ingest worker keeps them */

static void open_store(void)
{
	struct proto_hello h = {
		.version = PROTO_VERSION, .host = (char *)"dedup-host",
		.machine_id = (char *)"0123456789abcdef0123456789abcdef",
		.boot_id = (char *)"boot-1", .kernel = (char *)"6.18-test",
		.trace_clock = (char *)"mono", .ncpus = NSTREAMS, .page_size = 4096,
		.long_size = 8, .session = 42,
	};

	ck_ok(store_writer_open(path, &st));
	ck_ok(store_host(st, &h, "CN=dedup-host", &host));
}

static void close_store(void)
{
	store_writer_close(st);
	st = NULL;
}

static void setup(void)
{
	int fd;

	strcpy(path, "/tmp/tc-test-dedup-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	unlink(path);	/* let SQLite create it */
	list = NULL;
	open_store();
}

static void teardown(void)
{
	char aux[80];

	close_store();
	unlink(path);
	snprintf(aux, sizeof(aux), "%s-wal", path);
	unlink(aux);
	snprintf(aux, sizeof(aux), "%s-shm", path);
	unlink(aux);
}

/* The marks of session @session (boot "boot-1"), in a transaction of its own. */
static struct dedup *get(uint64_t session)
{
	struct dedup *d = NULL;

	ck_ok(store_begin(st));
	ck_ok(dedup_get(&list, st, host, "boot-1", session, NSTREAMS, &d));
	ck_ok(store_commit(st));
	ck_assert_ptr_nonnull(d);
	return d;
}

START_TEST(test_new_session_has_seen_nothing)
{
	struct dedup *d = get(42);

	for (uint32_t i = 0; i < NSTREAMS; i++) {
		ck_assert_uint_eq(dedup_high(d, i), 0);
		ck_assert(!dedup_seen(d, i, 1));
	}
	dedup_put(&list, d);
	ck_assert_ptr_null(list);
}
END_TEST

START_TEST(test_seen_only_what_was_stored)
{
	struct dedup *d = get(42);

	ck_ok(dedup_stored(d, 1, 5));
	ck_assert(!dedup_seen(d, 1, 1));	/* spans, not a high-water mark */
	ck_assert(dedup_seen(d, 1, 5));
	ck_assert(!dedup_seen(d, 1, 6));
	ck_assert(!dedup_seen(d, 0, 5));	/* per stream */
	ck_assert(!dedup_seen(d, 2, 5));

	ck_ok(dedup_stored(d, 1, 3));
	ck_assert_uint_eq(dedup_high(d, 1), 5);
	ck_assert(dedup_seen(d, 1, 3));
	ck_assert(!dedup_seen(d, 1, 4));
	ck_ok(dedup_stored(d, 1, 4));		/* 3..5 one span */
	ck_assert(dedup_seen(d, 1, 4));
	ck_ok(dedup_stored(d, 1, 9));
	ck_assert_uint_eq(dedup_high(d, 1), 9);
	ck_assert(!dedup_seen(d, 1, 8));

	TU_ERR(dedup_stored(d, NSTREAMS, 1), -EINVAL);
	ck_assert(!dedup_seen(d, NSTREAMS, 1));
	ck_assert_uint_eq(dedup_high(d, NSTREAMS), 0);
	dedup_put(&list, d);
}
END_TEST

/*
 * Two connections of one session (a reconnect while the old connection
 * still delivers) share the marks; another session has its own; a session
 * that comes back with another number of streams is refused.
 */
START_TEST(test_shared_per_session)
{
	struct dedup *a = get(42), *b = get(42), *other = get(43), *bad = NULL;

	ck_assert_ptr_eq(a, b);
	ck_assert_ptr_ne(a, other);
	ck_ok(dedup_stored(a, 0, 7));
	ck_assert(dedup_seen(b, 0, 7));
	ck_assert(!dedup_seen(other, 0, 7));
	ck_ok(store_begin(st));
	TU_ERR(dedup_get(&list, st, host, "boot-1", 42, NSTREAMS + 1, &bad), TC_ERR_MSG_MALFORMED);
	ck_ok(store_commit(st));
	ck_assert_ptr_null(bad);
	/* the last reference frees: the first put keeps b's marks */
	dedup_put(&list, a);
	ck_assert(dedup_seen(b, 0, 7));
	dedup_put(&list, b);
	dedup_put(&list, other);
	ck_assert_ptr_null(list);
}
END_TEST

/* Flushed and committed marks are what a later connection (or run) starts from. */
START_TEST(test_committed_marks_persist)
{
	struct dedup *d = get(42);

	ck_ok(dedup_stored(d, 0, 11));
	ck_ok(dedup_stored(d, 3, 4));
	ck_ok(store_begin(st));
	ck_ok(dedup_flush(d, st));
	ck_ok(store_commit(st));
	dedup_put(&list, d);
	ck_assert_ptr_null(list);

	close_store();		/* a collector restart */
	open_store();
	d = get(42);
	ck_assert_uint_eq(dedup_high(d, 0), 11);
	ck_assert_uint_eq(dedup_high(d, 3), 4);
	ck_assert_uint_eq(dedup_high(d, 1), 0);
	ck_assert(dedup_seen(d, 0, 11));
	ck_assert(!dedup_seen(d, 0, 12));
	dedup_put(&list, d);
	d = get(43);		/* another session of the host: nothing */
	ck_assert_uint_eq(dedup_high(d, 0), 0);
	dedup_put(&list, d);
}
END_TEST

/*
 * A rolled-back transaction takes its marks with it: dedup_reload() goes
 * back to what is committed, so the agent's resends are taken again.
 */
START_TEST(test_rollback_takes_marks_back)
{
	struct dedup *d = get(42), *other = get(43);

	ck_ok(dedup_stored(d, 2, 5));
	ck_ok(store_begin(st));
	ck_ok(dedup_flush(d, st));
	ck_ok(store_commit(st));

	ck_ok(store_begin(st));
	ck_ok(dedup_stored(d, 2, 8));		/* flushed, then lost */
	ck_ok(dedup_flush(d, st));
	ck_ok(dedup_stored(d, 1, 3));		/* never flushed */
	ck_ok(dedup_stored(other, 0, 6));
	ck_ok(store_rollback(st));
	ck_ok(dedup_reload(list, st));
	ck_assert_uint_eq(dedup_high(d, 2), 5);
	ck_assert(!dedup_seen(d, 2, 6));
	ck_assert_uint_eq(dedup_high(d, 1), 0);
	ck_assert_uint_eq(dedup_high(other, 0), 0);

	/* the reload left nothing dirty: the committed mark is what stays */
	ck_ok(store_begin(st));
	ck_ok(dedup_flush(d, st));
	ck_ok(store_commit(st));
	dedup_put(&list, d);
	d = get(42);
	ck_assert_uint_eq(dedup_high(d, 2), 5);
	dedup_put(&list, d);
	dedup_put(&list, other);
}
END_TEST

/*
 * Another collector's spans (issue 35), through a store that keeps spans
 * as ClickHouse does: a collector taking a session over after a failover
 * stores the pages below what the other stored, and never those it stored.
 */
static struct store_span fake_spans[16];
static unsigned fake_n;

static int fake_marks(struct store_writer *w, uint64_t host_id, const char *boot_id,
		      uint64_t session, uint32_t n, store_span_fn fn, void *ctx)
{
	int ret = 0;

	(void)w, (void)host_id, (void)boot_id, (void)session;
	for (unsigned i = 0; i < fake_n && ret == 0; i++)
		if (fake_spans[i].stream < n)
			ret = fn(ctx, &fake_spans[i]);
	return ret;
}

static int fake_mark(struct store_writer *w, uint64_t host_id, const char *boot_id,
		     uint64_t session, uint32_t stream, uint64_t lo, uint64_t hi)
{
	(void)w, (void)host_id, (void)boot_id, (void)session;
	if (fake_n == sizeof(fake_spans) / sizeof(*fake_spans))
		return -ENOSPC;
	fake_spans[fake_n++] = (struct store_span){ stream, lo, hi };
	return 0;
}

START_TEST(test_spans_of_another_collector)
{
	static const struct store_writer_ops ops = { .stream_marks = fake_marks,
						     .stream_mark = fake_mark };
	struct store_writer fw = { .ops = &ops };
	struct dedup *fl = NULL, *d = NULL, *again = NULL;

	fake_n = 0;
	fake_spans[fake_n++] = (struct store_span){ 0, 10, 20 };	/* B stored 10..20 */
	fake_spans[fake_n++] = (struct store_span){ 0, 1, 3 };
	fake_spans[fake_n++] = (struct store_span){ 0, 4, 4 };		/* adjacent: 1..4 */
	ck_ok(dedup_get(&fl, &fw, 7, "boot-1", 9, NSTREAMS, &d));
	ck_assert(dedup_seen(d, 0, 1) && dedup_seen(d, 0, 4));
	ck_assert(!dedup_seen(d, 0, 5) && !dedup_seen(d, 0, 9));	/* A's journal: stored */
	ck_assert(dedup_seen(d, 0, 10) && dedup_seen(d, 0, 20));	/* B's: not twice */
	ck_assert(!dedup_seen(d, 0, 21));
	ck_assert(!dedup_seen(d, 1, 10));
	for (uint64_t seq = 5; seq <= 9; seq++)
		ck_ok(dedup_stored(d, 0, seq));
	ck_ok(dedup_stored(d, 2, 1));
	ck_ok(dedup_flush(d, &fw));
	ck_assert_uint_eq(fake_n, 5);		/* one span per stream that moved */
	ck_assert(fake_spans[3].stream == 0 && fake_spans[3].lo == 5 && fake_spans[3].hi == 9);
	ck_assert(fake_spans[4].stream == 2 && fake_spans[4].lo == 1 && fake_spans[4].hi == 1);
	ck_ok(dedup_flush(d, &fw));
	ck_assert_uint_eq(fake_n, 5);		/* nothing new: nothing written */
	dedup_put(&fl, d);
	ck_assert_ptr_null(fl);

	ck_ok(dedup_get(&fl, &fw, 7, "boot-1", 9, NSTREAMS, &again));
	ck_assert_uint_eq(dedup_high(again, 0), 20);
	for (uint64_t seq = 1; seq <= 20; seq++)
		ck_assert(dedup_seen(again, 0, seq));
	dedup_put(&fl, again);
}
END_TEST

/*
 * A peer that leaves a gap at every page cannot grow the marks without
 * end: past 4096 spans the oldest are joined (their gaps count as stored),
 * the recent gaps stay open, and sequence numbers at the top of the range
 * do not wrap.
 */
START_TEST(test_spans_bounded)
{
	struct dedup *d = get(42);

	for (uint64_t seq = 1; seq <= 20000; seq += 2)
		ck_ok(dedup_stored(d, 0, seq));
	ck_assert(dedup_seen(d, 0, 2));		/* joined: an old gap */
	ck_assert(!dedup_seen(d, 0, 19998));	/* a recent gap: open */
	ck_assert(dedup_seen(d, 0, 19999));
	ck_ok(dedup_stored(d, 1, UINT64_MAX));
	ck_ok(dedup_stored(d, 1, UINT64_MAX - 1));
	ck_assert(dedup_seen(d, 1, UINT64_MAX) && dedup_seen(d, 1, UINT64_MAX - 1));
	ck_assert(!dedup_seen(d, 1, 0) && !dedup_seen(d, 1, UINT64_MAX - 2));
	ck_assert_uint_eq(dedup_high(d, 1), UINT64_MAX);
	dedup_put(&list, d);
}
END_TEST

static Suite *dedup_suite(void)
{
	Suite *s = suite_create("dedup");
	TCase *tc = tcase_create("dedup");

	tcase_add_checked_fixture(tc, setup, teardown);
	tu_add_tests(tc, TU_TESTS(test_new_session_has_seen_nothing, test_seen_only_what_was_stored,
					test_shared_per_session, test_committed_marks_persist,
					test_rollback_takes_marks_back,
					test_spans_of_another_collector, test_spans_bounded));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(dedup_suite())
