/*
 * freeze.c - flight-recorder snapshots on the collector's side (see
 * freeze.h).
 *
 * A query worker's ask becomes a struct fz_call, run on the loop through
 * server/loopcall.h, as the importer's calls are (server/ingest/importer.c).
 * Calls live on their callers' stacks: every queued call is done before
 * freezer_stop() returns.
 */
#include "config.h"

#define LOG_PREFIX "snapshot"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/msg.h"
#include "server/conn/conn.h"
#include "server/conn/freeze.h"
#include "server/loopcall.h"

#define FREEZE_GROUPS	256	/* groups (and lone hosts) whose last trigger freeze is remembered */

struct fz_call {
	const struct freeze_ask *a;
	struct freeze_answer *out;
	struct loopcall lc;		/* .arg: this call */
};

/* A group's (or a host's in no group) last trigger freeze (the rate limit). */
struct fz_group {
	bool host;			/* @name is a host in no group */
	char name[PROTO_MAX_HOST > PROTO_MAX_GROUP ? PROTO_MAX_HOST + 1 : PROTO_MAX_GROUP + 1];
	int64_t last_ms;		/* util_now_ms() of its last freeze; 0: none */
	int64_t said_ms;		/* a refusal was last logged then */
};

/* A snapshot whose recorders have not all ended it yet. */
struct fz_pending {
	struct freezer *fz;
	uint64_t id;			/* 0: a free slot */
	unsigned asked, ended;
	struct event *timer;		/* FREEZE_THAW_MS after the freeze */
};

struct freezer {
	struct collector *col;
	struct loopcall_queue *calls;
	uint64_t next_id;		/* loop only */
	struct fz_group groups[FREEZE_GROUPS];	/* loop only */
	unsigned ngroups, group_next;
	uint64_t refused[FREEZE_REFUSALS];	/* loop writes, any thread reads: relaxed */
	int64_t group_ms;		/* the rate limit's period */
	struct event_base *base;
	struct fz_pending pending[FREEZE_PENDING];	/* loop only */
};

static int64_t fz_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- which recorders ---- */

/* A pass over the recorders: count what an ask selects, or freeze them. */
struct fz_pass {
	const struct freeze_ask *a;	/* by hand; NULL: by a trigger ... */
	const struct conn *self;	/* ... of this recorder's host, which ... */
	const struct hostmap *map;	/* ... freezes the hosts these freeze-group lines ... */
	const char *const *groups;	/* ... put in these groups */
	size_t ngroups;
	const struct proto_freeze *f;	/* NULL: count only */
	unsigned selected;
	unsigned outside;		/* matched the glob, not the right */
	char first_outside[PROTO_MAX_HOST + 1];
};

static bool fz_allowed(const struct freeze_ask *a, const char *host)
{
	if (a->all)
		return true;
	for (size_t i = 0; i < a->nallow; i++)
		if (fnmatch(a->allow[i], host, 0) == 0)
			return true;
	return false;
}

/* Whether @host is in one of @p's groups (as the collector's freeze-group lines say). */
static bool fz_in_groups(const struct fz_pass *p, const char *host)
{
	for (size_t i = 0; i < p->ngroups; i++)
		if (hostmap_allows(p->map, p->groups[i], host))
			return true;
	return false;
}

static int fz_visit(void *ctx, struct conn *c, const char *host, const char *group)
{
	struct fz_pass *p = ctx;

	(void)group;	/* the agent's claim: never who is frozen */
	if (p->a) {
		if (p->a->host_glob && fnmatch(p->a->host_glob, host, 0) != 0)
			return 0;
		if (!fz_allowed(p->a, host)) {
			if (!p->outside++)
				snprintf(p->first_outside, sizeof(p->first_outside), "%s", host);
			return 0;
		}
	} else if (c != p->self && !fz_in_groups(p, host)) {
		return 0;
	}
	p->selected++;
	if (p->f)
		conn_freeze(c, p->f);	/* a failure fails (and logs) that connection */
	return 0;
}

static int fz_thaw_visit(void *ctx, struct conn *c, const char *host, const char *group)
{
	(void)host;
	(void)group;
	conn_thaw(c, *(const uint64_t *)ctx);	/* a failure fails (and logs) that connection */
	return 0;
}

