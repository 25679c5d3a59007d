/*
 * modes.h - traceq's modes, one file each (traceq/mode_*.c), as trace-cmd
 * has a file per command: what runs once the options are parsed and the
 * connection is open. traceq.c's modes[] picks one from the options; it
 * is the only file besides the modes themselves that includes this
 * header, and no mode calls another (tests/test_layering.sh).
 *
 * Each mode_X_run() takes the open connection and the options (both the
 * caller's), prints its answer on stdout and what went wrong on stderr,
 * and returns traceq's exit status: 0 success, 1 the collector could
 * not be reached or failed, 2 the query or the command line is wrong.
 */
#ifndef TRACEQ_MODES_H
#define TRACEQ_MODES_H

struct client;
struct traceq_opts;

/* QUERY's rows, page by page (mode_select.c). */
int mode_select_run(struct client *c, const struct traceq_opts *o);
/* --count: the number of QUERY's rows (mode_count.c). */
int mode_count_run(struct client *c, const struct traceq_opts *o);
/* --follow: QUERY's rows as they are stored, until a signal (mode_follow.c). */
int mode_follow_run(struct client *c, const struct traceq_opts *o);
/* --hist SPEC: a histogram of QUERY's rows, as the kernel's hist file (mode_hist.c). */
int mode_hist_run(struct client *c, const struct traceq_opts *o);
/* --sql TEXT: one read-only statement's rows (mode_sql.c). */
int mode_sql_run(struct client *c, const struct traceq_opts *o);
/* --hosts, --events, --fields: what the collector stores (mode_discover.c). */
int mode_discover_run(struct client *c, const struct traceq_opts *o);
/* --stats, --drops: the collector's counters (mode_stats.c). */
int mode_stats_run(struct client *c, const struct traceq_opts *o);
/* --graph: function_graph events as the kernel's tracer prints them (mode_graph.c). */
int mode_graph_run(struct client *c, const struct traceq_opts *o);
/* --import FILE: a trace-cmd recording stored in the collector (mode_import.c). */
int mode_import_run(struct client *c, const struct traceq_opts *o);
/* --export PATH: QUERY's rows written as trace.dat or Perfetto files (mode_export.c). */
int mode_export_run(struct client *c, const struct traceq_opts *o);
/* --serve [ADDR:]PORT: the page in a browser, until a signal (mode_serve.c). */
int mode_serve_run(struct client *c, const struct traceq_opts *o);
/* --snapshot (mode_snapshot.c), --snapshots (mode_snapshots.c) */
int mode_snapshot_run(struct client *c, const struct traceq_opts *o);
int mode_snapshots_run(struct client *c, const struct traceq_opts *o);

#endif
