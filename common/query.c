/*
 * query.c - parse traceq's "SELECTOR[,SELECTOR...] [where FILTER]" text
 * (see query.h): a hand-written scanner for the selectors that hands the rest to
 * filter_parse() and shifts its error positions onto the whole query.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
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

static bool is_name(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/* a name byte or a glob byte (fnmatch(3): * ? [ ], and ! ^ inside brackets) */
static bool is_word(char c, bool in_brackets)
{
	return is_name(c) || c == '*' || c == '?' || c == '[' || c == ']' ||
	       (in_brackets && (c == '!' || c == '^'));
}

/* length of the word (name or glob) at q->i (0 if none) */
static size_t name_len(const struct qscan *q)
{
	size_t j = q->i;
	bool in = false;

	for (; j < q->len && is_word(q->s[j], in); j++)
		in = q->s[j] == '[' ? true : q->s[j] == ']' ? false : in;
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
		return filter_fail(q->err, TC_ERR_UNEXPECTED_END, q->len, 0,
				   "missing %s", what);
	if (!n)
		return filter_fail(q->err, TC_ERR_SYNTAX, q->i, 1, "expected %s", what);
	return filter_fail(q->err, TC_ERR_SYNTAX, q->i, n, "expected %s, found '%.*s'",
			   what, TOKLEN(n), q->s + q->i);
}

/* the word after ':' into @event */
static int scan_event_part(struct qscan *q, char **event)
{
	size_t n = name_len(q);

	*event = NULL;
	if (!n)
		return expect_name(q, "an event name or glob after ':'");
	*event = strndup(q->s + q->i, n);
	q->i += n;
	return *event ? 0 : -ENOMEM;
}

/* one SELECTOR into @sel; on failure it holds nothing */
static int scan_sel(struct qscan *q, struct query_sel *sel)
{
	size_t n, start;
	int ret;

	q->i = util_skip_space(q->s, q->len, q->i);
	start = q->i;
	n = name_len(q);
	if (!n)
		return expect_name(q, "an event or subsystem name");
	if (is_where(q, n))
		return filter_fail(q->err, TC_ERR_SYNTAX, start, n,
				   "missing event name before 'where'");
	*sel = (struct query_sel){ .pos = start };
	sel->event = strndup(q->s + start, n);
	if (!sel->event)
		return -ENOMEM;
	q->i += n;
	if (q->i < q->len && q->s[q->i] == ':') {
		q->i++;
		sel->system = sel->event;
		ret = scan_event_part(q, &sel->event);
		if (ret) {
			free(sel->system);
			sel->system = NULL;
			return ret;
		}
	}
	sel->len = q->i - start;
	return 0;
}

/* SELECTOR { "," SELECTOR } into @r */
static int scan_sels(struct qscan *q, struct query *r)
{
	int ret;

	do {
		struct query_sel *v;

		if (r->nsel == QUERY_MAX_SELECTORS)
			return filter_fail(q->err, TC_ERR_TOO_LONG, q->i, word_len(q),
					   "more than %d selectors", QUERY_MAX_SELECTORS);
		v = realloc(r->sel, (r->nsel + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->sel = v;
		ret = scan_sel(q, &v[r->nsel]);
		if (ret)
			return ret;
		r->nsel++;
		if (q->i < q->len && q->s[q->i] != ',' &&
		    q->s[util_skip_space(q->s, q->len, q->i)] == ',')
			q->i = util_skip_space(q->s, q->len, q->i);
	} while (q->i < q->len && q->s[q->i] == ',' && ++q->i);
	return 0;
}

/* after the selectors: nothing, or "where" and a filter; sets q->i to the filter */
static int scan_where(struct qscan *q, bool *has_filter)
{
	size_t n, where;

	*has_filter = false;
	if (q->i < q->len && !util_is_space(q->s[q->i]))
		return filter_fail(q->err, TC_ERR_SYNTAX, q->i, word_len(q),
				   "unexpected '%c' after the event name", q->s[q->i]);
	q->i = util_skip_space(q->s, q->len, q->i);
	if (q->i >= q->len)
		return 0;
	n = name_len(q);
	if (!is_where(q, n))
		return filter_fail(q->err, TC_ERR_SYNTAX, q->i, n ? n : word_len(q),
				   "expected 'where' or the end of the query, found '%.*s'",
				   TOKLEN(n ? n : word_len(q)), q->s + q->i);
	where = q->i;
	q->i += n;
	q->i = util_skip_space(q->s, q->len, q->i);
	if (q->i >= q->len)
		return filter_fail(q->err, TC_ERR_UNEXPECTED_END, where, n,
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
		return filter_fail(err, TC_ERR_TOO_LONG, QUERY_MAX_LEN, 1,
				   "query longer than %d bytes", QUERY_MAX_LEN);
	ret = scan_sels(&q, &r);
	if (!ret)
		ret = scan_where(&q, &has_filter);
	if (!ret && has_filter) {
		r.filter_offset = q.i;
		ret = filter_parse(text + q.i, &r.filter, err);
		if (ret && err)
			err->pos += q.i;
	}
	if (ret == -ENOMEM)
		filter_fail(err, ret, 0, 0, "out of memory");
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
	for (size_t i = 0; i < q->nsel; i++) {
		free(q->sel[i].system);
		free(q->sel[i].event);
	}
	free(q->sel);
	filter_free(q->filter);
	memset(q, 0, sizeof(*q));
}

bool query_sel_matches(const struct query_sel *sel, const char *system, const char *name)
{
	return (!sel->system || !fnmatch(sel->system, system, 0)) &&
	       !fnmatch(sel->event, name, 0);
}
