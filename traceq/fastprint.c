/*
 * fastprint.c - simple print fmts run as a small program (see fastprint.h).
 *
 * The program mirrors libtraceevent 1.7's reading of a print fmt
 * (src/event-parse.c: parse_args(), parse_arg_string(), parse_arg_format(),
 * print_arg_number(), print_str_arg(), dynamic_offset()): the text is cut
 * into literal runs (backslash escapes and "%%" resolved) and conversions,
 * each conversion taking the next print argument. A number is the field's
 * bytes read unsigned, cast by the conversion's length (hh, h, none, l,
 * ll) and printed with the conversion as written; a string is a char
 * array's bytes up to its NUL, or a __data_loc / __rel_loc string found
 * through its location word. The common conversions (flags '-' and '0',
 * a width, d i u x X, s) are formatted here; the rest of what it accepts
 * goes to snprintf() with the conversion's own text and the value cast as
 * libtraceevent casts it, which is what libtraceevent itself does.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traceq/fastprint.h"
#include "traceq/linebuf.h"

/* One conversion's text, "%-08llx" and the like, bounded. */
#define SPEC_MAX	16
#define WIDTH_MAX	64

enum step_kind {
	STEP_TEXT,		/* literal bytes */
	STEP_INT,		/* an integer formatted here */
	STEP_INT_PRINTF,	/* an integer through snprintf */
	STEP_STR,		/* a string formatted here */
	STEP_STR_PRINTF,	/* a string through snprintf */
};

enum str_src {
	SRC_ARRAY,		/* char name[N]: its bytes, up to a NUL */
	SRC_DYNAMIC,		/* __data_loc / __rel_loc: the location word */
};

struct step {
	enum step_kind kind;
	char *text;		/* STEP_TEXT: the bytes; *_PRINTF: the conversion */
	size_t len;		/* STEP_TEXT */
	unsigned offset, size;	/* the field's (or the array element's) bytes */
	int ls;			/* the length: -2 hh, -1 h, 0, 1 l, 2 ll */
	bool is_signed, upper, left, zero;
	unsigned base, width;
	enum str_src src;
	bool relative;		/* __rel_loc: the offset counts from after the word */
};

struct fastprint {
	struct step *steps;
	size_t nsteps;
};

/* A conversion as libtraceevent reads it, and whether we format it here. */
struct spec {
	char text[SPEC_MAX];
	char conv;
	int ls;
	bool hand;		/* formatted here: flags '-' '0' and a width only */
	bool left, zero;
	unsigned width;
};

void fastprint_free(struct fastprint *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nsteps; i++)
		free(f->steps[i].text);
	free(f->steps);
	free(f);
}

static struct step *step_add(struct fastprint *f, enum step_kind kind)
{
	struct step *s = realloc(f->steps, (f->nsteps + 1) * sizeof(*s));

	if (!s)
		return NULL;
	f->steps = s;
	s = &f->steps[f->nsteps++];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	return s;
}

/*
 * The literal run at *@p up to the next conversion (parse_arg_string()).
 * Return: 0; 1 when the text cannot be read as libtraceevent reads it;
 * -ENOMEM.
 */
static int parse_text(struct fastprint *f, const char **p)
{
	const char *q = *p;
	size_t n = 0;
	char *out = malloc(strlen(q) + 1);
	struct step *s;

	if (!out)
		return -ENOMEM;
	for (; *q; q++) {
		if (*q == '\\') {
			if (!q[1]) {		/* libtraceevent reads past the end here */
				free(out);
				return 1;
			}
			q++;
			out[n++] = *q == 'n' ? '\n' : *q == 't' ? '\t' : *q == 'r' ? '\r' : *q;
		} else if (*q == '%') {
			if (q[1] != '%')
				break;
			out[n++] = '%';
			q++;
		} else {
			out[n++] = *q;
		}
	}
	*p = q;
	if (!n) {
		free(out);
		return 0;
	}
	if (!(s = step_add(f, STEP_TEXT))) {
		free(out);
		return -ENOMEM;
	}
	s->text = out;
	s->len = n;
	return 0;
}

/*
 * The conversion at @p ('%') into @sp, read as printf's grammar (flags
 * "-0#", a width, a precision, a length, d i u x X o s), a subset of what
 * parse_arg_format() takes; return the bytes it takes, 0 when it is not
 * one we print.
 */
