/*
 * clickhouse_txn.c - transactions as commit ids (clickhouse_txn.h).
 *
 * A commit sends, in this order: the facts (hosts, formats, names: kept
 * across a rollback, harmless twice), every event batch, the counted
 * batches (per-CPU counts, drops, freed bytes, stream and journal marks),
 * and last one row into `commits`. Rows with a _tc_commit above the last
 * row of `commits` belong to no completed commit: they are deleted
 * (ALTER TABLE ... DELETE, waited for) before the writer stores again, at
 * open and at the begin after a failure.
 *
 * Commit ids are never reused. Before a commit sends its first row that
 * carries _tc_commit, its id is reserved: a row in commit_ids with hw >= it,
 * acknowledged (ids go in blocks of CH_ID_BLOCK, one row a block). Nothing
 * deletes from commit_ids, and an acknowledged INSERT into a MergeTree stays
 * (the same ground the commits row stands on). So every _tc_commit ever
 * sent, by this process or an earlier one on the database, is <= max(hw),
 * whatever became of its rows: deleted by a mutation done or not yet done
 * (18.16 runs ALTER ... DELETE asynchronously), or never confirmed.
 * ch_txn_recover() starts above max(hw) and max(id) of commits (the latter
 * for a database from before commit_ids), so a restarted writer never
 * numbers a commit with an id a --follow cursor may have passed
 * (clickhouse_tail.c). An id lost with a block at a restart is a gap, which
 * readers take as they take a rolled-back commit's.
 *
 * Given up before deleted (void_ids, sql/clickhouse/0012-void-ids.sql). A
 * commits row can land late: the collector killed, or its commit failed,
 * with the row's INSERT held by the server. Deleting the commit's rows
 * (a mutation, done in the background) leaves a moment in which that row
 * would make them read. So before ch_clean() the writer gives the ids
 * up: one row (lo, hi, slot), acknowledged, for its ids in (last_ok, hi]
 * (ch_void()). At open, last_ok is read first (the last of its own ids
 * with a commits row and no void row) and hi is the last id of its own
 * reserved or committed: every id it may have used since, none it will
 * use (it numbers above every reserved id). At the begin after a failed
 * commit, hi is that commit's id (the next commit's is higher). Readers
 * take a commit as completed only without a void row (CH_COMMIT_IDS,
 * clickhouse_int.h), so a row that lands after the void row makes no
 * commit; one that landed before the read of last_ok made one, and is
 * not given up. Between that read and the void row, the row landing
 * makes the commit complete for that moment (clickhouse.h, "What is
 * still open").
 *
 * Several collectors on one database (issue 35). Each has a number of its
 * own, --collector-id N (0 <= N < STORE_COLLECTOR_IDS, s->slot), and
 * numbers its commits N modulo STORE_COLLECTOR_IDS: ids interleave and
 * never collide, with no exchange between collectors (ClickHouse has no
 * atomic counter to share). So:
 *  - "completed" is "has a row in commits" (CH_COMMITTED), no longer "up
 *    to the last row of commits": a collector's commit may complete after
 *    a later-numbered commit of another;
 *  - a collector's last_ok is the last of its own ids in commits, and its
 *    cleanup deletes rows past it of its own ids only: never the rows of
 *    another's commit in flight;
 *  - a block of commit_ids reserves the next CH_ID_BLOCK ids of its own
 *    residue; a writer opens above every id reserved or committed by any
 *    collector, as before.
 * Two collectors given the same number would mix their commits as two on
 * one number always did: clickhouse_fleet.c refuses the second while the
 * first is alive (its rows in live_hosts).
 */
#include "config.h"

#define LOG_PREFIX "clickhouse"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "server/store/clickhouse_send.h"
#include "server/store/clickhouse_shards.h"
#include "server/store/clickhouse_txn.h"
#include "server/store/clickhouse_util.h"

_Static_assert(STORE_COLLECTOR_IDS == 64, "CH_COMMIT_IDS says 64");

#define CH_MUTATION_WAIT_MS	120000	/* deletions of a failed commit, at most */
#define CH_ID_BLOCK		1024	/* commit ids reserved by one row of commit_ids */

