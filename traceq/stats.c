/*
 * stats.c - traceq --stats and --drops as text or JSON, with per-host
 * totals (stats.h). The host of a row is its first column and its
 * machine_id (one name can be two hosts); the collector names the others
 * (proto/PROTOCOL.md, ops stats and drops), and a name is printed only
 * through out_value() (escaped).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "traceq/output.h"
#include "traceq/stats.h"

static int col_of(const struct qmsg_reply *rep, const char *name)
{
	for (uint32_t i = 0; i < rep->ncols; i++)
		if (rep->cols[i] && !strcmp(rep->cols[i], name))
			return (int)i;
	return -1;
}

static bool same_str(const struct qmsg_value *a, const struct qmsg_value *b)
{
	return a->kind == QV_STR && b->kind == QV_STR && a->s.len == b->s.len &&
	       !memcmp(a->s.p, b->s.p, a->s.len);
}

/*
 * Whether rows @a and @b are one host's: the same name and machine_id (a
 * name alone can be two hosts: a reinstalled machine, an import beside a
 * live host). A collector too old to send machine_id: by name.
 */
static bool same_host(const struct qmsg_reply *rep, const struct qmsg_value *a,
		      const struct qmsg_value *b)
{
	int mid = col_of(rep, "machine_id");

	return same_str(&a[0], &b[0]) && (mid < 0 || same_str(&a[mid], &b[mid]));
}

/* Whether row @row passes --cpu (column @cpu; -1: the table has none). */
static bool cpu_kept(const struct tq_select *sel, const struct qmsg_value *row, int cpu)
{
	if (cpu < 0 || !sel->ncpus)
		return true;
	for (uint32_t i = 0; i < sel->ncpus; i++)
		if (row[cpu].kind == QV_UINT && row[cpu].u == sel->cpus[i])
			return true;
	return false;
}

static void print_key(FILE *f, const char *key, bool json, bool first)
{
	struct qmsg_value k = { .kind = QV_STR, .s = { .p = (char *)key, .len = strlen(key) } };

	if (!json) {
		fputs(first ? "" : " ", f);
		log_escape_file(f, key, strlen(key));
		fputc('=', f);
		return;
	}
	fputs(first ? "{" : ",", f);
	out_value(f, &k, true);
	fputc(':', f);
}

static void print_row(FILE *f, const struct qmsg_reply *rep, const struct qmsg_value *row,
		      bool json)
{
	for (uint32_t i = 0; i < rep->ncols; i++) {
		print_key(f, rep->cols[i] ? rep->cols[i] : "?", json, i == 0);
		out_value(f, &row[i], json);
	}
	fputs(json ? "}\n" : "\n", f);
}

/*
 * The total line of the host of row @host: @sum[i] for each counter
 * column, "all" for @cpu, the row's own text (name, machine_id) for the rest.
 */
static void print_total(FILE *f, const struct qmsg_reply *rep, const struct qmsg_value *host,
			const uint64_t *sum, int cpu, bool json)
{
	static const struct qmsg_value all = { .kind = QV_STR, .s = { .p = (char *)"all",
								     .len = 3 } };

	for (uint32_t i = 0; i < rep->ncols; i++) {
		struct qmsg_value v = { .kind = QV_UINT, .u = sum[i] };

		print_key(f, rep->cols[i] ? rep->cols[i] : "?", json, i == 0);
		out_value(f, (int)i == cpu ? &all : host[i].kind == QV_STR ? &host[i] : &v, json);
	}
	fputs(json ? "}\n" : "\n", f);
}

/* Print @host's rows (from @first on), and their total with @totals. */
static void print_host(FILE *f, const struct qmsg_reply *rep, uint32_t first,
		       const struct tq_select *sel, bool totals, bool json, uint64_t *sum,
		       bool *done)
{
	const struct qmsg_value *host = &rep->vals[(size_t)first * rep->ncols];
	int cpu = col_of(rep, "cpu");
	bool any = false;

	memset(sum, 0, rep->ncols * sizeof(*sum));
	for (uint32_t r = first; r < rep->nrows; r++) {
		const struct qmsg_value *row = &rep->vals[(size_t)r * rep->ncols];

		if (!same_host(rep, row, host) && r != first)
			continue;
		done[r] = true;
		if (!cpu_kept(sel, row, cpu))
			continue;
		print_row(f, rep, row, json);
		any = true;
		for (uint32_t i = 1; i < rep->ncols; i++)
			sum[i] += row[i].kind == QV_UINT ? row[i].u : 0;
	}
	if (totals && any && cpu >= 0)
		print_total(f, rep, host, sum, cpu, json);
}

int tq_stats_print(FILE *f, const struct qmsg_reply *rep, const struct tq_select *sel,
		   bool totals, bool json)
{
	uint64_t *sum;
	bool *done;

	if (!rep->ncols || !rep->nrows)
		return 0;
	sum = calloc(rep->ncols, sizeof(*sum));
	done = calloc(rep->nrows, sizeof(*done));
	if (!sum || !done) {
		free(sum);
		free(done);
		return -ENOMEM;
	}
	for (uint32_t r = 0; r < rep->nrows; r++)
		if (!done[r])
			print_host(f, rep, r, sel, totals, json, sum, done);
	free(sum);
	free(done);
	return 0;
}
