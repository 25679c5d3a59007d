/*
 * decode.c - ring-buffer pages to events, with libtraceevent (tep + kbuffer).
 *
 * Page layout (kernel/trace/ring_buffer.c, also our user-space buffer):
 *
 *   u64 timestamp | long commit | records ...
 *
 * commit's low 27 bits are the bytes of record data; bit 31
 * (RB_MISSED_EVENTS) says events were lost before this page and bit 30
 * (RB_MISSED_STORED) that the count is stored as a long right after the
 * data. Each record starts with a 32-bit word: type_len (5 bits) and
 * time_delta (27 bits), in the traced host's byte order.
 *
 * kbuffer walks records trusting every length it reads, and reads a few
 * bytes past the commit for a trailing padding record. So decoder_page()
 * first copies the page into a private buffer with zeroed slack past the
 * commit, then walks it with the same rules kbuffer uses (page_check())
 * rejecting anything that would leave the commit, and only then lets
 * kbuffer iterate, cross-checking each record it returns against the
 * bounds. Fields are read by decode_field_value() with our own bounds
 * checks (read_int() only converts byte order of validated bytes).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>
#include <traceevent/kbuffer.h>

#include "common/tc_error.h"
#include "server/decode.h"

#define RB_MISSED_EVENTS	(1u << 31)
#define RB_MISSED_STORED	(1u << 30)
#define RB_COMMIT_MASK		((1u << 27) - 1)
#define PAGE_SLACK		16	/* zeroed bytes after the page copy */
#define PAGE_MIN		64
#define PAGE_MAX		(128u << 20)

struct dtype {
	struct decode_type pub;		/* first: decode_type * <-> dtype * */
	struct decode_field *fields;
	int pid_index;			/* index of common_pid, or -1 */
};

struct decoder {
	struct tep_handle *tep;
	struct kbuffer *kb;
	uint32_t page_size;
	uint32_t long_size;
	bool big_endian;
	uint32_t min_record;		/* bytes a record needs for common_type */
	uint32_t type_off;		/* common_type, from the first format */
	uint32_t type_size;		/* 0 until a format arrived */
	uint8_t *buf;			/* page copy: page_size + PAGE_SLACK */
	struct dtype **types;		/* sorted by id */
	size_t ntypes;
	size_t cap;
};

/* What page_check() learnt about a valid page. */
struct page_info {
	uint32_t start;			/* offset of the first record */
	uint32_t size;			/* commit: bytes of records */
	uint64_t records;		/* data records */
	uint64_t padding;
	bool missed;
	uint64_t missed_count;
};

const char *decode_kind_name(enum decode_kind kind)
{
	switch (kind) {
	case DECODE_SIGNED: return "signed";
	case DECODE_UNSIGNED: return "unsigned";
	case DECODE_STRING: return "string";
	case DECODE_BLOB: return "blob";
	}
	return "?";
}

static bool host_big_endian(void)
{
	const uint16_t one = 1;

	return *(const uint8_t *)&one == 0;
}

static uint32_t rd4(const struct decoder *d, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return d->big_endian != host_big_endian() ? __builtin_bswap32(v) : v;
}

static uint64_t rd8(const struct decoder *d, const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return d->big_endian != host_big_endian() ? __builtin_bswap64(v) : v;
}

static uint64_t rd_long(const struct decoder *d, const uint8_t *p)
{
	return d->long_size == 8 ? rd8(d, p) : rd4(d, p);
}

static int decoder_check_hello(const struct proto_hello *h)
{
	if (h->long_size != 4 && h->long_size != 8)
		return -EINVAL;
	if (h->page_size < PAGE_MIN || h->page_size > PAGE_MAX || h->page_size % 8)
		return -EINVAL;
	return 0;
}

