/*
 * tracecollectd - the collector: accepts agents over mutual TLS, decodes
 * their ring-buffer pages, stores events in SQLite and answers queries.
 *
 * main() only parses settings (command line over config file), sets up the
 * parts (store, TLS, listener, query endpoint, ingest worker), runs the
 * libevent loop and tears down on SIGINT/SIGTERM; SIGHUP reloads the
 * server-side filters. Only main dies; the parts return errors.
 */
#include "config.h"

#define LOG_PREFIX NULL

#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <openssl/ssl.h>

#include "common/cli.h"
#include "common/config_file.h"
#include "common/lathist.h"
#include "common/lockfile.h"
#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "proto/tls.h"
#include "server/conn/conn.h"
#include "server/ingest/ingest.h"
#include "server/notify.h"
#include "server/ownfiles.h"
#include "server/query/metrics.h"
#include "server/query/queryd.h"
#include "server/query/queryd_tls.h"

#define COMMIT_MS	250
/*
 * A ClickHouse store's: each commit is an INSERT per event type, each a
 * part on the server's disk to write and merge, and ClickHouse asks for
 * about one INSERT per table per second. Measured with bench/run scale
 * (5M events): 250 ms -> 1000 ms took the server's CPU from 11 s to 6 s.
 */
#define COMMIT_MS_REMOTE	1000
#define QUEUE_BYTES	(64u << 20)
#define MAX_FILTERS	1024
#define MAX_HOSTMAPS	1024
#define MAX_SCOPES	1024	/* --scope options */
#define MAX_FREEZE_GROUPS	1024	/* --freeze-group options */
/*
 * command-line values SIGHUP applies again: --filter, --host-map, --host-*,
 * --scope, --freeze-group
 */
#define MAX_KEPT	(2 * MAX_FILTERS + MAX_HOSTMAPS + MAX_SCOPES + MAX_FREEZE_GROUPS)
#define EXPIRY_WARN_DAYS	30	/* warn this long before a certificate expires */
#define COLLECTOR_TRIM_BYTES	(64 << 20)	/* freed heap kept, at most (mallopt) */
#define COLLECTOR_MMAP_BYTES	(4 << 20)	/* allocations mmap()ed from this size */

struct settings {
	char *listen;
	char *query;
	char *query_group;		/* the ipc socket's group */
	char *query_tls;		/* HOST:PORT of the TLS query port */
	char *query_ca;			/* CA of query clients; NULL: ca */
	struct qauth_scopes scopes;	/* scope = IDENTITY GLOBS: config file, then command line */
	struct qauth_scopes imports;	/* import = IDENTITY [GLOBS] */
	struct qauth_scopes snapshots;	/* snapshot = IDENTITY [GLOBS] */
	char *metrics;			/* --metrics ADDR: /metrics, /healthz; NULL: none */
	struct qauth_scopes metrics_rights;	/* metrics = cert:CN */
	char scope_err[512];
	char *db;
	char *db_password_file;		/* a remote --db's password, its first line */
	char *db_cert, *db_key, *db_ca;	/* a remote --db's TLS client certificate, CA */
	char *collector_name;		/* among collectors sharing a remote --db; NULL: host's */
	unsigned collector_id;		/* its number there (--collector-id) */
	unsigned retain_lease_s;	/* --retain-lease; 0: the store's default */
	unsigned freeze_interval_s;	/* --freeze-interval (FREEZE_GROUP_S) */
	char *cert, *key, *ca;
	char *crl;			/* NULL: no revocation list */
	char *group;			/* files 0640/0750 of this group; NULL: 0600/0700 */
	struct hostmap *hostmap;	/* host-map entries: config file, then command line */
	char hostmap_err[256];		/* also a bad freeze-group line's */
	struct hostmap *freeze_groups;	/* freeze-group lines: config file, then command line */
	char *ready_file;
	char *config;			/* -C FILE, re-read on SIGHUP */
	struct filter_table *filters;	/* config file rules, then --filter ones */
	char filter_err[1024];		/* the caret rendering of a bad rule */
	int64_t retain_age_ns;
	uint64_t retain_bytes;
	char *journal_dir;		/* NULL: DB.journal */
	bool store_normal;		/* store-priority = normal */
	uint64_t journal_bytes;		/* 0: no receive journal */
	struct store_indexes indexes;	/* field indexes to keep */
	bool indexes_set;		/* an index setting was given: no defaults */
	char index_err[256];
	bool foreground;
	bool no_pushdown;		/* pushdown = no: never send MSG_FILTER */
	bool insecure_plain;		/* --insecure-plain: no TLS, loopback only */
	struct collector_limits lim;	/* timeouts, handshake caps, input memory */
	struct queryd_opts query_opts;	/* query-threads, query-sync-max */
	struct hostlimit_conf host_limits;	/* host-rate, host-quota, host-limit */
	unsigned max_types;		/* max-event-types: per host */
	unsigned max_fields;		/* max-event-fields: per format */
	int64_t clock_tol_ns;		/* clock-tolerance */
	struct {			/* the command line's reloaded_key() values, */
		const char *key;	/* applied again after the config file on */
		char *value;		/* SIGHUP (key: longopts' name) */
	} kept[MAX_KEPT];
	size_t nkept;
	char hl_err[256];		/* what a bad host-* value should look like */
	char form_err[256];		/* "KEY: expected FORM" for a bad value */
	int verbose;
};

/* Only a build configured with --enable-test-aids has the test aid. */
#ifdef TC_TEST_AIDS
#define USAGE_TEST_AIDS \
"  TRACECOLLECTD_TEST_ABORT_ON=FORMAT:EVENT\n" \
"                           TEST AID, never for production: abort() while\n" \
"                           decoding the FORMAT of event EVENT, as a record\n" \
"                           that kills the collector would (read at start;\n" \
"                           tests/test_quarantine.sh)\n"
#else
#define USAGE_TEST_AIDS ""
#endif

