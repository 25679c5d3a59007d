/*
 * hist.c - the kernel's hist-trigger syntax: parse (untrusted text, one
 * linear pass over at most HIST_SPEC_MAX bytes, fixed-size output, no
 * allocation) and print back as the kernel's trigger info line. The rules
 * and limits are the kernel's (kernel/trace/trace_events_hist.c:
 * parse_hist_trigger_attrs(), parse_field(), create_val_fields(),
 * create_sort_keys(), parse_map_size()); hist.h lists them.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "common/tc_error.h"

/* A piece of the spec text: [p, p + n) at byte offset pos. */
struct span {
	const char *p;
	size_t n, pos;
};

/* A span's text for "%.*s" in an error message, cut to 40 bytes. */
#define SP(s)	(int)((s)->n > 40 ? 40 : (s)->n), (s)->p

/* Split @s at the first @c: the part before into @head, after into @s (n 0: none). */
static bool span_split(struct span *s, char c, struct span *head)
{
	const char *x = memchr(s->p, c, s->n);

	*head = *s;
	if (!x) {
		s->p += s->n;
		s->pos += s->n;
		s->n = 0;
		return false;
	}
	head->n = (size_t)(x - s->p);
	s->n -= head->n + 1;
	s->pos += head->n + 1;
	s->p = x + 1;
	return true;
}

static bool span_is(const struct span *s, const char *word)
{
	return s->n == strlen(word) && !memcmp(s->p, word, s->n);
}

static bool span_prefix(const struct span *s, const char *word)
{
	return s->n >= strlen(word) && !memcmp(s->p, word, strlen(word));
}

/* A number as kstrtoul(base 0) takes it: decimal, 0x hex, 0 octal. */
static bool span_number(const struct span *s, uint64_t *out)
{
	char buf[32], *end;

	if (!s->n || s->n >= sizeof(buf) || s->p[0] == '-' || s->p[0] == '+')
		return false;
	memcpy(buf, s->p, s->n);
	buf[s->n] = '\0';
	errno = 0;
	*out = strtoull(buf, &end, 0);
	return !errno && *end == '\0' && end != buf;
}

static bool is_ident(const struct span *s)
{
	for (size_t i = 0; i < s->n; i++) {
		char c = s->p[i];

		if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (i && c >= '0' && c <= '9')))
			return false;
	}
	return s->n > 0;
}

static const char *const mod_names[] = {
	[HIST_MOD_NONE] = "", [HIST_MOD_HEX] = "hex", [HIST_MOD_SYM] = "sym",
	[HIST_MOD_EXECNAME] = "execname", [HIST_MOD_LOG2] = "log2",
	[HIST_MOD_BUCKETS] = "buckets",
};

const char *hist_mod_name(enum hist_mod m)
{
	return m <= HIST_MOD_BUCKETS ? mod_names[m] : "";
}

/* The kernel's modifiers we do not print: named in the error. */
static const char *const unsupported_mods[] = {
	"sym-offset", "syscall", "usecs", "percent", "graph", "stacktrace",
};

static int parse_mod(struct span *m, struct hist_field *f, struct filter_error *err)
{
	struct span num;
	size_t i;

	for (i = HIST_MOD_HEX; i < HIST_MOD_BUCKETS; i++)
		if (span_is(m, mod_names[i])) {
			f->mod = (enum hist_mod)i;
			return 0;
		}
	if (span_prefix(m, "bucket")) {
		num = *m;
		num.p += 6, num.n -= 6, num.pos += 6;
		if (num.n && num.p[0] == 's')
			num.p++, num.n--, num.pos++;
		if (!num.n || num.p[0] != '=')
			return filter_fail(err, TC_ERR_SYNTAX, m->pos, m->n,
					   "'.%.*s': buckets wants a size: .buckets=N", SP(m));
		num.p++, num.n--, num.pos++;
		if (!span_number(&num, &f->buckets) || f->buckets == 0)
			return filter_fail(err, TC_ERR_BAD_NUMBER, num.pos, num.n,
				"'%.*s': the bucket size must be a number above 0", SP(&num));
		f->mod = HIST_MOD_BUCKETS;
		return 0;
	}
	for (i = 0; i < sizeof(unsupported_mods) / sizeof(unsupported_mods[0]); i++)
		if (span_is(m, unsupported_mods[i]))
			return filter_fail(err, TC_ERR_SYNTAX, m->pos, m->n,
				"modifier '.%.*s' is not supported here (use .hex, .sym, "
				".execname, .log2 or .buckets=N)", SP(m));
	return filter_fail(err, TC_ERR_SYNTAX, m->pos, m->n,
		"unknown modifier '.%.*s' (use .hex, .sym, .execname, .log2 or .buckets=N)",
		SP(m));
}

