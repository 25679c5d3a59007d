/*
 * queryd_boots.c - ops 9 (losses) and 10 (headers) of the query endpoint
 * (queryd_boots.h): table replies built from the store's losses, boots
 * and boot formats (server/store/store.h), a bounded page at a time.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/query/queryd_boots.h"

/* At most this much format text in one headers reply (QMSG_MAX_WIRE is 4 MiB). */
#define QBOOTS_TEXT_BYTES	(2u << 20)
/* At most this many program items (the latest boot's agent runs' groups). */
#define QBOOTS_MAX_PROGRAMS	1024

/* ---- losses ---- */

struct loss_rows {
	struct qmsg_writer *w;
	struct qboots_page *pg;
};

static int loss_row(void *ctx, const struct store_loss_row *x)
{
	struct loss_rows *lr = ctx;

	qmsg_put_str(lr->w, x->host, strlen(x->host));
	qmsg_put_uint(lr->w, x->l.cpu);
	qmsg_put_int(lr->w, x->l.ts);
	qmsg_put_uint(lr->w, x->l.trace_ts);
	if (x->l.count >= 0)
		qmsg_put_uint(lr->w, (uint64_t)x->l.count);
	else
		qmsg_put_nil(lr->w);
	qmsg_put_str(lr->w, x->boot_id, strlen(x->boot_id));
	lr->pg->last_ts = x->l.ts;
	lr->pg->last_id = (uint64_t)x->id;
	return 0;
}

int qboots_losses(struct store_reader *st, const struct qmsg_request *r,
		  const struct store_query *hosts, struct qmsg_writer **w,
		  struct qboots_page *pg)
{
	static const char *const cols[QMSG_LOSSES_COLS] = {
		"host", "cpu", "ts", "trace_ts", "count", "boot_id",
	};
	uint32_t max = r->limit ? r->limit : QMSG_MAX_ROWS;
	struct store_window win = {
		.from_ts = r->from_ts ? r->from_ts : INT64_MIN,
		.to_ts = r->to_ts ? r->to_ts : INT64_MAX,
	};
	struct store_query q = *hosts;
	struct loss_rows lr = { .pg = pg };
	int ret;

	/* from_end/to_end are not used (PROTOCOL.md): their offsets are no times */
	q.win = (r->from_ts || r->to_ts) && !r->from_end && !r->to_end ? &win : NULL;
	q.cpus = r->cpus;
	q.ncpus = r->ncpus;
	q.after_ts = r->after_ts;
	q.after_rowid = r->after_id;
	q.reverse = r->reverse;
	q.limit = max;
	*pg = (struct qboots_page){ 0 };
	ret = qmsg_reply_begin(&lr.w, NULL, QMSG_LOSSES_COLS, cols);
	if (ret == 0)
		ret = store_losses(st, &q, loss_row, &lr);
	if (ret < 0) {
		qmsg_writer_free(lr.w);
		return ret;
	}
	pg->more = qmsg_reply_rows(lr.w) == max;
	*w = lr.w;
	return 0;
}

/* ---- headers ---- */

struct head_rows {
	struct qmsg_writer *w;
	char *boot_id;		/* the boot described (a copy) */
	size_t bytes;		/* of text put */
	uint32_t nformats;
	int64_t last_id;
	bool full;		/* stopped at QBOOTS_TEXT_BYTES */
};

static void put_item_str(struct qmsg_writer *w, const char *item, const char *v, size_t len)
{
	qmsg_put_str(w, item, strlen(item));
	qmsg_put_nil(w);
	qmsg_put_nil(w);
	qmsg_put_str(w, v, len);
}

static void put_item_uint(struct qmsg_writer *w, const char *item, uint64_t v)
{
	qmsg_put_str(w, item, strlen(item));
	qmsg_put_nil(w);
	qmsg_put_nil(w);
	qmsg_put_uint(w, v);
}

