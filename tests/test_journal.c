/*
 * test_journal.c - the collector's receive journal (server/ingest/journal.c):
 * appending and reading back, replay of what an earlier instance left
 * (order, cut-off tails, garbage, foreign files), removal and the size
 * accounting behind journal_full(), and the record header parser.
 *
 * Each test works in a directory of its own under /tmp, removed after it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include <check.h>

#include "common/tc_error.h"
#include "server/ingest/journal.h"
#include "tests/testutil.h"

#define MAXREC	64

static char dir[64];
static struct journal *j;

static void setup(void)
{
	tu_tmpdir_make(dir, sizeof(dir), "journal");
	j = NULL;
}

/* Whatever a test left in its directory goes with it. */
static void teardown(void)
{
	journal_close(j);
	j = NULL;
	TU_OK(tu_tmpdir_remove(dir));
}

static uint64_t pad8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

/* Payload bytes no two records share (@seed picks which). */
static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 31 + seed * 131 + (i >> 8));
}

static void jpath(uint64_t no, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%016" PRIx64 ".tcj", dir, no);
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static bool jexists(uint64_t no)
{
	char path[PATH_MAX];

	jpath(no, path, sizeof(path));
	return exists(path);
}

static uint64_t disk_size(const char *path)
{
	struct stat st;

	TU_SYS(stat(path, &st));
	return (uint64_t)st.st_size;
}

static void write_file(const char *name, const void *data, size_t len)
{
	char path[PATH_MAX];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(data, 1, len, fp), len);
	TU_SYS(fclose(fp));
}

/* A record replay should deliver: which file, kind, and the payload's recipe. */
struct want {
	uint64_t file;
	uint32_t kind;
	size_t len;
	unsigned seed;
	uint64_t end;		/* where the record ends in its file */
};

/* Append one patterned record to @f, noting it in @w (unless NULL). */
/* A fresh journal in dir with two new files, f[0] made first (numbers in @no). */
static void two_files(struct jfile *f[2], uint64_t no[2])
{
	TU_OK(journal_open(dir, 1 << 30, &j));
	for (int i = 0; i < 2; i++) {
		TU_OK(jfile_new(j, &f[i]));
		if (no)
			no[i] = jfile_no(f[i]);
	}
}

/* Drop both files and open the journal again, as a collector's restart would. */
static void restart(struct jfile *f[2])
{
	for (int i = 0; i < 2; i++)
		jfile_put(f[i], false);
	journal_close(j);
	j = NULL;
	TU_OK(journal_open(dir, 1 << 30, &j));
}

static void append(struct jfile *f, uint32_t kind, size_t len, unsigned seed,
		   struct want *w)
{
	uint8_t *buf = malloc(len ? len : 1);
	uint64_t off, end;

	ck_assert_ptr_nonnull(buf);
	fill(buf, len, seed);
	TU_OK(jfile_append(f, kind, buf, len, &off, &end));
	free(buf);
	if (w)
		*w = (struct want){ jfile_no(f), kind, len, seed, end };
}

/* What a replay callback checks each record against. */
struct seen {
	const struct want *want;
	size_t nwant, n;
	size_t stop_at;		/* return stop_ret on this record (1-based); 0: never */
	int stop_ret;
};

static void check_rec(struct seen *s, uint64_t file, uint32_t kind,
		      const uint8_t *data, size_t len)
{
	const struct want *w;
	uint8_t *buf;

	ck_assert_uint_lt(s->n, s->nwant);
	w = &s->want[s->n++];
	ck_assert_uint_eq(file, w->file);
	ck_assert_uint_eq(kind, w->kind);
	ck_assert_uint_eq(len, w->len);
	buf = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(buf);
	fill(buf, len, w->seed);
	ck_assert_mem_eq(buf, data, len);
	free(buf);
}

static int replay_cb(void *arg, uint64_t file, uint32_t kind,
		     const uint8_t *data, size_t len)
{
	struct seen *s = arg;

	check_rec(s, file, kind, data, len);
	return s->n == s->stop_at ? s->stop_ret : 0;
}

static uint64_t replay_file;	/* jfile_replay() does not say which file */

static int jfile_cb(void *arg, uint32_t kind, const uint8_t *data, size_t len,
		    uint64_t end)
{
	struct seen *s = arg;

	check_rec(s, replay_file, kind, data, len);
	ck_assert_uint_eq(end, s->want[s->n - 1].end);
	return 0;
}

/* Replay j and expect exactly @want (@n records), returning 0. */
static void replay_expect(const struct want *want, size_t n)
{
	struct seen s = { .want = want, .nwant = n };

	TU_OK(journal_replay(j, replay_cb, &s));
	ck_assert_uint_eq(s.n, n);
}

/* Write a record header by hand, as journal.h lays it out. */
static void put_hdr(uint8_t *p, uint32_t magic, uint32_t kind, uint32_t len,
		    uint32_t check)
{
	uint32_t v[4] = { magic, kind, len, check };

	for (int i = 0; i < 4; i++)
		for (int b = 0; b < 4; b++)
			p[i * 4 + b] = (uint8_t)(v[i] >> (8 * b));
}

static void good_hdr(uint8_t *p, uint32_t kind, uint32_t len)
{
	put_hdr(p, JOURNAL_REC_MAGIC, kind, len,
		JOURNAL_REC_MAGIC ^ kind ^ len ^ 0xffffffffu);
}

