/*
 * printer.c - the rows of select and --follow pages on stdout in the
 * layout --format names (printer.h): text and kernel through a renderer
 * per event type (render.h), its lines built for the whole page and
 * written in runs; fields, json and csv row by row (output.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "traceq/client.h"
#include "traceq/hostcache.h"
#include "traceq/losses.h"
#include "traceq/output.h"
#include "traceq/printer.h"
#include "traceq/render.h"

#define TRACEQ_LINE_MAX		8192	/* a rendered line is cut there */
#define TRACEQ_HOST_ESC		(4 * 256)	/* a host name (255 bytes) escaped */

/*
 * What one event type of an answer prints with: its renderer (text,
 * kernel) or its JSON/CSV keys. A multi-type answer (a selector list, a
 * glob) interleaves its types row by row, so each type keeps its own.
 */
struct ptype {
	char *event;			/* "system:name" */
	uint32_t ncols;
	const char *format;		/* the reply's text it was last prepared with */
	char *text;			/* a copy of it: the type of a row is its event and
					 * its format (hosts with other kernels send others) */
	struct render *render;		/* text and kernel; NULL: not made yet */
	bool refused;			/* its format cannot be rendered: fields */
	struct out_keys keys;		/* json and csv */
	bool keys_made;
};

#define TRACEQ_MAX_TYPES	512	/* types printed with their own state */

struct printer {
	const struct traceq_opts *o;
	struct hostcache *hc;		/* symbols, printk_formats, tgids */
	struct ptype *types;
	size_t ntypes;
	bool csv_header;		/* printed (csv: the first type's columns) */
	const char *csv_event;		/* the one type csv prints */
	int host_width;			/* > 0: a leading host column */
	char *text;			/* a page rendered: its lines, each with its '\n' */
	size_t text_len, text_cap;
	struct line {			/* per row of the page: */
		size_t end;		/* where its line ends in text; */
		bool as_fields;		/* or true: it prints as fields */
	} *lines;
	struct losses *losses;		/* printed where they happened; NULL: none */
	bool losses_bounded;		/* only those from the first row on */
	bool rows_seen;			/* a row was printed */
};

/*
 * Whether a loss is due before a row of wall-clock @ts: one at or
 * before it (--reverse: after it; trace-cmd prints a loss before the
 * first event of its page, whose timestamp is the loss's).
 */
static const struct loss *loss_due(struct printer *p, int64_t ts)
{
	const struct loss *x = p->losses ? losses_peek(p->losses) : NULL;

	if (!x || (p->o->sel.reverse ? x->ts <= ts : x->ts > ts))
		return NULL;
	return x;
}

static void print_loss(const struct printer *p, const struct loss *x)
{
	enum out_format f = p->o->format;

	if (f == OUT_JSON)
		losses_print_json(stdout, x);
	else if (f != OUT_CSV)	/* csv's columns are one event type's */
		losses_print_text(stdout, x, p->host_width, f == OUT_KERNEL);
}

/* The losses due before a row of wall-clock @ts; the first row's bound (losses_bounded). */
static void print_losses(struct printer *p, int64_t ts)
{
	const struct loss *x;

	while ((x = loss_due(p, ts))) {
		if (!p->losses_bounded || p->rows_seen || x->ts == ts)
			print_loss(p, x);
		losses_pop(p->losses);
	}
}

void printer_losses(struct printer *p, struct losses *l, bool bounded)
{
	p->losses = l;
	p->losses_bounded = bounded;
}

void printer_losses_rest(struct printer *p)
{
	const struct loss *x;

	while (p->losses && (x = losses_peek(p->losses)) &&
	       (!p->losses_bounded || p->rows_seen)) {
		if (!p->losses_bounded)
			print_loss(p, x);
		losses_pop(p->losses);
	}
}

static int64_t row_time(const struct printer *p, const struct qmsg_value *row)
{
	return qmsg_value_int(&row[p->o->time_raw ? 3 : 2]);
}

/* The host column of @row into @buf: its name escaped (a peer's: common/log.h). */
static const char *host_text(const struct qmsg_value *row, char *buf, size_t len)
{
	if (row[0].kind != QV_STR)
		return "";
	log_escape_mem(row[0].s.p, row[0].s.len, buf, len);
	return buf;
}

