/*
 * sqlite_util.c - the bottom of the SQLite backend (sqlite_util.h): error
 * messages, SQL text, statements and the statement cache, the stop of a
 * read. Every value reaches SQLite through a bound parameter; identifiers
 * (table and column names derived from event formats) are always
 * double-quoted with embedded quotes doubled (sq_ident()).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "common/util.h"
#include "server/store/sqlite_errors.h"
#include "server/store/sqlite_util.h"

/* ---- errors ---- */

int sq_errf(struct sq_store *s, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->h->errmsg, sizeof(s->h->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

int sq_err(struct sq_store *s, int err, const char *what)
{
	sqlite3 *db = s->db;
	char why[STORE_ERRMSG_MAX];
	size_t n = strcspn(what, ";");

	if (s->stopped && db && (sqlite3_errcode(db) == SQLITE_INTERRUPT || err == TC_ERR_DB))
		return sq_errf(s, s->stopped, "%s: %s", what, s->stopped == -ECANCELED ?
			       "stopped: the asker went away" :
			       "stopped at the time limit");
	sq_explain(db, db ? sqlite3_extended_errcode(db) : SQLITE_NOMEM, why, sizeof(why));
	if (n <= 40 && !what[n])
		return sq_errf(s, err, "%s: %s", what, why);
	/* SQL text: the reason first, then where, shortened */
	return sq_errf(s, err, "%s (running: %.*s%s)", why, (int)(n < 40 ? n : 40),
		       what, what[n] || n > 40 ? "..." : "");
}

/* ---- SQL text ---- */

void sq_buf_add(struct sq_buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *p = realloc(b->s, cap);

		if (!p) {
			b->oom = true;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void sq_buf_str(struct sq_buf *b, const char *s)
{
	sq_buf_add(b, s, strlen(s));
}

void sq_ident(struct sq_buf *b, const char *name)
{
	sq_buf_add(b, "\"", 1);
	for (const char *p = name; *p; p++) {
		if (*p == '"')
			sq_buf_add(b, "\"\"", 2);
		else
			sq_buf_add(b, p, 1);
	}
	sq_buf_add(b, "\"", 1);
}

/* ---- statements ---- */

int sq_exec(struct sq_store *s, const char *sql)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return sq_err(s, TC_ERR_DB, sql);
	return 0;
}

int sq_prepare(struct sq_store *s, const char *sql, sqlite3_stmt **st)
{
	const char *tail = NULL;

	if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st,
			       &tail) != SQLITE_OK)
		return sq_err(s, TC_ERR_DB, "prepare");
	if (tail && *tail) {
		sqlite3_finalize(*st);
		*st = NULL;
		return sq_errf(s, TC_ERR_DB, "trailing text after the statement");
	}
	return 0;
}

int sq_prepare_cached(struct sq_store *s, const char *sql, sqlite3_stmt **st)
{
	struct sq_cached *c, *victim = NULL;
	size_t n = sizeof(s->cache) / sizeof(s->cache[0]);
	uint64_t hash = 14695981039346656037ull;	/* FNV-1a */
	char *text;
	int ret;

	for (const char *p = sql; *p; p++)
		hash = (hash ^ (unsigned char)*p) * 1099511628211ull;
	for (size_t i = 0; i < n; i++) {
		c = &s->cache[i];
		if (c->out)
			continue;
		if (c->st && c->hash == hash && !strcmp(c->sql, sql)) {
			sqlite3_reset(c->st);
			sqlite3_clear_bindings(c->st);
			c->used = ++s->cache_clock;
			c->out = true;
			*st = c->st;
			return 0;
		}
		/* an empty slot first, else the least recently used */
		if (!victim || (victim->st && (!c->st || c->used < victim->used)))
			victim = c;
	}
	ret = sq_prepare(s, sql, st);
	if (ret < 0 || !victim || !(text = strdup(sql)))
		return ret;	/* not kept: sq_release() finalizes it */
	sqlite3_finalize(victim->st);
	free(victim->sql);
	*victim = (struct sq_cached){ .sql = text, .hash = hash, .st = *st,
				      .used = ++s->cache_clock, .out = true };
	return 0;
}

void sq_release(struct sq_store *s, sqlite3_stmt *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < sizeof(s->cache) / sizeof(s->cache[0]); i++)
		if (s->cache[i].st == st) {
			sqlite3_reset(st);
			s->cache[i].out = false;
			return;
		}
	sqlite3_finalize(st);
}

