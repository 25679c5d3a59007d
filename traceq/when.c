/*
 * when.c - read the times traceq's --since and --until take (see when.h).
 *
 * Each form is tried in turn on the whole text; a form either takes all of
 * it or none. Arithmetic is in int64 nanoseconds with every step checked,
 * so "@9999999999999999999s" is refused, not wrapped.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/tc_error.h"
#include "traceq/when.h"

#define NS_PER_S	1000000000LL

const char when_forms[] =
	"  2026-11-26T10:15:00Z    ISO 8601 (a zone: Z, +01:00; none: local time)\n"
	"  2026-11-26              midnight, local time\n"
	"  10:15 or 10:15:30       a time of day, today, local time\n"
	"  -10m, now-2h, now       relative to now\n"
	"  end, end-10s            relative to the newest stored event\n"
	"  @1795693277.745s        raw time since the epoch, with a unit (ns us ms s)\n"
	"  units: ns us ms s m h d, e.g. 90s, 1.5h\n";

static const struct unit {
	const char *name;
	int64_t ns;
} units[] = {
	{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", NS_PER_S },
	{ "min", 60 * NS_PER_S }, { "m", 60 * NS_PER_S },
	{ "h", 3600 * NS_PER_S }, { "d", 86400 * NS_PER_S },
};

/* Read up to @max decimal digits at *@p into *@v; return how many. */
static int digits(const char **p, int max, int64_t *v)
{
	int n = 0;

	*v = 0;
	while (n < max && isdigit((unsigned char)**p)) {
		*v = *v * 10 + (**p - '0');
		(*p)++;
		n++;
	}
	return n;
}

/*
 * "N[.F]UNIT" covering all of @s, into *@ns. Return 0, TC_ERR_SYNTAX or
 * -ERANGE.
 */
static int duration(const char *s, int64_t *ns)
{
	const char *p = s;
	int64_t whole = 0, frac_ns = 0, scale;
	int nd = 0, nf = 0;
	size_t i;

	while (isdigit((unsigned char)*p)) {
		if (whole > (INT64_MAX - 9) / 10)
			return -ERANGE;
		whole = whole * 10 + (*p++ - '0');
		nd++;
	}
	const char *frac = NULL;
	if (*p == '.') {
		frac = ++p;
		while (isdigit((unsigned char)*p)) {
			p++;
			nf++;
		}
	}
	if (nd + nf == 0)
		return TC_ERR_SYNTAX;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(p, units[i].name))
			break;
	if (i == sizeof(units) / sizeof(units[0]))
		return TC_ERR_SYNTAX;
	scale = units[i].ns;
	if (whole > INT64_MAX / scale)
		return -ERANGE;
	/* the fraction, exact down to the nanosecond, the rest cut off */
	for (int k = 0; frac && k < nf; k++) {
		scale /= 10;
		if (scale == 0)
			break;
		frac_ns += (frac[k] - '0') * scale;
	}
	if (whole * units[i].ns > INT64_MAX - frac_ns)
		return -ERANGE;
	*ns = whole * units[i].ns + frac_ns;
	return 0;
}

/* "Z", "+HH:MM", "+HHMM", "+HH" or "" (local) at the end of the text. */
static int zone(const char *p, bool *local, int64_t *offset_s)
{
	int64_t hh, mm = 0;
	int sign;

	*local = false;
	*offset_s = 0;
	if (!*p) {
		*local = true;
		return 0;
	}
	if (!strcmp(p, "Z") || !strcmp(p, "z"))
		return 0;
	if (*p != '+' && *p != '-')
		return TC_ERR_SYNTAX;
	sign = *p++ == '-' ? -1 : 1;
	if (digits(&p, 2, &hh) != 2)
		return TC_ERR_SYNTAX;
	if (*p == ':')
		p++;
	if (*p && digits(&p, 2, &mm) != 2)
		return TC_ERR_SYNTAX;
	if (*p || hh > 23 || mm > 59)
		return TC_ERR_SYNTAX;
	*offset_s = sign * (hh * 3600 + mm * 60);
	return 0;
}

/* "HH:MM[:SS[.F]]" at *@p into @tm and *@frac_ns; advances *@p. */
static int clock_time(const char **p, struct tm *tm, int64_t *frac_ns)
{
	int64_t hh, mm, ss = 0;

	*frac_ns = 0;
	if (digits(p, 2, &hh) != 2 || **p != ':')
		return TC_ERR_SYNTAX;
	(*p)++;
	if (digits(p, 2, &mm) != 2)
		return TC_ERR_SYNTAX;
	if (**p == ':') {
		(*p)++;
		if (digits(p, 2, &ss) != 2)
			return TC_ERR_SYNTAX;
		if (**p == '.' || **p == ',') {
			int64_t scale = NS_PER_S / 10;
			(*p)++;
			if (!isdigit((unsigned char)**p))
				return TC_ERR_SYNTAX;
			while (isdigit((unsigned char)**p)) {
				*frac_ns += (**p - '0') * scale;
				scale /= 10;
				(*p)++;
			}
		}
	}
	if (hh > 23 || mm > 59 || ss > 60)
		return TC_ERR_SYNTAX;
	tm->tm_hour = (int)hh;
	tm->tm_min = (int)mm;
	tm->tm_sec = (int)ss;
	return 0;
}

