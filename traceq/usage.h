/*
 * usage.h - traceq's --help text (usage.c), apart from traceq.c so that
 * main, the options and the mode table read on one screen.
 */
#ifndef TRACEQ_USAGE_H
#define TRACEQ_USAGE_H

#include <stdio.h>

/* tq_usage - the whole --help text on @f. */
void tq_usage(FILE *f);

#endif
