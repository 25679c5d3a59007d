/*
 * msg.c - encode and decode control messages (see msg.h, PROTOCOL.md).
 *
 * Every message type is described once, in msg_table[]: its wire name and
 * a list of fields (msgpack key, value kind, whether it is required, where
 * it lives in struct proto_msg). The encoder, the decoder and
 * proto_msg_free() all walk that table, so adding a field is one line.
 *
 * Decoding treats the payload as hostile. Before msgpack-c sees it,
 * proto_msgpack_check() walks the bytes once and checks that they hold exactly one
 * complete msgpack object whose every container announces no more elements
 * than there are bytes left. msgpack-c allocates a container's element
 * array from its announced size before reading the elements, so without
 * that check five bytes could ask for a 100 GB array. After the scan,
 * msgpack_unpack_next() builds the object tree (msgpack-c also caps the
 * nesting depth), and the table-driven decoder copies out, range-checked,
 * only what it knows. The scan, the unpack step and the checked readers
 * (proto_mp_*) are also the query protocol's (qmsg.c), through the
 * proto-private msgpack_dec.h.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "common/tc_error.h"
#include "proto/frame.h"
#include "proto/msg.h"
#include "proto/msgpack_dec.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define MSG_MAX_KEYS	256	/* pairs in one message map */
#define MP_MAX_DEPTH	16	/* nesting of msgpack containers */
#define COMM_MAX	(sizeof(((struct proto_cmdline *)0)->comm) - 1)

enum field_kind {
	FK_U32,
	FK_U64,
	FK_I32,
	FK_I64,
	FK_BOOL,
	FK_STR,		/* char *, NUL-terminated */
	FK_TEXT,	/* char * plus a size_t length */
	FK_CMDLINES,	/* struct proto_cmdlines */
	FK_TGIDS,	/* struct proto_tgids */
};

enum field_need {
	OPTIONAL,
	REQUIRED,
	REQUIRED_V1,	/* required when the message's version is ours */
};

struct field {
	const char *key;
	enum field_kind kind;
	enum field_need need;
	size_t off;		/* offset in struct proto_msg */
	size_t len_off;		/* FK_TEXT: offset of the size_t length */
	size_t max;		/* FK_STR, FK_TEXT: longest value; 0: PROTO_MAX_STRING */
};

struct msg_desc {
	const char *name;
	const struct field *fields;
	size_t nfields;
	int (*check)(const struct proto_msg *m);	/* meaning, after types */
};

#define F(key, kind, need, member) \
	{ key, kind, need, offsetof(struct proto_msg, member), 0, 0 }
/* A string of at most @max bytes (PROTOCOL.md, "Limits"). */
#define FS(key, need, member, max) \
	{ key, FK_STR, need, offsetof(struct proto_msg, member), 0, max }
#define FTEXT(key, member, lenmember) \
	{ key, FK_TEXT, REQUIRED, offsetof(struct proto_msg, member), \
	  offsetof(struct proto_msg, lenmember), 0 }

static const struct field hello_fields[] = {
	F("v", FK_U32, REQUIRED, hello.version),
	FS("host", REQUIRED_V1, hello.host, PROTO_MAX_HOST),
	FS("machine_id", REQUIRED_V1, hello.machine_id, PROTO_MAX_NAME),
	FS("boot_id", REQUIRED_V1, hello.boot_id, PROTO_MAX_NAME),
	FS("kernel", REQUIRED_V1, hello.kernel, PROTO_MAX_NAME),
	FS("trace_clock", REQUIRED_V1, hello.trace_clock, PROTO_MAX_CLOCK),
	F("ncpus", FK_U32, REQUIRED_V1, hello.ncpus),
	F("page_size", FK_U32, REQUIRED_V1, hello.page_size),
	F("long_size", FK_U32, REQUIRED_V1, hello.long_size),
	F("big_endian", FK_BOOL, REQUIRED_V1, hello.big_endian),
	F("trace_ns", FK_U64, REQUIRED_V1, hello.clock.trace_ns),
	F("realtime_ns", FK_I64, REQUIRED_V1, hello.clock.realtime_ns),
	F("session", FK_U64, OPTIONAL, hello.session),
	F("pushdown", FK_BOOL, OPTIONAL, hello.pushdown),
	F("clock_probe", FK_BOOL, OPTIONAL, hello.clock_probe),
	F("tsc0", FK_U64, OPTIONAL, hello.tsc0),
	F("tsc_mono0", FK_U64, OPTIONAL, hello.tsc_mono0),
	F("tsc_mult", FK_U32, OPTIONAL, hello.tsc_mult),
	F("tsc_shift", FK_U32, OPTIONAL, hello.tsc_shift),
	FS("agent", OPTIONAL, hello.agent, PROTO_MAX_AGENT),
	F("recorder", FK_BOOL, OPTIONAL, hello.recorder),
	FS("group", OPTIONAL, hello.group, PROTO_MAX_GROUP),
};

static const struct field welcome_fields[] = {
	F("v", FK_U32, REQUIRED, welcome.version),
	F("host_id", FK_U64, REQUIRED, welcome.host_id),
	F("kallsyms", FK_BOOL, OPTIONAL, welcome.kallsyms),
	F("printk_formats", FK_BOOL, OPTIONAL, welcome.printk_formats),
	F("clock_probes", FK_U32, OPTIONAL, welcome.clock_probes),
	F("sym_modules", FK_BOOL, OPTIONAL, welcome.sym_modules),
};

