/*
 * clickhouse_meta.c - hosts, counters, marks, names, programs, symbols,
 * printk formats and usage on ClickHouse (clickhouse_meta.h).
 *
 * Counters are rows added per commit (read as sums), marks rows read as
 * max(); both carry _tc_commit and are read only up to the last commit
 * that completed (clickhouse_txn.c), plus what the open transaction holds
 * (kept here in memory: reads through the transaction).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "common/util.h"
#include "server/store/clickhouse_boots.h"
#include "server/store/clickhouse_meta.h"
#include "server/store/clickhouse_schema.h"
#include "server/store/clickhouse_stacks.h"
#include "server/store/clickhouse_txn.h"
#include "server/store/clickhouse_util.h"

/* Each fixed batch's table and columns, in enum ch_fixed's order. */
static const struct {
	const char *table;
	const char *cols[17];
} ch_fixed_def[CH_NFIXED] = {
	[CH_B_HOSTS] = { "hosts", { "host_id", "name", "machine_id", "boot_id", "kernel",
		"ncpus", "page_size", "trace_clock", "clock_offset_ns", "peer_subject", "agent",
		"first_seen", "last_seen", "version" } },
	[CH_B_EVENT_TYPES] = { "event_types", { "type_id", "system", "name", "table_name",
		"format_id", "version" } },
	[CH_B_EVENT_FIELDS] = { "event_fields", { "type_id", "col", "name", "kind", "size",
		"ordinal" } },
	[CH_B_FORMATS] = { "formats", { "format_id", "type_id", "text" } },
	[CH_B_FORMAT_FIELDS] = { "format_fields", { "format_id", "idx", "col", "ctype" } },
	[CH_B_HOST_FORMATS] = { "host_formats", { "host_id", "boot_id", "type_id", "format_id",
		"since" } },
	[CH_B_COMMS] = { "comms", { "host_id", "pid", "comm", "version" } },
	[CH_B_TGIDS] = { "tgids", { "host_id", "pid", "tgid", "version" } },
	[CH_B_COMM_CHANGES] = { "comm_changes", { "host_id", "pid", "trace_ts", "ts", "tick_ns",
		"old", "is_rename", "comm" } },
	[CH_B_PROGRAMS] = { "programs", { "program_id", "host_id", "boot_id", "session", "grp",
		"pid", "comm", "first_stream", "nstreams", "since_ns" } },
	[CH_B_SYMBOLS] = { "symbols", { "program_id", "addr", "size", "name", "module" } },
	[CH_B_PRINTK] = { "printk_formats", { "host_id", "boot_id", "since", "addr", "fmt" } },
	[CH_B_CPU_AGENT] = { "cpu_agent", { "host_id", "cpu", "agent_pages", "agent_events",
		"agent_bytes", "overrun", "dropped", "commit_overrun", "resent_pages",
		"lost_pages", "lost_events", "pages_mmap", "pages_splice", "pages_read",
		"copied_bytes", "version" } },
	[CH_B_CPU_COUNTS] = { "cpu_counts", { "host_id", "cpu", "pages", "events", "bytes",
		"dup_pages", "bad_pages", "bad_events", "rate_held_pages", "rate_held_ms",
		"quota_held_pages", "quota_held_ms", "_tc_commit" } },
	[CH_B_DROPS] = { "drops", { "host_id", "system", "name", "reason", "n", "_tc_commit" } },
	[CH_B_FREED] = { "freed", { "host_id", "bytes", "_tc_commit" } },
	[CH_B_STREAM_MARKS] = { "stream_spans", { "host_id", "boot_id", "session", "stream",
		"lo", "hi", "_tc_commit" } },
	[CH_B_JOURNAL_MARKS] = { "journal_marks", { "collector", "file", "pos", "_tc_commit" } },
	[CH_B_HOST_BOOTS] = { "host_boots", { "host_id", "boot_id", "since", "kernel",
		"trace_clock", "long_size", "big_endian", "page_size", "header_page",
		"header_event", "version" } },
	[CH_B_CLOCK_POINTS] = { "clock_points", { "host_id", "boot_id", "trace_ns",
		"realtime_ns", "uncertainty_ns", "drift_ppb", "disagree_ns", "measured",
		"version" } },
	[CH_B_STACKS] = { "stacks", { "host_id", "id", "frames" } },
	[CH_B_LOSSES] = { "losses", { "host_id", "boot_id", "cpu", "ts", "trace_ts", "lost",
		"loss_id", "_tc_commit" } },
};

