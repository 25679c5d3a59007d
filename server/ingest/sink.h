/*
 * sink.h - the ingest worker's side of one agent connection (private to
 * server/ingest/ingest.c and server/ingest/sink.c): its decoder, host, clock offset,
 * per-event store types and filters, pid -> comm map, and counters.
 *
 * Every function here runs on the ingest worker thread; committed[] is
 * written and read (by the event loop, ingest_sink_committed()) under the
 * queue lock only.
 */
#ifndef SERVER_SINK_H
#define SERVER_SINK_H

#include <stdbool.h>
#include <stdint.h>

#include "common/ring.h"
#include "proto/msg.h"
#include "common/cpuslots.h"
#include "server/ingest/clockmap.h"
#include "server/ingest/decode.h"
#include "server/ingest/dedup.h"
#include "server/ingest/filter_table.h"
#include "server/ingest/pidnames.h"
#include "server/ingest/pushdown.h"
#include "server/store/store.h"

struct ingest_job;
struct sink_type;
struct sink_group;

struct sink_cpu {
	uint64_t seen_seq;	/* last page processed */
	uint64_t pages, events, bytes;	/* not yet added to the store's counters */
	uint64_t bad_pages, bad_events;	/* not stored, not yet added either */
};

#define SINK_MAX_LOGGED	24	/* reasons logged once per connection */
#define SINK_LEARNED_MAX	256	/* learned names stored together, at most */

/* Why a page, event or message was not stored (drops' reasons; sink.c). */
extern const char sink_why_crash[];	/* quarantined: the collector died decoding it */
extern const char sink_why_failed[];	/* its connection had failed before */

struct sink {
	struct sink *next;		/* the worker's list of live sinks */
	uint64_t conn_id;
	bool failed;			/* a job failed: skip the rest */
	bool closed;			/* the connection is gone */
	struct ingest_job *pending;	/* pages batched on the event loop */
	char subject[128];		/* agent certificate CN (set before the first job) */
	/* worker only: */
	struct decoder *dec;
	char *host;
	uint64_t host_id;
	int64_t clock_offset;		/* realtime - trace clock, ns: the host's latest sample */
	struct clocksrc clk;		/* what places the events (clockmap.h) */
	bool tsc;			/* kernel pages in TSC ("x86-tsc"): tsc_conv */
	struct ring_clock_conv tsc_conv;
	double tick_ns;			/* ns per trace-clock unit of kernel pages (1: ns) */
	uint32_t ncpus;			/* declared in HELLO */
	struct cpuslots cpus;		/* struct sink_cpu of the CPUs that sent */
	uint64_t pages, events, unknown;
	struct sink_type *types;
	unsigned filters_gen;		/* generation the types were resolved for */
	struct pidnames names;		/* pid -> comm */
	bool names_taught;		/* some event type's events teach names */
	struct proto_cmdline *learned;	/* names learned from events, not yet */
	uint32_t nlearned;		/* stored (sink_learned_flush()) */
	bool counters_dirty;
	struct store_loss *losses;	/* pages whose kernel lost events before them, */
	size_t nlosses, losses_cap;	/* not yet stored (sink_flush()) */
	bool listed;			/* on the worker's list of sinks */
	struct proto_hello layout;	/* page layout facts for group decoders */
	char *header_page;		/* kept for group decoders */
	size_t header_len;
	struct sink_group *groups;	/* traced programs' rings (MSG_GROUP) */
	size_t ngroups;
	char *boot_id;			/* from HELLO, to key programs */
	bool import;			/* a recording (traceq --import): its HELLO's
					 * machine_id is "import:DIGEST" */
	uint64_t session;		/* the agent run's id from HELLO; 0: none */
	int64_t hello_realtime;		/* the agent's CLOCK_REALTIME at HELLO, ns */
	uint64_t kernel_program;	/* programs row for kernel symbols; 0: none yet */
	uint64_t printk_lines;		/* printk_formats lines taken on this connection */
	uint64_t ksyms_lines;		/* kernel symbol lines taken on this connection */
	bool kallsyms_held, printk_held;	/* this boot's were stored before HELLO */
	struct dedup *sess;		/* the agent's session; NULL: none announced */
	struct dedup **sessions;	/* the list sess is on */
	uint64_t dups;			/* resent pages already stored, dropped */
	bool pushdown;			/* the agent takes MSG_FILTER, and we send it */
	struct pushdown_q pushq;	/* MSG_FILTERs for ingest.c to post */
	bool replay;			/* failed by a rollback: store it again from its journal */
	const char *logged[SINK_MAX_LOGGED];	/* reasons logged for this connection */
	unsigned nlogged;
	uint64_t jobs_done;		/* jobs run (worker) */
	uint64_t page_bytes_done;	/* bytes of the pages of those jobs (worker) */
	uint64_t page_bytes_posted;	/* page_bytes_done as last told the loop (worker) */
	uint64_t dropped_jobs;		/* page batches skipped after a failure */
	uint64_t dropped_pages;		/* their pages */
	int fail_err;			/* the failure: error and what failed */
	char fail_what[32];
	uint64_t jmark_file, jmark;	/* journal file and position stored up to */
	bool jmark_dirty;		/* not yet written to the store */
	/* event loop only (ingest.c): the connection's receive journal */
	struct jfile *jf;		/* NULL: no journal, or none yet */
	struct sink_jctx *jctx;		/* context records in jf, copied on rotation */
	size_t njctx;
	size_t jclock;			/* jctx index of the latest CLOCK; SIZE_MAX: none */
	size_t jmeasure;		/* ... of the latest CLOCK_MEASURE */
	bool jctx_lost;			/* jctx incomplete: never rotate jf */
	uint64_t jnames;		/* slots the last rotation wrote (JREC_PIDNAMES):
					 * names is the worker's, read only then */
	uint64_t jobs_queued;		/* jobs handed to the worker */
	/* under the queue lock (read by the event loop): */
	struct cpuslots committed;	/* uint64_t per CPU that sent: last page committed */
	uint64_t jobs_committed;	/* jobs_done at the last commit */
};

