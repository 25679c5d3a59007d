/*
 * reader.h - per-CPU readers of a tracefs instance's ring buffers: they
 * take whole sub-buffers (pages) out of per_cpu/cpuN/trace_pipe_raw, number
 * them, flag pages after which the kernel lost events, count pages, bytes
 * and events, and hand each page to a callback (the shipper).
 *
 * Three read paths, chosen per CPU at open time:
 *  - read(2) of trace_pipe_raw through libtracefs: the kernel swaps a full
 *    page out of the ring buffer (no per-event work) and copies it once,
 *    into a buffer the consumer may provide (reader_set_buf_fn(): the
 *    agent's spool, which keeps every page until it is acknowledged).
 *    The agent's default unless it splices into the socket.
 *  - mmap (kernel >= 6.10): the per-CPU buffer is mapped read-only and
 *    TRACE_MMAP_IOCTL_GET_READER hands over one reader sub-buffer at a time;
 *    a page is passed on as a 16-byte page header (a local copy, so that
 *    the commit word matches the bytes passed even while the kernel is
 *    still appending to that page) plus its event bytes straight from the
 *    mapping: no copy of event data here. It is not the default: the page
 *    must be copied into the spool all the same (it goes back to the
 *    kernel at the next ioctl), and the ioctl consumes the page event by
 *    event with interrupts off, which measured slower than read(2) (see
 *    proto/PROTOCOL.md, "Cost per event").
 *  - splice (asked for explicitly, when the socket takes raw bytes: kernel
 *    TLS or --insecure-plain): full pages are spliced from trace_pipe_raw
 *    into a pipe (the kernel hands over the ring-buffer page itself), which
 *    the page callback may splice on into the socket; a tee() of it is read
 *    into a buffer once, for counting events and for the spool. Partial
 *    pages (the writer is still on them) are read with read(2).
 */
#ifndef AGENT_READER_H
#define AGENT_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct reader;			/* opaque: readers for all CPUs */
struct tracefs_instance;

/*
 * One page for the wire: @head_len bytes at @head followed by @len bytes at
 * @data. The read path passes the sub-buffer in @data (head_len 0) up to
 * the end of its data (len page_size on the splice path and for a page
 * that does not parse; the tail up to page_size zeroed); the mmap path
 * passes the page header in @head and the committed event bytes, in place
 * in the mapping, in @data.
 * A page of the mmap path that continues one shipped earlier (the writer
 * was still on it) has a header whose timestamp is that of the last event
 * shipped before, and holds only the events added since.
 */
struct reader_page {
	int cpu;
	uint64_t seq;		/* per CPU, starting at 1 */
	bool missed_events;	/* commit word had PAGE_COMMIT_MISSED */
	const uint8_t *head;
	size_t head_len;
	const uint8_t *data;
	size_t len;
	uint32_t events;	/* events in it */
	/* splice path: a pipe holding the same @len bytes as @data, which the
	 * callback may splice out whole (ship_page_splice()); -1 otherwise.
	 * Whatever the callback leaves in it is discarded. */
	int splice_fd;
};

enum reader_mode {
	READER_AUTO,		/* mmap where the kernel allows it, else read */
	READER_MMAP,		/* mmap or fail */
	READER_READ,		/* read(2) only */
	READER_SPLICE,		/* splice full pages, read(2) partial ones */
};

struct reader_counts {
	uint64_t pages;
	uint64_t events;
	uint64_t bytes;
	uint64_t pages_mmap;	/* pages by read path: mapped reader page */
	uint64_t pages_splice;	/* spliced into the socket (a copy for the
				 * spool is in copied_bytes) */
	uint64_t pages_read;	/* read(2) into a buffer */
	uint64_t copied_bytes;	/* page bytes copied into user space */
};

/*
 * reader_page_fn - receives each page read. @page and its data are valid
 * only during the call. A negative return stops the reader, which passes
 * that value on to its caller.
 */
typedef int (*reader_page_fn)(void *arg, const struct reader_page *page);

