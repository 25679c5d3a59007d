/*
 * qmsg.c - msgpack encoding of query requests and replies (see qmsg.h).
 *
 * Requests are small maps; replies are {ok, event, cols, rows, more,
 * last_ts, last_id, count} or {ok=false, code, error, pos, len}. Decoding
 * checks every type and bound: a reply comes from the network like a
 * request does.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "common/tc_error.h"
#include "proto/msgpack_dec.h"
#include "proto/qmsg.h"

#define QMSG_MAX_STRING		(1u << 20)

static void pack_key(msgpack_packer *pk, const char *key)
{
	size_t n = strlen(key);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, key, n);
}

static void pack_cstr(msgpack_packer *pk, const char *s)
{
	pack_key(pk, s);
}

/* Move a finished sbuffer into @out; frees @sb either way. */
static int sbuf_move(msgpack_sbuffer *sb, struct proto_buf *out)
{
	int ret = proto_buf_append(out, sb->data, sb->size);

	msgpack_sbuffer_destroy(sb);
	return ret;
}

static void pack_bool(msgpack_packer *pk, const char *key, bool v)
{
	pack_key(pk, key);
	if (v)
		msgpack_pack_true(pk);
	else
		msgpack_pack_false(pk);
}

/* Key @key and string @v, only when there is a @v. */
static void pack_opt_str(msgpack_packer *pk, const char *key, const char *v)
{
	if (v) {
		pack_key(pk, key);
		pack_cstr(pk, v);
	}
}

/* Key @key and number @v, only when @v is not 0 (msgpack's shortest form). */
static void pack_opt_uint(msgpack_packer *pk, const char *key, uint64_t v)
{
	if (v) {
		pack_key(pk, key);
		msgpack_pack_uint64(pk, v);
	}
}

/* An array of @n numbers. */
static void pack_u64s(msgpack_packer *pk, const uint64_t *v, uint32_t n)
{
	msgpack_pack_array(pk, n);
	for (uint32_t i = 0; i < n; i++)
		msgpack_pack_uint64(pk, v[i]);
}

/* "cursors": at most QMSG_MAX_CURSORS uints, into @v (*@n of them) */
static int get_u64s(const msgpack_object *v, uint64_t *out, uint32_t *n)
{
	int ret = 0;

	if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size > QMSG_MAX_CURSORS)
		return TC_ERR_MSG_MALFORMED;
	for (uint32_t i = 0; ret == 0 && i < v->via.array.size; i++)
		ret = proto_mp_u64(&v->via.array.ptr[i], &out[i]);
	*n = ret == 0 ? v->via.array.size : 0;
	return ret;
}

/* The keys of selecting (query version 1, added without a bump). */
static void request_encode_more(msgpack_packer *pk, const struct qmsg_request *r)
{
	if (r->after_type) {
		pack_key(pk, "after_type");
		msgpack_pack_int64(pk, r->after_type);
	}
	if (r->from_end)
		pack_bool(pk, "from_end", true);
	if (r->to_end)
		pack_bool(pk, "to_end", true);
	if (r->reverse)
		pack_bool(pk, "reverse", true);
	if (r->nhosts) {
		pack_key(pk, "hosts");
		msgpack_pack_array(pk, r->nhosts);
		for (uint32_t i = 0; i < r->nhosts; i++)
			pack_cstr(pk, r->hosts[i]);
	}
	if (r->ncpus) {
		pack_key(pk, "cpus");
		msgpack_pack_array(pk, r->ncpus);
		for (uint32_t i = 0; i < r->ncpus; i++)
			msgpack_pack_uint32(pk, r->cpus[i]);
	}
	if (r->ncursors) {
		pack_key(pk, "cursors");
		pack_u64s(pk, r->cursors, r->ncursors);
	}
	if (r->nomit) {
		pack_key(pk, "omit");
		msgpack_pack_array(pk, r->nomit);
		for (uint32_t i = 0; i < r->nomit; i++)
			pack_cstr(pk, r->omit[i]);
	}
}

