/*
 * test_ring.c - check tests for the user-space ring buffer (common/ring*):
 * every page is decoded with libtraceevent's kbuffer, as the collector
 * does. Single-thread exactness (payloads, sizes, timestamps, time
 * extends), full buffers, N threads x M events with per-writer sequence
 * numbers in every mode (each committed event read exactly once or counted
 * as lost, per-writer order kept), nested writes from signal handlers, a
 * reader in another process, a writer SIGKILLed between reserve and
 * commit, the format table, clock conversion, and rejection of bad files.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/rseq.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <traceevent/event-parse.h>
#include <traceevent/kbuffer.h>

#include "common/ring.h"
#include "common/tc_error.h"
#include "include/tracecollect.h"
#include "tests/testutil.h"

#define NWRITERS	4
#define PER_WRITER	60000

struct rec {
	uint32_t writer;
	uint32_t len;
	uint64_t seq;
};

/* Everything read back, in read order. */
struct readback {
	struct rec *recs;
	uint64_t *ts;
	unsigned *buf;
	size_t n, cap;
	uint64_t missed;	/* sum of kbuffer_missed_events() > 0 */
	size_t pages;
};

static struct ring *mkring(enum ring_mode mode, uint32_t pages, uint32_t ncpu,
			   enum ring_clock_id clk)
{
	struct ring_params p = {
		.page_size = 4096, .nr_pages = pages, .nr_cpus = ncpu,
		.mode = mode, .clock = clk,
	};
	struct ring *r = NULL;
	int ret = ring_create(NULL, &p, &r);

	ck_assert_msg(ret == 0, "ring_create: %s", tc_strerror(ret));
	return r;
}

/* Whether a ring asking for rseq gets it here: x86-64 and glibc
 * registered rseq (not under valgrind or glibc.pthread.rseq=0). */
static bool rseq_here(void)
{
#if defined(__x86_64__) && defined(RSEQ_SIG)
	return __rseq_size >= 16 && __rseq_offset != 0;
#else
	return false;
#endif
}

/* All CPUs' buffers; with @rseq the per-CPU fast path where it works
 * (else, and without @rseq, the locked path). */
static struct ring *mkring_cpus(enum ring_mode mode, uint32_t pages, bool rseq)
{
	struct ring_params p = {
		.page_size = 4096, .nr_pages = pages, .mode = mode,
		.clock = RING_CLOCK_TSC, .locked = !rseq,
	};
	struct ring *r = NULL;
	int ret = ring_create(NULL, &p, &r);

	ck_assert_msg(ret == 0, "ring_create: %s", tc_strerror(ret));
	ck_assert_int_eq(ring_uses_rseq(r), rseq && rseq_here());
	return r;
}

/* Run the calling thread on CPU @cpu only (saving its affinity). */
static void pin_to(int cpu, cpu_set_t *saved)
{
	cpu_set_t one;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(*saved), saved), 0);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
}

static void rb_push(struct readback *rb, const struct rec *e, uint64_t ts,
		    unsigned buf)
{
	if (rb->n == rb->cap) {
		rb->cap = rb->cap ? rb->cap * 2 : 1024;
		rb->recs = realloc(rb->recs, rb->cap * sizeof(*rb->recs));
		rb->ts = realloc(rb->ts, rb->cap * sizeof(*rb->ts));
		rb->buf = realloc(rb->buf, rb->cap * sizeof(*rb->buf));
		ck_assert(rb->recs && rb->ts && rb->buf);
	}
	rb->recs[rb->n] = *e;
	rb->ts[rb->n] = ts;
	rb->buf[rb->n++] = buf;
}

static void rb_free(struct readback *rb)
{
	free(rb->recs);
	free(rb->ts);
	free(rb->buf);
	memset(rb, 0, sizeof(*rb));
}

/* Decode one page with kbuffer; check each event against its own
 * length field and collect it. */
static void decode_page(const struct ring_page_ref *pg, struct readback *rb)
{
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8,
					   KBUFFER_ENDIAN_LITTLE);
	unsigned long long ts;
	void *data;
	int missed;

	ck_assert_ptr_nonnull(kb);
	ck_assert_int_eq(kbuffer_load_subbuffer(kb, (void *)pg->data), 0);
	missed = kbuffer_missed_events(kb);
	ck_assert_int_eq(missed != 0, pg->missed);
	if (missed > 0)
		rb->missed += (uint64_t)missed;
	for (data = kbuffer_read_event(kb, &ts); data;
	     data = kbuffer_next_event(kb, &ts)) {
		struct rec e;
		int size = kbuffer_event_size(kb);

		ck_assert_int_ge(size, (int)sizeof(e));
		memcpy(&e, data, sizeof(e));
		ck_assert_int_eq(size, (int)((e.len + 3) & ~3u));
		for (uint32_t i = sizeof(e); i < e.len; i++)
			ck_assert_uint_eq(((uint8_t *)data)[i],
					  (uint8_t)(e.seq + i));
		rb_push(rb, &e, ts, pg->buf);
	}
	rb->pages++;
	kbuffer_free(kb);
}

