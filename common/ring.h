/*
 * ring.h - tracecollect's lockless per-CPU ring buffer in shared memory.
 *
 * A traced program (the writer) creates one file (memfd or /dev/shm) that
 * holds one buffer per CPU plus one durable buffer, and a table of event
 * formats. traceagent (the reader) maps the same file, swaps whole pages
 * out of each buffer and ships them. Pages are laid out exactly like the
 * kernel's ftrace sub-buffers (u64 timestamp, local_t commit word, events
 * with {type_len:5, time_delta:27} headers), so libtraceevent's kbuffer
 * decodes them. The algorithm and why it was chosen are in ring.c.
 *
 * Writers never block and never take a lock; any number of threads and
 * nested signal handlers may write to any buffer. Readers of one buffer
 * must serialize among themselves (one agent thread per buffer).
 */
#ifndef COMMON_RING_H
#define COMMON_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ring;			/* opaque: one mapping of a ring file */
struct ring_buf;
struct ring_slot;

enum ring_mode {
	RING_MODE_PRODUCER = 0,	/* full: newest events dropped, counted */
	RING_MODE_OVERWRITE,	/* full: oldest pages dropped, counted */
	RING_MODE_FLIGHT,	/* overwrite; the reader waits for a trigger */
};

enum ring_clock_id {
	RING_CLOCK_TSC = 0,	/* rdtsc (x86-64); see ring_clock_calibrate */
	RING_CLOCK_MONO,	/* CLOCK_MONOTONIC ns: the kernel's "mono" */
};

/* Largest payload one event may carry (fits a 4096-byte page). */
#define RING_MAX_PAYLOAD	2048

struct ring_params {
	uint32_t page_size;	/* bytes per page, 4096..32768, power of 2 */
	uint32_t nr_pages;	/* ring pages per buffer, power of 2, >= 2 */
	uint32_t nr_cpus;	/* per-CPU buffers; 0: configured CPUs */
	enum ring_mode mode;
	enum ring_clock_id clock;
	uint32_t fmt_size;	/* bytes for event formats; 0: 64 KiB */
	uint32_t nr_own;	/* own buffers (below), 0..RING_MAX_OWN */
	bool locked;		/* always the locked write path (no rseq) */
};

#define RING_MAX_OWN		256

/*
 * ring_create - create a ring file and map it for writing.
 * @path: file to create (e.g. "/dev/shm/tracecollect.PID"), or NULL for
 *        an anonymous memfd (pass ring_fd() to the reader).
 * @p: geometry and mode.
 *
 * The caller's pid is recorded as the owner (ring_owner_alive()).
 * Writes are disabled until a reader calls ring_set_attached(); the
 * ring_* write functions themselves do not check that flag.
 *
 * Return: 0 and *@out; -EINVAL for bad @p; -errno from the file calls;
 * -ENOMEM. *@out only on success.
 */
int ring_create(const char *path, const struct ring_params *p,
		struct ring **out);

/*
 * ring_open / ring_open_fd - map an existing ring file (reader side).
 * ring_open_fd dups @fd; the caller keeps its own.
 *
 * Return: 0 and *@out; -errno; -EAGAIN while the writer is still making
 * it (empty, or its magic not yet published: open it again later);
 * TC_ERR_PAGE_MALFORMED if the file is not a ring of this version or its
 * geometry does not fit its size.
 */
int ring_open(const char *path, struct ring **out);
int ring_open_fd(int fd, struct ring **out);

/* ring_close - unmap and close. Safe with NULL. */
void ring_close(struct ring *r);

/* Accessors: the file descriptor, the number of buffers (CPUs + 1 + own
 * buffers), the durable buffer's index (after the CPUs'), the page size,
 * mode, clock. */
int ring_fd(const struct ring *r);
unsigned ring_nr_bufs(const struct ring *r);
unsigned ring_durable_buf(const struct ring *r);
uint32_t ring_page_size(const struct ring *r);
enum ring_mode ring_get_mode(const struct ring *r);
enum ring_clock_id ring_get_clock(const struct ring *r);

/* ring_uses_rseq - whether the per-CPU buffers are written with rseq
 * (see ring_reserve()); fixed when the ring is created. */
