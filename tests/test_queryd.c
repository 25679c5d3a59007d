/*
 * test_queryd.c - the query endpoint (server/query/queryd.c) against a real
 * SQLite file and real nng REQ sockets on 127.0.0.1: one client cannot
 * stall the others.
 *
 * The endpoint's ingest hooks (struct queryd_ingest) are the test's own,
 * and they are the levers: backlog() runs on the thread that answers a
 * request, so holding it there is a query that takes as long as the test
 * likes; wait_stored() returns only once the test says what was received
 * is stored. Every check is by order (this answer came while that request
 * was still held), never by elapsed time; the receive timeouts below only
 * turn a hang into a failure.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <msgpack.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "common/tc_error.h"
#include "common/util.h"
#include "proto/frame.h"
#include "proto/qmsg.h"
#include "proto/tls.h"
#include "server/query/qauth.h"
#include "server/query/queryd.h"
#include "server/query/queryd_tls.h"
#include "server/store/store.h"
#include "tests/testutil.h"
#include "traceq/client.h"
#include "traceq/hostmeta.h"
#include "traceq/losses.h"
#include "traceq/tlsconn.h"

#define WAIT_MS		20000	/* a hang becomes a failure after this */
#define THREADS		4	/* the pool the endpoint is started with */
/* workers one identity may hold: THREADS less a quarter (queryd_fair.h) */
#define IDENT_RUN_MAX	(THREADS - (THREADS / 4 ? THREADS / 4 : 1))

static char dir[64], db[96], url[128];
static struct queryd *qd;
static struct qtls *qt;		/* the TLS query port on qd; NULL: none */

/* ---- the test's ingest: backlog() can be held, wait_stored() released ---- */

static pthread_mutex_t hk_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hk_cond = PTHREAD_COND_INITIALIZER;
static int hk_hold;		/* backlog() calls still to hold; -1: all */
static bool hk_gate;		/* held calls wait while it is true */
static int hk_held;		/* calls held right now */
static int hk_inside, hk_max_inside;	/* calls in backlog(), and the most at once */
static bool hk_stored;		/* wait_stored() succeeds */
static int hk_waiting, hk_waits;	/* in wait_stored() now; calls so far */

static void hk_reset(void)
{
	hk_hold = 0;
	hk_gate = false;
	hk_held = hk_inside = hk_max_inside = 0;
	hk_stored = false;
	hk_waiting = hk_waits = 0;
}

static void hk_backlog(void *arg, uint64_t *unstored, uint64_t *journal_bytes)
{
	(void)arg;
	pthread_mutex_lock(&hk_lock);
	if (++hk_inside > hk_max_inside)
		hk_max_inside = hk_inside;
	if (hk_hold && hk_gate) {
		if (hk_hold > 0)
			hk_hold--;
		hk_held++;
		pthread_cond_broadcast(&hk_cond);
		while (hk_gate)
			pthread_cond_wait(&hk_cond, &hk_lock);
		hk_held--;
	}
	hk_inside--;
	pthread_mutex_unlock(&hk_lock);
	*unstored = 1;
	*journal_bytes = 0;
}

static uint64_t hk_received(void *arg)
{
	(void)arg;
	return 1;
}

static int hk_wait_stored(void *arg, uint64_t mark, int timeout_ms)
{
	struct timespec ts;
	int ret;

	(void)arg;
	(void)mark;
	ts = util_deadline(timeout_ms);
	pthread_mutex_lock(&hk_lock);
	hk_waits++;
	hk_waiting++;
	pthread_cond_broadcast(&hk_cond);
	while (!hk_stored && pthread_cond_timedwait(&hk_cond, &hk_lock, &ts) == 0)
		;
	ret = hk_stored ? 0 : -ETIMEDOUT;
	hk_waiting--;
	pthread_cond_broadcast(&hk_cond);
	pthread_mutex_unlock(&hk_lock);
	return ret;
}

/* Wait (at most WAIT_MS) until @cond holds; hk_lock is held while it is read. */
#define HK_WAIT_FOR(cond) do { \
	struct timespec ts_; \
	bool ok_; \
	clock_gettime(CLOCK_REALTIME, &ts_); \
	ts_.tv_sec += WAIT_MS / 1000; \
	pthread_mutex_lock(&hk_lock); \
	while (!(cond) && pthread_cond_timedwait(&hk_cond, &hk_lock, &ts_) == 0) \
		; \
	ok_ = (cond); \
	pthread_mutex_unlock(&hk_lock); \
	ck_assert_msg(ok_, "waited %d ms for %s", WAIT_MS, #cond); \
} while (0)

