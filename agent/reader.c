/*
 * reader.c - per-CPU ring-buffer page readers (see reader.h).
 *
 * Each CPU's per_cpu/cpuN/trace_pipe_raw is opened non-blocking and wrapped
 * in a libtracefs tracefs_cpu (tracefs_cpu_alloc_fd(): libtracefs 1.6 has
 * no way to get the descriptor of a tracefs_cpu_open() reader, and we need
 * it to poll() all CPUs at once). A read(2) of trace_pipe_raw returns one
 * sub-buffer; when the writer is still on that page the kernel copies out
 * the events written so far, so partial pages come out too and nothing
 * waits for a page to fill.
 *
 * Events are only counted here, with the page reader the collector
 * decodes with (common/page.h); decoding is the collector's job.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <tracefs.h>

#define LOG_PREFIX "reader"
#include "common/log.h"
#include "common/page.h"
#include "common/tc_error.h"
#include "agent/reader.h"

/* Pages taken from one CPU per reader_poll() before the others get a turn. */
#define READER_BATCH	256

/*
 * The kernel's meta page of a mapped per-CPU buffer, as in its UAPI header
 * linux/trace_mmap.h (Linux 6.10), which Debian 12's linux-libc-dev lacks;
 * see ring-buffer-map.rst. Only the leading fields are used.
 */
struct reader_mmap_meta {
	uint32_t meta_page_size;
	uint32_t meta_struct_len;
	uint32_t subbuf_size;
	uint32_t nr_subbufs;
	struct {
		uint64_t lost_events;
		uint32_t id;
		uint32_t read;
	} reader;
	uint64_t flags;
	uint64_t entries;
	uint64_t overrun;
	uint64_t read;
};
#define READER_IOCTL_GET_READER	_IO('R', 0x20)
/* The header of this host's pages: timestamp and a long commit word. */
#define READER_PAGE_HDR		PAGE_HDR_SIZE(sizeof(long))

struct reader_cpu {
	struct tracefs_cpu *tcpu;	/* read path */
	int fd;
	int pipe[2];			/* splice path: the page ... */
	int tee[2];			/* ... and its duplicate, read */
	uint64_t seq;
	struct reader_counts counts;
	/* mmap path */
	volatile struct reader_mmap_meta *meta;
	size_t meta_len;
	const uint8_t *map;		/* the sub-buffers */
	size_t map_len;
	int64_t cur_id;			/* reader sub-buffer being shipped, -1 */
	size_t shipped;			/* event bytes of it shipped so far */
	uint64_t last_ts;		/* timestamp of the last event shipped */
	uint8_t head[READER_PAGE_HDR];
};

struct reader {
	int ncpus;
	int nmapped;
	uint32_t page_size;
	uint8_t *buf;			/* page_size */
	reader_buf_fn buf_fn;		/* where read(2) puts pages, or NULL */
	void *buf_arg;
	struct reader_cpu *cpus;
	struct pollfd *pfds;		/* ncpus, then READER_WAKE_MAX(ncpus) wake fds */
};

/* Count the data records of the walk @it; *@ts (if not NULL) becomes
 * the running time after the last record. */
static int count_records(struct page_iter *it, uint64_t *ts)
{
	struct page_record rec = { 0 };
	int n = 0, ret;
	bool any = false;

	while ((ret = page_next_record(it, &rec)) > 0) {
		n += page_record_is_data(&rec);
		any = true;
	}
	if (ret < 0)
		return ret;
	if (ts && any)
		*ts = rec.ts;
	return n;
}

/* Check the page at @page (@len bytes, a whole page) and count its
 * events; *@pi describes the page if its header is valid, else is zero. */