bool ring_uses_rseq(const struct ring *r);

/* ---------------------------------------------------------------- writer */

/* A reservation in flight; lives on the writer's stack. */
struct ring_wctx {
	void *data;		/* where the payload goes (len bytes) */
	uint8_t *page;		/* physical page */
	struct ring_slot *slot;
	uint32_t off;		/* event offset in the page's data area */
	uint32_t total;		/* bytes reserved (extend + header + data) */
	uint32_t len;		/* payload bytes */
	int32_t cpu;		/* buffer's CPU if written with rseq, else -1 */
	uint64_t ts;		/* the event's timestamp */
	uint64_t delta;		/* time delta from the previous event */
	uint32_t ext;		/* 8 if a time-extend precedes the event */
	uint32_t ends_page;	/* the reservation fills the page exactly */
};

/*
 * ring_reserve - reserve room for a @len-byte event in buffer @buf
 * (-1: the calling thread's current CPU; the durable buffer by index).
 *
 * Per-CPU buffers of a ring created where rseq works (all CPUs covered,
 * glibc registered rseq, not @p->locked; ring_uses_rseq()): no locked
 * instruction, a restartable sequence on the CPU's {write position, last
 * timestamp}; a thread naming another CPU's buffer moves to that CPU for
 * the reservation (sched_setaffinity, slow; its errors are returned); a
 * thread without an rseq registration gets -ENOBUFS (counted in the
 * durable buffer's lost_busy). Otherwise, and for the durable buffer: one
 * cmpxchg16b. A page switch adds one cmpxchg on the slot's tag. Safe from
 * signal handlers, against any preemption or migration. Between reserve
 * and commit the space reads as padding, so a writer that dies there
 * leaves a decodable page (ring_reader_recover()).
 *
 * Return: 0 and *@ctx (ctx->data: where to put the payload); -E2BIG if
 * @len > RING_MAX_PAYLOAD; -EINVAL for a bad @buf; -ENOBUFS when the
 * event was dropped (buffer full in producer mode, or the page to enter
 * still being committed); the drop is counted.
 */
int ring_reserve(struct ring *r, int buf, uint32_t len,
		 struct ring_wctx *ctx);

/* ring_commit - publish the event reserved in @ctx (payload written). */
void ring_commit(struct ring *r, const struct ring_wctx *ctx);

/* ring_write - reserve, copy @len bytes of @data, commit.
 * Return: as ring_reserve. */
int ring_write(struct ring *r, int buf, const void *data, uint32_t len);

/* ring_write_hdr - ring_write to the current CPU's buffer of one event
 * whose payload is the 8 bytes at @hdr followed by the @len bytes at
 * @data (a record's common fields, then its own: tc_write()).
 * Return: as ring_reserve; -E2BIG if 8 + @len > RING_MAX_PAYLOAD. */
int ring_write_hdr(struct ring *r, const void *hdr, const void *data,
		   uint32_t len);

/* ring_write_stamped - ring_write to the current CPU's buffer of a
 * @len-byte payload (8..112: the kernel's short events) copied from
 * @data, with the event's own timestamp stored over the 8 bytes at
 * @ts_off of the payload: for records that carry the time they were
 * written (funcgraph_exit's rettime), in one write.
 * Return: as ring_reserve; -EINVAL for @len or @ts_off out of range. */
int ring_write_stamped(struct ring *r, const void *data, uint32_t len,
		       uint32_t ts_off);

/*
 * Own buffers: the last nr_own buffers of a ring (ring_params.nr_own) each
 * have one writer, a thread that claimed it, and need neither rseq nor a
 * locked instruction per event. The writer holds a whole page at a time
 * (its wpos says the page is reserved to its end) and fills it in order:
 * an event is written, then the slot's commit_cpu word is stored with its
 * new count (release), so what is committed is always a prefix of the
 * page. So a dead writer's calls stay recoverable to the last one it
 * committed (ring_reader_recover() ends the page there), and the reader
 * can copy a live writer's committed prefix out without ending the page
 * (ring_reader_flush(); the kernel's reader copies a partial commit page
 * the same way). Pages are in the kernel's format as elsewhere; events
 * from one thread are in time order; the reader ships a buffer as one
 * more stream, numbered after the durable buffer.
 *
 * The writer's state is its own (a thread's TLS): the event goes at
 * @next, and ring_own_commit() publishes it. lib/fgraph.c's x86_64 exit
 * hook does the same in assembly (arch/arch.h has the offsets).
 */