/* Take every complete page of every buffer; with @flush also end the
 * partial ones first. Returns pages read. */
static size_t drain(struct ring *r, bool flush, struct readback *rb)
{
	struct ring_page_ref pg;
	size_t n = 0;

	for (unsigned b = 0; b < ring_nr_bufs(r); b++) {
		if (flush)
			ring_reader_flush(r, b);
		while (ring_reader_get(r, b, &pg) == 0) {
			decode_page(&pg, rb);
			ring_reader_put(r, b);
			n++;
		}
	}
	return n;
}

static void fill(uint8_t *d, const struct rec *e)
{
	memcpy(d, e, sizeof(*e));
	for (uint32_t i = sizeof(*e); i < e->len; i++)
		d[i] = (uint8_t)(e->seq + i);
}

/* Write one test record; returns ring_reserve's value, and its ts. */
static int put(struct ring *r, int buf, uint32_t writer, uint64_t seq,
	       uint32_t len, uint64_t *ts)
{
	struct rec e = { .writer = writer, .len = len, .seq = seq };
	struct ring_wctx c;
	int ret = ring_reserve(r, buf, len, &c);

	if (ret)
		return ret;
	fill(c.data, &e);
	ring_commit(r, &c);
	if (ts)
		*ts = c.ts;
	return 0;
}

/* The same record through ring_write() (its own fast path). */
static int put_w(struct ring *r, int buf, uint32_t writer, uint64_t seq,
		 uint32_t len)
{
	struct rec e = { .writer = writer, .len = len, .seq = seq };
	uint8_t d[RING_MAX_PAYLOAD];

	fill(d, &e);
	return ring_write(r, buf, d, len);
}

START_TEST(test_single_thread_exact)
{
	struct ring *r = mkring(RING_MODE_PRODUCER, 128, 1, RING_CLOCK_TSC);
	struct readback rb = { 0 };
	uint64_t ts[2000];

	for (uint64_t i = 0; i < 2000; i++)
		ck_assert_int_eq(put(r, 0, 1, i, 16 + (uint32_t)(i * 7 % 300),
				     &ts[i]), 0);
	drain(r, true, &rb);
	ck_assert_uint_eq(rb.n, 2000);
	for (size_t i = 0; i < rb.n; i++) {
		ck_assert_uint_eq(rb.recs[i].seq, i);
		ck_assert_uint_eq(rb.ts[i], ts[i]);
	}
	ck_assert_uint_eq(rb.missed, 0);
	rb_free(&rb);
	ring_close(r);
}
END_TEST

/* ring_write_stamped: each record reads back whole, in order, with the
 * event's own timestamp in its stamp field; the inline constant case
 * (40 bytes, stamp at 32: funcgraph_exit) and another size, across page
 * switches, on an rseq ring (_i 0) and a locked one (1). */
START_TEST(test_write_stamped)
{
	struct ring *r = _i == 0 ? mkring_cpus(RING_MODE_PRODUCER, 64, true) :
				   mkring(RING_MODE_PRODUCER, 64, 1,
					  RING_CLOCK_TSC);
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8,
					   KBUFFER_ENDIAN_LITTLE);
	struct ring_page_ref pg;
	unsigned long long ts;
	uint64_t w[5], n = 0;
	cpu_set_t saved;

	if (_i == 0)
		pin_to(0, &saved);
	for (uint64_t i = 0; i < 3000; i++) {
		uint32_t len = i % 3 ? 40 : 24;

		for (unsigned k = 0; k < 5; k++)
			w[k] = i * 10 + k;
		ck_assert_int_eq(ring_write_stamped(r, w, len, len - 8), 0);
	}
	ck_assert_int_eq(ring_write_stamped(r, w, 40, 33), -EINVAL);
	ck_assert_int_eq(ring_write_stamped(r, w, 4, 0), -EINVAL);
	ck_assert_int_eq(ring_write_stamped(r, w, 120, 0), -EINVAL);
	for (unsigned b = 0; b < ring_nr_bufs(r); b++) {
		ring_reader_flush(r, b);
		while (ring_reader_get(r, b, &pg) == 0) {
			kbuffer_load_subbuffer(kb, (void *)pg.data);
			for (void *d = kbuffer_read_event(kb, &ts); d;
			     d = kbuffer_next_event(kb, &ts), n++) {
				uint32_t len = n % 3 ? 40 : 24;

				ck_assert_int_eq(kbuffer_event_size(kb),
						 (int)len);
				memcpy(w, d, len);
				for (unsigned k = 0; k < len / 8 - 1; k++)
					ck_assert_uint_eq(w[k], n * 10 + k);
				ck_assert_uint_eq(w[len / 8 - 1], ts);
			}
			ring_reader_put(r, b);
		}
	}
	ck_assert_uint_eq(n, 3000);
	if (_i == 0)
		sched_setaffinity(0, sizeof(saved), &saved);
	kbuffer_free(kb);
	ring_close(r);
}
END_TEST

