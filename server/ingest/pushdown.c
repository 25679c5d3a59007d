/*
 * pushdown.c - filter push-down decisions and the queue of MSG_FILTER
 * messages for one agent (see pushdown.h).
 */
#include "config.h"

#define LOG_PREFIX "pushdown"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "server/ingest/pushdown.h"

/* What the kernel's filter makes of a field, by its type (filter_assign_type()). */
enum kfield {
	KF_OTHER,		/* a number, or nothing a string predicate takes */
	KF_FIXED,		/* char[N]: matched with N as the length */
	KF_DYN,			/* __data_loc / __rel_loc char[]: its stored length */
	KF_PTR,			/* char *: the string it points to */
};

static enum kfield kernel_field(const struct decode_field *df)
{
	const char *type = df->type ? df->type : "";

	if ((strstr(type, "__data_loc") || strstr(type, "__rel_loc")) && strstr(type, "char"))
		return KF_DYN;
	if (strchr(type, '[') && strstr(type, "char"))
		return df->size ? KF_FIXED : KF_OTHER;	/* char[]: field_len 0 */
	if (!strcmp(type, "char *") || !strcmp(type, "const char *"))
		return KF_PTR;
	return KF_OTHER;
}

/* How the kernel matches a string constant (filter_parse_regex()). */
enum kmatch {
	KM_EXACT,		/* ==, !=, or a '~' pattern without wildcards */
	KM_PREFIX,		/* "x*" */
	KM_SUFFIX,		/* "*x" */
	KM_INFIX,		/* "*x*" */
	KM_GLOB,		/* '?', '[', '\' or an inner '*': glob_match() */
	KM_LITERAL,		/* starts with a digit: compared as written */
};

/* @p[0..n): a '~' pattern without its leading '!'. */
static enum kmatch kernel_match(const char *p, size_t n)
{
	enum kmatch m = KM_EXACT;

	if (n && p[0] >= '0' && p[0] <= '9')
		return strcspn(p, "*?[\\") < n ? KM_LITERAL : KM_EXACT;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '?' || p[i] == '[' || p[i] == '\\')
			return KM_GLOB;
		if (p[i] != '*')
			continue;
		if (i == 0)
			m = KM_SUFFIX;
		else if (i == n - 1)
			return m == KM_SUFFIX ? KM_INFIX : KM_PREFIX;
		else
			return KM_GLOB;
	}
	return m;
}

/* NULL if the kernel keeps exactly what we keep for string predicate @p. */
static const char *string_why(const struct filter_pred *p, const struct decode_field *df)
{
	enum kfield kf = kernel_field(df);
	size_t n = p->len, bang = p->op == FILTER_OP_GLOB && n && p->str[0] == '!';
	enum kmatch m = p->op == FILTER_OP_GLOB ? kernel_match(p->str + bang, n - bang)
						: KM_EXACT;

	if (kf != KF_FIXED && kf != KF_DYN)
		return "a string predicate on a field that is not a string to the kernel's "
		       "filter (it takes char[N], __data_loc and char * fields)";
	if (m == KM_LITERAL)
		return "a '~' pattern starting with a digit is compared literally in the "
		       "kernel, wildcards included";
	if (kf == KF_DYN || m == KM_PREFIX)
		return NULL;
	if (m == KM_EXACT)
		return n - bang <= df->size ? NULL :
		       "an exact match longer than the char array: the kernel compares "
		       "only the array's bytes";
	if (m == KM_SUFFIX)
		return "a '*suffix' glob on a fixed char array: the kernel matches it "
		       "against the array's last bytes, not the string's";
	if (m == KM_INFIX)
		return "a '*infix*' glob on a fixed char array: the kernel also searches "
		       "the bytes after the string's NUL";
	return "a full glob on a fixed char array: the kernel reads up to a NUL, "
	       "past the array when it has none";
}
/* NULL if the kernel keeps exactly what we keep for predicate @p of @t. */
static const char *pred_why(const struct filter_pred *p, const struct decode_type *t)
{
	if (p->field == FILTER_FIELD_COMM)
		return "COMM at ingest is the name the collector has seen the task take "
		       "by the time the page is decoded (pages of other CPUs may tell a "
		       "rename later), in the kernel the running task's exact name";
	if (p->field < 0)
		return NULL;	/* CPU: the CPU whose buffer holds the event, both */
	if ((unsigned)p->field >= t->nfields)
		return "a field the event does not have";
	if (p->kind == FILTER_STRING)
		return string_why(p, &t->fields[p->field]);
	if (kernel_field(&t->fields[p->field]) == KF_PTR)
		return "a char * field is a string to the kernel (what it points to), "
		       "a number here";
	return NULL;
}

/*
 * The first predicate under node @n (and its siblings after it when
 * @siblings) that keeps the filter here. The tree is only as deep as the
 * text's '(' and '!' nesting, which filter_parse() caps.
 */
static const char *tree_why(const struct filter *f, uint32_t n, const struct decode_type *t,
			    bool siblings)
{
	struct filter_node node;
	const char *why = NULL;

	for (; n != FILTER_NODE_NONE && !why; n = siblings ? node.next : FILTER_NODE_NONE) {
		filter_node_get(f, n, &node);
		why = node.type == FILTER_NODE_PRED ? pred_why(&node.pred, t)
						     : tree_why(f, node.child, t, true);
	}
	return why;
}

const char *pushdown_text(const struct filter *f, const struct decode_type *t,
			  const char **why)
{
	uint32_t root;

	if (filter_root(f, &root) < 0) {
		*why = "the filter is not bound to the event";
		return NULL;
	}
	*why = tree_why(f, root, t, false);
	return *why ? NULL : filter_text(f);
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
