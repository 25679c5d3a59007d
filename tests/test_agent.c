/*
 * test_agent.c - check tests for agent/ against the real kernel: the tracefs
 * instance module (create, clock, events, formats, stats, teardown), the
 * per-CPU page reader (its event count must equal the kernel's 'entries'),
 * the parsers of kernel text, the host facts and clock sample, and the
 * flight recorder's states with a --freeze-on trigger on this process's
 * getppid(2) (one FROZE per trigger, none for hits until the re-arm).
 *
 * Needs a writable tracefs; mounts it at /sys/kernel/tracing when it is not
 * mounted, and skips (exit 77) when it still is not writable. Every instance
 * is named tctest-<runner pid>-..., and the runner removes any of those a
 * failed test left behind.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <poll.h>
#include <tracefs.h>

#include "common/page.h"
#include "common/tc_error.h"
#include "agent/comms.h"
#include "agent/hostinfo.h"
#include "agent/reader.h"
#include "agent/recorder.h"
#include "agent/tracing.h"
#include "tests/testutil.h"

#define TRACEFS_DIR	"/sys/kernel/tracing"
#define MAX_CPUS	1024

static pid_t runner_pid;
/* The open reader of the running test, closed after the test if it failed
 * (with CK_FORK=no its descriptors would keep the instance busy). */
static struct reader *cur_reader;

/* A fresh instance name of this run: tctest-<runner>-<pid>-<n>. */
static const char *inst_name(void)
{
	static char name[64];
	static int n;

	snprintf(name, sizeof(name), "tctest-%d-%d-%d", (int)runner_pid,
		 (int)getpid(), n++);
	return name;
}

static bool inst_dir_exists(const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/instances/%s", tracefs_tracing_dir(),
		 name);
	return stat(path, &st) == 0;
}

static struct tracing *open_or_fail(const char *name, size_t kb)
{
	struct tracing *t = NULL;
	char err[512] = "";
	int ret;

	ret = tracing_open(name, kb, &t, err, sizeof(err));
	ck_assert_msg(ret == 0, "tracing_open(%s): %s (%s)", name,
		      tc_strerror(ret), err);
	return t;
}

static char *inst_file(struct tracing *t, const char *file)
{
	char *s = tracefs_instance_file_read(tracing_instance(t), file, NULL);

	ck_assert_msg(s != NULL, "cannot read %s", file);
	return s;
}

/* ---- the instance ------------------------------------------------------ */

START_TEST(test_instance_lifecycle)
{
	char name[64], *clock, *sub;
	struct tracing *t;
	long long kb = 0;

	snprintf(name, sizeof(name), "%s", inst_name());
	t = open_or_fail(name, 0);
	ck_assert_str_eq(tracing_name(t), name);
	ck_assert(inst_dir_exists(name));
	clock = inst_file(t, "trace_clock");
	ck_assert_msg(strstr(clock, "[" TRACING_CLOCK "]") != NULL,
		      "trace_clock is %s", clock);
	free(clock);
	ck_assert_int_ge(tracing_ncpus(t), 1);
	ck_assert_int_ge(tracing_ncpus(t), sysconf(_SC_NPROCESSORS_ONLN));
	if (tracefs_file_exists(tracing_instance(t), "buffer_subbuf_size_kb")) {
		TU_EQ(tracefs_instance_file_read_number(tracing_instance(t),
							"buffer_subbuf_size_kb", &kb), 0);
		ck_assert_uint_eq(tracing_page_size(t), (uint64_t)kb * 1024);
	} else {
		ck_assert_uint_eq(tracing_page_size(t), getpagesize());
	}
	sub = inst_file(t, "tracing_on");
	TU_EQ(atoi(sub), 0);	/* off until tracing_start()... */
	free(sub);
	TU_OK(tracing_start(t));
	sub = inst_file(t, "tracing_on");
	ck_assert_int_eq(atoi(sub), 1);
	free(sub);
	TU_OK(tracing_stop(t));
	sub = inst_file(t, "tracing_on");
	TU_EQ(atoi(sub), 0);
	free(sub);
	tracing_close(t);
	ck_assert(!inst_dir_exists(name));
}
END_TEST

START_TEST(test_buffer_size)
{
	struct tracing *t = open_or_fail(inst_name(), 4096);
	ssize_t kb = tracefs_instance_get_buffer_size(tracing_instance(t), 0);

	/* the kernel rounds up to whole sub-buffers */
	ck_assert_int_ge(kb, 4096);
	ck_assert_int_lt(kb, 4096 + 64);
	tracing_close(t);
}
END_TEST

