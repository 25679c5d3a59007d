/*
 * test_fgraph.c - the function tracers for user programs (lib/fgraph,
 * arch/): tests/fgraph_prog, built with each hook (-pg -mfentry, -pg,
 * -finstrument-functions, and for aarch64 cross-built and run under
 * qemu-user), runs with TC_FTRACE set; this process attaches to its ring
 * file like the agent would, drains every page after the program exits,
 * decodes them with kbuffer and the registered formats (libtraceevent),
 * rebuilds each thread's call graph and compares it with the expected
 * one, call by call (function, depth, entry/exit, calltime = the entry's
 * timestamp, rettime >= calltime). By default the runtime writes one
 * funcgraph_exit per call and the entries are rebuilt from the exits'
 * calltime and depth, as traceq --graph does; with TC_FTRACE_ENTRIES=1
 * the recorded entries are compared too. Also: the filters (globs,
 * depth, duration threshold), the function tracer, and the config
 * parser.
 *
 * Environment: top_builddir (set by make check) finds the programs;
 * FGRAPH_QEMU and FGRAPH_AARCH64_PROG (set by tests/fgraph_cross.sh)
 * enable the aarch64 case.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <traceevent/event-parse.h>
#include <traceevent/kbuffer.h>
#include <unistd.h>

#include "arch/arch.h"
#include "lib/fgraph.h"
#include "common/ring.h"
#include "tests/testutil.h"

#define MAX_SYMS 64

struct ev {
	uint64_t ts;
	int pid;
	int kind;		/* 0 entry, 1 exit, 2 function */
	uint64_t func, depth, calltime, rettime, parent, overrun;
	unsigned seq;
};

struct run {
	struct ev *ev;
	size_t nev, cap;
	char *names[MAX_SYMS];
	uint64_t addrs[MAX_SYMS];
	unsigned nsyms;
	struct tep_handle *tep;
	size_t nentries;	/* funcgraph_entry events recorded */
	uint32_t page_size;	/* the ring's */
};

static const char *builddir(void)
{
	const char *b = getenv("top_builddir");

	return b ? b : ".";
}

/* The path of tests/fgraph_prog_fentry, the -pg -mfentry program, into
 * @buf (@len bytes). */
static void fentry_prog(char *buf, size_t len)
{
	snprintf(buf, len, "%s/tests/fgraph_prog_fentry", builddir());
}

/* Name of the traced function containing @a: the nearest symbol below. */
static const char *sym(const struct run *r, uint64_t a)
{
	const char *best = "?";
	uint64_t ba = 0;

	for (unsigned i = 0; i < r->nsyms; i++)
		if (r->addrs[i] <= a && r->addrs[i] >= ba) {
			ba = r->addrs[i];
			best = r->names[i];
		}
	return best;
}

/* The program's "sym NAME ADDR" lines from @f into @r, up to its end or
 * to a line @stop (NULL: none). Return: whether @stop came. */
static bool parse_syms(struct run *r, FILE *f, const char *stop)
{
	char line[256], name[128];
	unsigned long a;

	while (fgets(line, sizeof(line), f)) {
		if (stop && !strcmp(line, stop))
			return true;
		if (sscanf(line, "sym %127s %lx", name, &a) == 2 &&
		    r->nsyms < MAX_SYMS) {
			r->names[r->nsyms] = strdup(name);
			r->addrs[r->nsyms++] = a;
		}
	}
	return false;
}

static void load_formats(struct run *r, struct ring *ring)
{
	uint64_t cur = 0;
	const char *t;

	r->tep = tep_alloc();
	while (ring_format_next(ring, &cur, &t) == 1) {
		const char *nl = strchr(t, '\n');

		ck_assert_ptr_nonnull(nl);
		TU_EQ(tep_parse_event(r->tep, nl + 1, strlen(nl + 1), "ftrace"), 0);
	}
}

static uint64_t field(struct tep_event *e, void *data, int size,
		      const char *name)
{
	struct tep_format_field *f = tep_find_field(e, name);
	unsigned long long v;
	struct tep_record rec = { .data = data, .size = size };

	ck_assert_ptr_nonnull(f);
	TU_EQ(tep_read_number_field(f, rec.data, &v), 0);
	return v;
}

