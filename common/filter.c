/*
 * filter.c - the kernel's event-filter language: a recursive-descent parser
 * into a flat node array, binding to an event schema, evaluation, glob
 * matching (the semantics of the kernel's lib/glob.c), read-only views of
 * the bound tree for the storage backends, and caret-style error messages.
 * See filter.h for the language and the decisions taken where the kernel
 * is vague.
 *
 * Layout: a filter owns a copy of its text and flat arrays (nodes,
 * predicates, glob elements, glob classes, names, binding) so filter_dup()
 * is a handful of copies and no pointer points into another array.  && and
 * || chains are n-ary nodes (children linked through 'next'), so the tree is
 * only as deep as the '(' / '!' nesting, which the parser caps: the
 * recursive evaluator (and a backend walking the tree) never recurse
 * deeper than that.  The enums below take filter.h's values, so the views
 * of the tree hand them out as they are.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "common/suggest.h"
#include "common/tc_error.h"
#include "common/util.h"

#define NONE FILTER_NODE_NONE

enum fop {
	OP_EQ = FILTER_OP_EQ, OP_NE = FILTER_OP_NE, OP_LT = FILTER_OP_LT, OP_LE = FILTER_OP_LE,
	OP_GT = FILTER_OP_GT, OP_GE = FILTER_OP_GE, OP_BAND = FILTER_OP_BAND,
	OP_GLOB = FILTER_OP_GLOB,
};

static const char *const op_names[] = {
	[OP_EQ] = "==", [OP_NE] = "!=", [OP_LT] = "<", [OP_LE] = "<=",
	[OP_GT] = ">", [OP_GE] = ">=", [OP_BAND] = "&", [OP_GLOB] = "~",
};

enum fnode_type {
	FN_PRED = FILTER_NODE_PRED, FN_AND = FILTER_NODE_AND, FN_OR = FILTER_NODE_OR,
	FN_NOT = FILTER_NODE_NOT,
};

/* arg: predicate index (FN_PRED), first child (FN_AND/FN_OR), child (FN_NOT) */
struct fnode {
	enum fnode_type type;
	uint32_t arg;
	uint32_t next;		/* next sibling in an && / || chain */
};

struct span {
	size_t pos;
	size_t len;
};

enum num_status { NUM_OK, NUM_BAD, NUM_RANGE };

enum glob_type {
	G_LIT = FILTER_GLOB_LITERAL, G_ANY = FILTER_GLOB_ANY, G_STAR = FILTER_GLOB_STAR,
	G_CLASS = FILTER_GLOB_CLASS,
};

struct glob_elem {
	enum glob_type type;
	unsigned char c;	/* G_LIT */
	uint32_t cls;		/* G_CLASS: index into filter->classes */
};

/* a bracket class as written: the listed bytes, and whether '!' negates */
struct glob_class {
	uint64_t set[4];
	bool neg;
};

struct fpred {
	struct span field, op, value;	/* value includes its quotes */
	struct span str;		/* value without quotes */
	bool quoted;
	enum fop op_code;
	uint32_t name;			/* index into filter->names */
	enum num_status num;		/* a bare value read as a number */
	bool neg;
	uint64_t mag;
	uint32_t glob, nglob;		/* OP_GLOB: elements in filter->globs */
	bool glob_not;			/* "~ \"!pat\"": the kernel's inverted glob */
	bool is_cpus;			/* the value is CPUS{list} */
	uint32_t cpus, ncpus;		/* its ranges in filter->cpus */
};

#define CPUS_MAX	65535		/* highest CPU number a list may name */

struct fbind {
	int field;
	enum filter_kind kind;
	unsigned bits;
	union {
		int64_t i;
		uint64_t u;
	} num;
};

struct filter {
	char *text;
	size_t len;
	uint32_t root;
	struct fnode *nodes;
	size_t nnodes, cap_nodes;
	struct fpred *preds;
	size_t npreds, cap_preds;
	struct glob_elem *globs;
	size_t nglobs, cap_globs;
	struct glob_class *classes;
	size_t nclasses, cap_classes;
	struct filter_cpu_range *cpus;
	size_t ncpus, cap_cpus;
	char **names;
	size_t nnames, cap_names;
	struct fbind *bind;		/* npreds entries; NULL until bound */
};

struct parser {
	struct filter *f;
	const char *s;
	size_t len;
	size_t i;
	struct filter_error *err;
};

/* ---- small helpers ---------------------------------------------------- */


