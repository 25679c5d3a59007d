/*
 * clickhouse.c - the ClickHouse backend's top: the URL, opening and
 * closing a writer or a reader, the schema's migrations, and the two ops
 * tables, which each part fills with its own ops (clickhouse.h has the
 * design and the parts).
 */
#include "config.h"

#define LOG_PREFIX "clickhouse"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/tc_error.h"
#include "server/store/clickhouse.h"
#include "server/store/clickhouse_boots.h"
#include "server/store/clickhouse_fleet.h"
#include "server/store/clickhouse_snapshots.h"
#include "server/store/clickhouse_hist.h"
#include "server/store/clickhouse_http.h"
#include "server/store/clickhouse_lease.h"
#include "server/store/clickhouse_meta.h"
#include "server/store/clickhouse_query.h"
#include "server/store/clickhouse_reader.h"
#include "server/store/clickhouse_retain.h"
#include "server/store/clickhouse_schema.h"
#include "server/store/clickhouse_send.h"
#include "server/store/clickhouse_shards.h"
#include "server/store/clickhouse_sql.h"
#include "server/store/clickhouse_symbols.h"
#include "server/store/clickhouse_tail.h"
#include "server/store/clickhouse_txn.h"
#include "server/store/clickhouse_util.h"
#include "server/store/clickhouse_version.h"
#include "sql/clickhouse/schema.h"

#define CH_URL_MAX	1024

/* A clickhouse:// URL's parts. */
struct ch_url {
	char user[256], password[256], db[128];
	char host[CH_SHARDS_MAX][256], port[CH_SHARDS_MAX][8];	/* [0]: the first shard */
	unsigned nhosts;
	char cluster[128];	/* ?cluster=NAME (several hosts: the shards) */
	bool replicated;	/* ?replicated: Replicated* tables (clickhouse.h) */
};

#define CH_NAME_CHARS	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"

static int ch_url_part(char *dst, size_t size, const char *p, size_t n)
{
	if (n >= size)
		return TC_ERR_CONFIG;
	memcpy(dst, p, n);
	dst[n] = '\0';
	return 0;
}

/* The options after DB's '?' at @p ("replicated", "cluster=NAME"), into @u. */
static int ch_url_options(const char *p, struct ch_url *u)
{
	static const char cl[] = "cluster=";

	for (size_t n; *p; p += n + (p[n] == '&')) {
		n = strcspn(p, "&");
		if (n == strlen("replicated") && !strncmp(p, "replicated", n))
			u->replicated = true;
		else if (n > strlen(cl) && !strncmp(p, cl, strlen(cl)) &&
			 strspn(p + strlen(cl), CH_NAME_CHARS) == n - strlen(cl) &&
			 ch_url_part(u->cluster, sizeof(u->cluster), p + strlen(cl),
				     n - strlen(cl)) == 0)
			continue;
		else
			return TC_ERR_CONFIG;
	}
	return 0;
}

/* One HOST:PORT of @n bytes at @p (HOST may be [IPv6]) as host @i of @u. */
static int ch_url_hostport(const char *p, size_t n, struct ch_url *u, unsigned i)
{
	const char *end = p + n, *host_end = *p == '[' ? memchr(p, ']', n) : NULL, *colon;

	host_end = host_end ? host_end + 1 : p;
	colon = memchr(host_end, ':', (size_t)(end - host_end));
	if (!colon || colon == p ||
	    ch_url_part(u->host[i], sizeof(u->host[i]), p, (size_t)(colon - p)) ||
	    ch_url_part(u->port[i], sizeof(u->port[i]), colon + 1, (size_t)(end - colon - 1)) ||
	    !u->port[i][0] || strspn(u->port[i], "0123456789") != strlen(u->port[i]))
		return TC_ERR_CONFIG;
	return 0;
}

/*
 * clickhouse://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...]/DB[?OPTIONS];
 * several HOST:PORT are the shards, the first one holding all but the
 * event rows (clickhouse_shards.h).
 */
