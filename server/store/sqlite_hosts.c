/*
 * sqlite_hosts.c - the SQLite backend's fixed tables about the agents:
 * hosts, per-CPU counters (written by the collector and the agents, read
 * by store_stats()), stream and journal marks, comms and tgids, the names
 * tasks took over time (comm_changes), and the drop counters
 * (store_dropped(), store_drops()).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_hosts.h"
#include "server/store/sqlite_read.h"
#include "server/store/sqlite_util.h"

static int64_t sq_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int sq_host(struct store_writer *w, const struct proto_hello *h,
		   const char *peer_subject, uint64_t *host_id)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st;
	int64_t now = sq_now_ns();
	int ret = sq_writer_enter(s) ?: sq_prepare(s,
		"INSERT INTO hosts (name, machine_id, boot_id, kernel, ncpus, page_size,"
		" trace_clock, clock_offset_ns, peer_subject, first_seen, last_seen, agent)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11)"
		" ON CONFLICT (machine_id, name) DO UPDATE SET boot_id = excluded.boot_id,"
		" kernel = excluded.kernel, ncpus = excluded.ncpus,"
		" page_size = excluded.page_size, trace_clock = excluded.trace_clock,"
		" clock_offset_ns = coalesce(excluded.clock_offset_ns, clock_offset_ns),"
		" peer_subject = excluded.peer_subject, last_seen = excluded.last_seen,"
		" agent = excluded.agent"
		" RETURNING id", &st);

	if (ret < 0)
		return ret;
	sq_bind_text(st, 1, h->host);
	sq_bind_text(st, 2, h->machine_id);
	sq_bind_text(st, 3, h->boot_id);
	sq_bind_text(st, 4, h->kernel);
	sqlite3_bind_int64(st, 5, h->ncpus);
	sqlite3_bind_int64(st, 6, h->page_size);
	sq_bind_text(st, 7, h->trace_clock);
	if (h->clock.trace_ns || h->clock.realtime_ns)
		sqlite3_bind_int64(st, 8, h->clock.realtime_ns - (int64_t)h->clock.trace_ns);
	sq_bind_text(st, 9, peer_subject);
	sqlite3_bind_int64(st, 10, now);
	if (h->agent && h->agent[0])	/* else NULL: an older agent says nothing */
		sq_bind_text(st, 11, h->agent);
	if (sqlite3_step(st) == SQLITE_ROW)
		*host_id = (uint64_t)sqlite3_column_int64(st, 0);
	else
		ret = sq_err(s, TC_ERR_DB, "host");
	sqlite3_finalize(st);
	return ret;
}

static int sq_host_clock(struct store_writer *w, uint64_t host_id, int64_t offset_ns)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st;
	int ret = sq_writer_enter(s) ?:
		  sq_prepare(s, "UPDATE hosts SET clock_offset_ns = ?, last_seen = ?"
				" WHERE id = ?", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, offset_ns);
	sqlite3_bind_int64(st, 2, sq_now_ns());
	sqlite3_bind_int64(st, 3, (int64_t)host_id);
	ret = sq_run(s, st, false);
	if (ret == 0 && sqlite3_changes(s->db) == 0)
		ret = sq_errf(s, -ENOENT, "no host %llu", (unsigned long long)host_id);
	sqlite3_finalize(st);
	return ret;
}

