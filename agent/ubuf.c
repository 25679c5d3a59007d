/*
 * ubuf.c - the agent's side of our user-space ring buffers (see ubuf.h).
 *
 * A traced program maps its ring (common/ring.h: the kernel's page format,
 * a reader page swapped out of the ring) at DIR/tracecollect.<pid>. The
 * agent finds it by scanning DIR, announces it to the collector as a
 * MSG_GROUP (its streams, page size and TSC conversion) with its formats
 * and function symbols (agent/funcsyms.h), then sets the attach flag that enables the program's writes. Pages are
 * taken with ring_reader_get(), shipped whole, and put back; nothing is
 * decoded here. A program that died is recovered (its unfinished events
 * become counted padding), drained, reported, and its file removed.
 */
#include "config.h"

#define LOG_PREFIX "ubuf"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/funcsyms.h"
#include "agent/reader.h"
#include "agent/ubuf.h"
#include "common/log.h"
#include "common/ring.h"
#include "common/tc_error.h"

#define UBUF_MAX_STREAMS	(65536u - PROTO_USER_STREAM_BASE)
#define UBUF_PAGES_PER_POLL	4096	/* per buffer, so no ring starves the rest */
#define UBUF_CALIBRATE_US	20000

struct ubuf_stream {
	uint64_t seq;			/* last sequence number sent */
	uint64_t pages, events, bytes;
	uint64_t lost_pages, lost_events;	/* taken but not delivered */
};

struct ubuf_prog {
	struct ubuf_prog *next;
	struct ring *ring;		/* NULL: a file we could not use */
	int pid;
	char path[PATH_MAX];
	uint32_t group;
	uint32_t first_stream, nbufs;
	uint64_t fmt_cursor;
	uint64_t trigger_seen;
	struct ubuf_stream *streams;
};

struct ubuf {
	char dir[PATH_MAX - 64];	/* room for the file name in paths */
	struct ubuf_prog *progs;
	uint32_t next_group;
	uint32_t next_stream;		/* offset from PROTO_USER_STREAM_BASE */
	struct ring_clock_conv conv;
	bool have_conv;
	struct ubuf_totals done;	/* of programs already gone */
};

int ubuf_new(const char *dir, struct ubuf **out)
{
	struct ubuf *u;
	DIR *d;

	dir = dir ? dir : UBUF_DEFAULT_DIR;
	d = opendir(dir);
	if (!d)
		return -errno;
	closedir(d);
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	snprintf(u->dir, sizeof(u->dir), "%s", dir);
	*out = u;
	return 0;
}

static struct ubuf_prog *find_prog(struct ubuf *u, int pid)
{
	struct ubuf_prog *p;

