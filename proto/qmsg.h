/*
 * qmsg.h - the query protocol between traceq and tracecollectd's query
 * endpoint (nng REQ/REP). One request, one reply, both msgpack maps; see
 * proto/PROTOCOL.md, "Query endpoint".
 *
 * A reply is a table: column names and rows of plain values, so the same
 * shape carries event rows (whose first QMSG_META_COLS columns are host,
 * cpu, ts, trace_ts, pid, comm, then the event's fields), counts and stats.
 */
#ifndef PROTO_QMSG_H
#define PROTO_QMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"

#define QMSG_VERSION	1
#define QMSG_MAX_ROWS	10000		/* rows in one reply */
#define QMSG_MAX_COLS	1024
#define QMSG_META_COLS	6		/* host cpu ts trace_ts pid comm */
#define QMSG_MAX_FORMAT	(64u << 10)	/* a reply's format text */
#define QMSG_MAX_TYPES	4096		/* event types in one multi-type reply */
#define QMSG_MAX_CPUS	4096		/* CPUs in a request's list */
#define QMSG_MAX_CURSORS 64		/* tail_writers: one per collector number */
#define QMSG_MAX_HOSTS	64		/* host globs in a request's list */
#define QMSG_MAX_OMIT	16		/* field names in a request's omit list */
#define QMSG_LOSSES_COLS	6	/* host cpu ts trace_ts count boot_id */
#define QMSG_HEADERS_COLS	4	/* item system name value */

/*
 * Request sizes. An endpoint answers a request over QMSG_MAX_REQUEST bytes
 * (encoded) with TC_ERR_TOO_LONG; it reads messages up to QMSG_MAX_WIRE,
 * and its transport closes the connection on a larger one without a reply,
 * so a client never sends one (traceq refuses it itself).
 */
#define QMSG_MAX_REQUEST	(64u << 10)
#define QMSG_MAX_WIRE		(4u << 20)

/*
 * QMSG_OPS(X) - every op of the query protocol, once (PROTOCOL.md, "Query
 * endpoint" and "Import"): X(NAME, number, "name", class) makes the enum's
 * QOP_NAME, its qmsg_op_name() and its qmsg_op_class(). The numbers are
 * the wire's: never change one. Free: 11..15, 17..19, 21..23.
 */
#define QMSG_OPS(X)								\
	/* rows of one event matching a filter */				\
	X(SELECT,	1,	"select",	QOPC_Q)				\
	/* how many rows would match */						\
	X(COUNT,	2,	"count",	QOPC_Q)				\
	/* per host/CPU counters */						\
	X(STATS,	3,	"stats",	QOPC_PLAIN)			\
	/* events not kept: per host, event and reason */			\
	X(DROPS,	4,	"drops",	QOPC_PLAIN)			\
	/* name code addresses of one host */					\
	X(SYMBOLS,	5,	"symbols",	QOPC_Q)				\
	/* every host seen: what the collector knows of it */			\
	X(HOSTS,	6,	"hosts",	QOPC_PLAIN)			\
	/* stored event types: counts and time span */				\
	X(EVENTS,	7,	"events",	QOPC_PLAIN)			\
	/* the fields of the event types a query selects */			\
	X(FIELDS,	8,	"fields",	QOPC_Q)				\
	/* where the kernels lost events: host, CPU, time, count */		\
	X(LOSSES,	9,	"losses",	QOPC_PLAIN)			\
	/* one host's boot as its kernel describes it (header_page...) */	\
	X(HEADERS,	10,	"headers",	QOPC_PLAIN)			\
	/* read-only SQL over the documented views (--sql) */			\
	X(SQL,		16,	"sql",		QOPC_Q)				\
	/* a histogram in the kernel's hist syntax (--hist) */			\
	X(HIST,		20,	"hist",		QOPC_HIST)			\
	/* traceq --import's requests (proto/qimport.h) */			\
	X(IMPORT_BEGIN,	24,	"import_begin",	QOPC_IMPORT)			\
	X(IMPORT_MSG,	25,	"import_msg",	QOPC_IMPORT)			\
	X(IMPORT_PAGES,	26,	"import_pages",	QOPC_IMPORT)			\
	X(IMPORT_END,	27,	"import_end",	QOPC_IMPORT)			\
	/* one host's printk_formats (of the boot up at to_ts) */		\
	X(PRINTK,	28,	"printk",	QOPC_PLAIN)			\
	/* one host's pid -> tgid pairs, paged by pid */			\
	X(TGIDS,	29,	"tgids",	QOPC_PLAIN)			\
	/* rows in storage order from a cursor (--follow) */			\
	X(TAIL,		30,	"tail",		QOPC_Q)				\
	/* freeze the flight recorders of the hosts asked (--snapshot) */	\
	X(SNAPSHOT,	31,	"snapshot",	QOPC_PLAIN)			\
	/* the snapshots taken: per host its window and loss (--snapshots) */	\
	X(SNAPSHOTS,	32,	"snapshots",	QOPC_PLAIN)			\
	/* the same as tail from a cursor per collector of the store (issue 35) */	\
	X(TAIL_WRITERS,	33,	"tail_writers",	QOPC_Q)