static int sq_clock_point(struct store_writer *w, uint64_t host_id,
			  const struct store_clock_point *p)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st = NULL;
	int64_t off = p->realtime_ns - (int64_t)p->trace_ns;	/* msg.c checked the range */
	int ret = sq_writer_enter(s) ?:
		  sq_prepare(s, "INSERT OR IGNORE INTO clock_points (host_id, boot_id, trace_ns,"
				" realtime_ns, uncertainty_ns, drift_ppb, disagree_ns, measured)"
				" VALUES (?, ?, ?, ?, ?, ?, ?, ?)", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sq_bind_text(st, 2, p->boot_id);
	sqlite3_bind_int64(st, 3, (int64_t)p->trace_ns);
	sqlite3_bind_int64(st, 4, p->realtime_ns);
	sqlite3_bind_int64(st, 5, (int64_t)p->uncertainty_ns);
	sqlite3_bind_int64(st, 6, p->drift_ppb);
	if (p->have_disagree)
		sqlite3_bind_int64(st, 7, p->disagree_ns);
	sqlite3_bind_int(st, 8, p->measured);
	ret = sq_run(s, st, false);
	sqlite3_finalize(st);
	st = NULL;
	if (ret == 0)
		ret = sq_prepare(s, "UPDATE hosts SET clock_measured_ns = ?, clock_uncertainty_ns = ?,"
				    " clock_drift_ppb = ?, clock_disagree_ns = ?, clock_source = ?"
				    " WHERE id = ?", &st);
	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, off);
	sqlite3_bind_int64(st, 2, (int64_t)p->uncertainty_ns);
	sqlite3_bind_int64(st, 3, p->drift_ppb);
	if (p->have_disagree)
		sqlite3_bind_int64(st, 4, p->disagree_ns);
	sq_bind_text(st, 5, p->measured ? "measured" : "host");
	sqlite3_bind_int64(st, 6, (int64_t)host_id);
	ret = sq_run(s, st, false);
	sqlite3_finalize(st);
	return ret;
}

static int sq_cpu_received(struct store_writer *w, uint64_t host_id, uint32_t cpu,
			   uint64_t pages, uint64_t events, uint64_t bytes)
{
	struct sq_store *s = sq_writer_of(w);

	return sq_writer_enter(s) ?:
	       sq_run_ints(s, s->cpu_add, false, (const int64_t[]){ (int64_t)host_id, cpu,
				(int64_t)pages, (int64_t)events, (int64_t)bytes }, 5);
}

static int sq_cpu_stats(struct store_writer *w, uint64_t host_id,
			const struct proto_cpu_stats *c)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st;
	int ret = sq_writer_enter(s) ?: sq_prepare(s,
		"INSERT INTO cpus (host_id, cpu, agent_pages, agent_events, agent_bytes,"
		" overrun, dropped, commit_overrun, resent_pages, lost_pages, lost_events,"
		" pages_mmap, pages_splice, pages_read, copied_bytes)"
		" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		" ON CONFLICT (host_id, cpu) DO UPDATE SET agent_pages = excluded.agent_pages,"
		" agent_events = excluded.agent_events, agent_bytes = excluded.agent_bytes,"
		" overrun = excluded.overrun, dropped = excluded.dropped,"
		" commit_overrun = excluded.commit_overrun,"
		" resent_pages = excluded.resent_pages, lost_pages = excluded.lost_pages,"
		" lost_events = excluded.lost_events, pages_mmap = excluded.pages_mmap,"
		" pages_splice = excluded.pages_splice, pages_read = excluded.pages_read,"
		" copied_bytes = excluded.copied_bytes", &st);

	if (ret < 0)
		return ret;
	return sq_run_ints(s, st, true, (const int64_t[]){
		(int64_t)host_id, c->cpu, (int64_t)c->pages, (int64_t)c->events,
		(int64_t)c->bytes, (int64_t)c->overrun, (int64_t)c->dropped,
		(int64_t)c->commit_overrun, (int64_t)c->resent_pages, (int64_t)c->lost_pages,
		(int64_t)c->lost_events, (int64_t)c->pages_mmap, (int64_t)c->pages_splice,
		(int64_t)c->pages_read, (int64_t)c->copied_bytes }, 15);
}

/* One collector per SQLite file: a high-water mark per stream, read as 0..mark. */
static int sq_stream_marks(struct store_writer *w, uint64_t host_id, const char *boot_id,
			   uint64_t session, uint32_t n, store_span_fn fn, void *ctx)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st;
	int ret = sq_writer_enter(s) ?:
		  sq_prepare(s, "SELECT stream, seq FROM stream_marks WHERE host_id = ?"
				" AND boot_id = ? AND session = ?", &st);
	int rc = SQLITE_DONE;

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_text(st, 2, boot_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)session);
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t stream = sqlite3_column_int64(st, 0);
		struct store_span sp = { (uint32_t)stream, 0,
					 (uint64_t)sqlite3_column_int64(st, 1) };

		if (stream >= 0 && stream < (int64_t)n)
			ret = fn(ctx, &sp);
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "stream marks");
	sqlite3_finalize(st);
	return ret;
}

