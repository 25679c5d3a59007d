/*
 * user_sample - a traced program for the tests: writes N "myapp:request"
 * events through libtracecollect once an agent has attached to its ring
 * buffer, then prints how many writes the library accepted and exits.
 *
 *   user_sample [N] [PAGES_PER_CPU]      (defaults 1000000, 4096)
 *
 * The ring file goes to $TRACECOLLECT_DIR (default /dev/shm). Exit 3 when
 * no agent attached within 20 s. $USER_SAMPLE_PRINT_FMT, when set, is the
 * event's print fmt instead of ours (a hostile format, as a program may
 * register: tests/test_format_agent.sh).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/tracecollect.h"

struct request {		/* natural alignment, as tc_event_register lays out */
	uint64_t id;
	uint32_t latency_us;
	char path[16];
};

static const struct tc_field request_fields[] = {
	{ "id", TC_U64, 0 },
	{ "latency_us", TC_U32, 0 },
	{ "path", TC_STRING, 16 },
};

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	struct tc_options o = { .pages_per_cpu = argc > 2 ? (uint32_t)atol(argv[2]) : 4096 };
	struct request r = { .path = "/api/items" };
	struct tc_event *ev;
	const char *pfmt = getenv("USER_SAMPLE_PRINT_FMT");
	long i, ok = 0, wait;
	int ret;

	ret = tc_init(&o);
	if (ret == 0)
		ret = tc_event_register("myapp", "request", request_fields, 3, pfmt ? pfmt :
					"\"id=%llu latency_us=%u path=%s\", REC->id, "
					"REC->latency_us, REC->path", &ev);
	if (ret < 0) {
		fprintf(stderr, "user_sample: libtracecollect: %s\n", strerror(-ret));
		return 1;
	}
	for (wait = 0; !tc_enabled() && wait < 2000; wait++)
		usleep(10000);
	if (!tc_enabled()) {
		fprintf(stderr, "user_sample: no agent attached within 20 s\n");
		tc_event_free(ev);
		tc_shutdown();
		return 3;
	}
	for (i = 0; i < n; i++) {
		r.id = (uint64_t)i;
		r.latency_us = (uint32_t)(i % 1000);
		ok += tc_write(ev, &r, sizeof(r)) == 0;
	}
	printf("user_sample: events=%ld accepted=%ld\n", n, ok);
	tc_event_free(ev);
	tc_shutdown();
	return 0;
}