int ch_meta_init(struct ch_store *s)
{
	int ret = 0;

	for (int i = 0; i < CH_NFIXED && ret == 0; i++)
		ret = ch_batch_init(&s->fixed[i], ch_fixed_def[i].table, ch_fixed_def[i].cols,
				    i >= CH_FIRST_COUNTED);
	return ret;
}

static void ch_host_free(struct ch_host *h)
{
	free(h->name); free(h->machine_id); free(h->boot_id); free(h->kernel);
	free(h->trace_clock); free(h->peer); free(h->agent);
	free(h->types);
	free(h);
}

void ch_meta_free(struct ch_store *s)
{
	for (int i = 0; i < CH_NFIXED; i++)
		ch_batch_free(&s->fixed[i]);
	ch_stacks_forget(s);
	free(s->stacks);
	s->stacks = NULL;
	while (s->hosts) {
		struct ch_host *h = s->hosts;

		s->hosts = h->next;
		ch_host_free(h);
	}
	for (size_t i = 0; i < s->nsmarks; i++)
		free(s->smarks[i].boot_id);
	free(s->smarks);
	free(s->jmarks);
	for (size_t i = 0; i < s->nboots; i++)
		free(s->boots[i].boot_id);
	free(s->boots);
}

/* ---- hosts ---- */

static int ch_host_row(struct ch_store *s, const struct ch_host *h)
{
	struct ch_batch *b = &s->fixed[CH_B_HOSTS];

	ch_b_u64(&b->rows, h->id);
	ch_b_cstr(&b->rows, h->name);
	ch_b_cstr(&b->rows, h->machine_id);
	ch_b_cstr(&b->rows, h->boot_id);
	ch_b_cstr(&b->rows, h->kernel);
	ch_b_u32(&b->rows, h->ncpus);
	ch_b_u32(&b->rows, h->page_size);
	ch_b_cstr(&b->rows, h->trace_clock);
	ch_b_i64(&b->rows, h->offset_ns);
	ch_b_cstr(&b->rows, h->peer);
	ch_b_cstr(&b->rows, h->agent);
	ch_b_i64(&b->rows, h->first_seen);
	ch_b_i64(&b->rows, h->last_seen);
	ch_b_u64(&b->rows, (uint64_t)ch_now_ns());
	return ch_fact_done(s, b);
}

static struct ch_host *ch_host_find(struct ch_store *s, uint64_t id)
{
	for (struct ch_host *h = s->hosts; h; h = h->next)
		if (h->id == id)
			return h;
	return NULL;
}

/* When the server first saw host @id (0: never), and its clock offset. */
static int ch_host_first_seen(struct ch_store *s, uint64_t id, int64_t *first, int64_t *offset)
{
	struct ch_reply r;
	struct ch_sql q;
	int ret;

	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "SELECT min(first_seen), argMax(clock_offset_ns, version), count()"
		    " FROM hosts WHERE host_id = %llu", (unsigned long long)id);
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	if (ret < 0)
		return ret;
	*first = 0;
	*offset = 0;
	if (r.nrows && strcmp(ch_reply_cell(&r, 0, 2), "0")) {
		ch_reply_i64(&r, 0, 0, first);
		ch_reply_i64(&r, 0, 1, offset);
	}
	ch_reply_free(&r);
	return 0;
}

static int ch_set(char **slot, const char *v)
{
	char *d = strdup(v ? v : "");

	if (!d)
		return -ENOMEM;
	free(*slot);
	*slot = d;
	return 0;
}

