/*
 * store.c - the backend-independent front of the storage layer: argument
 * checks, the read-only guard and dispatch through the backend's ops table
 * (server/store/store_ops.h). Which backend a path selects is decided here; today
 * every path is an SQLite file.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/tc_error.h"
#include "server/store/store_ops.h"

int store_set_errmsg(struct store *s, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

const char *store_errmsg(const struct store *s)
{
	/* a code without a sentence reads as what it is (a failure: TC_ERR_DB) */
	return s && s->errmsg[0] ? s->errmsg : tc_strerror(TC_ERR_DB);
}

/* Why this thread's last store_open*() failed (store_open_errmsg()). */
static __thread char open_errmsg[STORE_ERRMSG_MAX];

void store_note_open_error(const struct store *s)
{
	snprintf(open_errmsg, sizeof(open_errmsg), "%s", s->errmsg);
}

const char *store_open_errmsg(int ret)
{
	if (ret == -ENOMEM)
		return "out of memory";
	return open_errmsg[0] ? open_errmsg : tc_strerror(ret);
}

int store_open(const char *path, struct store **out)
{
	if (!path || !out)
		return -EINVAL;
	open_errmsg[0] = 0;
	return store_sqlite_open(path, false, out);
}

int store_open_readonly(const char *path, struct store **out)
{
	if (!path || !out)
		return -EINVAL;
	open_errmsg[0] = 0;
	return store_sqlite_open(path, true, out);
}

void store_close(struct store *s)
{
	if (s)
		s->ops->close(s);
}

int store_thread_policy(struct store *s, int policy)
{
	return s->ops->thread_policy ? s->ops->thread_policy(s, policy) : 0;
}

/* Keep to the file at the path (store_ops.follow). */
static int store_follow(struct store *s, bool reopen)
{
	return s->ops->follow ? s->ops->follow(s, reopen) : 0;
}

int store_refresh(struct store *s)
{
	return s ? store_follow(s, true) : -EINVAL;
}

uint64_t store_generation(const struct store *s, const char **note)
{
	if (note)
		*note = s->note[0] ? s->note : "not reopened";
	return s->generation;
}

/*
 * Keep to the file (a read-only handle reopens it here), then wait for
 * what the backend queued (see store_ops.sync).
 */
static int store_enter(struct store *s)
{
	return store_follow(s, s->readonly) ?: (s->ops->sync ? s->ops->sync(s) : 0);
}

/* Write operations on a read-only handle fail before reaching the backend. */
static int store_rw(struct store *s)
{
	if (!s)
		return -EINVAL;
	if (s->readonly)
		return store_set_errmsg(s, -EROFS, "store opened read-only");
	return 0;
}

static int store_writable(struct store *s)
{
	return store_rw(s) ?: store_enter(s);
}

int store_host(struct store *s, const struct proto_hello *h, const char *peer_subject,
	       uint64_t *host_id)
{
	int ret = store_writable(s);

	if (ret == 0 && (!h || !h->host || !h->machine_id || !host_id))
		ret = -EINVAL;
	return ret < 0 ? ret : s->ops->host(s, h, peer_subject, host_id);
}

int store_host_clock(struct store *s, uint64_t host_id, int64_t offset_ns)
{
	int ret = store_writable(s);

	return ret < 0 ? ret : s->ops->host_clock(s, host_id, offset_ns);
}

int store_type(struct store *s, const struct store_type_desc *t, const struct store_origin *o,
	       struct store_type **out)
{
	int ret = store_writable(s);

	if (ret == 0 && (!t || !t->system || !t->name || !t->format || (t->nfields && !t->fields) ||
			 !o || !out))
		ret = -EINVAL;
	return ret < 0 ? ret : s->ops->type(s, t, o, out);
}

int store_begin(struct store *s)
{
	int ret = store_rw(s) ?: store_follow(s, true);

	return ret < 0 ? ret : s->ops->begin(s);
}

int store_commit(struct store *s)
{
	int ret = store_rw(s);

	return ret < 0 ? ret : s->ops->commit(s);
}

/* After the rollback, a store that lost its file tries to reopen it. */
int store_rollback(struct store *s)
{
	int ret = store_rw(s);

	if (ret < 0)
		return ret;
	ret = s->ops->rollback(s);
	store_follow(s, true);
	return ret;
}

int store_insert(struct store *s, struct store_type *t, const struct store_event *ev)
{
	if (!s || !t || !ev || (ev->nvals && !ev->vals))
		return -EINVAL;
	return s->ops->insert(s, t, ev);
}

