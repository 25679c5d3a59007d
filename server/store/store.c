/*
 * store.c - the storage layer's front: what every backend needs and no
 * backend should do for itself (store_ops.h, "Who does what"). Which
 * backend a path selects is decided here (clickhouse://... a ClickHouse
 * server, with the credentials store_remote_setup() keeps; any other path
 * an SQLite file); the errors and reopen reports of the handles are read here; and
 * every read that takes a query or a scope gets one a backend can rely
 * on. Every other call goes from store.h straight to the backend's op.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/store/clickhouse.h"
#include "server/store/sqlite.h"
#include "server/store/store.h"

/* ---- opening, errors ---- */

/* Why this thread's last open failed (store_open_errmsg()). */
static __thread char open_errmsg[STORE_ERRMSG_MAX];

const char *store_open_errmsg(int ret)
{
	if (ret == -ENOMEM)
		return "out of memory";
	return open_errmsg[0] ? open_errmsg : tc_strerror(ret);
}

/* What store_remote_setup() kept: set before any thread, read-only after. */
static struct {
	char *password, *cert, *key, *ca;
	char *collector;
	unsigned collector_id;
	unsigned retain_lease_s;	/* 0: the backend's default */
} remote;

bool store_path_is_remote(const char *path)
{
	return path && !strncmp(path, CH_SCHEME, strlen(CH_SCHEME));
}

static const struct store_remote_auth *store_remote(struct store_remote_auth *a)
{
	*a = (struct store_remote_auth){ remote.collector, remote.collector_id,
					 remote.retain_lease_s, remote.password, remote.cert,
					 remote.key, remote.ca };
	return a;
}

/* The first line of file @path (at most 1 KiB), into a malloc'd *@out. */
static int store_read_secret(const char *path, char **out, char *err, size_t errlen)
{
	char buf[1025];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	*out = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return *out ? 0 : -ENOMEM;
}

static int store_set(char **slot, const char *v)
{
	if (!v)
		return 0;
	*slot = strdup(v);
	return *slot ? 0 : -ENOMEM;
}

int store_remote_setup(char *db, const char *password_file, const char *cert, const char *key,
		       const char *ca, char *err, size_t errlen)
{
	char *p = db + strlen(CH_SCHEME), *slash, *at, *colon;
	int ret;

	err[0] = '\0';
	if (!store_path_is_remote(db))
		return 0;
	slash = strchr(p, '/');
	at = slash ? memchr(p, '@', (size_t)(slash - p)) : NULL;
	colon = at ? memchr(p, ':', (size_t)(at - p)) : NULL;
	if (colon && password_file) {
		snprintf(err, errlen, "a password both in the address and in a file: give one");
		return TC_ERR_CONFIG;
	}
	if (colon) {		/* USER:PASSWORD@: kept here, out of the path */
		free(remote.password);
		remote.password = strndup(colon + 1, (size_t)(at - colon - 1));
		if (!remote.password)
			return -ENOMEM;
		explicit_bzero(colon, (size_t)(at - colon));
		memmove(colon, at, strlen(at) + 1);
	} else if (password_file) {
		ret = store_read_secret(password_file, &remote.password, err, errlen);
		if (ret < 0)
			return ret;
	}
	return store_set(&remote.cert, cert) ?: store_set(&remote.key, key) ?:
	       store_set(&remote.ca, ca);
}

int store_remote_collector(const char *name, unsigned id)
{
	if (id >= STORE_COLLECTOR_IDS || (name && (!*name || strlen(name) > 255)))
		return -EINVAL;
	free(remote.collector);
	remote.collector = NULL;
	remote.collector_id = id;
	return store_set(&remote.collector, name);
}

void store_remote_retain_lease(unsigned seconds)
{
	remote.retain_lease_s = seconds;
}

int store_writer_open(const char *path, struct store_writer **out)
{
	struct store_remote_auth a;

	if (!path || !out)
		return -EINVAL;
	open_errmsg[0] = 0;
	if (store_path_is_remote(path))
		return store_clickhouse_writer_open(path, store_remote(&a), out, open_errmsg,
						    sizeof(open_errmsg));
	return store_sqlite_writer_open(path, out, open_errmsg, sizeof(open_errmsg));
}

int store_reader_open(const char *path, struct store_reader **out)
{
	struct store_remote_auth a;

	if (!path || !out)
		return -EINVAL;
	open_errmsg[0] = 0;
	if (store_path_is_remote(path))
		return store_clickhouse_reader_open(path, store_remote(&a), out, open_errmsg,
						    sizeof(open_errmsg));
	return store_sqlite_reader_open(path, out, open_errmsg, sizeof(open_errmsg));
}

/* A code without a sentence reads as what it is (a failure: TC_ERR_DB). */
static const char *store_handle_errmsg(const struct store_handle *h)
{
	return h && h->errmsg[0] ? h->errmsg : tc_strerror(TC_ERR_DB);
}

const char *store_writer_errmsg(const struct store_writer *w)
{
	return store_handle_errmsg(w ? &w->h : NULL);
}

const char *store_reader_errmsg(const struct store_reader *r)
{
	return store_handle_errmsg(r ? &r->h : NULL);
}

static uint64_t store_handle_generation(const struct store_handle *h, const char **note)
{
	if (note)
		*note = h->note[0] ? h->note : "not reopened";
	return h->generation;
}

