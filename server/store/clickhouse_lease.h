/*
 * clickhouse_lease.h - the retention lease (issue 35): of the collectors
 * that share one database, at most one runs retention at a time; a dead
 * holder's lease runs out and another takes it. clickhouse_lease.c says
 * how, on a server without transactions.
 */
#ifndef SERVER_STORE_CLICKHOUSE_LEASE_H
#define SERVER_STORE_CLICKHOUSE_LEASE_H

#include <stdbool.h>

#include "server/store/clickhouse_int.h"

#define CH_LEASE_S_DEFAULT	30	/* --retain-lease, seconds */

/*
 * ch_lease_hold - whether @s holds the retention lease now, taking it when
 * it is free (nobody's, or its holder's ran out) and renewing it when half
 * of it is gone. *@held: true while @s may run retention, which it may
 * until 3 s before the lease runs out on the server's clock
 * (clickhouse_lease.c says why); *@fresh: it was taken by this call
 * (the writer's retention state is then stale: another holder may have
 * counted rounds since). Says in the log, once each time, when @s takes
 * the lease and when it skips retention because another holds it.
 * Return: 0 (*@held, *@fresh written); TC_ERR_DB (nothing written).
 */
int ch_lease_hold(struct ch_store *s, bool *held, bool *fresh);

#endif