static int page_count(const uint8_t *page, size_t len, struct page_info *pi)
{
	struct page_layout l = page_layout_host((uint32_t)len);
	struct page_iter it;
	int ret;

	memset(pi, 0, sizeof(*pi));
	if (len > UINT32_MAX)
		return TC_ERR_PAGE_MALFORMED;
	ret = page_check(&l, page, len, pi);
	if (ret < 0)
		return ret;
	page_iter_init(&it, &l, pi);
	return count_records(&it, NULL);
}

int reader_page_events_used(const void *page, size_t len, size_t *used)
{
	struct page_info pi;
	int events = page_count(page, len, &pi);

	*used = events < 0 ? len : pi.used;
	return events;
}

int reader_page_events(const void *page, size_t len)
{
	size_t used;

	return reader_page_events_used(page, len, &used);
}

int reader_walk_events(const uint8_t *p, size_t len, uint32_t page_size,
		       uint64_t *ts)
{
	struct page_layout l = page_layout_host(page_size);
	struct page_iter it;

	page_iter_raw(&it, &l, p, len, *ts);
	return count_records(&it, ts);
}

/* Map CPU @rc's buffer: meta page, then every sub-buffer. */
static int cpu_map(struct reader_cpu *rc, uint32_t page_size)
{
	long sys_page = sysconf(_SC_PAGESIZE);
	void *m;

	m = mmap(NULL, (size_t)sys_page, PROT_READ, MAP_SHARED, rc->fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	rc->meta = m;
	rc->meta_len = (size_t)sys_page;
	if (rc->meta->subbuf_size != page_size || !rc->meta->nr_subbufs ||
	    rc->meta->meta_page_size < (uint32_t)sys_page)
		return -EPROTO;
	rc->map_len = (size_t)rc->meta->subbuf_size * rc->meta->nr_subbufs;
	m = mmap(NULL, rc->map_len, PROT_READ, MAP_SHARED, rc->fd,
		 (off_t)rc->meta->meta_page_size);
	if (m == MAP_FAILED)
		return -errno;
	rc->map = m;
	rc->cur_id = -1;
	return 0;
}

static void cpu_unmap(struct reader_cpu *rc)
{
	if (rc->map)
		munmap((void *)rc->map, rc->map_len);
	if (rc->meta)
		munmap((void *)rc->meta, rc->meta_len);
	rc->map = NULL;
	rc->meta = NULL;
}

/* The splice path's two pipes, each big enough for a page. */
static int cpu_pipes(struct reader_cpu *rc, uint32_t size)
{
	if (pipe2(rc->pipe, O_CLOEXEC) < 0 || pipe2(rc->tee, O_CLOEXEC) < 0)
		return -errno;
	if (fcntl(rc->pipe[1], F_SETPIPE_SZ, (int)size) < 0 ||
	    fcntl(rc->tee[1], F_SETPIPE_SZ, (int)size) < 0)
		return -errno;
	return 0;
}

static void cpu_close_pipes(struct reader_cpu *rc)
{
	for (int i = 0; i < 2; i++) {
		if (rc->pipe[i] >= 0)
			close(rc->pipe[i]);
		if (rc->tee[i] >= 0)
			close(rc->tee[i]);
		rc->pipe[i] = rc->tee[i] = -1;
	}
}

static int cpu_open(struct tracefs_instance *inst, int cpu, uint32_t size,
		    enum reader_mode mode, struct reader_cpu *rc)
{
	char path[64];
	int fd, ret;

	snprintf(path, sizeof(path), "per_cpu/cpu%d/trace_pipe_raw", cpu);
	errno = 0;
	fd = tracefs_instance_file_open(inst, path, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return errno ? -errno : TC_ERR_TRACEFS;
	rc->fd = fd;
	if (mode == READER_SPLICE) {
		ret = cpu_pipes(rc, size);
		if (ret < 0)
			return ret;	/* the caller closes them */
	} else if (mode != READER_READ) {
		ret = cpu_map(rc, size);
		if (ret == 0)
			return 0;
		cpu_unmap(rc);
		log_info("cpu%d: the kernel refused to map its ring buffer (%s)%s", cpu,
			 tc_strerror(ret), mode == READER_AUTO ?
			 "; reading it with read(2) instead" : "");
		if (mode == READER_MMAP)
			return ret;	/* the caller closes rc->fd */
	}
	rc->tcpu = tracefs_cpu_alloc_fd(fd, (int)size, true);
	return rc->tcpu ? 0 : -ENOMEM;
}

static int reader_alloc(int ncpus, uint32_t page_size, struct reader **out)
{
	struct reader *r;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ncpus = ncpus;
	r->page_size = page_size;
	r->buf = calloc(1, page_size);
	r->cpus = calloc((size_t)ncpus, sizeof(*r->cpus));
	r->pfds = calloc((size_t)ncpus + READER_WAKE_MAX(ncpus), sizeof(*r->pfds));
	if (!r->buf || !r->cpus || !r->pfds) {
		reader_close(r);
		return -ENOMEM;
	}
	for (int i = 0; i < READER_WAKE_MAX(ncpus); i++)
		r->pfds[ncpus + i] = (struct pollfd){ .fd = -1, .events = POLLIN };
	*out = r;
	return 0;
}

int reader_open(struct tracefs_instance *inst, int ncpus, uint32_t page_size,
		enum reader_mode mode, struct reader **out)
{
	struct reader *r;
	int cpu, ret;

	if (ncpus <= 0 || ncpus > UINT16_MAX + 1 || page_size < 64 ||
	    page_size > (1u << 20))
		return -EINVAL;
	ret = reader_alloc(ncpus, page_size, &r);
	if (ret < 0)
		return ret;
	for (cpu = 0; cpu < ncpus; cpu++)
		r->cpus[cpu].fd = r->cpus[cpu].pipe[0] = r->cpus[cpu].pipe[1] =
			r->cpus[cpu].tee[0] = r->cpus[cpu].tee[1] = -1;
	for (cpu = 0; cpu < ncpus; cpu++) {
		ret = cpu_open(inst, cpu, page_size, mode, &r->cpus[cpu]);
		if (ret < 0) {
			log_debug("cannot open cpu%d's trace_pipe_raw: %s", cpu,
				tc_strerror(ret));
			reader_close(r);
			return ret;
		}
		r->nmapped += r->cpus[cpu].map != NULL;
		r->pfds[cpu].fd = r->cpus[cpu].fd;
		r->pfds[cpu].events = POLLIN;
	}
	*out = r;
	return 0;
}

void reader_close(struct reader *r)
{
	int cpu;

	if (!r)
		return;
	for (cpu = 0; r->cpus && cpu < r->ncpus; cpu++) {
		if (r->cpus[cpu].tcpu)
			tracefs_cpu_free_fd(r->cpus[cpu].tcpu);
		cpu_unmap(&r->cpus[cpu]);
		cpu_close_pipes(&r->cpus[cpu]);
		if (r->cpus[cpu].fd >= 0)
			close(r->cpus[cpu].fd);
	}
	free(r->pfds);
	free(r->cpus);
	free(r->buf);
	free(r);
}

/* Empty the pipe @fd (reading into @buf of @cap bytes).
 * Return: how many bytes were left in it. */
static size_t pipe_discard(int fd, uint8_t *buf, size_t cap)
{
	size_t total = 0;
	int left = 0;
	ssize_t n;

	if (ioctl(fd, FIONREAD, &left) < 0 || left <= 0)
		return 0;
	while (left > 0) {
		n = read(fd, buf, (size_t)left < cap ? (size_t)left : cap);
		if (n <= 0)
			break;
		total += (size_t)n;
		left -= (int)n;
	}
	return total;
}

/*
 * Describe the @got bytes just read into @buf (room for a page) and hand
 * them to @fn; on the splice path the same bytes wait in the pipe
 * @splice_fd (else -1).
 * Return: 1 when the page was at most half full (the kernel copied out what
 * the writer had so far: this CPU has caught up), 0 otherwise, or @fn's
 * negative value.
 */
static int page_deliver(struct reader *r, int cpu, uint8_t *buf, int got,
			int splice_fd, reader_page_fn fn, void *arg)
{
	struct reader_cpu *rc = &r->cpus[cpu];
	struct reader_page p;
	struct page_info pi;
	int ret, events;

	if ((uint32_t)got < r->page_size)
		memset(buf + got, 0, r->page_size - (uint32_t)got);
	events = page_count(buf, r->page_size, &pi);
	if (events < 0)
		log_warn("cpu%d: page %llu is malformed; shipping it anyway",
			 cpu, (unsigned long long)rc->seq + 1);
	p.cpu = cpu;
	p.seq = rc->seq + 1;
	p.missed_events = pi.missed;
	p.head = NULL;
	p.head_len = 0;
	p.data = buf;
	p.len = r->page_size;
	if (events >= 0 && splice_fd < 0)
		p.len = pi.used;	/* the rest need not be shipped */
	p.events = (uint32_t)(events < 0 ? 0 : events);
	p.splice_fd = splice_fd;
	ret = fn(arg, &p);
	if (splice_fd >= 0 && pipe_discard(splice_fd, r->buf, r->page_size) > 0)
		splice_fd = -1;		/* not spliced on: it went as a copy */
	if (ret < 0)
		return ret;
	rc->seq++;
	rc->counts.pages++;
	rc->counts.events += p.events;
	rc->counts.bytes += p.len;
	rc->counts.pages_read += splice_fd < 0;
	rc->counts.pages_splice += splice_fd >= 0;
	rc->counts.copied_bytes += (uint64_t)got;
	return pi.size < (r->page_size - READER_PAGE_HDR) / 2;
}

/* The 16-byte page header of what mmap_next() passes on (see reader.h). */
static void mmap_head(struct reader_cpu *rc, const uint8_t *page,
		      unsigned long commit, size_t start, size_t len)
{
	unsigned long c = start ? len - start : commit;

	memcpy(rc->head, start ? (const uint8_t *)&rc->last_ts : page, 8);
	memcpy(rc->head + 8, &c, sizeof(c));
}

/*
 * Take the reader sub-buffer (TRACE_MMAP_IOCTL_GET_READER) and pass on the
 * events committed to it since the last call. The commit word is read
 * once: the kernel may still append to the page, never change what is
 * below it. The page stays ours until the next ioctl, which is after @fn.
 * Return: 1 passed on and this CPU caught up (page at most half full), 0
 * passed on, 2 nothing new, or negative (-errno, @fn's value).
 */
static int mmap_next(struct reader *r, int cpu, reader_page_fn fn, void *arg)
{
	struct reader_cpu *rc = &r->cpus[cpu];
	const size_t cap = r->page_size - READER_PAGE_HDR;
	size_t len, start, extra = 0;
	struct reader_page p;
	const uint8_t *page;
	unsigned long commit;
	uint64_t ts;
	uint32_t id;
	int events, ret;

	if (ioctl(rc->fd, READER_IOCTL_GET_READER) < 0)
		return errno == EINTR || errno == EAGAIN ? 2 : -errno;
	id = rc->meta->reader.id;
	if (id >= rc->meta->nr_subbufs)
		return TC_ERR_PAGE_MALFORMED;
	page = rc->map + (size_t)id * r->page_size;
	memcpy(&commit, page + 8, sizeof(commit));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);	/* commit, then data */
	len = commit & PAGE_COMMIT_LEN_MASK;
	if (id != rc->cur_id) {
		rc->cur_id = id;
		rc->shipped = 0;
		memcpy(&rc->last_ts, page, 8);
	}
	start = rc->shipped;
	if (len > cap || len <= start)
		return len > cap ? TC_ERR_PAGE_MALFORMED : 2;
	if (!start && (commit & PAGE_COMMIT_STORED) && len + sizeof(long) <= cap)
		extra = sizeof(long);	/* the lost-events count after the data */
	ts = rc->last_ts;
	events = reader_walk_events(page + READER_PAGE_HDR + start, len - start,
				    r->page_size, &ts);
	if (events < 0) {
		log_warn("cpu%d: page %llu is malformed; shipping it anyway", cpu,
			 (unsigned long long)rc->seq + 1);
		events = 0;
	}
	mmap_head(rc, page, commit, start, len);
	p = (struct reader_page){ .cpu = cpu, .seq = rc->seq + 1,
		.missed_events = !start && (commit & PAGE_COMMIT_MISSED),
		.head = rc->head, .head_len = READER_PAGE_HDR,
		.data = page + READER_PAGE_HDR + start,
		.len = len - start + extra, .events = (uint32_t)events,
		.splice_fd = -1 };
	ret = fn(arg, &p);
	if (ret < 0)
		return ret;
	rc->shipped = len;
	rc->last_ts = ts;
	rc->seq++;
	rc->counts.pages++;
	rc->counts.pages_mmap++;
	rc->counts.events += (uint64_t)events;
	rc->counts.bytes += READER_PAGE_HDR + p.len;
	return len <= cap / 2;
}

/* The mmap path of read_cpu(): stop after two ioctls without news. */
static int read_cpu_mmap(struct reader *r, int cpu, int max, bool flush,
			 reader_page_fn fn, void *arg)
{
	int n = 0, idle = 0, ret;

	while (n < max && idle < 2) {
		ret = mmap_next(r, cpu, fn, arg);
		if (ret < 0)
			return ret;
		if (ret == 2) {
			idle++;
			continue;
		}
		idle = 0;
		n++;
		if (ret == 1 && !flush)
			break;
	}
	return n;
}

/*
 * Read up to @max pages of @cpu; unless @flush, stop after a partial page:
 * reading on would only pick up the events that shipping the pages caused
 * (the agent tracing itself) one tiny page at a time.
 * Return: pages read or negative.
 */
static int read_cpu_read(struct reader *r, int cpu, int max, bool flush,
			 reader_page_fn fn, void *arg)
{
	struct tracefs_cpu *tcpu = r->cpus[cpu].tcpu;
	int n, got, ret;
	uint8_t *buf;

	for (n = 0; n < max; n++) {
		buf = r->buf_fn ? r->buf_fn(r->buf_arg, cpu, r->page_size) :
				  NULL;
		if (!buf)
			buf = r->buf;
		errno = 0;
		got = flush ? tracefs_cpu_flush(tcpu, buf) :
			      tracefs_cpu_read(tcpu, buf, true);
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (got < 0)
			return errno ? -errno : TC_ERR_TRACEFS;
		if (got == 0)
			break;
		ret = page_deliver(r, cpu, buf, got, -1, fn, arg);
		if (ret < 0)
			return ret;
		if (ret == 1 && !flush)
			return n + 1;
	}
	return n;
}

/* Read the @len bytes of the pipe @fd into @buf. */
static int read_full(int fd, uint8_t *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = read(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Splice one full page of @cpu into its pipe, tee it and read the copy.
 * Return: 0 passed on, 2 no full page, or negative.
 */
static int splice_next(struct reader *r, int cpu, reader_page_fn fn, void *arg)
{
	struct reader_cpu *rc = &r->cpus[cpu];
	ssize_t n, t;
	int ret;

	n = splice(rc->fd, NULL, rc->pipe[1], NULL, r->page_size,
		   SPLICE_F_NONBLOCK);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 2 : -errno;
	if (n == 0)
		return 2;
	t = tee(rc->pipe[0], rc->tee[1], (size_t)n, SPLICE_F_NONBLOCK);
	ret = t == n ? read_full(rc->tee[0], r->buf, (size_t)n) :
	      t < 0 ? -errno : -EIO;
	if (ret == 0 && (uint32_t)n != r->page_size)
		ret = TC_ERR_PAGE_MALFORMED;
	if (ret < 0) {
		pipe_discard(rc->pipe[0], r->buf, r->page_size);
		pipe_discard(rc->tee[0], r->buf, r->page_size);
		return ret;
	}
	ret = page_deliver(r, cpu, r->buf, (int)n, rc->pipe[0], fn, arg);
	return ret < 0 ? ret : 0;
}

/* The splice path: full pages while there are any, then read(2) picks up
 * the partial one the writer is on. */
static int read_cpu_splice(struct reader *r, int cpu, int max, bool flush,
			   reader_page_fn fn, void *arg)
{
	int n = 0, ret;

	while (n < max) {
		ret = splice_next(r, cpu, fn, arg);
		if (ret < 0)
			return ret;
		if (ret == 2)
			break;
		n++;
	}
	if (n >= max)
		return n;
	ret = read_cpu_read(r, cpu, max - n, flush, fn, arg);
	return ret < 0 ? ret : n + ret;
}

static int read_cpu(struct reader *r, int cpu, int max, bool flush,
		    reader_page_fn fn, void *arg)
{
	if (r->cpus[cpu].map)
		return read_cpu_mmap(r, cpu, max, flush, fn, arg);
	if (r->cpus[cpu].pipe[0] >= 0)
		return read_cpu_splice(r, cpu, max, flush, fn, arg);
	return read_cpu_read(r, cpu, max, flush, fn, arg);
}

static int read_all(struct reader *r, int max, bool flush,
		    reader_page_fn fn, void *arg)
{
	int cpu, ret, total = 0;

	for (cpu = 0; cpu < r->ncpus; cpu++) {
		ret = read_cpu(r, cpu, max, flush, fn, arg);
		if (ret < 0) {
			log_debug("cpu%d: reading trace_pipe_raw: %s", cpu,
				tc_strerror(ret));
			return ret;
		}
		total += ret;
	}
	return total;
}

void reader_set_wake_fds(struct reader *r, const int *fds, int n)
{
	for (int i = 0; i < READER_WAKE_MAX(r->ncpus); i++)
		r->pfds[r->ncpus + i].fd = i < n ? fds[i] : -1;
}

/* Only wake fds are readable (@n of the poll's fds): no CPU's buffer woke us. */
static bool woken_only(const struct reader *r, int n)
{
	int woken = 0;

	for (int i = 0; i < READER_WAKE_MAX(r->ncpus); i++)
		woken += r->pfds[r->ncpus + i].fd >= 0 && r->pfds[r->ncpus + i].revents;
	return n > 0 && woken == n;
}

int reader_poll(struct reader *r, int timeout_ms, reader_page_fn fn,
		void *arg)
{
	int n = poll(r->pfds, (nfds_t)(r->ncpus + READER_WAKE_MAX(r->ncpus)), timeout_ms);

	if (n < 0) {
		if (errno == EINTR)
			return 0;
		return -errno;
	}
	if (woken_only(r, n))
		return 0;	/* the caller reads the wake fd; pages wait for their own wake */
	/* On a timeout too: partial pages go out at least every timeout. */
	return read_all(r, READER_BATCH, false, fn, arg);
}

int reader_drain(struct reader *r, reader_page_fn fn, void *arg)
{
	return read_all(r, INT32_MAX, true, fn, arg);
}

void reader_set_buf_fn(struct reader *r, reader_buf_fn fn, void *arg)
{
	r->buf_fn = fn;
	r->buf_arg = arg;
}

int reader_mapped(struct reader *r)
{
	return r->nmapped;
}

void reader_counts(struct reader *r, int cpu, struct reader_counts *out)
{
	if (cpu < 0 || cpu >= r->ncpus) {
		memset(out, 0, sizeof(*out));
		return;
	}
	*out = r->cpus[cpu].counts;
}
