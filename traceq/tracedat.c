/*
 * tracedat.c - trace.dat reader (see tracedat.h for what and why).
 *
 * The layout followed is trace-cmd's Documentation/trace-cmd/
 * trace-cmd.dat.v6.txt and trace-cmd.dat.v7.txt:
 *  - both: magic, version string, endianness, long size, page size;
 *  - v6: header info, ftrace formats, event formats, kallsyms, printk
 *    formats, cmdlines, the CPU count, then "options  " (options up to id
 *    0), "flyrecord" and a per-CPU (offset, size) table; other instances
 *    are BUFFER options pointing at a marker and table of their own;
 *  - v7: a compression header ("name\0version\0") and the offset of the
 *    first options section; sections (id, flags, string id, size), each
 *    of the metadata ones pointed at by an option, possibly compressed;
 *    BUFFER options name each instance's clock, page size and per-CPU
 *    data, which compressed files hold as a count of zstd chunks.
 * All metadata parsing goes through a cursor (struct cur) over either the
 * file (v6) or a section's bytes in memory (v7), so one set of parsers
 * serves both versions and every read is bounds-checked.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "common/tc_error.h"
#include "traceq/tracedat.h"
#include "traceq/tracedat_format.h"

struct td_cpu {
	uint32_t cpu;
	uint64_t offset, size;
};

struct td_buffer {
	char *name, *clock;
	uint32_t page_size;
	uint32_t ncpus;
	struct td_cpu *cpus;
	uint64_t offset;	/* v6: its marker; v7: its section */
	bool latency;
};

struct tracedat {
	FILE *f;
	char *name;
	uint64_t fsize;
	struct tracedat_info info;
	char version_str[8];
	char *compression;
	struct tracedat_format *formats;
	size_t nformats;
	char *header_page, *kallsyms, *printk, *cmdlines, *clock, *uname;
	size_t meta;			/* bytes of metadata held */
	uint32_t file_cpus;		/* v6: the header's CPU count */
	struct td_buffer top;		/* v6: the flyrecord table */
	struct td_buffer *bufs;
	size_t nbufs;
	struct td_buffer *chosen;
	const char *want;		/* the buffer asked for; NULL: the one with data */
	bool cpu_compressed;
	/* pages */
	uint32_t cur;			/* chosen->cpus[cur] */
	uint64_t done;			/* uncompressed: bytes of cur read */
	uint8_t *page;
	ZSTD_DCtx *dctx;
	uint8_t *zin, *chunk;		/* compressed: a chunk in, out */
	size_t chunk_len, chunk_pos;
	uint32_t chunks_left;
	uint64_t zpos, zend;		/* file position of the next chunk, end of cur */
	bool chunks_started;
};

/* A reader over the file (mem NULL) or a section's bytes. */
struct cur {
	struct tracedat *td;
	const uint8_t *mem;
	size_t len, pos;
	uint64_t base;		/* file offset of the section (messages) */
	const char *what;	/* the part of the file being read */
};

