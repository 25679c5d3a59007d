/*
 * clickhouse_filter.c - the ClickHouse backend's filter compiler: walks a
 * bound filter (filter_root(), filter_node_get()) and writes a ClickHouse
 * boolean expression, every constant through clickhouse_escape.h
 * (clickhouse_filter.h says what each operator becomes and why globs go
 * through hex()). The tree is no deeper than FILTER_MAX_DEPTH, so the
 * recursion is bounded.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "common/tc_error.h"
#include "server/store/clickhouse_escape.h"
#include "server/store/clickhouse_filter.h"

static const char *const ch_ops[] = {
	[FILTER_OP_EQ] = " = ", [FILTER_OP_NE] = " != ", [FILTER_OP_LT] = " < ",
	[FILTER_OP_LE] = " <= ", [FILTER_OP_GT] = " > ", [FILTER_OP_GE] = " >= ",
};

struct chgen {
	const struct filter *f;
	ch_column_fn column;
	void *ctx;
	struct ch_sql *s;
	int err;		/* the first failure that is not @s's own */
};

static void ch_fail(struct chgen *g, int ret)
{
	if (!g->err && ret)
		g->err = ret;
}

static void ch_col(struct chgen *g, int field)
{
	if (!g->err && !ch_sql_err(g->s))
		ch_fail(g, g->column(g->ctx, field, g->s));
}

/* a constant of the field's signedness (clickhouse_filter.h: no mixed comparisons) */
static void ch_num(struct chgen *g, enum filter_kind kind, int64_t i, uint64_t u)
{
	ch_sql_raw(g->s, kind == FILTER_SIGNED ? "toInt64(" : "toUInt64(");
	if (kind == FILTER_SIGNED)
		ch_sql_i64(g->s, i);
	else
		ch_sql_u64(g->s, u);
	ch_sql_raw(g->s, ")");
}

static void ch_number(struct chgen *g, const struct filter_pred *pr)
{
	if (pr->op == FILTER_OP_BAND) {
		ch_sql_raw(g->s, "(bitAnd(toUInt64(");
		ch_col(g, pr->field);
		ch_sql_raw(g->s, "), ");
		ch_sql_u64(g->s, pr->num.u);	/* the mask's bit pattern (filter.h) */
		ch_sql_raw(g->s, ") != 0)");
		return;
	}
	ch_sql_raw(g->s, "(");
	ch_col(g, pr->field);
	ch_sql_raw(g->s, ch_ops[pr->op]);
	ch_num(g, pr->kind, pr->num.i, pr->num.u);
	ch_sql_raw(g->s, ")");
}

/* CPUS{list} with filter_eval()'s meaning (filter.h) */
static void ch_cpus(struct chgen *g, const struct filter_pred *pr)
{
	const struct filter_cpu_range *r = pr->cpus;
	bool one = pr->ncpus == 1 && r[0].lo == r[0].hi;

	if (pr->op != FILTER_OP_BAND) {
		if (!one) {
			ch_sql_raw(g->s, pr->op == FILTER_OP_EQ ? "0" : "1");
			return;
		}
		ch_sql_raw(g->s, "(");
		ch_col(g, pr->field);
		ch_sql_raw(g->s, pr->op == FILTER_OP_EQ ? " = " : " != ");
		ch_num(g, pr->kind, r[0].lo, r[0].lo);
		ch_sql_raw(g->s, ")");
		return;
	}
	ch_sql_raw(g->s, "(");
	for (size_t k = 0; k < pr->ncpus; k++) {
		ch_sql_raw(g->s, k ? " OR (" : "(");
		ch_col(g, pr->field);
		ch_sql_raw(g->s, " BETWEEN ");
		ch_num(g, pr->kind, r[k].lo, r[k].lo);
		ch_sql_raw(g->s, " AND ");
		ch_num(g, pr->kind, r[k].hi, r[k].hi);
		ch_sql_raw(g->s, ")");
	}
	ch_sql_raw(g->s, ")");
}

/* ---- globs ------------------------------------------------------------------ */

static bool class_has(const struct filter_glob_elem *c, unsigned x)
{
	return ((c->set[x / 64] >> (x % 64)) & 1) != c->neg;
}

static const char hexd[] = "0123456789ABCDEF";

/*
 * The hex digits of @mask (bit d: digit d) as regex text: "." for all
 * sixteen, the digit for one, else a bracket of runs (a run never spans
 * 9 to A: the digits between are no hex digits).
 */