static int sq_stream_mark(struct store_writer *w, uint64_t host_id, const char *boot_id,
			  uint64_t session, uint32_t stream, uint64_t lo, uint64_t seq)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st = s->mark_put;
	int ret = sq_writer_enter(s);

	if (ret < 0)
		return ret;
	(void)lo;	/* the mark: the highest (one collector stores in order) */
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_text(st, 2, boot_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)session);
	sqlite3_bind_int64(st, 4, stream);
	sqlite3_bind_int64(st, 5, (int64_t)seq);
	return sq_run(s, st, false);
}

/* One statement on journal marks with two numbers to bind (capped to int64). */
static int sq_journal_run(struct store_writer *w, const char *sql, uint64_t a, uint64_t b)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st;
	int ret = sq_writer_enter(s) ?: sq_prepare(s, sql, &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, a > INT64_MAX ? INT64_MAX : (int64_t)a);
	sqlite3_bind_int64(st, 2, b > INT64_MAX ? INT64_MAX : (int64_t)b);
	return sq_run(s, st, true);
}

static int sq_journal_mark(struct store_writer *w, uint64_t file, uint64_t pos)
{
	return sq_journal_run(w, "INSERT OR REPLACE INTO journal_marks (file, pos) VALUES (?, ?)",
			      file, pos);
}

static int sq_journal_forget(struct store_writer *w, uint64_t from, uint64_t to)
{
	return sq_journal_run(w, "DELETE FROM journal_marks WHERE file BETWEEN ? AND ?", from, to);
}

static int sq_journal_mark_get(struct store_writer *w, uint64_t file, uint64_t *pos)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st;
	int ret = sq_writer_enter(s) ?:
		  sq_prepare(s, "SELECT pos FROM journal_marks WHERE file = ?", &st);
	int rc;

	if (ret < 0)
		return ret;
	*pos = 0;
	sqlite3_bind_int64(st, 1, (int64_t)file);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*pos = (uint64_t)sqlite3_column_int64(st, 0);
	else if (rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "journal mark");
	sqlite3_finalize(st);
	return ret;
}

/*
 * Add @n values @v to counters of the cpus row (@host_id, @cpu), creating
 * it: @sql is the upsert, its parameters host_id, cpu, then @v in order.
 */
static int sq_cpu_add(struct store_writer *w, const char *sql, uint64_t host_id, uint32_t cpu,
		      const uint64_t *v, int n)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st;
	int ret = sq_writer_enter(s) ?: sq_prepare(s, sql, &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_int64(st, 2, cpu);
	for (int i = 0; i < n; i++)
		sqlite3_bind_int64(st, 3 + i, (int64_t)v[i]);
	return sq_run(s, st, true);
}

static int sq_cpu_duplicates(struct store_writer *w, uint64_t host_id, uint32_t cpu,
			     uint64_t n)
{
	return sq_cpu_add(w, "INSERT INTO cpus (host_id, cpu, dup_pages) VALUES (?, ?, ?)"
			     " ON CONFLICT (host_id, cpu) DO UPDATE"
			     " SET dup_pages = dup_pages + excluded.dup_pages",
			  host_id, cpu, &n, 1);
}

static int sq_cpu_not_stored(struct store_writer *w, uint64_t host_id, uint32_t cpu,
			     uint64_t pages, uint64_t events)
{
	const uint64_t v[] = { pages, events };

	return sq_cpu_add(w, "INSERT INTO cpus (host_id, cpu, bad_pages, bad_events)"
			     " VALUES (?, ?, ?, ?) ON CONFLICT (host_id, cpu) DO UPDATE"
			     " SET bad_pages = bad_pages + excluded.bad_pages,"
			     " bad_events = bad_events + excluded.bad_events",
			  host_id, cpu, v, 2);
}

