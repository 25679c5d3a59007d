/*
 * cpuslots.h - per-CPU state sized by the CPUs that send (libc
 * only; the collector's connections and sinks keep theirs in one).
 *
 * A HELLO declares how many CPUs a host has, but what a connection keeps
 * per CPU (sequence numbers, counters, ACK marks) is made only for a CPU
 * one of whose pages arrived, and every "for each CPU" loop (ACKs after a
 * commit, counters, held pages) visits those only. So a peer that declares
 * thousands of CPUs and sends on two costs two slots, not thousands.
 *
 * A table maps a CPU number to its slot (open addressing, linear probing,
 * kept at most half full); slots are numbered in arrival order and their
 * elements lie in one array. Adding a slot may move the elements: a pointer
 * from cpuslots_get() or cpuslots_at() holds until the next cpuslots_get().
 *
 * Threads: none of its own; the owner serialises.
 */
#ifndef COMMON_CPUSLOTS_H
#define COMMON_CPUSLOTS_H

#include <stddef.h>
#include <stdint.h>

struct cpuslots {
	size_t esz;		/* bytes per element */
	uint32_t n;		/* slots in use */
	uint32_t cap;		/* slots allocated (0 or a power of two) */
	uint32_t *cpu;		/* slot -> CPU number */
	uint32_t *index;	/* 2 * cap entries: slot + 1, 0 for none */
	unsigned char *elems;	/* cap elements of esz bytes */
};

/* cpuslots_init - an empty table of elements of @esz bytes (no allocation). */
void cpuslots_init(struct cpuslots *m, size_t esz);

/* cpuslots_find - the element of @cpu; NULL when it has none. */
void *cpuslots_find(const struct cpuslots *m, uint32_t cpu);

/*
 * cpuslots_get - the element of @cpu, added zeroed if it had none.
 * Return: 0 and *@out; -ENOMEM (the table as it was).
 */
int cpuslots_get(struct cpuslots *m, uint32_t cpu, void **out);

/* cpuslots_at - the element of slot @i (< m->n). */
static inline void *cpuslots_at(const struct cpuslots *m, uint32_t i)
{
	return m->elems + (size_t)i * m->esz;
}

/* cpuslots_free - free what @m holds; it is empty (and usable) again. */
void cpuslots_free(struct cpuslots *m);

#endif
