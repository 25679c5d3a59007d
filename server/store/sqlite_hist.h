/*
 * sqlite_hist.h - the SQLite backend's histograms (store_hist(), traceq
 * --hist; sqlite_hist.c).
 */
#ifndef SERVER_STORE_SQLITE_HIST_H
#define SERVER_STORE_SQLITE_HIST_H

#include "server/store/sqlite_int.h"

/*
 * sq_hist_grouped - the histogram by the grouped statement alone, which
 * the hist op runs when the keys do not fit in memory (tests compare).
 */
int sq_hist_grouped(struct sq_store *s, const struct store_query *q, const struct store_hist *h,
		    int (*fn)(void *ctx, const struct store_hist_entry *e), void *ctx,
		    struct store_hist_totals *tot);

/* sq_hist_ops - this part's op (hist) into the reader's table (sqlite.c). */
void sq_hist_ops(struct store_reader_ops *r);

#endif
