/*
 * queryd_ahead.c - pages of a select read ahead (see queryd_ahead.h).
 *
 * A page is found by its request's encoding (qmsg_request_encode(): the
 * same fields in the same order give the same bytes), the asker and the
 * scope rules' generation. A printing client asks for the next page as
 * soon as it has decoded one, and the collector, which reads every page
 * in one go, would otherwise sit idle while the client decodes, and the
 * client while the collector reads.
 *
 * Beside the pages, a select's state after a page (queryd.c parks its
 * struct qsel: its cursors and the rows it read but did not send) is kept
 * under the request of the next page, found the same way, so that page
 * goes on from it instead of reading those rows again (qahead_park()).
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

/* A select's state kept for its next page. */
struct qahead_parked {
	void *c;			/* NULL: a free place */
	void (*free)(void *c);
	struct qauth_who who;
	uint64_t gen;
	struct proto_buf key;		/* the next page's request */
	int64_t at_ms;
};

struct qahead {
	pthread_mutex_t lock;
	pthread_cond_t ready;		/* an entry left QA_READING */
	unsigned max_reading;
	unsigned reading;
	uint64_t taken, dropped;
	struct qahead_entry e[QAHEAD_MAX];
	struct qahead_parked parked[QAHEAD_PARK_MAX];
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
	for (size_t i = 0; i < QAHEAD_PARK_MAX; i++)
		if (a->parked[i].c) {
			a->parked[i].free(a->parked[i].c);
			proto_buf_free(&a->parked[i].key);
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

/* @r's encoding, what an entry is found by, into @key (empty after a failure). */
static int key_of(const struct qmsg_request *r, struct proto_buf *key)
{
	proto_buf_init(key);
	if (qmsg_request_encode(r, key) < 0) {
		proto_buf_free(key);
		return -ENOMEM;
	}
	return 0;
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

	if (key_of(next, &key) < 0)
		return NULL;
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

	if (key_of(r, &key) < 0)
		return false;
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

/* Whether parked place @p holds @key for @who under rules @gen. */
static bool parked_is(const struct qahead_parked *p, const struct proto_buf *key,
		      const struct qauth_who *who, uint64_t gen)
{
	return p->c && p->gen == gen && p->key.len == key->len &&
	       !memcmp(p->key.data, key->data, key->len) && same_who(&p->who, who);
}

/*
 * Empty parked place @p; its state to *@c (NULL: freed), its free
 * function to *@fn. Under the lock.
 */
static void parked_clear(struct qahead_parked *p, void **c, void (**fn)(void *))
{
	if (c) {
		*c = p->c;
		*fn = p->free;
	} else if (p->c) {
		p->free(p->c);
	}
	p->c = NULL;
	proto_buf_free(&p->key);
}

void qahead_park(struct qahead *a, const struct qauth_who *who, const struct qmsg_request *next,
		 uint64_t gen, void *c, void (*free_fn)(void *c))
{
	struct qahead_parked *p = NULL;
	void (*old_free)(void *) = NULL;
	void *old = NULL;
	struct proto_buf key;
	int64_t now = util_now_ms();

	if (key_of(next, &key) < 0) {
		free_fn(c);
		return;
	}
	pthread_mutex_lock(&a->lock);
	/* a free place, else the oldest: the state of an answer nobody goes on with */
	for (size_t i = 0; i < QAHEAD_PARK_MAX; i++) {
		struct qahead_parked *q = &a->parked[i];

		if (q->c && now - q->at_ms > QAHEAD_PARK_MS)
			parked_clear(q, NULL, NULL);
		if (!p || (p->c && (!q->c || q->at_ms < p->at_ms)))
			p = q;
	}
	parked_clear(p, &old, &old_free);
	*p = (struct qahead_parked){ .c = c, .free = free_fn, .who = *who, .gen = gen, .key = key,
				     .at_ms = now };
	pthread_mutex_unlock(&a->lock);
	if (old)	/* outside the lock */
		old_free(old);
}

void *qahead_unpark(struct qahead *a, const struct qauth_who *who, const struct qmsg_request *r,
		    uint64_t gen)
{
	void (*fn)(void *);
	void *c = NULL;
	struct proto_buf key;

	if (key_of(r, &key) < 0)
		return NULL;
	pthread_mutex_lock(&a->lock);
	for (size_t i = 0; !c && i < QAHEAD_PARK_MAX; i++)
		if (parked_is(&a->parked[i], &key, who, gen) &&
		    util_now_ms() - a->parked[i].at_ms <= QAHEAD_PARK_MS)
			parked_clear(&a->parked[i], &c, &fn);
	pthread_mutex_unlock(&a->lock);
	proto_buf_free(&key);
	return c;
}
