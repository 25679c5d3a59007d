/*
 * msg.h - control messages: msgpack maps carried in FRAME_MSG frames.
 *
 * Each message is a msgpack map whose key "t" names its type; the other keys
 * are listed per type in proto/PROTOCOL.md. Unknown keys are ignored (so
 * either side may add fields without a version bump); a missing required key
 * or a value of the wrong msgpack type is rejected.
 *
 * Flow: agent -> HELLO; collector -> WELCOME (or ERROR and close); agent ->
 * HEADER_PAGE, FORMAT per event, then pages interleaved with CMDLINES,
 * CLOCK and CPU_STATS; at the end agent -> BYE; collector commits everything
 * and answers DONE with what it stored, then both close. An agent that
 * sends a session id in HELLO gets ACKs (stream, seq) whenever pages are
 * committed, and may resend un-acknowledged pages after a reconnect. An
 * agent that sends "pushdown" in HELLO gets a FILTER per event whose
 * server-side filter it may set on its instance, and answers each with
 * FILTER_STATUS (PROTOCOL.md, "Filter push-down"). An agent that sends
 * "clock_probe" in HELLO answers each CLOCK_PROBE with a CLOCK_ECHO
 * (PROTOCOL.md, "Clock measurement").
 */
#ifndef PROTO_MSG_H
#define PROTO_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_VERSION		1
#define PROTO_MAX_STRING	(256u * 1024)	/* longest string field */
#define PROTO_MAX_CMDLINES	65536		/* entries in one CMDLINES */
#define PROTO_MAX_TGIDS		65536		/* tgids entries in one CMDLINES */
#define PROTO_MAX_EVENT_NAME	255		/* system or event name in FORMAT,
						 * FILTER, FILTER_STATUS */
#define PROTO_MAX_HOST		255		/* HELLO host */
#define PROTO_MAX_NAME		255		/* HELLO machine_id, boot_id,
						 * kernel; GROUP comm */
#define PROTO_MAX_CLOCK		63		/* HELLO trace_clock, GROUP clock */
#define PROTO_MAX_AGENT		127		/* HELLO agent */
#define PROTO_MAX_ERROR_TEXT	4096		/* ERROR text */
#define PROTO_MAX_FILTER_ERROR	16384		/* FILTER_STATUS error */
#define PROTO_MAX_FILTER	4096		/* filter text in FILTER (the
						 * parser's FILTER_MAX_LEN) */
#define PROTO_MAX_REASON	1024		/* FREEZE reason and who */
#define PROTO_MAX_GROUP		255		/* HELLO group (--group) */

enum proto_msg_type {
	MSG_HELLO = 1,		/* agent: who I am */
	MSG_WELCOME,		/* collector: accepted */
	MSG_HEADER_PAGE,	/* agent: events/header_page text */
	MSG_FORMAT,		/* agent: one event's format file */
	MSG_CMDLINES,		/* agent: pid -> comm pairs */
	MSG_CLOCK,		/* agent: a trace clock / realtime sample */
	MSG_CPU_STATS,		/* agent: per-CPU counters */
	MSG_BYE,		/* agent: no more pages follow */
	MSG_DONE,		/* collector: all received data is committed */
	MSG_ERROR,		/* either: fatal error, connection closes */
	MSG_ACK,		/* collector: pages up to seq are committed */
	MSG_GROUP = 20,		/* agent: a program's user-space ring buffer */
	MSG_SYMBOLS = 21,	/* agent: function symbols of a group or the kernel */
	MSG_FILTER = 22,	/* collector: set this filter in your instance */
	MSG_FILTER_STATUS = 23,	/* agent: what the kernel said to a MSG_FILTER */
	MSG_PRINTK = 24,	/* agent: the kernel's printk_formats (once per boot) */
	MSG_CLOCK_PROBE = 25,	/* collector: read your trace clock now */
	MSG_CLOCK_ECHO = 26,	/* agent: the trace clock at a probe's receipt and answer */
	MSG_CLOCK_MEASURE = 27,	/* collector-internal, journal only: a measurement */
	MSG_FREEZE = 28,	/* collector: freeze your flight recorder, ship it
				 * (also journaled by the collector: the record) */
	MSG_SNAP_BEGIN = 29,	/* agent: the frozen buffer's pages follow */
	MSG_SNAP_END = 30,	/* agent: they were all read: what they hold */
	MSG_FROZE = 31,		/* agent: my --freeze-on trigger froze me */
};

