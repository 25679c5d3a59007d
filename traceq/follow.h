/*
 * follow.h - the cursor of traceq --follow (QOP_TAIL_WRITERS), apart from what
 * prints it: mode_follow.c prints the pages on stdout, serve_live.c
 * pushes them to the page's live streams. One struct tq_follow per
 * follower; the collector keeps nothing between pages, so the cursor
 * (the last row's id) is all the state there is. Prefix tq_follow_.
 */
#ifndef TRACEQ_FOLLOW_H
#define TRACEQ_FOLLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/qmsg.h"

struct client;
struct traceq_opts;

struct tq_follow {
	struct qmsg_request req;	/* QOP_TAIL_WRITERS (its cursors) or QOP_TAIL on
					 * the query, window, hosts, CPUs */
	uint64_t cursor;	/* the last row's id; 0: from the collector's end on */
	bool waiting;		/* the collector said no selected event is stored yet */
	bool from_start;	/* the last call asked from the storage start (see follow.c) */
};

/*
 * tq_follow_init - a follower of @o's query, selection and layout from
 * @cursor on (0: from now on). @o (its query) must outlive @f.
 */
void tq_follow_init(struct tq_follow *f, const struct traceq_opts *o, uint64_t cursor);

/*
 * tq_follow_page - the next page of at most @limit rows (@sent: the rows
 * taken so far, the collector's accounting) into *@rep; the cursor moves
 * past it. Return as client_call(): 0 (*@rep set, maybe no rows), 1 (no
 * answer: client_lost() says whether to reconnect), 2, 3 (no selected
 * event stored yet: call again later).
 */
int tq_follow_page(struct client *c, struct tq_follow *f, uint32_t limit, uint64_t sent,
		   struct qmsg_reply *rep);

/* The longest tq_follow_id() text, its NUL included: 21 bytes a number. */
#define TQ_FOLLOW_ID_MAX	(21 * (QMSG_MAX_CURSORS + 1) + 1)

/*
 * tq_follow_id - @f's position as text into @buf[@len]: "CURSOR", or
 * "CURSOR:C0,C1,..." with the cursors of QOP_TAIL_WRITERS once it has
 * them (follow_id.c). Return: its length (cut at @len - 1).
 */
size_t tq_follow_id(const struct tq_follow *f, char *buf, size_t len);

/*
 * tq_follow_resume - go on from @id, a tq_follow_id() text (a browser's
 * Last-Event-ID). Return: 0; -EINVAL when @id is not one (at most
 * QMSG_MAX_CURSORS cursors, decimal digits only): @f is left as it was.
 */
int tq_follow_resume(struct tq_follow *f, const char *id);

/* tq_follow_first_ts - the earliest wall-clock time of @rep's rows (INT64_MAX: none). */
int64_t tq_follow_first_ts(const struct qmsg_reply *rep);

#endif
