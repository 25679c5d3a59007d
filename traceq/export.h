/*
 * export.h - the writers behind traceq --export PATH -f FORMAT: one ops
 * table per output format (trace.dat: traceq/tracedat_write.c; Perfetto:
 * traceq/perfetto_write.c), driven by traceq/mode_export.c, which selects
 * the rows and hands them over one at a time. Prefix export_.
 *
 * The order of calls (the mode's promise to a writer):
 *
 *   open(opts)                        once
 *   { host_begin(host)                per host of the export with rows in
 *     { row(row) | loss(loss) }...     the window, one host after the
 *     host_end() }...                  other: every row and loss of a host
 *                                      between its begin and end, in time
 *                                      order (ts, then the store's order)
 *   close(stats)                      once, also after an error
 *
 * A host is exported whole before the next begins (one select per host),
 * so a writer holds one host's state at a time: trace.dat writes one file
 * per host (PATH/HOST.dat, or PATH itself for a single host), Perfetto one
 * member of its archive per host. Memory stays bounded: a writer may keep
 * what is small per host (formats, comms, symbols) but spools event data
 * to disk, never the whole export in memory.
 *
 * The rows are the select op's (proto/PROTOCOL.md, "Query endpoint"): each
 * row's values with the reply's view of its type (event name, columns,
 * format text as that host's kernel sent it), exactly as printer.c and
 * render.h receive them, so a writer can rebuild the record with
 * render.h's layout or print its text. Everything in a row, a host's info
 * and a loss is the caller's and valid only during the call: copy what is
 * kept. Strings from the collector are peers' (escape them before logs).
 *
 * Errors: each op returns 0 or a negative code (common/tc_error.h, or
 * -errno) and says why in a sentence (export_seterr()) into the mode's
 * buffer (export_opts.err), which the mode prints once as "traceq:
 * --export: ERR"; after an error the mode calls close(ok false) and
 * nothing else.
 */
#ifndef TRACEQ_EXPORT_H
#define TRACEQ_EXPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/qmsg.h"

struct hostcache;

#define EXPORT_ERR_LEN	512

/* What the mode was asked for (its command line), for every writer. */
struct export_opts {
	const char *path;	/* --export PATH */
	unsigned nhosts;	/* hosts the selection matches (>1: PATH a directory) */
	bool time_wall;		/* --time wall: one wall clock for all hosts */
	bool time_raw;		/* --time raw given: each host's trace clock (Perfetto's
				 * default is the wall clock whatever the hosts) */
	unsigned tracedat_version;	/* --tracedat-version: 6 or 7 (default 7, zstd) */
	/*
	 * What the renderer asks the collector (render.h's callbacks:
	 * hostcache_sym, hostcache_printk, hostcache_tgid) for a writer that
	 * prints rows' text (Perfetto's systrace); the mode's, open until
	 * close() returned.
	 */
	struct hostcache *hc;
	/*
	 * hostcache_sym() and hostcache_sym_fetch() on @hc, for a writer that
	 * names code addresses itself (trace.dat's kallsyms): set by the mode,
	 * NULL where there is no collector to ask (a writer then names none),
	 * so that a writer links without the transport.
	 */
	const char *(*sym)(void *hc, const char *host, uint64_t addr, uint64_t *start);
	int (*sym_fetch)(struct hostcache *hc, int64_t at);
	char *err;		/* EXPORT_ERR_LEN bytes: what went wrong (the mode's) */
};

/*
 * What the collector knows of a host, given at host_begin(). A string
 * the collector did not say is "" (never NULL); a number it did not say
 * is 0, and the writer uses the kernel's default (page 4096, long 8,
 * little-endian, clock "local").
 */
struct export_host {
	const char *name;	/* as stored (a peer's string) */
	const char *kernel;	/* uname -r, "" */
	uint32_t ncpus;		/* CPUs the host declared; rows' CPUs may exceed it */
	uint32_t page_size;	/* the ring-buffer page (sub-buffer) size */
	uint32_t long_size;	/* 4 or 8 */
	bool big_endian;
	const char *clock;	/* the trace clock ("local", "mono", "x86-tsc", ...) */
	/* wall-clock ns = trace clock ns + this (the collector's measure) */
	int64_t clock_offset_ns;
	/*
	 * What placed its events (issue 36, the hosts op's columns): source
	 * "host" (its own samples), "measured" (the collector's measurement),
	 * "file" (an import), "" not said; with clock_measured, the latest
	 * measurement's uncertainty, drift and disagreement with the host's
	 * own clock.
	 */
	const char *clock_source;
	bool clock_measured;
	int64_t clock_uncertainty_ns, clock_drift_ppb, clock_disagree_ns;
	const char *header_page;	/* events/header_page as the host sent it, "" */
	const char *header_event;	/* events/header_event, "" */
	/* printk_formats lines ("0xADDR : \"FMT\"\n"), "": none */
	const char *printk;
	size_t printk_len;
	/* pid -> tgid pairs (the kernel's saved_tgids), in pid order */
	const int32_t (*tgids)[2];
	size_t ntgids;
};