static int bad(struct tracedat *td, char *err, size_t errlen, uint64_t off, const char *what,
	       const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int bad(struct tracedat *td, char *err, size_t errlen, uint64_t off, const char *what,
	       const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	tc_seterr(err, errlen, "%s: offset %llu (0x%llx), %s: %s", td->name,
		  (unsigned long long)off, (unsigned long long)off, what, why);
	return TC_ERR_MSG_MALFORMED;
}

static uint64_t get_num(const struct tracedat *td, const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[td->info.big_endian ? n - 1 - i : i] << (8 * i);
	return v;
}

static uint64_t ftell64(FILE *f)
{
	off_t o = ftello(f);

	return o < 0 ? 0 : (uint64_t)o;
}

static uint64_t cur_off(const struct cur *c)
{
	return c->mem ? c->base + c->pos : ftell64(c->td->f);
}

/* Read @n bytes at the cursor into @p. */
static int cur_read(struct cur *c, void *p, size_t n, char *err, size_t errlen)
{
	uint64_t off = cur_off(c);

	if (c->mem) {
		if (n > c->len - c->pos)
			return bad(c->td, err, errlen, off, c->what,
				   "%zu bytes wanted, the section has %zu left", n, c->len - c->pos);
		memcpy(p, c->mem + c->pos, n);
		c->pos += n;
		return 0;
	}
	if (n && fread(p, 1, n, c->td->f) != n)
		return ferror(c->td->f) ? -EIO : bad(c->td, err, errlen, off, c->what,
						     "the file ends (%zu bytes wanted)", n);
	return 0;
}

static int cur_num(struct cur *c, size_t n, uint64_t *v, char *err, size_t errlen)
{
	uint8_t b[8];
	int ret = cur_read(c, b, n, err, errlen);

	if (ret == 0)
		*v = get_num(c->td, b, n);
	return ret;
}

/* A NUL-terminated string of at most @max bytes, into @buf (@max + 1 bytes). */
static int cur_str(struct cur *c, char *buf, size_t max, char *err, size_t errlen)
{
	uint64_t off = cur_off(c);
	int ret;

	for (size_t i = 0; i <= max; i++) {
		if ((ret = cur_read(c, &buf[i], 1, err, errlen)) < 0)
			return ret;
		if (!buf[i])
			return 0;
	}
	return bad(c->td, err, errlen, off, c->what, "a string longer than %zu bytes", max);
}

/*
 * A size-prefixed blob (@nsize bytes of size), at most @max bytes, into a
 * new NUL-terminated buffer counted against TRACEDAT_MAX_META.
 */
static int cur_blob(struct cur *c, size_t nsize, size_t max, char **out, size_t *len,
		    char *err, size_t errlen)
{
	uint64_t off = cur_off(c), n;
	char *p;
	int ret = cur_num(c, nsize, &n, err, errlen);

	if (ret < 0)
		return ret;
	if (n > max)
		return bad(c->td, err, errlen, off, c->what, "size %llu over the limit of %zu",
			   (unsigned long long)n, max);
	if (c->mem && n > c->len - c->pos)
		return bad(c->td, err, errlen, off, c->what, "size %llu: past the section's end",
			   (unsigned long long)n);
	if (n > TRACEDAT_MAX_META - c->td->meta)
		return bad(c->td, err, errlen, off, c->what, "metadata over %u bytes in all",
			   TRACEDAT_MAX_META);
	if (!c->mem && n > c->td->fsize - ftell64(c->td->f))
		return bad(c->td, err, errlen, off, c->what, "size %llu: past the end of the file",
			   (unsigned long long)n);
	if (!(p = malloc(n + 1)))
		return -ENOMEM;
	if ((ret = cur_read(c, p, n, err, errlen)) < 0) {
		free(p);
		return ret;
	}
	p[n] = 0;
	c->td->meta += n;
	*out = p;
	*len = n;
	return 0;
}

static int expect(struct cur *c, const char *word, size_t n, char *err, size_t errlen)
{
	char buf[16];
	uint64_t off = cur_off(c);
	int ret = cur_read(c, buf, n, err, errlen);

	if (ret == 0 && memcmp(buf, word, n) != 0)
		return bad(c->td, err, errlen, off, c->what, "'%s' expected", word);
	return ret;
}

/* ---- metadata ---- */

static int header_info(struct cur *c, char *err, size_t errlen)
{
	char *ev = NULL;
	size_t len;
	int ret;

	c->what = "header info";
	free(c->td->header_page);	/* a second header info section replaces the first */
	c->td->header_page = NULL;
	if ((ret = expect(c, "header_page", 12, err, errlen)) < 0 ||
	    (ret = cur_blob(c, 8, TRACEDAT_MAX_HEADER, &c->td->header_page,
			    &c->td->info.header_page_len, err, errlen)) < 0 ||
	    (ret = expect(c, "header_event", 13, err, errlen)) < 0 ||
	    (ret = cur_blob(c, 8, TRACEDAT_MAX_HEADER, &ev, &len, err, errlen)) < 0)
		return ret;
	c->td->meta -= len;
	free(ev);
	return 0;
}

int tracedat_format_name(const char *text, char *name)
{
	const char *p = strncmp(text, "name: ", 6) == 0 ? text + 6 : strstr(text, "\nname: ");
	size_t n;

	if (!p)
		return -1;
	if (p != text + 6)
		p += 7;
	n = strcspn(p, " \t\r\n");
	if (n == 0 || n > TRACEDAT_MAX_NAME)
		return -1;
	memcpy(name, p, n);
	name[n] = 0;
	return 0;
}

static int add_format(struct cur *c, const char *system, char *err, size_t errlen)
{
	struct tracedat *td = c->td;
	struct tracedat_format *f;
	char name[TRACEDAT_MAX_NAME + 1];
	uint64_t off = cur_off(c);
	char *text;
	size_t len;
	int ret;

	if (td->nformats >= TRACEDAT_MAX_FORMATS)
		return bad(td, err, errlen, off, c->what, "over %d event formats",
			   TRACEDAT_MAX_FORMATS);
	if ((ret = cur_blob(c, 8, TRACEDAT_MAX_FORMAT, &text, &len, err, errlen)) < 0)
		return ret;
	if (tracedat_format_name(text, name) < 0) {
		free(text);
		return bad(td, err, errlen, off, c->what, "a format without a 'name: ' line");
	}
	f = &td->formats[td->nformats];
	f->system = strdup(system);
	f->name = strdup(name);
	f->text = text;
	f->len = len;
	td->nformats++;
	return f->system && f->name ? 0 : -ENOMEM;
}

/*
 * The start of a formats section, @what: the table of formats made, and
 * the section's 4-byte count of @unit (formats, systems) into *@n, at
 * most @max.
 */
static int formats_count(struct cur *c, const char *what, const char *unit, int max,
			 uint64_t *n, char *err, size_t errlen)
{
	uint64_t off;
	int ret;

	c->what = what;
	off = cur_off(c);
	if (!c->td->formats)
		c->td->formats = calloc(TRACEDAT_MAX_FORMATS, sizeof(*c->td->formats));
	if (!c->td->formats)
		return -ENOMEM;
	if ((ret = cur_num(c, 4, n, err, errlen)) < 0)
		return ret;
	if (*n > (uint64_t)max)
		return bad(c->td, err, errlen, off, c->what, "%llu %s: over %d",
			   (unsigned long long)*n, unit, max);
	return 0;
}

static int ftrace_formats(struct cur *c, char *err, size_t errlen)
{
	uint64_t n;
	int ret;

	ret = formats_count(c, "ftrace formats", "formats", TRACEDAT_MAX_FORMATS, &n, err, errlen);
	if (ret < 0)
		return ret;
	for (uint64_t i = 0; i < n; i++)
		if ((ret = add_format(c, "ftrace", err, errlen)) < 0)
			return ret;
	return 0;
}

static int event_formats(struct cur *c, char *err, size_t errlen)
{
	char sys[TRACEDAT_MAX_NAME + 1];
	uint64_t nsys, n, off;
	int ret;

	ret = formats_count(c, "event formats", "systems", TRACEDAT_MAX_SYSTEMS, &nsys, err,
			    errlen);
	if (ret < 0)
		return ret;
	for (uint64_t s = 0; s < nsys; s++) {
		off = cur_off(c);
		if ((ret = cur_str(c, sys, TRACEDAT_MAX_NAME, err, errlen)) < 0 ||
		    (ret = cur_num(c, 4, &n, err, errlen)) < 0)
			return ret;
		if (!sys[0] || n > TRACEDAT_MAX_FORMATS)
			return bad(c->td, err, errlen, off, c->what, "system %llu: %s",
				   (unsigned long long)s, sys[0] ? "too many events" : "no name");
		for (uint64_t i = 0; i < n; i++)
			if ((ret = add_format(c, sys, err, errlen)) < 0)
				return ret;
	}
	return 0;
}

static int text_section(struct cur *c, const char *what, size_t nsize, size_t max, char **out,
			size_t *len, char *err, size_t errlen)
{
	c->what = what;
	free(*out);
	*out = NULL;
	return cur_blob(c, nsize, max, out, len, err, errlen);
}

/* ---- v7 sections ---- */

/*
 * Read the section at @off, expected to be @id, into memory (decompressed
 * when flagged), at most @max bytes; @c then reads it.
 */
static int section_load(struct tracedat *td, uint64_t off, unsigned id, size_t max,
			const char *what, uint8_t **mem, struct cur *c, char *err, size_t errlen)
{
	struct cur fc = { .td = td, .what = what };
	uint64_t sid, flags, str, size, zsize, usize;
	uint8_t *z = NULL, *u = NULL;
	int ret;

	if (off < TRACEDAT_MAGIC_LEN || off >= td->fsize || fseeko(td->f, (off_t)off, SEEK_SET) != 0)
		return bad(td, err, errlen, off, what, "section offset outside the file");
	if ((ret = cur_num(&fc, 2, &sid, err, errlen)) < 0 ||
	    (ret = cur_num(&fc, 2, &flags, err, errlen)) < 0 ||
	    (ret = cur_num(&fc, 4, &str, err, errlen)) < 0 ||
	    (ret = cur_num(&fc, 8, &size, err, errlen)) < 0)
		return ret;
	if (sid != id)
		return bad(td, err, errlen, off, what, "section id %llu, %u expected",
			   (unsigned long long)sid, id);
	if (size > td->fsize - ftell64(td->f))
		return bad(td, err, errlen, off, what, "size %llu: past the end of the file",
			   (unsigned long long)size);
	if (!(flags & SEC_FL_COMPRESS)) {
		if (size > max)
			return bad(td, err, errlen, off, what, "size %llu over the limit of %zu",
				   (unsigned long long)size, max);
		usize = size;
		if (!(u = malloc(usize ? usize : 1)))
			return -ENOMEM;
		if ((ret = cur_read(&fc, u, usize, err, errlen)) < 0)
			goto out;
	} else {
		if (!td->dctx)
			return bad(td, err, errlen, off, what, "compressed, but the file says "
				   "its compression is '%s'", td->compression);
		if ((ret = cur_num(&fc, 4, &zsize, err, errlen)) < 0 ||
		    (ret = cur_num(&fc, 4, &usize, err, errlen)) < 0)
			return ret;
		if (zsize > size || usize > max)
			return bad(td, err, errlen, off, what, "compressed %llu bytes to %llu: "
				   "over the section or the limit of %zu", (unsigned long long)zsize,
				   (unsigned long long)usize, max);
		z = malloc(zsize ? zsize : 1);
		u = malloc(usize ? usize : 1);
		ret = -ENOMEM;
		if (!z || !u || (ret = cur_read(&fc, z, zsize, err, errlen)) < 0)
			goto out;
		size_t got = ZSTD_decompressDCtx(td->dctx, u, usize, z, zsize);

		if (ZSTD_isError(got) || got != usize) {
			ret = bad(td, err, errlen, off, what, "does not decompress to its %llu "
				  "bytes: %s", (unsigned long long)usize,
				  ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size differs");
			goto out;
		}
	}
	*c = (struct cur){ .td = td, .mem = u, .len = usize, .base = off, .what = what };
	*mem = u;
	u = NULL;
	ret = 0;
out:
	free(z);
	free(u);
	return ret;
}

static int meta_section(struct tracedat *td, unsigned id, uint64_t off, char *err, size_t errlen)
{
	static const char *const names[] = { "header info", "ftrace formats", "event formats",
					     "kallsyms", "printk formats", "cmdlines" };
	uint8_t *mem = NULL;
	struct cur c;
	size_t len;
	int ret;

	ret = section_load(td, off, id, id == OPT_KALLSYMS ? TRACEDAT_MAX_KALLSYMS + 4 :
			   TRACEDAT_MAX_SECTION, names[id - OPT_HEADER_INFO], &mem, &c,
			   err, errlen);
	if (ret < 0)
		return ret;
	switch (id) {
	case OPT_HEADER_INFO: ret = header_info(&c, err, errlen); break;
	case OPT_FTRACE_EVENTS: ret = ftrace_formats(&c, err, errlen); break;
	case OPT_EVENT_FORMATS: ret = event_formats(&c, err, errlen); break;
	case OPT_KALLSYMS:
		ret = text_section(&c, "kallsyms", 4, TRACEDAT_MAX_KALLSYMS, &td->kallsyms,
				   &len, err, errlen);
		td->info.kallsyms_len = len;
		break;
	case OPT_PRINTK:
		ret = text_section(&c, "printk formats", 4, TRACEDAT_MAX_PRINTK, &td->printk,
				   &len, err, errlen);
		td->info.printk_len = len;
		break;
	default:
		ret = text_section(&c, "cmdlines", 8, TRACEDAT_MAX_CMDLINES, &td->cmdlines,
				   &len, err, errlen);
		td->info.cmdlines_len = len;
		break;
	}
	free(mem);
	return ret;
}

/* ---- options ---- */

static int buffer_add(struct tracedat *td, struct td_buffer **out, uint64_t off, char *err,
		      size_t errlen)
{
	if (td->nbufs >= TRACEDAT_MAX_BUFFERS)
		return bad(td, err, errlen, off, "options", "over %d buffers",
			   TRACEDAT_MAX_BUFFERS);
	if (!td->bufs && !(td->bufs = calloc(TRACEDAT_MAX_BUFFERS, sizeof(*td->bufs))))
		return -ENOMEM;
	*out = &td->bufs[td->nbufs++];
	return 0;
}

/* A BUFFER (v7: with clock, page size and CPUs) or BUFFER_TEXT option. */
static int opt_buffer(struct tracedat *td, struct cur *c, bool text, char *err, size_t errlen)
{
	char name[TRACEDAT_MAX_NAME + 1], clock[TRACEDAT_MAX_NAME + 1] = "";
	uint64_t off = cur_off(c), v;
	struct td_buffer *b = NULL;
	int ret;

	if ((ret = buffer_add(td, &b, off, err, errlen)) < 0 ||
	    (ret = cur_num(c, 8, &b->offset, err, errlen)) < 0 ||
	    (ret = cur_str(c, name, TRACEDAT_MAX_NAME, err, errlen)) < 0)
		return ret;
	b->latency = text;
	if (td->info.version >= 7 && (ret = cur_str(c, clock, TRACEDAT_MAX_NAME, err, errlen)) < 0)
		return ret;
	if (!(b->name = strdup(name)) || !(b->clock = strdup(clock)))
		return -ENOMEM;
	if (td->info.version < 7 || text)
		return 0;
	if ((ret = cur_num(c, 4, &v, err, errlen)) < 0)
		return ret;
	b->page_size = (uint32_t)v;
	if ((ret = cur_num(c, 4, &v, err, errlen)) < 0)
		return ret;
	if (v > TRACEDAT_MAX_CPUS)
		return bad(td, err, errlen, off, c->what, "buffer '%s': %llu CPUs, over %d",
			   name, (unsigned long long)v, TRACEDAT_MAX_CPUS);
	b->ncpus = (uint32_t)v;
	if (v && !(b->cpus = calloc(v, sizeof(*b->cpus))))
		return -ENOMEM;
	for (uint32_t i = 0; i < b->ncpus; i++) {
		if ((ret = cur_num(c, 4, &v, err, errlen)) < 0 ||
		    (ret = cur_num(c, 8, &b->cpus[i].offset, err, errlen)) < 0 ||
		    (ret = cur_num(c, 8, &b->cpus[i].size, err, errlen)) < 0)
			return ret;
		b->cpus[i].cpu = (uint32_t)v;
	}
	return 0;
}

static int opt_string(struct cur *c, char **out)
{
	char *p = malloc(c->len + 1);

	if (!p)
		return -ENOMEM;
	memcpy(p, c->mem, c->len);
	p[c->len] = 0;
	free(*out);
	*out = p;
	p[strcspn(p, "\r\n")] = 0;
	return 0;
}

/* One option, its data in @c. *@next: v7 DONE's next options section. */
static int option(struct tracedat *td, unsigned id, struct cur *c, uint64_t *next, char *err,
		  size_t errlen)
{
	uint64_t v;
	int ret;

	switch (id) {
	case OPT_DONE:
		return td->info.version >= 7 ? cur_num(c, 8, next, err, errlen) : 0;
	case OPT_BUFFER:
	case OPT_BUFFER_TEXT:
		return opt_buffer(td, c, id == OPT_BUFFER_TEXT, err, errlen);
	case OPT_TRACECLOCK:
		return opt_string(c, &td->clock);
	case OPT_UNAME:
		return opt_string(c, &td->uname);
	case OPT_HEADER_INFO ... OPT_CMDLINES:
		if (td->info.version < 7)
			return 0;
		if ((ret = cur_num(c, 8, &v, err, errlen)) < 0)
			return ret;
		{
			off_t here = ftello(td->f);

			ret = meta_section(td, id, v, err, errlen);
			if (ret == 0 && fseeko(td->f, here, SEEK_SET) != 0)
				ret = -errno;
		}
		return ret;
	default:
		return 0;
	}
}

/*
 * The options from the file's position (v6: after "options  "; v7: after
 * an options section's header) up to DONE; *@next: v7's next section.
 */
static int options(struct tracedat *td, uint64_t end, uint64_t *next, char *err, size_t errlen)
{
	struct cur fc = { .td = td, .what = "options" };
	uint64_t id, size, off;
	uint8_t *data = NULL;
	int ret = 0;

	*next = 0;
	for (unsigned i = 0;; i++) {
		off = ftell64(td->f);
		if (i >= TRACEDAT_MAX_OPTIONS)
			return bad(td, err, errlen, off, "options", "over %d options",
				   TRACEDAT_MAX_OPTIONS);
		if ((ret = cur_num(&fc, 2, &id, err, errlen)) < 0)
			return ret;
		if (id == OPT_DONE && td->info.version < 7)
			return 0;
		if ((ret = cur_num(&fc, 4, &size, err, errlen)) < 0)
			return ret;
		if (size > TRACEDAT_MAX_OPTION || ftell64(td->f) > end ||
		    size > end - ftell64(td->f))
			return bad(td, err, errlen, off, "options", "option %llu of %llu bytes: "
				   "over %u or past its section", (unsigned long long)id,
				   (unsigned long long)size, TRACEDAT_MAX_OPTION);
		if (!(data = malloc(size ? size : 1)))
			return -ENOMEM;
		if ((ret = cur_read(&fc, data, size, err, errlen)) == 0) {
			struct cur c = { .td = td, .mem = data, .len = size,
					 .base = off + 6, .what = "options" };

			ret = option(td, (unsigned)id, &c, next, err, errlen);
		}
		free(data);
		if (ret < 0 || id == OPT_DONE)
			return ret;
	}
}

/* v7: the chain of options sections from @off. */
static int options_v7(struct tracedat *td, uint64_t off, char *err, size_t errlen)
{
	struct cur fc = { .td = td, .what = "options section" };
	uint64_t id, flags, str, size, next = 0;
	int ret;

	for (unsigned n = 0; off; n++, off = next) {
		if (n >= TRACEDAT_MAX_OPTSECTS)
			return bad(td, err, errlen, off, fc.what, "over %d options sections",
				   TRACEDAT_MAX_OPTSECTS);
		if (off < TRACEDAT_MAGIC_LEN || off >= td->fsize ||
		    fseeko(td->f, (off_t)off, SEEK_SET) != 0)
			return bad(td, err, errlen, off, fc.what, "offset outside the file");
		if ((ret = cur_num(&fc, 2, &id, err, errlen)) < 0 ||
		    (ret = cur_num(&fc, 2, &flags, err, errlen)) < 0 ||
		    (ret = cur_num(&fc, 4, &str, err, errlen)) < 0 ||
		    (ret = cur_num(&fc, 8, &size, err, errlen)) < 0)
			return ret;
		if (id != 0 || (flags & SEC_FL_COMPRESS))
			return bad(td, err, errlen, off, fc.what, "section id %llu flags %llu: an "
				   "uncompressed options section (0) expected",
				   (unsigned long long)id, (unsigned long long)flags);
		if (size > td->fsize - ftell64(td->f))
			return bad(td, err, errlen, off, fc.what, "size past the end of the file");
		if ((ret = options(td, ftell64(td->f) + size, &next, err, errlen)) < 0)
			return ret;
		if (next && next <= off)
			return bad(td, err, errlen, off, fc.what, "next options section at %llu: "
				   "not after this one", (unsigned long long)next);
	}
	return 0;
}

/* ---- v6 ---- */

/* A per-CPU (offset, size) table of @ncpus entries at the file's position. */
static int cpu_table(struct tracedat *td, struct td_buffer *b, uint32_t ncpus, char *err,
		     size_t errlen)
{
	struct cur fc = { .td = td, .what = "flyrecord" };
	int ret;

	b->ncpus = ncpus;
	if (ncpus && !(b->cpus = calloc(ncpus, sizeof(*b->cpus))))
		return -ENOMEM;
	for (uint32_t i = 0; i < ncpus; i++) {
		b->cpus[i].cpu = i;
		if ((ret = cur_num(&fc, 8, &b->cpus[i].offset, err, errlen)) < 0 ||
		    (ret = cur_num(&fc, 8, &b->cpus[i].size, err, errlen)) < 0)
			return ret;
	}
	return 0;
}

/* "options  " (then options) and "flyrecord"/"latency  " at the file's position. */
static int v6_marker(struct tracedat *td, struct td_buffer *b, bool top, char *err, size_t errlen)
{
	struct cur fc = { .td = td, .what = "options/flyrecord" };
	uint64_t off = ftell64(td->f), next;
	char buf[10];
	int ret;

	if ((ret = cur_read(&fc, buf, 10, err, errlen)) < 0)
		return ret;
	if (memcmp(buf, "options  ", 10) == 0) {
		if (!top)
			return bad(td, err, errlen, off, fc.what, "options in a buffer's table");
		if ((ret = options(td, td->fsize, &next, err, errlen)) < 0)
			return ret;
		off = ftell64(td->f);
		if ((ret = cur_read(&fc, buf, 10, err, errlen)) < 0)
			return ret;
	}
	if (memcmp(buf, "latency  ", 10) == 0) {
		b->latency = true;
		return 0;
	}
	if (memcmp(buf, "flyrecord", 10) != 0)
		return bad(td, err, errlen, off, fc.what, "'flyrecord' expected");
	return cpu_table(td, b, td->file_cpus, err, errlen);
}

static int read_v6(struct tracedat *td, struct cur *c, char *err, size_t errlen)
{
	uint64_t v, off;
	size_t len;
	int ret;

	if ((ret = header_info(c, err, errlen)) < 0 || (ret = ftrace_formats(c, err, errlen)) < 0 ||
	    (ret = event_formats(c, err, errlen)) < 0 ||
	    (ret = text_section(c, "kallsyms", 4, TRACEDAT_MAX_KALLSYMS, &td->kallsyms,
				&td->info.kallsyms_len, err, errlen)) < 0 ||
	    (ret = text_section(c, "printk formats", 4, TRACEDAT_MAX_PRINTK, &td->printk,
				&td->info.printk_len, err, errlen)) < 0 ||
	    (ret = text_section(c, "cmdlines", 8, TRACEDAT_MAX_CMDLINES, &td->cmdlines,
				&len, err, errlen)) < 0)
		return ret;
	td->info.cmdlines_len = len;
	c->what = "CPU count";
	off = cur_off(c);
	if ((ret = cur_num(c, 4, &v, err, errlen)) < 0)
		return ret;
	if (v == 0 || v > TRACEDAT_MAX_CPUS)
		return bad(td, err, errlen, off, c->what, "%llu CPUs: not 1 to %d",
			   (unsigned long long)v, TRACEDAT_MAX_CPUS);
	td->file_cpus = (uint32_t)v;
	if ((ret = v6_marker(td, &td->top, true, err, errlen)) < 0)
		return ret;
	for (size_t i = 0; i < td->nbufs; i++) {	/* instances: a table each */
		struct td_buffer *b = &td->bufs[i];

		if (b->offset < TRACEDAT_MAGIC_LEN || b->offset >= td->fsize ||
		    fseeko(td->f, (off_t)b->offset, SEEK_SET) != 0)
			return bad(td, err, errlen, b->offset, "buffer option",
				   "offset outside the file");
		if (!b->latency && (ret = v6_marker(td, b, false, err, errlen)) < 0)
			return ret;
	}
	return 0;
}

/* ---- the file ---- */

static int read_head(struct tracedat *td, char *err, size_t errlen)
{
	struct cur c = { .td = td, .what = "file header" };
	char magic[TRACEDAT_MAGIC_LEN], comp[TRACEDAT_MAX_NAME + 1], cver[TRACEDAT_MAX_NAME + 1];
	uint8_t b[2];
	uint64_t v;
	int ret;

	if (cur_read(&c, magic, TRACEDAT_MAGIC_LEN, err, errlen) < 0 ||
	    memcmp(magic, TRACEDAT_MAGIC, TRACEDAT_MAGIC_LEN))
		return bad(td, err, errlen, 0, c.what, "not a trace.dat file (no trace-cmd magic)");
	if ((ret = cur_str(&c, td->version_str, sizeof(td->version_str) - 1, err, errlen)) < 0)
		return ret;
	if (strcmp(td->version_str, "6") != 0 && strcmp(td->version_str, "7") != 0) {
		tc_seterr(err, errlen, "%s: trace.dat version '%s': only 6 and 7 are read",
			  td->name, td->version_str);
		return TC_ERR_NOT_SUPPORTED;
	}
	td->info.version = (unsigned)(td->version_str[0] - '0');
	if ((ret = cur_read(&c, b, 2, err, errlen)) < 0)
		return ret;
	if (b[0] > 1 || (b[1] != 4 && b[1] != 8))
		return bad(td, err, errlen, TRACEDAT_MAGIC_LEN + 2, c.what, "endianness %u, long size %u",
			   b[0], b[1]);
	td->info.big_endian = b[0];
	td->info.long_size = b[1];
	if ((ret = cur_num(&c, 4, &v, err, errlen)) < 0)
		return ret;
	if (v < TRACEDAT_MIN_PAGE || v > TRACEDAT_MAX_PAGE || (v & (v - 1)))
		return bad(td, err, errlen, TRACEDAT_MAGIC_LEN + 4, c.what, "page size %llu",
			   (unsigned long long)v);
	td->info.page_size = (uint32_t)v;
	if (td->info.version < 7)
		return read_v6(td, &c, err, errlen);
	if ((ret = cur_str(&c, comp, TRACEDAT_MAX_NAME, err, errlen)) < 0 ||
	    (ret = cur_str(&c, cver, TRACEDAT_MAX_NAME, err, errlen)) < 0)
		return ret;
	if (!(td->compression = strdup(comp)))
		return -ENOMEM;
	if (strcmp(comp, "zstd") == 0) {
		if (!(td->dctx = ZSTD_createDCtx()))
			return -ENOMEM;
	} else if (strcmp(comp, "none") != 0) {
		tc_seterr(err, errlen, "%s: compressed with '%s': only zstd is read", td->name,
			  comp);
		return TC_ERR_NOT_SUPPORTED;
	}
	if ((ret = cur_num(&c, 8, &v, err, errlen)) < 0)
		return ret;
	return options_v7(td, v, err, errlen);
}

/* v7: a BUFFER's section header (its id, whether compressed) before its data. */
static int v7_buffer_section(struct tracedat *td, struct td_buffer *b, char *err, size_t errlen)
{
	struct cur fc = { .td = td, .what = "buffer section" };
	uint64_t id, flags;
	int ret;

	if (b->offset < TRACEDAT_MAGIC_LEN || b->offset >= td->fsize ||
	    fseeko(td->f, (off_t)b->offset, SEEK_SET) != 0)
		return bad(td, err, errlen, b->offset, fc.what, "offset outside the file");
	if ((ret = cur_num(&fc, 2, &id, err, errlen)) < 0 ||
	    (ret = cur_num(&fc, 2, &flags, err, errlen)) < 0)
		return ret;
	if (id != OPT_BUFFER)
		return bad(td, err, errlen, b->offset, fc.what, "section id %llu, 3 expected",
			   (unsigned long long)id);
	td->cpu_compressed = flags & SEC_FL_COMPRESS;
	if (td->cpu_compressed && !td->dctx)
		return bad(td, err, errlen, b->offset, fc.what, "compressed, but the file says "
			   "its compression is '%s'", td->compression);
	return 0;
}

static bool has_data(const struct td_buffer *b)
{
	for (uint32_t i = 0; i < b->ncpus; i++)
		if (b->cpus[i].size)
			return true;
	return false;
}

/* A buffer's name as the user gives it: "top" for the top instance's. */
static const char *buffer_name(const struct td_buffer *b)
{
	return b->name && b->name[0] ? b->name : "top";
}

/* The names of @all's @n buffers with data, ", "-separated, into @out. */
static void names_with_data(struct td_buffer *const *all, size_t n, char *out, size_t size)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n && used < size; i++) {
		if (all[i]->latency || !has_data(all[i]))
			continue;
		used += (size_t)snprintf(out + used, size - used, "%s%s", used ? ", " : "",
					 buffer_name(all[i]));
	}
}

