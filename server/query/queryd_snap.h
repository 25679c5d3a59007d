/*
 * queryd_snap.h - the flight-recorder ops of the query endpoint (issue 38;
 * PROTOCOL.md, ops 31 and 32), run on a query worker: `traceq --snapshot`
 * (who may: the `snapshot` right, as the `import` one; then the
 * collector's freezer, through struct queryd_snapper, freezes the
 * recorders asked for) and `traceq --snapshots` (the snapshots the store
 * holds, per host, under the asker's scope).
 */
#ifndef SERVER_QUERYD_SNAP_H
#define SERVER_QUERYD_SNAP_H

#include <stddef.h>
#include <stdint.h>

struct proto_buf;
struct qauth_scopes;
struct qauth_who;
struct qmsg_request;
struct qmsg_writer;
struct queryd_snapper;
struct store_query;
struct store_reader;

/*
 * qsnap_freeze - QOP_SNAPSHOT @r from @who: the right (@rights, `snapshot`
 * lines; NULL: none), then @sp's freeze (NULL: this collector takes no
 * snapshot) under it; a one-row reply (id, hosts) or an error with a
 * sentence to @out, and what came of it (for the log line) in @said.
 * Return: 0; a negative code (the reply says it).
 */
int qsnap_freeze(const struct queryd_snapper *sp, struct store_reader *st,
		 const struct qauth_scopes *rights, const struct qmsg_request *r,
		 const struct qauth_who *who, struct proto_buf *out, char *said, size_t saidlen);

/*
 * qsnap_list - QOP_SNAPSHOTS @r (snapshot_id 0: every one) over the hosts
 * @hosts allows into a new reply writer *@w (rows: id, asked, reason, who,
 * host, done, first_ts, last_ts, pages, events, lost), for the caller to
 * end. Return: 0; a negative code (no writer).
 */
int qsnap_list(struct store_reader *st, const struct qmsg_request *r,
	       const struct store_query *hosts, struct qmsg_writer **w);

#endif
