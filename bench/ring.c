/*
 * bench/ring.c - ns per event of the user-space ring buffer (common/ring*)
 * for 8, 32 and 128-byte payloads with 1 and 2 writer threads, while a
 * reader thread drains the buffers as traceagent would; then the reader's
 * drain rate on full buffers (swap out each page and copy it once, as
 * shipping would). Not a test: prints numbers, asserts nothing.
 *
 * Output, one line per case:
 *   ring <payload>B <threads>t ns_per_event=N mean_ns=N dropped=N%
 * (with --paced NS only the 32-byte, 1-thread case, one event every NS of
 * wall time: "ring 32B 1t paced_ns=NS dropped=N%", to compare loss at
 * the rate another tracer managed)
 * a line "ring drain pages_per_s=N MB_per_s=N events_per_s=N", and the
 * floor any per-CPU ring is up against on this machine and load: "plain
 * 32B 1t ns_per_event=N", the same 36-byte record (a 4-byte header with
 * the rdtsc delta, then the payload) written by the same thread to a
 * private 8 MiB array, nothing shared, nothing checked. The floor runs
 * inside the 32-byte 1-thread case, a floor chunk after each ring chunk
 * (same thread, same reader draining alongside, same machine load), so
 * the two medians are comparable even on a busy machine.
 * ns_per_event is the writer thread's CPU time per event, the median
 * over CHUNKS chunks of the run: what the write path costs, without the
 * time the machine's other work held the CPU (on a shared 2-vCPU guest
 * wall time swings 2x between runs); mean_ns is the whole run's wall
 * time / events. bench/lttng.c measures the same way.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "common/ring.h"
#include "timing.h"

#define EVENTS	4000000u
#define CHUNKS	20u	/* <= BENCH_MAX_CHUNKS */

struct wr {
	struct ring *r;
	uint32_t len;
	double ns;		/* median chunk */
	double mean;
	uint64_t dropped;
	double pace_ns;		/* > 0: one event every pace_ns of wall time */
	bool floor;		/* a floor chunk after each ring chunk */
	double floor_ns;	/* its median chunk */
};

static uint8_t plain_buf[8 << 20];

/* The floor: the ring's record, its header with the same clock read,
 * written sequentially through a private array. @pos, @last: where the
 * previous chunk stopped. */
static void floor_chunk(uint32_t len, size_t *pos, uint64_t *last)
{
	uint8_t payload[128];

	memset(payload, 0x5a, sizeof(payload));
	for (uint32_t i = 0; i < EVENTS / CHUNKS; i++) {
		uint64_t now = __rdtsc();
		uint32_t h = len / 4 | (uint32_t)(now - *last) << 5;

		memcpy(payload, &i, 4);
		if (*pos + 4 + len > sizeof(plain_buf))
			*pos = 0;
		memcpy(plain_buf + *pos, &h, 4);
		memcpy(plain_buf + *pos + 4, payload, len);
		*pos += 4 + len;
		*last = now;
		__asm__ __volatile__("" : : "r"(plain_buf) : "memory");
	}
}

static void *writer(void *p)
{
	struct wr *w = p;
	uint8_t payload[128];
	struct bench_clock k;
	double floor[CHUNKS], t, wall;
	size_t pos = 0;
	uint64_t last = 0;

	memset(payload, 0x5a, sizeof(payload));
	if (w->floor)
		memset(plain_buf, 0, sizeof(plain_buf));
	bench_start(&k);
	for (uint32_t c = 0; c < CHUNKS; c++) {
		for (uint32_t i = 0; i < EVENTS / CHUNKS; i++) {
			if (w->pace_ns > 0) {
				double due = k.t0 + w->pace_ns *
					     ((double)c * (EVENTS / CHUNKS) + i);

				while (now_ns() < due)
					;
			}
			memcpy(payload, &i, 4);
			if (ring_write(w->r, -1, payload, w->len))
				w->dropped++;
		}
		bench_chunk(&k, c);
		if (w->floor) {		/* kept off the ring's clocks */
			wall = now_ns();
			t = cpu_ns();
			floor_chunk(w->len, &pos, &last);
			k.t1 = cpu_ns();
			floor[c] = k.t1 - t;
			k.t0 += now_ns() - wall;
		}
	}
	w->mean = (now_ns() - k.t0) / EVENTS;
	w->ns = median_per_event(k.chunk, CHUNKS, EVENTS / CHUNKS);
	if (w->floor)
		w->floor_ns = median_per_event(floor, CHUNKS, EVENTS / CHUNKS);
	return NULL;
}

