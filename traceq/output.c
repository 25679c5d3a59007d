/*
 * output.c - traceq's JSON, CSV and field=value layouts, and the one
 * namespace of keys JSON and CSV share (see output.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "traceq/output.h"

int out_format_parse(const char *s, enum out_format *f)
{
	static const char *const names[] = {
		[OUT_TEXT] = "text", [OUT_KERNEL] = "kernel", [OUT_FIELDS] = "fields",
		[OUT_CSV] = "csv", [OUT_JSON] = "json",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*f = (enum out_format)i;
			return 0;
		}
	return -1;
}

/* Reply columns 0..5: host cpu ts trace_ts pid comm (QMSG_META_COLS). */
static const char *const meta_keys[QMSG_META_COLS] = {
	"host", "cpu", "ts", "trace_ts", "pid", "comm"
};

static bool is_sym_col(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && !strcmp(name + n - 4, "_sym");
}

static bool key_taken(const struct out_keys *k, const char *name)
{
	if (k->event_key && !strcmp(k->event_key, name))
		return true;
	for (uint32_t i = 0; i < k->n; i++)
		if (k->key[i] && !strcmp(k->key[i], name))
			return true;
	return false;
}

/* @name, with as many leading '_' as it takes to be unique in @k. */
static char *key_unique(const struct out_keys *k, const char *name)
{
	size_t len = strlen(name), pre = 0;
	char *s = malloc(len + 1);

	while (s) {
		memset(s, '_', pre);
		memcpy(s + pre, name, len + 1);
		if (!key_taken(k, s))
			return s;
		free(s);
		s = malloc(len + ++pre + 1);
	}
	return NULL;
}

/* Which column names the key @i claims, in the order names are claimed. */
static const char *col_name(const struct qmsg_reply *rep, uint32_t i)
{
	return i < QMSG_META_COLS ? meta_keys[i] : rep->cols[i];
}

static bool has_col(const struct qmsg_reply *rep, const char *name)
{
	for (uint32_t i = QMSG_META_COLS; i < rep->ncols; i++)
		if (!strcmp(rep->cols[i], name))
			return true;
	return false;
}

/*
 * Event fields claim their names first, in column order; then ours:
 * event, host, cpu, ts, trace_ts, (pid,) comm, the _sym columns.
 */
int out_keys_make(const struct qmsg_reply *rep, struct out_keys *k)
{
	bool pid_too = !has_col(rep, "common_pid");
	uint32_t i;

	memset(k, 0, sizeof(*k));
	k->key = calloc(rep->ncols + 1, sizeof(*k->key));
	if (!k->key)
		return -ENOMEM;
	k->n = rep->ncols;
	for (i = QMSG_META_COLS; i < rep->ncols; i++)
		if (!is_sym_col(rep->cols[i]) && !(k->key[i] = key_unique(k, rep->cols[i])))
			goto oom;
	if (!(k->event_key = key_unique(k, "event")))
		goto oom;
	for (i = 0; i < rep->ncols; i++) {
		if (k->key[i] || (i == 4 && !pid_too) ||
		    (i >= QMSG_META_COLS && !is_sym_col(rep->cols[i])))
			continue;
		if (!(k->key[i] = key_unique(k, col_name(rep, i))))
			goto oom;
	}
	return 0;
oom:
	out_keys_free(k);
	return -ENOMEM;
}

void out_keys_free(struct out_keys *k)
{
	for (uint32_t i = 0; k->key && i < k->n; i++)
		free(k->key[i]);
	free(k->key);
	free(k->event_key);
	memset(k, 0, sizeof(*k));
}

const char *out_comm(const struct qmsg_value *row, char buf[OUT_COMM_MAX])
{
	if (row[5].kind == QV_STR)
		return row[5].s.p;
	if (qmsg_value_int(&row[4]) == 0 && row[4].kind != QV_NIL) {
		snprintf(buf, OUT_COMM_MAX, "swapper/%" PRId64, qmsg_value_int(&row[1]));
		return buf;
	}
	return NULL;
}

