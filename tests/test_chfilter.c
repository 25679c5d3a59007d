/*
 * test_chfilter.c - the ClickHouse backend's filter compiler
 * (server/store/clickhouse_filter.*).
 *
 * Without a server: the exact text it writes for each form, its errors
 * (and @out untouched by a failure), and its glob regexes held to
 * filter_eval() byte for byte on random patterns and strings, non-ASCII
 * and control bytes included (POSIX regexec() on hex(), the regex being
 * plain enough that ERE and re2 read it alike).
 *
 * With a server (CH_PORT, CH_USER, CH_PASSWORD: the clickhouse-server that
 * tests/test_chfilter.sh starts; the case is left out without them): the
 * filter-semantics table. The same rows go into an in-memory SQLite table
 * (tests/filter_sqlite.h) and a ClickHouse MergeTree table with typed
 * columns, and every filter of the filter tests (every operator and glob
 * case of tests/test_filter.c, the SQLite cross-check's list) and a few on
 * non-ASCII bytes runs through both compilers: ClickHouse must select
 * exactly the rows filter_eval() matches, on every row; SQLite must select
 * the same rows as ClickHouse on every row whose strings are ASCII (on the
 * others SQLite's GLOB reads UTF-8 characters, a documented difference of
 * sqlite_filter.h). Each glob is run on the server in its regex form too,
 * so the plain patterns' regexes are checked by re2 as well.
 * Statements go to the server through clickhouse-client (stdin, one
 * --multiquery run for all of them).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <regex.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/filter.h"
#include "common/tc_error.h"
#include "server/store/clickhouse_escape.h"
#include "server/store/clickhouse_filter.h"
#include "tests/ch_column.h"
#include "tests/filter_event.h"
#include "tests/filter_sqlite.h"
#include "tests/testutil.h"

extern char **environ;

static int column(void *ctx, int idx, struct ch_sql *s)
{
	(void)ctx;
	return ch_test_column(fields, ARRAY_SIZE(fields), idx, s);
}

/* ---- text ---------------------------------------------------------------- */