void sq_cache_free(struct sq_store *s)
{
	for (size_t i = 0; i < sizeof(s->cache) / sizeof(s->cache[0]); i++) {
		sqlite3_finalize(s->cache[i].st);
		free(s->cache[i].sql);
		s->cache[i] = (struct sq_cached){ 0 };
	}
}

int sq_run(struct sq_store *s, sqlite3_stmt *st, bool once)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	rc = rc == SQLITE_DONE ? 0 : sq_err(s, TC_ERR_DB, "step");
	if (once)
		sqlite3_finalize(st);
	else
		sqlite3_reset(st);
	return rc;
}

void sq_bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

char *sq_dup_col(sqlite3_stmt *st, int i)
{
	const char *v = (const char *)sqlite3_column_text(st, i);

	return strdup(v ? v : "");
}

int sq_int1(struct sq_store *s, const char *sql, int64_t arg, int64_t dflt, int64_t *out)
{
	sqlite3_stmt *st;
	int ret = sq_prepare_cached(s, sql, &st);
	int rc;

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, arg);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_type(st, 0) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, 0);
	else if (rc == SQLITE_DONE)
		*out = dflt;
	else
		ret = sq_err(s, TC_ERR_DB, "ts_blocks");
	sq_release(s, st);
	return ret;
}

int sq_bind_where(struct sq_store *s, sqlite3_stmt *st, const struct sq_bind *b, size_t nb)
{
	int p = 0, np = sqlite3_bind_parameter_count(st);

	for (size_t i = 0; i < nb; i++) {
		int rc;

		while (++p <= np && sqlite3_bind_parameter_name(st, p))
			;
		if (p > np)
			return sq_errf(s, TC_ERR_DB, "bind: more values than parameters");

		switch (b[i].kind) {
		case STORE_SIGNED:
		case STORE_UNSIGNED:
			rc = sqlite3_bind_int64(st, p, b[i].i);
			break;
		case STORE_STRING:
			rc = sqlite3_bind_text(st, p, b[i].s, (int)b[i].len, SQLITE_TRANSIENT);
			break;
		default:
			rc = sqlite3_bind_blob(st, p, b[i].s, (int)b[i].len, SQLITE_TRANSIENT);
		}
		if (rc != SQLITE_OK)
			return sq_err(s, TC_ERR_DB, "bind");
	}
	return 0;
}

/* ---- stopping reads ---- */

#define SQ_STOP_TICK	4096	/* VM steps between two checks */

int sq_stop_due(struct sq_store *s)
{
	if (s->rstop.cancel && *s->rstop.cancel)
		s->stopped = -ECANCELED;
	else if (s->rstop.deadline_ms && util_now_ms() >= s->rstop.deadline_ms)
		s->stopped = TC_ERR_TIMEOUT;
	return s->stopped != 0;
}

static int sq_stop_progress(void *arg)
{
	return sq_stop_due(arg);
}

void sq_stop_handler(struct sq_store *s)
{
	if (s->db)
		sqlite3_progress_handler(s->db, SQ_STOP_TICK, sq_stop_progress, s);
}

int sq_run_ints(struct sq_store *s, sqlite3_stmt *st, bool once, const int64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sqlite3_bind_int64(st, (int)i + 1, v[i]);
	return sq_run(s, st, once);
}
