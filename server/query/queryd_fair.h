/*
 * queryd_fair.h - the query pool's run queue, fair between identities
 * (server/query/queryd.c): one queue per identity that has requests in flight
 * (struct qauth_who: an ipc peer's uid, a certificate's CN, the tcp
 * endpoint's "nobody"), served round-robin, and a cap on the workers one
 * identity may hold at once (qfair.run_max, a fraction of them), so one
 * identity's heavy requests (a slow --sql fifty times over) leave a worker
 * for everybody else's and wait in their own queue instead of in front of
 * theirs. One identity also holds at most QFAIR_HELD_MAX requests in
 * flight (queued, waiting for `sync`, or running): past it a request is
 * refused at once, so the endpoint's request slots are never all one
 * identity's.
 *
 * No locking here: the caller holds the lock of its queues (queryd.lock)
 * around every call. Prefix qfair_.
 */
#ifndef SERVER_QUERYD_FAIR_H
#define SERVER_QUERYD_FAIR_H

#include <stddef.h>

#include "server/query/qauth.h"

#define QFAIR_HELD_MAX	64	/* requests in flight per identity */

struct qfair_ident;

/* A request's place in the queues; embedded in its slot, zeroed: not in. */
struct qfair_item {
	struct qfair_item *next;	/* in its identity's queue */
	struct qfair_ident *id;		/* NULL: not entered */
};

struct qfair {
	struct qfair_ident *idents;	/* every identity with requests in flight */
	struct qfair_ident *last;	/* the one served last: round-robin */
	unsigned run_max;		/* workers one identity may hold at once */
	size_t queued;			/* items waiting, all identities */
};

/*
 * qfair_init - empty queues for a pool of @workers threads: one identity
 * holds at most @workers less a quarter of them (at least one less when
 * there are two or more; 4 workers: 3).
 */
void qfair_init(struct qfair *f, unsigned workers);

/* qfair_free - free what is left (at the pool's stop; nothing runs). */
void qfair_free(struct qfair *f);

/*
 * qfair_enter - @it is a request of @who (copied) in flight from now on.
 * Return: 0; -EBUSY when @who has QFAIR_HELD_MAX in flight already;
 * -ENOMEM. @it is left alone on failure.
 */
int qfair_enter(struct qfair *f, const struct qauth_who *who, struct qfair_item *it);

/* qfair_leave - @it is answered: no longer in flight. Not entered: nothing. */
void qfair_leave(struct qfair *f, struct qfair_item *it);

/* qfair_push - @it (entered) is ready to run: at the end of its identity's queue. */
void qfair_push(struct qfair *f, struct qfair_item *it);

/*
 * qfair_pop - the next request to run: the first queued one of the next
 * identity (round-robin) below its run_max; that identity then holds one
 * worker more until qfair_done(). Return: it, with *@id; NULL: none may run.
 */
struct qfair_item *qfair_pop(struct qfair *f, struct qfair_ident **id);

/* qfair_done - the worker @qfair_pop() gave @id to is free again. */
void qfair_done(struct qfair *f, struct qfair_ident *id);

#endif
