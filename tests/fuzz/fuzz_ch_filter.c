/*
 * fuzz_ch_filter.c - libFuzzer target for the ClickHouse backend's filter
 * compiler (server/store/clickhouse_filter.*).
 *
 * Input: "STRING\nFILTER", as fuzz_filter (its corpus serves this target
 * too). FILTER is parsed and bound to a fixed schema and compiled with
 * ch_filter_to_sql(); the expression must be one well-formed piece of
 * ClickHouse SQL: every '...' literal and `...` name closed, each
 * literal's escapes readable by ch_unescape(), parentheses balanced
 * outside literals, and no ';', comment or control byte outside them, so
 * that no filter text can end the expression or start another statement.
 * When FILTER is one glob predicate, its regex (ch_glob_regex()) run on
 * hex(STRING) by POSIX regexec() must say what filter_eval() says on a
 * row whose prev_comm is STRING (byte semantics, any bytes).
 *
 * Sources: tests/fuzz/fuzz_ch_filter.c common/filter.c common/suggest.c
 *          common/tc_error.c server/store/clickhouse_escape.c
 *          server/store/clickhouse_filter.c.
 */
#include "config.h"

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "server/store/clickhouse_escape.h"
#include "server/store/clickhouse_filter.h"
#include "tests/ch_column.h"
#include "tests/fuzz/filter_fields.h"

static int column(void *ctx, int idx, struct ch_sql *s)
{
	(void)ctx;
	return ch_test_column(fields, ARRAY_SIZE(fields), idx, s);
}

struct str_row {
	const char *s;
	size_t len;
};

static int get(void *ctx, int idx, struct filter_value *v)
{
	const struct str_row *r = ctx;

	if (idx == FILTER_FIELD_CPU || (idx >= 0 && fields[idx].kind != FILTER_STRING)) {
		*v = (struct filter_value){ .kind = idx < 0 ? FILTER_UNSIGNED : fields[idx].kind };
		return 0;
	}
	*v = (struct filter_value){ .kind = FILTER_STRING };
	v->str.s = r->s;
	v->str.len = r->len;
	return 0;
}

/* a quoted piece from p[0] (the quote) on: its end past the closing quote */
static const char *quoted_end(const char *p, const char *end)
{
	char q = *p, *buf = malloc((size_t)(end - p) + 1);
	const char *start = ++p;
	size_t n;

	if (!buf)
		abort();
	while (p < end && *p != q)
		p += *p == '\\' ? 2 : 1;
	if (p >= end || ch_unescape(start, (size_t)(p - start), buf, &n))
		abort();	/* unclosed, or an escape ClickHouse refuses */
	free(buf);
	return p + 1;
}

/* the whole expression: literals closed, parentheses balanced, no ';' or comment */
static void check_sql(const char *sql, size_t len)
{
	const char *p = sql, *end = sql + len;
	long depth = 0;

	while (p < end) {
		unsigned char c = (unsigned char)*p;

		if (c == '\'' || c == '`') {
			p = quoted_end(p, end);
			continue;
		}
		if (c < 0x20 || c >= 0x7f || c == ';' || c == '"' || c == '\\' || c == '#' ||
		    (c == '-' && p[1] == '-') || (c == '/' && p[1] == '*'))
			abort();
		depth += c == '(' ? 1 : c == ')' ? -1 : 0;
		if (depth < 0)
			abort();
		p++;
	}
	if (depth)
		abort();
}

/* a lone glob predicate: its regex on hex(@r) against filter_eval() */
static void check_glob(const struct filter *f, const struct str_row *r)
{
	static const char hexd[] = "0123456789ABCDEF";
	struct filter_node node;
	struct ch_sql re;
	char *hex, *ere;
	size_t k, o = 0;
	uint32_t root;
	regex_t rx;
	int ret, got = 0;

	if (filter_root(f, &root))
		abort();
	filter_node_get(f, root, &node);
	if (node.type != FILTER_NODE_PRED || node.pred.op != FILTER_OP_GLOB)
		return;
	ch_sql_init(&re, 0);
	ret = ch_glob_regex(f, root, &re);
	if (ret < 0)
		abort();
	hex = malloc(2 * r->len + 1);
	ere = malloc(re.len + 1);
	if (!hex || !ere)
		abort();
	for (k = 0; k < r->len; k++) {
		hex[2 * k] = hexd[(unsigned char)r->s[k] >> 4];
		hex[2 * k + 1] = hexd[(unsigned char)r->s[k] & 15];
	}
	hex[2 * r->len] = '\0';
	for (k = 0; k < re.len; k++) {	/* (?: as (, for POSIX ERE */
		ere[o++] = re.buf[k];
		if (!strncmp(re.buf + k, "(?:", 3))
			k += 2;
	}
	ere[o] = '\0';
	if (ret && regcomp(&rx, ere, REG_EXTENDED | REG_NOSUB) == 0) {
		got = !regexec(&rx, hex, 0, NULL, 0);
		regfree(&rx);
	} else if (ret) {
		abort();	/* our regex must compile */
	}
	if ((got != node.pred.glob_not) != filter_eval(f, get, (void *)r)) {
		fprintf(stderr, "regex %s on %s disagrees with filter_eval\n", re.buf, hex);
		abort();
	}
	free(hex);
	free(ere);
	ch_sql_free(&re);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *text, *nl;
	struct filter_error err;
	struct filter *f = NULL;
	struct str_row row = { "bash", 4 };
	struct ch_sql s;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	text = buf;
	nl = memchr(buf, '\n', size);
	if (nl) {
		*nl = '\0';
		row.s = buf;
		row.len = strlen(buf);	/* strings are cut at the first NUL */
		text = nl + 1;
	}
	if (filter_parse(text, &f, &err) || filter_bind(f, &schema, &err))
		goto out;
	ch_sql_init(&s, 0);
	if (ch_filter_to_sql(f, column, NULL, &s) == 0)
		check_sql(s.buf, s.len);
	ch_sql_free(&s);
	check_glob(f, &row);
out:
	filter_free(f);
	free(buf);
	return 0;
}
