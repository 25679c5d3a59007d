/*
 * queryd_disc.h - the discovery requests of the query endpoint: hosts
 * (QOP_HOSTS), stored event types (QOP_EVENTS) and their fields
 * (QOP_FIELDS); see proto/PROTOCOL.md. Every answer is read through the
 * store boundary with the asker's scope, like rows are.
 */
#ifndef SERVER_QUERYD_DISC_H
#define SERVER_QUERYD_DISC_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/msg.h"
#include "proto/qmsg.h"
#include "server/store/store.h"

/* Whether an agent of a host is connected now (the collector's, any thread). */
struct qdisc_live {
	bool (*connected)(void *arg, uint64_t host_id);	/* NULL: none is */
	void *arg;
};

/*
 * qdisc_run - answer @r (op QOP_HOSTS, QOP_EVENTS or QOP_FIELDS) into @out
 * over the hosts @hosts allows (its host globs and scope), hosts with
 * whether @live says they are connected; *@rows: rows answered. Return: 0;
 * 1 with an error reply in @out (a query in error); a negative code (no
 * reply).
 */
int qdisc_run(struct store_reader *st, const struct qmsg_request *r,
	      const struct store_query *hosts, const struct qdisc_live *live,
	      struct proto_buf *out, uint64_t *rows);

#endif
