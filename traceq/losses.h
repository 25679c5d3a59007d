/*
 * losses.h - where the traced kernels lost events (query op 9, "losses";
 * proto/PROTOCOL.md): a cursor over the loss positions of a selection
 * (window, hosts, CPUs, order of struct tq_select), read a page at a
 * time in time order, for printing them between the rows where they
 * happened (trace-cmd report's "CPU:N [N EVENTS DROPPED]") and for
 * exports (trace.dat's missed-events flag, Perfetto's markers).
 * Prefix losses_.
 */
#ifndef TRACEQ_LOSSES_H
#define TRACEQ_LOSSES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct client;
struct tq_select;
struct losses;

/*
 * One loss position: before the first event of a page the kernel wrote
 * after it had to drop @count events on @cpu (count -1: it did not store
 * how many). @ts is the page's timestamp on the wall clock, @trace_ts on
 * the host's trace clock: where `trace-cmd report` prints the line.
 * CPUs of programs' rings are their stream numbers (>= 32768).
 */
struct loss {
	const char *host;	/* valid until the next losses_pop() */
	const char *boot_id;	/* likewise; "" when unknown */
	uint32_t cpu;
	int64_t ts;
	int64_t trace_ts;
	int64_t count;
};

/*
 * losses_open - a cursor over the losses @sel selects (window, hosts,
 * CPUs, --reverse order), asked over @c at the first losses_peek(). @sel
 * and @c are the caller's and must outlive the cursor.
 * Return: 0 and *@out; -ENOMEM.
 */
int losses_open(struct client *c, const struct tq_select *sel, struct losses **out);

/*
 * losses_peek - the next loss (not taken), or NULL at the end, when the
 * collector keeps none (an older one: nothing said) or failed (said on
 * stderr once; losses_failed() then says so).
 */
const struct loss *losses_peek(struct losses *l);

/*
 * losses_from - ask again at the next losses_peek(), for the losses at or
 * after wall-clock @ts (and in the selection's window), leaving out those
 * returned already: for --follow, where the collector stores more, and
 * not in time order (a CPU's pages may come late).
 */
void losses_from(struct losses *l, int64_t ts);

/* losses_pop - go past the loss losses_peek() returned. */
void losses_pop(struct losses *l);

/* losses_failed - whether asking failed (not: the collector has no op). */
bool losses_failed(const struct losses *l);

/* losses_close - free @l; NULL is fine. */
void losses_close(struct losses *l);

/*
 * losses_print_text - @x as `trace-cmd report` prints a page's missed
 * events, "CPU:N [N EVENTS DROPPED]" or, count unknown,
 * "CPU:N [EVENTS DROPPED]" (trace-cmd 3.1, tracecmd/trace-read.c); with
 * @kernel as the kernel's trace file does, "CPU:N [LOST N EVENTS]" or
 * "CPU:N [LOST EVENTS]" (kernel/trace/trace.c, print_trace_line()).
 * "@host: " comes first when @host_col is not 0 (padded to it, as the
 * rows' host column). Return: what fprintf returns.
 */
int losses_print_text(FILE *f, const struct loss *x, int host_col, bool kernel);

/*
 * losses_print_json - @x as one JSON object on a line of its own, under a
 * key no row has: {"lost_events": {"host", "cpu", "ts", "trace_ts",
 * "count" (null: unknown), "boot_id"}}.
 */
void losses_print_json(FILE *f, const struct loss *x);

#endif
