/*
 * test_perfetto.c - traceq's Perfetto writer (traceq/perfetto_write.c)
 * driven with a known recording of synthetic rows (sched_switch and
 * sched_waking in this kernel's formats, a program's funcgraph_exit
 * calls, a loss), its output held to the rules of Perfetto's importer as
 * google/perfetto ec5d16b14b743ba6063d720956d6d6af6610fd72 has them (no
 * Perfetto code runs here):
 *
 *   - systemTraceEvents is read as importers/json/json_trace_tokenizer.cc
 *     reads it (ReadOneSystemTraceLine: lines end at the escape "\n"; '#'
 *     and empty lines skipped), and every other line must match the one
 *     pattern of importers/systrace/systrace_line_tokenizer.cc (below,
 *     as written there; turned into POSIX ERE here) or the import fails;
 *   - the text after the pattern splits into key=value as
 *     systrace_line_parser.cc splits it (on ' ', then '=', the first
 *     key kept), and every sched_switch has the seven keys its parser
 *     reads, numbers where it wants numbers;
 *   - a checker rebuilds each CPU's slices (who ran from when to when)
 *     from the sched_switch lines, as FtraceSchedEventTracker would, and
 *     compares them with the slices of the recording given to the writer;
 *   - the whole file equals tests/data/perfetto_golden.json (reviewed line
 *     by line against those sources; PERFETTO_GOLDEN_WRITE=FILE writes
 *     this run's output there instead);
 *   - several hosts: a zip archive whose perfetto_manifest names one
 *     machine per file with its clock offset.
 */
#include "config.h"

#include <check.h>
#include <inttypes.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zip.h>

#include "tests/testutil.h"
#include "traceq/export.h"

/* The importer's line pattern, as systrace_line_tokenizer.cc writes it. */
static const char perfetto_line_re[] =
	"-(\\d+)\\s+\\(?\\s*(\\d+|-+)?\\)?\\s?\\[(\\d+)\\]\\s*"
	"([a-zA-Z.]{3}[0-9a-f.]{1,2}\\s*)?(\\d+\\.\\d+):\\s+(\\S+):";

static char dir[256], err[EXPORT_ERR_LEN];

static void setup(void)
{
	tu_tmpdir_make(dir, sizeof(dir), "perfetto");
}

static void teardown(void)
{
	TU_OK(tu_tmpdir_remove(dir));
}

/* ---- the recording ---- */

static const char switch_format[] =
	"name: sched_switch\nID: 372\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s "
	"next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, "
	"(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 "
	"| 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state "
	"& ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | "
	"0x00000020 | 0x00000040) + 1) << 1) - 1), \"|\", { 0x00000001, \"S\" }, { 0x00000002, "
	"\"D\" }, { 0x00000004, \"T\" }, { 0x00000008, \"t\" }, { 0x00000010, \"X\" }, { "
	"0x00000020, \"Z\" }, { 0x00000040, \"P\" }, { 0x00000080, \"I\" }) : \"R\", "
	"REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | "
	"0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? \"+\" : \"\", REC->next_comm, "
	"REC->next_pid, REC->next_prio\n";

static const char waking_format[] =
	"name: sched_waking\nID: 375\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, "
	"REC->prio, REC->target_cpu\n";

/* lib/fgraph.c's funcgraph_exit */
static const char exit_format[] =
	"name: funcgraph_exit\nID: 10\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned int depth;\toffset:16;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned int overrun;\toffset:20;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long long calltime;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long long rettime;\toffset:32;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"<-- %ps (%u) (start: %llx  end: %llx) over: %u\", (void *)REC->func, "
	"REC->depth, REC->calltime, REC->rettime, REC->overrun\n";

static char *switch_cols[] = { "host", "cpu", "ts", "trace_ts", "pid", "comm",
			       "common_flags", "common_preempt_count", "common_pid",
			       "prev_comm", "prev_pid", "prev_prio", "prev_state",
			       "next_comm", "next_pid", "next_prio" };
static char *waking_cols[] = { "host", "cpu", "ts", "trace_ts", "pid", "comm",
			       "common_flags", "common_preempt_count", "common_pid",
			       "comm", "pid", "prio", "target_cpu" };
