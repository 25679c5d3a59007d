/*
 * test_symbols.c - agent/funcsyms.c: this test binary's own functions (a
 * PIE executable, loaded at a random base) and a shared library's must be
 * reported at the addresses the running code has; kallsyms lines parse,
 * and a restricted kallsyms (all zero addresses) yields nothing.
 */
#include "config.h"

#include <check.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/funcsyms.h"
#include "common/tc_error.h"
#include "proto/symbols.h"
#include "tests/testutil.h"

/* A function of our own, kept out of line, with a name to look for. */
int symbols_test_marker(int x);

__attribute__((noinline, used)) int symbols_test_marker(int x)
{
	return x * 3 + 1;
}

struct want {
	const char *name;
	uint64_t addr;		/* where the running code has it */
	uint64_t found;		/* what funcsyms_of_pid() said; 0: not seen */
	uint64_t size;
	int times;
	char module[PROTO_SYM_MAX_MODULE + 1];	/* its module; "": none */
};

static int find_cb(void *ctx, uint64_t addr, uint64_t size, const char *name,
		   const char *module)
{
	struct want *w = ctx;

	if (module)
		ck_assert_uint_gt(strlen(module), 0);	/* none is NULL */
	for (; w->name; w++)
		if (!strcmp(w->name, name)) {
			w->found = addr;
			w->size = size;
			w->times++;
			snprintf(w->module, sizeof(w->module), "%s", module ? module : "");
		}
	return 0;
}

START_TEST(test_own_and_library_functions)
{
	struct want w[] = {
		{ .name = "symbols_test_marker", .addr = (uintptr_t)&symbols_test_marker },
		{ .name = "elf_version", .addr = (uintptr_t)&elf_version },	/* libelf.so */
		{ .name = "main" },
		{ .name = NULL },
	};
	int n = funcsyms_of_pid(getpid(), find_cb, w);

	ck_assert_int_gt(n, 100);
	ck_assert_uint_eq(w[0].found, w[0].addr);
	ck_assert_uint_gt(w[0].size, 0);
	ck_assert_int_eq(w[0].times, 1);
	ck_assert_uint_eq(w[1].found, w[1].addr);
	ck_assert_int_ge(w[1].times, 1);
	ck_assert_int_eq(w[2].times, 1);
}
END_TEST

static int stop_cb(void *ctx, uint64_t addr, uint64_t size, const char *name,
		   const char *module)
{
	(void)addr, (void)size, (void)name, (void)module;
	return ++*(int *)ctx == 3 ? 42 : 0;
}

START_TEST(test_callback_stops_walk)
{
	int calls = 0;

	ck_assert_int_eq(funcsyms_of_pid(getpid(), stop_cb, &calls), 42);
	ck_assert_int_eq(calls, 3);
}
END_TEST

START_TEST(test_no_such_pid)
{
	int calls = 0;

	ck_assert_int_lt(funcsyms_of_pid(-5, stop_cb, &calls), 0);
	TU_EQ(calls, 0);
}
END_TEST

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/tc-kallsyms.XXXXXX");
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

