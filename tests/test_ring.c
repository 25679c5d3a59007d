/*
 * test_ring.c - check tests for the user-space ring buffer (common/ring*):
 * every page is decoded with libtraceevent's kbuffer, as the collector
 * does. Single-thread exactness (payloads, sizes, timestamps, time
 * extends), full buffers, N threads x M events with per-writer sequence
 * numbers in every mode (each committed event read exactly once or counted
 * as lost, per-writer order kept), nested writes from signal handlers, a
 * reader in another process, a writer SIGKILLed between reserve and
 * commit, the format table, clock conversion, and rejection of bad files.
 * Own buffers (one writer thread each): exact read-back through page.h
 * and kbuffer, copies of a live writer's committed prefix put together
 * with the trimmed pages, recovery after the writer's kill -9, claiming,
 * a full buffer, overwrite and flight modes, and a writer thread racing
 * a reader that copies.
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

#include "common/page.h"
#include "common/ring.h"
#include "common/ring_inline.h"
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

/* All CPUs' buffers, clock @clk; with @rseq the per-CPU fast path where
 * it works (else, and without @rseq, the locked path). */
static struct ring *mkring_cpus_clk(enum ring_mode mode, uint32_t pages,
				    bool rseq, enum ring_clock_id clk)
{
	struct ring_params p = {
		.page_size = 4096, .nr_pages = pages, .mode = mode,
		.clock = clk, .locked = !rseq,
	};
	struct ring *r = NULL;
	int ret = ring_create(NULL, &p, &r);

	ck_assert_msg(ret == 0, "ring_create: %s", tc_strerror(ret));
	ck_assert_int_eq(ring_uses_rseq(r), rseq && rseq_here());
	return r;
}

static struct ring *mkring_cpus(enum ring_mode mode, uint32_t pages, bool rseq)
{
	return mkring_cpus_clk(mode, pages, rseq, RING_CLOCK_TSC);
}

/* Run the calling thread on CPU @cpu only (saving its affinity). */
static void pin_to(int cpu, cpu_set_t *saved)
{
	cpu_set_t one;

	TU_SYS(sched_getaffinity(0, sizeof(*saved), saved));
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	TU_SYS(sched_setaffinity(0, sizeof(one), &one));
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
	TU_EQ(kbuffer_load_subbuffer(kb, (void *)pg->data), 0);
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
		TU_OK(put(r, 0, 1, i, 16 + (uint32_t)(i * 7 % 300), &ts[i]));
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
 * switches, on an rseq ring (_i 0), a locked one (1), and an rseq ring
 * on CLOCK_MONOTONIC (2: the fast path out of line). */
START_TEST(test_write_stamped)
{
	struct ring *r = _i == 0 ? mkring_cpus(RING_MODE_PRODUCER, 64, true) :
			 _i == 2 ? mkring_cpus_clk(RING_MODE_PRODUCER, 64, true,
						   RING_CLOCK_MONO) :
				   mkring(RING_MODE_PRODUCER, 64, 1,
					  RING_CLOCK_TSC);
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8,
					   KBUFFER_ENDIAN_LITTLE);
	struct ring_page_ref pg;
	unsigned long long ts;
	uint64_t w[5], n = 0;
	cpu_set_t saved;

	if (_i != 1)
		pin_to(0, &saved);
	for (uint64_t i = 0; i < 3000; i++) {
		uint32_t len = i % 3 ? 40 : 24;

		for (unsigned k = 0; k < 5; k++)
			w[k] = i * 10 + k;
		TU_OK(ring_write_stamped(r, w, len, len - 8));
	}
	TU_ERR(ring_write_stamped(r, w, 40, 33), -EINVAL);
	TU_ERR(ring_write_stamped(r, w, 4, 0), -EINVAL);
	TU_ERR(ring_write_stamped(r, w, 120, 0), -EINVAL);
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
	if (_i != 1)
		sched_setaffinity(0, sizeof(saved), &saved);
	kbuffer_free(kb);
	ring_close(r);
}
END_TEST

/* The bytes ring_write() and ring_write_hdr() record on an rseq ring do
 * not depend on the clock (the TSC's fast path is inline, the other's
 * out of line): the kernel's short header up to 112 bytes of payload,
 * type_len 0 and a length word past it; the TSC (_i 0), CLOCK_MONOTONIC
 * (1), each event a page's first (no delta to vary). */
