/*
 * select.h - what traceq asks for besides the query text: the time window
 * (--since/--until in every form of when.h), hosts (--host, repeatable),
 * CPUs (--cpu LIST) and order (--reverse), set on each request.
 */
#ifndef TRACEQ_SELECT_H
#define TRACEQ_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/qmsg.h"

struct tq_select {
	int64_t from_ts, to_ts;		/* 0: open, unless the *_end flag is set */
	bool from_end, to_end;		/* relative to the newest stored event */
	bool reverse;
	const char *hosts[QMSG_MAX_HOSTS];
	uint32_t nhosts;
	uint32_t cpus[QMSG_MAX_CPUS];
	uint32_t ncpus;
	uint64_t snapshot_id;		/* --snapshot-id: only its rows; 0: none */
};

/*
 * tq_select_time - --since (@until false) or --until @arg into @s; @now_ns
 * the wall clock. On error prints why (with the forms) and returns -1.
 */
int tq_select_time(struct tq_select *s, const char *arg, bool until, int64_t now_ns);

/*
 * tq_select_cpus - add the CPUs of @list ("0,2-3") to @s: numbers below
 * QMSG_MAX_CPUS, ranges low-high. On error prints why and returns -1.
 */
int tq_select_cpus(struct tq_select *s, const char *list);

/* tq_select_host - add one --host GLOB; -1 (printed) past QMSG_MAX_HOSTS. */
int tq_select_host(struct tq_select *s, const char *glob);

/*
 * tq_select_apply - set @s on @req: window, hosts (one: the `host` key;
 * several: the `hosts` list), CPUs, order. @req keeps pointers into @s.
 */
void tq_select_apply(const struct tq_select *s, struct qmsg_request *req);

#endif
