/*
 * fuzz_filter.c - libFuzzer target for common/filter.*, common/query.* and
 * the SQLite backend's filter compiler (server/store/sqlite_filter.*).
 *
 * Input: "STRING\nFILTER".  FILTER goes through filter_parse(), then (if it
 * parses) filter_bind() to a fixed schema, filter_eval() on a few fixed rows
 * plus one whose prev_comm is STRING, and sq_filter_to_sql().  The SQL is
 * run against the same rows in an in-memory SQLite database and must select
 * exactly the rows filter_eval() matched (skipped for non-ASCII input, where
 * byte and UTF-8 globbing legitimately differ; see sqlite_filter.h), and
 * every row it matched must hold each `FIELD == value` that sq_filter_sql.eq
 * lists. The whole input also goes through query_parse() and
 * filter_error_format().
 *
 * Sources: tests/fuzz/fuzz_filter.c common/filter.c common/query.c
 *          common/tc_error.c server/store/sqlite_filter.c; libs: -lsqlite3.
 */
#include "config.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "common/query.h"
#include "server/store/sqlite_filter.h"
#include "tests/fuzz/filter_fields.h"

static const char *const columns[] = {
	"common_pid", "prev_pid", "prio", "flags", "len", "prev_comm", "delta", "state",
};

struct row {
	int64_t num[8];		/* by field index; prev_comm's slot unused */
	const char *comm;
	uint64_t cpu;
	const char *task;
};

static struct row rows[] = {
	{ { 0, 0, 0, 0, 0, 0, 0, 0 }, "bash", 0, "bash" },
	{ { -1, INT32_MIN, -128, -1, 65535, 0, INT64_MIN, 255 }, "a[b", 1, "sshd" },
	{ { 1, INT32_MAX, 127, INT64_MIN, 1, 0, INT64_MAX, 128 }, "x]y^-", 3, "kworker/0:1" },
	{ { 17, 5, -1, 5, 256, 0, -1, 4 }, "", 2, "" },
	{ { 100, 100, 120, INT64_MAX, 255, 0, 5, 1 }, "ba*sh?\\", 1, "swapper/1" },
	{ { 0, 0, 0, 0, 0, 0, 0, 0 }, NULL, 0, "fuzz" },	/* comm from the input */
};

static int get(void *ctx, int idx, struct filter_value *v)
{
	const struct row *r = ctx;

	if (idx == FILTER_FIELD_CPU) {
		*v = (struct filter_value){ .kind = FILTER_UNSIGNED, .u = r->cpu };
	} else if (idx == FILTER_FIELD_COMM || idx == 5) {
		*v = (struct filter_value){ .kind = FILTER_STRING };
		v->str.s = idx == 5 ? r->comm : r->task;
		v->str.len = strlen(v->str.s);
	} else if (idx >= 0 && idx < (int)ARRAY_SIZE(fields)) {
		*v = (struct filter_value){ .kind = fields[idx].kind, .i = r->num[idx] };
	} else {
		return -1;
	}
	return 0;
}

static const char *column(void *ctx, int idx)
{
	if (idx == FILTER_FIELD_CPU)
		return "cpu";
	if (idx == FILTER_FIELD_COMM)
		return "task";
	return idx >= 0 && idx < (int)ARRAY_SIZE(columns) ? columns[idx] : NULL;
}

static sqlite3 *db;

static void db_fill(void)
{
	sqlite3_stmt *st = NULL;
	size_t k, c;

	if (!db) {
		if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
		    sqlite3_exec(db, "CREATE TABLE ev(id INTEGER, common_pid INTEGER, "
				 "prev_pid INTEGER, prio INTEGER, flags INTEGER, len INTEGER, "
				 "prev_comm TEXT, delta INTEGER, state INTEGER, cpu INTEGER, "
				 "task TEXT)", NULL, NULL, NULL) != SQLITE_OK)
			abort();
	}
	sqlite3_exec(db, "DELETE FROM ev", NULL, NULL, NULL);
	if (sqlite3_prepare_v2(db, "INSERT INTO ev VALUES(?,?,?,?,?,?,?,?,?,?,?)", -1, &st,
			       NULL) != SQLITE_OK)
		abort();
	for (k = 0; k < ARRAY_SIZE(rows); k++) {
		sqlite3_bind_int64(st, 1, (int64_t)k);
		for (c = 0; c < 8; c++)
			sqlite3_bind_int64(st, (int)c + 2, rows[k].num[c]);
		sqlite3_bind_text(st, 7, rows[k].comm, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 10, (int64_t)rows[k].cpu);
		sqlite3_bind_text(st, 11, rows[k].task, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE)
			abort();
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
}

