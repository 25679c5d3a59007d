/*
 * pushdown.c - filter push-down decisions and the queue of MSG_FILTER
 * messages for one agent (see pushdown.h).
 */
#include "config.h"

#define LOG_PREFIX "pushdown"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "server/pushdown.h"

const char *pushdown_text(const struct filter *f, const char **why)
{
	if (filter_uses_field(f, FILTER_FIELD_COMM)) {
		*why = "COMM here is the comm of the event's pid, in the kernel the "
		       "current task's";
		return NULL;
	}
	return filter_text(f);
}

int pushdown_queue(struct pushdown_q *q, const char *system, const char *name,
		   const char *text)
{
	struct proto_msg m = { .type = MSG_FILTER }, *msgs;

	m.filter.system = strdup(system);
	m.filter.name = strdup(name);
	m.filter.text = strdup(text ? text : "");
	msgs = realloc(q->msgs, (q->n + 1) * sizeof(*msgs));
	if (msgs)
		q->msgs = msgs;
	if (!msgs || !m.filter.system || !m.filter.name || !m.filter.text) {
		proto_msg_free(&m);
		return -ENOMEM;
	}
	q->msgs[q->n++] = m;
	return 0;
}

void pushdown_take(struct pushdown_q *q, struct proto_msg **msgs, size_t *n)
{
	*msgs = q->msgs;
	*n = q->n;
	q->msgs = NULL;
	q->n = 0;
}

void pushdown_q_free(struct pushdown_q *q)
{
	for (size_t i = 0; i < q->n; i++)
		proto_msg_free(&q->msgs[i]);
	free(q->msgs);
	q->msgs = NULL;
	q->n = 0;
}

void pushdown_log_status(const char *host, const struct proto_filter_status *st)
{
	if (!st->text[0] && st->ok)
		log_info("host %s: %s:%s: filter cleared in the agent's instance", host,
			 st->system, st->name);
	else if (st->ok)
		log_info("host %s: %s:%s: the kernel took filter '%s' (pushed down)", host,
			 st->system, st->name, st->text);
	else
		log_warn("host %s: %s:%s: the kernel refused filter '%s': %s; the collector "
			 "still enforces it", host, st->system, st->name, st->text,
			 st->error[0] ? st->error : "(no reason given)");
}
