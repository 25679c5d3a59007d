/*
 * loopcall.c - calls run on the event loop's thread for other threads
 * (see loopcall.h).
 *
 * A queue of the callers' calls (head, tail) under a mutex, an eventfd
 * that wakes the loop when one is queued, a condition variable broadcast
 * when one is done (each caller waits for its own ->done), and a flag
 * that refuses calls once the queue stops.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/eventfd.h>

#include "common/log.h"
#include "server/loopcall.h"

struct loopcall_queue {
	const char *name;		/* the log lines' prefix */
	loopcall_fn *run;
	void *arg;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct loopcall *head, **tail;	/* queued for the loop */
	bool stopping;
	int efd;
	struct event *ev;
};

void loopcall_done(struct loopcall_queue *q, struct loopcall *c, int ret)
{
	pthread_mutex_lock(&q->lock);
	c->ret = ret;
	c->done = true;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

/*
 * The calls queued so far, in order, taken off the queue; with @stop,
 * callers queue none from now on.
 */
static struct loopcall *calls_take(struct loopcall_queue *q, bool stop)
{
	struct loopcall *list;

	pthread_mutex_lock(&q->lock);
	if (stop)
		q->stopping = true;
	list = q->head;
	q->head = NULL;
	q->tail = &q->head;
	pthread_mutex_unlock(&q->lock);
	return list;
}

/* The eventfd: run what callers queued. */
static void wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loopcall_queue *q = arg;
	struct loopcall *list, *c;
	uint64_t v;

	(void)what;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_msg(LOGL_WARN, q->name, "eventfd: %s", strerror(errno));
	list = calls_take(q, false);
	while ((c = list)) {
		list = c->next;
		q->run(q->arg, c);
	}
}

int loopcall_call(struct loopcall_queue *q, struct loopcall *c)
{
	uint64_t one = 1;

	c->done = c->stopped = false;
	c->next = NULL;
	pthread_mutex_lock(&q->lock);
	if (q->stopping) {
		pthread_mutex_unlock(&q->lock);
		c->stopped = true;
		return c->ret = -ESHUTDOWN;
	}
	*q->tail = c;
	q->tail = &c->next;
	if (write(q->efd, &one, sizeof(one)) < 0)
		log_msg(LOGL_WARN, q->name, "eventfd: %s", strerror(errno));
	while (!c->done)
		pthread_cond_wait(&q->cond, &q->lock);
	pthread_mutex_unlock(&q->lock);
	return c->ret;
}

int loopcall_new(struct event_base *base, const char *name, loopcall_fn *run, void *arg,
		 struct loopcall_queue **out)
{
	struct loopcall_queue *q = calloc(1, sizeof(*q));
	int ret = -ENOMEM;

	if (!q)
		return -ENOMEM;
	*q = (struct loopcall_queue){ .name = name, .run = run, .arg = arg, .efd = -1 };
	q->tail = &q->head;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->efd < 0) {
		ret = -errno;
		goto fail;
	}
	q->ev = event_new(base, q->efd, EV_READ | EV_PERSIST, wake_cb, q);
	if (!q->ev || event_add(q->ev, NULL) < 0)
		goto fail;
	*out = q;
	return 0;
fail:
	loopcall_free(q);
	return ret;
}

void loopcall_stop(struct loopcall_queue *q)
{
	struct loopcall *list, *c;

	if (!q)
		return;
	list = calls_take(q, true);
	while ((c = list)) {
		list = c->next;
		c->stopped = true;
		loopcall_done(q, c, -ESHUTDOWN);
	}
}

void loopcall_free(struct loopcall_queue *q)
{
	if (!q)
		return;
	if (q->ev)
		event_free(q->ev);
	if (q->efd >= 0)
		close(q->efd);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
	free(q);
}
