/*
 * sqlite_names.c - the host name and comm of each row a read passes on,
 * looked up once per (host, pid) in a small cache instead of joined to
 * every row: the comms join was a B-tree search per row, a fifth of the
 * collector's time printing a long answer, for a handful of distinct
 * tasks. A connection keeps one cache; what it holds counts for one read
 * (a statement, a tail's pass: a generation each), so a comm learned
 * meanwhile shows from the next read on, as the join did; a read that
 * follows one without another connection's commit between them (PRAGMA
 * data_version) keeps the generation: nothing it holds can have changed.
 * A select of many types reads each a few hundred rows at a time, and
 * started over each time. sq_row_names() gives a row read into a struct
 * sq_rowbuf its pid, host name and comm.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "server/store/sqlite_names.h"
#include "server/store/sqlite_util.h"

#define SQ_COMM_SLOTS	1024		/* (host, pid) pairs kept, direct-mapped */
#define SQ_HOST_SLOTS	16		/* hosts kept; a 17th evicts by id */
#define SQ_NAME_MAX	64		/* a comm longer than this is not kept */

struct sq_comm_slot {
	uint64_t host_id;
	int64_t pid;
	uint64_t gen;			/* the read that filled it */
	bool known;			/* the comms table has it */
	char comm[SQ_NAME_MAX];
};

struct sq_names {
	struct sq_store *s;		/* its connection: statements from its cache */
	uint64_t gen;			/* of the current read; a slot of another is empty */
	sqlite3 *db;			/* the connection @version was read on */
	int64_t version;		/* its PRAGMA data_version then */
	struct sq_comm_slot comm[SQ_COMM_SLOTS];
	struct {
		uint64_t id;
		char *name;		/* NULL: no such host */
		uint64_t gen;
	} host[SQ_HOST_SLOTS];
	char *spill;			/* a comm too long to keep, for the current row */
};

/*
 * Whether no other connection committed since @n's last read on this
 * connection (a reopened one is another: the old lived while it opened).
 */
static bool sq_names_same(struct sq_names *n)
{
	sqlite3_stmt *st;
	bool same = false;

	if (sq_prepare_cached(n->s, "PRAGMA data_version", &st) < 0)
		return false;
	if (sqlite3_step(st) == SQLITE_ROW) {
		int64_t v = sqlite3_column_int64(st, 0);

		same = n->db == n->s->db && v == n->version;
		n->db = n->s->db;
		n->version = v;
	} else {
		n->db = NULL;
	}
	sq_release(n->s, st);
	return same;
}

int sq_names_new(struct sq_store *s, struct sq_names **out)
{
	if (!s->names && !(s->names = calloc(1, sizeof(*s->names))))
		return -ENOMEM;
	s->names->s = s;
	if (!sq_names_same(s->names) || !s->names->gen)
		s->names->gen++;
	*out = s->names;
	return 0;
}

void sq_names_free(struct sq_names *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < SQ_HOST_SLOTS; i++)
		free(n->host[i].name);
	free(n->spill);
	free(n);
}

/*
 * Column 0 of the one row @sql gives for (@a[, @b]) into *@out: 1, or 0
 * (no row: *@out NULL), or -1 (an error: not to be kept). *@out lives
 * until sq_release(@n's store, *@st), which the caller does once it has
 * copied it (a statement left stepped keeps its read snapshot).
 */
static int sq_names_step(struct sq_names *n, const char *sql, int64_t a, const int64_t *b,
			 sqlite3_stmt **st, const char **out)
{
	int rc;

	*out = NULL;
	if (sq_prepare_cached(n->s, sql, st) < 0) {
		*st = NULL;
		return -1;
	}
	sqlite3_bind_int64(*st, 1, a);
	if (b)
		sqlite3_bind_int64(*st, 2, *b);
	rc = sqlite3_step(*st);
	if (rc == SQLITE_ROW)
		*out = (const char *)sqlite3_column_text(*st, 0);
	return rc == SQLITE_ROW && *out ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

const char *sq_names_host(struct sq_names *n, uint64_t host_id)
{
	size_t i = host_id % SQ_HOST_SLOTS;
	sqlite3_stmt *st;
	const char *name;
	int rc;

	if (n->host[i].gen == n->gen && n->host[i].id == host_id)
		return n->host[i].name;
	rc = sq_names_step(n, "SELECT name FROM hosts WHERE id = ?", (int64_t)host_id, NULL,
			   &st, &name);
	free(n->host[i].name);
	n->host[i].name = name ? strdup(name) : NULL;
	sq_release(n->s, st);
	n->host[i].id = host_id;
	n->host[i].gen = rc == 0 || (rc == 1 && n->host[i].name) ? n->gen : 0;
	return n->host[i].name;
}

const char *sq_names_comm(struct sq_names *n, uint64_t host_id, int64_t pid)
{
	struct sq_comm_slot *c = &n->comm[((uint64_t)pid * 31 + host_id) % SQ_COMM_SLOTS];
	sqlite3_stmt *st;
	const char *comm;
	size_t len;
	int rc;

	if (c->gen == n->gen && c->host_id == host_id && c->pid == pid)
		return c->known ? c->comm : NULL;
	rc = sq_names_step(n, "SELECT comm FROM comms WHERE host_id = ? AND pid = ?",
			   (int64_t)host_id, &pid, &st, &comm);
	len = comm ? strlen(comm) : 0;
	if (rc < 0 || len >= SQ_NAME_MAX) {	/* not kept; valid for this row */
		free(n->spill);
		n->spill = comm ? strdup(comm) : NULL;
		comm = n->spill;
	} else {
		c->gen = n->gen;
		c->host_id = host_id;
		c->pid = pid;
		c->known = comm != NULL;
		if (comm)
			comm = memcpy(c->comm, comm, len + 1);
	}
	sq_release(n->s, st);
	return comm;
}

void sq_row_names(const struct store_schema *sc, struct sq_rowbuf *rb, struct store_row *r)
{
	r->pid = rb->pid >= 0 && !rb->null[rb->pid] ? (int)rb->vals[rb->pid].i : -1;
	r->host = sq_names_host(rb->names, r->host_id);
	if (rb->pid >= 0 && !rb->null[rb->pid])
		r->comm = sq_names_comm(rb->names, r->host_id, rb->vals[rb->pid].i);
	r->nvals = sc->ncols;
	r->vals = rb->vals;
	r->null = rb->null;
}
