/*
 * test_ingest.c - the ingest worker (server/ingest/ingest.c, sink.c, dedup.c)
 * reached through libserver.la, without a connection: the test plays the
 * event loop, hands over the real pages of tests/data as a connection
 * would, and checks what comes back through the hooks (ingest.h) - which
 * hook, for which connection, in what order, with what counts, and on the
 * event loop's thread only - with and without a receive journal.
 *
 * Each test works in a directory of its own under /tmp, removed after it.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <sqlite3.h>

#include "common/tc_error.h"
#include "common/util.h"
#include "proto/frame.h"
#include "proto/msg.h"
#include "server/ingest/decode.h"
#include "server/ingest/ingest.h"
#include "server/ingest/pidnames.h"
#include "server/store/store.h"
#include "tests/data/capture_load.h"
#include "tests/testutil.h"

#define MAX_CALLS	256
#define WAIT_MS		20000

enum hook { H_WELCOME, H_DONE, H_FAILED, H_SEND, H_COMMITTED, H_RESUME };

/* One hook call, as the test saw it. */
struct call {
	enum hook hook;
	uint64_t conn_id;
	uint64_t host_id;	/* H_WELCOME */
	uint64_t pages, events;	/* H_DONE */
	int err;		/* H_FAILED */
	char what[32];		/* H_FAILED */
};

static struct {
	struct call v[MAX_CALLS];
	size_t n;
	bool off_loop;		/* a hook ran on another thread than the loop's */
} calls;

static struct capture cap;
static uint64_t want_events;	/* events in every captured page, as decoded here */
static uint64_t cpu_pages[CAPTURE_MAX_CPUS];
static char dir[64], db[128], jdir[128];
static struct store_writer *st;	/* the ingest worker's */
static struct event_base *base;
static struct ingest *g;
static pthread_t loop_thread;
static unsigned commit_ms;	/* start()'s, 50 unless a test says otherwise */

/* ---- the hooks: record every call ---- */

static struct call *record(enum hook hook, uint64_t conn_id)
{
	struct call *c = &calls.v[calls.n < MAX_CALLS ? calls.n++ : MAX_CALLS - 1];

	if (!pthread_equal(pthread_self(), loop_thread))
		calls.off_loop = true;
	memset(c, 0, sizeof(*c));
	c->hook = hook;
	c->conn_id = conn_id;
	return c;
}

static void on_welcome(void *arg, uint64_t conn_id, uint64_t host_id, bool kallsyms,
		       bool printk)
{
	record(H_WELCOME, conn_id)->host_id = host_id;
}

static void on_done(void *arg, uint64_t conn_id, uint64_t pages, uint64_t events)
{
	struct call *c = record(H_DONE, conn_id);

	c->pages = pages;
	c->events = events;
}

static void on_failed(void *arg, uint64_t conn_id, int err, const char *what)
{
	struct call *c = record(H_FAILED, conn_id);

	c->err = err;
	snprintf(c->what, sizeof(c->what), "%s", what);
}

static void on_send(void *arg, uint64_t conn_id, const struct proto_msg *m)
{
	record(H_SEND, conn_id);
}

static void on_committed(void *arg)
{
	record(H_COMMITTED, 0);
}

static void on_resume(void *arg)
{
	record(H_RESUME, 0);
}

/* The index of the @nth (0-based) call of @hook for @conn_id (0: any), or -1. */
static int find(enum hook hook, uint64_t conn_id, unsigned nth)
{
	for (size_t i = 0; i < calls.n; i++)
		if (calls.v[i].hook == hook && (!conn_id || calls.v[i].conn_id == conn_id) &&
		    nth-- == 0)
			return (int)i;
	return -1;
}

static size_t count(enum hook hook, uint64_t conn_id)
{
	size_t n = 0;

	while (find(hook, conn_id, (unsigned)n) >= 0)
		n++;
	return n;
}

/* Run the event loop until @hook was called @n times for @conn_id (0: any). */
static void wait_for(enum hook hook, uint64_t conn_id, size_t n)
{
	int64_t t0 = util_now_ms();

	while (count(hook, conn_id) < n) {
		ck_assert_msg(util_now_ms() - t0 < WAIT_MS, "no hook %d for connection %llu",
			      (int)hook, (unsigned long long)conn_id);
		event_base_loopexit(base, &(struct timeval){ 0, 20000 });
		event_base_dispatch(base);
	}
}