START_TEST(test_ch_text)
{
	static const struct {
		const char *text, *sql;
	} cases[] = {
		{ "prev_pid == 0", "(`prev_pid` = toInt64(0))" },
		{ "prev_pid != -3", "(`prev_pid` != toInt64(-3))" },
		{ "prev_pid < -5 || prio >= 3 && len <= 7",
		  "((`prev_pid` < toInt64(-5)) OR ((`prio` >= toInt64(3)) AND "
		  "(`len` <= toUInt64(7))))" },
		{ "!prev_pid == 1", "NOT ((`prev_pid` = toInt64(1)))" },
		{ "!(prev_pid > 1 && state & 4)",
		  "NOT (((`prev_pid` > toInt64(1)) AND (bitAnd(toUInt64(`state`), 4) != 0)))" },
		{ "delta == -9223372036854775808", "(`delta` = toInt64(-9223372036854775808))" },
		{ "flags > 18446744073709551614", "(`flags` > toUInt64(18446744073709551614))" },
		{ "flags & 0x8000000000000000",
		  "(bitAnd(toUInt64(`flags`), 9223372036854775808) != 0)" },
		{ "prio & 0x80", "(bitAnd(toUInt64(`prio`), 128) != 0)" },
		{ "delta & -9223372036854775808",
		  "(bitAnd(toUInt64(`delta`), 9223372036854775808) != 0)" },
		{ "prev_comm == bash", "(`prev_comm` = 'bash')" },
		{ "prev_comm != \"it's\"", "(`prev_comm` != 'it\\'s')" },
		{ "prev_comm == \"'; DROP TABLE ev; --\"",
		  "(`prev_comm` = '\\'; DROP TABLE ev; --')" },
		{ "prev_comm == 'a\\b\t'", "(`prev_comm` = 'a\\\\b\\t')" },
		{ "COMM == bash && CPU == 1", "((`comm` = 'bash') AND (`cpu` = toUInt64(1)))" },
		{ "prev_comm ~ \"bash\"", "(`prev_comm` = 'bash')" },
		{ "prev_comm ~ \"\"", "(`prev_comm` = '')" },
		{ "prev_comm ~ \"a\\*[b\"", "(`prev_comm` = 'a*[b')" },
		{ "prev_comm ~ \"bash*\"", "(startsWith(`prev_comm`, 'bash'))" },
		{ "prev_comm ~ \"*sh\"", "(endsWith(`prev_comm`, 'sh'))" },
		{ "prev_comm ~ \"ba*sh\"", "(startsWith(`prev_comm`, 'ba') AND "
		  "endsWith(`prev_comm`, 'sh') AND length(`prev_comm`) >= 4)" },
		{ "prev_comm ~ \"*as*\"", "(position(`prev_comm`, 'as') > 0)" },
		{ "prev_comm ~ \"*\"", "1" },
		{ "prev_comm ~ \"!*sh\"", "NOT (endsWith(`prev_comm`, 'sh'))" },
		{ "prev_comm ~ \"*a*b\"", "match(`prev_comm`, '^\\\\C*\\\\x61\\\\C*\\\\x62$')" },
		{ "prev_comm ~ \"b?sh\"", "match(`prev_comm`, '^\\\\x62\\\\C\\\\x73\\\\x68$')" },
		{ "prev_comm ~ \"[a-c]?\"",
		  "match(`prev_comm`, '^[\\\\x61\\\\x62\\\\x63]\\\\C$')" },
		{ "prev_comm ~ \"*\xc3?\"", "match(hex(`prev_comm`), '^(?:..)*C3..$')" },
		{ "prev_comm ~ \"[!a-c]*\"",
		  "match(hex(`prev_comm`), '^(?:[0-57-9A-F].|6[04-9A-F])(?:..)*$')" },
		{ "prev_comm ~ \"[]09a]\"",
		  "match(`prev_comm`, '^[\\\\x30\\\\x39\\\\x5D\\\\x61]$')" },
		{ "prev_comm ~ \"[]09\xa9]\"", "match(hex(`prev_comm`), '^(?:3[09]|5D|A9)$')" },
		{ "prev_comm ~ \"[!z-a]\"", "match(hex(`prev_comm`), '^..$')" },
		{ "prev_comm ~ \"x[z-a]\" || prio == 1", "(0 OR (`prio` = toInt64(1)))" },
		{ "prev_comm ~ \"![z-a]\"", "NOT 0" },
		{ "prev_comm ~ \"\xc3\xa9?\"", "match(hex(`prev_comm`), '^C3A9..$')" },
		{ "CPU & CPUS{0,2-3}", "((`cpu` BETWEEN toUInt64(0) AND toUInt64(0)) OR "
		  "(`cpu` BETWEEN toUInt64(2) AND toUInt64(3)))" },
		{ "CPU == CPUS{2}", "(`cpu` = toUInt64(2))" },
		{ "CPU != CPUS{2}", "(`cpu` != toUInt64(2))" },
		{ "CPU == CPUS{1-2}", "0" },
		{ "CPU != CPUS{0-1}", "1" },
		{ "prev_pid & CPUS{3}", "((`prev_pid` BETWEEN toInt64(3) AND toInt64(3)))" },
	};
	struct ch_sql s;

	ch_sql_init(&s, 0);
	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		struct filter *f = parse_bind(cases[k].text);

		ch_sql_reset(&s);
		TU_OK(ch_filter_to_sql(f, column, NULL, &s));
		ck_assert_msg(!strcmp(ch_sql_text(&s), cases[k].sql), "'%s': got\n  %s\nwant\n  %s",
			      cases[k].text, ch_sql_text(&s), cases[k].sql);
		filter_free(f);
	}
	ch_sql_free(&s);
}
END_TEST