START_TEST(test_write_clocks)
{
	struct ring *r = mkring_cpus_clk(RING_MODE_PRODUCER, 8, true,
					 _i ? RING_CLOCK_MONO : RING_CLOCK_TSC);
	static const uint32_t lens[] = { 1, 8, 32, 112, 113, 200 };
	uint8_t d[256], hdr[8];
	struct ring_page_ref pg;
	cpu_set_t saved;

	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 7 + 1);
	memset(hdr, 0xab, sizeof(hdr));
	pin_to(0, &saved);
	for (unsigned k = 0; k < 2 * 6; k++) {
		uint32_t len = lens[k % 6], plen = len + (k >= 6 ? 8 : 0);
		uint32_t l4 = (plen + 3) & ~3u, h, off;

		if (k < 6)
			TU_OK(ring_write(r, -1, d, len));
		else
			TU_OK(ring_write_hdr(r, hdr, d, len));
		ck_assert_int_eq(ring_reader_flush(r, 0), 1);
		TU_OK(ring_reader_get(r, 0, &pg));
		memcpy(&h, pg.data + 16, 4);
		off = 16 + 4;
		if (l4 <= 112) {
			ck_assert_uint_eq(h & 31, l4 / 4);
		} else {
			ck_assert_uint_eq(h & 31, 0);
			memcpy(&h, pg.data + off, 4);
			ck_assert_uint_eq(h, l4 + 4);
			off += 4;
		}
		if (k >= 6) {
			ck_assert_int_eq(memcmp(pg.data + off, hdr, 8), 0);
			off += 8;
		}
		ck_assert_int_eq(memcmp(pg.data + off, d, len), 0);
		ring_reader_put(r, 0);
	}
	sched_setaffinity(0, sizeof(saved), &saved);
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

	TU_OK(put(r, 0, 1, 0, 16, &ts[0]));
	usleep(150000);
	TU_OK(put(r, 0, 1, 1, 16, &ts[1]));
	TU_OK(put(r, 0, 1, 2, RING_MAX_PAYLOAD, &ts[2]));
	TU_OK(ring_write(r, 0, "", 0));
	TU_ERR(ring_write(r, 0, "x", RING_MAX_PAYLOAD + 1), -E2BIG);
	TU_ERR(ring_reader_get(r, 0, &pg), -EAGAIN);
	ck_assert_int_eq(ring_reader_flush(r, 0), 1);
	TU_EQ(ring_reader_flush(r, 0), 0);
	TU_OK(ring_reader_get(r, 0, &pg));
	TU_ERR(ring_reader_get(r, 0, &pg), -EBUSY);
	ring_reader_put(r, 0);
	TU_ERR(ring_reader_get(r, 0, &pg), -EAGAIN);
	ring_close(r);

	r = mkring(RING_MODE_PRODUCER, 8, 1, RING_CLOCK_MONO);
	TU_OK(put(r, 0, 1, 0, 16, &ts[0]));
	usleep(150000);
	TU_OK(put(r, 0, 1, 1, 16, &ts[1]));
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
	TU_OK(ring_get_stats(r, 0, &st));
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
		TU_OK(ring_get_stats(r, b, &st));
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
	TU_SYS(sched_getaffinity(0, sizeof(before), &before));
	for (uint64_t i = 0; i < 50; i++)
		for (unsigned b = 0; b < nb; b++)
			TU_OK(i % 2 ? put(r, (int)b, b, i, 32, NULL) : put_w(r, (int)b, b, i, 32));
	TU_SYS(sched_getaffinity(0, sizeof(after), &after));
	ck_assert(CPU_EQUAL(&before, &after));
	drain(r, true, &rb);
	ck_assert_uint_eq(rb.n, 50 * nb);
	for (size_t k = 0; k < rb.n; k++) {
		ck_assert_uint_eq(rb.recs[k].writer, rb.buf[k]);
		ck_assert_uint_eq(rb.recs[k].seq, per[rb.buf[k]]++);
	}
	TU_ERR(ring_reserve(r, (int)nb, 8, &(struct ring_wctx){ 0 }), -EINVAL);
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
		TU_OK(ring_reserve(r, -1, 32, &c));
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

/* Every other event through ring_write(), whose fast path keeps a
 * per-thread cache the interrupted write may be reading or filling. */
static void on_alarm(int sig)
{
	int ret = sig_seq % 2 ? put_w(sig_ring, sig_buf, 1, sig_seq, 24) :
				put(sig_ring, sig_buf, 1, sig_seq, 24, NULL);

	(void)sig;
	if (ret == 0)
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
			TU_OK(put(r, sig_buf, 0, n, 40, NULL));
		else
			TU_OK(put_w(r, sig_buf, 0, n, 40));
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
	TU_OK(ret);
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
	TU_OK(ring_open(path, &r));
	unlink(path);
	ck_assert(ring_owner_alive(r));
	TU_ERR(ring_reader_recover(r, 0), -EBUSY);
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
	TU_OK(ring_get_stats(r, 0, &st));
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
	TU_EQ(ring_format_next(r, &cur, &t), 0);
	TU_OK(ring_format_append(r, "name: a\nID: 1\n"));
	TU_OK(ring_format_append(r, "name: b\n"));
	ck_assert_int_eq(ring_format_next(r, &cur, &t), 1);
	ck_assert_str_eq(t, "name: a\nID: 1\n");
	ck_assert_int_eq(ring_format_next(r, &cur, &t), 1);
	ck_assert_str_eq(t, "name: b\n");
	TU_EQ(ring_format_next(r, &cur, &t), 0);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	TU_ERR(ring_format_append(r, big), -ENOSPC);
	TU_EQ(ring_format_next(r, &cur, &t), 0);
	ring_close(r);
}
END_TEST

START_TEST(test_clock_conversion)
{
	struct ring_clock_conv c;
	struct timespec ts;
	uint64_t t0, t1, mono, lo, hi;

	TU_ERR(ring_clock_calibrate(10, &c), -EINVAL);
	TU_OK(ring_clock_calibrate(20000, &c));
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
	TU_ERR(ring_open_fd(fd, &r), TC_ERR_PAGE_MALFORMED);
	ck_assert_ptr_null(r);
	close(fd);
	good = mkring(RING_MODE_PRODUCER, 2, 1, RING_CLOCK_TSC);
	TU_SYS(ftruncate(ring_fd(good), 4096 * 3));
	TU_ERR(ring_open_fd(ring_fd(good), &r), TC_ERR_PAGE_MALFORMED);
	ring_close(good);
	TU_ERR(ring_open("/nonexistent/ring", &r), -ENOENT);
}
END_TEST

/*
 * A ring its program is still making (ring_create(): the file made, then
 * sized, then its header with the magic last) is "again later", not a
 * malformed file the agent would ignore for good.
 */
START_TEST(test_open_while_made)
{
	int fd = memfd_create("being-made", 0);
	struct ring *r = NULL;

	TU_ERR(ring_open_fd(fd, &r), -EAGAIN);		/* made, not sized */
	TU_SYS(ftruncate(fd, 4096 * 8));
	TU_ERR(ring_open_fd(fd, &r), -EAGAIN);		/* sized, header not written */
	ck_assert_ptr_null(r);
	close(fd);
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
	TU_EQ(tep_parse_format(tep, &ev, nl + 1, strlen(nl + 1), sys), 0);
	return ev;
}