static void usage(FILE *f)
{
	fprintf(f,
"Usage: tracecollectd [OPTIONS]\n"
"\n"
"Collect trace pages from traceagents over mutually authenticated TLS,\n"
"decode and store their events in SQLite, and answer traceq's queries.\n"
"\n"
"Options (each also a key in the -C file, e.g. 'listen = 0.0.0.0:7000'):\n"
"      --listen HOST:PORT   where agents connect (default 0.0.0.0:7000;\n"
"                           port 0 picks a free port, see --ready-file)\n"
"      --query URL          nng URL of the local query endpoint\n"
"                           (default " QUERYD_URL ";\n"
"                           its directory is made 0750 when missing). Only\n"
"                           ipc://PATH, or plain tcp on a numeric loopback\n"
"                           address (tcp://127.0.0.1:PORT, tcp://[::1]:PORT,\n"
"                           port 0 allowed; any local user may then query):\n"
"                           anything else is refused at start (exit 2)\n"
"      --query-group GROUP  the ipc socket is mode 0660 with this group (default\n"
"                           " QUERYD_GROUP "): its members may query. Without\n"
"                           such a group, mode 0600 (this collector's user only)\n"
"      --query-tls HOST:PORT\n"
"                           also answer queries over TLS with client\n"
"                           certificates (traceq -s HOST:PORT --cert --key\n"
"                           --ca), with this collector's --cert and --key\n"
"      --query-ca FILE      CA that signs query clients' certificates\n"
"                           (default: --ca)\n"
"      --scope 'IDENTITY GLOB[,GLOB...]'\n"
"                           the hosts IDENTITY may read (repeatable; an identity\n"
"                           named by several lines sees the hosts of each):\n"
"                           cert:CN (a query client's certificate), uid:N,\n"
"                           user:NAME or group:NAME (local users over ipc).\n"
"                           Without a line naming them: root and this\n"
"                           collector's uid see every host, other local users\n"
"                           (who got through the socket's mode) every host, a\n"
"                           certificate none. Every query is logged: who, what,\n"
"                           how many rows. Read again on SIGHUP (config file,\n"
"                           then --scope): the next queries see the new scopes\n"
"      --import 'IDENTITY [GLOB[,GLOB...]]'\n"
"                           who may store trace-cmd recordings (traceq --import)\n"
"                           and under which host names (no globs: any), with\n"
"                           identities as for --scope (repeatable). Without a\n"
"                           line only root and this collector's uid may, over\n"
"                           the ipc socket\n"
"      --snapshot 'IDENTITY [GLOB[,GLOB...]]'\n"
"                           who may freeze the flight recorders (traceq\n"
"                           --snapshot) of which hosts (no globs: any), as\n"
"                           --import (repeatable); without a line only root and\n"
"                           this collector's uid may, over the ipc socket\n"
"      --freeze-interval SECONDS\n"
"                           a group of flight recorders is frozen by a trigger\n"
"                           (traceagent --freeze-on) at most once per SECONDS\n"
"                           (default 10, 1..86400); later triggers are refused\n"
"      --freeze-group 'NAME GLOB[,GLOB...]'\n"
"                           the flight recorders whose host names match a GLOB\n"
"                           (fnmatch(3); names as bound to their certificates)\n"
"                           form freeze group NAME: a --freeze-on trigger of\n"
"                           one freezes every recorder of its host's groups, at\n"
"                           most once per --freeze-interval per group; a host\n"
"                           in no group freezes only itself. An agent's\n"
"                           --group claim counts only where a line puts its\n"
"                           host in that group (then its trigger freezes that\n"
"                           group alone); else it is ignored and logged.\n"
"                           Repeatable, lines of one NAME add up; read again\n"
"                           on SIGHUP\n"
"      --metrics [http://]HOST:PORT | https://HOST:PORT | cert:CN\n"
"                           serve GET /metrics (Prometheus's text format: per\n"
"                           host counters as traceq --stats and --drops count\n"
"                           them, hosts connected, journal backlog, store size,\n"
"                           commit and query latencies, queries in flight) and\n"
"                           GET /healthz. Plain HTTP only on a numeric loopback\n"
"                           address (else refused at start, exit 2); https://\n"
"                           takes client certificates of --query-ca whose CN a\n"
"                           'cert:CN' value of --metrics names (repeatable;\n"
"                           agent certificates never). Read at start\n"
"      --query-threads N    queries answered at once, each by a thread with its\n"
"                           own database reader (default 4, at most 64); more\n"
"                           wait their turn, fair between identities (one\n"
"                           holds at most N less a quarter of the threads)\n"
"      --query-sync-max MS  the longest a traceq --sync waits for what was\n"
"                           received to be stored (default 120000, at most\n"
"                           3600000); a longer --sync is cut to it. Waiting\n"
"                           takes none of the query threads\n"
"      --query-timeout MS   the store work of one query request (a page of rows,\n"
"                           a count, a --sql statement) stops after MS ms, and\n"
"                           the client is told so (default 60000; 0: never).\n"
"                           A request whose client goes away stops at once\n"
"      --query-max-rows N   the rows of one answer, all its pages together (as\n"
"                           the client counts them), at most N; past them the\n"
"                           client is told so (default 0: no limit)\n"
"      --db PATH            SQLite database (default /var/lib/tracecollect/trace.db);\n"
"                           one collector per database (PATH.lock beside it).\n"
"                           Removed or replaced while running: the next commit\n"
"                           notices, logs it and is not acknowledged; the file\n"
"                           then at PATH (a new, empty one if there is none) is\n"
"                           opened, and what the journal or the agents still hold\n"
"                           is stored there. Its directory must be this user's,\n"
"                           writable by no one else (refused at start)\n"
"      --db clickhouse://[USER[:PASSWORD]@]HOST:PORT/DB\n"
"                           store into ClickHouse instead (its HTTP port; DB\n"
"                           made when missing); needs --journal-dir (or\n"
"                           --journal-size 0). No lock or file of ours: one\n"
"                           collector per DB. A password here shows in ps:\n"
"                           prefer --db-password-file. Several HOST:PORT,\n"
"                           comma-separated: shards, ?cluster=NAME the\n"
"                           first one's remote_servers cluster of them\n"
"                           (default tracecollect)\n"
"      --db-password-file FILE\n"
"                           ClickHouse: the password, the first line of FILE\n"
"      --db-cert FILE       ClickHouse over https: a client certificate\n"
"      --db-key FILE        its key\n"
"      --db-ca FILE         the CA of the server's certificate (default: the\n"
"                           system's). --db-cert or --db-ca makes it https\n"
"      --cert FILE          this collector's certificate (default /etc/tracecollect/server.crt)\n"
"      --key FILE           its private key (default /etc/tracecollect/server.key)\n"
"      --ca FILE            CA that signs agent certificates; agents without a\n"
"                           certificate from it are refused (default /etc/tracecollect/ca.crt)\n"
"      --crl FILE           certificate revocation list(s) of that CA (PEM, e.g.\n"
"                           tracecollect-certs revoke NAME makes DIR/crl.pem):\n"
"                           agents and query clients (--query-tls) whose\n"
"                           certificate it revokes are refused at the TLS\n"
"                           handshake. It must hold a current CRL of every CA\n"
"                           that signs agents or query clients (--query-ca);\n"
"                           a missing or expired one refuses them all.\n"
"                           Default: none\n"
"      --host-map 'CN GLOB[,GLOB...]'\n"
"                           an agent stores its events under the host name it\n"
"                           sends only when that name is its certificate's\n"
"                           subject CN or one of its DNS names (subjectAltName),\n"
"                           byte for byte; otherwise its HELLO is refused, with\n"
"                           the reason, on both sides. This lets the agent\n"
"                           whose certificate's CN is CN (a gateway that\n"
"                           forwards for several hosts) also use every host\n"
"                           name matching a GLOB (fnmatch(3)); CN is everything\n"
"                           before the last blank. Repeatable\n"
"      --group NAME         the database, its -wal and -shm, the receive\n"
"                           journal and the directories made for them are\n"
"                           created 0640/0750 with group NAME, so that its\n"
"                           members may read them (default: none, they are\n"
"                           0600/0700; whatever the umask, never readable by\n"
"                           others). A missing database directory is made\n"
"      --ready-file FILE    once listening, write 'listen=ADDR' and 'query=URL'\n"
"                           lines (the bound addresses) to FILE, and\n"
"                           'query_tls=ADDR' with --query-tls\n"
"      --filter RULE        drop events at ingest unless they match; repeatable:\n"
"                           '[[host=GLOB]] SYSTEM[:EVENT] FILTER' in the kernel's\n"
"                           event-filter language, e.g. 'sched:sched_switch\n"
"                           prev_pid != 0' or '[host=web*] sched common_pid > 1'.\n"
"                           A SYSTEM rule applies to each of its events that has\n"
"                           every field it names; later rules win; FILTER '0'\n"
"                           clears. Dropped events are counted (traceq --drops)\n"
"      --pushdown yes|no    ask agents that support it to set each event's\n"
"                           filter on their own tracefs instance too, so that\n"
"                           the kernel drops those events before they are\n"
"                           shipped (default yes; read at start only). The\n"
"                           collector still enforces every filter, so what is\n"
"                           stored is the same (but for the moment after a\n"
"                           SIGHUP that loosens a filter); COMM filters stay\n"
"                           here. traceq --drops then counts only what was\n"
"                           shipped and dropped here\n"
"      --index 'SYSTEM[:EVENT] FIELD[,FIELD...]'\n"
"                           keep those events indexed by FIELD and time, so that\n"
"                           'EVENT where FIELD == X' reads only the matching rows,\n"
"                           in time order; repeatable; globs in SYSTEM and EVENT;\n"
"                           'none' drops the ones named before. Each costs an\n"
"                           index insert per stored row of those events. Default:\n"
"                           'sched:sched_switch prev_pid,next_pid',\n"
"                           'sched:sched_wakeup pid', 'sched:sched_waking pid'.\n"
"                           Read at start: missing indexes are built then (seconds\n"
"                           on a large store), ones no longer named are dropped\n"
"      --retain-age AGE     remove events older than AGE (e.g. 3600, 90m, 12h, 7d)\n"
"      --retain-size SIZE   keep the database's used pages under SIZE (e.g. 500M,\n"
"                           10G), removing the oldest events first\n"
"      --retain-lease SECONDS\n"
"                           ClickHouse shared by collectors: retention runs on\n"
"                           one at a time, the holder of a lease this long\n"
"                           (default 30, 5..3600), renewed while it lives; a\n"
"                           dead holder's is taken over after it runs out\n"
"      --journal-size SIZE  receive journal: pages are written to it as they\n"
"                           arrive and acknowledged then, so agents free them\n"
"                           while decoding and indexing catch up (queries see\n"
"                           them once stored: traceq --sync waits for that).\n"
"                           Agents are slowed down (TCP) only above SIZE\n"
"                           (default 1G; 0: no journal, pages are acknowledged\n"
"                           once stored). What is left in it at start is stored\n"
"                           first. Survives the collector's death (kill -9),\n"
"                           as the database's commits do; not a power loss\n"
"      --journal-dir DIR    where the journal's files go (default: the --db\n"
"                           path with .journal appended). A record the\n"
"                           collector died decoding is not decoded again: the\n"
"                           next start keeps it in DIR/quarantine with a note\n"
"                           saying why and whose, counts it in traceq --drops\n"
"                           and stores the rest. DIR must be this user's,\n"
"                           writable by no one else; only files this collector\n"
"                           wrote there (their MAC) are stored\n"
"      --store-priority idle|normal\n"
"                           with a journal, decoding and storing run at\n"
"                           idle priority (SCHED_IDLE, default idle): they get\n"
"                           the CPU time that taking pages in and everything\n"
"                           else on the host leave, and catch up from the\n"
"                           journal. normal: they compete with taking pages in\n"
"                           (for a collector on a host that is always busy)\n"
"      --handshake-timeout AGE\n"
"                           close a connection whose TLS handshake and HELLO\n"
"                           are not done within AGE (default 10s; e.g. 500ms)\n"
"      --idle-timeout AGE   close an agent's connection that sent no complete\n"
"                           frame for AGE (default 5m; agents send a clock\n"
"                           sample every 10 s; 0: never)\n"
"      --max-handshakes N   connections in the TLS handshake at once, in all\n"
"                           (default 256); with N, a new one closes the oldest\n"
"                           of the source address holding the most\n"
"      --max-handshakes-per-source N\n"
"                           the same from one address (default 8; an agent\n"
"                           opens its connections one after the other); a new\n"
"                           one past it is closed at once (agents retry).\n"
"                           Connections closed by these caps or the timeouts\n"
"                           are logged once per source address and counted\n"
"      --input-memory SIZE  memory for frames over 128 KiB being received,\n"
"                           all connections together (default 64M, at least\n"
"                           1M): past it, such a frame waits unread (TCP\n"
"                           pushes back on its agent). Each connection also\n"
"                           buffers up to 128 KiB of its own\n"
"      --max-agent-cpus N   CPUs a HELLO may declare (default 8192, the\n"
"                           kernel's largest NR_CPUS; at most 65536); a HELLO\n"
"                           over it is refused, saying why. State per CPU\n"
"                           is kept only for the CPUs that send\n"
"      --max-agent-conns N  agent connections past HELLO at once, in all\n"
"                           (default 16384; 0: no cap)\n"
"      --max-agent-conns-per-cert N\n"
"                           the same for one certificate (CN; default 1024;\n"
"                           0: no cap). An agent holds one connection per CPU\n"
"                           and one more; a gateway's certificate (--host-map)\n"
"                           those of all its hosts. A HELLO past a cap is\n"
"                           refused, with the cap named to the agent and in\n"
"                           the log\n"
"      --max-event-types N  event types one host may send formats of (default\n"
"                           2000; 0: no cap); events of more types are not\n"
"                           stored, counted in traceq --drops as schema-cap\n"
"      --max-event-fields N fields one event format may have (default 256;\n"
"                           0: no cap); a type with more is not stored, as above\n"
"      --collector-name NAME\n"
"                           this collector's name among those that share a\n"
"                           ClickHouse --db (default: the host's name);\n"
"                           traceq --hosts shows it beside its agents\n"
"      --collector-id N     this collector's number among them, 0..63, each\n"
"                           its own (default 0): its commit ids are N modulo 64\n"
"      --clock-tolerance DURATION\n"
"                           how far a host's realtime may disagree with the\n"
"                           collector's measurement of its clock, beyond the\n"
"                           measurement's uncertainty, before its events are\n"
"                           placed by the measurement (default 1ms; 250us,\n"
"                           2s, 0)\n"
"      --host-rate EVENTS[/s]\n"
"                           events per second each host may send (default 0:\n"
"                           no limit); a page costs the events in it. A host\n"
"                           over it is not read (TCP pushes back: its agent\n"
"                           keeps the pages, and counts what its kernel\n"
"                           loses); other hosts are read at full speed. Its\n"
"                           bucket holds one second of events (burst=)\n"
"      --host-quota SIZE    bytes each host may have stored (default 0: no\n"
"                           limit): the page bytes of its stored pages, less\n"
"                           what retention gave back, plus the metadata taken\n"
"                           from it since the start (cmdlines, symbols, printk\n"
"                           formats; they cost --host-rate an event per 64\n"
"                           bytes too). A host over it is not read, with a\n"
"                           log line, until retention frees space or the\n"
"                           quota is raised (SIGHUP)\n"
"      --host-limit 'GLOB [rate=EVENTS[/s]] [burst=EVENTS] [quota=SIZE]'\n"
"                           other limits for the hosts whose name matches GLOB;\n"
"                           repeatable, later rules win (0: no limit), e.g.\n"
"                           'build-* rate=20000 quota=10G'. Pages held back by\n"
"                           a limit and how long they waited: traceq --stats\n"
"                           rate_held_* and quota_held_*. The host limits are\n"
"                           read again on SIGHUP\n"
"      --insecure-plain     TESTING ONLY: plain TCP instead of TLS, no\n"
"                           authentication, no encryption; --listen must be a\n"
"                           loopback address and agents must give\n"
"                           --insecure-plain too (command line only)\n"
"  -C, --config FILE        read settings from FILE; the command line wins\n"
"  -F, --foreground         stay in the foreground and log to stderr\n"
"                           (default: daemonize and log to syslog)\n"
"  -v, --verbose            log more (repeat for debug)\n"
"  -h, --help               this text\n"
"  -V, --version            print the version\n"
"\n"
"Signals: SIGINT/SIGTERM commit what was received and exit; SIGHUP re-reads\n"
"the filter rules, host limits, host-map entries, freeze groups and query\n"
"scopes (config file, then the command line; a bad rule, entry or scope line\n"
"keeps the old ones) and the certificate, key, CA and CRL files, for the\n"
"agent port and the TLS query port (new connections use them; connected\n"
"agents stay; unreadable files keep the old ones). The query endpoint, its\n"
"group and --query-tls are read at start only. The collector warns in its\n"
"log when its own certificate, a CA certificate or a CRL expires within 30\n"
"days: at start, on SIGHUP and once a day.\n"
"\n"
"Exit status: 0 stopped by a signal (after committing), 1 runtime failure,\n"
"2 usage or configuration error.\n"
"\n"
"Environment:\n"
"  NOTIFY_SOCKET, WATCHDOG_USEC  (systemd, Type=notify) READY=1 once listening,\n"
"                           STOPPING=1 on the way out, WATCHDOG=1 from the\n"
"                           event loop every half WATCHDOG_USEC\n"
"  JOURNAL_STREAM           when it names stderr, log lines start with their\n"
"                           syslog priority (<3> for errors)\n"
USAGE_TEST_AIDS);
}