static int no_prio(void *ctx, int idx, struct ch_sql *s)
{
	return idx == F_PRIO ? TC_ERR_UNKNOWN_FIELD : column(ctx, idx, s);
}

START_TEST(test_ch_errors)
{
	struct filter_error err;
	struct filter *f = NULL;
	struct ch_sql s;

	ch_sql_init(&s, 64);
	TU_OK(ch_sql_raw(&s, "WHERE "));
	TU_OK(filter_parse("prev_pid == 1", &f, &err));
	TU_ERR(ch_filter_to_sql(f, column, NULL, &s), -EINVAL);
	filter_free(f);
	f = parse_bind("prev_pid == 1 || prio == 1");
	TU_ERR(ch_filter_to_sql(f, no_prio, NULL, &s), TC_ERR_UNKNOWN_FIELD);
	ck_assert_str_eq(ch_sql_text(&s), "WHERE ");
	TU_OK(ch_sql_err(&s));
	filter_free(f);
	/* past the cap: the text stays as it was, and no sticky error */
	f = parse_bind("prev_comm == \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"");
	TU_ERR(ch_filter_to_sql(f, column, NULL, &s), TC_ERR_TOO_LONG);
	ck_assert_str_eq(ch_sql_text(&s), "WHERE ");
	TU_OK(ch_sql_err(&s));
	filter_free(f);
	f = parse_bind("prev_pid == 1");
	TU_OK(ch_filter_to_sql(f, column, NULL, &s));
	ck_assert_str_eq(ch_sql_text(&s), "WHERE (`prev_pid` = toInt64(1))");
	filter_free(f);
	ch_sql_free(&s);
}
END_TEST

/* ---- globs against filter_eval(), no server ------------------------------------ */

static void hex_of(const char *s, size_t n, char *out)
{
	static const char d[] = "0123456789ABCDEF";

	for (size_t k = 0; k < n; k++) {
		out[2 * k] = d[(unsigned char)s[k] >> 4];
		out[2 * k + 1] = d[(unsigned char)s[k] & 15];
	}
	out[2 * n] = '\0';
}

/* the POSIX ERE of one of our re2 patterns: (?: groups as plain ( */
static regex_t *ere_of(const char *re2, regex_t *rx)
{
	char ere[8192];
	size_t o = 0;

	for (const char *p = re2; *p && o + 1 < sizeof(ere); p++) {
		ere[o++] = *p;
		if (p[0] == '(' && p[1] == '?' && p[2] == ':')
			p += 2;
	}
	ere[o] = '\0';
	ck_assert_int_eq(regcomp(rx, ere, REG_EXTENDED | REG_NOSUB), 0);
	return rx;
}

/* whether glob filter @text (prev_comm ~ ...) matches @str the same both ways */
static void glob_agrees(const char *text, const char *str)
{
	struct filter *f = parse_bind(text);
	struct row r = base;
	struct filter_node node;
	struct ch_sql s;
	char hex[64];
	regex_t rx;
	uint32_t root;
	int want, got, ret;

	r.prev_comm = str;
	want = filter_eval(f, get_row, &r);
	TU_OK(filter_root(f, &root));
	filter_node_get(f, root, &node);
	ch_sql_init(&s, 0);
	ret = ch_glob_regex(f, root, &s);
	ck_assert_int_ge(ret, 0);
	hex_of(str, strlen(str), hex);
	got = ret ? !regexec(ere_of(ch_sql_text(&s), &rx), hex, 0, NULL, 0) : 0;
	if (ret)
		regfree(&rx);
	got = got != node.pred.glob_not;
	ck_assert_msg(got == want, "%s on \"%s\" (%s): regex %s says %d, filter_eval %d", text,
		      str, hex, ch_sql_text(&s), got, want);
	ch_sql_free(&s);
	filter_free(f);
}

/* a random glob filter on prev_comm into @text (64 bytes): up to 7 bytes of @alphabet */
static void random_glob(uint32_t *st, const char *alphabet, char *text)
{
	size_t n, len = lcg(st) % 8, na = strlen(alphabet);
	char pat[8];

	for (n = 0; n < len; n++)
		pat[n] = alphabet[lcg(st) % na];
	pat[len] = '\0';
	snprintf(text, 64, "prev_comm ~ \"%s\"", pat);
}

START_TEST(test_ch_glob_regex)
{
	static const char str_bytes[] = "ab-][*?\\^\xc3\xa9\xff\x01";
	char text[64], str[16];
	uint32_t st = 7;
	size_t k, j, n, len;

	for (k = 0; k < ARRAY_SIZE(glob_cases); k++) {
		snprintf(text, sizeof(text), "prev_comm ~ \"%s\"", glob_cases[k].pat);
		glob_agrees(text, glob_cases[k].s);
	}
	for (k = 0; k < 3000; k++) {
		random_glob(&st, "ab*?[]!-\\^\xc3\xa9\xff", text);
		for (j = 0; j < 12; j++) {
			len = lcg(&st) % 7;
			for (n = 0; n < len; n++)
				str[n] = str_bytes[lcg(&st) % (sizeof(str_bytes) - 1)];
			str[len] = '\0';
			glob_agrees(text, str);
		}
	}
}
END_TEST

/* ---- the filter-semantics table: SQLite and ClickHouse ------------------------ */

#define MAXROWS 256

static struct row trows[MAXROWS];
static size_t ntrows;

/* strings no ASCII rule covers: UTF-8, a lone lead byte, invalid bytes, controls */
static const char *const odd_strs[] = {
	"caf\xc3\xa9", "\xc3\xa9t\xc3\xa9", "\xc3", "\xff\xfe", "a\xc3\xa9" "b",
	"\xe2\x82\xac", "tab\there", "nl\nx", "\x01\x7f", "q'uote\\", "\xc3\xa9", "aba",
};

static bool is_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x80)
			return false;
	return true;
}

