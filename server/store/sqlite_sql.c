/*
 * sqlite_sql.c - the user SQL surface of the SQLite backend: store_sql(),
 * for `traceq --sql`. The only code of the store that runs SQL text it did
 * not write; everything else reaches the store as struct store_query.
 *
 * How a statement runs, on the query worker's read-only connection:
 *
 * 1. The views (store_types.h, "user SQL"; sql/schema.sql, "User SQL views") are
 *    made as TEMP views on this connection, for this statement only: hosts,
 *    stats and drops, and the views of the event types whose name occurs
 *    in the statement's text (case aside; a superset of those it reads:
 *    a store of 10,000 types made 10,000 views per statement, 15 s). They
 *    are dropped afterwards, so a type stored meanwhile is there the next
 *    time.
 * 2. Learning: each view is compiled once (SELECT * FROM it) with an
 *    authorizer that notes every column of the database the view reads,
 *    with the view's name, which SQLite passes as the authorizer's 4th
 *    argument while it compiles a view's body. That list is what step 3
 *    allows, so no list of columns is kept by hand.
 * 3. The user's text is compiled with an authorizer (sqlite3_set_authorizer)
 *    that allows only: SELECT (and recursive CTEs); reads of the TEMP
 *    database (the views: nothing else can be there, as CREATE is refused);
 *    reads of the main database's columns that step 2 noted for the view
 *    being compiled (or no column at all, as SQLite reports a table read
 *    for count(*), of a table step 2 noted); and the functions of
 *    sq_sql_funcs[]. Everything else - INSERT, UPDATE, DELETE, CREATE,
 *    DROP, ATTACH, PRAGMA, transactions, load_extension(), a read of any
 *    other table or column - fails the compile, and the first thing refused
 *    is named in the error. So read-only is the engine's check, not a
 *    reading of the text. A CTE named like a view can read only what that
 *    view reads (the same rows the view shows).
 *    A second statement after ';' is refused before anything runs.
 * 4. It runs with a progress handler that stops it at the time limit,
 *    SQLITE_LIMIT_LENGTH at the value limit, and stops after max_rows rows.
 *    With a row limit (max_row), each of the statement's N result columns
 *    may take max_row / N bytes (at least SQ_SQL_VALUE_MIN, at most the
 *    value limit), set as SQLITE_LIMIT_LENGTH once the statement is
 *    compiled: SQLite refuses to build a bigger value (SQLITE_TOOBIG), so
 *    a row of a thousand 1 MB blobs is stopped at its first value, before
 *    it takes a gigabyte; and a row's values are summed before it is
 *    passed on (past the floor, N columns may add up to more).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "common/util.h"
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_read.h"
#include "server/store/sqlite_schema.h"
#include "server/store/sqlite_sql.h"
#include "server/store/sqlite_stacks.h"
#include "server/store/sqlite_util.h"

#define SQ_SQL_TICK	1000		/* VM steps between two looks at the clock */
#define SQ_SQL_VALUE	(1u << 20)	/* default bytes of one value */
/* a value may take at least this, whatever the row limit (a stored row's record) */
#define SQ_SQL_VALUE_MIN	(16u << 10)

/* A column of the main database a view reads (step 2). */
struct sq_learned {
	char *table;
	char *column;
	char *view;
};

/* An event type's view, before it is made. */
struct sq_evview {
	char *system;
	char *name;
	char *body;	/* "SELECT ... FROM main.table ..."; NULL: not named, not made */
};

struct sq_sql {
	struct sq_store *s;
	const char *text;	/* the statement */
	struct sq_evview *ev;
	size_t nev, capev;
	char **views;		/* the TEMP views made */
	size_t nviews, capviews;
	struct sq_learned *seen;
	size_t nseen, capseen;
	char **tables;		/* the main database's tables */
	size_t ntables, captables;
	bool learning;
	bool oom;
	char denied[300];	/* the first thing the authorizer refused */
	int64_t deadline;	/* util_now_ms(); 0: none */
	bool timed_out;
	uint32_t value_max;	/* bytes of one value, as SQLITE_LIMIT_LENGTH says */
	size_t ncols;		/* of the statement's rows */
};

