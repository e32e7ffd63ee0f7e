-- The watchdog's own lease and its owed-alerts read (issue 30).
--
-- `watch_lease_until` (unix ms, NULL when free) is the watchdog's lease
-- (core::retention::lease::Lease::Watchdog), taken with a compare-and-set
-- like the sweep's `lease_until`: two watchdogs never run at once (so they
-- never open two episodes of one alarm), and neither waits for a sweep.
ALTER TABLE sweep_state ADD COLUMN watch_lease_until INTEGER;

-- The resolved episodes whose `resolved` alert is not acknowledged yet,
-- oldest first (platform/src/db/alarms.rs::owed_resolved): read by index,
-- however many delivered episodes the alarm history holds.
CREATE INDEX IF NOT EXISTS alarms_owed ON alarms (since, id)
  WHERE state = 'resolved' AND sent_state IS NOT 'resolved';