int store_cpu_received(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t pages,
		       uint64_t events, uint64_t bytes)
{
	int ret = store_writable(s);

	return ret < 0 ? ret : s->ops->cpu_received(s, host_id, cpu, pages, events, bytes);
}

int store_cpu_stats(struct store *s, uint64_t host_id, const struct proto_cpu_stats *st)
{
	int ret = store_writable(s);

	if (ret == 0 && !st)
		ret = -EINVAL;
	return ret < 0 ? ret : s->ops->cpu_stats(s, host_id, st);
}

int store_stream_marks(struct store *s, uint64_t host_id, const char *boot_id,
		       uint64_t session, uint64_t *seqs, uint32_t n)
{
	int ret = store_writable(s);

	if (ret == 0 && (!boot_id || (n && !seqs)))
		ret = -EINVAL;
	return ret < 0 ? ret : s->ops->stream_marks(s, host_id, boot_id, session, seqs, n);
}

int store_stream_mark(struct store *s, uint64_t host_id, const char *boot_id,
		      uint64_t session, uint32_t stream, uint64_t seq)
{
	int ret = store_writable(s);

	if (ret == 0 && !boot_id)
		ret = -EINVAL;
	return ret < 0 ? ret : s->ops->stream_mark(s, host_id, boot_id, session, stream, seq);
}

int store_journal_mark(struct store *s, uint64_t file, uint64_t pos)
{
	int ret = store_writable(s);

	return ret < 0 ? ret : s->ops->journal_mark(s, file, pos);
}

int store_journal_mark_get(struct store *s, uint64_t file, uint64_t *pos)
{
	int ret = store_writable(s);

	if (ret == 0 && !pos)
		ret = -EINVAL;
	return ret < 0 ? ret : s->ops->journal_mark_get(s, file, pos);
}

int store_journal_forget(struct store *s, uint64_t from, uint64_t to)
{
	int ret = store_writable(s);

	return ret < 0 ? ret : s->ops->journal_forget(s, from, to);
}

int store_cpu_duplicates(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t n)
{
	int ret = store_writable(s);

	return ret < 0 ? ret : s->ops->cpu_duplicates(s, host_id, cpu, n);
}

int store_cpu_not_stored(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t pages,
			 uint64_t events)
{
	int ret = store_writable(s);

	return ret < 0 ? ret : s->ops->cpu_not_stored(s, host_id, cpu, pages, events);
}

int store_cpu_held(struct store *s, uint64_t host_id, uint32_t cpu, const struct store_held *h)
{
	int ret = store_writable(s);

	if (ret == 0 && !h)
		ret = -EINVAL;
	return ret < 0 ? ret : s->ops->cpu_held(s, host_id, cpu, h);
}

int store_host_usage(struct store *s, int (*fn)(void *ctx, const char *host, uint64_t bytes),
		     void *ctx)
{
	return fn ? s->ops->host_usage(s, fn, ctx) : -EINVAL;
}

int store_cmdlines(struct store *s, uint64_t host_id, const struct proto_cmdlines *c)
{
	int ret = store_writable(s);

	if (ret == 0 && (!c || (c->count && !c->items) || (c->tgids.count && !c->tgids.items)))
		ret = -EINVAL;
	return ret < 0 ? ret : s->ops->cmdlines(s, host_id, c);
}

int store_comm_change(struct store *s, uint64_t host_id, const struct store_comm_change *c)
{
	int ret = store_writable(s);

	if (ret == 0 && (!c || !c->comm))
		ret = -EINVAL;
	return ret < 0 ? ret : s->ops->comm_change(s, host_id, c);
}

int store_program(struct store *s, uint64_t host_id, const struct store_program *p,
		  uint64_t *program_id)
{
	int ret = store_writable(s);

	if (ret == 0 && (!p || !p->boot_id || !p->comm || !program_id))
		ret = -EINVAL;
	return ret < 0 ? ret : s->ops->program(s, host_id, p, program_id);
}

int store_symbol(struct store *s, uint64_t program_id, uint64_t addr, uint64_t size,
		 const char *name)
{
	int ret = store_writable(s);

	if (ret == 0 && !name)
		ret = -EINVAL;
	return ret < 0 ? ret : s->ops->symbol(s, program_id, addr, size, name);
}

int store_kallsyms_held(struct store *s, uint64_t host_id, const char *boot_id, bool *held)
{
	if (!s || !boot_id || !held)
		return -EINVAL;
	return store_enter(s) ?: s->ops->kallsyms_held(s, host_id, boot_id, held);
}

