/*
 * graph.c - the function_graph view of traceq (see graph.h): rows are
 * sorted by time, then walked once with a per-thread "pending entry": an
 * entry is held back until the thread's next row shows whether the call
 * was a leaf (its own exit: one line) or not (`{` now, `}` later), and a
 * per-thread stack of entry times gives each `}` its duration.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "server/graph.h"

#define GRAPH_MAX_DEPTH	256	/* indentation and entry stack */
#define GRAPH_MAX_THREADS 4096

struct thread {
	int32_t pid;
	bool has_pending;
	struct graph_row pending;
	int64_t entry_ts[GRAPH_MAX_DEPTH];	/* by depth; -1: unknown */
};

struct graph {
	FILE *out;
	struct graph_row *rows;
	size_t n, cap;
	struct thread *threads;
	size_t nthreads;
};

int graph_new(FILE *out, struct graph **out_g)
{
	struct graph *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->out = out;
	*out_g = g;
	return 0;
}

void graph_free(struct graph *g)
{
	if (!g)
		return;
	free(g->rows);
	free(g->threads);
	free(g);
}

int graph_add(struct graph *g, const struct graph_row *row)
{
	struct graph_row *n;

	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 1024;

		n = realloc(g->rows, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		g->rows = n;
		g->cap = cap;
	}
	g->rows[g->n++] = *row;
	return 0;
}

static int row_cmp(const void *pa, const void *pb)
{
	const struct graph_row *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return (int)a->exit - (int)b->exit;
}

static struct thread *thread_get(struct graph *g, int32_t pid)
{
	struct thread *t;
	size_t i;

	for (i = 0; i < g->nthreads; i++)
		if (g->threads[i].pid == pid)
			return &g->threads[i];
	if (g->nthreads == GRAPH_MAX_THREADS)
		return NULL;
	t = realloc(g->threads, (g->nthreads + 1) * sizeof(*t));
	if (!t)
		return NULL;
	g->threads = t;
	t = &t[g->nthreads++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	memset(t->entry_ts, 0xff, sizeof(t->entry_ts));
	return t;
}

static int depth_of(const struct graph_row *r)
{
	if (r->depth < 0)
		return 0;
	return r->depth >= GRAPH_MAX_DEPTH ? GRAPH_MAX_DEPTH - 1 : r->depth;
}

static void print_func(FILE *f, const struct graph_row *r)
{
	if (r->name[0])
		fputs(r->name, f);
	else
		fprintf(f, "0x%" PRIx64, r->func);
}

/* "CPU) task-pid |  duration  |  " with @ns < 0 printing no duration. */
static void print_lead(struct graph *g, const struct graph_row *r, int64_t ns)
{
	char task[48];

	snprintf(task, sizeof(task), "%s-%" PRId32, r->comm[0] ? r->comm : "<...>",
		 r->pid);
	fprintf(g->out, "%3" PRIu32 ") %16s | ", r->cpu, task);
	if (ns < 0)
		fprintf(g->out, "%12s | ", "");
	else
		fprintf(g->out, "%6" PRId64 ".%03" PRId64 " us | ", ns / 1000,
			ns % 1000);
	fprintf(g->out, "%*s", 2 * depth_of(r), "");
}

/* A held-back entry that turned out not to be a leaf: `func() {`. */
static void flush_pending(struct graph *g, struct thread *t)
{
	if (!t->has_pending)
		return;
	print_lead(g, &t->pending, -1);
	print_func(g->out, &t->pending);
	fputs("() {\n", g->out);
	t->has_pending = false;
}

static void on_call(struct graph *g, struct thread *t,
		     const struct graph_row *r)
{
	flush_pending(g, t);
	t->pending = *r;
	t->has_pending = true;
	t->entry_ts[depth_of(r)] = r->ts;
}

static void on_ret(struct graph *g, struct thread *t,
		    const struct graph_row *r)
{
	int64_t start = t->entry_ts[depth_of(r)], ns;

	ns = start >= 0 && start <= r->ts ? r->ts - start :
	     (int64_t)(r->rettime - r->calltime);
	t->entry_ts[depth_of(r)] = -1;
	if (t->has_pending && t->pending.func == r->func &&
	    t->pending.depth == r->depth) {
		t->has_pending = false;
		print_lead(g, r, ns);
		print_func(g->out, r);
		fputs("();\n", g->out);
		return;
	}
	flush_pending(g, t);
	print_lead(g, r, ns);
	fputs("} /* ", g->out);
	print_func(g->out, r);
	fputs(" */\n", g->out);
}

void graph_print(struct graph *g)
{
	struct thread *t;
	size_t i;

	if (g->n)
		qsort(g->rows, g->n, sizeof(*g->rows), row_cmp);
	for (i = 0; i < g->n; i++) {
		t = thread_get(g, g->rows[i].pid);
		if (!t)
			continue;
		if (g->rows[i].exit)
			on_ret(g, t, &g->rows[i]);
		else
			on_call(g, t, &g->rows[i]);
	}
	for (i = 0; i < g->nthreads; i++)
		flush_pending(g, &g->threads[i]);
}
