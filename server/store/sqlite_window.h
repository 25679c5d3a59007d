/*
 * sqlite_window.h - the rows of one window of a limited select, kept and
 * sorted by (ts, rowid) here instead of by SQLite (sqlite_window.c).
 */
#ifndef SERVER_STORE_SQLITE_WINDOW_H
#define SERVER_STORE_SQLITE_WINDOW_H

#include <stddef.h>

#include <sqlite3.h>

#include "server/store/sqlite_names.h"

/*
 * sq_win_add() the current row of @st (columns as sq_row() reads them;
 * -E2BIG when the window would hold more than its cap: have SQLite sort
 * it instead), sq_win_sort(), sq_win_row() the i-th into @rb and @r,
 * sq_win_reset() for the next window, sq_win_free().
 */
struct sq_win {
	struct sq_wrow *rows;
	struct sq_wkey *keys, *tmp;	/* keys[i] names the i-th row in order */
	size_t *runs;
	size_t n, cap;
	unsigned char *arena;
	size_t used, size;
};
/* What a window keeps at most, values and their bytes (32 MiB; tests lower it). */
extern size_t sq_win_cap;
int sq_win_add(struct sq_win *w, sqlite3_stmt *st, const struct store_schema *sc);
void sq_win_sort(struct sq_win *w);
void sq_win_row(const struct sq_win *w, size_t i, const struct store_schema *sc,
		struct sq_rowbuf *rb, struct store_row *r);
void sq_win_reset(struct sq_win *w);
void sq_win_free(struct sq_win *w);

#endif
