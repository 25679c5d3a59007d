/*
 * fgraph_config.c - the function tracers' configuration (TC_FTRACE*
 * environment variables, documented in lib/fgraph.h).
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ring.h"
#include "lib/fgraph.h"

/* The ring's pages: 32 KiB, the most the ring takes, unless
 * TC_FTRACE_PAGE_KB says otherwise. A traced call pays for its share of
 * a page turn (~45 ns in C, once per page), so bigger pages make every
 * call cheaper: ns per call with the same 16 MiB buffer (bench/run
 * hooks, 2.5 GHz Xeon guest) 22.4 at 4 KiB pages, 21.8 at 8, 21.5 at
 * 16 and 21.3 at 32. The events are the same; the agent tells the
 * collector the pages' size and ships each without its unused end. */
#define FG_PAGE_KB_DEFAULT	32
#define FG_PAGE_KB_MAX		32
#define FG_BUFFER_KB_DEFAULT	1024	/* per CPU, and per thread buffer */

/* Split "a,b,c" into a NULL-terminated array; NULL for NULL or "". */
static int split_globs(const char *s, char ***out)
{
	char **v = NULL, *copy = NULL, *tok, *save;
	size_t n = 0;

	if (!s || !*s) {
		*out = NULL;
		return 0;
	}
	copy = strdup(s);
	v = calloc(strlen(s) / 2 + 2, sizeof(*v));
	if (!copy || !v)
		goto fail;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (*tok && !(v[n++] = strdup(tok)))
			goto fail;
	free(copy);
	if (!n) {
		free(v);
		v = NULL;
	}
	*out = v;
	return 0;
fail:
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
	free(copy);
	return -ENOMEM;
}

static void free_globs(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* A decimal number, or 0 when @s is NULL. */
static int parse_num(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s) {
		*out = 0;
		return 0;
	}
	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *end || errno || v > max || *s == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

/* A per-CPU size in KiB as pages of @page_kb KiB: a power of 2 >= 2. */
static uint32_t kb_to_pages(uint64_t kb, uint64_t page_kb)
{
	uint32_t pages = 2;

	while ((uint64_t)pages * page_kb < kb)
		pages *= 2;
	return pages;
}

static int parse_tracer(const char *s, enum fgraph_tracer *out)
{
	if (!s || !*s)
		*out = FGRAPH_OFF;
	else if (!strcmp(s, "function"))
		*out = FGRAPH_FUNCTION;
	else if (!strcmp(s, "function_graph"))
		*out = FGRAPH_GRAPH;
	else
		return -EINVAL;
	return 0;
}

int fgraph_config_parse(const char *(*get)(const char *name),
			struct fgraph_config *out)
{
	struct fgraph_config c = { 0 };
	uint64_t depth, wait, entries, kb, page_kb, own = 0;
	const char *own_s;
	int ret;

	ret = parse_tracer(get("TC_FTRACE"), &c.tracer);
	if (!ret)
		ret = parse_num(get("TC_FTRACE_DEPTH"), UINT32_MAX, &depth);
	if (!ret)
		ret = parse_num(get("TC_FTRACE_THRESH"), UINT32_MAX,
				&c.thresh_us);
	if (!ret)
		ret = parse_num(get("TC_FTRACE_WAIT_MS"), 600000, &wait);
	if (!ret)
		ret = parse_num(get("TC_FTRACE_ENTRIES"), 1, &entries);
	if (!ret)
		ret = parse_num(get("TC_FTRACE_BUFFER_KB"), 1u << 22, &kb);
	if (!ret)
		ret = parse_num(get("TC_FTRACE_PAGE_KB"), FG_PAGE_KB_MAX,
				&page_kb);
	if (!ret && page_kb && (page_kb < 4 || (page_kb & (page_kb - 1))))
		ret = -EINVAL;	/* the ring's: 4, 8, 16 or 32 KiB */
	own_s = get("TC_FTRACE_THREAD_BUFS");
	if (!ret && own_s)
		ret = parse_num(own_s, RING_MAX_OWN, &own);
	if (ret)
		return ret;
	c.own_bufs = own_s ? (int32_t)own : -1;
	c.max_depth = (uint32_t)depth;
	c.wait_ms = (uint32_t)wait;
	c.entries = entries != 0;
	if (!page_kb)
		page_kb = FG_PAGE_KB_DEFAULT;
	c.page_size = (uint32_t)page_kb * 1024;
	c.pages_per_cpu = kb_to_pages(kb ? kb : FG_BUFFER_KB_DEFAULT, page_kb);
	c.ring_path = get("TC_FTRACE_RING");
	ret = split_globs(get("TC_FTRACE_FILTER"), &c.include);
	if (!ret)
		ret = split_globs(get("TC_FTRACE_NOTRACE"), &c.exclude);
	if (ret) {
		fgraph_config_free(&c);
		return ret;
	}
	*out = c;
	return 0;
}

void fgraph_config_free(struct fgraph_config *c)
{
	free_globs(c->include);
	free_globs(c->exclude);
	c->include = c->exclude = NULL;
}

int fgraph_glob_list_match(char *const *globs, const char *name)
{
	for (; globs && *globs; globs++)
		if (!fnmatch(*globs, name, 0))
			return 1;
	return 0;
}