static void print_host(const struct printer *p, const struct qmsg_value *row)
{
	char h[TRACEQ_HOST_ESC];

	if (p->host_width > 0)
		printf("%*s: ", p->host_width, host_text(row, h, sizeof(h)));
}

static void ptype_free(struct ptype *t)
{
	free(t->event);
	free(t->text);
	render_free(t->render);
	if (t->keys_made)
		out_keys_free(&t->keys);
	memset(t, 0, sizeof(*t));
}

/*
 * The state of @view's type (qmsg_reply_row()), made on first sight: a
 * renderer prepared with its format (text, kernel; a format it refuses
 * is said once and the type prints as fields) or its keys (json, csv).
 * Past TRACEQ_MAX_TYPES types the last slot is reused. NULL: no memory.
 */
static struct ptype *ptype_of(struct printer *p, const struct qmsg_reply *view)
{
	enum out_format f = p->o->format;
	const char *event = view->event ? view->event : "?";
	struct ptype *t = NULL;
	char why[256] = "";

	/* the reply's own text first (a pointer per type of the page), then by content */
	for (size_t i = p->ntypes; i-- > 0 && !t;)
		if (view->format && p->types[i].format == view->format &&
		    p->types[i].ncols == view->ncols &&
		    !strcmp(p->types[i].event, event))
			t = &p->types[i];
	for (size_t i = p->ntypes; i-- > 0 && !t;)
		if (!strcmp(p->types[i].event, event) && p->types[i].ncols == view->ncols &&
		    !strcmp(p->types[i].text ? p->types[i].text : "",
			    view->format ? view->format : ""))
			t = &p->types[i];
	if (t) {
		/* once a page (a reply's text): a type's format can change (a new kernel) */
		if (t->render && !t->refused && t->format != view->format) {
			t->format = view->format;
			if (render_prepare(t->render, view, why, sizeof(why)) < 0)
				t->refused = true;
		}
		return t;
	}
	if (!p->types && !(p->types = calloc(TRACEQ_MAX_TYPES, sizeof(*p->types))))
		return NULL;
	if (p->ntypes == TRACEQ_MAX_TYPES)
		ptype_free(&p->types[--p->ntypes]);
	t = &p->types[p->ntypes];
	t->ncols = view->ncols;
	t->format = view->format;
	if (!(t->event = strdup(event)) ||
	    !(t->text = strdup(view->format ? view->format : "")))
		goto nomem;
	if (f == OUT_TEXT || f == OUT_KERNEL) {
		if (render_new(f == OUT_TEXT ? RENDER_TRACECMD : RENDER_KERNEL, hostcache_sym,
			       p->hc, &t->render) < 0)
			goto nomem;
		render_set_printk(t->render, hostcache_printk, p->hc);
		if (p->o->tgid)
			render_set_tgid(t->render, hostcache_tgid, p->hc);
		t->format = view->format;
		if (render_prepare(t->render, view, why, sizeof(why)) < 0) {
			char e[LOG_ESC_LEN], w[LOG_ESC_LEN];

			fprintf(stderr, "traceq: %s: cannot render its format (%s): "
				"printed as fields\n", log_escape(event, e, sizeof(e)),
				log_escape(why, w, sizeof(w)));
			t->refused = true;
		}
	} else if (f == OUT_JSON || f == OUT_CSV) {
		if (out_keys_make(view, &t->keys) < 0)
			goto nomem;
		t->keys_made = true;
	}
	p->ntypes++;
	return t;
nomem:
	ptype_free(t);
	return NULL;
}

/*
 * Room for one more line in p->text: @extra bytes (its host column) and
 * at most TRACEQ_LINE_MAX more.
 */
static int text_room(struct printer *p, size_t extra)
{
	size_t cap = p->text_cap ? p->text_cap : 1u << 20;
	char *np;

	while (cap - p->text_len < extra + TRACEQ_LINE_MAX + 1)
		cap *= 2;
	if (cap == p->text_cap)
		return 0;
	if (!(np = realloc(p->text, cap)))
		return -ENOMEM;
	p->text = np;
	p->text_cap = cap;
	return 0;
}

/*
 * One rendered line at @dst (room for TRACEQ_LINE_MAX and a NUL), its
 * peer-supplied text (a comm, a string field, a marker's text, a format's
 * words) escaped as common/log.h says: no control byte of it reaches the
 * terminal, and a newline in it is "\\n", not a forged row. Return: its
 * length.
 */