static const char *const ch_counted_tables[] = {
	"cpu_counts", "drops", "freed", "stream_marks", "stream_spans", "journal_marks",
	"losses",
	"retain_cuts",	/* clickhouse_retain.c: a round whose counts were deleted must go */
	"retain_rounds",	/* and so its rounds from migration 0010 on */
};

/*
 * Wait until no deletion of an unfinished commit's rows (ch_delete_after())
 * is left to do in our database; retention's (clickhouse_retain.c), which
 * may rewrite a day's parts, are not waited for: retention itself waits.
 */
static int ch_mutations_wait(struct ch_store *s)
{
	int64_t end = util_now_ms() + CH_MUTATION_WAIT_MS;
	uint64_t left = 0;
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT count()");
	ch_shards_system(s, &q, "mutations");	/* every shard's */
	ch_sql_raw(&q, " AND is_done = 0 AND position(command, '_tc_commit >') > 0");
	while ((ret = ch_query_u64(s, &q, &left)) == 0 && left && util_now_ms() < end)
		usleep(100000);
	ch_sql_free(&q);
	if (ret == 0 && left)
		ret = ch_errf(s, TC_ERR_TIMEOUT, "ClickHouse has not done deleting the rows of "
			      "an unfinished commit within %d s", CH_MUTATION_WAIT_MS / 1000);
	return ret;
}

/* Delete @table's rows of commits after @last, when it has any (@events: on each shard). */
static int ch_delete_after(struct ch_store *s, const char *table, uint64_t last, bool events)
{
	struct ch_sql q;
	uint64_t n = 0;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT count() FROM ");
	ch_sql_ident(&q, table);
	ch_sql_addf(&q, " WHERE _tc_commit > %llu AND _tc_commit %% %u = %u",
		    (unsigned long long)last, STORE_COLLECTOR_IDS, s->slot);
	ret = ch_query_u64(s, &q, &n);
	if (ret == 0 && n) {
		log_warn("deleting %llu rows of %s that an unfinished commit left",
			 (unsigned long long)n, table);
		ch_sql_reset(&q);
		ch_sql_raw(&q, "ALTER TABLE ");
		ch_sql_ident(&q, table);
		ch_sql_addf(&q, " DELETE WHERE _tc_commit > %llu AND _tc_commit %% %u = %u",
			    (unsigned long long)last, STORE_COLLECTOR_IDS, s->slot);
		ret = events ? ch_shards_exec(s, &q) : ch_exec(s, &q);
	}
	ch_sql_free(&q);
	return ret;
}

/* Every row past s->last_ok deleted, in every event table and counted table. */
static int ch_clean(struct ch_store *s)
{
	struct ch_reply r;
	int ret = 0;

	for (size_t i = 0; i < sizeof(ch_counted_tables) / sizeof(*ch_counted_tables) && !ret; i++)
		ret = ch_delete_after(s, ch_counted_tables[i], s->last_ok, false);
	if (ret < 0)
		return ret;
	ret = ch_query_text(s, CH_EVENT_TABLES_SQL, &r);
	for (size_t i = 0; ret == 0 && i < r.nrows; i++)
		ret = ch_delete_after(s, ch_reply_cell(&r, i, 0), s->last_ok, true);
	if (ret == 0)
		ch_reply_free(&r);
	return ret ?: ch_mutations_wait(s);
}

/*
 * Our ids after s->last_ok up to @hi given up: a row of void_ids,
 * acknowledged before their rows are deleted (ch_clean()), so that a
 * commits row of one of them that lands later (a request the server
 * held) makes no commit (CH_COMMITTED). Return: 0; TC_ERR_DB.
 */
static int ch_void(struct ch_store *s, uint64_t hi)
{
	struct ch_sql q;
	int ret;

	if (hi <= s->last_ok)
		return 0;
	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "INSERT INTO void_ids (lo, hi, slot, ts, collector) VALUES (%llu, %llu,"
		    " %u, %lld, ", (unsigned long long)s->last_ok, (unsigned long long)hi, s->slot,
		    (long long)ch_now_ns());
	ch_sql_cstr(&q, s->collector);
	ch_sql_raw(&q, ")");
	ret = ch_exec(s, &q);
	ch_sql_free(&q);
	if (ret == 0)
		log_debug("commit ids %llu..%llu (collector number %u) given up: void",
			  (unsigned long long)s->last_ok + 1, (unsigned long long)hi, s->slot);
	return ret;
}

