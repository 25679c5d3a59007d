/*
 * hostcache.c - the renderer's questions to the collector, asked once
 * (hostcache.h): a table of code addresses' names keyed by host and
 * address, and one find-or-add table of the answer's hosts holding each
 * host's printk_formats and tgids.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/qmsg.h"
#include "traceq/client.h"
#include "traceq/hostcache.h"
#include "traceq/traceq.h"

/*
 * Code addresses named for the renderer, per host: filled by QOP_SYMBOLS
 * requests. A page of rows is rendered once; the addresses the renderer
 * asked for and did not find wait as "pending", are asked for in one
 * request per host, and the page is rendered again (printer.c).
 */
#define SYMS_MAX	(1u << 20)	/* names kept in all */

struct sym_entry {
	char *host;
	uint64_t addr, start;
	char *name;		/* NULL: none (or not yet asked) */
	bool asked;
};

struct syms {
	struct sym_entry *e;
	size_t n, cap;		/* cap: a power of two, open addressing */
	size_t pending;
};

static size_t sym_hash(const char *host, uint64_t addr, size_t cap)
{
	uint64_t h = addr * 0x9e3779b97f4a7c15ull;

	while (*host)
		h = (h ^ (unsigned char)*host++) * 0x100000001b3ull;
	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static struct sym_entry *sym_slot(struct syms *t, const char *host, uint64_t addr)
{
	size_t i = sym_hash(host, addr, t->cap);

	while (t->e[i].host && (t->e[i].addr != addr || strcmp(t->e[i].host, host)))
		i = (i + 1) & (t->cap - 1);
	return &t->e[i];
}

static int syms_grow(struct syms *t)
{
	struct syms n = { .cap = t->cap ? t->cap * 2 : 1024, .pending = t->pending };

	n.e = calloc(n.cap, sizeof(*n.e));
	if (!n.e)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		if (t->e[i].host)
			*sym_slot(&n, t->e[i].host, t->e[i].addr) = t->e[i];
	n.n = t->n;
	free(t->e);
	*t = n;
	return 0;
}

static void syms_free(struct syms *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		free(t->e[i].host);
		free(t->e[i].name);
	}
	free(t->e);
}


/*
 * The hosts of an answer, each found or added once: what the renderer
 * asked about it, fetched at its first question (printk_formats: before
 * the host's first row is rendered, as libtraceevent reads its printk
 * table once; tgids: with --tgid, at the host's first row).
 */
#define HOSTS_MAX	4096	/* hosts kept */
#define TGIDS_MAX	(1u << 22)	/* pairs kept per host: pid_max's limit */

struct host {
	char *name;
	bool printk_asked, tgid_asked;
	size_t nprintk;
	uint64_t *printk_addr;
	char **printk_fmt;
	uint32_t ntgid;
	struct tgid_pair {
		int32_t pid, tgid;
	} *tgids;		/* sorted by pid */
};

struct hostcache {
	struct client *c;
	struct syms syms;
	struct host *h;
	size_t n;
};

const char *hostcache_sym(void *ctx, const char *host, uint64_t addr, uint64_t *start)
{
	struct syms *t = &((struct hostcache *)ctx)->syms;
	struct sym_entry *e;

	if ((t->n + 1) * 2 > t->cap && (t->n >= SYMS_MAX || syms_grow(t) < 0))
		return NULL;
	e = sym_slot(t, host, addr);
	if (!e->host) {
		if (!(e->host = strdup(host)))
			return NULL;
		e->addr = addr;
		t->n++;
		t->pending++;
	}
	if (e->name)
		*start = e->start;
	return e->name;
}

/* The answer of one QOP_SYMBOLS request into @t. */
static void syms_take(struct syms *t, const char *host, const struct qmsg_reply *rep)
{
	for (uint32_t i = 0; rep->ncols == 3 && i < rep->nrows; i++) {
		const struct qmsg_value *row = &rep->vals[i * 3];
		struct sym_entry *e;

		if (row[0].kind != QV_UINT)
			continue;
		e = sym_slot(t, host, row[0].u);
		if (!e->host || e->asked)
			continue;
		e->asked = true;
		t->pending--;
		if (row[1].kind == QV_STR && (e->name = strdup(row[1].s.p)))
			e->start = (uint64_t)qmsg_value_int(&row[2]);
	}
}

/* Ask the collector for the pending names of @host; mark them asked. */
static int syms_fetch_host(struct client *c, struct syms *t, const char *host, int64_t at)
{
	char q[QMSG_MAX_REQUEST / 2];
	struct qmsg_request req = { .op = QOP_SYMBOLS, .query = q, .host = (char *)host,
				    .to_ts = at };
	struct qmsg_reply rep;
	size_t len = 0, n = 0;
	int ret;

	q[0] = 0;
	for (size_t i = 0; i < t->cap && n < QMSG_MAX_ROWS; i++) {
		struct sym_entry *e = &t->e[i];

		if (!e->host || e->asked || strcmp(e->host, host) || len + 18 > sizeof(q))
			continue;
		len += (size_t)snprintf(q + len, sizeof(q) - len, "%" PRIx64 " ", e->addr);
		n++;
	}
	if (!n)
		return 0;
	ret = client_call(c, &req, &rep);
	if (ret)
		return ret;
	syms_take(t, host, &rep);
	qmsg_reply_free(&rep);
	return 0;
}

bool hostcache_sym_pending(const struct hostcache *hc)
{
	return hc->syms.pending != 0;
}