static int ch_host(struct store_writer *w, const struct proto_hello *hello,
		   const char *peer_subject, uint64_t *host_id)
{
	struct ch_store *s = ch_writer_of(w);
	uint64_t id = ch_id_str("host", hello->host, NULL);
	struct ch_host *h = ch_host_find(s, id);
	int64_t now = ch_now_ns(), first = 0, offset = 0;
	int ret = ch_writer_enter(s);

	if (ret == 0 && !h) {
		ret = ch_host_first_seen(s, id, &first, &offset);
		if (ret == 0 && !(h = calloc(1, sizeof(*h))))
			ret = -ENOMEM;
		if (ret < 0)
			return ret;
		h->id = id;
		h->first_seen = first ? first : now;
		h->offset_ns = offset;
		h->next = s->hosts;
		s->hosts = h;
	}
	if (ret < 0)
		return ret;
	ret = ch_set(&h->name, hello->host) ?: ch_set(&h->machine_id, hello->machine_id) ?:
	      ch_set(&h->boot_id, hello->boot_id) ?: ch_set(&h->kernel, hello->kernel) ?:
	      ch_set(&h->trace_clock, hello->trace_clock) ?: ch_set(&h->peer, peer_subject) ?:
	      ch_set(&h->agent, hello->agent);
	if (ret < 0)
		return ret;
	h->ncpus = hello->ncpus;
	h->page_size = hello->page_size;
	if (hello->clock.trace_ns || hello->clock.realtime_ns)
		h->offset_ns = hello->clock.realtime_ns - (int64_t)hello->clock.trace_ns;
	h->last_seen = now;
	ret = ch_host_row(s, h);
	if (ret == 0)
		*host_id = id;
	return ret;
}

static int ch_host_clock(struct store_writer *w, uint64_t host_id, int64_t offset_ns)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_host *h = ch_host_find(s, host_id);
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	if (!h)
		return ch_errf(s, -ENOENT, "host %llu: not known to this collector",
			       (unsigned long long)host_id);
	h->offset_ns = offset_ns;
	h->last_seen = ch_now_ns();
	return ch_host_row(s, h);
}

/* ---- per-CPU counts and reports, drops ---- */

/* A cpu_counts row: @v are pages .. quota_held_ms (10 values). */
static int ch_cpu_count(struct store_writer *w, uint64_t host_id, uint32_t cpu,
			const uint64_t v[10])
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_batch *b = &s->fixed[CH_B_CPU_COUNTS];
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	ch_b_u64(&b->rows, host_id);
	ch_b_u32(&b->rows, cpu);
	for (int i = 0; i < 10; i++)
		ch_b_u64(&b->rows, v[i]);
	ch_b_u64(&b->rows, s->commit_id);
	return ch_counted_done(s, b);
}

static int ch_cpu_received(struct store_writer *w, uint64_t host_id, uint32_t cpu,
			   uint64_t pages, uint64_t events, uint64_t bytes)
{
	const uint64_t v[10] = { pages, events, bytes };

	return ch_cpu_count(w, host_id, cpu, v);
}

static int ch_cpu_duplicates(struct store_writer *w, uint64_t host_id, uint32_t cpu,
			     uint64_t n)
{
	const uint64_t v[10] = { [3] = n };

	return ch_cpu_count(w, host_id, cpu, v);
}

static int ch_cpu_not_stored(struct store_writer *w, uint64_t host_id, uint32_t cpu,
			     uint64_t pages, uint64_t events)
{
	const uint64_t v[10] = { [4] = pages, [5] = events };

	return ch_cpu_count(w, host_id, cpu, v);
}

static int ch_cpu_held(struct store_writer *w, uint64_t host_id, uint32_t cpu,
		       const struct store_held *h)
{
	const uint64_t v[10] = { [6] = h->rate_pages, [7] = h->rate_ms,
				 [8] = h->quota_pages, [9] = h->quota_ms };

	return ch_cpu_count(w, host_id, cpu, v);
}

static int ch_cpu_stats(struct store_writer *w, uint64_t host_id,
			const struct proto_cpu_stats *st)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_batch *b = &s->fixed[CH_B_CPU_AGENT];
	const uint64_t v[13] = { st->pages, st->events, st->bytes, st->overrun, st->dropped,
				 st->commit_overrun, st->resent_pages, st->lost_pages,
				 st->lost_events, st->pages_mmap, st->pages_splice,
				 st->pages_read, st->copied_bytes };
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	ch_b_u64(&b->rows, host_id);
	ch_b_u32(&b->rows, st->cpu);
	for (int i = 0; i < 13; i++)
		ch_b_u64(&b->rows, v[i]);
	ch_b_u64(&b->rows, (uint64_t)ch_now_ns());
	return ch_fact_done(s, b);
}