struct ring_own {
	uint8_t *next;		/* where the next event goes; NULL: none */
	uint8_t *end;		/* the end of the page's data area; NULL
				 * with next: no page in hand */
	uint64_t last_ts;	/* the timestamp of the page's last event */
	uint64_t *ccp;		/* the slot's commit_cpu (only we add) */
	struct ring_buf *b;	/* NULL: not claimed */
	uint8_t *page;
	uint64_t q;		/* virtual page in hand */
	uint32_t gen;		/* the view's number (struct ring's gen) */
	uint32_t buf;		/* the buffer's index */
};

/*
 * ring_own_claim - take a free own buffer for the calling thread (@id:
 * nonzero, e.g. its tid) into *@o. The first event enters a page
 * (ring_own_enter()).
 * Return: 0; -ENOSPC when every own buffer is taken; -ENOENT when the
 * ring has none.
 */
int ring_own_claim(struct ring *r, uint64_t id, struct ring_own *o);

/*
 * ring_own_enter - end the page in hand (if any) and enter the next one,
 * for an event of @total bytes (header included) at time @now that does
 * not fit the page or needs a time extend (written here if it does).
 * Return: 0 (o->next is where the event goes); -ENOBUFS when the buffer
 * is full (producer mode: the event is dropped, counted); -EIO for a
 * corrupt file.
 */
int ring_own_enter(struct ring *r, struct ring_own *o, uint32_t total,
		   uint64_t now);

/* ring_own_release - end the page in hand and give the buffer back (the
 * thread exits). *@o is empty after. */
void ring_own_release(struct ring *r, struct ring_own *o);

/* ring_gen - this view's number, never 0 (views of one file differ). */
uint32_t ring_gen(const struct ring *r);

/* ring_own_is - whether buffer @buf is an own buffer. */
bool ring_own_is(const struct ring *r, unsigned buf);

/* ---------------------------------------------------------------- reader */

struct ring_page_ref {
	const uint8_t *data;	/* the whole page, page_size bytes, valid
				 * until ring_reader_put() */
	size_t len;
	uint64_t seq;		/* virtual page number, increasing */
	unsigned buf;
	bool missed;		/* events were lost before this page */
};

/*
 * ring_reader_get - swap the oldest complete page of buffer @buf out of
 * the ring (the reader's own page takes its place) and return it. Sets
 * PAGE_COMMIT_MISSED in the page's commit word, and stores the count after
 * the data (PAGE_COMMIT_STORED) when it fits, if events were lost since the
 * previous page. The page stays the reader's until ring_reader_put().
 *
 * Context: one reader per buffer at a time.
 * Return: 0 and *@out; -EAGAIN when no complete page is ready (see
 * ring_reader_flush()); -EBUSY if the previous page was not put back;
 * -EINVAL for a bad @buf.
 */
int ring_reader_get(struct ring *r, unsigned buf, struct ring_page_ref *out);

/* ring_reader_put - give the page from ring_reader_get() back; it becomes
 * the page swapped in next time. No-op without one. */
void ring_reader_put(struct ring *r, unsigned buf);

/*
 * ring_reader_flush - end buffer @buf's partly filled page (pad it out
 * like a writer switching pages) so ring_reader_get() can take it once
 * its writers commit. For draining and for live streaming of idle CPUs.
 * An own buffer's page is not ended while its writer lives: the next
 * ring_reader_get() returns a copy of what was committed in it since the
 * last copy (the reader's own page, timestamped at the first copied
 * event's predecessor), and the page itself, once complete, comes without
 * the part already copied.
 * On a per-CPU buffer written with rseq (while the owner lives) the
 * calling thread moves to that CPU for the moment (sched_setaffinity):
 * only code running there may end the page.
 * Return: 1 if a page was ended, 0 if there was nothing to end; -EINVAL
 * for a bad @buf; -errno from sched_setaffinity (CPU not allowed here).
 */