static void hk_set(bool *flag, bool v)
{
	pthread_mutex_lock(&hk_lock);
	*flag = v;
	pthread_cond_broadcast(&hk_cond);
	pthread_mutex_unlock(&hk_lock);
}

static int hk_get(const int *v)
{
	int n;

	pthread_mutex_lock(&hk_lock);
	n = *v;
	pthread_mutex_unlock(&hk_lock);
	return n;
}

/* ---- clients ---- */

static nng_socket client(void)
{
	nng_socket s;

	TU_EQ(nng_req0_open(&s), 0);
	TU_EQ(nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, WAIT_MS), 0);
	TU_EQ(nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, WAIT_MS), 0);
	TU_EQ(nng_dial(s, url, NULL, 0), 0);
	return s;
}

static void send_raw(nng_socket s, const void *buf, size_t len)
{
	int rv = nng_send(s, (void *)buf, len, 0);

	ck_assert_msg(rv == 0, "send: %s", nng_strerror(rv));
}

static void send_request(nng_socket s, enum qmsg_op op, uint32_t sync_ms)
{
	struct qmsg_request r = { .op = op, .sync_ms = sync_ms };
	struct proto_buf b;

	proto_buf_init(&b);
	TU_OK(qmsg_request_encode(&r, &b));
	send_raw(s, b.data, b.len);
	proto_buf_free(&b);
}

/* The reply to what @s sent; fails the test when none comes in WAIT_MS. */
static void recv_reply(nng_socket s, struct qmsg_reply *rep)
{
	void *msg;
	size_t len;
	int rv = nng_recv(s, &msg, &len, NNG_FLAG_ALLOC);

	ck_assert_msg(rv == 0, "no reply in %d ms: %s", WAIT_MS, nng_strerror(rv));
	TU_OK(qmsg_reply_decode(msg, len, rep));
	nng_free(msg, len);
}

static void expect_ok(nng_socket s)
{
	struct qmsg_reply rep;

	recv_reply(s, &rep);
	ck_assert_msg(rep.ok, "error reply: %s", rep.error);
	qmsg_reply_free(&rep);
}

static void expect_error(nng_socket s, int code, const char *text)
{
	struct qmsg_reply rep;

	recv_reply(s, &rep);
	ck_assert_msg(!rep.ok, "a success reply, not error %d", code);
	ck_assert_msg(rep.code == code, "error %d (%s), not %d", rep.code, rep.error, code);
	ck_assert_msg(strstr(rep.error, text), "error '%s' does not say '%s'", rep.error, text);
	qmsg_reply_free(&rep);
}

/* Whether a reply to @s has come (without waiting for one). */
static bool answered(nng_socket s)
{
	void *msg;
	size_t len;
	int rv = nng_recv(s, &msg, &len, NNG_FLAG_ALLOC | NNG_FLAG_NONBLOCK);

	if (rv == 0)
		nng_free(msg, len);
	ck_assert_msg(rv == 0 || rv == NNG_EAGAIN, "recv: %s", nng_strerror(rv));
	return rv == 0;
}

/* ---- fixture ---- */

/* The endpoint on the fixture's database, with a pool of THREADS and @sync_max_ms. */
static void start_endpoint(uint32_t sync_max_ms)
{
	struct queryd_ingest in = { hk_received, hk_wait_stored, hk_backlog, NULL, NULL, NULL,
				    NULL, NULL };
	struct queryd_opts o = { .threads = THREADS, .sync_max_ms = sync_max_ms };
	char bound[128];

	TU_OK(queryd_start("tcp://127.0.0.1:0", db, &o, &qd, bound, sizeof(bound)));
	snprintf(url, sizeof(url), "%s", bound);
	queryd_set_ingest(qd, &in);
}

/* The endpoint and its TLS port: the port first, since it hands requests to the endpoint. */
static void stop_endpoint(void)
{
	qtls_stop(qt);
	queryd_stop(qd);
	qtls_free(qt);
	qt = NULL;
	qd = NULL;
}

static void start(void)
{
	struct store_writer *st;

	hk_reset();
	tu_tmpdir_make(dir, sizeof(dir), "queryd");
	snprintf(db, sizeof(db), "%s/trace.db", dir);
	TU_OK(store_writer_open(db, &st));
	store_writer_close(st);
	start_endpoint(60000);
}

static void stop(void)
{
	pthread_mutex_lock(&hk_lock);
	hk_gate = false;
	hk_stored = true;
	pthread_cond_broadcast(&hk_cond);
	pthread_mutex_unlock(&hk_lock);
	stop_endpoint();
	TU_OK(tu_tmpdir_remove(dir));
}

