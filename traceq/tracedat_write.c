/*
 * tracedat_write.c - traceq --export -f tracedat: trace-cmd's trace.dat,
 * one file per host (export.h's writer), read by trace-cmd report,
 * KernelShark and traceq --import (traceq/tracedat.c, the reader this
 * writer shares its constants with: tracedat_format.h).
 *
 * Version and compression, decided: version 7 compressed with zstd by
 * default (what trace-cmd 3 records; the metadata sections and the pages
 * both compressed, the pages TRACEDAT_PAGES_IN_CHUNK to a chunk as
 * trace-cmd does), version 6 uncompressed with --tracedat-version 6, for
 * readers older than trace-cmd 3. Nothing else: a v7 file without
 * compression or with zlib buys no reader anything the two do not.
 * The layouts followed are trace-cmd's Documentation/trace-cmd/
 * trace-cmd.dat.v6.txt and .v7.txt, and where they are silent what
 * trace-cmd 3.1.6's lib/trace-cmd/trace-output.c writes: v6 puts
 * "[clock]" (8-byte size first) after the flyrecord table; v7 lays its
 * sections end to end from the file header on (trace-cmd's reader walks
 * them by their sizes to find STRINGS), each CPU's data page-aligned in
 * the BUFFER section, its size in the BUFFER option leaving out the
 * 4-byte chunk count (3.1.6's reader and ours take both).
 *
 * The store keeps rows, not pages, so pages are built from rows: each
 * row's record rebuilt from its fields and its host's format by
 * render.h (render_rebuild(): the same bytes render_row() prints from),
 * laid out as the kernel does (common/page.h): per CPU, a page header
 * (u64 timestamp, a commit word of the host's long size), then records
 * with type_len/time_delta headers, a time-extend record before a record
 * whose delta does not fit 27 bits, a new page when the next record does
 * not fit or the clock goes back. Times are the rows' trace-clock times
 * (trace_ts). A loss (export_loss) ends the CPU's page there and marks
 * the next one as the kernel does: the missed-events flag, and the count
 * stored after the records when it is known and fits.
 *
 * Byte order and long size: the host's, as the collector keeps them
 * (hostmeta.h; its header_page's commit field for the long size, else
 * 8): the file header says which, and every number of the file is
 * written so (tdw_num()), the page headers, record headers and time
 * extends too. The records are rebuilt in this machine's order
 * (render.c); for a host of the other order render_swap() turns the
 * numbers the rebuild put (the arrays and strings the collector kept as
 * the host's kernel wrote them stay as they are).
 *
 * Memory: one open page per CPU the host's rows use, the formats, comms
 * and symbols the rows name (capped); the pages go to a temporary file
 * next to the output (unlinked) and are copied CPU by CPU into the file
 * at host_end(), when the metadata is known: v6 wants it before the data.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "common/page.h"
#include "common/tc_error.h"
#include "proto/msg.h"
#include "traceq/export.h"
#include "traceq/render.h"
#include "traceq/tracedat.h"
#include "traceq/tracedat_format.h"

#define TDW_MAX_COMMS	(1u << 20)	/* pid -> comm pairs kept per host */
#define TDW_MAX_SYMS	(1u << 20)	/* symbols kept per host */
#define TDW_SYM_END	"tracecollect_named_end"	/* kallsyms' end: tdw_want_names() */
#define TDW_COMM_LEN	64
#define TDW_DEFAULT_PAGE	4096u

/* An event format of the host, as the rows carried it; its renderer rebuilds records. */
#define TDW_SYM_COLS	4	/* address columns with a "_sym" name column (ftrace's) */

struct tdw_fmt {
	char *event;		/* "system:name" */
	char *text;
	const char *last;	/* the reply's text pointer it was last seen with, */
	uint64_t last_page;	/* ... in this page (export_row.page) */
	int id;
	struct render *r;
	bool refused;
	bool fn_checked;	/* whether its text prints code addresses is known: */
	bool prints_fn;		/* ... %ps, a plugin's function field: rows rendered */
	uint32_t nsym;		/* pairs of columns: address, its "X_sym" name */
	uint32_t sym_addr[TDW_SYM_COLS], sym_name[TDW_SYM_COLS];
};

/* A CPU's page being filled, and its chain of pages in the spool. */
struct tdw_cpu {
	uint8_t *page;		/* NULL: no page open */
	uint32_t len;		/* bytes of records */
	uint64_t page_ts, last_ts;
	bool missed;		/* the next page starts after a loss */
	uint64_t missed_count;
	bool used;
	uint32_t head, tail;	/* spool pages: first, last (+1; 0: none) */
	uint64_t npages;
};

/*
 * The CPUs of one buffer instance of the file: the kernel's (the top
 * instance) or the programs' rings (our function-graph streams, whose
 * CPU numbers are no kernel CPU: an instance of their own, "programs",
 * each of their CPUs one of it, numbered in the order they first come),
 * so that KernelShark shows them as lanes of their own.
 */
struct tdw_set {
	struct tdw_cpu *cpus;
	uint32_t ncpus;			/* slots in cpus */
	uint32_t max_cpu;		/* declared CPUs, or the highest used + 1 */
};

enum { TDW_KERNEL, TDW_PROGRAMS, TDW_SETS };
static const char *const tdw_set_names[TDW_SETS] = { "", "programs" };

struct tdw_comm {
	int32_t pid;		/* 0: empty slot */
	char comm[TDW_COMM_LEN];
};

struct tdw_sym {
	uint64_t addr;		/* 0: empty slot */
	char *name;
};

struct tdw_host {
	char *name, *kernel, *clock, *header_page, *header_event, *printk;
	uint32_t page_size, long_size;
	bool big_endian;		/* the host's byte order, the file's */
	bool swap;			/* ... not this machine's */
	uint8_t *rec;			/* a record turned to it (page_size bytes) */
	int64_t offset;			/* OFFSET option (--time wall) */
	struct tdw_fmt *fmts;
	size_t nfmts;
	struct tdw_set sets[TDW_SETS];
	uint16_t *stream_cpu;		/* a program row's CPU -> its CPU in the instance + 1 */
	FILE *spool;
	uint32_t *next;			/* spool page i's successor (+1) on its CPU */
	uint32_t npages, cap_pages;
	struct tdw_comm *comms;
	size_t ncomms, cap_comms;
	struct tdw_sym *syms;
	size_t nsyms, cap_syms;
	uint64_t *want;			/* code addresses the rows' text prints (a set; 0: empty) */
	size_t nwant, cap_want;
	int64_t last_wall;		/* the last row's wall clock: the symbols' time */
	bool prints_fn_seen;		/* tdw_sym() was called while a row printed */
};

struct tdw {
	struct export_writer base;
	struct export_opts o;
	char *path;
	struct tdw_host *h;		/* the host being written; NULL between hosts */
	char *file;			/* its output file */
	FILE *out;
	ZSTD_CCtx *zc;
	struct export_stats st;
};

static struct tdw *tdw_of(struct export_writer *w)
{
	return (struct tdw *)w;
}

/* ---- the host's tables: comms and symbols (open addressing) ---- */

static uint64_t mix(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	return v;
}

static void comm_put(struct tdw_comm *t, size_t cap, int32_t pid, const char *comm, size_t *n)
{
	size_t i = mix((uint64_t)(uint32_t)pid) & (cap - 1);

	while (t[i].pid && t[i].pid != pid)
		i = (i + 1) & (cap - 1);
	if (!t[i].pid)
		(*n)++;
	else if (!strncmp(t[i].comm, comm, sizeof(t[i].comm) - 1))
		return;	/* the name it has (most rows: no copy) */
	t[i].pid = pid;
	snprintf(t[i].comm, sizeof(t[i].comm), "%s", comm);
}

