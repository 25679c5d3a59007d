/*
 * clickhouse_boots.c - boots, their formats and losses on ClickHouse
 * (clickhouse_boots.h), as sqlite_boots.c keeps them on SQLite.
 *
 * host_boots rows are facts (written again harmlessly, kept across a
 * rollback): one per store_boot() call, merged when read, so that a field
 * a call leaves NULL keeps what an earlier call told (SQLite's coalesce).
 * losses rows are counted: they carry the commit id of the pages' events
 * and are read only up to the last commit that completed (ch_query_where()
 * puts that condition, the hosts, window and CPUs in), so a half-written
 * commit's losses are never read, and its rows are deleted with the rest
 * of it (clickhouse_txn.c). A loss stored twice (the same page of the
 * same CPU and boot) reads as one, its first commit's count.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/store/clickhouse_boots.h"
#include "server/store/clickhouse_query.h"
#include "server/store/clickhouse_txn.h"
#include "server/store/clickhouse_util.h"

/* ---- writer ---- */

/* A loss's id: a stable hash of what makes it one loss, never 0 (no paging). */
static int64_t ch_loss_id(uint64_t host_id, const char *boot_id, const struct store_loss *l)
{
	char key[96];
	const char *parts[3] = { "loss", key, boot_id };
	size_t lens[3] = { 4, 0, strlen(boot_id) };
	int64_t id;

	lens[1] = (size_t)snprintf(key, sizeof(key), "%llu/%u/%llu",
				   (unsigned long long)host_id, l->cpu,
				   (unsigned long long)l->trace_ts);
	id = (int64_t)(ch_id(parts, lens, 3) & INT64_MAX);
	return id ? id : 1;
}

static int ch_losses_put(struct store_writer *w, uint64_t host_id, const char *boot_id,
			 const struct store_loss *l, size_t n)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_batch *b = &s->fixed[CH_B_LOSSES];
	int ret = ch_writer_enter(s);

	for (size_t i = 0; ret == 0 && i < n; i++) {
		ch_b_u64(&b->rows, host_id);
		ch_b_cstr(&b->rows, boot_id);
		ch_b_u32(&b->rows, l[i].cpu);
		ch_b_i64(&b->rows, l[i].ts);
		ch_b_u64(&b->rows, l[i].trace_ts);
		ch_b_i64(&b->rows, l[i].count >= 0 ? l[i].count : -1);
		ch_b_i64(&b->rows, ch_loss_id(host_id, boot_id, &l[i]));
		ch_b_u64(&b->rows, s->commit_id);
		ret = ch_counted_done(s, b);
	}
	return ret;
}

/* RowBinary of Nullable(T): a byte, 1 for NULL, else 0 and the value. */
static void ch_b_null_str(struct ch_bytes *b, const char *v, size_t len)
{
	ch_b_u8(b, !v);
	if (v)
		ch_b_str(b, v, len);
}

static void ch_b_null_u32(struct ch_bytes *b, uint32_t v, bool told)
{
	ch_b_u8(b, !told);
	if (told)
		ch_b_u32(b, v);
}

static int ch_boot(struct store_writer *w, uint64_t host_id, const struct store_boot *bt)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_batch *b = &s->fixed[CH_B_HOST_BOOTS];
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	ch_b_u64(&b->rows, host_id);
	ch_b_cstr(&b->rows, bt->boot_id);
	ch_b_i64(&b->rows, bt->since);
	ch_b_null_str(&b->rows, bt->kernel, bt->kernel ? strlen(bt->kernel) : 0);
	ch_b_null_str(&b->rows, bt->trace_clock, bt->trace_clock ? strlen(bt->trace_clock) : 0);
	ch_b_null_u32(&b->rows, bt->long_size, bt->long_size);
	ch_b_u8(&b->rows, !bt->long_size);	/* the byte order comes with the layout */
	if (bt->long_size)
		ch_b_u8(&b->rows, bt->big_endian);
	ch_b_null_u32(&b->rows, bt->page_size, bt->page_size);
	ch_b_null_str(&b->rows, bt->header_page_len ? bt->header_page : NULL,
		      bt->header_page_len);
	ch_b_null_str(&b->rows, bt->header_event_len ? bt->header_event : NULL,
		      bt->header_event_len);
	ch_b_u64(&b->rows, (uint64_t)ch_now_ns());
	return ch_fact_done(s, b);
}