/* Gaps >= 2^27 ns between events need a time-extend event; kbuffer must
 * still give the exact timestamps. Also: empty and largest payloads. */
START_TEST(test_time_extend_and_sizes)
{
	struct ring *r = mkring(RING_MODE_PRODUCER, 8, 1, RING_CLOCK_MONO);
	struct readback rb = { 0 };
	struct ring_page_ref pg;
	uint64_t ts[3];

	ck_assert_int_eq(put(r, 0, 1, 0, 16, &ts[0]), 0);
	usleep(150000);
	ck_assert_int_eq(put(r, 0, 1, 1, 16, &ts[1]), 0);
	ck_assert_int_eq(put(r, 0, 1, 2, RING_MAX_PAYLOAD, &ts[2]), 0);
	ck_assert_int_eq(ring_write(r, 0, "", 0), 0);
	ck_assert_int_eq(ring_write(r, 0, "x", RING_MAX_PAYLOAD + 1), -E2BIG);
	ck_assert_int_eq(ring_reader_get(r, 0, &pg), -EAGAIN);
	ck_assert_int_eq(ring_reader_flush(r, 0), 1);
	ck_assert_int_eq(ring_reader_flush(r, 0), 0);
	ck_assert_int_eq(ring_reader_get(r, 0, &pg), 0);
	ck_assert_int_eq(ring_reader_get(r, 0, &pg), -EBUSY);
	ring_reader_put(r, 0);
	ck_assert_int_eq(ring_reader_get(r, 0, &pg), -EAGAIN);
	ring_close(r);

	r = mkring(RING_MODE_PRODUCER, 8, 1, RING_CLOCK_MONO);
	ck_assert_int_eq(put(r, 0, 1, 0, 16, &ts[0]), 0);
	usleep(150000);
	ck_assert_int_eq(put(r, 0, 1, 1, 16, &ts[1]), 0);
	ck_assert_uint_gt(ts[1] - ts[0], 1u << 27);
	drain(r, true, &rb);
	ck_assert_uint_eq(rb.n, 2);
	ck_assert_uint_eq(rb.ts[0], ts[0]);
	ck_assert_uint_eq(rb.ts[1], ts[1]);
	rb_free(&rb);
	ring_close(r);
}
END_TEST

/* Producer mode: writes past a full ring are dropped and counted; the
 * first page read after the loss says so through kbuffer. */
START_TEST(test_producer_full)
{
	struct ring *r = mkring(RING_MODE_PRODUCER, 4, 1, RING_CLOCK_TSC);
	struct readback rb = { 0 };
	struct ring_stats st;
	uint64_t ok = 0, dropped = 0;

	for (uint64_t i = 0; i < 2000; i++) {
		int ret = put(r, 0, 1, i, 32, NULL);

		ck_assert(ret == 0 || ret == -ENOBUFS);
		ok += !ret;
		dropped += !!ret;
	}
	ck_assert_uint_gt(dropped, 0);
	ck_assert_int_eq(ring_get_stats(r, 0, &st), 0);
	ck_assert_uint_eq(st.lost_full, dropped);
	drain(r, true, &rb);
	ck_assert_uint_eq(rb.n, ok);
	for (size_t i = 0; i < rb.n; i++)
		ck_assert_uint_eq(rb.recs[i].seq, i);	/* newest dropped */
	ck_assert_uint_eq(rb.missed, dropped);
	rb_free(&rb);
	ring_close(r);
}
END_TEST

struct wr_arg {
	struct ring *r;
	uint32_t id;
	uint8_t *ok;		/* per seq: 1 if committed */
	uint64_t nok;
};

static void *writer_main(void *p)
{
	struct wr_arg *a = p;

	for (uint64_t i = 0; i < PER_WRITER; i++) {
		/* every 11th: past ring_write's 4-byte-header inline path */
		uint32_t len = i % 11 == 0 ? 160 : 16 + (uint32_t)(i % 5) * 8;
		int ret = i % 3 ? put(a->r, -1, a->id, i, len, NULL) :
				  put_w(a->r, -1, a->id, i, len);

		ck_assert(ret == 0 || ret == -ENOBUFS);
		a->ok[i] = !ret;
		a->nok += !ret;
		if (i % 1024 == 0)
			sched_yield();
	}
	return NULL;
}

