/*
 * queryd_import.c - import requests on a query worker (see queryd_import.h
 * and proto/PROTOCOL.md, "Import").
 *
 * Who may import: root and the collector's own uid over ipc, always; any
 * other identity (uid:, user:, group: over ipc, cert: over the TLS query
 * port) only when an `import = IDENTITY [GLOB,...]` line names it, and
 * then only under host names its globs match; a plain tcp loopback client
 * (no identity) never. The rules are struct qauth_scopes parsed as scope
 * lines are, matched through qauth_scope_of(): an identity it answers
 * with its default (every host) is one no line names.
 *
 * Each control message and the HELLO is decoded by proto_msg_decode_why(),
 * as an agent's; the HELLO's machine_id and boot_id become "import:DIGEST"
 * (the hosts row marks the import and names its file, kernel symbols are
 * this file's "boot"), it has no session and no push-down.
 */
#include "config.h"

#define LOG_PREFIX "import"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/tc_error.h"
#include "proto/frame.h"
#include "proto/msg.h"
#include "proto/qimport.h"
#include "proto/qmsg.h"
#include "server/query/qauth.h"
#include "server/query/queryd.h"
#include "server/query/queryd_import.h"
#include "server/store/store.h"

#define RIGHT_GLOBS	64
#define IMPORT_SYNC_MS	60000	/* BEGIN waits this long for what was received to be stored */

/* the third only to an asker that said sym_modules (an older one wants two) */
static const char *const begin_cols[] = { "id", "state", "sym_modules" };
static const char *const end_cols[] = { "pages", "events" };

/* Whether @who may import under host name @host; @why says why not. */
static bool may_import(const struct qauth_scopes *rights, const struct qauth_who *who,
		       const char *host, char *why, size_t len)
{
	const char *globs[RIGHT_GLOBS];
	char w[QAUTH_NAME_MAX * 4 + 64];
	bool all = false;
	size_t n = 0;

	if (qauth_right_of(rights, "import", "import", who, &all, globs, RIGHT_GLOBS, &n,
			   why, len) <= 0)
		return false;
	if (all)
		return true;
	for (size_t i = 0; i < n; i++)
		if (fnmatch(globs[i], host, 0) == 0)
			return true;
	qauth_who_str(who, w, sizeof(w));
	snprintf(why, len, "%.200s may not import under host name '%.200s': its `import` "
		 "lines allow other names", w, host);
	return false;
}

/* The subject an import's hosts row and log lines carry: who began it. */
static void subject_of(const struct qauth_who *who, char *buf, size_t len)
{
	char w[QAUTH_NAME_MAX * 4 + 64];

	snprintf(buf, len, "import by %.100s", qauth_who_str(who, w, sizeof(w)));
}

/* Decode @r's control message into *@m (@what: which); @why on failure. */
static int decode_msg(const struct qimport_request *r, struct proto_msg *m, char *why,
		      size_t len)
{
	char dwhy[256];
	int ret = proto_msg_decode_why(r->msg, r->msg_len, m, dwhy, sizeof(dwhy));

	if (ret < 0)
		snprintf(why, len, "the import's message: %s", dwhy[0] ? dwhy : tc_strerror(ret));
	return ret;
}

/* Check and adjust an import's HELLO. */
static int hello_check(struct proto_hello *h, const char *mid, char *why, size_t len)
{
	char *a = strdup(mid), *b = strdup(mid);

	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	free(h->machine_id);
	free(h->boot_id);
	h->machine_id = a;
	h->boot_id = b;
	h->session = 0;
	h->pushdown = false;
	if (h->version != PROTO_VERSION) {
		snprintf(why, len, "protocol version %u, %u expected", h->version, PROTO_VERSION);
		return TC_ERR_PROTO_VERSION;
	}
	if (!h->host[0] || h->ncpus == 0 || h->ncpus > 65536 || h->page_size < 64 ||
	    h->page_size > QIMPORT_MAX_PAGES || h->page_size > FRAME_MAX_PAYLOAD) {
		snprintf(why, len, "host '', %u CPUs or a page of %u bytes: out of range",
			 h->ncpus, h->page_size);
		return TC_ERR_MSG_MALFORMED;
	}
	if (!strcmp(h->trace_clock, "x86-tsc")) {
		snprintf(why, len, "recordings in the x86-tsc clock are not imported (no way "
			 "to nanoseconds in the file)");
		return TC_ERR_NOT_SUPPORTED;
	}
	return 0;
}

