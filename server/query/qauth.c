/*
 * qauth.c - who may read what through the query endpoint (see qauth.h):
 * the endpoint URLs taken, the scope rules and their defaults, and query
 * log text.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "common/log.h"
#include "common/config_file.h"
#include "common/tc_error.h"
#include "server/query/qauth.h"
#include "server/store/store.h"

#define QAUTH_GROUPS_MAX	256	/* supplementary groups looked at */

/* Whether @host (no brackets) is a numeric loopback address. */
static bool qauth_loopback(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

bool qauth_hostport_loopback(const char *hostport)
{
	const char *colon = strrchr(hostport, ':');
	char host[64];
	size_t hlen = colon ? (size_t)(colon - hostport) : 0;

	if (hlen >= 2 && hostport[0] == '[' && hostport[hlen - 1] == ']')
		hostport++, hlen -= 2;
	if (!colon || !hlen || hlen >= sizeof(host))
		return false;
	memcpy(host, hostport, hlen);
	host[hlen] = 0;
	return qauth_loopback(host);
}

/* tcp://HOST:PORT with @rest = "HOST:PORT": on loopback, by number. */
static int qauth_tcp_check(const char *url, const char *rest, char *why, size_t len)
{
	if (qauth_hostport_loopback(rest))
		return 0;
	snprintf(why, len, "query endpoint %.200s: plain tcp is unauthenticated and taken only "
		 "on a numeric loopback address (tcp://127.0.0.1:PORT or tcp://[::1]:PORT); "
		 "use the ipc socket, or --query-tls HOST:PORT for remote queries", url);
	return TC_ERR_CONFIG;
}

int qauth_url_check(const char *url, char *why, size_t len)
{
	static const char *const tcp[] = { "tcp://", "tcp4://", "tcp6://" };

	if (!strncmp(url, "ipc://", 6) && url[6])
		return 0;
	for (size_t i = 0; i < sizeof(tcp) / sizeof(tcp[0]); i++)
		if (!strncmp(url, tcp[i], strlen(tcp[i])))
			return qauth_tcp_check(url, url + strlen(tcp[i]), why, len);
	if (strstr(url, "tls+"))
		snprintf(why, len, "query endpoint %.200s: nng's TLS cannot tell whose certificate "
			 "a client has; use --query-tls HOST:PORT (client certificates, scopes)",
			 url);
	else
		snprintf(why, len, "query endpoint %.200s: only ipc://PATH, or plain tcp on a "
			 "loopback address, is taken (ws://, inproc://, abstract:// and the like "
			 "have no access control)", url);
	return TC_ERR_CONFIG;
}

/* ---- scope rules ---- */

static void qauth_rule_free(struct qauth_rule *r)
{
	config_items_free(r->globs, r->n);
	free(r->name);
}

void qauth_scopes_free(struct qauth_scopes *sc)
{
	for (size_t i = 0; i < sc->n; i++)
		qauth_rule_free(&sc->v[i]);
	free(sc->v);
	sc->v = NULL;
	sc->n = 0;
}

/* "KIND:NAME" of @id (@idlen bytes) into @r. */
static int qauth_rule_ident(struct qauth_rule *r, const char *id, size_t idlen)
{
	static const struct { const char *prefix; enum qauth_rule_kind kind; } kinds[] = {
		{ "uid:", QAUTH_R_UID }, { "user:", QAUTH_R_USER },
		{ "group:", QAUTH_R_GROUP }, { "cert:", QAUTH_R_CERT },
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t pl = strlen(kinds[i].prefix);
		char *end;

		if (idlen <= pl || strncmp(id, kinds[i].prefix, pl))
			continue;
		r->kind = kinds[i].kind;
		r->name = strndup(id + pl, idlen - pl);
		if (!r->name)
			return -ENOMEM;
		if (r->kind != QAUTH_R_UID)
			return 0;
		errno = 0;
		r->uid = strtoull(r->name, &end, 10);
		return errno || *end || r->name[0] == '-' ? TC_ERR_CONFIG : 0;
	}
	return TC_ERR_CONFIG;
}

/* The comma-separated globs of @list (at least one, at most STORE_SCOPE_MAX) into @r. */
static int qauth_rule_globs(struct qauth_rule *r, const char *list)
{
	int ret = config_parse_items(list, STORE_SCOPE_MAX, &r->globs, &r->n);

	return ret == TC_ERR_TOO_LONG ? TC_ERR_CONFIG : ret;
}

int qauth_scope_parse(struct qauth_scopes *sc, const char *spec, char *err, size_t errlen)
{
	struct qauth_rule r = { 0 }, *v = NULL;
	size_t idlen = strcspn(spec, " \t");
	const char *list = spec + idlen;
	int ret;

	list += strspn(list, " \t");
	ret = qauth_rule_ident(&r, spec, idlen);
	if (ret == 0)
		ret = qauth_rule_globs(&r, list);
	if (ret == 0 && !(v = realloc(sc->v, (sc->n + 1) * sizeof(*v))))
		ret = -ENOMEM;
	if (ret < 0) {
		if (ret == TC_ERR_CONFIG)
			snprintf(err, errlen, "scope '%.200s': expected 'cert:NAME|uid:N|user:NAME|"
				 "group:NAME GLOB[,GLOB...]' (at most %d globs)", spec,
				 STORE_SCOPE_MAX);
		qauth_rule_free(&r);
		return ret;
	}
	sc->v = v;
	sc->v[sc->n++] = r;
	return 0;
}

/*
 * Whether local user @pw (NULL: no such uid) is in group @name: 1, 0, or
 * -1 when it cannot be told (a lookup failed, too many groups): then the
 * caller must not fall back to a wider default.
 */
static int qauth_in_group(const struct passwd *pw, const char *name)
{
	char buf[16384];
	struct group gr, *g = NULL;
	gid_t groups[QAUTH_GROUPS_MAX];
	int n = QAUTH_GROUPS_MAX, rc;

	if (!pw)
		return 0;
	rc = getgrnam_r(name, &gr, buf, sizeof(buf), &g);
	if (rc != 0)
		return -1;
	if (!g)
		return 0;
	if (pw->pw_gid == g->gr_gid)
		return 1;
	if (getgrouplist(pw->pw_name, pw->pw_gid, groups, &n) < 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (groups[i] == g->gr_gid)
			return 1;
	return 0;
}

/* Whether rule @r names @who (@pw: the local user of a uid, or NULL): 1, 0, -1 (unknown). */
static int qauth_rule_names(const struct qauth_rule *r, const struct qauth_who *who,
			    const struct passwd *pw)
{
	if (who->kind == QAUTH_CERT)
		return r->kind == QAUTH_R_CERT && !strcmp(r->name, who->cert);
	if (who->kind != QAUTH_UID)
		return 0;
	switch (r->kind) {
	case QAUTH_R_UID: return r->uid == who->uid;
	case QAUTH_R_USER: return pw && !strcmp(pw->pw_name, r->name);
	case QAUTH_R_GROUP: return qauth_in_group(pw, r->name);
	default: return 0;
	}
}

int qauth_scope_of(const struct qauth_scopes *sc, const struct qauth_who *who, bool *all,
		   const char **globs, size_t max, size_t *n)
{
	struct passwd pwbuf, *pw = NULL;
	char buf[16384];
	bool named = false;
	int names;

	*n = 0;
	*all = who->kind == QAUTH_TCP ||
	       (who->kind == QAUTH_UID && (who->uid == 0 || who->uid == (uint64_t)geteuid()));
	if (*all)
		return 0;
	/* a lookup that fails must not widen the scope to the default: no host */
	if (who->kind == QAUTH_UID &&
	    getpwuid_r((uid_t)who->uid, &pwbuf, buf, sizeof(buf), &pw) != 0)
		return TC_ERR_CONFIG;
	for (size_t i = 0; sc && i < sc->n; i++) {
		names = qauth_rule_names(&sc->v[i], who, pw);
		if (names < 0) {
			*n = 0;
			return TC_ERR_CONFIG;
		}
		if (!names)
			continue;
		named = true;
		for (size_t k = 0; k < sc->v[i].n; k++) {
			if (*n == max) {
				*n = 0;
				return TC_ERR_TOO_LONG;
			}
			globs[(*n)++] = sc->v[i].globs[k];
		}
	}
	*all = !named && who->kind == QAUTH_UID;
	return 0;
}

/* ---- log text ---- */

const char *qauth_who_str(const struct qauth_who *who, char *buf, size_t len)
{
	struct passwd pwbuf, *pw = NULL;
	char tmp[1024], esc[LOG_ESC_LEN];

	switch (who->kind) {
	case QAUTH_UID:
		if (getpwuid_r((uid_t)who->uid, &pwbuf, tmp, sizeof(tmp), &pw) != 0)
			pw = NULL;
		snprintf(buf, len, "uid %llu (%s)", (unsigned long long)who->uid,
			 pw ? log_escape(pw->pw_name, esc, sizeof(esc)) : "no such user");
		break;
	case QAUTH_CERT:
		snprintf(buf, len, "cert %s", log_escape(who->cert, esc, sizeof(esc)));
		break;
	default:
		snprintf(buf, len, "tcp loopback (no identity)");
	}
	return buf;
}

/* ---- rights (import, snapshot) ---- */

int qauth_right_of(const struct qauth_scopes *rights, const char *key, const char *verb,
		   const struct qauth_who *who, bool *all, const char **globs, size_t max,
		   size_t *n, char *why, size_t len)
{
	char w[QAUTH_NAME_MAX * 4 + 64];
	int ret;

	*all = false;
	*n = 0;
	if (who->kind == QAUTH_UID && (who->uid == 0 || who->uid == (uint64_t)getuid())) {
		*all = true;
		return 1;
	}
	if (who->kind == QAUTH_TCP) {
		snprintf(why, len, "a plain tcp client may not %s: ask over the collector's "
			 "ipc socket or its TLS query port, which say who asks", verb);
		return 0;
	}
	ret = rights ? qauth_scope_of(rights, who, all, globs, max, n) : 0;
	if (ret == 0 && !*all && *n)
		return 1;
	qauth_who_str(who, w, sizeof(w));
	if (ret < 0)
		snprintf(why, len, "%.200s: its %s rights could not be resolved (%s)", w, key,
			 tc_strerror(ret));
	else
		snprintf(why, len, "%.200s may not %s: no `%s` line of the collector's "
			 "configuration names it (only root and the collector's own user may "
			 "without one)", w, verb, key);
	*all = false;
	*n = 0;
	return 0;
}