static void ch_digits(struct ch_sql *s, unsigned mask)
{
	unsigned d, end;

	if (mask == 0xffff) {
		ch_sql_raw(s, ".");
		return;
	}
	if (!(mask & (mask - 1))) {
		ch_sql_addf(s, "%c", hexd[__builtin_ctz(mask)]);
		return;
	}
	ch_sql_raw(s, "[");
	for (d = 0; d < 16; d = end + 1) {
		end = d;
		if (!(mask >> d & 1))
			continue;
		while (end + 1 < 16 && end != 9 && (mask >> (end + 1) & 1))
			end++;
		ch_sql_addf(s, end > d ? "%c-%c" : "%c", hexd[d], hexd[end]);
	}
	ch_sql_raw(s, "]");
}

/*
 * A class as the regex of one byte in hex (clickhouse_filter.h): the high
 * digits that share a set of low digits in one alternative, e.g. [!a-c]
 * is (?:[0-57-F].|6[04-F]).
 * Return: false if it matches no byte (nothing written).
 */
static bool ch_class_regex(struct ch_sql *s, const struct filter_glob_elem *c)
{
	unsigned lo[16] = { 0 }, hi, h2, x, his, groups = 0, done = 0;

	for (x = 1; x < 256; x++) {
		if (class_has(c, x))
			lo[x >> 4] |= 1u << (x & 15);
	}
	if (lo[0])
		lo[0] |= 1;	/* byte 0 never occurs: count it in, for "." */
	for (hi = 0; hi < 16; hi++) {
		for (h2 = 0; h2 < hi && lo[hi] && lo[h2] != lo[hi]; h2++)
			;
		groups += lo[hi] && h2 == hi;
	}
	if (!groups)
		return false;
	ch_sql_raw(s, groups > 1 ? "(?:" : "");
	for (hi = 0; hi < 16; hi++) {
		if (!lo[hi] || done >> hi & 1)
			continue;
		for (h2 = hi, his = 0; h2 < 16; h2++)
			his |= (unsigned)(lo[h2] == lo[hi]) << h2;
		ch_sql_raw(s, done ? "|" : "");
		done |= his;
		ch_digits(s, his);
		ch_digits(s, lo[hi]);
	}
	ch_sql_raw(s, groups > 1 ? ")" : "");
	return true;
}

int ch_glob_regex(const struct filter *f, uint32_t n, struct ch_sql *out)
{
	struct filter_node node;
	struct filter_glob_elem e;
	struct ch_sql r;
	int ret;

	filter_node_get(f, n, &node);
	ch_sql_init(&r, out->max);
	ch_sql_raw(&r, "^");
	for (size_t k = 0; k < node.pred.nglob && !ch_sql_err(&r); k++) {
		filter_node_glob(f, n, k, &e);
		if (e.type == FILTER_GLOB_LITERAL) {
			ch_sql_addf(&r, "%c%c", hexd[e.c >> 4], hexd[e.c & 15]);
		} else if (e.type == FILTER_GLOB_ANY) {
			ch_sql_raw(&r, "..");
		} else if (e.type == FILTER_GLOB_STAR) {
			ch_sql_raw(&r, "(?:..)*");
		} else if (!ch_class_regex(&r, &e)) {
			ch_sql_free(&r);
			return 0;
		}
	}
	ch_sql_raw(&r, "$");
	ret = ch_sql_err(&r) ? ch_sql_err(&r) : ch_sql_raw(out, r.buf);
	ch_sql_free(&r);
	return ret ? ret : 1;
}

/*
 * A pattern of literals and stars only: its literal bytes into @lit
 * (room for nglob bytes), *@nlit of them, and the place of its first
 * and last star in them (*@nstars stars). Return: false for any other
 * pattern, or for more than two stars.
 */
static bool glob_plain(const struct filter *f, uint32_t n, size_t nglob, char *lit,
		       size_t *nlit, size_t star[2], size_t *nstars)
{
	struct filter_glob_elem e;
	size_t k;

	*nlit = *nstars = 0;
	for (k = 0; k < nglob; k++) {
		filter_node_glob(f, n, k, &e);
		if (e.type == FILTER_GLOB_STAR && *nstars < 2)
			star[(*nstars)++] = *nlit;
		else if (e.type == FILTER_GLOB_LITERAL)
			lit[(*nlit)++] = (char)e.c;
		else
			return false;
	}
	return true;
}

/*
 * The byte-exact forms of a plain pattern (clickhouse_filter.h).
 * Return: false where the pattern needs the regex (nothing written).
 */