enum qmsg_op {
#define QMSG_OP_ENUM(name, num, str, class) QOP_##name = num,
	QMSG_OPS(QMSG_OP_ENUM)
#undef QMSG_OP_ENUM
};

/* What a request of an op must carry, and who decodes it. */
enum qmsg_op_class {
	QOPC_UNKNOWN,	/* not an op */
	QOPC_PLAIN,	/* a query request; "q" optional */
	QOPC_Q,		/* a query request that needs "q" */
	QOPC_HIST,	/* a query request that needs "hist" */
	QOPC_IMPORT,	/* an import request (qimport_request_decode()) */
};

/* qmsg_op_is_tail - whether @op reads the tail (tail, tail_writers). */
static inline bool qmsg_op_is_tail(uint32_t op)
{
	return op == QOP_TAIL || op == QOP_TAIL_WRITERS;
}

/* qmsg_op_name - @op's name for logs ("select", ...), or "unknown". */
const char *qmsg_op_name(uint32_t op);
/* qmsg_op_class - @op's class in QMSG_OPS; QOPC_UNKNOWN for any other number. */
enum qmsg_op_class qmsg_op_class(uint32_t op);

struct qmsg_request {
	enum qmsg_op op;
	char *query;		/* "SELECTOR[,...] [where FILTER]"; NULL for stats,
				 * drops, hosts; a selector list for events,
				 * fields; symbols: hex addresses,
				 * blank-separated; sql: one SELECT;
				 * printk, tgids: NULL */
	uint32_t limit;		/* rows wanted in this reply, <= QMSG_MAX_ROWS */
	int64_t after_ts;	/* keyset paging: continue after (ts, id) */
	uint64_t after_id;	/* 0: from the start */
	int64_t after_type;	/* multi-type answers: the type of that row */
	int64_t from_ts;	/* wall-clock ns range, [from, to); 0 = open */
	int64_t to_ts;
	bool from_end, to_end;	/* from_ts/to_ts are offsets from the newest
				 * stored event selected (0 is then not open) */
	bool reverse;		/* newest first */
	char *host;		/* host name glob; NULL = all */
	char **hosts;		/* and one of these globs (nhosts 0: all) */
	uint32_t nhosts;
	uint32_t *cpus;		/* only these CPUs (ncpus 0: all) */
	uint32_t ncpus;
	uint64_t sent;		/* rows of this answer the client already has
				 * (earlier pages), for the collector's
				 * query-max-rows; 0: none or unknown */
	uint32_t sync_ms;	/* first wait, at most this long, until what the
				 * collector has received is stored; 0: don't */
	char *hist;		/* hist: the spec (common/hist.h); NULL otherwise */
	char **omit;		/* select, tail: event fields the client does not
				 * need; they are left out of the reply's columns
				 * (nomit 0: every field is sent) */
	uint32_t nomit;
	char *reason;		/* snapshot: why (--reason); NULL: none given */
	uint64_t snapshot_id;	/* snapshots: only this one; select, count, hist,
				 * tail: only rows in its hosts' windows; 0:
				 * every one / no such limit */
	/*
	 * tail_writers: the cursor per collector number (an earlier reply's
	 * cursors); ncursors 0: none yet (after_id says where to start, as
	 * for tail)
	 */
	uint64_t cursors[QMSG_MAX_CURSORS];
	uint32_t ncursors;
};

enum qmsg_kind { QV_NIL, QV_INT, QV_UINT, QV_STR, QV_BIN };

struct qmsg_value {
	enum qmsg_kind kind;
	union {
		int64_t i;
		uint64_t u;
		struct { char *p; size_t len; } s;	/* STR and BIN; STR NUL-ended */
	};
};

/* qmsg_value_int - a number cell as a signed number (its bits as sent); 0 for any other kind. */
static inline int64_t qmsg_value_int(const struct qmsg_value *v)
{
	return v->kind == QV_UINT ? (int64_t)v->u : v->kind == QV_INT ? v->i : 0;
}

