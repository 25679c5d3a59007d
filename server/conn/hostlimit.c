/*
 * hostlimit.c - per-host limits: the settings (defaults and --host-limit
 * rules), a token bucket per host for events/s, and the bytes each host has
 * stored against its quota. hostlimit.h says what is limited and how;
 * conn.c stops reading a host's connections while this says so.
 *
 * The bucket is the classic token bucket (tokens accrue at the rate up to
 * the burst; a page is taken while one is left), with the one twist that a
 * page is charged whole even when it costs more than what is left: the
 * bucket goes into debt and the host waits until it is paid. Pages cannot
 * be split, and refusing a page dearer than the burst would stop its host
 * for good.
 */
#include "config.h"

#define LOG_PREFIX "hostlimit"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config_file.h"
#include "common/log.h"
#include "common/tc_error.h"
#include "server/conn/hostlimit.h"

#define NS_PER_S	1000000000LL

/*
 * Hosts no connection is attached to are kept (up to HOSTLIMIT_IDLE_MAX,
 * the longest idle go first), so that an agent that reconnects finds its
 * bucket as it left it (no fresh burst) and a host over its quota is not
 * logged again at each reconnect (traceagent reconnects when its pages
 * see no acknowledgement for --ack-timeout-ms).
 */
struct hostlimit {
	struct hostlimit_conf conf;
	struct hostlimit_host *hosts;	/* attached and idle hosts */
	unsigned nidle;			/* of those, idle (refs 0) */
	bool quota_on;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* ---- settings ---- */

int hostlimit_parse_rate(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || end == v || *v == '-' || *v == ' ' || *v == '+' ||
	    (*end && strcmp(end, "/s")) || n > HOSTLIMIT_RATE_MAX)
		return TC_ERR_CONFIG;
	*out = n;
	return 0;
}

int hostlimit_parse_quota(const char *v, uint64_t *out)
{
	if (!strcmp(v, "0")) {
		*out = 0;
		return 0;
	}
	return config_parse_size(v, out);
}

/* One "key=value" word of a rule into @r. Return: 0; TC_ERR_CONFIG. */
static int rule_word(struct hostlimit_rule *r, const char *w, char *err, size_t errlen)
{
	const char *eq = strchr(w, '=');
	int ret = TC_ERR_CONFIG;

	if (eq && !strncmp(w, "rate=", 5)) {
		ret = hostlimit_parse_rate(eq + 1, &r->v.rate);
		r->has_rate = true;
		if (ret < 0)
			snprintf(err, errlen, "host limit: bad rate '%.64s': expected rate=%s",
				 eq + 1, HOSTLIMIT_RATE_FORM);
	} else if (eq && !strncmp(w, "burst=", 6)) {
		ret = hostlimit_parse_rate(eq + 1, &r->v.burst);
		r->has_burst = true;
		if (ret < 0)
			snprintf(err, errlen, "host limit: bad burst '%.64s': expected "
				 "burst=EVENTS (a whole number; 0: the rate)", eq + 1);
	} else if (eq && !strncmp(w, "quota=", 6)) {
		ret = hostlimit_parse_quota(eq + 1, &r->v.quota);
		r->has_quota = true;
		if (ret < 0)
			snprintf(err, errlen, "host limit: bad quota '%.64s': expected quota=%s",
				 eq + 1, HOSTLIMIT_QUOTA_FORM);
	} else {
		snprintf(err, errlen, "host limit: '%.64s' is not rate=, burst= or quota=: "
			 "expected '%s'", w, HOSTLIMIT_RULE_FORM);
	}
	return ret;
}