/* ---- fixture ---- */

static int count_event(void *ctx, const struct decode_event *ev)
{
	(*(uint64_t *)ctx)++;
	return 0;
}

/* What the worker should store: every event of every captured page. */
static void count_capture(void)
{
	const struct decode_type *types[CAPTURE_NFORMATS];
	struct decoder *dec;

	TU_OK(capture_decoder(&cap, &dec, types));
	want_events = 0;
	for (unsigned cpu = 0; cpu < cap.ncpus; cpu++) {
		cpu_pages[cpu] = cap.raw_len[cpu] / cap.page_size;
		for (size_t off = 0; off + cap.page_size <= cap.raw_len[cpu]; off += cap.page_size)
			TU_OK(decoder_page(dec, cpu, cap.raw[cpu] + off, cap.page_size, count_event,
					   &want_events, NULL));
	}
	decoder_free(dec);
	ck_assert_uint_gt(want_events, 0);
}

static void setup(void)
{
	memset(&calls, 0, sizeof(calls));
	loop_thread = pthread_self();
	TU_OK(capture_load(&cap));
	count_capture();
	tu_tmpdir_make(dir, sizeof(dir), "ingest");
	snprintf(db, sizeof(db), "%s/trace.db", dir);
	snprintf(jdir, sizeof(jdir), "%s/journal", dir);
	TU_OK(store_writer_open(db, &st));
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	g = NULL;
	commit_ms = 50;
}

static void teardown(void)
{
	ingest_stop(g);
	g = NULL;
	store_writer_close(st);
	st = NULL;
	event_base_free(base);
	base = NULL;
	capture_free(&cap);
	TU_OK(tu_tmpdir_remove(dir));
}

/* Start the worker, with a receive journal or without. */
static void start(bool journal)
{
	struct ingest_opts o = {
		.commit_ms = commit_ms, .queue_bytes = 64u << 20,
		.journal_dir = journal ? jdir : NULL, .journal_bytes = 64u << 20,
	};
	struct ingest_hooks h = {
		.welcome = on_welcome, .done = on_done, .failed = on_failed,
		.send = on_send, .committed = on_committed, .resume = on_resume,
	};

	TU_OK(ingest_start(base, st, &o, &h, &g));
	ck_assert_ptr_nonnull(g);
	ck_assert(ingest_journaled(g) == journal);
}

/* ---- a connection, played by the test ---- */

/*
 * Hand @m over as a connection does: as received (encoded), decoded again
 * so the worker owns what it points to.
 */
static void push_msg(struct sink *s, const struct proto_msg *m)
{
	struct proto_buf b;
	struct proto_msg d;

	proto_buf_init(&b);
	TU_OK(proto_msg_encode(m, &b));
	TU_OK(proto_msg_decode(b.data + FRAME_HDR_SIZE, b.len - FRAME_HDR_SIZE, &d));
	TU_OK(ingest_push_msg(g, s, &d, b.data + FRAME_HDR_SIZE, b.len - FRAME_HDR_SIZE));
	proto_buf_free(&b);
}

/* A new sink for @conn_id: HELLO (agent session @session, 0: none), header page, formats. */
static struct sink *connect_agent(uint64_t conn_id, uint64_t session)
{
	struct proto_msg m = { .type = MSG_HELLO };
	struct sink *s = NULL;

	TU_OK(ingest_sink_new(g, conn_id, "CN=capture-host", &s));
	m.hello = cap.hello;
	m.hello.session = session;
	push_msg(s, &m);
	m = (struct proto_msg){ .type = MSG_HEADER_PAGE };
	m.header_page.text = cap.header_page;
	m.header_page.len = cap.header_page_len;
	push_msg(s, &m);
	for (unsigned i = 0; i < CAPTURE_NFORMATS; i++) {
		m = (struct proto_msg){ .type = MSG_FORMAT };
		m.format.system = (char *)cap.formats[i].system;
		m.format.name = (char *)cap.formats[i].name;
		m.format.text = cap.formats[i].text;
		m.format.len = cap.formats[i].len;
		push_msg(s, &m);
	}
	return s;
}

/* Every captured page, page i of a CPU as its sequence number i + 1. Return: how many. */
static uint64_t push_pages(struct sink *s)
{
	uint64_t n = 0;

	for (unsigned cpu = 0; cpu < cap.ncpus; cpu++)
		for (uint64_t i = 0; i < cpu_pages[cpu]; i++, n++)
			TU_OK(ingest_push_page(g, s, cpu, i + 1, cap.raw[cpu] + i * cap.page_size,
					       cap.page_size));
	TU_OK(ingest_flush(g, s));
	return n;
}