START_TEST(test_existing_instance_left_alone)
{
	struct tracefs_instance *other;
	struct tracing *t = (struct tracing *)&t;
	const char *name = inst_name();
	char err[512] = "";

	other = tracefs_instance_create(name);
	ck_assert_ptr_nonnull(other);
	TU_ERR(tracing_open(name, 0, &t, err, sizeof(err)), -EEXIST);
	ck_assert_ptr_eq(t, (struct tracing *)&t);	/* not written */
	ck_assert_msg(strstr(err, name) != NULL, "err: %s", err);
	ck_assert(inst_dir_exists(name));
	TU_EQ(tracefs_instance_destroy(other), 0);
	tracefs_instance_free(other);
}
END_TEST

START_TEST(test_teardown_while_tracing)
{
	char name[64], err[512];
	struct tracing *t;

	snprintf(name, sizeof(name), "%s", inst_name());
	t = open_or_fail(name, 0);
	TU_OK(tracing_enable(t, "sched", err, sizeof(err)));
	TU_OK(tracing_start(t));
	usleep(1000);
	tracing_close(t);
	ck_assert(!inst_dir_exists(name));
}
END_TEST

/* ---- events ------------------------------------------------------------- */

static void expect_bad_spec(struct tracing *t, const char *spec, int code)
{
	char err[512] = "";
	int ret = tracing_enable(t, spec, err, sizeof(err));

	ck_assert_msg(ret == code, "'%s': got %s, want %s", spec,
		      tc_strerror(ret), tc_strerror(code));
	ck_assert_msg(strstr(err, spec) != NULL, "'%s' not named in: %s",
		      spec, err);
}

START_TEST(test_bad_event_spec)
{
	struct tracing *t = open_or_fail(inst_name(), 0);

	expect_bad_spec(t, "nosuchsystem_tc", TC_ERR_UNKNOWN_EVENT);
	expect_bad_spec(t, "sched:nosuchevent_tc", TC_ERR_UNKNOWN_EVENT);
	expect_bad_spec(t, "sched:", TC_ERR_SYNTAX);
	expect_bad_spec(t, ":sched_switch", TC_ERR_SYNTAX);
	expect_bad_spec(t, "../..", TC_ERR_SYNTAX);
	expect_bad_spec(t, "sched/sched_switch", TC_ERR_SYNTAX);
	ck_assert_uint_eq(tracing_event_count(t), 0);
	tracing_close(t);
}
END_TEST

START_TEST(test_enable_event_and_format)
{
	struct tracing *t = open_or_fail(inst_name(), 0);
	const char *sys, *name;
	char err[512], *text, *en;
	size_t len;

	TU_OK(tracing_enable(t, "sched:sched_switch", err, sizeof(err)));
	TU_OK(tracing_enable(t, "sched:sched_switch", err, sizeof(err)));
	ck_assert_uint_eq(tracing_event_count(t), 1);	/* no duplicate */
	en = inst_file(t, "events/sched/sched_switch/enable");
	ck_assert_int_eq(atoi(en), 1);
	free(en);
	TU_OK(tracing_format(t, 0, &sys, &name, &text, &len));
	ck_assert_str_eq(sys, "sched");
	ck_assert_str_eq(name, "sched_switch");
	ck_assert_uint_eq(len, strlen(text));
	ck_assert(strncmp(text, "name: sched_switch\n", 19) == 0);
	ck_assert(strstr(text, "field:char prev_comm[16]") != NULL);
	free(text);
	TU_ERR(tracing_format(t, 1, &sys, &name, &text, &len), -ERANGE);
	tracing_close(t);
}
END_TEST

START_TEST(test_enable_system)
{
	struct tracing *t = open_or_fail(inst_name(), 0);
	const char *sys, *name;
	bool seen_switch = false;
	char err[512], *text;
	size_t i, len;

	TU_OK(tracing_enable(t, "sched", err, sizeof(err)));
	ck_assert_uint_gt(tracing_event_count(t), 1);
	for (i = 0; i < tracing_event_count(t); i++) {
		TU_OK(tracing_format(t, i, &sys, &name, &text, &len));
		ck_assert_str_eq(sys, "sched");
		seen_switch |= strcmp(name, "sched_switch") == 0;
		ck_assert(strncmp(text, "name: ", 6) == 0);
		free(text);
	}
	ck_assert(seen_switch);
	tracing_close(t);
}
END_TEST

START_TEST(test_header_page)
{
	struct tracing *t = open_or_fail(inst_name(), 0);
	char *text;
	size_t len;

	TU_OK(tracing_header_page(t, &text, &len));
	ck_assert_uint_eq(len, strlen(text));
	ck_assert(strstr(text, "field: u64 timestamp") != NULL);
	ck_assert(strstr(text, "commit") != NULL);
	free(text);
	tracing_close(t);
}
END_TEST

