/*
 * timing.h - the clocks, the chunk bookkeeping (struct bench_clock) and
 * the per-chunk median that bench/ring.c and bench/lttng.c share, so our ring and LTTng-UST are timed the same way:
 * each writer thread's CPU time per event, median over chunks, plus the
 * whole run's wall-clock mean.
 */
#ifndef BENCH_TIMING_H
#define BENCH_TIMING_H

#include <stdlib.h>
#include <time.h>

static inline double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The calling thread's CPU time: what the writes cost it, without the
 * time other work on the machine held its CPU. */
static inline double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define BENCH_MAX_CHUNKS	64

/*
 * The clocks of one timed run of chunks, kept outside the timed loop:
 * bench_start() before the first chunk, bench_chunk() after each.
 */
struct bench_clock {
	double t0;			/* wall clock at the start */
	double t1;			/* CPU time at the end of the last chunk */
	double chunk[BENCH_MAX_CHUNKS];	/* CPU time of each chunk */
};

static inline void bench_start(struct bench_clock *k)
{
	k->t0 = now_ns();
	k->t1 = cpu_ns();
}

/* bench_chunk - chunk @c (< BENCH_MAX_CHUNKS) ends now. */
static inline void bench_chunk(struct bench_clock *k, unsigned c)
{
	k->chunk[c] = cpu_ns() - k->t1;
	k->t1 += k->chunk[c];
}

/* ns per event of the median of @n chunks of @per_chunk events each
 * (sorts @chunk). */
static inline double median_per_event(double *chunk, unsigned n, double per_chunk)
{
	qsort(chunk, n, sizeof(chunk[0]), cmp_double);
	return chunk[n / 2] / per_chunk;
}

#endif
