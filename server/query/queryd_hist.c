/*
 * queryd_hist.c - the histogram op of the query endpoint (queryd_hist.h).
 *
 * The spec comes from the client, so it is parsed again here
 * (hist_parse(): bounded, every error a sentence). Its fields are then
 * resolved against the event's stored fields as the kernel resolves a
 * trigger's against the event's format: `common_cpu` (or `cpu`/`CPU`
 * when the event has no such field) is the CPU, `COMM` (or `comm` or
 * `common_comm` when the event has no such field) the name the task had
 * at the event, as the filters' COMM, `host` (ours) the host's name,
 * `common_timestamp` (a key) the event's wall-clock ts,
 * `common_stacktrace` (a key) the event's kernel stack (the
 * ftrace:kernel_stack record after it, store_types.h's struct store_hist;
 * the frames named here from the host's kallsyms);
 * modifiers that compute (.log2, .buckets) or print numbers (.hex,
 * .sym, .execname) need a number; .execname only common_pid (the kernel
 * allows no other); vals are numbers. What the store computes is grouped
 * there (store_hist()); here each entry gets its names (.execname's comm,
 * .sym's symbol) and goes into the reply.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/hist.h"
#include "common/tc_error.h"
#include "server/query/queryd_hist.h"

#define QH_SYM_MAX	600
#define QH_STACK_DEPTH	16	/* the kernel's HIST_STACKTRACE_DEPTH */

/*
 * The column of field @name: its integer one when hosts sent it in several
 * kinds (the rows of the others have NULL there and count as no value).
 */
static int find_col(const struct store_schema *sc, const char *name)
{
	int any = -1;

	for (size_t i = 0; i < sc->ncols; i++) {
		if (strcmp(sc->cols[i].name, name))
			continue;
		if (sc->cols[i].kind == STORE_SIGNED || sc->cols[i].kind == STORE_UNSIGNED)
			return (int)i;
		if (any < 0)
			any = (int)i;
	}
	return any;
}

static bool is_number(const struct store_schema *sc, int col)
{
	return col == STORE_HIST_CPU || col == STORE_HIST_TS ||
	       (col >= 0 && (sc->cols[col].kind == STORE_SIGNED ||
			     sc->cols[col].kind == STORE_UNSIGNED));
}

/* The column of @f (a key when @key): 0 and *@col, or an error sentence in @msg. */
static int resolve(const struct store_schema *sc, const struct hist_field *f, bool key,
		   int *col, char *msg, size_t len)
{
	int c = f->stack ? -1 : find_col(sc, f->name);

	if (f->stack && store_field_is_stack(sc->system, sc->name, "caller")) {
		snprintf(msg, len, "--hist: %s:%s holds the stacks themselves: common_stacktrace "
			 "keys the events they follow", sc->system, sc->name);
		return TC_ERR_UNKNOWN_FIELD;
	} else if (f->stack) {
		c = STORE_HIST_STACK;
	} else if (c < 0 && key && !strcmp(f->name, "host"))
		c = STORE_HIST_HOST;
	else if (c < 0 && (!strcmp(f->name, "common_cpu") || !strcmp(f->name, "cpu") ||
			   !strcmp(f->name, "CPU")))
		c = STORE_HIST_CPU;
	else if (c < 0 && key && !strcmp(f->name, "common_timestamp"))
		c = STORE_HIST_TS;
	else if (c < 0 && key && (!strcmp(f->name, "COMM") || !strcmp(f->name, "comm") ||
				  !strcmp(f->name, "common_comm")))
		c = STORE_HIST_COMM;
	else if (c < 0 || sc->cols[c].kind == STORE_BLOB) {
		snprintf(msg, len, "--hist: %s:%s has no field '%s'%s", sc->system, sc->name,
			 f->name, c < 0 ? "" : " that can be a key or a value");
		return TC_ERR_UNKNOWN_FIELD;
	}
	if (!key && !is_number(sc, c)) {
		snprintf(msg, len, "--hist: value '%s' is not a number: vals are summed", f->name);
		return TC_ERR_TYPE_MISMATCH;
	}
	if (f->mod != HIST_MOD_NONE && !is_number(sc, c)) {
		snprintf(msg, len, "--hist: '%s.%s': %s is not a number", f->name,
			 hist_mod_name(f->mod), f->name);
		return TC_ERR_TYPE_MISMATCH;
	}
	if (f->mod == HIST_MOD_EXECNAME && strcmp(f->name, "common_pid")) {
		snprintf(msg, len, "--hist: '%s.execname': .execname applies to common_pid only "
			 "(as in the kernel)", f->name);
		return TC_ERR_TYPE_MISMATCH;
	}
	*col = c;
	return 0;
}

