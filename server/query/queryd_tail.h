/*
 * queryd_tail.h - the live tail of the query endpoint (QOP_TAIL, traceq
 * --follow): a page of the rows stored from a cursor on that match the
 * request's selection, in storage order; see proto/PROTOCOL.md, "Tail".
 *
 * Threads: called by a query worker with its own store handle.
 */
#ifndef SERVER_QUERYD_TAIL_H
#define SERVER_QUERYD_TAIL_H

#include <stdint.h>

#include "proto/qmsg.h"
#include "server/query/queryd_sel.h"
#include "server/store/store.h"

/* Rows of every type a tail page looks at, at most (its matches: r->limit). */
#define QTAIL_MAX_SCAN	65536

/*
 * qtail_page - begin the reply to @r in *@w and put in it the rows @c
 * selects that were stored from @r->after_id on (0: from now, or from the
 * start of @r's window), with the cursor to go on from in @pg->last_id and
 * what the reader missed (qmsg_reply_tail()).
 *
 * Return: 0, *@w to be ended by the caller with @pg; a negative code (no
 * *@w then).
 */
int qtail_page(struct store_reader *st, const struct qmsg_request *r, struct qsel *c,
	       struct qmsg_writer **w, struct qsel_page *pg);

#endif
