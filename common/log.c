/*
 * log.c - printf-checked logging to stderr or syslog (see log.h).
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

static const char *log_ident = "tracecollect";
static enum log_level log_max = LOGL_INFO;
static bool log_syslog;
static bool log_journal;	/* stderr is the journal: "<N>" prefixes */

static const char *const level_name[] = { "error", "warning", "info", "debug" };
static const int level_prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
/* sd-daemon.h's SD_ERR, SD_WARNING, SD_INFO, SD_DEBUG: the journal reads them */
static const char *const level_sd[] = { "<3>", "<4>", "<6>", "<7>" };

/*
 * Whether $JOURNAL_STREAM ("DEV:INODE", set by systemd for a service whose
 * output goes to the journal) names our stderr: a child whose stderr was
 * redirected elsewhere inherits the variable but not the stream.
 */
static bool stderr_is_journal(void)
{
	const char *v = getenv("JOURNAL_STREAM");
	uintmax_t dev, ino;
	struct stat st;
	char tail;

	if (!v || sscanf(v, "%ju:%ju%c", &dev, &ino, &tail) != 2 ||
	    fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (uintmax_t)st.st_dev == dev && (uintmax_t)st.st_ino == ino;
}

void log_init(const char *ident, enum log_level max_level, bool to_syslog)
{
	log_ident = ident;
	log_max = max_level;
	if (log_syslog && !to_syslog)
		closelog();
	log_syslog = to_syslog;
	log_journal = !to_syslog && stderr_is_journal();
	if (to_syslog)
		openlog(ident, LOG_PID, LOG_DAEMON);
}

const char *log_prio_prefix(enum log_level level)
{
	return log_journal ? level_sd[level] : "";
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
	if (log_journal) {
		fprintf(stderr, "%s%s: %s%s%s\n", level_sd[level], level_name[level],
			prefix ? prefix : "", prefix ? ": " : "", msg);
		return;
	}
	fprintf(stderr, "%s[%d]: %s: %s%s%s\n", log_ident, (int)getpid(),
		level_name[level], prefix ? prefix : "", prefix ? ": " : "", msg);
}
