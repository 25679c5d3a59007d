/*
 * symbols.h - the text of MSG_SYMBOLS: one function symbol a line,
 *
 *     ADDR SIZE NAME\n
 *     ADDR SIZE NAME MODULE\n
 *
 * ADDR and SIZE in lower-case hex without "0x" (1..16 digits), NAME 1 to
 * PROTO_SYM_MAX_NAME bytes of printable ASCII without spaces; MODULE, only
 * to a collector whose WELCOME said sym_modules, the kernel module the
 * symbol belongs to (kallsyms' "[MODULE]" column without its brackets, 1
 * to PROTO_SYM_MAX_MODULE bytes of the same alphabet); absent: none. The agent
 * writes it (proto_sym_append), the collector parses it (proto_sym_parse)
 * and treats it as hostile. Prefix proto_sym_.
 */
#ifndef PROTO_SYMBOLS_H
#define PROTO_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"

#define PROTO_SYM_MAX_NAME	511	/* bytes; longer names are cut by the agent */
#define PROTO_SYM_MAX_MODULE	63	/* bytes; the kernel's MODULE_NAME_LEN is 56 */
#define PROTO_SYM_CHUNK		(PROTO_MAX_STRING - 1024)	/* text per message */

struct proto_sym {
	uint64_t addr;
	uint64_t size;
	const char *name;	/* NUL-terminated */
	size_t name_len;
	const char *module;	/* NUL-terminated; NULL: none (not a module's) */
};

/*
 * proto_sym_append - append @sym's line to @b, with @module (NULL or "":
 * none) as its fourth field. A name longer than PROTO_SYM_MAX_NAME, a
 * module longer than PROTO_SYM_MAX_MODULE, is cut; bytes outside
 * '!'..'~' become '?'.
 * Return: 0; -ENOMEM; -EINVAL for an empty name.
 */
int proto_sym_append(struct proto_buf *b, uint64_t addr, uint64_t size, const char *name,
		     const char *module);

/*
 * proto_sym_parse - call @fn for each line of @text[0..@len). The name
 * @fn sees points into a buffer of the parser's, valid during the call.
 * Every line must be complete (end in '\n'); an empty text is fine.
 *
 * Return: 0; TC_ERR_MSG_MALFORMED at the first bad line (*@bad_line, if
 * not NULL, gets its number, from 1); or @fn's nonzero return, which
 * stops the walk.
 */
int proto_sym_parse(const char *text, size_t len,
		    int (*fn)(void *ctx, const struct proto_sym *sym), void *ctx,
		    size_t *bad_line);

/*
 * proto_sym_kallsyms_line - one NUL-ended line of /proc/kallsyms (also a
 * trace.dat's kallsyms): for a text symbol (type t, T, w or W) its
 * address into *@addr, its name into @name[PROTO_SYM_MAX_NAME + 1] and
 * its module column into @mod[PROTO_SYM_MAX_MODULE + 1] ("[MODULE]"
 * without the brackets, cut to PROTO_SYM_MAX_MODULE bytes; "" when there
 * is none, nor a closing bracket).
 * Return: true for a text symbol; false for any other line.
 */
bool proto_sym_kallsyms_line(const char *line, uint64_t *addr, char *name, char *mod);

/*
 * proto_sym_format - "NAME" when @off is 0, else "NAME+0xOFF", into
 * @buf[@len] (cut to fit, always NUL-terminated when @len > 0).
 */
void proto_sym_format(char *buf, size_t len, const char *name, uint64_t off);

/*
 * proto_sym_format_sized - the kernel's %pS (sprint_symbol()):
 * "NAME+0xOFF/0xSIZE", the offset always (+0x0 too); "NAME+0xOFF" when
 * @size is 0 (not known); then " [MODULE]" for a module's symbol (@module
 * not NULL nor ""). Into @buf[@len] as proto_sym_format().
 */
void proto_sym_format_sized(char *buf, size_t len, const char *name, uint64_t off,
			    uint64_t size, const char *module);

#endif