/* One key or val: NAME[.MODIFIER]. */
static int parse_field(struct span s, struct hist_field *f, struct filter_error *err)
{
	struct span name;
	bool has_mod = span_split(&s, '.', &name);

	memset(f, 0, sizeof(*f));
	f->pos = name.pos;
	f->len = name.n + (has_mod ? 1 + s.n : 0);
	if (!name.n)
		return filter_fail(err, TC_ERR_SYNTAX, name.pos, has_mod ? 1 : 0,
				   "a field name is missing");
	if (name.n > HIST_NAME_MAX)
		return filter_fail(err, TC_ERR_TOO_LONG, name.pos, name.n,
				   "field name '%.*s...' is too long", SP(&name));
	if (!is_ident(&name))
		return filter_fail(err, TC_ERR_SYNTAX, name.pos, name.n,
				   "'%.*s' is not a field name (expressions, variables and "
				   "constants are not supported)", SP(&name));
	memcpy(f->name, name.p, name.n);
	f->name[name.n] = '\0';
	if (span_is(&name, "stacktrace") || span_is(&name, "common_stacktrace")) {
		/* the kernel's name for it since 6.5, whichever was written */
		snprintf(f->name, sizeof(f->name), "common_stacktrace");
		f->stack = true;
		if (has_mod)
			return filter_fail(err, TC_ERR_SYNTAX, s.pos, s.n,
					   "'%.*s' takes no modifier", SP(&name));
	}
	if (has_mod)
		return parse_mod(&s, f, err);
	return 0;
}

static int parse_keys(struct span s, struct hist_spec *h, struct filter_error *err)
{
	struct span one;
	bool more = true;
	int ret;

	if (!s.n)
		return filter_fail(err, TC_ERR_SYNTAX, s.pos, 0, "keys= names no field");
	while (more) {
		if (h->nkeys == HIST_KEYS_MAX)
			return filter_fail(err, TC_ERR_SYNTAX, s.pos, s.n,
					   "too many keys (at most 3)");
		more = span_split(&s, ',', &one);
		ret = parse_field(one, &h->keys[h->nkeys], err);
		if (ret < 0)
			return ret;
		for (size_t i = 0; h->keys[h->nkeys].stack && i < h->nkeys; i++)
			if (h->keys[i].stack)
				return filter_fail(err, TC_ERR_SYNTAX, one.pos, one.n,
						   "common_stacktrace is a key once");
		h->nkeys++;
	}
	return 0;
}

static int parse_vals(struct span s, struct hist_spec *h, struct filter_error *err)
{
	struct span one;
	bool more = true;
	int ret;

	while (more) {
		more = span_split(&s, ',', &one);
		if (span_is(&one, "hitcount"))
			continue;
		if (h->nvals == HIST_VALS_MAX)
			return filter_fail(err, TC_ERR_SYNTAX, one.pos, one.n,
					   "too many values (at most 2 besides hitcount)");
		ret = parse_field(one, &h->vals[h->nvals], err);
		if (ret < 0)
			return ret;
		if (!strcmp(h->vals[h->nvals].name, "common_timestamp") || h->vals[h->nvals].stack)
			return filter_fail(err, TC_ERR_SYNTAX, one.pos, one.n,
					   "'%s' is a key only here, not a value",
					   h->vals[h->nvals].name);
		if (h->vals[h->nvals].mod != HIST_MOD_NONE && h->vals[h->nvals].mod != HIST_MOD_HEX)
			return filter_fail(err, TC_ERR_SYNTAX, one.pos, one.n,
				"'%.*s': a value takes only the .hex modifier", SP(&one));
		h->nvals++;
	}
	return 0;
}

static int parse_size(struct span s, struct hist_spec *h, struct filter_error *err)
{
	uint64_t n;
	uint32_t p2 = 1;

	if (!span_number(&s, &n) || n > HIST_SIZE_MAX || n <= HIST_SIZE_MIN / 2)
		return filter_fail(err, TC_ERR_BAD_NUMBER, s.pos, s.n,
			"size '%.*s': want 65..131072 (rounded up to a power of two)", SP(&s));
	while (p2 < n)
		p2 <<= 1;
	h->size = p2;
	return 0;
}