static void bye(struct sink *s, uint64_t pages)
{
	struct proto_msg m = { .type = MSG_BYE };

	m.bye.pages = pages;
	m.bye.events = want_events;
	push_msg(s, &m);
}

static const struct call *nth_call(enum hook hook, uint64_t conn_id, unsigned nth)
{
	int i = find(hook, conn_id, nth);

	ck_assert_msg(i >= 0, "no hook %d #%u for connection %llu", (int)hook, nth,
		      (unsigned long long)conn_id);
	return &calls.v[i];
}

/* ---- tests ---- */

/*
 * A whole session without a journal: WELCOME after HELLO, DONE after BYE
 * with every page and event stored, and a commit reported before DONE
 * (DONE means "on disk"); then every page counts as committed.
 */
START_TEST(test_session_hooks)
{
	struct sink *s;
	const struct call *w, *d;
	uint64_t pages;

	start(false);
	s = connect_agent(7, 0);
	pages = push_pages(s);
	bye(s, pages);
	wait_for(H_DONE, 7, 1);

	w = nth_call(H_WELCOME, 7, 0);
	ck_assert_uint_gt(w->host_id, 0);
	d = nth_call(H_DONE, 7, 0);
	ck_assert_uint_eq(d->pages, pages);
	ck_assert_uint_eq(d->events, want_events);
	ck_assert_int_lt(find(H_WELCOME, 7, 0), find(H_DONE, 7, 0));
	ck_assert_int_ge(find(H_COMMITTED, 0, 0), 0);
	ck_assert_int_lt(find(H_COMMITTED, 0, 0), find(H_DONE, 7, 0));
	ck_assert_uint_eq(count(H_FAILED, 0), 0);
	ck_assert_uint_eq(count(H_WELCOME, 0), 1);
	ck_assert_uint_eq(count(H_DONE, 0), 1);
	for (unsigned cpu = 0; cpu < cap.ncpus; cpu++)
		ck_assert_uint_eq(ingest_sink_committed(g, s, cpu), cpu_pages[cpu]);
	ingest_sink_close(g, s);
	ck_assert(!calls.off_loop);
}
END_TEST

/*
 * A page before HELLO fails its connection (and only that one): the
 * failed hook names it, with the error and what failed, and its later
 * jobs are skipped; another connection goes on.
 */
START_TEST(test_failure_is_per_connection)
{
	struct proto_msg m = { .type = MSG_HELLO };
	struct sink *bad = NULL, *good;
	const struct call *f, *d;

	start(false);
	TU_OK(ingest_sink_new(g, 9, "CN=bad", &bad));
	TU_OK(ingest_push_page(g, bad, 0, 1, cap.raw[0], cap.page_size));
	TU_OK(ingest_flush(g, bad));
	m.hello = cap.hello;
	push_msg(bad, &m);		/* after the failure: skipped */
	good = connect_agent(10, 0);
	bye(good, 0);
	wait_for(H_FAILED, 9, 1);
	wait_for(H_DONE, 10, 1);

	f = nth_call(H_FAILED, 9, 0);
	TU_ERR(f->err, TC_ERR_PROTO_STATE);
	ck_assert_str_eq(f->what, "page");
	ck_assert_uint_eq(count(H_FAILED, 0), 1);
	ck_assert_uint_eq(count(H_WELCOME, 9), 0);
	ck_assert_uint_eq(count(H_WELCOME, 10), 1);
	d = nth_call(H_DONE, 10, 0);
	ck_assert_uint_eq(d->pages, 0);
	ck_assert_uint_eq(d->events, 0);
	ingest_sink_close(g, bad);
	ingest_sink_close(g, good);
	ck_assert(!calls.off_loop);
}
END_TEST

/*
 * Exactly once across reconnects (dedup.c through the worker): a second
 * connection of the same agent session resends every page; none is
 * stored again, yet all count as committed (so the agent gets its ACKs).
 * Another session's pages are its own.
 */
