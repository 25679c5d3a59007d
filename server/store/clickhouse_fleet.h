/*
 * clickhouse_fleet.h - several collectors on one database (issue 35): the
 * live-host set (which collector each host is connected to), and the
 * check that no two live collectors share a --collector-id.
 */
#ifndef SERVER_STORE_CLICKHOUSE_FLEET_H
#define SERVER_STORE_CLICKHOUSE_FLEET_H

#include "server/store/clickhouse_int.h"

#define CH_LIVE_S	15	/* a collector not heard from this long is gone */

/*
 * CH_LIVE_SQL - a subquery (host_id, lc): each host connected now and the
 * collector it is connected to; "%lld" the oldest `seen` that counts (ns).
 */
#define CH_LIVE_SQL	"SELECT host_id, argMax(collector, seen) AS lc FROM live_hosts WHERE" \
			" host_id != 0 AND seen > %lld AND (collector, seen) IN (SELECT" \
			" collector, max(seen) FROM live_hosts WHERE host_id = 0 GROUP BY" \
			" collector) GROUP BY host_id"

/*
 * ch_fleet_check - at a writer's open: refuse (TC_ERR_CONFIG, said in the
 * handle's error) when another collector with @s's --collector-id but
 * another name was heard from in the last CH_LIVE_S * 4 seconds: the two
 * would number their commits alike.
 * Return: 0; TC_ERR_CONFIG; TC_ERR_DB.
 */
int ch_fleet_check(struct ch_store *s);

/* ch_fleet_writer_ops - the live_hosts op into @ops. */
void ch_fleet_writer_ops(struct store_writer_ops *ops);

#endif
