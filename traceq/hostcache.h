/*
 * hostcache.h - what the renderer (traceq/render.h) asks the collector
 * about while it prints a page, asked once and kept for the rest of the
 * answer: the names of code addresses (QOP_SYMBOLS), and per host its
 * printk_formats (QOP_PRINTK) and pid -> tgid pairs (QOP_TGIDS, for
 * --tgid). The hosts of an answer sit in one find-or-add table; each
 * host's printk table and tgids are fetched at the renderer's first
 * question about that host. Prefix hostcache_.
 *
 * The three lookups are the renderer's callbacks: render_sym_fn,
 * render_printk_fn and render_tgid_fn, their @ctx the struct hostcache.
 * A name is never fetched inside hostcache_sym() (the renderer would wait
 * once per address): it is pending until hostcache_sym_fetch() asks for
 * every pending name in one request per host, and the page is rendered
 * again.
 */
#ifndef TRACEQ_HOSTCACHE_H
#define TRACEQ_HOSTCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct client;
struct hostcache;

/*
 * hostcache_new - an empty cache asking over @c (the caller's, which
 * must outlive it). Return: the cache; NULL: no memory.
 */
struct hostcache *hostcache_new(struct client *c);

/* hostcache_free - free @hc and all it holds; NULL is fine. */
void hostcache_free(struct hostcache *hc);

/*
 * hostcache_sym - a render_sym_fn: the name of @addr on @host (*@start:
 * the symbol's address) when known, else NULL (pending, or none).
 */
const char *hostcache_sym(void *ctx, const char *host, uint64_t addr, uint64_t *start);

/* hostcache_sym_pending - whether hostcache_sym() was asked names not fetched yet. */
bool hostcache_sym_pending(const struct hostcache *hc);

/*
 * hostcache_sym_fetch - fetch every pending name, host by host, as the
 * hosts' symbol tables were at wall time @at; an address no answer
 * covers is given up (it stays unnamed). Return: as client_call().
 */
int hostcache_sym_fetch(struct hostcache *hc, int64_t at);

/*
 * hostcache_printk - a render_printk_fn: @host's printk_formats, fetched
 * at the first call for @host (as of @wall_ns), then kept.
 */
size_t hostcache_printk(void *ctx, const char *host, int64_t wall_ns, const uint64_t **addr,
			char *const **fmt);

/*
 * hostcache_tgid - a render_tgid_fn: the tgid of @pid on @host, 0 when
 * unknown; @host's pairs are fetched at its first call, then kept.
 */
int32_t hostcache_tgid(void *ctx, const char *host, int32_t pid);

#endif