static const struct field header_page_fields[] = {
	FTEXT("text", header_page.text, header_page.len),
	{ "header_event", FK_TEXT, OPTIONAL, offsetof(struct proto_msg, header_page.event),
	  offsetof(struct proto_msg, header_page.event_len), 0 },
};

static const struct field format_fields[] = {
	FS("system", REQUIRED, format.system, PROTO_MAX_EVENT_NAME),
	FS("name", REQUIRED, format.name, PROTO_MAX_EVENT_NAME),
	FTEXT("text", format.text, format.len),
	F("group", FK_U32, OPTIONAL, format.group),
};

static const struct field cmdlines_fields[] = {
	F("cmdlines", FK_CMDLINES, REQUIRED, cmdlines),
	F("tgids", FK_TGIDS, OPTIONAL, cmdlines.tgids),
};

static const struct field clock_fields[] = {
	F("trace_ns", FK_U64, REQUIRED, clock.trace_ns),
	F("realtime_ns", FK_I64, REQUIRED, clock.realtime_ns),
};

static const struct field cpu_stats_fields[] = {
	F("cpu", FK_U32, REQUIRED, cpu_stats.cpu),
	F("pages", FK_U64, REQUIRED, cpu_stats.pages),
	F("events", FK_U64, REQUIRED, cpu_stats.events),
	F("bytes", FK_U64, REQUIRED, cpu_stats.bytes),
	F("overrun", FK_U64, REQUIRED, cpu_stats.overrun),
	F("dropped", FK_U64, REQUIRED, cpu_stats.dropped),
	F("commit_overrun", FK_U64, REQUIRED, cpu_stats.commit_overrun),
	F("resent_pages", FK_U64, OPTIONAL, cpu_stats.resent_pages),
	F("lost_pages", FK_U64, OPTIONAL, cpu_stats.lost_pages),
	F("lost_events", FK_U64, OPTIONAL, cpu_stats.lost_events),
	F("pages_mmap", FK_U64, OPTIONAL, cpu_stats.pages_mmap),
	F("pages_splice", FK_U64, OPTIONAL, cpu_stats.pages_splice),
	F("pages_read", FK_U64, OPTIONAL, cpu_stats.pages_read),
	F("copied_bytes", FK_U64, OPTIONAL, cpu_stats.copied_bytes),
};

static const struct field bye_fields[] = {
	F("pages", FK_U64, REQUIRED, bye.pages),
	F("events", FK_U64, REQUIRED, bye.events),
};

static const struct field done_fields[] = {
	F("pages", FK_U64, REQUIRED, done.pages),
	F("events", FK_U64, REQUIRED, done.events),
	F("journaled", FK_BOOL, OPTIONAL, done.journaled),
};

static const struct field error_fields[] = {
	F("code", FK_I32, REQUIRED, error.code),
	FS("text", OPTIONAL, error.text, PROTO_MAX_ERROR_TEXT),
};

static const struct field group_fields[] = {
	F("group", FK_U32, REQUIRED, group.group),
	F("pid", FK_I32, REQUIRED, group.pid),
	FS("comm", REQUIRED, group.comm, PROTO_MAX_NAME),
	FS("clock", REQUIRED, group.clock, PROTO_MAX_CLOCK),
	F("tsc0", FK_U64, REQUIRED, group.tsc0),
	F("mono0", FK_U64, REQUIRED, group.mono0),
	F("mult", FK_U32, REQUIRED, group.mult),
	F("shift", FK_U32, REQUIRED, group.shift),
	F("first_stream", FK_U32, REQUIRED, group.first_stream),
	F("nstreams", FK_U32, REQUIRED, group.nstreams),
	F("page_size", FK_U32, REQUIRED, group.page_size),
};

static const struct field ack_fields[] = {
	F("stream", FK_U32, REQUIRED, ack.stream),
	F("seq", FK_U64, REQUIRED, ack.seq),
};

static const struct field symbols_fields[] = {
	F("group", FK_U32, REQUIRED, symbols.group),
	FTEXT("text", symbols.text, symbols.len),
};

static const struct field printk_fields[] = {
	FTEXT("text", printk.text, printk.len),
};

static const struct field filter_fields[] = {
	FS("system", REQUIRED, filter.system, PROTO_MAX_EVENT_NAME),
	FS("name", REQUIRED, filter.name, PROTO_MAX_EVENT_NAME),
	FS("text", REQUIRED, filter.text, PROTO_MAX_FILTER),
};

static const struct field filter_status_fields[] = {
	FS("system", REQUIRED, filter_status.system, PROTO_MAX_EVENT_NAME),
	FS("name", REQUIRED, filter_status.name, PROTO_MAX_EVENT_NAME),
	FS("text", REQUIRED, filter_status.text, PROTO_MAX_FILTER),
	F("ok", FK_BOOL, REQUIRED, filter_status.ok),
	FS("error", OPTIONAL, filter_status.error, PROTO_MAX_FILTER_ERROR),
};

static const struct field clock_probe_fields[] = {
	F("id", FK_U64, REQUIRED, clock_probe.id),
};

static const struct field clock_echo_fields[] = {
	F("id", FK_U64, REQUIRED, clock_echo.id),
	F("recv_ns", FK_U64, REQUIRED, clock_echo.recv_ns),
	F("send_ns", FK_U64, REQUIRED, clock_echo.send_ns),
};

