/*
 * test_format.c - common/format_check and the way decoder_format() uses it:
 * an agent's event format that nests or chains past the caps is refused
 * with TC_ERR_FORMAT_LIMIT before libtraceevent's recursive parser sees
 * it, and every real format (this kernel's, tests/data's) still passes.
 *
 * The hostile formats go through decoder_format(), the call the ingest
 * worker makes, in a thread with the default stack as the worker has:
 * before the check existed each one overflowed that stack (or crashed
 * libtraceevent otherwise), which check's fork mode reports as a failure.
 * So do the malformed formats fuzz_format_page found libtraceevent 1.7
 * crashing, leaking or spinning on, within every cap.
 */
#include "config.h"

#include <check.h>
#include <glob.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include "common/tc_error.h"
#include "server/ingest/decode.h"
#include "common/format_check.h"
#include "tests/data/capture_load.h"
#include "tests/testutil.h"

#define DEEP 100000	/* nesting that overflowed an 8 MiB stack */

static const char fmt_head[] =
	"name: tc_deep\n"
	"ID: 999\n"
	"format:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:int x;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\n"
	"print fmt: \"%d\", ";

/* One nesting form: @pre @n times, @mid, @post @n times. */
struct shape {
	const char *name;
	const char *pre, *mid, *post;
	unsigned n;
};

/* fmt_head, then @s's print argument; the caller frees it. */
static char *shape_text(const struct shape *s, size_t *len)
{
	size_t lp = strlen(s->pre), lm = strlen(s->mid), lq = strlen(s->post);
	size_t size = sizeof(fmt_head) + (size_t)s->n * (lp + lq) + lm + 2;
	char *text = malloc(size), *p;

	ck_assert_ptr_nonnull(text);
	p = stpcpy(text, fmt_head);
	for (unsigned i = 0; i < s->n; i++)
		p = stpcpy(p, s->pre);
	p = stpcpy(p, s->mid);
	for (unsigned i = 0; i < s->n; i++)
		p = stpcpy(p, s->post);
	p = stpcpy(p, "\n");
	*len = (size_t)(p - text);
	return text;
}

/* ---- through decoder_format(), in a thread ---- */

struct job {
	const char *text;
	size_t len;
	int ret;
	bool done;
	char why[128];
};

/* What the ingest worker does with a FORMAT: decoder_format() on its decoder. */
static void *job_run(void *arg)
{
	struct job *j = arg;
	struct proto_hello h = { .page_size = 4096, .long_size = 8 };
	const struct decode_type *t;
	struct decoder *d;

	j->ret = decoder_new(&h, &d);
	if (j->ret < 0)
		return NULL;
	j->ret = decoder_format(d, "tc", "tc_deep", j->text, j->len, &t);
	snprintf(j->why, sizeof(j->why), "%s", decoder_error(d));
	decoder_free(d);
	return NULL;
}

/* @fn(@j) in a thread with @attr's stack (the default one for NULL). */
static void job_thread_run(struct job *j, const pthread_attr_t *attr, void *(*fn)(void *))
{
	pthread_t th;

	TU_EQ(pthread_create(&th, attr, fn, j), 0);
	TU_EQ(pthread_join(th, NULL), 0);
}

/* decoder_format(@j->text) in a thread with the default stack. */
static void job_thread(struct job *j)
{
	job_thread_run(j, NULL, job_run);
}

/* decoder_format(@s) in a default-stack thread; its result, and why in @why. */
static int shape_run(const struct shape *s, char *why, size_t whylen)
{
	struct job j = { 0 };
	char *text = shape_text(s, &j.len);

	j.text = text;
	job_thread(&j);
	snprintf(why, whylen, "%s", j.why);
	free(text);
	return j.ret;
}

/* @s is refused with TC_ERR_FORMAT_LIMIT, for the reason @reason. */
static void expect_refused(const struct shape *s, const char *reason)
{
	char why[128];
	int ret = shape_run(s, why, sizeof(why));

	ck_assert_msg(ret == TC_ERR_FORMAT_LIMIT, "%s x %u: decoder_format returned %d (%s)",
		      s->name, s->n, ret, tc_strerror(ret));
	ck_assert_msg(strstr(why, reason), "%s x %u: reason \"%s\" lacks \"%s\"", s->name,
		      s->n, why, reason);
}