START_TEST(test_append_read)
{
	static const size_t lens[] = { 0, 1, 7, 8, 9, 4096, 300000 };
	enum { N = sizeof(lens) / sizeof(lens[0]) };
	static const uint8_t fhdr[8] = { 'T', 'C', 'J', 'R', 'N', 'L', 0, 2 };
	uint8_t disk[JOURNAL_FILE_HDR + JOURNAL_REC_HDR], want_hdr[JOURNAL_REC_HDR];
	uint64_t off[N], size, bytes;
	char path[PATH_MAX];
	struct jfile *f;
	uint8_t *buf, *got;
	uint64_t end;
	int fd;

	TU_OK(journal_open(dir, 1 << 30, &j));
	ck_assert_uint_eq(journal_bytes(j), 0);
	TU_OK(jfile_new(j, &f));
	ck_assert_uint_eq(jfile_size(f), JOURNAL_FILE_HDR);
	ck_assert_uint_eq(journal_bytes(j), JOURNAL_FILE_HDR);
	bytes = JOURNAL_FILE_HDR;
	buf = malloc(300000);
	got = malloc(300000);
	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(got);
	for (size_t i = 0; i < N; i++) {
		uint32_t kind = i % 2 ? JREC_PAGES : JREC_MSG;

		size = jfile_size(f);
		fill(buf, lens[i], (unsigned)i);
		TU_OK(jfile_append(f, kind, buf, lens[i], &off[i], &end));
		ck_assert_uint_eq(off[i], size + JOURNAL_REC_HDR);
		ck_assert_uint_eq(jfile_size(f), size + JOURNAL_REC_HDR + pad8(lens[i]));
		ck_assert_uint_eq(end, jfile_size(f));
		bytes += JOURNAL_REC_HDR + pad8(lens[i]);
		ck_assert_uint_eq(journal_bytes(j), bytes);
	}
	for (size_t i = 0; i < N; i++) {
		fill(buf, lens[i], (unsigned)i);
		memset(got, 0xee, lens[i]);
		TU_OK(jfile_read(f, off[i], got, lens[i]));
		ck_assert_mem_eq(got, buf, lens[i]);
	}
	/* reading past what was written is an error, not a short read */
	TU_ERR(jfile_read(f, jfile_size(f) - 4, got, 8), -EIO);

	/* the bytes on disk are the documented layout */
	jpath(jfile_no(f), path, sizeof(path));
	ck_assert_uint_eq(disk_size(path), jfile_size(f));
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, disk, sizeof(disk)), (ssize_t)sizeof(disk));
	close(fd);
	ck_assert_mem_eq(disk, fhdr, sizeof(fhdr));
	good_hdr(want_hdr, JREC_MSG, 0);
	/* the header's first 16 bytes; its MAC is the key's (test_mac) */
	ck_assert_mem_eq(disk + JOURNAL_FILE_HDR, want_hdr, 16);
	ck_assert_mem_eq(disk + JOURNAL_FILE_HDR, "RJCT", 4);
	free(buf);
	free(got);
	jfile_put(f, true);
	ck_assert(!exists(path));
	ck_assert_uint_eq(journal_bytes(j), 0);
}
END_TEST

START_TEST(test_replay_order)
{
	struct want w[7];
	struct jfile *f[3], *g;
	uint64_t total, no[3];

	/* an earlier instance: three connections, records interleaved in time */
	TU_OK(journal_open(dir, 1 << 30, &j));
	for (int i = 0; i < 3; i++) {
		TU_OK(jfile_new(j, &f[i]));
		no[i] = jfile_no(f[i]);
		if (i)
			ck_assert_uint_gt(no[i], no[i - 1]);
	}
	/* file order is f0: w0 w1 w2, f1: w3 w4, f2: w5 w6 */
	append(f[2], JREC_MSG, 5, 50, &w[5]);
	append(f[0], JREC_SUBJECT, 12, 0, &w[0]);
	append(f[1], JREC_PAGES, 8192, 30, &w[3]);
	append(f[0], JREC_MSG, 0, 1, &w[1]);
	append(f[2], JREC_PAGES, 4096 * 3 + 40, 60, &w[6]);
	append(f[0], JREC_PAGES, 4096, 2, &w[2]);
	append(f[1], JREC_MSG, 33, 40, &w[4]);
	total = journal_bytes(j);
	for (int i = 0; i < 3; i++)
		jfile_put(f[i], false);
	journal_close(j);
	j = NULL;
	for (int i = 0; i < 3; i++)
		ck_assert(jexists(no[i]));

	TU_OK(journal_open(dir, 1 << 30, &j));
	ck_assert_uint_eq(journal_bytes(j), total);
	ck_assert_uint_gt(journal_next_no(j), no[2]);
	replay_expect(w, 7);
	/* a replay reads, it does not consume */
	replay_expect(w, 7);

	TU_OK(jfile_new(j, &g));
	ck_assert_uint_gt(jfile_no(g), no[2]);
	ck_assert_uint_eq(journal_bytes(j), total + JOURNAL_FILE_HDR);
	jfile_put(g, true);
}
END_TEST

START_TEST(test_replay_empty)
{
	struct seen s = { 0 };

	TU_OK(journal_open(dir, 1 << 30, &j));
	TU_OK(journal_replay(j, replay_cb, &s));
	ck_assert_uint_eq(s.n, 0);
	ck_assert_uint_eq(journal_bytes(j), 0);
	ck_assert(!journal_full(j));
}
END_TEST