static const struct field clock_measure_fields[] = {
	F("trace_ns", FK_U64, REQUIRED, clock_measure.trace_ns),
	F("realtime_ns", FK_I64, REQUIRED, clock_measure.realtime_ns),
	F("uncertainty_ns", FK_U64, REQUIRED, clock_measure.uncertainty_ns),
	F("probes", FK_U64, REQUIRED, clock_measure.probes),
};

static const struct field freeze_fields[] = {
	F("id", FK_U64, REQUIRED, freeze.id),
	F("asked_ns", FK_I64, REQUIRED, freeze.asked_ns),
	FS("reason", OPTIONAL, freeze.reason, PROTO_MAX_REASON),
	FS("who", OPTIONAL, freeze.who, PROTO_MAX_REASON),
	F("thaw", FK_BOOL, OPTIONAL, freeze.thaw),
};

static const struct field snap_begin_fields[] = {
	F("id", FK_U64, REQUIRED, snap_begin.id),
	F("frozen_ns", FK_U64, REQUIRED, snap_begin.frozen_ns),
};

static const struct field snap_end_fields[] = {
	F("id", FK_U64, REQUIRED, snap_end.id),
	F("pages", FK_U64, REQUIRED, snap_end.pages),
	F("events", FK_U64, REQUIRED, snap_end.events),
	F("lost", FK_U64, REQUIRED, snap_end.lost),
	F("first_ns", FK_U64, REQUIRED, snap_end.first_ns),
	F("last_ns", FK_U64, REQUIRED, snap_end.last_ns),
	F("off_ns", FK_U64, OPTIONAL, snap_end.off_ns),
};

static const struct field froze_fields[] = {
	FS("event", REQUIRED, froze.event, 2 * PROTO_MAX_EVENT_NAME + 1),
	F("trace_ns", FK_U64, REQUIRED, froze.trace_ns),
};

/* msg_dec_fields() tracks the keys it has seen in a 32-bit mask. */
_Static_assert(ARRAY_SIZE(hello_fields) <= 32, "too many fields");
_Static_assert(ARRAY_SIZE(cpu_stats_fields) <= 32, "too many fields");

#define MSG(type, name, fields) \
	[type] = { name, fields, ARRAY_SIZE(fields), NULL }
#define MSGC(type, name, fields, check) \
	[type] = { name, fields, ARRAY_SIZE(fields), check }

/*
 * An event's system or name as it appears in a tracefs path: 1 to
 * PROTO_MAX_EVENT_NAME bytes of [A-Za-z0-9_.-], not starting with '.', so
 * that an agent can use it as a path component of its instance as is.
 */
static bool event_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > PROTO_MAX_EVENT_NAME || s[0] == '.')
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.-") == n;
}

/* MSG_FILTER and MSG_FILTER_STATUS: names fit a path, a filter fits the kernel. */
static int filter_keys_ok(const char *system, const char *name, const char *text)
{
	if (!system || !name || !event_name_ok(system) || !event_name_ok(name) ||
	    (text && strlen(text) > PROTO_MAX_FILTER))
		return TC_ERR_MSG_MALFORMED;
	return 0;
}

static int check_filter(const struct proto_msg *m)
{
	return filter_keys_ok(m->filter.system, m->filter.name, m->filter.text);
}

static int check_filter_status(const struct proto_msg *m)
{
	const struct proto_filter_status *f = &m->filter_status;

	return filter_keys_ok(f->system, f->name, f->text);
}

/* MSG_CLOCK_ECHO: the answer is written after the probe was read. */
static int check_clock_echo(const struct proto_msg *m)
{
	return m->clock_echo.send_ns >= m->clock_echo.recv_ns ? 0 : TC_ERR_MSG_MALFORMED;
}

/* MSG_CLOCK_MEASURE: times the sink can add and subtract without overflow. */
static int check_clock_measure(const struct proto_msg *m)
{
	const struct proto_clock_measure *c = &m->clock_measure;

	return c->trace_ns <= INT64_MAX && c->uncertainty_ns <= INT64_MAX ? 0 :
	       TC_ERR_MSG_MALFORMED;
}

/* A snapshot id is never 0 (0 means "every snapshot" to queries). */
static int check_freeze(const struct proto_msg *m)
{
	return m->freeze.id ? 0 : TC_ERR_MSG_MALFORMED;
}

/* MSG_SNAP_END: an id, and a window in order (times the sink can convert). */
static int check_snap_end(const struct proto_msg *m)
{
	const struct proto_snap_end *e = &m->snap_end;

	return e->id && e->first_ns <= e->last_ns && e->last_ns <= INT64_MAX &&
	       e->off_ns <= INT64_MAX ? 0 : TC_ERR_MSG_MALFORMED;
}