START_TEST(test_resends_stored_once)
{
	struct sink *first, *again, *other;
	uint64_t pages;

	start(false);
	first = connect_agent(1, 42);
	pages = push_pages(first);
	bye(first, pages);
	wait_for(H_DONE, 1, 1);
	ck_assert_uint_eq(nth_call(H_DONE, 1, 0)->pages, pages);
	ck_assert_uint_eq(nth_call(H_DONE, 1, 0)->events, want_events);
	ingest_sink_close(g, first);

	again = connect_agent(2, 42);
	push_pages(again);
	bye(again, pages);
	wait_for(H_DONE, 2, 1);
	ck_assert_uint_eq(nth_call(H_DONE, 2, 0)->pages, 0);
	ck_assert_uint_eq(nth_call(H_DONE, 2, 0)->events, 0);
	for (unsigned cpu = 0; cpu < cap.ncpus; cpu++)
		ck_assert_uint_eq(ingest_sink_committed(g, again, cpu), cpu_pages[cpu]);
	ingest_sink_close(g, again);

	other = connect_agent(3, 43);
	push_pages(other);
	bye(other, pages);
	wait_for(H_DONE, 3, 1);
	ck_assert_uint_eq(nth_call(H_DONE, 3, 0)->pages, pages);
	ck_assert_uint_eq(nth_call(H_DONE, 3, 0)->events, want_events);
	ingest_sink_close(g, other);
	ck_assert_uint_eq(count(H_FAILED, 0), 0);
	ck_assert(!calls.off_loop);
}
END_TEST

/* The one integer @sql gives on the test's own connection to the database. */
static int64_t sql_int(sqlite3 *sq, const char *sql)
{
	sqlite3_stmt *stmt;
	int64_t v;

	ck_assert_int_eq(sqlite3_prepare_v2(sq, sql, -1, &stmt, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(stmt), SQLITE_ROW);
	v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return v;
}

/* Events stored, in every event table (ev_*). */
static uint64_t stored_events(sqlite3 *sq)
{
	sqlite3_stmt *stmt;
	uint64_t n = 0;
	char sql[256];

	ck_assert_int_eq(sqlite3_prepare_v2(sq, "SELECT name FROM sqlite_master WHERE"
					    " type = 'table' AND name LIKE 'ev\\_%' ESCAPE '\\'",
					    -1, &stmt, NULL), SQLITE_OK);
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM \"%s\"",
			 (const char *)sqlite3_column_text(stmt, 0));
		n += (uint64_t)sql_int(sq, sql);
	}
	sqlite3_finalize(stmt);
	return n;
}

/*
 * A connection closes while the marks of its pages cannot be written (a
 * trigger makes every write of a mark fail): the transaction holding its
 * pages must not commit without their marks, or the agent's next
 * connection, resending the same pages, gets them stored twice (what
 * test_rollback.sh showed under load: the same events twice, each copy
 * with its connection's clock offset). A session without pages (so
 * without marks to write) commits in between, with the trigger in place;
 * its DONE says the close was handled. By order, not time. (A session
 * stores first, so the event tables are not created in the transaction
 * that is rolled back.)
 */
START_TEST(test_close_without_marks)
{
	struct sink *warm, *first, *other, *again;
	uint64_t pages;
	sqlite3 *sq;

	commit_ms = 600000;	/* commits come with BYE only */
	start(false);
	warm = connect_agent(4, 41);	/* the event tables exist before the failure */
	pages = push_pages(warm);
	bye(warm, pages);
	wait_for(H_DONE, 4, 1);
	ingest_sink_close(g, warm);
	ck_assert_int_eq(sqlite3_open(db, &sq), SQLITE_OK);
	sqlite3_busy_timeout(sq, WAIT_MS);
	ck_assert_int_eq(sqlite3_exec(sq, "CREATE TRIGGER tc_fail_mark BEFORE INSERT ON"
				      " stream_marks BEGIN SELECT RAISE(ABORT, 'injected by"
				      " test_ingest'); END;", NULL, NULL, NULL), SQLITE_OK);
	first = connect_agent(1, 42);
	push_pages(first);
	ingest_sink_close(g, first);	/* its marks cannot go in */
	other = connect_agent(3, 43);
	bye(other, 0);
	wait_for(H_DONE, 3, 1);		/* a commit after the close */
	ingest_sink_close(g, other);
	ck_assert_int_eq(sqlite3_exec(sq, "DROP TRIGGER tc_fail_mark", NULL, NULL, NULL),
			 SQLITE_OK);
	again = connect_agent(2, 42);	/* the agent resends every page */
	push_pages(again);
	bye(again, pages);
	wait_for(H_DONE, 2, 1);
	ingest_sink_close(g, again);
	ck_assert_uint_eq(nth_call(H_DONE, 2, 0)->events, want_events);
	ck_assert_uint_eq(stored_events(sq), 2 * want_events);	/* warm's and once again's */
	sqlite3_close(sq);
	ck_assert(!calls.off_loop);
}
END_TEST

