/*
 * suggest.c - the known names closest to a typed one (suggest.h). The
 * distance is the optimal string alignment distance (Levenshtein with
 * swaps of neighbours), over three rows of at most SUGGEST_NAME_MAX + 1.
 */
#include "config.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/suggest.h"

void suggest_init(struct suggest *s, const char *word, size_t len)
{
	memset(s, 0, sizeof(*s));
	s->wlen = len < SUGGEST_NAME_MAX ? len : SUGGEST_NAME_MAX - 1;
	memcpy(s->word, word, s->wlen);
}

static unsigned min3(unsigned a, unsigned b, unsigned c)
{
	unsigned m = a < b ? a : b;

	return m < c ? m : c;
}

static bool same(char a, char b)
{
	return tolower((unsigned char)a) == tolower((unsigned char)b);
}

/* The optimal string alignment distance of @a (@n bytes) and @b (@m). */
static unsigned distance(const char *a, size_t n, const char *b, size_t m)
{
	unsigned rows[3][SUGGEST_NAME_MAX + 1];
	unsigned *prev2 = rows[0], *prev = rows[1], *cur = rows[2], *t;

	for (size_t j = 0; j <= m; j++)
		prev[j] = (unsigned)j;
	for (size_t i = 1; i <= n; i++) {
		cur[0] = (unsigned)i;
		for (size_t j = 1; j <= m; j++) {
			cur[j] = min3(prev[j] + 1, cur[j - 1] + 1,
				      prev[j - 1] + !same(a[i - 1], b[j - 1]));
			if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) &&
			    same(a[i - 2], b[j - 1]) && prev2[j - 2] + 1 < cur[j])
				cur[j] = prev2[j - 2] + 1;
		}
		t = prev2, prev2 = prev, prev = cur, cur = t;
	}
	return prev[m];
}

/* Whether @name holds the typed word whole (without case). */
static bool holds(const struct suggest *s, const char *name, size_t m)
{
	for (size_t i = 0; s->wlen >= 3 && i + s->wlen <= m; i++) {
		size_t k = 0;

		while (k < s->wlen && same(name[i + k], s->word[k]))
			k++;
		if (k == s->wlen)
			return true;
	}
	return false;
}

void suggest_add(struct suggest *s, const char *name)
{
	size_t m = strlen(name), at;
	unsigned d, limit = (unsigned)(s->wlen / 3);

	if (m >= SUGGEST_NAME_MAX || !s->wlen)
		return;
	limit = limit < 1 ? 1 : limit > 4 ? 4 : limit;
	d = distance(s->word, s->wlen, name, m);
	if (d > limit && !holds(s, name, m))
		return;
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->best[i].name, name))
			return;
	for (at = s->n; at > 0 && s->best[at - 1].dist > d; at--)
		;
	if (at == SUGGEST_MAX)
		return;
	if (s->n < SUGGEST_MAX)
		s->n++;
	memmove(&s->best[at + 1], &s->best[at], (s->n - 1 - at) * sizeof(s->best[0]));
	snprintf(s->best[at].name, sizeof(s->best[at].name), "%s", name);
	s->best[at].dist = d;
}

int suggest_format(const struct suggest *s, char *buf, size_t len)
{
	size_t used = 0;
	int n;

	if (!s->n)
		return snprintf(buf, len, "%s", "");
	n = snprintf(buf, len, " (did you mean");
	for (size_t i = 0; n >= 0 && i < s->n; i++) {
		used += (size_t)n;
		n = snprintf(buf + (used < len ? used : len), used < len ? len - used : 0,
			     "%s'%s'", i == 0 ? " " : i + 1 == s->n ? " or " : ", ",
			     s->best[i].name);
	}
	used += (size_t)n;
	n = snprintf(buf + (used < len ? used : len), used < len ? len - used : 0, "?)");
	return (int)(used + (size_t)n);
}
