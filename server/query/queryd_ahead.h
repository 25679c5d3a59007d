/*
 * queryd_ahead.h - pages of a select read ahead by the query endpoint
 * (queryd.c): once a worker has sent a page that says `more`, it reads the
 * page the client will ask for next while the client decodes and prints,
 * and keeps it here until that request comes.
 *
 * A page is kept for one asker and one request exactly: the request the
 * client makes from the page it got (the same query, options and limit,
 * after that page's last row, `sent` counting its rows), and the same
 * scope rules (their generation). What is not asked for within
 * QAHEAD_KEEP_MS is dropped. At most QAHEAD_MAX pages are kept, at most
 * half the workers read ahead at once, so read-ahead never holds every
 * worker.
 *
 * Threads: every call may come from any query worker; the cache has its
 * own lock.
 */
#ifndef SERVER_QUERYD_AHEAD_H
#define SERVER_QUERYD_AHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"
#include "proto/qmsg.h"
#include "server/query/qauth.h"
#include "server/query/queryd_sel.h"

#define QAHEAD_MAX	8		/* pages kept or being read */
#define QAHEAD_KEEP_MS	5000		/* a page not asked for by then is dropped */
#define QAHEAD_RESULT_MAX	600	/* what the query log says of a page */
#define QAHEAD_PARK_MAX	4		/* selects' states kept for their next page */
#define QAHEAD_PARK_MS	2000		/* a state not taken by then is freed */

struct qahead;
struct qahead_entry;

/* qahead_new - a cache for @workers query workers. Return 0 or -ENOMEM. */
int qahead_new(unsigned workers, struct qahead **out);
void qahead_free(struct qahead *a);

/*
 * qahead_begin - claim a place for the page @who will ask with @next
 * (which the caller then answers), read under scope rules of generation
 * @gen. Return: the place, or NULL (no room, a worker too many, or the
 * same page is already there or being read).
 */
struct qahead_entry *qahead_begin(struct qahead *a, const struct qauth_who *who,
				  const struct qmsg_request *next, uint64_t gen);

/*
 * qahead_request - the request @e was claimed for (qahead_begin()'s
 * @next), decoded again into @out (free with qmsg_request_free()): what
 * the reader answers once @next itself is gone. Return: 0 or < 0.
 */
int qahead_request(const struct qahead_entry *e, struct qmsg_request *out);

/*
 * qahead_done - the page for @e: @page (taken, left empty), where it ended
 * (@pg) and what the query log says of it (@result); @page NULL: it could
 * not be read, and whoever waits for it reads it itself.
 */
void qahead_done(struct qahead *a, struct qahead_entry *e, struct proto_buf *page,
		 const struct qsel_page *pg, const char *result);

/*
 * qahead_take - the page read ahead for @r from @who under rules of
 * generation @gen, waiting while it is still being read. Return: true and
 * the page in @out (empty before), where it ended in @pg and its log text
 * in @result; false: none (the caller answers @r itself).
 */
bool qahead_take(struct qahead *a, const struct qauth_who *who, const struct qmsg_request *r,
		 uint64_t gen, struct proto_buf *out, struct qsel_page *pg, char *result,
		 size_t rlen);

/*
 * qahead_park - keep @c, the state of a select after the page before
 * @next (queryd.c: a struct qsel), for the page @who will ask with @next
 * under rules of generation @gen; @c is the cache's then, freed with
 * @free_fn when nobody takes it within QAHEAD_PARK_MS, or when
 * QAHEAD_PARK_MAX newer ones come. qahead_unpark - the state kept for @r
 * from @who under @gen, taken (the caller's to free); NULL: none.
 */
void qahead_park(struct qahead *a, const struct qauth_who *who, const struct qmsg_request *next,
		 uint64_t gen, void *c, void (*free_fn)(void *c));
void *qahead_unpark(struct qahead *a, const struct qauth_who *who, const struct qmsg_request *r,
		    uint64_t gen);

/* qahead_stats - pages taken and pages dropped unasked so far (for tests). */
void qahead_stats(struct qahead *a, uint64_t *taken, uint64_t *dropped);

#endif
