/*
 * spool.c - un-acknowledged pages in memory, then in per-stream spool files
 * (see spool.h).
 *
 * Each stream keeps a FIFO of entries in sequence order. An entry holds its
 * page in a malloc()ed copy or at an offset of the stream's spool file. A
 * file only grows; when its last entry is acknowledged it is truncated to
 * zero, which is when its space comes back. Acknowledgements arrive in
 * sequence order, so with a collector that keeps up a file empties as fast
 * as it filled.
 *
 * Pages up to the slot size (spool_set_slot()) are kept in fixed slots that
 * hold the entry and its bytes together. Slots are carved out of 2 MiB
 * chunks mapped and populated at once (MAP_POPULATE) and recycled through a
 * LIFO free list: a page costs no malloc() and no page fault, where one
 * malloc() per page took a fault per page while the spool grew (a lagging
 * collector) and freed memory back to the kernel as it shrank. The chunks
 * stay until the spool empties, then all but SPOOL_KEEP_CHUNKS go back.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define LOG_PREFIX "spool"
#include "common/log.h"
#include "common/tc_error.h"
#include "agent/spool.h"

#define SPOOL_CHUNK		(2u << 20)	/* slots are mapped in these */
#define SPOOL_KEEP_CHUNKS	4		/* kept while the spool is empty */

struct spool_ent {
	struct spool_ent *next;
	uint64_t seq;
	uint32_t len;
	uint32_t events;
	uint8_t flags;
	bool sent;
	bool on_disk;
	bool slot;		/* lives in a pool slot, data right after it */
	off_t off;		/* on_disk */
	uint8_t *data;		/* !on_disk */
};

/* Fixed-size slots for entries and their pages (see the file comment). */
struct spool_pool {
	size_t slot;		/* bytes per slot, entry included; 0: no pool */
	size_t payload;		/* page bytes a slot holds */
	void **chunks;
	size_t nchunks, cap;
	struct spool_ent *free;	/* chained through ->next */
	size_t used;		/* slots holding an entry */
};

struct spool_stream {
	struct spool_ent *head, *tail;
	uint64_t last_seq;
	int fd;			/* spool file, -1 until needed */
	off_t end;		/* bytes written to it */
	uint64_t on_disk;	/* entries in it */
	uint64_t unsent;	/* entries not sent on this connection ... */
	struct spool_ent *first_unsent;	/* ... the oldest (they are the tail) */
	struct spool_counts c;
};

struct spool {
	int nstreams;
	struct spool_stream *st;
	size_t mem_max, mem_used;
	size_t mem_peak;	/* the most mem_used ever was */
	uint64_t disk_max, disk_used;
	char *dir;
	bool disk_failed;	/* logged once; then memory only */
	uint8_t *buf;		/* for reading a page back */
	size_t buf_cap;
	struct spool_pool pool;
};

int spool_open(int nstreams, size_t mem_bytes, const char *dir,
	       uint64_t disk_bytes, struct spool **out)
{
	struct spool *sp;
	int i;

	if (nstreams <= 0 || nstreams > UINT16_MAX + 1 || (disk_bytes && !dir))
		return -EINVAL;
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	sp->st = calloc((size_t)nstreams, sizeof(*sp->st));
	sp->dir = dir ? strdup(dir) : NULL;
	if (!sp->st || (dir && !sp->dir)) {
		free(sp->st);
		free(sp->dir);
		free(sp);
		return -ENOMEM;
	}
	for (i = 0; i < nstreams; i++)
		sp->st[i].fd = -1;
	sp->nstreams = nstreams;
	sp->mem_max = mem_bytes;
	sp->disk_max = disk_bytes;
	*out = sp;
	return 0;
}

/* Whether a page of @len bytes kept in memory goes into a slot. */
static bool in_slot(const struct spool_pool *pl, size_t len)
{
	return pl->payload && len <= pl->payload;
}

/* Put @n slots of @chunk on the free list. */
static void pool_carve(struct spool_pool *pl, uint8_t *chunk, size_t n)
{
	struct spool_ent *e;

	while (n--) {
		e = (struct spool_ent *)(void *)(chunk + n * pl->slot);
		e->next = pl->free;
		pl->free = e;
	}
}

