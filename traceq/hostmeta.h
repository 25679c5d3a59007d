/*
 * hostmeta.h - what a host's kernel said of itself in one boot, as the
 * collector keeps it (query op 10, "headers"; proto/PROTOCOL.md): the
 * events/header_page and events/header_event texts, sizeof(long), byte
 * order, page size, trace clock, and the format of every event type as
 * that kernel (or a program's ring) sent it. What a trace.dat writer puts
 * in a file's header for that host (traceq --export). Prefix hostmeta_.
 */
#ifndef TRACEQ_HOSTMETA_H
#define TRACEQ_HOSTMETA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct client;

/* One event type's format, the text verbatim as the agent sent it. */
struct hostmeta_format {
	char *system;
	char *name;
	char *text;
};

/*
 * A traced program's ring the host announced in the boot (a GROUP): its
 * streams [first_stream, first_stream + nstreams), a stream's buffer
 * (its CPU in a trace.dat export) being stream - first_stream.
 */
struct hostmeta_program {
	uint32_t first_stream, nstreams;
	int64_t since_ns;	/* wall clock of the connection that announced it */
};

struct hostmeta {
	char *boot_id;		/* the boot described; "" when the collector named none */
	char *kernel;		/* uname -r; NULL: not known */
	char *trace_clock;	/* e.g. "mono", "x86-tsc"; NULL: not known */
	uint32_t long_size;	/* 4 or 8; 0: not known (a host stored before it was kept) */
	bool big_endian;
	uint32_t page_size;	/* the ring-buffer page's bytes; 0: not known */
	char *header_page;	/* events/header_page, verbatim; NULL: not kept */
	char *header_event;	/* events/header_event; NULL: the agent sent none */
	size_t nformats;
	struct hostmeta_format *formats;	/* in the store's order of formats */
	size_t formats_cap;	/* private: room in formats */
	size_t nprograms;
	struct hostmeta_program *programs;	/* in the order they were announced */
	size_t programs_cap;	/* private: room in programs */
};

/*
 * hostmeta_get - ask the collector over @c for host @host's (its exact
 * name, within the asker's scope) boot that was up at wall-clock
 * @wall_ns (0: the latest boot), formats page by page (each reply at
 * most 2 MiB of text), into *@out (hostmeta_free() it).
 * Context: traceq's one thread; may be called between client_send() and
 * client_next() (the reply in flight is kept).
 * Return: 0 (*@out set); 1 (the collector or transport failed, or out of
 * memory: said on stderr); 2 (the request was refused: said); 4 (the
 * collector does not know @host or keeps nothing of it, or it is an
 * older collector without the op: nothing said, *@out untouched).
 */
int hostmeta_get(struct client *c, const char *host, int64_t wall_ns, struct hostmeta *out);

/* hostmeta_free - free what *@m holds (not @m itself); a zeroed one is fine. */
void hostmeta_free(struct hostmeta *m);

#endif