/* One event type of a multi-type reply: its name and columns. */
struct qmsg_type {
	char *event;
	uint32_t ncols;
	char **cols;
	char *format;		/* its format text (see qmsg_reply.format), or NULL */
};

struct qmsg_reply {
	bool ok;
	int32_t code;		/* tc_error code when !ok */
	char *error;		/* message when !ok */
	int32_t pos, len;	/* offending token in the query, -1 if none */
	char *event;		/* "system:name" for select/count */
	uint32_t ncols;
	char **cols;
	uint32_t nrows;
	struct qmsg_value *vals;	/* nrows * ncols, row-major (but see types) */
	/*
	 * A multi-type reply (ntypes > 0; event NULL, ncols 0): row i is of
	 * types[row_type[i]] and its values start at vals[row_off[i]]. Use
	 * qmsg_reply_row() to read rows of either shape.
	 */
	uint32_t ntypes;
	struct qmsg_type *types;
	uint32_t *row_type;
	size_t *row_off;
	size_t nvals;		/* values in vals */
	bool more;		/* more rows after this page */
	int64_t last_ts;	/* key of the last row, for the next page */
	uint64_t last_id;
	int64_t last_type;	/* multi-type: the last row's type, for the next page */
	uint64_t count;		/* QOP_COUNT; QOP_HIST: Hits */
	uint64_t entries;	/* QOP_HIST: Entries (of every page) */
	uint64_t dropped;	/* QOP_HIST: Dropped */
	uint64_t unstored;	/* batches the collector received, not yet stored */
	uint64_t journal_bytes;	/* the size of its receive journal */
	int64_t stalled_since;	/* storing held up since (realtime ns); 0: it is not */
	char *stalled_why;	/* the failure it began with (untrusted text); NULL: none */
	char *format;		/* select: the event's format text (as the agent
				 * sent it; untrusted: check it before parsing) */
	uint64_t missed;	/* tail: rows gone before they could be read */
	bool reset;		/* tail: the cursor was past the store's end */
	uint64_t cursors[QMSG_MAX_CURSORS];	/* tail_writers: where to go on */
	uint32_t ncursors;
	/*
	 * The decoder's store of the values' strings (one block instead of a
	 * malloc each); NULL: each QV_STR/QV_BIN value's s.p is its own
	 * malloc'd block (a reply built by hand).
	 */
	char *strs;
	size_t strs_used, strs_cap;
};

/* qmsg_request_encode - append @r's msgpack encoding to @out. 0 or -ENOMEM. */
int qmsg_request_encode(const struct qmsg_request *r, struct proto_buf *out);

/*
 * qmsg_request_decode - parse a request; *@out owns its strings afterwards
 * (qmsg_request_free). Return: 0; TC_ERR_TOO_LONG (@len over
 * QMSG_MAX_REQUEST), TC_ERR_MSG_MALFORMED, TC_ERR_MSG_MISSING,
 * TC_ERR_PROTO_VERSION, -ENOMEM. *@out is written only on success.
 */
int qmsg_request_decode(const void *buf, size_t len, struct qmsg_request *out);
void qmsg_request_free(struct qmsg_request *r);

/*
 * A reply is built by the endpoint in one pass: qmsg_reply_begin() with the
 * header, then ncols qmsg_put_*() calls per row (as many rows as it likes,
 * at most QMSG_MAX_ROWS), then qmsg_reply_end(). Errors use
 * qmsg_reply_error() alone. Return: 0 or -ENOMEM.
 */
struct qmsg_writer;
int qmsg_reply_begin(struct qmsg_writer **w, const char *event, uint32_t ncols,
		     const char *const *cols);
/*
 * qmsg_reply_begin_types - as qmsg_reply_begin(), for rows of several
 * event types: type i is @events[i] with @ncols[i] columns @cols[i]. Each
 * row starts with qmsg_put_type() and has that type's columns. The
 * strings must stay valid until qmsg_reply_end().
 */
int qmsg_reply_begin_types(struct qmsg_writer **w, uint32_t ntypes, const char *const *events,
			   const uint32_t *ncols, const char *const *const *cols);
/*
 * qmsg_reply_begin_tail - as qmsg_reply_begin_types(), for a tail reply
 * (QOP_TAIL), which also carries what qmsg_reply_tail() sets: the rows
 * the reader missed and whether its cursor was reset.
 */
int qmsg_reply_begin_tail(struct qmsg_writer **w, uint32_t ntypes, const char *const *events,
			  const uint32_t *ncols, const char *const *const *cols);
void qmsg_reply_tail(struct qmsg_writer *w, uint64_t missed, bool reset);
/*
 * qmsg_reply_cursors - a tail reply's cursors (tail_writers), @n of them
 * (at most QMSG_MAX_CURSORS), copied; without it a tail reply has none.
 */
