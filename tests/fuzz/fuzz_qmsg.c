/*
 * fuzz_qmsg - the query protocol decoders (requests reach the collector
 * from any client; replies reach traceq from the network), the import
 * requests' (proto/qimport.h) too: the endpoint tries every request as
 * one first. Whatever decodes must be freed cleanly; a decoded request
 * must re-encode to one that decodes.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "proto/qimport.h"
#include "proto/qmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qmsg_request req, again;
	struct qimport_request imp, imp2;
	struct qmsg_reply rep;
	struct proto_buf b;

	if (qmsg_request_decode(data, size, &req) == 0) {
		proto_buf_init(&b);
		if (qmsg_request_encode(&req, &b) != 0 ||
		    qmsg_request_decode(b.data, b.len, &again) != 0)
			abort();
		qmsg_request_free(&again);
		qmsg_request_free(&req);
		proto_buf_free(&b);
	}
	if (qimport_request_decode(data, size, &imp) == 0) {
		proto_buf_init(&b);
		if (qimport_request_encode(&imp, &b) != 0 ||
		    qimport_request_decode(b.data, b.len, &imp2) != 0 || imp2.op != imp.op)
			abort();
		qimport_request_free(&imp2);
		qimport_request_free(&imp);
		proto_buf_free(&b);
	}
	if (qmsg_reply_decode(data, size, &rep) == 0)
		qmsg_reply_free(&rep);
	return 0;
}
