/*
 * livehosts.c - the hosts with an agent connected now (livehosts.h): an
 * array of (host id, connections), grown as needed, searched linearly. A
 * collector has at most a few thousand agents connected, and --hosts asks
 * once per host row, so a hash would buy nothing measurable.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/util.h"
#include "server/conn/livehosts.h"

struct livehost {
	uint64_t id;
	uint32_t conns;
};

struct livehosts {
	pthread_mutex_t lock;
	struct livehost *v;	/* entries with conns > 0 */
	size_t n, cap;
};

int livehosts_new(struct livehosts **out)
{
	struct livehosts *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	pthread_mutex_init(&l->lock, NULL);
	*out = l;
	return 0;
}

void livehosts_free(struct livehosts *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->lock);
	free(l->v);
	free(l);
}

/* The index of @id in @l, or l->n. Under l->lock. */
static size_t find(const struct livehosts *l, uint64_t id)
{
	size_t i;

	for (i = 0; i < l->n && l->v[i].id != id; i++)
		;
	return i;
}

int livehosts_add(struct livehosts *l, uint64_t host_id)
{
	int ret = 0;
	size_t i;

	if (!l || !host_id)
		return 0;
	pthread_mutex_lock(&l->lock);
	i = find(l, host_id);
	if (i == l->n) {
		struct livehost *v = util_grow(l->v, &l->cap, l->n, sizeof(*v), 16);

		if (!v) {
			ret = -ENOMEM;
			goto out;
		}
		l->v = v;
		l->v[l->n++] = (struct livehost){ host_id, 0 };
	}
	l->v[i].conns++;
out:
	pthread_mutex_unlock(&l->lock);
	return ret;
}

void livehosts_del(struct livehosts *l, uint64_t host_id)
{
	size_t i;

	if (!l || !host_id)
		return;
	pthread_mutex_lock(&l->lock);
	i = find(l, host_id);
	if (i < l->n && --l->v[i].conns == 0)
		l->v[i] = l->v[--l->n];
	pthread_mutex_unlock(&l->lock);
}

size_t livehosts_ids(struct livehosts *l, uint64_t *ids, size_t max)
{
	size_t n = 0;

	if (!l)
		return 0;
	pthread_mutex_lock(&l->lock);
	for (; n < l->n && n < max; n++)
		ids[n] = l->v[n].id;
	pthread_mutex_unlock(&l->lock);
	return n;
}

bool livehosts_connected(struct livehosts *l, uint64_t host_id)
{
	bool yes;

	if (!l)
		return false;
	pthread_mutex_lock(&l->lock);
	yes = find(l, host_id) < l->n;
	pthread_mutex_unlock(&l->lock);
	return yes;
}
