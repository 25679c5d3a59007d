/*
 * store_index.c - the field index settings of the store ("index" in
 * tracecollectd's configuration): parsing and freeing. What the backend
 * does with them is store_set_indexes() (sqlite_index.c). Apart from the
 * backend, so that the config fuzz target can run it alone; with the
 * shared types (store_types.h), below the front and the backend alike.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "server/store/store_types.h"

#define STORE_INDEXES_MAX	256
#define IX_NAME_CHARS	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
#define IX_GLOB_CHARS	IX_NAME_CHARS "*?[]!-"

void store_indexes_free(struct store_indexes *ix)
{
	for (size_t i = 0; i < ix->n; i++) {
		free(ix->v[i].system);
		free(ix->v[i].event);
		free(ix->v[i].field);
	}
	free(ix->v);
	ix->v = NULL;
	ix->n = 0;
}

static int ix_add(struct store_indexes *ix, const char *sys, size_t nsys, const char *ev,
		  size_t nev, const char *field, size_t nfield)
{
	struct store_index *v = realloc(ix->v, (ix->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	ix->v = v;
	v += ix->n;
	v->system = strndup(sys, nsys);
	v->event = strndup(ev, nev);
	v->field = strndup(field, nfield);
	if (!v->system || !v->event || !v->field) {
		free(v->system);
		free(v->event);
		free(v->field);
		return -ENOMEM;
	}
	ix->n++;
	return 0;
}

static int ix_fail(char *err, size_t errlen, const char *spec, const char *what)
{
	snprintf(err, errlen, "index '%s': %s (expected 'SYSTEM[:EVENT] FIELD[,FIELD...]'"
		 " or 'none')", spec, what);
	return TC_ERR_CONFIG;
}

/* "none" with blanks around it */
static bool ix_none(const char *p)
{
	return !strncmp(p, "none", 4) && !p[4 + strspn(p + 4, " \t")];
}

/* The FIELD list at @f of the indexes of SYSTEM @sys and EVENT @ev. */
static int ix_fields(struct store_indexes *ix, const char *spec, const char *f, const char *sys,
		     size_t nsys, const char *ev, size_t nev, char *err, size_t errlen)
{
	int ret = 0;

	for (size_t k = 0; ret == 0; k++) {
		size_t n;

		f += strspn(f, " \t,");
		if (!*f)
			return k ? 0 : ix_fail(err, errlen, spec, "no FIELD");
		n = strspn(f, IX_NAME_CHARS);
		if (!n || !strchr(" \t,", f[n]))	/* also takes the end */
			return ix_fail(err, errlen, spec, "a FIELD is a name of letters, digits"
				       " and '_'");
		if (ix->n >= STORE_INDEXES_MAX)
			return ix_fail(err, errlen, spec, "more than 256 indexes");
		ret = ix_add(ix, sys, nsys, ev, nev, f, n);
		f += n;
	}
	return ret;
}

int store_index_parse(struct store_indexes *ix, const char *spec, char *err, size_t errlen)
{
	const char *p = spec + strspn(spec, " \t"), *ev = "*";
	size_t n_token = strcspn(p, " \t"), nsys = strcspn(p, ":"), nev = 1, n;
	int ret;

	if (ix_none(p)) {
		store_indexes_free(ix);
		return 0;
	}
	if (strspn(p, IX_GLOB_CHARS ":") < n_token)
		return ix_fail(err, errlen, spec, "SYSTEM:EVENT holds a character that no event"
			       " name has");
	if (nsys < n_token) {
		ev = p + nsys + 1;
		nev = n_token - nsys - 1;
	} else {
		nsys = n_token;
	}
	if (!nsys || !nev || memchr(ev, ':', nev))
		return ix_fail(err, errlen, spec, "no SYSTEM[:EVENT]");
	n = ix->n;
	ret = ix_fields(ix, spec, p + n_token, p, nsys, ev, nev, err, errlen);
	while (ret < 0 && ix->n > n) {	/* @ix as it was */
		struct store_index *v = &ix->v[--ix->n];

		free(v->system);
		free(v->event);
		free(v->field);
	}
	return ret;
}
