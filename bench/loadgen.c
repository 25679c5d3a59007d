/*
 * loadgen.c - simulated traceagents for `bench/run ingest` and the
 * 100-agent test: each agent connects over mutual TLS, sends HELLO, the
 * header_page and the formats of a capture (bench/capture.sh or
 * tests/data/capture.sh), then replays the captured raw pages again and
 * again with fresh per-CPU sequence numbers, sends BYE and waits for DONE.
 *
 *   loadgen --connect HOST:PORT --cert F --key F --ca F --data DIR
 *           [--agents N] [--pages P | --events E] [--name PREFIX]
 *           [--host NAME | --host-file FILE]
 *           [--bind ADDR] [--page-size N [--page-bytes B]] [--stall]
 *           [--ncpus N] [--hold] [--meta N]
 *   loadgen --connect HOST:PORT [--bind ADDR] --idle-sockets N
 *
 * DIR holds capture.txt (page_size, long_size, ncpus), header_page,
 * formats.txt ("system name file" lines; else the three test formats)
 * and cpuN.raw. Each agent ships P pages (or enough for about E events in
 * all, from the capture's mean events per page). Prints one line per agent and a
 * total: "loadgen: agents=N pages=.. shipped_events=.. stored_events=..
 * seconds=.. events_per_s=..". Events per page are counted with the
 * collector's own decoder, so shipped_events is exact. Exit status 0 when
 * every agent got DONE with stored == shipped (from a collector with a
 * receive journal: a DONE that covers every page shipped).
 *
 * For the collector's limits: --bind gives the connections that source
 * address; --page-size declares that page size in the HELLO, and
 * --page-bytes ships empty pages of B bytes instead of the capture's;
 * --stall sends, after the formats, the header of a page frame of
 * page-size bytes and all of it but the last byte, prints "agent I:
 * stalled", then waits for the collector to close (each line "agent I:
 * closed: REASON" gives the ERROR text); --idle-sockets opens N TCP
 * connections that send nothing and prints "socket I closed" as the
 * collector closes each (exit 0 once all are). --ncpus declares N CPUs in
 * the HELLO (the pages still come from the capture's CPUs); --hold, once
 * the pages are sent, prints "agent I: holding" and keeps the connection
 * open, reading, until the collector closes it (an established
 * connection, for the collector's connection caps; stop loadgen with a
 * signal). --meta N sends, after the formats, N rounds of metadata: one
 * CMDLINES of 4096 new pids, one kernel SYMBOLS of 1024 new lines and one
 * PRINTK of 1024 new lines each, about 150 KiB a round, before the pages
 * (for the host limits: metadata is charged like pages). --host sends NAME as the
 * host name of every agent instead of PREFIX-I, --host-file the contents
 * of FILE, any bytes and any length but NUL (for the collector's identity
 * and length checks: a 256 KiB name does not fit a command line). A refused agent's line
 * gives the collector's ERROR text. Like traceagent, an agent whose
 * connection or TLS handshake fails tries again after a short backoff
 * (a collector past its handshake caps closes new connections at once).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include "proto/frame.h"
#include "proto/msg.h"
#include "proto/tls.h"
#include "server/ingest/decode.h"

#define MAX_FORMATS	4096
#define MAX_CPUS	64

struct fmt {
	char system[64], name[128];
	char *text;
	size_t len;
};

struct data {
	unsigned page_size, long_size, ncpus;
	char *header_page;
	size_t header_len;
	struct fmt *fmts;
	size_t nfmts;
	uint8_t *pages;			/* all pages, all CPUs */
	uint16_t *page_cpu;
	uint64_t *page_events;
	size_t npages;
	uint64_t span;			/* newest - oldest page timestamp, + 1 ms */
};

