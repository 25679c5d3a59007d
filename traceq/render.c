/*
 * render.c - a reply's rows printed by libtraceevent, as trace-cmd report
 * or the kernel's trace file print them (see render.h for why here).
 *
 * A row is turned back into the record the kernel wrote: a buffer of the
 * format's fixed size, each field's value at its offset in its size, in
 * this machine's byte order (libtraceevent is told the "file" is native,
 * so the traced host's byte order does not matter any more), strings and
 * arrays of __data_loc / __rel_loc fields appended after the fixed part
 * with their location words pointing at them. Padding bytes and the bytes
 * after a string's NUL in a char[N] were not stored; no print format
 * reads them. common_type is the id the format text names.
 *
 * The columns are trace-cmd 3.1's (tracecmd/trace-read.c, print_event()):
 * "%16s-%-5d [%03d]", " %6.1000d:" (microseconds, rounded), " NAME: "
 * padded to 20 characters of name, then the event's text. The kernel's
 * trace file (kernel/trace/trace_output.c): "%16s-%-7d [%03d] ", the
 * latency flags, " %5llu.%06llu: " (rounded), "NAME: ", the text.
 *
 * trace-cmd's columns are written here rather than through
 * tep_print_event() (same text: tests/test_render.c compares the two), and
 * an event whose print fmt fastprint takes is printed by it, not by
 * libtraceevent: both are most of the time a long answer takes.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>
#include <trace-seq.h>

#include "common/format_check.h"
#include "common/log.h"
#include "common/tc_error.h"
#include "traceq/fastprint.h"
#include "traceq/linebuf.h"
#include "traceq/render.h"

/* A record is at most a ring-buffer page (64 KiB sub-buffers and smaller). */
#define RENDER_REC_MAX	(64u << 10)
/* Hosts with a handle of their own at once; one more starts the set again. */
#define RENDER_VIEWS_MAX	32

/*
 * One libtraceevent handle for the format: views[0] has no printk_formats
 * and gives the record layout; with a printk callback each host gets one
 * more, its table registered. The layout is the same in all (one text).
 */
struct render_view {
	char *host;			/* NULL: views[0] */
	struct tep_handle *tep;
	struct tep_plugin_list *plugins;
	struct tep_event *event;
};

struct render {
	enum render_style style;
	render_sym_fn sym;
	void *sym_ctx;
	render_printk_fn printk;
	void *printk_ctx;
	render_tgid_fn tgid;
	void *tgid_ctx;
	int32_t row_tgid;		/* of the row being printed; 0: unknown */
	const char *host;		/* of the row being printed */
	int64_t wall;			/* its wall-clock time (ns) */
	struct render_view views[RENDER_VIEWS_MAX];
	size_t nviews;
	struct tep_handle *tep;		/* the view of the row being printed */
	struct tep_event *event;
	int long_size;			/* the traced host's, from the format */
	char *format;			/* the text the views were built from */
	char *event_name;		/* the reply's "system:name" */
	char system[256];
	struct tep_format_field **fields;	/* common then event fields */
	int *col;			/* per field: the reply column, -1: none */
	size_t nfields;
	size_t fixed;			/* bytes of a record's fixed part */
	int type_field;			/* index of common_type in fields, -1: none */
	int pid_offset;			/* common_pid's, -1: not 4 bytes (no fast columns) */
	const struct tep_format_field *stack;	/* a stack record's caller[]: to the end */
	size_t info_at;			/* where the last row's event text began */
	struct fastprint *fast;		/* the event text without libtraceevent; NULL */
	bool slow;			/* render_set_slow(): libtraceevent for all */
	unsigned char rec[2 * RENDER_REC_MAX];
	struct trace_seq seq;
};

static char *render_resolve(void *priv, unsigned long long *addrp, char **modp)
{
	struct render *r = priv;
	uint64_t start = *addrp;
	const char *name;

	if (!r->sym)
		return NULL;
	name = r->sym(r->sym_ctx, r->host, *addrp, &start);
	if (name) {
		*addrp = start;
		*modp = NULL;
	}
	return (char *)name;
}