/*
 * @s, DEEP times, is refused (past the length cap too); and as many times
 * as fit in FORMAT_MAX_LEN it is refused for @reason: the nesting caps
 * hold on their own, where 30,000 unary ! or typecasts would still
 * overflow the stack.
 */
static void expect_deep(const struct shape *s, const char *reason)
{
	size_t per = strlen(s->pre) + strlen(s->post);
	struct shape fit = *s;
	char why[128];
	int ret = shape_run(s, why, sizeof(why));

	ck_assert_msg(ret == TC_ERR_FORMAT_LIMIT, "%s x %u: decoder_format returned %d (%s)",
		      s->name, s->n, ret, tc_strerror(ret));
	fit.n = (unsigned)((FORMAT_MAX_LEN - sizeof(fmt_head) - strlen(s->mid) - 2) / per);
	ck_assert_uint_lt(fit.n, s->n);
	expect_refused(&fit, reason);
}

START_TEST(test_deep_parens)
{
	const struct shape s = { "parentheses", "(", "REC->x", ")", DEEP };

	expect_deep(&s, "nests ( [ { deeper than 128");
}
END_TEST

START_TEST(test_deep_not)
{
	const struct shape s = { "unary !", "!", "REC->x", "", DEEP };

	expect_deep(&s, "operators in one term than 96");
}
END_TEST

START_TEST(test_deep_plus)
{
	const struct shape s = { "+1 chain", "", "REC->x", "+1", DEEP };

	expect_deep(&s, "operators in one term than 96");
}
END_TEST

START_TEST(test_deep_cond)
{
	const struct shape s = { "?: chain", "REC->x?1:", "0", "", DEEP };

	expect_deep(&s, "operators in one term than 96");
}
END_TEST

START_TEST(test_deep_cast)
{
	const struct shape s = { "typecast chain", "(int)", "REC->x", "", DEEP };

	expect_deep(&s, "operators in one term than 96");
}
END_TEST

START_TEST(test_deep_index)
{
	const struct shape s = { "index chain", "", "REC->x", "[0]", DEEP };

	expect_deep(&s, "operators in one term than 96");
}
END_TEST

START_TEST(test_deep_brackets)
{
	const struct shape s = { "nested index", "REC->x[", "0", "]", DEEP };

	expect_deep(&s, "deeper than");
}
END_TEST

START_TEST(test_deep_symbolic)
{
	const struct shape s = { "__print_symbolic nesting", "__print_symbolic(", "REC->x",
				 ", { 0, \"a\" })", DEEP };

	expect_deep(&s, "nests ( [ { deeper than 128");
}
END_TEST

/*
 * Each level within the depth and operator caps, together past the nest
 * cap: 100 levels of 40 operators, pending on the way in (the parser's
 * stack) or stacked up on the way out (the height of the tree it builds).
 */
START_TEST(test_deep_mixed)
{
	const struct shape in = { "operators, then a group", "-~-~-~-~-~-~-~-~-~-~-~-~-~"
				  "-~-~-~-~-~-~-~(", "REC->x", ")", 100 };
	const struct shape out = { "a group, then operators", "(", "REC->x",
				   "+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1)", 100 };

	expect_refused(&in, "nests expressions deeper than 512");
	expect_refused(&out, "nests expressions deeper than 512");
}
END_TEST

START_TEST(test_too_long)
{
	const struct shape s = { "long", "", "REC->x", ", REC->x", 20000 };

	expect_refused(&s, "more than 65536");
}
END_TEST

START_TEST(test_many_words)
{
	const struct shape s = { "words", "", "a", " a", 1000 };

	expect_refused(&s, "adjacent words than 32");
}
END_TEST

/* Parentheses, operators and quotes inside literals count for nothing. */
START_TEST(test_literals)
{
	static const char *const ok[] = {
		"print fmt: \"((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
		"(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((\"",
		"print fmt: \"%c\", ')'",
		"print fmt: \"\\\"((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
		"((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((\"",
	};
	char text[512];
	char why[128];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		TU_OK(format_check(ok[i], strlen(ok[i]), NULL, why, sizeof(why)));
	/* a tab ends a literal for libtraceevent: what follows is code */
	snprintf(text, sizeof(text), "print fmt: \"a\t%0200d", 0);
	memset(text + 14, '(', 200);
	TU_ERR(format_check(text, strlen(text), NULL, why, sizeof(why)), TC_ERR_FORMAT_LIMIT);
	ck_assert_ptr_nonnull(strstr(why, "deeper than 128"));
}
END_TEST