static char *exit_cols[] = { "host", "cpu", "ts", "trace_ts", "pid", "comm",
			     "common_flags", "common_preempt_count", "common_pid",
			     "func", "depth", "overrun", "calltime", "rettime", "func_sym" };

#define BASE	1795725230000000000ll	/* a whole second: the file's 0 */
#define TRACE0	5250000000ll		/* BASE on the host's trace clock (--time raw: 5 s the 0) */

/* One switch of the recording: on @cpu at BASE + @us, @prev (state @state) to @next. */
struct sw {
	uint32_t cpu;
	int64_t us;
	const char *prev;
	int32_t prev_pid;
	long state;
	const char *next;
	int32_t next_pid;
};

/*
 * Two CPUs; a comm with a space and one with a newline and a quote (a
 * peer's bytes: they must neither cut a line nor break the JSON).
 */
static const struct sw rec[] = {
	{ 0, 1000, "swapper/0", 0, 0, "bash", 100, },
	{ 1, 1500, "swapper/1", 0, 0, "my prog", 201, },
	{ 0, 2250, "bash", 100, 1, "kworker/0:1", 7, },
	{ 1, 3000, "my prog", 201, 2, "ev\"il\ncomm", 202, },
	{ 0, 4000, "kworker/0:1", 7, 0x80, "swapper/0", 0, },
	{ 1, 5125, "ev\"il\ncomm", 202, 0, "swapper/1", 0, },
	{ 0, 6000, "swapper/0", 0, 0, "bash", 100, },
	{ 0, 7000, "bash", 100, 0x100, "swapper/0", 0, },
};

static const int32_t tgids[][2] = { { 7, 7 }, { 100, 100 }, { 201, 200 }, { 202, 200 } };

static struct qmsg_value str(const char *s)
{
	return (struct qmsg_value){ .kind = QV_STR, .s = { (char *)s, strlen(s) } };
}

static struct qmsg_value num(int64_t v)
{
	return (struct qmsg_value){ .kind = QV_INT, .i = v };
}

/* The meta columns and common fields of a row of @host by @pid (@comm) on @cpu at @ts. */
static void meta(struct qmsg_value *v, const char *host, uint32_t cpu, int64_t ts, int32_t pid,
		 const char *comm)
{
	v[0] = str(host);
	v[1] = num(cpu);
	v[2] = num(ts);
	v[3] = num(ts - BASE + TRACE0);
	v[4] = num(pid);
	v[5] = comm ? str(comm) : (struct qmsg_value){ .kind = QV_NIL };
	v[6] = num(1);		/* irqs off */
	v[7] = num(2);		/* preempt count */
	v[8] = num(pid);
}

static int put_switch(struct export_writer *w, const char *host, const struct sw *s)
{
	struct qmsg_value v[16];
	struct qmsg_reply view = { .ok = true, .event = "sched:sched_switch", .ncols = 16,
				   .cols = switch_cols, .format = (char *)switch_format };
	struct export_row r = { .host = host, .cpu = s->cpu, .ts = BASE + s->us * 1000,
				.pid = s->prev_pid, .comm = s->prev, .view = &view, .vals = v };

	r.trace_ts = r.ts - BASE + TRACE0;
	meta(v, host, s->cpu, r.ts, s->prev_pid, s->prev);
	v[9] = str(s->prev);
	v[10] = num(s->prev_pid);
	v[11] = num(120);
	v[12] = num(s->state);
	v[13] = str(s->next);
	v[14] = num(s->next_pid);
	v[15] = num(120);
	return w->ops->row(w, &r);
}

static int put_waking(struct export_writer *w, const char *host, uint32_t cpu, int64_t us,
		      int32_t waker, const char *wakee, int32_t pid)
{
	struct qmsg_value v[13];
	struct qmsg_reply view = { .ok = true, .event = "sched:sched_waking", .ncols = 13,
				   .cols = waking_cols, .format = (char *)waking_format };
	struct export_row r = { .host = host, .cpu = cpu, .ts = BASE + us * 1000, .pid = waker,
				.comm = "bash", .view = &view, .vals = v };

	r.trace_ts = r.ts - BASE + TRACE0;
	meta(v, host, cpu, r.ts, waker, "bash");
	v[9] = str(wakee);
	v[10] = num(pid);
	v[11] = num(120);
	v[12] = num(cpu);
	return w->ops->row(w, &r);
}