static int ch_url_parse(const char *url, struct ch_url *u, char *err, size_t errlen)
{
	const char *p = url + strlen(CH_SCHEME), *at, *colon, *slash, *opts;
	size_t n;

	memset(u, 0, sizeof(*u));
	if (strncmp(url, CH_SCHEME, strlen(CH_SCHEME)) || strlen(url) > CH_URL_MAX)
		goto bad;
	slash = strchr(p, '/');
	if (!slash)
		goto bad;
	at = memchr(p, '@', (size_t)(slash - p));
	if (at) {
		colon = memchr(p, ':', (size_t)(at - p));
		if (ch_url_part(u->user, sizeof(u->user), p, (size_t)((colon ? colon : at) - p)) ||
		    (colon && ch_url_part(u->password, sizeof(u->password), colon + 1,
					  (size_t)(at - colon - 1))))
			goto bad;
		p = at + 1;
	}
	for (; p <= slash; p += n + 1) {
		n = strcspn(p, ",/");
		if (u->nhosts == CH_SHARDS_MAX || ch_url_hostport(p, n, u, u->nhosts++) < 0)
			goto bad;
	}
	if (ch_url_part(u->db, sizeof(u->db), slash + 1, strcspn(slash + 1, "?")) || !u->db[0] ||
	    strlen(u->db) + strlen(CH_SHARD_DB_SUFFIX) >= sizeof(u->db) ||
	    strspn(u->db, CH_NAME_CHARS) != strlen(u->db))
		goto bad;
	opts = strchr(slash, '?');
	if (opts && ch_url_options(opts + 1, u) < 0)
		goto bad;
	if (u->nhosts > 1 && !u->cluster[0])
		snprintf(u->cluster, sizeof(u->cluster), "%s", CH_CLUSTER_DEFAULT);
	return 0;
bad:
	snprintf(err, errlen, "not a ClickHouse address: expected clickhouse://[USER@]HOST:PORT"
		 "[,HOST:PORT...]/DB[?replicated|?cluster=NAME] (at most %d shards; DB and NAME of"
		 " letters, digits and '_')", CH_SHARDS_MAX);
	return TC_ERR_CONFIG;
}

/* ---- migrations ---- */

/*
 * A migration's statement @stmt into @q with each table's engine as the
 * database wants it: the .sql files write "{{ENGINE TABLE X(...)}}" where
 * a CREATE TABLE names its engine, and ch_sql_engine() makes it
 * " ENGINE = X(...)" or, with s->replicated, its Replicated twin, the
 * statement then ending in its SETTINGS (ch_sql_engine_settings()). An
 * "ENGINE =" of its own in a statement is refused: that table would not
 * follow ?replicated. Return: 0; TC_ERR_DB_SCHEMA; what ch_sql_raw() returns.
 */
static int ch_sql_engines(struct ch_store *s, struct ch_sql *q, const char *stmt)
{
	static const char open[] = "{{ENGINE ";
	char table[128], engine[128];
	const char *p = stmt, *at, *end;
	char last[128] = "";
	size_t n;

	if (strstr(stmt, "ENGINE ="))
		return ch_errf(s, TC_ERR_DB_SCHEMA, "a migration names an engine without {{ENGINE}}");
	while ((at = strstr(p, open)) != NULL) {
		ch_sql_addf(q, "%.*s", (int)(at - p), p);
		at += strlen(open);
		end = strstr(at, "}}");
		n = strcspn(at, " ");
		if (!end || n >= sizeof(table) || at + n >= end ||
		    (size_t)(end - at - n - 1) >= sizeof(engine))
			return ch_errf(s, TC_ERR_DB_SCHEMA, "a migration's {{ENGINE}} is not TABLE ENGINE");
		snprintf(table, sizeof(table), "%.*s", (int)n, at);
		snprintf(engine, sizeof(engine), "%.*s", (int)(end - at - n - 1), at + n + 1);
		ch_sql_engine(s, q, table, engine);
		snprintf(last, sizeof(last), "%s", engine);
		p = end + 2;
	}
	return ch_sql_raw(q, p) ?: ch_sql_engine_settings(s, q, last);
}

