-- Issue 43: pull destinations (DESIGN §3 "Pull destinations", §4 "Pulling").
-- A pull destination's deliveries wait `pending`, due at `due_at`, until a
-- consumer pulls them; a pull leases them (`delivering`, `claimed_at`,
-- `lease_until`) under a fresh `lease_id`, which the consumer's ack names.
-- Expand-only: one nullable column the previous release never names, and
-- one partial index.
--
-- lease_id   the lease a pull last handed the delivery out under: an ack of
--            another lease changes nothing (`lease_expired`). NULL for a
--            delivery that was never pulled, and for every other
--            destination's.
ALTER TABLE deliveries ADD COLUMN lease_id TEXT;

-- A pull's one read: a destination's pending deliveries, oldest due first.
CREATE INDEX IF NOT EXISTS deliveries_pull_due
  ON deliveries (destination, due_at) WHERE state = 'pending' AND handed_off_at IS NULL;