/* ---- the pool ---- */

/* A query that runs long holds one worker; the next three are answered meanwhile. */
START_TEST(long_query_does_not_block_three_others)
{
	nng_socket a = client(), b[THREADS - 1];

	hk_hold = 1;
	hk_set(&hk_gate, true);
	send_request(a, QOP_STATS, 0);
	HK_WAIT_FOR(hk_held == 1);
	for (int i = 0; i < THREADS - 1; i++) {
		b[i] = client();
		send_request(b[i], QOP_STATS, 0);
	}
	for (int i = 0; i < THREADS - 1; i++)
		expect_ok(b[i]);
	ck_assert_msg(!answered(a) && hk_get(&hk_held) == 1,
		      "the long query ended before the others were answered");
	hk_set(&hk_gate, false);
	expect_ok(a);
	nng_close(a);
	for (int i = 0; i < THREADS - 1; i++)
		nng_close(b[i]);
}
END_TEST

/*
 * One identity's queries (all of these come over tcp: one "nobody") run
 * at most THREADS less a quarter at once (queryd_fair.h: a worker stays
 * for other identities); the rest wait their turn and are answered.
 */
START_TEST(pool_runs_threads_at_once_and_no_more)
{
	nng_socket c[THREADS + 2];

	hk_hold = -1;
	hk_set(&hk_gate, true);
	for (int i = 0; i < THREADS + 2; i++) {
		c[i] = client();
		send_request(c[i], QOP_STATS, 0);
	}
	HK_WAIT_FOR(hk_held == IDENT_RUN_MAX);
	hk_set(&hk_gate, false);
	for (int i = 0; i < THREADS + 2; i++) {
		expect_ok(c[i]);
		nng_close(c[i]);
	}
	ck_assert_int_eq(hk_get(&hk_max_inside), IDENT_RUN_MAX);
}
END_TEST

/* ---- sync ---- */

/* A request that waits for the backlog (sync = 2^32-1) does not hold up a plain one. */
START_TEST(sync_wait_does_not_block_others)
{
	nng_socket a = client(), b = client();

	send_request(a, QOP_STATS, UINT32_MAX);
	HK_WAIT_FOR(hk_waiting > 0);
	send_request(b, QOP_STATS, 0);
	expect_ok(b);
	ck_assert_msg(!answered(a), "the sync request was answered before its backlog was stored");
	hk_set(&hk_stored, true);
	expect_ok(a);
	nng_close(a);
	nng_close(b);
}
END_TEST

/* A short sync times out on time while a long one still waits. */
START_TEST(short_sync_times_out_behind_long_one)
{
	nng_socket a = client(), c = client();

	send_request(a, QOP_STATS, UINT32_MAX);
	HK_WAIT_FOR(hk_waiting > 0);
	send_request(c, QOP_STATS, 50);
	expect_error(c, TC_ERR_TIMEOUT, "not stored everything");
	ck_assert_msg(!answered(a), "the long sync request was answered first");
	hk_set(&hk_stored, true);
	expect_ok(a);
	nng_close(a);
	nng_close(c);
}
END_TEST

/* A `sync` over query-sync-max waits that long, then gets TC_ERR_TIMEOUT saying why. */
START_TEST(sync_is_cut_to_the_maximum)
{
	nng_socket a, b;

	stop_endpoint();
	start_endpoint(50);
	a = client();
	b = client();
	send_request(a, QOP_STATS, UINT32_MAX);
	expect_error(a, TC_ERR_TIMEOUT, "the longest it waits (query-sync-max)");
	send_request(b, QOP_STATS, 10);
	expect_error(b, TC_ERR_TIMEOUT, "try a longer --timeout");
	nng_close(a);
	nng_close(b);
}
END_TEST

