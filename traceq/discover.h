/*
 * discover.h - traceq --hosts, --events [SELECTOR], --fields SELECTOR:
 * their arguments and how their answers print.
 */
#ifndef TRACEQ_DISCOVER_H
#define TRACEQ_DISCOVER_H

#include <stdbool.h>
#include <stdio.h>

#include "proto/qmsg.h"

/*
 * tq_discover_args - the @argc words after the options of @op: none for
 * --hosts, an optional selector for --events, one for --fields, into
 * *@query (NULL: none). Return: 0; -1 (printed) for a wrong count.
 */
int tq_discover_args(enum qmsg_op op, int argc, char **argv, const char **query);

/*
 * tq_discover_print - @rep as a table: a header line and one line per row,
 * columns padded (text), or one JSON object per row.
 */
void tq_discover_print(FILE *f, const struct qmsg_reply *rep, bool json);

#endif
