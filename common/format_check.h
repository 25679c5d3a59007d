/*
 * format_check.h - bounds on an event format text from a peer, checked
 * before libtraceevent sees it: the collector checks an agent's formats
 * (server/ingest/decode.c), traceq the formats a collector sends it with rows
 * (traceq/render.c), so it lives in common/ (libc only).
 *
 * libtraceevent parses a format's print-fmt arguments by recursive descent
 * (process_arg -> process_arg_token -> process_paren / process_op /
 * process_cond / process_array, and typecasts back into process_paren),
 * and frees and evaluates the argument tree it builds recursively too. Its
 * depth follows the text: 100,000 nested parentheses, 30,000 unary `!`,
 * 70,000 `+1` terms or 100,000 `?:` overflow a thread's stack. An agent
 * sends the text (MSG_FORMAT), so the collector bounds it first, with one
 * linear scan that keeps no recursion of its own: see format_check().
 *
 * The caps sit far above what real kernels write (proto/PROTOCOL.md gives
 * the maxima of the 2,323 formats of a 6.18 kernel next to them) and far
 * below what the recursion needs to hurt: a text within every cap parses
 * in well under 1 MiB of stack (tests/test_format.c checks that in a
 * thread with a 1 MiB stack).
 */
#ifndef COMMON_FORMAT_CHECK_H
#define COMMON_FORMAT_CHECK_H

#include <stddef.h>

/* Bytes in one format text (the largest real one: 5,523). */
#define FORMAT_MAX_LEN		65536
/* Open ( [ { at once (real: 14, the gfp flags of dma_alloc_sgt). */
#define FORMAT_MAX_DEPTH	128
/*
 * Operators in one term: one comma-separated argument at one nesting
 * level, not counting what nests inside it. Every operator character
 * counts (`<<` and `->` count two), so do a `[` index and a typecast
 * (a parenthesised group followed by an operand). Real: 11.
 */
#define FORMAT_MAX_OPS		96
/*
 * The nesting estimate: open levels, plus the operators pending in each
 * open level, plus the height of the groups already closed in each: what
 * the parser keeps on its stack, and how deep the tree it builds is.
 * Real: 53.
 */
#define FORMAT_MAX_NEST		512
/* Adjacent words (`unsigned long long`, one atom to libtraceevent). Real: 4. */
#define FORMAT_MAX_WORDS	32
/*
 * Tokens from one ';' to the next before the print fmt: a field line,
 * whose type, [ ] and __attribute__ libtraceevent appends token by token
 * in quadratic time. Real: 13 (the name and ID lines with the first field).
 */
#define FORMAT_MAX_FIELD_TOKENS	96

/*
 * Fields in one format, common ones included (real: 24): format_check()
 * keeps their names to check the print fmt's `REC->NAME` against them.
 */
#define FORMAT_MAX_FIELDS	256

/* What one text reached, each counted as its cap is (see above). */
struct format_stats {
	size_t len;
	unsigned depth;
	unsigned ops;
	unsigned nest;
	unsigned words;
};

/*
 * format_check - check an event format's text against the FORMAT_MAX_*
 * caps before it is parsed.
 * @text, @len: the format, as the agent sent it (not NUL-terminated).
 * @stats:      if not NULL, receives the maxima the text reached (only on
 *              success).
 * @err, @errlen: if not NULL, receives on failure which cap the text
 *              exceeds and at which byte (no byte of the text is copied).
 *
 * The whole text is scanned, the name/ID/field lines as well as the print
 * fmt, with libtraceevent's lexing rules for string and character
 * literals: what is inside "..." or '...' counts for nothing, and a
 * literal ends wherever libtraceevent ends it (its closing quote, an
 * unprintable byte, the end), so nothing it parses as code escapes the
 * count. A `;` ends every term, since the print fmt's parser stops at one.
 * Linear in @len, no allocation, no recursion.
 *
 * The print fmt's arguments are checked for the shapes libtraceevent 1.7's
 * print-argument parser dereferences NULL on (traceq parses them): a
 * `REC->NAME` where the format declares no field NAME (fatal after any
 * __print_flags() or __print_symbolic(), through a global flag), and an
 * operator it has no priority for (`[`, `.`, `=`, `;`...) right after an
 * index `x[i]` or after a `:` in the same argument.
 *
 * Return: 0; TC_ERR_FORMAT_LIMIT when a cap is exceeded (FORMAT_MAX_FIELDS
 * included); TC_ERR_FORMAT_PARSE for a byte that is neither printable
 * ASCII nor a space, or a ( [ { still open at the end (libtraceevent 1.7
 * crashes on either after a field's '['), or a field whose type is one
 * word (it leaks the word, or crashes when that is __attribute__), or one
 * of the print-argument shapes above.
 */
int format_check(const char *text, size_t len, struct format_stats *stats,
		 char *err, size_t errlen);

/*
 * format_print_start - where the print fmt's format string begins.
 * @text, @len: an event format.
 *
 * The collector decodes fields and never prints an event, so it hands
 * libtraceevent the text up to here followed by an empty format string:
 * the print fmt's arguments, whose parser is where libtraceevent 1.7
 * recurses and where it dereferences NULL on some inputs (an index chain
 * `x[0][0]`, an unknown operator after `?:` or `]`, __print_flags() of an
 * unknown field: format_check() refuses the ones known, for traceq's
 * sake), are never parsed. The offset is that of the first '"'
 * literal after the tokens `print fmt :`, lexed as format_check() lexes,
 * so it is never later than where libtraceevent would start reading them.
 *
 * Return: the offset of that '"'; @len when there is none (libtraceevent
 * then finds no print fmt either).
 */
size_t format_print_start(const char *text, size_t len);

#endif