/*
 * The inside of a JSON string (output.h): exact (a parser gives back the
 * bytes), with every control character as \\uXXXX so that the text itself
 * drives no terminal: C0 and DEL, and the UTF-8 of C1 (U+0080..U+009F,
 * e.g. U+009B, CSI) and of the line and paragraph separators U+2028/9.
 * Bytes that are not UTF-8 stay as they are (JSON has no escape for a byte).
 */
void out_json_text(FILE *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len; i++) {
		size_t run = i;

		/* bytes that stay as they are go out in runs (a systrace line is mostly those) */
		while (run < len && p[run] >= 0x20 && p[run] != 0x7f && p[run] != '"' &&
		       p[run] != '\\' && p[run] != 0xc2 && p[run] != 0xe2)
			run++;
		if (run > i) {
			fwrite(p + i, 1, run - i, f);
			i = run - 1;
			continue;
		}
		if (p[i] == '"' || p[i] == '\\') {
			fprintf(f, "\\%c", p[i]);
		} else if (p[i] < 0x20 || p[i] == 0x7f) {
			fprintf(f, "\\u%04x", p[i]);
		} else if (p[i] == 0xc2 && i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f) {
			fprintf(f, "\\u%04x", p[++i]);
		} else if (p[i] == 0xe2 && i + 2 < len && p[i + 1] == 0x80 &&
			   (p[i + 2] == 0xa8 || p[i + 2] == 0xa9)) {
			fprintf(f, "\\u%04x", p[i + 2] == 0xa8 ? 0x2028 : 0x2029);
			i += 2;
		} else {
			fputc(p[i], f);
		}
	}
}

void out_json_str(FILE *f, const char *s, size_t len)
{
	fputc('"', f);
	out_json_text(f, s, len);
	fputc('"', f);
}

void out_value(FILE *f, const struct qmsg_value *v, bool json)
{
	switch (v->kind) {
	case QV_NIL: fputs(json ? "null" : "(null)", f); break;
	case QV_INT: fprintf(f, "%" PRId64, v->i); break;
	case QV_UINT: fprintf(f, "%" PRIu64, v->u); break;
	case QV_STR:
		if (json)
			out_json_str(f, v->s.p, v->s.len);
		else
			log_escape_file(f, v->s.p, v->s.len);
		break;
	case QV_BIN:
		fputs(json ? "\"" : "", f);
		for (size_t i = 0; i < v->s.len; i++)
			fprintf(f, "%02x", (unsigned char)v->s.p[i]);
		fputs(json ? "\"" : "", f);
		break;
	}
}

/* Column @i of @row, with the COMM rule applied to column 5. */
static struct qmsg_value row_value(const struct qmsg_value *row, uint32_t i,
				   char buf[OUT_COMM_MAX])
{
	struct qmsg_value v = row[i];
	const char *comm;

	if (i == 5 && v.kind == QV_NIL && (comm = out_comm(row, buf))) {
		v.kind = QV_STR;
		v.s.p = (char *)comm;
		v.s.len = strlen(comm);
	}
	return v;
}

/*
 * Whether column @i of @rep is a stack record's caller[] (ftrace's
 * kernel_stack, user_stack): JSON gives it as an array of addresses.
 */
static bool out_is_stack(const struct qmsg_reply *rep, uint32_t i)
{
	return rep->event && (!strcmp(rep->event, "ftrace:kernel_stack") ||
			      !strcmp(rep->event, "ftrace:user_stack")) &&
	       !strcmp(rep->cols[i], "caller");
}

/* A stack's addresses (8-byte words, as render.c reads them) to the first ~0. */
static void out_json_stack(FILE *f, const struct qmsg_value *v)
{
	const char *sep = "";

	fputc('[', f);
	for (size_t off = 0; off + 8 <= v->s.len; off += 8) {
		uint64_t a;

		memcpy(&a, v->s.p + off, 8);
		if (a == UINT64_MAX)
			break;
		fprintf(f, "%s%" PRIu64, sep, a);
		sep = ",";
	}
	fputc(']', f);
}

