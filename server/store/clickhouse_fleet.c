/*
 * clickhouse_fleet.c - several collectors on one database (issue 35,
 * clickhouse_fleet.h): the live-host set, written by each collector every
 * few seconds (store_live_hosts()) and read by traceq --hosts on any of
 * them (clickhouse_reader.c joins CH_LIVE_SQL), and the check of
 * --collector-id at open.
 *
 * The set is rows, not state: each refresh is one INSERT of a row per host
 * connected and one for the collector itself (host_id 0), all with the
 * same `seen`. A host is connected to C when it has a row at C's latest
 * refresh and that refresh is less than CH_LIVE_S old: a host that left C
 * is gone from C's next refresh, and a collector that died is gone
 * CH_LIVE_S after its last. No row is ever updated or deleted; the table
 * is a ReplacingMergeTree(seen), so merges keep one row per (host,
 * collector).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>

#include "common/tc_error.h"
#include "server/store/clickhouse_fleet.h"
#include "server/store/clickhouse_txn.h"
#include "server/store/clickhouse_util.h"

int ch_fleet_check(struct ch_store *s)
{
	struct ch_reply r;
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "SELECT any(collector) FROM live_hosts WHERE host_id = 0 AND slot = %u"
		    " AND seen > %lld AND collector != ", s->slot,
		    (long long)(ch_now_ns() - (int64_t)CH_LIVE_S * 4 * 1000000000));
	ch_sql_cstr(&q, s->collector);
	ch_sql_raw(&q, " HAVING count() > 0");
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	if (ret < 0)
		return ret;
	if (r.nrows)
		ret = ch_errf(s, TC_ERR_CONFIG, "collector '%s' has --collector-id %u too and was"
			      " alive in the last %d s: give each collector of one database a"
			      " number of its own", ch_reply_cell(&r, 0, 0), s->slot,
			      CH_LIVE_S * 4);
	ch_reply_free(&r);
	return ret;
}

static int ch_live_hosts(struct store_writer *w, const uint64_t *ids, size_t n)
{
	struct ch_store *s = ch_writer_of(w);
	long long now = (long long)ch_now_ns();
	struct ch_sql q;
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "INSERT INTO live_hosts (host_id, collector, slot, seen) VALUES");
	for (size_t i = 0; i <= n; i++) {
		ch_sql_addf(&q, "%s(%llu, ", i ? ", " : " ",
			    (unsigned long long)(i < n ? ids[i] : 0));
		ch_sql_cstr(&q, s->collector);
		ch_sql_addf(&q, ", %u, %lld)", s->slot, now);
	}
	ret = ch_exec(s, &q);
	ch_sql_free(&q);
	return ret;
}

void ch_fleet_writer_ops(struct store_writer_ops *ops)
{
	ops->live_hosts = ch_live_hosts;
}
