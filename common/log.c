/*
 * log.c - printf-checked logging to stderr or syslog (see log.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

static const char *log_ident = "tracecollect";
static enum log_level log_max = LOGL_INFO;
static bool log_syslog;

static const char *const level_name[] = { "error", "warning", "info", "debug" };
static const int level_prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

void log_init(const char *ident, enum log_level max_level, bool to_syslog)
{
	log_ident = ident;
	log_max = max_level;
	if (log_syslog && !to_syslog)
		closelog();
	log_syslog = to_syslog;
	if (to_syslog)
		openlog(ident, LOG_PID, LOG_DAEMON);
}

bool log_level_enabled(enum log_level level)
{
	return level <= log_max;
}

void log_msg(enum log_level level, const char *prefix, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!log_level_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_syslog) {
		syslog(level_prio[level], "%s%s%s", prefix ? prefix : "",
		       prefix ? ": " : "", msg);
		return;
	}
	fprintf(stderr, "%s[%d]: %s: %s%s%s\n", log_ident, (int)getpid(),
		level_name[level], prefix ? prefix : "", prefix ? ": " : "", msg);
}
