/*
 * queryd_boots.h - the query endpoint's answers for exports (issue 33;
 * proto/PROTOCOL.md, ops 9 and 10): where the kernels lost events
 * (QOP_LOSSES) and one host's boot as its kernel described it, with its
 * formats (QOP_HEADERS). Both read through the store boundary under the
 * asker's scope.
 */
#ifndef SERVER_QUERYD_BOOTS_H
#define SERVER_QUERYD_BOOTS_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/qmsg.h"
#include "server/store/store.h"

/* Where a page of rows ended, for the reply's trailer. */
struct qboots_page {
	bool more;
	int64_t last_ts;
	uint64_t last_id;
};

/*
 * qboots_losses - a page of QOP_LOSSES @r over the hosts @hosts allows
 * (its host globs and the asker's scope) into a new reply writer *@w,
 * which the caller ends with *@pg. A store without losses answers none.
 * Return: 0; a negative code (no writer).
 */
int qboots_losses(struct store_reader *st, const struct qmsg_request *r,
		  const struct store_query *hosts, struct qmsg_writer **w,
		  struct qboots_page *pg);

/*
 * qboots_headers - a page of QOP_HEADERS @r (@r->host set: an exact name)
 * for a host within @scope (NULL: all), into *@w as qboots_losses(); a
 * host outside it, or unknown, answers no rows.
 */
int qboots_headers(struct store_reader *st, const struct qmsg_request *r,
		   const struct store_scope *scope, struct qmsg_writer **w,
		   struct qboots_page *pg);

#endif
