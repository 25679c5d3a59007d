/*
 * store_events.h - the decoder's events stored as the ingest path stores
 * them (server/ingest/sink.c): a type's fields described for store_type(), an
 * event's fields decoded for store_insert(). Static functions, for the
 * store's tests (test_store, test_qsel).
 */
#ifndef TESTS_STORE_EVENTS_H
#define TESTS_STORE_EVENTS_H

#include <errno.h>
#include <stdlib.h>

#include "server/ingest/decode.h"
#include "server/store/store.h"

/* store_type() of decoder type @t, whose format is @text. */
static inline int ev_type(struct store_writer *w, const struct decode_type *t, const char *text,
			  const struct store_origin *o, struct store_type **out)
{
	struct store_field *f = calloc(t->nfields + 1, sizeof(*f));
	struct store_type_desc d = { t->system, t->name, text, t->nfields, f };
	int ret;

	if (!f)
		return -ENOMEM;
	for (unsigned i = 0; i < t->nfields; i++)
		f[i] = (struct store_field){ t->fields[i].name, t->fields[i].kind,
					     t->fields[i].size, t->fields[i].type };
	ret = store_type(w, &d, o, out);
	free(f);
	return ret;
}

static inline int ev_value(const void *src, unsigned i, struct store_value *out)
{
	return decode_field_value(src, i, out);
}

/* store_insert() of @ev, of host @host_id at wall-clock @ts, into @t. */
static inline int ev_insert(struct store_writer *w, struct store_type *t, uint64_t host_id,
			    const struct decode_event *ev, int64_t ts)
{
	struct store_event row = { host_id, ev->cpu, ev->ts, ts, ev->type->nfields, ev_value, ev };

	return store_insert(w, t, &row);
}

#endif