static int ch_dropped(struct store_writer *w, uint64_t host_id, const char *system,
		      const char *name, const char *reason, uint64_t n)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_batch *b = &s->fixed[CH_B_DROPS];
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	ch_b_u64(&b->rows, host_id);
	ch_b_cstr(&b->rows, system);
	ch_b_cstr(&b->rows, name);
	ch_b_cstr(&b->rows, reason);
	ch_b_u64(&b->rows, n);
	ch_b_u64(&b->rows, s->commit_id);
	return ch_counted_done(s, b);
}

/* ---- marks ---- */

/*
 * The spans of every collector's completed commits (stream_spans; the
 * rows of stream_marks, from before spans, as 0..seq), in (stream, lo)
 * order, and the open transaction's.
 */
static int ch_stream_marks(struct store_writer *w, uint64_t host_id, const char *boot_id,
			   uint64_t session, uint32_t n, store_span_fn fn, void *ctx)
{
	struct ch_store *s = ch_writer_of(w);
	struct store_span sp;
	struct ch_reply r;
	struct ch_sql q, key;
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	ch_sql_init(&key, 0);
	ch_sql_addf(&key, " WHERE host_id = %llu AND session = %llu AND stream < %u AND "
		    CH_COMMITTED " AND boot_id = ", (unsigned long long)host_id,
		    (unsigned long long)session, n);
	ch_sql_cstr(&key, boot_id);
	ch_sql_init(&q, 0);
	ch_sql_raw(&q, "SELECT stream, lo, hi FROM (SELECT stream, lo, hi FROM stream_spans");
	ch_sql_raw(&q, ch_sql_text(&key));
	ch_sql_raw(&q, " UNION ALL SELECT stream, 0 AS lo, max(seq) AS hi FROM stream_marks");
	ch_sql_raw(&q, ch_sql_text(&key));
	ch_sql_raw(&q, " GROUP BY stream) ORDER BY stream, lo");
	ret = ch_sql_err(&key) ?: ch_query(s, &q, &r);
	ch_sql_free(&q);
	ch_sql_free(&key);
	if (ret < 0)
		return ret;
	for (size_t i = 0; ret == 0 && i < r.nrows; i++) {
		uint64_t stream;

		if (ch_reply_u64(&r, i, 0, &stream) == 0 && stream < n &&
		    ch_reply_u64(&r, i, 1, &sp.lo) == 0 && ch_reply_u64(&r, i, 2, &sp.hi) == 0 &&
		    sp.lo <= sp.hi) {
			sp.stream = (uint32_t)stream;
			ret = fn(ctx, &sp);
		}
	}
	ch_reply_free(&r);
	for (size_t i = 0; ret == 0 && i < s->nsmarks; i++) {	/* the open transaction's */
		const struct ch_smark *m = &s->smarks[i];

		if (m->host_id == host_id && m->session == session && m->stream < n &&
		    !strcmp(m->boot_id, boot_id))
			ret = fn(ctx, &(struct store_span){ m->stream, m->lo, m->seq });
	}
	return ret;
}

static int ch_stream_mark(struct store_writer *w, uint64_t host_id, const char *boot_id,
			  uint64_t session, uint32_t stream, uint64_t lo, uint64_t seq)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_batch *b = &s->fixed[CH_B_STREAM_MARKS];
	struct ch_smark *v;
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	v = util_grow(s->smarks, &s->smarks_cap, s->nsmarks, sizeof(*v), 16);
	if (!v)
		return -ENOMEM;
	s->smarks = v;
	v[s->nsmarks] = (struct ch_smark){ host_id, session, lo, seq, stream, strdup(boot_id) };
	if (!v[s->nsmarks].boot_id)
		return -ENOMEM;
	if (s->in_txn)
		s->nsmarks++;
	else
		free(v[s->nsmarks].boot_id);
	ch_b_u64(&b->rows, host_id);
	ch_b_cstr(&b->rows, boot_id);
	ch_b_u64(&b->rows, session);
	ch_b_u32(&b->rows, stream);
	ch_b_u64(&b->rows, lo);
	ch_b_u64(&b->rows, seq);
	ch_b_u64(&b->rows, s->commit_id);
	return ch_counted_done(s, b);
}