/* The last of our commits that completed; the highest id of ours reserved or committed. */
static int ch_txn_ours(struct ch_store *s, uint64_t *hi)
{
	uint64_t hw = 0, id = 0;
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "SELECT max(id) FROM " CH_COMMIT_IDS " WHERE id %% %u = %u",
		    STORE_COLLECTOR_IDS, s->slot);
	ret = ch_query_u64(s, &q, &s->last_ok);
	ch_sql_reset(&q);
	ch_sql_addf(&q, "SELECT max(hw) FROM commit_ids WHERE hw %% %u = %u", STORE_COLLECTOR_IDS,
		    s->slot);
	ret = ret ?: ch_query_u64(s, &q, &hw);
	ch_sql_reset(&q);	/* a database from before commit_ids */
	ch_sql_addf(&q, "SELECT max(id) FROM commits WHERE id %% %u = %u", STORE_COLLECTOR_IDS,
		    s->slot);
	ret = ret ?: ch_query_u64(s, &q, &id);
	ch_sql_free(&q);
	if (ret == 0)
		*hi = hw > id ? hw : id;
	return ret;
}

int ch_txn_recover(struct ch_store *s)
{
	uint64_t top = 0, ids = 0, hi = 0;
	struct ch_sql q;
	int ret = ch_txn_ours(s, &hi);

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT max(id) FROM commits");
	ret = ret ?: ch_query_u64(s, &q, &top);
	ch_sql_reset(&q);
	ch_sql_raw(&q, "SELECT max(hw) FROM commit_ids");
	ret = ret ?: ch_query_u64(s, &q, &ids);
	ch_sql_free(&q);
	if (ret < 0)
		return ret;
	/* above every id ever reserved: never one whose rows were deleted */
	top = ids > top ? ids : top;
	s->commit_id = top + 1 + (s->slot + STORE_COLLECTOR_IDS -
				  (top + 1) % STORE_COLLECTOR_IDS) % STORE_COLLECTOR_IDS;
	s->reserved = 0;	/* the first commit reserves a block of our own */
	ret = ch_void(s, hi) ?: ch_clean(s);
	if (ret == 0)
		s->dirty = false;
	return ret;
}

/* Drop what the open transaction holds (its counted and event rows, its marks). */
static void ch_txn_drop(struct ch_store *s)
{
	for (struct store_type *t = s->types; t; t = t->next) {
		ch_b_reset(&t->batch.rows);
		t->batch.nrows = 0;
	}
	for (int i = CH_FIRST_COUNTED; i < CH_NFIXED; i++) {
		ch_b_reset(&s->fixed[i].rows);
		s->fixed[i].nrows = 0;
	}
	for (size_t i = 0; i < s->nsmarks; i++)
		free(s->smarks[i].boot_id);
	s->nsmarks = 0;
	s->njmarks = 0;
	for (size_t i = 0; i < s->nboots; i++)
		free(s->boots[i].boot_id);
	s->nboots = 0;
}

int ch_begin(struct store_writer *w)
{
	struct ch_store *s = ch_writer_of(w);
	int ret;

	if (s->in_txn)
		return 0;
	s->failed = 0;
	if (s->dirty) {	/* the commits since last_ok failed: void, then deleted */
		ret = ch_void(s, s->commit_id - STORE_COLLECTOR_IDS) ?: ch_clean(s);
		if (ret < 0)
			return ret;
		s->dirty = false;
	}
	s->row_seq = 0;
	s->sent = false;
	s->in_txn = true;
	s->begun_ms = util_now_ms();	/* once a commit: the stacks' refresh (clickhouse_stacks.c) */
	return 0;
}

/* The commit's row, and when its answer was lost, whether it got there. */
static int ch_commit_row(struct ch_store *s)
{
	struct ch_sql q;
	uint64_t n = 0;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "INSERT INTO commits (id, ts, collector) VALUES (%llu, %lld, ",
		    (unsigned long long)s->commit_id, (long long)ch_now_ns());
	ch_sql_cstr(&q, s->collector);
	ch_sql_raw(&q, ")");
	/* Replicated: the same row again is one block, kept once (ch_exec_resend()) */
	ret = ch_sql_err(&q) ? ch_exec(s, &q) :
	      ch_after_http(s, s->http, ch_exec_resend(s->http, s->replicated, NULL,
						       ch_sql_text(&q), 0));
	if (ret < 0) {
		ch_sql_reset(&q);
		ch_sql_addf(&q, "SELECT count() FROM commits WHERE id = %llu",
			    (unsigned long long)s->commit_id);
		if (ch_query_u64(s, &q, &n) == 0 && n)
			ret = 0;	/* it did: the answer was lost, not the row */
	}
	ch_sql_free(&q);
	return ret;
}