static int set_str(char **slot, const char *value)
{
	char *s = strdup(value);

	if (!s)
		return -ENOMEM;
	free(*slot);
	*slot = s;
	return 0;
}

/* Make the relative path in *@slot absolute (daemon() moves to /). */
static int abs_path(char **slot)
{
	char cwd[4096], *p;

	if (!*slot || **slot == '/')
		return 0;
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	p = malloc(strlen(cwd) + strlen(*slot) + 2);
	if (!p)
		return -ENOMEM;
	sprintf(p, "%s/%s", cwd, *slot);
	free(*slot);
	*slot = p;
	return 0;
}

/* "90", "90s", "30m", "12h", "7d" -> ns */
static int parse_age(const char *v, int64_t *out)
{
	static const struct { char unit; int64_t ns; } units[] = {
		{ 's', 1000000000LL }, { 'm', 60000000000LL }, { 'h', 3600000000000LL },
		{ 'd', 86400000000000LL },
	};
	char *end;
	unsigned long long n = strtoull(v, &end, 10);
	int64_t mul = units[0].ns;

	if (end == v || *v == '-' || (*end && end[1]))
		return TC_ERR_CONFIG;
	for (size_t i = 0; *end && i < sizeof(units) / sizeof(units[0]); i++)
		if (*end == units[i].unit)
			mul = units[i].ns, end++;
	if (*end || n == 0 || n > (unsigned long long)(INT64_MAX / mul))
		return TC_ERR_CONFIG;
	*out = (int64_t)n * mul;
	return 0;
}

/* "10", "10s", "500ms", "5m" -> ms in [1, 1 day]; "0" -> 0 when @zero_ok */
static int parse_ms(const char *v, bool zero_ok, int *out)
{
	size_t n = strlen(v);
	int64_t ns;
	char num[32];
	char *end;
	unsigned long ms;

	if (zero_ok && !strcmp(v, "0")) {
		*out = 0;
		return 0;
	}
	if (n > 2 && n < sizeof(num) && !strcmp(v + n - 2, "ms")) {
		memcpy(num, v, n - 2);
		num[n - 2] = 0;
		ms = strtoul(num, &end, 10);
		if (end == num || *end || num[0] == '-' || ms == 0 || ms > 86400000)
			return TC_ERR_CONFIG;
		*out = (int)ms;
		return 0;
	}
	if (parse_age(v, &ns) < 0 || ns > 86400000000000LL)
		return TC_ERR_CONFIG;
	*out = (int)(ns / 1000000);
	return 0;
}

/* clock-tolerance: "250us", or parse_ms()'s forms ("0" too) -> ns */
static int parse_tolerance(const char *v, int64_t *out)
{
	size_t n = strlen(v);
	unsigned long us;
	char num[32], *end;
	int ms;

	if (n > 2 && n < sizeof(num) && !strcmp(v + n - 2, "us")) {
		memcpy(num, v, n - 2);
		num[n - 2] = 0;
		us = strtoul(num, &end, 10);
		if (end == num || *end || num[0] == '-' || us > 86400000000UL)
			return TC_ERR_CONFIG;
		*out = (int64_t)us * 1000;
		return 0;
	}
	if (parse_ms(v, true, &ms) < 0)
		return TC_ERR_CONFIG;
	*out = (int64_t)ms * 1000000;
	return 0;
}

/* A count in [1, 1000000]. */
static int parse_count(const char *v, unsigned *out)
{
	char *end;
	unsigned long n = strtoul(v, &end, 10);

	if (end == v || *end || *v == '-' || n == 0 || n > 1000000)
		return TC_ERR_CONFIG;
	*out = (unsigned)n;
	return 0;
}

/* "1048576", "64k", "500M", "10G" -> bytes (config_file.h) */
static int parse_size(const char *v, uint64_t *out)
{
	return config_parse_size(v, out);
}

static int add_filter(struct settings *s, const char *rule)
{
	int ret = 0;

	if (!s->filters)
		ret = filter_table_new(&s->filters);
	if (ret == 0 && filter_table_count(s->filters) >= MAX_FILTERS)
		ret = TC_ERR_TOO_LONG;
	if (ret == 0)
		ret = filter_table_add(s->filters, rule, s->filter_err, sizeof(s->filter_err));
	return ret;
}

/* A whole decimal number in [@min, @max]. */
static int parse_uint(const char *v, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || end == v || *end || *v == '-' || n < min || n > max)
		return TC_ERR_CONFIG;
	*out = (unsigned long)n;
	return 0;
}

/* host-rate, host-quota, host-limit (hostlimit.h); a bad value says its form. */
static int apply_host_limit(struct settings *s, const char *key, const char *value)
{
	struct hostlimit_conf *c = &s->host_limits;
	bool rate = !strcmp(key, "host-rate");
	int ret;

	s->hl_err[0] = 0;
	if (!strcmp(key, "host-limit"))
		return hostlimit_conf_rule(c, value, s->hl_err, sizeof(s->hl_err));
	if (!rate && strcmp(key, "host-quota"))
		return TC_ERR_CONFIG_KEY;
	ret = rate ? hostlimit_parse_rate(value, &c->dflt.rate) :
		     hostlimit_parse_quota(value, &c->dflt.quota);
	if (ret < 0)
		snprintf(s->hl_err, sizeof(s->hl_err), "%s: expected %s", key,
			 rate ? HOSTLIMIT_RATE_FORM : HOSTLIMIT_QUOTA_FORM);
	return ret;
}

/*
 * `import = IDENTITY [GLOB,...]`, `snapshot = IDENTITY [GLOB,...]`: a right,
 * a scope line of its own in @rights; no globs: every name.
 */
static int right_line(struct settings *s, struct qauth_scopes *rights, const char *value)
{
	char spec[1024];

	snprintf(spec, sizeof(spec), "%s%s", value, strpbrk(value, " \t") ? "" : " *");
	return qauth_scope_parse(rights, spec, s->scope_err, sizeof(s->scope_err));
}

/* The form a value of @key takes, for a message about a bad one; NULL: none here. */
static const char *value_form(const char *key)
{
	static const char *const forms[][2] = {
		{ "retain-age", "a duration like 7d, 12h, 30m, 90s (seconds without a unit)" },
		{ "retain-size", "a size like 500M, 10G (bytes without a unit; k, M, G, T)" },
		{ "journal-size", "a size like 500M, 10G, or 0 (no journal)" },
		{ "handshake-timeout", "a duration like 10s, 500ms, 1m (at most 1d)" },
		{ "idle-timeout", "a duration like 5m, 30s, or 0 (never; at most 1d)" },
		{ "max-handshakes", "a whole number in 1..1000000" },
		{ "max-handshakes-per-source", "a whole number in 1..1000000" },
		{ "input-memory", "a size like 64M, 1G (at least 1M)" },
		{ "max-agent-cpus", "a whole number in 1..65536" },
		{ "max-agent-conns", "a whole number in 0..1000000 (0: no cap)" },
		{ "max-agent-conns-per-cert", "a whole number in 0..1000000 (0: no cap)" },
		{ "query-threads", "a whole number in 1..64" },
		{ "collector-id", "a whole number in 0..63" },
		{ "retain-lease", "seconds, a whole number in 5..3600" },
		{ "freeze-interval", "seconds, a whole number in 1..86400" },
		{ "max-event-types", "a whole number in 0..1000000 (0: no cap)" },
		{ "max-event-fields", "a whole number in 0..65535 (0: no cap)" },
		{ "clock-tolerance", "a duration like 1ms, 250us, 2s, or 0 (at most 1d)" },
		{ "query-sync-max", "milliseconds, a whole number in 1..3600000" },
		{ "store-priority", "idle or normal" },
		{ "pushdown", "yes or no" },
		{ "foreground", "yes or no" },
	};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		if (!strcmp(key, forms[i][0]))
			return forms[i][1];
	return NULL;
}

