/*
 * store_ops.h - the storage backend interface (private to server/store/).
 *
 * store.c is a thin front: it checks arguments and calls through the
 * backend's const ops table, as libevent's bufferevents call their
 * bufferevent_ops. A backend embeds struct store as the first member of
 * its own handle, fills every op, and owns its struct store_type.
 * SQLite (sqlite.c) is the first backend; a distributed engine would
 * be a second file with a second ops table and a store_open() scheme.
 */
#ifndef SERVER_STORE_STORE_OPS_H
#define SERVER_STORE_STORE_OPS_H

#include "server/store/store.h"

#define STORE_ERRMSG_MAX 512

struct store_ops {
	const char *name;
	void (*close)(struct store *s);
	int (*host)(struct store *s, const struct proto_hello *h, const char *peer_subject,
		    uint64_t *host_id);
	int (*host_clock)(struct store *s, uint64_t host_id, int64_t offset_ns);
	int (*type)(struct store *s, const struct decode_type *t, const char *format_text,
		    struct store_type **out);
	int (*begin)(struct store *s);
	int (*commit)(struct store *s);
	int (*rollback)(struct store *s);
	int (*insert)(struct store *s, struct store_type *t, uint64_t host_id,
		      const struct decode_event *ev, int64_t ts_wall);
	int (*cpu_received)(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t pages,
			    uint64_t events, uint64_t bytes);
	int (*cpu_stats)(struct store *s, uint64_t host_id, const struct proto_cpu_stats *st);
	int (*stream_marks)(struct store *s, uint64_t host_id, const char *boot_id,
			    uint64_t session, uint64_t *seqs, uint32_t n);
	int (*journal_mark)(struct store *s, uint64_t file, uint64_t pos);
	int (*journal_mark_get)(struct store *s, uint64_t file, uint64_t *pos);
	int (*journal_forget)(struct store *s, uint64_t from, uint64_t to);
	int (*stream_mark)(struct store *s, uint64_t host_id, const char *boot_id,
			   uint64_t session, uint32_t stream, uint64_t seq);
	int (*cpu_duplicates)(struct store *s, uint64_t host_id, uint32_t cpu, uint64_t n);
	int (*cmdlines)(struct store *s, uint64_t host_id, const struct proto_cmdlines *c);
	int (*program)(struct store *s, uint64_t host_id, const struct store_program *p,
		       uint64_t *program_id);
	int (*symbol)(struct store *s, uint64_t program_id, uint64_t addr, uint64_t size,
		      const char *name);
	int (*symbol_name)(struct store *s, uint64_t host_id, int32_t pid, int64_t ts,
			   uint64_t addr, char *buf, size_t len);
	int (*schema_get)(struct store *s, const char *system, const char *event,
			  struct store_schema **out);
	int (*schema_list)(struct store *s, const char *system,
			   int (*fn)(void *ctx, const struct store_schema *sc), void *ctx);
	int (*select)(struct store *s, const struct store_query *q, store_row_fn fn, void *ctx);
	int (*count)(struct store *s, const struct store_query *q, uint64_t *count);
	int (*dropped)(struct store *s, uint64_t host_id, const char *system, const char *name,
		       const char *reason, uint64_t n);
	int (*retain)(struct store *s, int64_t before_ts, uint64_t max_bytes, uint64_t *removed);
	int (*set_indexes)(struct store *s, const struct store_indexes *ix, unsigned *created,
			   unsigned *dropped);
	/*
	 * Optional: wait for work the backend runs behind the caller's back
	 * (queued inserts); called before every operation but insert, begin
	 * and commit. Return: 0, or the error that work ran into.
	 */
	int (*sync)(struct store *s);
	/* Optional: run the backend's own threads at @policy (SCHED_IDLE...). */
	int (*thread_policy)(struct store *s, int policy);
	int (*drops)(struct store *s,
		     int (*fn)(void *ctx, const char *host, const char *system, const char *name,
			       const char *reason, uint64_t count),
		     void *ctx);
	int (*stats)(struct store *s,
		     int (*fn)(void *ctx, const char *host, uint32_t cpu, const char *key,
			       uint64_t value),
		     void *ctx);
};

struct store {
	const struct store_ops *ops;
	bool readonly;
	char errmsg[STORE_ERRMSG_MAX];
};

/* store_set_errmsg - printf into s->errmsg; returns @err for tail calls. */
int store_set_errmsg(struct store *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* store_sqlite_open - the SQLite backend's constructor (sqlite.c). */
int store_sqlite_open(const char *path, bool readonly, struct store **out);

#endif
