/*
 * tracecollect.c - libtracecollect (include/tracecollect.h): the public
 * instrumentation API on top of the ring buffer (common/ring.h). Event
 * registration produces kernel format-file text; records carry the
 * kernel's 8 bytes of common fields so one decoder serves both.
 *
 * The format table entry for an event is "<provider>\n<format text>": the
 * first line is the system (the kernel puts it in the directory name),
 * the rest is exactly what events/<system>/<name>/format would hold.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/ring.h"
#include "common/tc_internal.h"
#include "include/tracecollect.h"

static const uint32_t tc_off;
const volatile uint32_t *tc__on = &tc_off;
struct ring *tc__ring;		/* tc_internal.h */
uint32_t tc__gen;		/* tc_internal.h */
static char tc_path[128];
static struct tc_event *tc_print_ev;
static __thread int32_t tc_tid;

_Static_assert(sizeof(struct ring_wctx) <= sizeof(((struct tc_wctx *)0)->priv),
	       "tc_wctx too small");

static const struct {
	const char *ctype, *fmt;
	uint32_t size;
	int sign;
} tc_types[] = {
	[TC_U8] = { "unsigned char", "%u", 1, 0 },
	[TC_S8] = { "signed char", "%d", 1, 1 },
	[TC_U16] = { "unsigned short", "%u", 2, 0 },
	[TC_S16] = { "short", "%d", 2, 1 },
	[TC_U32] = { "unsigned int", "%u", 4, 0 },
	[TC_S32] = { "int", "%d", 4, 1 },
	[TC_U64] = { "unsigned long long", "%llu", 8, 0 },
	[TC_S64] = { "long long", "%lld", 8, 1 },
	[TC_STRING] = { "char", "%s", 1, 0 },
};