/*
 * Print arguments within every cap that crash libtraceevent 1.7's parser
 * (a NULL dereference in process_entry() or process_op()), which traceq
 * parses to render rows (traceq/render.c): format_check() refuses each,
 * so the collector refuses the format too (it would not parse them, see
 * format_print_start(), but it never stores what traceq cannot read).
 * The first is what fuzz_tracedat_write found in sched_switch's
 * __print_flags(); the third leaves libtraceevent's global "is a flag
 * field" set, for a later REC-> of any event to crash on.
 */
START_TEST(test_print_args_crashers)
{
	static const char *const crashers[][2] = {
		{ "__print_flags(REC->nosuch, \"|\", { 1, \"a\" })", "does not declare" },
		{ "__print_symbolic(REC->nosuch, { 1, \"a\" })", "does not declare" },
		{ "__print_flags(1, \"|\", { 1, \"a\" }), REC->nosuch", "does not declare" },
		{ "REC -> nosuch", "does not declare" },
		{ "REC->x[0][0]", "after an index" },
		{ "REC->x[0] . y", "after an index" },
		{ "REC->x[0]]", "after an index" },
		{ "REC->x ? 1 : 2 . y", "after a ?:" },
		{ "REC->x ? 1 : (2) = y", "after a ?:" },
		{ "REC->x ? 1 : (int)2 ; y", "after a ?:" },
		{ "REC->x ? 1 : REC->x[0]", "after a ?:" },
	};

	for (size_t i = 0; i < sizeof(crashers) / sizeof(crashers[0]); i++) {
		const struct shape s = { crashers[i][0], "", crashers[i][0], "", 0 };
		struct job j = { 0 };
		char why[160] = "";
		char *text = shape_text(&s, &j.len);

		TU_ERR(format_check(text, j.len, NULL, why, sizeof(why)), TC_ERR_FORMAT_PARSE);
		ck_assert_msg(strstr(why, crashers[i][1]), "%s: \"%s\" lacks \"%s\"", s.name, why,
			      crashers[i][1]);
		j.text = text;
		job_thread(&j);
		ck_assert_msg(j.ret == TC_ERR_FORMAT_PARSE, "%s: decoder_format: %s", s.name,
			      tc_strerror(j.ret));
		free(text);
	}
}
END_TEST

/*
 * What the checks above must let through, whole to libtraceevent: fields
 * it declares however they are written (spaces around ->, an array, a
 * __data_loc, a type in __attribute__), indexes and ?: followed by what
 * libtraceevent knows. And the names are libtraceevent's: the word in
 * front of a __data_loc's [] or inside an __attribute__ is not one.
 */
START_TEST(test_print_args_fine)
{
	static const char head[] =
		"name: tc_deep\nID: 999\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
		"\n"
		"\tfield:int x;\toffset:8;\tsize:4;\tsigned:1;\n"
		"\tfield:char comm[16];\toffset:12;\tsize:16;\tsigned:0;\n"
		"\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;\n"
		"\n"
		"print fmt: \"%d\", ";
	/* not parsed whole: libtraceevent 1.7 leaks an __attribute__'s "(" */
	static const char attr[] =
		"name: tc_deep\nID: 999\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\n"
		"\tfield:const char * __attribute__((user)) uptr;\toffset:8;\tsize:8;\tsigned:0;\n"
		"\n"
		"print fmt: \"%p\", REC->";
	static const char *const fine[] = {
		"REC -> x", "REC->comm", "__get_str(name)", "REC->name",
		"__print_flags(REC->x, \"|\", { 1, \"a\" })", "REC->common_pid",
		"__print_symbolic(REC->x, { 1, \"a\" }), REC->x", "REC->comm[0] + 1",
		"REC->comm[0] ? 1 : 2", "REC->x ? 1 : 2 + 3", "REC->x ? 1 : REC->x",
		"(REC->x ? 1 : 2) , REC->comm[1]", "\"REC->nosuch\"",
	};
	static const char *const refused[] = { "REC->char", "REC->nosuch" };
	char text[1024], why[160];
	int n;

	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		struct tep_handle *tep = tep_alloc();
		struct tep_event *ev = NULL;
		n = snprintf(text, sizeof(text), "%s%s\n", head, fine[i]);
		ck_assert_msg(format_check(text, (size_t)n, NULL, why, sizeof(why)) == 0, "%s: %s",
			      fine[i], why);
		ck_assert_int_eq(tep_parse_format(tep, &ev, text, (size_t)n, "tc"), 0);
		ck_assert_msg(ev && !(ev->flags & TEP_EVENT_FL_FAILED), "%s: not parsed", fine[i]);
		tep_free(tep);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		n = snprintf(text, sizeof(text), "%s%s\n", head, refused[i]);
		TU_ERR(format_check(text, (size_t)n, NULL, why, sizeof(why)), TC_ERR_FORMAT_PARSE);
		ck_assert_msg(strstr(why, "does not declare"), "%s: %s", refused[i], why);
	}
	n = snprintf(text, sizeof(text), "%suptr\n", attr);
	ck_assert_msg(format_check(text, (size_t)n, NULL, why, sizeof(why)) == 0, "uptr: %s", why);
	n = snprintf(text, sizeof(text), "%suser\n", attr);
	TU_ERR(format_check(text, (size_t)n, NULL, why, sizeof(why)), TC_ERR_FORMAT_PARSE);
}
END_TEST