/*
 * A measurement of the host's trace clock (issue 36): a fact, as SQLite's
 * clock_points row; written again by a journal replay harmlessly, read per
 * host as the latest (version) by traceq --hosts (clickhouse_reader.c).
 */
static int ch_clock_point(struct store_writer *w, uint64_t host_id,
			  const struct store_clock_point *p)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_batch *b = &s->fixed[CH_B_CLOCK_POINTS];
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	ch_b_u64(&b->rows, host_id);
	ch_b_cstr(&b->rows, p->boot_id ? p->boot_id : "");
	ch_b_u64(&b->rows, p->trace_ns);
	ch_b_i64(&b->rows, p->realtime_ns);
	ch_b_u64(&b->rows, p->uncertainty_ns);
	ch_b_i64(&b->rows, p->drift_ppb);
	ch_b_u8(&b->rows, !p->have_disagree);	/* Nullable: 1 is NULL */
	if (p->have_disagree)
		ch_b_i64(&b->rows, p->disagree_ns);
	ch_b_u8(&b->rows, p->measured);
	ch_b_u64(&b->rows, (uint64_t)ch_now_ns());
	return ch_fact_done(s, b);
}

/* ---- reader: losses ---- */

/*
 * @q's losses, one row per loss: lid, host, boot_id, cpu, lts, trace_ts,
 * lc. The WHERE is a select's (ch_query_where()) over the losses table,
 * whose host_id, ts, cpu and _tc_commit columns are an event table's;
 * the paging key is (ts, loss_id) as SQLite's (ts, id).
 */
static int ch_losses_sql(struct ch_store *s, const struct store_query *q,
			 const struct ch_reply *hosts, struct ch_sql *w, bool *none)
{
	const struct store_schema sc = { .table = (char *)"losses" };
	const struct store_query lq = {
		.schema = &sc, .host_glob = q->host_glob, .hosts = q->hosts, .scope = q->scope,
		.win = q->win, .cpus = q->cpus, .ncpus = q->ncpus,
	};
	const char *dir = q->reverse ? " DESC" : "";
	int ret;

	ch_sql_raw(w, "SELECT lid, hname, boot_id, cpu, lts, trace_ts, lc FROM (SELECT host_id,"
		      " boot_id, cpu, trace_ts, any(loss_id) AS lid, min(ts) AS lts,"
		      " argMin(lost, _tc_commit) AS lc");
	ret = ch_query_where(s, &lq, hosts, NULL, false, w, none);
	if (ret < 0)
		return ret;
	ch_sql_raw(w, " GROUP BY host_id, boot_id, cpu, trace_ts) ANY LEFT JOIN (SELECT host_id,"
		      " argMax(name, version) AS hname FROM hosts GROUP BY host_id) USING host_id");
	if (q->after_rowid) {
		ch_sql_addf(w, " WHERE lts %s ", q->reverse ? "<" : ">");
		ch_sql_i64(w, q->after_ts);
		ch_sql_raw(w, " OR (lts = ");
		ch_sql_i64(w, q->after_ts);
		ch_sql_addf(w, " AND lid %s ", q->reverse ? "<" : ">");
		ch_sql_u64(w, q->after_rowid);
		ch_sql_raw(w, ")");
	}
	ch_sql_addf(w, " ORDER BY lts%s, lid%s", dir, dir);
	if (q->limit)
		ch_sql_addf(w, " LIMIT %llu", (unsigned long long)q->limit);
	ret = ch_sql_err(w);
	return ret < 0 ? ch_errf(s, ret, "the losses' query is too long for ClickHouse") : 0;
}

