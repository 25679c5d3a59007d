/*
 * fuzz_tracedat_write.c - libFuzzer target for traceq's trace.dat writer
 * (traceq/tracedat_write.c) on what it takes from peers: an event format
 * (the agent's text the collector relays; render.c parses it after
 * common/format_check.h), the rows' values and "_sym" names, the header
 * page's text. Input: FORMAT '\0' HEADER_PAGE '\0' VALUES. Each field of
 * the format's "field:" lines becomes a column; the values fill the rows
 * 8 bytes a cell (a string for char and __data_loc fields), with a
 * "ip_sym" column from the bytes too, and a loss between them. Whatever
 * the bytes: no crash, no out-of-bounds access, and a file the writer
 * says it wrote with rows in it opens in traceq's own reader
 * (tracedat.c), v7 and v6, every page of it valid (abort otherwise). The
 * last byte's low bit makes the host big-endian: the file in its order.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/page.h"
#include "common/tc_error.h"
#include "proto/msg.h"
#include "traceq/export.h"
#include "traceq/tracedat.h"

#define FZ_MAX_COLS	64
#define FZ_MAX_ROWS	64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The field names of @fmt's "field:" lines, after the meta columns, into @cols. */
static uint32_t fz_cols(const char *fmt, char **cols, bool *is_str)
{
	static const char *const meta[] = { "host", "cpu", "ts", "trace_ts", "pid", "comm" };
	uint32_t n = 0;

	for (; n < QMSG_META_COLS; n++)
		cols[n] = strdup(meta[n]);
	for (const char *p = fmt; (p = strstr(p, "field:")) && n < FZ_MAX_COLS - 1; p++) {
		const char *semi = strchr(p, ';'), *name = semi;

		if (!semi)
			break;
		while (name > p && name[-1] != ' ' && name[-1] != '\t')
			name--;
		is_str[n] = memmem(p, (size_t)(semi - p), "char", 4) ||
			    memmem(p, (size_t)(semi - p), "__data_loc", 10);
		cols[n] = strndup(name, strcspn(name, "[;"));
		n++;
	}
	cols[n] = strdup("ip_sym");
	is_str[n++] = true;
	return n;
}

/* Row @i's values from @v (@len bytes, read cyclically). */
static void fz_row(struct qmsg_value *vals, uint32_t ncols, const bool *is_str, uint32_t i,
		   const uint8_t *v, size_t len, char (*strs)[24])
{
	for (uint32_t c = 0; c < ncols; c++) {
		uint64_t x = 0;

		for (size_t k = 0; len && k < 8; k++)
			x |= (uint64_t)v[(i * ncols * 8 + c * 8 + k) % len] << (8 * k);
		if (c == 0) {
			vals[c] = (struct qmsg_value){ .kind = QV_STR, .s = { (char *)"fz", 2 } };
		} else if (is_str[c] || c == 5) {
			snprintf(strs[c], sizeof(strs[c]), "f%llx+0x%x", (unsigned long long)x,
				 (unsigned)(x & 0xff));
			vals[c] = (struct qmsg_value){ .kind = QV_STR,
				.s = { strs[c], strlen(strs[c]) } };
		} else if (c == 1) {
			/* a kernel CPU, or a program's stream (its own instance) */
			vals[c] = (struct qmsg_value){ .kind = QV_UINT,
				.u = (x & 0x100) ? PROTO_USER_STREAM_BASE + x % 4 : x % 8 };
		} else if (c == 2 || c == 3) {
			vals[c] = (struct qmsg_value){ .kind = QV_INT, .i = (int64_t)(x >> 20) + i };
		} else {
			vals[c] = (struct qmsg_value){ .kind = QV_UINT, .u = x };
		}
	}
}

/*
 * Read @path back with traceq's reader: it must open, every page valid;
 * with @two (rows of kernel CPUs and of program streams: two instances
 * hold data) it may refuse, as it refuses to import such a file.
 */
