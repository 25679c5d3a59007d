/*
 * metrics_text.c - the text of /metrics (see metrics_text.h): the hosts
 * (store_hosts()), their counters summed over CPUs (store_stats(), the
 * numbers of `traceq --stats`) and drops by reason (store_drops(), those
 * of `traceq --drops`), then the collector's own gauges and latency
 * histograms, written family by family as the exposition format wants
 * (HELP, TYPE, then every series of the family).
 */
#include "config.h"

#define LOG_PREFIX "metrics"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lathist.h"
#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"
#include "server/query/metrics_text.h"
#include "server/query/queryd.h"
#include "server/store/store.h"

/* The per-host counters: a store_stats() key summed over CPUs, or a drop reason. */
enum mkey {
	K_EV_RX, K_EV_ST, K_PG_RX, K_PG_ST, K_B_RX, K_B_ST, K_OVERRUN, K_LOST, K_BAD,
	K_FILTERED, K_AGED, K_N
};

static const struct mfamily {
	const char *name, *help;
	const char *key;	/* store_stats()'s key, or with @drop store_drops()'s reason */
	bool drop;
} fams[K_N] = {
	[K_EV_RX] = { "tracecollect_events_received_total",
		      "Events the host's agent reports having sent (traceq --stats agent_events).",
		      "agent_events", false },
	[K_EV_ST] = { "tracecollect_events_stored_total",
		      "Events of the host stored by the collector (traceq --stats events).",
		      "events", false },
	[K_PG_RX] = { "tracecollect_pages_received_total",
		      "Pages the host's agent reports having sent (traceq --stats agent_pages).",
		      "agent_pages", false },
	[K_PG_ST] = { "tracecollect_pages_stored_total",
		      "Pages of the host received and stored (traceq --stats pages).",
		      "pages", false },
	[K_B_RX] = { "tracecollect_bytes_received_total",
		     "Page bytes the host's agent reports having sent (traceq --stats agent_bytes).",
		     "agent_bytes", false },
	[K_B_ST] = { "tracecollect_bytes_stored_total",
		     "Page bytes of the host received and stored (traceq --stats bytes).",
		     "bytes", false },
	[K_OVERRUN] = { "tracecollect_kernel_overruns_total",
			"Events the host's kernel overwrote before they were read "
			"(traceq --stats overrun).", "overrun", false },
	[K_LOST] = { "tracecollect_lost_pages_total",
		     "Pages the host's agent lost (traceq --stats lost_pages).",
		     "lost_pages", false },
	[K_BAD] = { "tracecollect_bad_pages_total",
		    "Pages of the host that could not be decoded (traceq --stats bad_pages).",
		    "bad_pages", false },
	[K_FILTERED] = { "tracecollect_events_filtered_total",
			 "Events of the host dropped by server-side filters "
			 "(traceq --drops, reason filter).", "filter", true },
	[K_AGED] = { "tracecollect_events_aged_out_total",
		     "Events of the host removed by retention, by age or size "
		     "(traceq --drops, reason retention).", "retention", true },
};

struct mhost {
	uint64_t id;
	char *name, *agent;	/* agent: its latest HELLO's version; NULL: not told */
	int64_t last_seen, clock_offset_ns;
	bool measured;		/* the collector measured its clock (issue 36) */
	int64_t clock_disagree_ns, clock_uncertainty_ns;
	bool connected;
	uint64_t v[K_N];
};

struct mread {
	struct mhost *h;
	size_t n, cap;
	const struct metrics_sources *src;
};

const char *metrics_label(const char *s, char *buf, size_t len)
{
	char esc[LOG_ESC_LEN];
	size_t o = 0;

	log_escape(s, esc, sizeof(esc));
	for (const char *p = esc; *p && o + 3 < len; p++) {
		if (*p == '\\' || *p == '"')
			buf[o++] = '\\';
		buf[o++] = *p;
	}
	if (len)
		buf[o < len ? o : len - 1] = 0;
	return buf;
}

