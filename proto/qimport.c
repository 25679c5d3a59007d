/*
 * qimport.c - msgpack encoding of the import requests (see qimport.h).
 * A request is a map {v, op, id, ...}; decoding checks every type and
 * bound, as for any request from the network.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "common/tc_error.h"
#include "proto/msgpack_dec.h"
#include "proto/qimport.h"
#include "proto/qmsg.h"

static void pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

static void pack_bin(msgpack_packer *pk, const void *p, size_t n)
{
	msgpack_pack_bin(pk, n);
	msgpack_pack_bin_body(pk, p, n);
}

int qimport_request_encode(const struct qimport_request *r, struct proto_buf *out)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int ret;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3 + (r->op == QOP_IMPORT_BEGIN ? 4 + r->sym_modules :
				   r->op == QOP_IMPORT_MSG ? 1 :
				   r->op == QOP_IMPORT_PAGES ? 3 : 1));
	pack_str(&pk, "v");
	msgpack_pack_uint32(&pk, QMSG_VERSION);
	pack_str(&pk, "op");
	msgpack_pack_uint32(&pk, r->op);
	pack_str(&pk, "id");
	msgpack_pack_uint64(&pk, r->id);
	switch (r->op) {
	case QOP_IMPORT_BEGIN:
		pack_str(&pk, "force");
		r->force ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk);
		pack_str(&pk, "digest");
		pack_str(&pk, r->digest ? r->digest : "");
		pack_str(&pk, "file");
		pack_str(&pk, r->file ? r->file : "");
		pack_str(&pk, "msg");
		pack_bin(&pk, r->msg, r->msg_len);
		if (r->sym_modules) {	/* only when true: an older collector ignores it */
			pack_str(&pk, "sym_modules");
			msgpack_pack_true(&pk);
		}
		break;
	case QOP_IMPORT_MSG:
		pack_str(&pk, "msg");
		pack_bin(&pk, r->msg, r->msg_len);
		break;
	case QOP_IMPORT_PAGES:
		pack_str(&pk, "cpu");
		msgpack_pack_uint32(&pk, r->cpu);
		pack_str(&pk, "seq");
		msgpack_pack_uint64(&pk, r->seq);
		pack_str(&pk, "pages");
		pack_bin(&pk, r->pages, r->pages_len);
		break;
	case QOP_IMPORT_END:
		pack_str(&pk, "abort");
		r->abort ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk);
		break;
	default:	/* not an import op (QOPC_IMPORT): a caller's bug */
		break;
	}
	ret = proto_buf_append(out, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
	return ret;
}

/* A bin of at most @max bytes, copied into *@out (replacing it). */
static int take_bin(const msgpack_object *o, size_t max, uint8_t **out, size_t *len)
{
	uint8_t *p;

	if (o->type != MSGPACK_OBJECT_BIN || o->via.bin.size > max)
		return TC_ERR_MSG_MALFORMED;
	if (!(p = malloc(o->via.bin.size ? o->via.bin.size : 1)))
		return -ENOMEM;
	memcpy(p, o->via.bin.ptr, o->via.bin.size);
	free(*out);
	*out = p;
	*len = o->via.bin.size;
	return 0;
}

static int field(struct qimport_request *r, const msgpack_object_kv *kv, uint32_t *version,
		 uint32_t *op)
{
	const msgpack_object *k = &kv->key, *v = &kv->val;

	if (proto_mp_str_is(k, "v"))
		return proto_mp_u32(v, version);
	if (proto_mp_str_is(k, "op"))
		return proto_mp_u32(v, op);
	if (proto_mp_str_is(k, "id"))
		return proto_mp_u64(v, &r->id);
	if (proto_mp_str_is(k, "force"))
		return proto_mp_bool(v, &r->force);
	if (proto_mp_str_is(k, "abort"))
		return proto_mp_bool(v, &r->abort);
	if (proto_mp_str_is(k, "sym_modules"))
		return proto_mp_bool(v, &r->sym_modules);
	if (proto_mp_str_is(k, "digest"))
		return proto_mp_take_str(v, QIMPORT_DIGEST_LEN, &r->digest);
	if (proto_mp_str_is(k, "file"))
		return proto_mp_take_str(v, QIMPORT_MAX_FILE, &r->file);
	if (proto_mp_str_is(k, "msg"))
		return take_bin(v, QIMPORT_MAX_REQUEST, &r->msg, &r->msg_len);
	if (proto_mp_str_is(k, "cpu"))
		return proto_mp_u32(v, &r->cpu);
	if (proto_mp_str_is(k, "seq"))
		return proto_mp_u64(v, &r->seq);
	if (proto_mp_str_is(k, "pages"))
		return take_bin(v, QIMPORT_MAX_PAGES, &r->pages, &r->pages_len);
	return 0;	/* unknown keys are ignored */
}

/* What each op needs. */
static int complete(const struct qimport_request *r)
{
	switch (r->op) {
	case QOP_IMPORT_BEGIN:
		return r->digest && strlen(r->digest) == QIMPORT_DIGEST_LEN &&
		       strspn(r->digest, "0123456789abcdef") == QIMPORT_DIGEST_LEN && r->msg ?
		       0 : TC_ERR_MSG_MISSING;
	case QOP_IMPORT_MSG:
		return r->msg && r->id ? 0 : TC_ERR_MSG_MISSING;
	case QOP_IMPORT_PAGES:
		return r->pages && r->id ? 0 : TC_ERR_MSG_MISSING;
	default:
		return r->id ? 0 : TC_ERR_MSG_MISSING;
	}
}

int qimport_request_decode(const void *buf, size_t len, struct qimport_request *out)
{
	struct qimport_request r = { 0 };
	msgpack_unpacked res;
	uint32_t version = 0, op = 0;
	int ret;

	if (len > QIMPORT_MAX_REQUEST)
		return TC_ERR_TOO_LONG;
	ret = proto_mp_unpack_map(buf, len, &res);
	/* the op first: anything else is a query request, left to qmsg */
	for (uint32_t i = 0; ret == 0 && i < res.data.via.map.size; i++)
		if (proto_mp_str_is(&res.data.via.map.ptr[i].key, "op"))
			ret = proto_mp_u32(&res.data.via.map.ptr[i].val, &op);
	if (ret == 0 && qmsg_op_class(op) != QOPC_IMPORT)
		ret = TC_ERR_MSG_UNKNOWN;
	for (uint32_t i = 0; ret == 0 && i < res.data.via.map.size; i++)
		ret = field(&r, &res.data.via.map.ptr[i], &version, &op);
	msgpack_unpacked_destroy(&res);
	r.op = op;
	if (ret == 0 && version == 0)
		ret = TC_ERR_MSG_MISSING;
	else if (ret == 0 && version != QMSG_VERSION)
		ret = TC_ERR_PROTO_VERSION;
	else if (ret == 0)
		ret = complete(&r);
	if (ret < 0) {
		qimport_request_free(&r);
		return ret;
	}
	*out = r;
	return 0;
}

void qimport_request_free(struct qimport_request *r)
{
	free(r->digest);
	free(r->file);
	free(r->msg);
	free(r->pages);
	memset(r, 0, sizeof(*r));
}