/* The latest comm of @pid (the collector's name for it, as traceq prints it). */
static int comm_add(struct tdw_host *h, int32_t pid, const char *comm)
{
	if (pid <= 0 || !comm || !*comm)
		return 0;
	if ((h->ncomms + 1) * 2 > h->cap_comms) {
		size_t cap = h->cap_comms ? h->cap_comms * 2 : 1024;
		struct tdw_comm *t;

		if (h->ncomms >= TDW_MAX_COMMS)
			return 0;	/* the rest keep the names trace-cmd gives ("<...>") */
		if (!(t = calloc(cap, sizeof(*t))))
			return -ENOMEM;
		h->ncomms = 0;
		for (size_t i = 0; i < h->cap_comms; i++)
			if (h->comms[i].pid)
				comm_put(t, cap, h->comms[i].pid, h->comms[i].comm, &h->ncomms);
		free(h->comms);
		h->comms = t;
		h->cap_comms = cap;
	}
	comm_put(h->comms, h->cap_comms, pid, comm, &h->ncomms);
	return 0;
}

static bool sym_put(struct tdw_sym *t, size_t cap, uint64_t addr, char *name, size_t *n)
{
	size_t i = mix(addr) & (cap - 1);

	while (t[i].addr && t[i].addr != addr)
		i = (i + 1) & (cap - 1);
	if (t[i].addr)
		return false;
	t[i].addr = addr;
	t[i].name = name;
	(*n)++;
	return true;
}

static int syms_grow(struct tdw_host *h)
{
	size_t cap = h->cap_syms ? h->cap_syms * 2 : 1024, n = 0;
	struct tdw_sym *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < h->cap_syms; i++)
		if (h->syms[i].addr)
			sym_put(t, cap, h->syms[i].addr, h->syms[i].name, &n);
	free(h->syms);
	h->syms = t;
	h->cap_syms = cap;
	h->nsyms = n;
	return 0;
}

/* @name (@len bytes) at @addr into the host's kallsyms (the first name an address gets). */
static int sym_add(struct tdw_host *h, uint64_t addr, const char *name, size_t len)
{
	char *copy;

	if ((h->nsyms + 1) * 2 > h->cap_syms) {
		if (h->nsyms >= TDW_MAX_SYMS)
			return 0;
		if (syms_grow(h) < 0)
			return -ENOMEM;
	}
	if (!(copy = strndup(name, len)))
		return -ENOMEM;
	if (!sym_put(h->syms, h->cap_syms, addr, copy, &h->nsyms))
		free(copy);
	return 0;
}

/*
 * The symbol a row's "X_sym" column names for its address column X
 * ("name+0xoff" or "name"): kallsyms gets "name" at X - off.
 */
static int sym_from(struct tdw_host *h, const struct qmsg_value *addr, const struct qmsg_value *s)
{
	const char *plus;
	uint64_t at = (uint64_t)qmsg_value_int(addr), off = 0;
	size_t len;

	if (s->kind != QV_STR || !s->s.len || (addr->kind != QV_UINT && addr->kind != QV_INT))
		return 0;
	plus = strstr(s->s.p, "+0x");
	len = plus ? (size_t)(plus - s->s.p) : s->s.len;
	if (plus)
		off = strtoull(plus + 3, NULL, 16);
	if (!len || len > 255 || off > at || at - off == 0 || strpbrk(s->s.p, " \t\n"))
		return 0;
	return sym_add(h, at - off, s->s.p, len);
}

/* @v's "X_sym" columns and their address columns X (ftrace's ip, parent_ip, func). */
static void sym_cols(struct tdw_fmt *f, const struct qmsg_reply *v)
{
	for (uint32_t i = QMSG_META_COLS; i < v->ncols && f->nsym < TDW_SYM_COLS; i++) {
		size_t n = strlen(v->cols[i]);

		if (n <= 4 || strcmp(v->cols[i] + n - 4, "_sym"))
			continue;
		for (uint32_t j = QMSG_META_COLS; j < v->ncols; j++)
			if (strlen(v->cols[j]) == n - 4 && !strncmp(v->cols[j], v->cols[i], n - 4)) {
				f->sym_addr[f->nsym] = j;
				f->sym_name[f->nsym++] = i;
				break;
			}
	}
}

/* The symbols the row's "X_sym" columns name: for kallsyms. */
static int row_syms(struct tdw_host *h, const struct tdw_fmt *f, const struct export_row *r)
{
	int ret = 0;

	for (uint32_t i = 0; i < f->nsym && ret == 0; i++)
		if (f->sym_addr[i] < r->view->ncols && f->sym_name[i] < r->view->ncols)
			ret = sym_from(h, &r->vals[f->sym_addr[i]], &r->vals[f->sym_name[i]]);
	return ret;
}

/* ---- code addresses the rows' text prints (%ps, plugins) ---- */

static void want_put(uint64_t *t, size_t cap, uint64_t addr, size_t *n)
{
	size_t i = mix(addr) & (cap - 1);

	while (t[i] && t[i] != addr)
		i = (i + 1) & (cap - 1);
	if (!t[i])
		(*n)++;
	t[i] = addr;
}

static void want_add(struct tdw_host *h, uint64_t addr)
{
	if (!addr)
		return;
	if ((h->nwant + 1) * 2 > h->cap_want) {
		size_t cap = h->cap_want ? h->cap_want * 2 : 1024, n = 0;
		uint64_t *t;

		if (h->nwant >= TDW_MAX_SYMS || !(t = calloc(cap, sizeof(*t))))
			return;	/* that address stays unnamed */
		for (size_t i = 0; i < h->cap_want; i++)
			if (h->want[i])
				want_put(t, cap, h->want[i], &n);
		free(h->want);
		h->want = t;
		h->cap_want = cap;
		h->nwant = n;
	}
	want_put(h->want, h->cap_want, addr, &h->nwant);
}

/*
 * A render_sym_fn: the renderer asks for the name of @addr while it
 * prints a row: the address is kept for kallsyms, and named later
 * (tdw_want_names()). It stays unnamed in the text: nobody reads it.
 */
static const char *tdw_sym(void *ctx, const char *host, uint64_t addr, uint64_t *start)
{
	struct tdw *t = ctx;

	if (t->h) {
		t->h->prints_fn_seen = true;
		want_add(t->h, addr);
	}
	return NULL;
}

/*
 * The names of the addresses the rows' text printed, asked of the
 * collector (export_opts.sym: hostcache.h) as the host's tables were at its last row,
 * into kallsyms at each symbol's start. The file's kallsyms holds only
 * those symbols, and libtraceevent ends a symbol at the next one's start
 * and never names an address past the last one's: so an end follows the
 * highest named address, TDW_SYM_END (without it, the frames in the
 * highest symbol of a host printed as bare addresses in trace-cmd report:
 * test_stacks). A printed address above that no symbol covers names as
 * TDW_SYM_END+0xOFF there, not as the highest symbol.
 */
static int tdw_want_names(struct tdw *t)
{
	struct tdw_host *h = t->h;
	uint64_t top = 0;
	int ret = 0;

	if (!t->o.sym || !t->o.sym_fetch || !h->nwant)
		return 0;
	for (size_t i = 0; i < h->cap_want; i++) {
		uint64_t start;

		if (h->want[i])
			t->o.sym(t->o.hc, h->name, h->want[i], &start);	/* pending */
	}
	if (t->o.sym_fetch(t->o.hc, h->last_wall) != 0)
		return 0;	/* said; the file keeps the addresses */
	for (size_t i = 0; i < h->cap_want && ret == 0; i++) {
		uint64_t start = h->want[i];
		const char *name = h->want[i] ? t->o.sym(t->o.hc, h->name, h->want[i], &start) :
				   NULL;

		if (name && *name && start) {
			ret = sym_add(h, start, name, strcspn(name, " \t\n"));
			top = h->want[i] > top ? h->want[i] : top;
		}
	}
	if (ret == 0 && top && top < UINT64_MAX)
		ret = sym_add(h, top + 1, TDW_SYM_END, strlen(TDW_SYM_END));
	return ret;
}

