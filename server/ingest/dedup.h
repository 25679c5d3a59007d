/*
 * dedup.h - exactly-once page storage across reconnects and collector
 * restarts (module-private to server/).
 *
 * An agent names each of its runs with a random session id (HELLO
 * "session"). Within a session every stream's pages carry increasing
 * sequence numbers, and the agent resends every page it has no ACK for
 * after a reconnect, in order. So per (host, boot_id, session, stream) one
 * number suffices: the highest sequence number stored. A page at or below
 * it is a resend of a stored page and is dropped.
 *
 * The mark lives in memory, shared by every live connection of the
 * session (after a network cut the old connection may still deliver
 * retransmitted pages while the new one resends them), and in the store
 * (stream_marks), written in the transaction that stores the page's events,
 * so a collector restart resumes from exactly what was committed.
 */
#ifndef SERVER_DEDUP_H
#define SERVER_DEDUP_H

#include <stdbool.h>
#include <stdint.h>

#include "server/store/store.h"

struct dedup;			/* one agent session's marks */

/*
 * dedup_get - the marks of session (@host_id, @boot_id, @session) with
 * @nstreams streams: shared with a live connection of the same session
 * from @list, or loaded from @st (whose transaction must be open) and
 * added to @list. Release with dedup_put().
 *
 * Return: 0 and *@out; -ENOMEM; TC_ERR_DB; TC_ERR_MSG_MALFORMED when a
 * live connection of the session announced another number of streams.
 */
int dedup_get(struct dedup **list, struct store_writer *st, uint64_t host_id,
	      const char *boot_id, uint64_t session, uint32_t nstreams,
	      struct dedup **out);

/* dedup_put - drop one reference; the last one unlinks and frees @d. */
void dedup_put(struct dedup **list, struct dedup *d);

/* dedup_seen - whether page @seq of @stream (< nstreams) is already stored. */
bool dedup_seen(const struct dedup *d, uint32_t stream, uint64_t seq);

/*
 * dedup_stored - page @seq of @stream was handed to the store: raise the
 * mark in memory; dedup_flush() writes it.
 *
 * Return: 0; -EINVAL (@stream out of range).
 */
int dedup_stored(struct dedup *d, uint32_t stream, uint64_t seq);

/*
 * dedup_flush - write the marks raised since the last flush to @st, in the
 * current transaction: call it before the commit of the pages' events
 * (once per commit rather than one statement per page).
 *
 * Return: 0; TC_ERR_DB.
 */
int dedup_flush(struct dedup *d, struct store_writer *st);

/*
 * dedup_reload - after a transaction was rolled back, read every session's
 * marks in @list back from @st, forgetting the marks raised in memory since
 * the last commit: the pages behind them are not stored and must be taken
 * again when their agents resend them.
 */
int dedup_reload(struct dedup *list, struct store_writer *st);

/* dedup_high - the highest stored page of @stream (0: none). */
uint64_t dedup_high(const struct dedup *d, uint32_t stream);

#endif