/* Split @spec into @r: the glob, then key=value words. */
static int rule_parse(struct hostlimit_rule *r, char *spec, char *err, size_t errlen)
{
	char *save = NULL, *w = strtok_r(spec, " \t", &save);
	int ret = 0;

	if (!w || strchr(w, '=')) {
		snprintf(err, errlen, "host limit: no host glob: expected '%s'",
			 HOSTLIMIT_RULE_FORM);
		return TC_ERR_CONFIG;
	}
	r->glob = strdup(w);
	if (!r->glob)
		return -ENOMEM;
	while (ret == 0 && (w = strtok_r(NULL, " \t", &save)))
		ret = rule_word(r, w, err, errlen);
	if (ret == 0 && !r->has_rate && !r->has_burst && !r->has_quota) {
		snprintf(err, errlen, "host limit: '%.64s' names no limit: expected '%s'",
			 r->glob, HOSTLIMIT_RULE_FORM);
		ret = TC_ERR_CONFIG;
	}
	return ret;
}

int hostlimit_conf_rule(struct hostlimit_conf *c, const char *spec, char *err, size_t errlen)
{
	struct hostlimit_rule r = { 0 }, *v;
	char *copy;
	int ret;

	if (c->nrules >= HOSTLIMIT_MAX_RULES) {
		snprintf(err, errlen, "host limit: more than %u rules", HOSTLIMIT_MAX_RULES);
		return TC_ERR_TOO_LONG;
	}
	copy = strdup(spec);
	if (!copy)
		return -ENOMEM;
	ret = rule_parse(&r, copy, err, errlen);
	free(copy);
	if (ret == 0) {
		v = realloc(c->rules, (c->nrules + 1) * sizeof(*v));
		ret = v ? 0 : -ENOMEM;
		if (v) {
			c->rules = v;
			c->rules[c->nrules++] = r;
			return 0;
		}
	}
	free(r.glob);
	return ret;
}

void hostlimit_conf_free(struct hostlimit_conf *c)
{
	for (size_t i = 0; i < c->nrules; i++)
		free(c->rules[i].glob);
	free(c->rules);
	c->rules = NULL;
	c->nrules = 0;
}

int hostlimit_conf_copy(struct hostlimit_conf *dst, const struct hostlimit_conf *src)
{
	*dst = (struct hostlimit_conf){ .dflt = src->dflt };
	if (!src->nrules)
		return 0;
	dst->rules = calloc(src->nrules, sizeof(*dst->rules));
	if (!dst->rules)
		return -ENOMEM;
	for (size_t i = 0; i < src->nrules; i++) {
		dst->rules[i] = src->rules[i];
		dst->rules[i].glob = strdup(src->rules[i].glob);
		dst->nrules = i + 1;
		if (!dst->rules[i].glob) {
			hostlimit_conf_free(dst);
			return -ENOMEM;
		}
	}
	return 0;
}

bool hostlimit_conf_any(const struct hostlimit_conf *c)
{
	bool any = c->dflt.rate || c->dflt.quota;

	for (size_t i = 0; i < c->nrules && !any; i++)
		any = c->rules[i].v.rate || c->rules[i].v.quota;
	return any;
}

bool hostlimit_conf_quota(const struct hostlimit_conf *c)
{
	bool any = c->dflt.quota;

	for (size_t i = 0; i < c->nrules && !any; i++)
		any = c->rules[i].v.quota;
	return any;
}

struct hostlimit_values hostlimit_resolve(const struct hostlimit_conf *c, const char *name)
{
	struct hostlimit_values v = c->dflt;

	for (size_t i = 0; i < c->nrules; i++) {
		const struct hostlimit_rule *r = &c->rules[i];

		if (fnmatch(r->glob, name, 0) != 0)
			continue;
		if (r->has_rate)
			v.rate = r->v.rate;
		if (r->has_burst)
			v.burst = r->v.burst;
		if (r->has_quota)
			v.quota = r->v.quota;
	}
	if (!v.burst)
		v.burst = v.rate;
	return v;
}

/* ---- the token bucket ---- */

void hostlimit_bucket_init(struct hostlimit_bucket *b, uint64_t rate, uint64_t burst,
			   int64_t now_ns)
{
	*b = (struct hostlimit_bucket){ .rate = rate, .burst = burst ? burst : rate,
					.tokens = (double)(burst ? burst : rate),
					.at_ns = now_ns };
}

