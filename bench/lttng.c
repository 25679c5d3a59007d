/*
 * bench/lttng.c - the LTTng-UST side of bench/run ring: the same loop as
 * bench/ring.c (8, 32, 128-byte payloads; 1 and 2 threads), each event a
 * tracepoint with the payload as a byte array. bench/run starts
 * lttng-sessiond and a session with the tcbench:* events enabled first.
 * ns_per_event: writer thread CPU time, median over CHUNKS chunks;
 * mean_ns: whole-run wall time (as there); discarded: the events LTTng
 * dropped in the case (its channel's "Discarded events" in `lttng list`,
 * read after the consumer's 1 s monitor timer has updated it).
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

#define EVENTS	4000000u
#define CHUNKS	20u	/* <= BENCH_MAX_CHUNKS */

struct wr {
	unsigned len;
	double ns;		/* median chunk */
	double mean;
};

static void *writer(void *p)
{
	struct wr *w = p;
	char payload[128];
	struct bench_clock k;

	memset(payload, 0x5a, sizeof(payload));
	bench_start(&k);
	for (unsigned c = 0; c < CHUNKS; c++) {
		for (unsigned i = 0; i < EVENTS / CHUNKS; i++) {
			memcpy(payload, &i, 4);
			if (w->len == 8)
				lttng_ust_tracepoint(tcbench, ev8, payload);
			else if (w->len == 32)
				lttng_ust_tracepoint(tcbench, ev32, payload);
			else
				lttng_ust_tracepoint(tcbench, ev128, payload);
		}
		bench_chunk(&k, c);
	}
	w->mean = (now_ns() - k.t0) / EVENTS;
	w->ns = median_per_event(k.chunk, CHUNKS, EVENTS / CHUNKS);
	return NULL;
}

/* The session's discarded events so far, from `lttng list tcbench`; -1 if unknown. */
static long long discarded_so_far(void)
{
	FILE *f = popen("lttng list tcbench 2>/dev/null", "r");
	long long n = -1, v;
	char line[256];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " Discarded events: %lld", &v) == 1)
			n = n < 0 ? v : n + v;
	pclose(f);
	return n;
}

int main(void)
{
	long long before = discarded_so_far(), after;

	static const unsigned lens[] = { 8, 32, 128 };

	for (int th = 1; th <= 2; th++)
		for (int i = 0; i < 3; i++) {
			pthread_t t[2];
			struct wr w[2];
			double ns = 0, mean = 0;

			for (int k = 0; k < th; k++) {
				w[k] = (struct wr){ .len = lens[i] };
				pthread_create(&t[k], NULL, writer, &w[k]);
			}
			for (int k = 0; k < th; k++) {
				pthread_join(t[k], NULL);
				ns += w[k].ns / th;
				mean += w[k].mean / th;
			}
			sleep(2);	/* the monitor timer updates the count */
			after = discarded_so_far();
			/* (lttng list may print a bogus huge count) */
			if (before >= 0 && after >= before &&
			    after - before <= (long long)EVENTS * th)
				printf("lttng %uB %dt ns_per_event=%.1f mean_ns=%.1f "
				       "discarded=%.2f%%\n", lens[i], th, ns, mean,
				       100.0 * (double)(after - before) /
				       (EVENTS * (double)th));
			else
				printf("lttng %uB %dt ns_per_event=%.1f mean_ns=%.1f "
				       "discarded=unknown\n", lens[i], th, ns, mean);
			before = after;
		}
	return 0;
}