int qmsg_request_encode(const struct qmsg_request *r, struct proto_buf *out)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	unsigned n = 7 + (r->query != NULL) + (r->host != NULL) + (r->sync_ms != 0) +
		     (r->after_type != 0) + r->from_end + r->to_end + r->reverse +
		     (r->nhosts != 0) + (r->ncpus != 0) + (r->hist != NULL) +
		     (r->sent != 0) + (r->nomit != 0) + (r->reason != NULL) +
		     (r->snapshot_id != 0) + (r->ncursors != 0);

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, n);
	pack_key(&pk, "v");
	msgpack_pack_uint32(&pk, QMSG_VERSION);
	pack_key(&pk, "op");
	msgpack_pack_uint32(&pk, r->op);
	pack_key(&pk, "limit");
	msgpack_pack_uint32(&pk, r->limit);
	pack_key(&pk, "after_ts");
	msgpack_pack_int64(&pk, r->after_ts);
	pack_key(&pk, "after_id");
	msgpack_pack_uint64(&pk, r->after_id);
	pack_key(&pk, "from_ts");
	msgpack_pack_int64(&pk, r->from_ts);
	pack_key(&pk, "to_ts");
	msgpack_pack_int64(&pk, r->to_ts);
	pack_opt_str(&pk, "q", r->query);
	pack_opt_str(&pk, "host", r->host);
	pack_opt_uint(&pk, "sync", r->sync_ms);
	pack_opt_uint(&pk, "sent", r->sent);
	request_encode_more(&pk, r);
	pack_opt_str(&pk, "hist", r->hist);
	pack_opt_str(&pk, "reason", r->reason);
	pack_opt_uint(&pk, "snapshot", r->snapshot_id);
	return sbuf_move(&sb, out);
}

/* ---- ops ---- */

struct qmsg_op_desc {
	const char *name;
	enum qmsg_op_class class;
};

static const struct qmsg_op_desc op_table[] = {
#define QMSG_OP_DESC(name, num, str, class) [num] = { str, class },
	QMSG_OPS(QMSG_OP_DESC)
#undef QMSG_OP_DESC
};

static const struct qmsg_op_desc *op_desc(uint32_t op)
{
	if (op >= sizeof(op_table) / sizeof(op_table[0]) || !op_table[op].name)
		return NULL;
	return &op_table[op];
}

const char *qmsg_op_name(uint32_t op)
{
	const struct qmsg_op_desc *d = op_desc(op);

	return d ? d->name : "unknown";
}

enum qmsg_op_class qmsg_op_class(uint32_t op)
{
	const struct qmsg_op_desc *d = op_desc(op);

	return d ? d->class : QOPC_UNKNOWN;
}

/* ---- decoding helpers ---- */

/*
 * Values are read with proto/'s checked readers (msgpack_dec.h, shared
 * with the control messages); what is the query protocol's own is a
 * longer string limit, QMSG_MAX_STRING, and that a scalar key sent twice
 * takes its last value.
 */

/* take_str - @o's string of at most QMSG_MAX_STRING replaces (and frees) *@out. */
static int take_str(const msgpack_object *o, char **out)
{
	return proto_mp_take_str(o, QMSG_MAX_STRING, out);
}

/*
 * "hosts" (at most QMSG_MAX_HOSTS), "omit" (QMSG_MAX_OMIT) or a reply's
 * "cols" (QMSG_MAX_COLS): an array of strings, sent once, into *@out,
 * counted in *@n as they are taken.
 */
static int get_strs(const msgpack_object *v, uint32_t max, char ***out, uint32_t *n)
{
	int ret = 0;

	if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size > max || *out)
		return TC_ERR_MSG_MALFORMED;
	*out = calloc(v->via.array.size + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (uint32_t i = 0; ret == 0 && i < v->via.array.size; i++, (*n)++)
		ret = take_str(&v->via.array.ptr[i], &(*out)[i]);
	return ret;
}

/* "cpus": at most QMSG_MAX_CPUS uints (sent once) */
static int get_cpus(const msgpack_object *v, struct qmsg_request *r)
{
	uint32_t i, n;
	int ret = 0;

	if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size > QMSG_MAX_CPUS || r->cpus)
		return TC_ERR_MSG_MALFORMED;
	n = v->via.array.size;
	r->cpus = calloc(n + 1, sizeof(*r->cpus));
	if (!r->cpus)
		return -ENOMEM;
	for (i = 0; ret == 0 && i < n; i++)
		ret = proto_mp_u32(&v->via.array.ptr[i], &r->cpus[i]);
	r->ncpus = n;
	return ret;
}

static int request_field_more(struct qmsg_request *r, const msgpack_object *k,
			      const msgpack_object *v)
{
	if (proto_mp_str_is(k, "after_type"))
		return proto_mp_i64(v, &r->after_type);
	if (proto_mp_str_is(k, "from_end"))
		return proto_mp_bool(v, &r->from_end);
	if (proto_mp_str_is(k, "to_end"))
		return proto_mp_bool(v, &r->to_end);
	if (proto_mp_str_is(k, "reverse"))
		return proto_mp_bool(v, &r->reverse);
	if (proto_mp_str_is(k, "hosts"))
		return get_strs(v, QMSG_MAX_HOSTS, &r->hosts, &r->nhosts);
	if (proto_mp_str_is(k, "omit"))
		return get_strs(v, QMSG_MAX_OMIT, &r->omit, &r->nomit);
	if (proto_mp_str_is(k, "cpus"))
		return get_cpus(v, r);
	if (proto_mp_str_is(k, "reason"))
		return take_str(v, &r->reason);
	if (proto_mp_str_is(k, "snapshot"))
		return proto_mp_u64(v, &r->snapshot_id);
	if (proto_mp_str_is(k, "cursors"))
		return get_u64s(v, r->cursors, &r->ncursors);
	return 0;	/* unknown keys are ignored */
}

