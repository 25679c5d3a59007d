-- 0015-clock-points.sql - the collector's measurements of each host's
-- trace clock (issue 36; see schema.sql, "Clock measurement").

-- One row per measurement (a burst of clock probes, its best round trip):
-- at trace time trace_ns (the host's trace clock, ns) the collector's
-- realtime was realtime_ns, within +- uncertainty_ns. drift_ppb is the
-- offset's change per second of trace time between the last two
-- measurements (ppb), disagree_ns the host's own realtime then less the
-- measured one (> 0: the host's clock is ahead; NULL before its first
-- sample), measured 1 when the host's events were placed by the
-- measurement from then on (the disagreement was past the uncertainty
-- plus clock-tolerance), 0 when by the host's own clock.
CREATE TABLE clock_points (
	id		INTEGER PRIMARY KEY,
	host_id		INTEGER NOT NULL REFERENCES hosts(id),
	boot_id		TEXT NOT NULL,
	trace_ns	INTEGER NOT NULL,
	realtime_ns	INTEGER NOT NULL,
	uncertainty_ns	INTEGER NOT NULL,
	drift_ppb	INTEGER NOT NULL,
	disagree_ns	INTEGER,
	measured	INTEGER NOT NULL
);
-- a measurement is one row however often it is stored (a journal replay)
CREATE UNIQUE INDEX clock_points_at ON clock_points (host_id, boot_id, trace_ns);

-- The latest of them on the host's row, for traceq --hosts.
ALTER TABLE hosts ADD COLUMN clock_measured_ns INTEGER;	-- realtime_ns - trace_ns
ALTER TABLE hosts ADD COLUMN clock_uncertainty_ns INTEGER;
ALTER TABLE hosts ADD COLUMN clock_drift_ppb INTEGER;
ALTER TABLE hosts ADD COLUMN clock_disagree_ns INTEGER;
ALTER TABLE hosts ADD COLUMN clock_source TEXT;	-- 'host' or 'measured'
