/*
 * tc_error.h - tracecollect's error space.
 *
 * Functions return 0 (or a count) on success and a negative code on failure.
 * A code is either -errno (passed through unchanged) or one of TC_ERR_*,
 * which sit below the errno range so the two never collide. tc_strerror()
 * describes both. The table below is the only place a code is defined.
 */
#ifndef TC_ERROR_H
#define TC_ERROR_H

#include <stddef.h>

#define TC_ERRORS \
	_TC(SYNTAX,		"syntax error") \
	_TC(UNEXPECTED_END,	"unexpected end of input") \
	_TC(UNTERMINATED,	"unterminated string") \
	_TC(BAD_NUMBER,		"invalid number") \
	_TC(BAD_OPERATOR,	"unknown operator") \
	_TC(UNKNOWN_FIELD,	"unknown field") \
	_TC(TYPE_MISMATCH,	"operator does not apply to this field's type") \
	_TC(TOO_DEEP,		"expression nests too deeply") \
	_TC(TOO_LONG,		"input too long") \
	_TC(UNKNOWN_EVENT,	"unknown event") \
	_TC(FRAME_TRUNCATED,	"frame truncated") \
	_TC(FRAME_TOO_LARGE,	"frame larger than the protocol allows") \
	_TC(FRAME_BAD_MAGIC,	"not a tracecollect frame") \
	_TC(FRAME_BAD_TYPE,	"unknown frame type") \
	_TC(PROTO_VERSION,	"unsupported protocol version") \
	_TC(MSG_MALFORMED,	"malformed message") \
	_TC(MSG_MISSING,	"message lacks a required field") \
	_TC(MSG_UNKNOWN,	"unknown message type") \
	_TC(PROTO_STATE,	"message not allowed in this connection state") \
	_TC(PAGE_MALFORMED,	"malformed ring-buffer page") \
	_TC(FORMAT_PARSE,	"event format could not be parsed") \
	_TC(TLS,		"TLS error") \
	_TC(TLS_PEER,		"peer certificate rejected") \
	_TC(DB,			"database error") \
	_TC(DB_SCHEMA,		"database schema error") \
	_TC(CONFIG,		"invalid configuration") \
	_TC(CONFIG_KEY,		"unknown configuration key") \
	_TC(TRACEFS,		"tracefs operation failed") \
	_TC(NOT_SUPPORTED,	"not supported by this kernel") \
	_TC(PEER_CLOSED,	"peer closed the connection") \
	_TC(TIMEOUT,		"timed out") \
	_TC(AMBIGUOUS,		"ambiguous name") \
	_TC(FORMAT_LIMIT,	"event format exceeds the collector's limits") \
	_TC(IDENTITY,		"host name not allowed for this certificate")

#define _TC(code, str) TC_ERR_##code,
enum tc_errno {
	TC_ERR_START = -20000,
	TC_ERRORS
	TC_ERR_END
};
#undef _TC

/*
 * tc_strerror - describe an error code.
 * @err: a negative return value: -errno or TC_ERR_*; positive errno values
 *       are accepted too.
 *
 * Return: a static string; never NULL.
 */
const char *tc_strerror(int err);

/*
 * tc_seterr - format a one-line reason into the caller's @err buffer of
 * @len bytes (for functions that return a code and explain it in words);
 * does nothing when @err is NULL or @len is 0.
 */
void tc_seterr(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