static const char tc_common[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;"
	"\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

static bool ident_ok(const char *s)
{
	if (!s || !*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= '0' && *s <= '9') ||
		      (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
			return false;
	return true;
}

/* Append to the fixed buffer; the caller checks truncation once. */
static void cat(char *buf, size_t size, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void cat(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*used >= size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, size - *used, fmt, ap);
	va_end(ap);
	*used += n < 0 ? size : (size_t)n;
}

/* Lay the fields out (natural alignment after the common 8 bytes). */
static int layout_fields(const struct tc_field *f, unsigned n,
			 struct tc_event *ev)
{
	uint32_t off = 8;

	for (unsigned i = 0; i < n; i++) {
		uint32_t sz, al;

		if (!ident_ok(f[i].name) || f[i].type > TC_STRING ||
		    (f[i].type == TC_STRING && !f[i].array_len))
			return -EINVAL;
		al = tc_types[f[i].type].size;
		sz = f[i].type == TC_STRING ? f[i].array_len : al;
		off = (off + al - 1) / al * al;
		ev->offsets[i] = off - 8;
		off += sz;
	}
	if (off - 8 > RING_MAX_PAYLOAD - 8)
		return -EINVAL;
	ev->size = off - 8;
	ev->nfields = n;
	return 0;
}

static void default_print(const struct tc_field *f, unsigned n, char *buf,
			  size_t size, size_t *used)
{
	cat(buf, size, used, "\"");
	for (unsigned i = 0; i < n; i++)
		cat(buf, size, used, "%s%s=%s", i ? " " : "", f[i].name,
		    tc_types[f[i].type].fmt);
	cat(buf, size, used, "\"");
	for (unsigned i = 0; i < n; i++)
		cat(buf, size, used, ", REC->%s", f[i].name);
}

static int format_text(const char *prov, const char *name,
		       const struct tc_field *f, unsigned n,
		       const char *print_fmt, const struct tc_event *ev,
		       char *buf, size_t size)
{
	size_t used = 0;

	cat(buf, size, &used, "%s\nname: %s\nID: %u\nformat:\n%s", prov,
	    name, ev->id, tc_common);
	for (unsigned i = 0; i < n; i++) {
		bool str = f[i].type == TC_STRING;
		char arr[16] = "";

		if (str)
			snprintf(arr, sizeof(arr), "[%u]", f[i].array_len);
		cat(buf, size, &used,
		    "\tfield:%s %s%s;\toffset:%u;\tsize:%u;\tsigned:%d;\n",
		    tc_types[f[i].type].ctype, f[i].name, arr,
		    ev->offsets[i] + 8,
		    str ? f[i].array_len : tc_types[f[i].type].size,
		    tc_types[f[i].type].sign);
	}
	cat(buf, size, &used, "\nprint fmt: ");
	if (print_fmt)
		cat(buf, size, &used, "%s", print_fmt);
	else
		default_print(f, n, buf, size, &used);
	cat(buf, size, &used, "\n");
	return used < size ? 0 : -EINVAL;
}

/*
 * The end of registering @ev: with @ret 0, its format @text goes to the
 * ring and @ev to *@out; @text is freed, and @ev unless it went out.
 */
static int event_publish(int ret, char *text, struct tc_event *ev, struct tc_event **out)
{
	if (!ret)
		ret = ring_format_append(tc__ring, text);
	free(text);
	if (ret)
		free(ev);
	else
		*out = ev;
	return ret;
}

int tc_event_register(const char *provider, const char *name,
		      const struct tc_field *fields, unsigned nfields,
		      const char *print_fmt, struct tc_event **out)
{
	struct tc_event *ev;
	char *text = NULL;
	int ret = -ENOMEM;

	if (!tc__ring)
		return -ENODEV;
	if (!ident_ok(provider) || !ident_ok(name) || nfields > 64)
		return -EINVAL;
	ev = calloc(1, sizeof(*ev) + nfields * sizeof(ev->offsets[0]));
	text = malloc(16384);
	if (!ev || !text)
		goto out;
	ret = layout_fields(fields, nfields, ev);
	if (ret)
		goto out;
	ev->id = (uint16_t)ring_next_event_id(tc__ring);
	ret = format_text(provider, name, fields, nfields, print_fmt, ev, text,
			  16384);
out:
	return event_publish(ret, text, ev, out);
}

void tc_event_free(struct tc_event *ev)
{
	free(ev);
}

static int32_t tid(void)
{
	if (!tc_tid)
		tc_tid = (int32_t)syscall(SYS_gettid);
	return tc_tid;
}

/* The record's 8 common bytes: common_type, flags, preempt_count, pid. */
static inline void common_fields(uint8_t *p, const struct tc_event *ev)
{
	int32_t pid = tid();

	memcpy(p, &ev->id, 2);
	p[2] = 0;
	p[3] = 0;
	memcpy(p + 4, &pid, 4);
}

int tc_reserve(const struct tc_event *ev, size_t len, struct tc_wctx *ctx)
{
	struct ring_wctx *rc = (struct ring_wctx *)ctx->priv;
	int ret;

	if (!*tc__on)
		return -ENODEV;
	if (len > RING_MAX_PAYLOAD - 8)
		return -E2BIG;
	ret = ring_reserve(tc__ring, -1, (uint32_t)len + 8, rc);
	if (ret)
		return ret;
	common_fields(rc->data, ev);
	ctx->data = (uint8_t *)rc->data + 8;
	return 0;
}

void tc_commit(struct tc_wctx *ctx)
{
	ring_commit(tc__ring, (struct ring_wctx *)ctx->priv);
}

/* One call into the ring's inline write path: no reservation context,
 * no copy through ctx->data. */
int tc_write(const struct tc_event *ev, const void *fields, size_t len)
{
	uint8_t common[8];

	if (!*tc__on)
		return -ENODEV;
	if (len > RING_MAX_PAYLOAD - 8)
		return -E2BIG;
	common_fields(common, ev);
	return ring_write_hdr(tc__ring, common, fields, (uint32_t)len);
}

int tc_printf(const char *fmt, ...)
{
	char msg[1024 + 8];
	uint64_t ip = (uint64_t)(uintptr_t)__builtin_return_address(0);
	va_list ap;
	int n;

	if (!*tc__on || !tc_print_ev)
		return -ENODEV;
	memcpy(msg, &ip, 8);
	va_start(ap, fmt);
	n = vsnprintf(msg + 8, 1024, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if (n > 1023)
		n = 1023;
	return tc_write(tc_print_ev, msg, 8 + (size_t)n + 1);
}

static const char tc_print_format[] =
	"tracecollect\nname: print\nID: %u\nformat:\n%s"
	"\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n\n"
	"print fmt: \"%%ps: %%s\", (void *)REC->ip, REC->buf\n";

static int register_print(void)
{
	char text[1024];

	tc_print_ev = calloc(1, sizeof(*tc_print_ev));
	if (!tc_print_ev)
		return -ENOMEM;
	tc_print_ev->id = (uint16_t)ring_next_event_id(tc__ring);
	tc_print_ev->size = 8;
	snprintf(text, sizeof(text), tc_print_format, tc_print_ev->id,
		 tc_common);
	return ring_format_append(tc__ring, text);
}

int tc__event_register_raw(const char *system, const char *name,
			   const char *fields, const char *print_fmt,
			   uint32_t size, struct tc_event **out)
{
	struct tc_event *ev;
	char *text = NULL;
	int ret = -ENOMEM, n;

	if (!tc__ring)
		return -ENODEV;
	if (!ident_ok(system) || !ident_ok(name) || size > RING_MAX_PAYLOAD - 8)
		return -EINVAL;
	ev = calloc(1, sizeof(*ev));
	text = malloc(4096);
	if (!ev || !text)
		goto out;
	ev->id = (uint16_t)ring_next_event_id(tc__ring);
	ev->size = size;
	n = snprintf(text, 4096, "%s\nname: %s\nID: %u\nformat:\n%s%s\n"
		     "print fmt: %s\n", system, name, ev->id, tc_common, fields,
		     print_fmt);
	ret = n > 0 && n < 4096 ? 0 : -EINVAL;
out:
	return event_publish(ret, text, ev, out);
}

unsigned tc__clock_id(void)
{
	return tc__ring ? (unsigned)ring_get_clock(tc__ring) : 0;
}

/* A forked child is another thread id: forget the cached one. */
static void tc_atfork_child(void)
{
	tc_tid = 0;
}

static void tc_register_atfork(void)
{
	(void)pthread_atfork(NULL, NULL, tc_atfork_child);
}

int tc_init(const struct tc_options *opt)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	struct tc_options def = { 0 };
	struct ring_params p = { .page_size = 4096 };
	int ret;

	if (tc__ring)
		return -EALREADY;
	(void)pthread_once(&once, tc_register_atfork);
	if (!opt)
		opt = &def;
	p.nr_pages = opt->pages_per_cpu ? opt->pages_per_cpu : 256;
	if (opt->page_size)
		p.page_size = opt->page_size;
	p.mode = (enum ring_mode)opt->mode;
	p.nr_own = opt->thread_bufs;
	p.clock = opt->clock_mono ? RING_CLOCK_MONO : RING_CLOCK_TSC;
	if (opt->path)
		snprintf(tc_path, sizeof(tc_path), "%s", opt->path);
	else
		snprintf(tc_path, sizeof(tc_path), "%s/tracecollect.%d",
			 getenv("TRACECOLLECT_DIR") ? getenv("TRACECOLLECT_DIR")
						    : "/dev/shm", (int)getpid());
	ret = ring_create(tc_path, &p, &tc__ring);
	if (ret)
		return ret;
	ret = register_print();
	if (ret) {
		tc_shutdown();
		return ret;
	}
	tc__on = ring_attached_word(tc__ring);
	tc__gen = ring_gen(tc__ring);
	return 0;
}

void tc_shutdown(void)
{
	tc__on = &tc_off;
	tc__gen = 0;
	ring_close(tc__ring);
	tc__ring = NULL;
	free(tc_print_ev);
	tc_print_ev = NULL;
	if (tc_path[0])
		unlink(tc_path);
	tc_path[0] = 0;
}

void tc_trigger(void)
{
	if (tc__ring)
		ring_trigger(tc__ring);
}