/* The functions a statement may call: computations on values, nothing else. */
static const char *const sq_sql_funcs[] = {
	"abs", "avg", "ceil", "ceiling", "char", "coalesce", "concat", "concat_ws", "count",
	"cume_dist", "date", "datetime", "dense_rank", "exp", "first_value", "floor", "format",
	"glob", "group_concat", "hex", "ifnull", "iif", "instr", "julianday", "lag",
	"last_value", "lead", "length", "like", "likelihood", "likely", "ln", "log", "log10",
	"log2", "lower", "ltrim", "max", "min", "mod", "nth_value", "ntile", "nullif",
	"octet_length", "percent_rank", "pi", "pow", "power", "printf", "quote", "random",
	"randomblob", "rank", "replace", "round", "row_number", "rtrim", "sign", "sqrt",
	"strftime", "string_agg", "substr", "substring", "sum", "time", "total", "trim",
	"trunc", "typeof", "unhex", "unicode", "unixepoch", "unlikely", "upper", "zeroblob",
};

/* The fixed views: hosts, stats, drops. */
static const struct {
	const char *name;
	const char *body;
} sq_sql_fixed[] = {
	{ "hosts", "SELECT name AS host, machine_id, boot_id, kernel, ncpus, page_size,"
		   " trace_clock, clock_offset_ns, first_seen, last_seen, agent FROM main.hosts" },
	{ "stats", "SELECT h.name AS host, c.cpu AS cpu, c.pages, c.events, c.bytes,"
		   " c.agent_pages, c.agent_events, c.agent_bytes, c.overrun, c.dropped,"
		   " c.commit_overrun, c.dup_pages, c.resent_pages, c.lost_pages, c.lost_events,"
		   " c.pages_mmap, c.pages_splice, c.pages_read, c.copied_bytes, c.bad_pages,"
		   " c.bad_events, c.rate_held_pages, c.rate_held_ms, c.quota_held_pages,"
		   " c.quota_held_ms FROM main.cpus AS c JOIN main.hosts AS h ON h.id = c.host_id" },
	{ "drops", "SELECT coalesce(h.name, '') AS host, d.system AS system, d.name AS event,"
		   " d.reason AS reason, d.count AS count FROM main.drops AS d"
		   " LEFT JOIN main.hosts AS h ON h.id = d.host_id" },
};

static bool sq_name_in(const char *name, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcasecmp(v[i], name))
			return true;
	return false;
}

static bool sq_func_ok(const char *name)
{
	return name && sq_name_in(name, sq_sql_funcs, sizeof(sq_sql_funcs) / sizeof(*sq_sql_funcs));
}

/* Grow *@v (of @size-byte items) to hold @n + 1; false: no memory. */
static bool sq_grow(void **v, size_t *cap, size_t n, size_t size)
{
	void *p = util_grow(*v, cap, n, size, 16);

	if (p)
		*v = p;
	return p != NULL;
}

static void sq_learn(struct sq_sql *x, const char *table, const char *column, const char *view)
{
	struct sq_learned *l;

	if (!table || !column || !view ||
	    !sq_grow((void **)&x->seen, &x->capseen, x->nseen, sizeof(*x->seen))) {
		x->oom = x->oom || (table && column && view);
		return;
	}
	l = &x->seen[x->nseen];
	l->table = strdup(table);
	l->column = strdup(column);
	l->view = strdup(view);
	if (!l->table || !l->column || !l->view) {
		free(l->table);
		free(l->column);
		free(l->view);
		x->oom = true;
		return;
	}
	x->nseen++;
}

/*
 * Whether the main database's @table.@column may be read while @view (NULL:
 * none) is compiled: a column its view reads, or no column (a row count)
 * of a table some view reads.
 */
static bool sq_read_ok(const struct sq_sql *x, const char *table, const char *column,
		       const char *view)
{
	for (size_t i = 0; i < x->nseen; i++) {
		const struct sq_learned *l = &x->seen[i];

		if (strcasecmp(l->table, table))
			continue;
		if (!*column)
			return true;
		if (view && !strcasecmp(l->column, column) && !strcasecmp(l->view, view))
			return true;
	}
	return false;
}