/* The reply's columns: see queryd_hist.h. */
static int reply_begin(const struct hist_spec *sp, const char *event, struct qmsg_writer **w)
{
	char names[HIST_KEYS_MAX * 2 + HIST_VALS_MAX + 1][HIST_NAME_MAX + 16];
	const char *cols[HIST_KEYS_MAX * 2 + HIST_VALS_MAX + 1];
	uint32_t n = 0;

	for (size_t i = 0; i < sp->nkeys; i++) {
		snprintf(names[n], sizeof(names[n]), "%s", sp->keys[i].name);
		cols[n] = names[n], n++;
		if (sp->keys[i].mod == HIST_MOD_EXECNAME || sp->keys[i].mod == HIST_MOD_SYM) {
			snprintf(names[n], sizeof(names[n]), "%s.%s", sp->keys[i].name,
				 hist_mod_name(sp->keys[i].mod));
			cols[n] = names[n], n++;
		}
	}
	cols[n++] = "hitcount";
	for (size_t i = 0; i < sp->nvals; i++)
		cols[n++] = sp->vals[i].name;
	return qmsg_reply_begin(w, event, n, cols);
}

struct qh_ctx {
	struct store_reader *st;
	const struct hist_spec *sp;
	struct qmsg_writer *w;
	uint32_t long_size;	/* of a stack's frames: 4 or 8 */
};

/*
 * The bytes of a long on the hosts of the stack records of format @fmt:
 * its caller[N]'s size over N (8 when the format does not say).
 */
static uint32_t stack_long_size(const char *fmt)
{
	const char *f = fmt ? strstr(fmt, " caller[") : NULL;
	unsigned long n = 0, size = 0;

	if (f && sscanf(f, " caller[%lu];%*[ \t]offset:%*u;%*[ \t]size:%lu;", &n, &size) == 2 &&
	    n && (size / n == 4 || size / n == 8))
		return (uint32_t)(size / n);
	return 8;
}

/*
 * A stack key's frames as the kernel's hist file names them (%pS), one a
 * line: "NAME+0xOFF/0xSIZE" from the host's kallsyms (store_symbol_sized()
 * says how SIZE is measured), "0xADDR" where no symbol covers it; up to a
 * 0 (the kernel's end of a hist stack) or a -1 (a stack record's). The
 * frames are in the reader's byte order, as the row printer reads them.
 */
static void put_stack(struct qh_ctx *c, const struct store_hist_entry *e, size_t i)
{
	const unsigned char *p = e->keys[i].blob.p;
	size_t n = e->keys[i].blob.len / c->long_size, at = 0;
	char text[QH_STACK_DEPTH * (QH_SYM_MAX + 8)], name[QH_SYM_MAX];

	text[0] = '\0';
	for (size_t f = 0; f < n && f < QH_STACK_DEPTH; f++) {
		uint64_t a = 0;
		uint32_t a4;

		if (c->long_size == 4) {
			memcpy(&a4, p + f * 4, 4);
			a = a4 == UINT32_MAX ? UINT64_MAX : a4;
		} else {
			memcpy(&a, p + f * 8, 8);
		}
		if (a == 0 || a == UINT64_MAX)
			break;
		if (store_symbol_sized(c->st, e->host_id, -1, e->last_ts, a, name, sizeof(name)))
			snprintf(name, sizeof(name), "0x%llx", (unsigned long long)a);
		at += (size_t)snprintf(text + at, sizeof(text) - at, "%s%s", at ? "\n" : "", name);
		if (at >= sizeof(text))
			at = sizeof(text) - 1;
	}
	qmsg_put_str(c->w, text, at);
}

static void put_name(struct qh_ctx *c, const struct store_hist_entry *e, size_t i)
{
	const struct hist_field *f = &c->sp->keys[i];
	uint64_t v = (uint64_t)e->keys[i].i;
	char name[QH_SYM_MAX];

	if (f->mod == HIST_MOD_EXECNAME) {
		/* the kernel's save_comm(): pid 0 is "<idle>" */
		const char *comm = v == 0 ? "<idle>" : e->comm[i];

		if (comm)
			qmsg_put_str(c->w, comm, strlen(comm));
		else
			qmsg_put_nil(c->w);
	} else if (f->mod == HIST_MOD_SYM) {
		if (store_symbol_name(c->st, e->host_id, -1, e->last_ts, v, name,
				      sizeof(name)) == 0)
			qmsg_put_str(c->w, name, strcspn(name, "+"));
		else
			qmsg_put_nil(c->w);
	}
}

static int put_entry(void *arg, const struct store_hist_entry *e)
{
	struct qh_ctx *c = arg;

	for (size_t i = 0; i < c->sp->nkeys; i++) {
		if (c->sp->keys[i].stack)
			put_stack(c, e, i);
		else if (e->keys[i].kind == STORE_STRING)
			qmsg_put_str(c->w, e->keys[i].str.s, e->keys[i].str.len);
		else
			qmsg_put_uint(c->w, (uint64_t)e->keys[i].i);
		put_name(c, e, i);
	}
	qmsg_put_uint(c->w, e->hitcount);
	for (size_t i = 0; i < c->sp->nvals; i++)
		qmsg_put_uint(c->w, e->sums[i]);
	return 0;
}