static int request_field(struct qmsg_request *r, const msgpack_object_kv *kv,
			 uint32_t *version)
{
	const msgpack_object *k = &kv->key, *v = &kv->val;
	uint32_t op = 0;
	int ret;

	if (proto_mp_str_is(k, "v"))
		return proto_mp_u32(v, version);
	if (proto_mp_str_is(k, "op")) {
		ret = proto_mp_u32(v, &op);
		if (ret == 0 && (qmsg_op_class(op) == QOPC_UNKNOWN ||
				 qmsg_op_class(op) == QOPC_IMPORT))
			ret = TC_ERR_MSG_MALFORMED;
		r->op = op;
		return ret;
	}
	if (proto_mp_str_is(k, "limit"))
		return proto_mp_u32(v, &r->limit);
	if (proto_mp_str_is(k, "after_ts"))
		return proto_mp_i64(v, &r->after_ts);
	if (proto_mp_str_is(k, "after_id"))
		return proto_mp_u64(v, &r->after_id);
	if (proto_mp_str_is(k, "from_ts"))
		return proto_mp_i64(v, &r->from_ts);
	if (proto_mp_str_is(k, "to_ts"))
		return proto_mp_i64(v, &r->to_ts);
	if (proto_mp_str_is(k, "q"))
		return take_str(v, &r->query);
	if (proto_mp_str_is(k, "host"))
		return take_str(v, &r->host);
	if (proto_mp_str_is(k, "sync"))
		return proto_mp_u32(v, &r->sync_ms);
	if (proto_mp_str_is(k, "hist"))
		return take_str(v, &r->hist);
	if (proto_mp_str_is(k, "sent"))
		return proto_mp_u64(v, &r->sent);
	return request_field_more(r, k, v);
}

int qmsg_request_decode(const void *buf, size_t len, struct qmsg_request *out)
{
	struct qmsg_request r = { 0 };
	msgpack_unpacked res;
	uint32_t version = 0, i;
	int ret;

	if (len > QMSG_MAX_REQUEST)
		return TC_ERR_TOO_LONG;
	ret = proto_mp_unpack_map(buf, len, &res);
	for (i = 0; ret == 0 && i < res.data.via.map.size; i++)
		ret = request_field(&r, &res.data.via.map.ptr[i], &version);
	msgpack_unpacked_destroy(&res);
	if (ret == 0 && (version == 0 || r.op == 0))
		ret = TC_ERR_MSG_MISSING;
	else if (ret == 0 && version != QMSG_VERSION)
		ret = TC_ERR_PROTO_VERSION;
	else if (ret == 0 && r.limit > QMSG_MAX_ROWS)
		ret = TC_ERR_MSG_MALFORMED;
	else if (ret == 0 && qmsg_op_class(r.op) == QOPC_Q && !r.query)
		ret = TC_ERR_MSG_MISSING;
	else if (ret == 0 && qmsg_op_class(r.op) == QOPC_HIST && !r.hist)
		ret = TC_ERR_MSG_MISSING;
	if (ret < 0) {
		qmsg_request_free(&r);
		return ret;
	}
	*out = r;
	return 0;
}

/* free_strs - free the first @n strings of @a (NULL: none) and @a. */
static void free_strs(char **a, uint32_t n)
{
	for (uint32_t i = 0; a && i < n; i++)
		free(a[i]);
	free(a);
}

void qmsg_request_free(struct qmsg_request *r)
{
	free_strs(r->hosts, r->nhosts);
	free_strs(r->omit, r->nomit);
	free(r->cpus);
	free(r->query);
	free(r->host);
	free(r->hist);
	free(r->reason);
	r->query = r->host = r->hist = r->reason = NULL;
	r->hosts = r->omit = NULL;
	r->cpus = NULL;
	r->nhosts = r->ncpus = r->nomit = 0;
}

/* ---- reply writer ---- */