/* journal_open() makes the directory; a path that cannot be one fails. */
START_TEST(test_open_dir)
{
	char sub[PATH_MAX], file[PATH_MAX], lockf[PATH_MAX + 8];
	struct journal *j2;
	struct stat st;

	snprintf(sub, sizeof(sub), "%s/sub", dir);
	TU_OK(journal_open(sub, 1 << 20, &j));
	TU_SYS(stat(sub, &st));
	ck_assert(S_ISDIR(st.st_mode));
	/* one journal per directory: a second open is refused while it is open */
	TU_ERR(journal_open(sub, 1 << 20, &j2), -EBUSY);
	journal_close(j);
	j = NULL;
	TU_OK(journal_open(sub, 1 << 20, &j2));	/* and taken once it is closed */
	journal_close(j2);
	snprintf(lockf, sizeof(lockf), "%s/lock", sub);
	TU_SYS(unlink(lockf));	/* all it leaves behind */
	TU_SYS(rmdir(sub));

	write_file("plain", "x", 1);
	snprintf(file, sizeof(file), "%s/plain", dir);
	j2 = (struct journal *)&st;	/* must stay untouched */
	TU_ERR(journal_open(file, 1 << 20, &j2), -ENOTDIR);
	ck_assert_ptr_eq(j2, (struct journal *)&st);
	journal_close(NULL);
}
END_TEST

START_TEST(test_replay_cut_and_garbage)
{
	struct want w[12], got[7];
	struct jfile *f[4];
	char path[PATH_MAX];
	uint8_t junk[JOURNAL_REC_HDR];
	int fd;

	TU_OK(journal_open(dir, 1 << 30, &j));
	for (int i = 0; i < 4; i++)
		TU_OK(jfile_new(j, &f[i]));
	/* f0: three records, cut inside the last one's payload */
	append(f[0], JREC_MSG, 20, 1, &w[0]);
	append(f[0], JREC_PAGES, 4096, 2, &w[1]);
	append(f[0], JREC_PAGES, 4096, 3, &w[2]);
	/* f1: three records, the second one's header overwritten */
	append(f[1], JREC_MSG, 9, 4, &w[3]);
	append(f[1], JREC_PAGES, 100, 5, &w[4]);
	append(f[1], JREC_MSG, 7, 6, &w[5]);
	/* f2: two records, cut inside the second one's header */
	append(f[2], JREC_SUBJECT, 16, 7, &w[6]);
	append(f[2], JREC_MSG, 1000, 8, &w[7]);
	/* f3: intact */
	append(f[3], JREC_MSG, 3, 9, &w[8]);
	append(f[3], JREC_PAGES, 8, 10, &w[9]);
	for (int i = 0; i < 4; i++)
		jfile_put(f[i], false);
	journal_close(j);
	j = NULL;

	jpath(w[0].file, path, sizeof(path));
	TU_SYS(truncate(path, (off_t)w[2].end - 3));

	jpath(w[3].file, path, sizeof(path));
	memset(junk, 0x5a, sizeof(junk));
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), (off_t)w[3].end),
			 (ssize_t)sizeof(junk));
	close(fd);

	jpath(w[6].file, path, sizeof(path));
	TU_SYS(truncate(path, (off_t)w[6].end + 5));

	TU_OK(journal_open(dir, 1 << 30, &j));
	got[0] = w[0];
	got[1] = w[1];
	got[2] = w[3];
	got[3] = w[6];
	got[4] = w[8];
	got[5] = w[9];
	replay_expect(got, 6);
}
END_TEST

START_TEST(test_foreign_files)
{
	static const char junk[] = "TCJRNL\0\2 not this version";
	static const char notes[] = "these are notes, not a journal\n";
	struct want w[2];
	char path[PATH_MAX];
	struct jfile *f;
	uint64_t no;

	TU_OK(journal_open(dir, 1 << 30, &j));
	TU_OK(jfile_new(j, &f));
	no = jfile_no(f);
	append(f, JREC_MSG, 10, 1, &w[0]);
	append(f, JREC_PAGES, 4096, 2, &w[1]);
	jfile_put(f, false);
	journal_close(j);
	j = NULL;

	write_file("notes.txt", notes, sizeof(notes));
	write_file("0000000000000001.tcj.tmp", notes, sizeof(notes));
	snprintf(path, sizeof(path), "%016" PRIx64 ".tcj", no + 1);
	write_file(path, junk, sizeof(junk));		/* bad file header */
	snprintf(path, sizeof(path), "%016" PRIx64 ".tcj", no + 2);
	write_file(path, "", 0);			/* empty */

	TU_OK(journal_open(dir, 1 << 30, &j));
	ck_assert_uint_gt(journal_next_no(j), no + 2);
	replay_expect(w, 2);
	journal_forget_replayed(j);
	ck_assert(!jexists(no));
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	ck_assert(exists(path));
	ck_assert_uint_eq(disk_size(path), sizeof(notes));
	snprintf(path, sizeof(path), "%s/0000000000000001.tcj.tmp", dir);
	ck_assert(exists(path));
}
END_TEST

