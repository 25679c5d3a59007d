/*
 * test_tracedat.c - traceq's trace.dat reader (traceq/tracedat.c) on the
 * three smallest files of the documented layouts (tests/fuzz/corpus/
 * tracedat: v6, v7 uncompressed, v7 zstd; trace-cmd report reads them):
 * their metadata and pages are read as written; every truncation of them
 * and a flipped byte in their pages or metadata are refused with a reason
 * naming the file offset, never read past or crashed on.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tc_error.h"
#include "tests/testutil.h"
#include "traceq/tracedat.h"

static const char *const seeds[] = { "v6.dat", "v7none.dat", "v7zstd.dat" };

/* The seed @name, whole, into *@len bytes (malloc'ed). */
static uint8_t *seed(const char *name, size_t *len)
{
	const char *top = getenv("top_srcdir");
	char path[1024];
	uint8_t *buf = malloc(1 << 20);
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/tracedat/%s", top ? top : ".", name);
	f = fopen(path, "rb");
	ck_assert_msg(f && buf, "%s: cannot open", path);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

/*
 * Open @len bytes of @buf and read every page: 0 and the page count, or
 * the first error, its reason in @err.
 */
static int read_all(const uint8_t *buf, size_t len, size_t *pages, char *err, size_t errlen)
{
	FILE *f = fmemopen((void *)buf, len ? len : 1, "r");
	struct tracedat *td = NULL;
	const uint8_t *page;
	uint32_t cpu;
	size_t plen;
	int ret;

	ck_assert_ptr_nonnull(f);
	ret = len ? tracedat_open(f, "t.dat", &td, err, errlen) : TC_ERR_MSG_MALFORMED;
	*pages = 0;
	while (ret == 0 && (ret = tracedat_next_page(td, &cpu, &page, &plen, err, errlen)) > 0) {
		ck_assert_uint_le(plen, tracedat_info(td)->page_size);
		(*pages)++;
		ret = 0;
	}
	tracedat_close(td);
	fclose(f);
	return ret;
}

START_TEST(test_seeds_read)
{
	size_t len;
	uint8_t *buf = seed(seeds[_i], &len);
	FILE *f = fmemopen(buf, len, "r");
	const struct tracedat_info *in;
	struct tracedat *td;
	const uint8_t *page;
	char err[512];
	uint32_t cpu;
	size_t plen, n = 0;

	TU_OK(tracedat_open(f, seeds[_i], &td, err, sizeof(err)));
	in = tracedat_info(td);
	ck_assert_uint_eq(in->version, _i == 0 ? 6 : 7);
	ck_assert_str_eq(in->compression, _i == 2 ? "zstd" : "none");
	ck_assert_uint_eq(in->page_size, 4096);
	ck_assert_uint_eq(in->ncpus, 1);
	ck_assert_str_eq(in->clock, "mono");
	ck_assert_uint_eq(in->nformats, 1);
	ck_assert_str_eq(in->formats[0].system, "sched");
	ck_assert_str_eq(in->formats[0].name, "sched_wakeup");
	ck_assert_str_eq(in->cmdlines, "1 sh\n7 sh\n");
	ck_assert_ptr_nonnull(strstr(in->kallsyms, "_stext"));
	ck_assert_ptr_nonnull(strstr(in->printk, "hello"));
	ck_assert_ptr_nonnull(strstr(in->header_page, "commit"));
	while (tracedat_next_page(td, &cpu, &page, &plen, err, sizeof(err)) > 0) {
		ck_assert_uint_eq(cpu, 0);
		ck_assert_uint_eq(plen, 4096);
		ck_assert_uint_eq(page[0], n ? 0xd0 : 0xe8);	/* timestamps 1000, 2000 */
		n++;
	}
	ck_assert_uint_eq(n, 2);
	tracedat_close(td);
	fclose(f);
	free(buf);
}
END_TEST

/* Every truncation of a seed: refused with an offset, or (past the metadata) fewer pages. */
START_TEST(test_truncated_refused)
{
	size_t len, pages;
	uint8_t *buf = seed(seeds[_i], &len);
	char err[512];

	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		int ret;

		memcpy(copy, buf, cut);
		err[0] = 0;
		ret = read_all(copy, cut, &pages, err, sizeof(err));
		ck_assert_msg(ret < 0 || pages < 2, "%s cut at %zu: read whole", seeds[_i], cut);
		if (ret < 0 && cut)
			ck_assert_msg(strstr(err, "offset") || strstr(err, "version"),
				      "%s cut at %zu: '%s' names no offset", seeds[_i], cut, err);
		free(copy);
	}
	free(buf);
}
END_TEST

/* A flipped byte anywhere: never a crash or an overread (ASan, valgrind). */
START_TEST(test_flipped_bytes)
{
	size_t len, pages;
	uint8_t *buf = seed(seeds[_i], &len);
	char err[512];

	for (size_t at = 0; at < len; at += 7) {
		buf[at] ^= 0xff;
		read_all(buf, len, &pages, err, sizeof(err));
		ck_assert_uint_le(pages, 3);
		buf[at] ^= 0xff;
	}
	free(buf);
}
END_TEST

/* zstd: a corrupt chunk of pages is refused naming its offset. */
START_TEST(test_corrupt_chunk_refused)
{
	size_t len, pages;
	uint8_t *buf = seed("v7zstd.dat", &len);
	char err[512];

	/* the pages' chunk is the file's last bytes but the options section */
	buf[len - 200] ^= 0xff;
	ck_assert_int_lt(read_all(buf, len, &pages, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "offset"), "'%s'", err);
	free(buf);
}
END_TEST

START_TEST(test_not_a_tracedat)
{
	static const uint8_t junk[] = "not a trace.dat file at all";
	static const uint8_t v5[] = "\x17\x08\x44tracing5\0";
	size_t pages;
	char err[512];

	TU_ERR(read_all(junk, sizeof(junk), &pages, err, sizeof(err)), TC_ERR_MSG_MALFORMED);
	ck_assert_ptr_nonnull(strstr(err, "not a trace.dat"));
	TU_ERR(read_all(v5, sizeof(v5), &pages, err, sizeof(err)), TC_ERR_NOT_SUPPORTED);
	ck_assert_ptr_nonnull(strstr(err, "only 6 and 7"));
}
END_TEST

static Suite *tracedat_suite(void)
{
	Suite *s = suite_create("tracedat");
	TCase *tc = tcase_create("read");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_seeds_read, 0, 3);
	tcase_add_loop_test(tc, test_truncated_refused, 0, 3);
	tcase_add_loop_test(tc, test_flipped_bytes, 0, 3);
	tu_add_tests(tc, TU_TESTS(test_corrupt_chunk_refused, test_not_a_tracedat));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(tracedat_suite())