/*
 * Resolve every field of @sp (a CPU is renamed common_cpu, as the kernel
 * prints it; the reply's columns carry the name); on an error, its reply
 * into @out and 1.
 */
static int resolve_all(const struct store_query *q, struct hist_spec *sp, int *kcol,
		       int *vcol, struct proto_buf *out)
{
	char msg[512];
	int ret = 0;

	for (size_t i = 0; ret == 0 && i < sp->nkeys; i++)
		ret = resolve(q->schema, &sp->keys[i], true, &kcol[i], msg, sizeof(msg));
	for (size_t i = 0; ret == 0 && i < sp->nvals; i++)
		ret = resolve(q->schema, &sp->vals[i], false, &vcol[i], msg, sizeof(msg));
	/* the kernel names the CPU common_cpu however it was asked for */
	for (size_t i = 0; ret == 0 && i < sp->nkeys; i++)
		if (kcol[i] == STORE_HIST_CPU)
			snprintf(sp->keys[i].name, sizeof(sp->keys[i].name), "common_cpu");
	for (size_t i = 0; ret == 0 && i < sp->nvals; i++)
		if (vcol[i] == STORE_HIST_CPU)
			snprintf(sp->vals[i].name, sizeof(sp->vals[i].name), "common_cpu");
	if (ret == 0)
		return 0;
	return qmsg_reply_error(ret, msg, -1, -1, out) ?: 1;
}

/*
 * For a common_stacktrace key: the stack records' schema into @h (the
 * caller's to free), or when none are stored an error reply into @out
 * and 1.
 */
static int stacks_of(struct store_reader *st, struct store_hist *h, struct qh_ctx *c,
		     struct store_schema **sc, struct proto_buf *out)
{
	bool want = false;
	int ret;

	for (size_t i = 0; i < h->spec->nkeys; i++)
		want |= h->spec->keys[i].stack;
	if (!want)
		return 0;
	ret = store_schema_get(st, "ftrace", "kernel_stack", sc);
	for (size_t i = 0; ret == 0 && i < (*sc)->ncols; i++)
		if (store_col_is_stack(*sc, i)) {
			h->stacks = *sc;
			h->stack_col = i;
		}
	if (ret == TC_ERR_UNKNOWN_EVENT || (ret == 0 && !h->stacks))
		return qmsg_reply_error(TC_ERR_UNKNOWN_FIELD, "--hist: common_stacktrace: no kernel "
					"stacks are stored (traceagent --stacktrace, trace-cmd "
					"record -T)", -1, -1, out) ?: 1;
	if (ret < 0)
		return ret;
	c->long_size = stack_long_size((*sc)->format);
	h->stack_bytes = QH_STACK_DEPTH * c->long_size;
	return 0;
}

int queryd_hist_run(struct store_reader *st, const struct qmsg_request *r,
		    const struct store_query *q, struct proto_buf *out, uint64_t *rows)
{
	struct filter_error err = { 0 };
	struct store_hist_totals tot;
	int kcol[HIST_KEYS_MAX], vcol[HIST_VALS_MAX];
	struct hist_spec sp;
	struct qh_ctx c = { .st = st, .sp = &sp };
	struct store_hist h = { .spec = &sp, .key_col = kcol, .val_col = vcol,
				.offset = r->after_id,
				.limit = r->limit ? r->limit : QMSG_MAX_ROWS };
	struct store_schema *stacks = NULL;
	char event[512], msg[256];
	int ret = hist_parse(r->hist, &sp, &err);

	if (ret < 0) {
		snprintf(msg, sizeof(msg), "--hist: %s", err.msg);
		return qmsg_reply_error(ret, msg, -1, -1, out) ?: 1;
	}
	ret = resolve_all(q, &sp, kcol, vcol, out) ?: stacks_of(st, &h, &c, &stacks, out);
	if (ret != 0)
		goto out;
	snprintf(event, sizeof(event), "%s:%s", q->schema->system, q->schema->name);
	ret = reply_begin(&sp, event, &c.w);
	if (ret < 0)
		goto out;
	ret = store_hist(st, q, &h, put_entry, &c, &tot);
	if (ret < 0) {
		struct proto_buf junk;

		proto_buf_init(&junk);
		qmsg_reply_end(c.w, false, 0, 0, 0, &junk);
		proto_buf_free(&junk);
		goto out;
	}
	*rows = qmsg_reply_rows(c.w);
	qmsg_reply_hist(c.w, tot.entries, tot.dropped);
	ret = qmsg_reply_end(c.w, h.offset + *rows < tot.entries,
			     tot.max_ts < INT64_MAX ? tot.max_ts + 1 : INT64_MAX, 0, tot.hits, out);
out:
	store_schema_free(stacks);
	return ret;
}