static int sq_cpu_held(struct store_writer *w, uint64_t host_id, uint32_t cpu,
		       const struct store_held *h)
{
	const uint64_t v[] = { h->rate_pages, h->rate_ms, h->quota_pages, h->quota_ms };

	return sq_cpu_add(w, "INSERT INTO cpus (host_id, cpu, rate_held_pages, rate_held_ms,"
			     " quota_held_pages, quota_held_ms) VALUES (?, ?, ?, ?, ?, ?)"
			     " ON CONFLICT (host_id, cpu) DO UPDATE"
			     " SET rate_held_pages = rate_held_pages + excluded.rate_held_pages,"
			     " rate_held_ms = rate_held_ms + excluded.rate_held_ms,"
			     " quota_held_pages = quota_held_pages + excluded.quota_held_pages,"
			     " quota_held_ms = quota_held_ms + excluded.quota_held_ms",
			  host_id, cpu, v, 4);
}

/*
 * Retention removed @rows rows of @host_id: give back its page bytes per
 * stored event for each, rounded up (so a host whose rows are all gone has
 * nothing left), never more than it stored.
 */
int sq_host_freed(struct sq_store *s, uint64_t host_id, uint64_t rows)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "UPDATE hosts SET freed_bytes = min("
				" (SELECT coalesce(sum(bytes), 0) FROM cpus WHERE host_id = ?1),"
				" freed_bytes + CAST(?2 * (SELECT coalesce(1.0 * sum(bytes)"
				" / max(sum(events), 1), 0) FROM cpus WHERE host_id = ?1) + 0.999999"
				" AS INTEGER))"
				" WHERE id = ?1", &st);

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_int64(st, 2, (int64_t)rows);
	return sq_run(s, st, true);
}

/* Not after sq_writer_enter(): as the front called it before the split. */
static int sq_host_usage(struct store_writer *w,
			 int (*fn)(void *ctx, const char *host, uint64_t bytes), void *ctx)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st = NULL;
	int ret = sq_prepare(s, "SELECT h.name, sum(max(0, coalesce((SELECT sum(c.bytes)"
				" FROM cpus AS c WHERE c.host_id = h.id), 0) - h.freed_bytes))"
				" FROM hosts AS h GROUP BY h.name", &st);

	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW)
		ret = fn(ctx, (const char *)sqlite3_column_text(st, 0),
			 (uint64_t)sqlite3_column_int64(st, 1));
	if (st)
		sqlite3_finalize(st);
	return ret;
}

/* The tgids of a CMDLINES: pid -> tgid, later values replacing earlier ones. */
static int sq_tgids(struct sq_store *s, uint64_t host_id, const struct proto_tgids *t)
{
	sqlite3_stmt **st = &s->tgid_put;
	int ret = 0;

	if (t->count && !*st)
		ret = sq_prepare(s, "INSERT INTO tgids (host_id, pid, tgid) VALUES (?, ?, ?)"
				    " ON CONFLICT (host_id, pid) DO UPDATE SET tgid = excluded.tgid",
				 st);
	for (uint32_t i = 0; i < t->count && ret == 0; i++) {
		sqlite3_bind_int64(*st, 1, (int64_t)host_id);
		sqlite3_bind_int64(*st, 2, t->items[i].pid);
		sqlite3_bind_int64(*st, 3, t->items[i].tgid);
		ret = sq_run(s, *st, false);
	}
	return ret;
}

static int sq_cmdlines(struct store_writer *w, uint64_t host_id,
		       const struct proto_cmdlines *c)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st = s->comm_put;
	int ret = sq_writer_enter(s) ?: sq_exec(s, "SAVEPOINT tc_comms");

	if (ret < 0)
		return ret;
	for (uint32_t i = 0; i < c->count && ret == 0; i++) {
		const struct proto_cmdline *cl = &c->items[i];

		sqlite3_bind_int64(st, 1, (int64_t)host_id);
		sqlite3_bind_int64(st, 2, cl->pid);
		sqlite3_bind_text(st, 3, cl->comm, (int)strnlen(cl->comm, sizeof(cl->comm)),
				  SQLITE_TRANSIENT);
		ret = sq_run(s, st, false);
	}
	if (ret == 0)
		ret = sq_tgids(s, host_id, &c->tgids);
	if (ret < 0)
		sqlite3_exec(s->db, "ROLLBACK TO tc_comms", NULL, NULL, NULL);
	sqlite3_exec(s->db, "RELEASE tc_comms", NULL, NULL, NULL);
	return ret;
}