/*
 * The open commit's id reserved in commit_ids before any row carries it.
 * A lost answer leaves s->reserved as it was: the next try writes the row
 * again (a second row with the same hw is harmless; only max(hw) counts).
 */
int ch_reserve_id(struct ch_store *s)
{
	uint64_t hw = s->commit_id + (uint64_t)(CH_ID_BLOCK - 1) * STORE_COLLECTOR_IDS;
	struct ch_sql q;
	int ret;

	if (s->commit_id <= s->reserved)
		return 0;
	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "INSERT INTO commit_ids (hw, ts, collector) VALUES (%llu, %lld, ",
		    (unsigned long long)hw, (long long)ch_now_ns());
	ch_sql_cstr(&q, s->collector);
	ch_sql_raw(&q, ")");
	ret = ch_exec(s, &q);
	ch_sql_free(&q);
	if (ret == 0)
		s->reserved = hw;
	return ret;
}

/* Send everything the transaction holds, facts first, the commit's row last. */
static int ch_send_all(struct ch_store *s)
{
	int ret = 0;

	for (int i = 0; i < CH_FIRST_COUNTED && !ret; i++)
		ret = ch_batch_send(s, &s->fixed[i]);
	ret = ret ?: ch_reserve_id(s);
	/* two at once: the sender's, and ours while it is busy */
	for (struct store_type *t = s->types; t && !ret; t = t->next) {
		s->sent |= t->batch.nrows > 0;
		ret = ch_send_idle(s) ? ch_send_start(s, &t->batch) : ch_batch_send(s, &t->batch);
	}
	ret = ch_send_wait(s) ?: ret;
	for (int i = CH_FIRST_COUNTED; i < CH_NFIXED && !ret; i++) {
		s->sent |= s->fixed[i].nrows > 0;
		ret = ch_batch_send(s, &s->fixed[i]);
	}
	if (ret == 0 && s->sent)
		ret = ch_commit_row(s);
	return ret;
}

int ch_commit(struct store_writer *w)
{
	struct ch_store *s = ch_writer_of(w);
	int ret = s->failed;

	if (!s->in_txn)
		return 0;
	ret = ret ?: ch_send_all(s);
	if (ret < 0) {
		ch_rollback(w);
		return ret;
	}
	if (s->sent) {
		s->last_ok = s->commit_id;
		s->commit_id += STORE_COLLECTOR_IDS;	/* our residue (--collector-id) */
	}
	ch_txn_drop(s);
	s->in_txn = false;
	return 0;
}

int ch_rollback(struct store_writer *w)
{
	struct ch_store *s = ch_writer_of(w);

	ch_send_wait(s);	/* none of it lands after the rows are deleted */
	if (s->in_txn && s->sent) {
		s->dirty = true;	/* some of it may be on the server */
		s->commit_id += STORE_COLLECTOR_IDS;	/* never reused */
	}
	ch_txn_drop(s);
	s->in_txn = false;
	s->failed = 0;
	return 0;
}

void ch_txn_facts_send(struct ch_store *s)
{
	for (int i = 0; i < CH_FIRST_COUNTED; i++)
		if (ch_batch_send(s, &s->fixed[i]) < 0)
			break;
}

int ch_fact_done(struct ch_store *s, struct ch_batch *b)
{
	int ret = ch_batch_row_done(b);

	if (ret < 0)
		return ch_errf(s, ret, "out of memory for rows");
	return s->in_txn ? 0 : ch_batch_send(s, b);
}

int ch_counted_done(struct ch_store *s, struct ch_batch *b)
{
	int ret = ch_batch_row_done(b);

	if (ret < 0)
		return ch_errf(s, ret, "out of memory for rows");
	if (s->in_txn)
		return 0;
	ret = ch_begin(&s->base.w);
	return ret ?: ch_commit(&s->base.w);
}