/* Map one more chunk of slots. Return: 0 or -ENOMEM. */
static int pool_grow(struct spool_pool *pl)
{
	void **nc, *m;

	if (pl->nchunks == pl->cap) {
		nc = realloc(pl->chunks, (pl->cap * 2 + 4) * sizeof(*nc));
		if (!nc)
			return -ENOMEM;
		pl->chunks = nc;
		pl->cap = pl->cap * 2 + 4;
	}
	m = mmap(NULL, SPOOL_CHUNK, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	pl->chunks[pl->nchunks++] = m;
	pool_carve(pl, m, SPOOL_CHUNK / pl->slot);
	return 0;
}

/* An entry with room for @len page bytes: a slot when they fit one, else
 * separate allocations. Return: the entry (zeroed) or NULL. */
static struct spool_ent *ent_alloc(struct spool_pool *pl, size_t len,
				   bool in_mem)
{
	struct spool_ent *e;

	if (!in_mem || !in_slot(pl, len))
		return calloc(1, sizeof(*e));
	if (!pl->free && pool_grow(pl) < 0)
		return NULL;
	e = pl->free;
	pl->free = e->next;
	pl->used++;
	*e = (struct spool_ent){ .slot = true,
				 .data = (uint8_t *)(e + 1) };
	return e;
}

/* Unmap all chunks but SPOOL_KEEP_CHUNKS; only when every slot is free. */
static void pool_trim(struct spool_pool *pl)
{
	size_t i;

	if (pl->nchunks <= SPOOL_KEEP_CHUNKS)
		return;
	for (i = SPOOL_KEEP_CHUNKS; i < pl->nchunks; i++)
		munmap(pl->chunks[i], SPOOL_CHUNK);
	pl->nchunks = SPOOL_KEEP_CHUNKS;
	pl->free = NULL;
	for (i = 0; i < pl->nchunks; i++)
		pool_carve(pl, pl->chunks[i], SPOOL_CHUNK / pl->slot);
}

/* Memory @e takes against the limit: a whole slot, however little of it
 * the page fills, so that small pages cannot exceed the limit many times. */
static size_t ent_mem(const struct spool *sp, const struct spool_ent *e)
{
	return e->slot ? sp->pool.payload : e->len;
}

/* Give @e back: its slot, or its allocations. */
static void ent_release(struct spool *sp, struct spool_ent *e)
{
	if (!e->slot) {
		if (!e->on_disk)
			free(e->data);
		free(e);
		return;
	}
	e->next = sp->pool.free;
	sp->pool.free = e;
	if (--sp->pool.used == 0)
		pool_trim(&sp->pool);
}

static void ent_free(struct spool *sp, struct spool_stream *ss,
		     struct spool_ent *e)
{
	if (e->on_disk) {
		ss->on_disk--;
		ss->c.disk_bytes -= e->len;
	} else {
		sp->mem_used -= ent_mem(sp, e);
		ss->c.mem_bytes -= ent_mem(sp, e);
	}
	ss->c.pages--;
	ent_release(sp, e);
}

/* Truncate a stream's file once nothing in it is needed any more. */
static void stream_reclaim(struct spool *sp, struct spool_stream *ss)
{
	if (ss->fd < 0 || ss->on_disk || ss->end == 0)
		return;
	if (ftruncate(ss->fd, 0) < 0)
		log_warn("cannot truncate a spool file: %s", strerror(errno));
	sp->disk_used -= (uint64_t)ss->end;
	ss->end = 0;
}

static void stream_drop(struct spool *sp, struct spool_stream *ss,
			uint64_t upto, bool lost)
{
	struct spool_ent *e;

	while ((e = ss->head) && e->seq <= upto) {
		ss->head = e->next;
		if (lost) {
			ss->c.lost_pages++;
			ss->c.lost_events += e->events;
		}
		ss->unsent -= !e->sent;
		if (e == ss->first_unsent)
			ss->first_unsent = e->next;
		ent_free(sp, ss, e);
	}
	if (!ss->head)
		ss->tail = NULL;
	stream_reclaim(sp, ss);
}

void spool_close(struct spool *sp)
{
	int i;

	if (!sp)
		return;
	for (i = 0; i < sp->nstreams; i++) {
		stream_drop(sp, &sp->st[i], UINT64_MAX, false);
		if (sp->st[i].fd >= 0)
			close(sp->st[i].fd);
	}
	for (i = 0; i < (int)sp->pool.nchunks; i++)
		munmap(sp->pool.chunks[i], SPOOL_CHUNK);
	free(sp->pool.chunks);
	free(sp->st);
	free(sp->dir);
	free(sp->buf);
	free(sp);
}

/* The stream's spool file: an unnamed file in the spool directory. */
static int stream_file(struct spool *sp, struct spool_stream *ss)
{
	if (ss->fd >= 0)
		return 0;
	if (mkdir(sp->dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	ss->fd = open(sp->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	return ss->fd < 0 ? -errno : 0;
}

/* A page as two parts: head (may be empty) and data. */
struct parts {
	const void *head;
	size_t head_len;
	const void *data;
};

/* Append @e's page to the stream's file. Return: 0 or -errno. */
static int ent_to_disk(struct spool *sp, struct spool_stream *ss,
		       struct spool_ent *e, const struct parts *pt)
{
	struct iovec iov[2] = {
		{ (void *)pt->head, pt->head_len },
		{ (void *)pt->data, e->len - pt->head_len },
	};
	ssize_t n;
	int ret = stream_file(sp, ss);

	if (ret < 0)
		return ret;
	n = pwritev(ss->fd, iov, 2, ss->end);
	if (n != (ssize_t)e->len)
		return n < 0 ? -errno : -ENOSPC;
	e->on_disk = true;
	e->off = ss->end;
	ss->end += e->len;
	sp->disk_used += e->len;
	ss->on_disk++;
	ss->c.disk_bytes += e->len;
	return 0;
}

static int ent_to_mem(struct spool *sp, struct spool_stream *ss,
		      struct spool_ent *e, const struct parts *pt)
{
	if (!e->slot && !(e->data = malloc(e->len ? e->len : 1)))
		return -ENOMEM;
	if (pt->head_len)
		memcpy(e->data, pt->head, pt->head_len);
	if (e->len > pt->head_len)
		memcpy(e->data + pt->head_len, pt->data, e->len - pt->head_len);
	sp->mem_used += ent_mem(sp, e);
	if (sp->mem_used > sp->mem_peak)
		sp->mem_peak = sp->mem_used;
	ss->c.mem_bytes += ent_mem(sp, e);
	return 0;
}

/* Whether a page of @len bytes is kept in memory: while it fits, then in
 * the file, then in memory again (see spool.h). */
static bool goes_to_mem(const struct spool *sp, size_t len)
{
	size_t mem = in_slot(&sp->pool, len) ? sp->pool.payload : len;

	return sp->mem_used + mem <= sp->mem_max || sp->disk_failed ||
	       sp->disk_used + len > sp->disk_max;
}

/* Store @e's bytes where goes_to_mem() said (@in_mem); a failed file
 * write falls back to memory. */
static int ent_store(struct spool *sp, struct spool_stream *ss,
		     struct spool_ent *e, const struct parts *data, bool in_mem)
{
	int ret;

	if (in_mem)
		return ent_to_mem(sp, ss, e, data);
	ret = ent_to_disk(sp, ss, e, data);
	if (ret == 0)
		return 0;
	log_warn("cannot spool pages to %s: %s; keeping them in memory and "
		 "reading no more while the memory limit is reached", sp->dir,
		 tc_strerror(ret));
	sp->disk_failed = true;
	return ent_to_mem(sp, ss, e, data);
}

int spool_set_slot(struct spool *sp, size_t bytes)
{
	size_t slot = (sizeof(struct spool_ent) + bytes + 63) & ~(size_t)63;

	if (sp->pool.nchunks || !bytes || slot > SPOOL_CHUNK / 4)
		return -EINVAL;
	sp->pool.slot = slot;
	sp->pool.payload = slot - sizeof(struct spool_ent);
	return 0;
}

int spool_add(struct spool *sp, uint16_t stream, uint64_t seq, uint8_t flags,
	      uint32_t events, const void *data, size_t len, bool sent)
{
	return spool_add_prefixed(sp, stream, seq, flags, events, NULL, 0, data,
				  len, sent);
}

/* Link @e (seq, len, sent filled in) at the end of stream @ss. */
static void stream_append(struct spool_stream *ss, struct spool_ent *e)
{
	if (ss->tail)
		ss->tail->next = e;
	else
		ss->head = e;
	ss->tail = e;
	ss->last_seq = e->seq;
	if (!e->sent && !ss->unsent)
		ss->first_unsent = e;
	ss->unsent += !e->sent;
	ss->c.pages++;
	ss->c.retained_bytes += e->len;
}

/* The stream a page @seq may be added to; NULL for a bad one. */
static struct spool_stream *stream_for(struct spool *sp, uint16_t stream,
				       uint64_t seq)
{
	struct spool_stream *ss;

	if (stream >= sp->nstreams)
		return NULL;
	ss = &sp->st[stream];
	return ss->tail && seq <= ss->last_seq ? NULL : ss;
}

int spool_add_prefixed(struct spool *sp, uint16_t stream, uint64_t seq,
		       uint8_t flags, uint32_t events, const void *head,
		       size_t head_len, const void *data, size_t len, bool sent)
{
	struct parts pt = { head, head_len, data };
	struct spool_stream *ss = stream_for(sp, stream, seq);
	struct spool_ent *e;
	bool in_mem;
	int ret;

	if (!ss || len > UINT32_MAX - head_len)
		return -EINVAL;
	len += head_len;
	in_mem = goes_to_mem(sp, len);
	e = ent_alloc(&sp->pool, len, in_mem);
	if (!e)
		return -ENOMEM;
	e->seq = seq;
	e->len = (uint32_t)len;
	e->events = events;
	e->flags = flags;
	e->sent = sent;
	ret = ent_store(sp, ss, e, &pt, in_mem);
	if (ret < 0) {
		ent_release(sp, e);
		return ret;
	}
	stream_append(ss, e);
	return 0;
}

uint8_t *spool_reserve(struct spool *sp, size_t len)
{
	struct spool_pool *pl = &sp->pool;

	if (!in_slot(pl, len) || !goes_to_mem(sp, len))
		return NULL;
	if (!pl->free && pool_grow(pl) < 0)
		return NULL;
	return (uint8_t *)(pl->free + 1);
}

int spool_commit(struct spool *sp, uint16_t stream, uint64_t seq,
		 uint8_t flags, uint32_t events, const uint8_t *data,
		 size_t len, bool sent)
{
	struct spool_stream *ss = stream_for(sp, stream, seq);
	struct spool_ent *e = sp->pool.free;

	if (!ss || !e || data != (uint8_t *)(e + 1) || len > sp->pool.payload)
		return -EINVAL;
	e = ent_alloc(&sp->pool, len, true);
	e->seq = seq;
	e->len = (uint32_t)len;
	e->events = events;
	e->flags = flags;
	e->sent = sent;
	sp->mem_used += ent_mem(sp, e);
	if (sp->mem_used > sp->mem_peak)
		sp->mem_peak = sp->mem_used;
	ss->c.mem_bytes += ent_mem(sp, e);
	stream_append(ss, e);
	return 0;
}

bool spool_full(const struct spool *sp)
{
	bool disk_full = sp->disk_failed || sp->disk_used >= sp->disk_max;

	return sp->mem_used >= sp->mem_max && disk_full;
}

bool spool_empty(const struct spool *sp)
{
	int i;

	for (i = 0; i < sp->nstreams; i++)
		if (sp->st[i].head)
			return false;
	return true;
}

void spool_ack(struct spool *sp, uint16_t stream, uint64_t seq)
{
	if (stream < sp->nstreams)
		stream_drop(sp, &sp->st[stream], seq, false);
}

void spool_ack_all(struct spool *sp)
{
	int i;

	for (i = 0; i < sp->nstreams; i++)
		stream_drop(sp, &sp->st[i], UINT64_MAX, false);
}

void spool_give_up(struct spool *sp)
{
	int i;

	for (i = 0; i < sp->nstreams; i++)
		stream_drop(sp, &sp->st[i], UINT64_MAX, true);
}

/* The bytes of @e: in memory, or read back into sp->buf. */
static int ent_data(struct spool *sp, struct spool_stream *ss,
		    const struct spool_ent *e, const uint8_t **out)
{
	uint8_t *nb;
	ssize_t n;

	if (!e->on_disk) {
		*out = e->data;
		return 0;
	}
	if (sp->buf_cap < e->len) {
		nb = realloc(sp->buf, e->len);
		if (!nb)
			return -ENOMEM;
		sp->buf = nb;
		sp->buf_cap = e->len;
	}
	n = pread(ss->fd, sp->buf, e->len, e->off);
	if (n != (ssize_t)e->len)
		return n < 0 ? -errno : -EIO;
	*out = sp->buf;
	return 0;
}

/* @e as the page a spool_fn is given (its bytes by ent_data()). */
static int ent_page(struct spool *sp, struct spool_stream *ss,
		    const struct spool_ent *e, struct spool_page *p)
{
	int ret = ent_data(sp, ss, e, &p->data);

	if (ret < 0)
		return ret;
	p->seq = e->seq;
	p->flags = e->flags;
	p->events = e->events;
	p->len = e->len;
	return 0;
}

static int stream_resend(struct spool *sp, int stream, spool_fn fn, void *arg)
{
	struct spool_stream *ss = &sp->st[stream];
	struct spool_page p = { .stream = (uint16_t)stream };
	struct spool_ent *e;
	int ret;

	for (e = ss->head; e; e = e->next) {
		ret = ent_page(sp, ss, e, &p);
		if (ret < 0)
			return ret;
		p.resend = e->sent;
		ret = fn(arg, &p);
		if (ret < 0)
			return ret;
		if (e->sent)
			ss->c.resent_pages++;
		else
			ss->unsent--;
		if (e == ss->first_unsent)
			ss->first_unsent = e->next;
		e->sent = true;
	}
	return 0;
}

bool spool_pending(const struct spool *sp, int stream)
{
	int i;

	if (stream >= 0)
		return stream < sp->nstreams && sp->st[stream].unsent;
	for (i = 0; i < sp->nstreams; i++)
		if (sp->st[i].unsent)
			return true;
	return false;
}

/* The unsent pages of one stream, oldest first, until @fn says stop. */
static int stream_send_pending(struct spool *sp, int stream, spool_fn fn,
			       void *arg)
{
	struct spool_stream *ss = &sp->st[stream];
	struct spool_page p = { .stream = (uint16_t)stream };
	struct spool_ent *e;
	int ret;

	for (e = ss->first_unsent; e && ss->unsent; e = e->next) {
		ret = ent_page(sp, ss, e, &p);	/* p.resend stays false */
		if (ret < 0)
			return ret;
		ret = fn(arg, &p);
		if (ret != 0)
			return ret;
		e->sent = true;
		ss->unsent--;
		ss->first_unsent = e->next;
	}
	return 0;
}

int spool_send_pending(struct spool *sp, int stream, spool_fn fn, void *arg)
{
	int i, ret;

	if (stream >= 0)
		return stream < sp->nstreams ?
		       stream_send_pending(sp, stream, fn, arg) : 0;
	for (i = 0; i < sp->nstreams; i++) {
		ret = stream_send_pending(sp, i, fn, arg);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int spool_resend(struct spool *sp, spool_fn fn, void *arg)
{
	int i, ret;

	for (i = 0; i < sp->nstreams; i++) {
		ret = stream_resend(sp, i, fn, arg);
		if (ret < 0)
			return ret;
	}
	return 0;
}

void spool_counts(const struct spool *sp, int stream, struct spool_counts *out)
{
	if (stream < 0 || stream >= sp->nstreams) {
		memset(out, 0, sizeof(*out));
		return;
	}
	*out = sp->st[stream].c;
}

size_t spool_mem_peak(const struct spool *sp)
{
	return sp->mem_peak;
}
