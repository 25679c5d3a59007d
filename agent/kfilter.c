/*
 * kfilter.c - filter push-down on the agent (see kfilter.h).
 *
 * The filter goes in with tracefs_event_file_write(), the libtracefs call
 * that tracefs_event_filter_apply() and tracefs_event_filter_clear() wrap
 * (those want a libtraceevent tep_event, which the agent does not load:
 * it never parses formats). A refused write leaves the kernel's reason in
 * the filter file, which tracefs_event_file_read() gives back.
 *
 * A collector may send filters faster than tracefs takes them, and need
 * not read the answers. So a filter is not written when it arrives: it
 * waits in a table with one entry per event (a later filter for the same
 * event replaces the waiting one: only the latest is written, and only it
 * is answered), and kfilter_flush() writes the waiting ones at most
 * KFILTER_WRITES_PER_S a second (a token bucket holding KFILTER_WRITE_BURST,
 * so a whole configuration goes in at once). The table and the answers not
 * yet sent are bounded (kfilter_full(): the session stops reading the
 * collector meanwhile, and TCP pushes back on it), and the log lines about
 * filters are at most KFILTER_LOG_BURST per KFILTER_LOG_WINDOW_MS, then one
 * line with how many were left out.
 */
#include "config.h"

#define LOG_PREFIX "pushdown"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <tracefs.h>

#include "agent/kfilter.h"
#include "common/log.h"
#include "common/tc_error.h"
#include "common/util.h"

#define KFILTER_ERR_MAX	1024	/* bytes of the kernel's message we pass on */

struct kfilter_event {
	char *system, *name;
	char *text;		/* waiting: the filter to write */
};

struct kfilter {
	struct tracing *t;
	struct kfilter_event *set;	/* events whose filter we set */
	size_t nset;
	struct kfilter_event *waiting;	/* filters not written yet, one per event */
	size_t nwaiting;
	struct proto_msg *answers;	/* MSG_FILTER_STATUS not sent yet */
	size_t nanswers;
	double tokens;			/* tracefs writes allowed now */
	int64_t tokens_ms;		/* when tokens was brought up to date */
	int64_t log_window_ms;		/* start of the log window */
	unsigned log_lines;		/* lines logged in it */
	uint64_t log_left_out;		/* lines not logged in it */
	struct kfilter_stats st;
};

int kfilter_new(struct tracing *t, struct kfilter **out)
{
	struct kfilter *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	k->t = t;
	k->tokens = KFILTER_WRITE_BURST;
	k->tokens_ms = util_now_ms();
	*out = k;
	return 0;
}

static ssize_t ev_find(const struct kfilter_event *evs, size_t n, const char *system,
		       const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(evs[i].system, system) && !strcmp(evs[i].name, name))
			return (ssize_t)i;
	return -1;
}

static ssize_t set_find(const struct kfilter *k, const char *system, const char *name)
{
	return ev_find(k->set, k->nset, system, name);
}

/*
 * Whether a line about filters may be logged now: KFILTER_LOG_BURST per
 * window; the first line of the next window says how many were left out.
 */
static bool log_ok(struct kfilter *k)
{
	int64_t now = util_now_ms();

	if (now - k->log_window_ms >= KFILTER_LOG_WINDOW_MS) {
		if (k->log_left_out)
			log_warn("%llu more lines about pushed-down filters were not logged "
				 "(at most %u per %d s)", (unsigned long long)k->log_left_out,
				 KFILTER_LOG_BURST, KFILTER_LOG_WINDOW_MS / 1000);
		k->log_window_ms = now;
		k->log_lines = 0;
		k->log_left_out = 0;
	}
	if (k->log_lines < KFILTER_LOG_BURST) {
		k->log_lines++;
		return true;
	}
	k->log_left_out++;
	k->st.log_left_out++;
	return false;
}

/* Remember that @system:@name has a filter of ours (to clear it later). */
static int set_add(struct kfilter *k, const char *system, const char *name)
{
	struct kfilter_event e, *n;

	if (set_find(k, system, name) >= 0)
		return 0;
	e.system = strdup(system);
	e.name = strdup(name);
	n = realloc(k->set, (k->nset + 1) * sizeof(*n));
	if (n)
		k->set = n;
	if (!n || !e.system || !e.name) {
		free(e.system);
		free(e.name);
		return -ENOMEM;
	}
	k->set[k->nset++] = e;
	return 0;
}

