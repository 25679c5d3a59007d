/*
 * render.h - traceq's event text: libtraceevent's print formats applied to
 * the rows a collector answers with, as `trace-cmd report` prints them (its
 * plugins loaded) or as the kernel's own `trace` file does (no plugins).
 * Prefix render_.
 *
 * The collector stores fields, not records, and never renders print fmt
 * (its ingest does not hand print arguments to libtraceevent). A reply
 * carries the event's format text next to the rows; render_ rebuilds each
 * row's record from its fields at the offsets and sizes the format gives,
 * and lets libtraceevent print it here, in the client: a format that
 * upsets the parser costs this traceq, not the collector every client
 * shares. The format comes from the collector and was written by an agent:
 * common/format_check.h's bounds run before libtraceevent parses it.
 *
 * Strings that events point at (tracepoint_string() pointers printed with
 * "%s", trace_printk()'s formats) are in the kernel's printk_formats,
 * which differ per host and boot: with a render_printk_fn, each host of an
 * answer gets a libtraceevent handle of its own with its host's table
 * registered (libtraceevent reads its table once, at the first lookup, so
 * one handle cannot take a second host's).
 */
#ifndef TRACEQ_RENDER_H
#define TRACEQ_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/qmsg.h"

enum render_style {
	RENDER_TRACECMD,	/* trace-cmd report: plugins, its columns */
	RENDER_KERNEL,		/* the kernel's trace file: print fmt as written */
};

/*
 * A code address to name: called by the renderer while it prints (%ps,
 * %pS, plugins' function fields). Return the name and set *@start to the
 * symbol's address, or NULL when it has none (yet).
 */
typedef const char *(*render_sym_fn)(void *ctx, const char *host, uint64_t addr,
				     uint64_t *start);

/*
 * The printk_formats of @host (the kernel's text of each string, quotes
 * included, at its address): the renderer calls it once per host of an
 * answer (per format), before printing that host's first row (stamped
 * @wall_ns, wall clock: the table of the boot up then), and copies what
 * it gets. Return the number of entries, *@addr and *@fmt pointing
 * at them (the callee's), or 0 for none.
 */
typedef size_t (*render_printk_fn)(void *ctx, const char *host, int64_t wall_ns,
				   const uint64_t **addr, char *const **fmt);

struct render;

/*
 * render_new - a renderer of @style; @sym (may be NULL) names code
 * addresses. Return: 0 and *@out; -ENOMEM.
 */
int render_new(enum render_style style, render_sym_fn sym, void *sym_ctx,
	       struct render **out);
void render_free(struct render *r);

/* render_set_printk - name the strings of each host with @fn (NULL: none). */
void render_set_printk(struct render *r, render_printk_fn fn, void *ctx);

/*
 * The tgid (thread group: process) of @pid on @host, 0 when unknown:
 * called once per row when set.
 */
typedef int32_t (*render_tgid_fn)(void *ctx, const char *host, int32_t pid);

/*
 * render_set_tgid - with @fn (NULL: none), each line gets the thread
 * group after COMM-PID as the kernel's trace file has it with
 * options/record-tgid: "(TGID) ", "(-------) " when unknown.
 */
void render_set_tgid(struct render *r, render_tgid_fn fn, void *ctx);

/*
 * render_set_slow - with @slow, every row is printed by libtraceevent
 * (tep_print_event()), none by traceq's own columns and fastprint: for
 * tests that compare the two.
 */
void render_set_slow(struct render *r, bool slow);

/*
 * render_prepare - get ready for the rows of reply @rep (its event and
 * format text). A reply with the format of the previous one costs
 * nothing. Return: 0; TC_ERR_FORMAT_LIMIT or TC_ERR_FORMAT_PARSE (the
 * format was refused: @why says why), -ENOMEM.
 */
int render_prepare(struct render *r, const struct qmsg_reply *rep, char *why, size_t whylen);

/*
 * render_row - one line (no newline) of @row of @rep into @buf[@len],
 * stamped @ts ns (the caller picks the clock; a time before 1970 prints
 * with its '-'). The line is cut at @len. Return: its length.
 */
size_t render_row(struct render *r, const struct qmsg_reply *rep, const struct qmsg_value *row,
		  int64_t ts, char *buf, size_t len);

/*
 * render_rebuild - after render_prepare(): @row's record as the kernel
 * wrote it (what render_row() prints from: each field at its offset,
 * this machine's byte order, dynamic arrays after the fixed part,
 * common_type the format's id), *@rec pointing into @r until the next
 * call. Return: its size, a multiple of 4; 0 when not prepared.
 */
size_t render_rebuild(struct render *r, const struct qmsg_reply *rep,
		      const struct qmsg_value *row, const void **rec);

/*
 * render_swap - @rec (@size bytes), a copy of what render_rebuild() made
 * of @row, put in the other byte order than this machine's: the numbers
 * the rebuild put (common_type, number fields, __data_loc words), not
 * the bytes it copied (strings, arrays: as the traced host's kernel wrote
 * them, in its order already). For a trace.dat of a host of the other
 * byte order (tracedat_write.c).
 */
void render_swap(const struct render *r, const struct qmsg_reply *rep,
		 const struct qmsg_value *row, void *rec, size_t size);

/* render_event_id - the id of the prepared format ("ID:"); -1 when not prepared. */
int render_event_id(const struct render *r);

/*
 * render_stack_lines - where a stack record's text (ftrace:kernel_stack,
 * user_stack) begins in @text, the @len bytes render_row() just wrote
 * for it: that text is the renderer's own lines, each kallsyms name in it
 * already escaped; what precedes (a comm, ...) is not. @len for any
 * other row (nothing is the renderer's own).
 */
size_t render_stack_lines(const struct render *r, const char *text, size_t len);

#endif