static int ch_journal_mark(struct store_writer *w, uint64_t file, uint64_t pos)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_batch *b = &s->fixed[CH_B_JOURNAL_MARKS];
	struct ch_jmark *v;
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	if (s->in_txn) {
		v = util_grow(s->jmarks, &s->jmarks_cap, s->njmarks, sizeof(*v), 16);
		if (!v)
			return -ENOMEM;
		s->jmarks = v;
		v[s->njmarks++] = (struct ch_jmark){ file, pos };
	}
	ch_b_cstr(&b->rows, s->collector);
	ch_b_u64(&b->rows, file);
	ch_b_u64(&b->rows, pos);
	ch_b_u64(&b->rows, s->commit_id);
	return ch_counted_done(s, b);
}

static int ch_journal_mark_get(struct store_writer *w, uint64_t file, uint64_t *pos)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_sql q;
	uint64_t p = 0;
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	ch_sql_init(&q, 0);
	/* completed: a late batch of a commit given up is below last_ok too */
	ch_sql_addf(&q, "SELECT max(pos) FROM journal_marks WHERE file = %llu AND"
		    " _tc_commit <= %llu AND ", (unsigned long long)file,
		    (unsigned long long)s->last_ok);
	ch_sql_raw(&q, CH_COMMITTED " AND collector = ");
	ch_sql_cstr(&q, s->collector);
	ret = ch_query_u64(s, &q, &p);
	ch_sql_free(&q);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < s->njmarks; i++)
		if (s->jmarks[i].file == file && s->jmarks[i].pos > p)
			p = s->jmarks[i].pos;
	*pos = p;
	return 0;
}

/* Marks of removed files: deleted in the background (a mutation), as nothing waits on it. */
static int ch_journal_forget(struct store_writer *w, uint64_t from, uint64_t to)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_sql q;
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "ALTER TABLE journal_marks DELETE WHERE file >= %llu AND file <= %llu"
		    " AND collector = ", (unsigned long long)from, (unsigned long long)to);
	ch_sql_cstr(&q, s->collector);
	ret = ch_exec(s, &q);
	ch_sql_free(&q);
	return ret;
}

/* ---- names ---- */

static int ch_cmdlines(struct store_writer *w, uint64_t host_id, const struct proto_cmdlines *c)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_batch *cb = &s->fixed[CH_B_COMMS], *tb = &s->fixed[CH_B_TGIDS];
	uint64_t version = (uint64_t)ch_now_ns();
	int ret = ch_writer_enter(s);

	for (uint32_t i = 0; i < c->count && ret == 0; i++) {
		ch_b_u64(&cb->rows, host_id);
		ch_b_i32(&cb->rows, c->items[i].pid);
		ch_b_str(&cb->rows, c->items[i].comm,
			 strnlen(c->items[i].comm, sizeof(c->items[i].comm)));
		ch_b_u64(&cb->rows, version);
		ret = ch_batch_row_done(cb);
	}
	for (uint32_t i = 0; i < c->tgids.count && ret == 0; i++) {
		ch_b_u64(&tb->rows, host_id);
		ch_b_i32(&tb->rows, c->tgids.items[i].pid);
		ch_b_i32(&tb->rows, c->tgids.items[i].tgid);
		ch_b_u64(&tb->rows, version);
		ret = ch_batch_row_done(tb);
	}
	if (ret == 0 && !s->in_txn)
		ret = ch_batch_send(s, cb) ?: ch_batch_send(s, tb);
	return ret;
}

static int ch_comm_change(struct store_writer *w, uint64_t host_id,
			  const struct store_comm_change *c)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_batch *b = &s->fixed[CH_B_COMM_CHANGES];
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	ch_b_u64(&b->rows, host_id);
	ch_b_i32(&b->rows, c->pid);
	ch_b_i64(&b->rows, c->trace_ts);
	ch_b_i64(&b->rows, c->ts);
	ch_b_f64(&b->rows, c->tick_ns > 0 ? c->tick_ns : 1.0);
	ch_b_str(&b->rows, c->old ? c->old : "", c->old ? strnlen(c->old, 16) : 0);
	ch_b_u8(&b->rows, c->old != NULL);
	ch_b_str(&b->rows, c->comm, strnlen(c->comm, 16));
	return ch_fact_done(s, b);
}

/* ---- programs, symbols, printk formats ---- */

/*
 * A program's id: a hash of what SQLite finds it by (host, boot, session,
 * group) for an agent run; of its pid and start too without a session.
 */
