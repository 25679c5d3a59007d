/*
 * conn.h - tracecollectd's shared state and the agent connections
 * (conn.c): the public header of server/conn/, the connection layer.
 * Outside the room nothing else of it is included; it brings in the
 * parts the daemon builds and hands to the connections: per-host limits
 * (hostlimit.h), the flight recorders' freezes (freeze.h), which names a
 * certificate may send (hostmap.h) and the hosts connected now
 * (livehosts.h).
 *
 * Threads: the event loop runs connections and TLS (conn.c); one ingest
 * worker (ingest.h) owns the store and does all decoding, filtering and
 * writing. Connections push jobs to it; it answers through the hooks
 * conn_ingest_hooks() fills, which run on the event loop.
 */
#ifndef SERVER_CONN_CONN_H
#define SERVER_CONN_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#include "server/conn/freeze.h"
#include "server/conn/hostlimit.h"
#include "server/conn/hostmap.h"
#include "server/conn/livehosts.h"
#include "server/store/store.h"

struct conn;
struct hostlimit;
struct ingest;
struct ingest_hooks;

/* The defaults of struct collector_limits (tracecollectd --help). */
#define COLLECTOR_HANDSHAKE_MS		10000
#define COLLECTOR_IDLE_MS		300000	/* agents send CLOCK every 10 s */
#define COLLECTOR_MAX_HANDSHAKES	256
#define COLLECTOR_MAX_HANDSHAKES_SOURCE	8
#define COLLECTOR_INPUT_BYTES		(64u << 20)
#define COLLECTOR_MAX_CPUS		8192	/* the kernel's NR_CPUS at most */
#define COLLECTOR_MAX_CONNS		16384
#define COLLECTOR_MAX_CONNS_CERT	1024

/*
 * What peers may hold. A connection buffers up to CONN_INPUT_BASE (conn.c)
 * of input on its own; a frame bigger than that is read only once
 * input_bytes, shared by all connections, has room for it (until then the
 * connection is not read: TCP pushes back on its peer).
 */
struct collector_limits {
	int handshake_ms;		/* TLS handshake and HELLO within this */
	int idle_ms;			/* streaming, no complete frame this long:
					 * close; 0: never */
	unsigned max_handshakes;	/* connections in the handshake, in all */
	unsigned max_handshakes_source;	/* ... from one source address */
	uint64_t input_bytes;		/* big frames being received, in all */
	unsigned max_cpus;		/* CPUs a HELLO may declare */
	unsigned max_conns;		/* connections past HELLO, in all; 0: any */
	unsigned max_conns_cert;	/* ... of one certificate (CN); 0: any */
};

/* One source address whose refusals are counted, not logged again. */
struct collector_refusal {
	char addr[48];
	uint64_t count;
};

#define COLLECTOR_REFUSAL_SOURCES	64

struct conn_linger;
struct freezer;
struct hostmap;
struct livehosts;
struct proto_freeze;

struct collector {
	struct event_base *base;
	SSL_CTX *tls;			/* for new connections; replaced on SIGHUP */
	const struct hostmap *hostmap;	/* certificates that may name other hosts */
	const struct hostmap *freeze_groups;	/* freeze-group lines: who a trigger freezes */
	struct evconnlistener *listener;
	struct store_writer *store;	/* the one writer: used by the ingest worker only */
	struct ingest *ing;		/* the ingest worker and its queue */
	struct conn *conns;		/* live agent connections */
	unsigned nconns;
	uint64_t refused;		/* agents refused at the TLS handshake */
	uint64_t next_conn_id;
	struct collector_limits lim;
	unsigned nhandshakes;		/* connections not yet authenticated */
	uint64_t input_used;		/* of lim.input_bytes, granted to frames */
	unsigned input_waiting;		/* connections waiting for input memory */
	int64_t input_full_ms;		/* when that was last logged */
	uint64_t refused_limit;		/* closed by a cap or a timeout */
	struct collector_refusal refusals[COLLECTOR_REFUSAL_SOURCES];
	unsigned refusal_next;		/* the slot a new source takes */
	struct hostlimit *hl;		/* per-host limits (hostlimit.h); NULL: none */
	struct livehosts *live;		/* hosts connected now (livehosts.h); NULL: not kept */
	struct conn_linger *lingers;	/* refused sockets read a moment more (conn.c) */
	unsigned nlingers;
	struct event *trim;		/* malloc_trim() after connections close */
	struct freezer *fz;		/* flight-recorder freezes (freeze.h); NULL: none */
};

/* collector_limits_default - the defaults above. */
static inline struct collector_limits collector_limits_default(void)
{
	return (struct collector_limits){
		.handshake_ms = COLLECTOR_HANDSHAKE_MS, .idle_ms = COLLECTOR_IDLE_MS,
		.max_handshakes = COLLECTOR_MAX_HANDSHAKES,
		.max_handshakes_source = COLLECTOR_MAX_HANDSHAKES_SOURCE,
		.input_bytes = COLLECTOR_INPUT_BYTES,
		.max_cpus = COLLECTOR_MAX_CPUS, .max_conns = COLLECTOR_MAX_CONNS,
		.max_conns_cert = COLLECTOR_MAX_CONNS_CERT,
	};
}

/*
 * conn_accept - take a new TCP connection @fd from @peer and start the TLS
 * handshake; the connection frees itself when it ends. With the handshake
 * pool full (col->lim) an older handshake is given up for it (the oldest of
 * its source's, or of the source holding the most), logged once per source
 * address and counted. Event loop.
 */
void conn_accept(struct collector *col, int fd, const struct sockaddr *peer, int socklen);

/*
 * conn_ingest_hooks - fill @out with the connections' side of ingest
 * (ingest.h: WELCOME, DONE, ERROR and push-down replies, ACKs after each
 * commit, resuming paused reads), for ingest_start(); @col is their arg.
 */
void conn_ingest_hooks(struct collector *col, struct ingest_hooks *out);

/*
 * conn_recorders - call @fn for each agent connection past HELLO whose
 * agent is a flight recorder (HELLO "recorder"), with its host name and
 * group (NULL: none); a nonzero return from @fn stops and is returned.
 * Event loop.
 */
int conn_recorders(struct collector *col,
		   int (*fn)(void *ctx, struct conn *c, const char *host, const char *group),
		   void *ctx);

/*
 * conn_freeze - tell @c's agent to freeze for snapshot @f: the message is
 * journaled in its stream first (the sink stores the snapshot's record
 * from it), then sent. A failure fails the connection. Event loop.
 * Return: 0; -ENOMEM; -errno from the journal.
 */
int conn_freeze(struct conn *c, const struct proto_freeze *f);

/*
 * conn_thaw - tell @c's agent that snapshot @id is whole (a MSG_FREEZE
 * with "thaw"; not journaled): a recorder holding it switches tracing on
 * again. A failure fails the connection. Event loop. Return: 0; -ENOMEM.
 */
int conn_thaw(struct conn *c, uint64_t id);

/* conn_close_all - end every agent connection (at shutdown). */
void conn_close_all(struct collector *col);

#endif