int render_new(enum render_style style, render_sym_fn sym, void *sym_ctx,
	       struct render **out)
{
	struct render *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->style = style;
	r->sym = sym;
	r->sym_ctx = sym_ctx;
	trace_seq_init(&r->seq);
	*out = r;
	return 0;
}

void render_set_printk(struct render *r, render_printk_fn fn, void *ctx)
{
	r->printk = fn;
	r->printk_ctx = ctx;
}

void render_set_tgid(struct render *r, render_tgid_fn fn, void *ctx)
{
	r->tgid = fn;
	r->tgid_ctx = ctx;
}

/* The kernel's record-tgid column (kernel/trace/trace_output.c). */
static void put_tgid(struct render *r)
{
	if (r->row_tgid > 0)
		trace_seq_printf(&r->seq, "(%7d) ", r->row_tgid);
	else
		trace_seq_puts(&r->seq, "(-------) ");
}

/*
 * Whether @f is the address array of the kernel's stack records
 * (ftrace:kernel_stack, ftrace:user_stack): declared caller[8], written
 * as long as the stack (the collector keeps all of it).
 */
static bool render_stack_field(const struct render *r, const struct tep_format_field *f)
{
	const char *name = r->event->name;

	return !strcmp(r->system, "ftrace") && name &&
	       (!strcmp(name, "kernel_stack") || !strcmp(name, "user_stack")) &&
	       !strcmp(f->name, "caller") && (f->flags & TEP_FIELD_IS_ARRAY) && !f->next;
}

/*
 * The caller[] of stack record type @ev, and in *@ls the traced host's
 * long size; NULL (said in @s, as trace-cmd says it) when unusable.
 */
static const struct tep_format_field *stack_caller(struct trace_seq *s, struct tep_event *ev,
						   int *ls)
{
	const struct tep_format_field *f = tep_find_field(ev, "caller");

	*ls = tep_get_long_size(ev->tep);
	if (f && f->offset >= 0 && (*ls == 4 || *ls == 8))
		return f;
	trace_seq_puts(s, "<CANT FIND FIELD caller>");
	return NULL;
}

/*
 * A stack record's text, as trace-cmd report prints it (its
 * trace-ftrace.c: "<stack trace >", then "=> NAME (ADDR)" a line, to the
 * record's end or an address of -1) or as the kernel's trace file does
 * (" => NAME"). Names come from the host's kallsyms through the
 * function resolver (render_resolve()), escaped (common/log.h), so every
 * byte of the text is ours or escaped: render_stack_lines().
 */
static int render_stack_handler(struct trace_seq *s, struct tep_record *rec,
				struct tep_event *ev, void *ctx)
{
	const struct render *r = ctx;
	bool kernel = r->style == RENDER_KERNEL;
	char esc[LOG_ESC_LEN];
	int ls;
	const struct tep_format_field *f = stack_caller(s, ev, &ls);

	if (!f)
		return 0;
	trace_seq_puts(s, kernel ? "<stack trace>\n" : "<stack trace >\n");
	for (int off = f->offset; off + ls <= rec->size; off += ls) {
		unsigned long long addr = tep_read_number(ev->tep, (char *)rec->data + off, ls);
		const char *func;

		if ((ls == 8 && addr == ~0ULL) || (ls == 4 && (uint32_t)addr == UINT32_MAX))
			break;
		/* a peer's name, escaped here: every newline of the text is ours */
		func = tep_find_function(ev->tep, addr);
		if (func)
			func = log_escape(func, esc, sizeof(esc));
		if (kernel)
			func ? trace_seq_printf(s, " => %s\n", func) :
			       trace_seq_printf(s, " => 0x%llx\n", addr);
		else
			func ? trace_seq_printf(s, "=> %s (%llx)\n", func, addr) :
			       trace_seq_printf(s, "=> %llx\n", addr);
	}
	return 0;
}

