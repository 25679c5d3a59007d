/*
 * import.c - traceq --import (see import.h and proto/PROTOCOL.md, "Import").
 *
 * What goes to the collector, in order: BEGIN with a HELLO made from the
 * file (its CPUs, page size, long size, endianness, trace clock, kernel
 * release from the UNAME option; a clock sample that puts the file's last
 * page at the file's modification time, its only wall-clock hint, taken at
 * its first page, which is when its kernel symbols hold from), then
 * the header page, every event format, the saved cmdlines (pid comm), the
 * kallsyms' text symbols (as an agent sends /proc/kallsyms), the printk
 * formats (as an agent sends printk_formats), then the pages CPU by CPU,
 * numbered from 1, in batches, then END.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include <openssl/evp.h>

#include "common/tc_error.h"
#include "proto/frame.h"
#include "proto/printk.h"
#include "proto/qimport.h"
#include "proto/symbols.h"
#include "traceq/import.h"
#include "traceq/tracedat.h"

struct imp {
	const char *path;
	const char *buffer;	/* --buffer NAME, or NULL */
	FILE *f;
	struct tracedat *td;
	const struct tracedat_info *in;
	import_call_fn call;
	void *ctx;
	uint64_t id;
	bool sym_modules;	/* the collector takes symbols' modules (BEGIN said) */
	char digest[QIMPORT_DIGEST_LEN + 1];
	uint64_t pages, first_ts, last_ts;	/* pages' header times (trace clock) */
	int64_t mtime_ns;
	char err[1024];
};

/*
 * @path opened for reading, a regular file: a FIFO (whose open() waits for
 * a writer), a device or a directory is refused before anything is read.
 * It is opened O_NONBLOCK, so that a FIFO's open() returns, and fstat()ed
 * before the first read. Return: the stream; NULL (said why).
 */
static FILE *open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	FILE *f;

	if (fd < 0) {
		fprintf(stderr, "traceq: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		fprintf(stderr, "traceq: %s: %s\n", path, strerror(errno));
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "traceq: %s: not a regular file (a FIFO, device or directory):"
			" --import reads a trace-cmd recording from a file\n", path);
		close(fd);
		return NULL;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0 || !(f = fdopen(fd, "rb"))) {
		fprintf(stderr, "traceq: %s: %s\n", path, strerror(errno));
		close(fd);
		return NULL;
	}
	return f;
}

/* Open (again) the file's reader. Return: 0; 2 (said why). */
static int open_file(struct imp *m)
{
	tracedat_close(m->td);
	m->td = NULL;
	if (m->f)
		fclose(m->f);
	m->f = open_regular(m->path);
	if (!m->f)
		return 2;
	if (tracedat_open_buffer(m->f, m->path, m->buffer, &m->td, m->err, sizeof(m->err)) < 0) {
		fprintf(stderr, "traceq: cannot import: %s\n", m->err);
		return 2;
	}
	m->in = tracedat_info(m->td);
	return 0;
}

/* The page header's timestamp. */
static uint64_t page_ts(const struct imp *m, const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[m->in->big_endian ? 7 - i : i] << (8 * i);
	return v;
}

/* Pass 1: the digest, every page read, the last page's time. Return: 0; 1; 2. */
static int check_file(struct imp *m)
{
	unsigned char md[EVP_MAX_MD_SIZE], buf[65536];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	const uint8_t *page;
	unsigned int mdlen = 0;
	struct stat st;
	uint32_t cpu;
	size_t len, n;
	int ret;

	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(ctx);
		return 1;
	}
	rewind(m->f);
	while ((n = fread(buf, 1, sizeof(buf), m->f)) > 0)
		EVP_DigestUpdate(ctx, buf, n);
	/* one file, several instances: each is an import of its own */
	if (m->in->nbuffers > 1) {
		EVP_DigestUpdate(ctx, "\0buffer\0", 8);
		EVP_DigestUpdate(ctx, m->in->buffer, strlen(m->in->buffer));
	}
	ret = ferror(m->f) || !EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	if (ret || fstat(fileno(m->f), &st) < 0) {
		fprintf(stderr, "traceq: %s: cannot read it\n", m->path);
		return 2;
	}
	for (unsigned i = 0; i < mdlen && i < QIMPORT_DIGEST_LEN / 2; i++)
		sprintf(m->digest + 2 * i, "%02x", md[i]);
	m->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	while ((ret = tracedat_next_page(m->td, &cpu, &page, &len, m->err, sizeof(m->err))) > 0) {
		uint64_t ts = len >= 8 ? page_ts(m, page) : 0;

		if (ts && (!m->first_ts || ts < m->first_ts))
			m->first_ts = ts;
		if (ts > m->last_ts)
			m->last_ts = ts;
		m->pages++;
	}
	if (ret < 0) {
		fprintf(stderr, "traceq: cannot import: %s; nothing was sent\n", m->err);
		return 2;
	}
	return open_file(m);
}

