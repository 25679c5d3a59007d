/*
 * hostlimit.h - per-host limits of the collector: events per second (a
 * token bucket per host) and bytes stored per host (a quota). Module-
 * private to server/.
 *
 * A host over a limit is not dropped from: its connections are not read
 * (conn.c), so TCP pushes back on its agent, which keeps the pages in its
 * spool; what its kernel then loses arrives as the agent's lost counts.
 * Other hosts are read at full speed. The limits apply before the receive
 * journal, so one host cannot fill the journal either.
 *
 * Settings (tracecollectd --host-rate, --host-quota, --host-limit):
 *   defaults for every host, then rules "GLOB [rate=N[/s]] [burst=N]
 *   [quota=SIZE]" matched against the host's name with fnmatch(3), in
 *   order: each matching rule sets the keys it names, so later rules win
 *   (as --filter's do). 0 is "no limit". burst (the bucket's size) is the
 *   rate unless a rule names it.
 *
 * Rate: each page costs the data records in it, counted by walking its
 * record headers (common/page.h) when it is read, before it is journaled
 * or decoded: the agent's count of what it shipped, not what decoding and
 * the filters keep, so a host is charged for what it sends. An empty or
 * malformed page costs 1. A page is read while the bucket holds a token
 * and then charged whole (the bucket may go below zero), so over any
 * interval of T seconds a host's connections take at most
 * burst + rate * T + (the events of one page) events.
 *
 * Quota: bytes stored for the host are the page bytes of its stored pages
 * (traceq --stats "bytes", summed over its CPUs and every host id of that
 * name) less what retention gave back; the ingest worker reports them after
 * commits (struct ingest_hooks.usage). To them are added the bytes of the
 * pages read for the host and not yet committed (the journal's backlog:
 * hostlimit_charge() adds, hostlimit_committed() takes away), so a host is
 * held as soon as what it sent would fill its quota. Pages that are then
 * not stored (resends, malformed) count until the next report. A host
 * goes past its quota by at most the page that crosses it.
 *
 * Metadata (CMDLINES, SYMBOLS, PRINTK messages: what the database keeps of
 * a host besides its events) is charged too, before it is read: a message
 * costs one event per HOSTLIMIT_META_EVENT_BYTES of it (at least 1), and
 * its bytes count as stored for the quota from then on (the host's meta;
 * retention removes events, never metadata). That count lives with the
 * host's entry here, not in the database: a collector restart starts it
 * at 0.
 *
 * A traceagent held longer than its --ack-timeout-ms (30 s) takes the
 * silence for a dead link and reconnects; its host stays in the table
 * (hostlimit_attach()), so it is held again at once, and not logged again.
 *
 * Threads: everything here runs on the event loop, but for the pure
 * functions (parsing, resolving, the bucket, counting a page's events),
 * which any thread may call.
 */
#ifndef SERVER_HOSTLIMIT_H
#define SERVER_HOSTLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/page.h"

/* What a host may do; 0: no limit. */
struct hostlimit_values {
	uint64_t rate;		/* events per second */
	uint64_t burst;		/* events the bucket holds (0: the rate) */
	uint64_t quota;		/* bytes stored */
};

/* One --host-limit rule: the keys it names override earlier ones. */
struct hostlimit_rule {
	char *glob;
	struct hostlimit_values v;
	bool has_rate, has_burst, has_quota;
};

/* The settings: defaults, then rules in order. */
struct hostlimit_conf {
	struct hostlimit_values dflt;
	struct hostlimit_rule *rules;
	size_t nrules;
};

#define HOSTLIMIT_MAX_RULES	1024
#define HOSTLIMIT_RATE_MAX	1000000000000ULL	/* events/s a setting may name */

/* The expected forms, for error messages and --help. */
#define HOSTLIMIT_RULE_FORM	"GLOB [rate=EVENTS[/s]] [burst=EVENTS] [quota=SIZE]"
#define HOSTLIMIT_RATE_FORM	"EVENTS[/s] (a whole number of events per second; 0: no limit)"
#define HOSTLIMIT_QUOTA_FORM	"SIZE (bytes, e.g. 500M or 10G; 0: no limit)"