static void add_event(struct run *r, void *data, int size, uint64_t ts)
{
	int id = *(uint16_t *)data;
	struct tep_event *e = tep_find_event(r->tep, id);
	struct ev v = { .ts = ts, .pid = *(int32_t *)((char *)data + 4) };

	ck_assert_ptr_nonnull(e);
	if (!strcmp(e->name, "funcgraph_entry")) {
		v.kind = 0;
		v.func = field(e, data, size, "func");
		v.depth = field(e, data, size, "depth");
	} else if (!strcmp(e->name, "funcgraph_exit")) {
		v.kind = 1;
		v.func = field(e, data, size, "func");
		v.depth = field(e, data, size, "depth");
		v.calltime = field(e, data, size, "calltime");
		v.rettime = field(e, data, size, "rettime");
		v.overrun = field(e, data, size, "overrun");
		ck_assert_uint_eq(v.rettime, ts);
		ck_assert_uint_ge(v.rettime, v.calltime);
	} else if (!strcmp(e->name, "function")) {
		v.kind = 2;
		v.func = field(e, data, size, "ip");
		v.parent = field(e, data, size, "parent_ip");
	} else {
		return;
	}
	if (r->nev == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 256;
		r->ev = realloc(r->ev, r->cap * sizeof(*r->ev));
	}
	v.seq = (unsigned)r->nev;
	r->ev[r->nev++] = v;
	r->nentries += v.kind == 0;
}

/* The entry of each exit, at its calltime: the graph of a run that
 * recorded exits only (the default). */
static void add_entries(struct run *r)
{
	size_t n = r->nev;

	ck_assert_uint_eq(r->nentries, 0);
	for (size_t i = 0; i < n; i++) {
		struct ev v = r->ev[i];

		if (v.kind != 1)
			continue;
		v.kind = 0;
		v.ts = v.calltime;
		if (r->nev == r->cap) {
			r->cap *= 2;
			r->ev = realloc(r->ev, r->cap * sizeof(*r->ev));
		}
		r->ev[r->nev++] = v;
	}
}

static void drain(struct run *r, struct ring *ring)
{
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8,
					   KBUFFER_ENDIAN_LITTLE);
	struct ring_page_ref pg;
	unsigned long long ts;

	for (unsigned b = 0; b < ring_nr_bufs(ring); b++) {
		ring_reader_flush(ring, b);
		while (ring_reader_get(ring, b, &pg) == 0) {
			ck_assert(!pg.missed);
			kbuffer_load_subbuffer(kb, (void *)pg.data);
			for (void *d = kbuffer_read_event(kb, &ts); d;
			     d = kbuffer_next_event(kb, &ts))
				add_event(r, d, kbuffer_event_size(kb), ts);
			ring_reader_put(ring, b);
		}
	}
	kbuffer_free(kb);
}

/* Wait for the ring file the program creates, then attach to it. */
static struct ring *attach(const char *path, pid_t pid)
{
	struct ring *ring = NULL;
	int st;

	for (;;) {
		if (ring_open(path, &ring) == 0)
			break;
		TU_EQ(waitpid(pid, &st, WNOHANG), 0);
		usleep(2000);
	}
	ring_set_attached(ring, true);
	return ring;
}

/*
 * Start @argv with TC_FTRACE* from @env ("NAME=VALUE" strings, NULL-
 * terminated), its ring file at @path, and attach to the ring: *@ring,
 * and in *@out the program's stdout. Return: its pid.
 */
static pid_t start_prog(char *const argv[], char *const env[],
			const char *path, struct ring **ring, FILE **out)
{
	int pfd[2];
	pid_t pid;

	unlink(path);
	TU_SYS(pipe(pfd));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		setenv("TC_FTRACE", "function_graph", 1);
		setenv("TC_FTRACE_RING", path, 1);
		setenv("TC_FTRACE_WAIT_MS", "60000", 1);
		for (; env && *env; env++)
			putenv(*env);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	*ring = attach(path, pid);
	*out = fdopen(pfd[0], "r");
	return pid;
}

/*
 * Run @argv with TC_FTRACE* from @env ("NAME=VALUE" strings, NULL-
 * terminated) and collect its symbols and events into *@r.
 */
static void run_prog(char *const argv[], char *const env[], struct run *r)
{
	char path[64];
	int st;
	pid_t pid;
	struct ring *ring;
	FILE *out;

	memset(r, 0, sizeof(*r));
	snprintf(path, sizeof(path), "/dev/shm/tc-fgtest.%d", (int)getpid());
	pid = start_prog(argv, env, path, &ring, &out);
	parse_syms(r, out, NULL);
	fclose(out);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		ring_close(ring);	/* the failure below ends the test */
		unlink(path);
	}
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "%s: status %#x", argv[0], st);
	load_formats(r, ring);
	drain(r, ring);
	r->page_size = ring_page_size(ring);
	ring_close(ring);
	unlink(path);
	ck_assert_uint_gt(r->nsyms, 0);
}

static void run_free(struct run *r)
{
	for (unsigned i = 0; i < r->nsyms; i++)
		free(r->names[i]);
	free(r->ev);
	tep_free(r->tep);
}