/*
 * The buffer to import: the one named td->want, else the one with data
 * (more than one: the user names one; the error lists them).
 */
static int choose(struct tracedat *td, char *err, size_t errlen)
{
	struct td_buffer *all[TRACEDAT_MAX_BUFFERS + 1];
	size_t n = 0, with = 0;
	uint32_t maxcpu = 0;
	char names[256];

	if (td->info.version < 7)
		all[n++] = &td->top;
	for (size_t i = 0; i < td->nbufs; i++)
		all[n++] = &td->bufs[i];
	for (size_t i = 0; i < n; i++) {
		if (all[i]->latency || !has_data(all[i]))
			continue;
		if (td->want ? !strcmp(buffer_name(all[i]), td->want) : with == 0)
			td->chosen = all[i];
		with++;
	}
	td->info.nbuffers = (uint32_t)with;
	names_with_data(all, n, names, sizeof(names));
	if (with == 0) {
		tc_seterr(err, errlen, "%s: no buffer holds flyrecord data (a latency trace or an "
			  "empty recording)", td->name);
		return TC_ERR_MSG_MALFORMED;
	}
	if (td->want && !td->chosen) {
		tc_seterr(err, errlen, "%s: no buffer (instance) '%s' holds data; these do: %s",
			  td->name, td->want, names);
		return TC_ERR_NOT_SUPPORTED;
	}
	if (!td->want && with > 1) {
		tc_seterr(err, errlen, "%s: more than one buffer (instance) holds data: %s; "
			  "import one at a time (--buffer NAME)", td->name, names);
		return TC_ERR_NOT_SUPPORTED;
	}
	for (uint32_t i = 0; i < td->chosen->ncpus; i++) {
		const struct td_cpu *c = &td->chosen->cpus[i];

		if (c->offset > td->fsize || c->size > td->fsize - c->offset)
			return bad(td, err, errlen, c->offset, "CPU data", "cpu %u: %llu bytes at "
				   "this offset: past the end of the file (truncated?)", c->cpu,
				   (unsigned long long)c->size);
		if (c->cpu >= TRACEDAT_MAX_CPUS)
			return bad(td, err, errlen, c->offset, "CPU data", "cpu %u", c->cpu);
		if (c->cpu + 1 > maxcpu)
			maxcpu = c->cpu + 1;
		td->info.ncpu_data += c->size != 0;
	}
	td->info.ncpus = maxcpu > td->file_cpus ? maxcpu : td->file_cpus;
	if (td->chosen->page_size) {
		uint32_t v = td->chosen->page_size;

		if (v < TRACEDAT_MIN_PAGE || v > TRACEDAT_MAX_PAGE || (v & (v - 1)))
			return bad(td, err, errlen, td->chosen->offset, "buffer option",
				   "page size %u", v);
		td->info.page_size = v;
	}
	return td->info.version >= 7 ? v7_buffer_section(td, td->chosen, err, errlen) : 0;
}