static int sq_comm_change(struct store_writer *w, uint64_t host_id,
			  const struct store_comm_change *c)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st = s->comm_change_put;
	int ret = sq_writer_enter(s);

	if (ret < 0)
		return ret;

	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_int64(st, 2, c->pid);
	sqlite3_bind_int64(st, 3, c->trace_ts);
	sqlite3_bind_int64(st, 4, c->ts);
	sqlite3_bind_double(st, 5, c->tick_ns > 0 ? c->tick_ns : 1.0);
	if (c->old)
		sqlite3_bind_text(st, 6, c->old, (int)strnlen(c->old, 16), SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, 6);
	sqlite3_bind_text(st, 7, c->comm, (int)strnlen(c->comm, 16), SQLITE_TRANSIENT);
	return sq_run(s, st, false);
}

int sq_drop_add(struct sq_store *s, uint64_t host_id, const char *system, const char *name,
		const char *reason, uint64_t n)
{
	sqlite3_stmt *st = s->drop_add;

	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_text(st, 2, system, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, reason, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (int64_t)n);
	return sq_run(s, st, false);
}

static int sq_dropped(struct store_writer *w, uint64_t host_id, const char *system,
		      const char *name, const char *reason, uint64_t n)
{
	struct sq_store *s = sq_writer_of(w);

	return sq_writer_enter(s) ?: sq_drop_add(s, host_id, system, name, reason, n);
}

int sq_prepare_hosts(struct sq_store *s, const char *head, const char *tail,
			    const struct store_query *q, const char *col, sqlite3_stmt **st)
{
	char *cond = calloc(1, sq_hosts_len(q) + 1);
	struct sq_buf b = { 0 };
	int ret = -ENOMEM;

	if (cond) {
		sq_hosts_cond(cond, q, col);
		sq_buf_str(&b, head);
		sq_buf_str(&b, cond);
		sq_buf_str(&b, tail);
		if (!b.oom)
			ret = sq_prepare(s, b.s, st);
	}
	if (ret == 0)
		sq_hosts_bind(*st, 1, q);
	free(cond);
	free(b.s);
	return ret;
}

static int sq_host_find(struct store_reader *r, const char *name,
			const struct store_scope *scope, uint64_t *host_id)
{
	struct sq_store *s = sq_reader_of(r);
	const struct store_query q = { .scope = scope };
	sqlite3_stmt *st = NULL;
	int ret = sq_reader_enter(s) ?:
		  sq_prepare_hosts(s, "SELECT id FROM hosts WHERE 1",
				   " AND name = :name ORDER BY last_seen DESC, id DESC LIMIT 1",
				   &q, "id", &st);
	int rc;

	if (ret < 0)
		return ret;
	sqlite3_bind_text(st, sqlite3_bind_parameter_index(st, ":name"), name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*host_id = (uint64_t)sqlite3_column_int64(st, 0);
	else
		ret = rc == SQLITE_DONE ? -ENOENT : sq_err(s, TC_ERR_DB, "host");
	sqlite3_finalize(st);
	return ret;
}

static int sq_stats(struct store_reader *r, const struct store_query *q,
		    int (*fn)(void *ctx, const struct store_stats_host *h, uint32_t cpu,
			      const char *key, uint64_t value),
		    void *ctx)
{
	struct sq_store *s = sq_reader_of(r);
	static const char *const keys[] = {
		"pages", "events", "bytes", "agent_pages", "agent_events", "agent_bytes",
		"overrun", "dropped", "commit_overrun", "dup_pages", "resent_pages",
		"lost_pages", "lost_events", "pages_mmap", "pages_splice", "pages_read",
		"copied_bytes", "bad_pages", "bad_events", "rate_held_pages", "rate_held_ms",
		"quota_held_pages", "quota_held_ms",
	};
	sqlite3_stmt *st = NULL;
	int ret = sq_reader_enter(s) ?:
		  sq_prepare_hosts(s, "SELECT h.id, h.name, h.machine_id, c.cpu, c.pages, c.events, c.bytes,"
				      " c.agent_pages, c.agent_events, c.agent_bytes, c.overrun,"
				      " c.dropped, c.commit_overrun, c.dup_pages, c.resent_pages,"
				      " c.lost_pages, c.lost_events, c.pages_mmap, c.pages_splice,"
				      " c.pages_read, c.copied_bytes, c.bad_pages, c.bad_events,"
				      " c.rate_held_pages, c.rate_held_ms, c.quota_held_pages,"
				      " c.quota_held_ms"
				      " FROM cpus AS c JOIN hosts AS h ON h.id = c.host_id WHERE 1",
				   " ORDER BY h.name, h.id, c.cpu", q, "c.host_id", &st);

	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW) {
		const struct store_stats_host h = {
			.id = (uint64_t)sqlite3_column_int64(st, 0),
			.name = (const char *)sqlite3_column_text(st, 1),
			.machine_id = (const char *)sqlite3_column_text(st, 2),
		};
		uint32_t cpu = (uint32_t)sqlite3_column_int64(st, 3);

		for (int k = 0; k < (int)(sizeof(keys) / sizeof(keys[0])) && ret == 0; k++)
			ret = fn(ctx, &h, cpu, keys[k], (uint64_t)sqlite3_column_int64(st, 4 + k));
	}
	if (st)
		sqlite3_finalize(st);
	return ret;
}