/*
 * A user stack record's text as libtraceevent prints its print fmt for
 * trace-cmd report ("\t=> ADDR\n" for each of caller[0..7], %ps naming
 * nothing in user space), and as the kernel's trace file does
 * (" => ADDR" to the first 0). Kept here so that its lines, like a
 * kernel stack's, are the handler's own: render_stack_lines().
 */
static int render_ustack_handler(struct trace_seq *s, struct tep_record *rec,
				 struct tep_event *ev, void *ctx)
{
	const struct render *r = ctx;
	bool kernel = r->style == RENDER_KERNEL;
	int ls;
	const struct tep_format_field *f = stack_caller(s, ev, &ls);

	if (!f)
		return 0;
	if (kernel)
		trace_seq_puts(s, "<user stack trace>\n");
	for (int i = 0, off = f->offset; i < 8 && off + ls <= rec->size; i++, off += ls) {
		unsigned long long addr = tep_read_number(ev->tep, (char *)rec->data + off, ls);

		if (kernel && (!addr || addr == (ls == 8 ? ~0ULL : UINT32_MAX)))
			break;
		trace_seq_printf(s, kernel ? " => 0x%llx\n" : "\t=> 0x%llx\n", addr);
	}
	return 0;
}

static void view_drop(struct render_view *v)
{
	if (v->tep) {
		if (v->plugins)
			tep_unload_plugins(v->plugins, v->tep);
		tep_free(v->tep);
	}
	free(v->host);
	*v = (struct render_view){ 0 };
}

/* Every host's view; views[0] (the layout's) stays unless @all. */
static void views_drop(struct render *r, bool all)
{
	for (size_t i = all ? 0 : 1; i < r->nviews; i++)
		view_drop(&r->views[i]);
	r->nviews = all ? 0 : r->nviews ? 1 : 0;
}

static void render_drop(struct render *r)
{
	views_drop(r, true);
	free(r->fields);
	free(r->col);
	fastprint_free(r->fast);
	r->fast = NULL;
	free(r->format);
	free(r->event_name);
	r->tep = NULL;
	r->event = NULL;
	r->fields = NULL;
	r->col = NULL;
	r->format = r->event_name = NULL;
	r->nfields = r->fixed = 0;
	r->stack = NULL;
}

void render_free(struct render *r)
{
	if (!r)
		return;
	render_drop(r);
	trace_seq_destroy(&r->seq);
	free(r);
}

/* The first reply column named @name, or -1. */
static int render_col(const struct qmsg_reply *rep, const char *name)
{
	for (uint32_t i = QMSG_META_COLS; i < rep->ncols; i++)
		if (!strcmp(rep->cols[i], name))
			return (int)i;
	return -1;
}

/* Append the NULL-ended array @add to r->fields. */
static int render_add_fields(struct render *r, struct tep_format_field **add)
{
	size_t n = 0;
	void *p;

	while (add && add[n])
		n++;
	p = realloc(r->fields, (r->nfields + n + 1) * sizeof(*r->fields));
	if (!p)
		return -ENOMEM;
	r->fields = p;
	memcpy(r->fields + r->nfields, add, n * sizeof(*add));
	r->nfields += n;
	return 0;
}

/*
 * Where each field's value comes from and how big a record's fixed part
 * is; a field outside RENDER_REC_MAX is refused. The size of `long` on the
 * traced host is that of its long fields (8 when it has none).
 */
