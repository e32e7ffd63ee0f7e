-- Every replay attempt: who, when, why, and what happened.
CREATE TABLE IF NOT EXISTS replay_audit (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  entry_id      TEXT NOT NULL,
  event_id      TEXT,
  actor         TEXT NOT NULL,            -- the admin token's `sub`
  reason        TEXT NOT NULL,
  outcome       TEXT NOT NULL,            -- succeeded | failed | poisoned | deduped
  error_code    TEXT,
  error_message TEXT,
  run_id        TEXT,                     -- groups the entries of one replay-all call
  at            INTEGER NOT NULL          -- unix ms
);
CREATE INDEX IF NOT EXISTS replay_audit_by_entry ON replay_audit (entry_id, at);
CREATE INDEX IF NOT EXISTS replay_audit_by_time ON replay_audit (at, id);

-- Newest-first listing and keyset pagination over all entries.
CREATE INDEX IF NOT EXISTS dead_letters_by_time ON dead_letters (created_at, id);
CREATE INDEX IF NOT EXISTS events_by_ingest ON events (ingested_at, event_id);
