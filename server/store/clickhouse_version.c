/*
 * clickhouse_version.c - what a newer server would do better, detected
 * at connect (clickhouse_version.h). The server splits its version into
 * numbers itself, so the reply is read by the reply parser alone
 * (clickhouse_reply.c, fuzzed) and no version string is parsed here.
 */
#include "config.h"

#define LOG_PREFIX "clickhouse"

#include <stdbool.h>
#include <stdio.h>

#include "common/log.h"
#include "common/tc_error.h"
#include "server/store/clickhouse_http.h"
#include "server/store/clickhouse_util.h"
#include "server/store/clickhouse_version.h"

/* What the backend would use from a newer server, and the release that brought it. */
static const struct {
	const char *name;
	unsigned major, minor;
	const char *would;
} ch_newer[] = {
	{ "ASOF JOIN", 19, 5, "COMM by a join on time, not per-pid arrays" },
	{ "query parameters", 19, 11, "values bound, not escaped literals" },
	{ "DateTime64", 20, 1, "ts a time type" },
	{ "insert_deduplication_token", 22, 2, "a resent batch a no-op, not a delete" },
	{ "lightweight DELETE", 22, 8, "an unfinished commit cleaned up cheaply" },
};
#define CH_NNEWER	(sizeof(ch_newer) / sizeof(ch_newer[0]))

int ch_version_note(struct ch_store *s)
{
	char line[1024], ver[LOG_ESC_LEN];
	struct ch_reply r = { 0 };
	uint64_t major = 0, minor = 0;
	size_t n = 0;
	int ret = ch_query_text(s, "SELECT version(), toUInt32OrZero(splitByChar('.',"
				   " version())[1]), toUInt32OrZero(splitByChar('.', version())[2])",
				&r);

	if (ret == 0 && (!r.nrows || ch_reply_u64(&r, 0, 1, &major) ||
			 ch_reply_u64(&r, 0, 2, &minor)))
		ret = ch_errf(s, TC_ERR_DB, "ClickHouse's version does not read");
	for (size_t i = 0; ret == 0 && i < CH_NNEWER && n < sizeof(line); i++) {
		bool has = major > ch_newer[i].major ||
			   (major == ch_newer[i].major && minor >= ch_newer[i].minor);

		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s (%u.%u, %s): %s",
				      i ? "; " : "", ch_newer[i].name, ch_newer[i].major,
				      ch_newer[i].minor, has ? "here" : "not here",
				      ch_newer[i].would);
	}
	if (ret == 0)
		log_info("ClickHouse %s at %s: the collector writes what 18.16 takes and uses "
			 "nothing newer; it would use %s",
			 log_escape(ch_reply_cell(&r, 0, 0), ver, sizeof(ver)),
			 ch_http_where(s->http), line);
	ch_reply_free(&r);
	return ret;
}
