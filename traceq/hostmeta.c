/*
 * hostmeta.c - a host's boot as its kernel described it (hostmeta.h),
 * from the collector's op 10 replies: rows (item, system, name, value),
 * the boot's items on the first page, then one "format" row per event
 * type, paged by the format's id (after_id).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "proto/msg.h"
#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/hostmeta.h"

#define HOSTMETA_MAX_FORMATS	(1u << 16)	/* types per host: the collector caps at 2000 */
#define HOSTMETA_MAX_PROGRAMS	1024		/* the collector sends at most as many */

/* A str cell's copy into *@out (replacing it); nil leaves it. -ENOMEM. */
static int take_str(const struct qmsg_value *v, char **out)
{
	char *s;

	if (v->kind != QV_STR)
		return 0;
	if (!(s = strdup(v->s.p)))
		return -ENOMEM;
	free(*out);
	*out = s;
	return 0;
}

static int take_format(struct hostmeta *m, const struct qmsg_value *row)
{
	struct hostmeta_format *f;

	if (row[1].kind != QV_STR || row[2].kind != QV_STR || row[3].kind != QV_STR)
		return 0;	/* not one we can use: left out */
	if (m->nformats >= HOSTMETA_MAX_FORMATS)
		return 0;
	f = util_grow(m->formats, &m->formats_cap, m->nformats, sizeof(*m->formats), 64);
	if (!f)
		return -ENOMEM;
	m->formats = f;
	f = &m->formats[m->nformats];
	*f = (struct hostmeta_format){ .system = strdup(row[1].s.p), .name = strdup(row[2].s.p),
				       .text = strdup(row[3].s.p) };
	m->nformats++;	/* freed with the rest when one strdup failed */
	return f->system && f->name && f->text ? 0 : -ENOMEM;
}

/* A "program" item: "FIRST_STREAM NSTREAMS SINCE_NS"; one that does not read is left out. */
static int take_program(struct hostmeta *m, const struct qmsg_value *v)
{
	struct hostmeta_program p, *n;
	char *end;
	unsigned long long first, count;
	long long since;

	if (v->kind != QV_STR || m->nprograms >= HOSTMETA_MAX_PROGRAMS)
		return 0;
	errno = 0;
	first = strtoull(v->s.p, &end, 10);
	count = *end == ' ' ? strtoull(end + 1, &end, 10) : 0;
	since = *end == ' ' ? strtoll(end + 1, &end, 10) : 0;
	if (errno || *end || first < PROTO_USER_STREAM_BASE || first > 65535 || !count ||
	    count > 65536 || first + count > 65536)
		return 0;
	p = (struct hostmeta_program){ (uint32_t)first, (uint32_t)count, since };
	n = util_grow(m->programs, &m->programs_cap, m->nprograms, sizeof(*m->programs), 8);
	if (!n)
		return -ENOMEM;
	m->programs = n;
	m->programs[m->nprograms++] = p;
	return 0;
}

/* One row of a reply into @m. */
static int take_row(struct hostmeta *m, const struct qmsg_value *row)
{
	const char *item = row[0].kind == QV_STR ? row[0].s.p : "";
	uint64_t n = (uint64_t)qmsg_value_int(&row[3]);

	if (!strcmp(item, "format"))
		return take_format(m, row);
	if (!strcmp(item, "program"))
		return take_program(m, &row[3]);
	if (!strcmp(item, "boot_id"))
		return take_str(&row[3], &m->boot_id);
	if (!strcmp(item, "kernel"))
		return take_str(&row[3], &m->kernel);
	if (!strcmp(item, "trace_clock"))
		return take_str(&row[3], &m->trace_clock);
	if (!strcmp(item, "header_page"))
		return take_str(&row[3], &m->header_page);
	if (!strcmp(item, "header_event"))
		return take_str(&row[3], &m->header_event);
	if (!strcmp(item, "long_size"))
		m->long_size = n == 4 || n == 8 ? (uint32_t)n : 0;
	else if (!strcmp(item, "big_endian"))
		m->big_endian = n != 0;
	else if (!strcmp(item, "page_size"))
		m->page_size = n <= (1u << 20) ? (uint32_t)n : 0;
	return 0;	/* an item of a later collector: ignored */
}

static int take_reply(struct hostmeta *m, const struct qmsg_reply *rep)
{
	int ret = 0;

	if (rep->types || rep->ncols != QMSG_HEADERS_COLS) {
		fprintf(stderr, "traceq: bad reply from the collector: headers: %u columns\n",
			rep->ncols);
		return 1;
	}
	for (uint32_t i = 0; i < rep->nrows && ret == 0; i++)
		ret = take_row(m, &rep->vals[(size_t)i * QMSG_HEADERS_COLS]);
	if (ret < 0)
		fprintf(stderr, "traceq: out of memory\n");
	return ret < 0 ? 1 : 0;
}

int hostmeta_get(struct client *c, const char *host, int64_t wall_ns, struct hostmeta *out)
{
	struct qmsg_request req = { .op = QOP_HEADERS, .host = (char *)host, .to_ts = wall_ns };
	struct hostmeta m = { 0 };
	struct qmsg_reply rep;
	bool more = true, any = false;
	int ret = 0;

	while (ret == 0 && more) {
		ret = client_call_opt(c, &req, &rep);
		if (ret)
			break;
		any |= rep.nrows > 0;
		more = rep.more && rep.nrows && rep.last_id > req.after_id;
		req.after_id = rep.last_id;
		ret = take_reply(&m, &rep);
		qmsg_reply_free(&rep);
	}
	if (ret == 0 && !any)
		ret = 4;	/* an unknown host, or none in scope */
	if (ret) {
		hostmeta_free(&m);
		return ret;
	}
	if (!m.boot_id && !(m.boot_id = strdup(""))) {
		hostmeta_free(&m);
		fprintf(stderr, "traceq: out of memory\n");
		return 1;
	}
	*out = m;
	return 0;
}

void hostmeta_free(struct hostmeta *m)
{
	for (size_t i = 0; i < m->nformats; i++) {
		free(m->formats[i].system);
		free(m->formats[i].name);
		free(m->formats[i].text);
	}
	free(m->formats);
	free(m->programs);
	free(m->boot_id);
	free(m->kernel);
	free(m->trace_clock);
	free(m->header_page);
	free(m->header_event);
	memset(m, 0, sizeof(*m));
}