/*
 * Whether the collector's error @code is its own failure (exit 1: its
 * database, memory, a shutdown, a timeout, the import it dropped), not a
 * refusal of this file or this asker (exit 2, as the man page says: the
 * right to import, a live host's name, a HELLO, format or page of the file
 * it does not take).
 */
static bool collector_failed(int code)
{
	return code == TC_ERR_DB || code == TC_ERR_DB_SCHEMA || code == TC_ERR_TIMEOUT ||
	       code == TC_ERR_PEER_CLOSED || code == -ENOMEM || code == -ESHUTDOWN ||
	       code == -EIO || code == -ENOSPC || code == -ENOENT || code == -ECANCELED;
}

/*
 * Send @req; a refusal or failure is said on stderr.
 * Return: 0 and *@rep (ok); 1 (transport, collector); 2 (refused).
 */
static int send_req(struct imp *m, const struct qimport_request *req, struct qmsg_reply *rep)
{
	struct proto_buf b;
	int ret;

	proto_buf_init(&b);
	ret = qimport_request_encode(req, &b);
	if (ret < 0) {
		proto_buf_free(&b);
		fprintf(stderr, "traceq: %s\n", tc_strerror(ret));
		return 1;
	}
	memset(rep, 0, sizeof(*rep));
	ret = m->call(m->ctx, &b, rep);
	proto_buf_free(&b);
	if (ret)
		return 1;
	if (rep->ok)
		return 0;
	fprintf(stderr, "traceq: the collector refused the import: %s\n",
		rep->error ? rep->error : "?");
	ret = collector_failed(rep->code) ? 1 : 2;
	qmsg_reply_free(rep);
	return ret;
}

/* Send control message @msg of import m->id. */
static int send_msg(struct imp *m, const struct proto_msg *msg)
{
	struct qimport_request r = { .op = QOP_IMPORT_MSG, .id = m->id };
	struct qmsg_reply rep;
	struct proto_buf b;
	int ret;

	proto_buf_init(&b);
	if ((ret = proto_msg_encode(msg, &b)) < 0) {
		proto_buf_free(&b);
		fprintf(stderr, "traceq: cannot import: its %s message: %s\n",
			proto_msg_name(msg->type), tc_strerror(ret));
		return ret == -ENOMEM ? 1 : 2;	/* else the file's, over the protocol's limits */
	}
	r.msg = b.data + FRAME_HDR_SIZE;	/* the payload, as a frame carries it */
	r.msg_len = b.len - FRAME_HDR_SIZE;
	ret = send_req(m, &r, &rep);
	proto_buf_free(&b);
	if (ret == 0)
		qmsg_reply_free(&rep);
	return ret;
}

/* The kernel release from UNAME ("Linux HOST RELEASE MACHINE"); "" if none. */
static void kernel_of(const char *uname, char *buf, size_t len)
{
	char a[64], b[256], c[256];

	buf[0] = 0;
	if (sscanf(uname, "%63s %255s %255s", a, b, c) == 3)
		snprintf(buf, len, "%s", c);
}

