/*
 * fgraph.h - the function tracers for user programs: the runtime behind
 * the arch/ hooks (mcount, __fentry__, _mcount) and the
 * -finstrument-functions hooks, part of libtracecollect.
 *
 * Two tracers, named like the kernel's:
 *   function        one `ftrace:function` event (ip, parent_ip) per call;
 *   function_graph  one `ftrace:funcgraph_exit` event per call, at
 *                   return, carrying calltime and rettime; returns are
 *                   seen by replacing the return address with a
 *                   trampoline (the kernel's prepare_ftrace_return and
 *                   return_to_handler), the original kept on a
 *                   per-thread shadow stack. Exits arrive in post-order
 *                   with their depth, so the call tree, entries
 *                   included, is rebuilt from them (traceq --graph
 *                   does); TC_FTRACE_ENTRIES=1 also writes
 *                   `ftrace:funcgraph_entry` at each entry, for who
 *                   needs to see a call begin while it runs (a call
 *                   that never returns, one still on the stack when the
 *                   program exits, leaves no event without it).
 * The events' formats are the kernel's events/ftrace/<name>/format, field
 * for field, so one decoder and one graph view serve both; calltime and
 * rettime are in the ring's clock (TSC ticks or ns, like the timestamps).
 *
 * Configuration comes from the environment, which traceagent sets when it
 * starts a program (`traceagent --exec`); with TC_FTRACE unset the
 * runtime stays idle and the hooks cost one load and one branch:
 *   TC_FTRACE=function|function_graph  enable, pick the tracer
 *   TC_FTRACE_RING=PATH        ring file (default /dev/shm/tracecollect.PID)
 *   TC_FTRACE_FILTER=G1,G2     trace only functions matching a glob
 *   TC_FTRACE_NOTRACE=G1,G2    never trace functions matching a glob
 *   TC_FTRACE_DEPTH=N          record calls at depth < N only (0 = top)
 *   TC_FTRACE_THRESH=USEC      graph: record only calls lasting at least
 *                              USEC microseconds (like the kernel's
 *                              tracing_thresh); never entry events, since
 *                              whether a call qualifies is known only
 *                              when it returns
 *   TC_FTRACE_ENTRIES=0|1      graph: also write funcgraph_entry events
 *                              (default 0: exits only, half the cost)
 *   TC_FTRACE_BUFFER_KB=N      ring size per CPU in KiB (rounded up to a
 *                              power of 2 pages, at least 2; default
 *                              1024). A reader
 *                              away for longer than the ring takes to
 *                              fill loses the newest events (counted):
 *                              the graph tracer writes ~44 bytes per call,
 *                              over 1 GB/s for a tight loop, so a program
 *                              that calls that fast needs a bigger ring
 *                              to cover the agent's 10 ms poll
 *   TC_FTRACE_PAGE_KB=N        the ring's page size in KiB: 4, 8, 16 or
 *                              32 (default 32: a page turn costs ~45 ns,
 *                              a share of every call; 4 is the kernel's
 *                              own size). The agent ships whole pages:
 *                              smaller ones reach the collector sooner
 *                              from a program that calls seldom
 *   TC_FTRACE_THREAD_BUFS=N    graph: buffers of the ring's that a thread
 *                              takes for itself (default: one per CPU;
 *                              0..256), each TC_FTRACE_BUFFER_KB: the
 *                              exits of a thread that has one are
 *                              written without rseq or locked
 *                              instructions (common/ring.h, own
 *                              buffers; on x86_64 by the trampoline
 *                              itself): ~20.7 ns a traced call against
 *                              ~30 through the per-CPU buffers on a
 *                              2.5 GHz Xeon guest (bench/run hooks;
 *                              not under TC_FTRACE_THRESH or on
 *                              CLOCK_MONOTONIC). Threads beyond N
 *                              write to the per-CPU buffers; a thread
 *                              gives its buffer back when it exits.
 *                              The agent ships each as one more stream,
 *                              so their events' CPU is the buffer's
 *                              number, after the CPUs' and the durable
 *                              buffer's
 *   TC_FTRACE_WAIT_MS=N        before main(), wait up to N ms for an agent
 *                              to attach, so the first calls are not lost
 * Globs are fnmatch(3) patterns on symbol names, which dladdr(3) gives:
 * the program's own functions need -rdynamic (or to live in a shared
 * object) to have names; unnamed functions fail every include glob and
 * pass every exclude glob. Each address is resolved once and the verdict
 * cached. Filtered-out functions are not hooked, their callees are (the
 * kernel's set_ftrace_notrace); depth counts hooked frames.
 *
 * What the graph tracer survives (tests/test_fgraph.c exercises each):
 * recursion; threads (the shadow stack is per thread, in TLS); signal
 * handlers (they nest on the interrupted thread's shadow stack; a hook
 * interrupted inside the runtime is skipped by a per-thread guard, and
 * counted); longjmp/siglongjmp (frames skipped are detected by their
 * frame keys, arch/arch.h, at the next entry or exit and get their exit
 * event then); fork (the child inherits a copy of the shadow stack); exit
 * with traced frames on the stack; tail calls (the callee inherits the
 * caller's hijacked return: the caller's exit is written at the callee's
 * entry). Not supported: C++ exceptions and pthread_cancel/pthread_exit
 * across hijacked frames (the unwinder meets the trampoline and stops).
 */
#ifndef LIB_FGRAPH_H
#define LIB_FGRAPH_H

#include <stdbool.h>
#include <stdint.h>

enum fgraph_tracer {
	FGRAPH_OFF = 0,
	FGRAPH_FUNCTION,
	FGRAPH_GRAPH,
};

struct fgraph_config {
	enum fgraph_tracer tracer;
	char **include;		/* NULL-terminated globs, or NULL */
	char **exclude;
	uint32_t max_depth;	/* 0: unlimited */
	uint64_t thresh_us;	/* 0: record every call */
	bool entries;		/* graph: funcgraph_entry events too */
	uint32_t pages_per_cpu;	/* ring pages per CPU, a power of 2 */
	uint32_t page_size;	/* bytes per ring page */
	int32_t own_bufs;	/* graph: thread buffers; -1: one per CPU */
	uint32_t wait_ms;
	const char *ring_path;	/* NULL: the default */
};

/*
 * fgraph_config_parse - fill *@out from environment-style lookups:
 * @get(name) returns the value of TC_FTRACE* variable @name or NULL
 * (getenv in the runtime; a table in tests).
 * Return: 0 and *@out (free with fgraph_config_free()); -EINVAL for an
 * unknown tracer name or a malformed number; -ENOMEM. *@out only on
 * success.
 */
int fgraph_config_parse(const char *(*get)(const char *name),
			struct fgraph_config *out);

void fgraph_config_free(struct fgraph_config *c);

/*
 * fgraph_start - register the ftrace events with libtracecollect (which
 * must be initialized: tc_init()) and turn the hooks on with @c (copied).
 * Context: once, before other threads run traced code.
 * Return: 0; -EALREADY; -ENODEV before tc_init(); errors of
 * tc_event_register.
 */
int fgraph_start(const struct fgraph_config *c);

/* fgraph_glob_list_match - whether @name matches a glob of @globs. */
int fgraph_glob_list_match(char *const *globs, const char *name);

struct fgraph_stats {
	uint64_t guarded;	/* hooks skipped: the thread was in the runtime */
	uint64_t overflow;	/* calls not hooked: shadow stack full */
	uint64_t unwound;	/* exits found by frame key (longjmp, exit) */
};

/* fgraph_thread_stats - the calling thread's counters. */
void fgraph_thread_stats(struct fgraph_stats *out);

#endif