static void add_row(const struct row *r)
{
	ck_assert_uint_lt(ntrows, MAXROWS);
	trows[ntrows++] = *r;
}

static void make_table_rows(void)
{
	struct row r = base;

	ntrows = 64;
	make_rows(trows, ntrows);
	add_row(&base);
	r.prev_pid = INT32_MIN, r.prio = -128, r.flags = UINT64_MAX, r.delta = INT64_MIN;
	r.len = 65535, r.state = 255, r.cpu = 3;
	add_row(&r);
	r.flags = 1ULL << 63, r.delta = INT64_MAX, r.prio = 127, r.prev_pid = INT32_MAX;
	add_row(&r);
	for (size_t k = 0; k < ARRAY_SIZE(glob_cases); k++) {
		r = base;
		r.prev_comm = glob_cases[k].s;
		r.cpu = k % 4;
		add_row(&r);
	}
	for (size_t k = 0; k < ARRAY_SIZE(odd_strs); k++) {
		r = base;
		r.prev_comm = odd_strs[k];
		r.comm = odd_strs[(k + 3) % ARRAY_SIZE(odd_strs)];
		add_row(&r);
	}
}

#define CH_RANDOM_GLOBS	300

/*
 * the table's filters: the filter tests', a few on bytes past ASCII, and
 * CH_RANDOM_GLOBS random globs (half of them ASCII only, which take the
 * regex on the text's own bytes)
 */
