/*
 * clickhouse_retain.c - retention on ClickHouse (store_retain()): the
 * events older than a time go, then the oldest time slices while the
 * database's active parts exceed a size; what goes is counted as drops
 * (host 0, the event's system and name, reason "retention") and gives its
 * hosts' quota back (freed: the host's page bytes per stored event), as
 * sqlite_retain.c does.
 *
 * Rounds. ClickHouse removes rows two ways: ALTER TABLE DROP PARTITION
 * (a whole day, at once) and ALTER TABLE DELETE (a mutation: it rewrites
 * every part holding a row it removes, and 18.16 runs it in the
 * background; system.mutations says when it is done). So retention goes
 * in rounds, each a cut and an upto:
 *  1. count, per table and host, the rows C = { ts < cut, _tc_commit <=
 *     upto, completed (CH_COMMITTED) }, upto being the last commit that
 *     completed: no row of the open commit is in C, nor of a failed or
 *     abandoned one (a late batch of a commit whose writer gave it up,
 *     landing after the cleanup deleted its other rows: no commits row,
 *     or a void one, clickhouse_txn.c). R = { ts < cut, _tc_commit <=
 *     upto } is what the round removes: C and those orphans;
 *  2. in the open commit: the counts (drops, freed rows) and the round's
 *     row in retain_cuts (cut, upto), which is sent at once, after its
 *     commit id was reserved (clickhouse_txn.c); a round with orphans
 *     and nothing to count is written too, with no counts, so that step
 *     3 removes them;
 *  3. once that commit completed (the next call, a second later in the
 *     ingest worker): remove R: DROP PARTITION of each day before the
 *     cut's day whose rows all have _tc_commit <= upto, then ALTER TABLE
 *     DELETE WHERE ts < cut AND _tc_commit <= upto where rows of R are
 *     left; again at each call until none is left;
 *  4. no round counts while a deletion of ours is not done or the last
 *     committed round has rows left.
 *
 * Counted exactly once, even across a kill -9:
 *  - whether a commit id <= upto is completed no longer changes once the
 *    round counted: a commit of collector k at or below its upto that had
 *    no commits row then cannot get one that counts, because upto_k is a
 *    commit of k that completed after it (a collector's commits run in
 *    order) and k wrote its void row, which CH_COMMITTED leaves out,
 *    before it stored that one (at the begin after the failure, or at its
 *    restart's open: clickhouse_txn.c); and a completed one is never made
 *    void (k voids only ids above what it read as its last completed);
 *  - so C is fixed by (cut, upto): nothing but this file removes rows of
 *    completed commits, the rows counted in 1 are C's rows step 3
 *    removes, however often it runs (a DROP PARTITION or DELETE of R's
 *    predicate is idempotent), and R's other rows are no event's: never
 *    read, never counted, removed with C. A day is dropped only when all
 *    its rows are in R;
 *  - the counts and the round's row are in one commit: the counts stand
 *    iff the round stands (a commit that did not complete is deleted,
 *    retain_cuts too, before the writer stores again). Step 3 reads only
 *    rounds of completed commits, so it never removes rows whose count
 *    was lost; a kill before the commit leaves R stored and uncounted,
 *    and the next round counts it;
 *  - a round's R and an earlier round's R' are disjoint: by 4, when the
 *    round counts, R' is gone (its rows removed, which stay removed; rows
 *    stored later have _tc_commit > upto' and are not in R'). By
 *    induction only the latest committed round can have rows left, and
 *    step 3 looks at that one; a restart looks at it first (retain_idle
 *    starts false), and waits, as every round does, for the deletions of
 *    ours that are not done (system.mutations).
 * What this cannot promise: with several collectors, when collector k's
 * late commits row of X lands after k's restart read its last commit and
 * before k's void row of X is acknowledged (a few milliseconds), a round
 * of another collector counting in that moment takes X's rows, which k
 * then deletes and stores again: counted twice (clickhouse.h).
 *
 * Several collectors on one database (issue 35). Their commit ids
 * interleave (each numbers its own, clickhouse_txn.c), so "_tc_commit <=
 * upto" would take rows of another collector's commit still in flight, or
 * of one that a restart of it will delete. A round's upto is therefore one
 * per collector number k (the id modulo STORE_COLLECTOR_IDS): the last of
 * k's commits that completed. A collector's commits complete in its own
 * order and it deletes the rows of one that failed before it stores again,
 * so k's rows up to that id are all of completed commits, and rows of k's
 * later commits are not in R however they end. Rounds are numbered
 * (retain_rounds.round), since their commit ids do not order them once
 * another collector counts one. And exactly one collector runs rounds at a
 * time: the holder of the retention lease (clickhouse_lease.c); the others
 * skip retention. A collector that takes the lease forgets what it knew of
 * rounds (another may have counted some) and starts as after an open:
 * the last committed round's rows first. Rows older than the cut that
 * another collector stores later (an import, a late agent) are counted at
 * the next round the cut's move starts, or the holder's next take-over,
 * not at once as the holder's own are (seen_low). Rounds of before this
 * (retain_cuts: one upto) are read as one upto for every number.
 *
 * Cost. A DELETE rewrites the parts of the cut's day, so the age cut is
 * the time asked for rounded down to the hour (CH_RETAIN_STEP_NS): a round
 * when the cut passes an hour, or when rows older than the cut were
 * stored since the last round (an import, a late agent: seen_low,
 * clickhouse_txn.h), else none; whole days go at once. The size limit
 * sums bytes_on_disk of the database's active parts (system.parts) and
 * cuts the oldest slice of the time range in proportion to the excess over
 * the event tables' bytes (at least 1% of it), a round at a time: the parts shrink when the round's
 * deletions are done. Left for later: comm_changes and losses are not
 * pruned with the events (SQLite's are).
 *
 * Stacks. Removed rows leave stacks rows no row references; once a
 * round's rows are gone (idle), at most every ten minutes, the lease
 * holder deletes those (ch_stacks_sweep(), clickhouse_stacks.h has why
 * no writer, its own nor another collector's, still believes one stored).
 */