/* ingest_wait_stored() and ingest_backlog() from another thread (as queryd does). */
struct waiter {
	int ret;
	uint64_t unstored, journal_bytes;
};

static void *wait_stored_main(void *arg)
{
	struct waiter *w = arg;

	w->ret = ingest_wait_stored(g, WAIT_MS);
	ingest_backlog(g, &w->unstored, &w->journal_bytes);
	return NULL;
}

static size_t journal_files(void)
{
	struct dirent *e;
	size_t n = 0;
	DIR *d = opendir(jdir);

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		n += strstr(e->d_name, ".tcj") != NULL;
	closedir(d);
	return n;
}

/*
 * With a receive journal the same hooks come, with the same counts;
 * another thread can wait until everything is stored; and the closed
 * connection's journal file goes once what it holds is committed.
 */
START_TEST(test_journal_session)
{
	struct waiter w = { -1, 1, 0 };
	struct sink *s;
	pthread_t t;
	uint64_t pages;
	int64_t t0;

	start(true);
	s = connect_agent(5, 0);
	pages = push_pages(s);
	ck_assert_uint_eq(journal_files(), 1);
	bye(s, pages);
	ingest_sink_close(g, s);	/* a journaled connection says DONE itself and goes */
	TU_EQ(pthread_create(&t, NULL, wait_stored_main, &w), 0);
	TU_EQ(pthread_join(t, NULL), 0);
	TU_OK(w.ret);
	ck_assert_uint_eq(w.unstored, 0);

	wait_for(H_DONE, 5, 1);
	ck_assert_uint_gt(nth_call(H_WELCOME, 5, 0)->host_id, 0);
	ck_assert_uint_eq(nth_call(H_DONE, 5, 0)->pages, pages);
	ck_assert_uint_eq(nth_call(H_DONE, 5, 0)->events, want_events);
	ck_assert_uint_eq(count(H_FAILED, 0), 0);
	for (t0 = util_now_ms(); journal_files() > 0; usleep(10000))
		ck_assert_msg(util_now_ms() - t0 < WAIT_MS, "the journal file stays");
	ck_assert(!calls.off_loop);
}
END_TEST

/* ---- malformed pages: counted, with their reasons ---- */

/* The malformed pages test_malformed_pages_counted() sends, and why each is refused. */
enum bad_page { BAD_COMMIT_BIG, BAD_COMMIT_NEG, BAD_EVENT_LEN, BAD_SHORT, BAD_CPU, NBAD };

static const char *const bad_why[NBAD] = {
	[BAD_COMMIT_BIG] = "commit beyond the page size",
	[BAD_COMMIT_NEG] = "commit word with unknown flags",
	[BAD_EVENT_LEN] = "record runs past the commit",
	[BAD_SHORT] = "page shorter than its header",
	[BAD_CPU] = "CPU or stream the agent did not announce",
};

/* The commit word of @page (a long of the capture's size, little-endian). */
static void set_commit(uint8_t *page, uint64_t commit)
{
	uint32_t c4 = (uint32_t)commit;

	if (cap.long_size == 8)
		memcpy(page + 8, &commit, 8);
	else
		memcpy(page + 8, &c4, 4);
}

/* Bad page @k, made from the first captured page into @page: its length. */
static size_t make_bad(enum bad_page k, uint8_t *page)
{
	uint32_t rec[2] = { 0, 0x7ffffff0 };	/* type_len 0: the length word follows */

	memcpy(page, cap.raw[0], cap.page_size);
	switch (k) {
	case BAD_COMMIT_BIG:
		set_commit(page, cap.page_size);
		break;
	case BAD_COMMIT_NEG:
		set_commit(page, UINT64_MAX);
		break;
	case BAD_EVENT_LEN:
		set_commit(page, 64);
		memcpy(page + 8 + cap.long_size, rec, sizeof(rec));
		break;
	case BAD_SHORT:
		return 10;
	default:
		break;
	}
	return cap.page_size;
}

