-- The events the retention sweep deleted, for one EVENT_RETENTION after
-- the sweep: the story of a swept event answers 200 with its archive key
-- even when none of its dead letters is in D1 to name it (DESIGN §4). One
-- small row per swept event (its id and the events/… key), written in the
-- delete's own batch and dropped by the sweep once older than
-- EVENT_RETENTION (platform/src/db/swept_events.rs).
CREATE TABLE IF NOT EXISTS swept_events (
  event_id    TEXT PRIMARY KEY,
  archive_key TEXT NOT NULL,
  swept_at    INTEGER NOT NULL   -- unix ms
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS swept_events_by_time ON swept_events (swept_at);