#include "config.h"

#define LOG_PREFIX "clickhouse"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/tc_error.h"
#include "server/store/clickhouse_boots.h"
#include "server/store/clickhouse_lease.h"
#include "server/store/clickhouse_retain.h"
#include "server/store/clickhouse_shards.h"
#include "server/store/clickhouse_schema.h"
#include "server/store/clickhouse_stacks.h"
#include "server/store/clickhouse_txn.h"
#include "server/store/clickhouse_util.h"

#define CH_RETAIN_STEP_NS	(3600LL * 1000000000)	/* the age cut moves by the hour */
#define CH_STR_(x)		#x
#define CH_STR(x)		CH_STR_(x)

/* A round: its number, cut, and per collector number the last commit it takes. */
struct ch_round {
	uint64_t no;
	int64_t cut;
	uint64_t uptos[STORE_COLLECTOR_IDS];
};

/* " AND _tc_commit <= the round's upto of the row's collector number". */
static void ch_round_pred(struct ch_sql *q, const struct ch_round *rd)
{
	bool same = true;

	for (unsigned k = 1; k < STORE_COLLECTOR_IDS; k++)
		same &= rd->uptos[k] == rd->uptos[0];
	if (same) {
		ch_sql_addf(q, " AND _tc_commit <= %llu", (unsigned long long)rd->uptos[0]);
		return;
	}
	ch_sql_raw(q, " AND _tc_commit <= [");
	for (unsigned k = 0; k < STORE_COLLECTOR_IDS; k++)
		ch_sql_addf(q, "%s%llu", k ? "," : "", (unsigned long long)rd->uptos[k]);
	ch_sql_addf(q, "][_tc_commit %% %u + 1]", STORE_COLLECTOR_IDS);
}

/* A round's rows: " WHERE ts < cut AND _tc_commit <= upto". */
static void ch_round_where(struct ch_sql *q, const struct ch_round *rd)
{
	ch_sql_addf(q, " WHERE ts < %lld", (long long)rd->cut);
	ch_round_pred(q, rd);
}

#ifdef TC_TEST_AIDS
/*
 * TRACECOLLECTD_TEST_RETAIN_KILL=counted|committed (a test aid, only in a
 * build with --enable-test-aids): kill -9 of the collector right after a
 * round was counted in the open commit, or once it was committed and
 * before its rows are removed (tests/test_ch_retain.sh).
 */
static void ch_test_kill(const char *point)
{
	const char *v = getenv("TRACECOLLECTD_TEST_RETAIN_KILL");

	if (v && !strcmp(v, point)) {
		log_warn("TRACECOLLECTD_TEST_RETAIN_KILL: killing the collector at %s (a test aid)",
			 point);
		raise(SIGKILL);
	}
}

