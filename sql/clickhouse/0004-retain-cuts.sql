-- 0004-retain-cuts.sql - retention's rounds (server/store/clickhouse_retain.c).
-- A round counts the event rows with ts < cut and _tc_commit <= upto (as
-- drops, reason 'retention', and as bytes freed per host) and writes this
-- row, in the same commit; only after that commit completed are exactly
-- those rows removed (DROP PARTITION for whole days, ALTER TABLE DELETE
-- for the rest), as often as it takes. A round whose commit did not
-- complete is deleted with its counts (a counted table, clickhouse_txn.c).
CREATE TABLE IF NOT EXISTS retain_cuts (
	cut		Int64,
	upto		UInt64,
	_tc_commit	UInt64
) {{ENGINE retain_cuts MergeTree()}} ORDER BY _tc_commit;
