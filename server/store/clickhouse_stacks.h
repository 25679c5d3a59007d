/*
 * clickhouse_stacks.h - kernel stacks stored once each on ClickHouse
 * (sql/clickhouse/0006-stacks.sql; SQLite's is sqlite_stacks.c).
 *
 * A stack's id is ch_id() of its host and frames (SHA-256, 63 bits: the
 * same on every collector, so front ends writing one database agree
 * without asking it); the stacks table (host_id, id, frames) is a fact,
 * written again harmlessly. The row's caller column, a String, keeps its
 * type: it holds a reference of CH_STACK_REF_LEN bytes (CH_STACK_REF,
 * then the id, little-endian), a length no stack has (frames are whole
 * longs), and a row stored before it keeps its frames there. The writer
 * remembers the stacks it wrote with their frames (bounded, like
 * SQLite's), found by store_stack_hash() of the frames, so that the
 * SHA-256 is computed only for a stack it has not written: an id it wrote
 * for other frames, a collision, keeps those frames in the row instead.
 * A reference is looked up with its row's host only, so a host's rows
 * never read another host's stack.
 *
 * Retention (sql/clickhouse/0011-stacks-written.sql). A stacks row
 * carries written, the server's insert time. A writer forgets what it
 * remembers at the first commit that begins CH_STACKS_REFRESH_MS (an
 * hour) or more after the commit that wrote the oldest of it began, so
 * every stack a writer refers to without writing its row has a row
 * written less than that and one commit's length ago. The retention lease holder's sweep
 * (ch_stacks_sweep()) deletes the stacks that no event row references
 * (any commit's: a row not committed yet keeps its stack) and whose rows
 * are all older than twice that, by an ALTER TABLE DELETE that takes only
 * rows older than that too. So it deletes no stack a writer remembers
 * (its row is younger), on any collector, without asking them; a row
 * sent after the sweep's look refers either to a remembered stack or to
 * one its writer writes again, whose new row the DELETE leaves. Rows of
 * a stack written again while the older rows stay: ReplacingMergeTree
 * keeps the last inserted, the younger. What it assumes: a commit's rows
 * reach the server well within the hour (they take seconds) and every
 * collector on the database forgets so (a collector of before this
 * remembers forever: stop those before a new one's retention runs). The
 * sweep deletes at most CH_STACKS_SWEEP_MAX stacks at a time, the rest at
 * the next.
 */
#ifndef SERVER_STORE_CLICKHOUSE_STACKS_H
#define SERVER_STORE_CLICKHOUSE_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/store/clickhouse_int.h"
#include "server/store/clickhouse_reply.h"
#include "server/store/store_types.h"

#define CH_STACK_REF		'\1'
#define CH_STACK_REF_LEN	9
#define CH_STACK_MAX		4096u	/* frames a stacks row holds, at most (bytes) */

/*
 * ch_stack_ref - stack column value @v of a row of host @host as a
 * reference into @ref (then @v points at it), its stacks row queued as a
 * fact when the writer has not written it; a stack it cannot refer to
 * (empty, past CH_STACK_MAX, a collision) stays as it is.
 * Return: 0; -ENOMEM.
 */
int ch_stack_ref(struct ch_store *s, uint64_t host, struct store_value *v,
		 uint8_t ref[CH_STACK_REF_LEN]);

/* ch_stacks_forget - the writer's stacks in memory forgotten (sent again when seen). */
void ch_stacks_forget(struct ch_store *s);

/*
 * ch_stacks_sweep - retention's (the lease holder's writer thread, idle:
 * no deletion of event rows running): when rows were removed since the
 * last sweep (s->stacks_orphaned) and the last was CH_STACKS_SWEEP_MS
 * ago, delete the stacks no event row references whose newest row is
 * older than twice CH_STACKS_REFRESH_MS (an ALTER TABLE DELETE, of
 * CH_STACKS_SWEEP_MAX at most). Return: 0; TC_ERR_DB; -ENOMEM.
 */
int ch_stacks_sweep(struct ch_store *s);

/* The frames of the references of a page of rows (a reader's). */
struct ch_stack_page {
	struct ch_reply r;	/* host_id, id, frames */
	struct ch_stack_found *v;	/* sorted by (host, id) */
	size_t n;
};

/*
 * ch_stacks_page - the frames of every reference in reply columns @cols
 * (@ncols of them; column 0 is the host) of page @r, into @out (freed and
 * filled again). Return: 0; TC_ERR_DB; -ENOMEM.
 */
int ch_stacks_page(struct ch_store *s, const struct ch_reply *r, const size_t *cols,
		   size_t ncols, struct ch_stack_page *out);

/*
 * ch_stack_frames - @v (a stack column's value of host @host's row) as
 * its frames when it is a reference @pg holds (valid until @pg changes).
 */
void ch_stack_frames(const struct ch_stack_page *pg, uint64_t host, struct store_value *v);


/* ch_stack_page_free - free what @pg holds; it is empty after. */
void ch_stack_page_free(struct ch_stack_page *pg);

#endif