START_TEST(test_callback_stops)
{
	struct want w[4];
	struct jfile *f[2];
	struct seen s;

	two_files(f, NULL);
	for (int i = 0; i < 2; i++) {
		append(f[i], JREC_MSG, 11, 2 * i, &w[2 * i]);
		append(f[i], JREC_PAGES, 64, 2 * i + 1, &w[2 * i + 1]);
	}
	restart(f);

	/* a negative value stops everything, the later file included */
	s = (struct seen){ .want = w, .nwant = 4, .stop_at = 2, .stop_ret = -42 };
	ck_assert_int_eq(journal_replay(j, replay_cb, &s), -42);
	ck_assert_uint_eq(s.n, 2);
	s = (struct seen){ .want = w, .nwant = 4, .stop_at = 3,
			   .stop_ret = TC_ERR_DB };
	TU_ERR(journal_replay(j, replay_cb, &s), TC_ERR_DB);
	ck_assert_uint_eq(s.n, 3);
	/* a positive one does not */
	s = (struct seen){ .want = w, .nwant = 4, .stop_at = 1, .stop_ret = 1 };
	TU_OK(journal_replay(j, replay_cb, &s));
	ck_assert_uint_eq(s.n, 4);
}
END_TEST

START_TEST(test_forget_replayed)
{
	struct want w[3];
	struct jfile *f[2], *g;
	uint64_t no[2], gone[8], before;
	size_t n;

	two_files(f, no);
	append(f[0], JREC_MSG, 100, 1, &w[0]);
	append(f[0], JREC_PAGES, 9000, 2, &w[1]);
	append(f[1], JREC_PAGES, 4096, 3, &w[2]);
	restart(f);
	ck_assert_uint_eq(journal_take_removed(j, gone, 8), 0);
	/* a file of this instance's own is not one to forget */
	TU_OK(jfile_new(j, &g));
	append(g, JREC_MSG, 24, 4, NULL);
	before = journal_bytes(j);
	ck_assert_uint_eq(before, w[1].end + w[2].end + jfile_size(g));
	replay_expect(w, 3);
	journal_forget_replayed(j);
	ck_assert(!jexists(no[0]));
	ck_assert(!jexists(no[1]));
	ck_assert(jexists(jfile_no(g)));
	ck_assert_uint_eq(journal_bytes(j), jfile_size(g));
	n = journal_take_removed(j, gone, 8);
	ck_assert_uint_eq(n, 2);
	ck_assert((gone[0] == no[0] && gone[1] == no[1]) ||
		  (gone[0] == no[1] && gone[1] == no[0]));
	ck_assert_uint_eq(journal_take_removed(j, gone, 8), 0);
	/* nothing is left to replay */
	replay_expect(w, 0);
	jfile_put(g, true);
	ck_assert_uint_eq(journal_bytes(j), 0);
}
END_TEST

START_TEST(test_put_refs)
{
	struct jfile *f, *g;
	char path[PATH_MAX];
	uint64_t no, gone[4];

	TU_OK(journal_open(dir, 1 << 30, &j));
	TU_OK(jfile_new(j, &f));
	append(f, JREC_PAGES, 4096, 1, NULL);
	no = jfile_no(f);
	ck_assert_ptr_eq(jfile_ref(f), f);
	jfile_put(f, true);		/* the other holder still reads it */
	ck_assert(jexists(no));
	ck_assert_uint_eq(journal_bytes(j), JOURNAL_FILE_HDR + JOURNAL_REC_HDR + 4096);
	ck_assert_uint_eq(journal_take_removed(j, gone, 4), 0);
	jfile_put(f, true);
	ck_assert(!jexists(no));
	ck_assert_uint_eq(journal_bytes(j), 0);
	ck_assert_uint_eq(journal_take_removed(j, gone, 4), 1);
	ck_assert_uint_eq(gone[0], no);

	/* the first holder's "no longer needed" stands when the last one lets go */
	TU_OK(jfile_new(j, &f));
	no = jfile_no(f);
	jfile_ref(f);
	jfile_put(f, true);
	ck_assert(jexists(no));
	jfile_put(f, false);
	ck_assert(!jexists(no));
	ck_assert_uint_eq(journal_bytes(j), 0);

	/* without @remove the file stays, whole */
	TU_OK(jfile_new(j, &g));
	append(g, JREC_MSG, 13, 2, NULL);
	no = jfile_no(g);
	jfile_put(g, false);
	jpath(no, path, sizeof(path));
	ck_assert(exists(path));
	ck_assert_uint_eq(disk_size(path), JOURNAL_FILE_HDR + JOURNAL_REC_HDR + 16);
	ck_assert_uint_eq(journal_take_removed(j, gone, 4), 1);	/* the second f */
	ck_assert_uint_eq(journal_take_removed(j, gone, 4), 0);
	jfile_put(NULL, true);
}
END_TEST

START_TEST(test_full)
{
	struct jfile *f;

	/* 40 + (48 + 64) = 152: at the limit is not above it */
	TU_OK(journal_open(dir, 152, &j));
	ck_assert(!journal_full(j));
	TU_OK(jfile_new(j, &f));
	ck_assert(!journal_full(j));
	append(f, JREC_PAGES, 64, 1, NULL);
	ck_assert_uint_eq(journal_bytes(j), 152);
	ck_assert(!journal_full(j));
	append(f, JREC_MSG, 0, 2, NULL);
	ck_assert_uint_eq(journal_bytes(j), 200);
	ck_assert(journal_full(j));
	jfile_put(f, false);
	journal_close(j);
	j = NULL;

	/* what an earlier instance left counts from the start */
	TU_OK(journal_open(dir, 160, &j));
	ck_assert_uint_eq(journal_bytes(j), 200);
	ck_assert(journal_full(j));
	journal_forget_replayed(j);
	ck_assert_uint_eq(journal_bytes(j), 0);
	ck_assert(!journal_full(j));
}
END_TEST

