/*
 * clickhouse_reader.c - hosts, stats, drops and the small reads of a
 * ClickHouse reader (clickhouse_reader.h). Host names are few: they are
 * read whole and matched against the asker's globs here. Counters are
 * read up to the last commit that completed (clickhouse.h).
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/store/clickhouse_fleet.h"
#include "server/store/clickhouse_reader.h"
#include "server/store/clickhouse_shards.h"
#include "server/store/clickhouse_util.h"

static bool ch_globs_match(const struct store_scope *sc, const char *name)
{
	for (size_t i = 0; i < sc->n; i++)
		if (!fnmatch(sc->globs[i], name, FNM_NOESCAPE))
			return true;
	return false;
}

bool ch_host_allowed(const struct store_query *q, const char *name)
{
	if (!q)
		return true;
	if (q->host_glob && fnmatch(q->host_glob, name, FNM_NOESCAPE))
		return false;
	if (q->hosts && !ch_globs_match(q->hosts, name))
		return false;
	return !q->scope || ch_globs_match(q->scope, name);
}

/* Every host's latest row, its clock's, and the collector it is connected to (lc). */
static int ch_hosts_read(struct ch_store *s, struct ch_reply *r)
{
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	/* 18.16 takes one JOIN per SELECT: the live set joins around the rest */
	ch_sql_raw(&q, "SELECT host_id, n, mid, bid, kern, clk, subj, ag, nc, ps, off, fs, ls,"
		       " cn, cm, cmeas, cunc, cdrift, cdis, lc FROM (SELECT host_id, n, mid, bid,"
		       " kern, clk, subj, ag, nc, ps, off, fs, ls, cn, cm, cmeas, cunc, cdrift, cdis"
		       " FROM (SELECT host_id, argMax(name,"
		       " version) AS n, argMax(machine_id, version) AS mid, argMax(boot_id, version)"
		       " AS bid, argMax(kernel, version) AS kern, argMax(trace_clock, version) AS clk,"
		       " argMax(peer_subject, version) AS subj, argMax(agent, version) AS ag,"
		       " argMax(ncpus, version) AS nc, argMax(page_size, version) AS ps,"
		       " argMax(clock_offset_ns, version) AS off, min(first_seen) AS fs,"
		       " max(last_seen) AS ls FROM hosts GROUP BY host_id) ANY LEFT JOIN (SELECT"
		       " host_id, count() AS cn, argMax(measured, version) AS cm,"
		       " argMax(realtime_ns - toInt64(trace_ns), version) AS cmeas,"
		       " argMax(uncertainty_ns, version) AS cunc, argMax(drift_ppb, version) AS cdrift,"
		       " argMax(ifNull(disagree_ns, 0), version) AS cdis FROM clock_points GROUP BY"
		       " host_id) USING host_id) ANY LEFT JOIN (");
	ch_sql_addf(&q, CH_LIVE_SQL, (long long)(ch_now_ns() - (int64_t)CH_LIVE_S * 1000000000));
	ch_sql_raw(&q, ") USING host_id ORDER BY n, host_id");
	ret = ch_query(s, &q, r);
	ch_sql_free(&q);
	return ret;
}

static const char *ch_nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