/* Run each statement of @sql (split at lines ending in ';', '--' lines dropped). */
static int ch_run_script(struct ch_store *s, const char *sql)
{
	char *text = strdup(sql), *line, *save = NULL;
	struct ch_sql stmt, q;	/* as the file has it; as it runs */
	size_t n;
	int ret = 0;

	if (!text)
		return -ENOMEM;
	ch_sql_init(&stmt, 0);
	ch_sql_init(&q, 0);
	for (line = strtok_r(text, "\n", &save); line && ret == 0;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line + strspn(line, " \t"), "--", 2))
			continue;
		n = strlen(line);
		while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
			line[--n] = '\0';
		if (n && line[n - 1] == ';') {
			line[n - 1] = '\0';
			ch_sql_raw(&stmt, line);
			ret = ch_sql_err(&stmt) ? ch_exec(s, &stmt) :
			      ch_sql_engines(s, &q, ch_sql_text(&stmt));
			ret = ret ?: ch_exec(s, &q);
			ch_sql_reset(&stmt);
			ch_sql_reset(&q);
			continue;
		}
		ch_sql_raw(&stmt, line);
		ch_sql_raw(&stmt, "\n");
	}
	ch_sql_free(&stmt);
	ch_sql_free(&q);
	free(text);
	return ret;
}

/*
 * Whether the writer's tables are Replicated (s->replicated, asked for by
 * ?replicated): a database's tables keep the engine they were made with,
 * so its commits table decides once it exists. ?replicated on a database
 * made without, or a server without ZooKeeper or the macros shard and
 * replica, is refused: block dedup would be promised and not there.
 */
static int ch_replication(struct ch_store *s)
{
	struct ch_reply r;
	uint64_t n = 0;
	bool asked = s->replicated;
	int ret = ch_query_text(s, "SELECT engine FROM system.tables WHERE database ="
				" currentDatabase() AND name = 'commits'", &r);

	if (ret < 0)
		return ret;
	if (r.nrows)
		s->replicated = !strncmp(ch_reply_cell(&r, 0, 0), "Replicated", 10);
	ch_reply_free(&r);
	if (asked && !s->replicated)
		return ch_errf(s, TC_ERR_CONFIG, "database %s was made without ?replicated: its "
			       "tables are not Replicated (use another database)", s->db);
	if (!s->replicated)
		return 0;
	ret = ch_query_text(s, "SELECT count() FROM system.macros WHERE macro IN "
			    "('shard', 'replica')", &r);
	if (ret == 0) {
		n = r.nrows ? strtoull(ch_reply_cell(&r, 0, 0), NULL, 10) : 0;
		ch_reply_free(&r);
		ret = ch_query_text(s, "SELECT count() FROM system.zookeeper WHERE path = '/'", &r);
	}
	if (ret == 0)
		ch_reply_free(&r);
	if (ret < 0 || n != 2) {
		/* the reason out of s->h->errmsg first: ch_errf() writes there */
		char why[sizeof(s->h->errmsg)];

		snprintf(why, sizeof(why), "%s", ret < 0 ? s->h->errmsg : "no macros shard and replica");
		return ch_errf(s, TC_ERR_CONFIG, "replicated tables need ClickHouse with ZooKeeper and"
			       " the macros shard and replica in its config.xml (%s)", why);
	}
	return 0;
}

