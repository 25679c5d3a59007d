/*
 * graph.h - traceq's function_graph view: funcgraph_entry and
 * funcgraph_exit rows, merged in time order, printed like the kernel's
 * function_graph tracer output, per thread:
 *
 *    CPU) TASK-PID       |   DURATION   |  FUNCTION CALLS
 *    0) fgraph_prog-42  |              |  run() {
 *    0) fgraph_prog-42  |   0.310 us   |    leaf();
 *    0) fgraph_prog-42  |   5.020 us   |  } /+ run +/
 *
 * A call whose entry is directly followed by its own exit on the same
 * thread is a leaf, one line `func();`; otherwise `func() {` ... `}`.
 * Nesting is the events' depth field (two spaces a level). Durations are
 * exit ts - entry ts (both ns). A thread whose rows are all exits (our
 * runtime writes one funcgraph_exit per call by default; threshold mode)
 * has its entries rebuilt from the exits' calltime (graph.c says how);
 * an exit without its entry in a thread that has entries (cut off by the
 * query) prints `}` with rettime - calltime. Prefix graph_.
 */
#ifndef TRACEQ_GRAPH_H
#define TRACEQ_GRAPH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct graph_row {
	int64_t ts;		/* wall-clock ns */
	uint32_t cpu;
	int32_t pid;
	char comm[24];
	bool exit;		/* funcgraph_exit, else funcgraph_entry */
	uint64_t func;
	int32_t depth;
	uint64_t calltime, rettime;	/* exit only */
	char name[128];		/* the function's name, "" if unknown */
	uint64_t ord;		/* set by the view: order at equal ts */
};

struct graph;

/*
 * graph_new - a view printing to @out. Return: 0 and *@out_g (free with
 * graph_free()); -ENOMEM.
 */
int graph_new(FILE *out, struct graph **out_g);

/*
 * The most rows a view holds (it nests calls only once it has them all):
 * GRAPH_MAX_ROWS, about 200 MiB; a variable so that tests can lower it.
 */
#define GRAPH_MAX_ROWS	(1u << 20)
extern size_t graph_max_rows;

/*
 * graph_add - take one row (copied). Rows may come in any order;
 * graph_print() sorts them by time (an entry before an exit at equal
 * times). Return: 0; -E2BIG (graph_max_rows held already); -ENOMEM.
 */
int graph_add(struct graph *g, const struct graph_row *row);

/* graph_print - print every row added, in the layout above. */
void graph_print(struct graph *g);

/*
 * One call as the walk nests it: its exit row (name, pid, cpu, comm,
 * depth), when it began (@start, wall-clock ns: its entry's ts, or the
 * exit's less rettime - calltime when its entry was not seen) and how
 * long it took (@ns), whether it was a leaf (its entry directly followed
 * by its exit), and @seq, the rank of its entry in the walk (of its exit
 * when the entry was not seen): in @seq order a thread's calls come as
 * they were entered, outer before inner.
 */
struct graph_call {
	const struct graph_row *exit;
	int64_t start, ns;
	size_t seq;
	bool leaf;
};

/*
 * What a walk tells: @open, a call that is not a leaf, at its entry,
 * when the walk knows it (NULL: not wanted); @call, each call at its
 * exit. The rows are the view's, valid during the call only.
 */
struct graph_ops {
	void (*open)(void *arg, const struct graph_row *entry);
	void (*call)(void *arg, const struct graph_call *c);
};

/*
 * graph_walk - nest every row added (entries of exits-only threads
 * rebuilt first, graph.c says how) and tell @ops (with @arg) what the
 * printer prints: traceq --graph and --serve's flame chart are the one
 * walk. Once per view: it adds the rebuilt rows. Return: 0; -ENOMEM (the
 * entries were not rebuilt; the rows were walked as they are).
 */
int graph_walk(struct graph *g, const struct graph_ops *ops, void *arg);

void graph_free(struct graph *g);

struct client;
struct traceq_opts;

/*
 * graph_collect - every funcgraph_entry and funcgraph_exit row of @o's
 * query ("funcgraph [where FILTER]", parsed in @o->q) and selection,
 * asked over @c, into @g (traceq/mode_graph.c). Return: a mode's status
 * (0; 1 the collector failed or out of memory; 2 not a funcgraph query),
 * said on stderr.
 */
int graph_collect(struct client *c, const struct traceq_opts *o, struct graph *g);

#endif
