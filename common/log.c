/*
 * log.c - printf-checked logging to stderr or syslog (see log.h).
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Bytes in the UTF-8 sequence at @p (at most @n there), or 0 if invalid. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	size_t need, i;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		need = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		need = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		need = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (n < need)
		return 0;
	for (i = 1; i < need; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((need == 3 && cp < 0x800) || (need == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;		/* overlong, out of range, surrogate */
	if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
	    (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
		return 0;		/* C1 controls, line separators, bidi overrides */
	return need;
}

/* The escaped form of the character at @p (@n bytes left) into @out; its
 * input length in *@in. Return: the output length (at most 16). */
static size_t escape_one(const unsigned char *p, size_t n, char *out, size_t *in)
{
	size_t u = utf8_len(p, n);

	*in = u ? u : 1;
	if (u > 1 || (u == 1 && p[0] >= 0x20 && p[0] < 0x7f && p[0] != '\\')) {
		memcpy(out, p, u);
		return u;
	}
	out[0] = '\\';
	switch (p[0]) {
	case '\\': out[1] = '\\'; return 2;
	case '\n': out[1] = 'n'; return 2;
	case '\r': out[1] = 'r'; return 2;
	case '\t': out[1] = 't'; return 2;
	}
	*in = 1;
	snprintf(out, 8, "\\x%02x", p[0]);
	return 4;
}

bool log_escape_needed(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] >= 0x7f || p[i] == '\\')
			return true;	/* past 0x7f: UTF-8 is looked at closely */
	return false;
}

size_t log_escape_mem(const char *s, size_t n, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t pos = 0, i = 0, in, k;
	char one[16];

	if (!len)
		return 0;
	while (i < n) {
		k = escape_one(p + i, n - i, one, &in);
		if (pos + k + 1 > len)
			break;		/* cut at a whole character */
		memcpy(buf + pos, one, k);
		pos += k;
		i += in;
	}
	buf[pos] = '\0';
	return pos;
}

void log_escape_file(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run, in, k;
	char one[16];

	while (i < n) {
		for (run = i; run < n && p[run] >= 0x20 && p[run] < 0x7f && p[run] != '\\'; run++)
			;
		fwrite(p + i, 1, run - i, f);	/* printable ASCII as it is, in runs */
		if ((i = run) >= n)
			break;
		k = escape_one(p + i, n - i, one, &in);
		fwrite(one, 1, k, f);
		i += in;
	}
}

#define LOG_ESC_MARK	32	/* room for "...[+N bytes]" */

const char *log_escape(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "(null)");
	size_t n = strlen((const char *)p), pos = 0, cut = 0, cut_in = 0, i = 0, in, k;
	char one[16];

	if (!len)
		return buf;
	while (i < n) {
		k = escape_one(p + i, n - i, one, &in);
		if (pos + k + 1 > len)
			break;
		memcpy(buf + pos, one, k);
		pos += k;
		i += in;
		if (pos + LOG_ESC_MARK + 1 <= len) {
			cut = pos;
			cut_in = i;
		}
	}
	if (i >= n) {
		buf[pos] = '\0';
		return buf;
	}
	if (len <= LOG_ESC_MARK) {	/* no room for the marker: cut short */
		buf[pos] = '\0';
		return buf;
	}
	snprintf(buf + cut, len - cut, "...[+%zu bytes]", n - cut_in);
	return buf;
}
