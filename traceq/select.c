/*
 * select.c - traceq's --since/--until, --host, --cpu and --reverse, as
 * request keys (select.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traceq/select.h"
#include "traceq/when.h"

int tq_select_time(struct tq_select *s, const char *arg, bool until, int64_t now_ns)
{
	struct when w;
	char err[1024];

	if (when_parse(arg, now_ns, &w, err, sizeof(err)) < 0) {
		fprintf(stderr, "traceq: %s: %s\n", until ? "--until" : "--since", err);
		return -1;
	}
	if (until) {
		s->to_ts = w.ns;
		s->to_end = w.base == WHEN_END;
	} else {
		s->from_ts = w.ns;
		s->from_end = w.base == WHEN_END;
	}
	return 0;
}

/* One number of a CPU list at *@p (advanced past it); -1 if none or too big. */
static long cpu_num(const char **p)
{
	char *end;
	long v;

	if (**p < '0' || **p > '9')
		return -1;
	errno = 0;
	v = strtol(*p, &end, 10);
	if (errno || v >= QMSG_MAX_CPUS)
		return -1;
	*p = end;
	return v;
}

int tq_select_cpus(struct tq_select *s, const char *list)
{
	const char *p = list;

	do {
		long lo = cpu_num(&p), hi = lo;

		if (lo >= 0 && *p == '-') {
			p++;
			hi = cpu_num(&p);
		}
		if (lo < 0 || hi < lo || (*p && *p != ',')) {
			fprintf(stderr, "traceq: --cpu: expected a list like 0,2-3 (CPUs below "
				"%d), not '%s'\n", QMSG_MAX_CPUS, list);
			return -1;
		}
		for (long c = lo; c <= hi; c++) {
			if (s->ncpus == QMSG_MAX_CPUS) {
				fprintf(stderr, "traceq: --cpu: more than %d CPUs\n", QMSG_MAX_CPUS);
				return -1;
			}
			s->cpus[s->ncpus++] = (uint32_t)c;
		}
	} while (*p++ == ',');
	return 0;
}

int tq_select_host(struct tq_select *s, const char *glob)
{
	if (s->nhosts == QMSG_MAX_HOSTS) {
		fprintf(stderr, "traceq: --host: more than %d\n", QMSG_MAX_HOSTS);
		return -1;
	}
	s->hosts[s->nhosts++] = glob;
	return 0;
}

void tq_select_apply(const struct tq_select *s, struct qmsg_request *req)
{
	req->from_ts = s->from_ts;
	req->to_ts = s->to_ts;
	req->from_end = s->from_end;
	req->to_end = s->to_end;
	req->reverse = s->reverse;
	req->host = s->nhosts == 1 ? (char *)s->hosts[0] : NULL;
	req->hosts = s->nhosts > 1 ? (char **)s->hosts : NULL;
	req->nhosts = s->nhosts > 1 ? s->nhosts : 0;
	req->cpus = s->ncpus ? (uint32_t *)s->cpus : NULL;
	req->ncpus = s->ncpus;
	req->snapshot_id = s->snapshot_id;
}