struct rd_arg {
	struct ring *r;
	volatile int stop;
	struct readback rb;
};

static void *reader_main(void *p)
{
	struct rd_arg *a = p;

	while (!a->stop)
		if (!drain(a->r, false, &a->rb))
			sched_yield();
	return NULL;
}

/* Each committed event read exactly once or counted lost, never an
 * uncommitted one; per writer, order kept within each buffer and along
 * the (merged) timestamps. */
static void check_threads(struct wr_arg *w, struct readback *rb,
			  uint64_t lost_over)
{
	uint64_t total_ok = 0, last_ts[NWRITERS] = { 0 };
	uint8_t *seen[NWRITERS];
	int64_t last[NWRITERS][64];

	memset(last, 0xff, sizeof(last));
	for (int i = 0; i < NWRITERS; i++) {
		seen[i] = calloc(PER_WRITER, 1);
		total_ok += w[i].nok;
	}
	for (size_t k = 0; k < rb->n; k++) {
		const struct rec *e = &rb->recs[k];

		ck_assert_uint_lt(e->writer, NWRITERS);
		ck_assert_uint_lt(e->seq, PER_WRITER);
		ck_assert_msg(w[e->writer].ok[e->seq], "uncommitted read");
		ck_assert_msg(!seen[e->writer][e->seq], "read twice");
		seen[e->writer][e->seq] = 1;
		ck_assert_int_lt(last[e->writer][rb->buf[k]], (int64_t)e->seq);
		last[e->writer][rb->buf[k]] = (int64_t)e->seq;
		(void)last_ts;
	}
	ck_assert_uint_eq(rb->n + lost_over, total_ok);
	for (int i = 0; i < NWRITERS; i++)
		free(seen[i]);
}

/* @rseq: all CPUs' buffers written with rseq; else 2 buffers, locked. */
static void run_threads(enum ring_mode mode, bool rseq)
{
	struct ring *r = rseq ? mkring_cpus(mode, 16, true) :
				mkring(mode, 16, 2, RING_CLOCK_TSC);
	struct wr_arg w[NWRITERS];
	pthread_t wt[NWRITERS], rt;
	struct rd_arg rd = { .r = r };
	struct ring_stats st;
	uint64_t lost_over = 0, lost_new = 0, nok = 0;

	if (mode != RING_MODE_FLIGHT)
		pthread_create(&rt, NULL, reader_main, &rd);
	for (int i = 0; i < NWRITERS; i++) {
		w[i] = (struct wr_arg){ .r = r, .id = (uint32_t)i,
					.ok = calloc(PER_WRITER, 1) };
		pthread_create(&wt[i], NULL, writer_main, &w[i]);
	}
	for (int i = 0; i < NWRITERS; i++)
		pthread_join(wt[i], NULL);
	if (mode != RING_MODE_FLIGHT) {
		rd.stop = 1;
		pthread_join(rt, NULL);
	} else {
		ring_trigger(r);
		ck_assert_uint_eq(ring_trigger_seq(r), 1);
	}
	drain(r, true, &rd.rb);
	for (unsigned b = 0; b < ring_nr_bufs(r); b++) {
		ck_assert_int_eq(ring_get_stats(r, b, &st), 0);
		lost_over += st.lost_overwritten;
		lost_new += st.lost_full + st.lost_busy;
	}
	for (int i = 0; i < NWRITERS; i++)
		nok += w[i].nok;
	ck_assert_uint_eq(nok + lost_new, (uint64_t)NWRITERS * PER_WRITER);
	if (mode == RING_MODE_PRODUCER)
		ck_assert_uint_eq(lost_over, 0);
	check_threads(w, &rd.rb, lost_over);
	if (mode == RING_MODE_FLIGHT)
		ck_assert_uint_gt(lost_over, 0);
	for (int i = 0; i < NWRITERS; i++)
		free(w[i].ok);
	rb_free(&rd.rb);
	ring_close(r);
}

START_TEST(test_threads_producer)
{
	run_threads(RING_MODE_PRODUCER, _i);
}
END_TEST

START_TEST(test_threads_overwrite)
{
	run_threads(RING_MODE_OVERWRITE, _i);
}
END_TEST

START_TEST(test_threads_flight)
{
	run_threads(RING_MODE_FLIGHT, _i);
}
END_TEST

/* rseq ring: a write naming a CPU's buffer lands there (the thread moves
 * to that CPU for it and back); the durable buffer takes the locked path. */
