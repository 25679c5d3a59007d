/*
 * filter_event.h - the test event of the filter tests (tests/test_filter.c
 * for common/filter.*, tests/test_sqlite_filter.c and tests/test_chfilter.c
 * for the SQLite and ClickHouse backends' compilers): its fields, a row of
 * values and the getter that serves them, parse_bind() that parses and
 * binds a filter or fails the test, and the cases they share: filters of
 * every operator and glob form, and make_rows()'s rows to run them on.
 */
#ifndef TESTS_FILTER_EVENT_H
#define TESTS_FILTER_EVENT_H

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/filter.h"
#include "common/tc_error.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

/* ---- a test event -------------------------------------------------------- */

enum { F_COMMON_PID, F_PREV_PID, F_PRIO, F_FLAGS, F_LEN, F_PREV_COMM, F_DELTA, F_STATE };

static const struct filter_field fields[] = {
	[F_COMMON_PID] = { "common_pid", FILTER_SIGNED, 4 },
	[F_PREV_PID] = { "prev_pid", FILTER_SIGNED, 4 },
	[F_PRIO] = { "prio", FILTER_SIGNED, 1 },
	[F_FLAGS] = { "flags", FILTER_UNSIGNED, 8 },
	[F_LEN] = { "len", FILTER_UNSIGNED, 2 },
	[F_PREV_COMM] = { "prev_comm", FILTER_STRING, 16 },
	[F_DELTA] = { "delta", FILTER_SIGNED, 8 },
	[F_STATE] = { "state", FILTER_UNSIGNED, 1 },
};

static const struct filter_schema schema = { fields, ARRAY_SIZE(fields) };

struct row {
	int64_t common_pid, prev_pid, prio, delta;
	uint64_t flags, len, state, cpu;
	const char *prev_comm, *comm;
	size_t comm_len;	/* 0: strlen(prev_comm) */
};

static int get_row(void *ctx, int idx, struct filter_value *v)
{
	const struct row *r = ctx;
	const int64_t *sv[] = { [F_COMMON_PID] = &r->common_pid, [F_PREV_PID] = &r->prev_pid,
				[F_PRIO] = &r->prio, [F_DELTA] = &r->delta };
	const uint64_t *uv[] = { [F_FLAGS] = &r->flags, [F_LEN] = &r->len,
				 [F_STATE] = &r->state };

	if (idx == FILTER_FIELD_CPU) {
		*v = (struct filter_value){ .kind = FILTER_UNSIGNED, .u = r->cpu };
	} else if (idx == FILTER_FIELD_COMM) {
		*v = (struct filter_value){ .kind = FILTER_STRING };
		v->str.s = r->comm;
		v->str.len = strlen(r->comm);
	} else if (idx == F_PREV_COMM) {
		*v = (struct filter_value){ .kind = FILTER_STRING };
		v->str.s = r->prev_comm;
		v->str.len = r->comm_len ? r->comm_len : strlen(r->prev_comm);
	} else if (idx >= 0 && idx < (int)ARRAY_SIZE(sv) && sv[idx]) {
		*v = (struct filter_value){ .kind = FILTER_SIGNED, .i = *sv[idx] };
	} else if (idx >= 0 && idx < (int)ARRAY_SIZE(uv) && uv[idx]) {
		*v = (struct filter_value){ .kind = FILTER_UNSIGNED, .u = *uv[idx] };
	} else {
		return -ENOENT;
	}
	return 0;
}

static struct filter *parse_bind(const char *text)
{
	struct filter_error err = { 0 };
	struct filter *f = NULL;
	int ret;

	ret = filter_parse(text, &f, &err);
	ck_assert_msg(ret == 0, "parse '%s': %s (%s at %zu)", text, tc_strerror(ret),
		      err.msg, err.pos);
	ret = filter_bind(f, &schema, &err);
	ck_assert_msg(ret == 0, "bind '%s': %s (%s at %zu)", text, tc_strerror(ret),
		      err.msg, err.pos);
	return f;
}

/* ---- what the tests of filter_eval() and of each backend's compiler share ---- */

/* the row the cases below hold for */
static const struct row base = {
	.common_pid = 100, .prev_pid = 0, .prio = 120, .flags = 0x5, .len = 64,
	.state = 1, .delta = -7, .cpu = 1, .prev_comm = "bash", .comm = "swapper/1",
};

