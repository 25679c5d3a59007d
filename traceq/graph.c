/*
 * graph.c - the function_graph view of traceq (see graph.h): rows are
 * sorted by time, then walked once with a per-thread "pending entry": an
 * entry is held back until the thread's next row shows whether the call
 * was a leaf (its own exit: one line) or not (`{` now, `}` later), and a
 * per-thread stack of entry times gives each `}` its duration.
 *
 * A thread with exits only (the user-space runtime's default, and the
 * threshold mode) gets its entries rebuilt first: each exit carries
 * calltime and rettime in the ring's clock, and its row's ts is rettime
 * converted to ns, so the entry goes at ts - (rettime - calltime) *
 * scale, where scale (ns per clock unit) is fitted from the thread's
 * exits themselves (first and last rettime against their ts; 1 with a
 * single exit). Those ns are for printing only: the fit and the
 * rounding can put an entry a ns before the exit of the call that
 * preceded it, so such a thread's rows are ordered by the ring's own
 * clock (calltime, rettime), their ts made non-decreasing in that order,
 * and their rank kept in ord to break ties of ts. In that order the
 * rebuilt entries nest exactly as the calls did.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "traceq/graph.h"

#define GRAPH_MAX_DEPTH	256	/* indentation and entry stack */
#define GRAPH_MAX_THREADS 4096

struct thread {
	int32_t pid;
	bool has_pending;
	struct graph_row pending;
	int64_t entry_ts[GRAPH_MAX_DEPTH];	/* by depth; -1: unknown */
	size_t entry_ix[GRAPH_MAX_DEPTH];	/* by depth: its row's rank in the walk */
};

struct graph {
	FILE *out;
	const struct graph_ops *ops;	/* graph_walk()'s; the printer's for graph_print() */
	void *arg;
	size_t ix;		/* the walk's row */
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

size_t graph_max_rows = GRAPH_MAX_ROWS;

int graph_add(struct graph *g, const struct graph_row *row)
{
	struct graph_row *n;

	if (g->n >= graph_max_rows)
		return -E2BIG;
	n = util_grow(g->rows, &g->cap, g->n, sizeof(*n), 1024);
	if (!n)
		return -ENOMEM;
	g->rows = n;
	g->rows[g->n] = *row;
	g->rows[g->n++].ord = 0;
	return 0;
}

/* By time, then by ord (a rebuilt thread's order in its ring's clock);
 * at equal times entries first (outer ones first), then exits (inner
 * ones first). */
static int row_cmp(const void *pa, const void *pb)
{
	const struct graph_row *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->ord != b->ord)
		return a->ord < b->ord ? -1 : 1;
	if (a->exit != b->exit)
		return (int)a->exit - (int)b->exit;
	if (a->depth != b->depth)
		return (a->depth < b->depth) == !a->exit ? -1 : 1;
	return 0;
}

struct fit {
	int32_t pid;
	bool has_entry;
	uint64_t nexit;
	int64_t lo_ts, hi_ts;		/* ts of the least, greatest rettime */
	uint64_t lo_ret, hi_ret;
	double scale;
};

struct fits {
	struct fit *v;
	size_t n, cap;
};

/* The fit of thread @pid, added if new; NULL when out of memory. */
static struct fit *fit_of(struct fits *fs, int32_t pid)
{
	struct fit *v;

