/*
 * queryd_import.h - the import requests of the query endpoint (traceq
 * --import; proto/qimport.h), run on a query worker: who may import
 * (`import` lines of the config, over the default), the refusals (a live
 * host's name without force, the same file again), then the importer
 * (server/ingest/importer.h, through struct queryd_importer) feeds the ingest as an agent's connection would.
 */
#ifndef SERVER_QUERYD_IMPORT_H
#define SERVER_QUERYD_IMPORT_H

#include <stdint.h>

struct queryd_importer;
struct proto_buf;
struct qauth_scopes;
struct qauth_who;
struct qimport_request;
struct store_reader;

struct queryd_import_env {
	const struct queryd_importer *im;	/* NULL: this collector takes no imports */
	struct store_reader *store;		/* the worker's (read) */
	const struct qauth_scopes *rights;	/* `import = IDENTITY [GLOBS]`; NULL: none */
	/* what the collector received so far, and a wait until it is stored (queryd.h) */
	uint64_t (*received)(void *arg);
	int (*wait_stored)(void *arg, uint64_t mark, int timeout_ms);
	void *arg;
};

/*
 * queryd_import - run import request @r from @who; the reply (a table or
 * an error with a sentence) goes to @out, a line to the log for BEGIN and
 * END and every refusal.
 */
void queryd_import(const struct queryd_import_env *env, const struct qimport_request *r,
		   const struct qauth_who *who, struct proto_buf *out);

#endif
