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
#include <stdlib.h>
#include <string.h>

#include "agent/comms.h"
#include "agent/tracing.h"
#include "common/log.h"
#include "common/tc_error.h"

#define NAMES_PER_MSG	32768	/* 65536 full names do not fit one frame */

struct comms {
	struct proto_cmdlines names;	/* sorted by pid */
	struct proto_cmdlines names_delta;
	struct proto_tgids tgids;	/* sorted by pid */
	struct proto_tgids tgids_delta;
	int interval_ms;
	int64_t next;
	bool warned_names, warned_tgids;
};

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
	free(c->names.items);
	free(c->names_delta.items);
	free(c->tgids.items);
	free(c->tgids_delta.items);
	free(c);
}

int64_t comms_next(const struct comms *c)
{
	return c->next;
}

static int cmp_name(const void *a, const void *b)
{
	const struct proto_cmdline *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static int cmp_tgid(const void *a, const void *b)
{
	const struct proto_tgid *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The entries of @now (sorted) that @old (sorted) lacks or has otherwise. */
static int names_diff(const struct proto_cmdlines *old, const struct proto_cmdlines *now,
		      struct proto_cmdlines *delta)
{
	uint32_t i = 0, j, n = 0;

	delta->items = calloc(now->count ? now->count : 1, sizeof(*delta->items));
	if (!delta->items)
		return -ENOMEM;
	for (j = 0; j < now->count; j++) {
		while (i < old->count && old->items[i].pid < now->items[j].pid)
			i++;
		if (i < old->count && old->items[i].pid == now->items[j].pid &&
		    !strcmp(old->items[i].comm, now->items[j].comm))
			continue;
		delta->items[n++] = now->items[j];
	}
	delta->count = n;
	return 0;
}

static int tgids_diff(const struct proto_tgids *old, const struct proto_tgids *now,
		      struct proto_tgids *delta)
{
	uint32_t i = 0, j, n = 0;

	delta->items = calloc(now->count ? now->count : 1, sizeof(*delta->items));
	if (!delta->items)
		return -ENOMEM;
	for (j = 0; j < now->count; j++) {
		while (i < old->count && old->items[i].pid < now->items[j].pid)
			i++;
		if (i < old->count && old->items[i].pid == now->items[j].pid &&
		    old->items[i].tgid == now->items[j].tgid)
			continue;
		delta->items[n++] = now->items[j];
	}
	delta->count = n;
	return 0;
}

/* Read saved_cmdlines into c->names and its delta; unreadable: as it was. */
static int read_names(struct comms *c)
{
	struct proto_cmdlines now = { 0 }, delta = { 0 };
	int ret = tracing_cmdlines(&now);

	if (ret == -ENOMEM)
		return ret;
	if (ret < 0) {
		if (!c->warned_names)
			log_warn("cannot read saved_cmdlines: %s", tc_strerror(ret));
		c->warned_names = true;
		c->names_delta.count = 0;
		return 0;
	}
	qsort(now.items, now.count, sizeof(*now.items), cmp_name);
	ret = names_diff(&c->names, &now, &delta);
	if (ret < 0) {
		free(now.items);
		return ret;
	}
	free(c->names.items);
	free(c->names_delta.items);
	c->names = now;
	c->names_delta = delta;
	return 0;
}

static int read_tgids(struct comms *c)
{
	struct proto_tgids now = { 0 }, delta = { 0 };
	int ret = tracing_tgids(&now);

	if (ret == -ENOMEM)
		return ret;
	if (ret < 0) {
		if (!c->warned_tgids)
			log_warn("cannot read saved_tgids: %s", tc_strerror(ret));
		c->warned_tgids = true;
		c->tgids_delta.count = 0;
		return 0;
	}
	qsort(now.items, now.count, sizeof(*now.items), cmp_tgid);
	ret = tgids_diff(&c->tgids, &now, &delta);
	if (ret < 0) {
		free(now.items);
		return ret;
	}
	free(c->tgids.items);
	free(c->tgids_delta.items);
	c->tgids = now;
	c->tgids_delta = delta;
	return 0;
}

int comms_read(struct comms *c, int64_t now)
{
	bool first = c->names.count == 0;	/* everything is new: no measure */
	int ret = read_names(c) ?: read_tgids(c);
	uint32_t size = c->names.count > 128 ? c->names.count : 128;

	if (ret < 0)
		return ret;
	if (first)
		;
	else if (c->names_delta.count > size / 4)
		c->interval_ms = c->interval_ms / 2 > COMMS_MIN_MS ? c->interval_ms / 2
								    : COMMS_MIN_MS;
	else if (c->names_delta.count < size / 32)
		c->interval_ms = c->interval_ms * 2 < COMMS_MAX_MS ? c->interval_ms * 2
								    : COMMS_MAX_MS;
	c->next = now + c->interval_ms;
	return 0;
}

int comms_send(const struct comms *c, bool full,
	       int (*send)(void *arg, const struct proto_msg *m), void *arg)
{
	const struct proto_cmdlines *names = full ? &c->names : &c->names_delta;
	const struct proto_tgids *tgids = full ? &c->tgids : &c->tgids_delta;
	struct proto_msg m = { .type = MSG_CMDLINES };
	uint32_t i;
	int ret = 0;

	for (i = 0; i < names->count && ret == 0; i += NAMES_PER_MSG) {
		m.cmdlines.items = names->items + i;
		m.cmdlines.count = names->count - i < NAMES_PER_MSG ? names->count - i
								    : NAMES_PER_MSG;
		ret = send(arg, &m);
	}
	m.cmdlines.count = 0;
	m.cmdlines.items = NULL;
	for (i = 0; i < tgids->count && ret == 0; i += PROTO_MAX_TGIDS) {
		m.cmdlines.tgids.items = tgids->items + i;
		m.cmdlines.tgids.count = tgids->count - i < PROTO_MAX_TGIDS ? tgids->count - i
									   : PROTO_MAX_TGIDS;
		ret = send(arg, &m);
	}
	return ret;
}

void comms_counts(const struct comms *c, uint32_t *names, uint32_t *tgids,
		  uint32_t *names_changed, uint32_t *tgids_changed)
{
	*names = c->names.count;
	*tgids = c->tgids.count;
	*names_changed = c->names_delta.count;
	*tgids_changed = c->tgids_delta.count;
}