static size_t render_line(struct render *r, const struct qmsg_reply *view,
			  const struct qmsg_value *row, int64_t ts, char *dst)
{
	char raw[TRACEQ_LINE_MAX + 1];
	size_t n = render_row(r, view, row, ts, dst, TRACEQ_LINE_MAX);
	size_t head = render_stack_lines(r, dst, n), m;	/* a stack's lines are ours */

	if (!log_escape_needed(dst, head))
		return n;
	memcpy(raw, dst, n);
	m = log_escape_mem(raw, head, dst, TRACEQ_LINE_MAX);
	if (n - head > TRACEQ_LINE_MAX - m)
		n = head + (TRACEQ_LINE_MAX - m);
	memcpy(dst + m, raw + head, n - head);
	dst[m + n - head] = '\0';
	return m + n - head;
}

/*
 * Render every row of @rep into p->text, one line after the other
 * (p->lines[i].as_fields for a row whose type prints as fields).
 */
static int render_page(struct printer *p, const struct qmsg_reply *rep)
{
	void *np;

	p->text_len = 0;
	if (!(np = realloc(p->lines, (rep->nrows + 1) * sizeof(*p->lines))))
		return -ENOMEM;
	p->lines = np;
	for (uint32_t i = 0; i < rep->nrows; i++) {
		struct qmsg_reply view;
		const struct qmsg_value *row = qmsg_reply_row(rep, i, &view);
		struct ptype *t = ptype_of(p, &view);
		char hbuf[TRACEQ_HOST_ESC];
		const char *host = p->host_width > 0 ? host_text(row, hbuf, sizeof(hbuf)) : "";
		size_t hlen = strlen(host),
		       pad = hlen < (size_t)p->host_width ? (size_t)p->host_width - hlen : 0;

		if (!t || text_room(p, pad + hlen + 2) < 0)
			return -ENOMEM;
		p->lines[i].as_fields = t->refused;
		if (!t->refused) {
			if (p->host_width > 0) {	/* print_host()'s column */
				memset(p->text + p->text_len, ' ', pad);
				memcpy(p->text + p->text_len + pad, host, hlen);
				memcpy(p->text + p->text_len + pad + hlen, ": ", 2);
				p->text_len += pad + hlen + 2;
			}
			p->text_len += render_line(t->render, &view, row, row_time(p, row),
						   p->text + p->text_len);
			p->text[p->text_len++] = '\n';
		}
		p->lines[i].end = p->text_len;
	}
	return 0;
}

/*
 * The rendered layouts: render the page; when the formats asked for code
 * addresses not known yet, fetch their names and render it again. A row
 * whose format the renderer refuses prints in the fields layout.
 */
static int print_rendered(struct printer *p, const struct qmsg_reply *rep)
{
	int ret = render_page(p, rep);
	size_t start = 0;

	if (ret == 0 && hostcache_sym_pending(p->hc) && rep->nrows) {
		struct qmsg_reply view;
		const struct qmsg_value *last = qmsg_reply_row(rep, rep->nrows - 1, &view);

		ret = hostcache_sym_fetch(p->hc, qmsg_value_int(&last[2]));
		if (ret == 0)
			ret = render_page(p, rep);
	}
	if (ret < 0) {
		fprintf(stderr, "traceq: out of memory\n");
		return 1;
	}
	for (uint32_t i = 0; i < rep->nrows; i++) {
		size_t begin = i ? p->lines[i - 1].end : 0;
		struct qmsg_reply view;
		const struct qmsg_value *row = qmsg_reply_row(rep, i, &view);
		int64_t ts = qmsg_value_int(&row[2]);

		if (loss_due(p, ts)) {	/* the run so far, then the loss lines */
			fwrite(p->text + start, 1, begin - start, stdout);
			start = begin;
			print_losses(p, ts);
		}
		p->rows_seen = true;
		/* rendered lines (host column and all) go out in runs, at once */
		if (!p->lines[i].as_fields)
			continue;
		fwrite(p->text + start, 1, begin - start, stdout);
		print_host(p, row);
		out_fields_row(stdout, &view, row, row_time(p, row));
		start = p->lines[i].end;
	}
	fwrite(p->text + start, 1, p->text_len - start, stdout);
	return 0;
}

