/*
 * output.h - traceq's row layouts other than the rendered text: JSON, CSV
 * and the `field=value` layout. Prefix out_.
 *
 * JSON and CSV share one namespace of keys, in which no key appears twice:
 *
 *   event            "system:name" (ours)
 *   host, cpu        the host's name and the CPU (ours)
 *   ts, trace_ts     wall-clock ns, and the host's trace clock in ns (ours)
 *   comm             the comm of the event's common_pid (ours, see below)
 *   common_*         the kernel's common header, as the format names it
 *   <field>          every event field, as the format names it
 *   <field>_sym      ftrace code addresses named (ours)
 *
 * The event's fields keep their names. One of ours that an event also has
 * as a field (cpuhp_enter, ipi_send_cpu and irq_matrix_* have `cpu`;
 * sched_wakeup has `comm` and `pid`) gets a leading underscore, as many as
 * it takes to be unique: `_cpu`, `_comm`. The row's pid is common_pid; a
 * separate `pid` key appears only for an event without common_pid.
 *
 * comm is the name the agent's saved cmdlines give the event's pid
 * (common_pid), the latest the agent read. The kernel's COMM (in its
 * filters: current->comm) is the name the task had when the event was
 * written. They differ when a task changed its name: before an exec the
 * kernel says `bash` where we say `sleep` (the name after the exec), and
 * for a thread renamed with prctl(PR_SET_NAME). pid 0 is
 * the CPU's idle task, `swapper/N` as the kernel names it.
 *
 * Strings are peers' (a comm, a string field, a host name): every layout
 * but JSON prints them through common/log.h's escaping (log_escape_file()),
 * so that none forges a line or drives a terminal; CSV escapes each field
 * so, then quotes it. JSON strings are exact, every control character
 * (C0, DEL, the UTF-8 of C1 and of U+2028/9) as \uXXXX.
 */
#ifndef TRACEQ_OUTPUT_H
#define TRACEQ_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/qmsg.h"

#define OUT_COMM_MAX	64

/* --format's (and traceq --serve's format=) row formats. */
enum out_format { OUT_TEXT, OUT_KERNEL, OUT_FIELDS, OUT_CSV, OUT_JSON };

/* out_format_parse - @s ("text", "kernel", "fields", "csv", "json") into *@f. Return: 0; -1. */
int out_format_parse(const char *s, enum out_format *f);

/* Our keys, one name per reply column (NULL: left out); see above. */
struct out_keys {
	uint32_t n;
	char **key;		/* n names; "event" is added in front of them */
	char *event_key;
};

/* out_keys_make - the keys of @rep's columns. Return: 0; -ENOMEM. */
int out_keys_make(const struct qmsg_reply *rep, struct out_keys *k);
void out_keys_free(struct out_keys *k);

/* out_comm - the COMM of @row: its comm, swapper/N for pid 0, else NULL. */
const char *out_comm(const struct qmsg_value *row, char buf[OUT_COMM_MAX]);

/* out_json_row - @row of @rep as one JSON object and a newline. */
void out_json_row(FILE *f, const struct qmsg_reply *rep, const struct out_keys *k,
		  const struct qmsg_value *row);

/* out_csv_header, out_csv_row - RFC 4180 lines in the keys' order, escaped as above. */
void out_csv_header(FILE *f, const struct out_keys *k);
void out_csv_row(FILE *f, const struct qmsg_reply *rep, const struct out_keys *k,
		 const struct qmsg_value *row);

/*
 * out_fields_row - the `field=value` layout: "COMM-PID [CPU] S.US: EVENT:"
 * then every event field as name=value (common_* left out, code addresses
 * named), stamped @ts ns.
 */
void out_fields_row(FILE *f, const struct qmsg_reply *rep, const struct qmsg_value *row,
		    int64_t ts);

/*
 * The --sql answer: a plain table, its columns named as the statement
 * named them (none of the keys above). out_sql_text - a header line and one
 * line per row, columns padded to their widest cell, two spaces apart,
 * NULL as "NULL", strings escaped (common/log.h). out_sql_csv - RFC 4180,
 * a header line first. out_sql_json - one object per row.
 * Return: 0; -ENOMEM.
 */
int out_sql_text(FILE *f, const struct qmsg_reply *rep);
void out_sql_csv(FILE *f, const struct qmsg_reply *rep);
void out_sql_json(FILE *f, const struct qmsg_reply *rep);
/*
 * out_sql_print - @rep as -f @format asks: csv, json, else the text table
 * (the modes that answer with such a table: --sql, --snapshots).
 * Return: 0; -ENOMEM.
 */
int out_sql_print(FILE *f, enum out_format format, const struct qmsg_reply *rep);

/* out_value - one value as text, a string escaped (@json: as a JSON value, exact). */
void out_value(FILE *f, const struct qmsg_value *v, bool json);

/* out_json_str - @s[0..@len) as a JSON string, quoted, escaped as every value here is. */
void out_json_str(FILE *f, const char *s, size_t len);

/*
 * out_json_text - the inside of that string (no quotes): for a string
 * written in pieces (the Perfetto writer's systrace text).
 */
void out_json_text(FILE *f, const char *s, size_t len);

#endif