static int begin(struct imp *m, const char *name, bool force, bool *stored)
{
	char kernel[PROTO_MAX_NAME + 1], *file = strdup(m->path);
	struct proto_msg h = { .type = MSG_HELLO };
	struct qimport_request r = { .op = QOP_IMPORT_BEGIN, .force = force,
				     .digest = m->digest, .sym_modules = true };
	struct qmsg_reply rep;
	struct proto_buf b;
	int ret;

	kernel_of(m->in->uname, kernel, sizeof(kernel));
	h.hello = (struct proto_hello){
		.version = PROTO_VERSION, .host = (char *)name, .machine_id = "import",
		.boot_id = "import", .kernel = kernel, .trace_clock = (char *)m->in->clock,
		.ncpus = m->in->ncpus, .page_size = m->in->page_size,
		.long_size = m->in->long_size, .big_endian = m->in->big_endian,
		/*
		 * The sample is the first page's time: the collector takes the
		 * HELLO's time as when the kernel symbols came (programs.since),
		 * and names no address of an event before it.
		 */
		.clock = { m->first_ts, m->mtime_ns - (int64_t)(m->last_ts - m->first_ts) },
	};
	proto_buf_init(&b);
	ret = file ? proto_msg_encode(&h, &b) : -ENOMEM;
	if (ret < 0) {
		fprintf(stderr, "traceq: cannot import: its HELLO: %s\n", tc_strerror(ret));
		ret = ret == -ENOMEM ? 1 : 2;
		goto out;
	}
	r.file = basename(file);
	r.msg = b.data + FRAME_HDR_SIZE;
	r.msg_len = b.len - FRAME_HDR_SIZE;
	if ((ret = send_req(m, &r, &rep)) != 0)
		goto out;
	if (rep.nrows != 1 || rep.ncols < 2 || rep.ncols > 3 || rep.vals[0].kind != QV_UINT ||
	    rep.vals[1].kind != QV_STR) {
		fprintf(stderr, "traceq: bad reply from the collector\n");
		ret = 1;
	} else {
		m->id = rep.vals[0].u;
		*stored = !strcmp(rep.vals[1].s.p, "stored");
		/* a third column: the collector takes symbols' modules */
		m->sym_modules = rep.ncols == 3 && rep.vals[2].kind == QV_UINT &&
				 rep.vals[2].u == 1;
	}
	qmsg_reply_free(&rep);
out:
	proto_buf_free(&b);
	free(file);
	return ret;
}

static int send_formats(struct imp *m)
{
	struct proto_msg msg = { .type = MSG_HEADER_PAGE };
	int ret;

	msg.header_page = (struct proto_text){ .text = (char *)m->in->header_page,
					       .len = m->in->header_page_len };
	if ((ret = send_msg(m, &msg)) != 0)
		return ret;
	for (size_t i = 0; i < m->in->nformats; i++) {
		const struct tracedat_format *f = &m->in->formats[i];

		msg = (struct proto_msg){ .type = MSG_FORMAT };
		msg.format = (struct proto_format){ (char *)f->system, (char *)f->name,
						    (char *)f->text, f->len, 0 };
		if ((ret = send_msg(m, &msg)) != 0)
			return ret;
	}
	return 0;
}

/* saved_cmdlines text ("PID COMM" lines) as CMDLINES messages. */
static int send_cmdlines(struct imp *m)
{
	struct proto_msg msg = { .type = MSG_CMDLINES };
	struct proto_cmdline *items = calloc(PROTO_MAX_CMDLINES, sizeof(*items));
	const char *p = m->in->cmdlines, *end = p + m->in->cmdlines_len;
	uint32_t n = 0;
	int ret = 0;

	if (!items)
		return 1;
	while (ret == 0 && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[64];
		int pid;

		if (len < sizeof(line)) {
			memcpy(line, p, len);
			line[len] = 0;
			if (sscanf(line, "%d %15[^\n]", &pid, items[n].comm) == 2 && pid >= 0) {
				items[n].pid = pid;
				n++;
			}
		}
		p += len + 1;
		if (n == PROTO_MAX_CMDLINES || (p >= end && n)) {
			msg.cmdlines = (struct proto_cmdlines){ .count = n, .items = items };
			ret = send_msg(m, &msg);
			n = 0;
		}
	}
	free(items);
	return ret;
}

/* kallsyms' text symbols as SYMBOLS (group 0), as an agent sends them. */
static int send_kallsyms(struct imp *m)
{
	struct proto_msg msg = { .type = MSG_SYMBOLS };
	const char *p = m->in->kallsyms, *end = p + m->in->kallsyms_len;
	struct proto_buf b;
	int ret = 0;

	proto_buf_init(&b);
	while (ret == 0 && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[640], name[PROTO_SYM_MAX_NAME + 1], mod[PROTO_SYM_MAX_MODULE + 1];
		uint64_t addr;

		if (len < sizeof(line)) {
			memcpy(line, p, len);
			line[len] = 0;
			if (proto_sym_kallsyms_line(line, &addr, name, mod) && addr)
				ret = proto_sym_append(&b, addr, 0, name,
						       m->sym_modules ? mod : NULL) < 0 ? 1 : 0;
		}
		p += len + 1;
		if (ret == 0 && b.len && (b.len > PROTO_SYM_CHUNK - 1024 || p >= end)) {
			msg.symbols = (struct proto_symbols){ 0, (char *)b.data, b.len };
			ret = send_msg(m, &msg);
			b.len = 0;
		}
	}
	proto_buf_free(&b);
	return ret;
}

/*
 * The recording's printk_formats (trace-cmd saves the kernel's file as it
 * is) as PRINTK messages of whole lines, as an agent sends them; lines
 * the collector would refuse are left out (proto_printk_clean()).
 */