/* ---- formats ---- */

/* The system part of a format's "system:name" (what trace.dat groups formats by). */
static size_t sys_len(const struct tdw_fmt *f)
{
	const char *colon = strchr(f->event, ':');

	return colon ? (size_t)(colon - f->event) : strlen(f->event);
}


static void fmt_free(struct tdw_fmt *f)
{
	free(f->event);
	free(f->text);
	render_free(f->r);
}

/*
 * The host's format of @r's type: found by the reply's text pointer, then
 * by content; else made (a renderer prepared with it). NULL: no memory,
 * or too many formats (said).
 */
static struct tdw_fmt *fmt_of(struct tdw *t, const struct export_row *r)
{
	struct tdw_host *h = t->h;
	const struct qmsg_reply *v = r->view;
	const char *event = v->event ? v->event : "?", *text = v->format ? v->format : "";
	struct tdw_fmt *f;
	char why[256], name[TRACEDAT_MAX_NAME + 1];
	void *np;

	for (size_t i = h->nfmts; i-- > 0;)
		if (h->fmts[i].last == v->format && h->fmts[i].last_page == r->page &&
		    !strcmp(h->fmts[i].event, event))
			return &h->fmts[i];
	for (size_t i = h->nfmts; i-- > 0;)
		if (!strcmp(h->fmts[i].event, event) && !strcmp(h->fmts[i].text, text)) {
			h->fmts[i].last = v->format;
			h->fmts[i].last_page = r->page;
			return &h->fmts[i];
		}
	if (h->nfmts >= TRACEDAT_MAX_FORMATS) {
		export_seterr(&t->base, TC_ERR_TOO_LONG, "%s: over %d event formats", h->name,
			      TRACEDAT_MAX_FORMATS);
		return NULL;
	}
	if (!(np = realloc(h->fmts, (h->nfmts + 1) * sizeof(*h->fmts))))
		return NULL;
	h->fmts = np;
	f = &h->fmts[h->nfmts];
	*f = (struct tdw_fmt){ .event = strdup(event), .text = strdup(text), .last = v->format,
			       .last_page = r->page };
	/* trace-cmd's plugins: their function fields are asked of tdw_sym() too */
	if (!f->event || !f->text || render_new(RENDER_TRACECMD, tdw_sym, t, &f->r) < 0) {
		fmt_free(f);
		return NULL;
	}
	h->nfmts++;
	sym_cols(f, v);
	/* what libtraceevent parses, and what readers of trace.dat take (tracedat.h) */
	if (render_prepare(f->r, v, why, sizeof(why)) < 0 || (f->id = render_event_id(f->r)) < 0 ||
	    tracedat_format_name(f->text, name) < 0 || !sys_len(f) || sys_len(f) > TRACEDAT_MAX_NAME ||
	    strlen(f->text) > TRACEDAT_MAX_FORMAT)
		f->refused = true;
	/* a second format with the id of one written: its rows would read as the other's */
	for (size_t i = 0; !f->refused && i + 1 < h->nfmts; i++)
		f->refused = !h->fmts[i].refused && h->fmts[i].id == f->id;
	return f;
}

/* ---- pages ---- */

static uint32_t hdr_size(const struct tdw_host *h)
{
	return PAGE_HDR_SIZE(h->long_size);
}

/* @v as an @n-byte number (2, 4 or 8) at @p, its bytes reversed with @swap. */
static void tdw_num(uint8_t *p, uint64_t v, size_t n, bool swap)
{
	uint64_t w = swap ? __builtin_bswap64(v) >> (64 - 8 * n) : v;
	uint32_t w4 = (uint32_t)w;
	uint16_t w2 = (uint16_t)w;

	memcpy(p, n == 8 ? (void *)&w : n == 4 ? (void *)&w4 : (void *)&w2, n);
}

static void put_long(const struct tdw_host *h, uint8_t *p, uint64_t v)
{
	tdw_num(p, v, h->long_size, h->swap);
}

/*
 * A record header word at @p: type_len and time_delta as the host's
 * kernel packs them (its bitfield: type_len in the low bits of a
 * little-endian word, in the high bits of a big-endian one).
 */
static void rec_word(const struct tdw_host *h, uint8_t *p, unsigned type_len, uint32_t delta)
{
	uint32_t w = h->big_endian ?
		     (uint32_t)type_len << PAGE_DELTA_BITS | (delta & PAGE_DELTA_MASK) :
		     (delta & PAGE_DELTA_MASK) << PAGE_TYPE_LEN_BITS | type_len;

	tdw_num(p, w, 4, h->swap);
}

/* The CPU's page, finished (header, stored loss count), to the spool. */
static int page_flush(struct tdw *t, struct tdw_set *set, uint32_t cpu)
{
	struct tdw_host *h = t->h;
	struct tdw_cpu *c = &set->cpus[cpu];
	uint32_t commit = c->len, room = h->page_size - hdr_size(h);

	if (!c->page)
		return 0;
	if (c->missed) {
		commit |= PAGE_COMMIT_MISSED;
		if (c->missed_count && c->len + h->long_size <= room) {
			put_long(h, c->page + hdr_size(h) + c->len, c->missed_count);
			commit |= PAGE_COMMIT_STORED;
		}
		c->missed = false;
		c->missed_count = 0;
	}
	tdw_num(c->page, c->page_ts, 8, h->swap);
	put_long(h, c->page + PAGE_TS_SIZE, commit);
	if (h->npages == UINT32_MAX - 1)
		return export_seterr(&t->base, TC_ERR_TOO_LONG, "%s: over %u pages", h->name,
				     UINT32_MAX - 1);
	if (h->npages == h->cap_pages) {
		uint32_t cap = h->cap_pages ? h->cap_pages * 2 : 4096;
		void *np = realloc(h->next, (size_t)cap * sizeof(*h->next));

		if (!np)
			return -ENOMEM;
		h->next = np;
		h->cap_pages = cap;
	}
	if (fwrite(c->page, 1, h->page_size, h->spool) != h->page_size)
		return export_seterr(&t->base, -errno ? -errno : -EIO,
				     "the temporary file: %s", strerror(errno));
	h->next[h->npages] = 0;
	if (c->tail)
		h->next[c->tail - 1] = h->npages + 1;
	else
		c->head = h->npages + 1;
	c->tail = ++h->npages;
	c->npages++;
	free(c->page);
	c->page = NULL;
	c->len = 0;
	return 0;
}

/*
 * The instance and CPU a row's @cpu goes to (*@cpu rewritten): a kernel
 * CPU as it is; a program's (@program) the programs instance's next CPU
 * at its first sight. NULL: no memory, or over TRACEDAT_MAX_CPUS (said).
 */
static struct tdw_set *set_of(struct tdw *t, bool program, uint32_t *cpu)
{
	struct tdw_host *h = t->h;
	struct tdw_set *p = &h->sets[TDW_PROGRAMS];
	uint32_t s = *cpu;

	if (!program)
		return &h->sets[TDW_KERNEL];
	if (s >= 65536)
		goto over;
	if (!h->stream_cpu && !(h->stream_cpu = calloc(65536, sizeof(*h->stream_cpu))))
		return NULL;
	if (!h->stream_cpu[s]) {
		if (p->max_cpu >= TRACEDAT_MAX_CPUS)
			goto over;
		h->stream_cpu[s] = (uint16_t)(p->max_cpu + 1);
	}
	*cpu = h->stream_cpu[s] - 1u;
	return p;
over:
	export_seterr(&t->base, TC_ERR_TOO_LONG, "%s: cpu %u: trace.dat takes CPUs below %d "
		      "(and as many program streams)", h->name, *cpu, TRACEDAT_MAX_CPUS);
	return NULL;
}

