/*
 * hooks.c - bench/run hooks: a -pg -mfentry program calling a small
 * non-inlined function N times (default 10M), timed around the loop.
 * Built twice: with -DWITH_TC linked with libtracecollect, where it
 * attaches to its own ring like traceagent would and takes its pages
 * from a thread while the loop runs (TC_FTRACE set by bench/run), like
 * the agent (which ships pages undecoded), counting pages and the
 * events the ring dropped; and plain, for uftrace to trace.
 *
 * Modes: "untraced" (the hooks present, off), "floor" (the same loop
 * plus what a traced call cannot do without: two rdtsc, no lfence, and
 * one 40-byte store per call, written sequentially through a 16 MiB
 * buffer as the ring would be) and traced (TC_FTRACE set). A traced run
 * times all three, chunk by chunk in turn (the hooks on for the traced
 * chunks only: the attach word), so that the three see the same load on
 * a shared machine; a plain run times the mode named in argv[2]
 * ("uftrace": the name is only printed).
 *
 * Timing: the loop runs in BENCH_CHUNKS chunks (default 20) per mode;
 * each is timed by the thread's CPU time (what the calls cost the
 * thread, not the time other work held its CPU), and the median chunk
 * is reported. The loop thread is pinned to CPU BENCH_HOOKS_CPU (default
 * 1; -1 leaves it) and our reader thread to CPU 0, like bench/run pins
 * the workloads and recorders of its other benchmarks; bench/run starts
 * uftrace on CPU 0, so its recorder sits where ours does.
 * Prints a line per mode: "hooks MODE ns_per_iter=X wall_ns=W calls=N"
 * and, on the traced line, "pages=P lost=L".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <x86intrin.h>
#ifdef WITH_TC
#include "common/ring.h"
#include "include/tracecollect.h"
#endif
#include "bench/timing.h"

#define PLAIN __attribute__((no_instrument_function))
#ifndef CALLEE_PAD
#define CALLEE_PAD 0
#endif
#define STR_(x) #x
#define STR(x) STR_(x)
#define CALLEE_PAD_STR STR(CALLEE_PAD)
#define FLOOR_BUF (16u << 20)
#define FLOOR_REC 40

volatile uint64_t sink __attribute__((aligned(64)));

/* Where the traced code lies moves every mode's time: callee 16 bytes
 * further measured up to 1.3 ns per call apart (the floor 0.8). bench/run
 * builds this file at four placements, CALLEE_PAD (0, 16, 32 or 48)
 * bytes into a cache line (with -fno-toplevel-reorder: callee, then the
 * loops, in this order), and reports the mean. */
#if CALLEE_PAD
__asm__(".text\n.p2align 6\n.skip " CALLEE_PAD_STR ", 0xcc");
#else
__asm__(".text\n.p2align 6");
#endif
__attribute__((noinline, aligned(16))) void callee(uint64_t i) { sink += i; }

/* The loop every mode but the floor times. */
PLAIN __attribute__((noinline)) static void loop(uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++)
		callee(i);
}

/* One record's worth of stores, as the ring's funcgraph_exit carries:
 * common fields, func, depth and overrun, calltime, rettime. */
struct floor_rec {
	uint64_t common, func, depth, calltime, rettime;
};

_Static_assert(sizeof(struct floor_rec) == FLOOR_REC, "floor record");

static uint8_t *floor_buf;
static size_t floor_pos;

/* The same loop with two timestamps and a 40-byte store per call. */
PLAIN __attribute__((noinline)) static void floor_loop(uint64_t from,
						       uint64_t to)
{
	size_t pos = floor_pos;

	for (uint64_t i = from; i < to; i++) {
		uint64_t t0 = __rdtsc();
		struct floor_rec *r;

		callee(i);
		r = (struct floor_rec *)(floor_buf + pos);
		r->common = i;
		r->func = (uintptr_t)&callee;
		r->depth = 0;
		r->calltime = t0;
		r->rettime = __rdtsc();
		pos += FLOOR_REC;
		if (pos > FLOOR_BUF - FLOOR_REC)
			pos = 0;
	}
	floor_pos = pos;
}

PLAIN static void pin(pthread_t th, int cpu)
{
	cpu_set_t s;

	if (cpu < 0)
		return;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	pthread_setaffinity_np(th, sizeof(s), &s);
}

PLAIN static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : dflt;
}