static uint64_t ch_program_id(uint64_t host_id, const struct store_program *p)
{
	char key[160];
	const char *parts[2] = { "program", key };
	size_t lens[2] = { 7, 0 };

	lens[1] = (size_t)snprintf(key, sizeof(key), "%llu/%llu/%u/%d/%lld",
				   (unsigned long long)host_id, (unsigned long long)p->session,
				   p->group, p->session ? 0 : p->pid,
				   p->session ? 0LL : (long long)p->since_ns);
	return ch_id(parts, lens, 2) ^ ch_id_str("boot", p->boot_id, NULL);
}

static struct ch_boot *ch_boot_get(struct ch_store *s, uint64_t host_id, const char *boot_id)
{
	struct ch_boot *v;

	for (size_t i = 0; i < s->nboots; i++)
		if (s->boots[i].host_id == host_id && !strcmp(s->boots[i].boot_id, boot_id))
			return &s->boots[i];
	v = util_grow(s->boots, &s->boots_cap, s->nboots, sizeof(*v), 8);
	if (!v)
		return NULL;
	s->boots = v;
	v[s->nboots] = (struct ch_boot){ host_id, strdup(boot_id), false, false };
	return v[s->nboots].boot_id ? &v[s->nboots++] : NULL;
}

static int ch_program(struct store_writer *w, uint64_t host_id, const struct store_program *p,
		      uint64_t *program_id)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_batch *b = &s->fixed[CH_B_PROGRAMS];
	uint64_t id = ch_program_id(host_id, p) & INT64_MAX;
	struct ch_boot *bt;
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	if (p->group == 0 && s->in_txn) {	/* the kernel's: kallsyms_held() reads it */
		bt = ch_boot_get(s, host_id, p->boot_id);
		if (!bt)
			return -ENOMEM;
		bt->kallsyms = true;
	}
	ch_b_u64(&b->rows, id);
	ch_b_u64(&b->rows, host_id);
	ch_b_cstr(&b->rows, p->boot_id);
	ch_b_u64(&b->rows, p->session);
	ch_b_u32(&b->rows, p->group);
	ch_b_i32(&b->rows, p->pid);
	ch_b_cstr(&b->rows, p->comm);
	ch_b_u32(&b->rows, p->first_stream);
	ch_b_u32(&b->rows, p->nstreams);
	ch_b_i64(&b->rows, p->since_ns);
	ret = ch_fact_done(s, b);
	if (ret == 0)
		*program_id = id;
	return ret;
}

/* @module: kallsyms' [MOD] of a kernel symbol, "" for none (migration 0013). */
static int ch_symbol(struct store_writer *w, uint64_t program_id, uint64_t addr, uint64_t size,
		     const char *name, const char *module)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_batch *b = &s->fixed[CH_B_SYMBOLS];
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	ch_b_u64(&b->rows, program_id);
	ch_b_u64(&b->rows, addr);
	ch_b_u64(&b->rows, size);
	ch_b_cstr(&b->rows, name);
	ch_b_cstr(&b->rows, module ? module : "");
	return ch_fact_done(s, b);
}

/*
 * Whether the server or the open transaction (@pending) holds something
 * of a host's boot: @head " host_id = N AND boot_id = 'B'" @tail counts it.
 */
static int ch_boot_held(struct ch_store *s, const char *head, const char *tail,
			uint64_t host_id, const char *boot_id, bool pending, bool *held)
{
	struct ch_sql q;
	uint64_t n = 0;
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	if (pending) {
		*held = true;
		return 0;
	}
	ch_sql_init(&q, 0);
	ch_sql_raw(&q, head);
	ch_sql_addf(&q, " host_id = %llu AND boot_id = ", (unsigned long long)host_id);
	ch_sql_cstr(&q, boot_id);
	ch_sql_raw(&q, tail);
	ret = ch_query_u64(s, &q, &n);
	ch_sql_free(&q);
	if (ret == 0)
		*held = n > 0;
	return ret;
}

static bool ch_boot_pending(struct ch_store *s, uint64_t host_id, const char *boot_id,
			    bool printk)
{
	for (size_t i = 0; i < s->nboots; i++)
		if (s->boots[i].host_id == host_id && !strcmp(s->boots[i].boot_id, boot_id))
			return printk ? s->boots[i].printk : s->boots[i].kallsyms;
	return false;
}

