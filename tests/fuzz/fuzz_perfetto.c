/*
 * fuzz_perfetto.c - libFuzzer target for the Perfetto writer
 * (traceq/perfetto_write.c) fed peers' strings: whatever a host name, a
 * comm, a function's name or a program's event name holds, the file
 * stays one Perfetto's importer takes whole: every line of its
 * systemTraceEvents, read as json_trace_tokenizer.cc reads it, matches
 * the systrace tokenizer's pattern (else the import fails), the peers'
 * bytes add no line, and no raw control byte or invalid UTF-8 reaches
 * the JSON. With several hosts (the first byte's low bit), the archive
 * and its manifest are written too.
 *
 * Input: a flags byte, then NUL-separated strings: host, comm, prev_comm,
 * next_comm, func_sym, a program's event name.
 */
#include "config.h"

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "traceq/export.h"
#include "traceq/hostcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What the writer links but never calls without a hostcache (hostcache.c). */
const char *hostcache_sym(void *ctx, const char *host, uint64_t addr, uint64_t *start)
{
	abort();
}

bool hostcache_sym_pending(const struct hostcache *hc)
{
	abort();
}

int hostcache_sym_fetch(struct hostcache *hc, int64_t at)
{
	abort();
}

size_t hostcache_printk(void *ctx, const char *host, int64_t wall_ns, const uint64_t **addr,
			char *const **fmt)
{
	abort();
}

int32_t hostcache_tgid(void *ctx, const char *host, int32_t pid)
{
	abort();
}

/* tests/test_perfetto.c's, in POSIX ERE (systrace_line_tokenizer.cc's pattern) */
#define LINE_ERE "-([0-9]+)[[:space:]]+\\(?[[:space:]]*([0-9]+|-+)?\\)?[[:space:]]?\\[([0-9]+)\\]" \
	"[[:space:]]*([a-zA-Z.]{3}[0-9a-f.]{1,2}[[:space:]]*)?([0-9]+\\.[0-9]+):[[:space:]]+" \
	"([^[:space:]]+):"

/* a sched_switch of few fields: the two comms of its text are the peer's */
static const char switch_format[] =
	"name: sched_switch\nID: 372\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:long prev_state;\toffset:24;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:32;\tsize:16;\tsigned:0;\n\n"
	"print fmt: \"prev_comm=%s prev_state=%s ==> next_comm=%s\", REC->prev_comm, "
	"(REC->prev_state & 0xff) ? __print_flags(REC->prev_state & 0xff, \"|\", { 0x01, \"S\" }, "
	"{ 0x02, \"D\" }) : \"R\", REC->next_comm\n";

static const char exit_format[] =
	"name: funcgraph_exit\nID: 10\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned int depth;\toffset:16;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long long calltime;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long long rettime;\toffset:32;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"%llx\", REC->rettime\n";

static char *switch_cols[] = { "host", "cpu", "ts", "trace_ts", "pid", "comm",
			       "common_flags", "common_preempt_count", "common_pid",
			       "prev_comm", "prev_state", "next_comm" };
static char *exit_cols[] = { "host", "cpu", "ts", "trace_ts", "pid", "comm",
			     "func", "depth", "calltime", "rettime", "func_sym" };

static struct qmsg_value str(const char *s)
{
	return (struct qmsg_value){ .kind = QV_STR, .s = { (char *)s, strlen(s) } };
}

static struct qmsg_value num(int64_t v)
{
	return (struct qmsg_value){ .kind = QV_INT, .i = v };
}