START_TEST(test_too_long)
{
	uint8_t *buf = malloc(JOURNAL_MAX_REC + 1);
	struct want w;
	struct jfile *f;
	char path[PATH_MAX];
	uint64_t size, bytes, off = 77, end = 99;

	ck_assert_ptr_nonnull(buf);
	memset(buf, 0xa5, JOURNAL_MAX_REC + 1);
	TU_OK(journal_open(dir, 1ull << 40, &j));
	TU_OK(jfile_new(j, &f));
	append(f, JREC_MSG, 5, 1, NULL);
	size = jfile_size(f);
	bytes = journal_bytes(j);
	TU_ERR(jfile_append(f, JREC_PAGES, buf, JOURNAL_MAX_REC + 1, &off, &end), TC_ERR_TOO_LONG);
	ck_assert_uint_eq(off, 77);
	ck_assert_uint_eq(end, 99);
	ck_assert_uint_eq(jfile_size(f), size);
	ck_assert_uint_eq(journal_bytes(j), bytes);
	jpath(jfile_no(f), path, sizeof(path));
	ck_assert_uint_eq(disk_size(path), size);
	free(buf);

	/* exactly the largest record goes in, and replays */
	append(f, JREC_PAGES, JOURNAL_MAX_REC, 2, &w);
	ck_assert_uint_eq(jfile_size(f), size + JOURNAL_REC_HDR + JOURNAL_MAX_REC);
	jfile_put(f, false);
	journal_close(j);
	j = NULL;
	TU_OK(journal_open(dir, 1ull << 40, &j));
	{
		struct want both[2] = { { w.file, JREC_MSG, 5, 1, 0 }, w };

		replay_expect(both, 2);
	}
}
END_TEST

/* journal_adopt() hands the old files over; jfile_replay() reports ends. */
START_TEST(test_adopt_jfile_replay)
{
	struct want w[3];
	struct jfile *f[2], **v;
	struct seen s;
	uint64_t no[2];
	size_t n;

	two_files(f, no);
	append(f[1], JREC_PAGES, 4096, 3, &w[2]);
	append(f[0], JREC_SUBJECT, 20, 1, &w[0]);
	append(f[0], JREC_MSG, 3, 2, &w[1]);
	restart(f);
	TU_OK(journal_adopt(j, &v, &n));
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(jfile_no(v[0]), no[0]);
	ck_assert_uint_eq(jfile_no(v[1]), no[1]);
	ck_assert_uint_eq(jfile_size(v[0]), w[1].end);
	ck_assert_uint_eq(jfile_size(v[1]), w[2].end);
	replay_expect(w, 0);		/* the journal forgot them */

	s = (struct seen){ .want = w, .nwant = 2 };
	replay_file = no[0];
	TU_OK(jfile_replay(v[0], jfile_cb, &s));
	ck_assert_uint_eq(s.n, 2);
	s = (struct seen){ .want = w + 2, .nwant = 1 };
	replay_file = no[1];
	TU_OK(jfile_replay(v[1], jfile_cb, &s));
	ck_assert_uint_eq(s.n, 1);

	jfile_put(v[0], true);
	jfile_put(v[1], true);
	free(v);
	ck_assert(!jexists(no[0]));
	ck_assert(!jexists(no[1]));
	ck_assert_uint_eq(journal_bytes(j), 0);
}
END_TEST

/*
 * Only the names the journal gives its files (%016x.tcj, lower-case hex)
 * are journal files: one that strtoull() also reads as a number, but that
 * names no file the journal would open, must not make replay or adoption
 * (and so the collector's start) fail.
 */
START_TEST(test_odd_names)
{
	static const char *const odd[] = {
		"000000000000000A.tcj", " 00000000000000b.tcj",
		"+00000000000000c.tcj", "0x0000000000000d.tcj",
		"-000000000000001.tcj",		/* UINT64_MAX: the next number would wrap */
	};
	struct want w[1];
	struct jfile *f, **v;
	char from[PATH_MAX], to[PATH_MAX];
	size_t n;

	TU_OK(journal_open(dir, 1 << 30, &j));
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		TU_OK(jfile_new(j, &f));
		append(f, JREC_MSG, 4, 9, NULL);
		jpath(jfile_no(f), from, sizeof(from));
		snprintf(to, sizeof(to), "%s/%s", dir, odd[i]);
		TU_SYS(rename(from, to));
		jfile_put(f, false);
	}
	TU_OK(jfile_new(j, &f));
	append(f, JREC_PAGES, 40, 1, &w[0]);
	jfile_put(f, false);
	journal_close(j);
	j = NULL;

	TU_OK(journal_open(dir, 1 << 30, &j));
	ck_assert_uint_gt(journal_next_no(j), w[0].file);
	replay_expect(w, 1);
	TU_OK(journal_adopt(j, &v, &n));
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(jfile_no(v[0]), w[0].file);
	jfile_put(v[0], false);
	free(v);
}
END_TEST

