/*
 * kshark_count.c - open a trace.dat with libkshark (KernelShark's own
 * loader, Debian's libkshark-dev) and count what it loads, for
 * tests/test_export_kshark.sh: every entry, per CPU and per event.
 *
 *   kshark_count FILE
 *
 * Prints "entries N", then "cpu C N" per CPU and "event NAME N" per event
 * name as libkshark gives it ("system/name"), both in ascending order of
 * the first column. Exit 0; 1 when the file cannot be opened or loads
 * nothing (said on stderr).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libkshark.h>

#define KC_MAX_CPUS	4096
#define KC_MAX_EVENTS	4096

struct kc_event {
	char *name;
	size_t n;
};

static int kc_event_cmp(const void *a, const void *b)
{
	return strcmp(((const struct kc_event *)a)->name, ((const struct kc_event *)b)->name);
}

/* Count @e under its event's name in @ev (@nev of them). Return: 0; -1 (full, no memory). */
static int kc_count_event(struct kc_event *ev, size_t *nev, const struct kshark_entry *e)
{
	char *name = kshark_get_event_name(e);
	size_t i;

	if (!name)
		return -1;
	for (i = 0; i < *nev && strcmp(ev[i].name, name); i++)
		;
	if (i == *nev) {
		if (*nev == KC_MAX_EVENTS) {
			free(name);
			return -1;
		}
		ev[(*nev)++] = (struct kc_event){ .name = name };
	} else {
		free(name);
	}
	ev[i].n++;
	return 0;
}

int main(int argc, char **argv)
{
	static size_t cpus[KC_MAX_CPUS];
	static struct kc_event ev[KC_MAX_EVENTS];
	struct kshark_context *ctx = NULL;
	struct kshark_entry **data = NULL;
	size_t nev = 0;
	ssize_t n;
	int sd, ret = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: kshark_count FILE\n");
		return 1;
	}
	if (!kshark_instance(&ctx))
		return 1;
	sd = kshark_open(ctx, argv[1]);
	if (sd < 0) {
		fprintf(stderr, "kshark_count: %s: libkshark cannot open it (%d)\n", argv[1], sd);
		kshark_free(ctx);
		return 1;
	}
	n = kshark_load_entries(ctx, sd, &data);
	if (n < 1) {
		fprintf(stderr, "kshark_count: %s: libkshark loads no entries (%zd)\n", argv[1], n);
		ret = 1;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (data[i]->cpu >= 0 && data[i]->cpu < KC_MAX_CPUS)
			cpus[data[i]->cpu]++;
		if (kc_count_event(ev, &nev, data[i]) < 0)
			ret = 1;
		free(data[i]);
	}
	free(data);
	printf("entries %zd\n", n);
	for (int c = 0; c < KC_MAX_CPUS; c++)
		if (cpus[c])
			printf("cpu %d %zu\n", c, cpus[c]);
	qsort(ev, nev, sizeof(*ev), kc_event_cmp);
	for (size_t i = 0; i < nev; i++) {
		printf("event %s %zu\n", ev[i].name, ev[i].n);
		free(ev[i].name);
	}
	kshark_close(ctx, sd);
	kshark_free(ctx);
	return ret;
}