/*
 * A field list that breaks off part way: libtraceevent returns success
 * and an event flagged FAILED with the fields read so far; decoder_format()
 * refuses it rather than store a partial schema.
 */
START_TEST(test_broken_fields)
{
	static const char text[] =
		"name: tc_deep\nID: 999\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
		"\n"
		"\tfield:int x;\toffset:8;\tsize:4;\tsigned:1;\n"
		"\tfield:pid_signed:0;\n"
		"\tfield:int y;\toffset:12;\tsize:4;\tsigned:1;\n"
		"\n"
		"print fmt: \"%d\", REC->x\n";
	struct job j = { .text = text, .len = sizeof(text) - 1 };

	job_thread(&j);
	TU_ERR(j.ret, TC_ERR_FORMAT_PARSE);
}
END_TEST

/*
 * libtraceevent 1.7 passes a NULL token to strcmp() when a field's '[' is
 * followed by a byte its lexer cannot read, or by the end of the text:
 * both are refused before it sees them (found by fuzz_format_page).
 */
START_TEST(test_unreadable_after_bracket)
{
	static const char high[] =
		"name: tc_deep\nID: 999\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\n"
		"\tfield:char comm[\xd4" "6];\toffset:8;\tsize:16;\tsigned:0;\n"
		"\n"
		"print fmt: \"%s\", REC->comm\n";
	static const char end[] =
		"name: tc_deep\nID: 999\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\n"
		"\tfield:char comm[";
	struct job j = { .text = high, .len = sizeof(high) - 1 };

	job_thread(&j);
	TU_ERR(j.ret, TC_ERR_FORMAT_PARSE);
	ck_assert_msg(strstr(j.why, "0xd4"), "reason: %s", j.why);
	j = (struct job){ .text = end, .len = sizeof(end) - 1 };
	job_thread(&j);
	TU_ERR(j.ret, TC_ERR_FORMAT_PARSE);
	ck_assert_msg(strstr(j.why, "open"), "reason: %s", j.why);
}
END_TEST

/*
 * A field whose type is one word: libtraceevent 1.7 leaks the word, or
 * calls strlen(NULL) when it is __attribute__ and a '(' follows (found by
 * fuzz_format_page). Refused before it sees them.
 */
START_TEST(test_field_one_word)
{
	static const char *const lines[] = {
		"\tfield:int;\toffset:8;\tsize:4;\tsigned:1;\n",
		"\tfield:pid_signed:0;\n",
		"\tfield:__attribute__((user)) x;\toffset:8;\tsize:4;\tsigned:1;\n",
		"\tfield:unsig",
		"\tfield:int STA_PR_FMT;\toffset:8;\tsize:4;\tsigned:1;\n",
	};
	char text[1024];

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct job j = { .text = text };

		j.len = (size_t)snprintf(text, sizeof(text), "name: tc_deep\nID: 999\nformat:\n"
			"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
			"\n%s\nprint fmt: \"x\"\n", lines[i]);
		job_thread(&j);
		TU_ERR(j.ret, TC_ERR_FORMAT_PARSE);
		ck_assert_msg(strstr(j.why, "one word"), "%s: reason: %s", lines[i], j.why);
	}
}
END_TEST

