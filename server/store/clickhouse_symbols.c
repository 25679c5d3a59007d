/*
 * clickhouse_symbols.c - store_symbol_name() and store_symbol_sized() on
 * ClickHouse (clickhouse_symbols.h): sqlite_symbols.c's search, on a
 * reader's cache.
 *
 * The search is SQLite's: of the host's programs announced no later than
 * the row (since_ns <= ts), the one whose pid is the row's first (not the
 * kernel's), then the latest, at most CH_SYM_CANDIDATES; the first with a
 * symbol at or below the address that covers it names it (a sized symbol
 * must contain it; an unsized one is taken for the kernel, within
 * CH_SYM_UNSIZED_MAX bytes otherwise). Programs of equal since_ns come in
 * program_id order (descending), where SQLite takes its rowid's. The size
 * store_symbol_sized() prints is SQLite's too: up to the program's first
 * address above the one asked (no symbol lies between them), asked with
 * the symbol, in the same query; only a sized lookup asks for it, as it
 * reads all the candidates' symbols, where a plain one reads those at or
 * below the address.
 *
 * A select asks once per row, and a round trip to the server per row
 * would cost more than the row. So a reader keeps what it asked: each
 * host's programs (one query per host), and per (program, address) the
 * symbol at or below it, and the next address above it once a sized
 * lookup asked (one query for all candidates of an address).
 * Programs and symbols are facts, sent before the events they name
 * (clickhouse_txn.c), but more come as agents announce them: the cache
 * is dropped when it is older than CH_SYM_TTL_MS, so a name reads what
 * was stored up to that long before the read, as a read on SQLite sees
 * what was committed when it started.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "common/util.h"
#include "proto/symbols.h"
#include "server/store/clickhouse_symbols.h"
#include "server/store/clickhouse_util.h"

#define CH_SYM_CANDIDATES	8	/* programs tried per address (SQLite's) */
#define CH_SYM_UNSIZED_MAX	0x10000	/* a user symbol without size covers this */
#define CH_SYM_TTL_MS		1000	/* the cache is dropped after this */
#define CH_SYM_SLOTS		4096	/* (program, address) answers kept */
#define CH_SYM_HOSTS		16	/* hosts whose programs are kept */
#define CH_SYM_PROGRAMS		100000	/* programs of one host read, at most */

struct ch_prog {
	uint64_t id;
	int64_t since;
	int32_t pid;
	bool kernel;		/* grp 0 */
};

struct ch_host_progs {
	uint64_t host_id;
	struct ch_prog *v;
	size_t n;
};

/*
 * The symbol of a program at or below an address: found, or not (name
 * NULL); next, the program's first address above it (0: none), known
 * when sized (a plain lookup does not ask for it).
 */
struct ch_sym_slot {
	uint64_t prog, addr;
	bool used, sized;
	uint64_t start, size, next;
	char *name;
	char *module;	/* sized only: the symbol's module, "" for none */
};

struct ch_symcache {
	int64_t born_ms;
	struct ch_host_progs hosts[CH_SYM_HOSTS];
	size_t nhosts;
	struct ch_sym_slot slots[CH_SYM_SLOTS];
};

static void ch_symcache_clear(struct ch_symcache *c)
{
	for (size_t i = 0; i < c->nhosts; i++)
		free(c->hosts[i].v);
	c->nhosts = 0;
	for (size_t i = 0; i < CH_SYM_SLOTS; i++) {
		free(c->slots[i].name);
		free(c->slots[i].module);
		c->slots[i] = (struct ch_sym_slot){ 0 };
	}
	c->born_ms = util_now_ms();
}

void ch_symbols_free(struct ch_store *s)
{
	if (s->syms)
		ch_symcache_clear(s->syms);
	free(s->syms);
	s->syms = NULL;
}

/* The reader's cache, made or dropped as its age says. */
static struct ch_symcache *ch_symcache(struct ch_store *s)
{
	if (!s->syms) {
		s->syms = calloc(1, sizeof(*s->syms));
		if (s->syms)
			s->syms->born_ms = util_now_ms();
	} else if (util_now_ms() - s->syms->born_ms > CH_SYM_TTL_MS) {
		ch_symcache_clear(s->syms);
	}
	return s->syms;
}