/*
 * TRACECOLLECTD_TEST_RETAIN_PAUSE=SECONDS (a test aid, as above): a round
 * once counted waits that long (at most 60 s) before its commit, so that
 * two collectors' rounds overlap (tests/test_fleet_retain.sh: without
 * the lease both would count the same rows).
 */
static void ch_test_pause(void)
{
	const char *v = getenv("TRACECOLLECTD_TEST_RETAIN_PAUSE");
	unsigned long n = v ? strtoul(v, NULL, 10) : 0;

	if (n) {
		log_warn("TRACECOLLECTD_TEST_RETAIN_PAUSE: a counted round waits %lu s (a test aid)",
			 n > 60 ? 60 : n);
		sleep((unsigned)(n > 60 ? 60 : n));
	}
}
#else
static inline void ch_test_kill(const char *point) { (void)point; }
static inline void ch_test_pause(void) { }
#endif

/* FROM every event table (merge(), its _table column names the table). */
static void ch_all_events(struct ch_store *s, struct ch_sql *q)
{
	ch_sql_raw(q, " FROM merge(");
	ch_sql_cstr(q, s->db);
	ch_sql_raw(q, ", '^ev_')");
}

/* Whether the database has an event table (merge() of none is an error). */
static int ch_have_events(struct ch_store *s, bool *have)
{
	struct ch_reply r;
	int ret = ch_query_text(s, CH_EVENT_TABLES_SQL " LIMIT 1", &r);

	if (ret == 0) {
		*have = r.nrows > 0;
		ch_reply_free(&r);
	}
	return ret;
}

/* How many mutations of event tables of ours are not done. */
static int ch_retain_mutations(struct ch_store *s, uint64_t *n)
{
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT count()");
	ch_shards_system(s, &q, "mutations");	/* every shard's */
	ch_sql_raw(&q, " AND is_done = 0 AND startsWith(table, 'ev_')");
	ret = ch_query_u64(s, &q, n);
	ch_sql_free(&q);
	return ret;
}

