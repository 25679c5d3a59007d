/*
 * sqlite_import.c - what an import (traceq --import) asks the store before
 * it begins: whether its host name is a live host's (an agent stored it),
 * and whether its file is stored already. An imported file's host row has
 * machine_id "import:DIGEST" (the file's SHA-256), which marks it imported
 * and names the file; agents send /etc/machine-id, which has no colon.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_import.h"
#include "server/store/sqlite_util.h"

static int sq_import_check(struct store_reader *r, const char *name, const char *machine_id,
			   bool *live, bool *stored)
{
	struct sq_store *s = sq_reader_of(r);
	sqlite3_stmt *st;
	int ret = sq_reader_enter(s) ?: sq_prepare(s,
		"SELECT (SELECT count(*) FROM hosts WHERE name = ?1"
		" AND machine_id NOT LIKE 'import:%'),"
		" (SELECT count(*) FROM hosts WHERE machine_id = ?2)", &st);

	if (ret < 0)
		return ret;
	sq_bind_text(st, 1, name);
	sq_bind_text(st, 2, machine_id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		*live = sqlite3_column_int64(st, 0) > 0;
		*stored = sqlite3_column_int64(st, 1) > 0;
	} else {
		ret = sq_err(s, TC_ERR_DB, "hosts");
	}
	sqlite3_finalize(st);
	return ret;
}

void sq_import_ops(struct store_reader_ops *r)
{
	r->import_check = sq_import_check;
}