/* The state of @cpu of @set, its slots grown to hold it. */
static struct tdw_cpu *cpu_of(struct tdw *t, struct tdw_set *set, uint32_t cpu)
{
	if (cpu >= TRACEDAT_MAX_CPUS) {
		export_seterr(&t->base, TC_ERR_TOO_LONG, "%s: cpu %u: trace.dat takes CPUs "
			      "below %d", t->h->name, cpu, TRACEDAT_MAX_CPUS);
		return NULL;
	}
	if (cpu >= set->ncpus) {
		uint32_t n = cpu + 1 > set->ncpus * 2 ? cpu + 1 : set->ncpus * 2;
		void *np = realloc(set->cpus, (size_t)n * sizeof(*set->cpus));

		if (!np)
			return NULL;
		set->cpus = np;
		memset(set->cpus + set->ncpus, 0, (size_t)(n - set->ncpus) * sizeof(*set->cpus));
		set->ncpus = n;
	}
	if (cpu + 1 > set->max_cpu)
		set->max_cpu = cpu + 1;
	set->cpus[cpu].used = true;
	return &set->cpus[cpu];
}

/*
 * Append a record of @size payload bytes at @ts to @cpu's page (a new
 * page when it does not fit or time goes back; a time extend first when
 * the delta needs more than 27 bits).
 */
static int page_add(struct tdw *t, bool program, uint32_t cpu, uint64_t ts, const void *rec,
		    uint32_t size)
{
	struct tdw_host *h = t->h;
	struct tdw_set *set = set_of(t, program, &cpu);
	struct tdw_cpu *c = set ? cpu_of(t, set, cpu) : NULL;
	uint32_t room = h->page_size - hdr_size(h), head = size > 4 * PAGE_TYPE_DATA_MAX ? 8 : 4;
	uint64_t delta;
	uint8_t *p;
	int ret;

	if (!c)
		return t->base.err[0] ? TC_ERR_TOO_LONG : -ENOMEM;
	if (c->page && (ts < c->last_ts ||
			c->len + (ts - c->last_ts > PAGE_DELTA_MASK ? 8 : 0) + head + size > room) &&
	    (ret = page_flush(t, set, cpu)) < 0)
		return ret;
	if (!c->page) {
		if (!(c->page = calloc(1, h->page_size)))
			return -ENOMEM;
		c->page_ts = c->last_ts = ts;
	}
	p = c->page + hdr_size(h) + c->len;
	delta = ts - c->last_ts;
	if (delta > PAGE_DELTA_MASK) {
		rec_word(h, p, PAGE_TYPE_TIME_EXTEND, (uint32_t)(delta & PAGE_DELTA_MASK));
		tdw_num(p + 4, delta >> PAGE_DELTA_BITS, 4, h->swap);
		p += 8;
		c->len += 8;
		delta = 0;
	}
	if (head == 4) {
		rec_word(h, p, size / 4, (uint32_t)delta);
	} else {
		rec_word(h, p, 0, (uint32_t)delta);
		tdw_num(p + 4, size + 4, 4, h->swap);
	}
	memcpy(p + head, rec, size);
	c->len += head + size;
	c->last_ts = ts;
	return 0;
}

/* ---- the file ---- */

static int out_write(struct tdw *t, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, t->out) != n)
		return export_seterr(&t->base, -EIO, "%s: %s", t->file, strerror(errno));
	return 0;
}

static int out_num(struct tdw *t, uint64_t v, size_t n)
{
	uint8_t b[8];

	tdw_num(b, v, n, t->h->swap);
	return out_write(t, b, n);
}

static int out_str(struct tdw *t, const char *s)
{
	return out_write(t, s, strlen(s) + 1);
}

static uint64_t out_pos(struct tdw *t)
{
	off_t o = ftello(t->out);

	return o < 0 ? 0 : (uint64_t)o;
}

/* Write @v (@n bytes) at @at, then come back to the end. */
static int out_patch(struct tdw *t, uint64_t at, uint64_t v, size_t n)
{
	int ret;

	if (fseeko(t->out, (off_t)at, SEEK_SET) != 0)
		return export_seterr(&t->base, -errno, "%s: %s", t->file, strerror(errno));
	ret = out_num(t, v, n);
	if (ret == 0 && fseeko(t->out, 0, SEEK_END) != 0)
		return export_seterr(&t->base, -errno, "%s: %s", t->file, strerror(errno));
	return ret;
}

static int out_pad(struct tdw *t, uint32_t align)
{
	static const uint8_t zero[256];
	uint64_t pos = out_pos(t), to = (pos + align - 1) / align * align;
	int ret = 0;

	while (ret == 0 && pos < to) {
		size_t n = to - pos < sizeof(zero) ? (size_t)(to - pos) : sizeof(zero);

		ret = out_write(t, zero, n);
		pos += n;
	}
	return ret;
}

/* A growing buffer for a section's or option's bytes before they go out. */
struct tdw_buf {
	char *p;
	size_t len;
	FILE *f;
	bool swap;		/* its numbers in the other byte order (the host's) */
};

/* @b empty, its numbers in @t's host's byte order (@t NULL: text only). */
static int buf_open(struct tdw_buf *b, const struct tdw *t)
{
	*b = (struct tdw_buf){ .swap = t && t->h->swap };
	b->f = open_memstream(&b->p, &b->len);
	return b->f ? 0 : -ENOMEM;
}