/* The boot's items (the first page only); its id kept for its formats. */
static int boot_items(void *ctx, const struct store_boot *b)
{
	struct head_rows *h = ctx;

	h->boot_id = strdup(b->boot_id);
	if (!h->boot_id)
		return -ENOMEM;
	put_item_str(h->w, "boot_id", b->boot_id, strlen(b->boot_id));
	if (b->kernel)
		put_item_str(h->w, "kernel", b->kernel, strlen(b->kernel));
	if (b->trace_clock)
		put_item_str(h->w, "trace_clock", b->trace_clock, strlen(b->trace_clock));
	if (b->long_size) {
		put_item_uint(h->w, "long_size", b->long_size);
		put_item_uint(h->w, "big_endian", b->big_endian);
	}
	if (b->page_size)
		put_item_uint(h->w, "page_size", b->page_size);
	if (b->header_page && b->header_page_len <= QMSG_MAX_FORMAT)
		put_item_str(h->w, "header_page", b->header_page, b->header_page_len);
	if (b->header_event && b->header_event_len <= QMSG_MAX_FORMAT)
		put_item_str(h->w, "header_event", b->header_event, b->header_event_len);
	return 0;
}

/*
 * A program's item (the first page only): value "FIRST_STREAM NSTREAMS
 * SINCE_NS", where its ring's streams were (PROTOCOL.md, op 10).
 */
static int program_item(void *ctx, const struct store_program *p)
{
	struct head_rows *h = ctx;
	char v[64];
	int n = snprintf(v, sizeof(v), "%" PRIu32 " %" PRIu32 " %" PRId64, p->first_stream,
			 p->nstreams, p->since_ns);

	put_item_str(h->w, "program", v, (size_t)n);
	return 0;
}

/* Only the boot's id (a later page: the items went with the first). */
static int boot_id_only(void *ctx, const struct store_boot *b)
{
	struct head_rows *h = ctx;

	h->boot_id = strdup(b->boot_id);
	return h->boot_id ? 0 : -ENOMEM;
}

static int format_row(void *ctx, int64_t id, const char *system, const char *name,
		      const char *text)
{
	struct head_rows *h = ctx;
	size_t len = strlen(text);

	if (len > QMSG_MAX_FORMAT)
		len = 0;	/* over the protocol's cap: sent empty, never cut */
	if (h->nformats && h->bytes + len > QBOOTS_TEXT_BYTES) {
		h->full = true;
		return 1;
	}
	h->bytes += len + strlen(system) + strlen(name) + 16;
	qmsg_put_str(h->w, "format", 6);
	qmsg_put_str(h->w, system, strlen(system));
	qmsg_put_str(h->w, name, strlen(name));
	qmsg_put_str(h->w, text, len);
	h->nformats++;
	h->last_id = id;
	return 0;
}

int qboots_headers(struct store_reader *st, const struct qmsg_request *r,
		   const struct store_scope *scope, struct qmsg_writer **w,
		   struct qboots_page *pg)
{
	static const char *const cols[QMSG_HEADERS_COLS] = { "item", "system", "name", "value" };
	uint32_t max = r->limit ? r->limit : QMSG_MAX_ROWS;
	struct head_rows h = { 0 };
	uint64_t host_id = 0;
	int ret, found;

	*pg = (struct qboots_page){ 0 };
	found = store_host_find(st, r->host, scope, &host_id);
	if (found < 0 && found != -ENOENT)
		return found;
	ret = qmsg_reply_begin(&h.w, NULL, QMSG_HEADERS_COLS, cols);
	if (ret == 0 && found == 0)
		ret = store_boot_get(st, host_id, r->to_ts ? r->to_ts : INT64_MAX,
				     r->after_id ? boot_id_only : boot_items, &h);
	if (ret == 0 && h.boot_id && !r->after_id)
		ret = store_boot_programs(st, host_id, h.boot_id, QBOOTS_MAX_PROGRAMS,
					  program_item, &h);
	if (ret == 0 && h.boot_id)
		ret = store_boot_formats(st, host_id, h.boot_id, (int64_t)r->after_id, max,
					 format_row, &h);
	if (ret > 0 || ret == -ENOENT)
		ret = 0;	/* full; or no such host: no more rows */
	free(h.boot_id);
	if (ret < 0) {
		qmsg_writer_free(h.w);
		return ret;
	}
	pg->more = h.full || (h.nformats && h.nformats == max);
	pg->last_id = (uint64_t)h.last_id;
	*w = h.w;
	return 0;
}