static void fz_check(const char *path, bool two)
{
	FILE *f = fopen(path, "r");
	struct tracedat *td = NULL;
	const uint8_t *page;
	char err[512];
	uint32_t cpu;
	size_t len;

	if (!f)
		abort();
	int ret = tracedat_open(f, path, &td, err, sizeof(err));

	if (ret == TC_ERR_NOT_SUPPORTED && two) {
		fclose(f);
		return;
	}
	if (ret != 0) {
		fprintf(stderr, "fuzz_tracedat_write: our own file refused: %s\n", err);
		abort();
	}
	while (tracedat_next_page(td, &cpu, &page, &len, err, sizeof(err)) > 0) {
		struct page_layout l = { .page_size = tracedat_info(td)->page_size,
					 .long_size = tracedat_info(td)->long_size,
					 .big_endian = tracedat_info(td)->big_endian };
		struct page_info pi;

		if (len != l.page_size || page_check(&l, page, len, &pi) != 0)
			abort();
	}
	tracedat_close(td);
	fclose(f);
}

static void fz_export(unsigned version, bool big_endian, const char *fmt, const char *hp,
		      const uint8_t *v, size_t len, const char *path)
{
	char err[EXPORT_ERR_LEN] = "", *cols[FZ_MAX_COLS];
	bool is_str[FZ_MAX_COLS] = { false };
	struct export_opts o = { .path = path, .nhosts = 1, .tracedat_version = version,
				 .err = err };
	struct export_host h = { .name = "fz", .kernel = "", .page_size = 4096,
				 .clock = "local", .header_page = hp, .header_event = "",
				 .printk = "", .big_endian = big_endian };
	const struct export_writer_ops *ops = &export_tracedat_ops;
	uint32_t ncols = fz_cols(fmt, cols, is_str);
	struct qmsg_reply view = { .event = (char *)"fz:ev", .ncols = ncols, .cols = cols,
				   .format = (char *)fmt };
	struct qmsg_value vals[FZ_MAX_COLS];
	char strs[FZ_MAX_COLS][24];
	struct export_writer *w = NULL;
	struct export_stats st = { 0 };
	bool kernel = false, program = false;
	int ret = ops->open(&o, &w);

	if (ret == 0)
		ret = ops->host_begin(w, &h);
	for (uint32_t i = 0; ret == 0 && i < FZ_MAX_ROWS && i * 16 < len + 16; i++) {
		struct export_row r = { .host = "fz", .view = &view, .vals = vals };

		fz_row(vals, ncols, is_str, i, v, len, strs);
		r.cpu = (uint32_t)vals[1].u;
		r.program = r.cpu >= PROTO_USER_STREAM_BASE;
		kernel |= !r.program;
		program |= r.program;
		r.ts = vals[2].i;
		r.trace_ts = vals[3].i;
		r.pid = (int32_t)vals[4].u;
		r.comm = vals[5].s.p;
		if (i == 3) {
			struct export_loss l = { .host = "fz", .cpu = r.cpu, .count = vals[4].u,
						 .row_cpu = r.cpu, .program = r.program };

			ret = ops->loss(w, &l);
		}
		if (ret == 0)
			ret = ops->row(w, &r);
	}
	if (ret == 0)
		ret = ops->host_end(w);
	if (w)
		ops->close(w, ret == 0, &st);
	for (uint32_t c = 0; c < ncols; c++)
		free(cols[c]);
	if (ret == 0 && st.rows)	/* traceq's reader refuses a recording without data */
		fz_check(path, kernel && program);
	unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	char *buf = malloc(size + 2);
	const char *fmt, *hp;
	size_t n;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = buf[size + 1] = 0;
	fmt = buf;
	n = strlen(fmt);
	hp = n < size ? buf + n + 1 : "";
	n = n < size ? n + 1 + strlen(hp) + 1 : size;
	snprintf(path, sizeof(path), "/tmp/fuzz_tdw.%d.dat", (int)getpid());
	for (unsigned v = 6; v <= 7; v++)
		fz_export(v, size && (data[size - 1] & 1), fmt, hp, data + (n < size ? n : size),
			  n < size ? size - n : 0, path);
	free(buf);
	return 0;
}