/* A sort field names hitcount, a val or a key, by its plain name; vals first. */
static int sort_find(const struct span *name, const struct hist_spec *h, struct hist_sort *o)
{
	if (span_is(name, "hitcount")) {
		o->by = HIST_SORT_HITCOUNT;
		return 0;
	}
	for (size_t i = 0; i < h->nvals; i++)
		if (span_is(name, h->vals[i].name)) {
			o->by = HIST_SORT_VAL, o->i = i;
			return 0;
		}
	for (size_t i = 0; i < h->nkeys; i++)
		if (span_is(name, h->keys[i].name) || (h->keys[i].stack && span_is(name, "stacktrace"))) {
			o->by = HIST_SORT_KEY, o->i = i;
			return 0;
		}
	return -1;
}

static int parse_sort(struct span s, struct hist_spec *h, struct filter_error *err)
{
	struct span one, name;
	bool dir, more = true;

	while (more) {
		struct hist_sort *o = &h->sort[h->nsort % HIST_SORT_MAX];

		more = span_split(&s, ',', &one);
		if (h->nsort == HIST_SORT_MAX)
			return filter_fail(err, TC_ERR_SYNTAX, one.pos, one.n,
					   "too many sort fields (at most 2)");
		dir = span_split(&one, '.', &name);
		if (!name.n)
			return filter_fail(err, TC_ERR_SYNTAX, name.pos, 0, "empty sort field");
		if (sort_find(&name, h, o) < 0)
			return filter_fail(err, TC_ERR_UNKNOWN_FIELD, name.pos, name.n,
				"sort field '%.*s' must be hitcount, a key or a val", SP(&name));
		if (dir && !span_is(&one, "descending") && !span_is(&one, "ascending"))
			return filter_fail(err, TC_ERR_SYNTAX, one.pos, one.n,
				"sort modifier '%.*s': want descending or ascending", SP(&one));
		o->descending = dir && span_is(&one, "descending");
		h->nsort++;
	}
	return 0;
}

