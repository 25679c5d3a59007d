/*
 * decode.c - ring-buffer pages to events: the page format through
 * common/page.h, event formats and fields through libtraceevent's tep.
 *
 * A page is walked twice with page_next_record(), which never reads
 * outside the committed records: first to validate it whole (the page
 * format, and every data record long enough to hold common_type where the
 * formats put it), so that a malformed page produces no events at all;
 * then to hand each event to the callback. Fields are read by
 * decode_field_value() with our own bounds checks (read_int() only
 * converts byte order of validated bytes).
 *
 * An agent's format text is checked against common/format_check.h's caps
 * first, and libtraceevent never parses its print fmt's arguments (we
 * store fields, never print): see decoder_parse().
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include "common/page.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/frame.h"
#include "server/ingest/decode.h"
#include "common/format_check.h"

/*
 * The page sizes a HELLO may announce. A page travels in one frame, so a
 * bigger one could never arrive; buffers are sized by what does.
 */
#define DECODE_PAGE_MIN		64
#define DECODE_PAGE_MAX		FRAME_MAX_PAYLOAD

struct dtype {
	struct decode_type pub;		/* first: decode_type * <-> dtype * */
	struct decode_field *fields;
	int pid_index;			/* index of common_pid, or -1 */
};

struct decoder {
	struct tep_handle *tep;
	struct page_layout layout;	/* from the HELLO */
	uint32_t min_record;		/* bytes a record needs for common_type */
	uint32_t type_off;		/* common_type, from the first format */
	uint32_t type_size;		/* 0 until a format arrived */
	struct dtype **types;		/* sorted by id */
	size_t ntypes;
	size_t cap;
	char err[128];			/* why the last format was refused */
};

static bool host_big_endian(void)
{
	const uint16_t one = 1;

	return *(const uint8_t *)&one == 0;
}

static int decoder_check_hello(const struct proto_hello *h)
{
	if (h->long_size != 4 && h->long_size != 8)
		return -EINVAL;
	if (h->page_size < DECODE_PAGE_MIN || h->page_size > DECODE_PAGE_MAX ||
	    h->page_size % 8)
		return -EINVAL;
	return 0;
}