static int ch_losses(struct store_reader *rd, const struct store_query *q,
		     int (*fn)(void *ctx, const struct store_loss_row *x), void *ctx)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_reply hosts = { 0 }, r = { 0 };
	struct ch_sql w;
	bool none = false;
	int ret = q->host_glob || q->hosts || q->scope ? ch_query_hosts(s, &hosts) : 0;

	ch_sql_init(&w, 0);
	ret = ret ?: ch_losses_sql(s, q, &hosts, &w, &none);
	if (ret == 0 && !none)
		ret = ch_query(s, &w, &r);
	ch_sql_free(&w);
	ch_reply_free(&hosts);
	for (size_t i = 0; ret == 0 && i < r.nrows; i++) {
		struct store_loss_row x = {
			.host = ch_reply_cell(&r, i, 1), .boot_id = ch_reply_cell(&r, i, 2),
		};
		uint64_t cpu = 0;

		if (ch_reply_i64(&r, i, 0, &x.id) || ch_reply_u64(&r, i, 3, &cpu) ||
		    ch_reply_i64(&r, i, 4, &x.l.ts) || ch_reply_u64(&r, i, 5, &x.l.trace_ts) ||
		    ch_reply_i64(&r, i, 6, &x.l.count) || cpu > UINT32_MAX) {
			ret = ch_errf(s, TC_ERR_DB, "ClickHouse answered a loss that does not read");
			break;
		}
		x.l.cpu = (uint32_t)cpu;
		ret = fn(ctx, &x);
	}
	ch_reply_free(&r);
	return ret;
}

/* ---- reader: boots ---- */

/*
 * The boot of @host_id up at @ts: of its boots merged per boot_id (since
 * of the first row, each other column the latest told), the one first
 * seen last at or before @ts, else the first (SQLite's choice). Each
 * nullable column comes as two: whether it was told, and its value (a
 * reply has no NULL). Columns: boot_id, since, then (told, value) for
 * kernel, trace_clock, long_size, big_endian, page_size, header_page,
 * header_event.
 */
static void ch_boot_sql(struct ch_sql *q, uint64_t host_id, int64_t ts)
{
	ch_sql_raw(q, "SELECT boot_id, bs, isNotNull(k), ifNull(k, ''), isNotNull(c),"
		      " ifNull(c, ''), isNotNull(l), ifNull(l, 0), isNotNull(e), ifNull(e, 0),"
		      " isNotNull(p), ifNull(p, 0), isNotNull(hp), ifNull(hp, ''),"
		      " isNotNull(he), ifNull(he, '') FROM (SELECT boot_id,"
		      " argMin(since, version) AS bs, argMax(kernel, version) AS k,"
		      " argMax(trace_clock, version) AS c, argMax(long_size, version) AS l,"
		      " argMax(big_endian, version) AS e, argMax(page_size, version) AS p,"
		      " argMax(header_page, version) AS hp, argMax(header_event, version) AS he"
		      " FROM host_boots WHERE host_id = ");
	ch_sql_u64(q, host_id);
	ch_sql_raw(q, " GROUP BY boot_id) ORDER BY bs <= ");
	ch_sql_i64(q, ts);
	ch_sql_raw(q, " DESC, if(bs <= ");
	ch_sql_i64(q, ts);
	ch_sql_raw(q, ", bs, -bs) DESC, boot_id LIMIT 1");
}

/* Cell @col of row 0 when the cell before it says it was told, else NULL. */
static const char *ch_told(const struct ch_reply *r, size_t col, size_t *len)
{
	const char *t = ch_reply_cell(r, 0, col - 1);
	bool told = t && !strcmp(t, "1");

	if (len)
		*len = told ? r->lens[col] : 0;
	return told ? ch_reply_cell(r, 0, col) : NULL;
}

static uint32_t ch_told_u32(const struct ch_reply *r, size_t col)
{
	uint64_t v = 0;

	return ch_told(r, col, NULL) && ch_reply_u64(r, 0, col, &v) == 0 && v <= UINT32_MAX ?
	       (uint32_t)v : 0;
}