static size_t parse_spec(const char *p, struct spec *sp)
{
	static const char *const mods[] = { "hh", "h", "ll", "l", "L", "z", "" };
	static const int mod_ls[] = { -2, -1, 2, 1, 2, 1, 0 };
	bool alt = false, prec = false;
	size_t i = 1, start, m;

	memset(sp, 0, sizeof(*sp));
	for (; p[i] == '-' || p[i] == '0' || p[i] == '#'; i++) {
		sp->left |= p[i] == '-';
		sp->zero |= p[i] == '0';
		alt |= p[i] == '#';
	}
	for (start = i; isdigit((unsigned char)p[i]); i++)
		sp->width = sp->width * 10 + (unsigned)(p[i] - '0');
	if (i - start > 2)
		return 0;
	if (p[i] == '.') {
		prec = true;
		for (start = ++i; isdigit((unsigned char)p[i]); i++)
			;
		if (i - start > 2)
			return 0;
	}
	for (m = 0; strncmp(p + i, mods[m], strlen(mods[m])); m++)
		;
	sp->ls = mod_ls[m];
	i += strlen(mods[m]);
	sp->conv = p[i];
	if (!sp->conv || !strchr("diuxXos", sp->conv) || i + 1 >= SPEC_MAX)
		return 0;
	if (sp->conv == 's' && (*mods[m] || sp->zero || alt))
		return 0;
	sp->hand = !alt && !prec && sp->conv != 'o' && sp->width <= WIDTH_MAX;
	memcpy(sp->text, p, i + 1);
	sp->text[i + 1] = 0;
	return i + 1;
}

/* A decimal atom as libtraceevent reads one (strtoull, base 0); -1: not one. */
static long long atom_index(const char *atom)
{
	char *end;
	unsigned long long v;

	if (!atom || !isdigit((unsigned char)atom[0]))
		return -1;
	errno = 0;
	v = strtoull(atom, &end, 0);
	return *end || errno || v > 0xffff ? -1 : (long long)v;
}

/* Where a number argument's bytes are: a plain field or array[N]. */
static bool num_source(struct tep_event *ev, struct tep_print_arg *a, struct step *s)
{
	struct tep_format_field *fl;
	long long idx;

	if (a->type == TEP_PRINT_FIELD) {
		fl = tep_find_any_field(ev, a->field.name);
		if (!fl || (fl->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC)))
			return false;
		s->offset = (unsigned)fl->offset;
		s->size = (unsigned)fl->size;
	} else if (a->type == TEP_PRINT_OP && !strcmp(a->op.op, "[") &&
		   a->op.left && a->op.left->type == TEP_PRINT_FIELD &&
		   a->op.right && a->op.right->type == TEP_PRINT_ATOM) {
		fl = tep_find_any_field(ev, a->op.left->field.name);
		idx = atom_index(a->op.right->atom.atom);
		if (!fl || idx < 0 || (fl->flags & TEP_FIELD_IS_DYNAMIC) ||
		    !(fl->flags & TEP_FIELD_IS_ARRAY) || fl->elementsize <= 0 ||
		    (idx + 1) * fl->elementsize > fl->size)
			return false;
		s->offset = (unsigned)(fl->offset + idx * fl->elementsize);
		s->size = (unsigned)fl->elementsize;
	} else {
		return false;
	}
	return fl->offset >= 0 && (s->size == 1 || s->size == 2 || s->size == 4 || s->size == 8);
}

/* Where a string argument's bytes are: a char array or __get_str(). */
static bool str_source(struct tep_event *ev, struct tep_print_arg *a, struct step *s)
{
	struct tep_format_field *fl;

	if (a->type == TEP_PRINT_FIELD) {
		fl = tep_find_any_field(ev, a->field.name);
		if (!fl || !(fl->flags & TEP_FIELD_IS_ARRAY) || (fl->flags & TEP_FIELD_IS_DYNAMIC) ||
		    fl->size <= 0 || fl->offset < 0)
			return false;
		s->src = SRC_ARRAY;
	} else if (a->type == TEP_PRINT_STRING) {
		fl = a->string.field ? a->string.field : tep_find_any_field(ev, a->string.string);
		if (!fl || !(fl->flags & TEP_FIELD_IS_DYNAMIC) || fl->offset < 0 ||
		    (fl->size != 2 && fl->size != 4))
			return false;
		s->src = SRC_DYNAMIC;
		s->relative = fl->flags & TEP_FIELD_IS_RELATIVE;
	} else {
		return false;
	}
	s->offset = (unsigned)fl->offset;
	s->size = (unsigned)fl->size;
	return true;
}

