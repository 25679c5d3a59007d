/*
 * tc_error.c - strerror for tracecollect's error space (see tc_error.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/tc_error.h"

#define _TC(code, str) str,
static const char *const tc_error_str[] = { TC_ERRORS };
#undef _TC

const char *tc_strerror(int err)
{
	if (err > TC_ERR_START && err < TC_ERR_END)
		return tc_error_str[err - TC_ERR_START - 1];
	if (err < 0)
		err = -err;
	if (err == 0)
		return "success";
	return strerror(err);
}

void tc_seterr(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}
