/*
 * mode_serve.c - traceq --serve [ADDR:]PORT: the page in the user's
 * browser (serve.h), over this traceq's connection to the collector.
 * Prints the page's URL (with its token) on stdout and serves until
 * SIGINT or SIGTERM.
 */
#include "config.h"

#include <stdio.h>

#include "traceq/client.h"
#include "traceq/modes.h"
#include "traceq/serve.h"
#include "traceq/traceq.h"

int mode_serve_run(struct client *c, const struct traceq_opts *o)
{
	struct serve *s;
	char url[256];
	int ret;

	if (serve_open(o->serve, c, o, &s, url, sizeof(url)) < 0)
		return 1;
	printf("%s\n", url);
	if (fflush(stdout) != 0) {
		serve_free(s);
		return 1;
	}
	ret = serve_run(s);
	serve_free(s);
	return ret < 0 ? 1 : 0;
}