/* Bad settings are refused. */
START_TEST(options_out_of_range_refused)
{
	struct queryd_opts bad[] = {
		{ .threads = 0, .sync_max_ms = 1000 },
		{ .threads = QUERYD_THREADS_MAX + 1, .sync_max_ms = 1000 },
		{ .threads = 1, .sync_max_ms = 0 },
		{ .threads = 1, .sync_max_ms = QUERYD_SYNC_MAX_MS_MAX + 1 },
	};
	struct queryd *q = NULL;
	char bound[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		TU_ERR(queryd_start("tcp://127.0.0.1:0", db, &bad[i], &q, bound, sizeof(bound)),
		       -EINVAL);
	ck_assert_ptr_null(q);
}
END_TEST

/* Once queryd_set_ingest() returns, no thread of the endpoint is in the old hooks. */
START_TEST(set_ingest_waits_for_its_callers)
{
	nng_socket a = client();
	struct qmsg_reply rep;

	send_request(a, QOP_STATS, UINT32_MAX);
	HK_WAIT_FOR(hk_waiting > 0);
	queryd_set_ingest(qd, NULL);
	ck_assert_msg(hk_get(&hk_waiting) == 0,
		      "queryd_set_ingest(NULL) returned while a thread waits in the old hooks");
	hk_set(&hk_stored, true);
	recv_reply(a, &rep);
	qmsg_reply_free(&rep);
	nng_close(a);
}
END_TEST

/* ---- size ---- */

/* A valid request of @len bytes or a little more: stats, padded by a key the endpoint ignores. */
static struct proto_buf padded_request(size_t len)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct proto_buf b;
	char *pad = calloc(1, len);

	ck_assert_ptr_nonnull(pad);
	memset(pad, 'x', len);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	msgpack_pack_str(&pk, 1);
	msgpack_pack_str_body(&pk, "v", 1);
	msgpack_pack_uint32(&pk, QMSG_VERSION);
	msgpack_pack_str(&pk, 2);
	msgpack_pack_str_body(&pk, "op", 2);
	msgpack_pack_uint32(&pk, QOP_STATS);
	msgpack_pack_str(&pk, 3);
	msgpack_pack_str_body(&pk, "pad", 3);
	msgpack_pack_str(&pk, len);
	msgpack_pack_str_body(&pk, pad, len);
	proto_buf_init(&b);
	TU_OK(proto_buf_append(&b, sb.data, sb.size));
	msgpack_sbuffer_destroy(&sb);
	free(pad);
	return b;
}

static void expect_too_long(size_t len)
{
	nng_socket s = client();
	struct proto_buf b = padded_request(len);

	send_raw(s, b.data, b.len);
	proto_buf_free(&b);
	expect_error(s, TC_ERR_TOO_LONG, "over the limit");
	nng_close(s);
}

/* Over the protocol's limit (QMSG_MAX_REQUEST): an error reply, not an answer. */
START_TEST(request_over_the_limit_gets_an_error)
{
	expect_too_long(100 << 10);
}
END_TEST

/* Over nng's default 1 MiB receive limit too: an error reply, not silence. */
START_TEST(request_over_a_mebibyte_gets_an_error)
{
	expect_too_long(2 << 20);
}
END_TEST

/* Just under the limit is a request like any other. */
START_TEST(request_under_the_limit_is_answered)
{
	nng_socket s = client();
	struct proto_buf b = padded_request(60 << 10);

	send_raw(s, b.data, b.len);
	proto_buf_free(&b);
	expect_ok(s);
	nng_close(s);
}
END_TEST

/* ---- the TLS query port ---- */

static char pki[160];

/* Certificates (contrib/tracecollect-certs) and an endpoint with a TLS port; its address. */
static void start_tls(char *addr, size_t len, const struct qauth_scopes *scopes)
{
	struct tls_files f;
	struct queryd_opts o = { .threads = THREADS, .sync_max_ms = 1000, .scopes = scopes };
	char cmd[512], bound[128], ca[200], crt[200], key[200];

	signal(SIGPIPE, SIG_IGN);	/* as tracecollectd and traceq do */
	snprintf(pki, sizeof(pki), "%s/pki", dir);
	snprintf(cmd, sizeof(cmd), "sh %s/contrib/tracecollect-certs -d %s all >/dev/null && "
		 "sh %s/contrib/tracecollect-certs -d %s client alice >/dev/null",
		 TOP_SRCDIR, pki, TOP_SRCDIR, pki);
	ck_assert_msg(system(cmd) == 0, "%s", cmd);
	snprintf(ca, sizeof(ca), "%s/ca.crt", pki);
	snprintf(crt, sizeof(crt), "%s/server.crt", pki);
	snprintf(key, sizeof(key), "%s/server.key", pki);
	f = (struct tls_files){ .cert = crt, .key = key, .ca = ca };
	stop_endpoint();	/* the fixture's */
	TU_OK(queryd_start("tcp://127.0.0.1:0", db, &o, &qd, bound, sizeof(bound)));
	TU_OK(qtls_start(qd, "127.0.0.1:0", &f, &qt));
	ck_assert_ptr_nonnull(qtls_bound(qt));
	snprintf(addr, len, "%s", qtls_bound(qt));
}

static struct tlsconn *tls_client(const char *addr)
{
	char ca[200], crt[200], key[200], err[512];
	struct tlsconn *c = NULL;

