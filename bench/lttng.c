/*
 * bench/lttng.c - the LTTng-UST side of bench/run ring: the same loop as
 * bench/ring.c (8, 32, 128-byte payloads; 1 and 2 threads), each event a
 * tracepoint with the payload as a byte array. bench/run starts
 * lttng-sessiond and a session with the tcbench:* events enabled first.
 * ns_per_event: writer thread CPU time, median over CHUNKS chunks;
 * mean_ns: whole-run wall time (as there).
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

#define EVENTS	4000000u
#define CHUNKS	20u

struct wr {
	unsigned len;
	double ns;		/* median chunk */
	double mean;
};

static void *writer(void *p)
{
	struct wr *w = p;
	char payload[128];
	double t0, t1, chunk[CHUNKS];

	memset(payload, 0x5a, sizeof(payload));
	t0 = now_ns();
	t1 = cpu_ns();
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
		chunk[c] = cpu_ns() - t1;
		t1 += chunk[c];
	}
	w->mean = (now_ns() - t0) / EVENTS;
	w->ns = median_per_event(chunk, CHUNKS, EVENTS / CHUNKS);
	return NULL;
}

int main(void)
{
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
			printf("lttng %uB %dt ns_per_event=%.1f mean_ns=%.1f\n",
			       lens[i], th, ns, mean);
		}
	return 0;
}
