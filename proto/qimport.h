/*
 * qimport.h - the import requests of the query protocol (traceq --import):
 * a trace.dat recording sent to the collector over the query connection
 * (ipc or the TLS query port) and stored as an agent's data would be. See
 * proto/PROTOCOL.md, "Import".
 *
 * An import is a series of requests on one connection, each answered with
 * a query reply (proto/qmsg.h: a table, or an error); the ops are in
 * qmsg.h's QMSG_OPS with the others:
 *   QOP_IMPORT_BEGIN  the host name, --force, the file's digest and an
 *                     encoded MSG_HELLO (proto/msg.h: the msgpack payload of
 *                     its frame, without the frame header); the reply's one row
 *                     is (id, state): state "new" (go on with id) or
 *                     "stored" (this file is stored already: nothing to do);
 *   QOP_IMPORT_MSG    id and one encoded control message: HEADER_PAGE,
 *                     FORMAT, CMDLINES, SYMBOLS or CLOCK, decoded by the
 *                     collector as an agent's;
 *   QOP_IMPORT_PAGES  id, a CPU, the sequence number of the first page and
 *                     pages of HELLO's page_size each, back to back;
 *   QOP_IMPORT_END    id, and whether to abort; the reply's row is
 *                     (pages, events) stored.
 * Every request is at most QIMPORT_MAX_REQUEST bytes.
 */
#ifndef PROTO_QIMPORT_H
#define PROTO_QIMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/qmsg.h"

#define QIMPORT_MAX_REQUEST	(1u << 20)	/* one import request, encoded */
#define QIMPORT_MAX_PAGES	(512u << 10)	/* page bytes in one QOP_IMPORT_PAGES */
#define QIMPORT_DIGEST_LEN	64		/* hex SHA-256 */
#define QIMPORT_MAX_FILE	255		/* the file's name, for the log */

struct qimport_request {
	enum qmsg_op op;	/* QOP_IMPORT_* (class QOPC_IMPORT) */
	uint64_t id;		/* all but BEGIN: BEGIN's reply's id */
	/* BEGIN */
	bool force;		/* the name may be a live host's */
	bool sym_modules;	/* the asker sends symbols' modules if the reply
				 * has a third column, sym_modules, of 1 */
	char *digest;		/* hex SHA-256 of the file, QIMPORT_DIGEST_LEN */
	char *file;		/* its name, for the log */
	/* BEGIN (HELLO) and MSG: an encoded control message */
	uint8_t *msg;
	size_t msg_len;
	/* PAGES */
	uint32_t cpu;
	uint64_t seq;		/* of the first page */
	uint8_t *pages;
	size_t pages_len;
	/* END */
	bool abort;
};

/* qimport_request_encode - append @r's msgpack encoding to @out. 0 or -ENOMEM. */
int qimport_request_encode(const struct qimport_request *r, struct proto_buf *out);

/*
 * qimport_request_decode - parse an import request; *@out owns its buffers
 * afterwards (qimport_request_free). Return: 0; TC_ERR_MSG_UNKNOWN (a map
 * whose op is not an import op: a query request, for qmsg_request_decode);
 * TC_ERR_TOO_LONG (over QIMPORT_MAX_REQUEST), TC_ERR_MSG_MALFORMED,
 * TC_ERR_MSG_MISSING, TC_ERR_PROTO_VERSION, -ENOMEM. *@out only on success.
 */
int qimport_request_decode(const void *buf, size_t len, struct qimport_request *out);
void qimport_request_free(struct qimport_request *r);

#endif