static const struct msg_desc msg_table[] = {
	MSG(MSG_HELLO, "hello", hello_fields),
	MSG(MSG_WELCOME, "welcome", welcome_fields),
	MSG(MSG_HEADER_PAGE, "header_page", header_page_fields),
	MSG(MSG_FORMAT, "format", format_fields),
	MSG(MSG_CMDLINES, "cmdlines", cmdlines_fields),
	MSG(MSG_CLOCK, "clock", clock_fields),
	MSG(MSG_CPU_STATS, "cpu_stats", cpu_stats_fields),
	MSG(MSG_BYE, "bye", bye_fields),
	MSG(MSG_DONE, "done", done_fields),
	MSG(MSG_ERROR, "error", error_fields),
	MSG(MSG_ACK, "ack", ack_fields),
	MSG(MSG_GROUP, "group", group_fields),
	MSG(MSG_SYMBOLS, "symbols", symbols_fields),
	MSGC(MSG_FILTER, "filter", filter_fields, check_filter),
	MSGC(MSG_FILTER_STATUS, "filter_status", filter_status_fields,
	     check_filter_status),
	MSG(MSG_PRINTK, "printk_formats", printk_fields),
	MSG(MSG_CLOCK_PROBE, "clock_probe", clock_probe_fields),
	MSGC(MSG_CLOCK_ECHO, "clock_echo", clock_echo_fields, check_clock_echo),
	MSGC(MSG_CLOCK_MEASURE, "clock_measure", clock_measure_fields,
	     check_clock_measure),
	MSGC(MSG_FREEZE, "freeze", freeze_fields, check_freeze),
	MSG(MSG_SNAP_BEGIN, "snap_begin", snap_begin_fields),
	MSGC(MSG_SNAP_END, "snap_end", snap_end_fields, check_snap_end),
	MSG(MSG_FROZE, "froze", froze_fields),
};

static const struct msg_desc *msg_desc_get(enum proto_msg_type type)
{
	if ((size_t)type >= ARRAY_SIZE(msg_table) || !msg_table[type].name)
		return NULL;
	return &msg_table[type];
}

const char *proto_msg_name(enum proto_msg_type type)
{
	const struct msg_desc *d = msg_desc_get(type);

	return d ? d->name : "unknown";
}

/* Field access through the table's offsets. */
#define FIELD(m, off, T)	((T *)((char *)(m) + (off)))
#define CFIELD(m, off, T)	((const T *)((const char *)(m) + (off)))

/* ---- proto_buf ---------------------------------------------------------- */