static void bucket_refill(struct hostlimit_bucket *b, int64_t now_ns)
{
	if (now_ns > b->at_ns && b->rate) {
		b->tokens += (double)(now_ns - b->at_ns) * (double)b->rate / NS_PER_S;
		if (b->tokens > (double)b->burst)
			b->tokens = (double)b->burst;
	}
	if (now_ns > b->at_ns)
		b->at_ns = now_ns;
}

void hostlimit_bucket_set(struct hostlimit_bucket *b, uint64_t rate, uint64_t burst,
			  int64_t now_ns)
{
	if (!b->rate) {
		hostlimit_bucket_init(b, rate, burst, now_ns);
		return;
	}
	bucket_refill(b, now_ns);
	b->rate = rate;
	b->burst = burst ? burst : rate;
	if (b->tokens > (double)b->burst)
		b->tokens = (double)b->burst;
}

int64_t hostlimit_bucket_wait(struct hostlimit_bucket *b, int64_t now_ns)
{
	double ns;

	if (!b->rate)
		return 0;
	bucket_refill(b, now_ns);
	if (b->tokens > 0)
		return 0;
	ns = (1e-9 - b->tokens) * NS_PER_S / (double)b->rate;	/* to just above 0 */
	return ns < 1 ? 1 : ns > 3600.0 * NS_PER_S ? 3600 * NS_PER_S : (int64_t)ns + 1;
}

void hostlimit_bucket_take(struct hostlimit_bucket *b, uint64_t n, int64_t now_ns)
{
	if (!b->rate)
		return;
	bucket_refill(b, now_ns);
	b->tokens -= (double)n;
}

uint64_t hostlimit_page_events(const struct page_layout *l, const void *page, size_t len)
{
	struct page_layout at = *l;
	struct page_info pi;
	struct page_iter it;
	struct page_record rec;
	uint64_t n = 0;

	at.page_size = len > PAGE_COMMIT_LEN_MASK ? PAGE_COMMIT_LEN_MASK : (uint32_t)len;
	if (page_check(&at, page, len, &pi) < 0)
		return 1;
	page_iter_init(&it, &at, &pi);
	while (page_next_record(&it, &rec) == 1)
		n += page_record_is_data(&rec);
	return n ? n : 1;
}

/* ---- the hosts ---- */

int hostlimit_new(const struct hostlimit_conf *conf, struct hostlimit **out)
{
	struct hostlimit *hl = calloc(1, sizeof(*hl));

	if (!hl || hostlimit_conf_copy(&hl->conf, conf) < 0) {
		free(hl);
		return -ENOMEM;
	}
	hl->quota_on = hostlimit_conf_quota(conf);
	*out = hl;
	return 0;
}

void hostlimit_free(struct hostlimit *hl)
{
	if (!hl)
		return;
	while (hl->hosts) {	/* idle ones, or a caller forgot to detach */
		struct hostlimit_host *h = hl->hosts;

		hl->hosts = h->next;
		free(h->name);
		free(h);
	}
	hostlimit_conf_free(&hl->conf);
	free(hl);
}

/* @h's limits from the settings of @hl; its bucket keeps its tokens. */
static void host_resolve(const struct hostlimit *hl, struct hostlimit_host *h, int64_t now_ns)
{
	h->v = hostlimit_resolve(&hl->conf, h->name);
	hostlimit_bucket_set(&h->bucket, h->v.rate, h->v.burst, now_ns);
	h->quota_logged = false;
}

int hostlimit_set_conf(struct hostlimit *hl, const struct hostlimit_conf *conf)
{
	struct hostlimit_conf c;
	int64_t now = now_ns();

	if (hostlimit_conf_copy(&c, conf) < 0)
		return -ENOMEM;
	hostlimit_conf_free(&hl->conf);
	hl->conf = c;
	hl->quota_on = hostlimit_conf_quota(conf);
	for (struct hostlimit_host *h = hl->hosts; h; h = h->next)
		host_resolve(hl, h, now);
	return 0;
}