/* DROP PARTITION of each day of @table before the cut's whose rows are all the round's. */
static int ch_drop_days(struct ch_store *s, const char *table, const struct ch_round *rd)
{
	struct ch_reply r;
	struct ch_sql q;
	uint64_t day;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT p FROM (SELECT " CH_PARTITION " AS p, min(1");
	ch_round_pred(&q, rd);
	ch_sql_raw(&q, ") AS c FROM ");
	ch_sql_ident(&q, table);
	ch_sql_addf(&q, " WHERE p < toYYYYMMDD(toDateTime(%lld)) GROUP BY p) WHERE c = 1",
		    (long long)(rd->cut / 1000000000));
	ret = ch_query(s, &q, &r);
	for (size_t i = 0; ret == 0 && i < r.nrows; i++) {
		if (ch_reply_u64(&r, i, 0, &day) < 0)
			continue;
		ch_sql_reset(&q);
		ch_sql_raw(&q, "ALTER TABLE ");
		ch_sql_ident(&q, table);
		ch_sql_addf(&q, " DROP PARTITION %llu", (unsigned long long)day);
		ret = ch_shards_exec(s, &q);
	}
	if (ret == 0 || r.nrows)
		ch_reply_free(&r);
	ch_sql_free(&q);
	return ret;
}

/* Remove @table's rows of round @rd: whole days, then a mutation for the rest. */
static int ch_remove_round(struct ch_store *s, const char *table, const struct ch_round *rd)
{
	struct ch_sql q;
	uint64_t left = 0;
	int ret = ch_drop_days(s, table, rd);

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT count() FROM ");
	ch_sql_ident(&q, table);
	ch_round_where(&q, rd);
	ret = ret ?: ch_query_u64(s, &q, &left);
	if (ret == 0 && left) {
		ch_sql_reset(&q);
		ch_sql_raw(&q, "ALTER TABLE ");
		ch_sql_ident(&q, table);
		ch_sql_raw(&q, " DELETE");
		ch_round_where(&q, rd);
		ret = ch_shards_exec(s, &q);
	}
	ch_sql_free(&q);
	return ret;
}

/* An array of numbers as ClickHouse writes it ("[1,2,3]") into @v (n of them). */
static int ch_parse_uptos(const char *s, uint64_t *v, size_t n)
{
	size_t k = 0;
	char *end;

	if (!s || *s++ != '[')
		return TC_ERR_DB;
	while (*s && *s != ']' && k < n) {
		v[k++] = strtoull(s, &end, 10);
		if (end == s || (*end != ',' && *end != ']'))
			return TC_ERR_DB;
		s = *end == ',' ? end + 1 : end;
	}
	return *s == ']' && k == n ? 0 : TC_ERR_DB;
}

/* Rounds from before retain_rounds (retain_cuts): one upto for every collector number. */
static int ch_last_cut(struct ch_store *s, struct ch_round *rd, uint64_t *n)
{
	struct ch_reply r;
	uint64_t upto = 0;
	int ret = ch_query_text(s, "SELECT argMax(cut, _tc_commit), argMax(upto, _tc_commit),"
				" count() FROM retain_cuts WHERE " CH_COMMITTED, &r);

	if (ret < 0)
		return ret;
	if (r.nrows < 1 || ch_reply_i64(&r, 0, 0, &rd->cut) < 0 ||
	    ch_reply_u64(&r, 0, 1, &upto) < 0 || ch_reply_u64(&r, 0, 2, n) < 0)
		ret = ch_errf(s, TC_ERR_DB, "ClickHouse answered retain_cuts oddly");
	ch_reply_free(&r);
	for (unsigned k = 0; ret == 0 && k < STORE_COLLECTOR_IDS; k++)
		rd->uptos[k] = upto;
	rd->no = 0;
	return ret;
}

/*
 * The last round of a completed commit, by round number, into *@rd, and
 * *@n: how many rounds there are (0: none, or no event table: nothing to
 * remove).
 */
static int ch_last_round(struct ch_store *s, struct ch_round *rd, uint64_t *n)
{
	struct ch_reply r;
	bool have = false;
	int ret = ch_query_text(s, "SELECT argMax(round, round), argMax(cut, round),"
				" argMax(uptos, round), count() FROM retain_rounds WHERE "
				CH_COMMITTED, &r);

	if (ret < 0)
		return ret;
	if (r.nrows < 1 || ch_reply_u64(&r, 0, 3, n) < 0)
		ret = ch_errf(s, TC_ERR_DB, "ClickHouse answered retain_rounds oddly");
	else if (*n && (ch_reply_u64(&r, 0, 0, &rd->no) < 0 || ch_reply_i64(&r, 0, 1, &rd->cut) < 0 ||
			ch_parse_uptos(ch_reply_cell(&r, 0, 2), rd->uptos, STORE_COLLECTOR_IDS) < 0))
		ret = ch_errf(s, TC_ERR_DB, "ClickHouse answered retain_rounds oddly");
	ch_reply_free(&r);
	if (ret == 0 && !*n)
		ret = ch_last_cut(s, rd, n);
	if (ret == 0 && *n)
		ret = ch_have_events(s, &have);
	if (ret == 0 && !have)
		*n = 0;
	return ret;
}

/*
 * Step 3 and 4 (above): the last committed round's rows removed. *@idle:
 * none of them is left and no deletion of ours is running (a round may count).
 */
static int ch_retain_finish(struct ch_store *s, bool *idle)
{
	struct ch_round rd;
	struct ch_reply r;
	struct ch_sql q;
	uint64_t busy = 0, n = 0;
	int ret;

	*idle = s->retain_idle;
	if (*idle)
		return 0;
	ret = ch_retain_mutations(s, &busy);
	if (ret < 0 || busy)
		return ret;
	ret = ch_last_round(s, &rd, &n);
	if (ret < 0 || !n) {
		*idle = s->retain_idle = ret == 0;
		return ret;
	}
	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT _table, count()");
	ch_all_events(s, &q);
	ch_round_where(&q, &rd);
	ch_sql_raw(&q, " GROUP BY _table");
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	if (ret < 0)
		return ret;
	if (r.nrows)
		ch_test_kill("committed");
	for (size_t i = 0; ret == 0 && i < r.nrows; i++)
		ret = ch_remove_round(s, ch_reply_cell(&r, i, 0), &rd);
	if (ret == 0 && r.nrows)	/* the losses' whole days go with the events' */
		ret = ch_losses_retain(s, rd.cut);
	if (r.nrows)
		s->stacks_orphaned = true;
	*idle = s->retain_idle = ret == 0 && r.nrows == 0;
	ch_reply_free(&r);
	return ret;
}

/* The active parts' bytes on disk of the whole database, and of its event tables. */
static int ch_used_bytes(struct ch_store *s, uint64_t *used, uint64_t *events)
{
	struct ch_reply r;
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT sum(bytes_on_disk), sumIf(bytes_on_disk, startsWith(table, 'ev_'))");
	ch_shards_system(s, &q, "parts");	/* every shard's */
	ch_sql_raw(&q, " AND active");
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	if (ret < 0)
		return ret;
	*used = *events = 0;
	if (r.nrows && (ch_reply_u64(&r, 0, 0, used) < 0 || ch_reply_u64(&r, 0, 1, events) < 0))
		ret = ch_errf(s, TC_ERR_DB, "ClickHouse answered system.parts oddly");
	ch_reply_free(&r);
	return ret;
}

/*
 * The size limit's cut: the oldest slice of the stored time range in
 * proportion to the excess over the event tables' bytes (the others do
 * not shrink), at least 1%; INT64_MIN when under @max_bytes.
 */
static int ch_size_cut(struct ch_store *s, uint64_t max_bytes, int64_t *cut)
{
	struct ch_reply r;
	struct ch_sql q;
	uint64_t used = 0, evb = 0, n = 0;
	int64_t lo = 0, hi = 0;
	bool have = false;
	double frac;
	int ret = ch_used_bytes(s, &used, &evb) ?: ch_have_events(s, &have);

	*cut = INT64_MIN;
	if (ret < 0 || used <= max_bytes || !have || !evb)
		return ret;
	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT min(ts), max(ts), count()");
	ch_all_events(s, &q);
	ch_sql_raw(&q, " WHERE " CH_COMMITTED);
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	if (ret < 0)
		return ret;
	if (r.nrows && ch_reply_u64(&r, 0, 2, &n) == 0 && n &&
	    ch_reply_i64(&r, 0, 0, &lo) == 0 && ch_reply_i64(&r, 0, 1, &hi) == 0 && lo <= hi) {
		frac = (double)(used - max_bytes) / (double)evb;
		frac = frac < 0.01 ? 0.01 : frac > 1 ? 1 : frac;
		*cut = lo + 1 + (int64_t)((double)(hi - lo) * frac);
	}
	ch_reply_free(&r);
	return 0;
}

/* The age limit's cut: @before_ts rounded down to the hour. */
static int64_t ch_age_cut(int64_t before_ts)
{
	int64_t m;

	if (before_ts == INT64_MIN)
		return INT64_MIN;
	m = before_ts % CH_RETAIN_STEP_NS;
	return before_ts - (m < 0 ? m + CH_RETAIN_STEP_NS : m);
}

/* The round's row in retain_rounds, sent now under the open commit's reserved id. */
static int ch_round_row(struct ch_store *s, const struct ch_round *rd)
{
	struct ch_sql q;
	int ret = ch_reserve_id(s);

	s->sent = true;	/* a rollback deletes it (clickhouse_txn.c) */
	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "INSERT INTO retain_rounds (round, cut, uptos, collector, _tc_commit)"
		    " VALUES (%llu, %lld, [", (unsigned long long)rd->no, (long long)rd->cut);
	for (unsigned k = 0; k < STORE_COLLECTOR_IDS; k++)
		ch_sql_addf(&q, "%s%llu", k ? "," : "", (unsigned long long)rd->uptos[k]);
	ch_sql_raw(&q, "], ");
	ch_sql_cstr(&q, s->collector);
	ch_sql_addf(&q, ", %llu)", (unsigned long long)s->commit_id);
	ret = ret ?: ch_exec(s, &q);
	ch_sql_free(&q);
	return ret;
}

/* Each event table's system and name (event_types), to name its drops. */
static int ch_type_names(struct ch_store *s, struct ch_reply *names)
{
	return ch_query_text(s, "SELECT table_name, any(system), any(name) FROM event_types"
			     " GROUP BY table_name", names);
}

/*
 * The open commit's counts of a round: per (table, host) row of @r
 * (table, host, rows, freed bytes), a freed row, and per table a drop.
 */
static int ch_round_counts(struct ch_store *s, const struct ch_reply *r,
			   const struct ch_reply *names)
{
	struct ch_batch *b = &s->fixed[CH_B_FREED];
	uint64_t host, n, bytes;
	int ret = 0;

	for (size_t i = 0; ret == 0 && i < r->nrows; i++) {
		if (ch_reply_u64(r, i, 1, &host) < 0 || ch_reply_u64(r, i, 2, &n) < 0 ||
		    ch_reply_u64(r, i, 3, &bytes) < 0)
			return ch_errf(s, TC_ERR_DB, "ClickHouse answered a count oddly");
		ch_b_u64(&b->rows, host);
		ch_b_u64(&b->rows, bytes);
		ch_b_u64(&b->rows, s->commit_id);
		ret = ch_batch_row_done(b);
	}
	for (size_t i = 0; ret == 0 && i < r->nrows; i++) {
		const char *t = ch_reply_cell(r, i, 0), *sys = "-", *name = t;
		uint64_t sum = 0;

		if (i && !strcmp(t, ch_reply_cell(r, i - 1, 0)))
			continue;	/* rows of one table are together (ORDER BY) */
		for (size_t k = i; k < r->nrows && !strcmp(t, ch_reply_cell(r, k, 0)); k++)
			if (ch_reply_u64(r, k, 2, &n) == 0)
				sum += n;
		for (size_t k = 0; k < names->nrows; k++)
			if (!strcmp(t, ch_reply_cell(names, k, 0))) {
				sys = ch_reply_cell(names, k, 1);
				name = ch_reply_cell(names, k, 2);
			}
		ret = s->base.w.ops->dropped(&s->base.w, 0, sys, name, "retention", sum);
	}
	return ret;
}

/*
 * A new round's number (one past every round's, committed or not) and its
 * uptos: per collector number, the last of its commits that completed.
 */
static int ch_round_new(struct ch_store *s, struct ch_round *rd)
{
	struct ch_reply r;
	uint64_t k, id;
	int ret;

	ret = ch_query_text(s, "SELECT max(round) FROM retain_rounds", &r);
	if (ret < 0)
		return ret;
	if (r.nrows < 1 || ch_reply_u64(&r, 0, 0, &rd->no) < 0)
		ret = ch_errf(s, TC_ERR_DB, "ClickHouse answered retain_rounds oddly");
	ch_reply_free(&r);
	rd->no++;
	if (ret < 0)
		return ret;
	memset(rd->uptos, 0, sizeof(rd->uptos));
	ret = ch_query_text(s, "SELECT id % " CH_STR(STORE_COLLECTOR_IDS) ", max(id) FROM commits"
			    " GROUP BY id % " CH_STR(STORE_COLLECTOR_IDS), &r);
	for (size_t i = 0; ret == 0 && i < r.nrows; i++)
		if (ch_reply_u64(&r, i, 0, &k) == 0 && k < STORE_COLLECTOR_IDS &&
		    ch_reply_u64(&r, i, 1, &id) == 0)
			rd->uptos[k] = id;
	if (ret == 0)
		ch_reply_free(&r);
	if (ret == 0 && rd->uptos[s->slot] < s->last_ok)
		rd->uptos[s->slot] = s->last_ok;
	return ret;
}

/*
 * Whether round @rd's rows hold any of no completed commit (late batches
 * of an abandoned one): *@n of them, counted only when no completed
 * commit's row is there to count, for a round that removes them alone.
 */
static int ch_round_orphans(struct ch_store *s, const struct ch_round *rd, uint64_t *n)
{
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT count()");
	ch_all_events(s, &q);
	ch_round_where(&q, rd);
	ret = ch_query_u64(s, &q, n);
	ch_sql_free(&q);
	return ret;
}

/*
 * Steps 1 and 2: count the rows before @cut of completed commits and, when
 * there are some (or rows of none, to remove), write the round in the
 * open commit. A failure after its row was sent fails the commit
 * (s->failed), so that a round never stands without its counts.
 * Return: 0 and *@n (rows counted); TC_ERR_DB; -ENOMEM.
 */
static int ch_round(struct ch_store *s, int64_t cut, uint64_t *n)
{
	struct ch_round rd = { .cut = cut };
	struct ch_reply r, names;
	struct ch_sql q;
	uint64_t rows, total = 0, orphans = 0;
	bool have = false;
	int ret = ch_have_events(s, &have);

	*n = 0;
	ret = ret ?: ch_round_new(s, &rd);
	if (ret < 0 || !have)
		return ret;
	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT r.t, r.host_id, r.n, toUInt64(floor(r.n * c.bpe + 0.999999)) FROM"
		       " (SELECT _table AS t, host_id, count() AS n");
	ch_all_events(s, &q);
	ch_round_where(&q, &rd);
	ch_sql_raw(&q, " AND " CH_COMMITTED);	/* an abandoned commit's rows: not counted */
	ch_sql_raw(&q, " GROUP BY t, host_id) AS r ANY LEFT JOIN (SELECT host_id, sum(bytes) /"
		       " greatest(sum(events), 1) AS bpe FROM cpu_counts WHERE " CH_COMMITTED);
	ch_round_pred(&q, &rd);
	ch_sql_raw(&q, " GROUP BY host_id) AS c USING host_id ORDER BY r.t, r.host_id");
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < r.nrows; i++)
		if (ch_reply_u64(&r, i, 2, &rows) == 0)
			total += rows;
	if (!total)
		ret = ch_round_orphans(s, &rd, &orphans);
	if (ret == 0 && (total || orphans))
		ret = ch_type_names(s, &names);
	if (ret == 0 && (total || orphans)) {
		ret = ch_round_row(s, &rd) ?: ch_round_counts(s, &r, &names);
		if (ret < 0)
			s->failed = ret;
		else
			ch_test_kill("counted"), ch_test_pause();
		ch_reply_free(&names);
	}
	ch_reply_free(&r);
	if (ret == 0) {
		*n = total;
		s->retain_idle = !total && !orphans;
		s->retain_commit = total || orphans ? s->commit_id : 0;
	}
	return ret;
}

