-- Issue 43: a replay makes a dead-lettered pull delivery pullable again with
-- a fresh budget (DESIGN §3 "Pull destinations"). Its next dead letter must
-- be an entry of its own, not the one it was replayed from, so the relay's
-- hand-off of a revived delivery names when it was revived
-- (`hookrelay_core::retry::poison_handoff::delivery_handoff_id`).
-- Expand-only: one nullable column the previous release never names.
--
-- revived_at  when a replay last made the delivery pullable again (unix ms);
--             NULL for a delivery never revived, and for every destination
--             but a pull destination's.
ALTER TABLE deliveries ADD COLUMN revived_at INTEGER;

-- The periodic check's read of waiting pull deliveries past PARK_MAX_AGE
-- (or with their budget spent) uses deliveries_pull_due (0026): by
-- destination, oldest due first.
