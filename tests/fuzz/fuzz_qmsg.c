/*
 * fuzz_qmsg - the query protocol decoders (requests reach the collector
 * from any client; replies reach traceq from the network). Whatever
 * decodes must be freed cleanly; a decoded reply must re-encode.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "proto/qmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qmsg_request req, again;
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
	if (qmsg_reply_decode(data, size, &rep) == 0)
		qmsg_reply_free(&rep);
	return 0;
}