void qmsg_reply_cursors(struct qmsg_writer *w, const uint64_t *cursors, uint32_t n);
/* qmsg_put_type - start a row of type @idx of qmsg_reply_begin_types(). */
void qmsg_put_type(struct qmsg_writer *w, uint32_t idx);
/* qmsg_reply_last_type - the last row's type key for the trailer (default 0). */
void qmsg_reply_last_type(struct qmsg_writer *w, int64_t type);
/*
 * A writer as a row buffer: the bytes of the values put so far
 * (qmsg_body(), qmsg_body_len()), emptied by qmsg_body_reset(), copied
 * into another writer by qmsg_put_raw() (@nvals values); a buffer that is
 * never ended is freed with qmsg_writer_free().
 */
const void *qmsg_body(const struct qmsg_writer *w);
size_t qmsg_body_len(const struct qmsg_writer *w);
void qmsg_body_reset(struct qmsg_writer *w);
void qmsg_put_raw(struct qmsg_writer *w, const void *p, size_t len, uint32_t nvals);
void qmsg_writer_free(struct qmsg_writer *w);
/* qmsg_reply_rows - the number of whole rows put so far. */
uint32_t qmsg_reply_rows(const struct qmsg_writer *w);
void qmsg_put_nil(struct qmsg_writer *w);
void qmsg_put_int(struct qmsg_writer *w, int64_t v);
void qmsg_put_uint(struct qmsg_writer *w, uint64_t v);
void qmsg_put_str(struct qmsg_writer *w, const char *s, size_t len);
void qmsg_put_bin(struct qmsg_writer *w, const void *p, size_t len);
/*
 * qmsg_reply_format - send @text (the event's format file, at most
 * QMSG_MAX_FORMAT bytes: a longer one is left out) with the rows, so that
 * the client can render them; @text must stay valid until qmsg_reply_end().
 */
void qmsg_reply_format(struct qmsg_writer *w, const char *text);
/* qmsg_reply_type_format - the same for type @idx of a multi-type reply. */
void qmsg_reply_type_format(struct qmsg_writer *w, uint32_t idx, const char *text);
/* qmsg_reply_hist - a histogram's Entries and Dropped (0s if not called). */
void qmsg_reply_hist(struct qmsg_writer *w, uint64_t entries, uint64_t dropped);
/* qmsg_reply_backlog - what the collector has received but not stored (0s if not called). */
void qmsg_reply_backlog(struct qmsg_writer *w, uint64_t unstored, uint64_t journal_bytes);
/*
 * qmsg_reply_stall - since when the collector's storing is held up
 * (realtime ns; 0, the default: it is not) and why (@why must live until
 * qmsg_reply_end()).
 */
void qmsg_reply_stall(struct qmsg_writer *w, int64_t since_ns, const char *why);
/*
 * qmsg_reply_end - finish: write the trailer and hand the encoding to @out
 * (appended); frees @w in every case. Return: 0 or -ENOMEM.
 */
int qmsg_reply_end(struct qmsg_writer *w, bool more, int64_t last_ts,
		   uint64_t last_id, uint64_t count, struct proto_buf *out);
int qmsg_reply_error(int32_t code, const char *msg, int32_t pos, int32_t len,
		     struct proto_buf *out);
/*
 * qmsg_reply_error_stall - an error reply (no position) that also says what
 * the collector has not stored and since when storing is held up, as
 * qmsg_reply_backlog() and qmsg_reply_stall() do. Return: 0 or -ENOMEM.
 */
int qmsg_reply_error_stall(int32_t code, const char *msg, uint64_t unstored,
			   uint64_t journal_bytes, int64_t since_ns, const char *why,
			   struct proto_buf *out);

/*
 * qmsg_reply_decode - parse a reply; *@out owns everything afterwards
 * (qmsg_reply_free). Rejects rows whose length differs from ncols, and
 * sizes over the QMSG_MAX_* limits; a reply has no QMSG_MAX_REQUEST cap.
 * Return: as qmsg_request_decode(), but never TC_ERR_TOO_LONG.
 */
int qmsg_reply_decode(const void *buf, size_t len, struct qmsg_reply *out);
void qmsg_reply_free(struct qmsg_reply *r);

/*
 * qmsg_reply_row - row @i of @r (i < r->nrows), of either shape: its
 * values, and in *@view the event, columns and format they go with (pointers into
 * @r; the rest of *@view is zeroed).
 */
const struct qmsg_value *qmsg_reply_row(const struct qmsg_reply *r, uint32_t i,
					struct qmsg_reply *view);

#endif
