/*
 * sqlite_ckpt.h - the SQLite backend's checkpointer: a thread and a
 * connection of its own on a writer's file (sqlite_ckpt.c).
 */
#ifndef SERVER_STORE_SQLITE_CKPT_H
#define SERVER_STORE_SQLITE_CKPT_H

#include "server/store/sqlite_int.h"

/* Start @s's checkpointer on @path. Return: 0; TC_ERR_DB; -errno. */
int sq_ckpt_start(struct sq_store *q, const char *path);
/* Stop it and close its connection (nothing when it did not start). */
void sq_ckpt_stop(struct sq_store *q);
/* sq_ckpt_after_commit - ask for a checkpoint when the WAL has grown (may wait). */
void sq_ckpt_after_commit(struct sq_store *q);

#endif
