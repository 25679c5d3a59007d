/*
 * log.h - the one logger for daemons and tools.
 *
 * Each .c file that logs defines LOG_PREFIX (a short module name) before
 * including this header; messages read "tracecollectd[pid]: store: ...".
 * Library code logs only through here and never writes to stdout.
 */
#ifndef TC_LOG_H
#define TC_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum log_level {
	LOGL_ERR,
	LOGL_WARN,
	LOGL_INFO,
	LOGL_DEBUG,
};

/*
 * log_init - set the program name, the most verbose level printed, and
 * whether messages go to syslog instead of stderr. May be called again.
 *
 * When stderr is the journal (systemd's $JOURNAL_STREAM names stderr's
 * device and inode), each stderr line starts with its syslog priority,
 * "<3>" for errors, as sd-daemon.h's SD_ERR etc., and without the
 * "ident[pid]: " the journal adds itself: `journalctl -p err` then finds
 * the errors.
 */
void log_init(const char *ident, enum log_level max_level, bool to_syslog);

/*
 * log_prio_prefix - what a program's own stderr line at @level starts
 * with: "<3>" etc. when stderr is the journal (see log_init()), else "".
 */
const char *log_prio_prefix(enum log_level level);

/* log_level_enabled - whether a message at @level would be printed. */
bool log_level_enabled(enum log_level level);

void log_msg(enum log_level level, const char *prefix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#ifndef LOG_PREFIX
#define LOG_PREFIX NULL
#endif

/* A buffer for one log_escape()d string: a 255-byte name fits as it is. */
#define LOG_ESC_LEN	384

/*
 * log_escape - @s made safe for one log line, into @buf (@len bytes).
 *
 * Every peer-supplied string goes through here before it reaches a log
 * line, so that it can neither forge a line nor drive a terminal. Printable
 * ASCII and valid UTF-8 stay as they are; a backslash becomes "\\"; "\n",
 * "\r" and "\t" are written so; every other byte that is a control
 * character (C0, DEL, ESC of an ANSI sequence, C1 U+0080..U+009F), part of a
 * bidirectional override or line separator (U+2028/9, U+202A..E,
 * U+2066..9) or not valid UTF-8 (overlong, surrogate, cut short) becomes
 * "\xNN". When that does not fit @len, the text is cut at a character and
 * ends in "...[+N bytes]", N being the bytes of @s left out. NULL @s reads
 * "(null)".
 *
 * Return: @buf (NUL-terminated when @len > 0).
 */
const char *log_escape(const char *s, char *buf, size_t len);

/*
 * The same escaping for what a program prints for people (traceq's text,
 * tables, CSV), where a peer's string must not forge a line or drive the
 * terminal either. These take @n bytes of @s, NULs included ("\x00").
 *
 * log_escape_needed - whether any of them would not stay as it is (a
 * quick look: any byte past ASCII says yes, though valid UTF-8 stays).
 *
 * log_escape_mem - the escaped text into @buf (@len bytes, NUL-terminated
 * when @len > 0), cut at a whole character when it does not fit (no
 * marker). Return: its length.
 *
 * log_escape_file - the escaped text written to @f, whole.
 */
bool log_escape_needed(const char *s, size_t n);
size_t log_escape_mem(const char *s, size_t n, char *buf, size_t len);
void log_escape_file(FILE *f, const char *s, size_t n);

#define log_err(...)	log_msg(LOGL_ERR, LOG_PREFIX, __VA_ARGS__)
#define log_warn(...)	log_msg(LOGL_WARN, LOG_PREFIX, __VA_ARGS__)
#define log_info(...)	log_msg(LOGL_INFO, LOG_PREFIX, __VA_ARGS__)
#define log_debug(...)	log_msg(LOGL_DEBUG, LOG_PREFIX, __VA_ARGS__)

#endif