/*
 * A row count (column "") of @table named without a database: SQLite
 * reports the name as written, which may be a view, a CTE, or a table of
 * the main database. Refused for the tables no view reads and SQLite's
 * own (sqlite_master...).
 */
static bool sq_count_ok(const struct sq_sql *x, const char *table)
{
	if (sq_read_ok(x, table, "", NULL))
		return true;
	return strncasecmp(table, "sqlite_", 7) &&
	       !sq_name_in(table, (const char *const *)x->tables, x->ntables);
}

/* Refuse, noting what (the first refusal is the one named). */
static int sq_deny(struct sq_sql *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int sq_deny(struct sq_sql *x, const char *fmt, ...)
{
	va_list ap;

	if (!x->denied[0]) {
		va_start(ap, fmt);
		vsnprintf(x->denied, sizeof(x->denied), fmt, ap);
		va_end(ap);
	}
	return SQLITE_DENY;
}

static const char *sq_action_name(int action)
{
	switch (action) {
	case SQLITE_INSERT: return "INSERT";
	case SQLITE_UPDATE: return "UPDATE";
	case SQLITE_DELETE: return "DELETE";
	case SQLITE_TRANSACTION: return "a transaction (BEGIN, COMMIT, ROLLBACK)";
	case SQLITE_SAVEPOINT: return "a SAVEPOINT";
	case SQLITE_DETACH: return "DETACH";
	case SQLITE_ANALYZE: return "ANALYZE";
	case SQLITE_REINDEX: return "REINDEX";
	case SQLITE_ALTER_TABLE: return "ALTER TABLE";
	default: return "a statement that is not a SELECT (CREATE, DROP, ...)";
	}
}

/* The authorizer (see the top of the file). */
static int sq_auth(void *arg, int action, const char *a, const char *b, const char *db,
		   const char *view)
{
	struct sq_sql *x = arg;

	if (x->learning) {
		if (action == SQLITE_READ && db && !strcmp(db, "main"))
			sq_learn(x, a, b, view);
		return SQLITE_OK;
	}
	switch (action) {
	case SQLITE_SELECT:
	case SQLITE_RECURSIVE:
		return SQLITE_OK;
	case SQLITE_READ:
		if (db && !strcmp(db, "temp"))
			return SQLITE_OK;
		if (db && !strcmp(db, "main") && a && b && sq_read_ok(x, a, b, view))
			return SQLITE_OK;
		if (!db && a && b && !*b && sq_count_ok(x, a))
			return SQLITE_OK;
		return sq_deny(x, "reading %s.%s (only the views hosts, stats, drops and one per"
			       " event may be read)", a ? a : "?", b ? b : "?");
	case SQLITE_FUNCTION:
		if (sq_func_ok(b))
			return SQLITE_OK;
		return sq_deny(x, "the function %s()", b ? b : "?");
	case SQLITE_INSERT:
	case SQLITE_UPDATE:
	case SQLITE_DELETE:
		if (a && !strncasecmp(a, "sqlite_", 7))	/* what CREATE and DROP write */
			return sq_deny(x, "a change of the schema (CREATE, DROP, ALTER)");
		return sq_deny(x, "%s", sq_action_name(action));
	case SQLITE_PRAGMA:
		return sq_deny(x, "PRAGMA %s", a ? a : "");
	case SQLITE_ATTACH:
		return sq_deny(x, "ATTACH %s", a ? a : "");
	default:
		return sq_deny(x, "%s", sq_action_name(action));
	}
}

/* ---- the views ---- */

/* The view column of field @name: itself, or field_NAME for a fixed column's name. */
static void sq_view_col(struct sq_buf *b, const char *name)
{
	static const char *const fixed[] = { "host", "cpu", "ts", "trace_ts", "common_cpu",
					      "common_comm" };
	struct sq_buf n = { 0 };

	if (!sq_name_in(name, fixed, sizeof(fixed) / sizeof(*fixed))) {
		sq_ident(b, name);
		return;
	}
	sq_buf_str(&n, "field_");
	sq_buf_str(&n, name);
	if (n.oom)
		b->oom = true;
	else
		sq_ident(b, n.s);
	free(n.s);
}

/* Event type @sc's view body, into @e->body. */
static int sq_ev_body(const struct store_schema *sc, struct sq_evview *e)
{
	struct sq_buf b = { 0 };
	int pid = sq_col_index(sc, "common_pid");

	sq_buf_str(&b, "SELECT h.name AS host, e.cpu AS cpu, e.ts AS ts, e.trace_ts AS trace_ts,"
		   " e.cpu AS common_cpu, ");
	/* the filters' COMM: computed only where a statement reads it */
	if (pid >= 0)
		sq_comm_expr(&b, "main.", sc->cols[pid].column);
	else
		sq_buf_str(&b, "'<...>'");
	sq_buf_str(&b, " AS common_comm");
	for (size_t i = 0; i < sc->ncols; i++) {
		bool again = false;

		for (size_t k = 0; k < i && !again; k++)
			again = !strcmp(sc->cols[k].name, sc->cols[i].name);
		sq_buf_str(&b, ", ");
		sq_col_read(&b, sc, i, "main.", "e.");
		sq_buf_str(&b, " AS ");
		/* a name's column of another kind (schema.sql): under the column's name */
		sq_view_col(&b, again ? sc->cols[i].column : sc->cols[i].name);
	}
	sq_buf_str(&b, " FROM main.");
	sq_ident(&b, sc->table);
	sq_buf_str(&b, " AS e JOIN main.hosts AS h ON h.id = e.host_id");
	if (b.oom) {
		free(b.s);
		return -ENOMEM;
	}
	e->body = b.s;
	return 0;
}

/* Note event type @sc (sq_schema_walk() callback: names only). */
static int sq_ev_note(void *ctx, const struct store_schema *sc)
{
	struct sq_sql *x = ctx;
	struct sq_evview *e;

	if (!sq_grow((void **)&x->ev, &x->capev, x->nev, sizeof(*x->ev)))
		return -ENOMEM;
	e = &x->ev[x->nev];
	e->system = strdup(sc->system);
	e->name = strdup(sc->name);
	e->body = NULL;
	if (!e->system || !e->name) {
		free(e->system);
		free(e->name);
		return -ENOMEM;
	}
	x->nev++;
	return 0;
}

/* The bodies of the views of the types whose name the statement's text holds. */
static int sq_ev_bodies(struct sq_sql *x)
{
	int ret = 0;

	for (size_t i = 0; ret == 0 && i < x->nev; i++) {
		struct sq_evview *e = &x->ev[i];
		struct store_schema *sc = NULL;

		if (!strcasestr(x->text, e->name))
			continue;
		ret = sq_schema_find(x->s, e->system, e->name, &sc);
		if (ret == 0)
			ret = sq_ev_body(sc, e);
		store_schema_free(sc);
	}
	return ret;
}

/* Make TEMP view @name AS @body, unless a view of that name is made already. */
static int sq_view_make(struct sq_sql *x, const char *name, const char *body)
{
	struct sq_buf b = { 0 };
	char *copy;
	int ret;

	if (sq_name_in(name, (const char *const *)x->views, x->nviews))
		return 0;
	if (!sq_grow((void **)&x->views, &x->capviews, x->nviews, sizeof(*x->views)))
		return -ENOMEM;
	sq_buf_str(&b, "CREATE TEMP VIEW ");
	sq_ident(&b, name);
	sq_buf_str(&b, " AS ");
	sq_buf_str(&b, body);
	copy = strdup(name);
	ret = b.oom || !copy ? -ENOMEM : sq_exec(x->s, b.s);
	if (ret == 0)
		x->views[x->nviews++] = copy;
	else
		free(copy);
	free(b.s);
	return ret;
}

/* Whether no other event type than @k's is named @k's name (case aside). */
static bool sq_ev_unique(const struct sq_sql *x, size_t k)
{
	for (size_t i = 0; i < x->nev; i++)
		if (i != k && !strcasecmp(x->ev[i].name, x->ev[k].name))
			return false;
	return true;
}

static int sq_views_make(struct sq_sql *x)
{
	int ret = 0;
	size_t i;

	for (i = 0; ret == 0 && i < sizeof(sq_sql_fixed) / sizeof(*sq_sql_fixed); i++)
		ret = sq_view_make(x, sq_sql_fixed[i].name, sq_sql_fixed[i].body);
	for (i = 0; ret == 0 && i < x->nev; i++) {
		struct sq_buf n = { 0 };

		if (!x->ev[i].body)
			continue;
		sq_buf_str(&n, x->ev[i].system);
		sq_buf_str(&n, "__");
		sq_buf_str(&n, x->ev[i].name);
		ret = n.oom ? -ENOMEM : sq_view_make(x, n.s, x->ev[i].body);
		free(n.s);
	}
	for (i = 0; ret == 0 && i < x->nev; i++)
		if (x->ev[i].body && sq_ev_unique(x, i))
			ret = sq_view_make(x, x->ev[i].name, x->ev[i].body);
	return ret;
}

/* The main database's tables and views, for sq_count_ok(). */
static int sq_tables_note(struct sq_sql *x)
{
	sqlite3_stmt *st = NULL;
	int ret = sq_prepare(x->s, "SELECT name FROM main.sqlite_master"
				   " WHERE type IN ('table', 'view')", &st);

	while (ret == 0 && sqlite3_step(st) == SQLITE_ROW) {
		char *name = sq_dup_col(st, 0);

		if (!name || !sq_grow((void **)&x->tables, &x->captables, x->ntables,
				      sizeof(*x->tables))) {
			free(name);
			ret = -ENOMEM;
			break;
		}
		x->tables[x->ntables++] = name;
	}
	sqlite3_finalize(st);
	return ret;
}

/* Step 2: what each view reads. */
static int sq_views_learn(struct sq_sql *x)
{
	sqlite3 *db = x->s->db;
	int ret = 0;

	x->learning = true;
	sqlite3_set_authorizer(db, sq_auth, x);
	for (size_t i = 0; ret == 0 && i < x->nviews; i++) {
		struct sq_buf b = { 0 };
		sqlite3_stmt *st = NULL;

		sq_buf_str(&b, "SELECT * FROM temp.");
		sq_ident(&b, x->views[i]);
		ret = b.oom ? -ENOMEM : sq_prepare(x->s, b.s, &st);
		sqlite3_finalize(st);
		free(b.s);
	}
	sqlite3_set_authorizer(db, NULL, NULL);
	x->learning = false;
	return ret == 0 && x->oom ? -ENOMEM : ret;
}

static void sq_sql_free(struct sq_sql *x)
{
	sqlite3 *db = x->s->db;

	sqlite3_set_authorizer(db, NULL, NULL);
	for (size_t i = 0; i < x->nviews; i++) {
		struct sq_buf b = { 0 };

		sq_buf_str(&b, "DROP VIEW IF EXISTS temp.");
		sq_ident(&b, x->views[i]);
		if (!b.oom)
			sqlite3_exec(db, b.s, NULL, NULL, NULL);
		free(b.s);
		free(x->views[i]);
	}
	for (size_t i = 0; i < x->nev; i++) {
		free(x->ev[i].system);
		free(x->ev[i].name);
		free(x->ev[i].body);
	}
	for (size_t i = 0; i < x->nseen; i++) {
		free(x->seen[i].table);
		free(x->seen[i].column);
		free(x->seen[i].view);
	}
	for (size_t i = 0; i < x->ntables; i++)
		free(x->tables[i]);
	free(x->tables);
	free(x->views);
	free(x->ev);
	free(x->seen);
}

/* ---- the statement ---- */

static int sq_progress(void *arg)
{
	struct sq_sql *x = arg;

	if (x->deadline && util_now_ms() >= x->deadline)
		x->timed_out = true;
	return x->timed_out || sq_stop_due(x->s);
}

/*
 * Step 3: compile @text into *@st under the authorizer; refuse text after
 * the first statement. Return: 0; -EACCES; TC_ERR_SYNTAX; TC_ERR_DB.
 */
static int sq_sql_prepare(struct sq_sql *x, const char *text, sqlite3_stmt **st)
{
	sqlite3 *db = x->s->db;
	sqlite3_stmt *more = NULL;
	const char *tail = NULL;
	int rc;

	rc = sqlite3_prepare_v2(db, text, -1, st, &tail);
	if (rc == SQLITE_OK && !*st)
		return sq_errf(x->s, TC_ERR_SYNTAX, "--sql: no statement in the text");
	if (rc == SQLITE_OK && tail && *tail) {
		rc = sqlite3_prepare_v2(db, tail, -1, &more, NULL);
		sqlite3_finalize(more);
		if (rc != SQLITE_OK || more)
			return sq_errf(x->s, TC_ERR_SYNTAX,
				       "--sql takes one statement: more text follows at"
				       " byte %zu", (size_t)(tail - text));
	}
	if (rc == SQLITE_OK && !sqlite3_stmt_readonly(*st))
		rc = SQLITE_AUTH;
	if (rc == SQLITE_OK)
		return 0;
	if (x->denied[0] || rc == SQLITE_AUTH)
		return sq_errf(x->s, -EACCES, "not allowed in --sql: %s",
			       x->denied[0] ? x->denied : "a statement that writes");
	if (rc == SQLITE_NOMEM)
		return -ENOMEM;
	return sq_errf(x->s, TC_ERR_SYNTAX, "--sql: %s", sqlite3_errmsg(db));
}

static void sq_sql_value(sqlite3_stmt *st, int i, struct store_sql_value *v)
{
	memset(v, 0, sizeof(*v));
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		v->kind = STORE_SQL_INT;
		v->i = sqlite3_column_int64(st, i);
		break;
	case SQLITE_FLOAT:
		v->kind = STORE_SQL_REAL;
		v->d = sqlite3_column_double(st, i);
		break;
	case SQLITE_TEXT:
		v->kind = STORE_SQL_TEXT;
		v->p = sqlite3_column_text(st, i);
		v->len = (size_t)sqlite3_column_bytes(st, i);
		break;
	case SQLITE_BLOB:
		v->kind = STORE_SQL_BLOB;
		v->p = sqlite3_column_blob(st, i);
		v->len = (size_t)sqlite3_column_bytes(st, i);
		break;
	default:
		v->kind = STORE_SQL_NULL;
	}
}

