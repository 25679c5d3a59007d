/*
 * hostmap.h - which host names an agent's certificate may store under.
 *
 * An agent names its host in HELLO; the collector stores under that name
 * only when it is the certificate's own (subject CN or a DNS name,
 * tls_peer_has_name()) or when the collector's configuration maps the
 * certificate's CN to host-name globs: `host-map = CN GLOB[,GLOB...]`, for
 * a gateway that forwards for several hosts. Module-private to server/.
 */
#ifndef SERVER_HOSTMAP_H
#define SERVER_HOSTMAP_H

#include <stdbool.h>
#include <stddef.h>

struct hostmap;

/*
 * hostmap_add - add one `CN GLOB[,GLOB...]` entry (@spec) to *@map, making
 * the map when *@map is NULL. CN is everything before the last run of
 * blanks (a CN may hold blanks; globs may not), GLOBs are fnmatch(3)
 * patterns matched against the whole host name; a CN may appear in several
 * entries, its globs add up.
 *
 * Return: 0; TC_ERR_CONFIG with @err saying what is wrong (no blank, an
 * empty glob, over 64 globs in an entry); -ENOMEM.
 */
int hostmap_add(struct hostmap **map, const char *spec, char *err, size_t errlen);

/* hostmap_allows - whether @map lets certificate @cn store as @host. NULL @map: no. */
bool hostmap_allows(const struct hostmap *map, const char *cn, const char *host);

/* hostmap_count - entries in @map (0 for NULL). */
size_t hostmap_count(const struct hostmap *map);

/* hostmap_free - free @map and what it holds; NULL is fine. */
void hostmap_free(struct hostmap *map);

#endif
