/*
 * pidnames.h - one connection's pid -> task name table (private to
 * server/ingest/sink.c, which decides what goes in it), and the table's
 * saved form.
 *
 * What a connection knows of its pids' names is a function of the
 * messages and pages it walked (sink.c: the agent's CMDLINES, and the
 * names learned from events, stored or not), so a journal replay that
 * walks the same ones knows the same names at each page. A rotated
 * journal file does not begin with the pages that taught them but with
 * what the table holds beyond the agent's CMDLINES (pidnames_save(),
 * JREC_PIDNAMES records after the clock map), which its replay puts back
 * (pidnames_load()).
 *
 * Not thread-safe: the ingest worker's, or the event loop's once the
 * worker holds no job of the connection (a rotation).
 */
#ifndef SERVER_INGEST_PIDNAMES_H
#define SERVER_INGEST_PIDNAMES_H

#include <stddef.h>
#include <stdint.h>

/*
 * One pid's name: from the agent's CMDLINES, or learned from an event at
 * @learned_ts; and the latest name its task took that this connection saw
 * (sink.c, sink_track_event()), for the filters' COMM.
 */
struct pidname {
	int32_t pid;			/* 0: an empty slot */
	char comm[16];			/* "": none (only a tracked name) */
	uint64_t learned_ts;		/* 0: the agent's */
	uint64_t since;			/* trace ns @now holds from; 0: none seen */
	char now[16], before[16];	/* before: "" for a new task */
};

/* pid -> name, open addressing. Zeroed: empty. */
struct pidnames {
	size_t cap, count;		/* cap: a power of two, or 0 */
	struct pidname *slots;
};

#define PIDNAMES_SAVE_HDR	8	/* version, count (u32 each, little-endian) */
#define PIDNAMES_SAVE_SLOT	68	/* pid, comm, learned_ts, since, now, before */
#define PIDNAMES_SAVE_MAX	4096	/* slots in one saved record, at most */

/* pidnames_find - @pid's slot; NULL: none. */
struct pidname *pidnames_find(const struct pidnames *t, int32_t pid);

/* pidnames_slot - @pid's slot, made (zeroed but for pid) when it has none;
 * NULL: out of memory. @pid is not 0. */
struct pidname *pidnames_slot(struct pidnames *t, int32_t pid);

/*
 * pidnames_save - slots of @t from *@pos (an index into the table, 0 to
 * start) into @buf, at most PIDNAMES_SAVE_MAX of them (@buf holds
 * PIDNAMES_SAVE_HDR + PIDNAMES_SAVE_MAX * PIDNAMES_SAVE_SLOT bytes); *@pos
 * moves past them. Only slots that hold more than an agent's name: a
 * name learned from an event or a tracked rename (the agent's names are
 * in the CMDLINES a rotated file starts with, applied before these).
 * Return: the bytes written; 0 when no slot is left.
 */
size_t pidnames_save(const struct pidnames *t, size_t *pos, uint8_t *buf);

/*
 * pidnames_load - put the slots pidnames_save() wrote to @buf (@len bytes)
 * into @t, each replacing the pid's slot whole. Nothing changes unless all
 * are taken. Return: 0; TC_ERR_MSG_MALFORMED (not such bytes); -ENOMEM.
 */
int pidnames_load(struct pidnames *t, const uint8_t *buf, size_t len);

/* pidnames_free - release @t's slots; it is empty again. */
void pidnames_free(struct pidnames *t);

#endif