/*
 * A program's call of @sym, returning at BASE + @us, @ticks long: the
 * ring's clock counts 3 ticks per ns from 9000000 at BASE.
 */
static int put_exit(struct export_writer *w, const char *host, int32_t pid, int64_t us,
		    uint64_t ticks, int depth, const char *sym)
{
	struct qmsg_value v[15];
	struct qmsg_reply view = { .ok = true, .event = "ftrace:funcgraph_exit", .ncols = 15,
				   .cols = exit_cols, .format = (char *)exit_format };
	struct export_row r = { .host = host, .cpu = 4096, .ts = BASE + us * 1000, .pid = pid,
				.comm = "my prog", .view = &view, .vals = v, .program = true };
	uint64_t ret = 9000000 + (uint64_t)us * 3000;

	r.trace_ts = r.ts - BASE + TRACE0;
	meta(v, host, 4096, r.ts, pid, "my prog");
	v[9] = num(0x401000);
	v[10] = num(depth);
	v[11] = num(0);
	v[12] = num((int64_t)(ret - ticks));
	v[13] = num((int64_t)ret);
	v[14] = sym ? str(sym) : (struct qmsg_value){ .kind = QV_NIL };
	return w->ops->row(w, &r);
}

/* The recording of host @host into @w, between its begin and end. */
static void record(struct export_writer *w, const char *host)
{
	struct export_host h = { .name = host, .kernel = "", .clock = "x86-tsc",
				 .header_page = "", .header_event = "", .printk = "",
				 .tgids = tgids, .ntgids = 4 };
	struct export_loss loss = { .host = host, .cpu = 1, .ts = BASE + 5000000,
				    .trace_ts = TRACE0 + 5000000, .count = 12 };

	TU_OK(w->ops->host_begin(w, &h));
	for (size_t i = 0; i < sizeof(rec) / sizeof(rec[0]); i++) {
		if (i == 2)
			TU_OK(put_waking(w, host, 0, 2000, 100, "kworker/0:1", 7));
		if (i == 5)
			TU_OK(w->ops->loss(w, &loss));
		TU_OK(put_switch(w, host, &rec[i]));
		/* the program's calls: run() holds leaf() twice, then one long call */
		if (i == 3) {
			TU_OK(put_exit(w, host, 201, 3100, 30000, 1, "leaf+0x4"));
			TU_OK(put_exit(w, host, 201, 3200, 60000, 1, "leaf+0x4"));
			TU_OK(put_exit(w, host, 202, 3300, 0, 0, NULL));
		}
		if (i == 6)
			TU_OK(put_exit(w, host, 201, 15000, 45000000, 0, "run+0x10"));
	}
	TU_OK(w->ops->host_end(w));
}