/* Snapshot @p is whole, or waited long enough: every recorder may thaw it. */
static void fz_thaw(struct fz_pending *p)
{
	uint64_t id = p->id;

	if (p->ended < p->asked)
		log_info("snapshot %llu: %u of %u recorders ended it within %d ms: thawed",
			 (unsigned long long)id, p->ended, p->asked, FREEZE_THAW_MS);
	evtimer_del(p->timer);
	p->id = 0;
	conn_recorders(p->fz->col, fz_thaw_visit, &id);
}

static void fz_thaw_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	fz_thaw(arg);
}

/*
 * Wait for the @n recorders told to freeze for @id; with no slot free,
 * they thaw by themselves (the agents' own timeout).
 */
static void fz_pending_add(struct freezer *fz, uint64_t id, unsigned n)
{
	struct timeval tv = { FREEZE_THAW_MS / 1000, (FREEZE_THAW_MS % 1000) * 1000 };

	for (unsigned i = 0; i < FREEZE_PENDING; i++) {
		struct fz_pending *p = &fz->pending[i];

		if (p->id)
			continue;
		if (!p->timer && !(p->timer = evtimer_new(fz->base, fz_thaw_cb, p)))
			return;
		*p = (struct fz_pending){ .fz = fz, .id = id, .asked = n, .timer = p->timer };
		evtimer_add(p->timer, &tv);
		return;
	}
}

void freezer_ended(struct freezer *fz, uint64_t id)
{
	for (unsigned i = 0; fz && i < FREEZE_PENDING; i++) {
		struct fz_pending *p = &fz->pending[i];

		if (p->id == id && ++p->ended >= p->asked) {
			fz_thaw(p);
			return;
		}
	}
}

/*
 * The next snapshot's id, at least @min: the collector's realtime in ms,
 * or past the last id if that is later. A restarted collector thus never
 * takes an id its journal's replay has yet to store, without asking the
 * store from the loop.
 */
static uint64_t fz_id(struct freezer *fz, uint64_t min)
{
	uint64_t id = fz->next_id > min ? fz->next_id : min;
	uint64_t now = (uint64_t)(fz_realtime_ns() / 1000000);

	if (now > id)
		id = now;
	if (id == 0)
		id = 1;
	fz->next_id = id + 1;
	return id;
}

/* An ask, on the loop. */
static int fz_run(struct freezer *fz, const struct freeze_ask *a, struct freeze_answer *out)
{
	struct fz_pass p = { .a = a };
	struct proto_freeze f;
	char e[LOG_ESC_LEN];

	conn_recorders(fz->col, fz_visit, &p);
	if (p.outside && a->host_glob) {
		snprintf(out->why, sizeof(out->why), "%.200s may not freeze host '%.200s': "
			 "outside its `snapshot` right", a->who,
			 log_escape(p.first_outside, e, sizeof(e)));
		return -EACCES;
	}
	if (!p.selected) {
		snprintf(out->why, sizeof(out->why), "no connected flight recorder (traceagent "
			 "--flight-recorder) %s%.200s%s", a->host_glob ? "matches '" : "is within "
			 "the right", a->host_glob ? log_escape(a->host_glob, e, sizeof(e)) : "",
			 a->host_glob ? "' within the right" : "");
		return -ENOENT;
	}
	f = (struct proto_freeze){ .id = fz_id(fz, a->min_id), .asked_ns = fz_realtime_ns(),
				   .reason = (char *)(a->reason ? a->reason : ""),
				   .who = (char *)a->who };
	p = (struct fz_pass){ .a = a, .f = &f };
	conn_recorders(fz->col, fz_visit, &p);
	out->id = f.id;
	out->hosts = p.selected;
	fz_pending_add(fz, f.id, p.selected);
	log_info("snapshot %llu: %u flight recorders told to freeze, asked by %s",
		 (unsigned long long)f.id, p.selected, log_escape(a->who, e, sizeof(e)));
	return 0;
}

/* ---- freezes by a trigger ---- */

static void fz_count(struct freezer *fz, enum freeze_refusal why)
{
	__atomic_add_fetch(&fz->refused[why], 1, __ATOMIC_RELAXED);
}

/* Group (or lone host, @host) @name's rate-limit slot (a new one replaces the oldest kept). */
static struct fz_group *fz_group(struct freezer *fz, const char *name, bool host)
{
	struct fz_group *g;

