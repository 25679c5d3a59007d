/*
 * importer.h - trace.dat imports (traceq --import) fed into the collector's
 * ingest as an agent connection's messages and pages are: each import is a
 * sink (ingest_sink_new()) of its own, so a file's pages go through the
 * same decoder, filters, store and receive journal as a live agent's, and
 * the collector's protections against hostile pages and formats apply.
 *
 * Threads: the query endpoint's workers call importer_begin/msg/pages/end
 * (any thread; each blocks until the event loop has run it); the importer
 * runs them on the event loop, the only thread that may call ingest_*,
 * through an eventfd. importer_wrap_hooks(), importer_set_ingest(),
 * importer_stop() and importer_free() are called on the loop's thread.
 *
 * An import's sink id has IMPORTER_ID_BIT set, so that the ingest hooks
 * tell it from an agent connection's (conn.c's ids count from 1).
 */
#ifndef SERVER_IMPORTER_H
#define SERVER_IMPORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct importer;
struct ingest;
struct ingest_hooks;
struct proto_msg;

#define IMPORTER_ID_BIT		(1ull << 62)
#define IMPORTER_MAX		8		/* imports at once */
#define IMPORTER_IDLE_MS	120000		/* an import left without a request this long ends */

/* importer_new - an importer whose calls run on @base. Return: 0; -ENOMEM; -errno. */
int importer_new(struct event_base *base, struct importer **out);

/*
 * importer_wrap_hooks - @h (the connections' ingest hooks) becomes hooks
 * that give imports' results to @im and the rest to the hooks @h held.
 */
void importer_wrap_hooks(struct importer *im, struct ingest_hooks *h);

/* importer_set_ingest - the ingest the imports feed (after ingest_start()). */
void importer_set_ingest(struct importer *im, struct ingest *g);

/*
 * importer_stop - refuse calls from now on (-ESHUTDOWN), fail those
 * waiting, close every import's sink (what was handed over is stored).
 * Before ingest_stop() and before the query endpoint drops its ingest.
 */
void importer_stop(struct importer *im);

/* importer_free - after importer_stop() and ingest_stop(); NULL is fine. */
void importer_free(struct importer *im);

/*
 * importer_begin - a new import under certificate subject @subject (the
 * hosts table's), whose HELLO is @hello (decoded and checked as an
 * agent's; @raw its encoding, for the journal); the ingest takes over what
 * @hello owns. Return: 0 and *@id; -EBUSY (IMPORTER_MAX running),
 * -ESHUTDOWN, -ENOMEM, ingest errors; @err says why.
 */
int importer_begin(struct importer *im, const char *subject, struct proto_msg *hello,
		   const void *raw, size_t rawlen, uint64_t *id, char *err, size_t errlen);

/*
 * The calls below name the import's @id and the @subject that began it
 * (another subject is answered as for an unknown id).
 *
 * importer_msg - control message @m (HEADER_PAGE, FORMAT, CMDLINES,
 * SYMBOLS, CLOCK; @raw its encoding) for import @id.
 * Return: 0; -ENOENT (no such import), TC_ERR_PROTO_STATE (another type),
 * the import's failure; @err says why.
 */
int importer_msg(struct importer *im, const char *subject, uint64_t id, struct proto_msg *m,
		 const void *raw, size_t rawlen, char *err, size_t errlen);

/*
 * importer_pages - @n pages of @page_size bytes at @pages, of CPU @cpu,
 * numbered from @seq, for import @id; waits while the ingest is full.
 * Return: as importer_msg(); TC_ERR_MSG_MALFORMED (CPU out of range).
 */
int importer_pages(struct importer *im, const char *subject, uint64_t id, uint32_t cpu,
		   uint64_t seq, const uint8_t *pages, size_t len, char *err, size_t errlen);

/*
 * importer_end - the end of import @id: with @abort, close it as it is;
 * else BYE, and wait until everything of it is committed (or, with a
 * receive journal, journaled). *@pages, *@events: what it stored.
 * Return: as importer_msg().
 */
int importer_end(struct importer *im, const char *subject, uint64_t id, bool abort,
		 uint64_t *pages, uint64_t *events, char *err, size_t errlen);

#endif