static int buf_close(struct tdw_buf *b)
{
	bool bad = ferror(b->f);

	if (fclose(b->f) != 0 || bad) {
		free(b->p);
		b->p = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void buf_num(struct tdw_buf *b, uint64_t v, size_t n)
{
	uint8_t p[8];

	tdw_num(p, v, n, b->swap);
	fwrite(p, 1, n, b->f);
}

static void buf_blob(struct tdw_buf *b, const char *p, size_t len, size_t nsize)
{
	buf_num(b, len, nsize);
	fwrite(p, 1, len, b->f);
}

/* The header info: header_page and header_event, each with its 8-byte size. */
static void meta_header(struct tdw *t, struct tdw_buf *b)
{
	fwrite("header_page", 1, 12, b->f);
	buf_blob(b, t->h->header_page, strlen(t->h->header_page), 8);
	fwrite("header_event", 1, 13, b->f);
	buf_blob(b, t->h->header_event, strlen(t->h->header_event), 8);
}

static bool fmt_written(const struct tdw_fmt *f)
{
	return !f->refused;
}

static bool fmt_is_ftrace(const struct tdw_fmt *f)
{
	return !strncmp(f->event, "ftrace:", 7);
}

/* The ftrace formats: a 4-byte count, each with its 8-byte size. */
static void meta_ftrace(struct tdw *t, struct tdw_buf *b)
{
	uint32_t n = 0;

	for (size_t i = 0; i < t->h->nfmts; i++)
		n += fmt_written(&t->h->fmts[i]) && fmt_is_ftrace(&t->h->fmts[i]);
	buf_num(b, n, 4);
	for (size_t i = 0; i < t->h->nfmts; i++)
		if (fmt_written(&t->h->fmts[i]) && fmt_is_ftrace(&t->h->fmts[i]))
			buf_blob(b, t->h->fmts[i].text, strlen(t->h->fmts[i].text), 8);
}

static bool same_sys(const struct tdw_fmt *a, const struct tdw_fmt *b)
{
	return sys_len(a) == sys_len(b) && !strncmp(a->event, b->event, sys_len(a));
}

/*
 * The event formats by system: a 4-byte count of systems, each its name,
 * a 4-byte count of formats and each with its 8-byte size.
 */
static void meta_events(struct tdw *t, struct tdw_buf *b)
{
	const struct tdw_host *h = t->h;
	uint32_t nsys = 0;

	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			buf_num(b, nsys, 4);
		for (size_t i = 0; i < h->nfmts; i++) {
			const struct tdw_fmt *f = &h->fmts[i];
			uint32_t n = 0;
			bool first = true;

			if (!fmt_written(f) || fmt_is_ftrace(f))
				continue;
			for (size_t j = 0; j < i && first; j++)
				first = !(fmt_written(&h->fmts[j]) && !fmt_is_ftrace(&h->fmts[j]) &&
					  same_sys(&h->fmts[j], f));
			if (!first)
				continue;
			if (!pass) {
				nsys++;
				continue;
			}
			for (size_t j = i; j < h->nfmts; j++)
				n += fmt_written(&h->fmts[j]) && same_sys(&h->fmts[j], f);
			fprintf(b->f, "%.*s%c", (int)sys_len(f), f->event, 0);
			buf_num(b, n, 4);
			for (size_t j = i; j < h->nfmts; j++)
				if (fmt_written(&h->fmts[j]) && same_sys(&h->fmts[j], f))
					buf_blob(b, h->fmts[j].text, strlen(h->fmts[j].text), 8);
		}
	}
}

static int sym_cmp(const void *a, const void *b)
{
	const struct tdw_sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* kallsyms: the symbols the rows named, "ADDR T NAME" in address order. */
static void meta_kallsyms(struct tdw *t, struct tdw_buf *b)
{
	struct tdw_host *h = t->h;
	struct tdw_buf text;
	size_t n = 0;

	for (size_t i = 0; i < h->cap_syms; i++)
		if (h->syms[i].addr)
			h->syms[n++] = h->syms[i];
	h->cap_syms = 0;	/* the table is a sorted array now */
	if (n)
		qsort(h->syms, n, sizeof(*h->syms), sym_cmp);
	h->nsyms = n;
	if (buf_open(&text, NULL) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		fprintf(text.f, "%016" PRIx64 " T %s\n", h->syms[i].addr, h->syms[i].name);
	if (buf_close(&text) == 0)
		buf_blob(b, text.p ? text.p : "", text.len, 4);
	free(text.p);
}

static void meta_printk(struct tdw *t, struct tdw_buf *b)
{
	buf_blob(b, t->h->printk, strlen(t->h->printk), 4);
}

/* The saved cmdlines: "PID COMM" lines, as the kernel's saved_cmdlines. */
static void meta_cmdlines(struct tdw *t, struct tdw_buf *b)
{
	struct tdw_buf text;

	if (buf_open(&text, NULL) < 0)
		return;
	for (size_t i = 0; i < t->h->cap_comms; i++)
		if (t->h->comms[i].pid)
			fprintf(text.f, "%d %s\n", t->h->comms[i].pid, t->h->comms[i].comm);
	if (buf_close(&text) == 0)
		buf_blob(b, text.p ? text.p : "", text.len, 8);
	free(text.p);
}

typedef void (*meta_fn)(struct tdw *t, struct tdw_buf *b);

/* The metadata in the order v6 writes it; v7's section ids follow it (16..21). */
static const meta_fn metas[] = {
	meta_header, meta_ftrace, meta_events, meta_kallsyms, meta_printk, meta_cmdlines,
};

static int meta_build(struct tdw *t, meta_fn fn, struct tdw_buf *b)
{
	int ret = buf_open(b, t);

	if (ret < 0)
		return ret;
	fn(t, b);
	return buf_close(b);
}

/* Compress @n bytes at @p with zstd; *@z malloc'd. */
static int zcompress(struct tdw *t, const void *p, size_t n, void **z, size_t *zlen)
{
	size_t cap = ZSTD_compressBound(n), got;
	void *out = malloc(cap ? cap : 1);

	if (!out)
		return -ENOMEM;
	got = ZSTD_compress2(t->zc, out, cap, p, n);
	if (ZSTD_isError(got)) {
		free(out);
		return export_seterr(&t->base, -EIO, "zstd: %s", ZSTD_getErrorName(got));
	}
	*z = out;
	*zlen = got;
	return 0;
}

/* v7: a section header (id, flags, no description, size to patch); *@size_at. */
static int section_begin(struct tdw *t, unsigned id, unsigned flags, uint64_t *size_at)
{
	int ret = out_num(t, id, 2);

	if (ret == 0)
		ret = out_num(t, flags, 2);
	if (ret == 0)
		ret = out_num(t, UINT32_MAX, 4);	/* no string: trace-cmd's -1 */
	*size_at = out_pos(t);
	return ret ? ret : out_num(t, 0, 8);
}

static int section_end(struct tdw *t, uint64_t size_at)
{
	return out_patch(t, size_at, out_pos(t) - size_at - 8, 8);
}

/* v7: one metadata section, compressed; its offset into *@off. */
static int section_meta(struct tdw *t, unsigned id, const struct tdw_buf *b, uint64_t *off)
{
	void *z = NULL;
	size_t zlen = 0;
	uint64_t size_at;
	int ret;

	*off = out_pos(t);
	if ((ret = zcompress(t, b->p ? b->p : "", b->len, &z, &zlen)) < 0)
		return ret;
	if ((ret = section_begin(t, id, SEC_FL_COMPRESS, &size_at)) == 0 &&
	    (ret = out_num(t, zlen, 4)) == 0 && (ret = out_num(t, b->len, 4)) == 0 &&
	    (ret = out_write(t, z, zlen)) == 0)
		ret = section_end(t, size_at);
	free(z);
	return ret;
}

/* Read spool page @idx (0-based) into @p. */
static int spool_read(struct tdw *t, uint32_t idx, uint8_t *p)
{
	struct tdw_host *h = t->h;

	if (fseeko(h->spool, (off_t)idx * h->page_size, SEEK_SET) != 0 ||
	    fread(p, 1, h->page_size, h->spool) != h->page_size)
		return export_seterr(&t->base, -EIO, "the temporary file: %s",
				     ferror(h->spool) ? strerror(errno) : "short");
	return 0;
}

/* v6: the pages of @c as they are. */
static int cpu_plain(struct tdw *t, const struct tdw_cpu *c, uint8_t *buf)
{
	int ret = 0;

	for (uint32_t i = c->head; i && ret == 0; i = t->h->next[i - 1])
		if ((ret = spool_read(t, i - 1, buf)) == 0)
			ret = out_write(t, buf, t->h->page_size);
	return ret;
}

/* v7: the pages of @c in zstd chunks: a count, then (zsize, usize, data) each. */
static int cpu_zstd(struct tdw *t, const struct tdw_cpu *c, uint8_t *buf)
{
	struct tdw_host *h = t->h;
	uint64_t count_at = out_pos(t);
	uint32_t chunks = 0, i = c->head;
	int ret = out_num(t, 0, 4);

	while (ret == 0 && i) {
		size_t n = 0, zlen = 0;
		void *z = NULL;

		for (; i && n < TRACEDAT_PAGES_IN_CHUNK && ret == 0; i = h->next[i - 1])
			ret = spool_read(t, i - 1, buf + n++ * h->page_size);
		if (ret == 0)
			ret = zcompress(t, buf, n * h->page_size, &z, &zlen);
		if (ret == 0 && (ret = out_num(t, zlen, 4)) == 0 &&
		    (ret = out_num(t, n * h->page_size, 4)) == 0)
			ret = out_write(t, z, zlen);
		free(z);
		chunks++;
	}
	return ret ? ret : out_patch(t, count_at, chunks, 4);
}

/*
 * Every CPU's data, page-aligned, in CPU order; its offset and size into
 * @off[] and @size[] (v7: the size leaves the chunk count out).
 */
static int cpus_data(struct tdw *t, const struct tdw_set *set, uint64_t *off, uint64_t *size)
{
	struct tdw_host *h = t->h;
	uint8_t *buf = malloc((size_t)h->page_size * TRACEDAT_PAGES_IN_CHUNK);
	bool z = t->o.tracedat_version >= 7;
	int ret = buf ? 0 : -ENOMEM;

	for (uint32_t c = 0; c < set->max_cpu && ret == 0; c++) {
		off[c] = size[c] = 0;
		if (c >= set->ncpus || !set->cpus[c].head)
			continue;
		if ((ret = out_pad(t, h->page_size)) < 0)
			break;
		off[c] = out_pos(t);
		ret = z ? cpu_zstd(t, &set->cpus[c], buf) : cpu_plain(t, &set->cpus[c], buf);
		size[c] = out_pos(t) - off[c] - (z ? 4 : 0);
	}
	free(buf);
	return ret;
}

/* The trace_clock option's text: the clock in brackets, as the file shows the one in use. */
static void clock_text(const struct tdw_host *h, char *buf, size_t len)
{
	snprintf(buf, len, "[%s]", h->clock);
}

/* The file's CPU count: every instance's CPUs are below it. */
static uint32_t file_cpus(const struct tdw_host *h)
{
	uint32_t n = 1;

	for (int i = 0; i < TDW_SETS; i++)
		n = h->sets[i].max_cpu > n ? h->sets[i].max_cpu : n;
	return n;
}

/* Whether instance @i goes into the file: the kernel's always, the programs' with pages. */
static bool set_written(const struct tdw_host *h, int i)
{
	const struct tdw_set *set = &h->sets[i];

	for (uint32_t c = 0; i != TDW_KERNEL && c < set->ncpus; c++)
		if (set->cpus[c].head)
			return true;
	return i == TDW_KERNEL;
}

/*
 * --time wall: the host's offset from its trace clock to wall-clock ns,
 * as trace-cmd record --date writes it and readers add it (trace-cmd's
 * lib/trace-cmd/trace-input.c, handle_options()): DATE holds microseconds
 * ("0x..." hex, which strtoll(.., 0) reads, the only one older readers
 * know), OFFSET the nanoseconds left over (readers since OFFSET add the
 * two; before it, they took DATE alone, a microsecond short at most).
 */
static void options_wall(struct tdw *t, struct tdw_buf *b)
{
	int64_t off = t->h->offset, us = off / 1000 - (off % 1000 < 0), ns = off - us * 1000;
	char date[40], rest[24];

	snprintf(date, sizeof(date), "%s0x%" PRIx64, us < 0 ? "-" : "",
		 us < 0 ? -(uint64_t)us : (uint64_t)us);
	snprintf(rest, sizeof(rest), "%" PRId64, ns);
	buf_num(b, OPT_DATE, 2);
	buf_blob(b, date, strlen(date) + 1, 4);
	buf_num(b, OPT_OFFSET, 2);
	buf_blob(b, rest, strlen(rest) + 1, 4);
}

/* The options both versions write (the buffers' and DONE aside). */
static void options_common(struct tdw *t, struct tdw_buf *b)
{
	char clk[TRACEDAT_MAX_NAME + 3];

	clock_text(t->h, clk, sizeof(clk));
	buf_num(b, OPT_CPUCOUNT, 2);
	buf_num(b, 4, 4);
	buf_num(b, file_cpus(t->h), 4);
	buf_num(b, OPT_TRACECLOCK, 2);
	buf_blob(b, clk, strlen(clk) + 1, 4);
	if (*t->h->kernel) {
		buf_num(b, OPT_UNAME, 2);
		buf_blob(b, t->h->kernel, strlen(t->h->kernel) + 1, 4);
	}
	if (t->o.time_wall)
		options_wall(t, b);
}

/*
 * v6: an instance's "flyrecord", its per-CPU table of the file's CPU
 * count (patched once the data is written), "[clock]", then its data.
 */
static int flyrecord_v6(struct tdw *t, int i, uint64_t *off, uint64_t *size)
{
	char clk[TRACEDAT_MAX_NAME + 3];
	uint32_t n = file_cpus(t->h);
	uint64_t table;
	int ret = out_write(t, "flyrecord", 10);

	table = out_pos(t);
	for (uint32_t c = 0; c < n && ret == 0; c++)
		if ((ret = out_num(t, 0, 8)) == 0)
			ret = out_num(t, 0, 8);
	clock_text(t->h, clk, sizeof(clk));
	if (ret == 0 && (ret = out_num(t, strlen(clk), 8)) == 0)
		ret = out_write(t, clk, strlen(clk));
	if (ret == 0)
		ret = cpus_data(t, &t->h->sets[i], off, size);
	for (uint32_t c = 0; c < n && ret == 0; c++)
		if ((ret = out_patch(t, table + 16 * c, off[c], 8)) == 0)
			ret = out_patch(t, table + 16 * c + 8, size[c], 8);
	return ret;
}

/*
 * v6: the header, the metadata in order, the CPU count, the options (a
 * BUFFER option per other instance, its offset patched when its
 * flyrecord is written), then each instance's flyrecord.
 */
static int write_v6(struct tdw *t, uint64_t **off, uint64_t **size)
{
	uint64_t opts, buf_at[TDW_SETS] = { 0 };
	struct tdw_buf b = { 0 };
	int ret = 0;

	for (size_t i = 0; i < sizeof(metas) / sizeof(metas[0]) && ret == 0; i++) {
		if ((ret = meta_build(t, metas[i], &b)) == 0)
			ret = out_write(t, b.p, b.len);
		free(b.p);
	}
	if (ret == 0)
		ret = out_num(t, file_cpus(t->h), 4);
	if (ret == 0)
		ret = out_write(t, "options  ", 10);
	opts = out_pos(t);
	if (ret == 0 && (ret = buf_open(&b, t)) == 0) {
		options_common(t, &b);
		for (int i = TDW_KERNEL + 1; i < TDW_SETS; i++) {
			if (!set_written(t->h, i))
				continue;
			fflush(b.f);
			buf_at[i] = opts + b.len + 6;
			buf_num(&b, OPT_BUFFER, 2);
			buf_num(&b, 8 + strlen(tdw_set_names[i]) + 1, 4);
			buf_num(&b, 0, 8);
			fprintf(b.f, "%s%c", tdw_set_names[i], 0);
		}
		buf_num(&b, OPT_DONE, 2);
		if ((ret = buf_close(&b)) == 0)
			ret = out_write(t, b.p, b.len);
		free(b.p);
	}
	for (int i = 0; i < TDW_SETS && ret == 0; i++) {
		if (!set_written(t->h, i))
			continue;
		if (buf_at[i])
			ret = out_patch(t, buf_at[i], out_pos(t), 8);
		if (ret == 0)
			ret = flyrecord_v6(t, i, off[i], size[i]);
	}
	return ret;
}

/* v7's BUFFER option: instance @i's flyrecord section and its CPUs. */
static void option_buffer(struct tdw *t, struct tdw_buf *b, int i, uint64_t section,
			  const uint64_t *off, const uint64_t *size)
{
	const struct tdw_set *set = &t->h->sets[i];
	struct tdw_buf o;
	uint32_t n = 0;

	if (buf_open(&o, t) < 0)
		return;
	for (uint32_t c = 0; c < set->max_cpu; c++)
		n += off[c] != 0;
	buf_num(&o, section, 8);
	fprintf(o.f, "%s%c", tdw_set_names[i], 0);	/* "": the top instance */
	fprintf(o.f, "%s%c", t->h->clock, 0);
	buf_num(&o, t->h->page_size, 4);
	buf_num(&o, n, 4);
	for (uint32_t c = 0; c < set->max_cpu; c++) {
		if (!off[c])
			continue;
		buf_num(&o, c, 4);
		buf_num(&o, off[c], 8);
		buf_num(&o, size[c], 8);
	}
	if (buf_close(&o) == 0) {
		buf_num(b, OPT_BUFFER, 2);
		buf_blob(b, o.p, o.len, 4);
	}
	free(o.p);
}

/*
 * v7: the header (its options offset patched at the end), the metadata
 * sections, a BUFFER section per instance with its CPUs' data, and one
 * options section pointing at them.
 */
static int write_v7(struct tdw *t, uint64_t opt_at, uint64_t **off, uint64_t **size)
{
	uint64_t meta_off[sizeof(metas) / sizeof(metas[0])], buffer[TDW_SETS], size_at, opts;
	struct tdw_buf b = { 0 };
	int ret = 0;

	for (size_t i = 0; i < sizeof(metas) / sizeof(metas[0]) && ret == 0; i++) {
		if ((ret = meta_build(t, metas[i], &b)) == 0)
			ret = section_meta(t, OPT_HEADER_INFO + (unsigned)i, &b, &meta_off[i]);
		free(b.p);
	}
	for (int i = 0; i < TDW_SETS && ret == 0; i++) {
		if (!set_written(t->h, i))
			continue;
		buffer[i] = out_pos(t);
		if ((ret = section_begin(t, OPT_BUFFER, SEC_FL_COMPRESS, &size_at)) == 0 &&
		    (ret = cpus_data(t, &t->h->sets[i], off[i], size[i])) == 0)
			ret = section_end(t, size_at);
	}
	opts = out_pos(t);
	if (ret == 0 && (ret = buf_open(&b, t)) == 0) {
		for (size_t i = 0; i < sizeof(metas) / sizeof(metas[0]); i++) {
			buf_num(&b, OPT_HEADER_INFO + i, 2);
			buf_num(&b, 8, 4);
			buf_num(&b, meta_off[i], 8);
		}
		options_common(t, &b);
		for (int i = 0; i < TDW_SETS; i++)
			if (set_written(t->h, i))
				option_buffer(t, &b, i, buffer[i], off[i], size[i]);
		buf_num(&b, OPT_DONE, 2);
		buf_num(&b, 8, 4);
		buf_num(&b, 0, 8);
		ret = buf_close(&b);
	}
	if (ret == 0 && (ret = section_begin(t, OPT_DONE, 0, &size_at)) == 0 &&
	    (ret = out_write(t, b.p, b.len)) == 0)
		ret = section_end(t, size_at);
	free(b.p);
	return ret ? ret : out_patch(t, opt_at, opts, 8);
}

/* The file header both versions start with; v7's options offset at *@opt_at. */
static int write_head(struct tdw *t, uint64_t *opt_at)
{
	char ver[2] = { (char)('0' + t->o.tracedat_version), 0 };
	uint8_t b[2] = { t->h->big_endian, (uint8_t)t->h->long_size };
	int ret = out_write(t, TRACEDAT_MAGIC, TRACEDAT_MAGIC_LEN);

	if (ret == 0 && (ret = out_write(t, ver, 2)) == 0 && (ret = out_write(t, b, 2)) == 0)
		ret = out_num(t, t->h->page_size, 4);
	if (ret || t->o.tracedat_version < 7)
		return ret;
	if ((ret = out_str(t, "zstd")) == 0 && (ret = out_str(t, ZSTD_versionString())) == 0) {
		*opt_at = out_pos(t);
		ret = out_num(t, 0, 8);
	}
	return ret;
}

/* ---- the host's file ---- */

/* A host name as a file name: '/' and a leading '.' made '_'. */
static char *file_of(const struct tdw *t, const char *host)
{
	char *f = NULL, *p;

	if (t->o.nhosts <= 1)
		return strdup(t->path);
	if (asprintf(&f, "%s/%s.dat", t->path, *host ? host : "_") < 0)
		return NULL;
	for (p = f + strlen(t->path) + 1; *p; p++)
		if (*p == '/' || (p == f + strlen(t->path) + 1 && *p == '.'))
			*p = '_';
	return f;
}

/* The directory the host's file goes into (for the temporary spool). */
static char *dir_of(const char *file)
{
	const char *slash = strrchr(file, '/');

	return slash ? strndup(file, (size_t)(slash - file) + (slash == file)) : strdup(".");
}

/* An unnamed temporary file in @dir (O_TMPFILE; else made and unlinked). */
static FILE *spool_open(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	char *name = NULL;
	FILE *f;

	if (fd < 0 && asprintf(&name, "%s/.traceq-export-XXXXXX", dir) >= 0) {
		fd = mkstemp(name);
		if (fd >= 0)
			unlink(name);
		free(name);
	}
	if (fd < 0)
		return NULL;
	if (!(f = fdopen(fd, "w+")))
		close(fd);
	return f;
}

static void host_free(struct tdw_host *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->nfmts; i++)
		fmt_free(&h->fmts[i]);
	free(h->fmts);
	for (int i = 0; i < TDW_SETS; i++) {
		for (uint32_t c = 0; c < h->sets[i].ncpus; c++)
			free(h->sets[i].cpus[c].page);
		free(h->sets[i].cpus);
	}
	free(h->stream_cpu);
	free(h->rec);
	if (h->spool)
		fclose(h->spool);
	free(h->next);
	free(h->comms);
	free(h->want);
	for (size_t i = 0; i < (h->cap_syms ? h->cap_syms : h->nsyms); i++)
		free(h->syms[i].name);
	free(h->syms);
	free(h->name);
	free(h->kernel);
	free(h->clock);
	free(h->header_page);
	free(h->header_event);
	free(h->printk);
	free(h);
}

/* The long size the commit field of @header_page says (0: it does not). */
static uint32_t long_of_header(const char *header_page)
{
	const char *f = strstr(header_page, "commit;");
	const char *s = f ? strstr(f, "size:") : NULL;
	unsigned long v = s ? strtoul(s + 5, NULL, 10) : 0;

	return v == 4 || v == 8 ? (uint32_t)v : 0;
}

/* The kernel's events/header_page for @page_size and @long_size, when the host's is unknown. */
static char *header_page_text(uint32_t page_size, uint32_t long_size)
{
	char *s = NULL;

	if (asprintf(&s, "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
		     "\tfield: local_t commit;\toffset:8;\tsize:%u;\tsigned:1;\n"
		     "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
		     "\tfield: char data;\toffset:%u;\tsize:%u;\tsigned:0;\n",
		     long_size, 8 + long_size, page_size - 8 - long_size) < 0)
		return NULL;
	return s;
}

/* The kernel's events/header_event (the same on every kernel since 2.6.31). */
static const char header_event_text[] =
	"# compressed entry header\n"
	"\ttype_len    :    5 bits\n"
	"\ttime_delta  :   27 bits\n"
	"\tarray       :   32 bits\n"
	"\n"
	"\tpadding     : type == 29\n"
	"\ttime_extend : type == 30\n"
	"\ttime_stamp : type == 31\n"
	"\tdata max type_len  == 28\n";

static int host_new(struct tdw *t, const struct export_host *e, struct tdw_host **out)
{
	struct tdw_host *h = calloc(1, sizeof(*h));
	uint32_t ps = e->page_size;

	if (!h)
		return -ENOMEM;
	h->page_size = ps >= TRACEDAT_MIN_PAGE && ps <= TRACEDAT_MAX_PAGE && !(ps & (ps - 1)) ?
		       ps : TDW_DEFAULT_PAGE;
	h->long_size = long_of_header(e->header_page);
	if (!h->long_size)
		h->long_size = e->long_size == 4 ? 4 : 8;
	h->big_endian = e->big_endian;
	h->swap = h->big_endian != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
	if (h->swap && !(h->rec = malloc(h->page_size))) {
		free(h);
		return -ENOMEM;
	}
	h->sets[TDW_KERNEL].max_cpu = e->ncpus < TRACEDAT_MAX_CPUS ? e->ncpus : 0;
	h->offset = e->clock_offset_ns;
	h->name = strdup(e->name);
	h->kernel = strdup(e->kernel);
	h->clock = strndup(*e->clock ? e->clock : "local", TRACEDAT_MAX_NAME);
	h->header_page = *e->header_page ? strdup(e->header_page) :
			 header_page_text(h->page_size, h->long_size);
	h->header_event = strdup(*e->header_event ? e->header_event : header_event_text);
	h->printk = strndup(e->printk, e->printk_len);
	if (!h->name || !h->kernel || !h->clock || !h->header_page || !h->header_event ||
	    !h->printk) {
		host_free(h);
		return -ENOMEM;
	}
	*out = h;
	return 0;
}

static int tdw_host_begin(struct export_writer *w, const struct export_host *e)
{
	struct tdw *t = tdw_of(w);
	char *dir = NULL;
	int ret = host_new(t, e, &t->h);

	if (ret < 0)
		return ret;
	if (!(t->file = file_of(t, e->name)) || !(dir = dir_of(t->file)))
		return -ENOMEM;
	t->h->spool = spool_open(dir);
	if (!t->h->spool)
		ret = export_seterr(w, -errno, "%s: a temporary file: %s", dir, strerror(errno));
	free(dir);
	return ret;
}

/*
 * The code addresses a row's text prints (%ps, the plugins' function
 * fields: hrtimer_start's), for kallsyms: a format's first row is
 * printed to see whether it asks for any; then every row of the formats
 * that do (a few types: timers, workqueues), none of the others.
 */
static void fn_rows(struct tdw *t, struct tdw_fmt *f, const struct export_row *r)
{
	char line[4096];

	if (!t->o.sym || (f->fn_checked && !f->prints_fn))
		return;	/* nobody to name them, or nothing to name */
	t->h->prints_fn_seen = false;
	render_row(f->r, r->view, r->vals, r->trace_ts, line, sizeof(line));
	if (!f->fn_checked) {
		f->fn_checked = true;
		f->prints_fn = t->h->prints_fn_seen;
	}
}

static int tdw_row(struct export_writer *w, const struct export_row *r)
{
	struct tdw *t = tdw_of(w);
	struct tdw_fmt *f = fmt_of(t, r);
	const void *rec = NULL;
	size_t size;
	int ret;

	if (!f)
		return t->base.err[0] ? TC_ERR_TOO_LONG : -ENOMEM;
	if (f->refused) {
		t->st.skipped++;
		return 0;
	}
	size = render_rebuild(f->r, r->view, r->vals, &rec);
	if (!size || size + 16 > t->h->page_size - hdr_size(t->h) || r->trace_ts < 0) {
		t->st.skipped++;
		return 0;
	}
	if (t->h->swap) {	/* the numbers in the host's order */
		memcpy(t->h->rec, rec, size);
		render_swap(f->r, r->view, r->vals, t->h->rec, size);
		rec = t->h->rec;
	}
	if ((ret = page_add(t, r->program, r->cpu, (uint64_t)r->trace_ts, rec, (uint32_t)size)) < 0 ||
	    (ret = comm_add(t->h, r->pid, r->comm)) < 0 || (ret = row_syms(t->h, f, r)) < 0)
		return ret;
	fn_rows(t, f, r);
	if (r->ts > t->h->last_wall)
		t->h->last_wall = r->ts;
	t->st.rows++;
	return 0;
}

/*
 * A loss goes where the rows of its CPU go (export_loss.row_cpu and
 * .program: a program ring's buffer into the programs instance, as its
 * rows): the CPU's page ends there, and the next one carries the
 * kernel's missed-events flag and count, which trace-cmd report prints
 * as "CPU:N [N EVENTS DROPPED]" before that page's first event.
 */
static int tdw_loss(struct export_writer *w, const struct export_loss *l)
{
	struct tdw *t = tdw_of(w);
	uint32_t cpu = l->row_cpu;
	struct tdw_set *set;
	struct tdw_cpu *c;
	int ret;

	/* a program's stream of no group the collector named: nowhere to put it */
	if (cpu == UINT32_MAX || (!l->program && cpu >= PROTO_USER_STREAM_BASE)) {
		t->st.skipped++;
		return 0;
	}
	set = set_of(t, l->program, &cpu);
	c = set ? cpu_of(t, set, cpu) : NULL;
	if (!c)
		return t->base.err[0] ? TC_ERR_TOO_LONG : -ENOMEM;
	/* the events after the loss start a page of their own, flagged */
	if ((ret = page_flush(t, set, cpu)) < 0)
		return ret;
	c->missed = true;
	c->missed_count += l->count;
	t->st.losses++;
	return 0;
}

static int tdw_host_end(struct export_writer *w)
{
	struct tdw *t = tdw_of(w);
	struct tdw_host *h = t->h;
	uint64_t *off[TDW_SETS] = { NULL }, *size[TDW_SETS] = { NULL }, opt_at = 0;
	int ret = 0;

	for (int i = 0; i < TDW_SETS; i++)
		for (uint32_t c = 0; c < h->sets[i].ncpus && ret == 0; c++)
			ret = page_flush(t, &h->sets[i], c);
	if (ret == 0)
		ret = tdw_want_names(t);
	if (ret == 0 && fflush(h->spool) != 0)
		ret = export_seterr(w, -errno, "the temporary file: %s", strerror(errno));
	for (int i = 0; i < TDW_SETS && ret == 0; i++)
		if (!(off[i] = calloc(file_cpus(h), sizeof(*off[i]))) ||
		    !(size[i] = calloc(file_cpus(h), sizeof(*size[i]))))
			ret = -ENOMEM;
	if (ret == 0 && !(t->out = fopen(t->file, "w+e")))
		ret = export_seterr(w, -errno, "%s: %s", t->file, strerror(errno));
	if (ret == 0)
		ret = write_head(t, &opt_at);
	if (ret == 0)
		ret = t->o.tracedat_version >= 7 ? write_v7(t, opt_at, off, size) :
						   write_v6(t, off, size);
	if (ret == 0) {
		t->st.bytes += out_pos(t);
		t->st.files++;
	}
	if (t->out && fclose(t->out) != 0 && ret == 0)
		ret = export_seterr(w, -errno, "%s: %s", t->file, strerror(errno));
	t->out = NULL;
	if (ret < 0 && t->file)
		unlink(t->file);
	for (int i = 0; i < TDW_SETS; i++) {
		free(off[i]);
		free(size[i]);
	}
	free(t->file);
	t->file = NULL;
	host_free(h);
	t->h = NULL;
	return ret;
}

/* With several hosts, @path is a directory (made when missing). */
static int path_ready(struct tdw *t)
{
	struct stat sb;

	if (t->o.nhosts <= 1)
		return 0;
	if (mkdir(t->path, 0755) == 0 || (errno == EEXIST && stat(t->path, &sb) == 0 &&
					   S_ISDIR(sb.st_mode)))
		return 0;
	return export_seterr(&t->base, errno == EEXIST ? -ENOTDIR : -errno,
			     "%s: several hosts go into a directory, one file each: %s", t->path,
			     errno == EEXIST ? "not a directory" : strerror(errno));
}

static int tdw_open(const struct export_opts *o, struct export_writer **out)
{
	struct tdw *t = calloc(1, sizeof(*t));
	int ret;

	if (!t)
		return -ENOMEM;
	t->base.ops = &export_tracedat_ops;
	t->base.err = o->err;
	t->o = *o;
	if (!(t->path = strdup(o->path)) || !(t->zc = ZSTD_createCCtx())) {
		ret = -ENOMEM;
		goto fail;
	}
	if ((ret = path_ready(t)) < 0)
		goto fail;
	*out = &t->base;
	return 0;
fail:
	ZSTD_freeCCtx(t->zc);
	free(t->path);
	free(t);
	return ret;
}

static int tdw_close(struct export_writer *w, bool ok, struct export_stats *st)
{
	struct tdw *t = tdw_of(w);

	if (!t)
		return 0;
	if (t->out) {
		fclose(t->out);
		unlink(t->file);	/* a host not finished: no half file */
	}
	free(t->file);
	host_free(t->h);
	if (st)
		*st = t->st;
	ZSTD_freeCCtx(t->zc);
	free(t->path);
	free(t);
	return 0;
}

const struct export_writer_ops export_tracedat_ops = {
	.format = "tracedat",
	.open = tdw_open,
	.host_begin = tdw_host_begin,
	.row = tdw_row,
	.loss = tdw_loss,
	.host_end = tdw_host_end,
	.close = tdw_close,
};
