/*
 * filter_table.c - the collector's filter table (see filter_table.h): rule
 * parsing, reference counting, and resolution of one event's effective
 * filter with the kernel's subsystem-filter semantics.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/ingest/filter_table.h"

struct frule {
	char *text;		/* the whole rule, for messages */
	char *host;		/* glob, or NULL for every host */
	char *system;
	char *event;		/* NULL: every event of the subsystem */
	struct filter *f;	/* parsed, unbound; NULL: "0" clears */
};

struct filter_table {
	int refs;
	struct frule *rules;
	size_t count;
};

int filter_table_new(struct filter_table **out)
{
	struct filter_table *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return -ENOMEM;
	fs->refs = 1;
	*out = fs;
	return 0;
}

size_t filter_table_count(const struct filter_table *fs)
{
	return fs ? fs->count : 0;
}

struct filter_table *filter_table_ref(struct filter_table *fs)
{
	if (fs)
		__atomic_add_fetch(&fs->refs, 1, __ATOMIC_RELAXED);
	return fs;
}

static void rule_free(struct frule *r)
{
	free(r->text);
	free(r->host);
	free(r->system);
	free(r->event);
	filter_free(r->f);
}

void filter_table_unref(struct filter_table *fs)
{
	if (!fs || __atomic_sub_fetch(&fs->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	for (size_t i = 0; i < fs->count; i++)
		rule_free(&fs->rules[i]);
	free(fs->rules);
	free(fs);
}

static size_t skip_blank(const char *s, size_t i)
{
	while (s[i] == ' ' || s[i] == '\t')
		i++;
	return i;
}

/* Render "msg\n  rule\n  ^~~" for the token at @pos/@len of @rule. */
static int rule_error(const char *rule, int code, size_t pos, size_t len, const char *msg,
		      char *err, size_t errlen)
{
	struct filter_error e = { .code = code, .pos = pos, .len = len };

	snprintf(e.msg, sizeof(e.msg), "%s", msg);
	if (err && errlen)
		filter_error_format(rule, &e, err, errlen);
	return code;
}

/* "[host=GLOB]" at rule[*i]: the glob into r->host. */
static int parse_host(const char *rule, size_t *i, struct frule *r, char *err, size_t errlen)
{
	const char *end;
	size_t start = *i + 6;

	if (strncmp(rule + *i, "[host=", 6))
		return rule_error(rule, TC_ERR_SYNTAX, *i, 1,
				  "expected \"[host=GLOB]\" before the event", err, errlen);
	end = strchr(rule + start, ']');
	if (!end || end == rule + start)
		return rule_error(rule, TC_ERR_SYNTAX, *i, end ? (size_t)(end - rule) - *i + 1 : 6,
				  end ? "empty host glob" : "\"[host=\" without a closing ']'",
				  err, errlen);
	r->host = strndup(rule + start, (size_t)(end - rule) - start);
	*i = (size_t)(end - rule) + 1;
	return r->host ? 0 : -ENOMEM;
}

static bool target_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

/* SYSTEM[:EVENT] at rule[*i]. */
static int parse_target(const char *rule, size_t *i, struct frule *r, char *err, size_t errlen)
{
	size_t s = *i, e = s;
	const char *colon = NULL;

	while (target_char(rule[e]) || (rule[e] == ':' && !colon)) {
		if (rule[e] == ':')
			colon = rule + e;
		e++;
	}
	if (e == s || colon == rule + s || (colon && colon + 1 == rule + e) ||
	    (rule[e] && rule[e] != ' ' && rule[e] != '\t'))
		return rule_error(rule, TC_ERR_SYNTAX, s, e > s ? e - s : 1,
				  "expected SYSTEM or SYSTEM:EVENT", err, errlen);
	r->system = strndup(rule + s, (size_t)((colon ? colon : rule + e) - (rule + s)));
	if (colon)
		r->event = strndup(colon + 1, (size_t)(rule + e - colon - 1));
	*i = e;
	return r->system && (!colon || r->event) ? 0 : -ENOMEM;
}

static int parse_rule(const char *rule, struct frule *r, char *err, size_t errlen)
{
	struct filter_error fe;
	size_t i = skip_blank(rule, 0);
	int ret = 0;

	if (rule[i] == '[')
		ret = parse_host(rule, &i, r, err, errlen);
	if (ret == 0)
		ret = parse_target(rule, (i = skip_blank(rule, i), &i), r, err, errlen);
	if (ret < 0)
		return ret;
	i = skip_blank(rule, i);
	if (!rule[i])
		return rule_error(rule, TC_ERR_SYNTAX, i, 0,
				  "expected a filter after the event (\"0\" clears)", err, errlen);
	if (!strcmp(rule + i, "0"))
		return 0;
	ret = filter_parse(rule + i, &r->f, &fe);
	if (ret < 0)
		rule_error(rule, ret, fe.pos + i, fe.len, fe.msg, err, errlen);
	return ret;
}

int filter_table_add(struct filter_table *fs, const char *rule, char *err, size_t errlen)
{
	struct frule r = { 0 }, *rules = NULL;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	ret = parse_rule(rule, &r, err, errlen);
	if (ret == 0 && !(r.text = strdup(rule)))
		ret = -ENOMEM;
	if (ret == 0 && !(rules = realloc(fs->rules, (fs->count + 1) * sizeof(*rules))))
		ret = -ENOMEM;
	if (ret < 0) {
		rule_free(&r);
		return ret;
	}
	fs->rules = rules;
	fs->rules[fs->count++] = r;
	return 0;
}

static bool rule_matches(const struct frule *r, const char *host, const char *system,
			 const char *name)
{
	if (strcmp(r->system, system) || (r->event && strcmp(r->event, name)))
		return false;
	return !r->host || fnmatch(r->host, host ? host : "", 0) == 0;
}

/* Apply @r to *@cur: replace it if @r binds, else report and keep it. */
static int rule_apply(const struct frule *r, const struct filter_schema *schema,
		      struct filter **cur, const char *system, const char *name,
		      filter_table_report_fn report, void *ctx)
{
	struct filter_error fe;
	struct filter *f = NULL;
	char why[512];
	size_t n;
	int ret;

	if (!r->f) {
		filter_free(*cur);
		*cur = NULL;
		return 0;
	}
	ret = filter_dup(r->f, &f);
	if (ret < 0)
		return ret;
	ret = filter_bind(f, schema, &fe);
	if (ret == 0) {
		filter_free(*cur);
		*cur = f;
		return 0;
	}
	filter_free(f);
	if (ret == -ENOMEM)
		return ret;
	if (report) {
		filter_error_format(filter_text(r->f), &fe, why, sizeof(why));
		n = strlen(why);
		if (n && why[n - 1] == '\n')
			why[n - 1] = '\0';
		report(ctx, system, name, r->text, why);
	}
	return 0;
}

int filter_table_resolve(const struct filter_table *fs, const char *host,
			 const char *system, const char *name,
			 const struct filter_schema *schema, struct filter **out,
			 filter_table_report_fn report, void *ctx)
{
	struct filter *cur = NULL;
	int ret = 0;

	for (size_t i = 0; fs && i < fs->count && ret == 0; i++)
		if (rule_matches(&fs->rules[i], host, system, name))
			ret = rule_apply(&fs->rules[i], schema, &cur, system, name, report, ctx);
	if (ret < 0) {
		filter_free(cur);
		return ret;
	}
	*out = cur;
	return 0;
}