	snprintf(ca, sizeof(ca), "%s/ca.crt", pki);
	snprintf(crt, sizeof(crt), "%s/client-alice.crt", pki);
	snprintf(key, sizeof(key), "%s/client-alice.key", pki);
	ck_assert_msg(tlsconn_open(addr, &(struct tls_files){ .cert = crt, .key = key, .ca = ca }, WAIT_MS, &c, err,
				   sizeof(err)) == 0, "%s", err);
	return c;
}

/* @req over @c; the decoded reply into @rep. */
static void tls_ask(struct tlsconn *c, const struct proto_buf *req, struct qmsg_reply *rep)
{
	struct proto_buf in;
	char err[512];

	proto_buf_init(&in);
	ck_assert_msg(tlsconn_call(c, req->data, req->len, &in, err, sizeof(err)) == 0, "%s", err);
	TU_OK(qmsg_reply_decode(in.data, in.len, rep));
	proto_buf_free(&in);
}

/*
 * Requests of several frames (over FRAME_MAX_PAYLOAD, and exactly it:
 * a full frame and an empty one) are joined and answered, on one
 * connection, one after the other; the identity is the certificate's.
 */
START_TEST(tls_port_joins_frames)
{
	static const size_t sizes[] = { 60 << 10, (2 << 20) + 5, FRAME_MAX_PAYLOAD, 100 };
	struct qmsg_reply rep;
	struct tlsconn *c;
	char addr[128];

	start_tls(addr, sizeof(addr), NULL);
	c = tls_client(addr);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct proto_buf b = padded_request(sizes[i]);

		if (sizes[i] == FRAME_MAX_PAYLOAD) {	/* make it exactly one full frame */
			size_t over = b.len - sizes[i];

			proto_buf_free(&b);
			b = padded_request(sizes[i] - over);
		}
		ck_assert(sizes[i] != FRAME_MAX_PAYLOAD || b.len == FRAME_MAX_PAYLOAD);
		tls_ask(c, &b, &rep);
		proto_buf_free(&b);
		if (sizes[i] > QMSG_MAX_REQUEST) {
			ck_assert_msg(!rep.ok && rep.code == TC_ERR_TOO_LONG, "size %zu", sizes[i]);
			ck_assert_ptr_nonnull(strstr(rep.error, "over the limit"));
		} else {
			ck_assert_msg(rep.ok, "size %zu: %s", sizes[i], rep.error);
		}
		qmsg_reply_free(&rep);
	}
	tlsconn_close(c);
}
END_TEST

/* @n hosts "big-I-xxx..." (200 x) with two CPUs each in the fixture's database. */
static void many_hosts(unsigned n)
{
	struct proto_hello h = { .machine_id = (char *)"m", .boot_id = (char *)"b",
				 .kernel = (char *)"k", .trace_clock = (char *)"mono",
				 .ncpus = 2, .page_size = 4096 };
	struct store_writer *st;
	char name[256], pad[201];
	uint64_t id;

	memset(pad, 'x', 200);
	pad[200] = 0;
	TU_OK(store_writer_open(db, &st));
	TU_OK(store_begin(st));
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "big-%u-%s", i, pad);
		h.host = name;
		TU_OK(store_host(st, &h, NULL, &id));
		TU_OK(store_cpu_received(st, id, 0, 1, 1, 1));
		TU_OK(store_cpu_received(st, id, 1, 1, 1, 1));
	}
	TU_OK(store_commit(st));
	store_writer_close(st);
}

/*
 * A reply over FRAME_MAX_PAYLOAD (the stats of 4800 hosts with long
 * names, 2 MB) comes in several frames and is joined whole; the scope
 * (cert:alice big-1*, big-[2-9]*: every host but big-0) and a host glob
 * within it narrow it (big-1*: the 1111 hosts big-1, big-10..19,
 * big-100..199, big-1000..1999).
 */
START_TEST(tls_port_splits_replies)
{
	struct qmsg_request r = { .op = QOP_STATS };
	struct qauth_scopes sc = { 0 };
	struct qmsg_reply rep;
	struct proto_buf b;
	struct tlsconn *c;
	char addr[128], err[256];

	many_hosts(4800);
	TU_OK(qauth_scope_parse(&sc, "cert:alice big-1*", err, sizeof(err)));
	TU_OK(qauth_scope_parse(&sc, "cert:alice big-[2-9]*", err, sizeof(err)));
	start_tls(addr, sizeof(addr), &sc);
	c = tls_client(addr);
	proto_buf_init(&b);
	TU_OK(qmsg_request_encode(&r, &b));
	tls_ask(c, &b, &rep);
	ck_assert_msg(rep.ok, "%s", rep.error);
	ck_assert_uint_eq(rep.nrows, 2 * 4799);	/* big-0 is outside the scope */
	qmsg_reply_free(&rep);
	r.host = (char *)"big-1*";
	b.len = 0;
	TU_OK(qmsg_request_encode(&r, &b));
	tls_ask(c, &b, &rep);
	ck_assert_msg(rep.ok, "%s", rep.error);
	ck_assert_uint_eq(rep.nrows, 2 * 1111);
	qmsg_reply_free(&rep);
	proto_buf_free(&b);
	tlsconn_close(c);
	stop_endpoint();	/* before the scopes it points to go */
	qauth_scopes_free(&sc);
}
END_TEST

