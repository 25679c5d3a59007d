/*
 * clickhouse_send.c - the writer's sender thread (clickhouse_send.h): a
 * one-slot hand-off under a mutex and a condition variable. The writer
 * fills the slot (the INSERT's text and the rows, swapped with the
 * sender's spare buffer, so neither side reallocates) and signals; the
 * sender runs it on its own connection, keeps the emptied buffer as the
 * next spare and signals back.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/store/clickhouse_http.h"
#include "server/store/clickhouse_send.h"
#include "server/store/clickhouse_util.h"

struct ch_sender {
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ch_http *http;
	const char *insert;	/* the slot's INSERT (the batch's text: lives as long as it) */
	struct ch_bytes rows;	/* the slot's rows; when idle, the spare buffer */
	bool busy;		/* the slot holds a batch not yet sent */
	bool stop;
	bool resend;		/* Replicated tables: a lost answer asked again (ch_exec_resend()) */
	int ret;		/* the last batch's result, until harvested */
};

static void *ch_sender_main(void *arg)
{
	struct ch_sender *c = arg;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!c->busy && !c->stop)
			pthread_cond_wait(&c->cond, &c->lock);
		if (!c->busy)
			break;
		pthread_mutex_unlock(&c->lock);
		c->ret = ch_exec_resend(c->http, c->resend, c->insert, c->rows.p, c->rows.len);
		pthread_mutex_lock(&c->lock);
		ch_b_reset(&c->rows);
		c->busy = false;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* The sender, started on first use. Return: 0; -ENOMEM; TC_ERR_DB; -errno. */
static int ch_sender_get(struct ch_store *s, struct ch_sender **out)
{
	struct ch_sender *c = s->sender;
	int ret;

	if (c) {
		*out = c;
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return ch_errf(s, -ENOMEM, "out of memory for the sender");
	c->resend = s->replicated;
	ret = ch_http_dup(s->http, &c->http);
	if (ret == 0) {
		pthread_mutex_init(&c->lock, NULL);
		pthread_cond_init(&c->cond, NULL);
		ret = -pthread_create(&c->th, NULL, ch_sender_main, c);
		if (ret < 0) {
			pthread_cond_destroy(&c->cond);
			pthread_mutex_destroy(&c->lock);
		}
	}
	if (ret < 0) {
		ch_http_free(c->http);
		free(c);
		return ch_errf(s, ret, "cannot start the ClickHouse sender (%s)", tc_strerror(ret));
	}
	s->sender = c;
	*out = c;
	return 0;
}

/* Wait for the slot to empty (lock held); its result, said through @s. */
static int ch_sender_harvest(struct ch_store *s, struct ch_sender *c)
{
	int ret;

	while (c->busy)
		pthread_cond_wait(&c->cond, &c->lock);
	ret = c->ret;
	c->ret = 0;
	return ret < 0 ? ch_after_http(s, c->http, ret) : 0;
}

int ch_send_start(struct ch_store *s, struct ch_batch *b)
{
	struct ch_sender *c = NULL;
	struct ch_bytes t;
	int ret;

	if (!b->nrows)
		return 0;
	if (b->rows.oom)
		return -ENOMEM;
	ret = ch_sender_get(s, &c);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&c->lock);
	ret = ch_sender_harvest(s, c);
	if (ret == 0) {
		t = c->rows;
		c->rows = b->rows;
		b->rows = t;
		b->nrows = 0;
		c->insert = b->insert;
		c->busy = true;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

bool ch_send_idle(struct ch_store *s)
{
	struct ch_sender *c = s->sender;
	bool busy;

	if (!c)
		return true;
	pthread_mutex_lock(&c->lock);
	busy = c->busy;
	pthread_mutex_unlock(&c->lock);
	return !busy;
}

int ch_send_wait(struct ch_store *s)
{
	struct ch_sender *c = s->sender;
	int ret;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	ret = ch_sender_harvest(s, c);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

void ch_send_free(struct ch_store *s)
{
	struct ch_sender *c = s->sender;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->th, NULL);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	ch_http_free(c->http);
	ch_b_free(&c->rows);
	free(c);
	s->sender = NULL;
}
