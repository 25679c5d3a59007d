/*
 * queryd_disc.c - discovery: hosts, event types, fields (queryd_disc.h).
 */
#include "config.h"

#include <errno.h>

#include "common/tc_error.h"
#include "server/queryd_disc.h"

int qdisc_run(struct store *st, const struct qmsg_request *r, const struct store_query *hosts,
	      struct proto_buf *out, uint64_t *rows)
{
	(void)st, (void)r, (void)hosts, (void)out, (void)rows;
	return -ENOTSUP;
}