/*
 * queryd_set_scopes() (SIGHUP): the next request, even on a connection
 * made before, reads under the new rules, which move into the endpoint;
 * the start's rules stay the caller's.
 */
START_TEST(scopes_replaced_for_next_request)
{
	struct qmsg_request r = { .op = QOP_STATS };
	struct qauth_scopes sc = { 0 }, next = { 0 };
	struct qmsg_reply rep;
	struct proto_buf b;
	struct tlsconn *c;
	char addr[128], err[256];

	many_hosts(20);
	TU_OK(qauth_scope_parse(&sc, "cert:alice big-1*", err, sizeof(err)));
	start_tls(addr, sizeof(addr), &sc);
	c = tls_client(addr);
	proto_buf_init(&b);
	TU_OK(qmsg_request_encode(&r, &b));
	tls_ask(c, &b, &rep);
	ck_assert_msg(rep.ok, "%s", rep.error);
	ck_assert_uint_eq(rep.nrows, 2 * 11);	/* big-1, big-10..19 */
	qmsg_reply_free(&rep);
	TU_OK(qauth_scope_parse(&next, "cert:alice big-2-*", err, sizeof(err)));
	TU_OK(queryd_set_scopes(qd, &next));
	ck_assert_uint_eq(next.n, 0);		/* moved */
	tls_ask(c, &b, &rep);
	ck_assert_msg(rep.ok, "%s", rep.error);
	ck_assert_uint_eq(rep.nrows, 2);	/* big-2 only */
	qmsg_reply_free(&rep);
	TU_OK(queryd_set_scopes(qd, &next));	/* no rules: a certificate sees nothing */
	tls_ask(c, &b, &rep);
	ck_assert_msg(rep.ok, "%s", rep.error);
	ck_assert_uint_eq(rep.nrows, 0);
	qmsg_reply_free(&rep);
	proto_buf_free(&b);
	tlsconn_close(c);
	stop_endpoint();
	ck_assert_uint_eq(sc.n, 1);		/* still the caller's */
	qauth_scopes_free(&sc);
}
END_TEST

/* An unknown event with a name longer than the reply's message: an error reply, whole. */
START_TEST(unknown_long_event_name)
{
	static char q[4000];
	struct qmsg_request r = { .op = QOP_COUNT, .query = q };
	struct proto_buf b;
	nng_socket s = client();

	memset(q, 'e', sizeof(q) - 1);
	proto_buf_init(&b);
	TU_OK(qmsg_request_encode(&r, &b));
	send_raw(s, b.data, b.len);
	proto_buf_free(&b);
	expect_error(s, TC_ERR_UNKNOWN_EVENT, "unknown event: eeee");
	nng_close(s);
}
END_TEST

/* Symbols, printk formats and tgids are one host's: a request that names none is told so. */
START_TEST(host_ops_need_a_host)
{
	static const struct { enum qmsg_op op; const char *msg; } ops[] = {
		{ QOP_SYMBOLS, "symbols: which host?" }, { QOP_PRINTK, "printk: which host?" },
		{ QOP_TGIDS, "tgids: which host?" },
	};
	nng_socket s = client();
	struct proto_buf b;

	proto_buf_init(&b);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct qmsg_request r = { .op = ops[i].op, .query = (char *)"ffffffff81000000" };

		b.len = 0;
		TU_OK(qmsg_request_encode(&r, &b));
		send_raw(s, b.data, b.len);
		expect_error(s, TC_ERR_MSG_MISSING, ops[i].msg);
	}
	proto_buf_free(&b);
	nng_close(s);
}
END_TEST

/* A request of @r on @s; its (ok) reply into *@rep. */
static void ask(nng_socket s, const struct qmsg_request *r, struct qmsg_reply *rep)
{
	struct proto_buf b;

	proto_buf_init(&b);
	TU_OK(qmsg_request_encode(r, &b));
	send_raw(s, b.data, b.len);
	proto_buf_free(&b);
	recv_reply(s, rep);
	ck_assert_msg(rep->ok, "%s", rep->error);
}