static void set_remove(struct kfilter *k, const char *system, const char *name)
{
	ssize_t i = set_find(k, system, name);

	if (i < 0)
		return;
	free(k->set[i].system);
	free(k->set[i].name);
	k->set[i] = k->set[--k->nset];
}

/* Write @text ("0" clears) to the event's filter file; Return: 0 or -errno. */
static int write_filter(struct kfilter *k, const char *system, const char *name,
			const char *text)
{
	errno = 0;
	if (tracefs_event_file_write(tracing_instance(k->t), system, name, "filter", text) >= 0)
		return 0;
	return errno > 0 ? -errno : TC_ERR_TRACEFS;
}

/* The kernel's reason for refusing a filter: the filter file's text. */
static char *kernel_reason(struct kfilter *k, const char *system, const char *name, int err)
{
	char *text = tracefs_event_file_read(tracing_instance(k->t), system, name, "filter",
					     NULL);
	size_t n = text ? strlen(text) : 0;

	if (!text || n == 0 || !strcmp(text, "none\n")) {
		free(text);
		return strdup(tc_strerror(err));
	}
	while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
		text[--n] = '\0';
	if (n > KFILTER_ERR_MAX)
		text[KFILTER_ERR_MAX] = '\0';
	return text;
}

/* Queue the answer (takes over @error; NULL: ok). */
static void answer(struct kfilter *k, const struct proto_filter *f, char *error)
{
	struct proto_msg m = { .type = MSG_FILTER_STATUS }, *n;

	if (k->nanswers >= 2 * KFILTER_MAX_ANSWERS) {	/* read past kfilter_full(): at BYE */
		k->st.unanswered++;
		free(error);
		return;
	}
	m.filter_status.system = strdup(f->system);
	m.filter_status.name = strdup(f->name);
	m.filter_status.text = strdup(f->text);
	m.filter_status.ok = !error;
	m.filter_status.error = error ? error : strdup("");
	n = realloc(k->answers, (k->nanswers + 1) * sizeof(*n));
	if (n)
		k->answers = n;
	if (!n || !m.filter_status.system || !m.filter_status.name ||
	    !m.filter_status.text || !m.filter_status.error) {
		log_err("out of memory answering the filter of %s:%s", f->system, f->name);
		proto_msg_free(&m);
		return;
	}
	k->answers[k->nanswers++] = m;
}

/* Write the waiting filter @f now, log and queue the answer. */
static void apply_now(struct kfilter *k, const struct proto_filter *f)
{
	char text[LOG_ESC_LEN], why[LOG_ESC_LEN];
	bool clear = !f->text[0];
	int ret;

	k->st.written++;
	ret = write_filter(k, f->system, f->name, clear ? "0" : f->text);
	if (!clear && set_add(k, f->system, f->name) < 0)
		log_err("out of memory: the filter of %s:%s stays after this connection",
			f->system, f->name);
	if (clear && ret == 0)
		set_remove(k, f->system, f->name);
	/* system and name passed the decoder's [A-Za-z0-9_.-]; the text may hold anything */
	log_escape(f->text, text, sizeof(text));
	if (ret == 0) {
		if (log_ok(k))
			log_info("%s:%s: filter %s%s%s in the instance (pushed down by the "
				 "collector)", f->system, f->name, clear ? "cleared" : "'",
				 clear ? "" : text, clear ? "" : "' set");
		answer(k, f, NULL);
		return;
	}
	answer(k, f, kernel_reason(k, f->system, f->name, ret));
	if (log_ok(k))
		log_warn("%s:%s: the kernel refused filter '%s': %s", f->system, f->name, text,
			 log_escape(k->answers && k->nanswers ?
				    k->answers[k->nanswers - 1].filter_status.error :
				    tc_strerror(ret), why, sizeof(why)));
}

static void ev_free(struct kfilter_event *e)
{
	free(e->system);
	free(e->name);
	free(e->text);
}