/*
 * The flight recorder (PROTOCOL.md, "Flight recorder"), only with an agent
 * whose HELLO said "recorder": it ships no pages while armed. The
 * collector sends MSG_FREEZE @id; the agent switches its instance's
 * tracing off, sends MSG_SNAP_BEGIN @id, its whole buffer as ordinary
 * pages, MSG_SNAP_END @id with what they held, and keeps tracing off until
 * the collector's MSG_FREEZE @id with "thaw" (sent once every recorder of
 * the snapshot ended it, or after a timeout), so that no host's next
 * events fall inside another host's window of this snapshot. The collector journals the MSG_FREEZE it sends (in the agent's
 * stream, before the agent's answer), so that the snapshot's record is
 * replayed like the pages. An agent whose own trigger froze its instance
 * sends MSG_FROZE; the collector freezes the agents of its group, and
 * that agent too (its buffer is already frozen).
 */
struct proto_freeze {
	uint64_t id;		/* the snapshot, >= 1 */
	int64_t asked_ns;	/* the collector's realtime when it was asked */
	char *reason;		/* why: the asker's words, or "trigger EVENT on HOST" */
	char *who;		/* who asked (an identity, or the triggering host) */
	bool thaw;		/* optional: not a freeze: snapshot @id is whole,
				 * switch tracing on again */
};

struct proto_snap_begin {
	uint64_t id;
	uint64_t frozen_ns;	/* the agent's CLOCK_MONOTONIC when tracing went off
				 * (for the trace clock: snap_end's off_ns) */
};

struct proto_snap_end {
	uint64_t id;
	uint64_t pages;		/* pages of the snapshot shipped */
	uint64_t events;	/* events in them */
	uint64_t lost;		/* events the kernel overwrote since the last
				 * snapshot (its overrun, summed over CPUs) */
	uint64_t first_ns;	/* trace clock of the first and last event */
	uint64_t last_ns;	/* (both 0: the buffer held none) */
	uint64_t off_ns;	/* optional: the trace clock (the events' units)
				 * read once tracing was off for sure, so at or
				 * after every event shipped; 0: not said */
};

struct proto_froze {
	char *event;		/* the trigger's event, "SYSTEM:NAME" */
	uint64_t trace_ns;	/* trace clock of the event that froze it */
};

/*
 * The clock exchange (PROTOCOL.md, "Clock measurement"), only with an agent
 * whose HELLO said "clock_probe": the collector sends MSG_CLOCK_PROBE @id
 * (noting its own realtime t1), the agent answers MSG_CLOCK_ECHO with the
 * same @id and its trace clock when it read the probe (t2, @recv_ns) and
 * when it wrote the answer (t3, @send_ns); the collector's realtime at
 * receipt is t4. MSG_CLOCK_MEASURE is the best round trip of a burst as
 * the collector journals it for its own decoder; no peer may send it.
 */
struct proto_clock_probe {
	uint64_t id;
};

struct proto_clock_echo {
	uint64_t id;
	uint64_t recv_ns;	/* t2: trace clock, ns */
	uint64_t send_ns;	/* t3 >= t2 */
};

struct proto_clock_measure {
	uint64_t trace_ns;	/* (t2 + t3) / 2 */
	int64_t realtime_ns;	/* the collector's realtime then: (t1 + t4) / 2 */
	uint64_t uncertainty_ns;	/* half the round trip less the agent's hold */
	uint64_t probes;	/* answers the best was picked from */
};

struct proto_clock {
	uint64_t trace_ns;	/* trace clock, in ns */
	int64_t realtime_ns;	/* CLOCK_REALTIME at the same instant */
};