START_TEST(test_rec_parse)
{
	enum { H = JOURNAL_REC_HDR };
	uint8_t buf[JOURNAL_REC_HDR + 16];
	uint32_t kind = 0xdead, len = 0xbeef;

	memset(buf, 0, sizeof(buf));
	good_hdr(buf, JREC_PAGES, 9);
	ck_assert_int_eq(journal_rec_parse(buf, H + 16, &kind, &len), H + 16);
	ck_assert_uint_eq(kind, JREC_PAGES);
	ck_assert_uint_eq(len, 9);
	ck_assert_int_eq(journal_rec_parse(buf, 1000, &kind, &len), H + 16);

	/* cut off: in the header, in the payload, in the padding */
	kind = len = 0xdead;
	TU_EQ(journal_rec_parse(buf, 0, &kind, &len), 0);
	TU_EQ(journal_rec_parse(buf, 15, &kind, &len), 0);
	TU_EQ(journal_rec_parse(buf, 16, &kind, &len), 0);
	TU_EQ(journal_rec_parse(buf, H - 1, &kind, &len), 0);
	TU_EQ(journal_rec_parse(buf, H, &kind, &len), 0);
	TU_EQ(journal_rec_parse(buf, H + 8, &kind, &len), 0);
	TU_EQ(journal_rec_parse(buf, H + 15, &kind, &len), 0);
	good_hdr(buf, JREC_PAGES, JOURNAL_MAX_REC);
	TU_EQ(journal_rec_parse(buf, H + 16, &kind, &len), 0);
	ck_assert_uint_eq(kind, 0xdead);
	ck_assert_uint_eq(len, 0xdead);

	/* every kind there is, and an empty payload */
	good_hdr(buf, JREC_MSG, 0);
	ck_assert_int_eq(journal_rec_parse(buf, H, &kind, &len), H);
	ck_assert_uint_eq(kind, JREC_MSG);
	ck_assert_uint_eq(len, 0);
	good_hdr(buf, JREC_SUBJECT, 8);
	ck_assert_int_eq(journal_rec_parse(buf, H + 8, &kind, &len), H + 8);
	ck_assert_uint_eq(kind, JREC_SUBJECT);
	good_hdr(buf, JREC_CLOCKMAP, 8);	/* a rotated file's clock map */
	ck_assert_int_eq(journal_rec_parse(buf, H + 8, &kind, &len), H + 8);
	ck_assert_uint_eq(kind, JREC_CLOCKMAP);
	good_hdr(buf, JREC_PIDNAMES, 8);	/* a rotated file's task names */
	ck_assert_int_eq(journal_rec_parse(buf, H + 8, &kind, &len), H + 8);
	ck_assert_uint_eq(kind, JREC_PIDNAMES);

	/* not a header */
	kind = len = 0xdead;
	put_hdr(buf, JOURNAL_REC_MAGIC ^ 1, JREC_MSG, 0, JOURNAL_REC_MAGIC ^ 1 ^ JREC_MSG ^ 0xffffffffu);
	TU_ERR(journal_rec_parse(buf, H + 16, &kind, &len), TC_ERR_MSG_MALFORMED);
	put_hdr(buf, JOURNAL_REC_MAGIC, JREC_MSG, 0, JOURNAL_REC_MAGIC ^ JREC_MSG ^ 0xffffffffu ^ 0x100);
	TU_ERR(journal_rec_parse(buf, H + 16, &kind, &len), TC_ERR_MSG_MALFORMED);
	good_hdr(buf, 0, 0);
	TU_ERR(journal_rec_parse(buf, H + 16, &kind, &len), TC_ERR_MSG_MALFORMED);
	good_hdr(buf, JREC_PIDNAMES + 1, 0);
	TU_ERR(journal_rec_parse(buf, H + 16, &kind, &len), TC_ERR_MSG_MALFORMED);
	good_hdr(buf, JREC_PAGES, JOURNAL_MAX_REC + 1);
	TU_ERR(journal_rec_parse(buf, H + 16, &kind, &len), TC_ERR_MSG_MALFORMED);
	good_hdr(buf, JREC_PAGES, 0xffffffffu);
	TU_ERR(journal_rec_parse(buf, H + 16, &kind, &len), TC_ERR_MSG_MALFORMED);
	memset(buf, 0, sizeof(buf));
	TU_ERR(journal_rec_parse(buf, H + 16, &kind, &len), TC_ERR_MSG_MALFORMED);
	ck_assert_uint_eq(kind, 0xdead);
	ck_assert_uint_eq(len, 0xdead);
}
END_TEST

/* Close and open the journal again, as a new run of the collector does. */
static void reopen(void)
{
	journal_close(j);
	TU_OK(journal_open(dir, 1 << 20, &j));
}

/*
 * Crash quarantine (journal.h): a unit left in progress by a fatal signal
 * is a killer at the next start; one left by deaths no handler sees is
 * decoded again until JOURNAL_CRASH_STRIKES deaths in a row; a unit ended
 * cleanly is never suspect; a quarantined one is skipped from then on, in
 * later runs too, and file numbers stay above the ones it names.
 */
