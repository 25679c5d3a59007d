/*
 * funcsyms.c - collect function symbol tables for the collector (see
 * funcsyms.h; the text they travel in is proto/symbols.h's).
 *
 * A program's addresses: each executable mapping of a file in
 * /proc/PID/maps maps file offset OFF at address START. The ELF program
 * header with PT_LOAD whose file range holds OFF says which virtual
 * address (p_vaddr) the linker gave that offset (p_offset), so the load
 * bias is START - OFF - (p_vaddr - p_offset): 0 for a fixed executable,
 * the random base for PIE executables and shared libraries. A symbol's
 * run-time address is its st_value plus the bias.
 */
#include "config.h"

#define LOG_PREFIX "funcsyms"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/funcsyms.h"
#include "common/log.h"
#include "common/tc_error.h"
#include "proto/symbols.h"

/* One executable file mapping from /proc/PID/maps. */
struct funcsyms_map {
	uint64_t start, end, off;
	char path[PATH_MAX];
};

/* What one ELF file's walk needs. */
struct funcsyms_walk {
	const struct funcsyms_map *map;
	uint64_t bias;
	funcsyms_fn fn;
	void *ctx;
	int count;
};

/* Parse one maps line; 1 for an executable file mapping, else 0. */
static int parse_maps_line(const char *line, struct funcsyms_map *m)
{
	char perms[8];
	int path_at = 0;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*u %n",
		   &m->start, &m->end, perms, &m->off, &path_at) != 4 || !path_at)
		return 0;
	if (perms[2] != 'x' || line[path_at] != '/')
		return 0;
	snprintf(m->path, sizeof(m->path), "%s", line + path_at);
	m->path[strcspn(m->path, "\n")] = '\0';
	return 1;
}

/* The load bias of @m in @e. Return: 0, or -1 when no PT_LOAD holds m->off. */
static int load_bias(Elf *e, const struct funcsyms_map *m, uint64_t *bias)
{
	size_t n, i;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		/* the mapping starts at the page holding p_offset */
		if (m->off <= ph.p_offset + ph.p_filesz &&
		    ph.p_offset < m->off + (m->end - m->start)) {
			*bias = m->start - m->off - (ph.p_vaddr - ph.p_offset);
			if (ph.p_flags & PF_X)
				return 0;
		}
	}
	return -1;
}

static int walk_symtab(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct funcsyms_walk *w)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	uint64_t lo = w->map->start - w->bias, hi = w->map->end - w->bias;
	GElf_Sym sym;
	const char *name;
	int ret;

	for (i = 0; data && i < n; i++) {
		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
		    (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
		     GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC) ||
		    sym.st_value < lo || sym.st_value >= hi)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		ret = w->fn(w->ctx, sym.st_value + w->bias, sym.st_size, name, NULL);
		if (ret)
			return ret;
		w->count++;
	}
	return 0;
}

/* .symtab if the file has one, else .dynsym. */
static Elf_Scn *find_symtab(Elf *e, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL, *dyn = NULL;
	GElf_Shdr sh, dynsh;

	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			*out = sh;
			return scn;
		}
		if (sh.sh_type == SHT_DYNSYM && !dyn) {
			dyn = scn;
			dynsh = sh;
		}
	}
	if (dyn)
		*out = dynsh;
	return dyn;
}