	for (size_t i = 0; i < fs->n; i++)
		if (fs->v[i].pid == pid)
			return &fs->v[i];
	if (fs->n == fs->cap) {
		size_t cap = fs->cap ? fs->cap * 2 : 16;

		v = realloc(fs->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		fs->v = v;
		fs->cap = cap;
	}
	fs->v[fs->n] = (struct fit){ .pid = pid, .scale = 1.0 };
	return &fs->v[fs->n++];
}

static void fit_add(struct fit *f, const struct graph_row *r)
{
	if (!r->exit) {
		f->has_entry = true;
		return;
	}
	if (!f->nexit++ || r->rettime < f->lo_ret) {
		f->lo_ret = r->rettime;
		f->lo_ts = r->ts;
	}
	if (f->nexit == 1 || r->rettime > f->hi_ret) {
		f->hi_ret = r->rettime;
		f->hi_ts = r->ts;
	}
}

/* ns per clock unit of a thread's exits: their ts against their rettime
 * (1 when they cannot tell: one exit, or no time between them). */
static void fit_scale(struct fit *f)
{
	if (f->hi_ret > f->lo_ret && f->hi_ts > f->lo_ts)
		f->scale = (double)(f->hi_ts - f->lo_ts) /
			   (double)(f->hi_ret - f->lo_ret);
}

/* Where a rebuilt thread's row goes among rows of the same ring-clock
 * time: exits of calls that took time first (they close what ran
 * before), then entries, then exits of calls of no time (an entry and
 * its own exit at one tick). */
static int raw_class(const struct graph_row *r)
{
	if (!r->exit)
		return 1;
	return r->rettime == r->calltime ? 2 : 0;
}

static const struct graph_row *raw_rows;

/* A rebuilt thread's rows (indexes into raw_rows): by thread, by ring
 * clock, by raw_class, then outer entries and inner exits first. A key
 * compared field by field, so the order is total whatever a peer sent. */
static int raw_cmp(const void *pa, const void *pb)
{
	const struct graph_row *a = &raw_rows[*(const size_t *)pa];
	const struct graph_row *b = &raw_rows[*(const size_t *)pb];
	uint64_t ta = a->exit ? a->rettime : a->calltime;
	uint64_t tb = b->exit ? b->rettime : b->calltime;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (ta != tb)
		return ta < tb ? -1 : 1;
	if (raw_class(a) != raw_class(b))
		return raw_class(a) - raw_class(b);
	if (a->depth != b->depth)
		return (a->depth < b->depth) == !a->exit ? -1 : 1;
	return 0;
}

static bool is_rebuilt(const struct fits *fs, const struct graph_row *r)
{
	for (size_t i = 0; i < fs->n; i++)
		if (fs->v[i].pid == r->pid)
			return !fs->v[i].has_entry && r->rettime >= r->calltime;
	return false;
}

/* Order the rows of threads whose entries were rebuilt by their ring's
 * clock: ts made non-decreasing in that order and ord their rank.
 * Return: 0; -ENOMEM. */
static int order_rebuilt(struct graph *g, const struct fits *fs)
{
	size_t *ix = malloc((g->n ? g->n : 1) * sizeof(*ix)), m = 0;
	int64_t floor_ts = 0;

	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < g->n; i++)
		if (is_rebuilt(fs, &g->rows[i]))
			ix[m++] = i;
	raw_rows = g->rows;
	qsort(ix, m, sizeof(*ix), raw_cmp);
	for (size_t k = 0; k < m; k++) {
		struct graph_row *r = &g->rows[ix[k]];

		if (k && r->pid == g->rows[ix[k - 1]].pid && r->ts < floor_ts)
			r->ts = floor_ts;
		floor_ts = r->ts;
		r->ord = k + 1;
	}
	free(ix);
	return 0;
}

/* Add an entry row for each exit of the threads that have exits only.
 * Return: 0; -ENOMEM. */
static int rebuild_entries(struct graph *g)
{
	struct fits fs = { 0 };
	struct fit *f;
	size_t n = g->n;
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++) {
		f = fit_of(&fs, g->rows[i].pid);
		if (f)
			fit_add(f, &g->rows[i]);
		else
			ret = -ENOMEM;
	}
	for (size_t i = 0; i < fs.n; i++)
		fit_scale(&fs.v[i]);
	for (size_t i = 0; i < n && !ret; i++) {
		struct graph_row e = g->rows[i];

		f = fit_of(&fs, e.pid);
		if (!e.exit || f->has_entry || e.rettime < e.calltime)
			continue;
		e.exit = false;
		e.ts -= (int64_t)((double)(e.rettime - e.calltime) * f->scale +
				  0.5);
		ret = graph_add(g, &e);
	}
	if (!ret)
		ret = order_rebuilt(g, &fs);
	free(fs.v);
	return ret;
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

/* ---- the walk: calls nested, told to ops ---- */

