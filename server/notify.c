/*
 * notify.c - sd_notify() readiness, stopping and watchdog pings for
 * tracecollectd (see notify.h). The pings come from a timer on the
 * libevent loop that serves every agent connection: when the loop hangs,
 * the pings stop and systemd restarts the collector (WatchdogSec=).
 */
#include "config.h"

#define LOG_PREFIX "notify"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>
#include <systemd/sd-daemon.h>

#include "common/log.h"
#include "server/notify.h"

struct notify {
	struct event *timer;
};

static void ping_cb(evutil_socket_t fd, short what, void *arg)
{
	sd_notify(0, "WATCHDOG=1");
}

int notify_start(struct event_base *base, struct notify **out)
{
	struct timeval tv;
	struct notify *n;
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) {
		*out = NULL;
		return 0;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->timer = event_new(base, -1, EV_PERSIST, ping_cb, n);
	if (!n->timer) {
		free(n);
		return -ENOMEM;
	}
	tv.tv_sec = (time_t)(usec / 2 / 1000000);
	tv.tv_usec = (suseconds_t)(usec / 2 % 1000000);
	event_add(n->timer, &tv);
	sd_notify(0, "WATCHDOG=1");
	log_info("watchdog: pinging every %llu ms", (unsigned long long)(usec / 2000));
	*out = n;
	return 0;
}

void notify_ready(const char *fmt, ...)
{
	char status[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(status, sizeof(status), fmt, ap);
	va_end(ap);
	sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void notify_stopping(void)
{
	sd_notify(0, "STOPPING=1\nSTATUS=committing and stopping");
}

void notify_free(struct notify *n)
{
	if (!n)
		return;
	event_free(n->timer);
	free(n);
}