struct qmsg_writer {
	msgpack_sbuffer head;	/* map header, event, cols */
	msgpack_sbuffer body;	/* the row values, counted as they come */
	msgpack_packer hp, pk;
	uint32_t ncols;
	uint64_t nvals;
	uint64_t unstored, journal_bytes;
	int64_t stalled_since;
	const char *stalled_why;
	const char *format;	/* a one-type reply's format text */
	bool multi;		/* rows start with their type (begin_types) */
	uint32_t nrows;		/* multi: rows started */
	int64_t last_type;
	bool tail;		/* a tail reply: "missed", "reset" and "cursors" too */
	uint64_t missed;
	bool reset;
	uint64_t cursors[QMSG_MAX_CURSORS];
	uint32_t ncursors;
	uint32_t ntypes;	/* multi: the types, and their formats */
	const char **formats;
	uint64_t entries, dropped;	/* a histogram's */
};

/* A writer whose reply map has @nkeys keys, with its event and columns packed. */
static struct qmsg_writer *writer_new(unsigned nkeys, const char *event, uint32_t ncols,
				      const char *const *cols)
{
	struct qmsg_writer *w = calloc(1, sizeof(*w));
	uint32_t i;

	if (!w)
		return NULL;
	msgpack_sbuffer_init(&w->head);
	msgpack_sbuffer_init(&w->body);
	msgpack_packer_init(&w->hp, &w->head, msgpack_sbuffer_write);
	msgpack_packer_init(&w->pk, &w->body, msgpack_sbuffer_write);
	w->ncols = ncols;
	msgpack_pack_map(&w->hp, nkeys);
	pack_key(&w->hp, "ok");
	msgpack_pack_true(&w->hp);
	pack_key(&w->hp, "event");
	if (event)
		pack_cstr(&w->hp, event);
	else
		msgpack_pack_nil(&w->hp);
	pack_key(&w->hp, "cols");
	msgpack_pack_array(&w->hp, ncols);
	for (i = 0; i < ncols; i++)
		pack_cstr(&w->hp, cols[i]);
	return w;
}

int qmsg_reply_begin(struct qmsg_writer **out, const char *event, uint32_t ncols,
		     const char *const *cols)
{
	/*
	 * ok event cols rows more last_ts last_id count unstored journal_bytes
	 * stalled_since stalled_why entries dropped format
	 */
	*out = writer_new(15, event, ncols, cols);
	return *out ? 0 : -ENOMEM;
}

static int begin_types(unsigned nkeys, struct qmsg_writer **out, uint32_t ntypes,
		       const char *const *events, const uint32_t *ncols,
		       const char *const *const *cols)
{
	struct qmsg_writer *w = writer_new(nkeys, NULL, 0, NULL);

	if (w && ntypes && !(w->formats = calloc(ntypes, sizeof(*w->formats)))) {
		qmsg_writer_free(w);
		w = NULL;
	}
	if (!w)
		return -ENOMEM;
	w->multi = true;
	w->ntypes = ntypes;
	pack_key(&w->hp, "types");
	msgpack_pack_array(&w->hp, ntypes);
	for (uint32_t t = 0; t < ntypes; t++) {
		msgpack_pack_array(&w->hp, 1 + ncols[t]);
		pack_cstr(&w->hp, events[t]);
		for (uint32_t i = 0; i < ncols[t]; i++)
			pack_cstr(&w->hp, cols[t][i]);
	}
	*out = w;
	return 0;
}

int qmsg_reply_begin_types(struct qmsg_writer **out, uint32_t ntypes, const char *const *events,
			   const uint32_t *ncols, const char *const *const *cols)
{
	/* the 13 keys of a one-type reply, "types", "last_type" and "formats" */
	return begin_types(18, out, ntypes, events, ncols, cols);
}

int qmsg_reply_begin_tail(struct qmsg_writer **out, uint32_t ntypes, const char *const *events,
			  const uint32_t *ncols, const char *const *const *cols)
{
	/* those of a multi-type reply, "missed", "reset" and "cursors" */
	int ret = begin_types(21, out, ntypes, events, ncols, cols);

	if (ret == 0)
		(*out)->tail = true;
	return ret;
}

void qmsg_reply_tail(struct qmsg_writer *w, uint64_t missed, bool reset)
{
	w->missed = missed;
	w->reset = reset;
}

void qmsg_reply_cursors(struct qmsg_writer *w, const uint64_t *cursors, uint32_t n)
{
	w->ncursors = n < QMSG_MAX_CURSORS ? n : QMSG_MAX_CURSORS;
	memcpy(w->cursors, cursors, w->ncursors * sizeof(*cursors));
}

void qmsg_put_type(struct qmsg_writer *w, uint32_t idx)
{
	w->nvals++;
	w->nrows++;
	msgpack_pack_uint32(&w->pk, idx);
}

void qmsg_reply_last_type(struct qmsg_writer *w, int64_t type)
{
	w->last_type = type;
}