/* Whether a round is due at @cut: the cut moved, or rows below it came since. */
static bool ch_round_due(struct ch_store *s, int64_t cut)
{
	if (s->retain_commit && s->retain_commit != s->commit_id &&
	    s->retain_commit > s->last_ok)
		s->retain_started = false;	/* its commit did not complete: again */
	ch_txn_low_fold(s);
	return cut != INT64_MIN &&
	       (!s->retain_started || cut > s->retain_cut || s->seen_low < cut);
}

/*
 * The stacks' sweep: its failure fails neither retention nor the commit
 * it runs in (it deletes nothing the rows need); said, and tried again
 * at the next sweep.
 */
static void ch_retain_stacks(struct ch_store *s)
{
	char esc[LOG_ESC_LEN];

	if (ch_stacks_sweep(s) < 0)
		log_warn("retention: the stacks no row references stay for now: %s",
			 log_escape(s->h->errmsg, esc, sizeof(esc)));
}

static int ch_retain_in(struct ch_store *s, int64_t before_ts, uint64_t max_bytes,
			uint64_t *removed)
{
	int64_t cut = ch_age_cut(before_ts), size_cut = INT64_MIN;
	uint64_t n = 0;
	bool idle = false;
	int ret = ch_retain_finish(s, &idle);

	if (ret == 0 && idle)
		ch_retain_stacks(s);
	if (ret == 0 && idle && max_bytes)
		ret = ch_size_cut(s, max_bytes, &size_cut);
	if (size_cut > cut)
		cut = size_cut;
	if (ret == 0 && idle && ch_round_due(s, cut)) {
		int64_t low = s->seen_low;

		s->seen_low = INT64_MAX;	/* the round counts every row below the cut */
		ret = ch_round(s, cut, &n);
		if (ret == 0) {
			s->retain_cut = cut;
			s->retain_started = true;
		} else if (low < s->seen_low) {
			s->seen_low = low;
		}
	}
	if (ret == 0)
		*removed = n;
	return ret;
}

static int ch_retain(struct store_writer *w, int64_t before_ts, uint64_t max_bytes,
		     uint64_t *removed)
{
	struct ch_store *s = ch_writer_of(w);
	bool own = !s->in_txn, held = false, fresh = false;
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	*removed = 0;
	if (before_ts == INT64_MIN && !max_bytes)
		return 0;
	ret = ch_lease_hold(s, &held, &fresh);
	if (ret < 0 || !held)
		return ret;
	if (fresh) {	/* another holder may have counted rounds: look first */
		s->retain_idle = s->retain_started = false;
		s->retain_commit = 0;
		s->stacks_orphaned = true;
	}
	ret = own ? ch_begin(w) : 0;	/* its counts and its round in one commit */
	ret = ret ?: ch_retain_in(s, before_ts, max_bytes, removed);
	if (own)
		ret = ret == 0 ? ch_commit(w) : (ch_rollback(w), ret);
	return ret;
}

void ch_retain_ops(struct store_writer_ops *w)
{
	w->retain = ch_retain;
}
