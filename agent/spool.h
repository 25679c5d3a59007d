/*
 * spool.h - the agent's un-acknowledged pages: a copy of every page shipped
 * (or waiting to be shipped) until the collector acknowledges it as stored,
 * so it can be sent again after a reconnect.
 *
 * Pages are kept in memory up to a limit, then appended to one file per
 * stream in a spool directory up to a second limit. Both limits are soft by
 * at most one read batch: the caller checks spool_full() before it takes
 * pages out of the ring buffers and stops reading while it is true, so that
 * further pages wait in the kernel's buffer (which then overwrites or drops
 * and counts), never in unbounded agent memory.
 *
 * Spool files are O_TMPFILE (never visible, gone when the agent exits):
 * the spool bridges collector restarts and network cuts, not agent
 * restarts.
 */
#ifndef AGENT_SPOOL_H
#define AGENT_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct spool;

struct spool_page {
	uint16_t stream;
	uint64_t seq;
	uint8_t flags;		/* FRAME_F_* */
	uint32_t events;
	const uint8_t *data;
	size_t len;
	bool resend;		/* sent before, on an earlier connection */
};

struct spool_counts {
	uint64_t pages;		/* kept now */
	uint64_t mem_bytes;	/* of them in memory ... */
	uint64_t disk_bytes;	/* ... and spool file bytes in use */
	uint64_t retained_bytes;	/* page bytes copied in, in total */
	uint64_t resent_pages;	/* pages passed to spool_resend() again */
	uint64_t lost_pages;	/* pages given up by spool_give_up() */
	uint64_t lost_events;
};

/*
 * spool_open - an empty spool for streams 0..@nstreams-1 keeping up to
 * @mem_bytes of pages in memory, then up to @disk_bytes in files created
 * in @dir (made if missing, one level) when first needed. @dir may be NULL
 * when @disk_bytes is 0.
 *
 * Return: 0 and *@out; -EINVAL; -ENOMEM.
 */
int spool_open(int nstreams, size_t mem_bytes, const char *dir,
	       uint64_t disk_bytes, struct spool **out);

/* spool_close - free everything and close the files. Safe with NULL. */
void spool_close(struct spool *sp);

/*
 * spool_add - keep a copy of page @seq of @stream (@len bytes of @data,
 * @events events); @sent says whether it already went out on the current
 * connection (a later spool_resend() counts it as resent). Sequence numbers of a stream must increase. A page that
 * fits in neither limit is kept in memory anyway (see above), and so is a
 * page whose file write fails (logged once).
 *
 * Return: 0; -EINVAL for a bad stream or a seq not above the last;
 * -ENOMEM.
 */
int spool_add(struct spool *sp, uint16_t stream, uint64_t seq, uint8_t flags,
	      uint32_t events, const void *data, size_t len, bool sent);

/*
 * spool_add_prefixed - spool_add() of a page given in two pieces: @head_len
 * bytes of @head (its frame and page headers) followed by @len bytes of
 * @data (the page, see struct reader_page), kept as one.
 */
int spool_add_prefixed(struct spool *sp, uint16_t stream, uint64_t seq,
		       uint8_t flags, uint32_t events, const void *head,
		       size_t head_len, const void *data, size_t len, bool sent);

/*
 * spool_set_slot - keep pages of up to @bytes in fixed-size slots of
 * memory mapped in large chunks and reused, instead of one allocation per
 * page (larger pages still get their own). Call it before the first
 * spool_add().
 *
 * Return: 0; -EINVAL when pages were added already, for 0, or for a size
 * that is not small against a chunk (2 MiB).
 */
int spool_set_slot(struct spool *sp, size_t bytes);

/*
 * spool_reserve - room for the next page, to be filled in place (by
 * read(2), say) and kept with spool_commit() instead of being copied by
 * spool_add(): a slot (spool_set_slot()) of at least @len bytes, when a
 * page of @len bytes would be kept in memory now. Calling it again without
 * a commit returns the same room; the room stays valid until the next
 * call that adds or forgets pages.
 *
 * Return: the room; NULL when the page would not go into a slot (no
 * slots, too big, memory limit reached) or mapping more slots failed.
 */
uint8_t *spool_reserve(struct spool *sp, size_t len);

/*
 * spool_commit - keep the @len bytes at @data, the room spool_reserve()
 * returned, as page @seq of @stream (as spool_add() would).
 *
 * Return: 0; -EINVAL for a bad stream, a seq not above the last, @data
 * that is not the reserved room or @len bigger than it.
 */
int spool_commit(struct spool *sp, uint16_t stream, uint64_t seq,
		 uint8_t flags, uint32_t events, const uint8_t *data,
		 size_t len, bool sent);

/* spool_full - whether both limits are reached: stop reading pages. */
bool spool_full(const struct spool *sp);

/* spool_empty - whether no page waits for an acknowledgement. */
bool spool_empty(const struct spool *sp);

/* spool_ack - forget the pages of @stream up to @seq (stored). */
void spool_ack(struct spool *sp, uint16_t stream, uint64_t seq);

/* spool_ack_all - forget every page (the collector confirmed all). */
void spool_ack_all(struct spool *sp);

/*
 * spool_fn - receives each kept page; @p is valid only during the call. A
 * negative return stops the walk and is passed on.
 */
typedef int (*spool_fn)(void *arg, const struct spool_page *p);

/*
 * spool_resend - pass every kept page to @fn, stream by stream in sequence
 * order, reading spooled ones back from their file, and mark them sent.
 * @fn must not call spool_ack() or spool_add().
 *
 * Return: 0; -errno when a file read fails; @fn's negative value.
 */
int spool_resend(struct spool *sp, spool_fn fn, void *arg);

/*
 * spool_pending - whether pages of @stream (-1: of any stream) were added
 * with @sent false and not passed on since (by spool_send_pending() or
 * spool_resend()): a later page of that stream must wait behind them.
 */
bool spool_pending(const struct spool *sp, int stream);

/*
 * spool_send_pending - pass the pages of @stream (-1: of every stream) not
 * sent yet to @fn, stream by stream in sequence order, marking each one @fn accepts (returns 0) as
 * sent. A positive return from @fn (would block) moves on to the next
 * stream, leaving that page and the later ones of its stream pending.
 * @fn must not call spool_ack() or spool_add().
 *
 * Return: 0; -errno when a file read fails; @fn's negative value.
 */
int spool_send_pending(struct spool *sp, int stream, spool_fn fn, void *arg);

/* spool_give_up - count every kept page as lost and forget it. */
void spool_give_up(struct spool *sp);

/* spool_counts - counters of @stream (zeros for a bad one). */
void spool_counts(const struct spool *sp, int stream, struct spool_counts *out);

/* spool_mem_peak - the most memory the spool's pages ever held, in bytes. */
size_t spool_mem_peak(const struct spool *sp);

#endif