int hostlimit_attach(struct hostlimit *hl, const char *name, struct hostlimit_host **out)
{
	struct hostlimit_host *h;

	for (h = hl->hosts; h && strcmp(h->name, name); h = h->next)
		;
	if (h && !h->refs)
		hl->nidle--;
	if (!h) {
		h = calloc(1, sizeof(*h));
		if (h)
			h->name = strdup(name);
		if (!h || !h->name) {
			free(h);
			return -ENOMEM;
		}
		host_resolve(hl, h, now_ns());
		h->next = hl->hosts;
		hl->hosts = h;
	}
	h->refs++;
	*out = h;
	return 0;
}

/* Free the host idle the longest. */
static void drop_oldest_idle(struct hostlimit *hl)
{
	struct hostlimit_host **pp, **oldest = NULL, *h;

	for (pp = &hl->hosts; *pp; pp = &(*pp)->next)
		if (!(*pp)->refs && (!oldest || (*pp)->idle_since < (*oldest)->idle_since))
			oldest = pp;
	if (!oldest)
		return;
	h = *oldest;
	*oldest = h->next;
	hl->nidle--;
	free(h->name);
	free(h);
}

void hostlimit_detach(struct hostlimit *hl, struct hostlimit_host *h)
{
	if (!h || --h->refs)
		return;
	h->idle_since = now_ns();
	h->pending = 0;		/* its connections' pages: stored, or sent again */
	if (++hl->nidle > HOSTLIMIT_IDLE_MAX)
		drop_oldest_idle(hl);
}

enum hostlimit_hold hostlimit_check(struct hostlimit_host *h, int64_t now_ns, int64_t *wait_ns)
{
	uint64_t used = h->stored + h->pending + h->meta;
	int64_t wait;
	char name[LOG_ESC_LEN];

	if (h->v.quota && used >= h->v.quota) {
		if (!h->quota_logged)
			log_warn("host %s is over its quota (%llu of %llu bytes stored): "
				 "its connections are not read until retention frees space "
				 "or the quota is raised (SIGHUP); counted in traceq --stats "
				 "quota_held_*", log_escape(h->name, name, sizeof(name)),
				 (unsigned long long)used, (unsigned long long)h->v.quota);
		h->quota_logged = true;
		*wait_ns = HOSTLIMIT_QUOTA_RECHECK_NS;
		return HOSTLIMIT_QUOTA;
	}
	if (h->quota_logged && h->v.quota)
		log_info("host %s is under its quota again (%llu of %llu bytes stored)",
			 log_escape(h->name, name, sizeof(name)), (unsigned long long)used,
			 (unsigned long long)h->v.quota);
	h->quota_logged = false;
	wait = hostlimit_bucket_wait(&h->bucket, now_ns);
	if (!wait)
		return HOSTLIMIT_GO;
	*wait_ns = wait;
	return HOSTLIMIT_RATE;
}

void hostlimit_charge(struct hostlimit_host *h, uint64_t events, uint64_t bytes,
		      int64_t now_ns)
{
	hostlimit_bucket_take(&h->bucket, events, now_ns);
	h->pending += bytes;
}

void hostlimit_charge_meta(struct hostlimit_host *h, uint64_t bytes, int64_t now_ns)
{
	uint64_t events = bytes / HOSTLIMIT_META_EVENT_BYTES;

	hostlimit_bucket_take(&h->bucket, events ? events : 1, now_ns);
	h->meta += bytes;
}

void hostlimit_committed(struct hostlimit_host *h, uint64_t bytes)
{
	h->pending -= bytes < h->pending ? bytes : h->pending;
}

void hostlimit_usage(struct hostlimit *hl, const char *name, uint64_t bytes)
{
	for (struct hostlimit_host *h = hl->hosts; h; h = h->next)
		if (!strcmp(h->name, name)) {
			h->stored = bytes;
			return;
		}
}

bool hostlimit_quota_on(const struct hostlimit *hl)
{
	return hl && hl->quota_on;
}
