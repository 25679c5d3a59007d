-- 0007-not-stored.sql - what the collector received and did not store, per
-- CPU (see schema.sql); why is counted per host and reason in drops.

-- Pages it received (and acknowledged) but did not store: malformed, of a
-- connection that had failed, or quarantined (the collector died decoding
-- them). Events of stored pages it did not store: no FORMAT for their id,
-- a field outside the record, or quarantined.
ALTER TABLE cpus ADD COLUMN bad_pages INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cpus ADD COLUMN bad_events INTEGER NOT NULL DEFAULT 0;