/* The symbols of one mapping's file; unreadable files count as none. */
static int map_symbols(int pid, const struct funcsyms_map *m, struct funcsyms_walk *w)
{
	char alt[96];
	Elf *e = NULL;
	Elf_Scn *scn;
	GElf_Shdr sh;
	int fd, ret = 0;

	fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {	/* deleted or in another mount namespace */
		snprintf(alt, sizeof(alt), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
			 pid, m->start, m->end);
		fd = open(alt, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		goto out;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || load_bias(e, m, &w->bias) < 0)
		goto out;
	scn = find_symtab(e, &sh);
	w->map = m;
	if (scn)
		ret = walk_symtab(e, scn, &sh, w);
out:
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return ret;
}

int funcsyms_of_pid(int pid, funcsyms_fn fn, void *ctx)
{
	struct funcsyms_walk w = { .fn = fn, .ctx = ctx };
	struct funcsyms_map *m = NULL;
	char path[64], line[PATH_MAX + 128];
	FILE *f;
	int ret = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return TC_ERR_NOT_SUPPORTED;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	m = malloc(sizeof(*m));
	if (!m)
		ret = -ENOMEM;
	while (ret == 0 && fgets(line, sizeof(line), f))
		if (parse_maps_line(line, m))
			ret = map_symbols(pid, m, &w);
	free(m);
	fclose(f);
	return ret ? ret : w.count;
}

/*
 * kallsyms has no sizes: each text symbol is given the distance to the
 * next one when that lies above it (the kernel's own lines and each
 * module's come in address order), else none. The collector stores a
 * large table over several messages; a sized symbol never names an
 * address past its end, so a table read half stored leaves such an
 * address unnamed instead of naming it after the last symbol stored so
 * far ("vcpu_get_pid+0x231991" for tracing_mark_write).
 */
int funcsyms_of_kernel(const char *path, funcsyms_fn fn, void *ctx)
{
	char line[640], name[2][PROTO_SYM_MAX_NAME + 1], mod[2][PROTO_SYM_MAX_MODULE + 1];
	uint64_t addr, prev = 0;
	int ret = 0, count = 0, cur = 0;
	bool nonzero = false, held = false;
	FILE *f = fopen(path ? path : "/proc/kallsyms", "re");

	if (!f)
		return -errno;
	while (ret == 0 && fgets(line, sizeof(line), f)) {
		if (!proto_sym_kallsyms_line(line, &addr, name[cur], mod[cur]))
			continue;
		nonzero |= addr != 0;
		if (!nonzero)
			continue;
		if (held)	/* the one before, sized by this one */
			ret = fn(ctx, prev, addr > prev ? addr - prev : 0, name[!cur],
				 mod[!cur][0] ? mod[!cur] : NULL);
		held = true;
		prev = addr;
		cur = !cur;
		count++;
	}
	if (ret == 0 && held)
		ret = fn(ctx, prev, 0, name[!cur], mod[!cur][0] ? mod[!cur] : NULL);
	fclose(f);
	return ret ? ret : count;
}

/* Collects lines and sends a message whenever the next would not fit. */
struct funcsyms_out {
	struct proto_buf text;
	uint32_t group;
	bool modules;			/* the collector takes them */
	int (*msg)(void *arg, const struct proto_msg *m);
	void *arg;
};

static int out_flush(struct funcsyms_out *o)
{
	struct proto_msg m = { .type = MSG_SYMBOLS };
	int ret;

	if (!o->text.len)
		return 0;
	m.symbols = (struct proto_symbols){ o->group, (char *)o->text.data, o->text.len };
	ret = o->msg(o->arg, &m);
	o->text.len = 0;
	return ret < 0 ? ret : 0;
}

static int out_add(void *ctx, uint64_t addr, uint64_t size, const char *name,
		   const char *module)
{
	struct funcsyms_out *o = ctx;
	int ret = 0;

	if (o->text.len + 64 + PROTO_SYM_MAX_NAME + 1 + PROTO_SYM_MAX_MODULE > PROTO_SYM_CHUNK)
		ret = out_flush(o);
	if (ret == 0)
		ret = proto_sym_append(&o->text, addr, size, name, o->modules ? module : NULL);
	return ret;
}

int funcsyms_send(uint32_t group, int pid, bool modules,
		  int (*msg)(void *arg, const struct proto_msg *m), void *arg)
{
	struct funcsyms_out o = { .group = group, .modules = modules, .msg = msg, .arg = arg };
	int n, ret;

	proto_buf_init(&o.text);
	n = group ? funcsyms_of_pid(pid, out_add, &o) : funcsyms_of_kernel(NULL, out_add, &o);
	ret = n < 0 ? n : out_flush(&o);
	proto_buf_free(&o.text);
	return ret < 0 ? ret : n;
}
