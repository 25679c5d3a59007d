/*
 * dedup.h - exactly-once page storage across reconnects, collector
 * restarts and failovers between collectors (module-private to server/).
 *
 * An agent names each of its runs with a random session id (HELLO
 * "session"). Within a session every stream's pages carry increasing
 * sequence numbers, and the agent resends every page it has no ACK for
 * after a reconnect, in order, to the same collector or (--connect A,B)
 * to another. Per (host, boot_id, session, stream) the marks are the
 * spans of sequence numbers stored; a page inside one is a resend of a
 * stored page and is dropped.
 *
 * Why spans and not the highest page stored (issue 35): collector A
 * journals and ACKs pages 1..100 and dies before storing 51..100; the
 * agent resends 101.. to collector B, which stores them; when A comes back
 * and replays its journal, 51..100 are below B's highest but not stored.
 * And pages A journaled without its ACK reaching the agent come to B too:
 * B stores them, and A's replay finds them inside B's spans.
 *
 * The marks live in memory, shared by every live connection of the
 * session on this collector (after a network cut the old connection may
 * still deliver retransmitted pages while the new one resends them), and
 * in the store, written in the transaction that stores the pages' events,
 * so a restart resumes from exactly what was committed. They are read
 * from the store - every collector's committed spans - when a collector
 * first sees the session (its first connection, or its journal's replay)
 * and after a rollback. What this does not close: two collectors storing
 * the same page within the time one of them takes to commit it (PROTOCOL.md,
 * "Failover").
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

/* dedup_seen - whether page @seq of @stream (< nstreams) is already stored:
 * inside a span of this session's marks. */
bool dedup_seen(const struct dedup *d, uint32_t stream, uint64_t seq);

/*
 * dedup_stored - page @seq of @stream was handed to the store: add it to
 * the spans in memory; dedup_flush() writes the spans added since.
 *
 * Return: 0; -EINVAL (@stream out of range).
 */
int dedup_stored(struct dedup *d, uint32_t stream, uint64_t seq);

/*
 * dedup_flush - write the spans added since the last flush to @st, in the
 * current transaction: call it before the commit of the pages' events
 * (once per commit: one row per stream that moved, not one per page).
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

/* dedup_high - the highest stored page of @stream (0: none); tests. */
uint64_t dedup_high(const struct dedup *d, uint32_t stream);

#endif