static unsigned long long num(struct tep_event *ev, const char *name,
			      void *data, int size)
{
	struct tep_format_field *f = tep_find_any_field(ev, name);
	struct tep_record rec = { .data = data, .size = size };
	unsigned long long v = 0;

	ck_assert_ptr_nonnull(f);
	TU_EQ(tep_read_number_field(f, rec.data, &v), 0);
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
	TU_ERR(tc_event_register("p", "e", fields, 3, NULL, &ev), -ENODEV);
	TU_OK(tc_init(&o));
	TU_ERR(tc_init(&o), -EALREADY);
	TU_ERR(tc_event_register("my app", "e", fields, 3, NULL, &ev), -EINVAL);
	TU_OK(tc_event_register("myapp", "req", fields, 3, NULL, &ev));
	ck_assert_uint_eq(ev->size, 32);
	ck_assert(!tc_enabled());
	TU_OK(TC_WRITE(ev, &rec, sizeof(rec)));
	TU_ERR(tc_write(ev, &rec, sizeof(rec)), -ENODEV);
	TU_OK(ring_open(path, &r));
	ring_set_attached(r, true);
	ck_assert(tc_enabled());
	TU_OK(TC_WRITE(ev, &rec, sizeof(rec)));
	TU_OK(tc_printf("hello %d", 42));
	/* past ring_write_hdr()'s inline path (8 + 301 bytes) */
	memset(longs, 'x', sizeof(longs) - 1);
	longs[sizeof(longs) - 1] = 0;
	TU_OK(tc_printf("%s", longs));
	TU_ERR(tc_write(ev, longs, RING_MAX_PAYLOAD - 7), -E2BIG);
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

/* ---- own buffers: one writer thread per buffer (ring.h) ---- */

static struct ring *mkring_own(enum ring_mode mode, uint32_t pages,
			       uint32_t nr_own)
{
	struct ring_params p = {
		.page_size = 4096, .nr_pages = pages, .nr_cpus = 1,
		.mode = mode, .clock = RING_CLOCK_MONO, .nr_own = nr_own,
	};
	struct ring *r = NULL;
	int ret = ring_create(NULL, &p, &r);

	ck_assert_msg(ret == 0, "ring_create: %s", tc_strerror(ret));
	return r;
}

/*
 * One test record into own buffer @o at time @now, the way lib/fgraph.c's
 * own_exit_slow() writes an exit record: the inline check, else
 * ring_own_enter() (a time extend or the next page), the payload in
 * place, ring_own_commit(). @len: a multiple of 4, 16..112 (short
 * events). Return: as ring_own_enter().
 */
static int own_put(struct ring *r, struct ring_own *o, uint32_t writer,
		   uint64_t seq, uint32_t len, uint64_t now)
{
	struct rec e = { .writer = writer, .len = len, .seq = seq };
	uint32_t total = 4 + len;
	uint8_t *d = ring_own_fast(o, total, now);

	if (!d) {
		int ret = ring_own_enter(r, o, total, now);

		if (ret)
			return ret;
		d = o->next;
	}
	fill(d + 4, &e);
	ring_own_commit(o, total, len / 4, now);
	return 0;
}

/* Bytes left in the page @o holds (0: none held). */
static uint32_t own_room(const struct ring_own *o)
{
	return o->next ? (uint32_t)(o->end - o->next) : 0;
}

/*
 * Decode one page with common/page.h (page_check, then every record),
 * checking each event's payload, and collect it; kbuffer must read the
 * same events with the same timestamps.
 */
static void decode_own(const struct ring_page_ref *pg, struct readback *rb)
{
	const struct page_layout l = page_layout_host((uint32_t)pg->len);
	struct readback kb = { 0 };
	struct page_record rec;
	struct page_info pi;
	struct page_iter it;
	size_t first = rb->n;
	int ret;

	ret = page_check(&l, pg->data, pg->len, &pi);
	ck_assert_msg(ret == 0, "page %llu of buffer %u: %s",
		      (unsigned long long)pg->seq, pg->buf,
		      page_check_why(&l, pg->data, pg->len));
	ck_assert_int_eq(pi.missed, pg->missed);
	page_iter_init(&it, &l, &pi);
	while ((ret = page_next_record(&it, &rec)) > 0) {
		struct rec e;

		if (!page_record_is_data(&rec))
			continue;
		ck_assert_uint_ge(rec.len, sizeof(e));
		memcpy(&e, rec.payload, sizeof(e));
		ck_assert_uint_eq(rec.len, (e.len + 3) & ~3u);
		for (uint32_t i = sizeof(e); i < e.len; i++)
			ck_assert_uint_eq(rec.payload[i], (uint8_t)(e.seq + i));
		rb_push(rb, &e, rec.ts, pg->buf);
	}
	ck_assert_msg(ret == 0, "page %llu: %s", (unsigned long long)pg->seq,
		      page_iter_why(&it));
	decode_page(pg, &kb);
	ck_assert_uint_eq(kb.n, rb->n - first);
	for (size_t i = 0; i < kb.n; i++) {
		ck_assert_uint_eq(kb.recs[i].seq, rb->recs[first + i].seq);
		ck_assert_uint_eq(kb.ts[i], rb->ts[first + i]);
	}
	rb->missed += kb.missed;
	rb->pages++;
	rb_free(&kb);
}

/* Take what buffer @b has (with @flush: ask for a copy of an own
 * buffer's committed prefix first); returns pages read. */
static size_t drain_own(struct ring *r, unsigned b, bool flush,
			struct readback *rb)
{
	struct ring_page_ref pg;
	size_t n = 0;
	int ret;

	if (flush)
		TU_EQ(ring_reader_flush(r, b), 0);
	while ((ret = ring_reader_get(r, b, &pg)) == 0) {
		ck_assert_uint_eq(pg.buf, b);
		decode_own(&pg, rb);
		ring_reader_put(r, b);
		n++;
	}
	TU_ERR(ret, -EAGAIN);
	return n;
}

/* What was read is exactly events 0..@n-1 of @writer, in order, each at
 * its timestamp @ts[seq], all from buffer @buf; @line: the caller's. */
static void check_own_at(int line, const struct readback *rb, size_t n,
			 uint32_t writer, const uint64_t *ts, unsigned buf)
{
	for (size_t i = 0; i < rb->n && i < n; i++) {
		ck_assert_msg(rb->recs[i].seq == i,
			      "line %d: event %zu read is seq %llu (writer %u)",
			      line, i, (unsigned long long)rb->recs[i].seq,
			      rb->recs[i].writer);
		ck_assert_uint_eq(rb->recs[i].writer, writer);
		ck_assert_msg(rb->ts[i] == ts[i],
			      "line %d: event %zu: ts %llu, not %llu", line, i,
			      (unsigned long long)rb->ts[i],
			      (unsigned long long)ts[i]);
		ck_assert_uint_eq(rb->buf[i], buf);
	}
	ck_assert_msg(rb->n == n, "line %d: %zu events read, not %zu", line,
		      rb->n, n);
}
#define check_own(...) check_own_at(__LINE__, __VA_ARGS__)

/* A writer's schedule: the next event's number and time. */
struct own_gen {
	struct ring *r;
	struct ring_own *o;
	uint64_t seq, now;
	uint64_t *ts;		/* per seq: its time */
	size_t cap;
};

/* @g for writer @id, which claims @o in @r: its first event @now on, up
 * to @cap events. */
static void gen_start(struct own_gen *g, struct ring *r, struct ring_own *o,
		      uint64_t id, uint64_t now, size_t cap)
{
	*g = (struct own_gen){ .r = r, .o = o, .now = now, .cap = cap,
			       .ts = calloc(cap, sizeof(*g->ts)) };
	TU_OK(ring_own_claim(r, id, o));
}

/* The next event, @gap after the previous one; must be written. */
static void gen_put(struct own_gen *g, uint32_t len, uint64_t gap)
{
	ck_assert_uint_lt(g->seq, g->cap);
	g->now += gap;
	g->ts[g->seq] = g->now;
	TU_OK(own_put(g->r, g->o, 1, g->seq, len, g->now));
	g->seq++;
}

/* 16-byte events until the page in hand has at most @room bytes left
 * (and more than @room - 20). */
static void gen_fill_to(struct own_gen *g, uint32_t room)
{
	while (own_room(g->o) > room)
		gen_put(g, 16, 3);
}

/*
 * A single writer across several laps of the ring: every event reads
 * back once, in order, with its exact timestamp, through page.h and
 * kbuffer alike. Time gaps: 2^27 - 1 (no extend), 2^27 (extend), 2^40,
 * gaps at a page's first event, and gaps where the extend fits the page
 * exactly, or the event would but not with its extend (the next page).
 */
START_TEST(test_own_exact)
{
	struct ring *r = mkring_own(RING_MODE_PRODUCER, 16, 2);
	const unsigned ob = ring_durable_buf(r) + 1;
	struct readback rb = { 0 };
	struct ring_own o;
	struct ring_stats st;
	struct own_gen g;
	uint32_t room;

	gen_start(&g, r, &o, 7, 5, 4000);
	ck_assert_uint_eq(o.buf, ob);
	ck_assert(ring_own_is(r, ob));
	gen_put(&g, 16, 1ull << 30);	/* the first: a page's own time */
	for (uint64_t i = 0; g.seq < 3000; i++) {
		uint32_t len = 16 + (uint32_t)(i * 12 % 100);
		uint64_t gap = 1 + i * 7919 % 5000;

		if (i == 400)
			gap = 1ull << 27;
		else if (i == 401)
			gap = (1ull << 27) - 1;
		else if (i == 1000)
			gap = 1ull << 40;
		else if (i == 1500)
			gap = (1ull << 33) + 12345;
		if (i % 500 == 250) {
			/* the event fits, its time extend does not */
			gen_fill_to(&g, 120);
			room = own_room(&o);
			gen_put(&g, room - 8, 1ull << 28);
			ck_assert_uint_eq(own_room(&o), 4080 - (room - 4));
			continue;
		}
		if (i % 500 == 300) {
			/* extend and event fill the page to its end */
			gen_fill_to(&g, 120);
			room = own_room(&o);
			gen_put(&g, room - 12, 1ull << 29);
			ck_assert_uint_eq(own_room(&o), 0);
			gen_put(&g, 40, 1ull << 27);	/* a new page's first */
			continue;
		}
		gen_put(&g, len, gap);
		if (i % 50 == 0)
			drain_own(r, ob, false, &rb);
	}
	ring_own_release(r, &o);
	ck_assert_ptr_null(o.b);
	drain_own(r, ob, false, &rb);
	ck_assert_uint_gt(rb.pages, 40);	/* more than two laps */
	check_own(&rb, g.seq, 1, g.ts, ob);
	ck_assert_uint_eq(rb.missed, 0);
	TU_OK(ring_get_stats(r, ob, &st));
	ck_assert_uint_eq(st.lost_full + st.lost_busy, 0);
	drain(r, true, &rb);		/* nothing else */
	ck_assert_uint_eq(rb.n, g.seq);
	free(g.ts);
	rb_free(&rb);
	ring_close(r);
}
END_TEST

/* Read @r's own buffer @b with a copy of its committed prefix; the copy
 * must hold exactly @n events (0: -EAGAIN or an empty copy). */
static void copy_expect(struct ring *r, unsigned b, struct readback *rb,
			size_t n)
{
	size_t before = rb->n;
	struct ring_page_ref pg;
	int ret;

	TU_EQ(ring_reader_flush(r, b), 0);
	ret = ring_reader_get(r, b, &pg);
	if (n)
		TU_OK(ret);
	if (ret == 0) {
		decode_own(&pg, rb);
		ring_reader_put(r, b);
	} else {
		TU_ERR(ret, -EAGAIN);
	}
	ck_assert_uint_eq(rb->n - before, n);
}

/*
 * Events that fill a page to its last byte (51 of 80 bytes: 4080, the
 * first 20 copied out early): the page is complete at the last commit,
 * and the reader may take it before the writer's next event, which must
 * then neither be lost nor touch the page the reader holds. Once more
 * with a time extend among them.
 */
START_TEST(test_own_page_filled_exactly)
{
	struct ring *r = mkring_own(RING_MODE_PRODUCER, 4, 1);
	const unsigned ob = ring_durable_buf(r) + 1;
	struct readback rb = { 0 };
	struct ring_page_ref pg;
	struct ring_own o;
	struct own_gen g;
	uint8_t held[4096];

	gen_start(&g, r, &o, 1, 1, 200);
	for (int i = 0; i < 20; i++)
		gen_put(&g, 76, 10);
	copy_expect(r, ob, &rb, 20);
	for (int i = 20; i < 51; i++)
		gen_put(&g, 76, 10);
	ck_assert_uint_eq(own_room(&o), 0);
	TU_OK(ring_reader_get(r, ob, &pg));	/* complete: no flush needed */
	memcpy(held, pg.data, sizeof(held));
	gen_put(&g, 76, 10);			/* the next page's first */
	ck_assert_msg(!memcmp(held, pg.data, sizeof(held)),
		      "the writer changed the page the reader holds");
	decode_own(&pg, &rb);
	check_own(&rb, 51, 1, g.ts, ob);
	ring_reader_put(r, ob);
	/* with an extend: that first, 47 more, 2 of 116 bytes: 4080 */
	for (int i = 0; i < 47; i++)
		gen_put(&g, 76, i == 20 ? 1ull << 28 : 10);
	gen_put(&g, 112, 10);
	gen_put(&g, 112, 10);
	ck_assert_uint_eq(own_room(&o), 0);
	drain_own(r, ob, false, &rb);
	check_own(&rb, g.seq, 1, g.ts, ob);
	ring_own_release(r, &o);
	drain_own(r, ob, false, &rb);
	check_own(&rb, g.seq, 1, g.ts, ob);
	free(g.ts);
	rb_free(&rb);
	ring_close(r);
}
END_TEST

/*
 * A live writer's page read in pieces (the owner alive: this process):
 * copies of the committed prefix, then more events, another copy, then
 * the page completes and comes without what was copied; a copy while the
 * writer holds a time extend but not its event yet, or an event written
 * but not committed. Then 20000 events with copies and page takes at
 * random points: the pieces put together are every event once, in order,
 * at its exact time.
 */
START_TEST(test_own_partial_copies)
{
	struct ring *r = mkring_own(RING_MODE_PRODUCER, 8, 1);
	const unsigned ob = ring_durable_buf(r) + 1;
	struct readback rb = { 0 };
	struct ring_page_ref pg;
	struct ring_own o;
	struct own_gen g;
	struct rec e = { .writer = 1, .len = 40 };
	uint64_t q, rnd = 12345;
	size_t n;

	gen_start(&g, r, &o, 1, 1000, 30000);
	copy_expect(r, ob, &rb, 0);		/* no page yet */
	for (int i = 0; i < 10; i++)
		gen_put(&g, 24, 100);
	q = o.q;
	TU_EQ(ring_reader_flush(r, ob), 0);
	TU_OK(ring_reader_get(r, ob, &pg));
	ck_assert_uint_eq(pg.seq, q);
	ck_assert(!pg.missed);
	decode_own(&pg, &rb);
	ring_reader_put(r, ob);
	ck_assert_uint_eq(rb.n, 10);
	TU_ERR(ring_reader_get(r, ob, &pg), -EAGAIN);	/* one copy a flush */
	copy_expect(r, ob, &rb, 0);			/* nothing new */
	gen_put(&g, 16, 7);
	gen_put(&g, 16, 1ull << 30);	/* an extend inside the copy */
	gen_put(&g, 112, 1);
	copy_expect(r, ob, &rb, 3);
	check_own(&rb, g.seq, 1, g.ts, ob);

	/* the writer entered a time extend, its event not written yet */
	g.now += 1ull << 29;
	TU_OK(ring_own_enter(r, &o, 44, g.now));
	copy_expect(r, ob, &rb, 0);
	/* ... written but not committed */
	e.seq = g.seq;
	fill(o.next + 4, &e);
	copy_expect(r, ob, &rb, 0);
	g.ts[g.seq] = g.now;
	ring_own_commit(&o, 44, 10, g.now);
	g.seq++;
	copy_expect(r, ob, &rb, 1);
	check_own(&rb, g.seq, 1, g.ts, ob);

	/* the page completes; the next holds a few */
	while (o.q == q)
		gen_put(&g, 60, 50);
	n = g.seq;
	gen_put(&g, 16, 50);
	TU_OK(ring_reader_get(r, ob, &pg));	/* page q, the rest of it */
	ck_assert_uint_eq(pg.seq, q);
	decode_own(&pg, &rb);
	ring_reader_put(r, ob);
	check_own(&rb, n - 1, 1, g.ts, ob);
	TU_ERR(ring_reader_get(r, ob, &pg), -EAGAIN);
	copy_expect(r, ob, &rb, 2);		/* page q + 1's first two */
	check_own(&rb, g.seq, 1, g.ts, ob);

	/* a flush, then the page completes before the get: the get takes
	 * the page (trimmed); then a copy of the next page's first */
	TU_EQ(ring_reader_flush(r, ob), 0);
	q = o.q;
	while (o.q == q)
		gen_put(&g, 100, 3);
	TU_OK(ring_reader_get(r, ob, &pg));
	ck_assert_uint_eq(pg.seq, q);
	decode_own(&pg, &rb);
	ring_reader_put(r, ob);
	copy_expect(r, ob, &rb, 1);	/* page q + 1's first */
	check_own(&rb, g.seq, 1, g.ts, ob);

	/* at random */
	while (g.seq < 20000) {
		uint32_t len, k;

		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		k = (uint32_t)(rnd >> 33);
		len = 16 + 4 * (k % 25);
		gen_put(&g, len, k % 97 == 0 ? (1ull << 27) + k : k % 3000);
		if (k % 16 == 1)
			drain_own(r, ob, true, &rb);
		else if (k % 16 == 2 || g.seq % 32 == 0)
			drain_own(r, ob, false, &rb);
	}
	ring_own_release(r, &o);
	drain_own(r, ob, true, &rb);
	check_own(&rb, g.seq, 1, g.ts, ob);
	ck_assert_uint_eq(rb.missed, 0);
	free(g.ts);
	rb_free(&rb);
	ring_close(r);
}
END_TEST

/* What was read is one run of events from @first on, each at @ts[seq]. */
static void check_from(const struct readback *rb, uint64_t first,
		       const uint64_t *ts)
{
	for (size_t i = 0; i < rb->n; i++) {
		ck_assert_uint_eq(rb->recs[i].seq, first + i);
		ck_assert_uint_eq(rb->ts[i], ts[first + i]);
	}
}

/*
 * Overwrite mode, nobody reading for 20 pages' worth: the reader then
 * finds the newest events, one run without a gap up to the writer's
 * committed prefix (copied, the writer still in its page), and the
 * overwritten ones counted; the rest follows once the writer gives the
 * buffer back. _i 1: flight mode, the reader starting at a trigger.
 */
START_TEST(test_own_overwrite)
{
	struct ring *r = mkring_own(_i ? RING_MODE_FLIGHT : RING_MODE_OVERWRITE,
				    4, 1);
	const unsigned ob = ring_durable_buf(r) + 1;
	struct readback rb = { 0 };
	struct ring_stats st;
	struct ring_own o;
	struct own_gen g;
	uint64_t first;

	gen_start(&g, r, &o, 1, 1, 2100);
	while (g.seq < 2000)
		gen_put(&g, 40, g.seq % 300 == 0 ? 1ull << 27 : 20);
	if (_i)
		ring_trigger(r);
	drain_own(r, ob, true, &rb);
	ck_assert_uint_gt(rb.n, 0);
	first = rb.recs[0].seq;
	ck_assert_uint_gt(first, 0);
	check_from(&rb, first, g.ts);
	ck_assert_uint_eq(first + rb.n, g.seq);	/* up to the last commit */
	TU_OK(ring_get_stats(r, ob, &st));
	ck_assert_uint_eq(st.lost_overwritten, first);
	ck_assert_uint_eq(rb.missed, first);
	ck_assert_uint_ge(st.pages_overwritten, 15);
	for (int i = 0; i < 10; i++)
		gen_put(&g, 40, 20);
	ring_own_release(r, &o);
	drain_own(r, ob, true, &rb);
	ck_assert_uint_eq(first + rb.n, g.seq);
	check_from(&rb, first, g.ts);
	free(g.ts);
	rb_free(&rb);
	ring_close(r);
}
END_TEST

/* The kill test's writer: its events' times, known to both processes. */
static uint64_t own_kill_ts(uint64_t seq)
{
	return 1000000000ull + seq * 977 + (seq >= 7 ? 1ull << 31 : 0) +
	       (seq >= 90 ? 1ull << 27 : 0);
}

#define OWN_OLD		700	/* events of the first laps */

/*
 * The child of test_own_killed: fills more than a lap of both own
 * buffers with events of writer 9 (read and thrown away here, so every
 * physical page holds stale records), gives the buffers back and takes
 * them again, commits @k events of writer 1 to the first and @k / 3 to
 * the second, writes one more event to the first (header and payload)
 * without its commit, and stops (the test kills it).
 */
static void child_own_writer(const char *path, uint64_t k)
{
	struct ring_params p = { .page_size = 4096, .nr_pages = 4,
				 .nr_cpus = 1, .nr_own = 2,
				 .mode = RING_MODE_PRODUCER,
				 .clock = RING_CLOCK_MONO };
	struct rec e = { .writer = 1, .len = 56 };
	struct ring_page_ref pg;
	struct ring_own o[2];
	struct ring *r;

	if (ring_create(path, &p, &r))
		_exit(2);
	for (int b = 0; b < 2; b++)
		if (ring_own_claim(r, 100 + (uint64_t)b, &o[b]))
			_exit(3);
	for (uint64_t i = 0; i < OWN_OLD; i++) {
		for (int b = 0; b < 2; b++)
			if (own_put(r, &o[b], 9, i, 16 + 4 * (uint32_t)(i % 20),
				    i * 10))
				_exit(4);
		for (unsigned b = 0; i % 10 == 0 && b < ring_nr_bufs(r); b++)
			while (ring_reader_get(r, b, &pg) == 0)
				ring_reader_put(r, b);
	}
	for (int b = 0; b < 2; b++)
		ring_own_release(r, &o[b]);
	for (unsigned b = 0; b < ring_nr_bufs(r); b++)
		while (ring_reader_get(r, b, &pg) == 0)
			ring_reader_put(r, b);
	for (int b = 0; b < 2; b++)
		if (ring_own_claim(r, 200 + (uint64_t)b, &o[b]))
			_exit(5);
	for (uint64_t i = 0; i < k; i++)
		if (own_put(r, &o[0], 1, i, 16 + 4 * (uint32_t)(i % 7),
			    own_kill_ts(i)) ||
		    (i < k / 3 && own_put(r, &o[1], 1, i, 48, own_kill_ts(i))))
			_exit(6);
	/* the next event: header and payload stored, the commit not */
	if (!ring_own_fast(&o[0], 60, own_kill_ts(k)) &&
	    ring_own_enter(r, &o[0], 60, own_kill_ts(k)))
		_exit(7);
	e.seq = k;
	fill(o[0].next + 4, &e);
	memcpy(o[0].next, &(uint32_t){ 14 }, 4);
	raise(SIGSTOP);			/* the test kills it here */
	_exit(8);
}

/*
 * Own buffers after their writer was killed (_i: 0 and 1 the writer in
 * the middle of a page, 2 in a page it entered for the uncommitted event,
 * 3 with the time extend in front of that event committed; _i 1 and 2
 * also copy the live writer's committed prefixes before the kill):
 * recovery ends each page at its last committed event, and the reader
 * finds exactly the committed events, none of the stale records of
 * older laps or the uncommitted one.
 */
START_TEST(test_own_killed)
{
	static const uint64_t ks[] = { 130, 101, 126, 90 };
	const uint64_t k = ks[_i];
	struct readback rb[2] = { { 0 }, { 0 } };
	uint64_t ts[200];
	struct ring *r;
	char path[64];
	unsigned ob;
	pid_t pid;
	int ws;

	for (uint64_t i = 0; i < 200; i++)
		ts[i] = own_kill_ts(i);
	snprintf(path, sizeof(path), "/dev/shm/tc-test-ownkill.%d", getpid());
	unlink(path);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		child_own_writer(path, k);
	ck_assert_int_eq(waitpid(pid, &ws, WUNTRACED), pid);
	ck_assert_msg(WIFSTOPPED(ws), "writer child status %d", ws);
	TU_OK(ring_open(path, &r));
	unlink(path);
	ob = ring_durable_buf(r) + 1;
	ck_assert_uint_eq(ring_nr_bufs(r), ob + 2);
	ck_assert(ring_owner_alive(r));
	TU_ERR(ring_reader_recover(r, ob), -EBUSY);
	if (_i) {	/* complete pages, and copies of the live prefix */
		for (unsigned b = 0; b < 2; b++)
			drain_own(r, ob + b, true, &rb[b]);
		ck_assert_uint_gt(rb[0].n, 0);
		check_own(&rb[0], rb[0].n, 1, ts, ob);
	}
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
	ck_assert(!ring_owner_alive(r));
	for (unsigned b = 0; b < ring_nr_bufs(r); b++) {
		int ret = ring_reader_recover(r, b);

		ck_assert_msg(ret >= 0, "recover %u: %s", b, tu_strerror(ret));
	}
	for (unsigned b = 0; b < 2; b++)
		drain_own(r, ob + b, true, &rb[b]);
	check_own(&rb[0], k, 1, ts, ob);
	check_own(&rb[1], k / 3, 1, ts, ob + 1);
	drain(r, true, &rb[0]);		/* the others: nothing */
	ck_assert_uint_eq(rb[0].n, k);
	rb_free(&rb[0]);
	rb_free(&rb[1]);
	ring_close(r);
}
END_TEST

/* Claiming own buffers: as many as there are, then -ENOSPC; one given
 * back can be taken again (its writer goes on in the next page); a ring
 * without any says -ENOENT. The durable buffer stays right after the
 * CPUs', and only the last nr_own are own buffers. */
START_TEST(test_own_claim)
{
	struct ring_params p = { .page_size = 4096, .nr_pages = 4,
				 .nr_cpus = 2, .mode = RING_MODE_PRODUCER,
				 .clock = RING_CLOCK_MONO, .nr_own = 2 };
	struct ring *r, *r2;
	struct ring_own a, b, c;
	struct readback rb = { 0 };
	uint64_t ts[4] = { 10, 20, 30, 40 };

	TU_OK(ring_create(NULL, &p, &r));
	ck_assert_uint_eq(ring_nr_bufs(r), 5);
	ck_assert_uint_eq(ring_durable_buf(r), 2);
	for (unsigned i = 0; i < 6; i++)
		ck_assert_int_eq(ring_own_is(r, i), i == 3 || i == 4);
	TU_OK(ring_open_fd(ring_fd(r), &r2));	/* the reader's view agrees */
	ck_assert_uint_eq(ring_nr_bufs(r2), 5);
	ck_assert_uint_eq(ring_durable_buf(r2), 2);
	ck_assert(!ring_own_is(r2, 2) && ring_own_is(r2, 3) &&
		  ring_own_is(r2, 4) && !ring_own_is(r2, 5));
	TU_OK(ring_own_claim(r, 1, &a));
	TU_OK(ring_own_claim(r, 2, &b));
	ck_assert_uint_ne(a.buf, b.buf);
	ck_assert(ring_own_is(r, a.buf) && ring_own_is(r, b.buf));
	TU_ERR(ring_own_claim(r, 3, &c), -ENOSPC);
	TU_ERR(ring_own_claim(r2, 3, &c), -ENOSPC);	/* the file says so */
	TU_OK(own_put(r, &a, 1, 0, 16, ts[0]));
	TU_OK(own_put(r, &a, 1, 1, 16, ts[1]));
	TU_ERR(ring_own_enter(r2, &a, 20, 50), -EINVAL);	/* another view */
	ring_own_release(r, &a);
	ck_assert_ptr_null(a.b);
	TU_ERR(ring_own_enter(r, &a, 20, 50), -EINVAL);	/* given back */
	TU_OK(ring_own_claim(r, 3, &c));
	ck_assert_uint_eq(c.buf, 3);
	TU_OK(own_put(r, &c, 1, 2, 16, ts[2]));
	TU_OK(own_put(r, &c, 1, 3, 16, ts[3]));
	TU_ERR(ring_own_claim(r, 4, &a), -ENOSPC);
	ring_own_release(r, &c);
	ring_own_release(r, &b);
	drain_own(r2, 3, false, &rb);
	check_own(&rb, 4, 1, ts, 3);
	rb_free(&rb);
	ring_close(r2);
	ring_close(r);

	p.nr_own = 0;
	TU_OK(ring_create(NULL, &p, &r));
	TU_ERR(ring_own_claim(r, 1, &a), -ENOENT);
	ck_assert_uint_eq(ring_nr_bufs(r), 3);
	ck_assert_uint_eq(ring_durable_buf(r), 2);
	for (unsigned i = 0; i < 4; i++)
		ck_assert(!ring_own_is(r, i));
	ring_close(r);
	p.nr_own = RING_MAX_OWN + 1;
	TU_ERR(ring_create(NULL, &p, &r), -EINVAL);
}
END_TEST

/* Producer mode, nobody reading: the writer fills the ring, then every
 * event that needs a page is dropped with -ENOBUFS and counted; what was
 * written reads back whole, the loss marked; once the reader made room
 * the writer goes on. */
START_TEST(test_own_full)
{
	struct ring *r = mkring_own(RING_MODE_PRODUCER, 4, 1);
	const unsigned ob = ring_durable_buf(r) + 1;
	struct readback rb = { 0 };
	struct ring_stats st;
	struct ring_own o;
	uint64_t ts[2000], ok = 0, dropped = 0, seq = 0;

	TU_OK(ring_own_claim(r, 1, &o));
	for (uint64_t i = 0; i < 1000; i++) {
		int ret = own_put(r, &o, 1, seq, 32, 100 + i);

		ck_assert_msg(ret == 0 || ret == -ENOBUFS, "own_put: %s",
			      tu_strerror(ret));
		if (ret) {
			dropped++;
			ck_assert_ptr_null(o.next);
		} else {
			ts[seq++] = 100 + i;
			ok++;
		}
	}
	ck_assert_uint_gt(dropped, 0);
	ck_assert_uint_eq(ok, 4 * (4080 / 36));	/* four pages, then none */
	TU_OK(ring_get_stats(r, ob, &st));
	ck_assert_uint_eq(st.lost_full, dropped);
	ck_assert_uint_eq(st.lost_busy, 0);
	drain_own(r, ob, false, &rb);
	check_own(&rb, seq, 1, ts, ob);
	for (uint64_t i = 0; i < 10; i++) {	/* room again */
		ts[seq] = 5000 + i;
		TU_OK(own_put(r, &o, 1, seq, 32, ts[seq]));
		seq++;
	}
	ring_own_release(r, &o);
	drain_own(r, ob, false, &rb);
	check_own(&rb, seq, 1, ts, ob);
	ck_assert_uint_eq(rb.missed, dropped);
	rb_free(&rb);
	ring_close(r);
}
END_TEST

#define OWN_STRESS	10000000

struct own_wr {
	struct ring *r;
	int err;
	int done;
};

/* The stress test's time from event @seq - 1 to event @seq. */
static uint64_t own_gap(uint64_t seq)
{
	return seq % 49999 == 0 ? 1ull << 27 : 1 + seq % 7;
}

/* A writer thread at full speed; an event dropped for a full ring is
 * written again once the reader made room. */
static void *own_writer_main(void *p)
{
	struct own_wr *w = p;
	struct ring_own o;
	uint64_t now = 1;

	w->err = ring_own_claim(w->r, 1, &o);
	for (uint64_t i = 0; !w->err && i < OWN_STRESS;) {
		uint64_t t = now + own_gap(i);
		struct rec e = { .writer = 1, .len = 16 + 4 * (uint32_t)(i % 25),
				 .seq = i };
		uint32_t total = 4 + e.len;
		uint8_t *d = ring_own_fast(&o, total, t);
		int ret = 0;

		if (!d && (ret = ring_own_enter(w->r, &o, total, t)) == 0)
			d = o.next;
		if (ret == -ENOBUFS) {
			sched_yield();
			continue;
		}
		w->err = ret;
		if (ret)
			break;
		memcpy(d + 4, &e, sizeof(e));
		ring_own_commit(&o, total, e.len / 4, t);
		now = t;
		i++;
	}
	ring_own_release(w->r, &o);
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The stress test's reader: checks each event's number and time only,
 * and asserts nothing until the writer is done (it must keep up). */
struct own_rd {
	uint64_t next;		/* the seq expected */
	uint64_t ts;		/* the time of the one before */
	char why[160];		/* the first fault */
};

static size_t own_rd_drain(struct ring *r, unsigned b, struct own_rd *rd)
{
	const struct page_layout l = page_layout_host(ring_page_size(r));
	struct ring_page_ref pg;
	size_t n = 0;

	ring_reader_flush(r, b);
	for (; ring_reader_get(r, b, &pg) == 0; n++) {
		struct page_record rec;
		struct page_info pi;
		struct page_iter it;
		int ret = page_check(&l, pg.data, pg.len, &pi);

		if (ret && !rd->why[0])
			snprintf(rd->why, sizeof(rd->why), "page %llu: %s",
				 (unsigned long long)pg.seq,
				 page_check_why(&l, pg.data, pg.len));
		if (!ret)
			page_iter_init(&it, &l, &pi);
		while (!ret && !rd->why[0] && page_next_record(&it, &rec) > 0) {
			struct rec e = { 0 };

			if (!page_record_is_data(&rec))
				continue;
			memcpy(&e, rec.payload, rec.len < sizeof(e) ?
						rec.len : sizeof(e));
			rd->ts += own_gap(rd->next);
			if (e.seq != rd->next || e.len != rec.len ||
			    rec.ts != rd->ts)
				snprintf(rd->why, sizeof(rd->why),
					 "page %llu offset %u: seq %llu len %u "
					 "ts %llu, not seq %llu",
					 (unsigned long long)pg.seq, rec.off,
					 (unsigned long long)e.seq, rec.len,
					 (unsigned long long)rec.ts,
					 (unsigned long long)rd->next);
			rd->next++;
		}
		ring_reader_put(r, b);
	}
	return n;
}

/* A writer thread at full speed and a reader asking for copies all the
 * time: the pages and copies put together are every event once, in
 * order, at its time (no record past a copy's or page's end, none twice,
 * none left out, whenever the writer changes pages). The faults this
 * looks for are races of a few instructions: OWN_ROUNDS rounds (each under a
 * second here, 2.5 under ASan), up to the first fault. */
#define OWN_ROUNDS	6

START_TEST(test_own_threads)
{
	struct own_rd rd = { 0 };

	for (int round = 0; round < OWN_ROUNDS && !rd.why[0]; round++) {
		struct ring *r = mkring_own(RING_MODE_PRODUCER, 8, 1);
		const unsigned ob = ring_durable_buf(r) + 1;
		struct own_wr w = { .r = r };
		pthread_t t;

		rd = (struct own_rd){ .ts = 1 };
		TU_EQ(pthread_create(&t, NULL, own_writer_main, &w), 0);
		while (!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE))
			if (!own_rd_drain(r, ob, &rd))
				sched_yield();
		pthread_join(t, NULL);
		TU_OK(w.err);
		own_rd_drain(r, ob, &rd);
		ck_assert_msg(!rd.why[0], "round %d: %s", round, rd.why);
		ck_assert_uint_eq(rd.next, OWN_STRESS);
		ring_close(r);
	}
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
	tcase_add_loop_test(tc, test_write_stamped, 0, 3);
	tcase_add_loop_test(tc, test_write_clocks, 0, 2);
	tcase_add_test(tc, test_rseq_named_buffers);
	tcase_add_test(tc, test_rseq_commit_after_migration);
	tcase_add_loop_test(tc, test_signal_nesting, 0, 2);
	tcase_add_loop_test(tc, test_reader_in_other_process, 0, 2);
	tcase_add_loop_test(tc, test_writer_killed_mid_write, 0, 2);
	tu_add_tests(tc, TU_TESTS(test_formats, test_clock_conversion,
					test_open_rejects_bad_files, test_open_while_made,
					test_public_api));
	tu_add_tests(tc, TU_TESTS(test_own_exact, test_own_page_filled_exactly,
				  test_own_partial_copies,
				  test_own_claim, test_own_full,
				  test_own_threads));
	tcase_add_loop_test(tc, test_own_killed, 0, 4);
	tcase_add_loop_test(tc, test_own_overwrite, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(ring_suite())
