/*
 * queryd_hist.h - the query endpoint's histogram op (QOP_HIST, traceq
 * --hist): the spec parsed again here (common/hist.h), its fields resolved
 * against the event's stored fields, the histogram computed by the store
 * (store_hist()) over the compiled query, a page of its entries replied.
 *
 * Threads: called on a query worker with that worker's store handle.
 */
#ifndef SERVER_QUERYD_HIST_H
#define SERVER_QUERYD_HIST_H

#include <stdint.h>

#include "proto/msg.h"
#include "proto/qmsg.h"
#include "server/store/store.h"

/*
 * queryd_hist_run - answer @r (op QOP_HIST) over @q, the request's query
 * compiled for one event type (its filter bound, hosts, the asker's scope,
 * the window): the reply to @out, the entries it holds in *@rows.
 *
 * The reply's columns, per key: the key's value (an unsigned integer, or
 * the host's name), then for .execname and .sym keys a text column
 * "FIELD.execname" / "FIELD.sym" (the comm, "<idle>" for pid 0, nil when
 * unknown; the symbol's name without offset, nil when none); a
 * common_stacktrace key is one text column, its frames one a line
 * ("NAME+0xOFF", "0xADDR" when no symbol covers it); then
 * "hitcount" and the vals' sums. Rows in the spec's sort order from
 * r->after_id on, at most r->limit (QMSG_MAX_ROWS); count is Hits,
 * entries and dropped the totals, more says another page follows, and
 * last_ts is the newest ts counted plus one: the next page's to_ts, so
 * that every page counts the same rows.
 *
 * Return: 0 (reply in @out); 1 (the spec was refused: an error reply is
 * in @out); a negative code (TC_ERR_DB, -ENOMEM: the caller replies).
 */
int queryd_hist_run(struct store_reader *st, const struct qmsg_request *r,
		    const struct store_query *q, struct proto_buf *out, uint64_t *rows);

#endif