static int host_add(void *ctx, const struct store_host_info *h)
{
	struct mread *r = ctx;
	struct mhost *m;
	/* an import's hosts row: machine_id "import:DIGEST", never connected */
	bool import = h->machine_id && !strncmp(h->machine_id, "import:", 7);

	m = util_grow(r->h, &r->cap, r->n, sizeof(*r->h), 64);
	if (!m)
		return -ENOMEM;
	r->h = m;
	m += r->n;
	*m = (struct mhost){ .id = h->id, .last_seen = h->last_seen,
			     .clock_offset_ns = h->clock_offset_ns,
			     .measured = h->clock_source != NULL,
			     .clock_disagree_ns = h->clock_disagree_ns,
			     .clock_uncertainty_ns = h->clock_uncertainty_ns };
	m->name = strdup(h->name ? h->name : "");
	m->agent = !import && h->agent && h->agent[0] ? strdup(h->agent) : NULL;
	if (!m->name || (!import && h->agent && h->agent[0] && !m->agent)) {
		free(m->name);
		free(m->agent);
		return -ENOMEM;
	}
	m->connected = !import && r->src->connected && r->src->connected(r->src->arg, h->id);
	r->n++;
	return 0;
}

static int host_cmp(const void *a, const void *b)
{
	const struct mhost *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : x->id < y->id ? -1 : x->id > y->id;
}

/* The first host named @name (the array sorted by host_cmp()); NULL: none. */
static struct mhost *host_by_name(const struct mread *r, const char *name)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(r->h[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->n && !strcmp(r->h[lo].name, name) ? &r->h[lo] : NULL;
}

static int key_of(const char *key, bool drop)
{
	for (int k = 0; k < K_N; k++)
		if (fams[k].drop == drop && !strcmp(fams[k].key, key))
			return k;
	return -1;
}

static int stat_add(void *ctx, const struct store_stats_host *h, uint32_t cpu,
		    const char *key, uint64_t value)
{
	struct mread *r = ctx;
	struct mhost *m = host_by_name(r, h->name ? h->name : "");
	int k = key_of(key, false);

	while (m && m < r->h + r->n && m->id != h->id && !strcmp(m->name, h->name))
		m++;
	if (k >= 0 && m && m < r->h + r->n && m->id == h->id)
		m->v[k] += value;
	return 0;	/* a host stored after store_hosts() read: next time */
}

static int drop_add(void *ctx, const char *host, const char *system, const char *name,
		    const char *reason, uint64_t count)
{
	struct mread *r = ctx;
	struct mhost *m = host[0] ? host_by_name(r, host) : NULL;
	int k = key_of(reason, true);

	if (m && k >= 0)
		m->v[k] += count;
	return 0;
}

static void mread_free(struct mread *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->h[i].name);
		free(r->h[i].agent);
	}
	free(r->h);
}

/* The hosts and their counters from @st into @r, sorted by name. */
static int mread_store(struct store_reader *st, struct mread *r)
{
	int ret = store_hosts(st, NULL, host_add, r);

	if (ret == 0 && r->n)
		qsort(r->h, r->n, sizeof(*r->h), host_cmp);
	if (ret == 0)
		ret = store_stats(st, NULL, stat_add, r);
	if (ret == 0)
		ret = store_drops(st, NULL, drop_add, r);
	return ret < 0 ? ret : 0;
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * The hosts of one name, @h[0..@n), as one: counters summed, the gauges
 * and version of the one seen last, connected when any is.
 */
static void host_merge(const struct mhost *h, size_t n, struct mhost *out)
{
	*out = h[0];
	for (size_t i = 1; i < n; i++) {
		for (int k = 0; k < K_N; k++)
			out->v[k] += h[i].v[k];
		out->connected |= h[i].connected;
		if (h[i].last_seen > out->last_seen) {
			out->last_seen = h[i].last_seen;
			out->clock_offset_ns = h[i].clock_offset_ns;
			out->measured = h[i].measured;
			out->clock_disagree_ns = h[i].clock_disagree_ns;
			out->clock_uncertainty_ns = h[i].clock_uncertainty_ns;
			out->agent = h[i].agent;
		}
	}
}

/* @r's hosts merged by name into a new array *@out of *@n. */
static int by_name(const struct mread *r, struct mhost **out, size_t *n)
{
	struct mhost *v = calloc(r->n ? r->n : 1, sizeof(*v));
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0, j; i < r->n; i = j) {
		for (j = i + 1; j < r->n && !strcmp(r->h[j].name, r->h[i].name); j++)
			;
		host_merge(&r->h[i], j - i, &v[k++]);
	}
	*out = v;
	*n = k;
	return 0;
}