static int render_layout(struct render *r, const struct qmsg_reply *rep, char *why,
			 size_t whylen)
{
	struct tep_format_field **common = tep_event_common_fields(r->event);
	struct tep_format_field **own = tep_event_fields(r->event);
	int ret = render_add_fields(r, common);

	if (ret == 0)
		ret = render_add_fields(r, own);
	free(common);
	free(own);
	if (ret == 0 && !(r->col = calloc(r->nfields + 1, sizeof(*r->col))))
		ret = -ENOMEM;
	r->long_size = 8;
	r->type_field = r->pid_offset = -1;
	for (size_t i = 0; ret == 0 && i < r->nfields; i++) {
		const struct tep_format_field *f = r->fields[i];

		if (f->offset < 0 || f->size < 0 ||
		    (size_t)f->offset + (size_t)f->size > RENDER_REC_MAX) {
			snprintf(why, whylen, "field %s lies outside %u bytes", f->name,
				 RENDER_REC_MAX);
			ret = TC_ERR_FORMAT_PARSE;
			break;
		}
		if (render_stack_field(r, f)) {
			r->stack = f;
			if ((size_t)f->offset > r->fixed)
				r->fixed = (size_t)f->offset;
		} else if ((size_t)(f->offset + f->size) > r->fixed) {
			r->fixed = (size_t)(f->offset + f->size);
		}
		if ((f->flags & TEP_FIELD_IS_LONG) && (f->size == 4 || f->size == 8))
			r->long_size = f->size;
		r->col[i] = render_col(rep, f->name);
		if (!strcmp(f->name, "common_type"))
			r->type_field = (int)i;
		if (!strcmp(f->name, "common_pid") && f->size == 4)
			r->pid_offset = f->offset;
	}
	tep_set_long_size(r->tep, r->long_size);
	return ret;
}

/*
 * A handle for r->format into @v (empty), with the printk_formats of
 * @host registered (NULL: none). On failure @v is left empty.
 */