/* ---- reading pages ------------------------------------------------------ */

struct seen {
	uint64_t next_seq[MAX_CPUS];
	uint64_t events;
	uint64_t pages;
	uint32_t page_size;
	int missed;
	enum reader_mode mode;
};

/* Checks each page as the collector will see it: head and data joined. */
static int count_page(void *arg, const struct reader_page *p)
{
	struct seen *s = arg;
	uint8_t *page = calloc(1, s->page_size);

	ck_assert_int_lt(p->cpu, MAX_CPUS);
	ck_assert_uint_eq(p->seq, s->next_seq[p->cpu] + 1);
	s->next_seq[p->cpu] = p->seq;
	ck_assert_uint_le(p->head_len + p->len, s->page_size);
	ck_assert_uint_ge(p->head_len + p->len, 8 + sizeof(long));
	if (s->mode == READER_READ)	/* trimmed to the data */
		ck_assert_uint_eq(p->head_len, 0);
	else
		ck_assert_uint_eq(p->head_len, 8 + sizeof(long));
	if (p->head_len)
		memcpy(page, p->head, p->head_len);
	memcpy(page + p->head_len, p->data, p->len);
	ck_assert_int_eq(reader_page_events(page, s->page_size), p->events);
	free(page);
	s->events += p->events;
	s->pages++;
	s->missed += p->missed_events;
	return 0;
}

/* A child that sleeps 1 ms 50 times: each sleep switches it out (and, on
 * an idle CPU, back in), so at least 50 sched_switch events. */
static void switch_workload(void)
{
	pid_t pid = fork();
	int i, status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		for (i = 0; i < 50; i++)
			usleep(1000);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}

static uint64_t kernel_entries(struct tracing *t)
{
	struct tracing_cpu_stats st;
	uint64_t sum = 0;
	int cpu;

	for (cpu = 0; cpu < tracing_ncpus(t); cpu++) {
		TU_OK(tracing_cpu_stats(t, cpu, &st));
		ck_assert_uint_eq(st.overrun, 0);
		sum += st.entries;
	}
	return sum;
}

/*
 * Whether the kernel maps @t's cpu0 trace_pipe_raw (Linux >= 6.10, and
 * not refused); if not, say so in one SKIP line, as tests/lib.sh's
 * tc_skip_part does.
 */
static bool kernel_maps(struct tracing *t)
{
	long psz = sysconf(_SC_PAGESIZE);
	void *m;
	int fd, err;

	fd = tracefs_instance_file_open(tracing_instance(t),
					"per_cpu/cpu0/trace_pipe_raw",
					O_RDONLY | O_NONBLOCK);
	ck_assert_int_ge(fd, 0);
	m = mmap(NULL, (size_t)psz, PROT_READ, MAP_SHARED, fd, 0);
	err = errno;
	if (m != MAP_FAILED)
		munmap(m, (size_t)psz);
	close(fd);
	if (m == MAP_FAILED)
		printf("SKIP: the reader's mmap path: the kernel refuses mmap of "
		       "trace_pipe_raw: %s\n", strerror(err));
	return m != MAP_FAILED;
}

/* Both read paths (_i: READER_MMAP, READER_READ) deliver every event. */
START_TEST(test_reader_counts_match_kernel)
{
	struct tracing *t = open_or_fail(inst_name(), 2048);
	struct seen *s = calloc(1, sizeof(*s));
	struct reader_counts c;
	struct reader *r;
	uint64_t entries, sum = 0;
	char err[512];
	int cpu;

	TU_OK(tracing_stop(t));
	TU_OK(tracing_enable(t, "sched:sched_switch", err, sizeof(err)));
	s->page_size = tracing_page_size(t);
	s->mode = (enum reader_mode)_i;
	if (s->mode == READER_MMAP && !kernel_maps(t)) {
		tracing_close(t);
		free(s);
		return;
	}
	TU_OK(reader_open(tracing_instance(t), tracing_ncpus(t),
			  tracing_page_size(t), s->mode, &r));
	cur_reader = r;
	ck_assert_int_eq(reader_mapped(r), s->mode == READER_MMAP ?
			 tracing_ncpus(t) : 0);
	TU_OK(tracing_start(t));
	switch_workload();
	TU_OK(tracing_stop(t));
	entries = kernel_entries(t);
	ck_assert_uint_ge(entries, 50);
	ck_assert_int_ge(reader_poll(r, 0, count_page, s), 1);
	ck_assert_int_ge(reader_drain(r, count_page, s), 0);
	ck_assert_uint_eq(s->events, entries);
	TU_EQ(s->missed, 0);
	ck_assert_uint_eq(kernel_entries(t), 0);
	TU_EQ(reader_drain(r, count_page, s), 0);	/* empty */
	TU_EQ(reader_poll(r, 0, count_page, s), 0);
	for (cpu = 0; cpu < tracing_ncpus(t); cpu++) {
		reader_counts(r, cpu, &c);
		ck_assert_uint_eq(c.pages, s->next_seq[cpu]);
		ck_assert_uint_eq(s->mode == READER_MMAP ? c.pages_mmap :
				  c.pages_read, c.pages);
		if (s->mode == READER_READ)
			ck_assert_uint_eq(c.copied_bytes, c.pages * s->page_size);
		else
			ck_assert_uint_eq(c.copied_bytes, 0);
		ck_assert_uint_le(c.bytes, c.pages * s->page_size);
		sum += c.events;
	}
	ck_assert_uint_eq(sum, entries);
	cur_reader = NULL;
	reader_close(r);
	tracing_close(t);
	free(s);
}
END_TEST