/* ---- reading the output as the importer does ---- */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_msg(f != NULL, "%s: cannot open", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert(buf != NULL);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* The importer's pattern in POSIX ERE: \d, \s and \S as classes. */
static void line_regex(regex_t *re)
{
	char ere[512];
	size_t n = 0;

	for (const char *p = perfetto_line_re; *p && n < sizeof(ere) - 16; p++) {
		const char *cls = NULL;

		if (p[0] == '\\' && p[1] == 'd')
			cls = "[0-9]";
		else if (p[0] == '\\' && p[1] == 's')
			cls = "[[:space:]]";
		else if (p[0] == '\\' && p[1] == 'S')
			cls = "[^[:space:]]";
		if (cls) {
			n += (size_t)snprintf(ere + n, sizeof(ere) - n, "%s", cls);
			p++;
		} else {
			ere[n++] = *p;
		}
	}
	ere[n] = 0;
	ck_assert_int_eq(regcomp(re, ere, REG_EXTENDED), 0);
}

/*
 * The lines of the systemTraceEvents string of @json as
 * ReadOneSystemTraceLine() gives them (unescaped, each ended by the
 * escape "\n"), into @lines (up to @max). Return: how many.
 */
static size_t sys_lines(const char *json, char **lines, size_t max)
{
	const char *s = strstr(json, "\"systemTraceEvents\":\"");
	size_t n = 0, len = 0;
	char cur[16384];
	bool esc = false;

	ck_assert(s != NULL);
	for (s += strlen("\"systemTraceEvents\":\""); *s; s++) {
		if (*s == '"' && !esc)
			break;
		if (*s == 'n' && esc) {
			ck_assert_uint_lt(n, max);
			lines[n++] = strndup(cur, len);
			len = 0;
			esc = false;
			continue;
		}
		if (esc) {
			ck_assert_msg(strchr("\"\\/bfrtu", *s), "an escape the importer refuses: \\%c", *s);
			cur[len++] = *s == 'u' ? 'u' : *s == 'b' ? '\b' : *s == 'f' ? '\f' :
				     *s == 'r' ? '\r' : *s == 't' ? '\t' : *s;
		} else if (*s != '\\') {
			cur[len++] = *s;
		}
		ck_assert_uint_lt(len, sizeof(cur));
		esc = *s == '\\' && !esc;
	}
	ck_assert_msg(*s == '"', "systemTraceEvents is not ended");
	ck_assert_msg(len == 0, "text after the last \\n (the importer drops it): %.*s",
		      (int)len, cur);
	return n;
}

/* A line's text after the pattern, split as systrace_line_parser.cc does; the first key wins. */
struct args {
	size_t n;
	char key[32][64], val[32][64];
};

static const char *arg(const struct args *a, const char *key)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->key[i], key))
			return a->val[i];
	return NULL;
}

static void split_args(const char *text, struct args *a)
{
	char buf[4096], *save = NULL;

	a->n = 0;
	snprintf(buf, sizeof(buf), "%s", text);
	for (char *tok = strtok_r(buf, " ", &save); tok && a->n < 32;
	     tok = strtok_r(NULL, " ", &save)) {
		char key[64] = "name", val[64] = "", *s2 = NULL, *part;

		if (strchr(tok, '=')) {
			key[0] = 0;
			for (part = strtok_r(tok, "=", &s2); part; part = strtok_r(NULL, "=", &s2)) {
				if (!key[0])
					snprintf(key, sizeof(key), "%s", part);
				else
					snprintf(val, sizeof(val), "%s", part);
			}
		} else {
			snprintf(val, sizeof(val), "%s", tok);
		}
		if (!arg(a, key)) {
			snprintf(a->key[a->n], 64, "%s", key);
			snprintf(a->val[a->n], 64, "%s", val);
			a->n++;
		}
	}
}

/* A parsed line: the pattern's groups and the args. */
struct pline {
	int32_t pid;
	uint32_t cpu;
	int64_t ts;		/* ns, as the importer computes it (seconds * 1e9) */
	char tgid[64], event[64];
	struct args args;
};

static void parse_line(const regex_t *re, const char *line, struct pline *pl)
{
	regmatch_t m[7];
	char g[7][64];

	ck_assert_msg(regexec(re, line, 7, m, 0) == 0,
		      "the importer refuses the line (and the whole file): '%s'", line);
	for (int i = 1; i < 7; i++)
		snprintf(g[i], sizeof(g[i]), "%.*s", m[i].rm_so < 0 ? 0 : (int)(m[i].rm_eo - m[i].rm_so),
			 m[i].rm_so < 0 ? "" : line + m[i].rm_so);
	pl->pid = (int32_t)strtol(g[1], NULL, 10);
	snprintf(pl->tgid, sizeof(pl->tgid), "%s", g[2]);
	pl->cpu = (uint32_t)strtoul(g[3], NULL, 10);
	pl->ts = (int64_t)(strtod(g[5], NULL) * 1e9);
	snprintf(pl->event, sizeof(pl->event), "%s", g[6]);
	split_args(line + m[0].rm_eo, &pl->args);
}

static bool is_number(const char *s)
{
	char *end;

	if (!s || !*s)
		return false;
	strtol(s, &end, 10);
	return *end == 0;
}