/* The conversion @sp with its argument @a as a step. Return: 0; 1 not ours; -ENOMEM. */
static int add_conv(struct fastprint *f, struct tep_event *ev, const struct spec *sp,
		    struct tep_print_arg *a)
{
	bool str = sp->conv == 's';
	struct step s = {
		.ls = sp->ls, .left = sp->left, .zero = sp->zero && !sp->left,
		.width = sp->width, .is_signed = sp->conv == 'd' || sp->conv == 'i',
		.upper = sp->conv == 'X', .base = sp->conv == 'x' || sp->conv == 'X' ? 16 : 10,
	};
	struct step *p;

	if (!a || !(str ? str_source(ev, a, &s) : num_source(ev, a, &s)))
		return 1;
	s.kind = str ? (sp->hand ? STEP_STR : STEP_STR_PRINTF) :
		sp->hand ? STEP_INT : STEP_INT_PRINTF;
	if (!sp->hand && !(s.text = strdup(sp->text)))
		return -ENOMEM;
	if (!(p = step_add(f, s.kind))) {
		free(s.text);
		return -ENOMEM;
	}
	*p = s;
	return 0;
}

/* Return: 0; 1 when the print fmt is not ours; -ENOMEM. */
static int compile(struct fastprint *f, struct tep_event *ev)
{
	const char *p = ev->print_fmt.format;
	struct tep_print_arg *a = ev->print_fmt.args;
	struct spec sp;
	int ret = 0;

	while (ret == 0 && *p) {
		size_t n;

		ret = parse_text(f, &p);
		if (ret || !*p)
			break;
		n = parse_spec(p, &sp);
		if (!n)
			return 1;
		ret = add_conv(f, ev, &sp, a);
		a = a ? a->next : NULL;
		p += n;
	}
	return ret;
}

int fastprint_new(struct tep_event *event, struct fastprint **out)
{
	struct fastprint *f;
	int ret;

	*out = NULL;
	if (sizeof(long) != 8 || !event->print_fmt.format ||
	    (event->flags & ~TEP_EVENT_FL_NOHANDLE) ||
	    (event->handler && !(event->flags & TEP_EVENT_FL_NOHANDLE)) ||
	    tep_is_file_bigendian(event->tep) != tep_is_local_bigendian(event->tep))
		return 0;
	if (!(f = calloc(1, sizeof(*f))))
		return -ENOMEM;
	ret = compile(f, event);
	if (ret == 0)
		*out = f;
	else
		fastprint_free(f);
	return ret < 0 ? ret : 0;
}

/* ---- running ---- */

static uint64_t read_num(const unsigned char *d, unsigned size)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (size) {
	case 1: memcpy(&u8, d, 1); return u8;
	case 2: memcpy(&u16, d, 2); return u16;
	case 4: memcpy(&u32, d, 4); return u32;
	default: memcpy(&u64, d, 8); return u64;
	}
}

/* @v as printf's integer conversion of length @ls reads it: its magnitude, its sign. */
static uint64_t cast(uint64_t v, int ls, bool is_signed, bool *neg)
{
	unsigned bits = ls <= -2 ? 8 : ls == -1 ? 16 : ls == 0 ? 32 : 64;
	uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;

	v &= mask;
	*neg = is_signed && ((v >> (bits - 1)) & 1);
	return *neg ? (~v + 1) & mask : v;	/* INT_MIN's magnitude too */
}

