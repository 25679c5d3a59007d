/*
 * test_qauth.c - server/query/qauth.c: which query URLs the collector takes,
 * scope lines and the hosts each identity gets (the defaults too). The
 * escaping of peer text in log lines is log_escape()'s (tests/test_log.c).
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/tc_error.h"
#include "server/query/qauth.h"
#include "server/store/store.h"
#include "tests/testutil.h"

START_TEST(urls)
{
	static const char *const good[] = {
		"ipc:///run/tracecollect/query.sock", "ipc://rel.sock", "tcp://127.0.0.1:7001",
		"tcp://127.1.2.3:0", "tcp://[::1]:0", "tcp4://127.0.0.1:0", "tcp6://[::1]:7",
	};
	static const char *const bad[] = {
		"tcp://0.0.0.0:0", "tcp://[::]:0", "tcp://*:7001", "tcp://:7001",
		"tcp://192.0.2.1:0", "tcp://localhost:0", "tcp://127.0.0.1", "ws://127.0.0.1:0",
		"wss://127.0.0.1:0", "tls+tcp://127.0.0.1:0", "inproc://x", "abstract://x",
		"ipc://", "", "tcp://[::ffff:10.0.0.1]:0",
	};
	char why[512];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(qauth_url_check(good[i], why, sizeof(why)) == 0, "%s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		TU_ERR(qauth_url_check(bad[i], why, sizeof(why)), TC_ERR_CONFIG);
		ck_assert_msg(strstr(why, "query endpoint"), "%s: %s", bad[i], why);
	}
}
END_TEST

START_TEST(scope_lines)
{
	static const char *const bad[] = {
		"alice web*", "cert: web*", "cert:alice", "cert:alice ", "uid:x web*",
		"uid:-1 web*", "cert:alice web*,,db", "cert:alice ,web*", "user:bob web*,",
	};
	struct qauth_scopes sc = { 0 };
	char err[512], many[STORE_SCOPE_MAX * 3 + 32];
	size_t n = 0;

	TU_OK(qauth_scope_parse(&sc, "cert:alice web*,db1", err, sizeof(err)));
	TU_OK(qauth_scope_parse(&sc, "uid:5001\tdb*", err, sizeof(err)));
	ck_assert_uint_eq(sc.n, 2);
	ck_assert_uint_eq(sc.v[0].kind, QAUTH_R_CERT);
	ck_assert_str_eq(sc.v[0].name, "alice");
	ck_assert_uint_eq(sc.v[0].n, 2);
	ck_assert_str_eq(sc.v[0].globs[1], "db1");
	ck_assert_uint_eq(sc.v[1].uid, 5001);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		TU_ERR(qauth_scope_parse(&sc, bad[i], err, sizeof(err)), TC_ERR_CONFIG);
		ck_assert_msg(strstr(err, "scope"), "%s", bad[i]);
	}
	n = (size_t)snprintf(many, sizeof(many), "cert:x ");
	for (int i = 0; i <= STORE_SCOPE_MAX; i++)
		n += (size_t)snprintf(many + n, sizeof(many) - n, "%sh", i ? "," : "");
	TU_ERR(qauth_scope_parse(&sc, many, err, sizeof(err)), TC_ERR_CONFIG);
	ck_assert_uint_eq(sc.n, 2);
	qauth_scopes_free(&sc);
}
END_TEST

/* The defaults and the rules: which hosts each identity gets. */
START_TEST(scope_of)
{
	struct qauth_scopes sc = { 0 };
	struct qauth_who root = { .kind = QAUTH_UID, .uid = 0 };
	struct qauth_who u1 = { .kind = QAUTH_UID, .uid = 5001 };
	struct qauth_who u2 = { .kind = QAUTH_UID, .uid = 5002 };
	struct qauth_who nob = { .kind = QAUTH_UID, .uid = 65534 };
	struct qauth_who alice = { .kind = QAUTH_CERT, .cert = "alice" };
	struct qauth_who carol = { .kind = QAUTH_CERT, .cert = "carol" };
	struct qauth_who tcp = { .kind = QAUTH_TCP };
	const char *g[4];
	char err[256];
	size_t n;
	bool all;

	TU_OK(qauth_scope_parse(&sc, "cert:alice web*,db1", err, sizeof(err)));
	TU_OK(qauth_scope_parse(&sc, "cert:alice cache?", err, sizeof(err)));
	TU_OK(qauth_scope_parse(&sc, "uid:5001 db*", err, sizeof(err)));
	TU_OK(qauth_scope_parse(&sc, "uid:0 nothing", err, sizeof(err)));
	TU_OK(qauth_scope_parse(&sc, "user:nobody n1", err, sizeof(err)));
	TU_OK(qauth_scope_of(&sc, &root, &all, g, 4, &n));
	ck_assert(all);		/* root sees everything, whatever the lines say */
	TU_OK(qauth_scope_of(&sc, &tcp, &all, g, 4, &n));
	ck_assert(all);
	TU_OK(qauth_scope_of(&sc, &u1, &all, g, 4, &n));
	ck_assert(!all);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(g[0], "db*");
	TU_OK(qauth_scope_of(&sc, &u2, &all, g, 4, &n));
	ck_assert(all);		/* a local user no line names: the socket let it in */
	if (getuid() == 0) {	/* nobody is a user on Debian */
		TU_OK(qauth_scope_of(&sc, &nob, &all, g, 4, &n));
		ck_assert(!all);
		ck_assert_uint_eq(n, 1);
		ck_assert_str_eq(g[0], "n1");
	}
	TU_OK(qauth_scope_of(&sc, &alice, &all, g, 4, &n));
	ck_assert(!all);
	ck_assert_uint_eq(n, 3);	/* both lines add up */
	ck_assert_str_eq(g[2], "cache?");
	TU_ERR(qauth_scope_of(&sc, &alice, &all, g, 2, &n), TC_ERR_TOO_LONG);
	TU_OK(qauth_scope_of(&sc, &carol, &all, g, 4, &n));
	ck_assert(!all);
	ck_assert_uint_eq(n, 0);	/* a certificate no line names: no host */
	TU_OK(qauth_scope_of(NULL, &carol, &all, g, 4, &n));
	ck_assert(!all && n == 0);
	qauth_scopes_free(&sc);
}
END_TEST

static Suite *qauth_suite(void)
{
	Suite *s = suite_create("qauth");
	TCase *tc = tcase_create("qauth");

	tu_add_tests(tc, TU_TESTS(urls, scope_lines, scope_of));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(qauth_suite())