/* One CPU slice: @pid ran on @cpu from @start to @end (ns of the file). */
struct slice {
	uint32_t cpu;
	int32_t pid;
	int64_t start, end;
};

/*
 * The slices the sched_switch lines make, as FtraceSchedEventTracker
 * closes them: a switch on a CPU ends the slice of its prev_pid (which
 * must be the one running) and starts next_pid's. Return: how many.
 */
static size_t rebuild(const struct pline *pl, size_t n, struct slice *out, size_t max)
{
	struct slice open[8] = { 0 };
	bool running[8] = { false };
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t c = pl[i].cpu;

		if (strcmp(pl[i].event, "sched_switch"))
			continue;
		ck_assert_uint_lt(c, 8);
		if (running[c]) {
			ck_assert_int_eq(open[c].pid, atoi(arg(&pl[i].args, "prev_pid")));
			open[c].end = pl[i].ts;
			ck_assert_uint_lt(k, max);
			out[k++] = open[c];
		}
		open[c] = (struct slice){ .cpu = c, .pid = atoi(arg(&pl[i].args, "next_pid")),
					  .start = pl[i].ts };
		running[c] = true;
	}
	return k;
}

/* The slices of the recording itself, in the order their ends come. */
static size_t expected(struct slice *out, size_t max)
{
	struct slice open[8] = { 0 };
	bool running[8] = { false };
	size_t k = 0;

	for (size_t i = 0; i < sizeof(rec) / sizeof(rec[0]); i++) {
		uint32_t c = rec[i].cpu;

		if (running[c]) {
			open[c].end = rec[i].us * 1000;
			ck_assert_uint_lt(k, max);
			out[k++] = open[c];
		}
		open[c] = (struct slice){ .cpu = c, .pid = rec[i].next_pid, .start = rec[i].us * 1000 };
		running[c] = true;
	}
	return k;
}

/* ---- the tests ---- */

static struct export_writer *open_writer_time(const char *path, unsigned nhosts, bool raw)
{
	struct export_opts o = { .path = path, .nhosts = nhosts, .err = err, .time_raw = raw };
	struct export_writer *w = NULL;
	int ret = export_perfetto_ops.open(&o, &w);

	ck_assert_msg(ret == 0, "open: %s", err);
	return w;
}

static struct export_writer *open_writer(const char *path, unsigned nhosts)
{
	return open_writer_time(path, nhosts, false);
}

static void close_writer(struct export_writer *w, struct export_stats *st)
{
	int ret = w->ops->close(w, true, st);

	ck_assert_msg(ret == 0, "close: %d: %s", ret, err);
}

/* The recording of host "alpha" exported to @path (a file in dir), read back (@len bytes). */
static char *export_one(char *path, size_t size, struct export_stats *st, size_t *len)
{
	struct export_writer *w;

	snprintf(path, size, "%s/one.json", dir);
	w = open_writer(path, 1);
	record(w, "alpha");
	close_writer(w, st);
	return slurp(path, len);
}

/*
 * The lines the importer tokenizes in @json, parsed into @pl (up to
 * @max), the '#' lines saying @loss counted in *@nloss. Return: how many.
 */
static size_t parse_all(const char *json, struct pline *pl, size_t max, const char *loss,
			size_t *nloss)
{
	char *lines[256];
	size_t n = sys_lines(json, lines, 256), np = 0;
	regex_t re;

	line_regex(&re);
	*nloss = 0;
	for (size_t i = 0; i < n; i++) {
		if (lines[i][0] == '#' || !lines[i][0])
			*nloss += strstr(lines[i], loss) != NULL;
		else if (np < max)
			parse_line(&re, lines[i], &pl[np++]);
		free(lines[i]);
	}
	regfree(&re);
	return np;
}