static char **table_filters(size_t *n)
{
	static const char *const more[] = {
		"prev_comm ~ \"caf?\"", "prev_comm ~ \"caf??\"", "prev_comm ~ \"caf[!a-z]*\"",
		"prev_comm ~ \"?\"", "prev_comm ~ \"??\"", "prev_comm ~ \"*[\xa9]*\"",
		"prev_comm ~ \"[\xc3]*\"", "prev_comm ~ \"*\xc3\xa9*\"", "prev_comm ~ \"\xc3\xa9*\"",
		"prev_comm ~ \"*[!a-z]\"", "prev_comm ~ \"[\x80-\xff]*\"",
		"prev_comm ~ \"*\\\\*\"", "prev_comm ~ \"*'*\"", "comm ~ \"*\xc3\xa9?\"",
		"prev_comm == \"caf\xc3\xa9\"", "prev_comm != \"q'uote\\\"",
		"prev_comm ~ \"tab*\"", "prev_comm ~ \"*e\"", "prev_comm ~ \"a*b\"",
		"prev_comm ~ \"[a-c]*[!a-c]\"", "prev_comm ~ \"*a*b*\"", "prev_comm ~ \"??*\"",
		"prev_comm ~ \"\xc3*\xa9\"", "prev_comm ~ \"ab*ba\"", "prev_comm ~ \"a*a\"",
		"prev_pid == -2147483648", "prev_pid < -2147483647", "prio & 0x7f",
		"flags == 0xffffffffffffffff", "delta & 0x7fffffffffffffff", "len == 65535",
		"state > 254", "len == -0", "flags >= 9223372036854775808",
		"flags < 9223372036854775809", "delta < 9223372036854775807",
		"CPU & CPUS{0-3}", "CPU & CPUS{2,4-7}", "CPU == CPUS{1-1}", "CPU != CPUS{1}",
		"prev_pid & CPUS{0}",
		/* COMM (the task's name; here a column: its join is test_ch_comm.sh's) */
		"COMM != \"aba\"", "COMM ~ \"*a\"", "COMM ~ \"[a-c]?*\"", "COMM ~ \"!*\xc3\xa9*\"",
		"COMM == aba || COMM ~ \"tab*\"", "!(COMM == \"nl\nx\") && prev_comm ~ \"?*\"",
	};
	size_t total = ARRAY_SIZE(crosscheck_filters) + ARRAY_SIZE(numeric_cases) +
		ARRAY_SIZE(glob_cases) + ARRAY_SIZE(more) + CH_RANDOM_GLOBS, k, i = 0;
	char **out = calloc(total, sizeof(*out));
	uint32_t st = 11;

	ck_assert_ptr_nonnull(out);
	for (k = 0; k < ARRAY_SIZE(crosscheck_filters); k++)
		out[i++] = strdup(crosscheck_filters[k]);
	for (k = 0; k < ARRAY_SIZE(numeric_cases); k++)
		out[i++] = strdup(numeric_cases[k].text);
	for (k = 0; k < ARRAY_SIZE(glob_cases); k++) {
		out[i] = malloc(64);
		ck_assert_ptr_nonnull(out[i]);
		snprintf(out[i++], 64, "prev_comm ~ \"%s\"", glob_cases[k].pat);
	}
	for (k = 0; k < ARRAY_SIZE(more); k++)
		out[i++] = strdup(more[k]);
	for (k = 0; k < CH_RANDOM_GLOBS; k++) {
		out[i] = malloc(64);
		ck_assert_ptr_nonnull(out[i]);
		random_glob(&st, k % 2 ? "ab*?[]!-^sh" : "ab*?[]!-\\^\xc3\xa9\xff", out[i++]);
	}
	*n = i;
	return out;
}