struct opts {
	char host[256], port[16];
	struct tls_files files;
	const char *dir, *name;
	char *exact_host;	/* --host, --host-file: every agent's host name */
	unsigned agents;
	uint64_t pages;
	uint64_t events;	/* --events: total over all agents, sets pages */
	const char *bind;	/* --bind: source address */
	unsigned page_size;	/* --page-size: declared in HELLO; 0: the capture's */
	unsigned page_bytes;	/* --page-bytes: ship empty pages of this size */
	bool stall;		/* --stall */
	unsigned idle_sockets;	/* --idle-sockets */
	unsigned ncpus;		/* --ncpus: declared in HELLO; 0: the capture's */
	bool hold;		/* --hold */
	unsigned meta;		/* --meta: rounds of metadata */
};

struct agent {
	pthread_t th;
	unsigned idx;
	const struct opts *o;
	const struct data *d;
	SSL_CTX *ctx;
	uint64_t shipped, stored;
	bool journaled;		/* DONE: the pages are in the collector's journal */
	int err;
	char why[256];
};

static char *slurp(const char *dir, const char *name, size_t *len)
{
	char path[4096];
	FILE *f;
	char *buf = NULL;
	long n;

	if (name[0] == '/')
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		buf[n] = 0;
		*len = (size_t)n;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static unsigned kv(const char *txt, const char *key)
{
	const char *p = strstr(txt, key);

	return p ? (unsigned)strtoul(p + strlen(key), NULL, 10) : 0;
}

static int load_formats(const char *dir, struct data *d)
{
	static const char *const dflt = "sched sched_switch sched_switch.format\n"
					"sched sched_wakeup sched_wakeup.format\n"
					"ftrace print print.format\n";
	size_t len;
	char *list = slurp(dir, "formats.txt", &len), *line, *save = NULL;
	char file[256];
	int ret = 0;

	if (!list)
		list = strdup(dflt);
	d->fmts = calloc(MAX_FORMATS, sizeof(*d->fmts));
	for (line = strtok_r(list, "\n", &save);
	     line && d->nfmts < MAX_FORMATS; line = strtok_r(NULL, "\n", &save)) {
		struct fmt *f = &d->fmts[d->nfmts];

		if (sscanf(line, "%63s %127s %255s", f->system, f->name, file) != 3)
			continue;
		f->text = slurp(dir, file, &f->len);
		if (!f->text) {
			fprintf(stderr, "loadgen: %s/%s: %s\n", dir, file, strerror(errno));
			ret = -1;
			break;
		}
		d->nfmts++;
	}
	free(list);
	return ret == 0 && d->nfmts ? 0 : -1;
}

static int count_cb(void *ctx, const struct decode_event *ev)
{
	(*(uint64_t *)ctx)++;
	return 0;
}

/* Count each page's events with the collector's decoder. */
static int count_events(struct data *d, const struct proto_hello *h)
{
	struct decoder *dec;
	const struct decode_type *t;
	int ret = decoder_new(h, &dec);

	for (size_t i = 0; ret == 0 && i < d->nfmts; i++)
		ret = decoder_format(dec, d->fmts[i].system, d->fmts[i].name, d->fmts[i].text,
				     d->fmts[i].len, &t);
	for (size_t i = 0; ret == 0 && i < d->npages; i++)
		ret = decoder_page(dec, d->page_cpu[i], d->pages + i * d->page_size,
				   d->page_size, count_cb, &d->page_events[i], NULL);
	decoder_free(dec);
	return ret;
}

static int load_pages(const char *dir, struct data *d)
{
	uint64_t ts, lo = UINT64_MAX, hi = 0;

	for (unsigned c = 0; c < d->ncpus && c < MAX_CPUS; c++) {
		char name[32];
		size_t len = 0, n;
		uint8_t *raw;

		snprintf(name, sizeof(name), "cpu%u.raw", c);
		raw = (uint8_t *)slurp(dir, name, &len);
		n = raw ? len / d->page_size : 0;
		d->pages = realloc(d->pages, (d->npages + n) * d->page_size);
		d->page_cpu = realloc(d->page_cpu, (d->npages + n) * sizeof(*d->page_cpu));
		memcpy(d->pages + d->npages * d->page_size, raw, n * d->page_size);
		for (size_t i = 0; i < n; i++)
			d->page_cpu[d->npages + i] = (uint16_t)c;
		d->npages += n;
		free(raw);
	}
	d->page_events = calloc(d->npages + 1, sizeof(*d->page_events));
	for (size_t i = 0; i < d->npages; i++) {
		memcpy(&ts, d->pages + i * d->page_size, sizeof(ts));
		lo = ts < lo ? ts : lo;
		hi = ts > hi ? ts : hi;
	}
	d->span = (hi > lo ? hi - lo : 0) + 1000000;
	return d->npages ? 0 : -1;
}

static void hello_of(const struct data *d, unsigned idx, const char *prefix,
		     struct proto_hello *h, char *host, char *mid)
{
	struct timespec rt, mono;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	snprintf(host, 64, "%s-%u", prefix, idx);
	snprintf(mid, 64, "%032x", idx + 1);
	*h = (struct proto_hello){
		.version = PROTO_VERSION, .host = host, .machine_id = mid, .boot_id = mid,
		.kernel = "replay", .trace_clock = "mono", .ncpus = d->ncpus,
		.page_size = d->page_size, .long_size = d->long_size,
		.clock = { .trace_ns = (uint64_t)mono.tv_sec * 1000000000 + mono.tv_nsec,
			   .realtime_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec },
	};
}

static int load(const struct opts *o, struct data *d)
{
	struct proto_hello h;
	char host[64], mid[64];
	size_t len;
	char *txt = slurp(o->dir, "capture.txt", &len);

	if (!txt)
		return -1;
	d->page_size = kv(txt, "page_size=");
	d->long_size = kv(txt, "long_size=");
	d->ncpus = kv(txt, "ncpus=");
	free(txt);
	d->header_page = slurp(o->dir, "header_page", &d->header_len);
	if (!d->page_size || !d->ncpus || !d->header_page || load_formats(o->dir, d) < 0 ||
	    load_pages(o->dir, d) < 0)
		return -1;
	hello_of(d, 0, "x", &h, host, mid);
	return count_events(d, &h);
}

static void data_free(struct data *d)
{
	for (size_t i = 0; i < d->nfmts; i++)
		free(d->fmts[i].text);
	free(d->fmts);
	free(d->header_page);
	free(d->pages);
	free(d->page_cpu);
	free(d->page_events);
}

/* ---- one agent ---- */

/* Bind @fd to --bind's address (IPv4), if given. */
static int bind_source(const struct opts *o, int fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };

	if (!o->bind)
		return 0;
	if (inet_pton(AF_INET, o->bind, &sa.sin_addr) != 1)
		return -1;
	return bind(fd, (struct sockaddr *)&sa, sizeof(sa));
}

