/*
 * traceq.h - what traceq's parts share: the options main() parsed
 * (traceq.c), handed read-only to the transport (client.h), the page
 * printer (printer.h) and the mode that runs (modes.h). Prefix tq_,
 * TRACEQ_.
 */
#ifndef TRACEQ_TRACEQ_H
#define TRACEQ_TRACEQ_H

#include <stdbool.h>
#include <stdint.h>

#include "common/hist.h"
#include "common/query.h"
#include "proto/qmsg.h"
#include "traceq/output.h"
#include "traceq/select.h"

#define TRACEQ_DEFAULT_SERVER	"ipc:///run/tracecollect/query.sock"
#define TRACEQ_PAGE_ROWS	10000	/* rows asked for per page of an answer */


/*
 * The options that pick a mode (struct traceq_opts' @modes), one bit
 * each; none: a select. traceq.c's modes[] says which runs when several
 * are given, its conflicts[] which may not go together.
 */
enum {
	TQ_M_IMPORT = 1u << 0,	/* --import FILE */
	TQ_M_SQL = 1u << 1,	/* --sql TEXT */
	TQ_M_LIST = 1u << 2,	/* --hosts, --events, --fields */
	TQ_M_STATS = 1u << 3,	/* --stats, --drops */
	TQ_M_COUNT = 1u << 4,	/* --count */
	TQ_M_GRAPH = 1u << 5,	/* --graph */
	TQ_M_HIST = 1u << 6,	/* --hist SPEC */
	TQ_M_FOLLOW = 1u << 7,	/* --follow */
	TQ_M_EXPORT = 1u << 8,	/* --export PATH */
	TQ_M_SERVE = 1u << 9,	/* --serve [ADDR:]PORT */
	TQ_M_SNAPSHOT = 1u << 10,	/* --snapshot */
	TQ_M_SNAPSHOTS = 1u << 11,	/* --snapshots */
};

struct traceq_opts {
	const char *server;
	const char *cert, *key, *ca;	/* the TLS query port's client certificate */
	const char *query;
	struct query q;		/* @query parsed (main(), once; zero without one) */
	unsigned modes;		/* TQ_M_* */
	const char *hist;	/* --hist SPEC */
	struct hist_spec hist_spec;	/* @hist parsed (main(), once) */
	enum out_format format;
	uint64_t limit;		/* 0: all rows */
	struct tq_select sel;	/* --since/--until, --host, --cpu, --reverse */
	enum qmsg_op list;	/* --hosts, --events, --fields; 0: none */
	int timeout_ms;
	bool drops;		/* --drops: the drops table, not --stats' */
	bool sync;
	bool time_raw;		/* --time raw: the trace clock */
	bool no_host;		/* --no-host: no host column */
	const char *sql;	/* --sql TEXT */
	const char *import;	/* --import FILE (traceq/import.c) */
	const char *name;	/* --name HOST, for --import */
	const char *buffer;	/* --buffer NAME: the instance an --import takes */
	bool force;		/* --force: --import under a live host's name */
	bool tgid;		/* --tgid: the (TGID) column in text and kernel */
	const char *export;	/* --export PATH (traceq/mode_export.c) */
	const char *export_format;	/* its -f: tracedat, perfetto (NULL: tracedat) */
	unsigned tracedat_version;	/* --tracedat-version 6|7; 0: 7 */
	bool time_given;	/* --time was given (--export's default follows the hosts) */
	const char *serve;	/* --serve [ADDR:]PORT (traceq/mode_serve.c) */
	const char *reason;	/* --reason TEXT, for --snapshot */
	uint64_t snapshot_id;	/* --snapshot-id N (snapshot.h); 0: none */
	/* what --snapshot-id's hosts in sel.hosts point to (snapshot.c's) */
	char *snap_names[QMSG_MAX_HOSTS], *snap_globs[QMSG_MAX_HOSTS];
	uint32_t snap_nhosts;
};

#endif