const void *qmsg_body(const struct qmsg_writer *w)
{
	return w->body.data;
}

size_t qmsg_body_len(const struct qmsg_writer *w)
{
	return w->body.size;
}

void qmsg_body_reset(struct qmsg_writer *w)
{
	w->body.size = 0;
	w->nvals = 0;
	w->nrows = 0;
}

void qmsg_put_raw(struct qmsg_writer *w, const void *p, size_t len, uint32_t nvals)
{
	w->nvals += nvals;
	msgpack_sbuffer_write(&w->body, p, len);
}

void qmsg_writer_free(struct qmsg_writer *w)
{
	if (!w)
		return;
	msgpack_sbuffer_destroy(&w->head);
	msgpack_sbuffer_destroy(&w->body);
	free(w->formats);
	free(w);
}

uint32_t qmsg_reply_rows(const struct qmsg_writer *w)
{
	if (w->multi)
		return w->nrows;
	return w->ncols ? (uint32_t)(w->nvals / w->ncols) : 0;
}

void qmsg_put_nil(struct qmsg_writer *w)
{
	w->nvals++;
	msgpack_pack_nil(&w->pk);
}

void qmsg_put_int(struct qmsg_writer *w, int64_t v)
{
	w->nvals++;
	msgpack_pack_int64(&w->pk, v);
}

void qmsg_put_uint(struct qmsg_writer *w, uint64_t v)
{
	w->nvals++;
	msgpack_pack_uint64(&w->pk, v);
}

void qmsg_put_str(struct qmsg_writer *w, const char *s, size_t len)
{
	w->nvals++;
	msgpack_pack_str(&w->pk, len);
	msgpack_pack_str_body(&w->pk, s, len);
}

void qmsg_put_bin(struct qmsg_writer *w, const void *p, size_t len)
{
	w->nvals++;
	msgpack_pack_bin(&w->pk, len);
	msgpack_pack_bin_body(&w->pk, p, len);
}

void qmsg_reply_format(struct qmsg_writer *w, const char *text)
{
	w->format = text && strlen(text) <= QMSG_MAX_FORMAT ? text : NULL;
}

void qmsg_reply_type_format(struct qmsg_writer *w, uint32_t idx, const char *text)
{
	if (w->multi && idx < w->ntypes)
		w->formats[idx] = text && strlen(text) <= QMSG_MAX_FORMAT ? text : NULL;
}

void qmsg_reply_hist(struct qmsg_writer *w, uint64_t entries, uint64_t dropped)
{
	w->entries = entries;
	w->dropped = dropped;
}

void qmsg_reply_backlog(struct qmsg_writer *w, uint64_t unstored, uint64_t journal_bytes)
{
	w->unstored = unstored;
	w->journal_bytes = journal_bytes;
}

void qmsg_reply_stall(struct qmsg_writer *w, int64_t since_ns, const char *why)
{
	w->stalled_since = since_ns;
	w->stalled_why = why;
}

/* The stall's two keys: stalled_since, stalled_why (nil when none). */
static void pack_stall(msgpack_packer *pk, int64_t since_ns, const char *why)
{
	pack_key(pk, "stalled_since");
	msgpack_pack_int64(pk, since_ns);
	pack_key(pk, "stalled_why");
	if (since_ns && why)
		pack_cstr(pk, why);
	else
		msgpack_pack_nil(pk);
}

int qmsg_reply_end(struct qmsg_writer *w, bool more, int64_t last_ts,
		   uint64_t last_id, uint64_t count, struct proto_buf *out)
{
	size_t mark = out->len;
	int ret;

	pack_key(&w->hp, "rows");
	msgpack_pack_array(&w->hp, (uint32_t)w->nvals);
	pack_key(&w->pk, "more");
	if (more)
		msgpack_pack_true(&w->pk);
	else
		msgpack_pack_false(&w->pk);
	pack_key(&w->pk, "last_ts");
	msgpack_pack_int64(&w->pk, last_ts);
	pack_key(&w->pk, "last_id");
	msgpack_pack_uint64(&w->pk, last_id);
	pack_key(&w->pk, "count");
	msgpack_pack_uint64(&w->pk, count);
	pack_key(&w->pk, "unstored");
	msgpack_pack_uint64(&w->pk, w->unstored);
	pack_key(&w->pk, "journal_bytes");
	msgpack_pack_uint64(&w->pk, w->journal_bytes);
	pack_stall(&w->pk, w->stalled_since, w->stalled_why);
	pack_key(&w->pk, "entries");
	msgpack_pack_uint64(&w->pk, w->entries);
	pack_key(&w->pk, "dropped");
	msgpack_pack_uint64(&w->pk, w->dropped);
	pack_key(&w->pk, "format");
	if (w->format)
		pack_cstr(&w->pk, w->format);
	else
		msgpack_pack_nil(&w->pk);
	if (w->multi) {
		pack_key(&w->pk, "last_type");
		msgpack_pack_int64(&w->pk, w->last_type);
		pack_key(&w->pk, "formats");
		msgpack_pack_array(&w->pk, w->ntypes);
		for (uint32_t t = 0; t < w->ntypes; t++) {
			if (w->formats[t])
				pack_cstr(&w->pk, w->formats[t]);
			else
				msgpack_pack_nil(&w->pk);
		}
	}
	if (w->tail) {
		pack_key(&w->pk, "missed");
		msgpack_pack_uint64(&w->pk, w->missed);
		pack_key(&w->pk, "reset");
		if (w->reset)
			msgpack_pack_true(&w->pk);
		else
			msgpack_pack_false(&w->pk);
		pack_key(&w->pk, "cursors");
		pack_u64s(&w->pk, w->cursors, w->ncursors);
	}
	ret = sbuf_move(&w->head, out);
	if (ret == 0)
		ret = sbuf_move(&w->body, out);
	else
		msgpack_sbuffer_destroy(&w->body);
	if (ret < 0)
		out->len = mark;
	free(w->formats);
	free(w);
	return ret;
}