int store_printk_put(struct store *s, uint64_t host_id, const char *boot_id, int64_t since,
		     uint64_t addr, const char *fmt, size_t len)
{
	int ret = store_writable(s);

	if (ret == 0 && (!boot_id || !fmt || len > INT32_MAX))
		ret = -EINVAL;
	return ret < 0 ? ret : s->ops->printk_put(s, host_id, boot_id, since, addr, fmt, len);
}

int store_printk_held(struct store *s, uint64_t host_id, const char *boot_id, bool *held)
{
	if (!s || !boot_id || !held)
		return -EINVAL;
	return store_enter(s) ?: s->ops->printk_held(s, host_id, boot_id, held);
}

int store_printk_list(struct store *s, uint64_t host_id, int64_t ts, uint32_t max,
		      int (*fn)(void *ctx, uint64_t addr, const char *fmt), void *ctx)
{
	if (!s || !fn)
		return -EINVAL;
	return store_enter(s) ?: s->ops->printk_list(s, host_id, ts, max, fn, ctx);
}

int store_tgids_list(struct store *s, uint64_t host_id, int32_t after_pid, uint32_t max,
		     int (*fn)(void *ctx, int32_t pid, int32_t tgid), void *ctx)
{
	if (!s || !fn)
		return -EINVAL;
	return store_enter(s) ?: s->ops->tgids_list(s, host_id, after_pid, max, fn, ctx);
}

int store_host_find(struct store *s, const char *name, const struct store_scope *scope,
		    uint64_t *host_id)
{
	if (!s || !name || !host_id)
		return -EINVAL;
	return store_enter(s) ?: s->ops->host_find(s, name, scope, host_id);
}

int store_import_check(struct store *s, const char *name, const char *machine_id, bool *live,
		       bool *stored)
{
	if (!s || !name || !machine_id || !live || !stored)
		return -EINVAL;
	return store_enter(s) ?: s->ops->import_check(s, name, machine_id, live, stored);
}

int store_symbol_name(struct store *s, uint64_t host_id, int32_t pid, int64_t ts,
		      uint64_t addr, char *buf, size_t len)
{
	if (!s || !buf || !len)
		return -EINVAL;
	/* called per row of a select, which kept to the file already: no follow */
	return (s->ops->sync ? s->ops->sync(s) : 0) ?:
	       s->ops->symbol_name(s, host_id, pid, ts, addr, buf, len);
}

int store_schema_get(struct store *s, const char *system, const char *event,
		     struct store_schema **out)
{
	if (!s || !event || !out)
		return -EINVAL;
	return store_enter(s) ?: s->ops->schema_get(s, system, event, out);
}

int store_schema_list(struct store *s, const char *system,
		      int (*fn)(void *ctx, const struct store_schema *sc), void *ctx)
{
	if (!s || !fn)
		return -EINVAL;
	return store_enter(s) ?: s->ops->schema_list(s, system, fn, ctx);
}

/* A scope a backend can rely on: NULL, or at most STORE_SCOPE_MAX globs. */
static int store_scope_ok(const struct store_scope *sc)
{
	if (!sc)
		return 0;
	if (sc->n > STORE_SCOPE_MAX || (sc->n && !sc->globs))
		return -EINVAL;
	for (size_t i = 0; i < sc->n; i++)
		if (!sc->globs[i])
			return -EINVAL;
	return 0;
}

int store_type_seen(struct store *s, const struct store_schema *sc,
		    const struct store_scope *scope, bool *seen)
{
	if (!s || !sc || !sc->table || !seen)
		return -EINVAL;
	if (!scope) {
		*seen = true;
		return 0;
	}
	return store_scope_ok(scope) ?: store_enter(s) ?: s->ops->type_seen(s, sc, scope, seen);
}

/* A query a backend can rely on: a schema, columns that exist, a sane scope. */
static int store_query_ok(const struct store_query *q)
{
	if (!q || !q->schema || (q->filter && q->nfields && !q->field_col) ||
	    store_scope_ok(q->scope) < 0 || store_scope_ok(q->hosts) < 0 ||
	    (q->ncpus && !q->cpus))
		return -EINVAL;
	for (size_t i = 0; q->filter && i < q->nfields; i++)
		if (q->field_col[i] >= q->schema->ncols)
			return -EINVAL;
	return 0;
}

int store_select(struct store *s, const struct store_query *q, store_row_fn fn, void *ctx)
{
	if (!s || !fn || store_query_ok(q) < 0)
		return -EINVAL;
	return store_enter(s) ?: s->ops->select(s, q, fn, ctx);
}

int store_count(struct store *s, const struct store_query *q, uint64_t *count)
{
	if (!s || !count || store_query_ok(q) < 0)
		return -EINVAL;
	return store_enter(s) ?: s->ops->count(s, q, count);
}