	for (p = u->progs; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

/* "tracecollect.<digits>" -> pid, else -1. */
static int file_pid(const char *name)
{
	const char *d = name + strlen(UBUF_FILE_PREFIX);
	char *end;
	long pid;

	if (strncmp(name, UBUF_FILE_PREFIX, strlen(UBUF_FILE_PREFIX)) || !*d)
		return -1;
	pid = strtol(d, &end, 10);
	return *end || pid <= 0 || pid > INT_MAX ? -1 : (int)pid;
}

static void read_comm(int pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	snprintf(buf, len, "?");
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* Send the formats registered since the last call. */
static int send_formats(struct ubuf_prog *p, const struct ubuf_ops *ops)
{
	struct proto_msg m = { .type = MSG_FORMAT };
	char system[128], name[128];
	const char *text, *fmt, *nl;
	int ret;

	while ((ret = ring_format_next(p->ring, &p->fmt_cursor, &text)) == 1) {
		nl = strchr(text, '\n');
		fmt = nl ? nl + 1 : NULL;
		if (!nl || (size_t)(nl - text) >= sizeof(system) ||
		    sscanf(fmt, "name: %127s", name) != 1) {
			log_warn("%s: skipping a malformed format entry", p->path);
			continue;
		}
		snprintf(system, sizeof(system), "%.*s", (int)(nl - text), text);
		m.format = (struct proto_format){ system, name, (char *)fmt,
						  strlen(fmt), p->group };
		ret = ops->msg(ops->arg, &m);
		if (ret < 0)
			return ret;
	}
	return ret < 0 ? ret : 0;
}

void ubuf_set_conv(struct ubuf *u, const struct ring_clock_conv *c)
{
	u->conv = *c;
	u->have_conv = true;
}

static int announce(struct ubuf *u, struct ubuf_prog *p, const struct ubuf_ops *ops)
{
	struct proto_msg m = { .type = MSG_GROUP };
	bool tsc = ring_get_clock(p->ring) == RING_CLOCK_TSC;
	char comm[32];

	if (tsc && !u->have_conv) {
		int ret = ring_clock_calibrate(UBUF_CALIBRATE_US, &u->conv);

		if (ret < 0)
			return ret;
		u->have_conv = true;
	}
	read_comm(p->pid, comm, sizeof(comm));
	m.group = (struct proto_group){
		.group = p->group, .pid = p->pid, .comm = comm,
		.clock = tsc ? "tsc" : "mono",
		.tsc0 = tsc ? u->conv.tsc0 : 0, .mono0 = tsc ? u->conv.mono0 : 0,
		.mult = tsc ? u->conv.mult : 0, .shift = tsc ? u->conv.shift : 0,
		.first_stream = p->first_stream, .nstreams = p->nbufs,
		.page_size = ring_page_size(p->ring),
	};
	log_info("attached to %s (pid %d, %s, %u buffers)", p->path, p->pid, comm, p->nbufs);
	return ops->msg(ops->arg, &m);
}

/* Passes funcsyms_send()'s messages on, remembering a shipping failure. */
struct sym_relay {
	const struct ubuf_ops *ops;
	int err;
};

static int sym_relay_msg(void *arg, const struct proto_msg *m)
{
	struct sym_relay *r = arg;
	int ret = r->ops->msg(r->ops->arg, m);

	if (ret < 0)
		r->err = ret;
	return ret;
}

/*
 * The program's function symbols (MSG_SYMBOLS), so the collector can name
 * addresses. Symbols that cannot be read cost only names, never the
 * program's events: that is logged; a failure to ship is returned.
 */
static int send_symbols(struct ubuf_prog *p, const struct ubuf_ops *ops)
{
	struct sym_relay r = { .ops = ops };
	int n = funcsyms_send(p->group, p->pid, false, sym_relay_msg, &r);

	if (r.err < 0)
		return r.err;
	if (n < 0)
		log_warn("pid %d: no function symbols: %s", p->pid, tc_strerror(n));
	else
		log_debug("pid %d: %d function symbols sent", p->pid, n);
	return 0;
}

/* Open, announce and enable one program's ring. */
static int attach(struct ubuf *u, int pid, const struct ubuf_ops *ops)
{
	struct ubuf_prog *p = calloc(1, sizeof(*p));
	int ret;

	if (!p)
		return -ENOMEM;
	p->pid = pid;
	if (snprintf(p->path, sizeof(p->path), "%s/%s%d", u->dir, UBUF_FILE_PREFIX,
		     pid) >= (int)sizeof(p->path)) {
		free(p);
		return -ENAMETOOLONG;
	}
	ret = ring_open(p->path, &p->ring);
	if (ret == -EAGAIN && (kill(pid, 0) == 0 || errno == EPERM)) {
		free(p);	/* its program is still making it: the next scan looks again */
		return 0;
	}
	p->next = u->progs;
	u->progs = p;
	if (ret < 0) {
		log_warn("%s: not a usable ring buffer (%s); ignoring it", p->path,
			 ret == -EAGAIN ? "its program died while making it" : tc_strerror(ret));
		p->ring = NULL;
		return 0;
	}
	p->nbufs = ring_nr_bufs(p->ring);
	if (u->next_stream + p->nbufs > UBUF_MAX_STREAMS) {
		log_warn("%s: out of stream numbers; ignoring it", p->path);
		ring_close(p->ring);
		p->ring = NULL;
		return 0;
	}
	p->streams = calloc(p->nbufs, sizeof(*p->streams));
	if (!p->streams)
		return -ENOMEM;
	p->group = ++u->next_group;
	p->first_stream = PROTO_USER_STREAM_BASE + u->next_stream;
	u->next_stream += p->nbufs;
	p->trigger_seen = ring_trigger_seq(p->ring);
	ret = announce(u, p, ops);
	if (ret == 0)
		ret = send_formats(p, ops);
	if (ret == 0)
		ret = send_symbols(p, ops);
	if (ret == 0)
		ring_set_attached(p->ring, true);
	return ret;
}

int ubuf_scan(struct ubuf *u, const struct ubuf_ops *ops)
{
	struct ubuf_prog *p;
	struct dirent *e;
	DIR *d = opendir(u->dir);
	int pid, ret = 0;

	if (!d)
		return 0;	/* gone for now; scanned again later */
	while (ret == 0 && (e = readdir(d))) {
		pid = file_pid(e->d_name);
		if (pid > 0 && !find_prog(u, pid))
			ret = attach(u, pid, ops);
	}
	closedir(d);
	for (p = u->progs; ret == 0 && p; p = p->next)
		if (p->ring)
			ret = send_formats(p, ops);
	return ret;
}

/* Ship buffer @b's complete pages, each without its unused end (as
 * agent/reader.c ships the kernel's): a partly filled page, copied out
 * at a flush, is most of a 32 KiB page (the function graph tracer's
 * default) unused. Return: pages shipped or an error. */
static int drain_buf(struct ubuf_prog *p, unsigned b, const struct ubuf_ops *ops)
{
	struct ubuf_stream *s = &p->streams[b];
	struct ring_page_ref ref;
	int n, ret, shipped = 0;
	size_t len;

	while (shipped < UBUF_PAGES_PER_POLL &&
	       (ret = ring_reader_get(p->ring, b, &ref)) == 0) {
		n = reader_page_events_used(ref.data, ref.len, &len);
		ret = ops->page(ops->arg, (uint16_t)(p->first_stream + b), ++s->seq,
				ref.missed, ref.data, len);
		ring_reader_put(p->ring, b);
		if (ret < 0) {		/* the connection broke under this page */
			s->lost_pages++;
			s->lost_events += n > 0 ? (uint64_t)n : 0;
			return ret;
		}
		s->pages++;
		s->events += n > 0 ? (uint64_t)n : 0;
		s->bytes += len;
		shipped++;
	}
	return shipped;
}

static int drain_prog(struct ubuf_prog *p, const struct ubuf_ops *ops, bool flush)
{
	int ret, total = 0;
	unsigned b;

	for (b = 0; b < p->nbufs; b++) {
		if (flush)
			ring_reader_flush(p->ring, b);
		ret = drain_buf(p, b, ops);
		if (ret < 0)
			return ret;
		total += ret;
	}
	return total;
}

static int stream_stats(struct ubuf_prog *p, unsigned b, const struct ubuf_ops *ops)
{
	struct proto_msg m = { .type = MSG_CPU_STATS };
	struct ubuf_stream *s = &p->streams[b];
	struct ring_stats st;

	if (ring_get_stats(p->ring, b, &st) < 0)
		return 0;
	m.cpu_stats = (struct proto_cpu_stats){
		.cpu = p->first_stream + b, .pages = s->pages, .events = s->events,
		.bytes = s->bytes, .overrun = st.lost_overwritten,
		.dropped = st.lost_full + st.lost_busy + st.unfinished,
		.lost_pages = s->lost_pages, .lost_events = s->lost_events,
	};
	return ops->msg(ops->arg, &m);
}

static void add_totals(const struct ubuf_prog *p, struct ubuf_totals *t)
{
	struct ring_stats st;
	unsigned b;

	t->programs++;
	for (b = 0; p->ring && b < p->nbufs; b++) {
		t->pages += p->streams[b].pages;
		t->events += p->streams[b].events;
		t->bytes += p->streams[b].bytes;
		t->lost += p->streams[b].lost_events;
		if (ring_get_stats(p->ring, b, &st) == 0)
			t->lost += st.lost_full + st.lost_busy + st.lost_overwritten +
				   st.unfinished;
	}
}

static void prog_free(struct ubuf_prog *p)
{
	if (p->ring) {
		ring_set_attached(p->ring, false);
		ring_close(p->ring);
	}
	free(p->streams);
	free(p);
}

/* The owner is gone: recover, drain everything, report, forget. */
static int finish_dead(struct ubuf *u, struct ubuf_prog *p, const struct ubuf_ops *ops)
{
	unsigned b;
	int ret, total = 0;

	for (b = 0; b < p->nbufs; b++)
		ring_reader_recover(p->ring, b);
	do {
		ret = drain_prog(p, ops, true);
		total += ret > 0 ? ret : 0;
	} while (ret > 0);
	for (b = 0; ret == 0 && b < p->nbufs; b++)
		ret = stream_stats(p, b, ops);
	if (ret < 0)
		return ret;
	log_info("%s: pid %d exited; its buffers are drained", p->path, p->pid);
	add_totals(p, &u->done);
	if (unlink(p->path) < 0 && errno != ENOENT)
		log_warn("cannot remove %s: %s", p->path, strerror(errno));
	return total;
}

static bool prog_due(struct ubuf_prog *p, bool *flush)
{
	uint64_t seq;

	if (ring_get_mode(p->ring) != RING_MODE_FLIGHT)
		return true;
	seq = ring_trigger_seq(p->ring);
	if (seq == p->trigger_seen)
		return false;
	p->trigger_seen = seq;
	*flush = true;
	return true;
}

int ubuf_poll(struct ubuf *u, const struct ubuf_ops *ops, bool flush)
{
	struct ubuf_prog **pp = &u->progs, *p;
	int ret, total = 0;
	bool f;

	while ((p = *pp)) {
		/* decided once: an owner dying during the drain is seen next round */
		bool dead = p->ring && !ring_owner_alive(p->ring);

		f = flush;
		ret = 0;
		if (dead)
			ret = finish_dead(u, p, ops);
		else if (p->ring && prog_due(p, &f))
			ret = drain_prog(p, ops, f);
		if (ret < 0)
			return ret;
		total += ret;
		if (dead) {
			*pp = p->next;
			prog_free(p);
			continue;
		}
		pp = &p->next;
	}
	return total;
}

int ubuf_reannounce(struct ubuf *u, const struct ubuf_ops *ops)
{
	struct ubuf_prog *p;
	int ret = 0;

	for (p = u->progs; ret == 0 && p; p = p->next) {
		if (!p->ring)
			continue;
		p->fmt_cursor = 0;
		ret = announce(u, p, ops);
		if (ret == 0)
			ret = send_formats(p, ops);
		if (ret == 0)
			ret = send_symbols(p, ops);
	}
	return ret;
}

void ubuf_trigger(struct ubuf *u)
{
	struct ubuf_prog *p;

	for (p = u->progs; p; p = p->next)
		if (p->ring && ring_get_mode(p->ring) == RING_MODE_FLIGHT)
			ring_trigger(p->ring);
}

int ubuf_stats(struct ubuf *u, const struct ubuf_ops *ops)
{
	struct ubuf_prog *p;
	unsigned b;
	int ret;

	for (p = u->progs; p; p = p->next)
		for (b = 0; p->ring && b < p->nbufs; b++) {
			ret = stream_stats(p, b, ops);
			if (ret < 0)
				return ret;
		}
	return 0;
}

void ubuf_totals(const struct ubuf *u, struct ubuf_totals *out)
{
	const struct ubuf_prog *p;

	*out = u->done;
	for (p = u->progs; p; p = p->next)
		if (p->ring)
			add_totals(p, out);
}

unsigned ubuf_active(const struct ubuf *u)
{
	const struct ubuf_prog *p;
	unsigned n = 0;

	for (p = u->progs; p; p = p->next)
		n += p->ring != NULL;
	return n;
}

void ubuf_free(struct ubuf *u)
{
	struct ubuf_prog *p;

	if (!u)
		return;
	while ((p = u->progs)) {
		u->progs = p->next;
		prog_free(p);
	}
	free(u);
}
