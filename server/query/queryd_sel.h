/*
 * queryd_sel.h - what a select or count request selects, for the query
 * endpoint (queryd.c): the query's selectors resolved against the stored
 * event types, the filter bound to each, the window (end-relative times
 * resolved), and the rows of several types merged in time order.
 *
 * Threads: a struct qsel belongs to the query worker that compiled it and
 * is used with that worker's store handle only.
 */
#ifndef SERVER_QUERYD_SEL_H
#define SERVER_QUERYD_SEL_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/msg.h"
#include "proto/qmsg.h"
#include "server/store/store.h"

struct qsel;

/* Where a page of rows ended, for the reply's trailer. */
struct qsel_page {
	bool more;
	int64_t last_ts;
	uint64_t last_id;
	int64_t last_type;	/* multi-type answers: the last row's type key */
	uint64_t rows;
};

/*
 * qsel_compile - parse @r's query, resolve its selectors against the event
 * types stored in @st, bind the filter to each type, and set what the
 * store is asked (@r's hosts, CPUs, window, order; @scope: the hosts the
 * asker may read, NULL: all; a type none of those hosts has is, for it,
 * not stored: an unknown event, never suggested). With @r->from_end / to_end, the window is
 * relative to the newest stored row of the selected types that @scope
 * and the request's hosts and CPUs allow.
 *
 * Return: 0 and *@out (free with qsel_free()); 1 when the query is in
 * error: its reply (with the caret position) is then in @reply; a negative
 * code (TC_ERR_DB, -ENOMEM) otherwise.
 */
int qsel_compile(struct store_reader *st, const struct qmsg_request *r,
		 const struct store_scope *scope, struct qsel **out, struct proto_buf *reply);

/* qsel_free - free @c; NULL is allowed. */
void qsel_free(struct qsel *c);

/* qsel_event - "system:name" of a one-type selection, NULL for several. */
const char *qsel_event(const struct qsel *c);

/*
 * qsel_ntypes, qsel_schema, qsel_read - the selected types, each with the
 * store query compiled for it (valid until qsel_free()).
 */
size_t qsel_ntypes(const struct qsel *c);
const struct store_schema *qsel_schema(const struct qsel *c, size_t i);
const struct store_query *qsel_read(const struct qsel *c, size_t i);

/* qsel_count - the rows the selection matches, summed over its types. */
int qsel_count(struct store_reader *st, struct qsel *c, uint64_t *n);

/*
 * qsel_select - begin the reply to @r in *@w and put one page of rows in
 * it: rows of one type in (ts, rowid) order, or of several merged in
 * (ts, type, rowid) order (descending with r->reverse), continuing after
 * @r's keyset. Memory is bounded by the page, not by the rows that match:
 * each type is read through its own keyset cursor a few rows at a time.
 *
 * Return: 0, *@w to be ended by the caller with @pg; a negative code (no
 * *@w then).
 */
int qsel_select(struct store_reader *st, const struct qmsg_request *r, struct qsel *c,
		struct qmsg_writer **w, struct qsel_page *pg);

/*
 * qsel_keepable - whether @c's state after a page of @r may be kept for
 * the next page (a select merging several types over a window that is not
 * relative to the newest row); qsel_resume - take @c, kept so after the
 * page before @r (the same request but its keyset and sent count), for
 * @r: its cursors and unsent rows stay, what it reads through points into
 * @r and @scope now. Return: 0; -EINVAL (@c cannot continue as @r).
 */
bool qsel_keepable(const struct qsel *c, const struct qmsg_request *r);
int qsel_resume(struct qsel *c, const struct qmsg_request *r, const struct store_scope *scope);

/*
 * qsel_begin_tail - begin a tail reply (qmsg_reply_begin_tail()) with the
 * selected types, in the order of qsel_read(); qsel_put_row - put @row of
 * type @i in it.
 */
int qsel_begin_tail(struct qsel *c, struct qmsg_writer **w);
void qsel_put_row(struct store_reader *st, const struct qsel *c, size_t i, struct qmsg_writer *w,
		  const struct store_row *row);

#endif