/*
 * The counters kept for all hosts (host_id 0: retention) are left out
 * when @q limits the hosts at all: they are not any one host's, and a
 * scoped reader should learn nothing of the hosts outside its scope.
 */
static int sq_drops(struct store_reader *r, const struct store_query *q,
		    int (*fn)(void *ctx, const char *host, const char *system, const char *name,
			      const char *reason, uint64_t count),
		    void *ctx)
{
	struct sq_store *s = sq_reader_of(r);
	sqlite3_stmt *st = NULL;
	int ret = sq_reader_enter(s) ?:
		  sq_prepare_hosts(s, "SELECT coalesce(h.name, ''), d.system, d.name, d.reason,"
				      " d.count FROM drops AS d LEFT JOIN hosts AS h ON h.id = d.host_id"
				      " WHERE 1", " ORDER BY 1, d.host_id, d.system, d.name, d.reason",
				   q, "d.host_id", &st);

	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW)
		ret = fn(ctx, (const char *)sqlite3_column_text(st, 0),
			 (const char *)sqlite3_column_text(st, 1),
			 (const char *)sqlite3_column_text(st, 2),
			 (const char *)sqlite3_column_text(st, 3),
			 (uint64_t)sqlite3_column_int64(st, 4));
	if (st)
		sqlite3_finalize(st);
	return ret;
}

const char *sq_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

static int sq_hosts(struct store_reader *r, const struct store_query *q,
		    int (*fn)(void *ctx, const struct store_host_info *h), void *ctx)
{
	struct sq_store *s = sq_reader_of(r);
	sqlite3_stmt *st = NULL;
	int rc = SQLITE_DONE;
	int ret = sq_reader_enter(s) ?:
		  sq_prepare_hosts(s, "SELECT name, machine_id, boot_id, kernel, trace_clock,"
				      " peer_subject, ncpus, page_size, clock_offset_ns,"
				      " first_seen, last_seen, id, agent, clock_source,"
				      " clock_measured_ns, clock_uncertainty_ns, clock_drift_ppb,"
				      " clock_disagree_ns FROM hosts WHERE 1",
				   " ORDER BY name, id", q, "id", &st);

	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_host_info h = {
			.name = sq_text(st, 0), .machine_id = sq_text(st, 1),
			.boot_id = sq_text(st, 2), .kernel = sq_text(st, 3),
			.trace_clock = sq_text(st, 4), .peer_subject = sq_text(st, 5),
			.ncpus = sqlite3_column_int64(st, 6),
			.page_size = sqlite3_column_int64(st, 7),
			.clock_offset_ns = sqlite3_column_int64(st, 8),
			.first_seen = sqlite3_column_int64(st, 9),
			.last_seen = sqlite3_column_int64(st, 10),
			.id = (uint64_t)sqlite3_column_int64(st, 11),
			.agent = sq_text(st, 12),
			.clock_source = sq_text(st, 13),
			.clock_measured_ns = sqlite3_column_int64(st, 14),
			.clock_uncertainty_ns = sqlite3_column_int64(st, 15),
			.clock_drift_ppb = sqlite3_column_int64(st, 16),
			.clock_disagree_ns = sqlite3_column_int64(st, 17),
		};

		ret = fn(ctx, &h);
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "hosts");
	if (st)
		sqlite3_finalize(st);
	return ret;
}

