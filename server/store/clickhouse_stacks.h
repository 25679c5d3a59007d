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
 * for other frames, a collision, keeps those frames in the row instead. A reference is looked up with its row's
 * host only, so a host's rows never read another host's stack.
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