/* What a failed step means. */
static int sq_step_error(struct sq_sql *x, const struct store_sql_limits *lim, int rc)
{
	if (x->timed_out)
		return sq_errf(x->s, TC_ERR_TIMEOUT,
			       "--sql stopped at the time limit of %lld ms",
			       (long long)lim->time_ms);
	if (x->s->stopped)
		return sq_err(x->s, TC_ERR_DB, "--sql");
	if (rc == SQLITE_TOOBIG && lim->max_row && x->value_max < (lim->max_value ?: SQ_SQL_VALUE))
		return sq_errf(x->s, TC_ERR_TOO_LONG,
			       "--sql: a value over the limit of %u bytes (an answer's %llu"
			       " bytes shared by the statement's %zu columns)", x->value_max,
			       (unsigned long long)lim->max_row, x->ncols);
	if (rc == SQLITE_TOOBIG)
		return sq_errf(x->s, TC_ERR_TOO_LONG,
			       "--sql: a value over the limit of %u bytes", x->value_max);
	if (rc == SQLITE_AUTH)
		return sq_errf(x->s, -EACCES, "not allowed in --sql: %s", x->denied);
	if (rc == SQLITE_NOMEM)
		return -ENOMEM;
	return sq_err(x->s, TC_ERR_DB, "--sql");
}