struct drop_row {
	char host[64], system[64], name[64], reason[96];
	uint64_t count;
};

static struct {
	struct drop_row v[32];
	size_t n;
	uint64_t bad_pages, bad_events;	/* CPU 0's --stats */
} seen;

static int on_drop(void *ctx, const char *host, const char *system, const char *name,
		   const char *reason, uint64_t count)
{
	struct drop_row *r = &seen.v[seen.n < 32 ? seen.n++ : 31];

	snprintf(r->host, sizeof(r->host), "%s", host);
	snprintf(r->system, sizeof(r->system), "%s", system);
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	r->count = count;
	return 0;
}

static int on_stat(void *ctx, const struct store_stats_host *host, uint32_t cpu,
		   const char *key, uint64_t value)
{
	if (cpu == 0 && !strcmp(key, "bad_pages"))
		seen.bad_pages += value;
	if (cpu == 0 && !strcmp(key, "bad_events"))
		seen.bad_events += value;
	return 0;
}

/* The drops and stats of what the worker stored, read as a query worker reads them. */
static void read_counters(void)
{
	struct store_reader *r;

	memset(&seen, 0, sizeof(seen));
	TU_OK(store_reader_open(db, &r));
	TU_OK(store_drops(r, NULL, on_drop, NULL));
	TU_OK(store_stats(r, NULL, on_stat, NULL));
	store_reader_close(r);
}

/* The drops count of (host, "-", "-", @reason); 0 when there is no such row. */
static uint64_t drops_of(const char *reason)
{
	for (size_t i = 0; i < seen.n; i++)
		if (!strcmp(seen.v[i].reason, reason) && !strcmp(seen.v[i].system, "-") &&
		    !strcmp(seen.v[i].name, "-") && !strcmp(seen.v[i].host, cap.hello.host))
			return seen.v[i].count;
	return 0;
}