static int stop_at_first(void *arg, const struct reader_page *p)
{
	(void)p;
	++*(int *)arg;
	return -ECANCELED;
}

START_TEST(test_reader_callback_error_stops)
{
	struct tracing *t = open_or_fail(inst_name(), 0);
	struct reader_counts c;
	struct reader *r;
	char err[512];
	int calls = 0, cpu;

	TU_OK(tracing_enable(t, "sched:sched_switch", err, sizeof(err)));
	TU_OK(reader_open(tracing_instance(t), tracing_ncpus(t),
			  tracing_page_size(t), READER_AUTO, &r));
	cur_reader = r;
	TU_OK(tracing_start(t));
	switch_workload();
	TU_OK(tracing_stop(t));
	TU_ERR(reader_drain(r, stop_at_first, &calls), -ECANCELED);
	ck_assert_int_eq(calls, 1);
	for (cpu = 0; cpu < tracing_ncpus(t); cpu++) {
		reader_counts(r, cpu, &c);
		ck_assert_uint_eq(c.pages, 0);	/* not delivered: not counted */
	}
	cur_reader = NULL;
	reader_close(r);
	tracing_close(t);
}
END_TEST

START_TEST(test_reader_bad_args)
{
	struct tracing *t = open_or_fail(inst_name(), 0);
	struct reader *r = (struct reader *)&r;

	TU_ERR(reader_open(tracing_instance(t), 0, 4096, READER_AUTO, &r), -EINVAL);
	TU_ERR(reader_open(tracing_instance(t), 1, 8, READER_AUTO, &r), -EINVAL);
	TU_ERR(reader_open(tracing_instance(t), 100000, 4096, READER_AUTO, &r), -EINVAL);
	ck_assert_ptr_eq(r, (struct reader *)&r);
	tracing_close(t);
}
END_TEST

/* A hand-made page: 8-byte timestamp, commit word, @n 4-byte padding-free
 * events of type_len 1 (4 bytes of data each: 8 bytes per event). */
static size_t make_page(uint8_t *page, size_t size, int n)
{
	unsigned long commit = (unsigned long)n * 8;
	size_t hdr = 8 + sizeof(long);
	uint32_t word = 1;	/* type_len 1, time delta 0 */
	int i;

	memset(page, 0, size);
	memcpy(page + 8, &commit, sizeof(commit));
	for (i = 0; i < n; i++)
		memcpy(page + hdr + (size_t)i * 8, &word, sizeof(word));
	return hdr + commit;
}

START_TEST(test_page_events_synthetic)
{
	uint8_t page[4096];
	unsigned long commit;

	make_page(page, sizeof(page), 0);
	TU_EQ(reader_page_events(page, sizeof(page)), 0);
	make_page(page, sizeof(page), 3);
	ck_assert_int_eq(reader_page_events(page, sizeof(page)), 3);
	commit = 3 * 8 | PAGE_COMMIT_MISSED;
	memcpy(page + 8, &commit, sizeof(commit));
	ck_assert_int_eq(reader_page_events(page, sizeof(page)), 3);
	TU_ERR(reader_page_events(page, 8), TC_ERR_PAGE_MALFORMED);
	commit = sizeof(page);		/* more data than the page holds */
	memcpy(page + 8, &commit, sizeof(commit));
	TU_ERR(reader_page_events(page, sizeof(page)), TC_ERR_PAGE_MALFORMED);
	commit = 1UL << 28;		/* a bit the kernel never sets */
	memcpy(page + 8, &commit, sizeof(commit));
	TU_ERR(reader_page_events(page, sizeof(page)), TC_ERR_PAGE_MALFORMED);
}
END_TEST

