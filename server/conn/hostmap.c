/*
 * hostmap.c - names (certificate CNs, freeze groups) -> host-name globs
 * (see hostmap.h).
 *
 * A short list, scanned: at each HELLO (once per connection); at each
 * trigger freeze an agent reports (FROZE), for the groups it reaches; and
 * once per recorder connected when a group's freeze goes ahead, which is
 * at most once per --freeze-interval (FREEZE_GROUP_S, 10 s, by default)
 * per group (freeze.c). A collector has a few gateways and groups, not
 * thousands: a scan is no more work than the message that asks for it.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config_file.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "server/conn/hostmap.h"

#define HOSTMAP_MAX_GLOBS	64	/* in one entry */

struct hostmap_entry {
	char *cn;			/* the name: a CN, a group */
	char **globs;
	size_t nglobs;
};

struct hostmap {
	struct hostmap_entry *v;
	size_t n;
};

static void entry_free(struct hostmap_entry *e)
{
	config_items_free(e->globs, e->nglobs);
	free(e->cn);
}

/* Split "g1,g2" into @e's globs. Return: 0, TC_ERR_CONFIG, -ENOMEM. */
static int parse_globs(const char *key, const char *list, struct hostmap_entry *e, char *err,
		       size_t errlen)
{
	int ret = config_parse_items(list, HOSTMAP_MAX_GLOBS, &e->globs, &e->nglobs);

	if (ret == TC_ERR_CONFIG)
		tc_seterr(err, errlen, "%s: empty glob in '%s'", key, list);
	if (ret != TC_ERR_TOO_LONG)
		return ret;
	tc_seterr(err, errlen, "%s: more than %d globs in one entry", key, HOSTMAP_MAX_GLOBS);
	return TC_ERR_CONFIG;
}

/*
 * Split @spec into @e's name (before the last run of blanks, trailing
 * blanks dropped) and globs. Return: 0, TC_ERR_CONFIG, -ENOMEM.
 */
static int parse_entry(const char *key, const char *spec, struct hostmap_entry *e, char *err,
		       size_t errlen)
{
	const char *end = spec + strlen(spec), *blank, *cn_end;
	char *globs;
	int ret;

	while (end > spec && util_is_space(end[-1]))
		end--;
	for (blank = end; blank > spec && !util_is_space(blank[-1]); blank--)
		;
	for (cn_end = blank; cn_end > spec && util_is_space(cn_end[-1]); cn_end--)
		;
	if (cn_end == spec || blank == end) {
		tc_seterr(err, errlen, "%s: expected '%s GLOB[,GLOB...]', got '%s'", key,
			  strcmp(key, "host-map") ? "NAME" : "CN", spec);
		return TC_ERR_CONFIG;
	}
	e->cn = strndup(spec, (size_t)(cn_end - spec));
	globs = strndup(blank, (size_t)(end - blank));
	ret = e->cn && globs ? parse_globs(key, globs, e, err, errlen) : -ENOMEM;
	free(globs);
	return ret;
}

int hostmap_add(struct hostmap **map, const char *key, const char *spec, char *err,
		size_t errlen)
{
	struct hostmap_entry e = { 0 }, *v = NULL;
	int ret = parse_entry(key, spec, &e, err, errlen);

	if (ret == 0 && !*map && !(*map = calloc(1, sizeof(**map))))
		ret = -ENOMEM;
	if (ret == 0 && !(v = realloc((*map)->v, ((*map)->n + 1) * sizeof(*v))))
		ret = -ENOMEM;
	if (ret < 0) {
		entry_free(&e);
		return ret;
	}
	(*map)->v = v;
	(*map)->v[(*map)->n++] = e;
	return 0;
}

static bool entry_matches(const struct hostmap_entry *e, const char *host)
{
	for (size_t j = 0; j < e->nglobs; j++)
		if (!fnmatch(e->globs[j], host, 0))
			return true;
	return false;
}

bool hostmap_allows(const struct hostmap *map, const char *name, const char *host)
{
	for (size_t i = 0; map && i < map->n; i++)
		if (!strcmp(map->v[i].cn, name) && entry_matches(&map->v[i], host))
			return true;
	return false;
}

size_t hostmap_names(const struct hostmap *map, const char *host, const char **out, size_t max)
{
	size_t n = 0, k;

	for (size_t i = 0; map && i < map->n && n < max; i++) {
		if (!entry_matches(&map->v[i], host))
			continue;
		for (k = 0; k < n && strcmp(out[k], map->v[i].cn); k++)
			;
		if (k == n)
			out[n++] = map->v[i].cn;
	}
	return n;
}

size_t hostmap_count(const struct hostmap *map)
{
	return map ? map->n : 0;
}

void hostmap_free(struct hostmap *map)
{
	if (!map)
		return;
	for (size_t i = 0; i < map->n; i++)
		entry_free(&map->v[i]);
	free(map->v);
	free(map);
}
