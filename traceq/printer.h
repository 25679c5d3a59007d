/*
 * printer.h - the rows of an answer's pages (select, --follow) printed in
 * the layout --format names: text (trace-cmd report's lines) and kernel
 * (the trace file's) through traceq/render.h, with a host column when
 * more than one host matches; fields, json and csv through
 * traceq/output.h. A row whose format the renderer refuses is said once
 * per type on stderr and prints as fields. Prefix printer_.
 */
#ifndef TRACEQ_PRINTER_H
#define TRACEQ_PRINTER_H

#include "proto/qmsg.h"
#include "traceq/traceq.h"

struct client;
struct losses;
struct printer;

/*
 * printer_new - a printer for the layout of @o, asking over @c (both the
 * caller's, living longer) for the host column's width now and for what
 * the renderer needs (symbols, printk_formats, tgids: hostcache.h) while
 * it prints. Return: 0 and *@out; -ENOMEM.
 */
int printer_new(struct client *c, const struct traceq_opts *o, struct printer **out);

/* printer_free - free @p; NULL is fine. */
void printer_free(struct printer *p);

/*
 * printer_page - print the rows of @rep on stdout. Return: 0; 1 (said on
 * stderr: out of memory, csv asked for a second event type).
 */
int printer_page(struct printer *p, const struct qmsg_reply *rep);

/*
 * printer_losses - print the losses @l gives (traceq/losses.h; NULL:
 * none) between the rows where they happened, as trace-cmd report does
 * (text, kernel, fields: a line; json: an object of its own; csv: none);
 * with @bounded, none before the first row (a window relative to the
 * newest row, which the losses were not asked with). @l stays the
 * caller's.
 */
void printer_losses(struct printer *p, struct losses *l, bool bounded);

/*
 * printer_losses_rest - at the end of a complete answer: the losses after
 * its last row (within the window; with printer_losses()'s @bounded,
 * none: the answer's end is the bound).
 */
void printer_losses_rest(struct printer *p);

/*
 * printer_omit - leave out of @req's rows the fields @o's layout does not
 * print (@req points at a static list).
 */
void printer_omit(const struct traceq_opts *o, struct qmsg_request *req);

#endif