static int apply_value(struct settings *s, const char *key, const char *value);

/*
 * One setting by its long-option name; used by the command line and -C. A
 * value in the wrong form leaves "KEY: expected FORM" in s->form_err.
 */
static int apply(struct settings *s, const char *key, const char *value)
{
	int ret = apply_value(s, key, value);

	s->form_err[0] = 0;
	if (ret == TC_ERR_CONFIG && value_form(key))
		snprintf(s->form_err, sizeof(s->form_err), "%s: expected %s", key,
			 value_form(key));
	return ret;
}

/* Where the setting @key, a text kept as given, is in @s; NULL: @key is not one. */
static char **str_setting(struct settings *s, const char *key)
{
	static const struct { const char *key; size_t off; } strs[] = {
#define TEXT(key, field)	{ key, offsetof(struct settings, field) }
		TEXT("listen", listen), TEXT("query", query), TEXT("query-group", query_group),
		TEXT("query-tls", query_tls), TEXT("query-ca", query_ca),
		TEXT("cert", cert), TEXT("key", key), TEXT("ca", ca), TEXT("crl", crl),
		TEXT("db", db), TEXT("journal-dir", journal_dir), TEXT("group", group),
		TEXT("ready-file", ready_file),
		TEXT("db-password-file", db_password_file), TEXT("db-cert", db_cert),
		TEXT("db-key", db_key), TEXT("db-ca", db_ca),
		TEXT("collector-name", collector_name),
#undef TEXT
	};

	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (!strcmp(key, strs[i].key))
			return (char **)((char *)s + strs[i].off);
	return NULL;
}

static int apply_value(struct settings *s, const char *key, const char *value)
{
	char **str = str_setting(s, key);

	if (str)
		return set_str(str, value);
	if (!strcmp(key, "scope"))
		return qauth_scope_parse(&s->scopes, value, s->scope_err, sizeof(s->scope_err));
	if (!strcmp(key, "import"))
		return right_line(s, &s->imports, value);
	if (!strcmp(key, "snapshot"))
		return right_line(s, &s->snapshots, value);
	if (!strcmp(key, "metrics")) {	/* a right (cert:CN), else an address */
		int ret = metrics_right_parse(&s->metrics_rights, value, s->scope_err,
					      sizeof(s->scope_err));

		return ret == 1 ? set_str(&s->metrics, value) : ret;
	}
	if (!strcmp(key, "host-map"))
		return hostmap_add(&s->hostmap, key, value, s->hostmap_err,
				   sizeof(s->hostmap_err));
	if (!strcmp(key, "freeze-group"))
		return hostmap_add(&s->freeze_groups, key, value, s->hostmap_err,
				   sizeof(s->hostmap_err));
	if (!strcmp(key, "filter")) return add_filter(s, value);
	if (!strcmp(key, "retain-age")) return parse_age(value, &s->retain_age_ns);
	if (!strcmp(key, "retain-size")) return parse_size(value, &s->retain_bytes);
	if (!strcmp(key, "journal-size")) {	/* 0: none */
		s->journal_bytes = 0;
		return !strcmp(value, "0") ? 0 : parse_size(value, &s->journal_bytes);
	}
	if (!strcmp(key, "handshake-timeout"))
		return parse_ms(value, false, &s->lim.handshake_ms);
	if (!strcmp(key, "clock-tolerance")) return parse_tolerance(value, &s->clock_tol_ns);
	if (!strcmp(key, "idle-timeout")) return parse_ms(value, true, &s->lim.idle_ms);
	if (!strcmp(key, "max-handshakes")) return parse_count(value, &s->lim.max_handshakes);
	if (!strcmp(key, "max-handshakes-per-source"))
		return parse_count(value, &s->lim.max_handshakes_source);
	if (!strcmp(key, "max-agent-cpus") || !strcmp(key, "max-agent-conns") ||
	    !strcmp(key, "max-agent-conns-per-cert")) {
		bool cpus = !strcmp(key, "max-agent-cpus");
		unsigned long n;
		int ret = parse_uint(value, cpus, cpus ? 65536 : 1000000, &n);

		if (ret == 0)
			*(cpus ? &s->lim.max_cpus : !strcmp(key, "max-agent-conns") ?
			  &s->lim.max_conns : &s->lim.max_conns_cert) = (unsigned)n;
		return ret;
	}
	if (!strcmp(key, "input-memory")) {
		int ret = parse_size(value, &s->lim.input_bytes);

		return ret == 0 && s->lim.input_bytes < (1u << 20) ? TC_ERR_CONFIG : ret;
	}
	if (!strcmp(key, "freeze-interval")) {
		unsigned long n;
		int ret = parse_uint(value, 1, FREEZE_GROUP_S_MAX, &n);

		if (ret == 0)
			s->freeze_interval_s = (unsigned)n;
		return ret;
	}
	if (!strcmp(key, "retain-lease")) {
		unsigned long n;
		int ret = parse_uint(value, 5, STORE_RETAIN_LEASE_MAX, &n);

		if (ret == 0)
			s->retain_lease_s = (unsigned)n;
		return ret;
	}
	if (!strcmp(key, "collector-id")) {
		unsigned long n;
		int ret = parse_uint(value, 0, STORE_COLLECTOR_IDS - 1, &n);

		if (ret == 0)
			s->collector_id = (unsigned)n;
		return ret;
	}
	if (!strcmp(key, "query-threads") || !strcmp(key, "query-sync-max")) {
		bool threads = !strcmp(key, "query-threads");
		unsigned long n;
		int ret = parse_uint(value, 1, threads ? QUERYD_THREADS_MAX : QUERYD_SYNC_MAX_MS_MAX,
				     &n);

		if (ret == 0 && threads)
			s->query_opts.threads = (unsigned)n;
		else if (ret == 0)
			s->query_opts.sync_max_ms = (uint32_t)n;
		return ret;
	}
	if (!strcmp(key, "max-event-types") || !strcmp(key, "max-event-fields")) {
		bool types = !strcmp(key, "max-event-types");
		unsigned long n;
		int ret = parse_uint(value, 0, types ? 1000000 : 65535, &n);

		if (ret == 0)
			*(types ? &s->max_types : &s->max_fields) = (unsigned)n;
		return ret;
	}
	if (!strcmp(key, "query-timeout")) {
		unsigned long n;
		int ret = parse_uint(value, 0, QUERYD_TIMEOUT_MS_MAX, &n);

		if (ret == 0)
			s->query_opts.timeout_ms = (uint32_t)n;
		return ret;
	}
	if (!strcmp(key, "query-max-rows")) {
		unsigned long n;
		int ret = parse_uint(value, 0, ULONG_MAX, &n);

		if (ret == 0)
			s->query_opts.max_rows = n;
		return ret;
	}
	if (!strncmp(key, "host-", 5))
		return apply_host_limit(s, key, value);
	if (!strcmp(key, "store-priority")) {
		if (strcmp(value, "idle") && strcmp(value, "normal"))
			return TC_ERR_CONFIG;
		s->store_normal = !strcmp(value, "normal");
		return 0;
	}
	if (!strcmp(key, "index")) {
		s->indexes_set = true;
		return store_index_parse(&s->indexes, value, s->index_err, sizeof(s->index_err));
	}
	if (!strcmp(key, "foreground") || !strcmp(key, "pushdown")) {
		if (strcmp(value, "yes") && strcmp(value, "no") &&
		    strcmp(value, "true") && strcmp(value, "false"))
			return TC_ERR_CONFIG;
		if (key[0] == 'f')
			s->foreground = !strcmp(value, "yes") || !strcmp(value, "true");
		else
			s->no_pushdown = !strcmp(value, "no") || !strcmp(value, "false");
		return 0;
	}
	return TC_ERR_CONFIG_KEY;
}

static int apply_cb(void *ctx, const char *key, const char *value, unsigned line)
{
	return apply(ctx, key, value);
}

static void settings_free(struct settings *s)
{
	free(s->listen); free(s->query); free(s->db); free(s->journal_dir);
	free(s->query_group); free(s->query_tls); free(s->query_ca);
	qauth_scopes_free(&s->scopes);
	qauth_scopes_free(&s->imports);
	qauth_scopes_free(&s->snapshots);
	free(s->metrics);
	qauth_scopes_free(&s->metrics_rights);
	free(s->cert); free(s->key); free(s->ca); free(s->crl); free(s->ready_file);
	free(s->group);
	free(s->db_password_file); free(s->db_cert); free(s->db_key); free(s->db_ca);
	free(s->collector_name);
	hostmap_free(s->hostmap);
	hostmap_free(s->freeze_groups);
	for (size_t i = 0; i < s->nkept; i++)
		free(s->kept[i].value);
	free(s->config);
	store_indexes_free(&s->indexes);
	hostlimit_conf_free(&s->host_limits);
	filter_table_unref(s->filters);
}

static int settings_defaults(struct settings *s)
{
	static const char *const def[][2] = {
		{ "listen", "0.0.0.0:7000" },
		{ "query", QUERYD_URL },
		{ "db", "/var/lib/tracecollect/trace.db" },
		{ "cert", "/etc/tracecollect/server.crt" },
		{ "key", "/etc/tracecollect/server.key" },
		{ "ca", "/etc/tracecollect/ca.crt" },
		{ "journal-size", "1G" },
		{ "max-event-types", "2000" },
		{ "max-event-fields", "256" },
		{ "clock-tolerance", "1ms" },
	};
	size_t i;
	int ret = 0;

	s->lim = collector_limits_default();
	s->query_opts = (struct queryd_opts){ .threads = QUERYD_THREADS,
					      .sync_max_ms = QUERYD_SYNC_MAX_MS,
					      .timeout_ms = QUERYD_TIMEOUT_MS };
	s->freeze_interval_s = FREEZE_GROUP_S;
	for (i = 0; i < sizeof(def) / sizeof(def[0]) && ret == 0; i++)
		ret = apply(s, def[i][0], def[i][1]);
	return ret;
}

/* Whether SIGHUP applies command-line @key again (what it re-reads). */
static bool reloaded_key(const char *key)
{
	static const char *const keys[] = {
		"filter", "host-map", "host-rate", "host-quota", "host-limit", "scope",
		"freeze-group",
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(key, keys[i]))
			return true;
	return false;
}

/*
 * What a failed setting left in @s's error buffers, each on a line of its
 * own (the filter's caret rendering only with @filter), into @buf.
 */
