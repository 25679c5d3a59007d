/*
 * discover.c - traceq's discovery listings (discover.h): the collector
 * answers them as tables (proto/PROTOCOL.md, ops hosts, events, fields);
 * this prints them.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "traceq/discover.h"
#include "traceq/output.h"

int tq_discover_args(enum qmsg_op op, int argc, char **argv, const char **query)
{
	int max = op == QOP_HOSTS ? 0 : 1, min = op == QOP_FIELDS ? 1 : 0;

	if (argc < min || argc > max) {
		fprintf(stderr, "traceq: %s\n", op == QOP_HOSTS ? "--hosts takes no argument" :
			op == QOP_EVENTS ? "--events takes at most one SELECTOR" :
			"--fields takes one SELECTOR (e.g. sched_switch)");
		return -1;
	}
	*query = argc ? argv[0] : NULL;
	return 0;
}

/*
 * @v as text into @buf: a string (a peer's: a kernel release, an agent's
 * version, a certificate's subject, a host name) escaped as common/log.h
 * says, so that it neither forges a row nor drives the terminal.
 */
static void cell(const struct qmsg_value *v, char *buf, size_t len)
{
	switch (v->kind) {
	case QV_NIL: snprintf(buf, len, "-"); break;
	case QV_INT: snprintf(buf, len, "%" PRId64, v->i); break;
	case QV_UINT: snprintf(buf, len, "%" PRIu64, v->u); break;
	default: log_escape_mem(v->s.p, v->s.len, buf, len); break;
	}
}

/* JSON: exact, through output.c's JSON strings. */
static void print_json(FILE *f, const struct qmsg_reply *rep)
{
	for (uint32_t r = 0; r < rep->nrows; r++) {
		const struct qmsg_value *row = &rep->vals[(size_t)r * rep->ncols];

		fputc('{', f);
		for (uint32_t i = 0; i < rep->ncols; i++) {
			struct qmsg_value k = { .kind = QV_STR, .s = { .p = rep->cols[i],
							  .len = strlen(rep->cols[i]) } };

			fputs(i ? "," : "", f);
			out_value(f, &k, true);
			fputc(':', f);
			out_value(f, &row[i], true);
		}
		fputs("}\n", f);
	}
}

/* @s in a column @w wide; the last column of a line ends it */
static void pad(FILE *f, const char *s, size_t w, bool last)
{
	if (last)
		fprintf(f, "%s\n", s);
	else
		fprintf(f, "%-*s  ", (int)w, s);
}

void tq_discover_print(FILE *f, const struct qmsg_reply *rep, bool json)
{
	size_t *w;
	char b[512];

	if (json || !rep->ncols) {
		print_json(f, rep);
		return;
	}
	w = calloc(rep->ncols, sizeof(*w));
	if (!w)
		return;
	for (uint32_t i = 0; i < rep->ncols; i++)
		w[i] = strlen(rep->cols[i]);
	for (uint32_t r = 0; r < rep->nrows; r++)
		for (uint32_t i = 0; i < rep->ncols; i++) {
			cell(&rep->vals[(size_t)r * rep->ncols + i], b, sizeof(b));
			if (strlen(b) > w[i])
				w[i] = strlen(b);
		}
	for (uint32_t i = 0; i < rep->ncols; i++)
		pad(f, rep->cols[i], w[i], i + 1 == rep->ncols);
	for (uint32_t r = 0; r < rep->nrows; r++)
		for (uint32_t i = 0; i < rep->ncols; i++) {
			cell(&rep->vals[(size_t)r * rep->ncols + i], b, sizeof(b));
			pad(f, b, w[i], i + 1 == rep->ncols);
		}
	free(w);
}