static void fill_info(struct tracedat *td)
{
	struct tracedat_info *i = &td->info;
	/*
	 * TRACECLOCK (the instance's trace_clock file as recorded) over the
	 * BUFFER option's clock: trace-cmd 3.1.6 writes "local" there even
	 * when it recorded with -C mono.
	 */
	const char *clock = td->chosen->clock && td->chosen->clock[0] && !td->clock ?
			    td->chosen->clock : NULL;

	i->compression = td->compression ? td->compression : "none";
	i->header_page = td->header_page;
	i->formats = td->formats;
	i->nformats = td->nformats;
	i->kallsyms = td->kallsyms ? td->kallsyms : "";
	i->printk = td->printk ? td->printk : "";
	i->cmdlines = td->cmdlines ? td->cmdlines : "";
	i->uname = td->uname ? td->uname : "";
	i->buffer = td->chosen->name ? td->chosen->name : "";
	if (!clock && td->clock) {	/* "[local] global ...": the bracketed one */
		char *open = strchr(td->clock, '['), *close = open ? strchr(open, ']') : NULL;

		if (close) {
			memmove(td->clock, open + 1, (size_t)(close - open - 1));
			td->clock[close - open - 1] = 0;
		}
		clock = td->clock;
	}
	i->clock = clock ? clock : "local";
}