int hostcache_sym_fetch(struct hostcache *hc, int64_t at)
{
	struct syms *t = &hc->syms;
	int ret = 0, rounds = 0;

	while (t->pending && ret == 0 && rounds++ < 64) {
		const char *host = NULL;

		for (size_t i = 0; i < t->cap && !host; i++)
			if (t->e[i].host && !t->e[i].asked)
				host = t->e[i].host;
		if (!host)
			break;
		ret = syms_fetch_host(hc->c, t, host, at);
		for (size_t i = 0; ret == 0 && i < t->cap; i++)
			if (t->e[i].host && !t->e[i].asked && !strcmp(t->e[i].host, host) &&
			    rounds >= 63) {
				t->e[i].asked = true;
				t->pending--;
			}
	}
	return ret;
}


/* What @h holds (@h itself is in the table's array). */
static void host_drop(struct host *h)
{
	while (h->nprintk)
		free(h->printk_fmt[--h->nprintk]);
	free(h->printk_fmt);
	free(h->printk_addr);
	free(h->tgids);
	free(h->name);
}

struct hostcache *hostcache_new(struct client *c)
{
	struct hostcache *hc = calloc(1, sizeof(*hc));

	if (hc)
		hc->c = c;
	return hc;
}

void hostcache_free(struct hostcache *hc)
{
	if (!hc)
		return;
	syms_free(&hc->syms);
	for (size_t i = 0; i < hc->n; i++)
		host_drop(&hc->h[i]);
	free(hc->h);
	free(hc);
}

/* @name's entry, added (empty) at its first sight. NULL: full, or no memory. */
static struct host *host_get(struct hostcache *hc, const char *name)
{
	struct host *h;

	for (size_t i = 0; i < hc->n; i++)
		if (!strcmp(hc->h[i].name, name))
			return &hc->h[i];
	if (hc->n >= HOSTS_MAX || !(h = realloc(hc->h, (hc->n + 1) * sizeof(*hc->h))))
		return NULL;
	hc->h = h;
	h = &hc->h[hc->n];
	*h = (struct host){ .name = strdup(name) };
	if (!h->name)
		return NULL;
	hc->n++;
	return h;
}

/* The rows of a QOP_PRINTK reply into @h. */
static void printk_take(struct host *h, const struct qmsg_reply *rep)
{
	h->printk_addr = calloc(rep->nrows + 1, sizeof(*h->printk_addr));
	h->printk_fmt = calloc(rep->nrows + 1, sizeof(*h->printk_fmt));
	for (uint32_t i = 0; h->printk_addr && h->printk_fmt && rep->ncols == 2 &&
			     i < rep->nrows; i++) {
		const struct qmsg_value *row = &rep->vals[i * 2];

		if (row[0].kind != QV_UINT || row[1].kind != QV_STR)
			continue;
		h->printk_addr[h->nprintk] = row[0].u;
		h->printk_fmt[h->nprintk] = strdup(row[1].s.p);
		h->nprintk += h->printk_fmt[h->nprintk] != NULL;
	}
}

size_t hostcache_printk(void *ctx, const char *host, int64_t wall_ns, const uint64_t **addr,
			char *const **fmt)
{
	struct hostcache *hc = ctx;
	struct qmsg_request req = { .op = QOP_PRINTK, .host = (char *)host, .to_ts = wall_ns };
	struct host *h = host_get(hc, host);
	struct qmsg_reply rep;

	if (!h)
		return 0;
	if (!h->printk_asked) {
		h->printk_asked = true;
		if (client_call(hc->c, &req, &rep) == 0) {
			printk_take(h, &rep);
			qmsg_reply_free(&rep);
		}
	}
	*addr = h->printk_addr;
	*fmt = h->printk_fmt;
	return h->nprintk;
}

/* Append the rows of one QOP_TGIDS reply; the last pid into *@last. */
static int tgid_take(struct host *h, const struct qmsg_reply *rep, int32_t *last)
{
	struct tgid_pair *p;

	if (rep->ncols != 2 || h->ntgid + rep->nrows > TGIDS_MAX)
		return -1;
	p = realloc(h->tgids, (h->ntgid + rep->nrows + 1) * sizeof(*h->tgids));
	if (!p)
		return -1;
	h->tgids = p;
	for (uint32_t i = 0; i < rep->nrows; i++) {
		const struct qmsg_value *row = &rep->vals[i * 2];
		int32_t pid = (int32_t)qmsg_value_int(&row[0]);

		if (pid <= *last)
			return -1;	/* not in pid order: keep what came */
		h->tgids[h->ntgid].pid = *last = pid;
		h->tgids[h->ntgid++].tgid = (int32_t)qmsg_value_int(&row[1]);
	}
	return 0;
}

/* Every pid -> tgid pair of @h, page by page (by pid). */
static void tgid_fetch(struct client *c, struct host *h)
{
	struct qmsg_request req = { .op = QOP_TGIDS, .host = h->name };
	struct qmsg_reply rep;
	int32_t last = -1;
	bool more = true;

	while (more && client_call(c, &req, &rep) == 0) {
		more = rep.more && rep.nrows;
		if (tgid_take(h, &rep, &last) < 0)
			more = false;
		qmsg_reply_free(&rep);
		req.after_id = last > 0 ? (uint64_t)last : 0;
	}
}

int32_t hostcache_tgid(void *ctx, const char *host, int32_t pid)
{
	struct hostcache *hc = ctx;
	struct host *h = host_get(hc, host);
	uint32_t lo = 0, hi;

	if (!h)
		return 0;
	if (!h->tgid_asked) {
		h->tgid_asked = true;
		tgid_fetch(hc->c, h);
	}
	for (hi = h->ntgid; lo < hi;) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (h->tgids[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < h->ntgid && h->tgids[lo].pid == pid ? h->tgids[lo].tgid : 0;
}
