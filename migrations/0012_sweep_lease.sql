-- The maintenance lease (core::retention::lease): while a sweep step (and
-- the watchdog after it) runs, `lease_until` holds when its lease expires
-- (unix ms); NULL when free. A run takes it with a compare-and-set on this
-- column, so a cron, a maintenance run and a continuation message that
-- start together run one at a time.
ALTER TABLE sweep_state ADD COLUMN lease_until INTEGER;
