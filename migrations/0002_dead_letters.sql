-- One row per dead letter. The full envelope is kept as JSON; the columns
-- beside it exist for filtering, dedupe and capacity.
CREATE TABLE IF NOT EXISTS dead_letters (
  id               TEXT PRIMARY KEY,           -- dlq_…, derived from the original queue message id
  kind             TEXT NOT NULL,              -- poison_handoff | retries_exhausted
  status           TEXT NOT NULL DEFAULT 'pending', -- pending | replayed | poisoned
  event_id         TEXT,
  idempotency_key  TEXT,
  source           TEXT,
  queue_message_id TEXT NOT NULL,
  error_code       TEXT NOT NULL,
  error_class      TEXT NOT NULL,
  error_signature  TEXT NOT NULL,
  attempts         INTEGER NOT NULL,
  content_hash     TEXT NOT NULL,
  created_at       INTEGER NOT NULL,           -- unix ms, dead-lettered time
  last_seen_at     INTEGER NOT NULL,
  seen_count       INTEGER NOT NULL DEFAULT 1,
  replay_attempts  INTEGER NOT NULL DEFAULT 0,
  replayed_at      INTEGER,
  envelope         TEXT NOT NULL               -- the whole envelope, JSON
);
CREATE INDEX IF NOT EXISTS dead_letters_by_status_time ON dead_letters (status, created_at);
CREATE INDEX IF NOT EXISTS dead_letters_by_hash ON dead_letters (content_hash, status);
CREATE INDEX IF NOT EXISTS dead_letters_by_code ON dead_letters (error_code, created_at);

-- What capacity eviction removed: enough to prove it happened and to match
-- a later report against it.
CREATE TABLE IF NOT EXISTS dead_letter_tombstones (
  id           TEXT PRIMARY KEY,
  content_hash TEXT NOT NULL,
  event_id     TEXT,
  source       TEXT,
  error_code   TEXT NOT NULL,
  evicted_at   INTEGER NOT NULL
);

-- Monotonic counters (enqueue, ingest, duplicate, retry by code, …), read
-- by the stats endpoint and mirrored to Analytics Engine.
CREATE TABLE IF NOT EXISTS counters (
  name  TEXT PRIMARY KEY,
  value INTEGER NOT NULL DEFAULT 0
);