/*
 * A field line of 30,000 tokens (in its [ ]): libtraceevent appends them
 * one by one, re-reading what it built, about 0.3 s of the ingest
 * worker's time for one 64 KiB FORMAT. Refused by its token count.
 */
START_TEST(test_field_tokens)
{
	static const char head[] = "name: tc_deep\nID: 999\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\n\tfield:char x[";
	static const char tail[] = "];\toffset:8;\tsize:4;\tsigned:0;\n\nprint fmt: \"x\"\n";
	char *text = malloc(FORMAT_MAX_LEN);
	struct job j = { .text = text };

	ck_assert_ptr_nonnull(text);
	j.len = (size_t)(stpcpy(text, head) - text);
	while (j.len + sizeof(tail) + 2 < FORMAT_MAX_LEN)
		j.len = (size_t)(stpcpy(text + j.len, "a,") - text);
	j.len = (size_t)(stpcpy(text + j.len, tail) - text);
	job_thread(&j);
	TU_ERR(j.ret, TC_ERR_FORMAT_LIMIT);
	ck_assert_msg(strstr(j.why, "tokens in one field line than 96"), "reason: %s", j.why);
	free(text);
}
END_TEST

/* ---- real formats ---- */

static char *slurp(const char *path, size_t *len)
{
	size_t cap = 8192, n = 0, got;
	char *buf = malloc(cap);
	FILE *f = fopen(path, "rb");

	ck_assert_msg(f != NULL, "open %s", path);
	ck_assert_ptr_nonnull(buf);
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			buf = realloc(buf, cap *= 2);
			ck_assert_ptr_nonnull(buf);
		}
	}
	fclose(f);
	*len = n;
	return buf;
}

struct real {
	struct decoder *d;
	struct format_stats max;
	char max_path[5][256];
	unsigned n;
};

static void real_max(struct real *r, const struct format_stats *st, const char *path)
{
	const size_t now[5] = { st->len, st->depth, st->ops, st->nest, st->words };
	size_t *max[5] = { &r->max.len, NULL, NULL, NULL, NULL };
	unsigned *umax[5] = { NULL, &r->max.depth, &r->max.ops, &r->max.nest, &r->max.words };

	for (int i = 0; i < 5; i++) {
		size_t was = max[i] ? *max[i] : *umax[i];

		if (now[i] <= was)
			continue;
		snprintf(r->max_path[i], sizeof(r->max_path[i]), "%s", path);
		if (max[i])
			*max[i] = now[i];
		else
			*umax[i] = (unsigned)now[i];
	}
}

/* @path passes the check, and decoder_format() takes it as @system:@name. */
static void real_one(struct real *r, const char *path, const char *system, const char *name)
{
	const struct decode_type *t;
	struct format_stats st;
	char why[128] = "";
	size_t len;
	char *text = slurp(path, &len);
	int ret = format_check(text, len, &st, why, sizeof(why));

	ck_assert_msg(ret == 0, "%s: %s: %s", path, tc_strerror(ret), why);
	real_max(r, &st, path);
	ret = decoder_format(r->d, system, name, text, len, &t);
	ck_assert_msg(ret == 0, "%s: decoder_format: %s %s", path, tc_strerror(ret),
		      decoder_error(r->d));
	r->n++;
	free(text);
}

/* events/SYSTEM/NAME/format -> SYSTEM, NAME */
static void real_kernel(struct real *r, const char *path)
{
	char sys[256], name[256];
	const char *e = strstr(path, "/events/");

	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(sscanf(e, "/events/%255[^/]/%255[^/]/format", sys, name), 2);
	real_one(r, path, sys, name);
}