int tracedat_open(FILE *f, const char *name, struct tracedat **out, char *err, size_t errlen)
{
	return tracedat_open_buffer(f, name, NULL, out, err, errlen);
}

int tracedat_open_buffer(FILE *f, const char *name, const char *buffer, struct tracedat **out,
			 char *err, size_t errlen)
{
	struct tracedat *td = calloc(1, sizeof(*td));
	int ret = -ENOMEM;

	if (!td || !(td->name = strdup(name)))
		goto out;
	td->f = f;
	td->want = buffer;
	if (fseeko(f, 0, SEEK_END) != 0 || ftello(f) < 0 || fseeko(f, 0, SEEK_SET) != 0) {
		ret = -errno;
		tc_seterr(err, errlen, "%s: cannot seek: %s", name, strerror(errno));
		goto out;
	}
	fseeko(f, 0, SEEK_END);
	td->fsize = ftell64(f);
	fseeko(f, 0, SEEK_SET);
	if ((ret = read_head(td, err, errlen)) < 0 || (ret = choose(td, err, errlen)) < 0)
		goto out;
	if (!td->header_page) {
		ret = bad(td, err, errlen, 0, "header info", "the file has no header page");
		goto out;
	}
	fill_info(td);
	if (!(td->page = malloc(td->info.page_size))) {
		ret = -ENOMEM;
		goto out;
	}
	*out = td;
	td = NULL;
	ret = 0;
out:
	tracedat_close(td);
	return ret;
}

