/*
 * hooks.c - bench/run hooks: a -pg -mfentry program calling a small
 * non-inlined function N times (default 10M), timed around the loop.
 * Built twice: with -DWITH_TC linked with libtracecollect, where it
 * attaches to its own ring like traceagent would and takes its pages
 * from a thread while the loop runs (TC_FTRACE set by bench/run), like
 * the agent (which ships pages undecoded), counting pages and the
 * events the ring dropped; and plain, for uftrace to trace. Prints one
 * line: "hooks MODE ns_per_iter=X calls=N [pages=P lost=L]".
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef WITH_TC
#include "common/ring.h"
#include "include/tracecollect.h"
#endif

#define PLAIN __attribute__((no_instrument_function))

volatile uint64_t sink;

__attribute__((noinline)) void callee(uint64_t i) { sink += i; }

PLAIN static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#ifdef WITH_TC
static struct ring *ring;
static volatile int stop;
static uint64_t pages;

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

PLAIN int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
	uint64_t t0, t1;
#ifdef WITH_TC
	pthread_t th;
	const char *path = getenv("TC_FTRACE_RING");
	int traced = path && getenv("TC_FTRACE");

	if (traced) {
		if (ring_open(path, &ring))
			return 1;
		ring_set_attached(ring, true);
		pthread_create(&th, NULL, reader, NULL);
	}
#endif
	callee(0);
	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		callee(i);
	t1 = now_ns();
#ifdef WITH_TC
	if (traced) {
		stop = 1;
		pthread_join(th, NULL);
		printf("hooks %s ns_per_iter=%.2f calls=%llu pages=%llu "
		       "lost=%llu\n", getenv("TC_FTRACE"),
		       (double)(t1 - t0) / (double)n, (unsigned long long)n,
		       (unsigned long long)pages, (unsigned long long)lost());
		tc_shutdown();
		return 0;
	}
#endif
	printf("hooks %s ns_per_iter=%.2f calls=%llu\n",
	       argc > 2 ? argv[2] : "untraced", (double)(t1 - t0) / (double)n,
	       (unsigned long long)n);
	return 0;
}