/* An error reply's map of @nkeys keys and its first five: ok code error pos len. */
static void pack_error(msgpack_packer *pk, uint32_t nkeys, int32_t code, const char *msg,
		       int32_t pos, int32_t len)
{
	msgpack_pack_map(pk, nkeys);
	pack_key(pk, "ok");
	msgpack_pack_false(pk);
	pack_key(pk, "code");
	msgpack_pack_int32(pk, code);
	pack_key(pk, "error");
	pack_cstr(pk, msg);
	pack_key(pk, "pos");
	msgpack_pack_int32(pk, pos);
	pack_key(pk, "len");
	msgpack_pack_int32(pk, len);
}

int qmsg_reply_error(int32_t code, const char *msg, int32_t pos, int32_t len,
		     struct proto_buf *out)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	pack_error(&pk, 5, code, msg, pos, len);
	return sbuf_move(&sb, out);
}

int qmsg_reply_error_stall(int32_t code, const char *msg, uint64_t unstored,
			   uint64_t journal_bytes, int64_t since_ns, const char *why,
			   struct proto_buf *out)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	pack_error(&pk, 9, code, msg, -1, -1);
	pack_key(&pk, "unstored");
	msgpack_pack_uint64(&pk, unstored);
	pack_key(&pk, "journal_bytes");
	msgpack_pack_uint64(&pk, journal_bytes);
	pack_stall(&pk, since_ns, why);
	return sbuf_move(&sb, out);
}

/* ---- reply decoding ---- */

/*
 * The bytes of a string or binary value, NUL-terminated, in @r's string
 * store (every string of a reply fits the message that carried it: each
 * costs a header byte or more there, as much as its NUL here).
 */
static char *take_bytes(struct qmsg_reply *r, const char *p, size_t n)
{
	char *s;

	if (n + 1 > r->strs_cap - r->strs_used)
		return NULL;
	s = r->strs + r->strs_used;
	memcpy(s, p, n);
	s[n] = 0;
	r->strs_used += n + 1;
	return s;
}

static int get_value(struct qmsg_reply *r, const msgpack_object *o, struct qmsg_value *v)
{
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		v->kind = QV_NIL;
		return 0;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		v->kind = QV_UINT;
		v->u = o->via.u64;
		return 0;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		v->kind = QV_INT;
		v->i = o->via.i64;
		return 0;
	case MSGPACK_OBJECT_STR:
	case MSGPACK_OBJECT_BIN:
		if (o->via.str.size > QMSG_MAX_STRING)
			return TC_ERR_MSG_MALFORMED;
		v->kind = o->type == MSGPACK_OBJECT_STR ? QV_STR : QV_BIN;
		v->s.p = take_bytes(r, o->type == MSGPACK_OBJECT_STR ? o->via.str.ptr :
				    o->via.bin.ptr, o->via.str.size);
		v->s.len = o->via.str.size;
		return v->s.p ? 0 : TC_ERR_MSG_MALFORMED;
	default:
		return TC_ERR_MSG_MALFORMED;
	}
}

/* "formats": one string or nil per type of "types", which came before */
static int get_formats(const msgpack_object *o, struct qmsg_reply *r)
{
	int ret = 0;

	if (o->type != MSGPACK_OBJECT_ARRAY || !r->types || o->via.array.size != r->ntypes)
		return TC_ERR_MSG_MALFORMED;
	for (uint32_t t = 0; ret == 0 && t < r->ntypes; t++)
		if (o->via.array.ptr[t].type != MSGPACK_OBJECT_NIL)
			ret = take_str(&o->via.array.ptr[t], &r->types[t].format);
	return ret;
}

