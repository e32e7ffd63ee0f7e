-- Issue 30: a story that outlives its event's row, and a restored entry's
-- place in the eviction order.

-- The archive key of the `events/…` object that holds the entry's event,
-- once the retention sweep deleted the event's row (set in the delete's own
-- batch, for the entries of each event it deleted). The story answers it
-- in place of the event (DESIGN §4). NULL while the event is in D1.
ALTER TABLE dead_letters ADD COLUMN event_archive_key TEXT;

-- When a restore brought the entry back (unix ms), NULL otherwise. Capacity
-- eviction takes the oldest pending entry by COALESCE(restored_at,
-- created_at) (platform::db::dead_letters::EVICTION_ORDER), so a restored
-- entry is not the next one evicted; `created_at` keeps the time it was
-- dead-lettered (its archive key's day, and the envelope's timing).
ALTER TABLE dead_letters ADD COLUMN restored_at INTEGER;
CREATE INDEX IF NOT EXISTS dead_letters_by_eviction
  ON dead_letters (status, COALESCE(restored_at, created_at), id);
