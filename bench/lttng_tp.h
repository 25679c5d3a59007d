/*
 * bench/lttng_tp.h - LTTng-UST tracepoint provider for the comparison in
 * bench/run ring: one event per payload size, the payload as a byte array.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER tcbench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./lttng_tp.h"

#if !defined(BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>

#define BENCH_EV(n) \
LTTNG_UST_TRACEPOINT_EVENT(tcbench, ev##n, \
	LTTNG_UST_TP_ARGS(const char *, p), \
	LTTNG_UST_TP_FIELDS(lttng_ust_field_array(char, d, p, n)))

BENCH_EV(8)
BENCH_EV(32)
BENCH_EV(128)

#endif

#include <lttng/tracepoint-event.h>
