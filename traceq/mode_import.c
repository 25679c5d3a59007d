/*
 * mode_import.c - traceq --import FILE --name HOST: import.h reads the
 * recording and sends it over the client's raw exchange.
 */
#include "config.h"

#include "traceq/client.h"
#include "traceq/import.h"
#include "traceq/modes.h"
#include "traceq/traceq.h"

int mode_import_run(struct client *c, const struct traceq_opts *o)
{
	return import_run(o->import, o->name, o->buffer, o->force, client_exchange, c);
}
