-- 0010-retain-lease.sql - retention with several collectors on one database
-- (issue 35; server/store/clickhouse_lease.c, clickhouse_retain.c).
--
-- retain_lease: who may run retention. A collector claims term T+1 when
-- term T's latest expiry has passed (the server's clock, seconds), by an
-- INSERT whose expires is now() + the lease, then reads term T+1 back: it
-- holds the lease iff its claim (its nonce) is the only one there. Of two
-- claims of one term at least one reads the other back, so at most one
-- collector holds a term. The holder renews by inserting rows of its term
-- with later expiries. Rows are never updated; a lost claim only delays
-- the next term until its own expiry.
CREATE TABLE IF NOT EXISTS retain_lease (
	term		UInt64,
	nonce		UInt64,
	collector	String,
	slot		UInt32,
	expires		Int64,
	ts		Int64
) {{ENGINE retain_lease MergeTree()}} ORDER BY (term, nonce);
-- retain_rounds: retention's rounds from this migration on (retain_cuts
-- holds the older ones). A round counts the event rows with ts < cut of
-- the commits that completed when it counted: per collector number k
-- (--collector-id, the commit id modulo 64) those with _tc_commit <=
-- uptos[k + 1], since a collector's commits complete in its own order. The
-- round number orders rounds across collectors (commit ids do not: each
-- collector numbers its own); only the lease holder writes one. Counted:
-- a round whose commit did not complete is deleted with its counts.
CREATE TABLE IF NOT EXISTS retain_rounds (
	round		UInt64,
	cut		Int64,
	uptos		Array(UInt64),
	collector	String,
	_tc_commit	UInt64
) {{ENGINE retain_rounds MergeTree()}} ORDER BY round;
