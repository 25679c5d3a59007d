/*
 * sqlite_symbols.c - the SQLite backend's programs and their function
 * symbols (sql/0004-symbols.sql): recorded as agents announce them, and
 * the name of a row's code address at query time (store_symbol_name(),
 * store_symbol_sized(); for a host found by name with store_host_find(),
 * sqlite_hosts.c).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "common/tc_error.h"
#include "proto/symbols.h"
#include "server/store/sqlite_file.h"
#include "server/store/sqlite_symbols.h"
#include "server/store/sqlite_util.h"

#define SQ_ADDR_FLIP	(1ull << 63)	/* unsigned order as signed order */
#define TC_XSTR(x)	#x
#define TC_STR(x)	TC_XSTR(x)
#define SQ_SYM_CANDIDATES	8	/* programs tried per address */
#define SQ_SYM_UNSIZED_MAX	0x10000	/* a user symbol without size covers this */

/* A program's key, parameters 1-4 of @st: host, boot, session, group. */
static void bind_program_key(sqlite3_stmt *st, uint64_t host_id, const struct store_program *p)
{
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_text(st, 2, p->boot_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)p->session);
	sqlite3_bind_int64(st, 4, p->group);
}

static int sq_program_find(struct sq_store *s, uint64_t host_id, const struct store_program *p,
			   uint64_t *id)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, "SELECT id FROM programs WHERE host_id = ? AND boot_id = ?"
				" AND session = ? AND grp = ? AND session != 0", &st);
	int rc;

	if (ret < 0)
		return ret;
	bind_program_key(st, host_id, p);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*id = (uint64_t)sqlite3_column_int64(st, 0);
	else
		ret = rc == SQLITE_DONE ? -ENOENT : sq_err(s, TC_ERR_DB, "program");
	sqlite3_finalize(st);
	return ret;
}

static int sq_program(struct store_writer *w, uint64_t host_id, const struct store_program *p,
		      uint64_t *program_id)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st;
	int ret = sq_writer_enter(s) ?: sq_program_find(s, host_id, p, program_id);

	if (ret != -ENOENT)
		return ret;
	ret = sq_prepare(s, "INSERT INTO programs (host_id, boot_id, session, grp, pid, comm,"
			    " first_stream, nstreams, since) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", &st);
	if (ret < 0)
		return ret;
	bind_program_key(st, host_id, p);
	sqlite3_bind_int64(st, 5, p->pid);
	sqlite3_bind_text(st, 6, p->comm, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, p->first_stream);
	sqlite3_bind_int64(st, 8, p->nstreams);
	sqlite3_bind_int64(st, 9, p->since_ns);
	ret = sq_run(s, st, true);
	if (ret == 0)
		*program_id = (uint64_t)sqlite3_last_insert_rowid(s->db);
	return ret;
}

static int sq_symbol(struct store_writer *w, uint64_t program_id, uint64_t addr,
		     uint64_t size, const char *name, const char *module)
{
	struct sq_store *s = sq_writer_of(w);
	sqlite3_stmt *st = s->sym_put;
	int ret = sq_writer_enter(s);

	if (ret < 0)
		return ret;

	sqlite3_bind_int64(st, 1, (int64_t)program_id);
	sqlite3_bind_int64(st, 2, (int64_t)(addr ^ SQ_ADDR_FLIP));
	sqlite3_bind_int64(st, 3, (int64_t)size);
	sqlite3_bind_text(st, 4, name, -1, SQLITE_STATIC);
	if (module && *module)
		sqlite3_bind_text(st, 5, module, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 5);
	return sq_run(s, st, false);
}

/*
 * The statement sq_symbol_in() asks, prepared when first used: the
 * program's symbol at or below the address, and for STORE_SYM_SIZED also
 * the program's first address above it (a subquery only that one pays)
 * and the symbol's module (kallsyms' [MOD], for %pS).
 * Of aliases at one address the greatest name, as clickhouse_symbols.c
 * picks it, so that both backends print one name.
 */
static int sq_symbol_stmt(struct sq_store *s, bool sized, sqlite3_stmt **out)
{
	sqlite3_stmt **st = sized ? &s->sym_find_sized : &s->sym_find;
	int ret = 0;

	if (!*st)
		ret = sq_prepare(s, sized ?
				 "SELECT addr, size, name, (SELECT addr FROM symbols"
				 " WHERE program_id = ?1 AND addr > ?2 ORDER BY addr LIMIT 1),"
				 " module FROM symbols WHERE program_id = ?1 AND addr <= ?2"
				 " ORDER BY addr DESC, name DESC LIMIT 1" :
				 "SELECT addr, size, name FROM symbols"
				 " WHERE program_id = ?1 AND addr <= ?2"
				 " ORDER BY addr DESC, name DESC LIMIT 1", st);
	if (ret == 0)
		*out = *st;
	return ret;
}