	for (unsigned i = 0; i < fz->ngroups; i++)
		if (fz->groups[i].host == host && !strcmp(fz->groups[i].name, name))
			return &fz->groups[i];
	if (fz->ngroups < FREEZE_GROUPS)
		g = &fz->groups[fz->ngroups++];
	else
		g = &fz->groups[fz->group_next++ % FREEZE_GROUPS];
	*g = (struct fz_group){ .host = host };
	snprintf(g->name, sizeof(g->name), "%s", name);
	return g;
}

/*
 * Whether group @group (NULL: @host, in no group, alone) may freeze now;
 * else counted refused, logged once a period.
 */
static bool fz_group_may(struct freezer *fz, const char *host, const char *group)
{
	struct fz_group *g = fz_group(fz, group ? group : host, !group);
	int64_t now = util_now_ms();
	char e[2][LOG_ESC_LEN];

	if (!g->last_ms || now - g->last_ms >= fz->group_ms) {
		g->last_ms = now;
		return true;
	}
	fz_count(fz, FREEZE_RATE_LIMIT);
	if (!g->said_ms || now - g->said_ms >= fz->group_ms) {
		log_escape(host, e[0], sizeof(e[0]));
		if (group)
			log_warn("host %s: a trigger freeze of group %s refused: the group froze "
				 "less than %lld s ago (%llu refused so far)", e[0],
				 log_escape(group, e[1], sizeof(e[1])), (long long)(fz->group_ms / 1000),
				 (unsigned long long)freezer_refused(fz, FREEZE_RATE_LIMIT));
		else
			log_warn("host %s: a trigger freeze of itself (in no freeze group) refused: "
				 "it froze less than %lld s ago (%llu refused so far)", e[0],
				 (long long)(fz->group_ms / 1000),
				 (unsigned long long)freezer_refused(fz, FREEZE_RATE_LIMIT));
		g->said_ms = now;
	}
	return false;
}

/*
 * The groups a trigger of @host reaches, into @out: its @claim (--group)
 * when a freeze-group line puts @host in it, else every group the lines
 * put @host in (the first FREEZE_HOST_GROUPS). *@ignored: @claim was
 * given and is not one of them. Return: how many.
 */
static size_t fz_reach(struct freezer *fz, const char *host, const char *claim,
		       const char **out, bool *ignored)
{
	const struct hostmap *map = fz->col->freeze_groups;

	*ignored = false;
	if (claim && hostmap_allows(map, claim, host)) {
		out[0] = claim;
		return 1;
	}
	*ignored = claim != NULL;
	return hostmap_names(map, host, out, FREEZE_HOST_GROUPS);
}

/* Keep those of @groups (@n) that may freeze now. Return: how many are left. */
static size_t fz_may(struct freezer *fz, const char *host, const char **groups, size_t n)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++)
		if (fz_group_may(fz, host, groups[i]))
			groups[kept++] = groups[i];
	return kept;
}

/* "g1,g2" (escaped, cut short to @len) for the log. */
static const char *fz_names(const char *const *groups, size_t n, char *buf, size_t len)
{
	char e[LOG_ESC_LEN];
	size_t at = 0;

	buf[0] = 0;
	for (size_t i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? "," : "",
				       log_escape(groups[i], e, sizeof(e)));
	return buf;
}

/* Say that @host's --group @claim was ignored for snapshot @id (counted). */
static void fz_claim_ignored(struct freezer *fz, uint64_t id, const char *host, const char *claim,
			     size_t ngroups)
{
	char e[2][LOG_ESC_LEN];

	fz_count(fz, FREEZE_GROUP_CLAIM);
	log_warn("snapshot %llu: host %s's claim of freeze group %s ignored: no freeze-group "
		 "line of the collector puts it there; %s", (unsigned long long)id,
		 log_escape(host, e[0], sizeof(e[0])), log_escape(claim, e[1], sizeof(e[1])),
		 ngroups ? "its trigger freezes the groups the lines put it in" :
		 "its trigger freezes only itself");
}