int ring_reader_flush(struct ring *r, unsigned buf);

/*
 * ring_reader_recover - after the owner died (ring_owner_alive() false),
 * finish buffer @buf's pages that dead writers left uncommitted: their
 * unfinished events become padding and are counted (stats.unfinished),
 * the partly filled page is ended, so every page can be taken. An own
 * buffer's page (struct ring_own) is ended after its committed prefix
 * instead, and counts nothing unfinished: an event its writer was in
 * the middle of lies past that prefix and cannot be told from an
 * earlier lap's bytes there.
 * Return: the number of pages finished; -EBUSY if the owner is alive.
 */
int ring_reader_recover(struct ring *r, unsigned buf);

/* ring_owner_alive - whether the process that created the file lives. */
bool ring_owner_alive(const struct ring *r);

/* Attach flag: the reader sets it; the public API writes only while set. */
void ring_set_attached(struct ring *r, bool on);
const volatile uint32_t *ring_attached_word(const struct ring *r);

/* Flight recorder: the program (or anyone) triggers; the reader compares
 * the sequence with the one it saw last and then drains every buffer. */
void ring_trigger(struct ring *r);
uint64_t ring_trigger_seq(const struct ring *r);

struct ring_stats {
	uint64_t lost_full;		/* producer mode: newest dropped */
	uint64_t lost_busy;		/* page to enter still in commit */
	uint64_t lost_overwritten;	/* overwrite modes: oldest dropped */
	uint64_t pages_overwritten;
	uint64_t unfinished;		/* left by dead writers */
	uint64_t pages_read;
};

/* ring_get_stats - counters of buffer @buf. Return: 0; -EINVAL. */
int ring_get_stats(const struct ring *r, unsigned buf, struct ring_stats *out);

/* ------------------------------------------------------------- formats */

/*
 * Event formats live in a durable table in the file (never overwritten),
 * separate from the buffers. A registration takes the next event id
 * (ring_next_event_id()), composes the format text naming that id (kernel
 * format-file syntax) and appends it (ring_format_append(), lock-free:
 * cmpxchg on the table's fill level, then a release store of the entry's
 * ready flag).
 */
uint32_t ring_next_event_id(struct ring *r);

/* ring_format_append - append NUL-terminated @text.
 * Return: 0; -ENOSPC when the table is full (nothing is written). */
int ring_format_append(struct ring *r, const char *text);

/*
 * ring_format_next - iterate over the appended texts: start with
 * *@cursor = 0; each call that returns 1 sets *@text (valid while @r is
 * open) and advances *@cursor. Entries not finished yet end the walk; call
 * again later with the same cursor.
 * Return: 1 and *@text; 0 at the end; TC_ERR_PAGE_MALFORMED for a
 * corrupt table.
 */
int ring_format_next(const struct ring *r, uint64_t *cursor,
		     const char **text);

/* --------------------------------------------------------------- clock */

/* ring_clock_now - a timestamp in @clk's units (TSC ticks or ns). */
uint64_t ring_clock_now(enum ring_clock_id clk);

/*
 * TSC -> CLOCK_MONOTONIC conversion, like the kernel's clocksource:
 * ns = mono0 + (((tsc - tsc0) * mult) >> shift), exact enough for 10 min
 * of delta per sample pair; the agent re-samples and ships the pair.
 */
struct ring_clock_conv {
	uint64_t tsc0;
	uint64_t mono0;
	uint32_t mult;
	uint32_t shift;
};

/*
 * ring_clock_calibrate - take two (TSC, CLOCK_MONOTONIC) samples
 * @interval_us apart (each bracketed by a clock read on both sides to
 * bound the error) and compute mult/shift.
 * Return: 0 and *@out; -EINVAL for @interval_us < 1000; -ERANGE if the
 * TSC did not advance.
 */
int ring_clock_calibrate(unsigned interval_us, struct ring_clock_conv *out);

/* ring_clock_to_ns - convert a TSC value with @c. */
uint64_t ring_clock_to_ns(const struct ring_clock_conv *c, uint64_t tsc);

#endif