/* ---- kernel text parsers ------------------------------------------------ */

START_TEST(test_parse_stats)
{
	static const char text[] =
		"entries: 12\noverrun: 3\ncommit overrun: 4\nbytes: 999\n"
		"oldest event ts:  1234.567890\nnow ts:  1240.000000\n"
		"dropped events: 5\nread events: 6\n";
	struct tracing_cpu_stats st, keep = { .entries = 77 };

	TU_OK(tracing_parse_stats(text, strlen(text), &st));
	ck_assert_uint_eq(st.entries, 12);
	ck_assert_uint_eq(st.overrun, 3);
	ck_assert_uint_eq(st.commit_overrun, 4);
	ck_assert_uint_eq(st.dropped, 5);
	ck_assert_uint_eq(st.read, 6);
	st = keep;
	TU_ERR(tracing_parse_stats("bytes: 1\nfoo\n", 13, &st), TC_ERR_SYNTAX);
	ck_assert_uint_eq(st.entries, 77);	/* not written */
	TU_ERR(tracing_parse_stats("entries: 99999999999999999999", 29, &st), TC_ERR_SYNTAX);
	TU_ERR(tracing_parse_stats("entries: 1x", 11, &st), TC_ERR_SYNTAX);
}
END_TEST

START_TEST(test_parse_cmdlines)
{
	static const char text[] =
		"1 systemd\n42 kworker/0:1 with space\nbogus\n 7 lead\n"
		"99999999999 toolong\n8 averyveryverylongcommname\n9 \n10 last";
	struct proto_cmdlines c;
	void *items;

	TU_OK(tracing_table_parse(TRACING_CMDLINES, text, strlen(text),
				  &items, &c.count));
	c.items = items;
	ck_assert_uint_eq(c.count, 4);
	ck_assert_int_eq(c.items[0].pid, 1);
	ck_assert_str_eq(c.items[0].comm, "systemd");
	ck_assert_int_eq(c.items[1].pid, 42);
	ck_assert_str_eq(c.items[1].comm, "kworker/0:1 wit");
	ck_assert_int_eq(c.items[2].pid, 8);
	ck_assert_str_eq(c.items[2].comm, "averyveryverylo");
	ck_assert_int_eq(c.items[3].pid, 10);
	ck_assert_str_eq(c.items[3].comm, "last");
	free(c.items);
	TU_OK(tracing_table_parse(TRACING_CMDLINES, "", 0, &items,
				  &c.count));
	ck_assert_uint_eq(c.count, 0);
	ck_assert_ptr_null(items);
}
END_TEST

START_TEST(test_parse_tgids)
{
	static const char text[] = "14 14\n15 14\nbad\n16\n17 x\n99999999999 1\n18 18 18\n"
				   "2147483647 1\n19 19";
	struct proto_tgids t;
	void *items;

	TU_OK(tracing_table_parse(TRACING_TGIDS, text, strlen(text),
				  &items, &t.count));
	t.items = items;
	ck_assert_uint_eq(t.count, 4);
	ck_assert_int_eq(t.items[0].pid, 14);
	ck_assert_int_eq(t.items[1].pid, 15);
	ck_assert_int_eq(t.items[1].tgid, 14);
	ck_assert_int_eq(t.items[2].pid, INT32_MAX);
	ck_assert_int_eq(t.items[3].pid, 19);
	ck_assert_int_eq(t.items[3].tgid, 19);
	free(t.items);
	TU_OK(tracing_table_parse(TRACING_TGIDS, "", 0, &items,
				  &t.count));
	ck_assert_uint_eq(t.count, 0);
	ck_assert_ptr_null(items);
}
END_TEST

struct sent {
	unsigned msgs;
	uint64_t names, tgids;
};

static int count_sent(void *arg, const struct proto_msg *m)
{
	struct sent *s = arg;

	ck_assert_int_eq(m->type, MSG_CMDLINES);
	ck_assert_uint_le(m->cmdlines.count, 32768);
	s->msgs++;
	s->names += m->cmdlines.count;
	s->tgids += m->cmdlines.tgids.count;
	return 0;
}

/*
 * The tables from the real files (our instance sets record-tgid, so
 * saved_tgids fills): a new connection gets them whole, a later read
 * only what changed, and nothing at all when nothing did.
 */
