/*
 * journal.h - the collector's receive journal (module-private to server/).
 *
 * Every connection appends what it receives - control messages as their
 * msgpack payloads, pages in the ingest worker's batches - to a file of
 * its own before the worker decodes and stores it. A page is acknowledged
 * to its agent once it is in the journal, so the agent can free it while
 * the worker, which decodes and indexes far more slowly than the network
 * delivers, catches up. A journal file goes away once everything in it is
 * committed to the store; what is left at start-up (a crash, kill -9) is
 * stored then, in the order it arrived, and the stored-page marks (dedup.h)
 * drop what was committed already.
 *
 * Durability is SQLite's with synchronous=NORMAL in WAL mode, which the
 * store runs: a record is written (not fsync'ed) before its pages are
 * acknowledged, so it survives the collector's death but not the machine's.
 *
 * File layout (little-endian), format 2:
 *   file header  40 bytes: "TCJRNL" 0x00 0x02, then the header's MAC
 *                (HMAC-SHA256 of those 8 bytes and the file's number, u64)
 *   record       48-byte header, then len payload bytes, zero padding to 8:
 *     0  u32  magic   0x5443_4a52 ("RJCT" in the file)
 *     4  u32  kind    enum jrec_kind
 *     8  u32  len     payload bytes, at most JOURNAL_MAX_REC
 *    12  u32  check   magic ^ kind ^ len ^ 0xffffffff
 *    16  32   mac     HMAC-SHA256 of the file's number (u64), the record's
 *                     offset in the file (u64), bytes 0-15 and the payload
 * A file may end inside a record (the collector died while writing it; its
 * pages were not acknowledged): replay stops there.
 *
 * Only files this collector wrote are replayed (issue 30: a local user
 * who could write the directory injected events). The directory must be
 * the collector's user's alone (common/safedir.h); every file is made in
 * it with O_EXCL and no symlink followed. The MACs' key, 32 random bytes,
 * is made once and kept in the directory's "lock" file (0600): files left
 * by an earlier run are ours if their MACs are. A file with a journal
 * file's name that is not ours (another owner, a symlink, writable by
 * others, a header MAC not ours, format 1 of an earlier collector, which
 * has no MAC) is never replayed: it is renamed NAME.refused, logged and
 * counted; a record whose MAC is not ours ends its file's replay, as a
 * bad header does.
 *
 * Crash quarantine. A record that kills the collector while it is decoded
 * (a FORMAT that overflows libtraceevent's stack, a page that trips a bug)
 * would be stored again at every start and kill it again: a crash loop.
 * So the worker marks each unit it decodes as in progress, in the journal
 * directory's "lock" file, and clears the mark when done. A unit is
 * one message record, or one page of a JREC_PAGES record (a batch holds up
 * to 256 KiB of pages: one bad page must not cost the others); it is named
 * by its file's number, the end of its record and the page's index in the
 * record (JOURNAL_UNIT_MSG for a message), which are the same whether the
 * record is decoded live or replayed. The mark is written into a shared
 * mapping of the file - a few stores per unit, no system call, no fsync:
 * the page cache outlives the process, which is all a crash loop needs (a
 * power loss takes the unfsync'ed journal too). At the next start a unit
 * still marked is the suspect: if the collector died of a fatal signal
 * while decoding it (journal_note_crash(), from the daemon's handler),
 * or it was the unit in progress at JOURNAL_CRASH_STRIKES deaths in a row
 * (a death no handler sees: SIGKILL, a sanitizer's exit), it is
 * quarantined when replay reaches it: copied to the "quarantine"
 * directory in the journal directory with a text file saying why, and
 * never decoded again. A kill -9 alone never quarantines anything below
 * that many strikes. The quarantine directory is also the list of units
 * to skip: a unit quarantined but not yet past the store's mark (the
 * collector died again before committing) is skipped at the next start
 * too, and file numbers stay above the ones it names.
 *
 * Threads: a jfile is appended to by the event loop only; the ingest
 * worker reads spilled records back with pread(). References are atomic.
 * The unit functions are the ingest worker's.
 */
#ifndef SERVER_JOURNAL_H
#define SERVER_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JOURNAL_FILE_HDR	40
#define JOURNAL_REC_HDR		48
#define JOURNAL_MAC_LEN		32	/* HMAC-SHA256, in both headers */
#define JOURNAL_REC_MAGIC	0x54434a52u
#define JOURNAL_MAX_REC		(8u << 20)	/* a batch of pages or one message */

enum jrec_kind {
	JREC_MSG = 1,		/* one control message: its msgpack payload */
	JREC_PAGES = 2,		/* a batch of pages as ingest.c lays it out */
	JREC_SUBJECT = 3,	/* the agent's certificate subject (first record) */
	JREC_CLOCKMAP = 4,	/* a rotated file's clock map, after its context
				 * messages (clockmap.h: clocksrc_save()) */
	JREC_PIDNAMES = 5,	/* a rotated file's task names, after its clock
				 * map (pidnames.h: pidnames_save()) */
};

struct journal;
struct jfile;

/*
 * journal_open - use directory @dir (created if missing) for journal files,
 * at most @limit bytes of them at a time (journal_full()). The files found
 * there that this collector wrote are remembered for journal_replay(); the
 * others are set aside (see above). The directory is locked until
 * journal_close().
 * Return: 0 and *@out; -EBUSY (another journal has it open); -EPERM (@dir,
 * its lock or quarantine/ is not the collector's user's alone: logged);
 * -errno (mkdir, opendir); -ENOMEM.
 */
int journal_open(const char *dir, uint64_t limit, struct journal **out);

/*
 * journal_refused - how many files and records journal_open() and replay
 * refused as not written by this collector.
 */
