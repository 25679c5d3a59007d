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
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define LOG_PREFIX "spool"
#include "common/log.h"
#include "common/tc_error.h"
#include "agent/spool.h"

struct spool_ent {
	struct spool_ent *next;
	uint64_t seq;
	uint32_t len;
	uint32_t events;
	uint8_t flags;
	bool sent;
	bool on_disk;
	off_t off;		/* on_disk */
	uint8_t *data;		/* !on_disk */
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
	uint64_t disk_max, disk_used;
	char *dir;
	bool disk_failed;	/* logged once; then memory only */
	uint8_t *buf;		/* for reading a page back */
	size_t buf_cap;
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

static void ent_free(struct spool *sp, struct spool_stream *ss,
		     struct spool_ent *e)
{
	if (e->on_disk) {
		ss->on_disk--;
		ss->c.disk_bytes -= e->len;
	} else {
		sp->mem_used -= e->len;
		ss->c.mem_bytes -= e->len;
		free(e->data);
	}
	ss->c.pages--;
	free(e);
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
	e->data = malloc(e->len ? e->len : 1);
	if (!e->data)
		return -ENOMEM;
	if (pt->head_len)
		memcpy(e->data, pt->head, pt->head_len);
	if (e->len > pt->head_len)
		memcpy(e->data + pt->head_len, pt->data, e->len - pt->head_len);
	sp->mem_used += e->len;
	ss->c.mem_bytes += e->len;
	return 0;
}

/* Where the page goes: memory while it fits, then the file, then memory. */
static int ent_store(struct spool *sp, struct spool_stream *ss,
		     struct spool_ent *e, const struct parts *data)
{
	int ret;

	if (sp->mem_used + e->len <= sp->mem_max || sp->disk_failed ||
	    sp->disk_used + e->len > sp->disk_max)
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

int spool_add(struct spool *sp, uint16_t stream, uint64_t seq, uint8_t flags,
	      uint32_t events, const void *data, size_t len, bool sent)
{
	return spool_add2(sp, stream, seq, flags, events, NULL, 0, data, len,
			  sent);
}

int spool_add2(struct spool *sp, uint16_t stream, uint64_t seq, uint8_t flags,
	       uint32_t events, const void *head, size_t head_len,
	       const void *data, size_t len, bool sent)
{
	struct parts pt = { head, head_len, data };
	struct spool_stream *ss;
	struct spool_ent *e;
	int ret;

	if (stream >= sp->nstreams || len > UINT32_MAX - head_len)
		return -EINVAL;
	len += head_len;
	ss = &sp->st[stream];
	if (ss->tail && seq <= ss->last_seq)
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct spool_ent){ .seq = seq, .len = (uint32_t)len,
				 .events = events, .flags = flags, .sent = sent };
	ret = ent_store(sp, ss, e, &pt);
	if (ret < 0) {
		free(e);
		return ret;
	}
	if (ss->tail)
		ss->tail->next = e;
	else
		ss->head = e;
	ss->tail = e;
	ss->last_seq = seq;
	if (!sent && !ss->unsent)
		ss->first_unsent = e;
	ss->unsent += !sent;
	ss->c.pages++;
	ss->c.retained_bytes += len;
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

static int stream_resend(struct spool *sp, int stream, spool_fn fn, void *arg)
{
	struct spool_stream *ss = &sp->st[stream];
	struct spool_page p = { .stream = (uint16_t)stream };
	struct spool_ent *e;
	int ret;

	for (e = ss->head; e; e = e->next) {
		ret = ent_data(sp, ss, e, &p.data);
		if (ret < 0)
			return ret;
		p.seq = e->seq;
		p.flags = e->flags;
		p.events = e->events;
		p.len = e->len;
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
		ret = ent_data(sp, ss, e, &p.data);
		if (ret < 0)
			return ret;
		p.seq = e->seq;
		p.flags = e->flags;
		p.events = e->events;
		p.len = e->len;
		ret = fn(arg, &p);
		if (ret != 0)
			return ret;
		e->sent = true;
		ss->unsent--;
		ss->first_unsent = e->next;
	}
	return 0;
}

int spool_send_pending(struct spool *sp, spool_fn fn, void *arg)
{
	int i, ret;

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