static int ch_hosts(struct store_reader *rd, const struct store_query *q,
		    int (*fn)(void *ctx, const struct store_host_info *h), void *ctx)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_reply r;
	int ret = ch_hosts_read(s, &r);

	for (size_t i = 0; ret == 0 && i < r.nrows; i++) {
		struct store_host_info h = {
			.name = ch_reply_cell(&r, i, 1), .machine_id = ch_reply_cell(&r, i, 2),
			.boot_id = ch_nonempty(ch_reply_cell(&r, i, 3)),
			.kernel = ch_reply_cell(&r, i, 4), .trace_clock = ch_reply_cell(&r, i, 5),
			.peer_subject = ch_nonempty(ch_reply_cell(&r, i, 6)),
			.agent = ch_nonempty(ch_reply_cell(&r, i, 7)),
			.collector = ch_nonempty(ch_reply_cell(&r, i, 19)),
		};

		uint64_t points = 0, measured = 0;

		if (!ch_host_allowed(q, h.name))
			continue;
		ch_reply_u64(&r, i, 0, &h.id);
		ch_reply_i64(&r, i, 8, &h.ncpus);
		ch_reply_i64(&r, i, 9, &h.page_size);
		ch_reply_i64(&r, i, 10, &h.clock_offset_ns);
		ch_reply_i64(&r, i, 11, &h.first_seen);
		ch_reply_i64(&r, i, 12, &h.last_seen);
		if (ch_reply_u64(&r, i, 13, &points) == 0 && points) {	/* clock_points */
			ch_reply_u64(&r, i, 14, &measured);
			h.clock_source = measured ? "measured" : "host";
			ch_reply_i64(&r, i, 15, &h.clock_measured_ns);
			ch_reply_i64(&r, i, 16, &h.clock_uncertainty_ns);
			ch_reply_i64(&r, i, 17, &h.clock_drift_ppb);
			ch_reply_i64(&r, i, 18, &h.clock_disagree_ns);
		}
		ret = fn(ctx, &h);
	}
	if (ret == 0 || r.nrows)
		ch_reply_free(&r);
	return ret;
}

/* The hosts' names by id, for stats and drops (a reply: id, name, machine_id). */
static const char *ch_host_name(const struct ch_reply *hosts, uint64_t id, size_t *row)
{
	uint64_t v;

	for (size_t i = 0; i < hosts->nrows; i++)
		if (ch_reply_u64(hosts, i, 0, &v) == 0 && v == id) {
			*row = i;
			return ch_reply_cell(hosts, i, 1);
		}
	return NULL;
}

static const char *const ch_stat_keys[] = {
	"pages", "events", "bytes", "agent_pages", "agent_events", "agent_bytes",
	"overrun", "dropped", "commit_overrun", "dup_pages", "resent_pages",
	"lost_pages", "lost_events", "pages_mmap", "pages_splice", "pages_read",
	"copied_bytes", "bad_pages", "bad_events", "rate_held_pages", "rate_held_ms",
	"quota_held_pages", "quota_held_ms",
};
#define CH_NSTATS	(sizeof(ch_stat_keys) / sizeof(ch_stat_keys[0]))

/* Per host and CPU, the 23 counters in ch_stat_keys' order. */
static int ch_stats_read(struct ch_store *s, struct ch_reply *r)
{
	return ch_query_text(s, "SELECT host_id, cpu, sum(pages), sum(events), sum(bytes),"
		       " any(ap), any(ae), any(ab), any(ov), any(dr), any(co), sum(dup_pages),"
		       " any(rp), any(lp), any(le), any(pm), any(ps), any(pr), any(cb),"
		       " sum(bad_pages), sum(bad_events), sum(rate_held_pages), sum(rate_held_ms),"
		       " sum(quota_held_pages), sum(quota_held_ms) FROM (SELECT * FROM cpu_counts"
		       " WHERE " CH_COMMITTED ") ALL FULL OUTER JOIN (SELECT host_id, cpu,"
		       " argMax(agent_pages, version) AS ap, argMax(agent_events, version) AS ae,"
		       " argMax(agent_bytes, version) AS ab, argMax(overrun, version) AS ov,"
		       " argMax(dropped, version) AS dr, argMax(commit_overrun, version) AS co,"
		       " argMax(resent_pages, version) AS rp, argMax(lost_pages, version) AS lp,"
		       " argMax(lost_events, version) AS le, argMax(pages_mmap, version) AS pm,"
		       " argMax(pages_splice, version) AS ps, argMax(pages_read, version) AS pr,"
		       " argMax(copied_bytes, version) AS cb FROM cpu_agent GROUP BY host_id, cpu)"
		       " USING (host_id, cpu) GROUP BY host_id, cpu ORDER BY host_id, cpu", r);
}