uint64_t journal_refused(const struct journal *j);

/* journal_close - free @j; its files stay. NULL is fine. */
void journal_close(struct journal *j);

/* journal_full - are the journal's files above its limit (stop reading)? */
bool journal_full(const struct journal *j);

/* journal_bytes - the size of the journal's files now. */
uint64_t journal_bytes(const struct journal *j);

/*
 * journal_rec_parse - check the record header at @p (@avail bytes there).
 * Return: the record's total size (header, payload, padding) with *@kind,
 * *@len; 0 when @avail ends before the record does (a cut-off tail);
 * TC_ERR_MSG_MALFORMED for a header that is not one.
 */
long journal_rec_parse(const uint8_t *p, size_t avail, uint32_t *kind, uint32_t *len);

/*
 * journal_replay - call @fn for every record of every file journal_open()
 * found, file by file in the order they were made; @fn gets the file's
 * number, so a new number means a new connection. Stops at a cut-off tail
 * or a bad header (logged) and goes on with the next file.
 * Return: 0; the first negative value @fn returned; -errno reading.
 */
int journal_replay(struct journal *j,
		   int (*fn)(void *arg, uint64_t file, uint32_t kind,
			     const uint8_t *data, size_t len),
		   void *arg);

/* journal_forget_replayed - remove the files journal_replay() went through. */
void journal_forget_replayed(struct journal *j);

/*
 * journal_adopt - the files journal_open() found, as jfiles (one reference
 * each, for jfile_replay() and then jfile_put(f, true) once stored); the
 * journal forgets them. Return: 0 with *@files (free() it) and *@n;
 * -errno opening one; -ENOMEM.
 */
int journal_adopt(struct journal *j, struct jfile ***files, size_t *n);

/*
 * jfile_replay - call @fn for every record of @f from its start, as
 * journal_replay() does for one file; @end is the offset just past the
 * record (what jfile_append() reported as *@end).
 * Return: 0; the first negative value @fn returned; -errno reading.
 */
int jfile_replay(struct jfile *f,
		 int (*fn)(void *arg, uint32_t kind, const uint8_t *data, size_t len,
			   uint64_t end),
		 void *arg);

/* journal_next_no - the number the next new file gets (all made so far are below). */
uint64_t journal_next_no(const struct journal *j);

/*
 * journal_take_removed - the numbers of files removed since the last call
 * (at most @max into @out; the rest the next time), so that their marks in
 * the store can go. Any thread. Return: how many.
 */
size_t journal_take_removed(struct journal *j, uint64_t *out, size_t max);

/* ---- crash quarantine ---- */

#define JOURNAL_UNIT_MSG	UINT32_MAX	/* the page index of a message record */
#define JOURNAL_CRASH_STRIKES	3		/* deaths in one unit with no signal seen */

/* One unit of decoding: a message record, or one page of a pages record. */
struct journal_unit {
	uint64_t file;		/* the journal file's number */
	uint64_t end;		/* the end of the record in it */
	uint32_t page;		/* the page's index in the record; JOURNAL_UNIT_MSG */
};

enum journal_verdict {
	JOURNAL_DECODE,		/* decode it: it is marked in progress */
	JOURNAL_KILLER,		/* it killed the last run: quarantine it, skip it */
	JOURNAL_QUARANTINED,	/* quarantined already: skip it */
};

/*
 * journal_unit_begin - the worker is about to decode @u. Return: the
 * verdict; for JOURNAL_DECODE, @u is marked in progress until
 * journal_unit_end().
 */
enum journal_verdict journal_unit_begin(struct journal *j, const struct journal_unit *u);

/* journal_unit_end - the unit journal_unit_begin() marked is done. */
void journal_unit_end(struct journal *j);

/*
 * journal_quarantine - keep @len bytes @data of unit @u (the message, or
 * the page) aside, with @text saying why and whose, in the quarantine
 * directory (NNN-EEE-PPP.rec and .txt); it is skipped from now on.
 * Return: 0; -errno (it is skipped in this run all the same).
 */
int journal_quarantine(struct journal *j, const struct journal_unit *u, const void *data,
		       size_t len, const char *text);

/*
 * journal_note_crash - for a fatal signal's handler: if the calling thread
 * is decoding a unit, note that the process dies of it, so the next start
 * quarantines it at once. Async-signal-safe.
 */
void journal_note_crash(void);

/* jfile_no - the file's number (its name). */
uint64_t jfile_no(const struct jfile *f);

/*
 * jfile_new - a new, empty journal file. Return: 0 and *@out; -errno.
 */
int jfile_new(struct journal *j, struct jfile **out);

/*
 * jfile_append - append one record; *@off receives where its payload
 * starts (for jfile_read()), *@end (unless NULL) where the record ends.
 * Return: 0; -errno (ENOSPC...), nothing appended; TC_ERR_TOO_LONG above
 * JOURNAL_MAX_REC.
 */
int jfile_append(struct jfile *f, uint32_t kind, const void *data, size_t len,
		 uint64_t *off, uint64_t *end);

/* jfile_read - read @len payload bytes at @off back. Return: 0; -errno; -EIO. */
int jfile_read(struct jfile *f, uint64_t off, void *buf, size_t len);

/* jfile_size - bytes in @f (event loop). */
uint64_t jfile_size(const struct jfile *f);

/* jfile_ref - one more reference to @f; returns @f. */
struct jfile *jfile_ref(struct jfile *f);

/*
 * jfile_put - drop a reference; with @remove, the file is no longer needed
 * (everything in it is committed) and goes when the last one is dropped.
 * NULL is fine.
 */
void jfile_put(struct jfile *f, bool remove);

#endif