/* run @sql (several statements) with clickhouse-client; its stdout, malloc'd */
static char *ch_run(const char *dir, const struct ch_sql *sql)
{
	const char *port = getenv("CH_PORT"), *user = getenv("CH_USER"),
		*pw = getenv("CH_PASSWORD");
	char in[300], out[300], errf[300], *text = NULL;
	char *argv[] = { "clickhouse-client", "--host", "127.0.0.1", "--port", (char *)port,
			 "--user", (char *)user, "--password", (char *)pw, "--multiquery", NULL };
	posix_spawn_file_actions_t fa;
	struct stat stb;
	FILE *fp;
	pid_t pid;
	int status;

	snprintf(in, sizeof(in), "%s/in.sql", dir);
	snprintf(out, sizeof(out), "%s/out.tsv", dir);
	snprintf(errf, sizeof(errf), "%s/err.txt", dir);
	fp = fopen(in, "w");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(sql->buf, 1, sql->len, fp), sql->len);
	ck_assert_int_eq(fclose(fp), 0);
	TU_SYS(posix_spawn_file_actions_init(&fa));
	posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_eq(posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	TU_SYS(stat(WIFEXITED(status) && !WEXITSTATUS(status) ? out : errf, &stb));
	text = calloc(1, (size_t)stb.st_size + 1);
	ck_assert_ptr_nonnull(text);
	fp = fopen(WIFEXITED(status) && !WEXITSTATUS(status) ? out : errf, "r");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fread(text, 1, (size_t)stb.st_size, fp), (size_t)stb.st_size);
	fclose(fp);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status), "clickhouse-client: %.2000s",
		      text);
	return text;
}

static void ch_make_table(struct ch_sql *s)
{
	ch_sql_raw(s, "CREATE DATABASE IF NOT EXISTS tc_chf;\n"
		   "DROP TABLE IF EXISTS tc_chf.ev;\n"
		   "CREATE TABLE tc_chf.ev (id UInt32, common_pid Int32, prev_pid Int32, "
		   "prio Int8, flags UInt64, len UInt16, prev_comm String, delta Int64, "
		   "state UInt8, cpu UInt32, comm String) ENGINE = MergeTree() ORDER BY id;\n"
		   "INSERT INTO tc_chf.ev VALUES ");
	for (size_t k = 0; k < ntrows; k++) {
		const struct row *r = &trows[k];

		ch_sql_addf(s, "%s(%zu, %" PRId64 ", %" PRId64 ", %" PRId64 ", ", k ? ", " : "", k,
			    r->common_pid, r->prev_pid, r->prio);
		ch_sql_u64(s, r->flags);
		ch_sql_raw(s, ", ");
		ch_sql_u64(s, r->len);
		ch_sql_raw(s, ", ");
		ch_sql_cstr(s, r->prev_comm);
		ch_sql_raw(s, ", ");
		ch_sql_i64(s, r->delta);
		ch_sql_addf(s, ", %" PRIu64 ", %" PRIu64 ", ", r->state, r->cpu);
		ch_sql_cstr(s, r->comm);
		ch_sql_raw(s, ")");
	}
	ch_sql_raw(s, ";\n");
}

/*
 * One query per filter @k (and, for a lone glob, 100000 + @k for its regex
 * form): "k<TAB>[ids]".
 */
static void ch_add_query(struct ch_sql *s, size_t k, const struct filter *f)
{
	struct filter_node node;
	struct ch_sql re;
	uint32_t root;

	ch_sql_addf(s, "SELECT %zu, groupArray(id) FROM (SELECT id FROM tc_chf.ev WHERE ", k);
	TU_OK(ch_filter_to_sql(f, column, NULL, s));
	ch_sql_raw(s, ");\n");
	TU_OK(filter_root(f, &root));
	filter_node_get(f, root, &node);
	ch_sql_init(&re, 0);
	if (node.type == FILTER_NODE_PRED && node.pred.op == FILTER_OP_GLOB &&
	    ch_glob_regex(f, root, &re) > 0) {
		ch_sql_addf(s, "SELECT %zu, groupArray(id) FROM (SELECT id FROM tc_chf.ev "
			    "WHERE match(hex(", k + 100000);
		column(NULL, node.pred.field, s);
		ch_sql_raw(s, "), ");
		ch_sql_str(s, re.buf, re.len);
		ch_sql_addf(s, ") != %d);\n", node.pred.glob_not);
	}
	ch_sql_free(&re);
}

