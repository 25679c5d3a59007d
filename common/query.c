/*
 * query.c - parse traceq's "EVENT [where FILTER]" text (see query.h): a
 * hand-written scanner for the event part that hands the rest to
 * filter_parse() and shifts its error positions onto the whole query.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/query.h"
#include "common/tc_error.h"
#include "common/util.h"

#define TOKLEN(n) ((int)((n) < 40 ? (n) : 40))

struct qscan {
	const char *s;
	size_t len;
	size_t i;
	struct filter_error *err;
};

static int __attribute__((format(printf, 5, 6)))
qfail(struct filter_error *err, int code, size_t pos, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	err->pos = pos;
	err->len = len;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}


static bool is_name(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/* length of the name at q->i (0 if none) */
static size_t name_len(const struct qscan *q)
{
	size_t j = q->i;

	while (j < q->len && is_name(q->s[j]))
		j++;
	return j - q->i;
}

/* length of a run of non-space bytes at q->i, for error tokens */
static size_t word_len(const struct qscan *q)
{
	size_t j = q->i;

	while (j < q->len && !util_is_space(q->s[j]))
		j++;
	return j - q->i;
}

static bool is_where(const struct qscan *q, size_t n)
{
	return n == 5 && !strncasecmp(q->s + q->i, "where", 5);
}

static int expect_name(struct qscan *q, const char *what)
{
	size_t n = word_len(q);

	if (q->i >= q->len)
		return qfail(q->err, TC_ERR_UNEXPECTED_END, q->len, 0,
			     "missing %s", what);
	if (!n)
		return qfail(q->err, TC_ERR_SYNTAX, q->i, 1, "expected %s", what);
	return qfail(q->err, TC_ERR_SYNTAX, q->i, n, "expected %s, found '%.*s'",
		     what, TOKLEN(n), q->s + q->i);
}

/* the part after ':' into @event (NULL for '*') */
static int scan_event_part(struct qscan *q, char **event)
{
	size_t n = name_len(q);

	*event = NULL;
	if (!n && q->i < q->len && q->s[q->i] == '*') {
		q->i++;
		return 0;
	}
	if (!n)
		return expect_name(q, "an event name or '*' after ':'");
	*event = strndup(q->s + q->i, n);
	q->i += n;
	return *event ? 0 : -ENOMEM;
}

/* EVENT into @system / @event; on failure both are NULL */
static int scan_event(struct qscan *q, char **system, char **event)
{
	size_t n, start;
	int ret;

	q->i = util_skip_space(q->s, q->len, q->i);
	start = q->i;
	n = name_len(q);
	if (!n)
		return expect_name(q, "an event or subsystem name");
	if (is_where(q, n))
		return qfail(q->err, TC_ERR_SYNTAX, start, n,
			     "missing event name before 'where'");
	*system = NULL;
	*event = strndup(q->s + start, n);
	if (!*event)
		return -ENOMEM;
	q->i += n;
	if (q->i >= q->len || q->s[q->i] != ':')
		return 0;
	q->i++;
	*system = *event;
	ret = scan_event_part(q, event);
	if (ret) {
		free(*system);
		*system = NULL;
	}
	return ret;
}

/* after EVENT: nothing, or "where" and a filter; sets q->i to the filter */
static int scan_where(struct qscan *q, bool *has_filter)
{
	size_t n, where;

	*has_filter = false;
	if (q->i < q->len && !util_is_space(q->s[q->i]))
		return qfail(q->err, TC_ERR_SYNTAX, q->i, word_len(q),
			     "unexpected '%c' after the event name", q->s[q->i]);
	q->i = util_skip_space(q->s, q->len, q->i);
	if (q->i >= q->len)
		return 0;
	n = name_len(q);
	if (!is_where(q, n))
		return qfail(q->err, TC_ERR_SYNTAX, q->i, n ? n : word_len(q),
			     "expected 'where' or the end of the query, found '%.*s'",
			     TOKLEN(n ? n : word_len(q)), q->s + q->i);
	where = q->i;
	q->i += n;
	q->i = util_skip_space(q->s, q->len, q->i);
	if (q->i >= q->len)
		return qfail(q->err, TC_ERR_UNEXPECTED_END, where, n,
			     "'where' needs a filter after it");
	*has_filter = true;
	return 0;
}

int query_parse(const char *text, struct query *out, struct filter_error *err)
{
	struct qscan q = { .s = text, .err = err };
	struct query r = { 0 };
	bool has_filter;
	int ret;

	q.len = strnlen(text, QUERY_MAX_LEN + 1);
	if (q.len > QUERY_MAX_LEN)
		return qfail(err, TC_ERR_TOO_LONG, QUERY_MAX_LEN, 1,
			     "query longer than %d bytes", QUERY_MAX_LEN);
	ret = scan_event(&q, &r.system, &r.event);
	if (!ret)
		ret = scan_where(&q, &has_filter);
	if (!ret && has_filter) {
		r.filter_offset = q.i;
		ret = filter_parse(text + q.i, &r.filter, err);
		if (ret && err)
			err->pos += q.i;
	}
	if (ret == -ENOMEM)
		qfail(err, ret, 0, 0, "out of memory");
	if (ret)
		query_free(&r);
	else
		*out = r;
	return ret;
}

void query_free(struct query *q)
{
	if (!q)
		return;
	free(q->system);
	free(q->event);
	filter_free(q->filter);
	memset(q, 0, sizeof(*q));
}