/* A held-back entry that turned out not to be a leaf: opened. */
static void flush_pending(struct graph *g, struct thread *t)
{
	if (!t->has_pending)
		return;
	if (g->ops->open)
		g->ops->open(g->arg, &t->pending);
	t->has_pending = false;
}

static void on_call(struct graph *g, struct thread *t,
		     const struct graph_row *r)
{
	flush_pending(g, t);
	t->pending = *r;
	t->has_pending = true;
	t->entry_ts[depth_of(r)] = r->ts;
	t->entry_ix[depth_of(r)] = g->ix;
}

static void on_ret(struct graph *g, struct thread *t,
		    const struct graph_row *r)
{
	int64_t start = t->entry_ts[depth_of(r)], ns;
	struct graph_call call = { .exit = r, .seq = g->ix };

	ns = start >= 0 && start <= r->ts ? r->ts - start :
	     (int64_t)(r->rettime - r->calltime);
	call.ns = ns;
	call.start = r->ts - ns;
	if (start >= 0)
		call.seq = t->entry_ix[depth_of(r)];
	t->entry_ts[depth_of(r)] = -1;
	call.leaf = t->has_pending && t->pending.func == r->func &&
		    t->pending.depth == r->depth;
	if (call.leaf)
		t->has_pending = false;
	else
		flush_pending(g, t);
	g->ops->call(g->arg, &call);
}

int graph_walk(struct graph *g, const struct graph_ops *ops, void *arg)
{
	struct thread *t;
	size_t i;
	int ret = rebuild_entries(g);

	g->ops = ops, g->arg = arg;
	if (g->n)
		qsort(g->rows, g->n, sizeof(*g->rows), row_cmp);
	for (i = 0; i < g->n; i++) {
		t = thread_get(g, g->rows[i].pid);
		if (!t)
			continue;
		g->ix = i;
		if (g->rows[i].exit)
			on_ret(g, t, &g->rows[i]);
		else
			on_call(g, t, &g->rows[i]);
	}
	for (i = 0; i < g->nthreads; i++)
		flush_pending(g, &g->threads[i]);
	return ret;
}

/* ---- the printer: the kernel's function_graph layout ---- */

static void print_func(FILE *f, const struct graph_row *r)
{
	if (r->name[0])
		log_escape_file(f, r->name, strlen(r->name));	/* a peer's symbol */
	else
		fprintf(f, "0x%" PRIx64, r->func);
}

/* "CPU) task-pid |  duration  |  " with @ns < 0 printing no duration. */
static void print_lead(FILE *out, const struct graph_row *r, int64_t ns)
{
	char comm[4 * sizeof(r->comm)], task[sizeof(comm) + 16];

	log_escape_mem(r->comm, strnlen(r->comm, sizeof(r->comm)), comm, sizeof(comm));
	snprintf(task, sizeof(task), "%s-%" PRId32, r->comm[0] ? comm : "<...>", r->pid);
	fprintf(out, "%3" PRIu32 ") %16s | ", r->cpu, task);
	if (ns < 0)
		fprintf(out, "%12s | ", "");
	else
		fprintf(out, "%6" PRId64 ".%03" PRId64 " us | ", ns / 1000,
			ns % 1000);
	fprintf(out, "%*s", 2 * depth_of(r), "");
}

/* `func() {` */
static void print_open(void *arg, const struct graph_row *r)
{
	FILE *out = arg;

	print_lead(out, r, -1);
	print_func(out, r);
	fputs("() {\n", out);
}

/* `func();` or `} /+ func +/` */
static void print_call(void *arg, const struct graph_call *c)
{
	FILE *out = arg;

	print_lead(out, c->exit, c->ns);
	if (c->leaf) {
		print_func(out, c->exit);
		fputs("();\n", out);
		return;
	}
	fputs("} /* ", out);
	print_func(out, c->exit);
	fputs(" */\n", out);
}

void graph_print(struct graph *g)
{
	static const struct graph_ops printer = { .open = print_open, .call = print_call };

	if (graph_walk(g, &printer, g->out))
		fputs("(out of memory: entries not rebuilt)\n", g->out);
}
