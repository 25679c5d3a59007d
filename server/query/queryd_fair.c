/*
 * queryd_fair.c - the query pool's run queue, fair between identities
 * (see queryd_fair.h).
 *
 * Round-robin over per-identity FIFO queues (as a fair-queueing scheduler
 * does with one quantum per request), skipping identities at their
 * worker cap. The identities are a short list: one per identity with a
 * request in flight, at most the endpoint's slots plus its TLS
 * connections; each pop walks it once.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "server/query/queryd_fair.h"

struct qfair_ident {
	struct qauth_who who;
	struct qfair_item *head, **tail;	/* ready to run, in arrival order */
	unsigned held;			/* in flight: entered, not left */
	unsigned running;		/* workers it holds */
	struct qfair_ident *next;
};

static bool same_who(const struct qauth_who *a, const struct qauth_who *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == QAUTH_UID)
		return a->uid == b->uid;
	if (a->kind == QAUTH_CERT)
		return !strcmp(a->cert, b->cert);
	return true;		/* tcp on loopback: one "nobody" */
}

/* Free @id once nothing of it is left: no request in flight, no worker. */
static void ident_gc(struct qfair *f, struct qfair_ident *id)
{
	struct qfair_ident **pp;

	if (id->held || id->running)
		return;
	for (pp = &f->idents; *pp != id; pp = &(*pp)->next)
		;
	*pp = id->next;
	if (f->last == id)
		f->last = NULL;
	free(id);
}

void qfair_init(struct qfair *f, unsigned workers)
{
	unsigned spare = workers / 4 ? workers / 4 : 1;

	memset(f, 0, sizeof(*f));
	f->run_max = workers > spare ? workers - spare : 1;
}

void qfair_free(struct qfair *f)
{
	struct qfair_ident *id;

	while ((id = f->idents)) {
		f->idents = id->next;
		free(id);
	}
	f->last = NULL;
}

int qfair_enter(struct qfair *f, const struct qauth_who *who, struct qfair_item *it)
{
	struct qfair_ident *id;

	for (id = f->idents; id && !same_who(&id->who, who); id = id->next)
		;
	if (id && id->held >= QFAIR_HELD_MAX)
		return -EBUSY;
	if (!id) {
		id = calloc(1, sizeof(*id));
		if (!id)
			return -ENOMEM;
		id->who = *who;
		id->tail = &id->head;
		id->next = f->idents;
		f->idents = id;
	}
	id->held++;
	it->id = id;
	it->next = NULL;
	return 0;
}

void qfair_leave(struct qfair *f, struct qfair_item *it)
{
	struct qfair_ident *id = it->id;

	if (!id)
		return;
	it->id = NULL;
	id->held--;
	ident_gc(f, id);
}

void qfair_push(struct qfair *f, struct qfair_item *it)
{
	struct qfair_ident *id = it->id;

	it->next = NULL;
	*id->tail = it;
	id->tail = &it->next;
	f->queued++;
}

struct qfair_item *qfair_pop(struct qfair *f, struct qfair_ident **out)
{
	struct qfair_ident *start = f->last && f->last->next ? f->last->next : f->idents;
	struct qfair_ident *id = start;
	struct qfair_item *it;

	if (!f->queued)
		return NULL;
	do {
		if (id->head && id->running < f->run_max) {
			it = id->head;
			id->head = it->next;
			if (!id->head)
				id->tail = &id->head;
			it->next = NULL;
			id->running++;
			f->queued--;
			f->last = id;
			*out = id;
			return it;
		}
		id = id->next ? id->next : f->idents;
	} while (id != start);
	return NULL;
}

void qfair_done(struct qfair *f, struct qfair_ident *id)
{
	id->running--;
	ident_gc(f, id);
}
