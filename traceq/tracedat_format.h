/*
 * tracedat_format.h - the constants of trace-cmd's trace.dat format that
 * its reader (traceq/tracedat.c) and writer (traceq/tracedat_write.c)
 * share: the magic, the option and section ids, the section flags.
 * trace-cmd's Documentation/trace-cmd/trace-cmd.dat.v6.txt and .v7.txt
 * define them. Prefix TRACEDAT_ (and the ids' OPT_/SEC_).
 */
#ifndef TRACEQ_TRACEDAT_FORMAT_H
#define TRACEQ_TRACEDAT_FORMAT_H

#define TRACEDAT_MAGIC		"\x17\x08\x44tracing"
#define TRACEDAT_MAGIC_LEN	10

/* Option ids (v7: the metadata options 16..21 are also their sections' ids). */
enum {
	OPT_DONE = 0, OPT_DATE = 1, OPT_BUFFER = 3, OPT_TRACECLOCK = 4, OPT_UNAME = 5,
	OPT_OFFSET = 7, OPT_CPUCOUNT = 8, OPT_VERSION = 9,
	OPT_HEADER_INFO = 16, OPT_FTRACE_EVENTS, OPT_EVENT_FORMATS, OPT_KALLSYMS, OPT_PRINTK,
	OPT_CMDLINES, OPT_BUFFER_TEXT
};

/* v7 section flags. */
enum { SEC_FL_COMPRESS = 1 };

/* v7: the pages of a CPU are compressed this many to a chunk (trace-cmd's PAGES_IN_CHUNK). */
#define TRACEDAT_PAGES_IN_CHUNK	10

#endif
