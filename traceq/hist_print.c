/*
 * hist_print.c - a histogram printed as the kernel prints a `hist` file
 * (hist_print.h). The spacing and number formats are the kernel's, one
 * seq_printf() each: a key "%s: %10llu", .hex "%s: %llx", .sym
 * "%s: [%llx] %-45ps", .execname "%s: %-16s[%10llu]", .log2
 * "%s: ~ 2^%-2llu", .buckets=N "%s: ~ %llu-%llu", a string "%s: %-50s";
 * keys between "{ " and " }" joined by ", "; then " hitcount: %10llu" and
 * per val "  %s: %10llu" (.hex: %10llx). Where the kernel would know a
 * name we may not (a comm the agent never sent, an address no symbol
 * covers), we print what trace-cmd prints: "<...>", and %ps's "0x..." .
 */
#include "config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "common/log.h"
#include "traceq/hist_print.h"

void hist_print_header(FILE *f, const struct hist_spec *sp, const char *filter)
{
	char line[1024];

	hist_spec_format(sp, line, sizeof(line));
	fprintf(f, "# event histogram\n#\n# trigger info: %s%s%s [active]\n#\n\n", line,
		filter ? " if " : "", filter ? filter : "");
}

/* Columns a key takes in a reply: its value, and a name for .execname and .sym. */
static uint32_t key_cols(const struct hist_field *k)
{
	return k->mod == HIST_MOD_EXECNAME || k->mod == HIST_MOD_SYM ? 2 : 1;
}

/* @v, a string (a comm, a string field, a symbol: a peer's), escaped into @buf; or NULL. */
static const char *str_of(const struct qmsg_value *v, char *buf, size_t len)
{
	if (v->kind != QV_STR)
		return NULL;
	log_escape_mem(v->s.p, v->s.len, buf, len);
	return buf;
}

/*
 * A stack key as the kernel's hist_trigger_stacktrace_print() writes it:
 * "common_stacktrace:" and a line per frame, each "%*c%pS" with 9 columns
 * before the name. The frames come one a line (the collector names
 * them); each line, a peer's names, is escaped.
 */
static void print_stack(FILE *f, const struct hist_field *k, const struct qmsg_value *v)
{
	char line[LOG_ESC_LEN];
	const char *p = v->kind == QV_STR ? v->s.p : "", *end = p + (v->kind == QV_STR ? v->s.len : 0);

	fprintf(f, "%s:\n", k->name);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		log_escape_mem(p, n, line, sizeof(line));
		fprintf(f, "%*c%s\n", 9, ' ', line);
		p += n + 1;
	}
}

static void print_key(FILE *f, const struct hist_field *k, const struct qmsg_value *v)
{
	uint64_t u = (uint64_t)qmsg_value_int(&v[0]);
	char nbuf[LOG_ESC_LEN], sbuf[LOG_ESC_LEN];
	const char *name = str_of(&v[key_cols(k) - 1], nbuf, sizeof(nbuf));

	if (k->stack) {
		print_stack(f, k, &v[0]);
		return;
	}
	if (v[0].kind == QV_STR) {
		fprintf(f, "%s: %-50s", k->name, str_of(&v[0], sbuf, sizeof(sbuf)));
		return;
	}
	switch (k->mod) {
	case HIST_MOD_HEX:
		fprintf(f, "%s: %" PRIx64, k->name, u);
		break;
	case HIST_MOD_SYM: {
		char addr[32];

		snprintf(addr, sizeof(addr), "0x%" PRIx64, u);
		fprintf(f, "%s: [%" PRIx64 "] %-45s", k->name, u, name ? name : addr);
		break;
	}
	case HIST_MOD_EXECNAME:
		fprintf(f, "%s: %-16s[%10" PRIu64 "]", k->name, name ? name : "<...>", u);
		break;
	case HIST_MOD_LOG2:
		fprintf(f, "%s: ~ 2^%-2" PRIu64, k->name, u);
		break;
	case HIST_MOD_BUCKETS:
		fprintf(f, "%s: ~ %" PRIu64 "-%" PRIu64, k->name, u, u + k->buckets - 1);
		break;
	default:
		fprintf(f, "%s: %10" PRIu64, k->name, u);
	}
}

static void print_row(FILE *f, const struct hist_spec *sp, const struct qmsg_value *row)
{
	uint32_t c = 0;
	bool multiline = false;

	fputs("{ ", f);
	for (size_t i = 0; i < sp->nkeys; i++) {
		if (i)
			fputs(", ", f);
		print_key(f, &sp->keys[i], &row[c]);
		c += key_cols(&sp->keys[i]);
		multiline |= sp->keys[i].stack;
	}
	/* the kernel's: no blank before the brace after a stack's lines */
	fprintf(f, "%s} hitcount: %10" PRIu64, multiline ? "" : " ",
		(uint64_t)qmsg_value_int(&row[c++]));
	for (size_t i = 0; i < sp->nvals; i++, c++)
		fprintf(f, sp->vals[i].mod == HIST_MOD_HEX ? "  %s: %10" PRIx64 : "  %s: %10" PRIu64,
			sp->vals[i].name, (uint64_t)qmsg_value_int(&row[c]));
	fputc('\n', f);
}

/* The columns of a reply to @sp. */
static uint32_t spec_cols(const struct hist_spec *sp)
{
	uint32_t n = 1 + (uint32_t)sp->nvals;

	for (size_t i = 0; i < sp->nkeys; i++)
		n += key_cols(&sp->keys[i]);
	return n;
}

void hist_print_names(struct hist_spec *sp, const struct qmsg_reply *rep)
{
	uint32_t c = 0;

	if (rep->ncols != spec_cols(sp))
		return;
	for (size_t i = 0; i < sp->nkeys; c += key_cols(&sp->keys[i]), i++)
		snprintf(sp->keys[i].name, sizeof(sp->keys[i].name), "%s", rep->cols[c]);
	c++;	/* hitcount */
	for (size_t i = 0; i < sp->nvals; i++, c++)
		snprintf(sp->vals[i].name, sizeof(sp->vals[i].name), "%s", rep->cols[c]);
}

int hist_print_page(FILE *f, const struct hist_spec *sp, const struct qmsg_reply *rep)
{
	if (rep->nrows && rep->ncols != spec_cols(sp))
		return -1;
	for (uint32_t r = 0; r < rep->nrows; r++)
		print_row(f, sp, &rep->vals[r * rep->ncols]);
	return 0;
}

void hist_print_totals(FILE *f, uint64_t hits, uint64_t entries, uint64_t dropped)
{
	fprintf(f, "\nTotals:\n    Hits: %" PRIu64 "\n    Entries: %" PRIu64 "\n    Dropped: %"
		PRIu64 "\n", hits, entries, dropped);
}