static bool is_ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident(char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

static bool is_op_char(char c)
{
	return c != '\0' && strchr("=!<>~&|^%+-*/", c) != NULL;
}

/* bytes that end a bare (unquoted) value */
static bool ends_bare(char c)
{
	return util_is_space(c) || c == '(' || c == ')' || c == '&' || c == '|' ||
	       c == '"' || c == '\'';
}

/*
 * grow - make room for one more element in a growing array.
 * Return: 0 or -ENOMEM (the array is unchanged then).
 */
static int grow(void **arr, size_t *cap, size_t n, size_t size)
{
	void *p = util_grow(*arr, cap, n, size, 8);

	if (!p)
		return -ENOMEM;
	*arr = p;
	return 0;
}

int filter_fail(struct filter_error *err, int code, size_t pos, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	err->pos = pos;
	err->len = len;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* length of the "token" at @i for an error: an operator run or a word */
static size_t junk_len(const char *s, size_t n, size_t i)
{
	size_t j = i;

	if (i >= n)
		return 0;
	if (is_op_char(s[i]) || s[i] == '(' || s[i] == ')')
		return 1;
	while (j < n && !ends_bare(s[j]) && !is_op_char(s[j]))
		j++;
	return j > i ? j - i : 1;
}

/* how much of a token to quote in a message */
#define TOK_MAX 40
#define TOKLEN(n) ((int)((n) < TOK_MAX ? (n) : TOK_MAX))

/* ---- numbers ------------------------------------------------------------ */

/*
 * read_number - read @s[0..n) like kstrtoll(base 0): [+-] then 0x hex,
 * 0 octal or decimal, nothing else.  The magnitude goes to @mag.
 */
static enum num_status read_number(const char *s, size_t n, bool *neg, uint64_t *mag)
{
	unsigned base = 10;
	uint64_t v = 0;
	size_t i = 0;
	int d;

	*neg = n > 0 && s[0] == '-';
	if (n > 0 && (s[0] == '-' || s[0] == '+'))
		i++;
	if (n - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
		base = 16;
		i += 2;
	} else if (n - i > 1 && s[i] == '0') {
		base = 8;
		i++;
	}
	if (i >= n)
		return NUM_BAD;
	for (; i < n; i++) {
		d = util_hex_digit(s[i]);
		if (d < 0 || d >= (int)base)
			return NUM_BAD;
		if (v > (UINT64_MAX - (uint64_t)d) / base)
			return NUM_RANGE;
		v = v * base + (uint64_t)d;
	}
	*mag = v;
	return NUM_OK;
}

/* ---- globs ------------------------------------------------------------- */

static void class_add(struct glob_class *c, unsigned char a, unsigned char b)
{
	unsigned x;

	for (x = a; x <= b; x++)
		if (x != 0)
			c->set[x / 64] |= UINT64_C(1) << (x % 64);
}

static bool class_lists(const struct glob_class *c, unsigned char x)
{
	return (c->set[x / 64] >> (x % 64)) & 1;
}

static bool class_has(const struct glob_class *c, unsigned char x)
{
	return class_lists(c, x) != c->neg;
}

/*
 * scan_class - read the class whose '[' is at p[i], glob_match() style: an
 * optional '!', then spans "a" or "a-b" where the first span may start with
 * ']' and a '-' before ']' is literal, up to the closing ']'.
 * Return: index just past ']', or 0 if the class is not closed (the '['
 * is then an ordinary character).
 */
static size_t scan_class(const char *p, size_t n, size_t i, struct glob_class *c)
{
	size_t j = i + 1;
	bool first = true;
	unsigned char a, b;

	memset(c, 0, sizeof(*c));
	if (j < n && p[j] == '!') {
		c->neg = true;
		j++;
	}
	for (; j < n; first = false) {
		a = (unsigned char)p[j];
		if (a == ']' && !first)
			return j + 1;
		b = a;
		if (j + 1 < n && p[j + 1] == '-' && (j + 2 >= n || p[j + 2] != ']')) {
			if (j + 2 >= n)
				return 0;
			b = (unsigned char)p[j + 2];
			j += 2;
		}
		class_add(c, a, b);
		j++;
	}
	return 0;
}

static int glob_push(struct filter *f, enum glob_type t, unsigned char ch)
{
	int ret = grow((void **)&f->globs, &f->cap_globs, f->nglobs, sizeof(*f->globs));

	if (ret)
		return ret;
	f->globs[f->nglobs++] = (struct glob_elem){ .type = t, .c = ch, .cls = NONE };
	return 0;
}

static int glob_push_class(struct filter *f, const struct glob_class *c)
{
	int ret = grow((void **)&f->classes, &f->cap_classes, f->nclasses,
		       sizeof(*f->classes));

	if (!ret)
		ret = glob_push(f, G_CLASS, 0);
	if (ret)
		return ret;
	f->globs[f->nglobs - 1].cls = (uint32_t)f->nclasses;
	f->classes[f->nclasses++] = *c;
	return 0;
}

/* compile the glob pattern p[0..n) into f->globs (appended) */
static int glob_compile(struct filter *f, const char *p, size_t n)
{
	size_t i = 0, end, first = f->nglobs;
	struct glob_class c;
	int ret = 0;

	while (i < n && !ret) {
		if (p[i] == '*') {
			if (f->nglobs == first || f->globs[f->nglobs - 1].type != G_STAR)
				ret = glob_push(f, G_STAR, 0);
			i++;
		} else if (p[i] == '?') {
			ret = glob_push(f, G_ANY, 0);
			i++;
		} else if (p[i] == '\\') {
			if (i + 1 < n)	/* a trailing '\' matches nothing extra */
				ret = glob_push(f, G_LIT, (unsigned char)p[i + 1]);
			i += 2;
		} else if (p[i] == '[' && (end = scan_class(p, n, i, &c)) != 0) {
			ret = glob_push_class(f, &c);
			i = end;
		} else {
			ret = glob_push(f, G_LIT, (unsigned char)p[i++]);
		}
	}
	return ret;
}

static bool glob_elem_matches(const struct filter *f, const struct glob_elem *e,
			      unsigned char c)
{
	switch (e->type) {
	case G_ANY:
		return true;
	case G_LIT:
		return e->c == c;
	case G_CLASS:
		return class_has(&f->classes[e->cls], c);
	default:
		return false;
	}
}

/*
 * glob_match - match @s[0..n) against the compiled pattern: the classic
 * greedy walk that, on a mismatch, retries from the last '*' one byte
 * further (enough for patterns made of '*', single-byte items and literals).
 */
static bool glob_match(const struct filter *f, const struct fpred *pr,
		       const unsigned char *s, size_t n)
{
	const struct glob_elem *e = pr->nglob ? f->globs + pr->glob : NULL;
	size_t ne = pr->nglob, pi = 0, si = 0, star = NONE, star_s = 0;

	while (si < n) {
		if (pi < ne && e[pi].type == G_STAR) {
			star = ++pi;
			star_s = si;
		} else if (pi < ne && glob_elem_matches(f, &e[pi], s[si])) {
			pi++;
			si++;
		} else if (star != NONE) {
			pi = star;
			si = ++star_s;
		} else {
			return false;
		}
	}
	while (pi < ne && e[pi].type == G_STAR)
		pi++;
	return pi == ne;
}

/* ---- parser --------------------------------------------------------------- */

static char peek(const struct parser *p, size_t ahead)
{
	return p->i + ahead < p->len ? p->s[p->i + ahead] : '\0';
}

static int new_node(struct parser *p, enum fnode_type t, uint32_t arg, uint32_t *out)
{
	struct filter *f = p->f;
	int ret = grow((void **)&f->nodes, &f->cap_nodes, f->nnodes, sizeof(*f->nodes));

	if (ret)
		return ret;
	f->nodes[f->nnodes] = (struct fnode){ .type = t, .arg = arg, .next = NONE };
	*out = (uint32_t)f->nnodes++;
	return 0;
}

/* index of @name in f->names, adding it if new */
static int intern_name(struct filter *f, const char *s, size_t n, uint32_t *out)
{
	size_t k;
	char *copy;

	for (k = 0; k < f->nnames; k++) {
		if (strlen(f->names[k]) == n && !memcmp(f->names[k], s, n)) {
			*out = (uint32_t)k;
			return 0;
		}
	}
	if (grow((void **)&f->names, &f->cap_names, f->nnames, sizeof(*f->names)))
		return -ENOMEM;
	copy = strndup(s, n);
	if (!copy)
		return -ENOMEM;
	f->names[f->nnames] = copy;
	*out = (uint32_t)f->nnames++;
	return 0;
}

static int expect_error(struct parser *p, const char *what)
{
	size_t n;

	if (p->i >= p->len)
		return filter_fail(p->err, TC_ERR_UNEXPECTED_END, p->len, 0,
				   "unexpected end of filter: expected %s", what);
	n = junk_len(p->s, p->len, p->i);
	return filter_fail(p->err, TC_ERR_SYNTAX, p->i, n, "expected %s, found '%.*s'",
			   what, TOKLEN(n), p->s + p->i);
}

/* characters of relational operators, for reporting unknown ones whole */
static bool is_rel_char(char c)
{
	return c != '\0' && strchr("=!<>~&|", c) != NULL;
}

/* The operator a person who typed the @n bytes of @s meant ("=" -> "=="), or NULL. */
static const char *op_meant(const char *s, size_t n)
{
	static const char *const meant[][2] = {
		{ "=", "==" }, { "===", "==" }, { "=>", ">=" }, { "=<", "<=" },
		{ "<>", "!=" }, { "=!", "!=" }, { "!==", "!=" }, { "=~", "~" },
		{ "~=", "~" }, { "==~", "~" }, { "&&", "&" },
	};

	for (size_t k = 0; k < sizeof(meant) / sizeof(meant[0]); k++)
		if (strlen(meant[k][0]) == n && !memcmp(s, meant[k][0], n))
			return meant[k][1];
	return NULL;
}

/* read a relational operator at p->i into @pr */
static int parse_op(struct parser *p, struct fpred *pr)
{
	static const struct {
		const char *s;
		enum fop op;
	} ops[] = {
		{ "==", OP_EQ }, { "!=", OP_NE }, { "<=", OP_LE }, { ">=", OP_GE },
		{ "<", OP_LT }, { ">", OP_GT }, { "~", OP_GLOB }, { "&", OP_BAND },
	};
	size_t k, l, n = 0, start = p->i;

	for (k = 0; k < sizeof(ops) / sizeof(ops[0]) && !n; k++) {
		l = strlen(ops[k].s);
		if (p->len - p->i >= l && !memcmp(p->s + p->i, ops[k].s, l)) {
			pr->op_code = ops[k].op;
			n = l;
		}
	}
	if (!n && !is_rel_char(peek(p, 0)))
		return expect_error(p, "an operator (== != < <= > >= & ~)");
	if (!n || (is_rel_char(peek(p, n)) && peek(p, n) != '!')) {
		/* "=", "===", "<>", "=~", "&&": report the whole run */
		for (n = 0; is_rel_char(peek(p, n)); n++)
			;
		const char *meant = op_meant(p->s + start, n);

		return filter_fail(p->err, TC_ERR_BAD_OPERATOR, start, n,
				   "unknown operator '%.*s'%s%s%s", TOKLEN(n), p->s + start,
				   meant ? " (did you mean '" : "", meant ? meant : "",
				   meant ? "'?)" : "");
	}
	pr->op = (struct span){ start, n };
	p->i += n;
	return 0;
}

/* one "N" or "N-M" of a CPU list at s[*i..n); Return: 0 or -1 */
static int cpu_item(const char *s, size_t n, size_t *i, struct filter_cpu_range *r)
{
	uint64_t v[2] = { 0, 0 };
	int k;

	for (k = 0; k < 2; k++) {
		size_t d = *i;

		while (*i < n && s[*i] >= '0' && s[*i] <= '9' && v[k] <= CPUS_MAX)
			v[k] = v[k] * 10 + (uint64_t)(s[(*i)++] - '0');
		if (*i == d || v[k] > CPUS_MAX)
			return -1;
		if (k == 1 || *i >= n || s[*i] != '-')
			break;
		(*i)++;
	}
	r->lo = (uint32_t)v[0];
	r->hi = (uint32_t)(k == 1 ? v[1] : v[0]);
	return r->lo <= r->hi ? 0 : -1;
}

/*
 * parse_cpus - the value "CPUS{list}" (the kernel's cpulist: "0-3,7") of
 * @pr, already delimited in pr->str, into ranges in p->f->cpus.
 */
static int parse_cpus(struct parser *p, struct fpred *pr)
{
	const char *s = p->s + pr->str.pos;
	size_t n = pr->str.len, i = 5;
	struct filter_cpu_range r;
	int ret;

	pr->is_cpus = true;
	pr->cpus = (uint32_t)p->f->ncpus;
	if (s[n - 1] != '}' || n == 6)
		goto bad;
	n--;
	while (i < n) {
		if (cpu_item(s, n, &i, &r) < 0 || (i < n && s[i++] != ',') ||
		    (i == n && s[i - 1] == ','))
			goto bad;
		ret = grow((void **)&p->f->cpus, &p->f->cap_cpus, p->f->ncpus,
			   sizeof(*p->f->cpus));
		if (ret)
			return ret;
		p->f->cpus[p->f->ncpus++] = r;
	}
	pr->ncpus = (uint32_t)(p->f->ncpus - pr->cpus);
	return 0;
bad:
	return filter_fail(p->err, TC_ERR_SYNTAX, pr->value.pos, pr->value.len,
			   "bad CPU list '%.*s': want CPUS{N,N-M,...} with CPUs up to %u",
			   TOKLEN(pr->value.len), s, CPUS_MAX);
}

/* read the constant after the operator into @pr */
static int parse_value(struct parser *p, struct fpred *pr)
{
	size_t start = p->i, j;
	char q = peek(p, 0);

	if (q == '"' || q == '\'') {
		j = start + 1;
		while (j < p->len && p->s[j] != q)
			j++;
		if (j >= p->len)
			return filter_fail(p->err, TC_ERR_UNTERMINATED, start, p->len - start,
					   "string has no closing %c", q);
		pr->quoted = true;
		pr->str = (struct span){ start + 1, j - start - 1 };
		pr->value = (struct span){ start, j + 1 - start };
		p->i = j + 1;
		return 0;
	}
	for (j = start; j < p->len && !ends_bare(p->s[j]); j++)
		;
	if (j == start)
		return expect_error(p, "a value");
	pr->str = (struct span){ start, j - start };
	pr->value = pr->str;
	p->i = j;
	if (j - start >= 5 && !memcmp(p->s + start, "CPUS{", 5))
		return parse_cpus(p, pr);
	pr->num = read_number(p->s + start, j - start, &pr->neg, &pr->mag);
	return 0;
}

static int add_pred(struct parser *p, const struct fpred *pr, uint32_t *out)
{
	struct filter *f = p->f;
	int ret = grow((void **)&f->preds, &f->cap_preds, f->npreds, sizeof(*f->preds));

	if (ret)
		return ret;
	ret = new_node(p, FN_PRED, (uint32_t)f->npreds, out);
	if (ret)
		return ret;
	f->preds[f->npreds++] = *pr;
	return 0;
}

static int parse_pred(struct parser *p, uint32_t *out)
{
	struct fpred pr = { .num = NUM_BAD, .glob = NONE };
	size_t start = p->i;
	int ret;

	if (!is_ident_start(peek(p, 0)))
		return expect_error(p, "a field name, '(' or '!'");
	while (is_ident(peek(p, 0)))
		p->i++;
	pr.field = (struct span){ start, p->i - start };
	p->i = util_skip_space(p->s, p->len, p->i);
	ret = parse_op(p, &pr);
	if (ret)
		return ret;
	p->i = util_skip_space(p->s, p->len, p->i);
	ret = parse_value(p, &pr);
	if (!ret)
		ret = intern_name(p->f, p->s + start, pr.field.len, &pr.name);
	if (!ret && pr.op_code == OP_GLOB) {
		/* as the kernel: a leading '!' inverts the whole pattern */
		pr.glob_not = pr.str.len && p->s[pr.str.pos] == '!';
		pr.glob = (uint32_t)p->f->nglobs;
		ret = glob_compile(p->f, p->s + pr.str.pos + pr.glob_not,
				   pr.str.len - pr.glob_not);
		pr.nglob = (uint32_t)(p->f->nglobs - pr.glob);
	}
	if (!ret)
		ret = add_pred(p, &pr, out);
	return ret;
}

static int parse_chain(struct parser *p, unsigned depth, enum fnode_type t, uint32_t *out);

/* '(' expr ')' with the '(' at p->i */
static int parse_group(struct parser *p, unsigned depth, uint32_t *out)
{
	size_t open = p->i;
	int ret;

	p->i++;
	ret = parse_chain(p, depth, FN_OR, out);
	if (ret)
		return ret;
	p->i = util_skip_space(p->s, p->len, p->i);
	if (peek(p, 0) == ')') {
		p->i++;
		return 0;
	}
	if (p->i >= p->len)
		return filter_fail(p->err, TC_ERR_UNEXPECTED_END, open, 1,
				   "this '(' is never closed");
	return expect_error(p, "'&&', '||' or ')'");
}

static int parse_unary(struct parser *p, unsigned depth, uint32_t *out)
{
	uint32_t child;
	int ret;
	char c;

	p->i = util_skip_space(p->s, p->len, p->i);
	c = peek(p, 0);
	if ((c == '!' || c == '(') && depth >= FILTER_MAX_DEPTH)
		return filter_fail(p->err, TC_ERR_TOO_DEEP, p->i, 1,
				   "more than %d nested '(' or '!'", FILTER_MAX_DEPTH);
	if (c == '(')
		return parse_group(p, depth + 1, out);
	if (c != '!')
		return parse_pred(p, out);
	p->i++;
	ret = parse_unary(p, depth + 1, &child);
	if (!ret)
		ret = new_node(p, FN_NOT, child, out);
	return ret;
}

/* a chain of @t (FN_OR of && chains, FN_AND of unary terms) */
static int parse_chain(struct parser *p, unsigned depth, enum fnode_type t, uint32_t *out)
{
	const char *op = t == FN_OR ? "||" : "&&";
	uint32_t first, last, n;
	size_t count = 1;
	int ret;

	ret = t == FN_OR ? parse_chain(p, depth, FN_AND, &first)
			 : parse_unary(p, depth, &first);
	for (last = first; !ret; last = n, count++) {
		p->i = util_skip_space(p->s, p->len, p->i);
		if (peek(p, 0) != op[0] || peek(p, 1) != op[1])
			break;
		p->i += 2;
		ret = t == FN_OR ? parse_chain(p, depth, FN_AND, &n)
				 : parse_unary(p, depth, &n);
		if (!ret)
			p->f->nodes[last].next = n;
	}
	if (ret)
		return ret;
	if (count == 1) {
		*out = first;
		return 0;
	}
	return new_node(p, t, first, out);
}

static int parse_all(struct parser *p)
{
	int ret;

	p->i = util_skip_space(p->s, p->len, p->i);
	if (p->i >= p->len)
		return filter_fail(p->err, TC_ERR_SYNTAX, 0, 0, "empty filter");
	ret = parse_chain(p, 0, FN_OR, &p->f->root);
	if (ret)
		return ret;
	p->i = util_skip_space(p->s, p->len, p->i);
	if (p->i >= p->len)
		return 0;
	if (peek(p, 0) == ')')
		return filter_fail(p->err, TC_ERR_SYNTAX, p->i, 1, "unmatched ')'");
	return expect_error(p, "'&&' or '||'");
}

void filter_free(struct filter *f)
{
	size_t k;

	if (!f)
		return;
	for (k = 0; k < f->nnames; k++)
		free(f->names[k]);
	free(f->names);
	free(f->nodes);
	free(f->preds);
	free(f->globs);
	free(f->classes);
	free(f->cpus);
	free(f->bind);
	free(f->text);
	free(f);
}

int filter_parse(const char *text, struct filter **out, struct filter_error *err)
{
	struct parser p = { .s = text, .err = err };
	size_t n = strnlen(text, FILTER_MAX_LEN + 1);
	int ret;

	if (n > FILTER_MAX_LEN)
		return filter_fail(err, TC_ERR_TOO_LONG, FILTER_MAX_LEN, 1,
				   "filter longer than %d bytes", FILTER_MAX_LEN);
	p.len = n;
	p.f = calloc(1, sizeof(*p.f));
	if (!p.f || !(p.f->text = strndup(text, n))) {
		ret = filter_fail(err, -ENOMEM, 0, 0, "out of memory");
		goto out;
	}
	p.f->len = n;
	ret = parse_all(&p);
	if (ret == -ENOMEM)
		filter_fail(err, ret, 0, 0, "out of memory");
out:
	if (ret)
		filter_free(p.f);
	else
		*out = p.f;
	return ret;
}

/* ---- copies and accessors -------------------------------------------- */

static int dup_array(void **dst, const void *src, size_t n, size_t size)
{
	*dst = NULL;
	if (!n)
		return 0;
	*dst = malloc(n * size);
	if (!*dst)
		return -ENOMEM;
	memcpy(*dst, src, n * size);
	return 0;
}

static int dup_names(struct filter *d, const struct filter *f)
{
	if (dup_array((void **)&d->names, f->names, f->nnames, sizeof(*f->names)))
		return -ENOMEM;
	for (d->nnames = 0; d->nnames < f->nnames; d->nnames++) {
		d->names[d->nnames] = strdup(f->names[d->nnames]);
		if (!d->names[d->nnames])
			return -ENOMEM;
	}
	d->cap_names = d->nnames;
	return 0;
}

int filter_dup(const struct filter *f, struct filter **out)
{
	struct filter *d = calloc(1, sizeof(*d));
	int ret = -ENOMEM;

	if (!d)
		return -ENOMEM;
	*d = (struct filter){ .len = f->len, .root = f->root, .nnodes = f->nnodes,
			      .cap_nodes = f->nnodes, .npreds = f->npreds,
			      .cap_preds = f->npreds, .nglobs = f->nglobs,
			      .cap_globs = f->nglobs, .nclasses = f->nclasses,
			      .cap_classes = f->nclasses, .ncpus = f->ncpus,
			      .cap_cpus = f->ncpus };
	d->text = strdup(f->text);
	if (!d->text || dup_names(d, f) ||
	    dup_array((void **)&d->nodes, f->nodes, f->nnodes, sizeof(*f->nodes)) ||
	    dup_array((void **)&d->preds, f->preds, f->npreds, sizeof(*f->preds)) ||
	    dup_array((void **)&d->globs, f->globs, f->nglobs, sizeof(*f->globs)) ||
	    dup_array((void **)&d->classes, f->classes, f->nclasses, sizeof(*f->classes)) ||
	    dup_array((void **)&d->cpus, f->cpus, f->ncpus, sizeof(*f->cpus)))
		goto out;
	if (f->bind && dup_array((void **)&d->bind, f->bind, f->npreds, sizeof(*f->bind)))
		goto out;
	ret = 0;
out:
	if (ret)
		filter_free(d);
	else
		*out = d;
	return ret;
}

const char *filter_text(const struct filter *f)
{
	return f->text;
}

int filter_fields(const struct filter *f, const char *const **names, size_t *count)
{
	*names = (const char *const *)f->names;
	*count = f->nnames;
	return 0;
}

/* ---- binding ------------------------------------------------------------ */

static int resolve_field(const char *name, const struct filter_schema *schema,
			 struct fbind *b)
{
	size_t k;

	for (k = 0; k < schema->count; k++) {
		if (!strcmp(schema->fields[k].name, name)) {
			b->field = (int)k;
			b->kind = schema->fields[k].kind;
			b->bits = schema->fields[k].size;
			b->bits = b->bits && b->bits < 8 ? b->bits * 8 : 64;
			return 0;
		}
	}
	if (!strcmp(name, "CPU") || !strcmp(name, "cpu") || !strcmp(name, "common_cpu"))
		*b = (struct fbind){ .field = FILTER_FIELD_CPU, .kind = FILTER_UNSIGNED,
				     .bits = 32 };
	else if (!strcmp(name, "COMM") || !strcmp(name, "comm"))
		*b = (struct fbind){ .field = FILTER_FIELD_COMM, .kind = FILTER_STRING };
	else
		return TC_ERR_UNKNOWN_FIELD;
	return 0;
}

/* does the number read into @pr fit @b's width and signedness? */
static bool number_fits(const struct fpred *pr, struct fbind *b)
{
	uint64_t max = b->bits >= 64 ? UINT64_MAX : (UINT64_C(1) << b->bits) - 1;

	if (b->kind == FILTER_UNSIGNED) {
		b->num.u = pr->mag;
		return (!pr->neg || pr->mag == 0) && pr->mag <= max;
	}
	if (pr->op_code == OP_BAND && !pr->neg && pr->mag <= max) {
		b->num.u = pr->mag;	/* a mask may use the sign bit: prio & 0x80 */
		return true;
	}
	max >>= 1;		/* largest positive signed value */
	if (pr->neg ? pr->mag > max + 1 : pr->mag > max)
		return false;
	b->num.i = pr->neg ? (int64_t)(0 - pr->mag) : (int64_t)pr->mag;
	return true;
}

static int bind_number(const struct filter *f, const struct fpred *pr, struct fbind *b,
		       struct filter_error *err)
{
	const char *v = f->text + pr->value.pos, *name = f->names[pr->name];
	int vl = TOKLEN(pr->value.len);
	char c = *v;

	if (pr->op_code == OP_GLOB)
		return filter_fail(err, TC_ERR_TYPE_MISMATCH, pr->op.pos, pr->op.len,
				   "'~' needs a string field; '%s' is a number", name);
	if (pr->quoted)
		return filter_fail(err, TC_ERR_TYPE_MISMATCH, pr->value.pos, pr->value.len,
				   "'%s' is a number; compare it with a number, not a string",
				   name);
	if (pr->num == NUM_BAD && !(c >= '0' && c <= '9') && c != '-' && c != '+')
		return filter_fail(err, TC_ERR_TYPE_MISMATCH, pr->value.pos, pr->value.len,
				   "'%s' is a number; '%.*s' is not", name, vl, v);
	if (pr->num == NUM_BAD)
		return filter_fail(err, TC_ERR_BAD_NUMBER, pr->value.pos, pr->value.len,
				   "invalid number '%.*s'", vl, v);
	if (pr->num == NUM_RANGE || !number_fits(pr, b))
		return filter_fail(err, TC_ERR_BAD_NUMBER, pr->value.pos, pr->value.len,
				   "'%.*s' is out of range for %s %u-bit field '%s'", vl, v,
				   b->kind == FILTER_SIGNED ? "signed" : "unsigned", b->bits,
				   name);
	return 0;
}

/* "unknown field 'x'", with the closest names @schema has (and CPU, COMM). */
static int unknown_field(const struct fpred *pr, const char *name,
			 const struct filter_schema *schema, struct filter_error *err)
{
	char hint[SUGGEST_MAX * (SUGGEST_NAME_MAX + 4) + 32];
	struct suggest sg;

	suggest_init(&sg, name, strlen(name));
	for (size_t k = 0; k < schema->count; k++)
		suggest_add(&sg, schema->fields[k].name);
	suggest_add(&sg, "CPU");
	suggest_add(&sg, "COMM");
	suggest_format(&sg, hint, sizeof(hint));
	return filter_fail(err, TC_ERR_UNKNOWN_FIELD, pr->field.pos, pr->field.len,
			   "unknown field '%.*s'%s", TOKLEN(pr->field.len), name, hint);
}

static int bind_pred(const struct filter *f, const struct fpred *pr,
		     const struct filter_schema *schema, struct fbind *b,
		     struct filter_error *err)
{
	const char *name = f->names[pr->name];

	if (resolve_field(name, schema, b))
		return unknown_field(pr, name, schema, err);
	if (pr->is_cpus && b->kind == FILTER_STRING)
		return filter_fail(err, TC_ERR_TYPE_MISMATCH, pr->value.pos, pr->value.len,
				   "CPUS{} needs a CPU number field; '%s' is a string", name);
	if (pr->is_cpus && pr->op_code != OP_EQ && pr->op_code != OP_NE &&
	    pr->op_code != OP_BAND)
		return filter_fail(err, TC_ERR_TYPE_MISMATCH, pr->op.pos, pr->op.len,
				   "'%s' does not apply to CPUS{} (use & == !=)",
				   op_names[pr->op_code]);
	if (pr->is_cpus)
		return 0;
	if (b->kind != FILTER_STRING)
		return bind_number(f, pr, b, err);
	if (pr->op_code != OP_EQ && pr->op_code != OP_NE && pr->op_code != OP_GLOB)
		return filter_fail(err, TC_ERR_TYPE_MISMATCH, pr->op.pos, pr->op.len,
				   "'%s' does not apply to string field '%s' (use == != ~)",
				   op_names[pr->op_code], name);
	/* a bare number for a string: almost always a mistake, never an empty answer */
	if (!pr->quoted && pr->num != NUM_BAD)
		return filter_fail(err, TC_ERR_TYPE_MISMATCH, pr->value.pos, pr->value.len,
				   "'%s' is a string and %.*s a number: to compare with the text, "
				   "quote it (\"%.*s\")", name, TOKLEN(pr->value.len),
				   f->text + pr->value.pos, TOKLEN(pr->value.len),
				   f->text + pr->value.pos);
	return 0;
}

int filter_bind(struct filter *f, const struct filter_schema *schema,
		struct filter_error *err)
{
	struct fbind *b = calloc(f->npreds ? f->npreds : 1, sizeof(*b));
	size_t k;
	int ret = 0;

	if (!b)
		return filter_fail(err, -ENOMEM, 0, 0, "out of memory");
	for (k = 0; k < f->npreds && !ret; k++)
		ret = bind_pred(f, &f->preds[k], schema, &b[k], err);
	if (ret) {
		free(b);
		return ret;
	}
	free(f->bind);
	f->bind = b;
	return 0;
}

bool filter_uses_field(const struct filter *f, int field_index)
{
	for (size_t k = 0; f->bind && k < f->npreds; k++)
		if (f->bind[k].field == field_index)
			return true;
	return false;
}

/* ---- evaluation --------------------------------------------------------- */

static int cmp_result(enum fop op, int cmp)
{
	switch (op) {
	case OP_EQ:
		return cmp == 0;
	case OP_NE:
		return cmp != 0;
	case OP_LT:
		return cmp < 0;
	case OP_LE:
		return cmp <= 0;
	case OP_GT:
		return cmp > 0;
	default:
		return cmp >= 0;
	}
}

static int eval_number(const struct fpred *pr, const struct fbind *b,
		       const struct filter_value *v)
{
	uint64_t u = v->kind == FILTER_SIGNED ? (uint64_t)v->i : v->u;
	int64_t i = (int64_t)u;
	int cmp;

	if (pr->op_code == OP_BAND)
		return (u & b->num.u) != 0;
	if (b->kind == FILTER_SIGNED)
		cmp = i < b->num.i ? -1 : i > b->num.i;
	else
		cmp = u < b->num.u ? -1 : u > b->num.u;
	return cmp_result(pr->op_code, cmp);
}

/*
 * A CPU number against CPUS{list}, as the kernel: '&' is membership; a
 * list of one CPU '==' that CPU; a longer list never equals one number.
 */
static int eval_cpus(const struct filter *f, const struct fpred *pr, uint64_t cpu)
{
	const struct filter_cpu_range *r = f->cpus + pr->cpus;
	bool in = false, one = pr->ncpus == 1 && r[0].lo == r[0].hi;
	uint32_t k;

	for (k = 0; k < pr->ncpus && !in; k++)
		in = cpu >= r[k].lo && cpu <= r[k].hi;
	if (pr->op_code == OP_BAND)
		return in;
	return (pr->op_code == OP_EQ) == (one && in);
}

static int eval_string(const struct filter *f, const struct fpred *pr,
		       const struct filter_value *v)
{
	const char *nul = v->str.len ? memchr(v->str.s, '\0', v->str.len) : NULL;
	size_t n = nul ? (size_t)(nul - v->str.s) : v->str.len;
	bool eq;

	if (pr->op_code == OP_GLOB)
		return glob_match(f, pr, (const unsigned char *)v->str.s, n) != pr->glob_not;
	eq = n == pr->str.len && (!n || !memcmp(v->str.s, f->text + pr->str.pos, n));
	return pr->op_code == OP_EQ ? eq : !eq;
}

static int eval_pred(const struct filter *f, uint32_t k, filter_get_fn get, void *ctx)
{
	const struct fbind *b = &f->bind[k];
	struct filter_value v;
	int ret;

	memset(&v, 0, sizeof(v));
	ret = get(ctx, b->field, &v);
	if (ret < 0)
		return ret;
	if ((b->kind == FILTER_STRING) != (v.kind == FILTER_STRING))
		return TC_ERR_TYPE_MISMATCH;
	if (b->kind == FILTER_STRING)
		return eval_string(f, &f->preds[k], &v);
	if (f->preds[k].is_cpus)
		return eval_cpus(f, &f->preds[k], v.kind == FILTER_SIGNED ? (uint64_t)v.i : v.u);
	return eval_number(&f->preds[k], b, &v);
}

static int eval_node(const struct filter *f, uint32_t n, filter_get_fn get, void *ctx)
{
	const struct fnode *node = &f->nodes[n];
	uint32_t c;
	int r;

	switch (node->type) {
	case FN_PRED:
		return eval_pred(f, node->arg, get, ctx);
	case FN_NOT:
		r = eval_node(f, node->arg, get, ctx);
		return r < 0 ? r : !r;
	case FN_AND:
		for (c = node->arg; c != NONE; c = f->nodes[c].next)
			if ((r = eval_node(f, c, get, ctx)) <= 0)
				return r;
		return 1;
	default:
		for (c = node->arg; c != NONE; c = f->nodes[c].next)
			if ((r = eval_node(f, c, get, ctx)) != 0)
				return r;
		return 0;
	}
}

int filter_eval(const struct filter *f, filter_get_fn get, void *ctx)
{
	if (!f->bind)
		return -EINVAL;
	return eval_node(f, f->root, get, ctx);
}

/* ---- reading a bound filter ------------------------------------------- */

int filter_root(const struct filter *f, uint32_t *root)
{
	if (!f->bind)
		return -EINVAL;
	*root = f->root;
	return 0;
}

static void pred_view(const struct filter *f, uint32_t k, struct filter_pred *out)
{
	const struct fpred *pr = &f->preds[k];
	const struct fbind *b = &f->bind[k];

	out->field = b->field;
	out->kind = b->kind;
	out->bits = b->bits;
	out->op = (enum filter_op)pr->op_code;
	out->num.u = b->num.u;
	out->str = f->text + pr->str.pos;
	out->len = pr->str.len;
	out->nglob = pr->nglob;
	out->glob_not = pr->glob_not;
	out->is_cpus = pr->is_cpus;
	out->cpus = pr->ncpus ? f->cpus + pr->cpus : NULL;
	out->ncpus = pr->ncpus;
}

void filter_node_get(const struct filter *f, uint32_t n, struct filter_node *out)
{
	const struct fnode *node = &f->nodes[n];

	memset(out, 0, sizeof(*out));
	out->type = (enum filter_node_type)node->type;
	out->next = node->next;
	out->child = node->type == FN_PRED ? NONE : node->arg;
	if (node->type == FN_PRED)
		pred_view(f, node->arg, &out->pred);
}

void filter_node_glob(const struct filter *f, uint32_t n, size_t k,
		      struct filter_glob_elem *out)
{
	const struct fpred *pr = &f->preds[f->nodes[n].arg];
	const struct glob_elem *e = &f->globs[pr->glob + k];

	memset(out, 0, sizeof(*out));
	out->type = (enum filter_glob_type)e->type;
	out->c = e->c;
	if (e->type == G_CLASS) {
		memcpy(out->set, f->classes[e->cls].set, sizeof(out->set));
		out->neg = f->classes[e->cls].neg;
	}
}

/* ---- error messages ------------------------------------------------------- */

struct out {
	char *buf;
	size_t len;
	size_t n;
};

static void out_putc(struct out *o, char c)
{
	if (o->n + 1 < o->len)
		o->buf[o->n] = c;
	o->n++;
}

static void out_puts(struct out *o, const char *s)
{
	while (*s)
		out_putc(o, *s++);
}

/* a UTF-8 continuation byte takes no column of its own */
static bool is_cont(char c)
{
	return ((unsigned char)c & 0xc0) == 0x80;
}

int filter_error_format(const char *input, const struct filter_error *e,
			char *buf, size_t len)
{
	struct out o = { buf, len, 0 };
	size_t n = strlen(input), pos = e->pos < n ? e->pos : n, k, cols = 0;
	size_t end = e->len < n - pos ? pos + e->len : n;

	out_puts(&o, "error: ");
	out_puts(&o, e->msg);
	out_puts(&o, "\n  ");
	for (k = 0; k < n; k++)
		out_putc(&o, input[k] == '\t' ? '\t' :
			     ((unsigned char)input[k] < 0x20 || input[k] == 0x7f) ? ' ' :
			     input[k]);
	out_puts(&o, "\n  ");
	for (k = 0; k < pos; k++)
		if (!is_cont(input[k]))
			out_putc(&o, input[k] == '\t' ? '\t' : ' ');
	for (k = pos; k < end; k++)
		cols += !is_cont(input[k]);
	out_putc(&o, '^');
	for (k = 1; k < cols; k++)
		out_putc(&o, '~');
	out_putc(&o, '\n');
	if (len)
		buf[o.n < len ? o.n : len - 1] = '\0';
	return (int)o.n;
}