static void run_int(struct linebuf *k, const struct step *s, uint64_t raw)
{
	static const char lower[] = "0123456789abcdef", upper[] = "0123456789ABCDEF";
	const char *dig = s->upper ? upper : lower;
	char tmp[24], *e = tmp + sizeof(tmp), *p = e;
	bool neg;
	uint64_t v = cast(raw, s->ls, s->is_signed, &neg);

	if (s->base == 16) {
		do {
			*--p = dig[v & 15];
			v >>= 4;
		} while (v);
	} else {
		do {
			*--p = (char)('0' + v % 10);
			v /= 10;
		} while (v);
	}
	linebuf_padded(k, p, (size_t)(e - p), neg, s->width, s->left, s->zero);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
/* snprintf() with one conversion we checked (parse_spec()), as libtraceevent calls it. */
static void run_printf(struct linebuf *k, const struct step *s, uint64_t v, const char *str)
{
	char tmp[128];
	int n;

	if (s->kind == STEP_STR_PRINTF)
		n = snprintf(tmp, sizeof(tmp), s->text, str);
	else if (s->ls <= -2)
		n = snprintf(tmp, sizeof(tmp), s->text, (char)v);
	else if (s->ls == -1)
		n = snprintf(tmp, sizeof(tmp), s->text, (short)v);
	else if (s->ls == 0)
		n = snprintf(tmp, sizeof(tmp), s->text, (int)v);
	else if (s->ls == 1)
		n = snprintf(tmp, sizeof(tmp), s->text, (long)v);
	else
		n = snprintf(tmp, sizeof(tmp), s->text, (long long)v);
	if (n > 0 && (size_t)n < sizeof(tmp)) {
		linebuf_put(k, tmp, (size_t)n);
	} else if (n > 0 && s->kind == STEP_STR_PRINTF) {
		char *big = malloc((size_t)n + 1);

		if (big && snprintf(big, (size_t)n + 1, s->text, str) == n)
			linebuf_put(k, big, (size_t)n);
		free(big);
	}
}
#pragma GCC diagnostic pop

/*
 * The string of step @s in @d: *@p, *@n bytes, *@nul when a NUL follows
 * them; *@p NULL when it prints as nothing. Return: false when it cannot
 * be read within @avail as libtraceevent reads it.
 */
static bool str_at(const struct step *s, const unsigned char *d, size_t size, size_t avail,
		   const char **p, size_t *n, bool *nul)
{
	const unsigned char *z;
	uint32_t word, o, l;

	*p = NULL;
	if (s->src == SRC_ARRAY) {	/* its bytes, whatever the record's size */
		if (s->offset + s->size > avail)
			return false;
		z = memchr(d + s->offset, 0, s->size);
		*p = (const char *)d + s->offset;
		*n = z ? (size_t)(z - (d + s->offset)) : s->size;
		*nul = z != NULL;
		return true;
	}
	if (s->offset + s->size > size)
		return true;
	word = (uint32_t)read_num(d + s->offset, s->size);
	o = word & 0xffff;
	l = s->size == 2 ? (uint32_t)size - o : word >> 16;
	if (o + l > size || !l)
		return true;
	if (o > size)
		o = 0;
	if (s->relative)
		o += s->offset + s->size;
	if (o >= avail || !(z = memchr(d + o, 0, avail - o)))
		return false;
	*p = (const char *)d + o;
	*n = (size_t)(z - (d + o));
	*nul = true;
	return true;
}

int fastprint_run(const struct fastprint *f, const void *data, size_t size, size_t avail,
		  char *buf, size_t *len, size_t cap)
{
	struct linebuf k = { .buf = buf, .len = *len, .cap = cap };
	const unsigned char *d = data;

	for (size_t i = 0; i < f->nsteps; i++) {
		const struct step *s = &f->steps[i];
		const char *str;
		uint64_t v = 0;
		size_t n;
		bool nul;

		switch (s->kind) {
		case STEP_TEXT:
			linebuf_put(&k, s->text, s->len);
			break;
		case STEP_INT:
		case STEP_INT_PRINTF:
			if (s->offset + s->size <= size)
				v = read_num(d + s->offset, s->size);
			if (s->kind == STEP_INT)
				run_int(&k, s, v);
			else
				run_printf(&k, s, v, NULL);
			break;
		case STEP_STR:
		case STEP_STR_PRINTF:
			if (!str_at(s, d, size, avail, &str, &n, &nul))
				return -1;
			if (!str)
				break;
			if (s->kind == STEP_STR)
				linebuf_padded(&k, str, n, false, s->width, s->left, false);
			else if (nul) {
				run_printf(&k, s, 0, str);
			} else {
				char tmp[4096 + 1];

				if (n >= sizeof(tmp))
					return -1;
				memcpy(tmp, str, n);
				tmp[n] = 0;
				run_printf(&k, s, 0, tmp);
			}
			break;
		}
	}
	*len = k.len;
	return 0;
}