/* The host's rows: a switch between the two comms, a call, a program's event. */
static void rows(struct export_writer *w, char *const s[6], uint8_t flags)
{
	int64_t ts = 1795725230123456789ll;
	struct qmsg_reply sv = { .ok = true, .event = "sched:sched_switch", .ncols = 12,
				 .cols = switch_cols, .format = (char *)switch_format };
	struct qmsg_reply ev = { .ok = true, .event = "ftrace:funcgraph_exit", .ncols = 11,
				 .cols = exit_cols, .format = (char *)exit_format };
	struct qmsg_reply iv = ev;
	struct qmsg_value v[16] = {
		str(s[0]), num(flags >> 4), num(ts), num(ts), num(7), str(s[1]),
		num(flags), num(flags >> 2), num(7), str(s[2]), num(flags >> 1), str(s[3]),
	};
	struct export_row r = { .host = s[0], .cpu = flags >> 4, .ts = ts, .pid = 7,
				.comm = s[1], .view = &sv, .vals = v };

	if (w->ops->row(w, &r))
		abort();
	v[6] = num(0x401000);
	v[7] = num(flags);
	v[8] = num(1000);
	v[9] = num(2000 + flags);
	v[10] = str(s[4]);
	r.view = &ev;
	if (w->ops->row(w, &r))
		abort();
	iv.event = s[5];
	r.view = &iv;
	r.program = true;
	if (w->ops->row(w, &r))
		abort();
}

/* Whether @p[@n] is valid UTF-8 holding no control byte (JSON's structure is ASCII). */
static bool clean_utf8(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = p[i] < 0x80 ? 1 : (p[i] & 0xe0) == 0xc0 ? 2 : (p[i] & 0xf0) == 0xe0 ? 3 :
			   (p[i] & 0xf8) == 0xf0 ? 4 : 0;

		if (!k || i + k > n || (p[i] < 0x20 && p[i] != '\n') || p[i] == 0x7f)
			return false;
		for (size_t j = 1; j < k; j++)
			if ((p[i + j] & 0xc0) != 0x80)
				return false;
		i += k;
	}
	return true;
}

/* Each line of systemTraceEvents (escapes undone as Perfetto does) matches, or is '#'. */
static void check_lines(const char *json, const regex_t *re)
{
	const char *s = strstr(json, "\"systemTraceEvents\":\"");
	char line[16384];
	size_t len = 0, lines = 0;
	bool esc = false;

	if (!s)
		abort();
	for (s += 21; *s && !(*s == '"' && !esc); s++) {
		if (esc && *s == 'n') {
			line[len] = 0;
			if (line[0] != '#' && regexec(re, line, 0, NULL, 0))
				abort();	/* the importer would refuse the file */
			lines += line[0] != '#';
			len = esc = 0;
			continue;
		}
		if (len < sizeof(line) - 1 && (esc || *s != '\\'))
			line[len++] = *s;
		esc = *s == '\\' && !esc;
	}
	if (lines != 1 || len)
		abort();	/* a peer's byte made or cut a line */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static regex_t re;
	static bool ready;
	char dir[] = "/tmp/fuzz-perfetto-XXXXXX", path[64], err[EXPORT_ERR_LEN];
	char *in, *s[6], *json = NULL;
	struct export_writer *w;
	struct export_host h = { .kernel = "", .clock = "", .header_page = "",
				 .header_event = "", .printk = "" };
	struct export_opts o = { .path = path, .err = err };
	size_t n = 0, len = 0;
	FILE *f;

	if (size < 1 || size > 4096 || !mkdtemp(dir))
		return 0;
	if (!ready && regcomp(&re, LINE_ERE, REG_EXTENDED) == 0)
		ready = true;
	in = calloc(1, size + 8);
	memcpy(in, data + 1, size - 1);
	for (char *p = in; n < 6; p += strlen(p) + (p < in + size))
		s[n++] = p;
	o.nhosts = (data[0] & 1) + 1;
	snprintf(path, sizeof(path), "%s/out", dir);
	if (export_perfetto_ops.open(&o, &w) == 0) {
		h.name = s[0];
		if (w->ops->host_begin(w, &h) || (rows(w, s, data[0]), w->ops->host_end(w)) ||
		    w->ops->close(w, true, NULL))
			abort();
	}
	if (o.nhosts == 1 && (f = fopen(path, "rb"))) {
		json = calloc(1, 1 << 20);
		len = fread(json, 1, (1 << 20) - 1, f);
		fclose(f);
		if (!clean_utf8((const unsigned char *)json, len))
			abort();
		check_lines(json, &re);
	}
	free(json);
	unlink(path);
	rmdir(dir);
	free(in);
	return 0;
}