static int tcp_connect(const struct opts *o)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int fd = -1, one = 1;

	if (getaddrinfo(o->host, o->port, &hints, &ai) != 0)
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd >= 0 && (bind_source(o, fd) < 0 ||
			connect(fd, ai->ai_addr, ai->ai_addrlen) < 0)) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* --stall: a written frame is then mostly in the collector, not in our kernel */
	if (fd >= 0 && o->stall)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){ 32768 }, sizeof(int));
	return fd;
}

static int ssl_write_all(SSL *ssl, const void *p, size_t len)
{
	while (len) {
		int n = SSL_write(ssl, p, (int)len);

		if (n <= 0)
			return -1;
		p = (const uint8_t *)p + n;
		len -= (size_t)n;
	}
	return 0;
}

static int ssl_read_all(SSL *ssl, void *p, size_t len)
{
	while (len) {
		int n = SSL_read(ssl, p, (int)len);

		if (n <= 0)
			return -1;
		p = (uint8_t *)p + n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_msg(SSL *ssl, const struct proto_msg *m)
{
	struct proto_buf b;
	int ret;

	proto_buf_init(&b);
	ret = proto_msg_encode(m, &b);
	if (ret == 0)
		ret = ssl_write_all(ssl, b.data, b.len);
	proto_buf_free(&b);
	return ret;
}

/*
 * --host/--host-file: HELLO @m with host @host, whatever its length. Our
 * encoder refuses a host over PROTO_MAX_HOST, as it should, so HELLO is
 * encoded with a marker for a host and the marker's msgpack string is
 * replaced by a str32 holding @host: a hostile agent's HELLO.
 */
static int send_hello_as(SSL *ssl, struct proto_msg *m, const char *host)
{
	static const char mark[] = "\x01loadgen-host\x01";
	size_t hlen = strlen(host), off, tail;
	struct proto_buf b, out;
	struct frame_hdr h = { .type = FRAME_MSG };
	uint8_t str32[5] = { 0xdb, (uint8_t)(hlen >> 24), (uint8_t)(hlen >> 16),
			     (uint8_t)(hlen >> 8), (uint8_t)hlen };
	const uint8_t *at;
	int ret;

	m->hello.host = (char *)mark;
	proto_buf_init(&b);
	proto_buf_init(&out);
	ret = proto_msg_encode(m, &b);
	at = ret == 0 ? memmem(b.data, b.len, mark, sizeof(mark) - 1) : NULL;
	if (!at) {
		ret = -1;
		goto out;
	}
	off = (size_t)(at - b.data) - 1;	/* the fixstr byte */
	tail = b.len - off - 1 - (sizeof(mark) - 1);
	h.len = (uint32_t)(b.len - FRAME_HDR_SIZE - 1 - (sizeof(mark) - 1) + 5 + hlen);
	ret = proto_buf_append(&out, b.data, off);
	if (ret == 0)
		ret = proto_buf_append(&out, str32, sizeof(str32));
	if (ret == 0)
		ret = proto_buf_append(&out, host, hlen);
	if (ret == 0)
		ret = proto_buf_append(&out, at + sizeof(mark) - 1, tail);
	if (ret == 0) {
		frame_hdr_pack(&h, out.data);
		ret = ssl_write_all(ssl, out.data, out.len);
	}
out:
	proto_buf_free(&b);
	proto_buf_free(&out);
	return ret;
}

static int recv_msg(SSL *ssl, struct proto_msg *m)
{
	uint8_t hdr[FRAME_HDR_SIZE], *payload;
	struct frame_hdr h;
	int ret;

	if (ssl_read_all(ssl, hdr, sizeof(hdr)) < 0 || frame_hdr_parse(hdr, sizeof(hdr), &h) < 0)
		return -1;
	payload = malloc(h.len + 1);
	ret = payload && ssl_read_all(ssl, payload, h.len) == 0 ?
	      proto_msg_decode(payload, h.len, m) : -1;
	free(payload);
	return ret;
}

static int send_setup(struct agent *a, SSL *ssl)
{
	const struct data *d = a->d;
	struct proto_msg m = { .type = MSG_HELLO };
	char host[64], mid[64];
	int ret;

	hello_of(d, a->idx, a->o->name, &m.hello, host, mid);
	if (a->o->page_size)
		m.hello.page_size = a->o->page_size;
	if (a->o->ncpus)
		m.hello.ncpus = a->o->ncpus;
	ret = a->o->exact_host ? send_hello_as(ssl, &m, a->o->exact_host) : send_msg(ssl, &m);
	if (ret < 0)
		snprintf(a->why, sizeof(a->why), "cannot send HELLO");
	if (ret == 0 && (ret = recv_msg(ssl, &m)) == 0) {
		ret = m.type == MSG_WELCOME ? 0 : -1;
		if (m.type == MSG_ERROR)
			snprintf(a->why, sizeof(a->why), "refused: %s", m.error.text);
		proto_msg_free(&m);
	}
	m = (struct proto_msg){ .type = MSG_HEADER_PAGE,
				.header_page = { d->header_page, d->header_len } };
	if (ret == 0)
		ret = send_msg(ssl, &m);
	for (size_t i = 0; ret == 0 && i < d->nfmts; i++) {
		m = (struct proto_msg){ .type = MSG_FORMAT, .format = {
			(char *)d->fmts[i].system, (char *)d->fmts[i].name, d->fmts[i].text,
			d->fmts[i].len } };
		ret = send_msg(ssl, &m);
	}
	return ret;
}

/* One --meta round @r: CMDLINES, SYMBOLS and PRINTK, all new. */
static int send_meta_round(SSL *ssl, unsigned idx, unsigned r)
{
	enum { PIDS = 4096, LINES = 1024 };
	struct proto_cmdline *cl = calloc(PIDS, sizeof(*cl));
	char *text = malloc(LINES * 96);
	struct proto_msg m = { .type = MSG_CMDLINES };
	size_t len = 0;
	int ret = cl && text ? 0 : -1;

	for (unsigned i = 0; ret == 0 && i < PIDS; i++) {
		cl[i].pid = (int32_t)(100000 + r * PIDS + i);
		snprintf(cl[i].comm, sizeof(cl[i].comm), "m%u.%u", r % 1000, i);
	}
	m.cmdlines.items = cl;
	m.cmdlines.count = PIDS;
	if (ret == 0)
		ret = send_msg(ssl, &m);
	for (unsigned i = 0; ret == 0 && i < LINES; i++)
		len += (size_t)sprintf(text + len, "%x 10 meta_sym_%u_%u_%u\n",
				       0x10000000u + (r * LINES + i) * 16, idx, r, i);
	m = (struct proto_msg){ .type = MSG_SYMBOLS,
				.symbols = { .group = 0, .text = text, .len = len } };
	if (ret == 0)
		ret = send_msg(ssl, &m);
	len = 0;
	for (unsigned i = 0; ret == 0 && i < LINES; i++)
		len += (size_t)sprintf(text + len, "0x%x : \"meta %u %u %%d\\n\"\n",
				       0x20000000u + (r * LINES + i) * 8, r, i);
	m = (struct proto_msg){ .type = MSG_PRINTK, .printk = { .text = text, .len = len } };
	if (ret == 0)
		ret = send_msg(ssl, &m);
	free(cl);
	free(text);
	return ret;
}

/* --hold: say so, then read until the collector closes. */
static int hold(struct agent *a, SSL *ssl)
{
	struct proto_msg m;

	printf("loadgen: agent %u: holding\n", a->idx);
	fflush(stdout);
	while (recv_msg(ssl, &m) == 0)
		proto_msg_free(&m);
	return 0;
}

/* --page-bytes: an empty page of B bytes (the capture's time stamp). */
static void empty_page(const struct data *d, size_t i, uint8_t *pg, size_t len)
{
	memset(pg, 0, len);
	memcpy(pg, d->pages + i * d->page_size, 8);
}

/*
 * --stall: all of a page frame but its last byte, then wait for the
 * collector to close; a->why gets its ERROR text.
 */
static int send_stall(struct agent *a, SSL *ssl)
{
	unsigned len = a->o->page_size ? a->o->page_size : a->d->page_size;
	struct frame_hdr h = { .type = FRAME_PAGE, .stream = 0, .len = len, .seq = 1 };
	uint8_t *buf = calloc(1, FRAME_HDR_SIZE + len);
	struct proto_msg m;
	int ret = buf ? 0 : -1;

	if (ret == 0) {
		frame_hdr_pack(&h, buf);
		ret = ssl_write_all(ssl, buf, FRAME_HDR_SIZE + len - 1);
	}
	free(buf);
	if (ret < 0)
		return ret;
	printf("loadgen: agent %u: stalled\n", a->idx);
	fflush(stdout);
	snprintf(a->why, sizeof(a->why), "closed without ERROR");
	while (recv_msg(ssl, &m) == 0) {
		if (m.type == MSG_ERROR)
			snprintf(a->why, sizeof(a->why), "closed: %s", m.error.text);
		proto_msg_free(&m);
	}
	printf("loadgen: agent %u: %s\n", a->idx, a->why);
	fflush(stdout);
	return 0;
}

static int send_pages(struct agent *a, SSL *ssl)
{
	const struct data *d = a->d;
	uint64_t seq[MAX_CPUS] = { 0 };
	size_t plen = a->o->page_bytes ? a->o->page_bytes : d->page_size;
	size_t flen = FRAME_HDR_SIZE + plen, batch = 16, n = 0;
	uint8_t *buf = malloc(flen * batch);
	int ret = buf ? 0 : -1;

	for (uint64_t p = 0; ret == 0 && p < a->o->pages; p++) {
		size_t i = (size_t)((p + a->idx * 7) % d->npages);
		struct frame_hdr h = { .type = FRAME_PAGE, .stream = d->page_cpu[i],
				       .len = (uint32_t)plen, .seq = ++seq[d->page_cpu[i]] };
		uint8_t *pg = buf + n * flen + FRAME_HDR_SIZE;
		uint64_t ts;

		frame_hdr_pack(&h, buf + n * flen);
		if (a->o->page_bytes)
			empty_page(d, i, pg, plen);
		else
			memcpy(pg, d->pages + i * d->page_size, d->page_size);
		/* each replay round is later in time, as a live host's pages are */
		memcpy(&ts, pg, sizeof(ts));
		ts += (p + a->idx * 7) / d->npages * d->span;
		memcpy(pg, &ts, sizeof(ts));
		a->shipped += a->o->page_bytes ? 0 : d->page_events[i];
		if (++n == batch || p + 1 == a->o->pages) {
			ret = ssl_write_all(ssl, buf, n * flen);
			n = 0;
		}
	}
	free(buf);
	return ret;
}

/*
 * Connect and handshake as an agent does: a collector over its handshake
 * caps closes at once, and the agent tries again after a growing, jittered
 * delay (here 10 ms doubling to 640 ms, 40 tries). Return: 0 with *@fd and
 * *@ssl set; -1.
 */
static int agent_connect(struct agent *a, int *fd, SSL **ssl)
{
	unsigned delay = 10;

	for (int i = 0; i < 40; i++) {
		*fd = tcp_connect(a->o);
		*ssl = *fd >= 0 ? SSL_new(a->ctx) : NULL;
		if (*ssl && SSL_set_fd(*ssl, *fd) == 1 && SSL_connect(*ssl) == 1)
			return 0;
		SSL_free(*ssl);
		*ssl = NULL;
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		usleep((delay / 2 + (unsigned)random() % (delay / 2 + 1)) * 1000);
		delay = delay < 640 ? delay * 2 : delay;
	}
	return -1;
}

static void *agent_main(void *arg)
{
	struct agent *a = arg;
	struct proto_msg m = { .type = MSG_BYE };
	int fd = -1;
	SSL *ssl = NULL;

	a->err = -1;
	if (agent_connect(a, &fd, &ssl) < 0) {
		snprintf(a->why, sizeof(a->why), "connect/TLS failed");
		goto out;
	}
	if (send_setup(a, ssl) < 0) {
		if (!a->why[0])
			snprintf(a->why, sizeof(a->why), "sending failed");
		goto out;
	}
	if (a->o->stall) {
		a->err = send_stall(a, ssl);
		goto out;
	}
	for (unsigned r = 0; r < a->o->meta; r++)
		if (send_meta_round(ssl, a->idx, r) < 0) {
			snprintf(a->why, sizeof(a->why), "sending metadata failed");
			goto out;
		}
	if (send_pages(a, ssl) < 0) {
		snprintf(a->why, sizeof(a->why), "sending failed");
		goto out;
	}
	if (a->o->hold) {
		a->err = hold(a, ssl);
		goto out;
	}
	m.bye.pages = a->o->pages;
	m.bye.events = a->shipped;
	if (send_msg(ssl, &m) < 0 || recv_msg(ssl, &m) < 0 || m.type != MSG_DONE) {
		snprintf(a->why, sizeof(a->why), "no DONE");
		goto out;
	}
	a->stored = m.done.events;
	/* a journaling collector answers before storing: every page must be in */
	a->journaled = m.done.journaled;
	if (a->journaled && m.done.pages != a->o->pages) {
		snprintf(a->why, sizeof(a->why), "DONE covers %" PRIu64 " of %" PRIu64 " pages",
			 m.done.pages, a->o->pages);
		goto out;
	}
	a->err = 0;
out:
	if (ssl) {
		SSL_shutdown(ssl);
		SSL_free(ssl);
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* ---- --idle-sockets ---- */

/*
 * Open @o->idle_sockets connections one after the other (each is open
 * when the next connects) that send nothing; print each one's closing as
 * the collector closes it. Return: 0 once all are closed.
 */
static int idle_sockets(const struct opts *o)
{
	unsigned n = o->idle_sockets, left = n;
	struct pollfd *p = calloc(n, sizeof(*p));
	char b[256];

	for (unsigned i = 0; p && i < n; i++) {
		p[i].fd = tcp_connect(o);
		p[i].events = POLLIN;
		if (p[i].fd < 0) {
			fprintf(stderr, "loadgen: socket %u: connect failed\n", i);
			return 1;
		}
		printf("loadgen: socket %u open\n", i);
		fflush(stdout);
	}
	while (p && left && poll(p, n, -1) > 0) {
		for (unsigned i = 0; i < n; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			if (read(p[i].fd, b, sizeof(b)) > 0)
				continue;
			printf("loadgen: socket %u closed\n", i);
			fflush(stdout);
			close(p[i].fd);
			p[i].fd = -1;
			left--;
		}
	}
	free(p);
	return left ? 1 : 0;
}

/* ---- main ---- */

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "connect", 1, NULL, 'C' }, { "cert", 1, NULL, 'c' }, { "key", 1, NULL, 'k' },
		{ "ca", 1, NULL, 'a' }, { "data", 1, NULL, 'd' }, { "agents", 1, NULL, 'n' },
		{ "pages", 1, NULL, 'p' }, { "name", 1, NULL, 'N' }, { "events", 1, NULL, 'e' },
		{ "bind", 1, NULL, 'b' }, { "page-size", 1, NULL, 'S' },
		{ "page-bytes", 1, NULL, 'B' }, { "stall", 0, NULL, 's' },
		{ "idle-sockets", 1, NULL, 'I' }, { "host", 1, NULL, 'H' },
		{ "host-file", 1, NULL, 'F' }, { "ncpus", 1, NULL, 'U' },
		{ "hold", 0, NULL, 'L' }, { "meta", 1, NULL, 'M' },
		{ 0 }
	};
	const char *colon;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'C':
			colon = strrchr(optarg, ':');
			if (!colon)
				return -1;
			snprintf(o->host, sizeof(o->host), "%.*s", (int)(colon - optarg), optarg);
			snprintf(o->port, sizeof(o->port), "%s", colon + 1);
			break;
		case 'c': o->files.cert = optarg; break;
		case 'k': o->files.key = optarg; break;
		case 'a': o->files.ca = optarg; break;
		case 'd': o->dir = optarg; break;
		case 'n': o->agents = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'p': o->pages = strtoull(optarg, NULL, 10); break;
		case 'N': o->name = optarg; break;
		case 'e': o->events = strtoull(optarg, NULL, 10); break;
		case 'b': o->bind = optarg; break;
		case 'S': o->page_size = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'B': o->page_bytes = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': o->stall = true; break;
		case 'I': o->idle_sockets = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'U': o->ncpus = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'L': o->hold = true; break;
		case 'M': o->meta = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'H': free(o->exact_host); o->exact_host = strdup(optarg); break;
		case 'F': {
			size_t n;

			free(o->exact_host);
			o->exact_host = slurp(".", optarg, &n);
			if (!o->exact_host || strlen(o->exact_host) != n)
				return -1;
			break;
		}
		default: return -1;
		}
	}
	if (o->idle_sockets)
		return o->host[0] ? 0 : -1;
	if (o->page_bytes && (o->page_bytes < 16 || o->page_bytes > FRAME_MAX_PAYLOAD))
		return -1;
	return o->host[0] && o->files.cert && o->files.key && o->files.ca && o->dir &&
	       o->agents && o->pages ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct opts o = { .agents = 1, .pages = 1000, .name = "loadgen" };
	struct data d = { 0 };
	struct agent *a;
	struct timespec t0, t1;
	uint64_t shipped = 0, stored = 0;
	char err[512];
	SSL_CTX *ctx;
	double secs;
	int bad = 0;

	signal(SIGPIPE, SIG_IGN);	/* a collector may close at once: EPIPE */
	if (parse_opts(argc, argv, &o) < 0) {
		fprintf(stderr, "usage: loadgen --connect HOST:PORT --cert F --key F --ca F"
				" --data DIR [--agents N] [--pages P] [--name PREFIX]\n"
				"               [--bind ADDR] [--page-size N [--page-bytes B]]"
				" [--stall]\n"
				"               [--ncpus N] [--hold] [--meta N]\n"
				"               [--host NAME | --host-file FILE]\n"
				"       loadgen --connect HOST:PORT [--bind ADDR] --idle-sockets N\n");
		return 2;
	}
	if (o.idle_sockets)
		return idle_sockets(&o);
	if (load(&o, &d) < 0) {
		fprintf(stderr, "loadgen: cannot load the capture in %s\n", o.dir);
		return 2;
	}
	if (o.events) {		/* pages per agent for about this many events in all */
		uint64_t per_page = 0;

		for (size_t i = 0; i < d.npages; i++)
			per_page += d.page_events[i];
		per_page = per_page / d.npages ? per_page / d.npages : 1;
		o.pages = (o.events / o.agents + per_page - 1) / per_page;
	}
	if (tls_ctx_new(TLS_ROLE_CLIENT, &o.files, &ctx, err, sizeof(err)) < 0) {
		fprintf(stderr, "loadgen: %s\n", err);
		return 2;
	}
	a = calloc(o.agents, sizeof(*a));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; i < o.agents; i++) {
		a[i] = (struct agent){ .idx = i, .o = &o, .d = &d, .ctx = ctx };
		pthread_create(&a[i].th, NULL, agent_main, &a[i]);
	}
	for (unsigned i = 0; i < o.agents; i++) {
		pthread_join(a[i].th, NULL);
		shipped += a[i].shipped;
		stored += a[i].stored;
		if (a[i].err || (a[i].stored != a[i].shipped && !a[i].journaled)) {
			bad++;
			fprintf(stderr, "loadgen: agent %u: %s shipped=%" PRIu64 " stored=%" PRIu64 "\n",
				i, a[i].err ? a[i].why : "mismatch", a[i].shipped, a[i].stored);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("loadgen: agents=%u pages=%" PRIu64 " shipped_events=%" PRIu64
	       " stored_events=%" PRIu64 " failed=%d seconds=%.3f events_per_s=%.0f\n",
	       o.agents, o.pages * o.agents, shipped, stored, bad, secs, (double)stored / secs);
	SSL_CTX_free(ctx);
	free(a);
	free(o.exact_host);
	data_free(&d);
	return bad ? 1 : 0;
}