/* Step 4: run @st, passing rows to @fn. */
static int sq_sql_rows(struct sq_sql *x, sqlite3_stmt *st, const struct store_sql_limits *lim,
		       store_sql_fn fn, void *ctx)
{
	size_t ncols = (size_t)sqlite3_column_count(st), i;
	const char **names = calloc(ncols + 1, sizeof(*names));
	struct store_sql_value *vals = calloc(ncols + 1, sizeof(*vals));
	uint64_t n = 0;
	int rc, ret = 0;

	if (!names || !vals) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ncols; i++) {
		names[i] = sqlite3_column_name(st, (int)i);
		if (!names[i]) {
			ret = -ENOMEM;
			goto out;
		}
	}
	ret = fn(ctx, ncols, names, NULL);
	if (ret < 0)
		goto out;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t bytes = 0;

		if (lim->max_rows && n == lim->max_rows) {
			ret = 1;
			goto out;
		}
		for (i = 0; i < ncols; i++) {
			sq_sql_value(st, (int)i, &vals[i]);
			bytes += vals[i].len;
		}
		if (lim->max_row && bytes > lim->max_row) {
			ret = sq_errf(x->s, TC_ERR_TOO_LONG,
				      "--sql: a row of %llu bytes, over the limit of %llu"
				      " bytes of one answer", (unsigned long long)bytes,
				      (unsigned long long)lim->max_row);
			goto out;
		}
		ret = fn(ctx, ncols, names, vals);
		n++;
		if (ret < 0)
			goto out;
	}
	if (rc != SQLITE_DONE)
		ret = sq_step_error(x, lim, rc);
