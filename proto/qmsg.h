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

/*
 * Request sizes. An endpoint answers a request over QMSG_MAX_REQUEST bytes
 * (encoded) with TC_ERR_TOO_LONG; it reads messages up to QMSG_MAX_WIRE,
 * and its transport closes the connection on a larger one without a reply,
 * so a client never sends one (traceq refuses it itself).
 */
#define QMSG_MAX_REQUEST	(64u << 10)
#define QMSG_MAX_WIRE		(4u << 20)

enum qmsg_op {
	QOP_SELECT = 1,		/* rows of one event matching a filter */
	QOP_COUNT,		/* how many rows would match */
	QOP_STATS,		/* per host/CPU counters */
	QOP_DROPS,		/* events not kept: per host, event and reason */
	QOP_SYMBOLS,		/* name code addresses of one host */
	QOP_PRINTK = 20,	/* one host's printk_formats (of the boot up at to_ts) */
	QOP_TGIDS = 21,		/* one host's pid -> tgid pairs, paged by pid */
};

struct qmsg_request {
	enum qmsg_op op;
	char *query;		/* "EVENT [where FILTER]"; NULL for stats, drops;
				 * symbols: hex addresses, blank-separated;
				 * printk, tgids: NULL */
	uint32_t limit;		/* rows wanted in this reply, <= QMSG_MAX_ROWS */
	int64_t after_ts;	/* keyset paging: continue after (ts, id) */
	uint64_t after_id;	/* 0: from the start */
	int64_t from_ts;	/* wall-clock ns range, [from, to); 0 = open */
	int64_t to_ts;
	char *host;		/* host name glob; NULL = all */
	uint32_t sync_ms;	/* first wait, at most this long, until what the
				 * collector has received is stored; 0: don't */
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

struct qmsg_reply {
	bool ok;
	int32_t code;		/* tc_error code when !ok */
	char *error;		/* message when !ok */
	int32_t pos, len;	/* offending token in the query, -1 if none */
	char *event;		/* "system:name" for select/count */
	uint32_t ncols;
	char **cols;
	uint32_t nrows;
	struct qmsg_value *vals;	/* nrows * ncols, row-major */
	bool more;		/* more rows after this page */
	int64_t last_ts;	/* key of the last row, for the next page */
	uint64_t last_id;
	uint64_t count;		/* QOP_COUNT */
	uint64_t unstored;	/* batches the collector received, not yet stored */
	uint64_t journal_bytes;	/* the size of its receive journal */
	char *format;		/* select: the event's format text (as the agent
				 * sent it; untrusted: check it before parsing) */
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
/* qmsg_reply_backlog - what the collector has received but not stored (0s if not called). */
void qmsg_reply_backlog(struct qmsg_writer *w, uint64_t unstored, uint64_t journal_bytes);
/*
 * qmsg_reply_end - finish: write the trailer and hand the encoding to @out
 * (appended); frees @w in every case. Return: 0 or -ENOMEM.
 */
int qmsg_reply_end(struct qmsg_writer *w, bool more, int64_t last_ts,
		   uint64_t last_id, uint64_t count, struct proto_buf *out);
int qmsg_reply_error(int32_t code, const char *msg, int32_t pos, int32_t len,
		     struct proto_buf *out);

/*
 * qmsg_reply_decode - parse a reply; *@out owns everything afterwards
 * (qmsg_reply_free). Rejects rows whose length differs from ncols, and
 * sizes over the QMSG_MAX_* limits; a reply has no QMSG_MAX_REQUEST cap.
 * Return: as qmsg_request_decode(), but never TC_ERR_TOO_LONG.
 */
int qmsg_reply_decode(const void *buf, size_t len, struct qmsg_reply *out);
void qmsg_reply_free(struct qmsg_reply *r);

#endif
