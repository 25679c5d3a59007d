/*
 * comms.c - saved_cmdlines and saved_tgids, read at an interval that
 * follows the kernel's turnover and shipped as deltas (see comms.h).
 *
 * Each table is kept sorted by pid; a read sorts the new one and walks
 * both together: a pid that is new, or whose value differs, goes into the
 * delta. Pids the kernel dropped from its table stay known at the
 * collector (it keeps the last name of every pid), which is the point.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "agent/comms.h"
#include "agent/tracing.h"
#include "common/log.h"
#include "common/tc_error.h"

#define NAMES_PER_MSG	32768	/* 65536 full names do not fit one frame */

/* Items of a table's struct (enum tracing_table), sorted by pid. */
struct items {
	void *v;
	uint32_t count;
};

/* One of the kernel's tables as last read, and what that read changed. */
struct table {
	struct items all;
	struct items delta;
	bool warned;		/* its file could not be read: said once */
};

/* What the two tables differ in: their file, their items' size and value. */
struct table_kind {
	const char *file;
	size_t size;
	bool (*same)(const void *a, const void *b);	/* one pid's values */
};

struct comms {
	struct table t[2];	/* by enum tracing_table */
	int interval_ms;
	int64_t next;
};

static bool same_name(const void *a, const void *b)
{
	const struct proto_cmdline *x = a, *y = b;

	return !strcmp(x->comm, y->comm);
}

static bool same_tgid(const void *a, const void *b)
{
	const struct proto_tgid *x = a, *y = b;

	return x->tgid == y->tgid;
}

static const struct table_kind kinds[] = {
	[TRACING_CMDLINES] = { "saved_cmdlines", sizeof(struct proto_cmdline),
			       same_name },
	[TRACING_TGIDS] = { "saved_tgids", sizeof(struct proto_tgid), same_tgid },
};

_Static_assert(offsetof(struct proto_cmdline, pid) == 0 &&
	       offsetof(struct proto_tgid, pid) == 0,
	       "the items of both tables begin with their pid");

int comms_new(struct comms **out)
{
	struct comms *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->interval_ms = COMMS_FIRST_MS;
	*out = c;
	return 0;
}

void comms_free(struct comms *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < sizeof(c->t) / sizeof(c->t[0]); i++) {
		free(c->t[i].all.v);
		free(c->t[i].delta.v);
	}
	free(c);
}

int64_t comms_next(const struct comms *c)
{
	return c->next;
}

/* The pid an item of either table begins with. */
static int32_t item_pid(const void *item)
{
	int32_t pid;

	memcpy(&pid, item, sizeof(pid));
	return pid;
}

static int cmp_pid(const void *a, const void *b)
{
	int32_t x = item_pid(a), y = item_pid(b);

	return (x > y) - (x < y);
}

/* The items of @now (sorted) that @old (sorted) lacks or has otherwise. */
static int table_diff(const struct table_kind *k, const struct items *old,
		      const struct items *now, struct items *delta)
{
	const char *o = old->v, *x;
	uint32_t i = 0, j, n = 0;
	char *d = calloc(now->count ? now->count : 1, k->size);

	if (!d)
		return -ENOMEM;
	for (j = 0; j < now->count; j++) {
		x = (const char *)now->v + (size_t)j * k->size;
		while (i < old->count && item_pid(o + i * k->size) < item_pid(x))
			i++;
		if (i < old->count && item_pid(o + i * k->size) == item_pid(x) &&
		    k->same(o + i * k->size, x))
			continue;
		memcpy(d + (size_t)n++ * k->size, x, k->size);
	}
	delta->v = d;
	delta->count = n;
	return 0;
}

/* Read table @which and its delta into c->t[@which]; unreadable: as it was. */
static int table_read(struct comms *c, enum tracing_table which)
{
	const struct table_kind *k = &kinds[which];
	struct table *t = &c->t[which];
	struct items now = { 0 }, delta = { 0 };
	int ret = tracing_table_read(which, &now.v, &now.count);

	if (ret == -ENOMEM)
		return ret;
	if (ret < 0) {
		if (!t->warned)
			log_warn("cannot read %s: %s", k->file, tc_strerror(ret));
		t->warned = true;
		t->delta.count = 0;
		return 0;
	}
	qsort(now.v, now.count, k->size, cmp_pid);
	ret = table_diff(k, &t->all, &now, &delta);
	if (ret < 0) {
		free(now.v);
		return ret;
	}
	free(t->all.v);
	free(t->delta.v);
	t->all = now;
	t->delta = delta;
	return 0;
}

int comms_read(struct comms *c, int64_t now)
{
	const struct table *names = &c->t[TRACING_CMDLINES];
	bool first = names->all.count == 0;	/* everything is new: no measure */
	int ret = table_read(c, TRACING_CMDLINES) ?: table_read(c, TRACING_TGIDS);
	uint32_t size = names->all.count > 128 ? names->all.count : 128;

	if (ret < 0)
		return ret;
	if (first)
		;
	else if (names->delta.count > size / 4)
		c->interval_ms = c->interval_ms / 2 > COMMS_MIN_MS ? c->interval_ms / 2
								    : COMMS_MIN_MS;
	else if (names->delta.count < size / 32)
		c->interval_ms = c->interval_ms * 2 < COMMS_MAX_MS ? c->interval_ms * 2
								    : COMMS_MAX_MS;
	c->next = now + c->interval_ms;
	return 0;
}

int comms_send(const struct comms *c, bool full,
	       int (*send)(void *arg, const struct proto_msg *m), void *arg)
{
	const struct table *nt = &c->t[TRACING_CMDLINES], *tt = &c->t[TRACING_TGIDS];
	const struct items *names = full ? &nt->all : &nt->delta;
	const struct items *tgids = full ? &tt->all : &tt->delta;
	struct proto_msg m = { .type = MSG_CMDLINES };
	uint32_t i;
	int ret = 0;

	for (i = 0; i < names->count && ret == 0; i += NAMES_PER_MSG) {
		m.cmdlines.items = (struct proto_cmdline *)names->v + i;
		m.cmdlines.count = names->count - i < NAMES_PER_MSG ? names->count - i
								    : NAMES_PER_MSG;
		ret = send(arg, &m);
	}
	m.cmdlines.count = 0;
	m.cmdlines.items = NULL;
	for (i = 0; i < tgids->count && ret == 0; i += PROTO_MAX_TGIDS) {
		m.cmdlines.tgids.items = (struct proto_tgid *)tgids->v + i;
		m.cmdlines.tgids.count = tgids->count - i < PROTO_MAX_TGIDS ? tgids->count - i
									   : PROTO_MAX_TGIDS;
		ret = send(arg, &m);
	}
	return ret;
}

void comms_counts(const struct comms *c, uint32_t *names, uint32_t *tgids,
		  uint32_t *names_changed, uint32_t *tgids_changed)
{
	*names = c->t[TRACING_CMDLINES].all.count;
	*tgids = c->t[TRACING_TGIDS].all.count;
	*names_changed = c->t[TRACING_CMDLINES].delta.count;
	*tgids_changed = c->t[TRACING_TGIDS].delta.count;
}
