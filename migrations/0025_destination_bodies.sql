-- When each queue destination's large body in R2 (`destination-bodies/…`,
-- one object per event) was last sent, so the object is kept for the hold
-- after its LAST send (a retry, a drain after days parked, a replay weeks
-- later), not after its event's ingest: its message may wait that long on
-- the user's queue (core/src/deliver/queue_destination.rs). Written before
-- each put, at the latest send; read and deleted by the maintenance run
-- once the hold has passed (platform/src/db/destination_bodies.rs). A new
-- table: the previous release neither reads nor writes it, and keeps
-- deleting the objects it knows of with their events, as before.
CREATE TABLE IF NOT EXISTS destination_bodies (
  event_id TEXT PRIMARY KEY,
  sent_at  INTEGER NOT NULL   -- unix ms of the body's latest send
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS destination_bodies_by_time ON destination_bodies (sent_at);