/*
 * reader_open - open a non-blocking reader on each of CPUs 0..@ncpus-1 of
 * @inst, reading sub-buffers of @page_size bytes, by @mode.
 *
 * Close the readers (reader_close()) before removing the instance: tracefs
 * refuses to remove an instance with open files.
 *
 * Return: 0 and *@out; -errno from opening trace_pipe_raw (or from mmap()
 * or the ioctl with READER_MMAP); -EINVAL for a bad @ncpus or @page_size;
 * -ENOMEM. *@out only on success.
 */
int reader_open(struct tracefs_instance *inst, int ncpus, uint32_t page_size,
		enum reader_mode mode, struct reader **out);

/*
 * reader_buf_fn - where the read path should put the next page of @cpu:
 * room for @len bytes, or NULL for the reader's own buffer. The page then
 * reaches the reader_page_fn with @data pointing there (so a consumer that
 * keeps pages can read them straight into its store, see spool_reserve()).
 */
typedef uint8_t *(*reader_buf_fn)(void *arg, int cpu, size_t len);

/* reader_set_buf_fn - use @fn (NULL: none) for read(2) pages from now on. */
void reader_set_buf_fn(struct reader *r, reader_buf_fn fn, void *arg);

/* reader_mapped - how many CPUs use the mmap path. */
int reader_mapped(struct reader *r);

/*
 * reader_walk_events - count the events in @len bytes of ring-buffer event
 * records (this host's layout, pages of @page_size bytes) and advance
 * *@ts (the timestamp before the first record) to that of the last one.
 *
 * Return: the count; TC_ERR_PAGE_MALFORMED when page_next_record() rejects
 * a record (one running past @len, an impossible length). *@ts only on
 * success.
 */
int reader_walk_events(const uint8_t *p, size_t len, uint32_t page_size,
		       uint64_t *ts);

/* reader_close - close every CPU's reader and free @r. Safe with NULL. */
void reader_close(struct reader *r);

/*
 * reader_poll - wait up to @timeout_ms (-1: forever) for any CPU's buffer
 * to become readable (the kernel wakes readers at its buffer_percent
 * watermark), then read every page available now on every CPU, partial
 * pages included, and pass each to @fn. A signal ends the wait early.
 *
 * Return: the number of pages read (0 on timeout or signal); -errno from
 * poll() or read(); or @fn's negative value.
 */
int reader_poll(struct reader *r, int timeout_ms, reader_page_fn fn,
		void *arg);

/* The wake fds a reader of @ncpus CPUs takes: a control link and one data link per CPU. */
#define READER_WAKE_MAX(ncpus)	((ncpus) + 1)

/*
 * reader_set_wake_fds - have reader_poll() also return (0, reading
 * nothing) when one of the @n fds @fds is readable (at most
 * READER_WAKE_MAX; -1 entries are skipped): the collector's connections,
 * the control link's and with --connections per-cpu each data link's, so
 * that its clock probes are answered at once, not at the next page or
 * timeout (their round trip is the measurement's uncertainty).
 */
void reader_set_wake_fds(struct reader *r, const int *fds, int n);

/*
 * reader_drain - read every CPU's buffer until it is empty (after tracing
 * was switched off), partial pages included, passing each page to @fn.
 *
 * Return: the number of pages read; -errno; or @fn's negative value.
 */
int reader_drain(struct reader *r, reader_page_fn fn, void *arg);

/* reader_counts - what CPU @cpu's reader has read so far (zeros for a CPU
 * out of range). */
void reader_counts(struct reader *r, int cpu, struct reader_counts *out);

/*
 * reader_page_events - count the events in a ring-buffer page of @len
 * bytes laid out for this host (long size, byte order), without decoding
 * them: page_check() and page_next_record(), the collector's page reader.
 *
 * Return: the count; TC_ERR_PAGE_MALFORMED when @len cannot hold the page
 * header, the commit word has unknown flags or claims more data than the
 * page holds, or a record does not fit.
 */
int reader_page_events(const void *page, size_t len);

/*
 * reader_page_events_used - reader_page_events(), and in *@used the
 * bytes of the page that matter (header, records, the stored count of
 * missed events): the rest need not be shipped. A malformed page's
 * @len: it goes whole, for the collector to say what is wrong with it.
 */
int reader_page_events_used(const void *page, size_t len, size_t *used);

#endif