/* What the worker hands a sink with each job. */
struct sink_env {
	struct store_writer *store;
	const struct filter_table *filters;
	unsigned filters_gen;
	struct dedup **sessions;	/* live agent sessions' stored-page marks */
	bool pushdown;			/* offer agents their filters (pushdown.h) */
	unsigned max_types;		/* event types per host (0: no cap; store_origin) */
	unsigned max_fields;		/* fields per format (0: no cap) */
	int64_t clock_tol_ns;		/* clock-tolerance (clockmap.h) */
#ifdef TC_TEST_AIDS
	const char *test_abort_format;	/* TEST AID: abort() on this FORMAT's event name */
#endif
};

/* What the agent is to be answered after a message (sink_msg()). */
struct sink_reply {
	enum {
		SINK_REPLY_NONE,
		SINK_REPLY_WELCOME,	/* HELLO stored */
		SINK_REPLY_DONE,	/* BYE */
	} kind;
	uint64_t host_id;		/* WELCOME */
	bool kallsyms;			/* WELCOME: this boot's kernel symbols are stored */
	bool printk_held;		/* WELCOME: so are its printk_formats */
	uint64_t pages, events;		/* DONE: stored this session */
};

/*
 * sink_msg - apply one control message. For HELLO and BYE it fills @reply
 * (WELCOME, DONE; else it is left alone). BYE requires the caller to commit
 * before sending the reply: *@commit is set.
 * Return: 0; a decoder or store error (the caller reports the failure).
 */
int sink_msg(struct sink *s, const struct sink_env *env, struct proto_msg *m,
	     struct sink_reply *reply, bool *commit);

/*
 * sink_page_seen - page @page (@len bytes) of CPU @cpu was stored before
 * (a journal replay up to the store's mark): only what it tells the clock
 * map, the trace times it spans (clockmap_note()), and the task names its
 * events teach (pidnames.h), as sink_page() takes them from every page it
 * walks. Nothing is stored or counted.
 * Return: 0; -ENOMEM.
 */
int sink_page_seen(struct sink *s, uint32_t cpu, const uint8_t *page, size_t len);

/*
 * sink_clock_restore - the clock map as a rotated journal file saved it
 * (a JREC_CLOCKMAP record: clocksrc_save()) replaces @s's.
 * Return: 0; TC_ERR_PROTO_STATE (no HELLO yet); TC_ERR_MSG_MALFORMED.
 */
int sink_clock_restore(struct sink *s, const uint8_t *data, size_t len);

/*
 * sink_names_restore - task names as a rotated journal file saved them (a
 * JREC_PIDNAMES record: pidnames_save()) replace @s's of those pids.
 * Return: 0; TC_ERR_PROTO_STATE (no HELLO yet); TC_ERR_MSG_MALFORMED; -ENOMEM.
 */
int sink_names_restore(struct sink *s, const uint8_t *data, size_t len);

/*
 * sink_page - decode page @seq of CPU @cpu, filter its events and store the
 * rest. *@stored receives the number of rows inserted.
 * Return: 0; TC_ERR_PROTO_STATE (no HELLO yet), TC_ERR_MSG_MALFORMED (CPU
 * out of range), TC_ERR_PAGE_MALFORMED, store errors.
 */
int sink_page(struct sink *s, const struct sink_env *env, uint32_t cpu, uint64_t seq,
	      const uint8_t *page, size_t len, uint64_t *stored);

/*
 * sink_refilter - resolve every event's filter again if the filter table
 * changed since the last time (before the next page otherwise), so that
 * push-down updates go out at once after a SIGHUP.
 * Return: 0; -ENOMEM.
 */
int sink_refilter(struct sink *s, const struct sink_env *env);

/*
 * sink_page_dropped - page @seq of CPU (or stream) @cpu is not stored
 * because of @why (a static sentence): count it in drops (host, "-", "-",
 * @why) and the CPU's bad_pages, mark it processed (it is acknowledged;
 * a resend is a duplicate), and log @why the first time for this
 * connection. Return: 0; a store error.
 */
int sink_page_dropped(struct sink *s, const struct sink_env *env, uint32_t cpu, uint64_t seq,
		      const char *why);

/*
 * sink_msg_dropped - a message (a FORMAT of @system:@name, else NULL) is
 * not applied because of @why: counted in drops, logged once per
 * connection. Return: 0; a store error.
 */
int sink_msg_dropped(struct sink *s, const struct sink_env *env, const char *system,
		     const char *name, const char *why);

/* sink_logged_first - is this the first time @why (static) is logged for @s? */
bool sink_logged_first(struct sink *s, const char *why);

/*
 * sink_clean - @text (peer text: a host, an event name; NULL is fine) fit
 * for a log line or a file: log_escape()d (common/log.h), cut to @size - 1
 * bytes with "...[+N bytes]" at the cut. Return: @buf.
 */
const char *sink_clean(char *buf, size_t size, const char *text);

/* sink_flush - add the counters gathered since the last flush to the store. */
int sink_flush(struct sink *s, struct store_writer *store);

/* sink_mark_committed - seen_seq -> committed[] (caller holds the queue lock). */
void sink_mark_committed(struct sink *s);

/* sink_free - release @s and everything it owns; NULL is allowed. */
void sink_free(struct sink *s);

#endif