/*
 * A gauge family @name of the hosts whose clock the collector measured:
 * each one's int64_t at @ns_at (offsetof struct mhost), ns, in seconds.
 */
static void measured_gauge(FILE *f, const char *name, const char *help,
			   const struct mhost *h, size_t n, size_t ns_at)
{
	char l[2 * LOG_ESC_LEN + 1];

	family(f, name, "gauge", help);
	for (size_t i = 0; i < n; i++)
		if (h[i].measured)
			fprintf(f, "%s{host=\"%s\"} %.9f\n", name,
				metrics_label(h[i].name, l, sizeof(l)),
				(double)*(const int64_t *)((const char *)&h[i] + ns_at) / 1e9);
}

static void host_series(FILE *f, const struct mhost *h, size_t n)
{
	char l[2 * LOG_ESC_LEN + 1], a[2 * LOG_ESC_LEN + 1];
	size_t live = 0;

	family(f, "tracecollect_host_info", "gauge",
	       "Always 1; agent_version: the version its agent's latest HELLO named.");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "tracecollect_host_info{host=\"%s\",agent_version=\"%s\"} 1\n",
			metrics_label(h[i].name, l, sizeof(l)),
			h[i].agent ? metrics_label(h[i].agent, a, sizeof(a)) : "");
	family(f, "tracecollect_host_connected", "gauge",
	       "1 while an agent of the host is connected.");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "tracecollect_host_connected{host=\"%s\"} %d\n",
			metrics_label(h[i].name, l, sizeof(l)), h[i].connected);
		live += h[i].connected;
	}
	family(f, "tracecollect_host_last_seen_seconds", "gauge",
	       "When the host last said something (HELLO, clock samples), Unix time.");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "tracecollect_host_last_seen_seconds{host=\"%s\"} %.3f\n",
			metrics_label(h[i].name, l, sizeof(l)), (double)h[i].last_seen / 1e9);
	family(f, "tracecollect_host_clock_offset_seconds", "gauge",
	       "The host's realtime minus its trace clock, latest sample.");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "tracecollect_host_clock_offset_seconds{host=\"%s\"} %.9f\n",
			metrics_label(h[i].name, l, sizeof(l)),
			(double)h[i].clock_offset_ns / 1e9);
	measured_gauge(f, "tracecollect_host_clock_disagree_seconds",
		       "The host's realtime minus the collector's measurement of it; hosts measured only.",
		       h, n, offsetof(struct mhost, clock_disagree_ns));
	measured_gauge(f, "tracecollect_host_clock_uncertainty_seconds",
		       "Half the best round trip of the collector's latest clock measurement; hosts measured only.",
		       h, n, offsetof(struct mhost, clock_uncertainty_ns));
	for (int k = 0; k < K_N; k++) {
		family(f, fams[k].name, "counter", fams[k].help);
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%s{host=\"%s\"} %" PRIu64 "\n", fams[k].name,
				metrics_label(h[i].name, l, sizeof(l)), h[i].v[k]);
	}
	family(f, "tracecollect_agents_connected", "gauge",
	       "Hosts with an agent connected now.");
	fprintf(f, "tracecollect_agents_connected %zu\n", live);
	family(f, "tracecollect_hosts", "gauge", "Hosts the store knows (by name).");
	fprintf(f, "tracecollect_hosts %zu\n", n);
}

