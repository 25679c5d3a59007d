/*
 * timing.h - the clocks and the per-chunk median that bench/ring.c and
 * bench/lttng.c share, so our ring and LTTng-UST are timed the same way:
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

/* ns per event of the median of @n chunks of @per_chunk events each
 * (sorts @chunk). */
static inline double median_per_event(double *chunk, unsigned n, double per_chunk)
{
	qsort(chunk, n, sizeof(chunk[0]), cmp_double);
	return chunk[n / 2] / per_chunk;
}

#endif