int printer_page(struct printer *p, const struct qmsg_reply *rep)
{
	enum out_format f = p->o->format;

	/* the texts of the last page are gone: types are found by content again */
	for (size_t i = 0; i < p->ntypes; i++)
		p->types[i].format = NULL;

	if (f == OUT_TEXT || f == OUT_KERNEL)
		return print_rendered(p, rep);
	for (uint32_t i = 0; i < rep->nrows; i++) {
		struct qmsg_reply view;
		const struct qmsg_value *row = qmsg_reply_row(rep, i, &view);
		struct ptype *t = view.ncols >= QMSG_META_COLS ? ptype_of(p, &view) : NULL;

		if (view.ncols < QMSG_META_COLS)
			continue;
		print_losses(p, qmsg_value_int(&row[2]));
		p->rows_seen = true;
		if (!t) {
			fprintf(stderr, "traceq: out of memory\n");
			return 1;
		}
		if (f == OUT_CSV && !p->csv_header) {
			out_csv_header(stdout, &t->keys);
			p->csv_header = true;
			p->csv_event = t->event;
		}
		if (f == OUT_CSV && strcmp(p->csv_event, t->event)) {
			char a[LOG_ESC_LEN], b[LOG_ESC_LEN];

			fprintf(stderr, "traceq: --format csv prints one event type, and this "
				"answer has %s and %s: select one event, or use --format json\n",
				log_escape(p->csv_event, a, sizeof(a)),
				log_escape(t->event, b, sizeof(b)));
			return 1;
		}
		if (f == OUT_JSON)
			out_json_row(stdout, &view, &t->keys, row);
		else if (f == OUT_CSV)
			out_csv_row(stdout, &view, &t->keys, row);
		else {
			print_host(p, row);
			out_fields_row(stdout, &view, row, row_time(p, row));
		}
	}
	return 0;
}

/*
 * How wide the leading host column is: 0 (none) when --no-host, for JSON
 * and CSV (host is a key there) and when at most one host the collector
 * knows matches --host; else the longest such name.
 */
static int host_width(struct client *c, const struct traceq_opts *o)
{
	struct qmsg_reply rep;
	const char *first = NULL;
	bool several = false;
	int width = 0;

	/* the hosts of --host: the collector matches them */
	if (o->no_host || o->format == OUT_JSON || o->format == OUT_CSV ||
	    client_ask(c, QOP_STATS, NULL, &o->sel, &rep))
		return 0;
	for (uint32_t i = 0; rep.ncols && i < rep.nrows; i++) {
		const struct qmsg_value *h = &rep.vals[i * rep.ncols];

		if (h->kind != QV_STR)
			continue;
		if (!first)
			first = h->s.p;
		else if (strcmp(first, h->s.p))
			several = true;
		if (h->s.len > (size_t)width && h->s.len < 256)
			width = (int)h->s.len;
	}
	qmsg_reply_free(&rep);
	return several ? width : 0;
}

void printer_free(struct printer *p)
{
	if (!p)
		return;
	free(p->text);
	free(p->lines);
	for (size_t i = 0; i < p->ntypes; i++)
		ptype_free(&p->types[i]);
	free(p->types);
	hostcache_free(p->hc);
	free(p);
}

int printer_new(struct client *c, const struct traceq_opts *o, struct printer **out)
{
	struct printer *p = calloc(1, sizeof(*p));

	if (!p || !(p->hc = hostcache_new(c))) {
		free(p);
		return -ENOMEM;
	}
	p->o = o;
	p->host_width = host_width(c, o);
	*out = p;
	return 0;
}

/*
 * The fields a rendered layout does not print, left out of the pages the
 * collector sends (a third of a syscall's row): common_type (render.c
 * writes the format's id there), and for text also common_flags and
 * common_preempt_count, which only the kernel layout's latency columns
 * read (no print fmt does).
 */
static const char *const unprinted[] = { "common_type", "common_flags", "common_preempt_count" };

void printer_omit(const struct traceq_opts *o, struct qmsg_request *req)
{
	req->omit = (char **)unprinted;
	req->nomit = o->format == OUT_TEXT ? 3 : o->format == OUT_KERNEL ? 1 : 0;
}