/* "types": [[event, col...], ...], at most QMSG_MAX_TYPES */
static int get_types(const msgpack_object *o, struct qmsg_reply *r)
{
	uint32_t t, i;
	int ret;

	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size > QMSG_MAX_TYPES ||
	    r->types || r->vals)
		return TC_ERR_MSG_MALFORMED;
	r->types = calloc(o->via.array.size + 1, sizeof(*r->types));
	if (!r->types)
		return -ENOMEM;
	for (t = 0; t < o->via.array.size; t++) {
		const msgpack_object *a = &o->via.array.ptr[t];
		struct qmsg_type *ty = &r->types[t];

		if (a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size < 1 ||
		    a->via.array.size > QMSG_MAX_COLS + 1)
			return TC_ERR_MSG_MALFORMED;
		r->ntypes++;
		ret = take_str(&a->via.array.ptr[0], &ty->event);
		if (ret < 0)
			return ret;
		ty->cols = calloc(a->via.array.size, sizeof(*ty->cols));
		if (!ty->cols)
			return -ENOMEM;
		for (i = 1; i < a->via.array.size; i++, ty->ncols++) {
			ret = take_str(&a->via.array.ptr[i], &ty->cols[i - 1]);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

/* Multi-type rows: each is its type's index, then that type's values. */
static int get_typed_rows(const msgpack_object *o, struct qmsg_reply *r)
{
	uint32_t n = o->via.array.size, i = 0, t = 0;
	int ret;

	/* not cleared: only the first nvals values and nrows rows are read */
	r->vals = malloc((n ? n : 1) * sizeof(*r->vals));
	r->row_type = malloc(QMSG_MAX_ROWS * sizeof(*r->row_type));
	r->row_off = malloc(QMSG_MAX_ROWS * sizeof(*r->row_off));
	if (!r->vals || !r->row_type || !r->row_off)
		return -ENOMEM;
	while (i < n) {
		const msgpack_object *ix = &o->via.array.ptr[i++];

		if (r->nrows == QMSG_MAX_ROWS || proto_mp_u32(ix, &t) < 0 || t >= r->ntypes ||
		    n - i < r->types[t].ncols)
			return TC_ERR_MSG_MALFORMED;
		r->row_type[r->nrows] = t;
		r->row_off[r->nrows++] = r->nvals;
		for (uint32_t c = 0; c < r->types[t].ncols; c++) {
			ret = get_value(r, &o->via.array.ptr[i++], &r->vals[r->nvals]);
			if (ret < 0)
				return ret;
			r->nvals++;
		}
	}
	return 0;
}

/* Rows arrive flat (nrows * ncols values); "rows" must follow "cols". */
static int get_rows(const msgpack_object *o, struct qmsg_reply *r)
{
	uint32_t i, n;
	int ret;

	if (o->type != MSGPACK_OBJECT_ARRAY || !r->cols || r->vals)
		return TC_ERR_MSG_MALFORMED;
	if (r->types)
		return get_typed_rows(o, r);
	n = o->via.array.size;
	if (r->ncols == 0 ? n != 0 : (n % r->ncols || n / r->ncols > QMSG_MAX_ROWS))
		return TC_ERR_MSG_MALFORMED;
	r->vals = malloc((n ? n : 1) * sizeof(*r->vals));	/* the first nvals are read */
	if (!r->vals)
		return -ENOMEM;
	r->nrows = r->ncols ? n / r->ncols : 0;
	for (i = 0; i < n; i++) {
		ret = get_value(r, &o->via.array.ptr[i], &r->vals[i]);
		if (ret < 0)
			return ret;
		r->nvals++;
	}
	return 0;
}

static int reply_field(struct qmsg_reply *r, const msgpack_object_kv *kv, bool *has_ok)
{
	const msgpack_object *k = &kv->key, *v = &kv->val;

	if (proto_mp_str_is(k, "ok")) {
		*has_ok = true;
		return proto_mp_bool(v, &r->ok);
	}
	if (proto_mp_str_is(k, "more"))
		return proto_mp_bool(v, &r->more);
	if (proto_mp_str_is(k, "code"))
		return proto_mp_i32(v, &r->code);
	if (proto_mp_str_is(k, "error"))
		return take_str(v, &r->error);
	if (proto_mp_str_is(k, "pos"))
		return proto_mp_i32(v, &r->pos);
	if (proto_mp_str_is(k, "len"))
		return proto_mp_i32(v, &r->len);
	if (proto_mp_str_is(k, "event"))
		return v->type == MSGPACK_OBJECT_NIL ? 0 : take_str(v, &r->event);
	if (proto_mp_str_is(k, "cols"))
		return get_strs(v, QMSG_MAX_COLS, &r->cols, &r->ncols);
	if (proto_mp_str_is(k, "types"))
		return get_types(v, r);
	if (proto_mp_str_is(k, "last_type"))
		return proto_mp_i64(v, &r->last_type);
	if (proto_mp_str_is(k, "rows"))
		return get_rows(v, r);
	if (proto_mp_str_is(k, "last_ts"))
		return proto_mp_i64(v, &r->last_ts);
	if (proto_mp_str_is(k, "last_id"))
		return proto_mp_u64(v, &r->last_id);
	if (proto_mp_str_is(k, "count"))
		return proto_mp_u64(v, &r->count);
	if (proto_mp_str_is(k, "unstored"))
		return proto_mp_u64(v, &r->unstored);
	if (proto_mp_str_is(k, "journal_bytes"))
		return proto_mp_u64(v, &r->journal_bytes);
	if (proto_mp_str_is(k, "stalled_since"))
		return proto_mp_i64(v, &r->stalled_since);
	if (proto_mp_str_is(k, "stalled_why"))
		return v->type == MSGPACK_OBJECT_NIL ? 0 : take_str(v, &r->stalled_why);
	if (proto_mp_str_is(k, "entries"))
		return proto_mp_u64(v, &r->entries);
	if (proto_mp_str_is(k, "dropped"))
		return proto_mp_u64(v, &r->dropped);
	if (proto_mp_str_is(k, "missed"))
		return proto_mp_u64(v, &r->missed);
	if (proto_mp_str_is(k, "reset"))
		return proto_mp_bool(v, &r->reset);
	if (proto_mp_str_is(k, "cursors"))
		return get_u64s(v, r->cursors, &r->ncursors);
	if (proto_mp_str_is(k, "format"))
		return v->type == MSGPACK_OBJECT_NIL ? 0 : take_str(v, &r->format);
	if (proto_mp_str_is(k, "formats"))
		return get_formats(v, r);
	return 0;
}

int qmsg_reply_decode(const void *buf, size_t len, struct qmsg_reply *out)
{
	struct qmsg_reply r = { .pos = -1, .len = -1 };
	msgpack_unpacked res;
	bool has_ok = false;
	uint32_t i;
	int ret;

	ret = proto_mp_unpack_map(buf, len, &res);
	r.strs_cap = len;
	if (ret == 0 && !(r.strs = malloc(len ? len : 1)))
		ret = -ENOMEM;
	for (i = 0; ret == 0 && i < res.data.via.map.size; i++)
		ret = reply_field(&r, &res.data.via.map.ptr[i], &has_ok);
	msgpack_unpacked_destroy(&res);
	if (ret == 0 && !has_ok)
		ret = TC_ERR_MSG_MISSING;
	if (ret == 0 && !r.ok && !r.error)
		ret = TC_ERR_MSG_MISSING;
	if (ret < 0) {
		qmsg_reply_free(&r);
		return ret;
	}
	*out = r;
	return 0;
}

void qmsg_reply_free(struct qmsg_reply *r)
{
	uint32_t i;

	for (size_t v = 0; !r->strs && r->vals && v < r->nvals; v++)
		if (r->vals[v].kind == QV_STR || r->vals[v].kind == QV_BIN)
			free(r->vals[v].s.p);
	free(r->strs);
	for (i = 0; r->types && i < r->ntypes; i++) {
		free_strs(r->types[i].cols, r->types[i].ncols);
		free(r->types[i].event);
		free(r->types[i].format);
	}
	free(r->types);
	free(r->row_type);
	free(r->row_off);
	free_strs(r->cols, r->ncols);
	free(r->vals);
	free(r->error);
	free(r->event);
	free(r->format);
	free(r->stalled_why);
	memset(r, 0, sizeof(*r));
}

const struct qmsg_value *qmsg_reply_row(const struct qmsg_reply *r, uint32_t i,
					struct qmsg_reply *view)
{
	memset(view, 0, sizeof(*view));
	if (!r->types) {
		view->event = r->event;
		view->ncols = r->ncols;
		view->cols = r->cols;
		view->format = r->format;
		return &r->vals[(size_t)i * r->ncols];
	}
	view->event = r->types[r->row_type[i]].event;
	view->ncols = r->types[r->row_type[i]].ncols;
	view->cols = r->types[r->row_type[i]].cols;
	view->format = r->types[r->row_type[i]].format;
	return &r->vals[r->row_off[i]];
}