static int view_build(struct render *r, struct render_view *v, const char *host,
		      char *why, size_t whylen)
{
	const uint64_t *addr = NULL;
	char *const *fmt = NULL;
	enum tep_errno err;
	size_t n = 0;
	int ret = 0;

	v->tep = tep_alloc();
	if (!v->tep || (host && !(v->host = strdup(host)))) {
		view_drop(v);
		return -ENOMEM;
	}
	tep_set_file_bigendian(v->tep, tep_is_local_bigendian(v->tep) ?
			       TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	if (r->style == RENDER_TRACECMD)
		v->plugins = tep_load_plugins(v->tep);
	tep_set_function_resolver(v->tep, render_resolve, r);
	if (host && r->printk)
		n = r->printk(r->printk_ctx, host, r->wall, &addr, &fmt);
	for (size_t i = 0; i < n && ret == 0; i++)
		if (fmt[i] && tep_register_print_string(v->tep, fmt[i], addr[i]) < 0)
			ret = -ENOMEM;
	err = tep_parse_format(v->tep, &v->event, r->format, strlen(r->format), r->system);
	if (ret == 0 && (err || !v->event)) {
		tep_strerror(v->tep, err, why, whylen);
		ret = TC_ERR_FORMAT_PARSE;
	}
	if (ret == 0 && host)
		tep_set_long_size(v->tep, r->long_size);
	if (ret == 0 && !strcmp(r->system, "ftrace") && v->event->name &&
	    !strcmp(v->event->name, "kernel_stack") &&
	    tep_register_event_handler(v->tep, v->event->id, "ftrace", "kernel_stack",
				       render_stack_handler, r) < 0)
		ret = -ENOMEM;
	if (ret == 0 && !strcmp(r->system, "ftrace") && v->event->name &&
	    !strcmp(v->event->name, "user_stack") &&
	    tep_register_event_handler(v->tep, v->event->id, "ftrace", "user_stack",
				       render_ustack_handler, r) < 0)
		ret = -ENOMEM;
	if (ret < 0)
		view_drop(v);
	return ret;
}

/*
 * The handle for rows of @host: its own when there is a printk callback
 * (made at its first row), else views[0]; views[0] too when one cannot be
 * made (the row then prints the strings' addresses).
 */
static struct render_view *view_for(struct render *r, const char *host)
{
	char why[128];
	size_t i;

	if (!r->printk)
		return &r->views[0];
	for (i = 1; i < r->nviews; i++)
		if (!strcmp(r->views[i].host, host))
			return &r->views[i];
	if (r->nviews == RENDER_VIEWS_MAX)
		views_drop(r, false);
	if (view_build(r, &r->views[r->nviews], host, why, sizeof(why)) < 0)
		return &r->views[0];
	return &r->views[r->nviews++];
}

int render_prepare(struct render *r, const struct qmsg_reply *rep, char *why, size_t whylen)
{
	const char *colon;
	int ret;

	if (!rep->format || !rep->event) {
		snprintf(why, whylen, "the collector sent no format with the rows");
		return TC_ERR_FORMAT_PARSE;
	}
	if (r->format && !strcmp(r->format, rep->format) && !strcmp(r->event_name, rep->event))
		return 0;
	render_drop(r);
	ret = format_check(rep->format, strlen(rep->format), NULL, why, whylen);
	if (ret < 0)
		return ret;
	colon = strchr(rep->event, ':');
	snprintf(r->system, sizeof(r->system), "%.*s",
		 (int)(colon ? (size_t)(colon - rep->event) : strlen(rep->event)), rep->event);
	r->format = strdup(rep->format);
	r->event_name = strdup(rep->event);
	ret = r->format && r->event_name ? 0 : -ENOMEM;
	if (ret == 0)
		ret = view_build(r, &r->views[0], NULL, why, whylen);
	if (ret == 0) {
		r->nviews = 1;
		r->tep = r->views[0].tep;
		r->event = r->views[0].event;
		ret = render_layout(r, rep, why, whylen);
	}
	/* a stack's lines come from render_stack_handler(), never fastprint */
	if (ret == 0 && !r->stack)
		ret = fastprint_new(r->event, &r->fast);
	if (ret < 0)
		render_drop(r);
	return ret;
}

static void put_int(unsigned char *p, int size, uint64_t v)
{
	uint8_t u8 = (uint8_t)v;
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;

	switch (size) {
	case 1: memcpy(p, &u8, 1); break;
	case 2: memcpy(p, &u16, 2); break;
	case 4: memcpy(p, &u32, 4); break;
	case 8: memcpy(p, &v, 8); break;
	default: break;
	}
}

/* A __data_loc / __rel_loc field: its bytes after the fixed part, at *@end. */
static void put_dynamic(struct render *r, const struct tep_format_field *f,
			const struct qmsg_value *v, size_t *end)
{
	size_t len = v->s.len + (v->kind == QV_STR);	/* a string keeps its NUL */
	uint32_t off = (uint32_t)*end, loc;

	if (len > 0xffff || *end + len > sizeof(r->rec))
		len = 0;
	memcpy(r->rec + *end, v->s.p, len ? v->s.len : 0);
	if (len && v->kind == QV_STR)
		r->rec[*end + v->s.len] = 0;
	*end += (len + 3) & ~(size_t)3;
	if (f->flags & TEP_FIELD_IS_RELATIVE)
		off -= (uint32_t)(f->offset + f->size);
	loc = (uint32_t)len << 16 | (off & 0xffff);
	put_int(r->rec + f->offset, f->size, loc);
}

/*
 * A flexible array at the end of the fixed part (ftrace:print's "char
 * buf[]", size 0): its bytes at its offset, the record grown to hold
 * them, a string NUL-ended. Only before any __data_loc bytes went there.
 */
static void put_tail(struct render *r, const struct tep_format_field *f,
		     const struct qmsg_value *v, size_t *end)
{
	size_t len = v->s.len + (v->kind == QV_STR);

	if ((size_t)f->offset < r->fixed || *end != ((r->fixed + 3) & ~(size_t)3) ||
	    f->offset + len > sizeof(r->rec))
		return;
	memcpy(r->rec + f->offset, v->s.p, v->s.len);
	if (v->kind == QV_STR)
		r->rec[f->offset + v->s.len] = 0;
	*end = (f->offset + len + 3) & ~(size_t)3;
}

static void put_field(struct render *r, const struct tep_format_field *f,
		      const struct qmsg_value *v, size_t *end)
{
	if (v->kind == QV_NIL)
		return;
	if (v->kind == QV_STR || v->kind == QV_BIN) {
		if (f->flags & TEP_FIELD_IS_DYNAMIC)
			put_dynamic(r, f, v, end);
		else if (f->size == 0 || f == r->stack)
			put_tail(r, f, v, end);
		else
			memcpy(r->rec + f->offset, v->s.p,
			       v->s.len < (size_t)f->size ? v->s.len : (size_t)f->size);
		return;
	}
	if (!(f->flags & (TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_ARRAY)))
		put_int(r->rec + f->offset, f->size, (uint64_t)qmsg_value_int(v));
}

/* Rebuild @row's record; return its size. */
static size_t render_record(struct render *r, const struct qmsg_reply *rep,
			    const struct qmsg_value *row)
{
	size_t end = (r->fixed + 3) & ~(size_t)3;

	memset(r->rec, 0, end);
	for (size_t i = 0; i < r->nfields; i++) {
		const struct tep_format_field *f = r->fields[i];

		if ((int)i == r->type_field)
			put_int(r->rec + f->offset, f->size, (uint64_t)r->event->id);
		else if (r->col[i] >= 0 && (uint32_t)r->col[i] < rep->ncols)
			put_field(r, f, &row[r->col[i]], &end);
	}
	return end;
}

size_t render_rebuild(struct render *r, const struct qmsg_reply *rep,
		      const struct qmsg_value *row, const void **rec)
{
	if (!r->nviews)
		return 0;
	*rec = r->rec;
	return render_record(r, rep, row);
}

size_t render_stack_lines(const struct render *r, const char *text, size_t len)
{
	(void)text;
	return r->stack && r->nviews && r->info_at < len ? r->info_at : len;
}

/* The @size bytes at @p in the other byte order. */
static void swap_bytes(unsigned char *p, size_t size)
{
	for (size_t i = 0; i < size / 2; i++) {
		unsigned char c = p[i];

		p[i] = p[size - 1 - i];
		p[size - 1 - i] = c;
	}
}

void render_swap(const struct render *r, const struct qmsg_reply *rep,
		 const struct qmsg_value *row, void *rec, size_t size)
{
	for (size_t i = 0; r->nviews && i < r->nfields; i++) {
		const struct tep_format_field *f = r->fields[i];
		const struct qmsg_value *v = r->col[i] >= 0 && (uint32_t)r->col[i] < rep->ncols ?
					     &row[r->col[i]] : NULL;
		bool put = (int)i == r->type_field;	/* what render_record() put as a number */

		if (!put && v && v->kind != QV_NIL)
			put = v->kind == QV_STR || v->kind == QV_BIN ?
			      (f->flags & TEP_FIELD_IS_DYNAMIC) != 0 :	/* its __data_loc word */
			      !(f->flags & (TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_ARRAY));
		if (put && (f->size == 2 || f->size == 4 || f->size == 8) &&
		    (size_t)f->offset + (size_t)f->size <= size)
			swap_bytes((unsigned char *)rec + f->offset, (size_t)f->size);
	}
}

int render_event_id(const struct render *r)
{
	return r->nviews ? r->views[0].event->id : -1;
}

static void render_comm(struct render *r, const struct qmsg_value *row)
{
	int pid = (int)(uint64_t)qmsg_value_int(&row[4]);

	/* pid 0 is "<idle>" in both layouts: libtraceevent knows it */
	if (pid == 0)
		return;
	tep_override_comm(r->tep, row[5].kind == QV_STR ? row[5].s.p : "<...>", pid);
}

static void line_time(struct linebuf *l, int64_t ts);

/*
 * The record's time as "%6.1000d" prints it. libtraceevent takes it as
 * unsigned (a time before 1970 would print as 18446744073.709551): a
 * negative one is printed here, with its sign.
 */
static void render_time(struct render *r, struct tep_record *rec)
{
	char b[40];
	struct linebuf l = { .buf = b, .cap = sizeof(b) };

	if ((int64_t)rec->ts >= 0) {
		tep_print_event(r->tep, &r->seq, rec, "%6.1000d", TEP_PRINT_TIME);
		return;
	}
	line_time(&l, (int64_t)rec->ts);
	trace_seq_printf(&r->seq, "%.*s", (int)l.len, b);
}

static void render_line(struct render *r, struct tep_record *rec)
{
	static const char spaces[] = "                    ";	/* 20 */
	size_t n = strlen(r->event->name);

	if (r->style == RENDER_KERNEL) {
		tep_print_event(r->tep, &r->seq, rec, "%16s-%-7d ", TEP_PRINT_COMM, TEP_PRINT_PID);
		if (r->tgid)
			put_tgid(r);
		tep_print_event(r->tep, &r->seq, rec, "[%03d] %s ", TEP_PRINT_CPU,
				TEP_PRINT_LATENCY);
		render_time(r, rec);
		/* the kernel's trace file names no event before a stack */
		if (r->stack)
			trace_seq_puts(&r->seq, ": ");
		else
			tep_print_event(r->tep, &r->seq, rec, ": %s: ", TEP_PRINT_NAME);
		r->info_at = r->seq.len;
		tep_print_event(r->tep, &r->seq, rec, "%s", TEP_PRINT_INFO);
		return;
	}
	tep_print_event(r->tep, &r->seq, rec, "%16s-%-5d ", TEP_PRINT_COMM, TEP_PRINT_PID);
	if (r->tgid)
		put_tgid(r);
	tep_print_event(r->tep, &r->seq, rec, "[%03d] ", TEP_PRINT_CPU);
	render_time(r, rec);
	trace_seq_puts(&r->seq, ":");
	trace_seq_printf(&r->seq, " %s: %.*s", r->event->name, n < 20 ? (int)(20 - n) : 0,
			 spaces);
	r->info_at = r->seq.len;
	tep_print_event(r->tep, &r->seq, rec, "%s", TEP_PRINT_INFO);
}

void render_set_slow(struct render *r, bool slow)
{
	r->slow = slow;
}

/* printf's %d of @v, @width wide: '-' left-aligned, '0' zero-padded. */
static void line_int(struct linebuf *l, int64_t v, unsigned width, char flag)
{
	char tmp[24], *e = tmp + sizeof(tmp), *p = e;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	linebuf_padded(l, p, (size_t)(e - p), v < 0, width, flag == '-', flag == '0');
}

/*
 * @ts ns as libtraceevent's "%6.1000d" prints a time: the seconds 5 wide,
 * '.', the microseconds (rounded) 6 digits; a time before 1970 with its
 * '-' (-0.500000), where libtraceevent has none.
 */
static void line_time(struct linebuf *l, int64_t ts)
{
	uint64_t mag = ts < 0 ? 0 - (uint64_t)ts : (uint64_t)ts;
	uint64_t us = mag / 1000 + (mag % 1000 >= 500);
	char sec[24];
	int n = snprintf(sec, sizeof(sec), "%s%" PRIu64, ts < 0 ? "-" : "", us / 1000000);

	linebuf_fill(l, ' ', n < 5 ? (size_t)(5 - n) : 0);
	linebuf_put(l, sec, (size_t)n);
	linebuf_put(l, ".", 1);
	line_int(l, (int64_t)(us % 1000000), 6, '0');
}

/*
 * trace-cmd's columns for the row of @pid on @cpu at @ts, as
 * render_line() prints them through tep_print_event(): "%16s-%-5d "
 * (pid 0 is "<idle>", a pid without a name "<...>"), the tgid, "[%03d]",
 * " %6.1000d:" and " NAME: " padded to 20 characters of name.
 */
static void line_columns(struct render *r, struct linebuf *l, const struct qmsg_value *row,
			 int32_t pid, int cpu, int64_t ts)
{
	const char *comm = pid == 0 ? "<idle>" : row[5].kind == QV_STR ? row[5].s.p : "<...>";
	const char *name = r->views[0].event->name;
	size_t n = strlen(comm);

	linebuf_fill(l, ' ', n < 16 ? 16 - n : 0);
	linebuf_put(l, comm, n);
	linebuf_put(l, "-", 1);
	line_int(l, pid, 5, '-');
	linebuf_put(l, " ", 1);
	if (r->tgid && r->row_tgid > 0) {
		linebuf_put(l, "(", 1);
		line_int(l, r->row_tgid, 7, 0);
		linebuf_put(l, ") ", 2);
	} else if (r->tgid) {
		linebuf_put(l, "(-------) ", 10);
	}
	linebuf_put(l, "[", 1);
	line_int(l, cpu, 3, '0');
	linebuf_put(l, "] ", 2);
	line_time(l, ts);
	linebuf_put(l, ": ", 2);
	n = strlen(name);
	linebuf_put(l, name, n);
	linebuf_put(l, ": ", 2);
	linebuf_fill(l, ' ', n < 20 ? 20 - n : 0);
}

/*
 * The row in trace-cmd's layout without libtraceevent where it can be:
 * the columns always (the record's pid being the row's), the event text
 * when fastprint takes the format. Return: false when the row takes
 * libtraceevent's way.
 */
static bool render_fast(struct render *r, const struct qmsg_value *row, size_t size,
			int cpu, int64_t ts, struct linebuf *l)
{
	int32_t pid = (int32_t)(uint64_t)qmsg_value_int(&row[4]), rec_pid;
	struct render_view *v;

	if (r->slow || r->style != RENDER_TRACECMD || r->pid_offset < 0)
		return false;
	memcpy(&rec_pid, r->rec + r->pid_offset, 4);
	if (rec_pid != pid)
		return false;
	line_columns(r, l, row, pid, cpu, ts);
	if (r->fast && fastprint_run(r->fast, r->rec, size, sizeof(r->rec), l->buf, &l->len,
				     l->cap) == 0)
		return true;
	/* the event text from libtraceevent after our columns */
	v = view_for(r, r->host);
	r->tep = v->tep;
	r->event = v->event;
	render_comm(r, row);
	trace_seq_reset(&r->seq);
	r->info_at = l->len;
	tep_print_event(r->tep, &r->seq, &(struct tep_record){ .ts = ts, .cpu = cpu,
			.data = r->rec, .size = (int)size, .record_size = (int)size },
			"%s", TEP_PRINT_INFO);
	trace_seq_terminate(&r->seq);
	linebuf_put(l, r->seq.buffer, r->seq.len);
	return true;
}

size_t render_row(struct render *r, const struct qmsg_reply *rep, const struct qmsg_value *row,
		  int64_t ts, char *buf, size_t len)
{
	struct tep_record rec = { 0 };
	struct linebuf l = { .buf = buf, .cap = len };	/* one byte over: was it cut? */
	struct render_view *v;
	size_t n;

	if (!r->nviews || !len)
		return 0;
	r->host = row[0].kind == QV_STR ? row[0].s.p : "";
	r->wall = (int64_t)(uint64_t)qmsg_value_int(&row[2]);
	r->row_tgid = r->tgid ? r->tgid(r->tgid_ctx, r->host, (int32_t)(uint64_t)qmsg_value_int(&row[4])) : 0;
	rec.ts = (unsigned long long)ts;	/* render_time() reads its sign back */
	rec.cpu = (int)(uint64_t)qmsg_value_int(&row[1]);
	rec.data = r->rec;
	rec.size = (int)render_record(r, rep, row);
	rec.record_size = rec.size;
	if (render_fast(r, row, (size_t)rec.size, rec.cpu, ts, &l)) {
		/* as below: a whole text's own last newline goes; a longer one is cut */
		if (l.len && l.len < len && buf[l.len - 1] == '\n')
			l.len--;
		l.len = l.len < len - 1 ? l.len : len - 1;
		buf[l.len] = 0;
		return l.len;
	}
	v = view_for(r, r->host);
	r->tep = v->tep;
	r->event = v->event;
	render_comm(r, row);
	trace_seq_reset(&r->seq);
	render_line(r, &rec);
	/* a text that ends its own line (print's buf): trace-cmd drops that newline */
	if (r->seq.len && r->seq.buffer[r->seq.len - 1] == '\n')
		r->seq.len--;
	trace_seq_terminate(&r->seq);
	n = r->seq.len < len - 1 ? r->seq.len : len - 1;
	memcpy(buf, r->seq.buffer, n);
	buf[n] = 0;
	return n;
}
