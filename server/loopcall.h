/*
 * loopcall.h - run a call on the event loop's thread and wait for its
 * result, from any other thread (the query workers' imports and snapshots:
 * server/ingest/importer.c, server/conn/freeze.c).
 *
 * A caller's struct loopcall, on its own stack, goes on a queue under a
 * mutex; an eventfd wakes the loop, which hands the queued calls in order
 * to the queue's run function; that one, or a later callback of the loop,
 * ends each with loopcall_done(), which wakes its caller (a condition
 * variable). loopcall_stop() ends every queued call and refuses later
 * ones: the loop is going away.
 * Prefix loopcall_.
 */
#ifndef SERVER_LOOPCALL_H
#define SERVER_LOOPCALL_H

#include <stdbool.h>

#include <event2/event.h>

struct loopcall_queue;

/* One call; the caller's @arg says what to run, the rest is the queue's. */
struct loopcall {
	void *arg;
	int ret;			/* the result: loopcall_done()'s @ret */
	bool done;
	bool stopped;			/* refused or ended by loopcall_stop() */
	struct loopcall *next;
};

/*
 * loopcall_fn - run @c on the loop (@arg: loopcall_new()'s). It ends @c
 * with loopcall_done(), now or from a later callback of the loop.
 */
typedef void loopcall_fn(void *arg, struct loopcall *c);

/*
 * loopcall_new - a queue whose calls @run runs on @base's loop; its
 * eventfd's warnings are logged with prefix @name (a string that outlives
 * the queue). Return: 0 and *@out; -ENOMEM; -errno (eventfd()).
 */
int loopcall_new(struct event_base *base, const char *name, loopcall_fn *run, void *arg,
		 struct loopcall_queue **out);

/*
 * loopcall_call - queue @c (its @arg set) for the loop and wait until it is
 * done. Any thread but the loop's. @c is the caller's until this returns.
 * Return: @c's result; -ESHUTDOWN with @c->stopped set when the queue was
 * stopping (then @c never ran).
 */
int loopcall_call(struct loopcall_queue *q, struct loopcall *c);

/* loopcall_done - end @c with @ret and wake its caller. Loop only. */
void loopcall_done(struct loopcall_queue *q, struct loopcall *c, int ret);

/*
 * loopcall_stop - refuse calls from now on and end every queued one that
 * has not run (-ESHUTDOWN, ->stopped). Calls that ran and wait for a later
 * loopcall_done() are their owner's to end. Loop only.
 */
void loopcall_stop(struct loopcall_queue *q);

/* loopcall_free - free @q (no call waits on it any more). NULL ok. */
void loopcall_free(struct loopcall_queue *q);

#endif