static int by_time(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

static void append(char **buf, size_t *len, const char *s)
{
	size_t n = strlen(s);

	*buf = realloc(*buf, *len + n + 1);
	memcpy(*buf + *len, s, n + 1);
	*len += n;
}

/*
 * One thread's graph as text: "NAME {" at entry, "} NAME" at exit,
 * indented two spaces per depth. Exits are checked against their entries
 * (calltime is the entry's timestamp).
 */
static char *thread_graph(const struct run *r, int pid)
{
	char *buf = NULL, line[160];
	size_t len = 0;
	uint64_t open_ts[64] = { 0 };

	append(&buf, &len, "");
	for (size_t i = 0; i < r->nev; i++) {
		const struct ev *e = &r->ev[i];
		int d = (int)e->depth * 2;

		if (e->pid != pid || e->kind == 2)
			continue;
		ck_assert_uint_lt(e->depth, 64);
		if (e->kind == 0) {
			open_ts[e->depth] = e->ts;
			snprintf(line, sizeof(line), "%*s%s {\n", d, "",
				 sym(r, e->func));
		} else {
			if (open_ts[e->depth])
				ck_assert_uint_eq(e->calltime,
						  open_ts[e->depth]);
			open_ts[e->depth] = 0;
			snprintf(line, sizeof(line), "%*s} %s\n", d, "",
				 sym(r, e->func));
		}
		append(&buf, &len, line);
	}
	return buf;
}

static int strp_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* All threads' graphs, sorted, separated by "--\n". */
static char *graphs(struct run *r)
{
	int pids[16];
	char *g[16], *all = NULL;
	size_t n = 0, len = 0;

	if (r->nev)
		qsort(r->ev, r->nev, sizeof(*r->ev), by_time);
	for (size_t i = 0; i < r->nev; i++) {
		size_t j = 0;

		while (j < n && pids[j] != r->ev[i].pid)
			j++;
		if (j == n) {
			ck_assert_uint_lt(n, 16);
			pids[n++] = r->ev[i].pid;
		}
	}
	for (size_t i = 0; i < n; i++)
		g[i] = thread_graph(r, pids[i]);
	qsort(g, n, sizeof(g[0]), strp_cmp);
	append(&all, &len, "");
	for (size_t i = 0; i < n; i++) {
		append(&all, &len, g[i]);
		append(&all, &len, "--\n");
		free(g[i]);
	}
	return all;
}

/* ------------------------------------------------------- expectations */

#define LEAF(ind) ind "leaf {\n" ind "} leaf\n"

static const char expect_worker[] =
	"worker {\n"
	"  recurse {\n"
	"    recurse {\n"
	LEAF("      ")
	"    } recurse\n"
	LEAF("    ")
	"  } recurse\n"
	"  alt_caller {\n"
	"    on_alt {\n"
	LEAF("      ")
	"    } on_alt\n"
	"  } alt_caller\n"
	"} worker\n--\n";

static const char expect_run_head[] =
	"run {\n"
	"  recurse {\n"
	"    recurse {\n"
	"      recurse {\n"
	LEAF("        ")
	"      } recurse\n"
	LEAF("      ")
	"    } recurse\n"
	LEAF("    ")
	"  } recurse\n"
	"  sig_caller {\n"
	"    on_sig {\n"
	LEAF("      ")
	"    } on_sig\n"
	"  } sig_caller\n"
	"  jmp_caller {\n"
	"    deep1 {\n"
	"      deep2 {\n"
	"      } deep2\n"
	"    } deep1\n"
	LEAF("    ")
	"  } jmp_caller\n"
	"  sigjmp_caller {\n"
	"    on_sig2 {\n"
	"      sig_deep {\n"
	"      } sig_deep\n"
	"    } on_sig2\n"
	LEAF("    ")
	"  } sigjmp_caller\n";

/* A sibling call: tail_a's exit is written when tail_b is entered. */
static const char expect_tail_sibling[] =
	"  tail_a {\n"
	"  } tail_a\n"
	"  tail_b {\n"
	LEAF("    ")
	"  } tail_b\n";

/* -finstrument-functions calls the exit hook after tail_b: no tail call. */
static const char expect_tail_nested[] =
	"  tail_a {\n"
	"    tail_b {\n"
	LEAF("      ")
	"    } tail_b\n"
	"  } tail_a\n";

static const char expect_run_tail[] =
	"  fork_caller {\n"
	"  } fork_caller\n"
	"} run\n--\n";

/* The forked child returns from fork_caller through the copied shadow
 * stack, calls leaf and exits with run() on the stack. Its fork_caller
 * entry was recorded by the parent; rebuilt from the exit, it is the
 * child's. */
static const char expect_child[] =
	"  } fork_caller\n"
	LEAF("  ")
	"--\n";
static const char expect_child_rebuilt[] =
	"  fork_caller {\n"
	"  } fork_caller\n"
	LEAF("  ")
	"--\n";

static char *expected(bool sibling, bool rebuilt)
{
	char *parts[4], *all = NULL, *run = NULL;
	size_t len = 0, rlen = 0;

	append(&run, &rlen, expect_run_head);
	append(&run, &rlen, sibling ? expect_tail_sibling : expect_tail_nested);
	append(&run, &rlen, expect_run_tail);
	parts[0] = run;
	parts[1] = (char *)expect_worker;
	parts[2] = (char *)expect_worker;
	parts[3] = (char *)(rebuilt ? expect_child_rebuilt : expect_child);
	qsort(parts, 4, sizeof(parts[0]), strp_cmp);
	append(&all, &len, "");
	for (int i = 0; i < 4; i++)
		append(&all, &len, parts[i]);
	free(run);
	return all;
}

/* Run @argv (exits only, or entries too; with @more, a "NAME=VALUE" or
 * NULL, in its environment) and compare its graphs. */
static void check_graphs_env(char *const argv[], bool sibling, bool entries,
			     char *more)
{
	char *env[] = { more, NULL, NULL };
	char *got, *want;
	struct run r;

	env[more ? 1 : 0] = entries ? "TC_FTRACE_ENTRIES=1" : NULL;
	run_prog(argv, env, &r);
	if (entries)
		ck_assert_uint_gt(r.nentries, 0);
	else
		add_entries(&r);
	got = graphs(&r);
	want = expected(sibling, !entries);
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	run_free(&r);
}

static void check_graphs(char *const argv[], bool sibling, bool entries)
{
	check_graphs_env(argv, sibling, entries, NULL);
}

static void check_prog(const char *name, bool sibling)
{
	char prog[512];
	char *argv[] = { prog, NULL };

	snprintf(prog, sizeof(prog), "%s/tests/%s", builddir(), name);
	check_graphs(argv, sibling, false);
	check_graphs(argv, sibling, true);
}

START_TEST(graph_fentry)
{
	check_prog("fgraph_prog_fentry", true);
}
END_TEST

START_TEST(graph_mcount)
{
	check_prog("fgraph_prog_mcount", true);
}
END_TEST

START_TEST(graph_cyg)
{
	check_prog("fgraph_prog_cyg", false);
}
END_TEST

/* --------------------------------------------- values in registers */

/*
 * @argv runs fgraph_prog's "vec" mode (it exits 1 if a float, long
 * double or vector argument or result came back harmed: run_prog fails
 * then), with @env; each function it names was hooked: one exit each.
 */
static void check_vec(char *const argv[], char *const env[])
{
	struct run r;

	run_prog(argv, env, &r);
	for (unsigned i = 0; i < r.nsyms; i++) {
		unsigned exits = 0;

		for (size_t j = 0; j < r.nev; j++)
			exits += r.ev[j].kind == 1 &&
				 !strcmp(sym(&r, r.ev[j].func), r.names[i]);
		ck_assert_msg(exits == 1, "%s: %u exits", r.names[i], exits);
	}
	run_free(&r);
}

/* Each hook, on its fast path and (a filter set) through C; then
 * through C with the C library's AVX2 string functions, which end in
 * vzeroupper (glibc picks its EVEX ones on an AVX-512 CPU, which do not:
 * the tunable turns them off), so that the upper bits of every vector
 * argument register are cleared inside the hook unless it saved them. */
static void check_vec_prog(const char *name)
{
	char prog[512];
	char *argv[] = { prog, "vec", NULL };
	char *filter[] = { "TC_FTRACE_FILTER=vec_*", NULL };
	char *filter_avx2[] = { "TC_FTRACE_FILTER=vec_*",
		"GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,"
		"-AVX512BW,-AVX512DQ,-AVX512CD,-EVEX", NULL };

	snprintf(prog, sizeof(prog), "%s/tests/%s", builddir(), name);
	check_vec(argv, NULL);
	check_vec(argv, filter);
	check_vec(argv, filter_avx2);
}

START_TEST(vec_fentry)
{
	check_vec_prog("fgraph_prog_fentry");
}
END_TEST

START_TEST(vec_mcount)
{
	check_vec_prog("fgraph_prog_mcount");
}
END_TEST

START_TEST(vec_cyg)
{
	check_vec_prog("fgraph_prog_cyg");
}
END_TEST

/* ------------------------------------------ many pages, two CPUs */

static int by_pid_time(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return by_time(a, b);
}

/*
 * fgraph_prog "pages": two threads, PAGES_CALLS calls each, hopping CPUs
 * every 500: each thread's exits are all there, once each, in call
 * order (calltime not before the previous rettime), whatever ring page or
 * CPU buffer they went to; with the default 32 KiB pages (~27 pages a
 * thread) and with TC_FTRACE_PAGE_KB=4 (~215).
 */
#define PAGES_CALLS 20000

/* Two threads' pg_leaf loops of @calls calls each: every exit there
 * once, one thread's after the other's in time; frees @r. */
static void check_two_loops(struct run *r, size_t calls)
{
	unsigned threads = 0;
	size_t i = 0;

	ck_assert_uint_eq(r->nev, 2 * calls);
	qsort(r->ev, r->nev, sizeof(*r->ev), by_pid_time);
	while (i < r->nev) {
		size_t first = i;

		for (; i < r->nev && r->ev[i].pid == r->ev[first].pid; i++) {
			ck_assert_int_eq(r->ev[i].kind, 1);
			ck_assert_str_eq(sym(r, r->ev[i].func), "pg_leaf");
			ck_assert_uint_eq(r->ev[i].depth, 0);
			if (i > first)
				ck_assert_uint_ge(r->ev[i].calltime,
						  r->ev[i - 1].rettime);
		}
		ck_assert_uint_eq(i - first, calls);
		threads++;
	}
	ck_assert_uint_eq(threads, 2);
	run_free(r);
}

START_TEST(many_pages)
{
	static char *const page_kb[] = { NULL, "TC_FTRACE_PAGE_KB=4" };
	static const uint32_t page_size[] = { 32768, 4096 };
	char prog[512], n[16];
	char *argv[] = { prog, "pages", n, NULL };
	/* 2 x 20000 x 44 bytes fit in 4 MiB per CPU: nothing is dropped
	 * while the test reads only after the program exits */
	char *env[] = { "TC_FTRACE_BUFFER_KB=4096", page_kb[_i], NULL };
	struct run r;

	fentry_prog(prog, sizeof(prog));
	snprintf(n, sizeof(n), "%d", PAGES_CALLS);
	run_prog(argv, env, &r);
	ck_assert_uint_eq(r.page_size, page_size[_i]);
	check_two_loops(&r, PAGES_CALLS);
}
END_TEST

/*
 * fgraph_prog "pause": four bursts of 100 pg_leaf calls, 150 ms apart.
 * The first exit after each pause is too far from the page's last event
 * for the record's 27-bit delta: the x86_64 exit hook has already copied
 * the record's fields and taken the page's bytes when it finds out, gives
 * them back and leaves the record to C, which writes a time extend
 * first. All 400 exits are there, in order, each at its own time.
 */
START_TEST(long_pauses)
{
	char prog[512];
	char *argv[] = { prog, "pause", NULL };
	struct run r;

	fentry_prog(prog, sizeof(prog));
	run_prog(argv, NULL, &r);
	qsort(r.ev, r.nev, sizeof(*r.ev), by_time);
	ck_assert_uint_eq(r.nev, 400);
	for (size_t i = 0; i < r.nev; i++) {
		ck_assert_int_eq(r.ev[i].kind, 1);
		ck_assert_str_eq(sym(&r, r.ev[i].func), "pg_leaf");
		ck_assert_uint_eq(r.ev[i].depth, 0);
		if (i)
			ck_assert_uint_ge(r.ev[i].calltime, r.ev[i - 1].rettime);
	}
	run_free(&r);
}
END_TEST

/*
 * fgraph_prog "overflow": recurse(4100), each level also calling leaf,
 * on a shadow stack of FG_STACK_MAX (4096) entries. Levels 0..4095 get
 * a frame; levels 4096..4100 do not (5), nor do the leaf calls they make
 * (5) and the one made at level 4095, with the stack full (1). Every exit
 * comes after those 11 calls, and carries overrun 11, as the kernel's
 * funcgraph_exit carries the task's count: 4096 recurse exits, depths 0
 * to 4095, and 4095 leaf exits, depths 1 to 4095. Through the hooks'
 * own exit path (the record written in the trampoline) and C's.
 */
START_TEST(stack_overflow)
{
	static char *const bufs[] = { NULL, "TC_FTRACE_THREAD_BUFS=0" };
	char prog[512];
	char *argv[] = { prog, "overflow", NULL };
	char *env[] = { "TC_FTRACE_BUFFER_KB=4096", bufs[_i], NULL };
	size_t rec = 0, lf = 0;
	uint64_t maxd = 0;
	struct run r;

	fentry_prog(prog, sizeof(prog));
	run_prog(argv, env, &r);
	for (size_t i = 0; i < r.nev; i++) {
		const char *name = sym(&r, r.ev[i].func);

		ck_assert_int_eq(r.ev[i].kind, 1);
		ck_assert_uint_eq(r.ev[i].overrun, 11);
		if (!strcmp(name, "recurse")) {
			rec++;
			if (r.ev[i].depth > maxd)
				maxd = r.ev[i].depth;
		} else {
			ck_assert_str_eq(name, "leaf");
			ck_assert_uint_ge(r.ev[i].depth, 1);
			lf++;
		}
	}
	ck_assert_uint_eq(rec, FG_STACK_MAX);
	ck_assert_uint_eq(maxd, FG_STACK_MAX - 1);
	ck_assert_uint_eq(lf, FG_STACK_MAX - 1);
	run_free(&r);
}
END_TEST

/*
 * A thread's key destructors that run after the runtime's own (which
 * gives the shadow stack and the own buffer back) call traced functions
 * too: the program does not crash (it once wrote to the unmapped
 * stack), and all four calls of dtor_leaf are there, in order.
 */
START_TEST(thread_dtor)
{
	char prog[512];
	char *argv[] = { prog, "dtor", NULL };
	struct run r;
	unsigned n = 0;

	fentry_prog(prog, sizeof(prog));
	run_prog(argv, NULL, &r);
	qsort(r.ev, r.nev, sizeof(*r.ev), by_time);
	for (size_t i = 0; i < r.nev; i++) {
		if (r.ev[i].kind != 1 || strcmp(sym(&r, r.ev[i].func),
						 "dtor_leaf"))
			continue;
		ck_assert_uint_eq(r.ev[i].depth, 0);
		n++;
	}
	ck_assert_uint_eq(n, 4);
	run_free(&r);
}
END_TEST

/* The same graphs whoever writes the exits: no thread with a buffer of
 * its own (all through the per-CPU buffers), one (the others share the
 * per-CPU buffers), and every thread, the forked child included. */
START_TEST(graph_thread_bufs)
{
	static char *const bufs[] = { "TC_FTRACE_THREAD_BUFS=0",
				      "TC_FTRACE_THREAD_BUFS=1",
				      "TC_FTRACE_THREAD_BUFS=8" };
	char prog[512];
	char *argv[] = { prog, NULL };

	fentry_prog(prog, sizeof(prog));
	check_graphs_env(argv, true, false, bufs[_i]);
	check_graphs_env(argv, true, true, bufs[_i]);
}
END_TEST

/*
 * Calls completed before a kill -9 stay recoverable: two threads (each
 * with a buffer of its own, or none: @_i) call pg_leaf HOLD_CALLS times
 * and stay; the test reads once while they live (own buffers: copies of
 * the pages in hand), kills the program, recovers every buffer and
 * reads the rest. Every call is there once, in order, with its times.
 */
#define HOLD_CALLS 5000

START_TEST(killed_program)
{
	static char *const bufs[] = { "TC_FTRACE_THREAD_BUFS=2",
				      "TC_FTRACE_THREAD_BUFS=0" };
	char prog[512], n[16], path[64];
	char *argv[] = { prog, "hold", n, NULL };
	char *env[] = { "TC_FTRACE_BUFFER_KB=4096", bufs[_i], NULL };
	struct run r;
	struct ring *ring;
	pid_t pid;
	FILE *out;
	int st;

	fentry_prog(prog, sizeof(prog));
	snprintf(n, sizeof(n), "%d", HOLD_CALLS);
	snprintf(path, sizeof(path), "/dev/shm/tc-fgkill.%d", (int)getpid());
	memset(&r, 0, sizeof(r));
	pid = start_prog(argv, env, path, &ring, &out);
	ck_assert_msg(parse_syms(&r, out, "held\n"),
		      "the program did not get to hold");
	load_formats(&r, ring);
	drain(&r, ring);	/* own buffers: copies of the pages in hand */
	if (_i == 0)
		ck_assert_uint_gt(r.nev, 0);
	TU_SYS(kill(pid, SIGKILL));
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	fclose(out);
	for (unsigned b = 0; b < ring_nr_bufs(ring); b++)
		ck_assert_int_ge(ring_reader_recover(ring, b), 0);
	drain(&r, ring);
	ring_close(ring);
	unlink(path);
	check_two_loops(&r, HOLD_CALLS);
}
END_TEST

/* aarch64: the cross-built program under qemu-user (tests/fgraph_cross.sh
 * sets the variables; without them the case says why and passes). */
START_TEST(graph_aarch64)
{
	const char *q = getenv("FGRAPH_QEMU"), *p = getenv("FGRAPH_AARCH64_PROG");
	char *argv[] = { (char *)q, (char *)p, NULL };

	if (!q || !p) {
		printf("test_fgraph: aarch64 case skipped here; "
		       "tests/fgraph_cross.sh runs it\n");
		return;
	}
	check_graphs(argv, true, false);
	check_graphs(argv, true, true);
	{
		char *vargv[] = { (char *)q, (char *)p, "vec", NULL };
		char *filter[] = { "TC_FTRACE_FILTER=vec_*", NULL };

		check_vec(vargv, NULL);
		check_vec(vargv, filter);
	}
}
END_TEST

/* ---------------------------------------------------------- filters */

/* The graphs of fgraph_prog_fentry run with @env; with @thresh the
 * exits stand alone, as recorded (no entry is rebuilt). */
static char *filtered_as(char *const env[], bool thresh)
{
	char prog[512], *got;
	char *argv[] = { prog, NULL };
	struct run r;

	fentry_prog(prog, sizeof(prog));
	run_prog(argv, env, &r);
	if (!r.nentries && !thresh)
		add_entries(&r);
	got = graphs(&r);
	run_free(&r);
	return got;
}

static char *filtered(char *const env[])
{
	return filtered_as(env, false);
}

/* Include globs: only recurse and the tail_* pair are hooked. */
START_TEST(filter_include)
{
	char *env[] = { "TC_FTRACE_FILTER=recurse,tail_?", NULL };
	char *got = filtered(env);

	ck_assert_str_eq(got,
		"recurse {\n"
		"  recurse {\n"
		"    recurse {\n"
		"    } recurse\n"
		"  } recurse\n"
		"} recurse\n"
		"tail_a {\n"
		"} tail_a\n"
		"tail_b {\n"
		"} tail_b\n--\n"
		"recurse {\n"
		"  recurse {\n"
		"  } recurse\n"
		"} recurse\n--\n"
		"recurse {\n"
		"  recurse {\n"
		"  } recurse\n"
		"} recurse\n--\n");
	free(got);
}
END_TEST

/* Excluded functions are not hooked; their callees are. */
START_TEST(filter_exclude_depth)
{
	char *env[] = { "TC_FTRACE_NOTRACE=run,worker,*caller,on_*,leaf,"
			"tail*,deep*,sig_deep", "TC_FTRACE_DEPTH=2", NULL };
	char *got = filtered(env);

	ck_assert_str_eq(got,
		"recurse {\n"
		"  recurse {\n"
		"  } recurse\n"
		"} recurse\n--\n"
		"recurse {\n"
		"  recurse {\n"
		"  } recurse\n"
		"} recurse\n--\n"
		"recurse {\n"
		"  recurse {\n"
		"  } recurse\n"
		"} recurse\n--\n");
	free(got);
}
END_TEST

/* A threshold no call reaches records nothing; with 1 µs, run (which
 * waits for threads and a child) is recorded, as an exit only. */
START_TEST(filter_thresh)
{
	char *env[] = { "TC_FTRACE_THRESH=1000000", NULL };
	char *got = filtered_as(env, true);
	char *env2[] = { "TC_FTRACE_THRESH=1", "TC_FTRACE_FILTER=run", NULL };
	char *got2;

	ck_assert_str_eq(got, "");
	free(got);
	got2 = filtered_as(env2, true);
	ck_assert_str_eq(got2, "} run\n--\n");
	free(got2);
}
END_TEST

/* The function tracer: one event per call with the caller's address. */
START_TEST(function_tracer)
{
	char prog[512];
	char *argv[] = { prog, NULL };
	char *env[] = { "TC_FTRACE=function", NULL };
	struct run r;
	unsigned leafs = 0, recurses = 0;

	fentry_prog(prog, sizeof(prog));
	run_prog(argv, env, &r);
	for (size_t i = 0; i < r.nev; i++) {
		ck_assert_int_eq(r.ev[i].kind, 2);
		if (!strcmp(sym(&r, r.ev[i].func), "leaf"))
			leafs++;
		if (!strcmp(sym(&r, r.ev[i].func), "recurse")) {
			recurses++;
			ck_assert(!strcmp(sym(&r, r.ev[i].parent), "recurse") ||
				  !strcmp(sym(&r, r.ev[i].parent), "run") ||
				  !strcmp(sym(&r, r.ev[i].parent), "worker"));
		}
	}
	/* leaf: 3 (recurse) + 2*3 (workers) + on_sig, jmp, sigjmp, tail_b,
	 * child */
	ck_assert_uint_eq(leafs, 3 + 6 + 5);
	ck_assert_uint_eq(recurses, 3 + 2 * 2);
	run_free(&r);
}
END_TEST

/* ------------------------------------------------------ config parse */

static const char *const *cfg_env;

static const char *cfg_get(const char *name)
{
	size_t n = strlen(name);

	for (const char *const *e = cfg_env; *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

START_TEST(config_parse)
{
	static const char *const good[] = {
		"TC_FTRACE=function_graph", "TC_FTRACE_FILTER=a*,,b",
		"TC_FTRACE_DEPTH=3", "TC_FTRACE_THRESH=10",
		"TC_FTRACE_ENTRIES=1", "TC_FTRACE_BUFFER_KB=100",
		"TC_FTRACE_PAGE_KB=4", NULL };
	static const char *const dflt[] = { "TC_FTRACE=function", NULL };
	static const char *const big[] = {
		"TC_FTRACE=function", "TC_FTRACE_BUFFER_KB=100", NULL };
	static const char *const bad_page[][3] = {
		{ "TC_FTRACE=function", "TC_FTRACE_PAGE_KB=2", NULL },
		{ "TC_FTRACE=function", "TC_FTRACE_PAGE_KB=12", NULL },
		{ "TC_FTRACE=function", "TC_FTRACE_PAGE_KB=64", NULL },
		{ "TC_FTRACE=function", "TC_FTRACE_PAGE_KB=8k", NULL } };
	static const char *const bad_tracer[] = { "TC_FTRACE=funky", NULL };
	static const char *const bad_num[] = {
		"TC_FTRACE=function", "TC_FTRACE_DEPTH=3x", NULL };
	static const char *const neg[] = {
		"TC_FTRACE=function", "TC_FTRACE_THRESH=-1", NULL };
	static const char *const bad_entries[] = {
		"TC_FTRACE=function_graph", "TC_FTRACE_ENTRIES=2", NULL };
	struct fgraph_config c;

	cfg_env = good;
	TU_OK(fgraph_config_parse(cfg_get, &c));
	ck_assert_int_eq(c.tracer, FGRAPH_GRAPH);
	ck_assert_str_eq(c.include[0], "a*");
	ck_assert_str_eq(c.include[1], "b");
	ck_assert_ptr_null(c.include[2]);
	ck_assert_ptr_null(c.exclude);
	ck_assert_uint_eq(c.max_depth, 3);
	ck_assert_uint_eq(c.thresh_us, 10);
	ck_assert(c.entries);
	ck_assert_uint_eq(c.page_size, 4096);
	ck_assert_uint_eq(c.pages_per_cpu, 32);	/* 100 KiB: 32 pages */
	ck_assert(fgraph_glob_list_match(c.include, "abc"));
	ck_assert(!fgraph_glob_list_match(c.include, "cab"));
	fgraph_config_free(&c);
	cfg_env = dflt;		/* 32 KiB pages, 1 MiB per CPU */
	TU_OK(fgraph_config_parse(cfg_get, &c));
	ck_assert_uint_eq(c.page_size, 32768);
	ck_assert_uint_eq(c.pages_per_cpu, 32);
	fgraph_config_free(&c);
	cfg_env = big;		/* 100 KiB: four 32 KiB pages */
	TU_OK(fgraph_config_parse(cfg_get, &c));
	ck_assert_uint_eq(c.pages_per_cpu, 4);
	fgraph_config_free(&c);
	for (size_t i = 0; i < sizeof(bad_page) / sizeof(bad_page[0]); i++) {
		cfg_env = bad_page[i];
		TU_ERR(fgraph_config_parse(cfg_get, &c), -EINVAL);
	}
	cfg_env = bad_tracer;
	TU_ERR(fgraph_config_parse(cfg_get, &c), -EINVAL);
	cfg_env = bad_num;
	TU_ERR(fgraph_config_parse(cfg_get, &c), -EINVAL);
	cfg_env = neg;
	TU_ERR(fgraph_config_parse(cfg_get, &c), -EINVAL);
	cfg_env = bad_entries;
	TU_ERR(fgraph_config_parse(cfg_get, &c), -EINVAL);
}
END_TEST

static Suite *fgraph_suite(void)
{
	Suite *s = suite_create("fgraph");
	TCase *tc = tcase_create("graph");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, config_parse);
#if defined(__x86_64__)
	tu_add_tests(tc, TU_TESTS(graph_fentry, graph_mcount, graph_cyg, filter_include,
					filter_exclude_depth, filter_thresh, function_tracer,
					vec_fentry, vec_mcount, vec_cyg, thread_dtor,
					long_pauses));
	tcase_add_loop_test(tc, many_pages, 0, 2);
	tcase_add_loop_test(tc, stack_overflow, 0, 2);
	tcase_add_loop_test(tc, graph_thread_bufs, 0, 3);
	tcase_add_loop_test(tc, killed_program, 0, 2);
#endif
	suite_add_tcase(s, tc);
	tc = tcase_create("aarch64");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, graph_aarch64);
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(fgraph_suite())
