/*
 * test_loopcall.c - calls run on the event loop for other threads
 * (server/loopcall.c): each runs on the loop's thread and its caller gets
 * its result; a call the run function keeps is ended later by the loop;
 * a stopped queue ends the calls that did not run and refuses new ones
 * (-ESHUTDOWN, ->stopped), but leaves a kept call to its owner.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include <event2/event.h>

#include "server/loopcall.h"
#include "tests/testutil.h"

#define CALLERS		3
#define CALLS_EACH	50

/* The run function's state: what ran, on which thread, a call kept. */
struct runner {
	struct loopcall_queue *q;
	pthread_t loop;
	atomic_int ran;
	atomic_bool off_loop;		/* a call ran on another thread */
	bool keep;			/* keep calls: end them later */
	struct loopcall *kept;
};

/* Run: a call's arg is an int; the result is twice it. */
static void run(void *arg, struct loopcall *c)
{
	struct runner *r = arg;

	if (!pthread_equal(pthread_self(), r->loop))
		r->off_loop = true;
	r->ran++;
	if (r->keep) {
		r->kept = c;
		return;
	}
	loopcall_done(r->q, c, 2 * *(int *)c->arg);
}

static void runner_init(struct runner *r, struct event_base **base)
{
	*r = (struct runner){ .loop = pthread_self() };
	ck_assert_ptr_nonnull(*base = event_base_new());
	TU_OK(loopcall_new(*base, "test", run, r, &r->q));
}

static void runner_free(struct runner *r, struct event_base *base)
{
	loopcall_free(r->q);
	event_base_free(base);
}

/* A caller: CALLS_EACH calls, each result checked (counted in ->ok). */
struct caller {
	struct runner *r;
	int first;
	int ok;
	int ret;			/* one call's result */
	bool stopped;
	atomic_bool started;
};

static void *caller_many(void *arg)
{
	struct caller *c = arg;

	for (int i = 0; i < CALLS_EACH; i++) {
		int v = c->first + i;
		struct loopcall lc = { .arg = &v };

		if (loopcall_call(c->r->q, &lc) == 2 * v && !lc.stopped)
			c->ok++;
	}
	return NULL;
}

static void *caller_one(void *arg)
{
	struct caller *c = arg;
	int v = 21;
	struct loopcall lc = { .arg = &v };

	c->started = true;
	c->ret = loopcall_call(c->r->q, &lc);
	c->stopped = lc.stopped;
	return NULL;
}

START_TEST(test_calls_run_on_the_loop)
{
	struct event_base *base;
	struct runner r;
	struct caller c[CALLERS];
	pthread_t t[CALLERS];

	runner_init(&r, &base);
	for (int i = 0; i < CALLERS; i++) {
		c[i] = (struct caller){ .r = &r, .first = 1000 * i };
		TU_EQ(pthread_create(&t[i], NULL, caller_many, &c[i]), 0);
	}
	while (r.ran < CALLERS * CALLS_EACH)
		TU_EQ(event_base_loop(base, EVLOOP_ONCE), 0);
	for (int i = 0; i < CALLERS; i++) {
		TU_EQ(pthread_join(t[i], NULL), 0);
		TU_EQ(c[i].ok, CALLS_EACH);
	}
	ck_assert(!r.off_loop);
	runner_free(&r, base);
}
END_TEST

START_TEST(test_kept_call_ends_later)
{
	struct event_base *base;
	struct runner r;
	struct caller c;
	pthread_t t;

	runner_init(&r, &base);
	r.keep = true;
	c = (struct caller){ .r = &r };
	TU_EQ(pthread_create(&t, NULL, caller_one, &c), 0);
	while (!r.kept)
		TU_EQ(event_base_loop(base, EVLOOP_ONCE), 0);
	loopcall_stop(r.q);		/* a kept call is not the queue's to end */
	ck_assert(!r.kept->done);
	loopcall_done(r.q, r.kept, 7);
	TU_EQ(pthread_join(t, NULL), 0);
	TU_EQ(c.ret, 7);
	ck_assert(!c.stopped);
	runner_free(&r, base);
}
END_TEST

START_TEST(test_stop_ends_and_refuses)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	struct event_base *base;
	struct runner r;
	struct caller c;
	pthread_t t;

	runner_init(&r, &base);
	c = (struct caller){ .r = &r };
	TU_EQ(pthread_create(&t, NULL, caller_one, &c), 0);
	while (!c.started)
		nanosleep(&pause, NULL);
	nanosleep(&pause, NULL);	/* most likely queued by now; either way the same */
	loopcall_stop(r.q);
	TU_EQ(pthread_join(t, NULL), 0);
	TU_ERR(c.ret, -ESHUTDOWN);
	ck_assert(c.stopped);
	/* and later calls are refused at once, the loop never running */
	c = (struct caller){ .r = &r };
	caller_one(&c);
	TU_ERR(c.ret, -ESHUTDOWN);
	ck_assert(c.stopped);
	TU_EQ(r.ran, 0);
	runner_free(&r, base);
}
END_TEST

static Suite *loopcall_suite(void)
{
	Suite *s = suite_create("loopcall");
	TCase *tc = tcase_create("loopcall");

	tu_add_tests(tc, TU_TESTS(test_calls_run_on_the_loop, test_kept_call_ends_later,
				  test_stop_ends_and_refuses));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(loopcall_suite())
