/*
 * freeze.h - flight-recorder snapshots on the collector's side (issue 38;
 * PROTOCOL.md, "Flight recorder"): which connected recorders a snapshot
 * freezes, its id, and the freezes an agent's own trigger asks for.
 *
 * Two ways in. A query worker's `traceq --snapshot` (freezer_ask(), any
 * thread but the loop: the request is queued, an eventfd wakes the loop,
 * which runs it and wakes the caller), and an agent's MSG_FROZE
 * (freezer_froze(), on the loop), which freezes every recorder of its
 * host's freeze groups (the agent itself too: its buffer is frozen
 * already), at most once per freezer_interval() per group: a hostile agent
 * that sends MSG_FROZE in a loop freezes its groups once per period, and
 * the rest are counted (freezer_refused()) and logged at most once per
 * period.
 *
 * Who is in a group is the collector's word, never the agent's: the
 * `freeze-group = NAME GLOB[,GLOB...]` lines (struct collector's
 * freeze_groups, hostmap.h) put the hosts whose names (bound to their
 * certificates at HELLO) match a GLOB in group NAME. An agent's --group
 * (HELLO "group") only narrows its own trigger to that one of its host's
 * groups; a claim of a group the lines do not put its host in is ignored,
 * counted and logged. A host in no group freezes only itself, at most once
 * per period too.
 *
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
#define FREEZE_HOST_GROUPS	32	/* a trigger reaches at most this many of its host's groups */

/* Why a trigger freeze was refused, or reached less than the agent asked (/metrics). */
enum freeze_refusal {
	FREEZE_RATE_LIMIT,		/* its group (or lone host) froze < freezer_interval() ago */
	FREEZE_GROUP_CLAIM,		/* its --group claim ignored: not the collector's word */
	FREEZE_REFUSALS
};

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
 * freezer_froze - @c's agent (host @host, its --group claim @claim, NULL:
 * none) says its trigger froze it (@f): freeze as "trigger EVENT on HOST"
 * @c and every recorder of the groups it reaches: @claim when a
 * freeze-group line puts @host in it, else every group the lines put
 * @host in (the first FREEZE_HOST_GROUPS; an ignored claim is counted and
 * logged); none: @c alone. Groups (or the lone host) that froze less than
 * freezer_interval() ago are left out, counted refused; with none left,
 * nothing is frozen. Event loop.
 */
void freezer_froze(struct freezer *fz, struct conn *c, const char *host, const char *claim,
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

/*
 * freezer_refused - trigger freezes refused (FREEZE_RATE_LIMIT: per group
 * left out) or narrowed (FREEZE_GROUP_CLAIM) for @why so far. Any thread.
 */
uint64_t freezer_refused(const struct freezer *fz, enum freeze_refusal why);

/* freezer_refusal_name - @why as a word ("rate_limit"); NULL past the last. */
const char *freezer_refusal_name(unsigned why);

/* freezer_stop - fail every waiting and later ask (at shutdown). */
void freezer_stop(struct freezer *fz);
/* freezer_free - free @fz (after freezer_stop()). NULL ok. */
void freezer_free(struct freezer *fz);

#endif
