/*
 * hostmap.h - names mapped to host-name globs, by `KEY = NAME GLOB[,GLOB...]`
 * lines of the collector's configuration. Two tables are made of them:
 *
 *  - which host names an agent's certificate may store under (host-map).
 *    An agent names its host in HELLO; the collector stores under that
 *    name only when it is the certificate's own (subject CN or a DNS name,
 *    tls_peer_has_name()) or when the collector's configuration maps the
 *    certificate's CN to host-name globs: `host-map = CN GLOB[,GLOB...]`,
 *    for a gateway that forwards for several hosts;
 *  - which hosts form a freeze group (freeze-group, freeze.h): `freeze-group
 *    = NAME GLOB[,GLOB...]`, matched against the host names the first
 *    table bound to certificates.
 *
 * Module-private to server/.
 */
#ifndef SERVER_HOSTMAP_H
#define SERVER_HOSTMAP_H

#include <stdbool.h>
#include <stddef.h>

struct hostmap;

/*
 * hostmap_add - add one `NAME GLOB[,GLOB...]` entry (@spec, the value of
 * the line @key, which errors name) to *@map, making the map when *@map is
 * NULL. NAME (a CN, a group) is everything before the last run of blanks
 * (a CN may hold blanks; globs may not), GLOBs are fnmatch(3) patterns
 * matched against the whole host name; a NAME may appear in several
 * entries, its globs add up.
 *
 * Return: 0; TC_ERR_CONFIG with @err saying what is wrong (no blank, an
 * empty glob, over 64 globs in an entry); -ENOMEM.
 */
int hostmap_add(struct hostmap **map, const char *key, const char *spec, char *err,
		size_t errlen);

/*
 * hostmap_allows - whether a glob of @name's entries in @map matches @host
 * (host-map: certificate @name may store as @host; freeze-group: @host is
 * in group @name). NULL @map: no.
 */
bool hostmap_allows(const struct hostmap *map, const char *name, const char *host);

/*
 * hostmap_names - the distinct names of @map whose globs match @host
 * (freeze-group: @host's groups), in the order of their first entries,
 * into @out (at most @max; they point into @map, valid until it is freed).
 * Return: how many were written.
 */
size_t hostmap_names(const struct hostmap *map, const char *host, const char **out, size_t max);

/* hostmap_count - entries in @map (0 for NULL). */
size_t hostmap_count(const struct hostmap *map);

/* hostmap_free - free @map and what it holds; NULL is fine. */
void hostmap_free(struct hostmap *map);

#endif
