/*
 * test_config.c - check tests for the config-file parser (common/config_file.c):
 * what valid files yield, quoting, and the exact "FILE:LINE:COL: message"
 * of every error.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config_file.h"
#include "common/tc_error.h"
#include "tests/testutil.h"

static struct config_list list;
static char err[512];

/* Parse @text (of @len bytes, or strlen when 0) into the global list. */
static int load_n(const char *text, size_t len)
{
	config_list_free(&list);
	err[0] = '\0';
	return config_load_buf("t.conf", text, len ? len : strlen(text), &list,
			       err, sizeof(err));
}

static int load(const char *text)
{
	return load_n(text, 0);
}

static void expect_entry(size_t i, const char *key, const char *value,
			 unsigned line)
{
	ck_assert_uint_lt(i, list.count);
	ck_assert_str_eq(list.items[i].key, key);
	ck_assert_str_eq(list.items[i].value, value);
	ck_assert_uint_eq(list.items[i].line, line);
}

static void expect_error(const char *text, const char *msg)
{
	TU_ERR(load(text), TC_ERR_CONFIG);
	ck_assert_str_eq(err, msg);
}

static void teardown(void)
{
	config_list_free(&list);
}

START_TEST(test_valid_file)
{
	const char *text =
		"# tracecollectd.conf\n"
		"\n"
		"   \t\n"
		"listen = 0.0.0.0:7000\n"
		"  db-path\t=\t/var/lib/tc.db   \n"
		"filter = sched:sched_switch where prev_pid == 0 # idle only\n"
		"filter = a#b\n"
		"empty =\n"
		"comment-only = # nothing\n"
		"max_pages_2 = 42";

	TU_OK(load(text));
	ck_assert_uint_eq(list.count, 7);
	expect_entry(0, "listen", "0.0.0.0:7000", 4);
	expect_entry(1, "db-path", "/var/lib/tc.db", 5);
	expect_entry(2, "filter", "sched:sched_switch where prev_pid == 0", 6);
	expect_entry(3, "filter", "a#b", 7);
	expect_entry(4, "empty", "", 8);
	expect_entry(5, "comment-only", "", 9);
	expect_entry(6, "max_pages_2", "42", 10);
}
END_TEST

START_TEST(test_crlf_and_empty)
{
	TU_OK(load("a = 1\r\nb = \"2\"\r\n\r\n"));
	ck_assert_uint_eq(list.count, 2);
	expect_entry(0, "a", "1", 1);
	expect_entry(1, "b", "2", 2);
	TU_OK(load_n("", 0));
	ck_assert_uint_eq(list.count, 0);
}
END_TEST

START_TEST(test_quoting)
{
	TU_OK(load("a = \"  spaces # and hash  \"  # comment\n"
		   "b = \"say \\\"hi\\\" \\\\ back\"\n"
		   "c = \"\"\n"
		   "d = comm == \"bash\"\n"
		   "e = \"tab\there\""));
	ck_assert_uint_eq(list.count, 5);
	expect_entry(0, "a", "  spaces # and hash  ", 1);
	expect_entry(1, "b", "say \"hi\" \\ back", 2);
	expect_entry(2, "c", "", 3);
	expect_entry(3, "d", "comm == \"bash\"", 4);
	expect_entry(4, "e", "tab\there", 5);
}
END_TEST

START_TEST(test_syntax_errors)
{
	expect_error("Foo = 1", "t.conf:1:1: expected a key ([a-z0-9_-]), found 'F'");
	expect_error("= 1", "t.conf:1:1: expected a key ([a-z0-9_-]), found '='");
	expect_error("ok = 1\n  foo.bar = 1",
		     "t.conf:2:6: invalid character '.' in key");
	expect_error("foo 1", "t.conf:1:5: expected '=' after key 'foo'");
	expect_error("foo", "t.conf:1:4: expected '=' after key 'foo'");
	expect_error("a = \"abc", "t.conf:1:5: unterminated quoted value");
	expect_error("a = \"a\\nb\"",
		     "t.conf:1:7: unknown escape \\'n' (only \\\" and \\\\)");
	expect_error("a = \"a\\", "t.conf:1:7: backslash at end of line");
	expect_error("a = \"x\" y", "t.conf:1:9: unexpected text after quoted value");
	expect_error("a = b\x01" "c", "t.conf:1:6: control character 0x01 in value");
	expect_error("a = \"b\x1b\"", "t.conf:1:7: control character 0x1b in value");
	expect_error("a = b\rc", "t.conf:1:6: control character 0x0d in value");
	expect_error("k\xc3\xa9 = 1", "t.conf:1:2: invalid character 0xc3 in key");
}
END_TEST

START_TEST(test_nul_byte)
{
	TU_ERR(load_n("a = 1\nb = x\0y\n", 13), TC_ERR_CONFIG);
	ck_assert_str_eq(err, "t.conf:2:6: control character 0x00 in value");
	ck_assert_uint_eq(list.count, 0);
}
END_TEST