static int send_printk(struct imp *m)
{
	struct proto_msg msg = { .type = MSG_PRINTK };
	size_t len = m->in->printk_len, off = 0, n;
	char *text;
	int ret = 0;

	if (!len)
		return 0;
	text = malloc(len);
	if (!text)
		return -ENOMEM;
	memcpy(text, m->in->printk, len);
	len = proto_printk_clean(text, len);
	while (ret == 0 && off < len && (n = proto_printk_chunk(text + off, len - off))) {
		msg.printk.text = text + off;
		msg.printk.len = n;
		ret = send_msg(m, &msg);
		off += n;
	}
	free(text);
	return ret;
}

/* Send the batch of @n pages of CPU @cpu numbered from @seq. */
static int send_batch(struct imp *m, uint32_t cpu, uint64_t seq, uint8_t *buf, size_t n)
{
	struct qimport_request r = { .op = QOP_IMPORT_PAGES, .id = m->id, .cpu = cpu,
				     .seq = seq, .pages = buf, .pages_len = n * m->in->page_size };
	struct qmsg_reply rep;
	int ret = send_req(m, &r, &rep);

	if (ret == 0)
		qmsg_reply_free(&rep);
	return ret;
}

static int send_pages(struct imp *m)
{
	size_t psz = m->in->page_size, max = QIMPORT_MAX_PAGES / psz, n = 0, len;
	uint8_t *buf = malloc(max * psz);
	uint32_t cpu, bcpu = 0;
	uint64_t seq = 1, bseq = 1;
	const uint8_t *page;
	int ret = 0, r;

	if (!buf)
		return 1;
	while (ret == 0 && (r = tracedat_next_page(m->td, &cpu, &page, &len, m->err,
						   sizeof(m->err))) > 0) {
		if (n && (cpu != bcpu || n == max)) {
			ret = send_batch(m, bcpu, bseq, buf, n);
			n = 0;
		}
		if (cpu != bcpu) {
			bcpu = cpu;
			seq = 1;
		}
		if (n == 0)
			bseq = seq;
		memset(buf + n * psz, 0, psz);
		memcpy(buf + n * psz, page, len);
		n++;
		seq++;
	}
	if (ret == 0 && r < 0) {	/* the file changed since it was checked */
		fprintf(stderr, "traceq: %s\n", m->err);
		ret = 2;
	}
	if (ret == 0 && n)
		ret = send_batch(m, bcpu, bseq, buf, n);
	free(buf);
	return ret;
}

static int end(struct imp *m, bool abort, const char *name)
{
	struct qimport_request r = { .op = QOP_IMPORT_END, .id = m->id, .abort = abort };
	struct qmsg_reply rep;
	int ret = send_req(m, &r, &rep);

	if (ret != 0 || abort) {
		if (ret == 0)
			qmsg_reply_free(&rep);
		return ret;
	}
	if (rep.nrows == 1 && rep.ncols == 2 && rep.vals[0].kind == QV_UINT &&
	    rep.vals[1].kind == QV_UINT)
		printf("imported %s as host %s: %" PRIu64 " pages, %" PRIu64 " events stored\n",
		       m->path, name, rep.vals[0].u, rep.vals[1].u);
	qmsg_reply_free(&rep);
	return 0;
}

int import_run(const char *path, const char *name, const char *buffer, bool force,
	       import_call_fn call, void *ctx)
{
	struct imp m = { .path = path, .buffer = buffer, .call = call, .ctx = ctx };
	bool stored = false;
	int ret;

	if (strlen(name) > PROTO_MAX_HOST) {
		fprintf(stderr, "traceq: --name: %zu bytes, over the %d a host name may have\n",
			strlen(name), PROTO_MAX_HOST);
		return 2;
	}
	if ((ret = open_file(&m)) != 0 || (ret = check_file(&m)) != 0 ||
	    (ret = begin(&m, name, force, &stored)) != 0)
		goto out;
	if (stored) {
		printf("%s is stored already (SHA-256 %s): nothing imported\n", path, m.digest);
		goto out;
	}
	if ((ret = send_formats(&m)) == 0 && (ret = send_cmdlines(&m)) == 0 &&
	    (ret = send_kallsyms(&m)) == 0 && (ret = send_printk(&m)) == 0 &&
	    (ret = send_pages(&m)) == 0) {
		ret = end(&m, false, name);
		goto out;
	}
	end(&m, true, name);
out:
	tracedat_close(m.td);
	if (m.f)
		fclose(m.f);
	return ret;
}