/* The database made, and every migration past its version applied. */
static int ch_migrate(struct ch_store *s, bool writer)
{
	struct ch_sql q;
	uint64_t v = 0;
	int ret;

	ch_sql_init(&q, 0);
	if (writer) {
		ch_http_set_database(s->http, NULL);
		ch_sql_raw(&q, "CREATE DATABASE IF NOT EXISTS ");
		ch_sql_ident(&q, s->db);
		ret = ch_exec(s, &q);
		if (ret == 0)
			ret = ch_http_set_database(s->http, s->db) ?: ch_replication(s) ?:
			      ch_run_script(s, "CREATE TABLE IF NOT EXISTS schema_version (version"
					    " UInt32, ts Int64) {{ENGINE schema_version MergeTree()}}"
					    " ORDER BY version;");
		if (ret < 0)
			goto out;
	}
	ch_sql_reset(&q);
	ch_sql_raw(&q, "SELECT max(version) FROM schema_version");
	ret = ch_query_u64(s, &q, &v);
	if (ret == 0 && v > CH_SCHEMA_VERSION)
		ret = ch_errf(s, TC_ERR_DB_SCHEMA, "database %s has schema version %llu, newer than"
			      " this collector's %d", s->db, (unsigned long long)v,
			      CH_SCHEMA_VERSION);
	if (ret == 0 && !writer && v != CH_SCHEMA_VERSION)
		ret = ch_errf(s, TC_ERR_DB_SCHEMA, "database %s has schema version %llu, not %d",
			      s->db, (unsigned long long)v, CH_SCHEMA_VERSION);
	for (int i = (int)v; writer && ret == 0 && i < CH_SCHEMA_VERSION; i++) {
		ret = ch_run_script(s, ch_migrations[i].sql);
		ch_sql_reset(&q);
		ch_sql_addf(&q, "INSERT INTO schema_version VALUES (%d, %lld)",
			    ch_migrations[i].version, (long long)ch_now_ns());
		ret = ret ?: ch_exec(s, &q);
	}
out:
	ch_sql_free(&q);
	return ret;
}

/* ---- open, close ---- */

static void ch_store_free(struct ch_store *s)
{
	if (!s)
		return;
	ch_send_free(s);
	ch_schema_free(s);
	ch_meta_free(s);
	ch_symbols_free(s);
	ch_shards_free(s);
	ch_http_free(s->http);
	free(s->db);
	free(s->collector);
	free(s);
}

static void ch_writer_close(struct store_writer *w)
{
	struct ch_store *s = ch_writer_of(w);

	if (s->in_txn)
		ch_rollback(w);
	ch_txn_facts_send(s);	/* facts outside a transaction: sent, if the server is there */
	ch_store_free(s);
}

static void ch_reader_close(struct store_reader *r)
{
	ch_store_free(ch_reader_of(r));
}

/* This collector's name in journal_marks and commits: --collector-name, else its host's. */
static char *ch_collector_name(const struct store_remote_auth *auth)
{
	char host[256] = "";

	if (auth && auth->collector)
		return strdup(auth->collector);
	if (gethostname(host, sizeof(host) - 1) < 0)
		strcpy(host, "localhost");
	return strdup(host);
}

/* A handle for @url (connected on its first statement). */
static int ch_store_new(const char *url, const struct store_remote_auth *auth, bool reader,
			struct ch_store **out, char *errmsg, size_t len)
{
	struct ch_http_conf c = { 0 };
	char base[CH_SHARDS_MAX][280];
	const char *bases[CH_SHARDS_MAX];
	struct ch_url u;
	struct ch_store *s;
	bool tls = auth && (auth->cert || auth->ca);
	int ret = ch_url_parse(url, &u, errmsg, len);

