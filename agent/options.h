/*
 * options.h - traceagent's command line and -C FILE: the options table, the
 * defaults, --help, and the checks a usage error comes from. Prefix
 * options_. main.c runs what they ask for.
 *
 * Exit statuses: 0 after a clean run (or --help, --version), 1 for a
 * runtime failure (one line on stderr saying what and why), 2 for a usage
 * error (one line and the hint).
 */
#ifndef AGENT_OPTIONS_H
#define AGENT_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/config_file.h"
#include "common/log.h"
#include "agent/pump.h"
#include "agent/recorder.h"
#include "agent/session.h"

#define OPTIONS_PROG		"traceagent"
#define OPTIONS_EXIT_RUNTIME	1
#define OPTIONS_EXIT_USAGE	2

/* What the command line (and -C FILE) asked for; the pointers are argv's
 * or @conf's. */
struct options {
	struct session_conf session;	/* --connect, --cert, --key, --ca,
					 * --ack-timeout-ms, --connections,
					 * --insecure-plain, --no-pushdown;
					 * not .stop (main.c's) */
	struct pump_conf pump;		/* --flush-ms, --read-mode, --spool-*,
					 * --user-dir, --no-user; not
					 * .snapshot (main.c's) */
	const char **events;
	size_t nevents;
	long duration_s;		/* 0: until a signal */
	char instance[128];
	const char *name;		/* NULL: the certificate's CN (or gethostname()) */
	size_t buffer_kb;		/* 0: the kernel's default */
	size_t subbuf_kb;		/* 0: the kernel's default */
	bool subbuf_set;		/* given: failing to set it fails */
	enum log_level level;
	long drain_s;
	const char *tracer;		/* -p: kernel function tracer */
	bool no_kernel_symbols;		/* --no-kernel-symbols */
	bool no_comm_events;		/* --no-comm-events */
	const char **ffilters;		/* --ftrace-filter globs */
	size_t nffilters;
	char **exec_argv;		/* --exec: the program to trace */
	const char *trace_clock;	/* --trace-clock: "auto", "mono", "x86-tsc" */
	struct config_list conf;	/* -C FILE: owns the values above point to */
	char **conf_exec;		/* exec = ...: its words, NULL-terminated */
	bool connect_default;		/* the next --connect replaces the list */
	bool events_from_conf;		/* a command-line -e replaces them */
	bool ffilters_from_conf;	/* the same for --ftrace-filter */
	bool stack_all;			/* --stacktrace: every event */
	bool user_stack;		/* --user-stacktrace */
	const char **stacks;		/* --stacktrace=SPEC: agent/stacks.h */
	size_t nstacks;
	struct recorder_conf rec;	/* --flight-recorder, --freeze-on, --group */
	bool buffer_set;		/* --buffer-kb given */
};

/*
 * options_parse - the defaults, then -C FILE's settings, then the command
 * line @argv (which wins; its -e and --ftrace-filter replace the file's
 * lists), into @o. --help and --version print on stdout; a usage error
 * prints its line and the hint on stderr. @argv must outlive @o.
 *
 * Return: 0 to run; -1 to exit 0 (--help, --version); else the exit
 * status (OPTIONS_EXIT_USAGE, or OPTIONS_EXIT_RUNTIME out of memory).
 * Call options_free() either way.
 */
int options_parse(struct options *o, int argc, char **argv);

/* options_free - what options_parse() allocated in @o. */
void options_free(struct options *o);

#endif