out:
	free(names);
	free(vals);
	return ret;
}

/*
 * The bytes one value of @x's statement may take: the value limit, or less
 * with a row limit, shared by its columns (step 4).
 */
static uint32_t sq_value_max(const struct sq_sql *x, const struct store_sql_limits *lim)
{
	uint64_t v = lim->max_value ? lim->max_value : SQ_SQL_VALUE, share;

	if (!lim->max_row || !x->ncols)
		return (uint32_t)v;
	share = lim->max_row / x->ncols;
	if (share < SQ_SQL_VALUE_MIN)
		share = SQ_SQL_VALUE_MIN;
	return (uint32_t)(share < v ? share : v);
}

/* Steps 3 and 4 under the limits; the connection's limits are restored after. */
static int sq_sql_run(struct sq_sql *x, const char *text, const struct store_sql_limits *lim,
		      store_sql_fn fn, void *ctx)
{
	sqlite3 *db = x->s->db;
	int len;
	sqlite3_stmt *st = NULL;
	int ret;

	x->value_max = sq_value_max(x, lim);
	len = sqlite3_limit(db, SQLITE_LIMIT_LENGTH, (int)x->value_max);
	x->deadline = lim->time_ms > 0 ? util_now_ms() + lim->time_ms : 0;
	sqlite3_set_authorizer(db, sq_auth, x);
	sqlite3_progress_handler(db, SQ_SQL_TICK, sq_progress, x);
	ret = sq_sql_prepare(x, text, &st);
	if (ret == 0) {
		/* the values of a row share the row limit: a value's limit is known now */
		x->ncols = (size_t)sqlite3_column_count(st);
		x->value_max = sq_value_max(x, lim);
		sqlite3_limit(db, SQLITE_LIMIT_LENGTH, (int)x->value_max);
		ret = sq_sql_rows(x, st, lim, fn, ctx);
	}
	sqlite3_finalize(st);
	sq_stop_handler(x->s);	/* every read's again */
	sqlite3_set_authorizer(db, NULL, NULL);
	sqlite3_limit(db, SQLITE_LIMIT_LENGTH, len);
	return ret;
}

static int sq_sql(struct store_reader *r, const char *text, const struct store_scope *scope,
		  const struct store_sql_limits *lim, store_sql_fn fn, void *ctx)
{
	struct sq_store *s = sq_reader_of(r);
	struct sq_sql x = { .s = s, .text = text };
	int ret = sq_reader_enter(s);

	if (ret < 0)
		return ret;
	if (scope)
		return sq_errf(s, -EACCES,
			       "--sql is not available to an identity with a scope:"
			       " its views are not restricted by host");
	if (!s->db)
		return sq_errf(s, TC_ERR_DB, "no database open");
	ret = sq_schema_walk(s, NULL, false, sq_ev_note, &x);
	if (ret == TC_ERR_UNKNOWN_EVENT)
		ret = 0;
	if (ret == 0)
		ret = sq_ev_bodies(&x);
	if (ret == 0)
		ret = sq_tables_note(&x);
	if (ret == 0)
		ret = sq_views_make(&x);
	if (ret == 0)
		ret = sq_views_learn(&x);
	if (ret == 0)
		ret = sq_sql_run(&x, text, lim, fn, ctx);
	sq_sql_free(&x);
	return ret;
}

void sq_sql_ops(struct store_reader_ops *r)
{
	r->sql = sq_sql;
}