START_TEST(test_comms_delta)
{
	struct tracing *t = open_or_fail(inst_name(), 0);
	struct comms *c;
	struct sent full = { 0 }, delta = { 0 };
	uint32_t names, tgids, nch, tch;
	char err[256];

	TU_OK(tracing_enable(t, "sched:sched_switch", err, sizeof(err)));
	TU_OK(tracing_start(t));
	switch_workload();
	TU_OK(comms_new(&c));
	TU_EQ(comms_next(c), 0);		/* due at once */
	TU_OK(comms_read(c, 1000));
	ck_assert_int_eq(comms_next(c), 1000 + COMMS_FIRST_MS);	/* no measure yet */
	comms_counts(c, &names, &tgids, &nch, &tch);
	ck_assert_uint_gt(names, 0);
	ck_assert_uint_gt(tgids, 0);
	ck_assert_uint_eq(nch, names);		/* all new */
	TU_OK(comms_send(c, true, count_sent, &full));
	ck_assert_uint_eq(full.names, names);
	ck_assert_uint_eq(full.tgids, tgids);
	TU_OK(comms_read(c, 2000));
	comms_counts(c, &names, &tgids, &nch, &tch);
	TU_OK(comms_send(c, false, count_sent, &delta));
	ck_assert_uint_eq(delta.names, nch);
	ck_assert_uint_eq(delta.tgids, tch);
	ck_assert_uint_le(nch, names);
	ck_assert_uint_eq(delta.msgs, (nch > 0) + (tch > 0));
	ck_assert_int_ge(comms_next(c), 2000 + COMMS_MIN_MS);
	ck_assert_int_le(comms_next(c), 2000 + COMMS_MAX_MS);
	comms_free(c);
	tracing_stop(t);
	tracing_close(t);
}
END_TEST

START_TEST(test_cmdlines_real)
{
	void *items;
	uint32_t count;

	switch_workload();
	TU_OK(tracing_table_read(TRACING_CMDLINES, &items, &count));
	ck_assert_uint_le(count, PROTO_MAX_CMDLINES);
	free(items);
}
END_TEST

/* ---- host facts ---------------------------------------------------------- */

START_TEST(test_hostinfo)
{
	char host[HOSTINFO_STR_MAX] = "", big[HOSTINFO_STR_MAX + 8];
	struct hostinfo h, keep = { .ncpus = 12345 };
	struct utsname u;

	TU_OK(hostinfo_get(NULL, &h));
	TU_SYS(gethostname(host, sizeof(host) - 1));
	ck_assert_str_eq(h.host, host);
	TU_SYS(uname(&u));
	ck_assert_str_eq(h.kernel, u.release);
	ck_assert_uint_eq(h.ncpus, sysconf(_SC_NPROCESSORS_ONLN));
	ck_assert_uint_eq(h.long_size, sizeof(long));
	ck_assert_int_eq(h.big_endian, __BYTE_ORDER == __BIG_ENDIAN);
	if (access("/etc/machine-id", R_OK) == 0)
		ck_assert_uint_eq(strlen(h.machine_id), 32);
	ck_assert_uint_eq(strlen(h.boot_id), 36);
	TU_OK(hostinfo_get("box-7", &h));
	ck_assert_str_eq(h.host, "box-7");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	h = keep;
	TU_ERR(hostinfo_get(big, &h), TC_ERR_TOO_LONG);
	ck_assert_uint_eq(h.ncpus, 12345);
}
END_TEST

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

START_TEST(test_clock_sample)
{
	struct proto_clock c;
	uint64_t before, after;
	time_t now;

	before = mono_ns();
	TU_OK(hostinfo_clock_sample(&c, NULL));
	after = mono_ns();
	now = time(NULL);
	ck_assert_uint_ge(c.trace_ns, before);
	ck_assert_uint_le(c.trace_ns, after);
	ck_assert_int_le(llabs((long long)(c.realtime_ns / 1000000000) -
			       (long long)now), 1);
}
END_TEST

/* Through a TSC conversion: CLOCK_MONOTONIC again, within a few us. */
START_TEST(test_clock_sample_tsc)
{
	struct ring_clock_conv conv;
	struct proto_clock c, m;

	TU_OK(ring_clock_calibrate(20000, &conv));
	usleep(50000);
	TU_OK(hostinfo_clock_sample(&c, &conv));
	TU_OK(hostinfo_clock_sample(&m, NULL));
	/* the same offset to realtime, to the sampling error and the rate's */
	ck_assert_int_le(llabs((c.realtime_ns - (int64_t)c.trace_ns) -
			       (m.realtime_ns - (int64_t)m.trace_ns)), 20000);
}
END_TEST

