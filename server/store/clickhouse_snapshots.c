/*
 * clickhouse_snapshots.c - the flight recorders' snapshots on ClickHouse
 * (see clickhouse_snapshots.h and sql/clickhouse/0009-snapshots.sql).
 *
 * Like the live-host set (clickhouse_fleet.c), a snapshot's rows are facts
 * written with one INSERT each, outside the writer's commits: a replay of
 * the journal writes them again, and reads take per key the latest row
 * (argMax by version; a host's done row has the higher version, and a
 * done row never loses to an asked one: max(done)). The scope is applied
 * to the hosts' names here, as ch_hosts() does.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>

#include "common/tc_error.h"
#include "server/store/clickhouse_reader.h"
#include "server/store/clickhouse_snapshots.h"
#include "server/store/clickhouse_txn.h"
#include "server/store/clickhouse_util.h"

/* A snapshots row (asked) for @sn, unless @sn is a done row of a snapshot asked elsewhere. */
static int ch_snapshot_row(struct ch_store *s, const struct store_snapshot *sn, int64_t version)
{
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "INSERT INTO snapshots (id, asked_ns, reason, who, version) VALUES"
		    " (%llu, %lld, ", (unsigned long long)sn->id, (long long)sn->asked_ns);
	ch_sql_cstr(&q, sn->reason ? sn->reason : "");
	ch_sql_raw(&q, ", ");
	ch_sql_cstr(&q, sn->who ? sn->who : "");
	ch_sql_addf(&q, ", %lld)", (long long)version);
	ret = ch_exec(s, &q);
	ch_sql_free(&q);
	return ret;
}

static int ch_snapshot_host(struct ch_store *s, const struct store_snapshot *sn, bool done)
{
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "INSERT INTO snapshot_hosts (snapshot_id, host_id, done, pages, events,"
		    " lost, has_window, first_ts, last_ts, first_trace, last_trace, version) VALUES"
		    " (%llu, %llu, %d, %llu, %llu, %llu, %d, %lld, %lld, %llu, %llu, %lld)",
		    (unsigned long long)sn->id, (unsigned long long)sn->host_id, done,
		    (unsigned long long)sn->pages, (unsigned long long)sn->events,
		    (unsigned long long)sn->lost, done && sn->window,
		    (long long)(sn->window ? sn->first_ts : 0),
		    (long long)(sn->window ? sn->last_ts : 0),
		    (unsigned long long)(sn->window ? sn->first_trace : 0),
		    (unsigned long long)(sn->window ? sn->last_trace : 0), (long long)ch_now_ns());
	ret = ch_exec(s, &q);
	ch_sql_free(&q);
	return ret;
}

static int ch_snapshot_asked(struct store_writer *w, const struct store_snapshot *sn)
{
	struct ch_store *s = ch_writer_of(w);

	return ch_writer_enter(s) ?: ch_snapshot_row(s, sn, ch_now_ns()) ?:
	       ch_snapshot_host(s, sn, false);
}

/* A done host of a snapshot whose asked row was lost gets one at version 0 (any other wins). */
static int ch_snapshot_done(struct store_writer *w, const struct store_snapshot *sn)
{
	struct ch_store *s = ch_writer_of(w);
	const struct store_snapshot none = { .id = sn->id };

	return ch_writer_enter(s) ?: ch_snapshot_row(s, &none, 0) ?:
	       ch_snapshot_host(s, sn, true);
}

/*
 * The rows of snapshot @id (0: all): id asked reason who host_id done
 * pages events lost has_window first last name first_trace last_trace
 */
static int ch_snapshots_read(struct ch_store *s, uint64_t id, struct ch_reply *r)
{
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	/* 18.16 takes one JOIN per SELECT: the names join around the rest */
	ch_sql_raw(&q, "SELECT snapshot_id, asked, rsn, wh, host_id, dn, pg, ev, ls, hw, ft, lt, hn,"
		       " fr, lr FROM (SELECT snapshot_id, asked, rsn, wh, host_id, dn, pg, ev, ls,"
		       " hw, ft, lt, fr, lr FROM (SELECT snapshot_id, host_id, max(done) AS dn,"
		       " argMax(pages, version) AS pg, argMax(events, version) AS ev, argMax(lost,"
		       " version) AS ls, argMax(has_window, version) AS hw, argMax(first_ts, version)"
		       " AS ft, argMax(last_ts, version) AS lt, argMax(first_trace, version) AS fr,"
		       " argMax(last_trace, version) AS lr FROM snapshot_hosts");
	if (id)
		ch_sql_addf(&q, " WHERE snapshot_id = %llu", (unsigned long long)id);
	ch_sql_raw(&q, " GROUP BY snapshot_id, host_id) ANY LEFT JOIN (SELECT id AS snapshot_id,"
		       " argMax(asked_ns, version) AS asked, argMax(reason, version) AS rsn,"
		       " argMax(who, version) AS wh FROM snapshots GROUP BY id) USING snapshot_id)"
		       " ANY LEFT JOIN (SELECT host_id, argMax(name, version) AS hn FROM hosts"
		       " GROUP BY host_id) USING host_id ORDER BY snapshot_id, hn, host_id");
	ret = ch_query(s, &q, r);
	ch_sql_free(&q);
	return ret;
}

static int ch_snapshots(struct store_reader *rd, const struct store_query *q, uint64_t id,
			int (*fn)(void *ctx, const struct store_snapshot *sn), void *ctx)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_reply r;
	int ret = ch_snapshots_read(s, id, &r);

	for (size_t i = 0; ret == 0 && i < r.nrows; i++) {
		struct store_snapshot sn = { .reason = ch_reply_cell(&r, i, 2),
					     .who = ch_reply_cell(&r, i, 3),
					     .host = ch_reply_cell(&r, i, 12) };
		uint64_t done = 0, win = 0;

		if (!sn.host || !ch_host_allowed(q, sn.host))
			continue;
		ch_reply_u64(&r, i, 0, &sn.id);
		ch_reply_i64(&r, i, 1, &sn.asked_ns);
		ch_reply_u64(&r, i, 4, &sn.host_id);
		ch_reply_u64(&r, i, 5, &done);
		ch_reply_u64(&r, i, 6, &sn.pages);
		ch_reply_u64(&r, i, 7, &sn.events);
		ch_reply_u64(&r, i, 8, &sn.lost);
		ch_reply_u64(&r, i, 9, &win);
		ch_reply_i64(&r, i, 10, &sn.first_ts);
		ch_reply_i64(&r, i, 11, &sn.last_ts);
		ch_reply_u64(&r, i, 13, &sn.first_trace);
		ch_reply_u64(&r, i, 14, &sn.last_trace);
		sn.done = done != 0;
		sn.window = win != 0;
		ret = fn(ctx, &sn);
	}
	if (ret == 0 || r.nrows)
		ch_reply_free(&r);
	return ret;
}

static int ch_snapshot_max(struct store_reader *rd, uint64_t *id)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_sql q;
	uint64_t v = 0;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT max(id) FROM snapshots");
	ret = ch_query_u64(s, &q, &v);
	ch_sql_free(&q);
	if (ret == 0)
		*id = v;
	return ret;
}

void ch_snapshots_ops(struct store_writer_ops *w, struct store_reader_ops *r)
{
	w->snapshot_asked = ch_snapshot_asked;
	w->snapshot_done = ch_snapshot_done;
	r->snapshots = ch_snapshots;
	r->snapshot_max = ch_snapshot_max;
}