void proto_buf_init(struct proto_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void proto_buf_free(struct proto_buf *b)
{
	free(b->data);
	proto_buf_init(b);
}

static int proto_buf_reserve(struct proto_buf *b, size_t extra)
{
	size_t cap = b->cap ? b->cap : 256;
	uint8_t *p;

	if (extra > SIZE_MAX - b->len)
		return -ENOMEM;
	if (b->len + extra <= b->cap)
		return 0;
	while (cap < b->len + extra)
		cap = cap > SIZE_MAX / 2 ? b->len + extra : cap * 2;
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int proto_buf_append(struct proto_buf *b, const void *p, size_t len)
{
	int ret = proto_buf_reserve(b, len);

	if (ret == 0 && len) {
		memcpy(b->data + b->len, p, len);
		b->len += len;
	}
	return ret;
}

/* ---- encoding ----------------------------------------------------------- */

/*
 * The packer writes straight into the caller's proto_buf, after the frame
 * header it reserved, and refuses to grow the payload past
 * FRAME_MAX_PAYLOAD; enc.err says why a write failed.
 */
struct enc {
	struct proto_buf *b;
	size_t payload_start;
	int err;
};

static int enc_write(void *data, const char *buf, size_t len)
{
	struct enc *e = data;
	size_t used = e->b->len - e->payload_start;

	if (len > FRAME_MAX_PAYLOAD - used) {
		e->err = TC_ERR_TOO_LONG;
		return -1;
	}
	if (proto_buf_reserve(e->b, len) < 0) {
		e->err = -ENOMEM;
		return -1;
	}
	memcpy(e->b->data + e->b->len, buf, len);
	e->b->len += len;
	return 0;
}

/* The longest value field @f may hold. */
static size_t field_max(const struct field *f)
{
	return f->max ? f->max : PROTO_MAX_STRING;
}

static int enc_str(msgpack_packer *pk, const char *s, size_t len)
{
	if (len > PROTO_MAX_STRING)
		return TC_ERR_TOO_LONG;
	if (len && memchr(s, '\0', len))
		return TC_ERR_MSG_MALFORMED;
	if (msgpack_pack_str(pk, len) < 0 ||
	    msgpack_pack_str_body(pk, len ? s : "", len) < 0)
		return -1;
	return 0;
}

static int enc_cmdlines(msgpack_packer *pk, const struct proto_cmdlines *c)
{
	const struct proto_cmdline *it;
	uint32_t i;
	int rc;

	if (c->count > PROTO_MAX_CMDLINES)
		return TC_ERR_TOO_LONG;
	if (msgpack_pack_array(pk, c->count) < 0)
		return -1;
	for (i = 0; i < c->count; i++) {
		it = &c->items[i];
		if (msgpack_pack_array(pk, 2) < 0 ||
		    msgpack_pack_int32(pk, it->pid) < 0)
			return -1;
		rc = enc_str(pk, it->comm, strnlen(it->comm, COMM_MAX));
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int enc_tgids(msgpack_packer *pk, const struct proto_tgids *t)
{
	uint32_t i;

	if (t->count > PROTO_MAX_TGIDS)
		return TC_ERR_TOO_LONG;
	if (msgpack_pack_array(pk, t->count) < 0)
		return -1;
	for (i = 0; i < t->count; i++)
		if (msgpack_pack_array(pk, 2) < 0 ||
		    msgpack_pack_int32(pk, t->items[i].pid) < 0 ||
		    msgpack_pack_int32(pk, t->items[i].tgid) < 0)
			return -1;
	return 0;
}

/* Pack one field's value; -1 means the write callback failed. */
static int enc_value(msgpack_packer *pk, const struct field *f,
		     const struct proto_msg *m)
{
	const char *s;

	switch (f->kind) {
	case FK_U32:
		return msgpack_pack_uint32(pk, *CFIELD(m, f->off, uint32_t));
	case FK_U64:
		return msgpack_pack_uint64(pk, *CFIELD(m, f->off, uint64_t));
	case FK_I32:
		return msgpack_pack_int32(pk, *CFIELD(m, f->off, int32_t));
	case FK_I64:
		return msgpack_pack_int64(pk, *CFIELD(m, f->off, int64_t));
	case FK_BOOL:
		return *CFIELD(m, f->off, bool) ? msgpack_pack_true(pk)
						 : msgpack_pack_false(pk);
	case FK_STR:
		s = *CFIELD(m, f->off, char *);
		if (s && strlen(s) > field_max(f))
			return TC_ERR_TOO_LONG;
		return enc_str(pk, s, s ? strlen(s) : 0);
	case FK_TEXT:
		s = *CFIELD(m, f->off, char *);
		return enc_str(pk, s, s ? *CFIELD(m, f->len_off, size_t) : 0);
	case FK_CMDLINES:
		return enc_cmdlines(pk, CFIELD(m, f->off, struct proto_cmdlines));
	case FK_TGIDS:
		return enc_tgids(pk, CFIELD(m, f->off, struct proto_tgids));
	}
	return TC_ERR_MSG_UNKNOWN;
}

static int enc_map(msgpack_packer *pk, const struct msg_desc *d,
		   const struct proto_msg *m)
{
	size_t i;
	int rc;

	if (msgpack_pack_map(pk, d->nfields + 1) < 0 ||
	    enc_str(pk, "t", 1) < 0 ||
	    enc_str(pk, d->name, strlen(d->name)) < 0)
		return -1;
	for (i = 0; i < d->nfields; i++) {
		rc = enc_str(pk, d->fields[i].key, strlen(d->fields[i].key));
		if (rc == 0)
			rc = enc_value(pk, &d->fields[i], m);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int proto_msg_encode(const struct proto_msg *m, struct proto_buf *out)
{
	const struct msg_desc *d = msg_desc_get(m->type);
	struct frame_hdr h = { .type = FRAME_MSG };
	struct enc e = { .b = out };
	size_t old_len = out->len;
	msgpack_packer pk;
	int rc;

	if (!d)
		return TC_ERR_MSG_UNKNOWN;
	if (d->check && d->check(m) < 0)
		return TC_ERR_MSG_MALFORMED;
	rc = proto_buf_reserve(out, FRAME_HDR_SIZE);
	if (rc < 0)
		return rc;
	out->len += FRAME_HDR_SIZE;
	e.payload_start = out->len;
	msgpack_packer_init(&pk, &e, enc_write);
	rc = enc_map(&pk, d, m);
	if (rc == -1)
		rc = e.err;
	if (rc < 0)
		goto out;
	h.len = (uint32_t)(out->len - e.payload_start);
	frame_hdr_pack(&h, out->data + old_len);
out:
	if (rc < 0)
		out->len = old_len;
	return rc;
}

/* ---- pre-scan of untrusted msgpack -------------------------------------- */

enum mp_kind { MP_FIXED, MP_BODY, MP_ARRAY, MP_MAP };

/* Tags 0xc4..0xdf: header size, width of the length field, kind. */
static const struct {
	uint8_t hdr;
	uint8_t lenw;
	uint8_t kind;
} mp_tags[] = {
	[0x04] = { 2, 1, MP_BODY },  [0x05] = { 3, 2, MP_BODY },  /* bin */
	[0x06] = { 5, 4, MP_BODY },
	[0x07] = { 3, 1, MP_BODY },  [0x08] = { 4, 2, MP_BODY },  /* ext */
	[0x09] = { 6, 4, MP_BODY },
	[0x0a] = { 5, 0, MP_FIXED }, [0x0b] = { 9, 0, MP_FIXED }, /* float */
	[0x0c] = { 2, 0, MP_FIXED }, [0x0d] = { 3, 0, MP_FIXED }, /* uint */
	[0x0e] = { 5, 0, MP_FIXED }, [0x0f] = { 9, 0, MP_FIXED },
	[0x10] = { 2, 0, MP_FIXED }, [0x11] = { 3, 0, MP_FIXED }, /* int */
	[0x12] = { 5, 0, MP_FIXED }, [0x13] = { 9, 0, MP_FIXED },
	[0x14] = { 3, 0, MP_FIXED }, [0x15] = { 4, 0, MP_FIXED }, /* fixext */
	[0x16] = { 6, 0, MP_FIXED }, [0x17] = { 10, 0, MP_FIXED },
	[0x18] = { 18, 0, MP_FIXED },
	[0x19] = { 2, 1, MP_BODY },  [0x1a] = { 3, 2, MP_BODY },  /* str */
	[0x1b] = { 5, 4, MP_BODY },
	[0x1c] = { 3, 2, MP_ARRAY }, [0x1d] = { 5, 4, MP_ARRAY },
	[0x1e] = { 3, 2, MP_MAP },   [0x1f] = { 5, 4, MP_MAP },
};

static uint64_t mp_be(const uint8_t *p, unsigned width)
{
	uint64_t v = 0;

	while (width--)
		v = (v << 8) | *p++;
	return v;
}

/*
 * mp_head - measure the object header at @p (@left > 0 bytes available):
 * its size, the raw bytes that follow it, and how many nested objects
 * follow it. Return: 0, or -1 for an invalid tag or a cut header.
 */
static int mp_head(const uint8_t *p, size_t left, size_t *hdr,
		   uint64_t *body, uint64_t *children)
{
	uint8_t b = p[0];
	uint64_t n;

	*hdr = 1;
	*body = 0;
	*children = 0;
	if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
		return 0;
	if (b <= 0x9f) {	/* fixmap, fixarray */
		*children = (b <= 0x8f ? 2u : 1u) * (b & 0x0f);
		return 0;
	}
	if (b <= 0xbf) {	/* fixstr */
		*body = b & 0x1f;
		return 0;
	}
	if (b < 0xc4)
		return -1;	/* 0xc1 is never used */
	b -= 0xc0;
	*hdr = mp_tags[b].hdr;
	if (*hdr > left)
		return -1;
	n = mp_be(p + 1, mp_tags[b].lenw);
	if (mp_tags[b].kind == MP_BODY)
		*body = n;
	else if (mp_tags[b].kind != MP_FIXED)
		*children = (mp_tags[b].kind == MP_MAP ? 2 : 1) * n;
	return 0;
}

/*
 * msgpack-c has its own, deeper, nesting limit but reports it as
 * out-of-memory; see proto_msgpack_check() in msg.h for the rest.
 */
int proto_msgpack_check(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t left[MP_MAX_DEPTH + 1], pending = 1, body, children;
	unsigned depth = 0;
	size_t off = 0, hdr;

	left[0] = 1;
	while (pending > 0) {
		while (left[depth] == 0)
			depth--;
		if (off >= len || mp_head(p + off, len - off, &hdr, &body,
					  &children) < 0)
			return -1;
		if (body > len - off - hdr)
			return -1;
		off += hdr + (size_t)body;
		left[depth]--;
		pending = pending - 1 + children;
		if (pending > len - off)
			return -1;
		if (children && ++depth > MP_MAX_DEPTH)
			return -1;
		if (children)
			left[depth] = children;
	}
	return off == len ? 0 : -1;
}

/* ---- decoding ----------------------------------------------------------- */

/*
 * The checked readers of msgpack_dec.h, shared with the query protocol
 * (qmsg.c): the contract is written there.
 */
int proto_mp_unpack(const void *buf, size_t len, msgpack_unpacked *res)
{
	msgpack_unpack_return ret;
	size_t off = 0;

	msgpack_unpacked_init(res);
	if (proto_msgpack_check(buf, len) < 0)
		return TC_ERR_MSG_MALFORMED;
	ret = msgpack_unpack_next(res, buf, len, &off);
	if (ret == MSGPACK_UNPACK_NOMEM_ERROR)
		return -ENOMEM;
	if (ret != MSGPACK_UNPACK_SUCCESS || off != len)
		return TC_ERR_MSG_MALFORMED;
	return 0;
}

bool proto_mp_str_is(const msgpack_object *o, const char *s)
{
	size_t n = strlen(s);

	return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n &&
	       memcmp(o->via.str.ptr, s, n) == 0;
}

int proto_mp_uint(const msgpack_object *o, uint64_t max, uint64_t *v)
{
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > max)
		return TC_ERR_MSG_MALFORMED;
	*v = o->via.u64;
	return 0;
}

int proto_mp_int(const msgpack_object *o, int64_t min, int64_t max, int64_t *v)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
	    o->via.u64 <= (uint64_t)max)
		*v = (int64_t)o->via.u64;
	else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER &&
		 o->via.i64 >= min)
		*v = o->via.i64;
	else
		return TC_ERR_MSG_MALFORMED;
	return 0;
}

int proto_mp_str_check(const msgpack_object *o, size_t max)
{
	if (o->type != MSGPACK_OBJECT_STR || o->via.str.size > max)
		return TC_ERR_MSG_MALFORMED;
	if (o->via.str.size && memchr(o->via.str.ptr, '\0', o->via.str.size))
		return TC_ERR_MSG_MALFORMED;
	return 0;
}

int proto_mp_str(const msgpack_object *o, size_t max, char **out, size_t *len)
{
	int rc = proto_mp_str_check(o, max);
	char *s;

	if (rc < 0)
		return rc;
	s = malloc(o->via.str.size + 1);
	if (!s)
		return -ENOMEM;
	if (o->via.str.size)
		memcpy(s, o->via.str.ptr, o->via.str.size);
	s[o->via.str.size] = '\0';
	*out = s;
	if (len)
		*len = o->via.str.size;
	return 0;
}

int proto_mp_take_str(const msgpack_object *o, size_t max, char **out)
{
	char *s;
	int ret = proto_mp_str(o, max, &s, NULL);

	if (ret == 0) {
		free(*out);
		*out = s;
	}
	return ret;
}

/* One [pid, comm] pair of a CMDLINES message. */
static int dec_cmdline(const msgpack_object *o, struct proto_cmdline *out)
{
	const msgpack_object *pair = o->via.array.ptr;
	int32_t pid;
	int rc;

	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 2)
		return TC_ERR_MSG_MALFORMED;
	rc = proto_mp_i32(&pair[0], &pid);
	if (rc == 0)
		rc = proto_mp_str_check(&pair[1], COMM_MAX);
	if (rc < 0)
		return rc;
	out->pid = pid;
	memset(out->comm, 0, sizeof(out->comm));
	if (pair[1].via.str.size)
		memcpy(out->comm, pair[1].via.str.ptr, pair[1].via.str.size);
	return 0;
}

/*
 * An array of at most @max elements of @size bytes, each decoded by @one,
 * into *@items (calloc'd) and *@n. The count is capped before the array
 * is allocated.
 */
static int dec_array(const msgpack_object *o, uint32_t max, size_t size,
		     int (*one)(const msgpack_object *o, void *item), void **items, uint32_t *n)
{
	uint32_t i, len;
	char *v;
	int rc = 0;

	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size > max)
		return TC_ERR_MSG_MALFORMED;
	len = o->via.array.size;
	v = calloc(len ? len : 1, size);
	if (!v)
		return -ENOMEM;
	for (i = 0; i < len && rc == 0; i++)
		rc = one(&o->via.array.ptr[i], v + i * size);
	if (rc < 0) {
		free(v);
		return rc;
	}
	*items = v;
	*n = len;
	return 0;
}