START_TEST(test_read_line)
{
	char path[] = "/tmp/test_agent_lineXXXXXX", buf[8] = "keep";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "abc\ndef\n", 8), 8);
	close(fd);
	TU_OK(hostinfo_read_line(path, buf, sizeof(buf)));
	ck_assert_str_eq(buf, "abc");
	TU_ERR(hostinfo_read_line(path, buf, 3), TC_ERR_TOO_LONG);
	ck_assert_str_eq(buf, "abc");
	unlink(path);
	TU_ERR(hostinfo_read_line(path, buf, sizeof(buf)), -ENOENT);
}
END_TEST

/* ---- runner --------------------------------------------------------------- */

static int sweep_one(const char *name, void *prefix)
{
	struct tracefs_instance *inst;

	if (strncmp(name, prefix, strlen(prefix)))
		return 0;
	fprintf(stderr, "test_agent: removing leftover instance %s\n", name);
	inst = tracefs_instance_alloc(NULL, name);
	if (inst) {
		tracefs_event_disable(inst, NULL, NULL);
		tracefs_instance_destroy(inst);
		tracefs_instance_free(inst);
	}
	return 0;
}

static void close_cur_reader(void)
{
	reader_close(cur_reader);
	cur_reader = NULL;
}

/* Remove the instances a failed test could not clean up. */
static void sweep_instances(void)
{
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "tctest-%d-", (int)runner_pid);
	tracefs_instances_walk(sweep_one, prefix);
}

/* ---- the flight recorder ----------------------------------------------- */

#define REC_FIRE	"syscalls:sys_enter_getppid"
#define REC_WAKE_MS	10000	/* a bound on a wait, not a speed check */