/* run @s and return the selected rows as a bit mask */
static uint64_t db_select(const struct sq_filter_sql *s)
{
	sqlite3_stmt *st = NULL;
	uint64_t mask = 0;
	char *q = sqlite3_mprintf("SELECT id FROM ev WHERE %s", s->where);
	size_t k;
	int rc;

	if (!q || sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "bad SQL: %s: %s\n", q, sqlite3_errmsg(db));
		abort();
	}
	for (k = 0; k < s->nbinds; k++) {
		if (s->binds[k].kind == FILTER_STRING)
			sqlite3_bind_text(st, (int)k + 1, s->binds[k].str.s,
					  (int)s->binds[k].str.len, SQLITE_STATIC);
		else
			sqlite3_bind_int64(st, (int)k + 1, s->binds[k].i);
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		mask |= UINT64_C(1) << sqlite3_column_int64(st, 0);
	if (rc != SQLITE_DONE)
		abort();
	sqlite3_finalize(st);
	sqlite3_free(q);
	return mask;
}

static bool is_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x80)
			return false;
	return true;
}

/* sq_filter_sql.eq's promise: every row the filter matched (@mask) has field == bind. */
static void check_eq(const struct sq_filter_sql *s, uint64_t mask)
{
	for (size_t e = 0; e < s->neq; e++) {
		int f = s->eq[e].field;
		const struct filter_value *b = &s->binds[s->eq[e].bind];

		if (f < 0 || f >= (int)ARRAY_SIZE(fields) || s->eq[e].bind >= s->nbinds)
			abort();
		for (size_t k = 0; k < ARRAY_SIZE(rows); k++) {
			if (!(mask >> k & 1))
				continue;
			if (f == 5 ? b->kind != FILTER_STRING || strlen(rows[k].comm) != b->str.len ||
				     memcmp(rows[k].comm, b->str.s, b->str.len) :
				     b->kind == FILTER_STRING || rows[k].num[f] != b->i) {
				fprintf(stderr, "row %zu matched but %s != bind %zu\n", k,
					fields[f].name, s->eq[e].bind);
				abort();
			}
		}
	}
}

static void run_filter(const char *text, const char *comm)
{
	struct filter_error err;
	struct sq_filter_sql s;
	struct filter *f = NULL, *d = NULL;
	uint64_t mask = 0;
	size_t k;
	int r;

	if (filter_parse(text, &f, &err))
		return;
	if (filter_bind(f, &schema, &err) || filter_dup(f, &d))
		goto out;
	rows[ARRAY_SIZE(rows) - 1].comm = comm;
	for (k = 0; k < ARRAY_SIZE(rows); k++) {
		r = filter_eval(f, get, &rows[k]);
		if (r < 0 || r != filter_eval(d, get, &rows[k]))
			abort();
		mask |= (uint64_t)r << k;
	}
	if (sq_filter_to_sql(f, column, NULL, &s))
		goto out;
	check_eq(&s, mask);
	if (is_ascii(text) && is_ascii(comm)) {
		db_fill();
		if (db_select(&s) != mask) {
			fprintf(stderr, "eval %#llx != SQL %#llx for '%s' (%s) comm '%s'\n",
				(unsigned long long)mask, (unsigned long long)db_select(&s),
				text, s.where, comm);
			abort();
		}
	}
	sq_filter_sql_free(&s);
out:
	filter_free(d);
	filter_free(f);
}

static void run_query(const char *text)
{
	struct filter_error err;
	struct query q;
	char buf[256];

	if (query_parse(text, &q, &err)) {
		filter_error_format(text, &err, buf, sizeof(buf));
		return;
	}
	if (q.filter && filter_bind(q.filter, &schema, &err)) {
		err.pos += q.filter_offset;
		filter_error_format(text, &err, buf, sizeof(buf));
	}
	query_free(&q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *nl;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	run_query(buf);
	nl = memchr(buf, '\n', size);
	if (nl) {
		*nl = '\0';
		run_filter(nl + 1, buf);
	} else {
		run_filter(buf, "bash");
	}
	free(buf);
	return 0;
}
