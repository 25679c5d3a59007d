/*
 * lathist.h - a latency histogram that its threads add to and any thread
 * reads, without a lock: fixed buckets (lathist_bounds_us[], Prometheus's
 * `le` bounds), each a relaxed atomic counter, and the sum of the
 * latencies. A reader sees each counter whole but not all of them at one
 * instant; the count is the sum of the buckets it read, so its
 * cumulative buckets always agree with it (tracecollectd's /metrics).
 */
#ifndef COMMON_LATHIST_H
#define COMMON_LATHIST_H

#include <stdatomic.h>
#include <stdint.h>

#define LATHIST_BUCKETS	16	/* bounded buckets; one more above the last bound */

/* The buckets' upper bounds in microseconds, from 500 us to 60 s. */
extern const uint64_t lathist_bounds_us[LATHIST_BUCKETS];

struct lathist {
	atomic_uint_fast64_t n[LATHIST_BUCKETS + 1];
	atomic_uint_fast64_t sum_us;
};

/* A reading: n[i] latencies in bucket i (not cumulative); sum_us their sum. */
struct lathist_snap {
	uint64_t n[LATHIST_BUCKETS + 1];
	uint64_t sum_us;
};

/* lathist_now_us - CLOCK_MONOTONIC in microseconds, to time with. */
uint64_t lathist_now_us(void);

/* lathist_add - one latency of @us microseconds into @h (NULL: nothing). Any thread. */
void lathist_add(struct lathist *h, uint64_t us);

/* lathist_read - @h as it is now into @out (all zero for a NULL @h). Any thread. */
void lathist_read(const struct lathist *h, struct lathist_snap *out);

#endif
