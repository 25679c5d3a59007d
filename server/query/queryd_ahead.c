/*
 * queryd_ahead.c - pages of a select read ahead (see queryd_ahead.h).
 *
 * A page is found by its request's encoding (qmsg_request_encode(): the
 * same fields in the same order give the same bytes), the asker and the
 * scope rules' generation. A printing client asks for the next page as
 * soon as it has decoded one, and the collector, which reads every page
 * in one go, would otherwise sit idle while the client decodes, and the
 * client while the collector reads.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "server/query/queryd_ahead.h"

enum qahead_state { QA_FREE, QA_READING, QA_READY };

struct qahead_entry {
	enum qahead_state state;
	struct qauth_who who;
	uint64_t gen;
	struct proto_buf key;		/* the request's encoding */
	struct proto_buf page;
	struct qsel_page pg;
	char result[QAHEAD_RESULT_MAX];
	int64_t ready_ms;		/* util_now_ms() when read */
};

struct qahead {
	pthread_mutex_t lock;
	pthread_cond_t ready;		/* an entry left QA_READING */
	unsigned max_reading;
	unsigned reading;
	uint64_t taken, dropped;
	struct qahead_entry e[QAHEAD_MAX];
};

int qahead_new(unsigned workers, struct qahead **out)
{
	struct qahead *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->ready, NULL);
	a->max_reading = workers / 2;
	for (size_t i = 0; i < QAHEAD_MAX; i++) {
		proto_buf_init(&a->e[i].key);
		proto_buf_init(&a->e[i].page);
	}
	*out = a;
	return 0;
}

void qahead_free(struct qahead *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < QAHEAD_MAX; i++) {
		proto_buf_free(&a->e[i].key);
		proto_buf_free(&a->e[i].page);
	}
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->ready);
	free(a);
}

/* Empty @e (under the lock). */
static void entry_clear(struct qahead_entry *e)
{
	proto_buf_free(&e->key);
	proto_buf_free(&e->page);
	e->state = QA_FREE;
}

static bool same_who(const struct qauth_who *a, const struct qauth_who *b)
{
	return a->kind == b->kind && a->uid == b->uid && !strcmp(a->cert, b->cert);
}

/* The entry (not free) for @key, @who, @gen; NULL: none. Under the lock. */
static struct qahead_entry *entry_find(struct qahead *a, const struct proto_buf *key,
				       const struct qauth_who *who, uint64_t gen)
{
	for (size_t i = 0; i < QAHEAD_MAX; i++) {
		struct qahead_entry *e = &a->e[i];

		if (e->state != QA_FREE && e->gen == gen && e->key.len == key->len &&
		    !memcmp(e->key.data, key->data, key->len) && same_who(&e->who, who))
			return e;
	}
	return NULL;
}

/* Drop the pages nobody asked for in time. Under the lock. */
static void entries_expire(struct qahead *a, int64_t now)
{
	for (size_t i = 0; i < QAHEAD_MAX; i++)
		if (a->e[i].state == QA_READY && now - a->e[i].ready_ms > QAHEAD_KEEP_MS) {
			entry_clear(&a->e[i]);
			a->dropped++;
		}
}

struct qahead_entry *qahead_begin(struct qahead *a, const struct qauth_who *who,
				  const struct qmsg_request *next, uint64_t gen)
{
	struct qahead_entry *e = NULL;
	struct proto_buf key;

	proto_buf_init(&key);
	if (qmsg_request_encode(next, &key) < 0) {
		proto_buf_free(&key);
		return NULL;
	}
	pthread_mutex_lock(&a->lock);
	entries_expire(a, util_now_ms());
	if (a->reading < a->max_reading && !entry_find(a, &key, who, gen))
		for (size_t i = 0; !e && i < QAHEAD_MAX; i++)
			if (a->e[i].state == QA_FREE)
				e = &a->e[i];
	if (e) {
		e->state = QA_READING;
		e->who = *who;
		e->gen = gen;
		e->key = key;
		proto_buf_init(&key);
		a->reading++;
	}
	pthread_mutex_unlock(&a->lock);
	proto_buf_free(&key);
	return e;
}

int qahead_request(const struct qahead_entry *e, struct qmsg_request *out)
{
	return qmsg_request_decode(e->key.data, e->key.len, out);	/* set while reading */
}

void qahead_done(struct qahead *a, struct qahead_entry *e, struct proto_buf *page,
		 const struct qsel_page *pg, const char *result)
{
	pthread_mutex_lock(&a->lock);
	a->reading--;
	if (page) {
		e->page = *page;
		proto_buf_init(page);
		e->pg = *pg;
		snprintf(e->result, sizeof(e->result), "%s", result);
		e->state = QA_READY;
		e->ready_ms = util_now_ms();
	} else {
		entry_clear(e);
	}
	pthread_cond_broadcast(&a->ready);
	pthread_mutex_unlock(&a->lock);
}

bool qahead_take(struct qahead *a, const struct qauth_who *who, const struct qmsg_request *r,
		 uint64_t gen, struct proto_buf *out, struct qsel_page *pg, char *result,
		 size_t rlen)
{
	struct qahead_entry *e;
	struct proto_buf key;
	bool found = false;

	proto_buf_init(&key);
	if (qmsg_request_encode(r, &key) < 0) {
		proto_buf_free(&key);
		return false;
	}
	pthread_mutex_lock(&a->lock);
	/* a page being read is waited for: reading it again would take longer */
	while ((e = entry_find(a, &key, who, gen)) && e->state == QA_READING)
		pthread_cond_wait(&a->ready, &a->lock);
	if (e) {
		*out = e->page;
		proto_buf_init(&e->page);
		*pg = e->pg;
		snprintf(result, rlen, "%s", e->result);
		entry_clear(e);
		a->taken++;
		found = true;
	}
	pthread_mutex_unlock(&a->lock);
	proto_buf_free(&key);
	return found;
}

void qahead_stats(struct qahead *a, uint64_t *taken, uint64_t *dropped)
{
	pthread_mutex_lock(&a->lock);
	*taken = a->taken;
	*dropped = a->dropped;
	pthread_mutex_unlock(&a->lock);
}