START_TEST(test_kallsyms)
{
	char *path = write_tmp("ffffffff81000000 T _stext\n"
			       "ffffffff81000100 D some_data\n"
			       "ffffffff81000200 t vfs_read\t[ext4]\n"
			       "garbage\n"
			       "ffffffff81000300 W weak_fn\n");
	struct want w[] = { { .name = "_stext" }, { .name = "some_data" },
			    { .name = "vfs_read" }, { .name = "weak_fn" },
			    { .name = NULL } };

	ck_assert_int_eq(funcsyms_of_kernel(path, find_cb, w), 3);
	ck_assert_uint_eq(w[0].found, 0xffffffff81000000ull);
	TU_EQ(w[1].times, 0);
	ck_assert_uint_eq(w[2].found, 0xffffffff81000200ull);
	ck_assert_uint_eq(w[3].found, 0xffffffff81000300ull);
	/* sized up to the next text symbol; the last, and one followed by a lower, unsized */
	ck_assert_uint_eq(w[0].size, 0x200);
	ck_assert_uint_eq(w[2].size, 0x100);
	ck_assert_uint_eq(w[3].size, 0);
	/* kallsyms' module column, without its brackets */
	ck_assert_str_eq(w[0].module, "");
	ck_assert_str_eq(w[2].module, "ext4");
	ck_assert_str_eq(w[3].module, "");
	unlink(path);
	free(path);
	path = write_tmp("ffffffff81000000 T a\nffffffff81000000 T b\nffffffffc0000000 t m\t[mod]\n"
			 "ffffffffc0000040 t n\t[mod]\nffffffffa0000000 t o\t[other]\n");
	{
		struct want v[] = { { .name = "a" }, { .name = "b" }, { .name = "m" },
				    { .name = "n" }, { .name = "o" }, { .name = NULL } };

		ck_assert_int_eq(funcsyms_of_kernel(path, find_cb, v), 5);
		ck_assert_uint_eq(v[0].size, 0);	/* an alias: b at the same address */
		ck_assert_uint_eq(v[1].size, 0xffffffffc0000000ull - 0xffffffff81000000ull);
		ck_assert_uint_eq(v[2].size, 0x40);
		ck_assert_uint_eq(v[3].size, 0);	/* another module's lies lower */
		ck_assert_uint_eq(v[4].size, 0);
		ck_assert_int_eq(v[4].times, 1);
		ck_assert_str_eq(v[1].module, "");
		ck_assert_str_eq(v[2].module, "mod");
		ck_assert_str_eq(v[3].module, "mod");
		ck_assert_str_eq(v[4].module, "other");	/* the last line's too */
	}
	unlink(path);
	free(path);
	{	/* no closing bracket: no module; a longer one cut to PROTO_SYM_MAX_MODULE */
		char text[256], longmod[PROTO_SYM_MAX_MODULE + 9];
		struct want u[] = { { .name = "p" }, { .name = "q" }, { .name = NULL } };

		memset(longmod, 'm', sizeof(longmod) - 1);
		longmod[sizeof(longmod) - 1] = '\0';
		snprintf(text, sizeof(text), "ffffffffc0000000 t p\t[open\n"
			 "ffffffffc0000100 t q\t[%s]\n", longmod);
		path = write_tmp(text);
		ck_assert_int_eq(funcsyms_of_kernel(path, find_cb, u), 2);
		ck_assert_str_eq(u[0].module, "");
		ck_assert_uint_eq(strlen(u[1].module), PROTO_SYM_MAX_MODULE);
		unlink(path);
		free(path);
	}
}
END_TEST

START_TEST(test_kallsyms_restricted)
{
	char *path = write_tmp("0000000000000000 T _stext\n0000000000000000 t vfs_read\n");
	int calls = 0;

	TU_EQ(funcsyms_of_kernel(path, stop_cb, &calls), 0);
	TU_EQ(calls, 0);
	unlink(path);
	free(path);
}
END_TEST

/* funcsyms_send: every message parses, and together they hold the marker. */
struct sent {
	int msgs, syms;
	struct want *w;
};

static int sym_line(void *ctx, const struct proto_sym *sym)
{
	struct sent *s = ctx;

	s->syms++;
	return find_cb(s->w, sym->addr, sym->size, sym->name, sym->module);
}

static int msg_cb(void *arg, const struct proto_msg *m)
{
	struct sent *s = arg;

	ck_assert_int_eq(m->type, MSG_SYMBOLS);
	ck_assert_uint_eq(m->symbols.group, 9);
	ck_assert_uint_le(m->symbols.len, PROTO_SYM_CHUNK);
	TU_OK(proto_sym_parse(m->symbols.text, m->symbols.len, sym_line, s, NULL));
	s->msgs++;
	return 0;
}

START_TEST(test_send)
{
	struct want w[] = { { .name = "symbols_test_marker", .addr = (uintptr_t)&symbols_test_marker },
			    { .name = NULL } };
	struct sent s = { .w = w };
	int n = funcsyms_send(9, getpid(), true, msg_cb, &s);

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(s.syms, n);
	ck_assert_int_ge(s.msgs, 1);
	ck_assert_uint_eq(w[0].found, w[0].addr);
}
END_TEST

static Suite *symbols_suite(void)
{
	Suite *s = suite_create("symbols");
	TCase *tc = tcase_create("symbols");

	tu_add_tests(tc, TU_TESTS(test_own_and_library_functions, test_callback_stops_walk,
					test_no_such_pid, test_kallsyms, test_kallsyms_restricted,
					test_send));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(symbols_suite())
