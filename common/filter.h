/*
 * filter.h - the kernel's event-filter language: parse, type-check against an
 * event's fields, evaluate on one event, and walk the bound tree (which is
 * how a storage backend in server/store/ compiles a filter to its own
 * query language).
 *
 * Grammar (the kernel's, Documentation/trace/events.rst "Event filtering"):
 *
 *   expr  := and ( "||" and )*            && binds tighter than ||
 *   and   := unary ( "&&" unary )*
 *   unary := "!" unary | "(" expr ")" | pred
 *   pred  := FIELD OP VALUE
 *   FIELD := [A-Za-z_][A-Za-z0-9_]*
 *   OP    := == != < <= > >= &            numeric fields
 *            == != ~                      string fields (~ is a glob)
 *   VALUE := "..." | '...' | bare word    no escapes inside quotes; a bare
 *                                         word runs to whitespace, ( ) & | or
 *                                         a quote
 *
 * Decisions (compatible with the kernel unless said otherwise):
 * - Numbers are read like the kernel's kstrto*ll(base 0): optional sign,
 *   "0x" hex, a leading "0" means octal, otherwise decimal.  A number must
 *   fit the field's width and signedness (the kernel does not check; we
 *   reject, e.g. a negative value for an unsigned field).  A mask for `&`
 *   on a signed field may also be written unsigned: `prio & 0x80` for an
 *   8-bit prio tests its sign bit.
 * - For a string field a bare word is a string (`comm == bash`), but a bare
 *   number is a type error (the kernel compares it as the text): `prev_comm
 *   == 5` is a mistake more often than a search for a task named "5", and an
 *   empty answer hides it. Quoted, `comm == "123"` compares the text. A
 *   quoted value for a numeric field is a type error too.
 * - Errors name what was meant where they can: an unknown operator that
 *   means a known one (`=` -> `==`, `=>` -> `>=`, `<>` -> `!=`), an unknown
 *   field with the event's closest names (common/suggest.h).
 * - Globs (~) follow the kernel's glob_match(): '*', '?', classes "[abc]",
 *   ranges "[a-z]", negation "[!abc]", ']' first in a class is literal,
 *   a '[' without a closing ']' is a literal '[', and '\' makes the next
 *   character literal outside classes.  As the kernel's
 *   filter does, a leading '!' in the pattern inverts it: `comm ~ "!k*"`
 *   matches every comm not starting with k.
 * - CPUS{list} (current kernels' cpulist, e.g. CPUS{0-3,7}) compares a
 *   numeric CPU field or CPU: `&` is membership, `==` holds only for a
 *   list of exactly that one CPU, `!=` is its negation; other operators
 *   and string fields are type errors.  CPUs go up to 65535.
 * - Strings compare as bytes up to the first NUL or the given length, so a
 *   getter may hand over a fixed char[16] as is.
 * - Field lookup is the kernel's: the event's own fields first, then the
 *   generic CPU, cpu, common_cpu (FILTER_FIELD_CPU, unsigned) and COMM, comm
 *   (FILTER_FIELD_COMM, string).
 * - ".ustring" and the other field suffixes are not supported (syntax error).
 * - Limits: FILTER_MAX_LEN bytes of text, FILTER_MAX_DEPTH nested '(' / '!'.
 *
 * Every error names the offending token by byte offset and length in the
 * input, so filter_error_format() can put a caret under it.
 *
 * Thread safety: a parsed filter is immutable except for filter_bind(); a
 * bound filter may be evaluated from many threads at once.
 */
#ifndef TC_FILTER_H
#define TC_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FILTER_MAX_LEN		4096	/* bytes of filter text */
#define FILTER_MAX_DEPTH	32	/* nested parentheses and '!' */

/* field indexes of the generic fields every event has */
#define FILTER_FIELD_CPU	(-1)
#define FILTER_FIELD_COMM	(-2)

struct filter;