static int ch_kallsyms_held(struct store_writer *w, uint64_t host_id, const char *boot_id,
			    bool *held)
{
	struct ch_store *s = ch_writer_of(w);

	return ch_boot_held(s, "SELECT count() FROM (SELECT 1 FROM symbols WHERE program_id IN"
			       " (SELECT program_id FROM programs WHERE grp = 0 AND", ") LIMIT 1)",
			    host_id, boot_id,
			    ch_boot_pending(s, host_id, boot_id, false) &&
			    s->fixed[CH_B_SYMBOLS].nrows, held);
}

static int ch_printk_put(struct store_writer *w, uint64_t host_id, const char *boot_id,
			 int64_t since, uint64_t addr, const char *fmt, size_t len)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_batch *b = &s->fixed[CH_B_PRINTK];
	struct ch_boot *bt;
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	if (s->in_txn) {
		bt = ch_boot_get(s, host_id, boot_id);
		if (!bt)
			return -ENOMEM;
		bt->printk = true;
	}
	ch_b_u64(&b->rows, host_id);
	ch_b_cstr(&b->rows, boot_id);
	ch_b_i64(&b->rows, since);
	ch_b_u64(&b->rows, addr);
	ch_b_str(&b->rows, fmt, len);
	return ch_fact_done(s, b);
}

static int ch_printk_held(struct store_writer *w, uint64_t host_id, const char *boot_id,
			  bool *held)
{
	struct ch_store *s = ch_writer_of(w);

	return ch_boot_held(s, "SELECT count() FROM (SELECT 1 FROM printk_formats WHERE",
			    " LIMIT 1)", host_id, boot_id,
			    ch_boot_pending(s, host_id, boot_id, true), held);
}

/* ---- usage (retention: clickhouse_retain.c) ---- */

static int ch_host_usage(struct store_writer *w,
			 int (*fn)(void *ctx, const char *host, uint64_t bytes), void *ctx)
{
	struct ch_store *s = ch_writer_of(w);
	struct ch_reply r;
	struct ch_sql q;
	uint64_t bytes;
	int ret = ch_writer_enter(s);

	if (ret < 0)
		return ret;
	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "SELECT h.name, toUInt64(greatest(0, toInt64(sum(c.b)) -"
		    " toInt64(sum(c.f)))) FROM (SELECT host_id, bytes AS b, 0 AS f FROM cpu_counts"
		    " WHERE " CH_COMMITTED " UNION ALL SELECT host_id, 0 AS b, bytes AS f FROM"
		    " freed WHERE " CH_COMMITTED ") AS c ANY INNER JOIN (SELECT host_id,"
		    " argMax(name, version) AS name FROM hosts GROUP BY host_id) AS h USING host_id"
		    " GROUP BY h.name");
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	for (size_t i = 0; ret == 0 && i < r.nrows; i++)
		if (ch_reply_u64(&r, i, 1, &bytes) == 0)
			ret = fn(ctx, ch_reply_cell(&r, i, 0), bytes);
	if (r.nrows || ret == 0)
		ch_reply_free(&r);
	return ret;
}

/* Field indexes: ClickHouse reads a table in (host, time) order; none are kept. */
static int ch_set_indexes(struct store_writer *w, const struct store_indexes *ix,
			  unsigned *created, unsigned *dropped)
{
	(void)w; (void)ix;
	*created = 0;
	*dropped = 0;
	return 0;
}

void ch_meta_writer_ops(struct store_writer_ops *w)
{
	w->set_indexes = ch_set_indexes;
	w->host = ch_host;
	w->host_clock = ch_host_clock;
	w->cpu_received = ch_cpu_received;
	w->cpu_stats = ch_cpu_stats;
	w->cpu_duplicates = ch_cpu_duplicates;
	w->cpu_not_stored = ch_cpu_not_stored;
	w->cpu_held = ch_cpu_held;
	w->stream_marks = ch_stream_marks;
	w->stream_mark = ch_stream_mark;
	w->journal_mark = ch_journal_mark;
	w->journal_mark_get = ch_journal_mark_get;
	w->journal_forget = ch_journal_forget;
	w->host_usage = ch_host_usage;
	w->cmdlines = ch_cmdlines;
	w->comm_change = ch_comm_change;
	w->program = ch_program;
	w->symbol = ch_symbol;
	w->kallsyms_held = ch_kallsyms_held;
	w->printk_put = ch_printk_put;
	w->printk_held = ch_printk_held;
	w->dropped = ch_dropped;
}