struct proto_hello {
	uint32_t version;	/* PROTO_VERSION */
	char *host;		/* host name */
	char *machine_id;	/* /etc/machine-id */
	char *boot_id;		/* /proc/sys/kernel/random/boot_id */
	char *kernel;		/* uname -r */
	char *trace_clock;	/* e.g. "mono" */
	uint32_t ncpus;
	uint32_t page_size;	/* ring-buffer sub-buffer size in bytes */
	uint32_t long_size;	/* sizeof(long) on the traced host: 4 or 8 */
	bool big_endian;
	struct proto_clock clock;
	uint64_t session;	/* optional: this agent run's random id; 0 =
				 * none (no dedup, no ACKs) */
	bool pushdown;		/* optional: the agent takes MSG_FILTER */
	/*
	 * With trace_clock "x86-tsc" (required then): the events' TSC in ns,
	 * ns = tsc_mono0 + ((tsc - tsc0) * tsc_mult >> tsc_shift), the domain
	 * of clock.trace_ns.
	 */
	uint64_t tsc0, tsc_mono0;
	uint32_t tsc_mult, tsc_shift;
	char *agent;		/* optional: the agent's program and version,
				 * e.g. "traceagent 0.1.0" ("": not told) */
	bool clock_probe;	/* optional: the agent answers MSG_CLOCK_PROBE */
	bool recorder;		/* optional: a flight recorder, takes MSG_FREEZE */
	char *group;		/* optional: its freeze group (--group; "": none) */
};

struct proto_welcome {
	uint32_t version;	/* protocol version the collector speaks */
	uint64_t host_id;	/* the collector's id for this host */
	bool kallsyms;		/* optional: it holds this boot's kernel symbols */
	bool printk_formats;	/* optional: it takes MSG_PRINTK and holds none
				 * of this boot: send them (absent: an older
				 * collector, which must not get one) */
	uint32_t clock_probes;	/* optional: probes that follow WELCOME at
				 * once, to answer before any page (only to
				 * an agent whose HELLO said clock_probe) */
	bool sym_modules;	/* optional: symbol lines may carry a module
				 * (proto/symbols.h; absent: an older
				 * collector, which would refuse them) */
};

struct proto_text {		/* MSG_HEADER_PAGE */
	char *text;
	size_t len;
	char *event;		/* optional: events/header_event, verbatim; NULL
				 * or "": not sent (older agents) */
	size_t event_len;
};

struct proto_format {		/* MSG_FORMAT */
	char *system;
	char *name;
	char *text;		/* the format file, verbatim */
	size_t len;
	uint32_t group;		/* 0: the kernel's; else a MSG_GROUP's */
};

/*
 * MSG_GROUP announces one traced program's ring buffer (our user-space
 * ring, kernel page format): its pages arrive on streams [first_stream,
 * first_stream + nstreams), stream - first_stream being the buffer (the
 * CPU; the last one is the durable buffer), and its events are decoded
 * with the formats sent with this group number. Timestamps are in @clock:
 * "mono" (ns, like the kernel instance's) or "tsc", converted as
 * mono0 + ((tsc - tsc0) * mult >> shift).
 */
struct proto_group {
	uint32_t group;		/* >= 1, unique per connection */
	int32_t pid;		/* the program's pid */
	char *comm;		/* its name */
	char *clock;		/* "tsc" or "mono" */
	uint64_t tsc0, mono0;
	uint32_t mult, shift;
	uint32_t first_stream;	/* >= 32768: below are kernel CPUs */
	uint32_t nstreams;
	uint32_t page_size;	/* this ring's page size in bytes */
};

#define PROTO_USER_STREAM_BASE	32768u

/*
 * MSG_SYMBOLS carries part of the function symbol table of group @group's
 * program (every executable mapping, at its run-time addresses), or with
 * group 0 of the kernel (/proc/kallsyms, once per connection). @text is
 * lines "ADDR SIZE NAME\n", ADDR and SIZE in hex without 0x (see
 * proto/symbols.h); a table longer than one message comes in several,
 * each of whole lines. They add up: nothing is replaced.
 */
struct proto_symbols {
	uint32_t group;		/* 0: the kernel; else a MSG_GROUP's */
	char *text;
	size_t len;
};

/*
 * MSG_FILTER (collector -> agent, only to an agent whose HELLO said
 * "pushdown"): the filter the collector applies to event @system:@name of
 * this host, for the agent to set on its own instance so that what it
 * would drop never leaves the host. @text is in the kernel's event-filter
 * language; "" clears the filter. The collector enforces it either way.
 */
