/*
 * cli.c - what the programs' command lines share (cli.h): the one line a
 * refused option gets, the --version line, an option's number.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli.h"

void cli_hint(const char *prog)
{
	fprintf(stderr, "Try '%s --help'.\n", prog);
}

void cli_version(const char *prog)
{
	printf("%s (%s) %s\n", prog, PACKAGE_NAME, PACKAGE_VERSION);
}

bool cli_parse_num(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* The long option @arg ("--name" or "--name=value") names, by its name's @len bytes. */
static size_t long_name_len(const char *arg)
{
	return strcspn(arg + 2, "=");
}

/* How many of @longopts' names start with @len bytes of @name; the last in *@last. */
static int prefix_matches(const struct option *longopts, const char *name, size_t len,
			  const struct option **last)
{
	int n = 0;

	for (const struct option *o = longopts; o->name; o++) {
		if (strncmp(o->name, name, len))
			continue;
		if (strlen(o->name) == len) {	/* exact: the only one */
			*last = o;
			return 1;
		}
		*last = o;
		n++;
	}
	return n;
}

/* "could be --a, --b": the names @len bytes of @name start. */
static void print_candidates(const struct option *longopts, const char *name, size_t len)
{
	const char *sep = " (could be";

	for (const struct option *o = longopts; o->name; o++)
		if (!strncmp(o->name, name, len)) {
			fprintf(stderr, "%s --%s", sep, o->name);
			sep = ",";
		}
	fputs(")", stderr);
}

/* A long option refused: unknown, ambiguous, or with an argument it does not take. */
static void bad_long(const char *prog, const struct option *longopts, const char *arg, int c)
{
	size_t len = long_name_len(arg);
	const struct option *o = NULL;
	int n = prefix_matches(longopts, arg + 2, len, &o);

	if (n == 0)
		fprintf(stderr, "%s: unknown option '--%.*s'", prog, (int)len, arg + 2);
	else if (n > 1) {
		fprintf(stderr, "%s: option '--%.*s' is ambiguous", prog, (int)len, arg + 2);
		print_candidates(longopts, arg + 2, len);
	} else if (c == ':')
		fprintf(stderr, "%s: option '--%s' needs an argument", prog, o->name);
	else
		fprintf(stderr, "%s: option '--%s' takes no argument", prog, o->name);
	fputc('\n', stderr);
}

void cli_bad_option(const char *prog, const struct option *longopts, char *const argv[], int c)
{
	const char *arg = optind > 0 ? argv[optind - 1] : NULL;
	bool is_long = arg && !strncmp(arg, "--", 2) && arg[2];

	/*
	 * getopt_long() has stepped past a long option it refused, so it is
	 * argv[optind - 1]; a short one may sit inside a cluster ("-vZ"): its
	 * letter is optopt (0 only for an unknown or ambiguous long option).
	 */
	if (optopt && is_long && c == '?' && !strchr(arg, '='))
		is_long = false;	/* "-Z" after a "--name" that took no argument */
	if (is_long)
		bad_long(prog, longopts, arg, c);
	else if (c == ':')
		fprintf(stderr, "%s: option '-%c' needs an argument\n", prog, optopt);
	else
		fprintf(stderr, "%s: unknown option '-%c'\n", prog, optopt);
	cli_hint(prog);
}
