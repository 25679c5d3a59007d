/*
 * cpuslots.c - per-CPU state sized by the CPUs that send (see cpuslots.h).
 * The index is an open-addressing hash table with linear probing (Knuth,
 * TAOCP vol. 3, 6.4, algorithm L) of a multiplicative hash, rebuilt whole
 * when the slots double.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpuslots.h"

#define CPUSLOTS_MIN	4

void cpuslots_init(struct cpuslots *m, size_t esz)
{
	*m = (struct cpuslots){ .esz = esz };
}

static uint32_t cpuslots_hash(uint32_t cpu, uint32_t mask)
{
	return (cpu * 2654435761u) & mask;
}

/* The index entry of @cpu, or of the empty place where it would go. */
static uint32_t *cpuslots_entry(uint32_t *index, uint32_t size, const uint32_t *cpus,
				uint32_t cpu)
{
	uint32_t mask = size - 1, i = cpuslots_hash(cpu, mask);

	while (index[i] && cpus[index[i] - 1] != cpu)
		i = (i + 1) & mask;
	return &index[i];
}

void *cpuslots_find(const struct cpuslots *m, uint32_t cpu)
{
	uint32_t *e;

	if (!m->cap)
		return NULL;
	e = cpuslots_entry(m->index, 2 * m->cap, m->cpu, cpu);
	return *e ? cpuslots_at(m, *e - 1) : NULL;
}

/* Twice the slots: the arrays grow, the index is made anew. */
static int cpuslots_grow(struct cpuslots *m)
{
	uint32_t cap = m->cap ? 2 * m->cap : CPUSLOTS_MIN;
	uint32_t *cpu = realloc(m->cpu, cap * sizeof(*cpu)), *index;
	unsigned char *elems;

	if (!cpu)
		return -ENOMEM;
	m->cpu = cpu;
	elems = realloc(m->elems, cap * m->esz);
	if (!elems)
		return -ENOMEM;
	m->elems = elems;
	index = calloc(2 * (size_t)cap, sizeof(*index));
	if (!index)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->n; i++)
		*cpuslots_entry(index, 2 * cap, m->cpu, m->cpu[i]) = i + 1;
	free(m->index);
	m->index = index;
	m->cap = cap;
	return 0;
}

int cpuslots_get(struct cpuslots *m, uint32_t cpu, void **out)
{
	uint32_t *e;
	int ret;

	if (m->cap && *(e = cpuslots_entry(m->index, 2 * m->cap, m->cpu, cpu))) {
		*out = cpuslots_at(m, *e - 1);
		return 0;
	}
	if (m->n == m->cap && (ret = cpuslots_grow(m)) < 0)
		return ret;
	e = cpuslots_entry(m->index, 2 * m->cap, m->cpu, cpu);
	m->cpu[m->n] = cpu;
	*e = ++m->n;
	*out = cpuslots_at(m, m->n - 1);
	memset(*out, 0, m->esz);
	return 0;
}

void cpuslots_free(struct cpuslots *m)
{
	free(m->cpu);
	free(m->index);
	free(m->elems);
	cpuslots_init(m, m->esz);
}