static const char *settings_errs(const struct settings *s, bool filter, char *buf,
				 size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s%s%s%s%s%s%s", filter ? s->filter_err : "",
		 s->index_err, s->index_err[0] ? "\n" : "", s->scope_err,
		 s->scope_err[0] ? "\n" : "", s->hl_err, s->hl_err[0] ? "\n" : "",
		 s->hostmap_err, s->hostmap_err[0] ? "\n" : "", s->form_err,
		 s->form_err[0] ? "\n" : "");
	return buf;
}

/* A command-line setting: checked like the file's; reloaded_key()s are kept. */
static int apply_option(struct settings *s, const char *key, const char *value)
{
	char errs[4096];
	int ret = apply(s, key, value);

	if (ret == 0 && reloaded_key(key)) {
		if (s->nkept == MAX_KEPT)
			ret = TC_ERR_TOO_LONG;
		else if (!(s->kept[s->nkept].value = strdup(value)))
			ret = -ENOMEM;
		else
			s->kept[s->nkept++].key = key;	/* longopts' */
	}
	if (ret < 0)
		fprintf(stderr, "%stracecollectd: --%s %s: %s\n%s", log_prio_prefix(LOGL_ERR), key,
			value, tc_strerror(ret), settings_errs(s, !strcmp(key, "filter"), errs,
							       sizeof(errs)));
	return ret;
}

/*
 * Resolve "HOST:PORT" / "[V6]:PORT" (port 0: any free port) into @ss. On
 * failure @err (may be NULL) says what is wrong with @text.
 * Return: 0; -EINVAL.
 */
static int parse_hostport(const char *text, struct sockaddr_storage *ss, int *len,
			  char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai;
	char host[256], dummy[8];
	const char *port, *colon = strrchr(text, ':');
	size_t hlen;
	int rv;

	if (!err)
		err = dummy, errlen = sizeof(dummy);
	if (!colon || colon == text || strlen(text) >= sizeof(host)) {
		snprintf(err, errlen, "expected HOST:PORT or [IPV6]:PORT, e.g. 0.0.0.0:7000");
		return -EINVAL;
	}
	hlen = (size_t)(colon - text);
	port = colon + 1;
	if (text[0] == '[' && text[hlen - 1] == ']') {
		text++;
		hlen -= 2;
	}
	memcpy(host, text, hlen);
	host[hlen] = 0;
	if (!*port || strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 ||
	    atoi(port) > 65535) {
		snprintf(err, errlen, "the port '%s' is not a number in 0..65535", port);
		return -EINVAL;
	}
	rv = getaddrinfo(host, port, &hints, &ai);
	if (rv != 0) {
		snprintf(err, errlen, "cannot resolve '%s': %s", host, gai_strerror(rv));
		return -EINVAL;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = (int)ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* Whether @ss is 127.0.0.0/8 or ::1. */
static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	return ss->ss_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

/*
 * The addresses to listen on, checked before anything is made (database,
 * lock, journal): --listen (loopback with --insecure-plain) and
 * --query-tls. Return: 0; -1, said on stderr.
 */
static int check_addresses(const struct settings *s)
{
	struct sockaddr_storage ss;
	char err[512];
	int len;

	if (parse_hostport(s->listen, &ss, &len, err, sizeof(err)) < 0) {
		fprintf(stderr, "tracecollectd: --listen %s: %s\n", s->listen, err);
		return -1;
	}
	if (s->insecure_plain && !is_loopback(&ss)) {
		fprintf(stderr, "tracecollectd: --insecure-plain: --listen %s is not a loopback "
			"address; plain TCP is for tests on this host only\n", s->listen);
		return -1;
	}
	if (s->query_tls && parse_hostport(s->query_tls, &ss, &len, err, sizeof(err)) < 0) {
		fprintf(stderr, "tracecollectd: --query-tls %s: %s\n", s->query_tls, err);
		return -1;
	}
	return 0;
}

/*
 * The short options (the table in tracecollectd(8): one letter, one meaning
 * in all three programs). -c and -f are the old spellings of -C and -F: no
 * other program gives them a meaning here (traceq's -c and -f are --count
 * and --format), so they still work, and say so.
 */
#define SHORT_OPTS	":C:c:FfvhV"

static void old_spelling(int c)
{
	if (c == 'c')
		fprintf(stderr, "tracecollectd: -c is the old spelling of -C (--config): use -C\n");
	else if (c == 'f')
		fprintf(stderr, "tracecollectd: -f is the old spelling of -F (--foreground): use -F\n");
}

/* The name of @opts' entry whose id is @val (one there: getopt_long() returned it). */
static const char *long_name(const struct option *opts, int val)
{
	while (opts->name && opts->val != val)
		opts++;
	return opts->name ? opts->name : "";
}

/*
 * Parse the command line twice: first only for -C (the file sets values),
 * then everything (the command line wins).
 */
static int parse_args(int argc, char **argv, struct settings *s)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 1 },
		{ "query", required_argument, NULL, 2 },
		{ "db", required_argument, NULL, 3 },
		{ "cert", required_argument, NULL, 4 },
		{ "key", required_argument, NULL, 5 },
		{ "ca", required_argument, NULL, 6 },
		{ "ready-file", required_argument, NULL, 7 },
		{ "filter", required_argument, NULL, 8 },
		{ "retain-age", required_argument, NULL, 9 },
		{ "retain-size", required_argument, NULL, 10 },
		{ "pushdown", required_argument, NULL, 11 },
		{ "index", required_argument, NULL, 12 },
		{ "journal-size", required_argument, NULL, 13 },
		{ "journal-dir", required_argument, NULL, 14 },
		{ "store-priority", required_argument, NULL, 15 },
		{ "handshake-timeout", required_argument, NULL, 16 },
		{ "idle-timeout", required_argument, NULL, 17 },
		{ "max-handshakes", required_argument, NULL, 18 },
		{ "max-handshakes-per-source", required_argument, NULL, 19 },
		{ "input-memory", required_argument, NULL, 20 },
		{ "query-threads", required_argument, NULL, 21 },
		{ "query-sync-max", required_argument, NULL, 22 },
		{ "query-group", required_argument, NULL, 23 },
		{ "query-tls", required_argument, NULL, 24 },
		{ "scope", required_argument, NULL, 25 },
		{ "query-ca", required_argument, NULL, 26 },
		{ "host-rate", required_argument, NULL, 27 },
		{ "host-quota", required_argument, NULL, 28 },
		{ "host-limit", required_argument, NULL, 29 },
		{ "crl", required_argument, NULL, 30 },
		{ "host-map", required_argument, NULL, 31 },
		{ "group", required_argument, NULL, 32 },
		{ "import", required_argument, NULL, 33 },
		{ "query-timeout", required_argument, NULL, 34 },
		{ "query-max-rows", required_argument, NULL, 35 },
		{ "max-agent-cpus", required_argument, NULL, 36 },
		{ "max-agent-conns", required_argument, NULL, 37 },
		{ "max-agent-conns-per-cert", required_argument, NULL, 38 },
		{ "max-event-types", required_argument, NULL, 39 },
		{ "max-event-fields", required_argument, NULL, 40 },
		{ "db-password-file", required_argument, NULL, 41 },
		{ "db-cert", required_argument, NULL, 42 },
		{ "db-key", required_argument, NULL, 43 },
		{ "db-ca", required_argument, NULL, 44 },
		{ "metrics", required_argument, NULL, 45 },
		{ "clock-tolerance", required_argument, NULL, 46 },
		{ "collector-name", required_argument, NULL, 47 },
		{ "collector-id", required_argument, NULL, 48 },
		{ "snapshot", required_argument, NULL, 49 },
		{ "freeze-group", required_argument, NULL, 50 },
		{ "retain-lease", required_argument, NULL, 51 },
		{ "freeze-interval", required_argument, NULL, 53 },
		{ "config", required_argument, NULL, 'C' },
		{ "foreground", no_argument, NULL, 'F' },
		{ "insecure-plain", no_argument, NULL, 'P' },
		{ "verbose", no_argument, NULL, 'v' },
		CLI_OPTIONS_END
	};
	char errbuf[512], errs[4096];
	int c, ret;

	opterr = 0;	/* cli_bad_option() says it in one line */
	while ((c = getopt_long(argc, argv, SHORT_OPTS, longopts, NULL)) != -1) {
		if (c == 'h') { usage(stdout); exit(0); }
		if (c == 'V') { cli_version("tracecollectd"); exit(0); }
		if (c == '?' || c == ':') {
			cli_bad_option("tracecollectd", longopts, argv, c);
			return -1;
		}
		old_spelling(c);
		if (c != 'C' && c != 'c')
			continue;
		ret = set_str(&s->config, optarg);
		if (ret == 0)
			ret = config_parse_file(optarg, apply_cb, s, errbuf, sizeof(errbuf));
		if (ret < 0) {
			fprintf(stderr, "%stracecollectd: %s\n%s", log_prio_prefix(LOGL_ERR), errbuf,
				settings_errs(s, true, errs, sizeof(errs)));
			return -1;
		}
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, SHORT_OPTS, longopts, NULL)) != -1) {
		if (c >= 1 && c <= 53) {	/* a long option's id, not its index */
			if (apply_option(s, long_name(longopts, c), optarg) < 0)
				return -1;
		} else if (c == 'F' || c == 'f')
			s->foreground = true;
		else if (c == 'P')
			s->insecure_plain = true;
		else if (c == 'v')
			s->verbose++;
	}
	if (optind != argc) {
		fprintf(stderr, "%stracecollectd: unexpected argument '%s'\n",
			log_prio_prefix(LOGL_ERR), argv[optind]);
		return -1;
	}
	if (qauth_url_check(s->query, errbuf, sizeof(errbuf)) < 0) {
		fprintf(stderr, "tracecollectd: %s\n", errbuf);
		return -1;
	}
	if (check_addresses(s) < 0)
		return -1;
	if (s->metrics && metrics_addr_check(s->metrics, NULL, errbuf, sizeof(errbuf)) < 0) {
		fprintf(stderr, "%stracecollectd: %s\n", log_prio_prefix(LOGL_ERR), errbuf);
		return -1;
	}
	s->query_opts.group = s->query_group;
	s->query_opts.scopes = &s->scopes;
	s->query_opts.import_rights = &s->imports;
	s->query_opts.snapshot_rights = &s->snapshots;
	return 0;
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd,
		      struct sockaddr *sa, int socklen, void *arg)
{
	conn_accept(arg, fd, sa, socklen);
}

static void accept_error_cb(struct evconnlistener *l, void *arg)
{
	log_err("accept: %s", strerror(errno));
}