void freezer_froze(struct freezer *fz, struct conn *c, const char *host, const char *claim,
		   const struct proto_froze *fr)
{
	char reason[PROTO_MAX_REASON], who[PROTO_MAX_REASON], e[2][LOG_ESC_LEN], names[1024];
	const char *groups[FREEZE_HOST_GROUPS];
	struct proto_freeze f;
	struct fz_pass p;
	size_t n, reached;
	bool ignored;

	if (!fz)
		return;
	reached = fz_reach(fz, host, claim, groups, &ignored);
	n = reached ? fz_may(fz, host, groups, reached) : fz_group_may(fz, host, NULL);
	if (!n)
		return;
	snprintf(reason, sizeof(reason), "trigger %.300s on %.300s", fr->event, host);
	snprintf(who, sizeof(who), "host %.300s", host);
	f = (struct proto_freeze){ .id = fz_id(fz, 0), .asked_ns = fz_realtime_ns(),
				   .reason = reason, .who = who };
	log_info("snapshot %llu: %s froze (trigger %s at trace_ns %llu, its trace clock)",
		 (unsigned long long)f.id, log_escape(host, e[0], sizeof(e[0])),
		 log_escape(fr->event, e[1], sizeof(e[1])), (unsigned long long)fr->trace_ns);
	if (ignored)
		fz_claim_ignored(fz, f.id, host, claim, reached);
	if (!reached) {	/* in no group: only itself */
		if (conn_freeze(c, &f) == 0)
			fz_pending_add(fz, f.id, 1);
		return;
	}
	p = (struct fz_pass){ .self = c, .map = fz->col->freeze_groups, .groups = groups,
			      .ngroups = n, .f = &f };
	conn_recorders(fz->col, fz_visit, &p);
	fz_pending_add(fz, f.id, p.selected);
	log_info("snapshot %llu: %u recorders of freeze group %s told to freeze",
		 (unsigned long long)f.id, p.selected, fz_names(groups, n, names, sizeof(names)));
}

void freezer_first_id(struct freezer *fz, uint64_t id)
{
	if (id > fz->next_id)
		fz->next_id = id;
}

const char *freezer_refusal_name(unsigned why)
{
	static const char *const names[FREEZE_REFUSALS] = {
		[FREEZE_RATE_LIMIT] = "rate_limit", [FREEZE_GROUP_CLAIM] = "group_claim",
	};

	return why < FREEZE_REFUSALS ? names[why] : NULL;
}

uint64_t freezer_refused(const struct freezer *fz, enum freeze_refusal why)
{
	return fz && why < FREEZE_REFUSALS ? __atomic_load_n(&fz->refused[why], __ATOMIC_RELAXED)
					    : 0;
}

/* ---- the queue ---- */

/* A queued ask, on the loop (loopcall_fn). */
static void fz_run_call(void *arg, struct loopcall *lc)
{
	struct freezer *fz = arg;
	struct fz_call *c = lc->arg;

	loopcall_done(fz->calls, lc, fz_run(fz, c->a, c->out));
}

int freezer_ask(struct freezer *fz, const struct freeze_ask *a, struct freeze_answer *out)
{
	struct fz_call c = { .a = a, .out = out, .lc.arg = &c };
	int ret;

	*out = (struct freeze_answer){ 0 };
	ret = loopcall_call(fz->calls, &c.lc);
	if (c.lc.stopped)
		snprintf(out->why, sizeof(out->why), "the collector is stopping");
	return ret;
}

void freezer_interval(struct freezer *fz, unsigned seconds)
{
	fz->group_ms = (int64_t)seconds * 1000;
}

int freezer_new(struct collector *col, struct event_base *base, struct freezer **out)
{
	struct freezer *fz = calloc(1, sizeof(*fz));
	int ret;

	if (!fz)
		return -ENOMEM;
	fz->col = col;
	fz->base = base;
	fz->group_ms = FREEZE_GROUP_S * 1000;
	if ((ret = loopcall_new(base, LOG_PREFIX, fz_run_call, fz, &fz->calls)) < 0) {
		freezer_free(fz);
		return ret;
	}
	*out = fz;
	return 0;
}

void freezer_stop(struct freezer *fz)
{
	if (fz)
		loopcall_stop(fz->calls);
}

void freezer_free(struct freezer *fz)
{
	if (!fz)
		return;
	for (unsigned i = 0; i < FREEZE_PENDING; i++)
		if (fz->pending[i].timer)
			event_free(fz->pending[i].timer);
	loopcall_free(fz->calls);
	free(fz);
}