struct proto_filter {
	char *system;
	char *name;
	char *text;
};

/*
 * MSG_FILTER_STATUS (agent -> collector, one per MSG_FILTER): whether the
 * kernel took @text for @system:@name; when not, @error is what the kernel
 * put in the event's filter file (or why the agent did not try).
 */
struct proto_filter_status {
	char *system;
	char *name;
	char *text;		/* the filter as received */
	bool ok;
	char *error;		/* "" when ok */
};

struct proto_cmdline {
	int32_t pid;
	char comm[16];		/* NUL-terminated, truncated like the kernel's */
};

struct proto_tgid {
	int32_t pid;
	int32_t tgid;		/* the thread group (process) @pid belongs to */
};

struct proto_tgids {
	uint32_t count;
	struct proto_tgid *items;
};

/*
 * MSG_CMDLINES: pid -> comm pairs of the kernel's saved_cmdlines and,
 * optionally (key "tgids", ignored by older collectors), pid -> tgid pairs
 * of its saved_tgids. Either may be empty; later entries for a pid replace
 * earlier ones, so an agent may send only what changed.
 */
struct proto_cmdlines {
	uint32_t count;
	struct proto_cmdline *items;
	struct proto_tgids tgids;
};

/*
 * MSG_PRINTK: part of the kernel's printk_formats (tracefs), lines
 * `0xADDR : "FORMAT"\n` as the kernel writes them (proto/printk.h): the
 * strings that trace_printk() events and tracepoint_string() pointers
 * point at. A table longer than one message comes in several, each of
 * whole lines; they add up.
 */
struct proto_printk {
	char *text;
	size_t len;
};

struct proto_cpu_stats {
	uint32_t cpu;
	uint64_t pages;		/* pages shipped */
	uint64_t events;	/* events in those pages */
	uint64_t bytes;		/* payload bytes shipped */
	uint64_t overrun;	/* kernel: events overwritten (per_cpu stats) */
	uint64_t dropped;	/* kernel: events dropped (buffer full) */
	uint64_t commit_overrun;
	/* Optional (0 when absent): the agent's delivery counters. */
	uint64_t resent_pages;	/* pages sent again after a reconnect */
	uint64_t lost_pages;	/* pages given up un-acknowledged */
	uint64_t lost_events;	/* events in them */
	uint64_t pages_mmap;	/* pages read by path: mmap reader page, */
	uint64_t pages_splice;	/* splice into the socket, */
	uint64_t pages_read;	/* read(2) */
	uint64_t copied_bytes;	/* page bytes copied in user space */
};

struct proto_bye {
	uint64_t pages;		/* totals over all CPUs */
	uint64_t events;
};

struct proto_done {
	uint64_t pages;		/* pages the collector stored this session */
	uint64_t events;	/* events it stored (after server-side filters) */
	bool journaled;		/* optional: the pages are in the collector's
				 * receive journal, stored behind; pages counts
				 * them, events only those stored so far */
};

struct proto_error {
	int32_t code;		/* a tc_error code */
	char *text;
};

struct proto_ack {		/* MSG_ACK */
	uint32_t stream;
	uint64_t seq;		/* every page of @stream up to @seq is stored */
};

struct proto_msg {
	enum proto_msg_type type;
	union {
		struct proto_hello hello;
		struct proto_welcome welcome;
		struct proto_text header_page;
		struct proto_format format;
		struct proto_cmdlines cmdlines;
		struct proto_clock clock;
		struct proto_cpu_stats cpu_stats;
		struct proto_bye bye;
		struct proto_done done;
		struct proto_error error;
		struct proto_group group;
		struct proto_ack ack;
		struct proto_symbols symbols;
		struct proto_filter filter;
		struct proto_filter_status filter_status;
		struct proto_printk printk;
		struct proto_clock_probe clock_probe;
		struct proto_clock_echo clock_echo;
		struct proto_clock_measure clock_measure;
		struct proto_freeze freeze;
		struct proto_snap_begin snap_begin;
		struct proto_snap_end snap_end;
		struct proto_froze froze;
	};
};

/*
 * A growable byte buffer that encoders append to. The caller may read
 * data[0..len) and reset len to 0 to reuse the allocation.
 */
struct proto_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