/* Lines of file @path that contain @what. */
static unsigned lines_with(const char *path, const char *what)
{
	char line[1024];
	unsigned n = 0;
	FILE *f = fopen(path, "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

/*
 * Pages with a commit beyond the page size, a negative commit, an event
 * length of 0x7ffffff0, only 10 bytes, or of a CPU the HELLO did not
 * announce, each sent twice among the good pages of a journaled
 * connection (so they are acknowledged): none fails the connection, every
 * good page is stored, each bad one is counted in drops with its reason
 * (host, "-", "-") and in CPU 0's bad_pages, and each reason is logged
 * once for the connection.
 */
START_TEST(test_malformed_pages_counted)
{
	uint8_t *page = malloc(cap.page_size);
	char logpath[160];
	struct sink *s;
	uint64_t pages, seq = 100000;
	int fd, saved;

	ck_assert_ptr_nonnull(page);
	snprintf(logpath, sizeof(logpath), "%s/log", dir);
	fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	saved = dup(2);
	ck_assert_int_ge(dup2(fd, 2), 0);
	close(fd);

	start(true);
	s = connect_agent(12, 0);
	for (int round = 0; round < 2; round++)
		for (int k = 0; k < NBAD; k++) {
			size_t len = make_bad(k, page);

			TU_OK(ingest_push_page(g, s, k == BAD_CPU ? 999 : 0, seq++, page, len));
		}
	pages = push_pages(s);
	bye(s, pages);
	ingest_sink_close(g, s);
	wait_for(H_DONE, 12, 1);
	TU_OK(ingest_wait_stored(g, WAIT_MS));
	ingest_stop(g);
	g = NULL;
	dup2(saved, 2);
	close(saved);

	ck_assert_uint_eq(count(H_FAILED, 0), 0);
	ck_assert_uint_eq(nth_call(H_DONE, 12, 0)->pages, pages);
	ck_assert_uint_eq(nth_call(H_DONE, 12, 0)->events, want_events);
	read_counters();
	for (int k = 0; k < NBAD; k++) {
		ck_assert_msg(drops_of(bad_why[k]) == 2, "drops '%s': %llu, not 2", bad_why[k],
			      (unsigned long long)drops_of(bad_why[k]));
		ck_assert_msg(lines_with(logpath, bad_why[k]) == 1, "'%s' logged %u times",
			      bad_why[k], lines_with(logpath, bad_why[k]));
	}
	ck_assert_uint_eq(seen.bad_pages, 2 * (NBAD - 1));	/* CPU 999 has no row */
	ck_assert_uint_eq(seen.bad_events, 0);
	free(page);
	ck_assert(!calls.off_loop);
}
END_TEST

/*
 * A journaled connection that fails (a FORMAT for a group it never
 * announced; one whose text is refused does not fail it) had
 * its later pages acknowledged: each is counted in drops ("its connection
 * had failed") and in its CPU's bad_pages, not only as a number of
 * batches in a log line.
 */
START_TEST(test_pages_after_failure_counted)
{
	struct proto_msg m = { .type = MSG_FORMAT };
	uint64_t pages;
	struct sink *s;

	start(true);
	s = connect_agent(13, 0);
	m.format.system = (char *)"sched";
	m.format.name = (char *)"broken";
	m.format.text = (char *)"name: broken\nID: x\n";
	m.format.len = strlen(m.format.text);
	m.format.group = 99;
	push_msg(s, &m);
	pages = push_pages(s);
	ingest_sink_close(g, s);
	wait_for(H_FAILED, 13, 1);
	TU_OK(ingest_wait_stored(g, WAIT_MS));
	ingest_stop(g);
	g = NULL;

	ck_assert_str_eq(nth_call(H_FAILED, 13, 0)->what, proto_msg_name(MSG_FORMAT));
	read_counters();
	ck_assert_uint_eq(drops_of("its connection had failed"), pages);
	ck_assert_uint_eq(seen.bad_pages, cpu_pages[0]);
}
END_TEST

/* The least and the most ts of every event table. */
static void stored_ts_range(sqlite3 *sq, int64_t *lo, int64_t *hi)
{
	sqlite3_stmt *stmt;
	char sql[256];

	*lo = INT64_MAX;
	*hi = INT64_MIN;
	ck_assert_int_eq(sqlite3_prepare_v2(sq, "SELECT name FROM sqlite_master WHERE"
					    " type = 'table' AND name LIKE 'ev\\_%' ESCAPE '\\'",
					    -1, &stmt, NULL), SQLITE_OK);
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(stmt, 0);
		int64_t v;

		snprintf(sql, sizeof(sql), "SELECT coalesce(min(ts), %lld) FROM \"%s\"",
			 (long long)INT64_MAX, t);
		v = sql_int(sq, sql);
		*lo = v < *lo ? v : *lo;
		snprintf(sql, sizeof(sql), "SELECT coalesce(max(ts), %lld) FROM \"%s\"",
			 (long long)INT64_MIN, t);
		v = sql_int(sq, sql);
		*hi = v > *hi ? v : *hi;
	}
	sqlite3_finalize(stmt);
}

/*
 * A clock offset of INT64_MAX (realtime - trace clock at HELLO): every
 * event's trace clock + offset passes INT64_MAX, which wrapped (undefined
 * behaviour) to times before 1970. They are stored at INT64_MAX, and said in the log; a HELLO whose offset itself does not
 * fit (a trace clock past INT64_MAX) is refused.
 */
START_TEST(test_clock_offset_near_int64_max)
{
	struct proto_clock keep = cap.hello.clock;
	struct sink *s;
	uint64_t pages;
	int64_t lo, hi;
	sqlite3 *sq;

	start(false);
	cap.hello.clock.realtime_ns = INT64_MAX;	/* offset INT64_MAX: every event passes it */
	cap.hello.clock.trace_ns = 0;
	s = connect_agent(5, 0);
	cap.hello.clock = keep;
	pages = push_pages(s);
	bye(s, pages);
	wait_for(H_DONE, 5, 1);
	ingest_sink_close(g, s);
	ck_assert_uint_eq(nth_call(H_DONE, 5, 0)->events, want_events);
	ck_assert_int_eq(sqlite3_open(db, &sq), SQLITE_OK);
	stored_ts_range(sq, &lo, &hi);
	sqlite3_close(sq);
	ck_assert_int_eq(lo, INT64_MAX);	/* not wrapped to before 1970 */
	ck_assert_int_eq(hi, INT64_MAX);

	cap.hello.clock.trace_ns = (uint64_t)INT64_MAX + 2;
	cap.hello.clock.realtime_ns = -2;
	s = connect_agent(6, 0);
	cap.hello.clock = keep;
	wait_for(H_FAILED, 6, 1);
	TU_ERR(nth_call(H_FAILED, 6, 0)->err, TC_ERR_MSG_MALFORMED);
	ck_assert_uint_eq(count(H_WELCOME, 6), 0);
	ingest_sink_close(g, s);
}
END_TEST

/* A slot of test_pidnames_saved(): pid @i's names, all different. */
static void pidname_of(int32_t i, struct pidname *n)
{
	memset(n, 0, sizeof(*n));
	n->pid = i;
	snprintf(n->comm, sizeof(n->comm), "c%d", i);
	n->learned_ts = (uint64_t)i * 3;
	n->since = (uint64_t)i * 7;
	snprintf(n->now, sizeof(n->now), "now-%d", i);
	if (i % 2)
		snprintf(n->before, sizeof(n->before), "b%d", i);
}

/*
 * A rotated journal file's task names (JREC_PIDNAMES): a table saved in
 * records of PIDNAMES_SAVE_MAX slots at most and put back into one that
 * knows some of the pids already gives every pid its saved slot whole
 * and keeps the others; a slot holding only an agent's name is not saved
 * (its CMDLINES are); bytes that are not such records change nothing.
 */
START_TEST(test_pidnames_saved)
{
	static uint8_t buf[PIDNAMES_SAVE_HDR + PIDNAMES_SAVE_MAX * PIDNAMES_SAVE_SLOT];
	struct pidnames a = { 0 }, b = { 0 };
	const int32_t n = PIDNAMES_SAVE_MAX + 100;
	struct pidname want, *got;
	size_t pos = 0, len, records = 0;

	for (int32_t i = -1; i < n; i++) {
		if (!i)
			continue;
		got = pidnames_slot(&a, i);
		ck_assert_ptr_nonnull(got);
		pidname_of(i, got);
	}
	ck_assert_ptr_nonnull(got = pidnames_slot(&a, n + 5));	/* the agent's: not saved */
	strcpy(got->comm, "agent");
	ck_assert_ptr_nonnull(got = pidnames_slot(&b, 5));	/* known before: replaced */
	strcpy(got->comm, "stale");
	ck_assert_ptr_nonnull(got = pidnames_slot(&b, n + 1));	/* not saved: kept */
	strcpy(got->comm, "other");
	while ((len = pidnames_save(&a, &pos, buf))) {
		ck_assert_uint_le(len, sizeof(buf));
		TU_ERR(pidnames_load(&b, buf, len - 1), TC_ERR_MSG_MALFORMED);
		buf[0] ^= 1;
		TU_ERR(pidnames_load(&b, buf, len), TC_ERR_MSG_MALFORMED);
		buf[0] ^= 1;
		TU_OK(pidnames_load(&b, buf, len));
		records++;
	}
	ck_assert_uint_eq(records, 2);
	ck_assert_uint_eq(b.count, a.count);	/* n + 1 in, n + 5 not */
	ck_assert_ptr_null(pidnames_find(&b, n + 5));
	for (int32_t i = -1; i < n; i++) {
		if (!i)
			continue;
		pidname_of(i, &want);
		got = pidnames_find(&b, i);
		ck_assert_ptr_nonnull(got);
		ck_assert_str_eq(got->comm, want.comm);
		ck_assert_str_eq(got->now, want.now);
		ck_assert_str_eq(got->before, want.before);
		ck_assert_uint_eq(got->learned_ts, want.learned_ts);
		ck_assert_uint_eq(got->since, want.since);
	}
	ck_assert_str_eq(pidnames_find(&b, n + 1)->comm, "other");
	ck_assert_ptr_null(pidnames_find(&b, n + 2));
	/* a slot of pid 0 (an empty one) is refused */
	pos = 0;
	len = pidnames_save(&a, &pos, buf);
	memset(buf + PIDNAMES_SAVE_HDR, 0, 4);
	TU_ERR(pidnames_load(&b, buf, len), TC_ERR_MSG_MALFORMED);
	pidnames_free(&a);
	pidnames_free(&b);
}
END_TEST

static Suite *ingest_suite(void)
{
	Suite *s = suite_create("ingest");
	TCase *tc = tcase_create("ingest");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tu_add_tests(tc, TU_TESTS(test_session_hooks, test_failure_is_per_connection,
					test_resends_stored_once, test_journal_session,
					test_close_without_marks,
					test_malformed_pages_counted,
					test_pages_after_failure_counted,
					test_clock_offset_near_int64_max));
	suite_add_tcase(s, tc);
	tc = tcase_create("pidnames");
	tu_add_tests(tc, TU_TESTS(test_pidnames_saved));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(ingest_suite())