void kfilter_apply(struct kfilter *k, const struct proto_filter *f)
{
	struct kfilter_event e = { 0 }, *n;
	ssize_t i;

	k->st.received++;
	if (!tracing_has_event(k->t, f->system, f->name)) {
		if (log_ok(k))
			log_warn("collector sent a filter for %s:%s, which this agent does "
				 "not trace", f->system, f->name);
		answer(k, f, strdup("not an event this agent traces"));
		return;
	}
	i = ev_find(k->waiting, k->nwaiting, f->system, f->name);
	if (i >= 0) {		/* replaces the one waiting: only the latest counts */
		char *text = strdup(f->text);

		if (!text) {
			log_err("out of memory taking the filter of %s:%s", f->system, f->name);
			return;
		}
		free(k->waiting[i].text);
		k->waiting[i].text = text;
		k->st.replaced++;
		return;
	}
	e.system = strdup(f->system);
	e.name = strdup(f->name);
	e.text = strdup(f->text);
	n = realloc(k->waiting, (k->nwaiting + 1) * sizeof(*n));
	if (n)
		k->waiting = n;
	if (!n || !e.system || !e.name || !e.text) {
		log_err("out of memory taking the filter of %s:%s", f->system, f->name);
		ev_free(&e);
		return;
	}
	k->waiting[k->nwaiting++] = e;
}

void kfilter_flush(struct kfilter *k)
{
	int64_t now = util_now_ms();
	size_t i;

	k->tokens += (double)(now - k->tokens_ms) * KFILTER_WRITES_PER_S / 1000.0;
	if (k->tokens > KFILTER_WRITE_BURST)
		k->tokens = KFILTER_WRITE_BURST;
	k->tokens_ms = now;
	for (i = 0; i < k->nwaiting && k->tokens >= 1; i++) {
		struct kfilter_event *e = &k->waiting[i];
		struct proto_filter f = { e->system, e->name, e->text };

		apply_now(k, &f);
		ev_free(e);
		k->tokens -= 1;
	}
	if (i) {	/* none waiting: no array yet */
		memmove(k->waiting, k->waiting + i, (k->nwaiting - i) * sizeof(*k->waiting));
		k->nwaiting -= i;
	}
}

bool kfilter_full(const struct kfilter *k)
{
	return k->nwaiting >= KFILTER_MAX_WAITING || k->nanswers >= KFILTER_MAX_ANSWERS;
}

void kfilter_get_stats(const struct kfilter *k, struct kfilter_stats *out)
{
	*out = k->st;
}

int kfilter_send(struct kfilter *k, int (*send)(void *arg, const struct proto_msg *m),
		 void *arg)
{
	size_t i;
	int ret = 0;

	if (!k->nanswers)
		return 0;	/* the usual case; also keeps memmove() off NULL */
	for (i = 0; i < k->nanswers && ret == 0; i++)
		ret = send(arg, &k->answers[i]);
	if (ret != 0)
		i--;		/* the one that failed (or would wait) stays */
	for (size_t j = 0; j < i; j++)
		proto_msg_free(&k->answers[j]);
	memmove(k->answers, k->answers + i, (k->nanswers - i) * sizeof(*k->answers));
	k->nanswers -= i;
	return ret < 0 ? ret : 0;
}

size_t kfilter_clear_all(struct kfilter *k)
{
	size_t failed = 0;
	int ret;

	for (size_t i = 0; i < k->nset; i++) {
		ret = write_filter(k, k->set[i].system, k->set[i].name, "0");
		if (ret < 0) {
			failed++;
			log_warn("cannot clear the filter of %s:%s: %s", k->set[i].system,
				 k->set[i].name, tc_strerror(ret));
		}
		free(k->set[i].system);
		free(k->set[i].name);
	}
	k->nset = 0;
	for (size_t i = 0; i < k->nwaiting; i++)
		ev_free(&k->waiting[i]);
	k->nwaiting = 0;
	for (size_t i = 0; i < k->nanswers; i++)
		proto_msg_free(&k->answers[i]);
	k->nanswers = 0;
	return failed;
}

size_t kfilter_set_count(const struct kfilter *k)
{
	return k->nset;
}

void kfilter_free(struct kfilter *k)
{
	if (!k)
		return;
	kfilter_clear_all(k);
	free(k->set);
	free(k->waiting);
	free(k->answers);
	free(k);
}