/* proto_buf_init - make @b empty, owning nothing. */
void proto_buf_init(struct proto_buf *b);
/* proto_buf_free - release @b's memory and leave it empty (re-usable). */
void proto_buf_free(struct proto_buf *b);

/* proto_buf_append - append @len bytes of @p to @b. Return: 0 or -ENOMEM. */
int proto_buf_append(struct proto_buf *b, const void *p, size_t len);

/*
 * proto_msg_encode - append @m as a complete FRAME_MSG frame (header and
 * msgpack payload) to @out.
 *
 * Every field of the type is written; a NULL string is sent as "". Text
 * fields (header_page, format.text) are sent as their @len bytes. @m stays
 * owned by the caller. On any failure @out is left as it was.
 *
 * Return: 0; -ENOMEM; TC_ERR_MSG_UNKNOWN for a bad type; TC_ERR_TOO_LONG when
 * a string exceeds its key's limit (PROTO_MAX_STRING or a
 * PROTO_MAX_* above), cmdlines.count exceeds
 * PROTO_MAX_CMDLINES, cmdlines.tgids.count PROTO_MAX_TGIDS, or the payload would exceed FRAME_MAX_PAYLOAD (65536
 * full cmdlines do not fit: send at most 32768 per message);
 * TC_ERR_MSG_MALFORMED when a text holds a NUL byte, or a FILTER or
 * FILTER_STATUS breaks the rules of proto_msg_decode().
 */
int proto_msg_encode(const struct proto_msg *m, struct proto_buf *out);

/*
 * proto_msg_decode - decode the msgpack payload of one FRAME_MSG frame.
 *
 * On success *@out owns copies of all strings and arrays; release them with
 * proto_msg_free(). Strings are NUL-terminated and may not contain NUL.
 *
 * Absent optional strings decode as "" (never NULL). FILTER and
 * FILTER_STATUS are also checked for meaning: system and name 1 to
 * PROTO_MAX_EVENT_NAME bytes of [A-Za-z0-9_.-] not starting with '.', text
 * at most PROTO_MAX_FILTER bytes (else TC_ERR_MSG_MALFORMED; the encoder
 * refuses the same). A HELLO whose version
 * is not PROTO_VERSION needs only "t" and "v", so the collector can always
 * read the version and refuse it (PROTOCOL.md, version negotiation).
 *
 * Return: 0; TC_ERR_MSG_MALFORMED (not exactly one map, truncated or
 * trailing bytes, wrong value type, integer out of range, duplicate key,
 * string over its key's limit (PROTO_MAX_HOST etc. above; PROTOCOL.md,
 * "Limits") or with NUL, @len over FRAME_MAX_PAYLOAD);
 * TC_ERR_MSG_MISSING (required key absent); TC_ERR_MSG_UNKNOWN (unknown
 * "t"); -ENOMEM. *@out is written only on success.
 */
int proto_msg_decode(const void *payload, size_t len, struct proto_msg *out);

/*
 * proto_msg_decode_why - proto_msg_decode(), and on failure one line in
 * @why (@whylen bytes) saying which key of which message broke which rule,
 * e.g. "hello: 'host' of 262144 bytes is over the limit of 255 bytes"
 * (no peer bytes in it; "" when the payload is not a message map at all).
 */
int proto_msg_decode_why(const void *payload, size_t len, struct proto_msg *out,
			 char *why, size_t whylen);

/*
 * proto_msg_free - release what proto_msg_decode() allocated in @m and
 * set those pointers to NULL. Only for decoded messages: it frees every
 * string and array of @m's type.
 */
void proto_msg_free(struct proto_msg *m);

/*
 * proto_msgpack_check - whether @buf holds exactly one complete msgpack
 * object with no trailing bytes, no container announcing more elements
 * than there are bytes left (each element takes at least one byte), and
 * nesting at most 16 deep. Run it on untrusted bytes before msgpack-c,
 * which allocates for a container's announced size before reading it (five
 * bytes could ask for 100 GB).
 *
 * Return: 0 if so, -1 if not.
 */
int proto_msgpack_check(const void *buf, size_t len);

/* proto_msg_name - the type's name for logs ("hello", ...), or "unknown". */
const char *proto_msg_name(enum proto_msg_type type);

#endif
