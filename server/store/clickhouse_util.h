/*
 * clickhouse_util.h - the bottom of the ClickHouse backend: errors, the
 * statements and queries every part runs (with the "unreachable" and
 * "back" log lines said once per outage), RowBinary rows and the batches
 * of one INSERT, and the stable ids (hashes) of hosts, types and formats.
 */
#ifndef SERVER_STORE_CLICKHOUSE_UTIL_H
#define SERVER_STORE_CLICKHOUSE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/store/clickhouse_escape.h"
#include "server/store/clickhouse_http.h"
#include "server/store/clickhouse_int.h"
#include "server/store/clickhouse_reply.h"

/* ch_errf - printf into @s's error message (store_errmsg()); returns @err. */
int ch_errf(struct ch_store *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * ch_exec - run the statement built in @q (its own error first: a
 * statement past its cap). ch_query - run the query in @q and parse its
 * reply into @out. ch_query_u64 - the one number a query answers (0 for
 * an empty answer). On failure @s's message says why.
 * Return: 0; TC_ERR_DB; TC_ERR_TOO_LONG; -ENOMEM.
 */
int ch_exec(struct ch_store *s, const struct ch_sql *q);
int ch_exec_text(struct ch_store *s, const char *sql);
int ch_query(struct ch_store *s, const struct ch_sql *q, struct ch_reply *out);
int ch_query_u64(struct ch_store *s, const struct ch_sql *q, uint64_t *v);
/* ch_query_text - ch_query() of our own SQL text @sql (no value in it). */
int ch_query_text(struct ch_store *s, const char *sql, struct ch_reply *out);

/*
 * ch_after_http - after a request on @h (@s's own or its sender's), with
 * its result @ret: on failure its sentence into @s, and a writer's outage
 * (or its end) said once. Returns @ret.
 */
struct ch_http;
int ch_after_http(struct ch_store *s, const struct ch_http *h, int ret);

/* The query of every event table's name. */
#define CH_EVENT_TABLES_SQL "SELECT name FROM system.tables WHERE database = currentDatabase()" \
	" AND startsWith(name, 'ev_')"

/*
 * ch_sql_engine - " ENGINE = @engine" for @table into @q, @engine being
 * "MergeTree()", "ReplacingMergeTree(version)" or the like; with
 * s->replicated its Replicated twin, on ZooKeeper path
 * /clickhouse/tables/{shard}/DB/TABLE, replica {replica} (the server's
 * macros): block dedup (clickhouse.h, "Replicated"). Return: what
 * ch_sql_raw() returns.
 */
int ch_sql_engine(struct ch_store *s, struct ch_sql *q, const char *table, const char *engine);

/*
 * ch_sql_engine_settings - the end of a CREATE TABLE whose engine
 * ch_sql_engine() wrote from @engine: with s->replicated and a MergeTree,
 * " SETTINGS replicated_deduplication_window = CH_DEDUP_WINDOW", the
 * blocks of a table whose hashes ZooKeeper keeps (18.16's default: 100).
 * A first copy of a resent INSERT (ch_exec_resend()) that lands within the
 * HTTP timeout and the resends after it was sent is still deduplicated
 * when the table takes up to CH_DEDUP_BLOCKS_PER_S blocks a second: a
 * table takes one block a commit, and the collector commits every second
 * (more often only at an agent's BYE or after a million events).
 * Return: what ch_sql_raw() returns.
 */
#define CH_DEDUP_BLOCKS_PER_S	10
#define CH_DEDUP_WINDOW		((CH_HTTP_TIMEOUT_MS / 1000 + CH_RESENDS + 1) * CH_DEDUP_BLOCKS_PER_S)
int ch_sql_engine_settings(struct ch_store *s, struct ch_sql *q, const char *engine);

/*
 * ch_exec_resend - on @h, @insert with @len bytes of rows @body; @insert
 * NULL: the statement @body (text, @len unused). On Replicated tables
 * (@resend) an answer lost to the connection (ch_http_down()) is asked
 * again with the same rows, at most CH_RESENDS times a second apart: both
 * copies are one block, which the table keeps once, whichever lands
 * last. Return: what ch_http_insert() or ch_http_exec() returns.
 */
#define CH_RESENDS	3
int ch_exec_resend(struct ch_http *h, bool resend, const char *insert, const void *body,
		   size_t len);

/* ---- RowBinary (little-endian fixed widths; a string is a LEB128 length and its bytes) ---- */
void ch_b_reset(struct ch_bytes *b);
void ch_b_free(struct ch_bytes *b);
void ch_b_u8(struct ch_bytes *b, uint8_t v);
void ch_b_u32(struct ch_bytes *b, uint32_t v);
void ch_b_i32(struct ch_bytes *b, int32_t v);
void ch_b_u64(struct ch_bytes *b, uint64_t v);
void ch_b_i64(struct ch_bytes *b, int64_t v);
void ch_b_f64(struct ch_bytes *b, double v);
void ch_b_str(struct ch_bytes *b, const void *p, size_t n);
static inline void ch_b_cstr(struct ch_bytes *b, const char *s)
{
	ch_b_str(b, s ? s : "", s ? __builtin_strlen(s) : 0);
}

/*
 * ch_batch_init - @b for INSERTs into @table of the columns @cols (a
 * NULL-terminated list of names, quoted here). Return: 0; -ENOMEM;
 * TC_ERR_TOO_LONG.
 */
int ch_batch_init(struct ch_batch *b, const char *table, const char *const *cols, bool counted);
/* ch_batch_init_sql - the same from a ready INSERT text (owned by @b after). */
void ch_batch_init_sql(struct ch_batch *b, char *insert, bool counted);
void ch_batch_free(struct ch_batch *b);

/* ch_batch_row_done - one row appended to @b->rows. Return: 0; -ENOMEM. */
int ch_batch_row_done(struct ch_batch *b);

/*
 * ch_batch_send - INSERT @b's rows (none: nothing sent) and empty it.
 * On failure the rows are kept. Return: 0; TC_ERR_DB; -ENOMEM.
 */
int ch_batch_send(struct ch_store *s, struct ch_batch *b);

/*
 * ch_id - a stable id: the first 63 bits of SHA-256 over @parts (@n byte
 * strings, each followed by a NUL), so that every collector gives the
 * same host, type or format the same id.
 */
uint64_t ch_id(const char *const *parts, const size_t *lens, size_t n);
uint64_t ch_id_str(const char *what, const char *a, const char *b);

/* ch_now_ns - the wall clock in ns. */
int64_t ch_now_ns(void);

#endif