START_TEST(test_unit_quarantine)
{
	const struct journal_unit u = { 7, 4096, 3 }, v = { 7, 4096, 4 };
	const struct journal_unit w = { 50, 800, JOURNAL_UNIT_MSG };
	struct jfile *f;
	char path[PATH_MAX + 64];

	TU_OK(journal_open(dir, 1 << 20, &j));
	/* ended cleanly: nothing suspect */
	ck_assert_int_eq(journal_unit_begin(j, &u), JOURNAL_DECODE);
	journal_unit_end(j);
	reopen();
	ck_assert_int_eq(journal_unit_begin(j, &u), JOURNAL_DECODE);
	/* deaths with no signal seen: decoded again, up to the strikes */
	for (int death = 1; death < JOURNAL_CRASH_STRIKES; death++) {
		reopen();
		ck_assert_int_eq(journal_unit_begin(j, &v), JOURNAL_DECODE);	/* another */
		journal_unit_end(j);
		ck_assert_int_eq(journal_unit_begin(j, &u), JOURNAL_DECODE);
	}
	reopen();
	ck_assert_int_eq(journal_unit_begin(j, &v), JOURNAL_DECODE);
	journal_unit_end(j);
	ck_assert_int_eq(journal_unit_begin(j, &u), JOURNAL_KILLER);
	/* a fatal signal while decoding: a killer at once */
	reopen();
	ck_assert_int_eq(journal_unit_begin(j, &w), JOURNAL_DECODE);
	journal_note_crash();
	reopen();
	ck_assert_int_eq(journal_unit_begin(j, &u), JOURNAL_DECODE);	/* forgotten */
	journal_unit_end(j);
	ck_assert_int_eq(journal_unit_begin(j, &w), JOURNAL_KILLER);
	TU_OK(journal_quarantine(j, &w, "FORMAT", 6, "why\n"));
	ck_assert_int_eq(journal_unit_begin(j, &w), JOURNAL_QUARANTINED);
	snprintf(path, sizeof(path), "%s/quarantine/%016x-%016x-%08x.rec", dir, 50, 800,
		 JOURNAL_UNIT_MSG);
	ck_assert_uint_eq(disk_size(path), 6);
	reopen();
	ck_assert_int_eq(journal_unit_begin(j, &w), JOURNAL_QUARANTINED);
	ck_assert_int_eq(journal_unit_begin(j, &u), JOURNAL_DECODE);
	journal_unit_end(j);
	TU_OK(jfile_new(j, &f));
	ck_assert_uint_gt(jfile_no(f), w.file);
	jfile_put(f, true);
}
END_TEST

/*
 * Files only we write (issue 30). A journal file this journal did not
 * write - another journal's (another key), format 1 (no MAC), one of
 * another user's - is not replayed but set aside as NAME.refused and
 * counted; the files that are ours still replay.
 */
START_TEST(test_not_ours)
{
	static const uint8_t v1[8 + 16 + 8] = { 'T', 'C', 'J', 'R', 'N', 'L', 0, 1 };
	char other[PATH_MAX], from[PATH_MAX + 32], to[PATH_MAX + 32], name[32];
	struct journal *k;
	struct want w[1];
	struct jfile *f;
	uint64_t no;

	/* another journal's file, named as one of ours would be */
	snprintf(other, sizeof(other), "%s/other", dir);
	TU_OK(journal_open(other, 1 << 30, &k));
	TU_OK(jfile_new(k, &f));
	append(f, JREC_MSG, 10, 1, NULL);
	no = jfile_no(f);
	jfile_put(f, false);
	journal_close(k);

	TU_OK(journal_open(dir, 1 << 30, &j));
	TU_OK(jfile_new(j, &f));
	append(f, JREC_PAGES, 64, 2, &w[0]);
	jfile_put(f, false);
	journal_close(j);
	j = NULL;
	snprintf(from, sizeof(from), "%s/%016" PRIx64 ".tcj", other, no);
	jpath(no + 10, to, sizeof(to));
	TU_SYS(rename(from, to));
	/* format 1: no MAC, a record that would have replayed */
	snprintf(name, sizeof(name), "%016" PRIx64 ".tcj", no + 11);
	{
		uint8_t b[sizeof(v1)];

		memcpy(b, v1, sizeof(b));
		good_hdr(b + 8, JREC_MSG, 8);
		write_file(name, b, sizeof(b));
	}
	/* format 2's header, but a MAC of nothing: forged */
	{
		uint8_t b[JOURNAL_FILE_HDR] = { 'T', 'C', 'J', 'R', 'N', 'L', 0, 2 };

		snprintf(name, sizeof(name), "%016" PRIx64 ".tcj", no + 12);
		write_file(name, b, sizeof(b));
	}

	TU_OK(journal_open(dir, 1 << 30, &j));
	ck_assert_uint_eq(journal_refused(j), 3);
	replay_expect(w, 1);
	for (uint64_t i = 10; i <= 12; i++) {
		ck_assert(!jexists(no + i));
		snprintf(to, sizeof(to), "%s/%016" PRIx64 ".tcj.refused", dir, no + i);
		ck_assert(exists(to));
	}
	ck_assert_uint_gt(journal_next_no(j), no + 12);	/* numbers stay above them */
	ck_assert_uint_eq(journal_bytes(j), w[0].end);	/* and they do not count */
	journal_close(j);
	j = NULL;
	/* set aside once: not looked at again */
	TU_OK(journal_open(dir, 1 << 30, &j));
	ck_assert_uint_eq(journal_refused(j), 0);
	replay_expect(w, 1);
}
END_TEST