/* filters of each operator on numbers, their value on base */
static const struct {
	const char *text;
	int want;
} numeric_cases[] = {
	{ "common_pid == 100", 1 }, { "common_pid != 100", 0 },
	{ "common_pid < 100", 0 }, { "common_pid < 101", 1 },
	{ "common_pid <= 100", 1 }, { "common_pid <= 99", 0 },
	{ "common_pid > 99", 1 }, { "common_pid > 100", 0 },
	{ "common_pid >= 100", 1 }, { "common_pid >= 101", 0 },
	{ "flags & 4", 1 }, { "flags & 2", 0 }, { "flags & 0x7", 1 },
	{ "delta < 0", 1 }, { "delta == -7", 1 }, { "delta & 1", 1 },
	{ "delta > -8", 1 }, { "delta >= -7", 1 }, { "delta <= -8", 0 },
	{ "common_pid == 0x64", 1 }, { "common_pid == 0144", 1 },
	{ "common_pid == +100", 1 }, { "len == 0X40", 1 },
	{ "CPU == 1", 1 }, { "cpu == 1", 1 }, { "common_cpu != 1", 0 },
	{ "CPU < 1", 0 },
};

/* glob patterns, a string, and whether the one matches the other */
static const struct {
	const char *pat, *s;
	int want;
} glob_cases[] = {
	{ "bash*", "bash", 1 }, { "bash*", "basher", 1 }, { "bash*", "bas", 0 },
	{ "*sh", "bash", 1 }, { "*sh", "zsh", 1 }, { "*sh", "shx", 0 },
	{ "*as*", "bash", 1 }, { "*as*", "sa", 0 }, { "ba*sh", "bash", 1 },
	{ "ba*sh", "baxxsh", 1 }, { "ba*sh", "basx", 0 }, { "b?sh", "bash", 1 },
	{ "b?sh", "bsh", 0 }, { "???", "abc", 1 }, { "???", "ab", 0 },
	{ "[abc]*", "bash", 1 }, { "[abc]*", "zsh", 0 }, { "[!abc]*", "bash", 0 },
	{ "[!abc]*", "zsh", 1 }, { "[a-c]?", "ab", 1 }, { "[a-c]?", "da", 0 },
	{ "[]]", "]", 1 }, { "[]]", "a", 0 }, { "[!]]", "a", 1 }, { "[!]]", "]", 0 },
	{ "[a-]", "-", 1 }, { "[a-]", "b", 0 }, { "a[b", "a[b", 1 }, { "a[b", "ab", 0 },
	{ "[!]", "[!]", 1 }, { "\\*", "*", 1 }, { "\\*", "x", 0 }, { "a\\", "a", 1 },
	{ "", "", 1 }, { "", "a", 0 }, { "*", "", 1 }, { "**a**", "xa", 1 },
	{ "*[0-9]", "kworker/0", 1 }, { "*[0-9]", "kworker/x", 0 },
	{ "*a*b*c*", "xaybzc", 1 }, { "*a*b*c*", "xaybz", 0 }, { "[z-a]", "m", 0 },
	{ "[^]", "^", 1 }, { "[!^-]", "a", 1 }, { "[!^-]", "-", 0 },
	{ "*?", "", 0 }, { "*?", "x", 1 }, { "*ab", "aab", 1 }, { "ab*ab", "abab", 1 },
};

/*
 * filters of every operator and glob form for the compilers' cross-checks
 * (tests/test_sqlite_filter.c, tests/test_chfilter.c), on make_rows()'s rows
 */
