/*
 * suggest.h - "did you mean ...?": the known names closest to one a person
 * typed (an unknown field, an unknown event), by edit distance.
 *
 * A name is close when its edit distance (insert, delete, replace, swap two
 * neighbours; letters compared without case) to the typed word is at most
 * a third of the word's length (at least 1, at most 4), or when it holds
 * the word (at least 3 bytes) whole: "pid" suggests "prev_pid". The
 * SUGGEST_MAX closest are kept, nearest first, ties in the order given.
 */
#ifndef TC_COMMON_SUGGEST_H
#define TC_COMMON_SUGGEST_H

#include <stddef.h>

#define SUGGEST_MAX		3	/* names suggested at most */
#define SUGGEST_NAME_MAX	64	/* longer names are not suggested */

struct suggest {
	char word[SUGGEST_NAME_MAX];
	size_t wlen;
	struct {
		char name[SUGGEST_NAME_MAX];
		unsigned dist;
	} best[SUGGEST_MAX];
	size_t n;
};

/* suggest_init - start looking for names close to the @len bytes of @word. */
void suggest_init(struct suggest *s, const char *word, size_t len);

/* suggest_add - consider @name (copied when kept; a name kept already is skipped). */
void suggest_add(struct suggest *s, const char *name);

/*
 * suggest_format - " (did you mean 'a', 'b' or 'c'?)" into @buf, or "" when
 * no name is close. Return: as snprintf().
 */
int suggest_format(const struct suggest *s, char *buf, size_t len);

#endif