static void histogram(FILE *f, const char *name, const char *help, const struct lathist *h)
{
	struct lathist_snap s;
	uint64_t cum = 0;

	lathist_read(h, &s);
	family(f, name, "histogram", help);
	for (size_t i = 0; i < LATHIST_BUCKETS; i++) {
		cum += s.n[i];
		fprintf(f, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name,
			(double)lathist_bounds_us[i] / 1e6, cum);
	}
	cum += s.n[LATHIST_BUCKETS];
	fprintf(f, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n%s_sum %.6f\n%s_count %" PRIu64 "\n",
		name, cum, name, (double)s.sum_us / 1e6, name, cum);
}

static void freezes_refused(FILE *f, const struct metrics_sources *src)
{
	const char *why;
	uint64_t n;

	if (!src->freezes_refused)
		return;
	family(f, "tracecollect_trigger_freezes_refused_total", "counter",
	       "Flight-recorder trigger freezes (traceagent --freeze-on) refused or narrowed, by "
	       "reason: rate_limit, a group (or a host in none) left out because it froze "
	       "within --freeze-interval; group_claim, the agent's --group claim ignored (no "
	       "freeze-group line puts its host in that group).");
	for (unsigned i = 0; (why = src->freezes_refused(src->arg, i, &n)); i++)
		fprintf(f, "tracecollect_trigger_freezes_refused_total{reason=\"%s\"} %" PRIu64 "\n",
			why, n);
}

static void collector_series(FILE *f, struct store_reader *st, const struct metrics_sources *src)
{
	uint64_t unstored = 0, jbytes = 0, size = 0;

	if (src->backlog)
		src->backlog(src->arg, &unstored, &jbytes);
	family(f, "tracecollect_journal_bytes", "gauge", "Bytes of the receive journal.");
	fprintf(f, "tracecollect_journal_bytes %" PRIu64 "\n", jbytes);
	family(f, "tracecollect_journal_backlog_batches", "gauge",
	       "Batches received and not yet stored (what traceq --sync waits for).");
	fprintf(f, "tracecollect_journal_backlog_batches %" PRIu64 "\n", unstored);
	if (store_size(st, &size) == 0) {
		family(f, "tracecollect_store_bytes", "gauge",
		       "Bytes the store's data takes (SQLite: used pages, as --retain-size "
		       "counts them).");
		fprintf(f, "tracecollect_store_bytes %" PRIu64 "\n", size);
	}
	family(f, "tracecollect_queries_in_flight", "gauge",
	       "Query requests taken and not yet answered.");
	fprintf(f, "tracecollect_queries_in_flight %u\n", src->qd ? queryd_in_flight(src->qd) : 0);
	freezes_refused(f, src);
	histogram(f, "tracecollect_commit_duration_seconds",
		  "Time of each commit of the ingest worker (flush, retention, commit).",
		  src->commit);
	histogram(f, "tracecollect_query_duration_seconds",
		  "Time of each query request, from its arrival to its reply.", src->query);
}

int metrics_render(struct store_reader *st, const struct metrics_sources *src, char **text,
		   size_t *len)
{
	struct mread r = { .src = src };
	struct mhost *h = NULL;
	size_t n = 0;
	char *buf = NULL;
	size_t blen = 0;
	FILE *f;
	int ret = mread_store(st, &r) ?: by_name(&r, &h, &n);

	if (ret < 0)
		goto out;
	f = open_memstream(&buf, &blen);
	if (!f) {
		ret = -ENOMEM;
		goto out;
	}
	host_series(f, h, n);
	collector_series(f, st, src);
	if (ferror(f) || fclose(f) != 0) {
		free(buf);
		ret = -ENOMEM;
		goto out;
	}
	*text = buf;
	*len = blen;
out:
	free(h);
	mread_free(&r);
	return ret;
}