/* A host without boots (stored before 0003): what its hosts row holds. */
static int ch_boot_of_host(struct ch_store *s, uint64_t host_id,
			   int (*fn)(void *ctx, const struct store_boot *b), void *ctx)
{
	struct ch_reply r;
	struct ch_sql q;
	uint64_t n = 0, page = 0;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "SELECT count(), argMax(boot_id, version), min(first_seen),"
		    " argMax(kernel, version), argMax(trace_clock, version),"
		    " argMax(page_size, version) FROM hosts WHERE host_id = %llu",
		    (unsigned long long)host_id);
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	if (ret < 0)
		return ret;
	if (r.nrows && ch_reply_u64(&r, 0, 0, &n) == 0 && n) {
		struct store_boot b = {
			.boot_id = ch_reply_cell(&r, 0, 1), .kernel = ch_reply_cell(&r, 0, 3),
			.trace_clock = ch_reply_cell(&r, 0, 4),
		};

		ch_reply_i64(&r, 0, 2, &b.since);
		ch_reply_u64(&r, 0, 5, &page);
		b.page_size = page <= UINT32_MAX ? (uint32_t)page : 0;
		ret = fn(ctx, &b);
	} else {
		ret = ch_errf(s, -ENOENT, "no such host");
	}
	ch_reply_free(&r);
	return ret;
}

static int ch_boot_get(struct store_reader *rd, uint64_t host_id, int64_t ts,
		       int (*fn)(void *ctx, const struct store_boot *b), void *ctx)
{
	struct ch_store *s = ch_reader_of(rd);
	struct store_boot b = { 0 };
	struct ch_reply r;
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_boot_sql(&q, host_id, ts);
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	if (ret < 0)
		return ret;
	if (!r.nrows) {
		ch_reply_free(&r);
		return ch_boot_of_host(s, host_id, fn, ctx);
	}
	b.boot_id = ch_reply_cell(&r, 0, 0);
	ch_reply_i64(&r, 0, 1, &b.since);
	b.kernel = ch_told(&r, 3, NULL);
	b.trace_clock = ch_told(&r, 5, NULL);
	b.long_size = ch_told_u32(&r, 7);
	b.big_endian = ch_told_u32(&r, 9) != 0;
	b.page_size = ch_told_u32(&r, 11);
	b.header_page = ch_told(&r, 13, &b.header_page_len);
	b.header_event = ch_told(&r, 15, &b.header_event_len);
	ret = fn(ctx, &b);
	ch_reply_free(&r);
	return ret;
}

/* " host_id = H AND boot_id = 'B'" into @q (B escaped). */
static void host_boot(struct ch_sql *q, uint64_t host_id, const char *boot_id)
{
	ch_sql_raw(q, " host_id = ");
	ch_sql_u64(q, host_id);
	ch_sql_raw(q, " AND boot_id = ");
	ch_sql_cstr(q, boot_id);
}

/*
 * The formats @host_id sent in @boot_id, by format id: host_formats'
 * (format, type) pairs of the boot, with the format's text and the type's
 * names (18.16 takes one JOIN per SELECT: two nested).
 */
static int ch_boot_formats(struct store_reader *rd, uint64_t host_id, const char *boot_id,
			   int64_t after_id, uint32_t max,
			   int (*fn)(void *ctx, int64_t id, const char *system, const char *name,
				     const char *text),
			   void *ctx)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_reply r = { 0 };
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT format_id, tsys, tname, text FROM (SELECT format_id, type_id,"
		       " text FROM (SELECT DISTINCT format_id, type_id FROM host_formats WHERE");
	host_boot(&q, host_id, boot_id);
	ch_sql_raw(&q, " AND format_id > ");
	ch_sql_i64(&q, after_id);
	ch_sql_raw(&q, ") ANY INNER JOIN (SELECT format_id, any(text) AS text FROM formats"
		       " GROUP BY format_id) USING format_id) ANY INNER JOIN (SELECT type_id,"
		       " argMax(system, version) AS tsys, argMax(name, version) AS tname FROM"
		       " event_types GROUP BY type_id) USING type_id ORDER BY format_id, tsys,"
		       " tname LIMIT ");
	ch_sql_u64(&q, max);
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	for (size_t i = 0; ret == 0 && i < r.nrows; i++) {
		int64_t id = 0;

		if (ch_reply_i64(&r, i, 0, &id) < 0) {
			ret = ch_errf(s, TC_ERR_DB, "ClickHouse answered a format id that does not"
				      " read");
			break;
		}
		ret = fn(ctx, id, ch_reply_cell(&r, i, 1), ch_reply_cell(&r, i, 2),
			 ch_reply_cell(&r, i, 3));
	}
	ch_reply_free(&r);
	return ret;
}