/* A record changed after it was written ends its file's replay. */
START_TEST(test_record_changed)
{
	struct want w[3];
	struct jfile *f;
	char path[PATH_MAX];
	uint8_t b;
	int fd;

	TU_OK(journal_open(dir, 1 << 30, &j));
	TU_OK(jfile_new(j, &f));
	append(f, JREC_MSG, 10, 1, &w[0]);
	append(f, JREC_PAGES, 4096, 2, &w[1]);
	append(f, JREC_MSG, 20, 3, &w[2]);
	jfile_put(f, false);
	journal_close(j);
	j = NULL;

	/* one payload byte of the second record */
	jpath(w[0].file, path, sizeof(path));
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &b, 1, (off_t)w[0].end + JOURNAL_REC_HDR + 100), 1);
	b ^= 1;
	ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)w[0].end + JOURNAL_REC_HDR + 100), 1);
	close(fd);

	TU_OK(journal_open(dir, 1 << 30, &j));
	ck_assert_uint_eq(journal_refused(j), 0);	/* the file's header is ours */
	replay_expect(w, 1);
	ck_assert_uint_eq(journal_refused(j), 1);
}
END_TEST

/*
 * A directory, lock or quarantine/ someone else may write is refused;
 * and nothing in quarantine/ is written through a symlink.
 */
START_TEST(test_unsafe_dirs)
{
	const struct journal_unit u = { 5, 900, JOURNAL_UNIT_MSG };
	char sub[PATH_MAX], q[PATH_MAX + 16], p[PATH_MAX + 80], target[PATH_MAX];
	struct journal *k = NULL;
	FILE *fp;

	snprintf(sub, sizeof(sub), "%s/j", dir);
	TU_SYS(mkdir(sub, 0700));
	TU_SYS(chmod(sub, 0777));
	TU_ERR(journal_open(sub, 1 << 20, &k), -EPERM);
	TU_SYS(chmod(sub, 0770));
	TU_ERR(journal_open(sub, 1 << 20, &k), -EPERM);
	TU_SYS(chmod(sub, 0750));		/* --group's: readable, fine */
	TU_OK(journal_open(sub, 1 << 20, &k));
	journal_close(k);

	/* the lock holds the key: this user's only */
	snprintf(p, sizeof(p), "%s/lock", sub);
	TU_SYS(chmod(p, 0640));
	TU_ERR(journal_open(sub, 1 << 20, &k), -EPERM);
	TU_SYS(chmod(p, 0600));

	snprintf(q, sizeof(q), "%s/quarantine", sub);
	TU_SYS(mkdir(q, 0700));
	TU_SYS(chmod(q, 0777));
	TU_ERR(journal_open(sub, 1 << 20, &k), -EPERM);
	TU_SYS(rmdir(q));
	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	TU_SYS(mkdir(target, 0700));
	TU_SYS(symlink(target, q));
	TU_ERR(journal_open(sub, 1 << 20, &k), -EPERM);
	TU_SYS(unlink(q));

	/* an entry's name planted as a symlink: replaced, not followed */
	TU_SYS(mkdir(q, 0700));
	snprintf(target, sizeof(target), "%s/precious", dir);
	fp = fopen(target, "w");
	ck_assert_ptr_nonnull(fp);
	fputs("precious\n", fp);
	fclose(fp);
	snprintf(p, sizeof(p), "%s/%016x-%016x-%08x.rec", q, 5, 900, JOURNAL_UNIT_MSG);
	TU_SYS(symlink(target, p));
	TU_OK(journal_open(sub, 1 << 20, &j));
	TU_OK(journal_quarantine(j, &u, "FORMAT", 6, "why\n"));
	ck_assert_uint_eq(disk_size(target), 9);
	{
		struct stat st;

		TU_SYS(lstat(p, &st));
		ck_assert(S_ISREG(st.st_mode));
		ck_assert_uint_eq(st.st_size, 6);
		ck_assert_uint_eq(st.st_mode & 077, 0);
	}
}
END_TEST

/* A file of another user's, or writable by others, is not ours. */
START_TEST(test_not_our_owner)
{
	struct want w[1];
	struct jfile *f;
	char path[PATH_MAX];

	if (geteuid() != 0)
		return;		/* chown needs root */
	TU_OK(journal_open(dir, 1 << 30, &j));
	for (int i = 0; i < 3; i++) {
		TU_OK(jfile_new(j, &f));
		append(f, JREC_MSG, 10, (unsigned)i, &w[0]);
		jfile_put(f, false);
	}
	journal_close(j);
	j = NULL;
	jpath(w[0].file - 2, path, sizeof(path));
	TU_SYS(chown(path, 65534, (gid_t)-1));
	jpath(w[0].file - 1, path, sizeof(path));
	TU_SYS(chmod(path, 0666));
	TU_OK(journal_open(dir, 1 << 30, &j));
	ck_assert_uint_eq(journal_refused(j), 2);
	replay_expect(w, 1);
}
END_TEST

static Suite *journal_suite(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("journal");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tu_add_tests(tc, TU_TESTS(test_append_read, test_replay_order, test_replay_empty,
					test_open_dir, test_replay_cut_and_garbage,
					test_foreign_files, test_callback_stops, test_forget_replayed,
					test_put_refs, test_full, test_too_long,
					test_adopt_jfile_replay, test_odd_names, test_rec_parse,
					test_unit_quarantine, test_not_ours, test_record_changed,
					test_unsafe_dirs, test_not_our_owner));
	suite_add_tcase(s, tc);
	return s;
}

TU_MAIN(journal_suite())
