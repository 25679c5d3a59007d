/*
 * clickhouse_version.h - what the server a writer connects to could do
 * better than Debian's 18.16, whose subset the backend writes: detected
 * at connect from SELECT version(), and said once in the log
 * (clickhouse.h, "A newer server").
 */
#ifndef SERVER_STORE_CLICKHOUSE_VERSION_H
#define SERVER_STORE_CLICKHOUSE_VERSION_H

#include "server/store/clickhouse_int.h"

/*
 * ch_version_note - ask @s's server its version and log one line: the
 * version, and each newer feature the backend would use (with the
 * release that brings it) and whether this server has it. Uses none.
 * Return: 0; TC_ERR_DB (the question failed: nothing logged).
 */
int ch_version_note(struct ch_store *s);

#endif