static int dec_cmdline_item(const msgpack_object *o, void *item)
{
	return dec_cmdline(o, item);
}

/* One [pid, tgid] pair of a CMDLINES message's "tgids". */
static int dec_tgid(const msgpack_object *o, struct proto_tgid *out)
{
	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 2)
		return TC_ERR_MSG_MALFORMED;
	return proto_mp_i32(&o->via.array.ptr[0], &out->pid) ?:
	       proto_mp_i32(&o->via.array.ptr[1], &out->tgid);
}

static int dec_tgid_item(const msgpack_object *o, void *item)
{
	return dec_tgid(o, item);
}

static int dec_cmdlines(const msgpack_object *o, struct proto_cmdlines *out)
{
	return dec_array(o, PROTO_MAX_CMDLINES, sizeof(*out->items), dec_cmdline_item,
			 (void **)&out->items, &out->count);
}

static int dec_tgids(const msgpack_object *o, struct proto_tgids *out)
{
	return dec_array(o, PROTO_MAX_TGIDS, sizeof(*out->items), dec_tgid_item,
			 (void **)&out->items, &out->count);
}

static int dec_value(const msgpack_object *o, const struct field *f,
		     struct proto_msg *m)
{
	switch (f->kind) {
	case FK_U32:
		return proto_mp_u32(o, FIELD(m, f->off, uint32_t));
	case FK_U64:
		return proto_mp_u64(o, FIELD(m, f->off, uint64_t));
	case FK_I32:
		return proto_mp_i32(o, FIELD(m, f->off, int32_t));
	case FK_I64:
		return proto_mp_i64(o, FIELD(m, f->off, int64_t));
	case FK_BOOL:
		return proto_mp_bool(o, FIELD(m, f->off, bool));
	case FK_STR:
		return proto_mp_str(o, field_max(f), FIELD(m, f->off, char *), NULL);
	case FK_TEXT:
		return proto_mp_str(o, field_max(f), FIELD(m, f->off, char *),
				    FIELD(m, f->len_off, size_t));
	case FK_CMDLINES:
		return dec_cmdlines(o, FIELD(m, f->off, struct proto_cmdlines));
	case FK_TGIDS:
		return dec_tgids(o, FIELD(m, f->off, struct proto_tgids));
	}
	return TC_ERR_MSG_MALFORMED;
}