static int decoder_setup(struct decoder *d, const struct proto_hello *h)
{
	d->layout = (struct page_layout){ .page_size = h->page_size,
					  .long_size = h->long_size,
					  .big_endian = h->big_endian };
	d->min_record = 2;
	d->tep = tep_alloc();
	if (!d->tep)
		return -ENOMEM;
	tep_set_long_size(d->tep, (int)h->long_size);
	tep_set_page_size(d->tep, (int)h->page_size);
	tep_set_file_bigendian(d->tep, h->big_endian ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(d->tep, host_big_endian() ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	return 0;
}

int decoder_new(const struct proto_hello *hello, struct decoder **out)
{
	struct decoder *d = NULL;
	int ret = decoder_check_hello(hello);

	if (ret == 0)
		ret = (d = calloc(1, sizeof(*d))) ? decoder_setup(d, hello) : -ENOMEM;
	if (ret < 0) {
		decoder_free(d);
		return ret;
	}
	*out = d;
	return 0;
}

static void dtype_free(struct dtype *t)
{
	if (!t)
		return;
	free((char *)t->pub.system);
	free((char *)t->pub.name);
	free(t->fields);
	free(t);
}

void decoder_free(struct decoder *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->ntypes; i++)
		dtype_free(d->types[i]);
	free(d->types);
	if (d->tep)
		tep_free(d->tep);
	free(d);
}

int decoder_header_page(struct decoder *d, const char *text, size_t len)
{
	char *copy;
	int ret = 0;

	/* tep_parse_header_page wants a mutable, NUL-terminated buffer. */
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = '\0';
	if (tep_parse_header_page(d->tep, copy, len, (int)d->layout.long_size) < 0)
		ret = TC_ERR_FORMAT_PARSE;
	else if (tep_get_header_page_size(d->tep) != (int)d->layout.long_size)
		ret = TC_ERR_FORMAT_PARSE;
	free(copy);
	return ret;
}

/* ---- types ---- */

static struct dtype *decoder_find(const struct decoder *d, int id)
{
	size_t lo = 0, hi = d->ntypes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->types[mid]->pub.id == id)
			return d->types[mid];
		if (d->types[mid]->pub.id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int decoder_add(struct decoder *d, struct dtype *t)
{
	struct dtype **types = util_grow(d->types, &d->cap, d->ntypes, sizeof(*types), 16);
	size_t i;

	if (!types)
		return -ENOMEM;
	d->types = types;
	for (i = d->ntypes; i > 0 && d->types[i - 1]->pub.id > t->pub.id; i--)
		d->types[i] = d->types[i - 1];
	d->types[i] = t;
	d->ntypes++;
	return 0;
}

static enum store_kind field_kind(const struct tep_format_field *f)
{
	if (f->flags & (TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_ARRAY))
		return (f->flags & TEP_FIELD_IS_STRING) ? STORE_STRING : STORE_BLOB;
	switch (f->size) {
	case 1: case 2: case 4: case 8:
		return (f->flags & TEP_FIELD_IS_SIGNED) ? STORE_SIGNED : STORE_UNSIGNED;
	default:
		return STORE_BLOB;
	}
}

static void field_init(struct decode_field *df, const struct tep_format_field *f, bool swap)
{
	df->swap = swap;
	df->name = f->name;
	df->type = f->type;
	df->kind = field_kind(f);
	df->size = f->size > 0 ? (unsigned)f->size : 0;
	df->tep_field = f;
	df->dynamic = (f->flags & TEP_FIELD_IS_DYNAMIC) != 0;
	df->relative = (f->flags & TEP_FIELD_IS_RELATIVE) != 0;
	if (df->dynamic)
		df->size = 0;
}

static int fields_count(const struct tep_format_field *f)
{
	int n = 0;

	for (; f; f = f->next)
		n++;
	return n;
}

/*
 * The kernel's stack records (ftrace:kernel_stack, ftrace:user_stack)
 * declare "unsigned long caller[8]" but write as many addresses as the
 * stack had: the array runs to the end of the record (libtraceevent's
 * and trace-cmd's readers know this too). Read it so, bounded by the
 * record like any field of size 0.
 */
static bool field_runs_to_end(const struct tep_event *ev, const struct tep_format_field *f)
{
	return store_field_is_stack(ev->system, ev->name, f->name) &&
	       (f->flags & TEP_FIELD_IS_ARRAY) && !f->next;
}

static int dtype_fields(struct dtype *t, const struct tep_event *ev, bool swap)
{
	const struct tep_format_field *f;
	unsigned n = 0;

	t->pub.nfields = (unsigned)(fields_count(ev->format.common_fields) +
				    fields_count(ev->format.fields));
	t->fields = calloc(t->pub.nfields ? t->pub.nfields : 1, sizeof(*t->fields));
	if (!t->fields)
		return -ENOMEM;
	t->pid_index = -1;
	for (f = ev->format.common_fields; f; f = f->next) {
		if (!strcmp(f->name, "common_pid") && field_kind(f) == STORE_SIGNED)
			t->pid_index = (int)n;
		field_init(&t->fields[n++], f, swap);
	}
	for (f = ev->format.fields; f; f = f->next) {
		field_init(&t->fields[n], f, swap);
		if (field_runs_to_end(ev, f))
			t->fields[n].size = 0;
		n++;
	}
	t->pub.fields = t->fields;
	return 0;
}

static struct dtype *dtype_new(const struct tep_event *ev, const char *system, bool swap)
{
	struct dtype *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->pub.id = ev->id;
	t->pub.system = strdup(system);
	t->pub.name = strdup(ev->name);
	if (!t->pub.system || !t->pub.name || dtype_fields(t, ev, swap) < 0) {
		dtype_free(t);
		return NULL;
	}
	return t;
}

/*
 * Every record must hold common_type where the format says it is; the
 * layout of the common fields is the same for all events of a kernel.
 */
static int decoder_common_type(struct decoder *d, struct tep_event *ev)
{
	struct tep_format_field *f = tep_find_common_field(ev, "common_type");

	if (!f || f->offset < 0 || (f->size != 1 && f->size != 2 && f->size != 4))
		return TC_ERR_FORMAT_PARSE;
	if (d->type_size && (d->type_off != (uint32_t)f->offset ||
			     d->type_size != (uint32_t)f->size))
		return TC_ERR_FORMAT_PARSE;
	d->type_off = (uint32_t)f->offset;
	d->type_size = (uint32_t)f->size;
	if (d->type_off + d->type_size > d->min_record)
		d->min_record = d->type_off + d->type_size;
	return 0;
}

/*
 * libtraceevent parses @text without its print fmt's arguments (an empty
 * format string in their place, see format_print_start()): we store
 * fields and never print, and its print-argument parser is where it
 * recurses and where it crashes on hostile input.
 */
static int decoder_parse(struct decoder *d, const char *system, const char *text,
			 size_t len, struct tep_event **out)
{
	static const char empty[] = "\"\"\n";
	size_t cut = format_print_start(text, len);
	size_t tail = cut < len ? sizeof(empty) - 1 : 0;
	struct tep_event *ev = NULL;
	enum tep_errno err;
	char *copy;

	copy = malloc(cut + tail + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, cut);
	memcpy(copy + cut, empty, tail);
	copy[cut + tail] = '\0';
	err = tep_parse_format(d->tep, &ev, copy, cut + tail, system);
	free(copy);
	/*
	 * A print-fmt we cannot render does not matter: we store fields. But
	 * tep_parse_format() returns 0 and an event flagged FAILED when the
	 * field list broke off part way (the print fmt, cut, cannot fail).
	 */
	if (!ev || (err != 0 && err != TEP_ERRNO__READ_PRINT_FAILED) ||
	    (cut < len && (ev->flags & TEP_EVENT_FL_FAILED)))
		return TC_ERR_FORMAT_PARSE;
	*out = ev;
	return 0;
}

int decoder_format(struct decoder *d, const char *system, const char *name,
		   const char *text, size_t len, const struct decode_type **out)
{
	struct tep_event *ev = NULL;
	struct dtype *t;
	int ret;

	/* libtraceevent's parser recurses as deep as the text nests: bound it */
	d->err[0] = '\0';
	ret = format_check(text, len, NULL, d->err, sizeof(d->err));
	if (ret < 0)
		return ret;
	ret = decoder_parse(d, system, text, len, &ev);
	if (ret < 0)
		return ret;
	if (!ev->name || strcmp(ev->name, name) != 0)
		return TC_ERR_FORMAT_PARSE;
	t = decoder_find(d, ev->id);
	if (t) {
		*out = &t->pub;
		return 0;
	}
	ret = decoder_common_type(d, ev);
	if (ret < 0)
		return ret;
	t = dtype_new(ev, system, d->layout.big_endian != host_big_endian());
	if (!t)
		return -ENOMEM;
	ret = decoder_add(d, t);
	if (ret < 0) {
		dtype_free(t);
		return ret;
	}
	*out = &t->pub;
	return 0;
}

const char *decoder_error(const struct decoder *d)
{
	return d->err;
}

/* ---- fields ---- */

/*
 * An integer of 1, 2, 4 or 8 bytes in the traced host's byte order (what
 * tep_read_number() does, without a call into the library per field).
 */
static uint64_t read_int(bool swap, const uint8_t *p, unsigned size)
{
	uint16_t v2;
	uint32_t v4;
	uint64_t v8;

	switch (size) {
	case 1:
		return *p;
	case 2:
		memcpy(&v2, p, 2);
		return swap ? __builtin_bswap16(v2) : v2;
	case 4:
		memcpy(&v4, p, 4);
		return swap ? __builtin_bswap32(v4) : v4;
	default:
		memcpy(&v8, p, 8);
		return swap ? __builtin_bswap64(v8) : v8;
	}
}

static int value_int(const struct decode_event *ev, const struct decode_field *f,
		     struct store_value *out)
{
	uint64_t v = read_int(f->swap, ev->data + f->tep_field->offset, f->size);

	out->kind = f->kind;
	if (f->kind == STORE_UNSIGNED) {
		out->u = v;
	} else {
		unsigned shift = 64 - 8 * f->size;

		out->i = (int64_t)(v << shift) >> shift;
	}
	return 0;
}

static void value_bytes(const struct decode_field *f, const uint8_t *p, size_t len,
			struct store_value *out)
{
	out->kind = f->kind;
	if (f->kind == STORE_STRING) {
		const uint8_t *nul = memchr(p, '\0', len);

		out->str.s = (const char *)p;
		out->str.len = nul ? (size_t)(nul - p) : len;
	} else {
		out->blob.p = p;
		out->blob.len = len;
	}
}

/* __data_loc: a 32-bit word, offset in the low half, length in the high. */
static int value_dynamic(const struct decode_event *ev, const struct decode_field *f,
			 struct store_value *out)
{
	const struct tep_format_field *tf = f->tep_field;
	uint64_t word, off, len;

	if (tf->size != 4 || tf->offset < 0 || (size_t)tf->offset + 4 > ev->size)
		return TC_ERR_PAGE_MALFORMED;	/* also an agent's format with offset -4 */
	word = read_int(f->swap, ev->data + tf->offset, 4);
	off = word & 0xffff;
	len = (word >> 16) & 0xffff;
	if (f->relative)
		off += (uint64_t)tf->offset + 4;
	if (off > ev->size || len > ev->size - off)
		return TC_ERR_PAGE_MALFORMED;
	value_bytes(f, ev->data + off, len, out);
	return 0;
}

int decode_field_value(const struct decode_event *ev, unsigned index,
		       struct store_value *out)
{
	const struct decode_field *f;
	const struct tep_format_field *tf;
	size_t off, len;

	if (!ev->type || index >= ev->type->nfields)
		return -EINVAL;
	f = &ev->type->fields[index];
	tf = f->tep_field;
	if (f->dynamic)
		return value_dynamic(ev, f, out);
	if (tf->offset < 0 || (size_t)tf->offset > ev->size)
		return TC_ERR_PAGE_MALFORMED;
	off = (size_t)tf->offset;
	/* A zero-sized array (char buf[]) runs to the end of the record. */
	len = f->size ? f->size : ev->size - off;
	if (len > ev->size - off)
		return TC_ERR_PAGE_MALFORMED;
	if (f->kind == STORE_SIGNED || f->kind == STORE_UNSIGNED)
		return value_int(ev, f, out);
	value_bytes(f, ev->data + off, len, out);
	return 0;
}

/* ---- pages ---- */

/*
 * Check every record of the page @pi describes, counting data and
 * padding records: a data record must hold common_type.
 */
static int page_scan(const struct decoder *d, const struct page_info *pi,
		     struct decode_page_stats *st)
{
	struct page_record rec;
	struct page_iter it;
	int ret;

	st->ts_lo = st->ts_hi = pi->ts;
	page_iter_init(&it, &d->layout, pi);
	while ((ret = page_next_record(&it, &rec)) > 0) {
		if (!page_record_is_data(&rec)) {
			st->padding += rec.type_len == PAGE_TYPE_PADDING;
			continue;
		}
		st->ts_lo = rec.ts < st->ts_lo ? rec.ts : st->ts_lo;
		st->ts_hi = rec.ts > st->ts_hi ? rec.ts : st->ts_hi;
		if (rec.len < d->min_record) {
			st->malformed = "data record too short for common_type";
			return TC_ERR_PAGE_MALFORMED;
		}
	}
	if (ret < 0)
		st->malformed = page_iter_why(&it);
	st->spanned = ret == 0;
	return ret;
}

/* The event of data record @rec of CPU @cpu; ev->type NULL if unknown. */
static int page_event(const struct decoder *d, uint32_t cpu,
		      const struct page_record *rec, struct decode_event *ev)
{
	struct dtype *t;
	int id;

	if (rec->len < d->min_record)
		return TC_ERR_PAGE_MALFORMED;
	memset(ev, 0, sizeof(*ev));
	ev->cpu = cpu;
	ev->ts = rec->ts;
	ev->data = rec->payload;
	ev->size = rec->len;
	if (!d->type_size)
		return 0;	/* no format yet: every event is unknown */
	id = (int)read_int(d->layout.big_endian != host_big_endian(),
			   rec->payload + d->type_off, d->type_size);
	t = decoder_find(d, id);
	ev->type = t ? &t->pub : NULL;
	return 0;
}

static void event_pid(struct decode_event *ev)
{
	const struct dtype *t = (const struct dtype *)ev->type;
	struct store_value v;

	if (t->pid_index >= 0 && decode_field_value(ev, (unsigned)t->pid_index, &v) == 0)
		ev->pid = (int)v.i;
	else
		ev->pid = -1;
}

static int page_iterate(const struct decoder *d, const struct page_info *pi, uint32_t cpu,
			decode_event_fn fn, void *ctx, struct decode_page_stats *st)
{
	struct page_record rec;
	struct page_iter it;
	int ret;

	page_iter_init(&it, &d->layout, pi);
	while ((ret = page_next_record(&it, &rec)) > 0) {
		struct decode_event ev;

		if (!page_record_is_data(&rec))
			continue;
		ret = page_event(d, cpu, &rec, &ev);
		if (ret < 0)
			break;
		if (!ev.type) {
			st->unknown++;
			continue;
		}
		event_pid(&ev);
		st->events++;
		ret = fn(ctx, &ev);
		if (ret)
			break;
	}
	return ret;
}

int decoder_page_span(const struct decoder *d, const void *page, size_t len,
		      struct decode_page_stats *stats)
{
	struct page_info pi;
	int ret;

	*stats = (struct decode_page_stats){ 0 };
	ret = page_check(&d->layout, page, len, &pi);
	if (ret < 0)
		stats->malformed = page_check_why(&d->layout, page, len);
	return ret < 0 ? ret : page_scan(d, &pi, stats);
}

int decoder_page(struct decoder *d, uint32_t cpu, const void *page, size_t len,
		 decode_event_fn fn, void *ctx, struct decode_page_stats *stats)
{
	struct decode_page_stats st = { 0 };
	struct page_info pi;
	int ret;

	ret = page_check(&d->layout, page, len, &pi);
	if (ret < 0)
		st.malformed = page_check_why(&d->layout, page, len);
	if (ret == 0)
		ret = page_scan(d, &pi, &st);
	if (ret < 0) {
		if (stats)
			*stats = st;
		return ret;
	}
	st.missed_events = pi.missed;
	st.missed_known = pi.missed_stored;
	st.missed = pi.missed_count;
	st.page_ts = pi.ts;
	ret = page_iterate(d, &pi, cpu, fn, ctx, &st);
	if (stats)
		*stats = st;
	return ret;
}
