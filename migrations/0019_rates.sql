-- A destination's rate_per_s shared by every isolate and path that calls
-- it (the consumer, replays, jobs, the drain): one row per rated
-- destination, holding the earliest time its next call may start. A caller
-- reserves its starts by moving `next_at` on in one atomic statement
-- (platform/src/db/rates.rs; the rule is core/src/rate_slots.rs).
CREATE TABLE IF NOT EXISTS rates (
  destination TEXT PRIMARY KEY,
  next_at     INTEGER NOT NULL,   -- unix ms: the next free start
  first_at    INTEGER NOT NULL    -- unix ms: the first start of the last grant
);
