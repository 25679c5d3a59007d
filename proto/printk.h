/*
 * printk.h - the text of MSG_PRINTK: the kernel's tracefs printk_formats,
 * one string a line, as the kernel writes it:
 *
 *     0xADDR : "FORMAT"\n
 *
 * ADDR 1 to 16 hex digits; FORMAT (quotes included) 1 to
 * PROTO_PRINTK_MAX_FMT bytes, none of them a control character (the
 * kernel writes \n, \t, \" as escapes). These are the strings that
 * trace_printk() events (ftrace:bprint, bputs) and tracepoint_string()
 * pointers (e.g. rcu:rcu_utilization's "%s" of a const char *) point at;
 * libtraceevent prints them by address (tep_register_print_string). The
 * agent cuts the file into messages of whole lines (proto_printk_chunk),
 * the collector parses them (proto_printk_parse) and treats them as
 * hostile. Prefix proto_printk_.
 */
#ifndef PROTO_PRINTK_H
#define PROTO_PRINTK_H

#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"

#define PROTO_PRINTK_MAX_FMT	4096	/* bytes of one FORMAT, quotes included */
#define PROTO_PRINTK_CHUNK	(PROTO_MAX_STRING - 1024)	/* text per message */

/*
 * proto_printk_parse - call @fn(@ctx, addr, fmt, fmt_len) for each line of
 * @text[0..@len); fmt points into @text (not NUL-terminated). Every line
 * must be complete (end in '\n'); an empty text is fine.
 *
 * Return: 0; TC_ERR_MSG_MALFORMED at the first bad line (*@bad_line, if
 * not NULL, gets its number, from 1); or @fn's nonzero return, which
 * stops the walk.
 */
int proto_printk_parse(const char *text, size_t len,
		       int (*fn)(void *ctx, uint64_t addr, const char *fmt, size_t fmt_len),
		       void *ctx, size_t *bad_line);

/*
 * proto_printk_clean - drop from @text[0..@len) (in place) every line
 * proto_printk_parse() would refuse, and a last line without '\n': what
 * the agent sends is then whole good lines (a string the kernel wrote
 * with a raw control byte, or longer than PROTO_PRINTK_MAX_FMT, is left
 * out rather than failing the connection). Return: the length left.
 */
size_t proto_printk_clean(char *text, size_t len);

/*
 * proto_printk_chunk - the length of the longest prefix of @text[0..@len)
 * that is whole lines and at most PROTO_PRINTK_CHUNK bytes: what one
 * MSG_PRINTK carries. A line that does not fit alone (or a last line
 * without '\n') ends the table: 0 when the first line is such a line.
 */
size_t proto_printk_chunk(const char *text, size_t len);

#endif
