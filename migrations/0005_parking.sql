-- Parking while a destination's breaker is open, its drain, and the root
-- cause of circuit-open attempts.

-- For a CIRCUIT_OPEN attempt: the failure that opened the breaker.
ALTER TABLE attempts ADD COLUMN cause TEXT;

-- When the event was first parked (unix ms; kept across re-parks, so the
-- age limit counts from the first time), and the destination it waits for.
ALTER TABLE events ADD COLUMN parked_at INTEGER;
ALTER TABLE events ADD COLUMN parked_destination TEXT;
-- The oldest parked events of one destination, in arrival order.
CREATE INDEX IF NOT EXISTS events_parked ON events (parked_destination, parked_at, ingested_at)
  WHERE delivery_status = 'parked';

-- One drain per destination that has parked events. `generation` fences the
-- chain of queue messages that advances it: a message whose generation is
-- not the row's is stale and does nothing, so a lost-and-resent message
-- never doubles the rate.
CREATE TABLE IF NOT EXISTS drains (
  destination  TEXT PRIMARY KEY,
  generation   INTEGER NOT NULL,
  next_step_at INTEGER NOT NULL,   -- unix ms the next step is due
  updated_at   INTEGER NOT NULL,
  -- The failure that made the destination unwell (last breaker opening),
  -- the root cause of events parked behind the drain while it runs.
  cause        TEXT
);
