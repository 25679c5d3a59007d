/*
 * clickhouse_shards.c - a ClickHouse store over several servers
 * (clickhouse_shards.h has the layout and the argument).
 */
#include "config.h"

#define LOG_PREFIX "clickhouse"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/store/clickhouse_http.h"
#include "server/store/clickhouse_shards.h"
#include "server/store/clickhouse_util.h"

int ch_shards_new(struct ch_store *s, const struct ch_http_conf *c, const char *const *bases,
		  unsigned n, const char *cluster)
{
	struct ch_http_conf sc = *c;
	int ret = 0;

	if (n < 2)
		return 0;
	if (!(s->cluster = strdup(cluster)) ||
	    asprintf(&s->shard_db, "%s%s", s->db, CH_SHARD_DB_SUFFIX) < 0) {
		s->shard_db = NULL;
		return -ENOMEM;
	}
	s->nshards = n;
	if (s->reader)
		return 0;
	s->shards = calloc(n, sizeof(*s->shards));
	if (!s->shards)
		return -ENOMEM;
	sc.database = NULL;	/* DB_shard made first (ch_shards_setup()) */
	sc.params = NULL;
	for (unsigned i = 0; i < n && ret == 0; i++) {
		sc.base = bases[i];
		ret = ch_http_new(&sc, &s->shards[i]);
	}
	return ret;
}

void ch_shards_free(struct ch_store *s)
{
	for (unsigned i = 0; s->shards && i < s->nshards; i++)
		ch_http_free(s->shards[i]);
	free(s->shards);
	free(s->cluster);
	free(s->shard_db);
}

/* The cluster as the first server's remote_servers has it: as many shards as we list. */
static int ch_shards_check(struct ch_store *s)
{
	struct ch_sql q;
	uint64_t n = 0;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT uniqExact(shard_num) FROM system.clusters WHERE cluster = ");
	ch_sql_cstr(&q, s->cluster);
	ret = ch_query_u64(s, &q, &n);
	ch_sql_free(&q);
	if (ret == 0 && n != s->nshards)
		ret = ch_errf(s, TC_ERR_CONFIG, "the address lists %u ClickHouse servers, and cluster"
			      " '%s' of the first one's remote_servers has %llu shards: it must list"
			      " the same servers, one shard each", s->nshards, s->cluster,
			      (unsigned long long)n);
	return ret;
}

int ch_shards_setup(struct ch_store *s)
{
	struct ch_sql q;
	int ret;

	if (!s->nshards)
		return 0;
	if (s->replicated)
		return ch_errf(s, TC_ERR_CONFIG, "?replicated with several servers (shards) is not "
			       "supported yet: use one or the other");
	ret = ch_shards_check(s);
	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "CREATE DATABASE IF NOT EXISTS ");
	ch_sql_ident(&q, s->shard_db);
	for (unsigned i = 0; i < s->nshards && ret == 0; i++) {
		ret = ch_after_http(s, s->shards[i], ch_http_exec(s->shards[i], ch_sql_text(&q)));
		ret = ret ?: ch_http_set_database(s->shards[i], s->shard_db);
	}
	ch_sql_free(&q);
	return ret;
}

int ch_shards_exec(struct ch_store *s, const struct ch_sql *q)
{
	int ret = 0;

	if (!s->nshards || ch_sql_err(q))
		return ch_exec(s, q);
	for (unsigned i = 0; i < s->nshards && ret == 0; i++)
		ret = ch_after_http(s, s->shards[i], ch_http_exec(s->shards[i], ch_sql_text(q)));
	return ret;
}

/* ClickHouse's code for an ADD COLUMN of a column there already (ILLEGAL_COLUMN) */
#define CH_CODE_COLUMN_EXISTS	44

/*
 * @q, an ALTER TABLE ... ADD COLUMN of one column, on @h: a column there
 * already is done (a writer stopped between the shards and the
 * Distributed table; 18.16 has no ADD COLUMN IF NOT EXISTS).
 */
static int ch_shards_add(struct ch_store *s, struct ch_http *h, const struct ch_sql *q)
{
	int ret = ch_http_exec(h, ch_sql_text(q));

	if (ret < 0 && ch_http_code(h) == CH_CODE_COLUMN_EXISTS)
		ret = 0;
	return ch_after_http(s, h, ret);
}

int ch_shards_table_ddl(struct ch_store *s, const char *table, const struct ch_sql *q, bool create)
{
	struct ch_sql d;
	int ret = 0;

	if (!s->nshards || ch_sql_err(q))
		return ch_exec(s, q);
	if (!create) {	/* each shard, then the Distributed table, which takes it too */
		for (unsigned i = 0; i < s->nshards && ret == 0; i++)
			ret = ch_shards_add(s, s->shards[i], q);
		return ret ?: ch_shards_add(s, s->http, q);
	}
	ret = ch_shards_exec(s, q);
	if (ret < 0)
		return ret;
	ch_sql_init(&d, 0);
	ch_sql_raw(&d, "CREATE TABLE IF NOT EXISTS ");
	ch_sql_ident(&d, table);
	ch_sql_raw(&d, " AS ");
	ch_sql_ident(&d, s->shard_db);
	ch_sql_raw(&d, ".");
	ch_sql_ident(&d, table);
	ch_sql_raw(&d, " ENGINE = Distributed(");
	ch_sql_cstr(&d, s->cluster);
	ch_sql_raw(&d, ", ");
	ch_sql_cstr(&d, s->shard_db);
	ch_sql_raw(&d, ", ");
	ch_sql_cstr(&d, table);
	ch_sql_raw(&d, ", host_id)");
	ret = ch_exec(s, &d);
	ch_sql_free(&d);
	return ret;
}

void ch_shards_system(struct ch_store *s, struct ch_sql *q, const char *table)
{
	if (!s->nshards) {
		ch_sql_addf(q, " FROM system.%s WHERE database = currentDatabase()", table);
		return;
	}
	ch_sql_raw(q, " FROM cluster(");
	ch_sql_cstr(q, s->cluster);
	ch_sql_addf(q, ", system.%s) WHERE database IN (", table);
	ch_sql_cstr(q, s->db);
	ch_sql_raw(q, ", ");
	ch_sql_cstr(q, s->shard_db);
	ch_sql_raw(q, ")");
}