/* Every line the importer reads matches its pattern; sched_switch has its seven fields. */
START_TEST(test_perfetto_lines)
{
	char path[512], *json;
	struct pline pl[256];
	struct export_stats st;
	size_t len, np, nswitch = 0, nwaking = 0, nloss;

	json = export_one(path, sizeof(path), &st, &len);
	TU_EQ(st.files, 1);
	TU_EQ(st.losses, 1);
	TU_EQ(st.rows, 8 + 1 + 4);	/* switches, a waking, four calls */
	TU_EQ(st.bytes, len);
	ck_assert(!strncmp(json, "{\"traceEvents\":[", 16));
	np = parse_all(json, pl, 256, "CPU:1 [12 EVENTS DROPPED]", &nloss);
	for (size_t i = 0; i < np; i++) {
		if (!strcmp(pl[i].event, "sched_switch")) {
			static const char *const seven[] = { "prev_comm", "prev_pid", "prev_prio",
							     "prev_state", "next_comm", "next_pid",
							     "next_prio" };

			for (size_t k = 0; k < 7; k++)
				ck_assert_msg(arg(&pl[i].args, seven[k]), "line %zu: no %s", i, seven[k]);
			ck_assert(is_number(arg(&pl[i].args, "prev_pid")));
			ck_assert(is_number(arg(&pl[i].args, "prev_prio")));
			ck_assert(is_number(arg(&pl[i].args, "next_pid")));
			ck_assert(is_number(arg(&pl[i].args, "next_prio")));
			nswitch++;
		}
		if (!strcmp(pl[i].event, "sched_waking")) {
			ck_assert(is_number(arg(&pl[i].args, "pid")));
			ck_assert_str_eq(arg(&pl[i].args, "comm"), "kworker/0:1");
			nwaking++;
		}
	}
	TU_EQ(nswitch, 8);
	TU_EQ(nwaking, 1);
	TU_EQ(nloss, 1);
	/* the tgid column: threads 201 and 202 are process 200's, pid 0 unknown */
	for (size_t i = 0; i < np; i++)
		if (pl[i].pid == 201 || pl[i].pid == 202)
			ck_assert_str_eq(pl[i].tgid, "200");
		else if (pl[i].pid == 0)
			ck_assert_uint_eq(strspn(pl[i].tgid, "-"), strlen(pl[i].tgid));
	/* the peer's newline and quote stayed inside their line */
	ck_assert(strstr(json, "ev\\\"il\\\\ncomm") != NULL);
	free(json);
}
END_TEST

/* The CPU slices the importer would build are the recording's. */
START_TEST(test_perfetto_slices)
{
	char path[512], *json;
	struct pline pl[256];
	struct slice got[32], want[32];
	size_t len, np, ngot, nwant, nloss;

	json = export_one(path, sizeof(path), NULL, &len);
	np = parse_all(json, pl, 256, "DROPPED", &nloss);
	ngot = rebuild(pl, np, got, 32);
	nwant = expected(want, 32);
	TU_EQ(ngot, nwant);
	TU_EQ(ngot, 6);
	for (size_t i = 0; i < ngot; i++) {
		ck_assert_uint_eq(got[i].cpu, want[i].cpu);
		ck_assert_int_eq(got[i].pid, want[i].pid);
		/* microseconds in the text, read back through a double */
		ck_assert_int_lt(llabs(got[i].start - want[i].start), 2);
		ck_assert_int_lt(llabs(got[i].end - want[i].end), 2);
	}
	free(json);
}
END_TEST

/* The programs' calls: complete events, the fitted clock giving their durations. */
START_TEST(test_perfetto_calls)
{
	char path[512], *json;
	size_t len;

	json = export_one(path, sizeof(path), NULL, &len);
	/* leaf returned at 3.100 ms after 30000 ticks (10 us at 3 per ns) */
	ck_assert_msg(strstr(json, "\"ph\":\"X\",\"cat\":\"function\",\"name\":\"leaf\","
			     "\"ts\":3090.000,\"dur\":10.000,\"pid\":200,\"tid\":201"), "%s", json);
	ck_assert(strstr(json, "\"name\":\"leaf\",\"ts\":3180.000,\"dur\":20.000"));
	/* no name: the address; a call of 0 ticks */
	ck_assert(strstr(json, "\"name\":\"0x401000\",\"ts\":3300.000,\"dur\":0.000,"
			 "\"pid\":200,\"tid\":202"));
	ck_assert(strstr(json, "\"name\":\"run\",\"ts\":0.000,\"dur\":15000.000"));
	ck_assert(strstr(json, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":200,\"tid\":201,"
			 "\"args\":{\"name\":\"my prog\"}}"));
	ck_assert(strstr(json, "{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"loss\","
			 "\"name\":\"CPU:1 [12 EVENTS DROPPED]\",\"ts\":5000.000,"));
	free(json);
}
END_TEST