uint64_t store_writer_generation(const struct store_writer *w, const char **note)
{
	return store_handle_generation(&w->h, note);
}

uint64_t store_reader_generation(const struct store_reader *r, const char **note)
{
	return store_handle_generation(&r->h, note);
}

/* ---- the scope check of reads ---- */

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

int store_host_find(struct store_reader *r, const char *name, const struct store_scope *scope,
		    uint64_t *host_id)
{
	if (!r || !name || !host_id || store_scope_ok(scope) < 0)
		return -EINVAL;
	return r->ops->host_find(r, name, scope, host_id);
}

int store_type_seen(struct store_reader *r, const struct store_schema *sc,
		    const struct store_scope *scope, bool *seen)
{
	if (!r || !sc || !sc->table || !seen)
		return -EINVAL;
	if (!scope) {
		*seen = true;
		return 0;
	}
	return store_scope_ok(scope) ?: r->ops->type_seen(r, sc, scope, seen);
}

int store_select(struct store_reader *r, const struct store_query *q, store_row_fn fn,
		 void *ctx)
{
	if (!r || !fn || store_query_ok(q) < 0)
		return -EINVAL;
	return r->ops->select(r, q, fn, ctx);
}

int store_count(struct store_reader *r, const struct store_query *q, uint64_t *count)
{
	if (!r || !count || store_query_ok(q) < 0)
		return -EINVAL;
	return r->ops->count(r, q, count);
}

int store_hist(struct store_reader *r, const struct store_query *q, const struct store_hist *h,
	       int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx,
	       struct store_hist_totals *tot)
{
	if (!r || !fn || !tot || !h || !h->spec || !h->key_col || !h->val_col ||
	    store_query_ok(q) < 0)
		return -EINVAL;
	return r->ops->hist(r, q, h, fn, ctx, tot);
}

/* t->writers of a store with one writer: its cursor is writers[0], the others stay 0. */
static int store_tail_one(struct store_reader *r, const struct store_query *const *qs,
			  size_t nq, struct store_tail *t, store_tail_fn fn, void *ctx)
{
	uint64_t from = t->from;
	int ret;

	if (t->writers_set)
		t->from = t->writers[0] ? t->writers[0] : 1;
	ret = r->ops->tail(r, qs, nq, t, fn, ctx);
	t->from = from;
	if (ret == 0) {
		memset(t->writers, 0, STORE_TAIL_WRITERS * sizeof(*t->writers));
		t->writers[0] = t->next;
	}
	return ret;
}

int store_tail(struct store_reader *r, const struct store_query *const *qs, size_t nq,
	       struct store_tail *t, store_tail_fn fn, void *ctx)
{
	if (!r || !t || !fn || (nq && !qs))
		return -EINVAL;
	for (size_t i = 0; i < nq; i++)
		if (store_query_ok(qs[i]) < 0)
			return -EINVAL;
	if (t->writers && r->ops->tail_writers)
		return r->ops->tail_writers(r, qs, nq, t, fn, ctx);
	if (t->writers)
		return store_tail_one(r, qs, nq, t, fn, ctx);
	return r->ops->tail(r, qs, nq, t, fn, ctx);
}

int store_stats(struct store_reader *r, const struct store_query *q,
		int (*fn)(void *ctx, const struct store_stats_host *h, uint32_t cpu,
			  const char *key, uint64_t value),
		void *ctx)
{
	if (!r || !fn || (q && store_scope_ok(q->scope) < 0))
		return -EINVAL;
	return r->ops->stats(r, q, fn, ctx);
}

int store_hosts(struct store_reader *r, const struct store_query *q,
		int (*fn)(void *ctx, const struct store_host_info *h), void *ctx)
{
	if (!r || !fn || (q && (store_scope_ok(q->scope) < 0 || store_scope_ok(q->hosts) < 0)))
		return -EINVAL;
	return r->ops->hosts(r, q, fn, ctx);
}

int store_snapshots(struct store_reader *r, const struct store_query *q, uint64_t id,
		    int (*fn)(void *ctx, const struct store_snapshot *sn), void *ctx)
{
	if (!r || !fn || (q && (store_scope_ok(q->scope) < 0 || store_scope_ok(q->hosts) < 0)))
		return -EINVAL;
	return r->ops->snapshots(r, q, id, fn, ctx);
}

int store_drops(struct store_reader *r, const struct store_query *q,
		int (*fn)(void *ctx, const char *host, const char *system, const char *name,
			  const char *reason, uint64_t count),
		void *ctx)
{
	if (!r || !fn || (q && store_scope_ok(q->scope) < 0))
		return -EINVAL;
	return r->ops->drops(r, q, fn, ctx);
}

int store_sql(struct store_reader *r, const char *text, const struct store_scope *scope,
	      const struct store_sql_limits *lim, store_sql_fn fn, void *ctx)
{
	if (!r || !text || !lim || !fn || store_scope_ok(scope) < 0)
		return -EINVAL;
	return r->ops->sql(r, text, scope, lim, fn, ctx);
}

int store_losses(struct store_reader *r, const struct store_query *q,
		 int (*fn)(void *ctx, const struct store_loss_row *x), void *ctx)
{
	if (!r || !fn || !q || store_scope_ok(q->scope) < 0 || store_scope_ok(q->hosts) < 0 ||
	    (q->ncpus && !q->cpus))
		return -EINVAL;
	return r->ops->losses(r, q, fn, ctx);
}
