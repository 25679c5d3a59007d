/*
 * tc_internal.h - what libtracecollect's own modules (lib/fgraph.c)
 * need from common/tracecollect.c beyond the public API. Not installed.
 */
#ifndef COMMON_TC_INTERNAL_H
#define COMMON_TC_INTERNAL_H

#include <stdint.h>

#include "include/tracecollect.h"

/*
 * tc__event_register_raw - register @system:@name whose field lines
 * (@fields: the kernel format file's lines after the common fields, each
 * "\tfield:...;\n") and @print_fmt are given as text, with @size bytes
 * of payload after the 8 common bytes. For events whose layout the typed
 * tc_event_register() cannot spell, such as the kernel's ftrace events
 * (unsigned long, trailing args[]).
 * Return: 0 and *@out; -ENODEV before tc_init(); -EINVAL; -ENOSPC; -ENOMEM.
 */
int tc__event_register_raw(const char *system, const char *name,
			   const char *fields, const char *print_fmt,
			   uint32_t size, struct tc_event **out);

/* The ring tc_init() created (NULL before and after): for the function
 * graph hooks, which write their fixed-size records with ring_reserve()
 * and ring_commit() directly, sparing tc_reserve()'s checks and copies.
 * Valid while *tc__on is set. */
struct ring;
extern struct ring *tc__ring __attribute__((visibility("hidden")));
/* tc__ring's view number (ring_gen()); 0 without a ring. */
extern uint32_t tc__gen __attribute__((visibility("hidden")));

/* tc__clock_id - the ring's clock (enum ring_clock_id); 0 before init. */
unsigned tc__clock_id(void);

#endif