void out_json_row(FILE *f, const struct qmsg_reply *rep, const struct out_keys *k,
		  const struct qmsg_value *row)
{
	char buf[OUT_COMM_MAX];

	fputc('{', f);
	out_json_str(f, k->event_key, strlen(k->event_key));
	fputc(':', f);
	out_json_str(f, rep->event ? rep->event : "", rep->event ? strlen(rep->event) : 0);
	for (uint32_t i = 0; i < rep->ncols; i++) {
		struct qmsg_value v;

		if (!k->key[i])
			continue;
		v = row_value(row, i, buf);
		fputc(',', f);
		out_json_str(f, k->key[i], strlen(k->key[i]));
		fputc(':', f);
		if (v.kind == QV_BIN && out_is_stack(rep, i))
			out_json_stack(f, &v);
		else
			out_value(f, &v, true);
	}
	fputs("}\n", f);
}

/*
 * One CSV field: the text escaped as traceq's text is (common/log.h: a
 * backslash doubled, \\n \\r \\t, other control bytes and bytes that are
 * not UTF-8 as \\xNN), so no field holds a line break or drives a
 * terminal; then, RFC 4180, quoted when it holds a comma or a double
 * quote, a quote doubled.
 */
static void csv_field(FILE *f, const char *s, size_t len)
{
	char *e = NULL;
	size_t n = 0;
	FILE *m;

	if (log_escape_needed(s, len)) {
		if (!(m = open_memstream(&e, &n)))
			return;
		log_escape_file(m, s, len);
		if (fclose(m) != 0) {
			free(e);
			return;
		}
		s = e;
		len = n;
	}
	if (!memchr(s, ',', len) && !memchr(s, '"', len)) {
		fwrite(s, 1, len, f);
	} else {
		fputc('"', f);
		for (size_t i = 0; i < len; i++) {
			if (s[i] == '"')
				fputc('"', f);
			fputc(s[i], f);
		}
		fputc('"', f);
	}
	free(e);
}

void out_csv_header(FILE *f, const struct out_keys *k)
{
	csv_field(f, k->event_key, strlen(k->event_key));
	for (uint32_t i = 0; i < k->n; i++) {
		if (!k->key[i])
			continue;
		fputc(',', f);
		csv_field(f, k->key[i], strlen(k->key[i]));
	}
	fputs("\r\n", f);
}

void out_csv_row(FILE *f, const struct qmsg_reply *rep, const struct out_keys *k,
		 const struct qmsg_value *row)
{
	char buf[OUT_COMM_MAX];

	csv_field(f, rep->event ? rep->event : "", rep->event ? strlen(rep->event) : 0);
	for (uint32_t i = 0; i < k->n; i++) {
		struct qmsg_value v;

		if (!k->key[i])
			continue;
		fputc(',', f);
		v = row_value(row, i, buf);
		if (v.kind == QV_STR)
			csv_field(f, v.s.p, v.s.len);
		else if (v.kind != QV_NIL)
			out_value(f, &v, false);
	}
	fputs("\r\n", f);
}

static const char *event_short(const char *event)
{
	const char *colon = event ? strchr(event, ':') : NULL;

	return colon ? colon + 1 : event ? event : "?";
}

/* Column @i's "<name>_sym" companion (a code address named), or -1. */
static int sym_col(const struct qmsg_reply *r, uint32_t i)
{
	size_t n = strlen(r->cols[i]);

	for (uint32_t k = QMSG_META_COLS; k < r->ncols; k++)
		if (!strncmp(r->cols[k], r->cols[i], n) && !strcmp(r->cols[k] + n, "_sym"))
			return (int)k;
	return -1;
}

void out_fields_row(FILE *f, const struct qmsg_reply *r, const struct qmsg_value *row,
		    int64_t ts)
{
	const struct qmsg_value *comm = &row[5];
	int64_t pid = qmsg_value_int(&row[4]);
	uint64_t mag = ts < 0 ? 0 - (uint64_t)ts : (uint64_t)ts;	/* before 1970: '-' */
	char c[4 * OUT_COMM_MAX], ev[LOG_ESC_LEN];
	const char *e = event_short(r->event);
	uint32_t i;
	int k;

	if (comm->kind == QV_STR)
		log_escape_mem(comm->s.p, comm->s.len, c, sizeof(c));
	else
		snprintf(c, sizeof(c), "%s", pid == 0 ? "<idle>" : "<...>");
	log_escape_mem(e, strlen(e), ev, sizeof(ev));
	fprintf(f, "%16s-%-7" PRId64 " [%03" PRId64 "] %s%" PRIu64 ".%06" PRIu64 ": %s:",
		c, pid, qmsg_value_int(&row[1]), ts < 0 ? "-" : "", mag / 1000000000,
		mag % 1000000000 / 1000, ev);
	for (i = QMSG_META_COLS; i < r->ncols; i++) {
		if (!strncmp(r->cols[i], "common_", 7) || is_sym_col(r->cols[i]))
			continue;
		fputc(' ', f);
		log_escape_file(f, r->cols[i], strlen(r->cols[i]));
		fputc('=', f);
		k = sym_col(r, i);
		out_value(f, k >= 0 && row[k].kind == QV_STR ? &row[k] : &row[i], false);
	}
	fputc('\n', f);
}