	if (ret < 0)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->reader = reader;
	s->slot = auth ? auth->collector_id : 0;
	s->lease_s = auth && auth->retain_lease_s ? auth->retain_lease_s : CH_LEASE_S_DEFAULT;
	s->h = reader ? &s->base.r.h : &s->base.w.h;
	for (unsigned i = 0; i < u.nhosts; i++) {
		snprintf(base[i], sizeof(base[i]), "%s://%s:%s/", tls ? "https" : "http", u.host[i],
			 u.port[i]);
		bases[i] = base[i];
	}
	c.base = bases[0];
	c.user = u.user[0] ? u.user : NULL;
	c.password = auth && auth->password ? auth->password : u.password[0] ? u.password : NULL;
	c.database = reader ? u.db : NULL;
	c.cert = auth ? auth->cert : NULL;
	c.key = auth ? auth->key : NULL;
	c.ca = auth ? auth->ca : NULL;
	c.params = !reader && u.nhosts > 1 ? CH_SHARDS_PARAMS : NULL;
	s->replicated = u.replicated;
	ret = ch_http_new(&c, &s->http);
	if (ret == 0 && (!(s->db = strdup(u.db)) || !(s->collector = ch_collector_name(auth))))
		ret = -ENOMEM;
	ret = ret ?: ch_shards_new(s, &c, bases, u.nhosts, u.cluster);
	explicit_bzero(u.password, sizeof(u.password));
	if (ret == 0 && !reader)
		ret = ch_meta_init(s);
	if (ret < 0) {
		snprintf(errmsg, len, "%s", tc_strerror(ret));
		ch_store_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

/* Filled once, by ch_init(): each part puts its own ops in. */
static struct store_writer_ops ch_writer_ops = {
	.close = ch_writer_close,
	.begin = ch_begin,
	.commit = ch_commit,
	.rollback = ch_rollback,
};

static struct store_reader_ops ch_reader_ops = {
	.close = ch_reader_close,
};

static void ch_init(void)
{
	ch_meta_writer_ops(&ch_writer_ops);
	ch_retain_ops(&ch_writer_ops);
	ch_schema_writer_ops(&ch_writer_ops);
	ch_schema_reader_ops(&ch_reader_ops);
	ch_reader_part_ops(&ch_reader_ops);
	ch_query_reader_ops(&ch_reader_ops);
	ch_hist_reader_ops(&ch_reader_ops);
	ch_tail_reader_ops(&ch_reader_ops);
	ch_sql_reader_ops(&ch_reader_ops);
	ch_boots_ops(&ch_writer_ops, &ch_reader_ops);
	ch_fleet_writer_ops(&ch_writer_ops);
	ch_snapshots_ops(&ch_writer_ops, &ch_reader_ops);
	ch_symbols_reader_ops(&ch_reader_ops);
}

static pthread_once_t ch_once = PTHREAD_ONCE_INIT;

int store_clickhouse_writer_open(const char *url, const struct store_remote_auth *auth,
				 struct store_writer **out, char *errmsg, size_t len)
{
	struct ch_store *s;
	int ret = ch_store_new(url, auth, false, &s, errmsg, len);

	if (ret < 0)
		return ret;
	pthread_once(&ch_once, ch_init);
	s->base.w.ops = &ch_writer_ops;
	ret = ch_migrate(s, true) ?: ch_shards_setup(s) ?: ch_fleet_check(s) ?: ch_txn_recover(s);
	if (ret == 0 && ch_version_note(s) < 0)	/* said, not needed: we use nothing newer */
		log_warn("could not ask ClickHouse its version: %s", s->h->errmsg);
	if (ret < 0) {
		snprintf(errmsg, len, "%s", s->h->errmsg);
		ch_store_free(s);
		return ret;
	}
	log_info("storing into ClickHouse at %s, database %s (last commit %llu). Exactly once "
		 "rests on the commits table: a commit that did not complete is given up (void_ids) "
		 "and its rows deleted before storing again, and queries read none of them; %s",
		 ch_http_where(s->http), s->db, (unsigned long long)s->last_ok, s->replicated ?
		 "tables are Replicated: an INSERT whose answer was lost is sent again and kept "
		 "once (block dedup)" : "tables are not Replicated (no ?replicated): an INSERT "
		 "whose answer was lost fails its commit, stored again from the journal");
	*out = &s->base.w;
	return 0;
}

int store_clickhouse_reader_open(const char *url, const struct store_remote_auth *auth,
				 struct store_reader **out, char *errmsg, size_t len)
{
	struct ch_store *s;
	int ret = ch_store_new(url, auth, true, &s, errmsg, len);

	if (ret < 0)
		return ret;
	pthread_once(&ch_once, ch_init);
	s->base.r.ops = &ch_reader_ops;
	ret = ch_migrate(s, false);
	if (ret < 0) {
		snprintf(errmsg, len, "%s", s->h->errmsg);
		ch_store_free(s);
		return ret;
	}
	*out = &s->base.r;
	return 0;
}