START_TEST(test_limits)
{
	size_t n = 4 + CONFIG_MAX_LINE, big = CONFIG_MAX_SIZE + 1;
	char *line = malloc(n + 2), *huge = malloc(big);

	ck_assert_ptr_nonnull(line);
	ck_assert_ptr_nonnull(huge);
	memcpy(line, "k = ", 4);
	memset(line + 4, 'x', CONFIG_MAX_LINE - 4);
	line[CONFIG_MAX_LINE] = '\n';
	TU_OK(load_n(line, CONFIG_MAX_LINE + 1));
	ck_assert_uint_eq(strlen(list.items[0].value), CONFIG_MAX_LINE - 4);

	memset(line + 4, 'x', n - 4);
	line[n] = '\n';
	TU_ERR(load_n(line, n + 1), TC_ERR_CONFIG);
	ck_assert_str_eq(err, "t.conf:1:4097: line longer than 4096 bytes");

	memset(huge, '\n', big);
	TU_ERR(load_n(huge, big), TC_ERR_CONFIG);
	ck_assert_str_eq(err, "t.conf: larger than 1048576 bytes");
	free(line);
	free(huge);
}
END_TEST

/* A program's validator: knows "port" (a number) and "name". */
struct seen {
	int calls;
	char last[64];
};

static int validate(void *ctx, const char *key, const char *value,
		    unsigned line)
{
	struct seen *s = ctx;
	char *end;

	s->calls++;
	snprintf(s->last, sizeof(s->last), "%s@%u", key, line);
	if (strcmp(key, "name") == 0)
		return 0;
	if (strcmp(key, "port") != 0)
		return TC_ERR_CONFIG_KEY;
	strtoul(value, &end, 10);
	return *value && !*end ? 0 : TC_ERR_BAD_NUMBER;
}

START_TEST(test_callback_errors)
{
	struct seen s = { 0 };
	const char *bad_key = "name = a\n  bogus = 1\nport = 2\n";
	const char *bad_val = "port = 7000\nport = \"70x\"\n";
	int rc;

	rc = config_parse_buf("d.conf", bad_key, strlen(bad_key), validate, &s,
			      err, sizeof(err));
	TU_ERR(rc, TC_ERR_CONFIG_KEY);
	ck_assert_str_eq(err, "d.conf:2:3: unknown key 'bogus'");
	ck_assert_int_eq(s.calls, 2);
	ck_assert_str_eq(s.last, "bogus@2");

	memset(&s, 0, sizeof(s));
	rc = config_parse_buf("d.conf", bad_val, strlen(bad_val), validate, &s,
			      err, sizeof(err));
	TU_ERR(rc, TC_ERR_BAD_NUMBER);
	ck_assert_str_eq(err, "d.conf:2:8: invalid value for 'port': invalid number");
	ck_assert_int_eq(s.calls, 2);
}
END_TEST

START_TEST(test_load_failure_leaves_out)
{
	struct config_list l = { (struct config_entry *)&l, 42 };

	TU_ERR(config_load_buf("x", "a = 1\nb c", 9, &l, err, sizeof(err)), TC_ERR_CONFIG);
	ck_assert_ptr_eq(l.items, (struct config_entry *)&l);
	ck_assert_uint_eq(l.count, 42);
}
END_TEST

START_TEST(test_files)
{
	char path[] = "/tmp/test_config.XXXXXX";
	const char *text = "# file\nlisten = :7000\nfilter = \"a b\"\n";
	struct config_list l;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (int)strlen(text));
	close(fd);
	TU_OK(config_load_file(path, &l, err, sizeof(err)));
	ck_assert_uint_eq(l.count, 2);
	ck_assert_str_eq(l.items[1].value, "a b");
	ck_assert_uint_eq(l.items[1].line, 3);
	config_list_free(&l);
	ck_assert_ptr_null(l.items);
	unlink(path);

	TU_ERR(config_load_file(path, &l, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_ptr_nonnull(strstr(err, "No such file"));
	TU_ERR(config_load_file("/tmp", &l, err, sizeof(err)), -EISDIR);
}
END_TEST

START_TEST(test_file_error_names_file)
{
	char path[] = "/tmp/test_config.XXXXXX", want[128];
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "ok = 1\nbad\n", 11), 11);
	close(fd);
	TU_ERR(config_load_file(path, &list, err, sizeof(err)), TC_ERR_CONFIG);
	snprintf(want, sizeof(want), "%s:2:4: expected '=' after key 'bad'", path);
	ck_assert_str_eq(err, want);
	unlink(path);
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("parse");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tu_add_tests(tc, TU_TESTS(test_valid_file, test_crlf_and_empty, test_quoting,
					test_syntax_errors, test_nul_byte, test_limits,
					test_callback_errors, test_load_failure_leaves_out,
					test_files, test_file_error_names_file));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(config_suite())