#ifdef WITH_TC
static struct ring *ring;
static volatile int stop;
/* its own cache line: the reader thread writes it at every page, and
 * the traced loop writes sink at every call */
static uint64_t pages __attribute__((aligned(64)));

PLAIN static void drain_once(void)
{
	struct ring_page_ref pg;

	for (unsigned b = 0; b < ring_nr_bufs(ring); b++) {
		if (stop)
			ring_reader_flush(ring, b);
		while (ring_reader_get(ring, b, &pg) == 0) {
			pages++;
			ring_reader_put(ring, b);
		}
	}
}

PLAIN static void *reader(void *arg)
{
	struct timespec d = { 0, 200000 };

	(void)arg;
	while (!stop) {
		drain_once();
		nanosleep(&d, NULL);
	}
	drain_once();
	drain_once();
	return NULL;
}

PLAIN static uint64_t lost(void)
{
	uint64_t n = 0;
	struct ring_stats st;

	for (unsigned b = 0; b < ring_nr_bufs(ring); b++)
		if (!ring_get_stats(ring, b, &st))
			n += st.lost_full + st.lost_busy + st.lost_overwritten;
	return n;
}
#endif

/* Median ns per call of each mode's chunks. */
struct timed {
	const char *name;
	double *chunk;
	double wall;
};

/* Run chunk @c of mode @m ("untraced", "floor", else traced) and time
 * it; a traced program turns its hooks on for its own chunks only. */
PLAIN static void run_chunk(struct timed *t, const char *m, unsigned c,
			    uint64_t per)
{
	bool on = strcmp(m, "untraced") && strcmp(m, "floor");
	double c0, w0;

#ifdef WITH_TC
	if (ring)
		ring_set_attached(ring, on);
#else
	(void)on;
#endif
	w0 = now_ns();
	c0 = cpu_ns();
	if (!strcmp(m, "floor"))
		floor_loop(c * per, (c + 1) * per);
	else
		loop(c * per, (c + 1) * per);
	t->chunk[c] = cpu_ns() - c0;
	t->wall += now_ns() - w0;
}

PLAIN int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
	unsigned chunks = (unsigned)env_int("BENCH_CHUNKS", 20);
	int cpu = env_int("BENCH_HOOKS_CPU", 1);
	struct timed t[3] = { { argc > 2 ? argv[2] : "untraced", 0, 0 } };
	unsigned nt = 1;
	uint64_t per;
#ifdef WITH_TC
	pthread_t th;
	const char *path = getenv("TC_FTRACE_RING");

	if (path && getenv("TC_FTRACE")) {
		if (ring_open(path, &ring))
			return 1;
		pthread_create(&th, NULL, reader, NULL);
		pin(th, cpu > 0 ? 0 : -1);
		/* the untraced loop and the floor, interleaved chunk by
		 * chunk with the traced one: all three under the same load */
		t[0].name = "untraced";
		t[1].name = "floor";
		t[2].name = getenv("TC_FTRACE");
		nt = 3;
	}
#endif
	if (!chunks || n < chunks)
		chunks = 1;
	per = n / chunks;
	for (unsigned m = 0; m < nt; m++) {
		t[m].chunk = calloc(chunks, sizeof(double));
		if (!t[m].chunk)
			return 1;
		if (!strcmp(t[m].name, "floor"))
			floor_buf = mmap(NULL, FLOOR_BUF, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS |
					 MAP_POPULATE, -1, 0);
		if (floor_buf == MAP_FAILED)
			return 1;
	}
	pin(pthread_self(), cpu);
	callee(0);
	for (unsigned c = 0; c < chunks; c++)
		for (unsigned m = 0; m < nt; m++)
			run_chunk(&t[(m + c) % nt], t[(m + c) % nt].name, c,
				  per);
	for (unsigned m = 0; m < nt; m++) {
		printf("hooks %s ns_per_iter=%.2f wall_ns=%.2f calls=%llu",
		       t[m].name, median_per_event(t[m].chunk, chunks,
						   (double)per),
		       t[m].wall / (double)(per * chunks),
		       (unsigned long long)(per * chunks));
#ifdef WITH_TC
		if (ring && m == nt - 1) {
			stop = 1;
			pthread_join(th, NULL);
			printf(" pages=%llu lost=%llu",
			       (unsigned long long)pages,
			       (unsigned long long)lost());
		}
#endif
		printf("\n");
	}
#ifdef WITH_TC
	if (ring)
		tc_shutdown();
#endif
	return 0;
}
