-- Ingested events: one row per idempotency key, whatever the number of deliveries.
CREATE TABLE IF NOT EXISTS events (
  idempotency_key  TEXT PRIMARY KEY,
  event_id         TEXT NOT NULL UNIQUE,
  source           TEXT NOT NULL,
  delivery_id      TEXT,
  received_at      INTEGER NOT NULL,           -- unix ms, when the relay accepted it
  ingested_at      INTEGER NOT NULL,           -- unix ms, first successful ingest
  last_seen_at     INTEGER NOT NULL,           -- unix ms, latest delivery of any copy
  duplicate_count  INTEGER NOT NULL DEFAULT 0, -- deliveries after the first
  queue_message_id TEXT,
  headers          TEXT NOT NULL,              -- JSON, credentials redacted
  body             TEXT,                       -- raw body, NULL when claim-checked
  body_ref         TEXT,                       -- payloads.event_id when claim-checked
  body_bytes       INTEGER NOT NULL,
  delivery_status  TEXT NOT NULL DEFAULT 'none', -- none | pending | delivered | failed
  delivery_attempts INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS events_by_source_time ON events (source, ingested_at);
CREATE INDEX IF NOT EXISTS events_by_time ON events (ingested_at);

-- Claim check: bodies too large for a queue message, written before enqueue.
CREATE TABLE IF NOT EXISTS payloads (
  event_id   TEXT PRIMARY KEY,
  source     TEXT NOT NULL,
  body       TEXT NOT NULL,
  body_bytes INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);

-- Every failed consumer attempt. Cloudflare's DLQ carries no reason, so the
-- DLQ worker builds its envelope from these rows.
CREATE TABLE IF NOT EXISTS attempts (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id         TEXT,                       -- NULL when the message could not be decoded
  queue_message_id TEXT NOT NULL,
  attempt          INTEGER NOT NULL,
  class            TEXT NOT NULL,
  code             TEXT NOT NULL,
  message          TEXT NOT NULL,
  at               INTEGER NOT NULL            -- unix ms
);
CREATE INDEX IF NOT EXISTS attempts_by_event ON attempts (event_id, at);
CREATE INDEX IF NOT EXISTS attempts_by_message ON attempts (queue_message_id, at);