/*
 * Names: each process named after its main thread's comm (pid == tgid),
 * as Perfetto's JSON importer takes an "M" process_name (pid, args.name:
 * importers/json/json_trace_parser.cc), the text naming only threads.
 */
START_TEST(test_perfetto_names)
{
	char path[512], *json;
	size_t len;

	json = export_one(path, sizeof(path), NULL, &len);
	ck_assert(strstr(json, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":100,"
			 "\"args\":{\"name\":\"bash\"}}"));
	ck_assert(strstr(json, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":7,"
			 "\"args\":{\"name\":\"kworker/0:1\"}}"));
	ck_assert(!strstr(json, "\"process_name\",\"pid\":0,"));	/* the idle task: none */
	free(json);
}
END_TEST

/* --time raw: the host's trace clock, from its whole second (5 s), not the wall clock's. */
START_TEST(test_perfetto_time_raw)
{
	char path[512], *json;
	struct export_writer *w;
	size_t len;

	snprintf(path, sizeof(path), "%s/raw.json", dir);
	w = open_writer_time(path, 1, true);
	record(w, "alpha");
	close_writer(w, NULL);
	json = slurp(path, &len);
	ck_assert(strstr(json, "\"tracecollect_base_ns\":5000000000}"));
	ck_assert(strstr(json, "d..2.     0.251000: sched_switch: prev_comm=swapper/0"));
	ck_assert(strstr(json, "\"name\":\"CPU:1 [12 EVENTS DROPPED]\",\"ts\":255000.000,"));
	ck_assert(strstr(json, "\"name\":\"leaf\",\"ts\":253090.000,\"dur\":10.000"));
	free(json);
}
END_TEST

/* The whole file, as reviewed against the importer's sources. */
START_TEST(test_perfetto_golden)
{
	char path[512], golden[1024], *json, *want;
	const char *top = getenv("top_srcdir"), *out = getenv("PERFETTO_GOLDEN_WRITE");
	size_t len, wlen, line = 1;

	json = export_one(path, sizeof(path), NULL, &len);
	if (out) {
		FILE *f = fopen(out, "w");

		ck_assert(f && fwrite(json, 1, len, f) == len && fclose(f) == 0);
		free(json);
		return;
	}
	snprintf(golden, sizeof(golden), "%s/tests/data/perfetto_golden.json", top ? top : ".");
	want = slurp(golden, &wlen);
	for (size_t i = 0; i < len && i < wlen; i++) {
		ck_assert_msg(json[i] == want[i], "%s line %zu differs at byte %zu", golden, line, i);
		line += json[i] == '\n';
	}
	TU_EQ(len, wlen);
	free(want);
	free(json);
}
END_TEST

static char *zip_member(zip_t *z, const char *name)
{
	zip_stat_t zs;
	zip_file_t *f;
	char *buf;

	ck_assert_msg(zip_stat(z, name, 0, &zs) == 0, "%s: not in the archive", name);
	buf = malloc(zs.size + 1);
	f = zip_fopen(z, name, 0);
	ck_assert(buf && f);
	ck_assert_int_eq(zip_fread(f, buf, zs.size), (zip_int64_t)zs.size);
	buf[zs.size] = 0;
	zip_fclose(f);
	return buf;
}