START_TEST(test_rseq_named_buffers)
{
	struct ring *r = mkring_cpus(RING_MODE_PRODUCER, 8, true);
	unsigned nb = ring_nr_bufs(r);
	struct readback rb = { 0 };
	cpu_set_t before, after;
	uint64_t per[64] = { 0 };

	ck_assert_uint_le(nb, 64);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(before), &before), 0);
	for (uint64_t i = 0; i < 50; i++)
		for (unsigned b = 0; b < nb; b++)
			ck_assert_int_eq(i % 2 ? put(r, (int)b, b, i, 32, NULL) :
					 put_w(r, (int)b, b, i, 32), 0);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(after), &after), 0);
	ck_assert(CPU_EQUAL(&before, &after));
	drain(r, true, &rb);
	ck_assert_uint_eq(rb.n, 50 * nb);
	for (size_t k = 0; k < rb.n; k++) {
		ck_assert_uint_eq(rb.recs[k].writer, rb.buf[k]);
		ck_assert_uint_eq(rb.recs[k].seq, per[rb.buf[k]]++);
	}
	ck_assert_int_eq(ring_reserve(r, (int)nb, 8, &(struct ring_wctx){ 0 }),
			 -EINVAL);
	rb_free(&rb);
	ring_close(r);
}
END_TEST

/* rseq ring: a writer that moves to another CPU between reserve and
 * commit counts its commit in the slot's locked word; the page still
 * completes exactly, with the on-CPU commits around it. */
START_TEST(test_rseq_commit_after_migration)
{
	struct ring *r = mkring_cpus(RING_MODE_PRODUCER, 64, true);
	struct rec e = { .writer = 0, .len = 32 };
	struct readback rb = { 0 };
	struct ring_wctx c;
	cpu_set_t saved, tmp;

	if (ring_nr_bufs(r) < 3) {	/* one CPU: nothing to move to */
		ring_close(r);
		return;
	}
	pin_to(0, &saved);
	for (uint64_t i = 0; i < 1000; i++) {
		e.seq = i;
		ck_assert_int_eq(ring_reserve(r, -1, 32, &c), 0);
		fill(c.data, &e);
		if (i % 7 == 0)
			pin_to(1, &tmp);	/* commit from CPU 1 */
		ring_commit(r, &c);
		if (i % 7 == 0)
			pin_to(0, &tmp);
	}
	sched_setaffinity(0, sizeof(saved), &saved);
	drain(r, true, &rb);
	ck_assert_uint_eq(rb.n, 1000);
	for (size_t i = 0; i < rb.n; i++) {
		ck_assert_uint_eq(rb.recs[i].seq, i);
		ck_assert_uint_eq(rb.buf[i], 0);
	}
	rb_free(&rb);
	ring_close(r);
}
END_TEST

/* ---- signal handlers nest inside writes ---- */

static struct ring *sig_ring;
static int sig_buf;
static volatile uint64_t sig_seq;

static void on_alarm(int sig)
{
	(void)sig;
	if (put(sig_ring, sig_buf, 1, sig_seq, 24, NULL) == 0)
		sig_seq++;
}

/* _i = 1: the rseq path, the thread kept on CPU 0 (buffer 0): handlers
 * abort the interrupted critical sections. */
