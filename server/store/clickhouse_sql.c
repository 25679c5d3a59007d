/*
 * clickhouse_sql.c - traceq --sql on ClickHouse: refused, saying why.
 *
 * --sql must run through a read-only user that sees only our views, not
 * the system tables and not the base tables (store_ops.h: enforced by the
 * engine, not by reading the text). ClickHouse 18.16 cannot enforce that,
 * as tried on Debian's 18.16.1 with a readonly=1 user whose users.xml
 * entry has <allow_databases> naming only a database of views
 * (tests/test_ch_sql.sh shows both facts on the test's own server):
 *  - the system database is readable by every user whatever
 *    allow_databases says (system.processes shows every user's running
 *    queries, their text too; system.settings, system.clusters...);
 *  - a view runs with the reader's rights: a view over the base tables in
 *    another database answers "Access denied to database" to that user,
 *    and views in the base tables' own database leave the base tables
 *    readable (their uncommitted rows and every host's, scope or not).
 * 18.16 has no row-level <databases> filters in users.xml either. So the
 * op fails (-ENOSYS) with that reason, not an approximation. A newer
 * server could: views that run with their definer's rights, and a grant
 * needed to read the system database; neither is detected yet.
 */
#include "config.h"

#include <errno.h>

#include "server/store/clickhouse_sql.h"
#include "server/store/clickhouse_util.h"

static int ch_sql(struct store_reader *rd, const char *text, const struct store_scope *scope,
		  const struct store_sql_limits *lim, store_sql_fn fn, void *ctx)
{
	(void)text;
	(void)scope;
	(void)lim;
	(void)fn;
	(void)ctx;
	return ch_errf(ch_reader_of(rd), -ENOSYS,
		       "--sql is not answered from ClickHouse: 18.16 lets every user read the "
		       "system database (system.processes: every user's queries) whatever "
		       "allow_databases says, and runs a view with the reader's rights, so no "
		       "read-only user can see our views alone; use a collector on SQLite");
}

void ch_sql_reader_ops(struct store_reader_ops *r)
{
	r->sql = ch_sql;
}