static volatile int stop;

static uint8_t staging[4096];

/* Take every complete page and copy it out, as shipping would. */
static uint64_t drain_all(struct ring *r)
{
	struct ring_page_ref pg;
	uint64_t n = 0;

	for (unsigned b = 0; b < ring_nr_bufs(r); b++)
		while (ring_reader_get(r, b, &pg) == 0) {
			memcpy(staging, pg.data, sizeof(staging));
			__asm__ __volatile__("" : : "r"(staging) : "memory");
			ring_reader_put(r, b);
			n++;
		}
	return n;
}

/* Like traceagent: take what is complete, then sleep a millisecond when
 * there was nothing (a reader spinning on the page being written would
 * steal its cache line from the writers on every poll). */
static void *reader(void *p)
{
	while (!stop)
		if (!drain_all(p))
			usleep(1000);
	return NULL;
}

static struct ring *mk(uint32_t pages)
{
	struct ring_params p = { .page_size = 4096, .nr_pages = pages,
				 .mode = RING_MODE_PRODUCER,
				 .clock = RING_CLOCK_TSC };
	struct ring *r;
	int ret = ring_create(NULL, &p, &r);

	if (ret) {
		fprintf(stderr, "ring_create: %d\n", ret);
		exit(1);
	}
	return r;
}

static void one_case(uint32_t len, int nthreads, double pace_ns)
{
	struct ring *r = mk(2048);	/* 8 MiB per CPU, as bench/run's LTTng */
	pthread_t t[2], rt;
	struct wr w[2];
	double ns = 0, mean = 0;
	uint64_t dropped = 0;

	stop = 0;
	pthread_create(&rt, NULL, reader, r);
	for (int i = 0; i < nthreads; i++) {
		w[i] = (struct wr){ .r = r, .len = len, .pace_ns = pace_ns,
				    .floor = len == 32 && nthreads == 1 &&
					     !(pace_ns > 0) };
		pthread_create(&t[i], NULL, writer, &w[i]);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		ns += w[i].ns / nthreads;
		mean += w[i].mean / nthreads;
		dropped += w[i].dropped;
	}
	stop = 1;
	pthread_join(rt, NULL);
	if (pace_ns > 0)
		printf("ring %uB %dt paced_ns=%.1f dropped=%.2f%%\n", len, nthreads,
		       pace_ns, 100.0 * dropped / (EVENTS * (double)nthreads));
	else
		printf("ring %uB %dt ns_per_event=%.1f mean_ns=%.1f dropped=%.2f%%\n",
		       len, nthreads, ns, mean,
		       100.0 * dropped / (EVENTS * (double)nthreads));
	if (w[0].floor)
		printf("plain %uB 1t ns_per_event=%.1f\n", len, w[0].floor_ns);
	ring_close(r);
}

static void drain_rate(void)
{
	struct ring *r = mk(4096);
	uint8_t payload[32] = { 0 };
	uint64_t pages = 0, events = 0;
	cpu_set_t all;
	double t0, dt;

	sched_getaffinity(0, sizeof(all), &all);
	/* fill each CPU's buffer from that CPU: a per-CPU buffer is written
	 * by its own CPU (a write naming another CPU's moves there first) */
	for (unsigned b = 0; b + 1 < ring_nr_bufs(r); b++) {
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(b, &one);
		sched_setaffinity(0, sizeof(one), &one);
		while (ring_write(r, (int)b, payload, sizeof(payload)) == 0)
			events++;
	}
	sched_setaffinity(0, sizeof(all), &all);
	t0 = now_ns();
	for (unsigned b = 0; b < ring_nr_bufs(r); b++)
		ring_reader_flush(r, b);
	pages = drain_all(r);
	dt = (now_ns() - t0) / 1e9;
	printf("ring drain pages_per_s=%.0f MB_per_s=%.0f events_per_s=%.0f\n",
	       pages / dt, pages * 4096.0 / dt / 1e6, events / dt);
	ring_close(r);
}

int main(int argc, char **argv)
{
	static const uint32_t lens[] = { 8, 32, 128 };

	if (argc == 3 && !strcmp(argv[1], "--paced")) {
		double pace = strtod(argv[2], NULL);

		if (!(pace > 0)) {
			fprintf(stderr, "bench-ring: --paced wants ns per event > 0\n");
			return 2;
		}
		one_case(32, 1, pace);
		return 0;
	}
	for (int th = 1; th <= 2; th++)
		for (unsigned i = 0; i < 3; i++)
			one_case(lens[i], th, 0);
	drain_rate();
	return 0;
}