const struct tracedat_info *tracedat_info(const struct tracedat *td)
{
	return &td->info;
}

/* ---- pages ---- */

/* Uncompressed: the next page of the current CPU; 0 when it is done. */
static int page_plain(struct tracedat *td, size_t *len, char *err, size_t errlen)
{
	const struct td_cpu *c = &td->chosen->cpus[td->cur];
	uint64_t left = c->size - td->done;
	size_t n = left < td->info.page_size ? (size_t)left : td->info.page_size;
	struct cur fc = { .td = td, .what = "CPU data" };
	int ret;

	if (n == 0)
		return 0;
	if (fseeko(td->f, (off_t)(c->offset + td->done), SEEK_SET) != 0)
		return -errno;
	if ((ret = cur_read(&fc, td->page, n, err, errlen)) < 0)
		return ret;
	td->done += n;
	*len = n;
	return 1;
}

/* Compressed: decompress the next chunk of the current CPU; 0 when none is left. */
static int next_chunk(struct tracedat *td, char *err, size_t errlen)
{
	struct cur fc = { .td = td, .what = "CPU data chunk" };
	uint64_t v, zsize, usize, off;
	int ret;

	if (!td->chunks_started) {
		const struct td_cpu *c = &td->chosen->cpus[td->cur];

		td->chunks_started = true;
		td->zpos = c->offset;
		/* the size trace-cmd records leaves out the 4 bytes of the count */
		td->zend = c->offset + c->size + 4 > td->fsize ? td->fsize : c->offset + c->size + 4;
		if (c->size == 0)
			return 0;
		if (fseeko(td->f, (off_t)td->zpos, SEEK_SET) != 0)
			return -errno;
		if ((ret = cur_num(&fc, 4, &v, err, errlen)) < 0)
			return ret;
		if (v > c->size / 8)
			return bad(td, err, errlen, td->zpos, fc.what, "%llu chunks in %llu bytes",
				   (unsigned long long)v, (unsigned long long)c->size);
		td->chunks_left = (uint32_t)v;
		td->zpos += 4;
	}
	if (td->chunks_left == 0)
		return 0;
	off = td->zpos;
	if (fseeko(td->f, (off_t)off, SEEK_SET) != 0)
		return -errno;
	if ((ret = cur_num(&fc, 4, &zsize, err, errlen)) < 0 ||
	    (ret = cur_num(&fc, 4, &usize, err, errlen)) < 0)
		return ret;
	if (zsize > td->zend - off - 8 || usize > TRACEDAT_MAX_CHUNK || usize == 0)
		return bad(td, err, errlen, off, fc.what, "%llu bytes to %llu: past the CPU's "
			   "data or over %u", (unsigned long long)zsize, (unsigned long long)usize,
			   TRACEDAT_MAX_CHUNK);
	free(td->zin);
	free(td->chunk);
	td->zin = malloc(zsize ? zsize : 1);
	td->chunk = malloc(usize);
	if (!td->zin || !td->chunk)
		return -ENOMEM;
	if ((ret = cur_read(&fc, td->zin, zsize, err, errlen)) < 0)
		return ret;
	size_t got = ZSTD_decompressDCtx(td->dctx, td->chunk, usize, td->zin, zsize);

	if (ZSTD_isError(got) || got != usize)
		return bad(td, err, errlen, off, fc.what, "does not decompress to its %llu bytes: "
			   "%s", (unsigned long long)usize,
			   ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size differs");
	td->chunk_len = usize;
	td->chunk_pos = 0;
	td->zpos = off + 8 + zsize;
	td->chunks_left--;
	return 1;
}

static int page_zstd(struct tracedat *td, size_t *len, char *err, size_t errlen)
{
	size_t n;
	int ret;

	while (td->chunk_pos >= td->chunk_len)
		if ((ret = next_chunk(td, err, errlen)) <= 0)
			return ret;
	n = td->chunk_len - td->chunk_pos;
	if (n > td->info.page_size)
		n = td->info.page_size;
	memcpy(td->page, td->chunk + td->chunk_pos, n);
	td->chunk_pos += n;
	*len = n;
	return 1;
}

int tracedat_next_page(struct tracedat *td, uint32_t *cpu, const uint8_t **page, size_t *len,
		       char *err, size_t errlen)
{
	int ret;

	while (td->cur < td->chosen->ncpus) {
		ret = td->cpu_compressed ? page_zstd(td, len, err, errlen) :
					   page_plain(td, len, err, errlen);
		if (ret < 0)
			return ret;
		if (ret > 0) {
			*cpu = td->chosen->cpus[td->cur].cpu;
			*page = td->page;
			return 1;
		}
		td->cur++;
		td->done = 0;
		td->chunks_started = false;
		td->chunk_len = td->chunk_pos = 0;
	}
	return 0;
}

static void buffer_free(struct td_buffer *b)
{
	free(b->name);
	free(b->clock);
	free(b->cpus);
}

void tracedat_close(struct tracedat *td)
{
	if (!td)
		return;
	for (size_t i = 0; i < td->nformats; i++) {
		free((char *)td->formats[i].system);
		free((char *)td->formats[i].name);
		free((char *)td->formats[i].text);
	}
	free(td->formats);
	for (size_t i = 0; i < td->nbufs; i++)
		buffer_free(&td->bufs[i]);
	free(td->bufs);
	buffer_free(&td->top);
	free(td->header_page);
	free(td->kallsyms);
	free(td->printk);
	free(td->cmdlines);
	free(td->clock);
	free(td->uname);
	free(td->compression);
	free(td->name);
	free(td->page);
	free(td->zin);
	free(td->chunk);
	ZSTD_freeDCtx(td->dctx);
	free(td);
}