int store_hist(struct store *s, const struct store_query *q, const struct store_hist *h,
	       int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx,
	       struct store_hist_totals *tot)
{
	if (!s || !fn || !tot || !h || !h->spec || !h->key_col || !h->val_col ||
	    store_query_ok(q) < 0)
		return -EINVAL;
	return store_enter(s) ?: s->ops->hist(s, q, h, fn, ctx, tot);
}

void store_set_stop(struct store *s, const struct store_stop *stop)
{
	if (s && s->ops->set_stop)
		s->ops->set_stop(s, stop);
}

int store_tail(struct store *s, const struct store_query *const *qs, size_t nq,
	       struct store_tail *t, store_tail_fn fn, void *ctx)
{
	if (!s || !t || !fn || (nq && !qs))
		return -EINVAL;
	for (size_t i = 0; i < nq; i++)
		if (store_query_ok(qs[i]) < 0)
			return -EINVAL;
	if (!s->ops->tail)
		return -ENOSYS;
	return store_enter(s) ?: s->ops->tail(s, qs, nq, t, fn, ctx);
}

int store_stats(struct store *s, const struct store_query *q,
		int (*fn)(void *ctx, const struct store_stats_host *h, uint32_t cpu,
			  const char *key, uint64_t value),
		void *ctx)
{
	if (!s || !fn || (q && store_scope_ok(q->scope) < 0))
		return -EINVAL;
	return store_enter(s) ?: s->ops->stats(s, q, fn, ctx);
}

int store_hosts(struct store *s, const struct store_query *q,
		int (*fn)(void *ctx, const struct store_host_info *h), void *ctx)
{
	if (!s || !fn || (q && (store_scope_ok(q->scope) < 0 || store_scope_ok(q->hosts) < 0)))
		return -EINVAL;
	return store_enter(s) ?: s->ops->hosts(s, q, fn, ctx);
}

int store_dropped(struct store *s, uint64_t host_id, const char *system, const char *name,
		  const char *reason, uint64_t n)
{
	int ret = store_writable(s);

	if (ret == 0 && (!system || !name || !reason))
		ret = -EINVAL;
	return ret < 0 ? ret : s->ops->dropped(s, host_id, system, name, reason, n);
}

int store_retain(struct store *s, int64_t before_ts, uint64_t max_bytes, uint64_t *removed)
{
	int ret = store_writable(s);

	if (ret == 0 && !removed)
		ret = -EINVAL;
	return ret < 0 ? ret : s->ops->retain(s, before_ts, max_bytes, removed);
}

int store_set_indexes(struct store *s, const struct store_indexes *ix, unsigned *created,
		      unsigned *dropped)
{
	unsigned c = 0, d = 0;
	int ret = store_writable(s);

	if (ret == 0 && !ix)
		ret = -EINVAL;
	if (ret == 0)
		ret = s->ops->set_indexes(s, ix, &c, &d);
	if (created)
		*created = c;
	if (dropped)
		*dropped = d;
	return ret;
}

int store_drops(struct store *s, const struct store_query *q,
		int (*fn)(void *ctx, const char *host, const char *system, const char *name,
			  const char *reason, uint64_t count),
		void *ctx)
{
	if (!s || !fn || (q && store_scope_ok(q->scope) < 0))
		return -EINVAL;
	return store_enter(s) ?: s->ops->drops(s, q, fn, ctx);
}

int store_sql(struct store *s, const char *text, const struct store_scope *scope,
	      const struct store_sql_limits *lim, store_sql_fn fn, void *ctx)
{
	if (!s || !text || !lim || !fn || store_scope_ok(scope) < 0)
		return -EINVAL;
	if (!s->ops->sql)
		return -ENOSYS;
	return store_enter(s) ?: s->ops->sql(s, text, scope, lim, fn, ctx);
}

void store_schema_free(struct store_schema *sc)
{
	if (!sc)
		return;
	for (size_t i = 0; i < sc->ncols; i++) {
		free((char *)sc->cols[i].name);
		free((char *)sc->cols[i].column);
	}
	free(sc->cols);
	for (size_t i = 0; i < sc->nfmts; i++) {
		struct store_fmt *f = &sc->fmts[i];

		for (size_t k = 0; f->types && k < f->ncols; k++)
			free(f->types[k]);
		free(f->types);
		free(f->cols);
		free(f->text);
		free(f->host_ids);
	}
	free(sc->fmts);
	free(sc->system);
	free(sc->name);
	free(sc->table);
	free(sc->format);
	free(sc);
}