static int begin(const struct queryd_import_env *env, const struct qimport_request *r,
		 const struct qauth_who *who, struct proto_buf *out, char *why, size_t len)
{
	struct proto_msg m = { 0 };
	struct proto_buf raw;
	struct qmsg_writer *w;
	char mid[16 + QIMPORT_DIGEST_LEN], subject[128], esc[LOG_ESC_LEN];
	bool live = false, stored = false;
	uint64_t id = 0;
	int ret;

	proto_buf_init(&raw);
	if ((ret = decode_msg(r, &m, why, len)) < 0)
		goto out;
	if (m.type != MSG_HELLO) {
		snprintf(why, len, "an import begins with a HELLO, not %s", proto_msg_name(m.type));
		ret = TC_ERR_PROTO_STATE;
		goto out;
	}
	snprintf(mid, sizeof(mid), "import:%s", r->digest);
	if ((ret = hello_check(&m.hello, mid, why, len)) < 0)
		goto out;
	if (!may_import(env->rights, who, m.hello.host, why, len)) {
		ret = -EACCES;
		goto out;
	}
	/* hosts whose agents' HELLOs were received are in the store first */
	if (env->received && env->wait_stored &&
	    env->wait_stored(env->arg, env->received(env->arg), IMPORT_SYNC_MS) < 0) {
		snprintf(why, len, "the collector has not stored what it received within %d s: "
			 "try again later", IMPORT_SYNC_MS / 1000);
		ret = TC_ERR_TIMEOUT;
		goto out;
	}
	ret = store_import_check(env->store, m.hello.host, mid, &live, &stored);
	if (ret < 0) {
		snprintf(why, len, "%s", store_errmsg(env->store));
		goto out;
	}
	log_escape(m.hello.host, esc, sizeof(esc));
	if (live && !r->force) {
		snprintf(why, len, "'%.260s' is the name of a host an agent sends: import under "
			 "another --name, or with --force to store it beside the agent's", esc);
		ret = -EEXIST;
		goto out;
	}
	subject_of(who, subject, sizeof(subject));
	if (!stored) {
		if ((ret = proto_msg_encode(&m, &raw)) < 0 ||
		    (ret = env->im->begin(env->im->ctx, subject, &m, raw.data + FRAME_HDR_SIZE,
					  raw.len - FRAME_HDR_SIZE, &id, why, len)) < 0)
			goto out;
	}
	if ((ret = qmsg_reply_begin(&w, NULL, r->sym_modules ? 3 : 2, begin_cols)) < 0)
		goto out;
	qmsg_put_uint(w, id);
	qmsg_put_str(w, stored ? "stored" : "new", stored ? 6 : 3);
	if (r->sym_modules)
		qmsg_put_uint(w, 1);	/* symbols lines may carry a module */
	ret = qmsg_reply_end(w, false, 0, 0, 1, out);
	log_info("%s: %s as host '%s' (%s)%s", subject, stored ? "already stored" : "begins", esc,
		 r->file ? log_escape(r->file, mid, sizeof(mid)) : "-",
		 live ? ", beside an agent's host of that name (--force)" : "");
out:
	proto_buf_free(&raw);
	proto_msg_free(&m);
	return ret;
}

static int message(const struct queryd_import_env *env, const struct qimport_request *r,
		   const char *subject, char *why, size_t len)
{
	struct proto_msg m = { 0 };
	int ret = decode_msg(r, &m, why, len);

	if (ret == 0)
		ret = env->im->msg(env->im->ctx, subject, r->id, &m, r->msg, r->msg_len, why, len);
	proto_msg_free(&m);
	return ret;
}

static int end(const struct queryd_import_env *env, const struct qimport_request *r,
	       const char *subject, struct proto_buf *out, char *why, size_t len)
{
	struct qmsg_writer *w;
	uint64_t pages = 0, events = 0;
	int ret = env->im->end(env->im->ctx, subject, r->id, r->abort, &pages, &events, why, len);

	if (ret == 0)
		ret = qmsg_reply_begin(&w, NULL, 2, end_cols);
	if (ret < 0)
		return ret;
	qmsg_put_uint(w, pages);
	qmsg_put_uint(w, events);
	log_info("%s: import %llu %s: %llu pages, %llu events stored", subject,
		 (unsigned long long)(r->id & ~env->im->id_bits), r->abort ? "aborted" : "done",
		 (unsigned long long)pages, (unsigned long long)events);
	return qmsg_reply_end(w, false, 0, 0, 1, out);
}

/* An empty table: the request went through. */
static int ok(struct proto_buf *out)
{
	struct qmsg_writer *w;
	int ret = qmsg_reply_begin(&w, NULL, 0, NULL);

	return ret < 0 ? ret : qmsg_reply_end(w, false, 0, 0, 0, out);
}

void queryd_import(const struct queryd_import_env *env, const struct qimport_request *r,
		   const struct qauth_who *who, struct proto_buf *out)
{
	char why[512] = "", subject[128];
	int ret;

	subject_of(who, subject, sizeof(subject));
	if (!env->im) {
		snprintf(why, sizeof(why), "this collector takes no imports now");
		ret = -ENOTSUP;
	} else if (r->op == QOP_IMPORT_BEGIN) {
		ret = begin(env, r, who, out, why, sizeof(why));
	} else if (r->op == QOP_IMPORT_MSG) {
		ret = message(env, r, subject, why, sizeof(why));
		if (ret == 0)
			ret = ok(out);
	} else if (r->op == QOP_IMPORT_PAGES) {
		ret = env->im->pages(env->im->ctx, subject, r->id, r->cpu, r->seq, r->pages,
				     r->pages_len, why, sizeof(why));
		if (ret == 0)
			ret = ok(out);
	} else {
		ret = end(env, r, subject, out, why, sizeof(why));
	}
	if (ret < 0) {
		if (!why[0])
			snprintf(why, sizeof(why), "%s", tc_strerror(ret));
		log_info("%s: refused: %s", subject, why);
		out->len = 0;
		qmsg_reply_error(ret, why, -1, -1, out);
	}
}