/*
 * struct filter_error - why parsing, binding or query parsing failed.
 * @code: the TC_ERR_* (or -errno) that was also returned.
 * @pos:  byte offset of the offending token in the text that was parsed
 *        (for query_parse(): in the whole query text).
 * @len:  its length in bytes; 0 means "at this point" (e.g. end of input).
 * @msg:  a one-line description naming the token, without "error: ".
 */
struct filter_error {
	int code;
	size_t pos;
	size_t len;
	char msg[160];
};

/*
 * filter_fail - fill @err (when not NULL) with @code, the token at @pos of
 * @len bytes and the message @fmt; the one error helper of the text
 * parsers (filter, query, hist). Return: @code.
 */
int filter_fail(struct filter_error *err, int code, size_t pos, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

enum filter_kind {
	FILTER_SIGNED,
	FILTER_UNSIGNED,
	FILTER_STRING,
};

/*
 * struct filter_field - one field of an event as the filter sees it.
 * @name: as in the event's format file (common_pid, prev_comm, ...).
 * @kind: signed or unsigned integer, or string (char arrays, __data_loc).
 * @size: width in bytes for integers (1, 2, 4, 8); 0 or more than 8 counts
 *        as 8.  Ignored for strings.
 */
struct filter_field {
	const char *name;
	enum filter_kind kind;
	unsigned size;
};

/* struct filter_schema - the fields of one event, indexed 0..count-1. */
struct filter_schema {
	const struct filter_field *fields;
	size_t count;
};

/*
 * filter_parse - parse filter text into an unbound filter.
 * @text: NUL-terminated filter text; at most FILTER_MAX_LEN bytes.
 * @out:  receives the filter on success; the caller frees it with
 *        filter_free().  Untouched on failure.
 * @err:  on failure, where and why (may be NULL).
 *
 * Parsing needs no schema: names, operators and constants are checked
 * against field types by filter_bind().
 *
 * Return: 0 on success; TC_ERR_SYNTAX (unexpected token, unmatched paren,
 * empty filter), TC_ERR_UNEXPECTED_END (input ends inside an expression),
 * TC_ERR_UNTERMINATED (string without closing quote), TC_ERR_BAD_OPERATOR,
 * TC_ERR_TOO_DEEP, TC_ERR_TOO_LONG, -ENOMEM.
 */
int filter_parse(const char *text, struct filter **out, struct filter_error *err);

/* filter_free - free a filter from filter_parse() or filter_dup(); NULL ok. */
void filter_free(struct filter *f);

/*
 * filter_dup - copy a filter, including its binding if it has one.
 * @f:   the filter to copy.
 * @out: receives the copy (caller frees it); untouched on failure.
 *
 * Useful for a subsystem filter: one copy per event, each bound to that
 * event's schema.
 *
 * Return: 0 or -ENOMEM.
 */
int filter_dup(const struct filter *f, struct filter **out);

/* filter_text - the text @f was parsed from; owned by @f. */
const char *filter_text(const struct filter *f);

/*
 * filter_bind - resolve field names and type-check against one event.
 * @f:      a parsed filter; may have been bound before (to any schema).
 * @schema: the event's fields; must stay valid only during the call (the
 *          filter keeps indexes, kinds and sizes, not pointers).
 * @err:    on failure, the offending token (may be NULL).
 *
 * Each name resolves to an index into @schema->fields, or to
 * FILTER_FIELD_CPU / FILTER_FIELD_COMM (see the header comment).  Each
 * predicate's operator and constant are checked against the field's kind,
 * width and signedness.  On failure the previous binding (if any) is kept
 * unchanged.
 *
 * Return: 0 on success; TC_ERR_UNKNOWN_FIELD (pointing at the name; for a
 * subsystem filter this means "this event keeps its own filter"),
 * TC_ERR_TYPE_MISMATCH (operator not valid for the field, or a string
 * constant for a numeric field; pointing at the operator or value),
 * TC_ERR_BAD_NUMBER (malformed or out-of-range number, pointing at it),
 * -ENOMEM.
 */
int filter_bind(struct filter *f, const struct filter_schema *schema,
		struct filter_error *err);

/*
 * filter_fields - the distinct field names @f mentions, in order of first
 * appearance, as written (CPU and COMM included).
 * @f:     a parsed filter.
 * @names: receives an array of @count NUL-terminated names owned by @f,
 *         valid until filter_free().
 * @count: receives the number of names.
 *
 * filter_bind() is the authoritative "does this event have every field"
 * check; this list serves messages and quick pre-checks.
 *
 * Return: 0.
 */
int filter_fields(const struct filter *f, const char *const **names, size_t *count);

/*
 * filter_uses_field - whether bound filter @f reads field @field_index (a
 * schema index or FILTER_FIELD_CPU / FILTER_FIELD_COMM) in any predicate.
 * Return: true or false; false for a filter that is not bound.
 */
bool filter_uses_field(const struct filter *f, int field_index);

/*
 * struct filter_value - one field value of one event, from the getter.
 * Integers: @i for FILTER_SIGNED, @u for FILTER_UNSIGNED.  Strings: @str.s
 * need not be NUL-terminated; comparison stops at @str.len or the first NUL.
 */
struct filter_value {
	enum filter_kind kind;
	union {
		int64_t i;
		uint64_t u;
		struct {
			const char *s;
			size_t len;
		} str;
	};
};

/*
 * filter_get_fn - supply the value of field @field_index (a schema index or
 * FILTER_FIELD_CPU / FILTER_FIELD_COMM) of the event being evaluated.
 * Return 0, or a negative code that filter_eval() passes back.  A numeric
 * value of the other signedness is reinterpreted; a string where a number is
 * expected (or the reverse) makes filter_eval() fail.
 */
typedef int (*filter_get_fn)(void *ctx, int field_index, struct filter_value *out);

/*
 * filter_eval - evaluate a bound filter on one event.
 * @f:   a filter bound with filter_bind().
 * @get: called for the fields the evaluation needs (&& and || short-circuit,
 *       so not necessarily for all of them).
 * @ctx: passed to @get.
 *
 * Context: any thread; does not allocate.
 * Return: 1 if the event matches, 0 if not; -EINVAL if @f is not bound,
 * TC_ERR_TYPE_MISMATCH if @get returned the wrong kind of value, or the
 * getter's own negative code.
 */
int filter_eval(const struct filter *f, filter_get_fn get, void *ctx);

/* ---- reading a bound filter ------------------------------------------------
 *
 * A storage backend compiles a bound filter to its own query language by
 * walking it: filter_root(), then filter_node_get() for each node and
 * filter_node_glob() for the elements of a glob. && and || nodes list any
 * number of operands; the tree is only as deep as the text's '(' and '!'
 * nesting (at most FILTER_MAX_DEPTH). Node numbers, and what a view points
 * to, stay valid until @f is bound again or freed.
 */

enum filter_op {
	FILTER_OP_EQ,
	FILTER_OP_NE,
	FILTER_OP_LT,
	FILTER_OP_LE,
	FILTER_OP_GT,
	FILTER_OP_GE,
	FILTER_OP_BAND,		/* &: a bit of the mask is set (CPUS{}: membership) */
	FILTER_OP_GLOB,		/* ~ */
};

enum filter_node_type {
	FILTER_NODE_PRED,	/* one FIELD OP VALUE */
	FILTER_NODE_AND,	/* every operand holds */
	FILTER_NODE_OR,		/* some operand holds */
	FILTER_NODE_NOT,	/* the operand does not hold */
};

#define FILTER_NODE_NONE	UINT32_MAX

/* one range of a CPUS{list}: CPUs lo..hi, inclusive */
struct filter_cpu_range {
	uint32_t lo, hi;
};

/*
 * struct filter_pred - one predicate, as bound.
 * @field:  a schema index, FILTER_FIELD_CPU or FILTER_FIELD_COMM.
 * @kind:   the field's kind.
 * @bits:   an integer field's width in bits (8 to 64).
 * @op:     the operator.
 * @num:    integer fields, unless @is_cpus: the constant, @i for a signed
 *          field, @u for an unsigned one and for a mask (&) of a signed
 *          field (the kernel's `prio & 0x80`).
 * @str, @len: string fields, == and !=: the constant's bytes (not
 *          NUL-terminated; owned by the filter).
 * @nglob:  FILTER_OP_GLOB: the pattern's elements (filter_node_glob()).
 * @glob_not: FILTER_OP_GLOB: the kernel's leading '!' ("~ \"!k*\""): the
 *          predicate holds where the pattern does not match.
 * @is_cpus: the constant is CPUS{list}, whose @ncpus ranges are @cpus
 *          (see the header comment for what each operator means).
 */
struct filter_pred {
	int field;
	enum filter_kind kind;
	unsigned bits;
	enum filter_op op;
	union {
		int64_t i;
		uint64_t u;
	} num;
	const char *str;
	size_t len;
	size_t nglob;
	bool glob_not;
	bool is_cpus;
	const struct filter_cpu_range *cpus;
	size_t ncpus;
};

/*
 * struct filter_node - one node of a bound filter.
 * @child: FILTER_NODE_AND and _OR: the first operand; _NOT: the operand.
 * @next:  the next operand of the AND or OR this node is one of;
 *         FILTER_NODE_NONE after the last (and for the root).
 * @pred:  FILTER_NODE_PRED: the predicate.
 */
struct filter_node {
	enum filter_node_type type;
	uint32_t child;
	uint32_t next;
	struct filter_pred pred;
};

/* filter_root - the root node of @f. Return: 0; -EINVAL if @f is not bound. */
int filter_root(const struct filter *f, uint32_t *root);

/* filter_node_get - node @n (from filter_root() or another node) of bound @f. */
void filter_node_get(const struct filter *f, uint32_t n, struct filter_node *out);

enum filter_glob_type {
	FILTER_GLOB_LITERAL,	/* the byte @c */
	FILTER_GLOB_ANY,	/* '?': any one byte */
	FILTER_GLOB_STAR,	/* '*': any bytes (never two in a row) */
	FILTER_GLOB_CLASS,	/* "[...]": one byte of the class */
};

/*
 * struct filter_glob_elem - one element of a glob pattern as matched:
 * escapes resolved, a '[' without its ']' a literal.
 * @set: FILTER_GLOB_CLASS: the bytes listed, byte x as bit x % 64 of
 *       set[x / 64] (byte 0 never).
 * @neg: FILTER_GLOB_CLASS: "[!...]", which matches the bytes not listed.
 */
struct filter_glob_elem {
	enum filter_glob_type type;
	unsigned char c;
	uint64_t set[4];
	bool neg;
};

/*
 * filter_node_glob - element @k (below pred.nglob) of the pattern of the
 * FILTER_OP_GLOB predicate at node @n of bound @f.
 */
void filter_node_glob(const struct filter *f, uint32_t n, size_t k,
		      struct filter_glob_elem *out);

/*
 * filter_error_format - render an error for the user:
 *   "error: <msg>\n  <input>\n  <spaces>^~~~\n"
 * @input: the text that was parsed (control characters are shown as
 *         spaces; tabs are kept so the caret lines up).
 * @e:     the error; the caret spans e->len bytes (at least one '^').
 * @buf:   output, always NUL-terminated if @len > 0.
 * @len:   size of @buf.
 *
 * Return: the length of the full message like snprintf(); a value >= @len
 * means it was truncated.
 */
int filter_error_format(const char *input, const struct filter_error *e,
			char *buf, size_t len);

#endif