static int ch_stats(struct store_reader *rd, const struct store_query *q,
		    int (*fn)(void *ctx, const struct store_stats_host *h, uint32_t cpu,
			      const char *key, uint64_t value),
		    void *ctx)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_reply hosts, st;
	int ret = ch_hosts_read(s, &hosts);

	if (ret < 0)
		return ret;
	ret = ch_stats_read(s, &st);
	if (ret < 0) {
		ch_reply_free(&hosts);
		return ret;
	}
	/* host by host in the hosts' order (name, id), each host's CPUs in order */
	for (size_t h = 0; ret == 0 && h < hosts.nrows; h++) {
		struct store_stats_host sh = { .name = ch_reply_cell(&hosts, h, 1),
					       .machine_id = ch_reply_cell(&hosts, h, 2) };
		uint64_t id, cpu, v;

		ch_reply_u64(&hosts, h, 0, &sh.id);
		if (!ch_host_allowed(q, sh.name))
			continue;
		for (size_t i = 0; ret == 0 && i < st.nrows; i++) {
			if (ch_reply_u64(&st, i, 0, &id) < 0 || id != sh.id ||
			    ch_reply_u64(&st, i, 1, &cpu) < 0)
				continue;
			for (size_t k = 0; ret == 0 && k < CH_NSTATS; k++)
				if (ch_reply_u64(&st, i, 2 + k, &v) == 0)
					ret = fn(ctx, &sh, (uint32_t)cpu, ch_stat_keys[k], v);
		}
	}
	ch_reply_free(&hosts);
	ch_reply_free(&st);
	return ret;
}

static int ch_drops(struct store_reader *rd, const struct store_query *q,
		    int (*fn)(void *ctx, const char *host, const char *system, const char *name,
			      const char *reason, uint64_t count),
		    void *ctx)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_reply hosts, d;
	struct ch_sql sql;
	size_t row;
	int ret = ch_hosts_read(s, &hosts);

	if (ret < 0)
		return ret;
	ch_sql_init(&sql, 0);
	ch_sql_raw(&sql, "SELECT host_id, system, name, reason, sum(n) FROM drops WHERE "
			 CH_COMMITTED " GROUP BY host_id, system, name, reason"
			 " ORDER BY host_id, system, name, reason");
	ret = ch_query(s, &sql, &d);
	ch_sql_free(&sql);
	for (size_t i = 0; ret == 0 && i < d.nrows; i++) {
		uint64_t id = 0, n = 0;
		const char *host;

		ch_reply_u64(&d, i, 0, &id);
		ch_reply_u64(&d, i, 4, &n);
		host = id ? ch_host_name(&hosts, id, &row) : "";
		if (!host || (id ? !ch_host_allowed(q, host) :
			      q && (q->host_glob || q->scope || q->hosts)))
			continue;
		ret = fn(ctx, host, ch_reply_cell(&d, i, 1), ch_reply_cell(&d, i, 2),
			 ch_reply_cell(&d, i, 3), n);
	}
	if (ret == 0 || d.nrows)
		ch_reply_free(&d);
	ch_reply_free(&hosts);
	return ret;
}

static int ch_host_find(struct store_reader *rd, const char *name,
			const struct store_scope *scope, uint64_t *host_id)
{
	struct ch_store *s = ch_reader_of(rd);
	uint64_t id = ch_id_str("host", name, NULL), n = 0;
	const struct store_query q = { .scope = scope };
	struct ch_sql sql;
	int ret;

	if (!ch_host_allowed(&q, name))
		return ch_errf(s, -ENOENT, "no such host");
	ch_sql_init(&sql, 0);
	ch_sql_addf(&sql, "SELECT count() FROM hosts WHERE host_id = %llu", (unsigned long long)id);
	ret = ch_query_u64(s, &sql, &n);
	ch_sql_free(&sql);
	if (ret == 0 && !n)
		ret = ch_errf(s, -ENOENT, "no such host");
	if (ret == 0)
		*host_id = id;
	return ret;
}

