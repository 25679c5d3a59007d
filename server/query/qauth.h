/*
 * qauth.h - who may read what through the query endpoint: which endpoint
 * URLs tracecollectd takes, who a query comes from (a local uid over the
 * ipc socket, a client certificate over the TLS query port), the scopes
 * the configuration gives those identities, and how a query is written
 * into the log (who asked and what, peer text escaped).
 *
 * The scope decides which hosts' data an identity sees; the store applies
 * it to every read (server/store/store.h, struct store_scope). Defaults
 * when no scope line names an identity (PROTOCOL.md, "Who may query"):
 *  - root and the collector's own uid see every host, scope lines or not;
 *  - another local uid got through the ipc socket's mode and group (the
 *    query group), so it sees every host unless a uid:, user: or group:
 *    line names it; then only the hosts of every line that names it;
 *  - a certificate sees only what cert:CN lines give it: nothing without;
 *  - a plain tcp loopback client (asked for by name, for tests) has no
 *    identity: it sees every host, as any local user could.
 */
#ifndef SERVER_QAUTH_H
#define SERVER_QAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QAUTH_NAME_MAX	256	/* a certificate CN kept for a request */

enum qauth_kind {
	QAUTH_TCP,	/* plain tcp on loopback: no identity */
	QAUTH_UID,	/* ipc: the peer's uid (SO_PEERCRED via nng) */
	QAUTH_CERT,	/* TLS query port: the verified certificate's CN */
};

/* Who sent a request. */
struct qauth_who {
	enum qauth_kind kind;
	uint64_t uid;			/* QAUTH_UID */
	char cert[QAUTH_NAME_MAX];	/* QAUTH_CERT: subject CN */
};

enum qauth_rule_kind { QAUTH_R_UID, QAUTH_R_USER, QAUTH_R_GROUP, QAUTH_R_CERT };

/* One `scope = IDENTITY GLOB[,GLOB...]` line. */
struct qauth_rule {
	enum qauth_rule_kind kind;
	uint64_t uid;		/* QAUTH_R_UID */
	char *name;		/* user, group or certificate CN */
	char **globs;
	size_t n;
};

struct qauth_scopes {
	struct qauth_rule *v;
	size_t n;
};

/*
 * qauth_url_check - whether tracecollectd may listen for queries on @url:
 * ipc://PATH, or tcp:// (tcp4://, tcp6://) on a numeric loopback address
 * (127.0.0.0/8, [::1]). Everything else - tcp on another or a wildcard
 * address, ws://, tls+tcp:// (nng's TLS cannot say whose certificate it
 * is), inproc://, abstract:// (no permissions) - is refused.
 * Return: 0; TC_ERR_CONFIG with a sentence in @why.
 */
int qauth_url_check(const char *url, char *why, size_t len);

/*
 * qauth_hostport_loopback - whether "HOST:PORT" ("[V6]:PORT") names a
 * numeric loopback address (127.0.0.0/8, ::1), the only place where the
 * collector serves anything unauthenticated (plain tcp queries, plain
 * HTTP /metrics). Names such as localhost are not taken: no resolver
 * decides who may connect.
 */
bool qauth_hostport_loopback(const char *hostport);

/*
 * qauth_scope_parse - add the rule of @spec ("cert:NAME", "uid:N",
 * "user:NAME" or "group:NAME", blanks, then comma-separated host globs)
 * to @sc. Return: 0; TC_ERR_CONFIG with a sentence in @err; -ENOMEM.
 */
int qauth_scope_parse(struct qauth_scopes *sc, const char *spec, char *err, size_t errlen);
void qauth_scopes_free(struct qauth_scopes *sc);

/*
 * qauth_scope_of - the hosts @who may read under @sc (see the defaults
 * above): *@all, or the globs of every rule that names @who (pointers into
 * @sc, at most @max; *@n 0: no host at all). May look up users and groups
 * (getpwuid_r, getgrouplist): call it on a thread that may block.
 * Return: 0; TC_ERR_TOO_LONG when the rules give more than @max globs;
 * TC_ERR_CONFIG when a user or group lookup failed. On an error *@all is
 * false and *@n 0: the caller shows no host rather than a wider default.
 */
int qauth_scope_of(const struct qauth_scopes *sc, const struct qauth_who *who, bool *all,
		   const char **globs, size_t max, size_t *n);

/*
 * qauth_right_of - what the right lines @rights (`KEY = IDENTITY [GLOBS]`:
 * import, snapshot; parsed by qauth_scope_parse(), no globs being "*")
 * give @who. Root and the collector's own uid over ipc hold every right
 * (*@all); a plain tcp client (no identity) none; any other identity the
 * globs of the lines that name it (pointers into @rights, at most @max).
 * @key is the lines' key and @verb what the right lets one do ("import",
 * "take snapshots"), for the sentence in @why.
 * Return: 1 and *@all or the globs in @globs, *@n; 0 refused, @why says
 * why (no line names it, no identity, its lines could not be resolved).
 */
int qauth_right_of(const struct qauth_scopes *rights, const char *key, const char *verb,
		   const struct qauth_who *who, bool *all, const char **globs, size_t max,
		   size_t *n, char *why, size_t len);

/* qauth_who_str - "uid 65534 (nobody)", "cert alice", "tcp loopback" into @buf. */
const char *qauth_who_str(const struct qauth_who *who, char *buf, size_t len);


#endif
