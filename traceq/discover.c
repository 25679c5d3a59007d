/*
 * discover.c - traceq's discovery listings (discover.h): the collector
 * answers them as tables (proto/PROTOCOL.md, ops hosts, events, fields);
 * this prints them.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "traceq/discover.h"

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

/* @v as text into @buf. */
static void cell(const struct qmsg_value *v, char *buf, size_t len)
{
	switch (v->kind) {
	case QV_NIL: snprintf(buf, len, "-"); break;
	case QV_INT: snprintf(buf, len, "%" PRId64, v->i); break;
	case QV_UINT: snprintf(buf, len, "%" PRIu64, v->u); break;
	default: snprintf(buf, len, "%.*s", (int)v->s.len, v->s.p); break;
	}
}

static void json_str(FILE *f, const char *s, size_t n)
{
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void print_json(FILE *f, const struct qmsg_reply *rep)
{
	for (uint32_t r = 0; r < rep->nrows; r++) {
		const struct qmsg_value *row = &rep->vals[(size_t)r * rep->ncols];

		fputc('{', f);
		for (uint32_t i = 0; i < rep->ncols; i++) {
			fputs(i ? "," : "", f);
			json_str(f, rep->cols[i], strlen(rep->cols[i]));
			fputc(':', f);
			if (row[i].kind == QV_STR)
				json_str(f, row[i].s.p, row[i].s.len);
			else if (row[i].kind == QV_NIL)
				fputs("null", f);
			else {
				char b[32];

				cell(&row[i], b, sizeof(b));
				fputs(b, f);
			}
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