/*
 * The programs @host_id announced in @boot_id: one row per program_id
 * (a fact written again after each reconnect; ReplacingMergeTree merges
 * them in its own time), by since_ns.
 */
static int ch_boot_programs(struct store_reader *rd, uint64_t host_id, const char *boot_id,
			    uint32_t max, int (*fn)(void *ctx, const struct store_program *p),
			    void *ctx)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_reply r = { 0 };
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT any(session), any(grp), any(pid), any(comm), any(first_stream),"
		       " any(nstreams), min(since_ns) AS since FROM programs WHERE");
	host_boot(&q, host_id, boot_id);
	ch_sql_raw(&q, " AND grp != 0 GROUP BY program_id ORDER BY since, program_id LIMIT ");
	ch_sql_u64(&q, max);
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	for (size_t i = 0; ret == 0 && i < r.nrows; i++) {
		uint64_t session = 0, grp = 0, first = 0, n = 0;
		int64_t pid = 0, since = 0;

		if (ch_reply_u64(&r, i, 0, &session) < 0 || ch_reply_u64(&r, i, 1, &grp) < 0 ||
		    ch_reply_i64(&r, i, 2, &pid) < 0 || ch_reply_u64(&r, i, 4, &first) < 0 ||
		    ch_reply_u64(&r, i, 5, &n) < 0 || ch_reply_i64(&r, i, 6, &since) < 0 ||
		    grp > UINT32_MAX || first > UINT32_MAX || n > UINT32_MAX) {
			ret = ch_errf(s, TC_ERR_DB, "ClickHouse answered a program that does not"
				      " read");
			break;
		}
		ret = fn(ctx, &(struct store_program){
			.boot_id = boot_id, .session = session, .group = (uint32_t)grp,
			.pid = (int32_t)pid, .comm = ch_reply_cell(&r, i, 3),
			.first_stream = (uint32_t)first, .nstreams = (uint32_t)n, .since_ns = since,
		});
	}
	ch_reply_free(&r);
	return ret;
}

/* ---- retention ---- */

int ch_losses_retain(struct ch_store *s, int64_t before_ts)
{
	struct ch_reply p = { 0 };
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT DISTINCT partition FROM system.parts WHERE database ="
		       " currentDatabase() AND table = 'losses' AND active AND partition <"
		       " toString(toYYYYMMDD(toDateTime(");
	ch_sql_i64(&q, before_ts / 1000000000);
	ch_sql_raw(&q, ")))");
	ret = ch_query(s, &q, &p);
	for (size_t i = 0; ret == 0 && i < p.nrows; i++) {
		ch_sql_reset(&q);
		ch_sql_raw(&q, "ALTER TABLE losses DROP PARTITION ");
		ch_sql_cstr(&q, ch_reply_cell(&p, i, 0));
		ret = ch_exec(s, &q);
	}
	ch_reply_free(&p);
	ch_sql_free(&q);
	return ret;
}

void ch_boots_ops(struct store_writer_ops *w, struct store_reader_ops *r)
{
	w->losses_put = ch_losses_put;
	w->boot = ch_boot;
	w->clock_point = ch_clock_point;
	r->losses = ch_losses;
	r->boot_get = ch_boot_get;
	r->boot_formats = ch_boot_formats;
	r->boot_programs = ch_boot_programs;
}
