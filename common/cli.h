/*
 * cli.h - what the command lines of traceagent, tracecollectd and traceq
 * share: the one line (and the hint) for an option getopt_long() refused,
 * the --version line, and the reading of an option's number. The short letters themselves are in each man
 * page's table: one letter, one meaning in every program that has it.
 */
#ifndef TC_COMMON_CLI_H
#define TC_COMMON_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

/*
 * cli_bad_option - say what getopt_long() refused, in one line, and the hint.
 * @prog: the program's name
 * @longopts: the table getopt_long() was given
 * @argv: the argument vector it was given
 * @c: what it returned: '?' (unknown, ambiguous, or an argument where none is
 *     taken) or ':' (an argument missing; the option string starts with ':',
 *     after a '+' if any, and opterr is 0)
 *
 * Prints e.g. "traceq: unknown option '--foo'" and "Try 'traceq --help'." on
 * stderr. Call right after getopt_long() returned @c (it reads optind and
 * optopt).
 */
void cli_bad_option(const char *prog, const struct option *longopts, char *const argv[], int c);

/*
 * CLI_OPTIONS_END - the last entries of a getopt_long() table: --help
 * (-h) and --version (-V), which mean the same in every program, and the
 * table's end.
 */
#define CLI_OPTIONS_END \
	{ "help", no_argument, NULL, 'h' }, { "version", no_argument, NULL, 'V' }, { 0 }

/* cli_hint - "Try 'PROG --help'." on stderr. */
void cli_hint(const char *prog);

/* cli_version - "PROG (tracecollect) VERSION" on stdout: the --version line. */
void cli_version(const char *prog);

/*
 * cli_parse_num - an option's decimal number: digits only (no sign, no
 * blanks), in [@min, @max]. Return: true and *@out; false for anything
 * else (*@out untouched).
 */
bool cli_parse_num(const char *s, long min, long max, long *out);

#endif