/*
 * The symbol of program @prog covering @addr into @buf. A sized symbol
 * must contain it; an unsized one (kallsyms has no sizes) is taken as is
 * for the kernel (@kernel), within SQ_SYM_UNSIZED_MAX bytes otherwise.
 * For STORE_SYM_SIZED the row also carries the program's first address
 * above @addr: no symbol lies between it and @addr's, so it is the next
 * symbol's, which the size is measured by.
 * Return: 0, -ENOENT, TC_ERR_DB.
 */
static int sq_symbol_in(struct sq_store *s, int64_t prog, bool kernel, uint64_t addr,
			unsigned flags, char *buf, size_t len)
{
	bool sized = flags & STORE_SYM_SIZED;
	sqlite3_stmt *st = NULL;
	uint64_t start, size, next;
	const char *name;
	int ret = sq_symbol_stmt(s, sized, &st), rc;

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, prog);
	sqlite3_bind_int64(st, 2, (int64_t)(addr ^ SQ_ADDR_FLIP));
	rc = sqlite3_step(st);
	ret = rc == SQLITE_DONE ? -ENOENT : rc == SQLITE_ROW ? 0 : sq_err(s, TC_ERR_DB, "symbol");
	if (ret == 0) {
		start = (uint64_t)sqlite3_column_int64(st, 0) ^ SQ_ADDR_FLIP;
		size = (uint64_t)sqlite3_column_int64(st, 1);
		name = (const char *)sqlite3_column_text(st, 2);
		if (size ? addr - start >= size : !kernel && addr - start >= SQ_SYM_UNSIZED_MAX) {
			ret = -ENOENT;
		} else if (sized) {
			next = sqlite3_column_type(st, 3) == SQLITE_NULL ? start :
			       (uint64_t)sqlite3_column_int64(st, 3) ^ SQ_ADDR_FLIP;
			proto_sym_format_sized(buf, len, name, addr - start, next - start,
					       (const char *)sqlite3_column_text(st, 4));
		} else {
			proto_sym_format(buf, len, name, addr - start);
		}
	}
	sqlite3_reset(st);
	return ret;
}

/*
 * Which program's symbols name a row's address: the row carries its
 * thread id (common_pid), not its program. The program whose pid is the
 * row's comes first (the main thread, single-threaded programs), then the
 * host's other programs, latest first, each announced no later than the
 * row; the first with a symbol covering @addr wins. The kernel's table
 * (grp 0) takes only kernel addresses, which lie above every user one.
 */
static int sq_symbol_name(struct store_reader *r, uint64_t host_id, int32_t pid, int64_t ts,
			  uint64_t addr, unsigned flags, char *buf, size_t len)
{
	struct sq_store *s = sq_reader_of(r);
	sqlite3_stmt **st = &s->prog_find;
	int ret = 0, rc;

	if (!*st)
		ret = sq_prepare(s, "SELECT id, grp FROM programs WHERE host_id = ?1"
				    " AND since <= ?3 ORDER BY pid = ?2 AND grp != 0 DESC,"
				    " since DESC, id DESC LIMIT " TC_STR(SQ_SYM_CANDIDATES), st);
	if (ret < 0)
		return ret;
	sqlite3_bind_int64(*st, 1, (int64_t)host_id);
	sqlite3_bind_int64(*st, 2, pid);
	sqlite3_bind_int64(*st, 3, ts);
	ret = -ENOENT;
	while (ret == -ENOENT && (rc = sqlite3_step(*st)) == SQLITE_ROW)
		ret = sq_symbol_in(s, sqlite3_column_int64(*st, 0),
				   sqlite3_column_int64(*st, 1) == 0, addr, flags, buf, len);
	if (ret == -ENOENT && rc != SQLITE_DONE)
		ret = sq_err(s, TC_ERR_DB, "program lookup");
	sqlite3_reset(*st);
	return ret;
}

int sq_host_boot_exists(struct sq_store *s, const char *sql, uint64_t host_id,
			const char *boot_id, const char *what, bool *found)
{
	sqlite3_stmt *st;
	int ret = sq_prepare(s, sql, &st);
	int rc;

	if (ret < 0)
		return ret;
	sqlite3_bind_int64(st, 1, (int64_t)host_id);
	sqlite3_bind_text(st, 2, boot_id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		*found = rc == SQLITE_ROW;
	else
		ret = sq_err(s, TC_ERR_DB, what);
	sqlite3_finalize(st);
	return ret;
}

static int sq_kallsyms_held(struct store_writer *w, uint64_t host_id, const char *boot_id,
			    bool *held)
{
	struct sq_store *s = sq_writer_of(w);

	return sq_writer_enter(s) ?:
	       sq_host_boot_exists(s, "SELECT 1 FROM programs AS p WHERE host_id = ? AND"
				   " boot_id = ? AND grp = 0 AND EXISTS (SELECT 1 FROM symbols"
				   " WHERE program_id = p.id) LIMIT 1", host_id, boot_id,
				   "kernel symbols", held);
}

void sq_symbols_ops(struct store_writer_ops *w, struct store_reader_ops *r)
{
	w->program = sq_program;
	w->symbol = sq_symbol;
	w->kallsyms_held = sq_kallsyms_held;
	r->symbol_name = sq_symbol_name;
}