static int ch_import_check(struct store_reader *rd, const char *name, const char *machine_id,
			   bool *live, bool *stored)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_sql q;
	uint64_t n = 0, m = 0;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT count() FROM hosts WHERE NOT startsWith(machine_id, 'import:')"
		       " AND name = ");
	ch_sql_cstr(&q, name);
	ret = ch_query_u64(s, &q, &n);
	ch_sql_reset(&q);
	ch_sql_raw(&q, "SELECT count() FROM hosts WHERE machine_id = ");
	ch_sql_cstr(&q, machine_id);
	ret = ret ?: ch_query_u64(s, &q, &m);
	ch_sql_free(&q);
	if (ret == 0) {
		*live = n > 0;
		*stored = m > 0;
	}
	return ret;
}

static int ch_tgids_list(struct store_reader *rd, uint64_t host_id, int32_t after_pid,
			 uint32_t max, int (*fn)(void *ctx, int32_t pid, int32_t tgid), void *ctx)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_reply r;
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "SELECT pid, argMax(tgid, version) FROM tgids WHERE host_id = %llu AND"
		    " pid > %d GROUP BY pid ORDER BY pid LIMIT %u", (unsigned long long)host_id,
		    after_pid, max);
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	for (size_t i = 0; ret == 0 && i < r.nrows; i++) {
		int64_t pid = 0, tgid = 0;

		ch_reply_i64(&r, i, 0, &pid);
		ch_reply_i64(&r, i, 1, &tgid);
		ret = fn(ctx, (int32_t)pid, (int32_t)tgid);
	}
	if (ret == 0 || r.nrows)
		ch_reply_free(&r);
	return ret;
}

/*
 * The table of the boot whose formats came last at or before @ts; before
 * any, the host's first boot's (sqlite_printk.c's choice). Rows of a
 * ReplacingMergeTree may be there twice until merged: one per address.
 */
static int ch_printk_list(struct store_reader *rd, uint64_t host_id, int64_t ts, uint32_t max,
			  int (*fn)(void *ctx, uint64_t addr, const char *fmt), void *ctx)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_reply r;
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "SELECT boot_id FROM printk_formats WHERE host_id = %llu ORDER BY"
		    " since <= %lld DESC, if(since <= %lld, since, -since) DESC LIMIT 1",
		    (unsigned long long)host_id, (long long)ts, (long long)ts);
	ret = ch_query(s, &q, &r);
	if (ret == 0 && r.nrows == 0) {
		ch_reply_free(&r);
		ch_sql_free(&q);
		return 0;
	}
	if (ret == 0) {
		ch_sql_reset(&q);
		ch_sql_addf(&q, "SELECT addr, any(fmt) FROM printk_formats WHERE host_id = %llu"
			    " AND boot_id = ", (unsigned long long)host_id);
		ch_sql_cstr(&q, ch_reply_cell(&r, 0, 0));
		ch_sql_addf(&q, " GROUP BY addr ORDER BY addr LIMIT %u", max);
		ch_reply_free(&r);
		ret = ch_query(s, &q, &r);
	}
	ch_sql_free(&q);
	for (size_t i = 0; ret == 0 && i < r.nrows; i++) {
		uint64_t addr = 0;

		ch_reply_u64(&r, i, 0, &addr);
		ret = fn(ctx, addr, ch_reply_cell(&r, i, 1));
	}
	if (ret == 0 || r.nrows)
		ch_reply_free(&r);
	return ret;
}

/* The bytes on disk of the database's active parts (what --retain-size holds under). */
static int ch_size(struct store_reader *rd, uint64_t *bytes)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_reply r;
	struct ch_sql q;
	int ret;

	*bytes = 0;
	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT sum(bytes_on_disk)");
	ch_shards_system(s, &q, "parts");	/* every shard's */
	ch_sql_raw(&q, " AND active");
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	if (ret == 0 && r.nrows && ch_reply_u64(&r, 0, 0, bytes) < 0)
		ret = TC_ERR_DB;
	if (ret == 0 || r.nrows)
		ch_reply_free(&r);
	return ret;
}

void ch_reader_part_ops(struct store_reader_ops *r)
{
	r->size = ch_size;
	r->hosts = ch_hosts;
	r->stats = ch_stats;
	r->drops = ch_drops;
	r->host_find = ch_host_find;
	r->import_check = ch_import_check;
	r->tgids_list = ch_tgids_list;
	r->printk_list = ch_printk_list;
}