/* ---- --sql: plain tables ---- */

/* One cell of a text table: @v as a malloc'd string (NULL: no memory). */
static char *sql_cell(const struct qmsg_value *v)
{
	char *p = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&p, &n);

	if (!f)
		return NULL;
	if (v->kind == QV_NIL)
		fputs("NULL", f);
	else
		out_value(f, v, false);	/* a string escaped (common/log.h) */
	if (fclose(f) != 0) {
		free(p);
		return NULL;
	}
	return p;
}

static void sql_line(FILE *f, char *const *cells, const size_t *width, uint32_t ncols)
{
	for (uint32_t i = 0; i < ncols; i++) {
		if (i + 1 < ncols)
			fprintf(f, "%-*s  ", (int)width[i], cells[i]);
		else
			fputs(cells[i], f);
	}
	fputc('\n', f);
}

int out_sql_text(FILE *f, const struct qmsg_reply *rep)
{
	size_t n = (size_t)rep->nrows * rep->ncols, i;
	char **cells = calloc(n + 1, sizeof(*cells));
	size_t *width = calloc(rep->ncols + 1, sizeof(*width));
	int ret = 0;

	if (!cells || !width) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < rep->ncols; i++)
		width[i] = strlen(rep->cols[i]);
	for (i = 0; i < n; i++) {
		cells[i] = sql_cell(&rep->vals[i]);
		if (!cells[i]) {
			ret = -ENOMEM;
			goto out;
		}
		if (strlen(cells[i]) > width[i % rep->ncols])
			width[i % rep->ncols] = strlen(cells[i]);
	}
	sql_line(f, rep->cols, width, rep->ncols);
	for (i = 0; i < rep->nrows; i++)
		sql_line(f, cells + i * rep->ncols, width, rep->ncols);
out:
	for (i = 0; cells && i < n; i++)
		free(cells[i]);
	free(cells);
	free(width);
	return ret;
}

void out_sql_csv(FILE *f, const struct qmsg_reply *rep)
{
	for (uint32_t i = 0; i < rep->ncols; i++) {
		if (i)
			fputc(',', f);
		csv_field(f, rep->cols[i], strlen(rep->cols[i]));
	}
	fputs("\r\n", f);
	for (uint32_t r = 0; r < rep->nrows; r++) {
		for (uint32_t i = 0; i < rep->ncols; i++) {
			const struct qmsg_value *v = &rep->vals[(size_t)r * rep->ncols + i];

			if (i)
				fputc(',', f);
			if (v->kind == QV_STR)
				csv_field(f, v->s.p, v->s.len);
			else if (v->kind != QV_NIL)
				out_value(f, v, false);
		}
		fputs("\r\n", f);
	}
}

void out_sql_json(FILE *f, const struct qmsg_reply *rep)
{
	for (uint32_t r = 0; r < rep->nrows; r++) {
		fputc('{', f);
		for (uint32_t i = 0; i < rep->ncols; i++) {
			fputs(i ? "," : "", f);
			out_json_str(f, rep->cols[i], strlen(rep->cols[i]));
			fputc(':', f);
			out_value(f, &rep->vals[(size_t)r * rep->ncols + i], true);
		}
		fputs("}\n", f);
	}
}

int out_sql_print(FILE *f, enum out_format format, const struct qmsg_reply *rep)
{
	if (format == OUT_CSV)
		out_sql_csv(f, rep);
	else if (format == OUT_JSON)
		out_sql_json(f, rep);
	else
		return out_sql_text(f, rep);
	return 0;
}
