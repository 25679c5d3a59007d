/*
 * notify.h - tracecollectd under systemd (Type=notify): readiness, stop
 * and the watchdog, through libsystemd's sd_notify(). Outside systemd
 * ($NOTIFY_SOCKET unset) every call does nothing.
 */
#ifndef TC_SERVER_NOTIFY_H
#define TC_SERVER_NOTIFY_H

struct event_base;
struct notify;

/*
 * notify_start - when the service manager asks for a watchdog
 * (sd_watchdog_enabled(): WatchdogSec= in the unit), ping it with
 * WATCHDOG=1 from a timer on @base every half period, so a loop that
 * stops turning stops the pings; otherwise set no timer.
 * *@out is written only on success (NULL when there is no watchdog).
 *
 * Return: 0; -ENOMEM.
 */
int notify_start(struct event_base *base, struct notify **out);

/* notify_ready - READY=1 and a STATUS= line (printf-style). */
void notify_ready(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* notify_stopping - STOPPING=1: the collector commits and exits. */
void notify_stopping(void);

/* notify_free - remove the watchdog timer; @n may be NULL. */
void notify_free(struct notify *n);

#endif
