/*
 * freeze.h - flight-recorder snapshots on the collector's side (issue 38;
 * PROTOCOL.md, "Flight recorder"): which connected recorders a snapshot
 * freezes, its id, and the freezes an agent's own trigger asks for.
 *
 * Two ways in. A query worker's `traceq --snapshot` (freezer_ask(), any
 * thread but the loop: the request is queued, an eventfd wakes the loop,
 * which runs it and wakes the caller), and an agent's MSG_FROZE
 * (freezer_froze(), on the loop), which freezes every recorder of its
 * group (the agent itself too: its buffer is frozen already), at most once
 * per freezer_interval() per group: a hostile agent that sends MSG_FROZE in
 * a loop freezes its group once per period, and the rest are counted
 * (freezer_refused()) and logged at most once per period.
 * Each host told to freeze gets conn_freeze() (journaled, then sent), and
 * keeps tracing off until the snapshot is whole (freezer_ended()): then no
 * host's next events fall inside another's window of it.
 * Prefix freezer_.
 */
#ifndef SERVER_CONN_FREEZE_H
#define SERVER_CONN_FREEZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

struct collector;
struct conn;
struct freezer;
struct proto_froze;

#define FREEZE_GROUP_S		10	/* one trigger freeze per group this often, by default */
#define FREEZE_GROUP_S_MAX	86400
#define FREEZE_THAW_MS		5000	/* a snapshot not ended by then is thawed */
#define FREEZE_PENDING		64	/* snapshots waiting to be whole, at most */
#define FREEZE_WHY_MAX		512

/* A snapshot asked for by hand (traceq --snapshot). */
struct freeze_ask {
	const char *reason;		/* the asker's words; NULL: none */
	const char *who;		/* the asker, for the record */
	const char *host_glob;		/* -H GLOB; NULL: every host the right allows */
	bool all;			/* the right allows every host ... */
	const char *const *allow;	/* ... else only names matching these */
	size_t nallow;
	uint64_t min_id;		/* the id is at least this (past the store's) */
};

/* What came of it. */
struct freeze_answer {
	uint64_t id;			/* the snapshot; 0: none was taken */
	unsigned hosts;			/* recorders told to freeze */
	char why[FREEZE_WHY_MAX];	/* when refused or failed: why */
};

/* freezer_new - a freezer for @col's connections on @base. Return: 0 and *@out; -errno. */
int freezer_new(struct collector *col, struct event_base *base, struct freezer **out);

/*
 * freezer_ask - freeze the recorders @a selects: the connected recorders
 * whose name matches @a->host_glob (all of them without one) and the
 * right. A host that matches the glob but not the right refuses the whole
 * request (nothing is frozen), as does a request that selects no
 * recorder. Any thread but the event loop; waits for the loop.
 * Return: 0 (*@out's id and hosts); -EACCES (outside the right),
 * -ENOENT (no recorder selected), -ESHUTDOWN, -ENOMEM, each with @out->why.
 */
int freezer_ask(struct freezer *fz, const struct freeze_ask *a, struct freeze_answer *out);

/*
 * freezer_froze - @c's agent (host @host, group @group, NULL: none)
 * says its trigger froze it (@f): freeze every recorder of its group as
 * "trigger EVENT on HOST", unless its group froze less than
 * freezer_interval() ago (then counted refused). Event loop.
 */
void freezer_froze(struct freezer *fz, struct conn *c, const char *host, const char *group,
		   const struct proto_froze *f);

/*
 * freezer_ended - a recorder's MSG_SNAP_END of snapshot @id came: once
 * every recorder told ended it (or FREEZE_THAW_MS after the freeze,
 * whichever is first), every connected recorder is told to thaw it
 * (conn_thaw(); one that does not hold it ignores that). Event loop.
 */
void freezer_ended(struct freezer *fz, uint64_t id);

/*
 * freezer_first_id - number the snapshots from @id on (at start: past the
 * highest stored, so that a trigger's freeze, which asks no store, takes
 * no id a stored snapshot has). Event loop, or before it runs.
 */
void freezer_first_id(struct freezer *fz, uint64_t id);

/*
 * freezer_interval - let a group freeze by a trigger once per @seconds
 * (1..FREEZE_GROUP_S_MAX; FREEZE_GROUP_S until called). Before the loop runs.
 */
void freezer_interval(struct freezer *fz, unsigned seconds);

/* freezer_refused - trigger freezes refused by the rate limit so far. */
uint64_t freezer_refused(const struct freezer *fz);

/* freezer_stop - fail every waiting and later ask (at shutdown). */
void freezer_stop(struct freezer *fz);
/* freezer_free - free @fz (after freezer_stop()). NULL ok. */
void freezer_free(struct freezer *fz);

#endif
