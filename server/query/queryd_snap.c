/*
 * queryd_snap.c - the flight-recorder ops on a query worker (see
 * queryd_snap.h and proto/PROTOCOL.md, "Flight recorder").
 *
 * Who may freeze: the `snapshot = IDENTITY [GLOB,...]` lines, read as the
 * `import` lines are (qauth_right_of(): root and the collector's own uid
 * always, a plain tcp client never, any other identity the hosts its
 * lines name). The freezer (server/conn/freeze.h, through struct
 * queryd_snapper) then refuses a -H GLOB that reaches a recorder outside
 * them, and a request that selects none.
 */
#include "config.h"

#define LOG_PREFIX "query"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/tc_error.h"
#include "proto/msg.h"
#include "proto/qmsg.h"
#include "server/query/qauth.h"
#include "server/query/queryd.h"
#include "server/query/queryd_snap.h"
#include "server/store/store.h"

#define SNAP_RIGHT_GLOBS	64

int qsnap_freeze(const struct queryd_snapper *sp, struct store_reader *st,
		 const struct qauth_scopes *rights, const struct qmsg_request *r,
		 const struct qauth_who *who, struct proto_buf *out, char *said, size_t saidlen)
{
	static const char *const cols[] = { "id", "hosts" };
	const char *globs[SNAP_RIGHT_GLOBS];
	char w[QAUTH_NAME_MAX * 4 + 64], why[QUERYD_FREEZE_WHY] = "";
	struct queryd_freeze f = { .reason = r->reason, .host_glob = r->host };
	struct qmsg_writer *wr = NULL;
	uint64_t id = 0, max = 0;
	unsigned hosts = 0;
	int ret = -ENOTSUP;

	f.who = qauth_who_str(who, w, sizeof(w));
	if (!sp)
		snprintf(why, sizeof(why), "this collector takes no snapshots");
	else if (r->reason && strlen(r->reason) > PROTO_MAX_REASON - 1)
		ret = TC_ERR_TOO_LONG, snprintf(why, sizeof(why), "--reason: over %u bytes",
						PROTO_MAX_REASON - 1);
	else if (qauth_right_of(rights, "snapshot", "take snapshots", who, &f.all, globs,
				SNAP_RIGHT_GLOBS, &f.nallow, why, sizeof(why)) <= 0)
		ret = -EACCES;
	else if ((ret = store_snapshot_max(st, &max)) < 0)
		snprintf(why, sizeof(why), "reading the snapshots stored: %s", store_errmsg(st));
	else {
		f.allow = globs;
		f.min_id = max + 1;
		ret = sp->freeze(sp->ctx, &f, &id, &hosts, why, sizeof(why));
	}
	if (ret == 0)
		ret = qmsg_reply_begin(&wr, NULL, 2, cols);
	if (ret == 0) {
		qmsg_put_uint(wr, id);
		qmsg_put_uint(wr, hosts);
		ret = qmsg_reply_end(wr, false, 0, 0, 0, out);
		snprintf(said, saidlen, "snapshot %llu: %u hosts told to freeze",
			 (unsigned long long)id, hosts);
		return ret;
	}
	if (!why[0])
		snprintf(why, sizeof(why), "%s", tc_strerror(ret));
	snprintf(said, saidlen, "refused: %s", why);
	out->len = 0;
	qmsg_reply_error(ret, why, -1, -1, out);
	return ret;
}

static int snap_row(void *ctx, const struct store_snapshot *sn)
{
	struct qmsg_writer *w = ctx;

	if (qmsg_reply_rows(w) >= QMSG_MAX_ROWS)
		return 1;	/* a reply holds no more: the newest are left out */
	qmsg_put_uint(w, sn->id);
	qmsg_put_int(w, sn->asked_ns);
	qmsg_put_str(w, sn->reason ? sn->reason : "", sn->reason ? strlen(sn->reason) : 0);
	qmsg_put_str(w, sn->who ? sn->who : "", sn->who ? strlen(sn->who) : 0);
	qmsg_put_str(w, sn->host ? sn->host : "", sn->host ? strlen(sn->host) : 0);
	qmsg_put_uint(w, sn->done);
	if (sn->window) {
		qmsg_put_int(w, sn->first_ts);
		qmsg_put_int(w, sn->last_ts);
	} else {
		qmsg_put_nil(w);
		qmsg_put_nil(w);
	}
	qmsg_put_uint(w, sn->pages);
	qmsg_put_uint(w, sn->events);
	qmsg_put_uint(w, sn->lost);
	return 0;
}

int qsnap_list(struct store_reader *st, const struct qmsg_request *r,
	       const struct store_query *hosts, struct qmsg_writer **w)
{
	static const char *const cols[] = { "id", "asked", "reason", "who", "host", "done",
					    "first_ts", "last_ts", "pages", "events", "lost" };
	int ret = qmsg_reply_begin(w, NULL, sizeof(cols) / sizeof(cols[0]), cols);

	if (ret == 0)
		ret = store_snapshots(st, hosts, r->snapshot_id, snap_row, *w);
	if (ret < 0 && *w) {	/* qmsg_reply_end() frees the writer */
		struct proto_buf junk;

		proto_buf_init(&junk);
		qmsg_reply_end(*w, false, 0, 0, 0, &junk);
		proto_buf_free(&junk);
		*w = NULL;
	}
	return ret < 0 ? ret : 0;
}