/* @host_id's programs, read once into the cache. */
static int ch_host_progs(struct ch_store *s, struct ch_symcache *c, uint64_t host_id,
			 const struct ch_host_progs **out)
{
	struct ch_host_progs *h;
	struct ch_reply r = { 0 };
	struct ch_sql q;
	int ret;

	for (size_t i = 0; i < c->nhosts; i++)
		if (c->hosts[i].host_id == host_id) {
			*out = &c->hosts[i];
			return 0;
		}
	if (c->nhosts == CH_SYM_HOSTS)
		ch_symcache_clear(c);
	ch_sql_init(&q, 0);
	ch_sql_addf(&q, "SELECT program_id, any(grp), any(pid), any(since_ns) FROM programs"
		    " WHERE host_id = %llu GROUP BY program_id LIMIT %d",
		    (unsigned long long)host_id, CH_SYM_PROGRAMS);
	ret = ch_query(s, &q, &r);
	ch_sql_free(&q);
	h = &c->hosts[c->nhosts];
	*h = (struct ch_host_progs){ .host_id = host_id };
	if (ret == 0 && !(h->v = calloc(r.nrows + 1, sizeof(*h->v))))
		ret = -ENOMEM;
	for (size_t i = 0; ret == 0 && i < r.nrows; i++) {
		struct ch_prog *p = &h->v[h->n];
		int64_t pid = 0;
		uint64_t grp = 1;

		if (ch_reply_u64(&r, i, 0, &p->id) || ch_reply_u64(&r, i, 1, &grp) ||
		    ch_reply_i64(&r, i, 2, &pid) || ch_reply_i64(&r, i, 3, &p->since))
			continue;
		p->pid = (int32_t)pid;
		p->kernel = grp == 0;
		h->n++;
	}
	ch_reply_free(&r);
	if (ret < 0) {
		free(h->v);
		return ret;
	}
	c->nhosts++;
	*out = h;
	return 0;
}

/* Whether program @a comes before @b for a row of @pid (SQLite's ORDER BY). */
static bool ch_prog_before(const struct ch_prog *a, const struct ch_prog *b, int32_t pid)
{
	bool am = a->pid == pid && !a->kernel, bm = b->pid == pid && !b->kernel;

	if (am != bm)
		return am;
	if (a->since != b->since)
		return a->since > b->since;
	return a->id > b->id;
}

/* The candidates for a row of @pid at @ts, in order, into @out; their count. */
static size_t ch_candidates(const struct ch_host_progs *h, int32_t pid, int64_t ts,
			    const struct ch_prog **out)
{
	size_t n = 0, j;

	for (size_t i = 0; i < h->n; i++) {
		const struct ch_prog *p = &h->v[i];

		if (p->since > ts ||
		    (n == CH_SYM_CANDIDATES && !ch_prog_before(p, out[n - 1], pid)))
			continue;
		j = n < CH_SYM_CANDIDATES ? n++ : n - 1;	/* full: the last one goes */
		for (; j > 0 && ch_prog_before(p, out[j - 1], pid); j--)
			out[j] = out[j - 1];
		out[j] = p;
	}
	return n;
}

/* A candidate's symbol at or below the address: from the cache or a reply. */
struct ch_sym_ans {
	bool cached;
	uint64_t start, size, next;	/* next: as ch_sym_slot's */
	const char *name;	/* NULL: none */
	const char *module;	/* sized: its module ("" none); else NULL */
};

