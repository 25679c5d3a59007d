/*
 * tracedat_write.c - traceq --export -f tracedat: trace-cmd's trace.dat
 * (export.h's writer). Interface stub: the writer follows.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "common/tc_error.h"
#include "traceq/export.h"

static int td_open(const struct export_opts *o, struct export_writer **out)
{
	struct export_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->ops = &export_tracedat_ops;
	w->err = o->err;
	*out = w;
	return 0;
}

static int td_host_begin(struct export_writer *w, const struct export_host *h)
{
	(void)h;
	return export_seterr(w, TC_ERR_NOT_SUPPORTED, "trace.dat: not written yet");
}

static int td_row(struct export_writer *w, const struct export_row *r)
{
	(void)w;
	(void)r;
	return 0;
}

static int td_loss(struct export_writer *w, const struct export_loss *l)
{
	(void)w;
	(void)l;
	return 0;
}

static int td_host_end(struct export_writer *w)
{
	(void)w;
	return 0;
}

static int td_close(struct export_writer *w, bool ok, struct export_stats *st)
{
	(void)ok;
	if (st)
		*st = (struct export_stats){ 0 };
	free(w);
	return 0;
}

const struct export_writer_ops export_tracedat_ops = {
	.format = "tracedat",
	.open = td_open,
	.host_begin = td_host_begin,
	.row = td_row,
	.loss = td_loss,
	.host_end = td_host_end,
	.close = td_close,
};