static int start_listener(struct collector *col, const char *addr, char *bound, size_t blen)
{
	struct sockaddr_storage ss;
	socklen_t slen = sizeof(ss);
	char ip[INET6_ADDRSTRLEN];
	int len;

	if (parse_hostport(addr, &ss, &len, NULL, 0) < 0) {	/* checked at start */
		log_err("--listen %s: expected HOST:PORT", addr);
		return -EINVAL;
	}
	if (!col->tls && !is_loopback(&ss)) {
		log_err("--insecure-plain: --listen %s is not a loopback address; "
			"plain TCP is for tests on this host only", addr);
		return -EINVAL;
	}
	col->listener = evconnlistener_new_bind(col->base, accept_cb, col,
		LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 128,
		(struct sockaddr *)&ss, len);
	if (!col->listener) {
		log_err("cannot listen on %s: %s", addr, strerror(errno));
		return -errno;
	}
	evconnlistener_set_error_cb(col->listener, accept_error_cb);
	getsockname(evconnlistener_get_fd(col->listener), (struct sockaddr *)&ss, &slen);
	if (ss.ss_family == AF_INET6)
		snprintf(bound, blen, "[%s]:%u", inet_ntop(AF_INET6,
			 &((struct sockaddr_in6 *)&ss)->sin6_addr, ip, sizeof(ip)),
			 ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	else
		snprintf(bound, blen, "%s:%u", inet_ntop(AF_INET,
			 &((struct sockaddr_in *)&ss)->sin_addr, ip, sizeof(ip)),
			 ntohs(((struct sockaddr_in *)&ss)->sin_port));
	return 0;
}

/* --ready-file: the addresses bound, for the scripts that started us. */
static int write_ready_file(const char *path, const char *listen, const char *query,
			    const char *query_tls, const char *metrics, struct ownfiles_ready *r)
{
	char text[1024];

	if ((size_t)snprintf(text, sizeof(text), "listen=%s\nquery=%s\npid=%d\n%s%s%s%s%s%s",
			     listen, query, (int)getpid(), query_tls ? "query_tls=" : "",
			     query_tls ? query_tls : "", query_tls ? "\n" : "",
			     metrics ? "metrics=" : "", metrics ? metrics : "",
			     metrics ? "\n" : "") >= sizeof(text))
		return -ENAMETOOLONG;
	return ownfiles_ready_write(path, text, r);
}

/*
 * SIGHUP: the config file, then the command line's kept values, into @n,
 * as at start. Return: 0; else an error, logged with where it is (the
 * caller frees @n and keeps the current settings).
 */
static int settings_reread(const struct settings *cur, struct settings *n)
{
	char errbuf[512], errs[4096];
	int ret = 0;

	if (cur->config)
		ret = config_parse_file(cur->config, apply_cb, n, errbuf, sizeof(errbuf));
	for (size_t i = 0; ret == 0 && i < cur->nkept; i++) {
		ret = apply(n, cur->kept[i].key, cur->kept[i].value);
		if (ret < 0)
			snprintf(errbuf, sizeof(errbuf), "--%s: %s", cur->kept[i].key,
				 tc_strerror(ret));
	}
	if (ret < 0)
		log_err("reload: %s; keeping the current filters, host map, freeze groups, host "
			"limits and scopes\n%s", errbuf, settings_errs(n, true, errs, sizeof(errs)));
	return ret;
}

/* SIGHUP: @n's host limits for the hosts connected and those to come. */
static void reload_host_limits(const struct settings *n, struct collector *col)
{
	int ret = hostlimit_set_conf(col->hl, &n->host_limits);

	if (ret < 0) {
		log_err("reload: host limits: %s; keeping the current ones", tc_strerror(ret));
		return;
	}
	ingest_report_usage(col->ing, hostlimit_quota_on(col->hl));
	log_info("reload: host limits: rate %llu events/s, quota %llu bytes, "
		 "%zu host-limit rule(s)", (unsigned long long)n->host_limits.dflt.rate,
		 (unsigned long long)n->host_limits.dflt.quota, n->host_limits.nrules);
}

struct hup_ctx {
	struct collector *col;
	struct settings *s;
	struct event *daily;		/* the expiry check, once a day */
	struct queryd *qd;		/* its scopes are reloaded */
	struct qtls *qtls;		/* the TLS query port reloads too; NULL: none */
	struct metrics *metrics;	/* so does an https metrics port; NULL: none */
};

/* @arg: NULL, or the only kind (@what) to warn about. */
static void expiry_warn(void *arg, const char *what, const char *name, long days_left)
{
	char esc[LOG_ESC_LEN];

	if (arg && strcmp(arg, what))
		return;
	log_escape(name, esc, sizeof(esc));
	if (days_left <= 0)
		log_warn("TLS: the %s of %s has expired%s: renew it (tracecollect-certs) and "
			 "send SIGHUP", what, esc, !strcmp(what, "CRL") ?
			 ": every agent is refused" : "");
	else
		log_warn("TLS: the %s of %s expires in %ld day%s: renew it (tracecollect-certs) "
			 "and send SIGHUP", what, esc, days_left, days_left == 1 ? "" : "s");
}

/*
 * Warn about what expires within EXPIRY_WARN_DAYS (start, SIGHUP, daily):
 * the agent port's certificate, CAs and CRLs; of the TLS query port's,
 * the CA certificates of a --query-ca of its own (its certificate and
 * CRLs are the same files), or everything without TLS on the agent port
 * (--insecure-plain).
 */
static void check_expiry(struct hup_ctx *h)
{
	const struct settings *s = h->s;
	bool own_ca = s->query_ca && (!s->ca || strcmp(s->query_ca, s->ca));

	if (h->col->tls)
		tls_ctx_expiry(h->col->tls, EXPIRY_WARN_DAYS, expiry_warn, NULL);
	if (!h->col->tls || own_ca)
		qtls_expiry(h->qtls, EXPIRY_WARN_DAYS, expiry_warn,
			    h->col->tls ? (void *)"CA certificate" : NULL);
}

static void daily_cb(evutil_socket_t fd, short what, void *arg)
{
	check_expiry(arg);
}

/*
 * SIGHUP: the certificate, key, CA and CRL files again, into a new
 * SSL_CTX for new connections; connections made with the old one keep it
 * (each SSL holds a reference). On failure the old one stays.
 */
static void reload_tls(struct collector *col, struct qtls *qtls, const struct settings *s)
{
	struct tls_files files = { s->cert, s->key, s->ca, s->crl };
	struct tls_files qfiles = { s->cert, s->key, s->query_ca ? s->query_ca : s->ca, s->crl };
	SSL_CTX *ctx;
	char err[512];

	if (qtls_reload(qtls, &qfiles, err, sizeof(err)) < 0)
		log_err("reload: TLS query port: %s; its new connections keep the certificates "
			"loaded before", err);
	if (!col->tls)
		return;		/* --insecure-plain */
	if (tls_ctx_new(TLS_ROLE_SERVER, &files, &ctx, err, sizeof(err)) < 0) {
		log_err("reload: TLS: %s; new connections keep the certificates loaded before",
			err);
		return;
	}
	SSL_CTX_free(col->tls);
	col->tls = ctx;
	log_info("reload: certificate, key, CA%s reloaded for new connections",
		 s->crl ? " and CRL" : "");
}

/* SIGHUP: an https metrics port's certificate, query CA and CRL again. */
static void reload_metrics(struct metrics *m, const struct settings *s)
{
	struct tls_files files = { s->cert, s->key, s->query_ca ? s->query_ca : s->ca, s->crl };
	char err[512];

	if (metrics_reload(m, &files, err, sizeof(err)) < 0)
		log_err("reload: metrics port: %s; its new connections keep the certificates "
			"loaded before", err);
}

static void hup_cb(evutil_socket_t sig, short what, void *arg)
{
	struct hup_ctx *h = arg;
	struct settings n = { 0 };
	size_t nscopes;

	if (settings_reread(h->s, &n) == 0) {
		ingest_set_filters(h->col->ing, n.filters);
		hostmap_free(h->s->hostmap);
		h->s->hostmap = n.hostmap;
		h->col->hostmap = n.hostmap;
		n.hostmap = NULL;
		hostmap_free(h->s->freeze_groups);	/* the loop's: no freeze holds it */
		h->s->freeze_groups = n.freeze_groups;
		h->col->freeze_groups = n.freeze_groups;
		n.freeze_groups = NULL;
		nscopes = n.scopes.n;
		if (h->qd && queryd_set_scopes(h->qd, &n.scopes) < 0)
			log_err("reload: out of memory: keeping the current scopes");
		log_info("reload: %zu filter rule(s) in effect; %zu host-map entries; "
			 "%zu freeze-group lines; %zu scope line(s)", filter_table_count(n.filters),
			 hostmap_count(h->s->hostmap), hostmap_count(h->s->freeze_groups), nscopes);
		if (h->col->hl)
			reload_host_limits(&n, h->col);
	}
	settings_free(&n);
	reload_tls(h->col, h->qtls, h->s);
	reload_metrics(h->metrics, h->s);
	check_expiry(h);
}

/* The field indexes of the settings (or the defaults) on @st, with a log line. */
static int set_indexes(struct store_writer *st, struct settings *s)
{
	static const char *const defaults[] = { STORE_DEFAULT_INDEXES };
	unsigned created = 0, dropped = 0;
	int64_t t0 = util_now_ms();
	int ret = 0;

	for (size_t i = 0; !s->indexes_set && ret == 0 && i < sizeof(defaults) / sizeof(*defaults);
	     i++)
		ret = store_index_parse(&s->indexes, defaults[i], s->index_err,
					sizeof(s->index_err));
	if (ret == 0)
		ret = store_set_indexes(st, &s->indexes, &created, &dropped);
	if (ret < 0 && ret == TC_ERR_CONFIG)
		log_err("field indexes: %s: %s", tc_strerror(ret), s->index_err);
	else if (ret < 0)
		log_err("database %s: field indexes: %s", s->db, store_errmsg(st));
	else
		log_info("field indexes: %zu named, %u built and %u dropped in %lld ms",
			 s->indexes.n, created, dropped, (long long)(util_now_ms() - t0));
	return ret;
}

/*
 * A fatal signal: if the ingest worker was decoding a journal record, the
 * journal notes that it killed us, so the next start quarantines it
 * (ingest_note_crash()); then the signal's default action (SA_RESETHAND) ends us.
 */
static void fatal_handler(int sig)
{
	ingest_note_crash();
	raise(sig);
}

static void catch_fatal_signals(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
	struct sigaction sa = { .sa_handler = fatal_handler,
				.sa_flags = SA_RESETHAND | SA_NODEFER | SA_ONSTACK };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

#ifdef TC_TEST_AIDS
/*
 * TRACECOLLECTD_TEST_ABORT_ON (--help, Environment): a test aid, only in a
 * build configured with --enable-test-aids.
 */
static void test_abort_on(struct ingest_opts *io)
{
	const char *v = getenv("TRACECOLLECTD_TEST_ABORT_ON");

	if (!v)
		return;
	if (!strncmp(v, "FORMAT:", 7) && v[7]) {
		io->test_abort_format = v + 7;
		log_warn("TRACECOLLECTD_TEST_ABORT_ON: will abort() decoding the FORMAT of "
			 "%.64s (a test aid)", v + 7);
	} else {
		log_warn("TRACECOLLECTD_TEST_ABORT_ON: '%.64s' ignored (FORMAT:EVENT)", v);
	}
}
#endif

static void stop_cb(evutil_socket_t sig, short what, void *arg)
{
	struct collector *col = arg;

	log_info("signal %d: committing and stopping", (int)sig);
	notify_stopping();
	event_base_loopbreak(col->base);
}

/* traceq --sync and the backlog in replies: the ingest worker (queryd's threads). */
static uint64_t sync_received(void *arg)
{
	struct collector *col = arg;

	return ingest_received(col->ing);
}

static int sync_stored(void *arg, uint64_t mark, int timeout_ms)
{
	struct collector *col = arg;

	return ingest_wait_mark(col->ing, mark, timeout_ms);
}

static void sync_backlog(void *arg, uint64_t *unstored, uint64_t *journal_bytes)
{
	struct collector *col = arg;

	ingest_backlog(col->ing, unstored, journal_bytes);
}

static void sync_stalled(void *arg, int64_t *since_ns, char *why, size_t len)
{
	struct collector *col = arg;

	ingest_stalled(col->ing, since_ns, why, len);
}

/* traceq --hosts: whether an agent of @host_id is connected now. */
static bool hosts_connected(void *arg, uint64_t host_id)
{
	struct collector *col = arg;

	return livehosts_connected(col->live, host_id);
}

/* ingest_opts.live_hosts: the hosts connected now, for a shared store's live set. */
static size_t hosts_live_ids(void *arg, uint64_t *ids, size_t max)
{
	struct collector *col = arg;

	return livehosts_ids(col->live, ids, max);
}

/*
 * Files private whatever the umask tracecollectd was started with: the
 * database (SQLite gives -wal and -shm the database's mode and, as root,
 * its owner), the receive journal, the lock files and the directories
 * made for them are 0600/0700; with --group 0640/0750, made with that
 * group (our effective group: setegid(), so that every file we make has
 * it). Return: 0; -errno, logged.
 */
static int private_files(const struct settings *s)
{
	struct group *gr;

	umask(s->group ? 027 : 077);
	if (!s->group)
		return 0;
	gr = getgrnam(s->group);
	if (!gr) {
		log_err("--group %s: no such group", s->group);
		return -ENOENT;
	}
	if (getegid() != gr->gr_gid && setegid(gr->gr_gid) < 0) {
		log_err("--group %s: cannot make files of that group: %s (run as root or in it)",
			s->group, strerror(errno));
		return -errno;
	}
	return 0;
}

/* Make the missing directories above @path (0700, 0750 with --group: the umask). */
static int make_parents(const char *path)
{
	char *p = strdup(path), *slash;
	int ret = 0;

	if (!p)
		return -ENOMEM;
	for (slash = strchr(p + 1, '/'); slash && ret == 0; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(p, 0750) < 0 && errno != EEXIST)
			ret = -errno;
		*slash = '/';
	}
	if (ret < 0)
		log_err("database %s: cannot make its directory: %s", path, tc_strerror(ret));
	free(p);
	return ret;
}

/*
 * Snapshots are numbered past the highest the store holds (one a journal
 * replay has yet to store is not seen: its number may be taken again).
 */
static void snapshots_numbered(struct freezer *fz, const char *db)
{
	struct store_reader *rd;
	uint64_t max = 0;

	if (store_reader_open(db, &rd) < 0)
		return;
	if (store_snapshot_max(rd, &max) == 0)
		freezer_first_id(fz, max + 1);
	store_reader_close(rd);
}

/* traceq --snapshot, answered by the freezer on the loop (struct queryd_snapper). */
static int snapshot_freeze(void *ctx, const struct queryd_freeze *f, uint64_t *id,
			   unsigned *hosts, char *why, size_t len)
{
	const struct freeze_ask a = { .reason = f->reason, .who = f->who,
				      .host_glob = f->host_glob, .all = f->all,
				      .allow = f->allow, .nallow = f->nallow,
				      .min_id = f->min_id };
	struct freeze_answer out;
	int ret = freezer_ask(ctx, &a, &out);

	*id = out.id;
	*hosts = out.hosts;
	snprintf(why, len, "%s", out.why);
	return ret;
}

/* The import ops of the query endpoint, answered by the importer (struct queryd_importer). */
static int import_begin(void *ctx, const char *subject, struct proto_msg *hello, const void *raw,
			size_t rawlen, uint64_t *id, char *err, size_t errlen)
{
	return importer_begin(ctx, subject, hello, raw, rawlen, id, err, errlen);
}

static int import_msg(void *ctx, const char *subject, uint64_t id, struct proto_msg *m,
		      const void *raw, size_t rawlen, char *err, size_t errlen)
{
	return importer_msg(ctx, subject, id, m, raw, rawlen, err, errlen);
}

static int import_pages(void *ctx, const char *subject, uint64_t id, uint32_t cpu, uint64_t seq,
			const uint8_t *pages, size_t len, char *err, size_t errlen)
{
	return importer_pages(ctx, subject, id, cpu, seq, pages, len, err, errlen);
}

static int import_end(void *ctx, const char *subject, uint64_t id, bool abort, uint64_t *pages,
		      uint64_t *events, char *err, size_t errlen)
{
	return importer_end(ctx, subject, id, abort, pages, events, err, errlen);
}

/* The parts run() starts, step by step; teardown() stops and frees them all. */
struct parts {
	struct settings *s;
	struct collector col;
	struct queryd *qd;
	struct qtls *qtls;		/* the TLS query port; NULL: none */
	struct metrics *metrics;	/* --metrics; NULL: none */
	struct lathist commit_lat, query_lat;	/* for --metrics */
	struct importer *im;
	struct queryd_importer imops;
	struct queryd_snapper snapper;
	struct notify *nt;
	struct ingest_hooks hooks;
	struct event *sigs[3];
	struct hup_ctx hup;
	struct ownfiles_ready ready;
	char bound[128], qurl[512];
	int db_lock, db_dfd;
};

/*
 * A --db that is a server (ClickHouse): its password out of the path and
 * kept by the store with the TLS files (store_remote_setup()); a journal
 * directory of its own, as there is no DB path to put it beside.
 */
static int remote_db(struct settings *s)
{
	char err[256];
	int ret;

	if (!store_path_is_remote(s->db)) {
		if (s->db_password_file || s->db_cert || s->db_key || s->db_ca) {
			log_err("--db-password-file, --db-cert, --db-key and --db-ca are for a "
				"ClickHouse --db (clickhouse://...)");
			return TC_ERR_CONFIG;
		}
		return 0;
	}
	if (s->journal_bytes && !s->journal_dir) {
		log_err("--db %s: give --journal-dir (or --journal-size 0): the journal "
			"cannot go beside a ClickHouse database", s->db);
		return TC_ERR_CONFIG;
	}
	ret = store_remote_setup(s->db, s->db_password_file, s->db_cert, s->db_key, s->db_ca,
				 err, sizeof(err));
	if (ret == 0 && (ret = store_remote_collector(s->collector_name, s->collector_id)) < 0)
		snprintf(err, sizeof(err), "--collector-name: empty or longer than 255 bytes");
	store_remote_retain_lease(s->retain_lease_s);
	if (ret < 0)
		log_err("--db %s: %s", s->db, err[0] ? err : tc_strerror(ret));
	return ret;
}

/*
 * Before anything starts a thread: the agent port's TLS context, absolute
 * paths, private files, the database's lock, @io's settings and the
 * per-host state.
 */
static int prepare(struct parts *p, struct ingest_opts *io)
{
	struct settings *s = p->s;
	struct tls_files files = { s->cert, s->key, s->ca, s->crl };
	bool remote = store_path_is_remote(s->db);
	char err[512];
	int ret = 0;

	if (s->insecure_plain)
		log_warn("--insecure-plain: agents connect over plain TCP, "
			 "unauthenticated and unencrypted (testing only)");
	else
		ret = tls_ctx_new(TLS_ROLE_SERVER, &files, &p->col.tls, err, sizeof(err));
	if (ret < 0) {
		log_err("TLS setup: %s", err);
		return ret;
	}
	/*
	 * Before anything starts a thread (the store's writer and
	 * checkpointer, queries, ingest): only the forking thread lives on
	 * in the child.
	 */
	ret = remote_db(s);
	if (ret < 0)
		return ret;
	if (!s->foreground && ((ret = remote ? 0 : abs_path(&s->db)) < 0 ||
			       (ret = abs_path(&s->ready_file)) < 0 ||
			       (ret = abs_path(&s->journal_dir)) < 0)) {
		log_err("paths: %s", tc_strerror(ret));
		return ret;
	}
	if (!s->journal_dir && asprintf(&s->journal_dir, "%s.journal", s->db) < 0) {
		s->journal_dir = NULL;
		return -ENOMEM;
	}
	/* before daemon(): a refusal reaches the terminal; the child keeps the lock */
	ret = private_files(s);
	if (ret == 0 && !remote)
		ret = make_parents(s->db);
	if (ret == 0)
		ret = ownfiles_check(remote ? NULL : s->db,
				     s->journal_bytes ? s->journal_dir : NULL, &p->db_dfd);
	if (ret == 0 && !remote)	/* a server has no file of ours to lock */
		ret = ownfiles_lock_db(p->db_dfd, s->db, &p->db_lock);
	if (ret < 0)
		return ret;
	io->journal_dir = s->journal_bytes ? s->journal_dir : NULL;
	io->journal_bytes = s->journal_bytes;
	io->store_idle = !s->store_normal;
	io->filters = s->filters;
	io->host_usage = hostlimit_conf_quota(&s->host_limits);
	io->max_types = s->max_types;
	io->max_fields = s->max_fields;
	if (s->metrics) {	/* the latencies /metrics shows */
		io->commit_latency = &p->commit_lat;
		s->query_opts.latency = &p->query_lat;
	}
	io->clock_tol_ns = s->clock_tol_ns;
	if (store_path_is_remote(s->db)) {	/* a fleet's: where each host is connected */
		io->live_hosts = hosts_live_ids;
		io->live_arg = &p->col;
	}
	return hostlimit_new(&s->host_limits, &p->col.hl) ?: livehosts_new(&p->col.live);
}

/* Into the background (unless --foreground), logging to syslog from there. */
static int daemonize(struct parts *p)
{
	if (p->s->foreground)
		return 0;
	if (daemon(0, 0) < 0) {
		int ret = -errno;

		log_err("daemon: %s", strerror(-ret));
		return ret;
	}
	log_init("tracecollectd", p->s->verbose ? LOGL_DEBUG : LOGL_INFO, true);
	lockfile_note_pid(p->db_lock);
	return 0;
}

/* The database, with the field indexes of the settings. */
static int open_store(struct parts *p)
{
	int ret = store_writer_open(p->s->db, &p->col.store);

	if (ret < 0) {
		log_err("database %s: %s", p->s->db, store_open_errmsg(ret));
		return ret;
	}
	return set_indexes(p->col.store, p->s);
}

/*
 * The event loop, the agent port, the query endpoint and its TLS query
 * port (started on the endpoint here, stopped before it in teardown()).
 */
static int start_endpoints(struct parts *p)
{
	struct settings *s = p->s;
	struct tls_files qfiles = { s->cert, s->key, s->query_ca ? s->query_ca : s->ca, s->crl };
	int ret;

	p->col.base = event_base_new();
	ret = p->col.base ? start_listener(&p->col, s->listen, p->bound, sizeof(p->bound)) : -ENOMEM;
	if (ret == 0)
		ret = queryd_start(s->query, s->db, &s->query_opts, &p->qd, p->qurl, sizeof(p->qurl));
	if (ret == 0 && s->query_tls)
		ret = qtls_start(p->qd, s->query_tls, &qfiles, &p->qtls);
	return ret;
}

/*
 * The ingest worker and the importer, wired to the connections (their
 * hooks) and to the query endpoint (--sync, the backlog, imports).
 */
static int start_ingest(struct parts *p, const struct ingest_opts *io)
{
	struct collector *col = &p->col;
	int ret;

	conn_ingest_hooks(col, &p->hooks);
	if ((ret = importer_new(col->base, &p->im)) == 0)
		importer_wrap_hooks(p->im, &p->hooks);
	if (ret == 0)
		ret = ingest_start(col->base, col->store, io, &p->hooks, &col->ing);
	if (ret < 0)
		return ret;
	importer_set_ingest(p->im, col->ing);
	p->imops = (struct queryd_importer){ import_begin, import_msg, import_pages, import_end,
					     p->im, IMPORTER_ID_BIT };
	ret = freezer_new(col, col->base, &col->fz);
	if (ret < 0)
		return ret;
	freezer_interval(col->fz, p->s->freeze_interval_s);
	snapshots_numbered(col->fz, p->s->db);
	p->snapper = (struct queryd_snapper){ snapshot_freeze, col->fz };
	queryd_set_ingest(p->qd, &(struct queryd_ingest){ sync_received, sync_stored,
							 sync_backlog, col, &p->imops,
							 hosts_connected, sync_stalled,
							 .snapper = &p->snapper });
	return 0;
}

/* /metrics: the freezer's refusals (its counters are read from any thread). */
static const char *freezes_refused(void *arg, unsigned i, uint64_t *count)
{
	struct collector *col = arg;

	*count = freezer_refused(col->fz, i);
	return freezer_refusal_name(i);
}

/*
 * --metrics: its port, on a thread of its own, reading the store and what
 * the endpoint and ingest say (the hooks --sync and --hosts use).
 */
static int start_metrics(struct parts *p)
{
	struct settings *s = p->s;
	struct tls_files files = { s->cert, s->key, s->query_ca ? s->query_ca : s->ca, s->crl };
	struct metrics_opts o = {
		.addr = s->metrics, .db = s->db, .tls = &files, .rights = &s->metrics_rights,
		.src = { .qd = p->qd, .commit = &p->commit_lat, .query = &p->query_lat,
			 .backlog = sync_backlog, .connected = hosts_connected,
			 .freezes_refused = freezes_refused, .arg = &p->col },
	};

	return s->metrics ? metrics_start(&o, &p->metrics) : 0;
}

/* The signals (stop, SIGHUP), the daily expiry check, the ready file; then the loop. */
static int serve(struct parts *p, const struct ingest_opts *io)
{
	struct settings *s = p->s;
	struct collector *col = &p->col;
	const char *qtls_at = qtls_bound(p->qtls);
	int ret;

	p->hup = (struct hup_ctx){ col, s, NULL, p->qd, p->qtls, p->metrics };
	p->sigs[0] = evsignal_new(col->base, SIGINT, stop_cb, col);
	p->sigs[1] = evsignal_new(col->base, SIGTERM, stop_cb, col);
	p->sigs[2] = evsignal_new(col->base, SIGHUP, hup_cb, &p->hup);
	for (int i = 0; i < 3; i++)
		event_add(p->sigs[i], NULL);
	p->hup.daily = event_new(col->base, -1, EV_PERSIST, daily_cb, &p->hup);
	if (p->hup.daily)
		event_add(p->hup.daily, &(struct timeval){ .tv_sec = 86400 });
	check_expiry(&p->hup);
	if (s->ready_file && (ret = write_ready_file(s->ready_file, p->bound, p->qurl, qtls_at,
						     metrics_bound(p->metrics), &p->ready)) < 0) {
		log_err("--ready-file %s: %s", s->ready_file, tc_strerror(ret));
		return ret;
	}
	log_info("listening for agents on %s, queries on %s%s%s, storing in %s (%zu filter rules, "
		 "%zu host-map entries, %zu freeze-group lines%s)", p->bound, p->qurl,
		 qtls_at ? " and TLS queries on " : "", qtls_at ? qtls_at : "", s->db,
		 filter_table_count(s->filters), hostmap_count(s->hostmap),
		 hostmap_count(s->freeze_groups), s->crl ? ", revocation list" : "");
	if (io->journal_dir)
		log_info("receive journal in %s, up to %.1f MB; decoding and storing at %s priority",
			 io->journal_dir, (double)io->journal_bytes / (1 << 20),
			 io->store_idle ? "idle" : "normal");
	else
		log_info("no receive journal: pages are acknowledged once stored");
	ret = notify_start(col->base, &p->nt);
	if (ret < 0)
		return ret;
	notify_ready("listening for agents on %s, queries on %s", p->bound, p->qurl);
	event_base_dispatch(col->base);
	return 0;
}

/* Stop and free what the steps started, in the order that lets nothing wait. */
static void teardown(struct parts *p)
{
	struct collector *col = &p->col;

	metrics_stop(p->metrics);	/* first: it reads the endpoint, ingest and hosts */
	importer_stop(p->im);	/* before the endpoint lets go of it: no call waits */
	freezer_stop(col->fz);	/* the same */
	if (p->qd)
		queryd_set_ingest(p->qd, NULL);
	conn_close_all(col);
	notify_free(p->nt);
	ingest_stop(col->ing);
	qtls_stop(p->qtls);	/* before the endpoint it hands requests to */
	queryd_stop(p->qd);
	qtls_free(p->qtls);	/* after: the pool may have answered its connections till then */
	importer_free(p->im);
	freezer_free(col->fz);	/* after the connections (conn_close_all()) */
	col->fz = NULL;
	for (int i = 0; i < 3; i++)
		if (p->sigs[i])
			event_free(p->sigs[i]);
	if (p->hup.daily)
		event_free(p->hup.daily);
	if (col->listener)
		evconnlistener_free(col->listener);
	if (col->base)
		event_base_free(col->base);
	hostlimit_free(col->hl);
	livehosts_free(col->live);	/* after the connections and queries that use it */
	SSL_CTX_free(col->tls);
	store_writer_close(col->store);
	if (p->db_lock >= 0)
		close(p->db_lock);
	if (p->db_dfd >= 0)
		close(p->db_dfd);
	ownfiles_ready_remove(&p->ready);
}

static int run(struct settings *s)
{
	struct parts p = { .s = s, .col = { .lim = s->lim, .hostmap = s->hostmap,
					    .freeze_groups = s->freeze_groups },
			   .ready = { .dfd = -1 }, .db_lock = -1, .db_dfd = -1 };
	struct ingest_opts io = { .commit_ms = store_path_is_remote(s->db) ? COMMIT_MS_REMOTE
									     : COMMIT_MS,
				  .queue_bytes = QUEUE_BYTES,
				  .retain_age_ns = s->retain_age_ns,
				  .retain_bytes = s->retain_bytes,
				  .pushdown = !s->no_pushdown };
	int ret;

	ret = prepare(&p, &io);
	if (ret < 0)
		goto out;
#ifdef TC_TEST_AIDS
	test_abort_on(&io);
#endif
	catch_fatal_signals();
	ret = daemonize(&p) ?: open_store(&p) ?: start_endpoints(&p) ?: start_ingest(&p, &io) ?:
	      start_metrics(&p) ?: serve(&p, &io);
out:
	teardown(&p);
	return ret;
}

int main(int argc, char **argv)
{
	struct settings s = { 0 };
	int ret;

	signal(SIGPIPE, SIG_IGN);
	/*
	 * glibc gives memory freed at the top of the heap back past 128 KiB
	 * and adapts its mmap threshold; a collector that frees and mallocs
	 * input buffers (TLS records, frames, jobs of 256 KiB) all the time
	 * then page-faults the same memory in over and over. Keep up to
	 * COLLECTOR_TRIM_BYTES of it instead.
	 */
	mallopt(M_TRIM_THRESHOLD, COLLECTOR_TRIM_BYTES);
	mallopt(M_MMAP_THRESHOLD, COLLECTOR_MMAP_BYTES);
	log_init("tracecollectd", LOGL_INFO, false);
	if (settings_defaults(&s) < 0 || parse_args(argc, argv, &s) < 0) {
		settings_free(&s);
		return 2;
	}
	log_init("tracecollectd", s.verbose > 1 ? LOGL_DEBUG : LOGL_INFO, false);
	ret = run(&s);
	settings_free(&s);
	return ret < 0 ? 1 : 0;
}
