/*
 * filter_event.h - the test event of the filter tests (tests/test_filter.c
 * for common/filter.*, tests/test_sqlite_filter.c for the SQLite backend's
 * compiler): its fields, a row of values and the getter that serves them,
 * and parse_bind() that parses and binds a filter or fails the test.
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

#endif
