/*
 * funcsyms.h - collect the function symbols of a traced program (every
 * executable ELF mapping in /proc/PID/maps, read with libelf, at run-time
 * addresses) and of the kernel (/proc/kallsyms), shipped as MSG_SYMBOLS
 * (whose text proto/symbols.h writes and parses). Prefix funcsyms_.
 */
#ifndef AGENT_FUNCSYMS_H
#define AGENT_FUNCSYMS_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/msg.h"

/*
 * Called per function symbol, with the kernel module it belongs to
 * (kallsyms' "[MODULE]" column without brackets; NULL: none, and always
 * for a program's); a nonzero return stops the walk.
 */
typedef int (*funcsyms_fn)(void *ctx, uint64_t addr, uint64_t size, const char *name,
			   const char *module);

/*
 * funcsyms_of_pid - call @fn for every function symbol (STT_FUNC or
 * STT_GNU_IFUNC, defined) of every executable file mapping of process
 * @pid: from .symtab, else .dynsym; addresses are where the mapping put
 * them (load bias applied, PIE executables and shared libraries alike),
 * and only symbols inside their mapping are reported. Files that are not
 * ELF or cannot be read are skipped.
 *
 * Return: the number of symbols reported (>= 0); -errno when /proc/@pid/maps
 * cannot be read; TC_ERR_NOT_SUPPORTED when libelf cannot start; @fn's nonzero
 * return.
 */
int funcsyms_of_pid(int pid, funcsyms_fn fn, void *ctx);

/*
 * funcsyms_of_kernel - call @fn for each text symbol (t/T/w/W) of @path
 * (NULL: /proc/kallsyms), sized as funcsyms.c says, with its module
 * (a "[MODULE]" after the name; one longer than PROTO_SYM_MAX_MODULE is
 * cut). When every address reads 0 (kptr_restrict hides them) nothing is
 * reported.
 * Return: the number reported; -errno; @fn's nonzero return.
 */
int funcsyms_of_kernel(const char *path, funcsyms_fn fn, void *ctx);

/*
 * funcsyms_send - MSG_SYMBOLS messages for group @group (0: the kernel,
 * read from /proc/kallsyms; else process @pid), each under
 * PROTO_SYM_CHUNK bytes of text, passed to @msg; kernel symbols' modules
 * only with @modules (the collector's WELCOME said sym_modules).
 *
 * Return: the number of symbols sent; the errors of funcsyms_of_pid() or
 * funcsyms_of_kernel(); -ENOMEM; @msg's negative return.
 */
int funcsyms_send(uint32_t group, int pid, bool modules,
		  int (*msg)(void *arg, const struct proto_msg *m), void *arg);

#endif