static bool ch_glob_plain(struct chgen *g, const struct filter_pred *pr, const char *lit,
			  size_t nlit, const size_t *star, size_t nstars)
{
	size_t p = star[0];

	if (nstars == 0) {
		ch_sql_raw(g->s, "(");
		ch_col(g, pr->field);
		ch_sql_raw(g->s, " = ");
		ch_sql_str(g->s, lit, nlit);
		ch_sql_raw(g->s, ")");
	} else if (!nlit) {
		ch_sql_raw(g->s, "1");		/* '*' */
	} else if (nstars == 1) {
		ch_sql_raw(g->s, "(");
		if (p) {
			ch_sql_raw(g->s, "startsWith(");
			ch_col(g, pr->field);
			ch_sql_raw(g->s, ", ");
			ch_sql_str(g->s, lit, p);
			ch_sql_raw(g->s, ")");
		}
		if (p && p < nlit)
			ch_sql_raw(g->s, " AND ");
		if (p < nlit) {
			ch_sql_raw(g->s, "endsWith(");
			ch_col(g, pr->field);
			ch_sql_raw(g->s, ", ");
			ch_sql_str(g->s, lit + p, nlit - p);
			ch_sql_raw(g->s, ")");
		}
		if (p && p < nlit) {
			ch_sql_raw(g->s, " AND length(");
			ch_col(g, pr->field);
			ch_sql_raw(g->s, ") >= ");
			ch_sql_u64(g->s, nlit);
		}
		ch_sql_raw(g->s, ")");
	} else if (star[0] == 0 && star[1] == nlit) {
		ch_sql_raw(g->s, "(position(");
		ch_col(g, pr->field);
		ch_sql_raw(g->s, ", ");
		ch_sql_str(g->s, lit, nlit);
		ch_sql_raw(g->s, ") > 0)");
	} else {
		return false;
	}
	return true;
}

/* Whether every byte class @c lists (it is not negated) is ASCII. */
static bool ch_class_ascii(const struct filter_glob_elem *c)
{
	return !c->neg && !c->set[2] && !c->set[3];
}

/*
 * ch_glob_bytes_regex - the regex of the pattern at node @n on the text's
 * own bytes, when every literal and class of it is ASCII (no negated
 * class): literals and class members as \xHH, '?' as \C, '*' as \C*
 * (clickhouse_filter.h). Return: 1 when written; 0 when the pattern needs
 * hex() (@out unchanged); @out's sticky error.
 */
static int ch_glob_bytes_regex(const struct filter *f, uint32_t n, struct ch_sql *out)
{
	struct filter_node node;
	struct filter_glob_elem e;
	struct ch_sql r;
	size_t k;
	int ret;

	filter_node_get(f, n, &node);
	for (k = 0; k < node.pred.nglob; k++) {
		filter_node_glob(f, n, k, &e);
		if ((e.type == FILTER_GLOB_LITERAL && (e.c >= 0x80 || !e.c)) ||
		    (e.type == FILTER_GLOB_CLASS && !ch_class_ascii(&e)) ||
		    (e.type == FILTER_GLOB_CLASS && !(e.set[0] >> 1) && !e.set[1]))
			return 0;	/* hex(), or a class of no byte: ch_glob_regex() */
	}
	ch_sql_init(&r, out->max);
	ch_sql_raw(&r, "^");
	for (k = 0; k < node.pred.nglob && !ch_sql_err(&r); k++) {
		filter_node_glob(f, n, k, &e);
		if (e.type == FILTER_GLOB_LITERAL) {
			ch_sql_addf(&r, "\\x%02X", e.c);
		} else if (e.type == FILTER_GLOB_ANY) {
			ch_sql_raw(&r, "\\C");
		} else if (e.type == FILTER_GLOB_STAR) {
			ch_sql_raw(&r, "\\C*");
		} else {
			ch_sql_raw(&r, "[");
			for (unsigned x = 1; x < 0x80; x++)
				if (class_has(&e, x))
					ch_sql_addf(&r, "\\x%02X", x);
			ch_sql_raw(&r, "]");
		}
	}
	ch_sql_raw(&r, "$");
	ret = ch_sql_err(&r) ? ch_sql_err(&r) : ch_sql_raw(out, r.buf);
	ch_sql_free(&r);
	return ret ? ret : 1;
}