/* Several hosts: one archive, a manifest with one machine per file and its offset. */
START_TEST(test_perfetto_zip)
{
	char path[512], *man, *a, *b;
	struct export_stats st;
	struct export_writer *w;
	/* beta's events were placed by the collector's measurement (issue 36) */
	struct export_host h = { .name = "beta/../x", .kernel = "", .clock = "",
				 .header_page = "", .header_event = "", .printk = "",
				 .clock_offset_ns = -4999000123, .clock_source = "measured",
				 .clock_measured = true, .clock_uncertainty_ns = 21500,
				 .clock_drift_ppb = -37, .clock_disagree_ns = 5000012345 };
	zip_t *z;
	int zerr;

	snprintf(path, sizeof(path), "%s/fleet.zip", dir);
	w = open_writer(path, 3);
	record(w, "alpha");
	/* beta's first row is 2.5 s later: its base is 2 s after alpha's */
	TU_OK(w->ops->host_begin(w, &h));
	TU_OK(put_waking(w, "beta/../x", 0, 2500000, 1, "kworker/0:1", 7));
	TU_OK(w->ops->host_end(w));
	h.name = "alpha";	/* a second host of the same name gets its own file */
	h.clock_source = "host";	/* placed by its own clock, never measured */
	h.clock_measured = false;
	h.clock_offset_ns = 1000;
	TU_OK(w->ops->host_begin(w, &h));
	TU_OK(w->ops->host_end(w));
	close_writer(w, &st);
	TU_EQ(st.files, 1);
	z = zip_open(path, ZIP_RDONLY, &zerr);
	ck_assert_msg(z != NULL, "zip_open: %d", zerr);
	TU_EQ(zip_get_num_entries(z, 0), 4);
	man = zip_member(z, "perfetto_manifest.json");
	/* each file says how its host was placed: the clock figures of --hosts */
	ck_assert_str_eq(man, "{\"perfetto_manifest\":{\"version\":1,\"files\":[\n"
			 "{\"path\":\"alpha.json\",\"machine\":{\"name\":\"alpha\"},"
			 "\"tracecollect_clock\":{\"source\":\"\",\"offset_ns\":0}},\n"
			 "{\"path\":\"beta_.._x.json\",\"machine\":{\"name\":\"beta/../x\"},"
			 "\"clocks\":{\"sync_to\":{\"file\":\"alpha.json\"},\"offset_ns\":2000000000},"
			 "\"tracecollect_clock\":{\"source\":\"measured\",\"offset_ns\":-4999000123,"
			 "\"uncertainty_ns\":21500,\"drift_ppb\":-37,\"disagree_ns\":5000012345}},\n"
			 "{\"path\":\"alpha-2.json\",\"machine\":{\"name\":\"alpha\"},"
			 "\"tracecollect_clock\":{\"source\":\"host\",\"offset_ns\":1000}}\n]}}\n");
	a = zip_member(z, "alpha.json");
	b = zip_member(z, "beta_.._x.json");
	ck_assert(!strncmp(a, "{\"traceEvents\":[", 16));
	ck_assert(strstr(b, "[000] d..2.     0.500000: sched_waking: comm=kworker/0:1 pid=7"));
	ck_assert(strstr(b, "\"tracecollect_base_ns\":1795725232000000000"));
	free(man);
	free(a);
	free(b);
	zip_close(z);
}
END_TEST

/* An export that fails leaves nothing behind; one without rows is an empty trace. */
START_TEST(test_perfetto_fail)
{
	char path[512], *json;
	size_t len;
	struct export_writer *w;
	FILE *f;

	snprintf(path, sizeof(path), "%s/fail.json", dir);
	w = open_writer(path, 1);
	record(w, "alpha");
	TU_OK(w->ops->close(w, false, NULL));
	f = fopen(path, "r");
	ck_assert(f == NULL);
	w = open_writer(path, 1);
	close_writer(w, NULL);
	json = slurp(path, &len);
	ck_assert_str_eq(json, "{\"traceEvents\":[],\"systemTraceEvents\":\"\"}\n");
	free(json);
	snprintf(path, sizeof(path), "%s/fail.zip", dir);
	w = open_writer(path, 2);
	record(w, "alpha");
	TU_OK(w->ops->close(w, false, NULL));
	ck_assert(fopen(path, "r") == NULL);
}
END_TEST

static Suite *perfetto_suite(void)
{
	Suite *s = suite_create("perfetto");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tu_add_tests(tc, TU_TESTS(test_perfetto_lines, test_perfetto_slices, test_perfetto_calls,
				  test_perfetto_golden, test_perfetto_zip, test_perfetto_fail,
				  test_perfetto_names, test_perfetto_time_raw));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(perfetto_suite())