static const char *const crosscheck_filters[] = {
	"prev_pid == 0", "prev_pid != 0", "prev_pid < 0", "prev_pid <= -1",
	"prev_pid > 17", "prev_pid >= 2147483647", "prev_pid & 1",
	"prev_pid == -2147483648", "common_pid > 1",
	"prio < 0 || prio > 100", "prio == -128 || prio == 127", "prio & 0x80",
	"flags == 0", "flags != 18446744073709551615", "flags > 5", "flags >= 5",
	"flags < 5", "flags <= 5", "flags > 9223372036854775807",
	"flags >= 9223372036854775808", "flags < 9223372036854775808",
	"flags <= 9223372036854775807", "flags > 18446744073709551614",
	"flags < 0xffffffffffffff00", "flags <= 0xffffffffffffff00",
	"flags >= 0xffffffffffffff00", "flags > 0x8000000000000004",
	"flags & 0x8000000000000000", "flags & 1", "flags & 0xf0",
	"len > 255", "len <= 256 && len != 0", "len & 0x100",
	"state & 0x80", "state >= 128", "state < 2",
	"delta < 0", "delta > 0", "delta == -9223372036854775808",
	"delta >= 9223372036854775807", "delta & 1", "delta & -9223372036854775808",
	"CPU == 1", "CPU >= 2 && CPU != 3", "common_cpu < 2",
	"COMM == bash", "comm ~ \"*[0-9]*\"", "COMM ~ 'k*' && CPU & 1",
	"prev_comm == bash", "prev_comm != bash", "prev_comm == \"\"",
	"prev_comm ~ \"*sh\"", "prev_comm ~ \"bash*\"", "prev_comm ~ \"*as*\"",
	"prev_comm ~ \"b?sh\"", "prev_comm ~ \"?\"", "prev_comm ~ \"??\"",
	"prev_comm ~ \"[abc]*\"", "prev_comm ~ \"[!abc]*\"", "prev_comm ~ \"[a-c]?\"",
	"prev_comm ~ \"*[]]*\"", "prev_comm ~ \"*[!]]\"", "prev_comm ~ \"a[b\"",
	"prev_comm ~ \"ba\\*sh\"", "prev_comm ~ \"ba*sh\"", "prev_comm ~ \"*\\?*\"",
	"prev_comm ~ \"^\"", "prev_comm ~ \"[^]\"", "prev_comm ~ \"[!^]*\"",
	"prev_comm ~ \"[-]\"", "prev_comm ~ \"[!-]*\"", "prev_comm ~ \"[!^-]*\"",
	"prev_comm ~ \"*[A-Z]*\"", "prev_comm ~ \"*[[]*\"", "prev_comm ~ \"[!]\"",
	"prev_comm ~ \"*[0-9]\"", "prev_comm ~ \"[z-a]\"", "prev_comm ~ \"[!z-a]*[]-]\"", "prev_comm ~ \"*'*\"",
	"prev_comm ~ \"a\\\\b\"", "prev_comm ~ \"*\\\\*\"", "prev_comm ~ \"\"",
	"!(prev_comm ~ \"*sh\")", "!prev_comm ~ \"[z-a]\"",
	"prev_comm ~ \"*sh\" && !(prio < 0 || flags > 5)",
	"(prev_pid == 0 || prev_pid == 1) && (flags & 3 || !(len > 255))",
	"!(!(CPU == 0) && !(comm == sshd)) || delta < 0 && state != 0",
	"prev_comm == '123' || prev_comm == \"it's\" || prev_comm == '[!]'",
	"prev_pid == 0 || prio == 1 && len == 1",
	"CPU & CPUS{0,2-3}", "CPU == CPUS{2}", "CPU != CPUS{2}", "CPU == CPUS{1-2}",
	"CPU != CPUS{0-1}", "prev_pid & CPUS{0-3}", "!(CPU & CPUS{1})",
	"prev_comm ~ \"!*sh\"", "prev_comm ~ \"![a-c]*\"", "!(prev_comm ~ \"!bash\")",
	"prev_comm ~ \"![z-a]\"",
};

static inline uint32_t lcg(uint32_t *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state >> 8;
}

#define PICK(pool, st) ((pool)[lcg(st) % ARRAY_SIZE(pool)])

/*
 * make_rows - @nrows rows of edge values, each field picked from a pool by
 * a fixed LCG (the same rows every run), every string of the pool at least
 * once when @nrows allows.
 */
static inline void make_rows(struct row *rows, size_t nrows)
{
	static const int64_t i32[] = { INT32_MIN, -1000, -1, 0, 1, 2, 17, 1000, INT32_MAX };
	static const int64_t i8[] = { -128, -1, 0, 1, 120, 127 };
	static const int64_t i64[] = { INT64_MIN, -1, 0, 1, 5, INT64_MAX };
	static const uint64_t u64[] = {
	0, 1, 2, 3, 0x80, 0xff, INT64_MAX, 1ULL << 63, (1ULL << 63) + 5,
	UINT64_MAX - 1, UINT64_MAX, 0xffffffffffffff00ULL,
	};
	static const uint64_t u16[] = { 0, 1, 255, 256, 65535 };
	static const uint64_t u8[] = { 0, 1, 2, 4, 128, 255 };
	static const char *const strs[] = {
	"bash", "sh", "zsh", "", "basher", "ba*sh", "a[b", "x]y", "^", "-",
	"kworker/0:1", "systemd", "BASH", "b", "ab", "bash-5.2", "a?c", "abc",
	"it's", "123", "a\\b", "[!]",
	};
	static const char *const comms[] = { "bash", "swapper/0", "sshd", "kworker/1:0H" };
	uint32_t st = 42;
	size_t k;

	for (k = 0; k < nrows; k++) {
	rows[k] = (struct row){
		.common_pid = PICK(i32, &st), .prev_pid = PICK(i32, &st),
		.prio = PICK(i8, &st), .delta = PICK(i64, &st),
		.flags = PICK(u64, &st), .len = PICK(u16, &st),
		.state = PICK(u8, &st), .cpu = lcg(&st) % 4,
		.prev_comm = PICK(strs, &st), .comm = PICK(comms, &st),
	};
	}
	/* make sure each string appears at least once */
	for (k = 0; k < ARRAY_SIZE(strs) && k < nrows; k++)
	rows[k].prev_comm = strs[k];
}

#endif
