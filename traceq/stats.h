/*
 * stats.h - traceq --stats and --drops: the collector's counter tables
 * (one row per host and CPU; per host, event and reason), narrowed to the
 * CPUs of --cpu (the collector narrows the hosts), with a total line per
 * host, as key=value text or one JSON object per row.
 */
#ifndef TRACEQ_STATS_H
#define TRACEQ_STATS_H

#include <stdbool.h>
#include <stdio.h>

#include "proto/qmsg.h"
#include "traceq/select.h"

/*
 * tq_stats_print - print @rep, a reply to QOP_STATS (@totals: with a total
 * line per host, "cpu=all", each counter the sum of the host's CPU rows
 * printed) or QOP_DROPS, keeping only the rows of @sel's CPUs (when it
 * names any and the table has a cpu column). Each host's rows come
 * together, hosts in the order the reply has them. @json: one JSON object
 * per line, the total's "cpu" being "all".
 * Return: 0; -ENOMEM.
 */
int tq_stats_print(FILE *f, const struct qmsg_reply *rep, const struct tq_select *sel,
		   bool totals, bool json);

#endif