/*
 * msg_find_type - the descriptor named by the map's "t" key. Every key must
 * be a string and "t" must appear once, as a string.
 */
static int msg_find_type(const msgpack_object_map *map,
			 enum proto_msg_type *type)
{
	const msgpack_object *t = NULL;
	size_t i;

	for (i = 0; i < map->size; i++) {
		if (map->ptr[i].key.type != MSGPACK_OBJECT_STR)
			return TC_ERR_MSG_MALFORMED;
		if (!proto_mp_str_is(&map->ptr[i].key, "t"))
			continue;
		if (t || map->ptr[i].val.type != MSGPACK_OBJECT_STR)
			return TC_ERR_MSG_MALFORMED;
		t = &map->ptr[i].val;
	}
	if (!t)
		return TC_ERR_MSG_MISSING;
	for (i = 0; i < ARRAY_SIZE(msg_table); i++) {
		if (msg_table[i].name && proto_mp_str_is(t, msg_table[i].name)) {
			*type = (enum proto_msg_type)i;
			return 0;
		}
	}
	return TC_ERR_MSG_UNKNOWN;
}

/* Where a decoder says why it refused a message: @buf of @len bytes, or none. */
struct dec_why {
	char *buf;
	size_t len;
};

__attribute__((format(printf, 2, 3)))
static void why_set(struct dec_why *w, const char *fmt, ...)
{
	va_list ap;

	if (!w->buf || !w->len)
		return;
	va_start(ap, fmt);
	vsnprintf(w->buf, w->len, fmt, ap);
	va_end(ap);
}