static int decoder_setup(struct decoder *d, const struct proto_hello *h)
{
	d->page_size = h->page_size;
	d->long_size = h->long_size;
	d->big_endian = h->big_endian;
	d->min_record = 2;
	d->buf = aligned_alloc(8, d->page_size + PAGE_SLACK);
	d->tep = tep_alloc();
	d->kb = kbuffer_alloc(d->long_size == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
			      d->big_endian ? KBUFFER_ENDIAN_BIG : KBUFFER_ENDIAN_LITTLE);
	if (!d->buf || !d->tep || !d->kb)
		return -ENOMEM;
	tep_set_long_size(d->tep, (int)d->long_size);
	tep_set_page_size(d->tep, (int)d->page_size);
	tep_set_file_bigendian(d->tep, d->big_endian ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(d->tep, host_big_endian() ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	return 0;
}

int decoder_new(const struct proto_hello *hello, struct decoder **out)
{
	struct decoder *d;
	int ret;

	ret = decoder_check_hello(hello);
	if (ret < 0)
		return ret;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	ret = decoder_setup(d, hello);
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
	if (d->kb)
		kbuffer_free(d->kb);
	if (d->tep)
		tep_free(d->tep);
	free(d->buf);
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
	if (tep_parse_header_page(d->tep, copy, len, (int)d->long_size) < 0)
		ret = TC_ERR_FORMAT_PARSE;
	else if (tep_get_header_page_size(d->tep) != (int)d->long_size)
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
	size_t i;

	if (d->ntypes == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		struct dtype **n = realloc(d->types, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		d->types = n;
		d->cap = cap;
	}
	for (i = d->ntypes; i > 0 && d->types[i - 1]->pub.id > t->pub.id; i--)
		d->types[i] = d->types[i - 1];
	d->types[i] = t;
	d->ntypes++;
	return 0;
}

static enum decode_kind field_kind(const struct tep_format_field *f)
{
	if (f->flags & (TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_ARRAY))
		return (f->flags & TEP_FIELD_IS_STRING) ? DECODE_STRING : DECODE_BLOB;
	switch (f->size) {
	case 1: case 2: case 4: case 8:
		return (f->flags & TEP_FIELD_IS_SIGNED) ? DECODE_SIGNED : DECODE_UNSIGNED;
	default:
		return DECODE_BLOB;
	}
}

static void field_init(struct decode_field *df, const struct tep_format_field *f, bool swap)
{
	df->swap = swap;
	df->name = f->name;
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
		if (!strcmp(f->name, "common_pid") && field_kind(f) == DECODE_SIGNED)
			t->pid_index = (int)n;
		field_init(&t->fields[n++], f, swap);
	}
	for (f = ev->format.fields; f; f = f->next)
		field_init(&t->fields[n++], f, swap);
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

int decoder_format(struct decoder *d, const char *system, const char *name,
		   const char *text, size_t len, const struct decode_type **out)
{
	struct tep_event *ev = NULL;
	struct dtype *t;
	enum tep_errno err;
	int ret;

	err = tep_parse_format(d->tep, &ev, text, len, system);
	/* A print-fmt we cannot render does not matter: we store fields. */
	if (!ev || (err != 0 && err != TEP_ERRNO__READ_PRINT_FAILED))
		return TC_ERR_FORMAT_PARSE;
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
	t = dtype_new(ev, system, d->big_endian != host_big_endian());
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
		     struct decode_value *out)
{
	uint64_t v = read_int(f->swap, ev->data + f->tep_field->offset, f->size);

	out->kind = f->kind;
	if (f->kind == DECODE_UNSIGNED) {
		out->u = v;
	} else {
		unsigned shift = 64 - 8 * f->size;

		out->i = (int64_t)(v << shift) >> shift;
	}
	return 0;
}

static void value_bytes(const struct decode_field *f, const uint8_t *p, size_t len,
			struct decode_value *out)
{
	out->kind = f->kind;
	if (f->kind == DECODE_STRING) {
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
			 struct decode_value *out)
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
		       struct decode_value *out)
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
	if (f->kind == DECODE_SIGNED || f->kind == DECODE_UNSIGNED)
		return value_int(ev, f, out);
	value_bytes(f, ev->data + off, len, out);
	return 0;
}

/* ---- pages ---- */

static unsigned rec_type_len(const struct decoder *d, uint32_t word)
{
	return d->big_endian ? word >> 27 : word & 31;
}

/*
 * One record at @off (relative to the data start) of the zero-padded copy.
 * Sets *next to the following record's offset; *data_len to the payload
 * length for a data record, else leaves it 0. Mirrors kbuffer's
 * translate_data() and rejects what would leave [0, size).
 */
static int page_record(const struct decoder *d, const uint8_t *data, uint32_t size,
		       uint32_t off, uint64_t *next, uint64_t *data_len)
{
	unsigned type_len = rec_type_len(d, rd4(d, data + off));
	uint64_t len;

	*data_len = 0;
	switch (type_len) {
	case KBUFFER_TYPE_PADDING:
		/*
		 * Reading past the commit is fine here: the copy is zeroed.
		 * Padding may claim more than the commit (the rest of the
		 * page), but kbuffer keeps the length in an int: a huge one
		 * would wrap its cursor backwards, so bound it by the page.
		 */
		len = rd4(d, data + off + 4);
		*next = (uint64_t)off + 4 + len;
		return len % 4 || len > d->page_size ? TC_ERR_PAGE_MALFORMED : 0;
	case KBUFFER_TYPE_TIME_EXTEND:
	case KBUFFER_TYPE_TIME_STAMP:
		*next = (uint64_t)off + 8;
		return *next > size ? TC_ERR_PAGE_MALFORMED : 0;
	case 0:
		if ((uint64_t)off + 8 > size)
			return TC_ERR_PAGE_MALFORMED;
		len = rd4(d, data + off + 4);
		if (len < 4)
			return TC_ERR_PAGE_MALFORMED;
		*data_len = (len - 4 + 3) & ~(uint64_t)3;
		*next = (uint64_t)off + 8 + *data_len;
		break;
	default:
		*data_len = (uint64_t)type_len * 4;
		*next = (uint64_t)off + 4 + *data_len;
		break;
	}
	if (*next > size || *data_len < d->min_record)
		return TC_ERR_PAGE_MALFORMED;
	return 0;
}

static int page_walk(const struct decoder *d, struct page_info *pi)
{
	const uint8_t *data = d->buf + pi->start;
	uint32_t off = 0;

	while (off < pi->size) {
		uint64_t next, data_len;
		int ret = page_record(d, data, pi->size, off, &next, &data_len);

		if (ret < 0)
			return ret;
		if (data_len)
			pi->records++;
		else if (rec_type_len(d, rd4(d, data + off)) == KBUFFER_TYPE_PADDING)
			pi->padding++;
		if (next >= pi->size)
			break;	/* padding may claim the rest of the page */
		off = (uint32_t)next;
	}
	return 0;
}

/* Validate the header, copy the page into d->buf and walk its records. */
static int page_check(struct decoder *d, const uint8_t *page, size_t len,
		      struct page_info *pi)
{
	uint64_t commit;
	size_t end;

	/* PROTOCOL.md: an agent may leave out the unused tail of the page. */
	if (len < 8 + (size_t)d->long_size || len > d->page_size)
		return TC_ERR_PAGE_MALFORMED;
	memset(pi, 0, sizeof(*pi));
	pi->start = 8 + d->long_size;
	commit = rd_long(d, page + 8);
	pi->size = (uint32_t)commit & RB_COMMIT_MASK;
	pi->missed = (commit & RB_MISSED_EVENTS) != 0;
	if (pi->size % 4 || pi->size > d->page_size - pi->start)
		return TC_ERR_PAGE_MALFORMED;
	end = pi->start + pi->size;
	if (pi->missed && (commit & RB_MISSED_STORED)) {
		if (end + d->long_size > d->page_size)
			return TC_ERR_PAGE_MALFORMED;
		if (end + d->long_size > len)
			return TC_ERR_PAGE_MALFORMED;
		pi->missed_count = rd_long(d, page + end);
		end += d->long_size;
	}
	if (end > len)
		return TC_ERR_PAGE_MALFORMED;
	memcpy(d->buf, page, end);
	memset(d->buf + end, 0, d->page_size + PAGE_SLACK - end);
	return page_walk(d, pi);
}

/* Bounds of the record kbuffer returned, against what page_check() saw. */
static int page_event(struct decoder *d, const struct page_info *pi, uint32_t cpu,
		      uint8_t *rec, unsigned long long ts, struct decode_event *ev)
{
	const uint8_t *data = d->buf + pi->start;
	int size = kbuffer_event_size(d->kb);
	struct dtype *t;
	int id;

	if (rec < data || size < (int)d->min_record ||
	    (size_t)(rec - data) + (size_t)size > pi->size)
		return TC_ERR_PAGE_MALFORMED;
	memset(ev, 0, sizeof(*ev));
	ev->cpu = cpu;
	ev->ts = ts;
	ev->data = rec;
	ev->size = (size_t)size;
	if (!d->type_size)
		return 0;	/* no format yet: every event is unknown */
	id = (int)read_int(d->big_endian != host_big_endian(), rec + d->type_off, d->type_size);
	t = decoder_find(d, id);
	ev->type = t ? &t->pub : NULL;
	return 0;
}

static void event_pid(struct decode_event *ev)
{
	const struct dtype *t = (const struct dtype *)ev->type;
	struct decode_value v;

	if (t->pid_index >= 0 && decode_field_value(ev, (unsigned)t->pid_index, &v) == 0)
		ev->pid = (int)v.i;
	else
		ev->pid = -1;
}

static int page_iterate(struct decoder *d, const struct page_info *pi, uint32_t cpu,
			decode_event_fn fn, void *ctx, struct decode_page_stats *st)
{
	unsigned long long ts;
	uint8_t *rec;
	int ret = 0;

	if (kbuffer_load_subbuffer(d->kb, d->buf) < 0)
		return TC_ERR_PAGE_MALFORMED;
	for (rec = kbuffer_read_event(d->kb, &ts); rec;
	     rec = kbuffer_next_event(d->kb, &ts)) {
		struct decode_event ev;

		ret = page_event(d, pi, cpu, rec, ts, &ev);
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

int decoder_page(struct decoder *d, uint32_t cpu, const void *page, size_t len,
		 decode_event_fn fn, void *ctx, struct decode_page_stats *stats)
{
	struct decode_page_stats st = { 0 };
	struct page_info pi;
	int ret;

	ret = page_check(d, page, len, &pi);
	if (ret < 0)
		return ret;
	st.padding = pi.padding;
	st.missed_events = pi.missed;
	st.missed = pi.missed_count;
	ret = page_iterate(d, &pi, cpu, fn, ctx, &st);
	if (stats)
		*stats = st;
	return ret;
}
