/*
 * import.h - traceq --import FILE --name HOST: a trace-cmd recording
 * (traceq/tracedat.h reads it) sent to the collector with the import
 * requests of the query protocol (proto/qimport.h), which store it as an
 * agent's data.
 *
 * The file is read twice: first whole, for its SHA-256 (the collector
 * stores a file once) and to check every page can be read (decompressed),
 * so that a truncated or corrupt file is refused before anything is sent;
 * then again to send it. Memory: the file's metadata and one batch of
 * pages (QIMPORT_MAX_PAGES).
 */
#ifndef TRACEQ_IMPORT_H
#define TRACEQ_IMPORT_H

#include <stdbool.h>

#include "proto/msg.h"
#include "proto/qmsg.h"

/*
 * One request/reply exchange with the collector: @req (encoded) out,
 * *@rep in. Return: 0 with a decoded reply (rep->ok or not; the caller
 * frees it); 1 when there is none (the transport said why on stderr).
 */
typedef int (*import_call_fn)(void *ctx, const struct proto_buf *req, struct qmsg_reply *rep);

/*
 * import_run - import the trace.dat at @path as host @name (@force: even
 * when an agent sends that name); of a file with several instances, the
 * one named @buffer ("top" for the top one; NULL: the file must have
 * only one with data). Says what it did on stdout, why not on
 * stderr. Return: the exit status: 0 stored (or stored already); 1 the
 * collector or the connection failed; 2 the file is not one to import (not
 * a regular file: a FIFO is refused before it is read; not a recording;
 * over the protocol's limits, a --name too) or the collector refused it
 * (rights, the name, a part of the file).
 */
int import_run(const char *path, const char *name, const char *buffer, bool force,
	       import_call_fn call, void *ctx);

#endif