/* A hit of the trigger: getppid(2), and what the watch then says. */
static int rec_hit_and_check(struct recorder *r, int64_t now_ms, struct proto_froze *f)
{
	int fds[MAX_CPUS], n;
	struct pollfd pfd[MAX_CPUS];

	syscall(SYS_getppid);
	n = recorder_fds(r, fds, MAX_CPUS);
	for (int i = 0; i < n && i < MAX_CPUS; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	if (n > 0)	/* armed: the hit must wake it (bounded) */
		ck_assert_int_ge(poll(pfd, (nfds_t)(n < MAX_CPUS ? n : MAX_CPUS), REC_WAKE_MS), 1);
	/* woken: the watch is read whenever the recorder would read it */
	return recorder_frozen(r, now_ms, true, f);
}

static int rec_tracing_on(struct tracing *t)
{
	char *s = inst_file(t, "tracing_on");
	int on = atoi(s);

	free(s);
	return on;
}

/*
 * One trigger, one FROZE: the hits that follow it (a program that
 * switches out again, exiting) while FIRED, SHIPPING and HELD froze
 * nothing new and are drained at the thaw; a hit after the thaw is a new
 * trigger; a thaw of another snapshot re-arms nothing.
 */
START_TEST(test_recorder_one_froze_per_trigger)
{
	struct proto_freeze fz = { .id = 7 }, other = { .id = 8, .thaw = true };
	struct proto_snap_begin b;
	struct proto_snap_end e;
	struct proto_froze f = { 0 };
	struct recorder *r = NULL;
	struct tracing *t = open_or_fail(inst_name(), 64);
	char spec[128], err[512] = "";
	int fds[MAX_CPUS];
	uint64_t first;
	int ret;

	snprintf(spec, sizeof(spec), REC_FIRE " where common_pid == %d", (int)getpid());
	TU_OK(tracing_enable(t, "syscalls:sys_enter_getpid", err, sizeof(err)));
	ret = recorder_new(&(struct recorder_conf){ .mb = 1, .freeze_on = spec }, t, &r, err,
			   sizeof(err));
	if (ret == -EOPNOTSUPP || ret == TC_ERR_UNKNOWN_EVENT) {
		tracing_close(t);
		return;	/* no syscall events or triggers here: test_freezewatch says so */
	}
	ck_assert_msg(ret == 0, "recorder_new: %s (%s)", tc_strerror(ret), err);
	TU_OK(tracing_start(t));

	ck_assert_int_eq(rec_hit_and_check(r, 1000, &f), 1);	/* ARMED -> FIRED */
	ck_assert_int_eq(rec_tracing_on(t), 0);
	first = f.trace_ns;
	ck_assert_int_eq(rec_hit_and_check(r, 1001, &f), 0);	/* FIRED */
	ck_assert_int_eq(recorder_fds(r, fds, MAX_CPUS), 0);

	recorder_asked(r, &fz);
	ck_assert(recorder_due(r));
	TU_OK(recorder_freeze(r, &b));				/* -> SHIPPING */
	ck_assert_uint_eq(b.id, 7);
	ck_assert_int_eq(recorder_fds(r, fds, MAX_CPUS), 0);
	ck_assert_int_eq(rec_hit_and_check(r, 1002, &f), 0);
	recorder_end(r, &e);					/* -> HELD */
	ck_assert_uint_eq(e.id, 7);
	ck_assert_int_eq(recorder_fds(r, fds, MAX_CPUS), 0);
	ck_assert_int_eq(rec_hit_and_check(r, 1003, &f), 0);
	recorder_asked(r, &other);				/* not ours: still HELD */
	ck_assert_int_eq(rec_tracing_on(t), 0);
	ck_assert_int_eq(rec_hit_and_check(r, 1004, &f), 0);

	fz.thaw = true;
	recorder_asked(r, &fz);					/* -> ARMED, drained */
	ck_assert_int_eq(rec_tracing_on(t), 1);
	ck_assert_int_gt(recorder_fds(r, fds, MAX_CPUS), 0);
	ck_assert_int_eq(recorder_frozen(r, 1005, true, &f), 0);
	ck_assert_int_eq(rec_tracing_on(t), 1);

	ck_assert_int_eq(rec_hit_and_check(r, 1006, &f), 1);	/* a new trigger */
	ck_assert_uint_gt(f.trace_ns, first);
	/* no FREEZE for it (the collector refused it): armed again in time */
	ck_assert_int_eq(rec_hit_and_check(r, 1006 + RECORDER_FROZE_WAIT_MS - 1, &f), 0);
	ck_assert_int_eq(recorder_frozen(r, 1006 + RECORDER_FROZE_WAIT_MS, false, &f), 0);
	ck_assert_int_eq(rec_tracing_on(t), 1);
	ck_assert_int_eq(recorder_frozen(r, 1006 + RECORDER_FROZE_WAIT_MS, true, &f), 0);
	ck_assert_int_eq(rec_hit_and_check(r, 1007 + RECORDER_FROZE_WAIT_MS, &f), 1);
	recorder_free(r);
	tracing_close(t);
}
END_TEST

static Suite *agent_suite(void)
{
	Suite *s = suite_create("agent");
	TCase *tc = tcase_create("tracing");

	tcase_add_unchecked_fixture(tc, NULL, sweep_instances);
	tu_add_tests(tc, TU_TESTS(test_instance_lifecycle, test_buffer_size,
					test_existing_instance_left_alone,
					test_teardown_while_tracing, test_bad_event_spec,
					test_enable_event_and_format, test_enable_system,
					test_header_page, test_cmdlines_real, test_comms_delta));
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("reader");
	tcase_add_checked_fixture(tc, NULL, close_cur_reader);
	tcase_add_unchecked_fixture(tc, NULL, sweep_instances);
	tcase_add_loop_test(tc, test_reader_counts_match_kernel, READER_MMAP,
			    READER_READ + 1);
	tu_add_tests(tc, TU_TESTS(test_reader_callback_error_stops, test_reader_bad_args,
					test_page_events_synthetic));
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("parsers");
	tcase_add_test(tc, test_parse_stats);
	tcase_add_test(tc, test_parse_cmdlines);
	tcase_add_test(tc, test_parse_tgids);
	suite_add_tcase(s, tc);

	tc = tcase_create("recorder");
	tcase_add_unchecked_fixture(tc, NULL, sweep_instances);
	tcase_add_test(tc, test_recorder_one_froze_per_trigger);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostinfo");
	tu_add_tests(tc, TU_TESTS(test_hostinfo, test_clock_sample, test_clock_sample_tsc,
					test_read_line));
	suite_add_tcase(s, tc);
	return s;
}

/* Mount tracefs when needed; false (with why) when it is not writable. */
static bool tracefs_writable(char *why, size_t len)
{
	const char *dir = tracefs_tracing_dir();
	char inst[300];

	if (!dir && mount("nodev", TRACEFS_DIR, "tracefs", 0, NULL) < 0) {
		snprintf(why, len, "tracefs is not mounted and mounting it at "
			 TRACEFS_DIR " failed: %s", strerror(errno));
		return false;
	}
	if (!dir)
		dir = tracefs_tracing_dir();
	if (!dir) {
		snprintf(why, len, "no tracefs directory found");
		return false;
	}
	snprintf(inst, sizeof(inst), "%s/instances", dir);
	if (access(inst, W_OK) < 0) {
		snprintf(why, len, "%s is not writable: %s", inst,
			 strerror(errno));
		return false;
	}
	return true;
}

int main(void)
{
	char why[512];
	int rc;

	if (!tracefs_writable(why, sizeof(why))) {
		printf("test_agent: SKIP: %s\n", why);
		return 77;
	}
	runner_pid = getpid();
	rc = tu_run(agent_suite(), NULL);
	sweep_instances();
	return rc;
}