static void ch_glob_match(struct chgen *g, uint32_t n, const struct filter_pred *pr)
{
	struct ch_sql re;
	bool hex = false;
	int ret;

	ch_sql_init(&re, g->s->max);
	ret = ch_glob_bytes_regex(g->f, n, &re);
	if (ret == 0) {
		hex = true;
		ret = ch_glob_regex(g->f, n, &re);
	}
	if (ret == 0) {
		ch_sql_raw(g->s, "0");
	} else if (ret > 0) {
		ch_sql_raw(g->s, hex ? "match(hex(" : "match(");
		ch_col(g, pr->field);
		ch_sql_raw(g->s, hex ? "), " : ", ");
		ch_sql_str(g->s, re.buf, re.len);
		ch_sql_raw(g->s, ")");
	}
	ch_fail(g, ret < 0 ? ret : 0);
	ch_sql_free(&re);
}

static void ch_glob(struct chgen *g, uint32_t n, const struct filter_pred *pr)
{
	size_t nlit, star[2] = { 0, 0 }, nstars;
	char *lit = malloc(pr->nglob + 1);

	if (!lit) {
		ch_fail(g, -ENOMEM);
		return;
	}
	ch_sql_raw(g->s, pr->glob_not ? "NOT " : "");
	if (!glob_plain(g->f, n, pr->nglob, lit, &nlit, star, &nstars) ||
	    !ch_glob_plain(g, pr, lit, nlit, star, nstars))
		ch_glob_match(g, n, pr);
	free(lit);
}

/* ---- the tree ---------------------------------------------------------------- */

static void ch_pred(struct chgen *g, uint32_t n, const struct filter_pred *pr)
{
	if (pr->is_cpus) {
		ch_cpus(g, pr);
	} else if (pr->kind != FILTER_STRING) {
		ch_number(g, pr);
	} else if (pr->op == FILTER_OP_GLOB) {
		ch_glob(g, n, pr);
	} else {
		ch_sql_raw(g->s, "(");
		ch_col(g, pr->field);
		ch_sql_raw(g->s, pr->op == FILTER_OP_EQ ? " = " : " != ");
		ch_sql_str(g->s, pr->str, pr->len);
		ch_sql_raw(g->s, ")");
	}
}

static void ch_node(struct chgen *g, uint32_t n)
{
	struct filter_node node, child;
	uint32_t c;

	filter_node_get(g->f, n, &node);
	if (node.type == FILTER_NODE_PRED) {
		ch_pred(g, n, &node.pred);
		return;
	}
	if (node.type == FILTER_NODE_NOT) {
		ch_sql_raw(g->s, "NOT (");	/* NOT binds looser than = in ClickHouse */
		ch_node(g, node.child);
		ch_sql_raw(g->s, ")");
		return;
	}
	ch_sql_raw(g->s, "(");
	for (c = node.child; c != FILTER_NODE_NONE && !g->err && !ch_sql_err(g->s);
	     c = child.next) {
		if (c != node.child)
			ch_sql_raw(g->s, node.type == FILTER_NODE_AND ? " AND " : " OR ");
		ch_node(g, c);
		filter_node_get(g->f, c, &child);
	}
	ch_sql_raw(g->s, ")");
}

bool ch_filter_node_uses(const struct filter *f, uint32_t n, int field)
{
	struct filter_node node;

	filter_node_get(f, n, &node);
	if (node.type == FILTER_NODE_PRED)
		return node.pred.field == field;
	for (uint32_t c = node.child; c != FILTER_NODE_NONE; c = node.next) {
		if (ch_filter_node_uses(f, c, field))
			return true;
		filter_node_get(f, c, &node);
	}
	return false;
}

int ch_filter_to_sql(const struct filter *f, ch_column_fn column, void *ctx,
		     struct ch_sql *out)
{
	uint32_t root;
	int ret = filter_root(f, &root);

	return ret < 0 ? ret : ch_filter_node_to_sql(f, root, column, ctx, out);
}

int ch_filter_node_to_sql(const struct filter *f, uint32_t root, ch_column_fn column,
			  void *ctx, struct ch_sql *out)
{
	struct ch_sql s;
	struct chgen g = { .f = f, .column = column, .ctx = ctx, .s = &s };
	int ret;

	if (ch_sql_err(out))
		return ch_sql_err(out);
	ch_sql_init(&s, out->max - out->len);
	ch_node(&g, root);
	ret = g.err ? g.err : ch_sql_err(&s);
	if (!ret && s.len > out->max - out->len)
		ret = TC_ERR_TOO_LONG;
	if (!ret) {
		/* our own text, every constant in it escaped: append it whole */
		ret = ch_sql_raw(out, ch_sql_text(&s));
	}
	ch_sql_free(&s);
	return ret;
}
