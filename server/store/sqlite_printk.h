/*
 * sqlite_printk.h - the kernel's printk_formats per host and boot, and the
 * read side of the pid -> tgid table (sqlite_printk.c).
 */
#ifndef SERVER_STORE_SQLITE_PRINTK_H
#define SERVER_STORE_SQLITE_PRINTK_H

#include "server/store/sqlite_int.h"

/* sq_printk_ops - this part's ops into the tables (sqlite.c). */
void sq_printk_ops(struct store_writer_ops *w, struct store_reader_ops *r);

#endif