/*
 * traceq's side of ops 9 and 10 on what losses_and_headers stored:
 * hostmeta_get() (for the trace.dat writer) and the losses cursor with
 * trace-cmd's and the kernel's lines (traceq/hostmeta.h, losses.h).
 */
static void traceq_side(void)
{
	struct traceq_opts o = { .timeout_ms = WAIT_MS };
	struct qauth_scopes sc = { 0 };
	const struct loss *x;
	struct hostmeta m;
	struct losses *l;
	struct client *c;
	char *text = NULL, addr[128], err[256], ca[200], crt[200], key[200];
	size_t len = 0;
	FILE *f;

	/* over the TLS port (traceq's nng transport ends nng in the process) */
	TU_OK(qauth_scope_parse(&sc, "cert:alice web-*", err, sizeof(err)));
	start_tls(addr, sizeof(addr), &sc);
	snprintf(ca, sizeof(ca), "%s/ca.crt", pki);
	snprintf(crt, sizeof(crt), "%s/client-alice.crt", pki);
	snprintf(key, sizeof(key), "%s/client-alice.key", pki);
	o.server = addr;
	o.cert = crt;
	o.key = key;
	o.ca = ca;
	TU_EQ(client_open(&o, &c), 0);
	TU_EQ(hostmeta_get(c, "web-1", 0, &m), 0);
	ck_assert_str_eq(m.boot_id, "b1");
	ck_assert_str_eq(m.kernel, "6.1.0");
	ck_assert_str_eq(m.trace_clock, "mono");
	ck_assert_str_eq(m.header_page, "hp");
	ck_assert_str_eq(m.header_event, "he");
	ck_assert_uint_eq(m.long_size, 8);
	ck_assert_uint_eq(m.page_size, 4096);
	ck_assert(!m.big_endian);
	ck_assert_uint_eq(m.nformats, 0);
	ck_assert_uint_eq(m.nprograms, 1);	/* the program's, not the kernel's */
	ck_assert_uint_eq(m.programs[0].first_stream, 32770);
	ck_assert_uint_eq(m.programs[0].nstreams, 5);
	ck_assert_int_eq(m.programs[0].since_ns, 60);
	hostmeta_free(&m);
	TU_EQ(hostmeta_get(c, "web-2", 0, &m), 4);	/* unknown: 4, nothing said */
	TU_OK(losses_open(c, &o.sel, &l));
	ck_assert_ptr_nonnull(f = open_memstream(&text, &len));
	while ((x = losses_peek(l))) {
		losses_print_text(f, x, 0, false);
		losses_print_text(f, x, 6, true);
		losses_pop(l);
	}
	ck_assert(!losses_failed(l));
	losses_close(l);
	fclose(f);
	ck_assert_str_eq(text, "CPU:0 [4 EVENTS DROPPED]\n" " web-1: CPU:0 [LOST 4 EVENTS]\n"
			       "CPU:1 [EVENTS DROPPED]\n" " web-1: CPU:1 [LOST EVENTS]\n"
			       "CPU:1 [9 EVENTS DROPPED]\n" " web-1: CPU:1 [LOST 9 EVENTS]\n");
	free(text);
	client_close(c);
	stop_endpoint();
	qauth_scopes_free(&sc);
}

/*
 * Ops 9 and 10 (issue 33) through the endpoint: the losses of a window
 * and CPU, paged; a host's boot items, then its formats (none stored
 * here), an unknown host answering no rows.
 */
