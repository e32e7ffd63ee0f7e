-- The rate each reservation of a destination's budget was made at (its
-- DESTINATIONS rate_per_s), so the stats and the console show each
-- destination's rate (DESIGN §4, §6) though the DLQ worker does not hold
-- DESTINATIONS. Nullable: the previous release's reservations leave it
-- as it was.
ALTER TABLE rates ADD COLUMN rate_per_s REAL;