/* One EXISTS of @head, @q's hosts on @col, @tail (:type bound to @type_id) into *@yes. */
static int sq_exists_hosts(struct sq_store *s, const char *head, const char *tail,
			   const struct store_query *q, const char *col, int64_t type_id,
			   bool *yes)
{
	sqlite3_stmt *st = NULL;
	int ret = sq_prepare_hosts(s, head, tail, q, col, &st);
	int rc;

	if (ret < 0)
		return ret;
	if (sqlite3_bind_parameter_index(st, ":type"))
		sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":type"), type_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*yes = sqlite3_column_int(st, 0) != 0;
	else
		ret = sq_err(s, TC_ERR_DB, "type seen");
	sqlite3_finalize(st);
	return ret;
}

/*
 * host_formats first (its key leads with host_id: one seek per host of the
 * scope). A format 0013 made of a type's rows stored before it (its
 * format_fields have type '') may hold rows of hosts host_formats does
 * not name: a host that sent the same text again after 0013 is named, one
 * that did not is not. For such types, whether the scope has a row of the
 * type (no index leads with host_id, so this may scan the table; only such
 * old types pay it, and only when host_formats said no).
 */
static int sq_type_seen(struct store_reader *r, const struct store_schema *sc,
			const struct store_scope *scope, bool *seen)
{
	struct sq_store *s = sq_reader_of(r);
	const struct store_query q = { .scope = scope };
	struct sq_buf b = { 0 };
	int64_t old = 0;
	bool yes = false;
	int ret = sq_reader_enter(s) ?:
		  sq_exists_hosts(s, "SELECT EXISTS (SELECT 1 FROM host_formats WHERE 1",
				  " AND type_id = :type)", &q, "host_id", sc->type_id, &yes);

	if (ret == 0 && !yes)
		ret = sq_int1(s, "SELECT EXISTS (SELECT 1 FROM formats AS f WHERE f.type_id = ?"
				 " AND (NOT EXISTS (SELECT 1 FROM host_formats AS h"
				 " WHERE h.format_id = f.id) OR EXISTS (SELECT 1 FROM"
				 " format_fields AS ff WHERE ff.format_id = f.id AND ff.type = '')))",
				 sc->type_id, 0, &old);
	if (ret == 0 && !yes && old) {
		sq_buf_str(&b, "SELECT EXISTS (SELECT 1 FROM ");
		sq_ident(&b, sc->table);
		sq_buf_str(&b, " WHERE 1");
		ret = b.oom ? -ENOMEM : sq_exists_hosts(s, b.s, ")", &q, "host_id", 0, &yes);
	}
	free(b.s);
	if (ret == 0)
		*seen = yes;
	return ret;
}

void sq_hosts_ops(struct store_writer_ops *w, struct store_reader_ops *r)
{
	w->host = sq_host;
	w->host_clock = sq_host_clock;
	w->clock_point = sq_clock_point;
	w->cpu_received = sq_cpu_received;
	w->cpu_stats = sq_cpu_stats;
	w->cpu_duplicates = sq_cpu_duplicates;
	w->cpu_not_stored = sq_cpu_not_stored;
	w->cpu_held = sq_cpu_held;
	w->stream_marks = sq_stream_marks;
	w->stream_mark = sq_stream_mark;
	w->journal_mark = sq_journal_mark;
	w->journal_mark_get = sq_journal_mark_get;
	w->journal_forget = sq_journal_forget;
	w->host_usage = sq_host_usage;
	w->cmdlines = sq_cmdlines;
	w->comm_change = sq_comm_change;
	w->dropped = sq_dropped;
	r->host_find = sq_host_find;
	r->type_seen = sq_type_seen;
	r->stats = sq_stats;
	r->drops = sq_drops;
	r->hosts = sq_hosts;
}