START_TEST(losses_and_headers)
{
	struct proto_hello h = { .host = (char *)"web-1", .machine_id = (char *)"m",
				 .boot_id = (char *)"b1", .kernel = (char *)"6.1.0",
				 .trace_clock = (char *)"mono", .ncpus = 2, .page_size = 4096 };
	const struct store_loss l[] = {
		{ .cpu = 0, .ts = 100, .trace_ts = 10, .count = 4 },
		{ .cpu = 1, .ts = 200, .trace_ts = 20, .count = -1 },
		{ .cpu = 1, .ts = 300, .trace_ts = 30, .count = 9 },
	};
	struct store_boot boot = { .boot_id = "b1", .since = 50, .trace_clock = "mono", .kernel = "6.1.0",
				   .long_size = 8, .page_size = 4096, .header_page = "hp",
				   .header_page_len = 2, .header_event = "he", .header_event_len = 2 };
	uint32_t cpu1 = 1;
	struct qmsg_request r = { .op = QOP_LOSSES, .cpus = &cpu1, .ncpus = 1, .limit = 1 };
	struct store_writer *st;
	struct qmsg_reply rep;
	nng_socket s = client();
	uint64_t id;
	int found = 0;

	TU_OK(store_writer_open(db, &st));
	TU_OK(store_begin(st));
	TU_OK(store_host(st, &h, NULL, &id));
	TU_OK(store_losses_put(st, id, "b1", l, 3));
	TU_OK(store_boot(st, id, &boot));
	{	/* a program's ring (its streams: for its losses) and the kernel's row (not one) */
		struct store_program p = { .boot_id = "b1", .session = 7, .group = 1, .pid = 42,
					   .comm = "app", .first_stream = 32770, .nstreams = 5,
					   .since_ns = 60 };
		uint64_t pid;

		TU_OK(store_program(st, id, &p, &pid));
		p.group = 0;
		p.first_stream = 0;
		TU_OK(store_program(st, id, &p, &pid));
	}
	TU_OK(store_commit(st));
	store_writer_close(st);

	ask(s, &r, &rep);	/* CPU 1, a row a page */
	ck_assert_uint_eq(rep.ncols, QMSG_LOSSES_COLS);
	ck_assert_uint_eq(rep.nrows, 1);
	ck_assert_str_eq(rep.vals[0].s.p, "web-1");
	ck_assert_int_eq(qmsg_value_int(&rep.vals[2]), 200);
	ck_assert_int_eq(rep.vals[4].kind, QV_NIL);	/* count unknown */
	ck_assert_str_eq(rep.vals[5].s.p, "b1");
	ck_assert(rep.more);
	r.after_ts = rep.last_ts;
	r.after_id = rep.last_id;
	qmsg_reply_free(&rep);
	ask(s, &r, &rep);
	ck_assert_uint_eq(rep.nrows, 1);
	ck_assert_int_eq(qmsg_value_int(&rep.vals[2]), 300);
	ck_assert_int_eq(qmsg_value_int(&rep.vals[4]), 9);
	qmsg_reply_free(&rep);
	r = (struct qmsg_request){ .op = QOP_LOSSES, .from_ts = 150, .to_ts = 300 };
	ask(s, &r, &rep);	/* [150, 300) */
	ck_assert_uint_eq(rep.nrows, 1);
	ck_assert(!rep.more);
	qmsg_reply_free(&rep);

	r = (struct qmsg_request){ .op = QOP_HEADERS, .host = (char *)"web-1" };
	ask(s, &r, &rep);
	ck_assert_uint_eq(rep.ncols, QMSG_HEADERS_COLS);
	ck_assert_uint_ge(rep.nrows, 6);
	ck_assert_str_eq(rep.vals[0].s.p, "boot_id");
	ck_assert_str_eq(rep.vals[3].s.p, "b1");
	for (uint32_t i = 0; i < rep.nrows; i++) {
		const struct qmsg_value *row = &rep.vals[i * QMSG_HEADERS_COLS];

		if (!strcmp(row[0].s.p, "long_size") && qmsg_value_int(&row[3]) == 8)
			found++;
		if (!strcmp(row[0].s.p, "header_event") && !strcmp(row[3].s.p, "he"))
			found++;
		if (!strcmp(row[0].s.p, "kernel") && !strcmp(row[3].s.p, "6.1.0"))
			found++;
		if (!strcmp(row[0].s.p, "program") && !strcmp(row[3].s.p, "32770 5 60"))
			found++;
	}
	ck_assert_int_eq(found, 4);
	ck_assert(!rep.more);
	qmsg_reply_free(&rep);
	r.host = (char *)"web-2";
	ask(s, &r, &rep);
	ck_assert_uint_eq(rep.nrows, 0);
	qmsg_reply_free(&rep);
	nng_close(s);
	traceq_side();
}
END_TEST

static Suite *queryd_suite(void)
{
	Suite *s = suite_create("queryd");
	TCase *tc = tcase_create("queryd");

	tcase_add_checked_fixture(tc, start, stop);
	tcase_set_timeout(tc, 120);
	tu_add_tests(tc, TU_TESTS(long_query_does_not_block_three_others,
				  pool_runs_threads_at_once_and_no_more,
				  sync_wait_does_not_block_others,
				  short_sync_times_out_behind_long_one, losses_and_headers,
				  sync_is_cut_to_the_maximum,
				  options_out_of_range_refused,
				  set_ingest_waits_for_its_callers,
				  request_over_the_limit_gets_an_error,
				  request_over_a_mebibyte_gets_an_error,
				  request_under_the_limit_is_answered, tls_port_joins_frames,
				  tls_port_splits_replies,
				  scopes_replaced_for_next_request,
				  unknown_long_event_name, host_ops_need_a_host));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(queryd_suite())