/*
 * hostlimit_parse_rate - "N" or "N/s", N in [0, HOSTLIMIT_RATE_MAX].
 * hostlimit_parse_quota - "0" or a size (config_parse_size()).
 * Return: 0 and *@out; TC_ERR_CONFIG.
 */
int hostlimit_parse_rate(const char *v, uint64_t *out);
int hostlimit_parse_quota(const char *v, uint64_t *out);

/*
 * hostlimit_conf_rule - add the rule @spec (HOSTLIMIT_RULE_FORM) to @c.
 * Return: 0; TC_ERR_CONFIG with a sentence naming the expected form in
 * @err (and @c as it was); TC_ERR_TOO_LONG past HOSTLIMIT_MAX_RULES;
 * -ENOMEM.
 */
int hostlimit_conf_rule(struct hostlimit_conf *c, const char *spec, char *err, size_t errlen);

/* hostlimit_conf_free - free the rules of @c and empty it (defaults stay). */
void hostlimit_conf_free(struct hostlimit_conf *c);

/*
 * hostlimit_conf_copy - a deep copy of @src into *@dst (which is
 * overwritten, not freed). Return: 0; -ENOMEM (*@dst then empty).
 */
int hostlimit_conf_copy(struct hostlimit_conf *dst, const struct hostlimit_conf *src);

/* hostlimit_conf_any - whether @c limits any host at all. */
bool hostlimit_conf_any(const struct hostlimit_conf *c);

/* hostlimit_conf_quota - whether @c sets a quota for any host. */
bool hostlimit_conf_quota(const struct hostlimit_conf *c);

/*
 * hostlimit_resolve - the limits of host @name under @c: the defaults,
 * then each matching rule's keys in order; burst 0 becomes the rate.
 */
struct hostlimit_values hostlimit_resolve(const struct hostlimit_conf *c, const char *name);

/* ---- the token bucket ---- */

struct hostlimit_bucket {
	uint64_t rate;		/* tokens per second; 0: unlimited */
	uint64_t burst;		/* the most it holds */
	double tokens;		/* below 0 after a page dearer than what was left */
	int64_t at_ns;		/* when tokens was brought up to date */
};

/* hostlimit_bucket_init - a full bucket of @rate and @burst at @now_ns. */
void hostlimit_bucket_init(struct hostlimit_bucket *b, uint64_t rate, uint64_t burst,
			   int64_t now_ns);

/*
 * hostlimit_bucket_set - new @rate and @burst, keeping the tokens (cut to
 * the new burst); from unlimited: full.
 */
void hostlimit_bucket_set(struct hostlimit_bucket *b, uint64_t rate, uint64_t burst,
			  int64_t now_ns);

/*
 * hostlimit_bucket_wait - refill @b up to @now_ns (monotonic ns); Return:
 * 0 when it holds a token (a page may be read), else the ns until it will.
 */
int64_t hostlimit_bucket_wait(struct hostlimit_bucket *b, int64_t now_ns);

/* hostlimit_bucket_take - charge @n tokens (the bucket may go below 0). */
void hostlimit_bucket_take(struct hostlimit_bucket *b, uint64_t n, int64_t now_ns);

/*
 * hostlimit_page_events - what reading the page at @page (@len bytes, laid
 * out as @l says but for its size: the page is what arrived, so a kernel
 * CPU's and a program ring's, whose sizes differ, count alike) costs: its
 * data records, at least 1. Never reads outside the page; a malformed one
 * is charged what precedes the fault.
 */
uint64_t hostlimit_page_events(const struct page_layout *l, const void *page, size_t len);

/* ---- the hosts: event loop only ---- */

struct hostlimit;