START_TEST(test_signal_nesting)
{
	struct ring *r = _i ? mkring_cpus(RING_MODE_PRODUCER, 512, true) :
			      mkring(RING_MODE_PRODUCER, 512, 1, RING_CLOCK_TSC);
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	struct sigaction sa = { .sa_handler = on_alarm };
	struct readback rb = { 0 };
	uint64_t n = 0, seen[2] = { 0, 0 };
	cpu_set_t saved;

	if (_i)
		pin_to(0, &saved);
	sig_buf = _i ? -1 : 0;
	sig_ring = r;
	sig_seq = 0;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	while (sig_seq < 500 && n < 40000) {
		if (n % 2)
			ck_assert_int_eq(put(r, sig_buf, 0, n, 40, NULL), 0);
		else
			ck_assert_int_eq(put_w(r, sig_buf, 0, n, 40), 0);
		n++;
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	signal(SIGALRM, SIG_DFL);
	if (_i)
		sched_setaffinity(0, sizeof(saved), &saved);
	drain(r, true, &rb);
	ck_assert_uint_eq(rb.n, n + sig_seq);
	for (size_t i = 0; i < rb.n; i++) {
		uint32_t w = rb.recs[i].writer;

		ck_assert_uint_eq(rb.recs[i].seq, seen[w]++);
		if (i)
			ck_assert_uint_ge(rb.ts[i], rb.ts[i - 1]);
	}
	rb_free(&rb);
	ring_close(r);
}
END_TEST

/* ---- a reader in another process ---- */

static int child_reader(const char *path, uint64_t want, bool rseq)
{
	struct readback rb = { 0 };
	struct ring *r;
	int idle = 0;

	if (ring_open(path, &r))
		return 2;
	if (ring_uses_rseq(r) != rseq)
		return 5;
	ring_set_attached(r, true);
	while (rb.n < want && idle < 2000000) {
		size_t got = drain(r, idle > 100, &rb);

		idle = got ? 0 : idle + 1;
		if (!got)
			sched_yield();
	}
	for (size_t i = 0; i < rb.n; i++)
		if (rb.recs[i].seq != i)
			return 3;
	ring_close(r);
	return rb.n == want ? 0 : 4;
}

/* _i = 1: the rseq path; the writer kept on CPU 0, the reader (ending
 * partial pages from each CPU in turn) in another process. */
START_TEST(test_reader_in_other_process)
{
	char path[64];
	struct ring_params p = { .page_size = 4096, .nr_pages = 4,
				 .nr_cpus = _i ? 0 : 1,
				 .mode = RING_MODE_PRODUCER };
	struct ring *r;
	cpu_set_t saved;
	pid_t pid;
	int st, ret;

	snprintf(path, sizeof(path), "/dev/shm/tc-test-ring.%d", getpid());
	ret = ring_create(path, &p, &r);
	ck_assert_int_eq(ret, 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(child_reader(path, 50000, _i && rseq_here()));
	if (_i)
		pin_to(0, &saved);
	for (uint64_t i = 0; i < 50000;) {
		ret = i % 2 ? put(r, _i ? -1 : 0, 0, i, 48, NULL) :
			      put_w(r, _i ? -1 : 0, 0, i, 48);
		ck_assert(ret == 0 || ret == -ENOBUFS);
		if (ret)
			sched_yield();	/* the reader will make room */
		else
			i++;
	}
	if (_i)
		sched_setaffinity(0, sizeof(saved), &saved);
	ck_assert_int_eq(*ring_attached_word(r), 1);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	unlink(path);
	ring_close(r);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "reader child status %d", st);
}
END_TEST

/* ---- a writer killed between reserve and commit ---- */

/* @rseq: all CPUs' buffers, rseq path, kept on CPU 0. */
static void child_writer(const char *path, bool rseq)
{
	struct ring_params p = { .page_size = 4096, .nr_pages = 8,
				 .nr_cpus = rseq ? 0 : 1,
				 .mode = RING_MODE_PRODUCER };
	struct ring *r;
	struct ring_wctx c;
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (rseq && sched_setaffinity(0, sizeof(one), &one))
		_exit(6);
	if (ring_create(path, &p, &r) ||
	    ring_uses_rseq(r) != (rseq && rseq_here()))
		_exit(2);
	for (uint64_t i = 0; i < 300; i++)
		if (put(r, rseq ? -1 : 0, 0, i, 32, NULL))
			_exit(3);
	if (ring_reserve(r, rseq ? -1 : 0, 32, &c))
		_exit(4);
	memset(c.data, 0xee, 10);	/* half-written payload */
	raise(SIGSTOP);			/* the test hook: stop mid-write */
	_exit(5);
}

START_TEST(test_writer_killed_mid_write)
{
	struct readback rb = { 0 };
	struct ring_stats st;
	struct ring *r;
	char path[64];
	pid_t pid;
	int ws;

	snprintf(path, sizeof(path), "/dev/shm/tc-test-kill.%d", getpid());
	unlink(path);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		child_writer(path, _i);
	ck_assert_int_eq(waitpid(pid, &ws, WUNTRACED), pid);
	ck_assert(WIFSTOPPED(ws));
	ck_assert_int_eq(ring_open(path, &r), 0);
	unlink(path);
	ck_assert(ring_owner_alive(r));
	ck_assert_int_eq(ring_reader_recover(r, 0), -EBUSY);
	drain(r, true, &rb);	/* the stuck page cannot be taken */
	ck_assert_uint_lt(rb.n, 300);
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
	ck_assert(!ring_owner_alive(r));
	ck_assert_int_ge(ring_reader_recover(r, 0), 1);
	drain(r, true, &rb);
	ck_assert_uint_eq(rb.n, 300);
	for (size_t i = 0; i < rb.n; i++)
		ck_assert_uint_eq(rb.recs[i].seq, i);
	ck_assert_int_eq(ring_get_stats(r, 0, &st), 0);
	ck_assert_uint_eq(st.unfinished, 1);
	rb_free(&rb);
	ring_close(r);
}
END_TEST

START_TEST(test_formats)
{
	struct ring *r = mkring(RING_MODE_PRODUCER, 2, 1, RING_CLOCK_TSC);
	uint64_t cur = 0;
	const char *t;
	uint32_t a = ring_next_event_id(r), b = ring_next_event_id(r);
	char big[70000];

	ck_assert_uint_eq(b, a + 1);
	ck_assert_int_eq(ring_format_next(r, &cur, &t), 0);
	ck_assert_int_eq(ring_format_append(r, "name: a\nID: 1\n"), 0);
	ck_assert_int_eq(ring_format_append(r, "name: b\n"), 0);
	ck_assert_int_eq(ring_format_next(r, &cur, &t), 1);
	ck_assert_str_eq(t, "name: a\nID: 1\n");
	ck_assert_int_eq(ring_format_next(r, &cur, &t), 1);
	ck_assert_str_eq(t, "name: b\n");
	ck_assert_int_eq(ring_format_next(r, &cur, &t), 0);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	ck_assert_int_eq(ring_format_append(r, big), -ENOSPC);
	ck_assert_int_eq(ring_format_next(r, &cur, &t), 0);
	ring_close(r);
}
END_TEST

START_TEST(test_clock_conversion)
{
	struct ring_clock_conv c;
	struct timespec ts;
	uint64_t t0, t1, mono, lo, hi;

	ck_assert_int_eq(ring_clock_calibrate(10, &c), -EINVAL);
	ck_assert_int_eq(ring_clock_calibrate(20000, &c), 0);
	usleep(50000);
	t0 = ring_clock_now(RING_CLOCK_TSC);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t1 = ring_clock_now(RING_CLOCK_TSC);
	mono = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	lo = ring_clock_to_ns(&c, t0);
	hi = ring_clock_to_ns(&c, t1);
	ck_assert_uint_le(lo, hi);
	/* 20 ms of calibration, 50 ms of extrapolation: error well under
	 * 1 ms unless the clock is broken */
	ck_assert_uint_le(lo, mono + 1000000);
	ck_assert_uint_ge(hi + 1000000, mono);
	ck_assert_uint_eq(ring_clock_to_ns(&c, c.tsc0), c.mono0);
}
END_TEST

START_TEST(test_open_rejects_bad_files)
{
	int fd = memfd_create("junk", 0);
	struct ring *r = NULL, *good;
	char junk[8192];

	memset(junk, 0x41, sizeof(junk));
	ck_assert_int_eq(write(fd, junk, sizeof(junk)), (int)sizeof(junk));
	ck_assert_int_eq(ring_open_fd(fd, &r), TC_ERR_PAGE_MALFORMED);
	ck_assert_ptr_null(r);
	close(fd);
	good = mkring(RING_MODE_PRODUCER, 2, 1, RING_CLOCK_TSC);
	ck_assert_int_eq(ftruncate(ring_fd(good), 4096 * 3), 0);
	ck_assert_int_eq(ring_open_fd(ring_fd(good), &r), TC_ERR_PAGE_MALFORMED);
	ring_close(good);
	ck_assert_int_eq(ring_open("/nonexistent/ring", &r), -ENOENT);
}
END_TEST

/* Parse a format-table entry ("system\nformat") with libtraceevent. */
static struct tep_event *parse_entry(struct tep_handle *tep, const char *t)
{
	const char *nl = strchr(t, '\n');
	char sys[64];
	struct tep_event *ev = NULL;

	ck_assert_ptr_nonnull(nl);
	ck_assert_uint_lt((size_t)(nl - t), sizeof(sys));
	memcpy(sys, t, (size_t)(nl - t));
	sys[nl - t] = 0;
	ck_assert_int_eq(tep_parse_format(tep, &ev, nl + 1, strlen(nl + 1),
					  sys), 0);
	return ev;
}

static unsigned long long num(struct tep_event *ev, const char *name,
			      void *data, int size)
{
	struct tep_format_field *f = tep_find_any_field(ev, name);
	struct tep_record rec = { .data = data, .size = size };
	unsigned long long v = 0;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(tep_read_number_field(f, rec.data, &v), 0);
	return v;
}

/* The public API end to end: registration text parsed by libtraceevent,
 * records decoded with kbuffer + tep, the one-branch disabled path. */
START_TEST(test_public_api)
{
	struct tc_field fields[] = {
		{ "a", TC_U32, 0 }, { "b", TC_S64, 0 }, { "s", TC_STRING, 16 },
	};
	struct { uint32_t a, pad; int64_t b; char s[16]; } rec = {
		.a = 7, .b = -5, .s = "hi" };
	struct tep_handle *tep = tep_alloc();
	struct tep_event *tev, *pev;
	struct kbuffer *kb;
	struct ring_page_ref pg;
	struct tc_options o = { .pages_per_cpu = 4 };
	struct tc_event *ev;
	struct ring *r;
	const char *t;
	uint64_t cur = 0;
	unsigned long long ts;
	char path[64], longs[301];
	void *d;

	snprintf(path, sizeof(path), "/dev/shm/tc-test-api.%d", getpid());
	o.path = path;
	ck_assert_int_eq(tc_event_register("p", "e", fields, 3, NULL, &ev),
			 -ENODEV);
	ck_assert_int_eq(tc_init(&o), 0);
	ck_assert_int_eq(tc_init(&o), -EALREADY);
	ck_assert_int_eq(tc_event_register("my app", "e", fields, 3, NULL,
					   &ev), -EINVAL);
	ck_assert_int_eq(tc_event_register("myapp", "req", fields, 3, NULL,
					   &ev), 0);
	ck_assert_uint_eq(ev->size, 32);
	ck_assert(!tc_enabled());
	ck_assert_int_eq(TC_WRITE(ev, &rec, sizeof(rec)), 0);
	ck_assert_int_eq(tc_write(ev, &rec, sizeof(rec)), -ENODEV);
	ck_assert_int_eq(ring_open(path, &r), 0);
	ring_set_attached(r, true);
	ck_assert(tc_enabled());
	ck_assert_int_eq(TC_WRITE(ev, &rec, sizeof(rec)), 0);
	ck_assert_int_eq(tc_printf("hello %d", 42), 0);
	/* past ring_write_hdr()'s inline path (8 + 301 bytes) */
	memset(longs, 'x', sizeof(longs) - 1);
	longs[sizeof(longs) - 1] = 0;
	ck_assert_int_eq(tc_printf("%s", longs), 0);
	ck_assert_int_eq(tc_write(ev, longs, RING_MAX_PAYLOAD - 7), -E2BIG);
	ck_assert_int_eq(ring_format_next(r, &cur, &t), 1);
	pev = parse_entry(tep, t);
	ck_assert_str_eq(pev->name, "print");
	ck_assert_int_eq(ring_format_next(r, &cur, &t), 1);
	tev = parse_entry(tep, t);
	ck_assert_str_eq(tev->system, "myapp");
	ck_assert_int_eq(tev->id, ev->id);
	/* both records went to this CPU's buffer */
	for (unsigned b = 0;; b++) {
		ck_assert_uint_lt(b, ring_nr_bufs(r));
		ring_reader_flush(r, b);
		if (ring_reader_get(r, b, &pg) == 0)
			break;
	}
	kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	kbuffer_load_subbuffer(kb, (void *)pg.data);
	d = kbuffer_read_event(kb, &ts);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(num(tev, "common_type", d, 40), ev->id);
	ck_assert_uint_eq(num(tev, "common_pid", d, 40), (unsigned)gettid());
	ck_assert_uint_eq(num(tev, "a", d, 40), 7);
	ck_assert_int_eq((long long)num(tev, "b", d, 40), -5);
	ck_assert_str_eq((char *)d + tep_find_field(tev, "s")->offset, "hi");
	d = kbuffer_next_event(kb, &ts);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(num(pev, "common_type", d, 32), pev->id);
	ck_assert_str_eq((char *)d + tep_find_field(pev, "buf")->offset,
			 "hello 42");
	d = kbuffer_next_event(kb, &ts);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(num(pev, "common_type", d, 32), pev->id);
	ck_assert_str_eq((char *)d + tep_find_field(pev, "buf")->offset,
			 longs);
	ck_assert_ptr_null(kbuffer_next_event(kb, &ts));
	kbuffer_free(kb);
	tep_free(tep);
	ring_close(r);
	tc_event_free(ev);
	tc_shutdown();
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

static Suite *ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("ring");

	tcase_set_timeout(tc, 120);
	tu_add_tests(tc, TU_TESTS(test_single_thread_exact, test_time_extend_and_sizes,
					test_producer_full));
	tcase_add_loop_test(tc, test_threads_producer, 0, 2);
	tcase_add_loop_test(tc, test_threads_overwrite, 0, 2);
	tcase_add_loop_test(tc, test_threads_flight, 0, 2);
	tcase_add_loop_test(tc, test_write_stamped, 0, 2);
	tcase_add_test(tc, test_rseq_named_buffers);
	tcase_add_test(tc, test_rseq_commit_after_migration);
	tcase_add_loop_test(tc, test_signal_nesting, 0, 2);
	tcase_add_loop_test(tc, test_reader_in_other_process, 0, 2);
	tcase_add_loop_test(tc, test_writer_killed_mid_write, 0, 2);
	tu_add_tests(tc, TU_TESTS(test_formats, test_clock_conversion,
					test_open_rejects_bad_files, test_public_api));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(ring_suite())