START_TEST(test_real_formats)
{
	static const char *const data[][2] = {
		{ "sched", "sched_switch" }, { "sched", "sched_wakeup" }, { "ftrace", "print" },
	};
	struct proto_hello h = { .page_size = 4096, .long_size = 8 };
	struct real r = { 0 };
	char path[4200];
	glob_t g;

	TU_OK(decoder_new(&h, &r.d));
	for (size_t i = 0; i < sizeof(data) / sizeof(data[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s.format", capture_dir(), data[i][1]);
		real_one(&r, path, data[i][0], data[i][1]);
	}
	decoder_free(r.d);
	TU_OK(decoder_new(&h, &r.d));
	if (glob("/sys/kernel/tracing/events/*/*/format", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			real_kernel(&r, g.gl_pathv[i]);
		globfree(&g);
	}
	decoder_free(r.d);
	printf("format_check over %u real formats: longest %zu bytes (cap %u, %s), "
	       "depth %u (cap %u, %s), operators in a term %u (cap %u, %s), "
	       "nest %u (cap %u, %s), adjacent words %u (cap %u, %s)\n", r.n,
	       r.max.len, FORMAT_MAX_LEN, r.max_path[0], r.max.depth, FORMAT_MAX_DEPTH,
	       r.max_path[1], r.max.ops, FORMAT_MAX_OPS, r.max_path[2], r.max.nest,
	       FORMAT_MAX_NEST, r.max_path[3], r.max.words, FORMAT_MAX_WORDS, r.max_path[4]);
	ck_assert_uint_ge(r.n, 3);
}
END_TEST

/* ---- within the caps, libtraceevent needs little stack ---- */

static void *tep_run(void *arg)
{
	struct job *j = arg;
	struct tep_handle *tep = tep_alloc();
	struct tep_event *ev = NULL;

	ck_assert_ptr_nonnull(tep);
	tep_set_long_size(tep, 8);
	j->ret = (int)tep_parse_format(tep, &ev, j->text, j->len, "tc");
	tep_free(tep);
	j->done = true;
	return NULL;
}

/*
 * The worst texts the caps let through, given whole to libtraceevent (not
 * cut as decoder_format() does) in a thread with a 1 MiB stack: the caps
 * alone keep its recursion small.
 */
START_TEST(test_caps_small_stack)
{
	const struct shape worst[] = {
		{ "depth and nest", "--(", "REC->x", ")", FORMAT_MAX_DEPTH },
		{ "+ chain", "", "REC->x", "+1", FORMAT_MAX_OPS - 2 },
		{ "?: chain", "REC->x?1:", "0", "", FORMAT_MAX_OPS / 4 - 1 },
		{ "typecasts", "(int)", "REC->x", "", FORMAT_MAX_OPS - 3 },
		{ "unary", "!", "REC->x", "", FORMAT_MAX_OPS - 2 },
		{ "nested groups", "(!!!(", "REC->x", "+1+1))", FORMAT_MAX_DEPTH / 2 },
	};
	pthread_attr_t attr;

	TU_EQ(pthread_attr_init(&attr), 0);
	TU_EQ(pthread_attr_setstacksize(&attr, 1u << 20), 0);
	for (size_t i = 0; i < sizeof(worst) / sizeof(worst[0]); i++) {
		struct format_stats st;
		struct job j = { 0 };
		char why[128] = "";
		char *text = shape_text(&worst[i], &j.len);
		int ret = format_check(text, j.len, &st, why, sizeof(why));

		ck_assert_msg(ret == 0, "%s: %s", worst[i].name, why);
		printf("within the caps: %s: depth %u, ops %u, nest %u\n", worst[i].name,
		       st.depth, st.ops, st.nest);
		j.text = text;
		job_thread(&j);	/* the decoder path too */
		ck_assert_msg(j.ret == 0, "%s: decoder_format: %s", worst[i].name,
			      tc_strerror(j.ret));
		j.done = false;
		job_thread_run(&j, &attr, tep_run);
		ck_assert_msg(j.done, "%s: libtraceevent did not finish", worst[i].name);
		free(text);
	}
	pthread_attr_destroy(&attr);
}
END_TEST

static Suite *format_suite(void)
{
	Suite *s = suite_create("format");
	TCase *deep = tcase_create("hostile");
	TCase *real = tcase_create("real");

	tu_add_tests(deep, TU_TESTS(test_deep_parens, test_deep_not, test_deep_plus,
				    test_deep_cond, test_deep_cast, test_deep_index,
				    test_deep_brackets, test_deep_symbolic, test_deep_mixed,
				    test_too_long, test_many_words, test_literals,
				    test_print_args_crashers, test_print_args_fine,
				    test_broken_fields,
				    test_unreadable_after_bracket, test_field_one_word,
				    test_field_tokens));
	tu_add_tests(real, TU_TESTS(test_real_formats, test_caps_small_stack));
	tcase_set_timeout(real, 60);
	suite_add_tcase(s, deep);
	suite_add_tcase(s, real);
	return s;
}

TU_MAIN(format_suite())