/* seconds since the epoch of @tm, local or UTC minus @offset_s. */
static int to_epoch(struct tm *tm, bool local, int64_t offset_s, int64_t frac_ns,
		    int64_t *ns)
{
	struct tm want = *tm;
	time_t t;

	tm->tm_isdst = -1;
	t = local ? mktime(tm) : timegm(tm);
	if (t == (time_t)-1 && !(tm->tm_year == 69 && tm->tm_mon == 11))
		return TC_ERR_SYNTAX;
	/* mktime/timegm normalise 2026-02-30 to March; we refuse it */
	if (tm->tm_mday != want.tm_mday || tm->tm_mon != want.tm_mon)
		return TC_ERR_SYNTAX;
	t -= offset_s;
	if ((int64_t)t > (INT64_MAX - frac_ns) / NS_PER_S || (int64_t)t < INT64_MIN / NS_PER_S)
		return -ERANGE;
	*ns = (int64_t)t * NS_PER_S + frac_ns;
	return 0;
}

/* "YYYY-MM-DD[(T| )HH:MM[:SS[.F]]][zone]" */
static int iso8601(const char *s, int64_t *ns)
{
	const char *p = s;
	struct tm tm = { 0 };
	int64_t y, mo, d, frac = 0, off;
	bool local;
	int ret;

	if (digits(&p, 4, &y) != 4 || *p++ != '-' || digits(&p, 2, &mo) != 2 ||
	    *p++ != '-' || digits(&p, 2, &d) != 2)
		return TC_ERR_SYNTAX;
	if (mo < 1 || mo > 12 || d < 1 || d > 31)
		return TC_ERR_SYNTAX;
	tm.tm_year = (int)y - 1900;
	tm.tm_mon = (int)mo - 1;
	tm.tm_mday = (int)d;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		ret = clock_time(&p, &tm, &frac);
		if (ret < 0)
			return ret;
	}
	ret = zone(p, &local, &off);
	if (ret < 0)
		return ret;
	return to_epoch(&tm, local, off, frac, ns);
}

/* "HH:MM[:SS[.F]]": today, local time. */
static int time_of_day(const char *s, int64_t now_ns, int64_t *ns)
{
	const char *p = s;
	time_t now = (time_t)(now_ns / NS_PER_S);
	struct tm tm;
	int64_t frac;
	int ret;

	if (!localtime_r(&now, &tm))
		return TC_ERR_SYNTAX;
	ret = clock_time(&p, &tm, &frac);
	if (ret < 0 || *p)
		return ret < 0 ? ret : TC_ERR_SYNTAX;
	return to_epoch(&tm, true, 0, frac, ns);
}

/* "BASE", "BASE-DUR", "BASE+DUR" or "-DUR" (now) */
static int relative(const char *s, const char *base, int64_t *ns)
{
	size_t n = strlen(base);
	int64_t d;
	int ret, sign;

	if (!strncmp(s, base, n))
		s += n;
	else if (strcmp(base, "now") || *s != '-')
		return TC_ERR_SYNTAX;
	if (!*s) {
		*ns = 0;
		return 0;
	}
	if (*s != '-' && *s != '+')
		return TC_ERR_SYNTAX;
	sign = *s++ == '-' ? -1 : 1;
	ret = duration(s, &d);
	if (ret < 0)
		return ret;
	*ns = sign * d;
	return 0;
}

int when_parse(const char *s, int64_t now_ns, struct when *out,
	       char *err, size_t errlen)
{
	int64_t v;
	int ret;

	if (!s || !*s) {
		snprintf(err, errlen, "an empty time; use one of:\n%s", when_forms);
		return TC_ERR_SYNTAX;
	}
	if (*s == '@') {
		ret = duration(s + 1, &v);
		if (ret == 0) {
			*out = (struct when){ WHEN_ABS, v };
			return 0;
		}
		if (ret == -ERANGE)
			goto range;
		snprintf(err, errlen, "'%s': a raw time needs a unit (ns, us, ms, s), e.g. @1795693277.745s", s);
		return TC_ERR_SYNTAX;
	}
	ret = relative(s, "end", &v);
	if (ret == 0 && v <= 0) {
		*out = (struct when){ WHEN_END, v };
		return 0;
	}
	if (ret == 0) {
		snprintf(err, errlen, "'%s': nothing is stored after the newest event; use end-DURATION", s);
		return TC_ERR_SYNTAX;
	}
	if (ret == -ERANGE)
		goto range;
	ret = relative(s, "now", &v);
	if (ret == 0) {
		if ((v > 0 && now_ns > INT64_MAX - v) || (v < 0 && now_ns < INT64_MIN - v))
			goto range;
		*out = (struct when){ WHEN_ABS, now_ns + v };
		return 0;
	}
	if (ret == -ERANGE)
		goto range;
	ret = iso8601(s, &v);
	if (ret == TC_ERR_SYNTAX)
		ret = time_of_day(s, now_ns, &v);
	if (ret == 0) {
		*out = (struct when){ WHEN_ABS, v };
		return 0;
	}
	if (ret == -ERANGE)
		goto range;
	{
		const char *p = s;
		while (isdigit((unsigned char)*p) || *p == '.')
			p++;
		if (!*p)
			snprintf(err, errlen, "'%s': a bare number has no unit; use one of:\n%s", s, when_forms);
		else
			snprintf(err, errlen, "'%s' is not a time; use one of:\n%s", s, when_forms);
	}
	return TC_ERR_SYNTAX;
range:
	snprintf(err, errlen, "'%s': out of range (times are kept as 64-bit nanoseconds)", s);
	return -ERANGE;
}

int64_t when_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