/* Attributes the kernel has and we refuse, with why. */
static int refuse_attr(const struct span *a, struct filter_error *err)
{
	static const char *const words[] = { "pause", "cont", "continue", "clear",
					     "nohitcount", "NOHC" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (span_is(a, words[i]))
			return filter_fail(err, TC_ERR_SYNTAX, a->pos, a->n,
				"'%.*s' controls a live trigger: not for stored events", SP(a));
	if (span_prefix(a, "name=") || span_prefix(a, "clock="))
		return filter_fail(err, TC_ERR_SYNTAX, a->pos, a->n,
				   "'%.*s' is not supported here", SP(a));
	if (memchr(a->p, '(', a->n))
		return filter_fail(err, TC_ERR_SYNTAX, a->pos, a->n,
				   "actions ('%.*s') are not supported here", SP(a));
	if (memchr(a->p, '=', a->n))
		return filter_fail(err, TC_ERR_SYNTAX, a->pos, a->n,
				   "'%.*s': want keys=, vals=, sort= or size= (variables are not "
				   "supported)", SP(a));
	return filter_fail(err, TC_ERR_SYNTAX, a->pos, a->n,
			   "'%.*s': want keys=, vals=, sort= or size=", SP(a));
}

/* One NAME=VALUE; sort waits until keys and vals are known (@sort). */
static int parse_attr(struct span a, struct hist_spec *h, struct span *sort, bool *have_keys,
		      struct filter_error *err)
{
	struct span name, v = a;
	bool seen;

	span_split(&v, '=', &name);
	if (span_is(&name, "keys") || span_is(&name, "key")) {
		if (*have_keys)
			return filter_fail(err, TC_ERR_SYNTAX, a.pos, a.n, "keys given twice");
		*have_keys = true;
		return parse_keys(v, h, err);
	}
	if (span_is(&name, "vals") || span_is(&name, "val") || span_is(&name, "values"))
		return parse_vals(v, h, err);
	if (span_is(&name, "sort")) {
		seen = sort->p != NULL;
		*sort = v;
		return seen ? filter_fail(err, TC_ERR_SYNTAX, a.pos, a.n, "sort given twice") : 0;
	}
	if (span_is(&name, "size"))
		return parse_size(v, h, err);
	return refuse_attr(&a, err);
}

/* The first " if " (or tab) outside the attributes: the kernel's filter. */
static const char *find_if(const char *s, size_t n)
{
	for (size_t i = 1; i + 3 <= n; i++)
		if ((s[i - 1] == ' ' || s[i - 1] == '\t') && s[i] == 'i' && s[i + 1] == 'f' &&
		    (i + 2 == n || s[i + 2] == ' ' || s[i + 2] == '\t'))
			return s + i;
	return NULL;
}

int hist_parse(const char *text, struct hist_spec *out, struct filter_error *err)
{
	struct hist_spec h = { .size = HIST_SIZE_DEFAULT };
	struct span s = { text, 0, 0 }, a, sort = { 0 };
	bool have_keys = false;
	const char *iff;
	int ret = 0;

	s.n = text ? strnlen(text, HIST_SPEC_MAX + 1) : 0;
	if (s.n > HIST_SPEC_MAX)
		return filter_fail(err, TC_ERR_TOO_LONG, HIST_SPEC_MAX, 0,
				   "the spec is longer than 4096 bytes");
	while (s.n && (s.p[s.n - 1] == ' ' || s.p[s.n - 1] == '\t' || s.p[s.n - 1] == '\n'))
		s.n--;
	while (s.n && (*s.p == ' ' || *s.p == '\t'))
		s.p++, s.n--, s.pos++;
	iff = find_if(s.p, s.n);
	if (iff)
		return filter_fail(err, TC_ERR_SYNTAX, (size_t)(iff - text),
				   s.n - (size_t)(iff - s.p),
				   "a filter goes in the query: EVENT where FILTER");
	if (span_prefix(&s, "hist:"))
		s.p += 5, s.n -= 5, s.pos += 5;
	while (ret == 0 && s.n) {
		span_split(&s, ':', &a);
		if (!a.n)
			ret = filter_fail(err, TC_ERR_SYNTAX, a.pos, 0, "empty attribute ('::')");
		else
			ret = parse_attr(a, &h, &sort, &have_keys, err);
	}
	if (ret == 0 && !have_keys)
		ret = filter_fail(err, TC_ERR_SYNTAX, s.pos, 0,
				  "keys= is missing (e.g. keys=common_pid)");
	if (ret == 0 && sort.p)
		ret = parse_sort(sort, &h, err);
	if (ret == 0 && !h.nsort)
		h.nsort = 1;	/* hitcount ascending */
	if (ret == 0)
		*out = h;
	return ret;
}

/* NAME[.MOD[=N]] as the kernel's hist_field_print() writes it. */
static int field_format(const struct hist_field *f, char *buf, size_t len)
{
	if (f->mod == HIST_MOD_BUCKETS)
		return snprintf(buf, len, "%s.buckets=%llu", f->name,
				(unsigned long long)f->buckets);
	if (f->mod != HIST_MOD_NONE)
		return snprintf(buf, len, "%s.%s", f->name, hist_mod_name(f->mod));
	return snprintf(buf, len, "%s", f->name);
}

/* Append with snprintf's arithmetic: *@at grows by what was wanted. */
static void put(char *buf, size_t len, size_t *at, const char *s)
{
	size_t n = strlen(s);

	if (*at < len)
		snprintf(buf + *at, len - *at, "%s", s);
	*at += n;
}

int hist_spec_format(const struct hist_spec *s, char *buf, size_t len)
{
	char f[HIST_NAME_MAX + 40];
	size_t at = 0, i;

	if (len)
		buf[0] = '\0';
	put(buf, len, &at, "hist:keys=");
	for (i = 0; i < s->nkeys; i++) {
		field_format(&s->keys[i], f, sizeof(f));
		put(buf, len, &at, i ? "," : "");
		put(buf, len, &at, f);
	}
	put(buf, len, &at, ":vals=hitcount");
	for (i = 0; i < s->nvals; i++) {
		field_format(&s->vals[i], f, sizeof(f));
		put(buf, len, &at, ",");
		put(buf, len, &at, f);
	}
	put(buf, len, &at, ":sort=");
	for (i = 0; i < s->nsort; i++) {
		const struct hist_sort *o = &s->sort[i];

		if (o->by == HIST_SORT_HITCOUNT)
			snprintf(f, sizeof(f), "hitcount");
		else
			field_format(o->by == HIST_SORT_VAL ? &s->vals[o->i] : &s->keys[o->i], f,
				     sizeof(f));
		put(buf, len, &at, i ? "," : "");
		put(buf, len, &at, f);
		put(buf, len, &at, o->descending ? ".descending" : "");
	}
	snprintf(f, sizeof(f), ":size=%u", s->size);
	put(buf, len, &at, f);
	return (int)at;
}