static struct ch_sym_slot *ch_slot(struct ch_symcache *c, uint64_t prog, uint64_t addr)
{
	uint64_t h = (prog ^ (addr * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	return &c->slots[(h >> 32) % CH_SYM_SLOTS];
}

/*
 * The query for the symbols at or below @addr, up to "program_id IN (";
 * @sized: with the next address above, for which every symbol of the
 * candidates is read, not only those at or below @addr, and the module.
 */
static void ch_syms_select(struct ch_sql *q, uint64_t addr, bool sized)
{
	if (sized) {
		ch_sql_raw(q, "SELECT program_id, maxIf(addr, addr <= ");
		ch_sql_u64(q, addr);
		ch_sql_raw(q, " AS below) AS a, argMaxIf(size, (addr, name), below),"
			      " argMaxIf(name, (addr, name), below), minIf(addr, NOT below),"
			      " argMaxIf(module, (addr, name), below)"
			      " FROM symbols WHERE program_id IN (");
	} else {
		ch_sql_raw(q, "SELECT program_id, max(addr), argMax(size, (addr, name)),"
			      " argMax(name, (addr, name)) FROM symbols WHERE addr <= ");
		ch_sql_u64(q, addr);
		ch_sql_raw(q, " AND program_id IN (");
	}
}

/*
 * The answers of the @n candidates for @addr into @ans: the cache's (for
 * @sized, only those that know the next address), and for the rest one
 * query (its reply into @r, which @ans then points into). A program with
 * no symbol at or below @addr has no row.
 */
static int ch_syms_answer(struct ch_store *s, struct ch_symcache *c,
			  const struct ch_prog *const *cand, size_t n, uint64_t addr, bool sized,
			  struct ch_sym_ans *ans, struct ch_reply *r)
{
	struct ch_sql q;
	size_t asked = 0;
	uint64_t prog;
	int ret;

	ch_sql_init(&q, 0);
	ch_syms_select(&q, addr, sized);
	for (size_t i = 0; i < n; i++) {
		const struct ch_sym_slot *sl = ch_slot(c, cand[i]->id, addr);

		ans[i] = (struct ch_sym_ans){ 0 };
		if (sl->used && sl->prog == cand[i]->id && sl->addr == addr &&
		    (sl->sized || !sized)) {
			ans[i] = (struct ch_sym_ans){ true, sl->start, sl->size, sl->next,
						      sl->name, sl->module };
			continue;
		}
		ch_sql_raw(&q, asked++ ? ", " : "");
		ch_sql_u64(&q, cand[i]->id);
	}
	ch_sql_raw(&q, sized ? ") GROUP BY program_id HAVING countIf(below) > 0" :
			       ") GROUP BY program_id");
	ret = asked ? ch_query(s, &q, r) : 0;
	ch_sql_free(&q);
	for (size_t k = 0; ret == 0 && k < r->nrows; k++)
		for (size_t i = 0; i < n; i++)
			if (!ans[i].cached && ch_reply_u64(r, k, 0, &prog) == 0 &&
			    prog == cand[i]->id && ch_reply_u64(r, k, 1, &ans[i].start) == 0 &&
			    ch_reply_u64(r, k, 2, &ans[i].size) == 0 &&
			    (!sized || ch_reply_u64(r, k, 4, &ans[i].next) == 0)) {
				ans[i].name = ch_reply_cell(r, k, 3);
				ans[i].module = sized ? ch_reply_cell(r, k, 5) : NULL;
			}
	return ret;
}

/* The answers a query gave, kept (after they were used: a slot may be reused). */
static void ch_syms_keep(struct ch_symcache *c, const struct ch_prog *const *cand, size_t n,
			 uint64_t addr, bool sized, const struct ch_sym_ans *ans)
{
	for (size_t i = 0; i < n; i++) {
		struct ch_sym_slot *sl;
		char *name = NULL, *module = NULL;

		if (ans[i].cached || (ans[i].name && !(name = strdup(ans[i].name))))
			continue;
		if (ans[i].module && !(module = strdup(ans[i].module))) {
			free(name);
			continue;
		}
		sl = ch_slot(c, cand[i]->id, addr);
		free(sl->name);
		free(sl->module);
		*sl = (struct ch_sym_slot){ cand[i]->id, addr, true, sized, ans[i].start,
					    ans[i].size, ans[i].next, name, module };
	}
}

/* Whether @a, @p's symbol at or below @addr, covers it (SQLite's rule). */
static bool ch_sym_covers(const struct ch_prog *p, const struct ch_sym_ans *a, uint64_t addr)
{
	if (!a->name)
		return false;
	return a->size ? addr - a->start < a->size :
	       p->kernel || addr - a->start < CH_SYM_UNSIZED_MAX;
}

/* @a's name for @addr into @buf, as sqlite_symbols.c prints it. */
static void ch_sym_format(const struct ch_sym_ans *a, uint64_t addr, unsigned flags, char *buf,
			  size_t len)
{
	if (flags & STORE_SYM_SIZED)
		proto_sym_format_sized(buf, len, a->name, addr - a->start,
				       a->next ? a->next - a->start : 0, a->module);
	else
		proto_sym_format(buf, len, a->name, addr - a->start);
}

static int ch_symbol_name(struct store_reader *rd, uint64_t host_id, int32_t pid, int64_t ts,
			  uint64_t addr, unsigned flags, char *buf, size_t len)
{
	struct ch_store *s = ch_reader_of(rd);
	struct ch_symcache *c = ch_symcache(s);
	const struct ch_prog *cand[CH_SYM_CANDIDATES];
	struct ch_sym_ans ans[CH_SYM_CANDIDATES];
	const struct ch_host_progs *h;
	struct ch_reply r = { 0 };
	bool sized = flags & STORE_SYM_SIZED;
	size_t n;
	int ret;

	if (!c)
		return -ENOMEM;
	ret = ch_host_progs(s, c, host_id, &h);
	if (ret < 0)
		return ret;
	n = ch_candidates(h, pid, ts, cand);
	ret = ch_syms_answer(s, c, cand, n, addr, sized, ans, &r);
	if (ret == 0) {
		ret = -ENOENT;
		for (size_t i = 0; ret == -ENOENT && i < n; i++)
			if (ch_sym_covers(cand[i], &ans[i], addr)) {
				ch_sym_format(&ans[i], addr, flags, buf, len);
				ret = 0;
			}
		ch_syms_keep(c, cand, n, addr, sized, ans);
	}
	ch_reply_free(&r);
	return ret;
}

void ch_symbols_reader_ops(struct store_reader_ops *r)
{
	r->symbol_name = ch_symbol_name;
}