/*
 * One row (the select reply's): its meta columns read out, and the whole
 * row with its type's view (qmsg_reply_row()) for the event's fields.
 */
struct export_row {
	const char *host;
	uint32_t cpu;		/* a program's row: its buffer (its stream when no group is known) */
	int64_t ts;		/* wall-clock ns */
	int64_t trace_ts;	/* the host's trace clock, ns */
	int32_t pid;
	const char *comm;	/* NULL: unknown */
	const struct qmsg_reply *view;	/* event "system:name", cols, format */
	const struct qmsg_value *vals;	/* view->ncols values; vals[QMSG_META_COLS..]: fields */
	bool program;		/* a program's stream (our ring), not the kernel's */
	/*
	 * The reply page the row came from (1, 2, ...): within one page the
	 * same view->format pointer is the same text, so a writer may key
	 * its per-format state by pointer for a page (printer.c does).
	 */
	uint64_t page;
};

/*
 * Events the ring buffer lost on a CPU of the host: where the kernel's
 * page said so (its missed-events flag), before the event that came next.
 */
struct export_loss {
	const char *host;
	uint32_t cpu;
	int64_t ts;		/* wall-clock ns of the first event after the loss */
	int64_t trace_ts;	/* the same in the host's trace clock */
	uint64_t count;		/* events lost; 0: unknown (the flag without a count) */
	/*
	 * Where the rows of that CPU went, for a writer that lays rows out
	 * by CPU (trace.dat): the CPU they carry and whether they are a
	 * program's (export_row.program). A kernel CPU's loss: @cpu and
	 * false. A program ring's (@cpu its stream, >= 32768, as its rows
	 * carry it): true, and its buffer, the stream less its group's first
	 * stream (the collector's op 10, hostmeta.h), as for its rows; the
	 * stream when the collector named no group of it.
	 */
	uint32_t row_cpu;
	bool program;
};

/* What a writer did, for the mode's summary line and the benchmark. */
struct export_stats {
	uint64_t rows;		/* rows written */
	uint64_t losses;	/* loss markers written */
	uint64_t bytes;		/* bytes of the files written */
	unsigned files;
	uint64_t skipped;	/* rows a writer could not write (said once per type) */
};

struct export_writer;

/*
 * The ops of one output format. Each is called as export.h's head says;
 * @w is what open() made. close() finishes (or, after an error, removes
 * what it could not finish), frees @w and fills *@st (may be NULL).
 */
struct export_writer_ops {
	const char *format;	/* -f's word: "tracedat", "perfetto" */
	int (*open)(const struct export_opts *o, struct export_writer **w);
	int (*host_begin)(struct export_writer *w, const struct export_host *h);
	int (*row)(struct export_writer *w, const struct export_row *r);
	int (*loss)(struct export_writer *w, const struct export_loss *l);
	int (*host_end)(struct export_writer *w);
	int (*close)(struct export_writer *w, bool ok, struct export_stats *st);
};

/*
 * What every writer's state starts with (its first member): open() sets
 * @ops to its table and @err to export_opts.err.
 */
struct export_writer {
	const struct export_writer_ops *ops;
	char *err;
};

/*
 * The writers (tracedat_write.c, perfetto_write.c): a writer is its ops
 * table, one line in mode_export.c's writers[] and its file in
 * traceq/include.am.
 */
extern const struct export_writer_ops export_tracedat_ops;
extern const struct export_writer_ops export_perfetto_ops;

/*
 * export_seterr - a writer's error sentence into @w->err (printf); returns
 * @code, so that `return export_seterr(w, -EIO, "...")` says and fails.
 */
static inline int export_seterr(struct export_writer *w, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline int export_seterr(struct export_writer *w, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->err, EXPORT_ERR_LEN, fmt, ap);
	va_end(ap);
	return code;
}

#endif
