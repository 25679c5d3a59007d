/*
 * clickhouse_txn.h - a writer's transactions on a server that has none:
 * rows of a transaction carry its commit id (_tc_commit) and are sent in
 * batches; its commit is the row in `commits` sent last. What this
 * promises, and why, is in clickhouse.h ("Nothing lost, nothing twice").
 */
#ifndef SERVER_STORE_CLICKHOUSE_TXN_H
#define SERVER_STORE_CLICKHOUSE_TXN_H

#include <stdint.h>

#include "server/store/clickhouse_int.h"

/*
 * ch_txn_recover - at open: the last commit that completed, and every row
 * of a later one (a collector killed mid-commit) deleted, waiting for the
 * deletions. Return: 0; TC_ERR_DB.
 */
int ch_txn_recover(struct ch_store *s);
/* The open commit's id reserved in commit_ids: before any row carries it. */
int ch_reserve_id(struct ch_store *s);

/* The writer ops. */
int ch_begin(struct store_writer *w);
int ch_commit(struct store_writer *w);
int ch_rollback(struct store_writer *w);

/*
 * ch_fact_done, ch_counted_done - a row was appended to batch @b (a fact,
 * or a counted row of the open transaction). Outside a transaction it is
 * sent at once (a counted one in a transaction of its own), as SQLite's
 * autocommit. Return: 0; what sending failed with.
 */
int ch_fact_done(struct ch_store *s, struct ch_batch *b);
int ch_counted_done(struct ch_store *s, struct ch_batch *b);

/* ch_txn_facts_send - send the facts waiting (at close: best effort). */
void ch_txn_facts_send(struct ch_store *s);

/*
 * ch_txn_low_fold, ch_txn_saw_ts - the lowest ts of the event rows stored
 * since retention last counted (clickhouse_retain.c): rows of the open
 * commit apart, those of a completed commit folded into seen_low (of a
 * rolled-back one too: an extra look, never a missed one).
 */
static inline void ch_txn_low_fold(struct ch_store *s)
{
	if (s->txn_low_id == s->commit_id)
		return;
	if (s->txn_low_id <= s->last_ok && s->txn_low < s->seen_low)
		s->seen_low = s->txn_low;
	s->txn_low_id = s->commit_id;
	s->txn_low = INT64_MAX;
}

static inline void ch_txn_saw_ts(struct ch_store *s, int64_t ts)
{
	ch_txn_low_fold(s);
	if (ts < s->txn_low)
		s->txn_low = ts;
}

/* ch_writer_enter - what every writer op does first: fail as a failed insert left it. */
static inline int ch_writer_enter(struct ch_store *s)
{
	return s->failed;
}

#endif
