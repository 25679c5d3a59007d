/*
 * dedup.c - per agent session high-water marks of stored pages (see
 * dedup.h): an in-memory list shared by the connections of a session,
 * backed by the store's stream_marks table.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/ingest/dedup.h"

struct dedup {
	struct dedup *next;
	unsigned refs;
	uint64_t host_id;
	char *boot_id;
	uint64_t session;
	uint32_t nstreams;
	uint64_t *high;		/* per stream */
	bool *dirty;		/* per stream: high not written yet */
	uint32_t *dirty_list;	/* those streams, ndirty of them: a flush */
	uint32_t ndirty;	/* visits the streams that moved, not all */
};

static struct dedup *dedup_find(struct dedup *list, uint64_t host_id,
				const char *boot_id, uint64_t session)
{
	for (; list; list = list->next)
		if (list->host_id == host_id && list->session == session &&
		    strcmp(list->boot_id, boot_id) == 0)
			return list;
	return NULL;
}

static void dedup_free(struct dedup *d)
{
	free(d->boot_id);
	free(d->high);
	free(d->dirty);
	free(d->dirty_list);
	free(d);
}

static int dedup_load(struct store_writer *st, uint64_t host_id, const char *boot_id,
		      uint64_t session, uint32_t nstreams, struct dedup **out)
{
	struct dedup *d = calloc(1, sizeof(*d));
	int ret = -ENOMEM;

	if (!d)
		return -ENOMEM;
	d->boot_id = strdup(boot_id);
	d->high = calloc(nstreams, sizeof(*d->high));
	d->dirty = calloc(nstreams, sizeof(*d->dirty));
	d->dirty_list = calloc(nstreams, sizeof(*d->dirty_list));
	if (!d->boot_id || !d->high || !d->dirty || !d->dirty_list)
		goto out;
	ret = store_stream_marks(st, host_id, boot_id, session, d->high,
				 nstreams);
out:
	if (ret < 0) {
		dedup_free(d);
		return ret;
	}
	d->host_id = host_id;
	d->session = session;
	d->nstreams = nstreams;
	*out = d;
	return 0;
}

int dedup_get(struct dedup **list, struct store_writer *st, uint64_t host_id,
	      const char *boot_id, uint64_t session, uint32_t nstreams,
	      struct dedup **out)
{
	struct dedup *d = dedup_find(*list, host_id, boot_id, session);
	int ret;

	if (d && d->nstreams != nstreams)
		return TC_ERR_MSG_MALFORMED;
	if (!d) {
		ret = dedup_load(st, host_id, boot_id, session, nstreams, &d);
		if (ret < 0)
			return ret;
		d->next = *list;
		*list = d;
	}
	d->refs++;
	*out = d;
	return 0;
}

void dedup_put(struct dedup **list, struct dedup *d)
{
	struct dedup **pp;

	if (!d || --d->refs)
		return;
	for (pp = list; *pp; pp = &(*pp)->next) {
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	}
	dedup_free(d);
}

bool dedup_seen(const struct dedup *d, uint32_t stream, uint64_t seq)
{
	return stream < d->nstreams && seq <= d->high[stream];
}

int dedup_stored(struct dedup *d, uint32_t stream, uint64_t seq)
{
	if (stream >= d->nstreams)
		return -EINVAL;
	if (seq > d->high[stream]) {
		d->high[stream] = seq;
		if (!d->dirty[stream])
			d->dirty_list[d->ndirty++] = stream;
		d->dirty[stream] = true;
	}
	return 0;
}

int dedup_flush(struct dedup *d, struct store_writer *st)
{
	int ret = 0;

	uint32_t i, n = 0;

	if (!d)
		return 0;
	for (i = 0; i < d->ndirty; i++) {
		uint32_t stream = d->dirty_list[i];

		if (ret == 0)
			ret = store_stream_mark(st, d->host_id, d->boot_id, d->session, stream,
						d->high[stream]);
		if (ret < 0)
			d->dirty_list[n++] = stream;	/* written at the next flush */
		else
			d->dirty[stream] = false;
	}
	d->ndirty = n;
	return ret;
}

int dedup_reload(struct dedup *list, struct store_writer *st)
{
	int ret = 0;

	for (struct dedup *d = list; d && ret == 0; d = d->next) {
		ret = store_stream_marks(st, d->host_id, d->boot_id, d->session,
					 d->high, d->nstreams);
		for (uint32_t i = 0; i < d->ndirty; i++)
			d->dirty[d->dirty_list[i]] = false;
		d->ndirty = 0;
	}
	return ret;
}

uint64_t dedup_high(const struct dedup *d, uint32_t stream)
{
	return stream < d->nstreams ? d->high[stream] : 0;
}