/* the rows of @reply's line for query @k as flags in @sel; false if no such line */
static bool ch_rows_of(const char *reply, size_t k, bool *sel)
{
	char head[32];
	const char *p;
	size_t hl = (size_t)snprintf(head, sizeof(head), "%zu\t[", k);

	memset(sel, 0, ntrows * sizeof(*sel));
	for (p = reply; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, head, hl))
			continue;
		p += hl;
		while (*p >= '0' && *p <= '9') {
			char *next;
			unsigned long id = strtoul(p, &next, 10);

			ck_assert_uint_lt(id, ntrows);
			sel[id] = true;
			p = next + (*next == ',');
		}
		ck_assert_int_eq(*p, ']');
		return true;
	}
	return false;
}

START_TEST(test_ch_table)
{
	bool by_ch[MAXROWS], by_re[MAXROWS], by_sq[MAXROWS];
	size_t nf, k, j, hits, some = 0;
	struct ch_sql s;
	char dir[128], *reply, **filters;
	sqlite3 *db;

	tu_tmpdir_make(dir, sizeof(dir), "chfilter");
	make_table_rows();
	filters = table_filters(&nf);
	db = make_db(trows, ntrows);
	ch_sql_init(&s, 16u << 20);
	ch_make_table(&s);
	for (k = 0; k < nf; k++) {
		struct filter *f = parse_bind(filters[k]);

		ch_add_query(&s, k, f);
		filter_free(f);
	}
	TU_OK(ch_sql_err(&s));
	reply = ch_run(dir, &s);
	for (k = 0; k < nf; k++) {
		struct filter *f = parse_bind(filters[k]);
		bool regex = ch_rows_of(reply, k + 100000, by_re);

		ck_assert_msg(ch_rows_of(reply, k, by_ch), "no answer for '%s'", filters[k]);
		select_sql(db, f, filters[k], by_sq, ntrows);
		for (j = 0, hits = 0; j < ntrows; j++) {
			const struct row *r = &trows[j];
			int e = filter_eval(f, get_row, (void *)r);
			bool ascii = is_ascii(r->prev_comm) && is_ascii(r->comm);

			ck_assert_int_ge(e, 0);
			ck_assert_msg(e == by_ch[j], "'%s' row %zu (prev_comm \"%s\" comm \"%s\" "
				      "flags %" PRIu64 "): filter_eval %d, ClickHouse %d",
				      filters[k], j, r->prev_comm, r->comm, r->flags, e, by_ch[j]);
			ck_assert_msg(!regex || e == by_re[j], "'%s' row %zu (\"%s\"): filter_eval "
				      "%d, ClickHouse's regex form %d", filters[k], j, r->prev_comm,
				      e, by_re[j]);
			ck_assert_msg(!ascii || by_sq[j] == by_ch[j], "'%s' row %zu (\"%s\"): "
				      "SQLite %d, ClickHouse %d", filters[k], j, r->prev_comm,
				      by_sq[j], by_ch[j]);
			hits += (size_t)e;
		}
		some += hits > 0 && hits < ntrows && k < nf - CH_RANDOM_GLOBS;
		filter_free(f);
	}
	/* the rows discriminate: most chosen filters select some rows, not all */
	ck_assert_uint_ge(some, (nf - CH_RANDOM_GLOBS) * 3 / 4);
	for (k = 0; k < nf; k++)
		free(filters[k]);
	free(filters);
	free(reply);
	sqlite3_close(db);
	ch_sql_free(&s);
	TU_OK(tu_tmpdir_remove(dir));
}
END_TEST

static Suite *chfilter_suite(void)
{
	Suite *s = suite_create("chfilter");
	TCase *tc = tcase_create("text");

	tu_add_tests(tc, TU_TESTS(test_ch_text, test_ch_errors, test_ch_glob_regex));
	suite_add_tcase(s, tc);
	if (getenv("CH_PORT") && getenv("CH_USER") && getenv("CH_PASSWORD")) {
		tc = tcase_create("server");
		tcase_set_timeout(tc, 300);
		tcase_add_test(tc, test_ch_table);
		suite_add_tcase(s, tc);
	}
	return s;
}

TU_MAIN(chfilter_suite())
