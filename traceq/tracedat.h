/*
 * tracedat.h - a reader of trace-cmd's trace.dat files (versions 6 and 7,
 * version 7 uncompressed or compressed with zstd), for traceq --import:
 * the file's metadata (header page, event formats, kallsyms, printk
 * formats, saved cmdlines, trace clock) and its ring-buffer pages, raw, as
 * the kernel wrote them, one CPU after the other.
 *
 * Why a reader of our own and not libtracecmd: libtracecmd's public API
 * hands out decoded records (tracecmd_read_data()), while the collector's
 * decoder takes the raw pages an agent ships, so that an import goes
 * through the very checks and code a live agent's pages do. It exports
 * tracecmd_record_page() but no header declares it, so using it would
 * rest on a symbol its authors do not promise to keep; and it reads the
 * whole metadata of an untrusted file with trust we cannot bound. The
 * format is documented (trace-cmd's Documentation/trace-cmd/
 * trace-cmd.dat.v6.txt and .v7.txt) and small: this reader follows that
 * text, caps every size it reads before allocating (TRACEDAT_MAX_*),
 * bounds every loop by a count it has capped, and says in its error which
 * file offset and which part of the file broke which rule.
 *
 * Memory: the metadata is held whole (capped: TRACEDAT_MAX_META in all);
 * the pages are read one at a time (compressed: one chunk at a time, at
 * most TRACEDAT_MAX_CHUNK bytes).
 */
#ifndef TRACEQ_TRACEDAT_H
#define TRACEQ_TRACEDAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TRACEDAT_MAX_PAGE	(1u << 20)	/* a ring-buffer page */
#define TRACEDAT_MIN_PAGE	64u
#define TRACEDAT_MAX_HEADER	(64u << 10)	/* header_page, header_event text */
#define TRACEDAT_MAX_FORMAT	(256u << 10)	/* one event's format text */
#define TRACEDAT_MAX_FORMATS	16384		/* formats in the file */
#define TRACEDAT_MAX_SYSTEMS	4096
#define TRACEDAT_MAX_NAME	255		/* a system, event, buffer or clock name */
#define TRACEDAT_MAX_KALLSYMS	(128u << 20)
#define TRACEDAT_MAX_PRINTK	(16u << 20)
#define TRACEDAT_MAX_CMDLINES	(16u << 20)
#define TRACEDAT_MAX_SECTION	(64u << 20)	/* a v7 metadata section but kallsyms */
#define TRACEDAT_MAX_META	(256u << 20)	/* all metadata held at once */
#define TRACEDAT_MAX_OPTIONS	4096		/* options in one options section */
#define TRACEDAT_MAX_OPTSECTS	64		/* options sections (v7: a chain) */
#define TRACEDAT_MAX_OPTION	(16u << 20)	/* one option's data */
#define TRACEDAT_MAX_CPUS	4096
#define TRACEDAT_MAX_BUFFERS	64		/* instances in the file */
#define TRACEDAT_MAX_CHUNK	(64u << 20)	/* one decompressed chunk of pages */

struct tracedat;

struct tracedat_format {
	const char *system;	/* "ftrace" for trace-cmd's ftrace formats */
	const char *name;	/* from the text's "name: " line */
	const char *text;	/* NUL-terminated, @len bytes */
	size_t len;
};

struct tracedat_info {
	unsigned version;	/* 6 or 7 */
	bool big_endian;
	uint32_t long_size;	/* 4 or 8 */
	uint32_t page_size;	/* of the buffer imported */
	const char *compression;	/* "none", "zstd" */
	const char *header_page;	/* events/header_page text */
	size_t header_page_len;
	const struct tracedat_format *formats;
	size_t nformats;
	const char *kallsyms, *printk, *cmdlines;	/* NUL-terminated; "" when absent */
	size_t kallsyms_len, printk_len, cmdlines_len;
	const char *clock;	/* the buffer's trace clock ("local" when unsaid) */
	const char *buffer;	/* the instance imported ("" for the top one) */
	uint32_t nbuffers;	/* buffers (instances) with data in the file */
	const char *uname;	/* the UNAME option, "" when absent */
	uint32_t ncpus;		/* CPU slots: every page's cpu is below it */
	uint32_t ncpu_data;	/* CPUs with data */
};

/*
 * tracedat_open - read the metadata of the trace.dat in @f (read, seeked;
 * it stays the caller's, and must stay open until tracedat_close()),
 * named @name in errors. Of the buffers (instances) in the file, the one
 * that holds data is imported; more than one with data is refused, the
 * error naming them (tracedat_open_buffer() picks one).
 * Return: 0 and *@out; TC_ERR_MSG_MALFORMED (not a trace.dat, or a rule of
 * the format or a TRACEDAT_MAX_* limit broken: @err says which and at
 * which offset), TC_ERR_NOT_SUPPORTED (another version or compression,
 * latency data), -ENOMEM, -errno. *@out only on success.
 */
int tracedat_open(FILE *f, const char *name, struct tracedat **out, char *err, size_t errlen);

/*
 * tracedat_open_buffer - tracedat_open(), of the buffer named @buffer
 * ("top" for the top instance's; NULL: the one with data). A name no
 * buffer with data has is TC_ERR_NOT_SUPPORTED, @err listing those that
 * have data. @buffer must stay valid until tracedat_close().
 */
int tracedat_open_buffer(FILE *f, const char *name, const char *buffer, struct tracedat **out,
			 char *err, size_t errlen);

/* tracedat_info - what tracedat_open() read; valid until tracedat_close(). */
const struct tracedat_info *tracedat_info(const struct tracedat *td);

/*
 * tracedat_next_page - the next page: CPU by CPU (in the file's order),
 * page by page. *@page stays valid until the next call; *@len is the
 * page size (the last page of a CPU may be shorter when the file says so).
 * Return: 1 and a page; 0 at the end; TC_ERR_MSG_MALFORMED (@err says
 * where), -ENOMEM, -errno.
 */
int tracedat_next_page(struct tracedat *td, uint32_t *cpu, const uint8_t **page, size_t *len,
		       char *err, size_t errlen);

/*
 * tracedat_format_name - the event name of a format text, from its
 * "name: " line (the first line, or one after a newline), into @name
 * (TRACEDAT_MAX_NAME + 1 bytes): the rule this reader holds a file's
 * formats to, and which the writer (tracedat_write.c) keeps.
 * Return: 0; -1 (no such line, or an empty or too long name).
 */
int tracedat_format_name(const char *text, char *name);

/* tracedat_close - free @td (not the FILE); NULL is fine. */
void tracedat_close(struct tracedat *td);

#endif
