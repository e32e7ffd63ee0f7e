-- Downstream delivery state per event, and the shared circuit breakers.

-- The queue message that last carried the event: a retry of the same message
-- is not a duplicate delivery, a different message with the same key is.
ALTER TABLE events ADD COLUMN last_message_id TEXT;
ALTER TABLE events ADD COLUMN delivered_at INTEGER;          -- unix ms of the successful downstream call
ALTER TABLE events ADD COLUMN delivery_claimed_at INTEGER;   -- lease while a call is in flight
ALTER TABLE events ADD COLUMN last_delivery_error TEXT;      -- stable code of the last failed call

-- One breaker per destination URL, shared by every isolate. Transitions are
-- written with compare-and-set on `version`.
CREATE TABLE IF NOT EXISTS breakers (
  destination TEXT PRIMARY KEY,
  state_name  TEXT NOT NULL,           -- CLOSED | OPEN | HALF_OPEN
  state       TEXT NOT NULL,           -- JSON of hookrelay_core::breaker::BreakerState
  version     INTEGER NOT NULL DEFAULT 0,
  updated_at  INTEGER NOT NULL
);
