/*
 * msgpack_dec.h - proto-private: the checked msgpack readers that every
 * decoder in proto/ uses on untrusted bytes (the control messages in
 * msg.c, the query protocol in qmsg.c), so that one integer range check,
 * one string check and one unpack step serve both. Implemented in msg.c,
 * beside the pre-scan (proto_msgpack_check) they build on.
 *
 * Only proto/ includes this header (tests/test_layering.sh checks it);
 * other modules decode through msg.h and qmsg.h. Prefix proto_mp_.
 *
 * Common contract: the object is one msgpack-c has already unpacked (see
 * proto_mp_unpack); a reader checks the object's type and range and
 * writes its out-parameter only on success. Errors are
 * TC_ERR_MSG_MALFORMED (wrong type, out of range, too long, NUL inside a
 * string) or -ENOMEM; nothing is logged.
 */
#ifndef PROTO_MSGPACK_DEC_H
#define PROTO_MSGPACK_DEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "common/tc_error.h"

/*
 * proto_mp_unpack - unpack @buf, which must hold exactly one msgpack object
 * and nothing after it, into @res. proto_msgpack_check() vets the bytes
 * first, so no announced container size makes msgpack-c allocate more than
 * the bytes can hold. @res is initialised in every case and the caller
 * destroys it (msgpack_unpacked_destroy) in every case; the object may be
 * of any type. Return: 0, TC_ERR_MSG_MALFORMED, -ENOMEM.
 */
int proto_mp_unpack(const void *buf, size_t len, msgpack_unpacked *res);

/* proto_mp_unpack_map - proto_mp_unpack(), and the object must be a map. */
static inline int proto_mp_unpack_map(const void *buf, size_t len, msgpack_unpacked *res)
{
	int ret = proto_mp_unpack(buf, len, res);

	if (ret == 0 && res->data.type != MSGPACK_OBJECT_MAP)
		ret = TC_ERR_MSG_MALFORMED;
	return ret;
}

/* proto_mp_str_is - whether @o is a string equal to @s (false for any other type). */
bool proto_mp_str_is(const msgpack_object *o, const char *s);

/*
 * proto_mp_uint - @o as an unsigned integer: a msgpack positive integer
 * no larger than @max (a negative integer is refused, whatever its value).
 * Return: 0 or TC_ERR_MSG_MALFORMED.
 */
int proto_mp_uint(const msgpack_object *o, uint64_t max, uint64_t *v);

/*
 * proto_mp_int - @o as a signed integer in [@min, @max]: a msgpack
 * positive or negative integer. Return: 0 or TC_ERR_MSG_MALFORMED.
 */
int proto_mp_int(const msgpack_object *o, int64_t min, int64_t max, int64_t *v);

/*
 * proto_mp_str_check - whether @o is a string of at most @max bytes with
 * no NUL inside: the checks every string on the wire must pass. Return: 0
 * or TC_ERR_MSG_MALFORMED.
 */
int proto_mp_str_check(const msgpack_object *o, size_t max);

/*
 * proto_mp_str - a NUL-terminated copy of the string @o (checked as by
 * proto_mp_str_check with @max). On success *@out owns the copy (the
 * caller frees it; whatever *@out held before is not freed) and *@len, if
 * @len is not NULL, is its length. Return: 0, TC_ERR_MSG_MALFORMED,
 * -ENOMEM.
 */
int proto_mp_str(const msgpack_object *o, size_t max, char **out, size_t *len);

/*
 * proto_mp_take_str - proto_mp_str() into *@out, replacing (and freeing)
 * what *@out held: a key sent twice takes its last value. Return: as
 * proto_mp_str(); *@out is left alone on failure.
 */
int proto_mp_take_str(const msgpack_object *o, size_t max, char **out);

/* proto_mp_bool - @o as a bool (a msgpack boolean). Return: 0 or TC_ERR_MSG_MALFORMED. */
static inline int proto_mp_bool(const msgpack_object *o, bool *v)
{
	if (o->type != MSGPACK_OBJECT_BOOLEAN)
		return TC_ERR_MSG_MALFORMED;
	*v = o->via.boolean;
	return 0;
}

/* The fixed-width forms of proto_mp_uint and proto_mp_int. */
static inline int proto_mp_u64(const msgpack_object *o, uint64_t *v)
{
	return proto_mp_uint(o, UINT64_MAX, v);
}

static inline int proto_mp_u32(const msgpack_object *o, uint32_t *v)
{
	uint64_t u;
	int ret = proto_mp_uint(o, UINT32_MAX, &u);

	if (ret == 0)
		*v = (uint32_t)u;
	return ret;
}

static inline int proto_mp_i64(const msgpack_object *o, int64_t *v)
{
	return proto_mp_int(o, INT64_MIN, INT64_MAX, v);
}

static inline int proto_mp_i32(const msgpack_object *o, int32_t *v)
{
	int64_t i;
	int ret = proto_mp_int(o, INT32_MIN, INT32_MAX, &i);

	if (ret == 0)
		*v = (int32_t)i;
	return ret;
}

#endif
