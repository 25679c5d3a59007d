/*
 * sqlite_filter.c - the SQLite backend's filter compiler: walks a bound
 * filter (filter_root(), filter_node_get()) and writes an SQLite WHERE
 * clause with a '?' for every constant (sqlite_filter.h says what each
 * operator becomes), noting the `FIELD == value` conjuncts at the top that
 * a field index may serve. The tree is no deeper than FILTER_MAX_DEPTH, so
 * the recursion is bounded.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "common/tc_error.h"
#include "server/store/sqlite_filter.h"

/* SQL for the comparison operators */
static const char *const sql_ops[] = {
	[FILTER_OP_EQ] = "=", [FILTER_OP_NE] = "<>", [FILTER_OP_LT] = "<",
	[FILTER_OP_LE] = "<=", [FILTER_OP_GT] = ">", [FILTER_OP_GE] = ">=",
};

struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};

static void sb_putn(struct sbuf *b, const char *s, size_t n)
{
	char *np;
	size_t ncap;

	if (b->err)
		return;
	if (b->len + n + 1 > b->cap) {
		ncap = (b->len + n + 1) * 2;
		np = realloc(b->p, ncap);
		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_putn(b, s, strlen(s));
}

static void sb_putc(struct sbuf *b, char c)
{
	sb_putn(b, &c, 1);
}

struct sqlgen {
	const struct filter *f;
	sq_column_fn column;
	void *ctx;
	struct sbuf where;
	struct filter_value *binds;
	size_t nbinds, cap_binds;
	bool top;		/* the node being compiled is an && conjunct at the top */
	size_t neq;
	int eq_field[SQ_FILTER_EQ_MAX];
	size_t eq_bind[SQ_FILTER_EQ_MAX];
	int err;
};

/* keep the first error: later steps may still run and succeed */
static void sql_fail(struct sqlgen *g, int ret)
{
	if (!g->err)
		g->err = ret;
}

static int add_bind(struct sqlgen *g, const struct filter_value *b)
{
	if (g->nbinds == g->cap_binds) {
		size_t ncap = g->cap_binds ? g->cap_binds * 2 : 8;
		struct filter_value *p = realloc(g->binds, ncap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		g->binds = p;
		g->cap_binds = ncap;
	}
	g->binds[g->nbinds++] = *b;
	return 0;
}

/* a TEXT bind that owns a copy of s[0..n) */
static int add_text_bind(struct sqlgen *g, const char *s, size_t n)
{
	struct filter_value b = { .kind = FILTER_STRING };
	char *copy = malloc(n + 1);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, n);
	copy[n] = '\0';
	b.str.s = copy;
	b.str.len = n;
	if (!add_bind(g, &b))
		return 0;
	free(copy);
	return -ENOMEM;
}

/* whether class @c lists byte @x, and whether it matches it */
static bool class_lists(const struct filter_glob_elem *c, unsigned char x)
{
	return (c->set[x / 64] >> (x % 64)) & 1;
}

static bool class_has(const struct filter_glob_elem *c, unsigned char x)
{
	return class_lists(c, x) != c->neg;
}

static bool class_is_empty(const struct filter_glob_elem *c)
{
	unsigned x;

	for (x = 1; x < 256; x++)
		if (class_has(c, (unsigned char)x))
			return false;
	return true;
}

/* write a class in SQLite GLOB syntax: ']' first, '-' next, '^' last */
static void class_to_sql(struct sbuf *b, const struct filter_glob_elem *c)
{
	unsigned x, end;

	if (!c->neg && class_lists(c, '^') && c->set[0] == 0 &&
	    c->set[1] == UINT64_C(1) << ('^' - 64) && !c->set[2] && !c->set[3]) {
		sb_putc(b, '^');	/* "[^]" would mean negation */
		return;
	}
	if (c->neg && !(c->set[0] | c->set[1] | c->set[2] | c->set[3])) {
		sb_putc(b, '?');	/* "[!z-a]": any byte; "[^]" would not close */
		return;
	}
	sb_puts(b, c->neg ? "[^" : "[");
	if (class_lists(c, ']'))
		sb_putc(b, ']');
	if (class_lists(c, '-'))
		sb_putc(b, '-');
	for (x = 1; x < 256; x = end + 1) {
		end = x;
		if (!class_lists(c, (unsigned char)x) || strchr("]-^", (int)x))
			continue;
		while (end + 1 < 256 && class_lists(c, (unsigned char)(end + 1)) &&
		       !strchr("]-^", (int)(end + 1)))
			end++;
		sb_putc(b, (char)x);
		if (end > x + 1)
			sb_putc(b, '-');
		if (end > x)
			sb_putc(b, (char)end);
	}
	if (class_lists(c, '^'))
		sb_putc(b, '^');
	sb_putc(b, ']');
}

/*
 * glob_to_sql - the pattern of the predicate at node @n (@pr) in SQLite
 * GLOB syntax into @b.
 * Return: false if the pattern contains a class that matches no byte.
 */
static bool glob_to_sql(const struct filter *f, uint32_t n, const struct filter_pred *pr,
			struct sbuf *b)
{
	struct filter_glob_elem e;
	size_t k;

	for (k = 0; k < pr->nglob; k++) {
		filter_node_glob(f, n, k, &e);
		if (e.type == FILTER_GLOB_STAR) {
			sb_putc(b, '*');
		} else if (e.type == FILTER_GLOB_ANY) {
			sb_putc(b, '?');
		} else if (e.type == FILTER_GLOB_CLASS) {
			if (class_is_empty(&e))
				return false;
			class_to_sql(b, &e);
		} else if (strchr("*?[", e.c) && e.c) {
			sb_putc(b, '[');
			sb_putc(b, (char)e.c);
			sb_putc(b, ']');
		} else {
			sb_putc(b, (char)e.c);
		}
	}
	return true;
}

static void sql_glob(struct sqlgen *g, uint32_t n, const struct filter_pred *pr,
		     const char *col)
{
	struct sbuf pat = { 0 };

	if (!glob_to_sql(g->f, n, pr, &pat)) {
		sb_puts(&g->where, pr->glob_not ? "1" : "0");
	} else if (!pat.err) {
		sb_puts(&g->where, col);
		sb_puts(&g->where, pr->glob_not ? " NOT GLOB ?" : " GLOB ?");
		sql_fail(g, add_text_bind(g, pat.p ? pat.p : "", pat.len));
	}
	if (pat.err)
		sql_fail(g, pat.err);
	free(pat.p);
}

/* col OP ? for unsigned 64-bit fields, in unsigned order (see sqlite_filter.h) */
static void sql_u64_order(struct sqlgen *g, enum filter_op op, const char *col, bool high)
{
	bool less = op == FILTER_OP_LT || op == FILTER_OP_LE;

	sb_puts(&g->where, "(");
	sb_puts(&g->where, col);
	sb_puts(&g->where, less ? " >= 0 " : " < 0 ");
	sb_puts(&g->where, less != high ? "AND " : "OR ");
	sb_puts(&g->where, col);
	sb_putc(&g->where, ' ');
	sb_puts(&g->where, sql_ops[op]);
	sb_puts(&g->where, " ?)");
}

static void sql_number(struct sqlgen *g, const struct filter_pred *pr, const char *col)
{
	struct filter_value v = { .kind = pr->kind, .u = pr->num.u };
	enum filter_op op = pr->op;

	if (op == FILTER_OP_BAND) {
		sb_puts(&g->where, "((");
		sb_puts(&g->where, col);
		sb_puts(&g->where, " & ?) <> 0)");
	} else if (pr->kind == FILTER_UNSIGNED && pr->bits >= 64 && op != FILTER_OP_EQ &&
		   op != FILTER_OP_NE) {
		sql_u64_order(g, op, col, pr->num.i < 0);
	} else {
		sb_puts(&g->where, col);
		sb_putc(&g->where, ' ');
		sb_puts(&g->where, sql_ops[op]);
		sb_puts(&g->where, " ?");
	}
	sql_fail(g, add_bind(g, &v));
}

/* CPUS{list} in SQL, with filter_eval()'s meaning; bounds are bound values */
static void sql_cpus(struct sqlgen *g, const struct filter_pred *pr, const char *col)
{
	const struct filter_cpu_range *r = pr->cpus;
	struct filter_value v = { .kind = FILTER_SIGNED };
	size_t k;

	if (pr->op != FILTER_OP_BAND && !(pr->ncpus == 1 && r[0].lo == r[0].hi)) {
		sb_puts(&g->where, pr->op == FILTER_OP_EQ ? "0" : "1");
		return;
	}
	if (pr->op != FILTER_OP_BAND) {
		sb_puts(&g->where, col);
		sb_puts(&g->where, pr->op == FILTER_OP_EQ ? " = ?" : " <> ?");
		v.i = r[0].lo;
		sql_fail(g, add_bind(g, &v));
		return;
	}
	sb_putc(&g->where, '(');
	for (k = 0; k < pr->ncpus; k++) {
		sb_puts(&g->where, k ? " OR " : "");
		sb_puts(&g->where, col);
		sb_puts(&g->where, " BETWEEN ? AND ?");
		v.i = r[k].lo;
		sql_fail(g, add_bind(g, &v));
		v.i = r[k].hi;
		sql_fail(g, add_bind(g, &v));
	}
	sb_putc(&g->where, ')');
}

/* the predicate @pr at node @n */
static void sql_pred(struct sqlgen *g, uint32_t n, const struct filter_pred *pr)
{
	const char *col = g->column(g->ctx, pr->field);

	if (!col) {
		sql_fail(g, TC_ERR_UNKNOWN_FIELD);
		return;
	}
	if (pr->is_cpus) {
		sql_cpus(g, pr, col);
		return;
	}
	if (g->top && pr->op == FILTER_OP_EQ && pr->field >= 0 && g->neq < SQ_FILTER_EQ_MAX) {
		g->eq_field[g->neq] = pr->field;
		g->eq_bind[g->neq++] = g->nbinds;	/* the bind sql_number() or below adds */
	}
	if (pr->kind != FILTER_STRING) {
		sql_number(g, pr, col);
		return;
	}
	if (pr->op == FILTER_OP_GLOB) {
		sql_glob(g, n, pr, col);
		return;
	}
	sb_puts(&g->where, col);
	sb_puts(&g->where, pr->op == FILTER_OP_EQ ? " = ?" : " <> ?");
	sql_fail(g, add_text_bind(g, pr->str, pr->len));
}

static void sql_node(struct sqlgen *g, uint32_t n)
{
	struct filter_node node, child;
	bool top = g->top;
	uint32_t c;

	filter_node_get(g->f, n, &node);
	if (node.type == FILTER_NODE_PRED) {
		sql_pred(g, n, &node.pred);
		return;
	}
	g->top = top && node.type == FILTER_NODE_AND;	/* under || or !: no longer */
	if (node.type == FILTER_NODE_NOT) {
		/* && / || groups bring their own parentheses */
		filter_node_get(g->f, node.child, &child);
		c = child.type == FILTER_NODE_PRED;
		sb_puts(&g->where, c ? "NOT (" : "NOT ");
		sql_node(g, node.child);
		if (c)
			sb_putc(&g->where, ')');
	} else {
		sb_putc(&g->where, '(');
		for (c = node.child; c != FILTER_NODE_NONE && !g->err; c = child.next) {
			if (c != node.child)
				sb_puts(&g->where, node.type == FILTER_NODE_AND ? " AND " : " OR ");
			sql_node(g, c);
			filter_node_get(g->f, c, &child);
		}
		sb_putc(&g->where, ')');
	}
	g->top = top;
}

static void free_binds(struct filter_value *binds, size_t n)
{
	size_t k;

	for (k = 0; k < n; k++)
		if (binds[k].kind == FILTER_STRING)
			free((char *)binds[k].str.s);
	free(binds);
}

int sq_filter_to_sql(const struct filter *f, sq_column_fn column, void *ctx,
		     struct sq_filter_sql *out)
{
	struct sqlgen g = { .f = f, .column = column, .ctx = ctx };
	uint32_t root;
	int ret = filter_root(f, &root);

	if (ret < 0)
		return ret;
	g.top = true;
	sql_node(&g, root);
	ret = g.err ? g.err : g.where.err;
	if (ret) {
		free(g.where.p);
		free_binds(g.binds, g.nbinds);
		return ret;
	}
	out->where = g.where.p;
	out->binds = g.binds;
	out->nbinds = g.nbinds;
	out->neq = g.neq;
	for (size_t k = 0; k < g.neq; k++) {
		out->eq[k].field = g.eq_field[k];
		out->eq[k].bind = g.eq_bind[k];
	}
	return 0;
}

void sq_filter_sql_free(struct sq_filter_sql *s)
{
	if (!s)
		return;
	free(s->where);
	free_binds(s->binds, s->nbinds);
	memset(s, 0, sizeof(*s));
}
