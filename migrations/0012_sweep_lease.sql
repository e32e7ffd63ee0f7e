-- One sweep step at a time (issue 24): two steps that overlapped (two
-- maintenance runs at once, the cron beside a continuation message) read
-- candidates a few ms apart, so their chunks could start at the same row
-- and end at different ones: the rows between were archived under two
-- keys, and the second step's journal overwrote the first's. A step now
-- holds this lease (unix ms it expires) from its first read of
-- sweep_state until it records its result; a step that finds it held
-- answers busy and does nothing. The expiry frees it after a crashed step
-- (core::retention::continuation::SWEEP_LEASE_MS).
ALTER TABLE sweep_state ADD COLUMN lease_until INTEGER;