/* Why the value @o of field @f of a @d message was refused (dec_value's @rc). */
static void why_field(struct dec_why *w, const struct msg_desc *d, const struct field *f,
		      const msgpack_object *o, int rc)
{
	if (rc == -ENOMEM)
		return;
	if ((f->kind == FK_STR || f->kind == FK_TEXT) && o->type == MSGPACK_OBJECT_STR &&
	    o->via.str.size > field_max(f))
		why_set(w, "%s: '%s' of %u bytes is over the limit of %zu bytes", d->name,
			f->key, o->via.str.size, field_max(f));
	else if ((f->kind == FK_STR || f->kind == FK_TEXT) && o->type == MSGPACK_OBJECT_STR)
		why_set(w, "%s: '%s' holds a NUL byte", d->name, f->key);
	else
		why_set(w, "%s: '%s' has the wrong type or is out of range", d->name, f->key);
}

/* Decode the known keys of @map into @m; a known key may appear once. */
static int msg_dec_fields(const msgpack_object_map *map,
			  const struct msg_desc *d, struct proto_msg *m,
			  uint32_t *seen, struct dec_why *w)
{
	size_t i, j;
	int rc;

	for (i = 0; i < map->size; i++) {
		for (j = 0; j < d->nfields; j++)
			if (proto_mp_str_is(&map->ptr[i].key, d->fields[j].key))
				break;
		if (j == d->nfields)
			continue;	/* "t" or a key from a newer peer */
		if (*seen & (1u << j)) {
			why_set(w, "%s: '%s' appears twice", d->name, d->fields[j].key);
			return TC_ERR_MSG_MALFORMED;
		}
		*seen |= 1u << j;
		rc = dec_value(&map->ptr[i].val, &d->fields[j], m);
		if (rc < 0) {
			why_field(w, d, &d->fields[j], &map->ptr[i].val, rc);
			return rc;
		}
	}
	return 0;
}

/*
 * msg_dec_absent - check that required fields were present and give absent
 * string fields an empty string, so decoded strings are never NULL. A
 * HELLO of another version needs only "v": the collector must be able to
 * read the version to refuse it properly.
 */
static int msg_dec_absent(const struct msg_desc *d, struct proto_msg *m,
			  uint32_t seen, struct dec_why *w)
{
	bool v1 = m->type != MSG_HELLO || m->hello.version == PROTO_VERSION;
	const struct field *f;
	size_t j;

	for (j = 0; j < d->nfields; j++) {
		f = &d->fields[j];
		if (seen & (1u << j))
			continue;
		if (f->need == REQUIRED || (f->need == REQUIRED_V1 && v1)) {
			why_set(w, "%s: required '%s' missing", d->name, f->key);
			return TC_ERR_MSG_MISSING;
		}
		if (f->kind != FK_STR && f->kind != FK_TEXT)
			continue;
		*FIELD(m, f->off, char *) = strdup("");
		if (!*FIELD(m, f->off, char *))
			return -ENOMEM;
	}
	return 0;
}

static int msg_from_object(const msgpack_object *o, struct proto_msg *out,
			   struct dec_why *w)
{
	const msgpack_object_map *map = &o->via.map;
	enum proto_msg_type type;
	struct proto_msg m;
	uint32_t seen = 0;
	int rc;

	if (o->type != MSGPACK_OBJECT_MAP || map->size > MSG_MAX_KEYS)
		return TC_ERR_MSG_MALFORMED;
	rc = msg_find_type(map, &type);
	if (rc < 0)
		return rc;
	memset(&m, 0, sizeof(m));
	m.type = type;
	rc = msg_dec_fields(map, &msg_table[type], &m, &seen, w);
	if (rc == 0)
		rc = msg_dec_absent(&msg_table[type], &m, seen, w);
	if (rc == 0 && msg_table[type].check && (rc = msg_table[type].check(&m)) < 0)
		why_set(w, "%s: system or name not [A-Za-z0-9_.-], or filter text too long",
			msg_table[type].name);
	if (rc < 0) {
		proto_msg_free(&m);
		return rc;
	}
	*out = m;
	return 0;
}

int proto_msg_decode_why(const void *payload, size_t len, struct proto_msg *out,
			 char *why, size_t whylen)
{
	struct dec_why w = { why, whylen };
	msgpack_unpacked u;
	int rc;

	if (why && whylen)
		why[0] = '\0';
	if (len > FRAME_MAX_PAYLOAD)
		return TC_ERR_MSG_MALFORMED;
	rc = proto_mp_unpack(payload, len, &u);
	if (rc == 0)
		rc = msg_from_object(&u.data, out, &w);
	msgpack_unpacked_destroy(&u);
	return rc;
}

int proto_msg_decode(const void *payload, size_t len, struct proto_msg *out)
{
	return proto_msg_decode_why(payload, len, out, NULL, 0);
}

void proto_msg_free(struct proto_msg *m)
{
	const struct msg_desc *d = msg_desc_get(m->type);
	const struct field *f;
	size_t j;

	for (j = 0; d && j < d->nfields; j++) {
		f = &d->fields[j];
		if (f->kind == FK_STR || f->kind == FK_TEXT) {
			free(*FIELD(m, f->off, char *));
			*FIELD(m, f->off, char *) = NULL;
		} else if (f->kind == FK_CMDLINES) {
			free(FIELD(m, f->off, struct proto_cmdlines)->items);
			FIELD(m, f->off, struct proto_cmdlines)->items = NULL;
			FIELD(m, f->off, struct proto_cmdlines)->count = 0;
		} else if (f->kind == FK_TGIDS) {
			free(FIELD(m, f->off, struct proto_tgids)->items);
			FIELD(m, f->off, struct proto_tgids)->items = NULL;
			FIELD(m, f->off, struct proto_tgids)->count = 0;
		}
	}
}