/* Why a host's connections are not read. */
enum hostlimit_hold {
	HOSTLIMIT_GO = 0,	/* read */
	HOSTLIMIT_RATE = 1,	/* its bucket is empty */
	HOSTLIMIT_QUOTA = 2,	/* it stored its quota */
};

/* Per host: what holds it back, as counted by its connections. */
struct hostlimit_host {
	struct hostlimit_host *next;
	char *name;
	unsigned refs;			/* connections attached */
	struct hostlimit_values v;
	struct hostlimit_bucket bucket;
	uint64_t stored;		/* bytes, as last reported (usage) */
	uint64_t pending;		/* page bytes read, not yet committed */
	uint64_t meta;			/* metadata bytes read (hostlimit_charge_meta) */
	bool quota_logged;		/* "over its quota" said for this crossing */
	int64_t idle_since;		/* refs 0 since (monotonic ns) */
};

/* Hosts kept with no connection attached (their bucket, their quota state). */
#define HOSTLIMIT_IDLE_MAX	1024

/*
 * hostlimit_new - a table of hosts under a copy of @conf.
 * Return: 0 and *@out; -ENOMEM.
 */
int hostlimit_new(const struct hostlimit_conf *conf, struct hostlimit **out);

/* hostlimit_free - free @hl and its hosts (detach them first). NULL is fine. */
void hostlimit_free(struct hostlimit *hl);

/*
 * hostlimit_set_conf - new settings (SIGHUP): every host's limits are
 * resolved again; buckets keep their tokens (cut to the new burst).
 * Return: 0; -ENOMEM (the old settings stay).
 */
int hostlimit_set_conf(struct hostlimit *hl, const struct hostlimit_conf *conf);

/*
 * hostlimit_attach - the host named @name, shared by every connection of
 * that name; each attach is undone by one hostlimit_detach(). A host
 * whose last connection went is kept a while (HOSTLIMIT_IDLE_MAX hosts at
 * most), so a reconnecting agent finds its bucket and quota state as it
 * left them.
 * Return: 0 and *@out; -ENOMEM.
 */
int hostlimit_attach(struct hostlimit *hl, const char *name, struct hostlimit_host **out);
void hostlimit_detach(struct hostlimit *hl, struct hostlimit_host *h);

/*
 * hostlimit_check - may a page of @h be read at @now_ns? HOSTLIMIT_GO, or
 * why not with *@wait_ns: when its bucket has a token again (RATE), or
 * when to look again (QUOTA: after the next report). The first QUOTA of a
 * crossing is logged (the host's name escaped).
 */
enum hostlimit_hold hostlimit_check(struct hostlimit_host *h, int64_t now_ns, int64_t *wait_ns);

/* hostlimit_charge - a page of @events events and @bytes bytes of @h was read. */
void hostlimit_charge(struct hostlimit_host *h, uint64_t events, uint64_t bytes,
		      int64_t now_ns);

/* A metadata message costs an event per this many of its bytes. */
#define HOSTLIMIT_META_EVENT_BYTES	64

/*
 * hostlimit_charge_meta - a metadata message of @bytes bytes of @h was
 * read: its events from the bucket, its bytes to the host's stored bytes.
 */
void hostlimit_charge_meta(struct hostlimit_host *h, uint64_t bytes, int64_t now_ns);

/*
 * hostlimit_committed - @bytes of the pages read for @h were committed
 * (stored or counted), or their connection went: no longer pending.
 */
void hostlimit_committed(struct hostlimit_host *h, uint64_t bytes);

/*
 * hostlimit_usage - the worker's report: host @name has @bytes stored. A
 * host that is not in the table (no connection now or lately) is not added.
 */
void hostlimit_usage(struct hostlimit *hl, const char *name, uint64_t bytes);

/* hostlimit_quota_on - whether any host may have a quota (usage reports matter). */
bool hostlimit_quota_on(const struct hostlimit *hl);

/* The ns a host over its quota waits before it is looked at again. */
#define HOSTLIMIT_QUOTA_RECHECK_NS	(250 * 1000000LL)

#endif
