-- Governed recovery: every decision in the audit log (not only replays),
-- each downstream delivery result and parking step per event, and durable
-- jobs.

-- What was decided (replay | archive | unarchive | discard | restore), and
-- the job that decided it, if any.
ALTER TABLE replay_audit ADD COLUMN action TEXT NOT NULL DEFAULT 'replay';
ALTER TABLE replay_audit ADD COLUMN job_id TEXT;
CREATE INDEX IF NOT EXISTS replay_audit_by_event ON replay_audit (event_id, at);
CREATE INDEX IF NOT EXISTS replay_audit_by_job ON replay_audit (job_id, at);
CREATE INDEX IF NOT EXISTS dead_letters_by_event ON dead_letters (event_id, created_at);
CREATE INDEX IF NOT EXISTS dead_letters_by_signature ON dead_letters (status, error_signature);

-- One row per step of an event's delivery: each downstream call's result,
-- each park, each drained delivery. "What happened to this webhook?"
CREATE TABLE IF NOT EXISTS event_steps (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id  TEXT NOT NULL,
  at        INTEGER NOT NULL,           -- unix ms
  step      TEXT NOT NULL,              -- core::state::EventStep
  component TEXT NOT NULL,              -- consumer | replay | drain
  code      TEXT,                       -- the failure code, if it failed
  detail    TEXT                        -- a short human-readable note
);
CREATE INDEX IF NOT EXISTS event_steps_by_event ON event_steps (event_id, at, id);

-- Bulk decisions that survive restarts. The set is fixed at creation
-- (job_entries); progress is per entry, so a step that fails halfway
-- neither repeats nor skips one.
CREATE TABLE IF NOT EXISTS jobs (
  id            TEXT PRIMARY KEY,       -- job_…
  action        TEXT NOT NULL,          -- replay | archive | discard
  status        TEXT NOT NULL,          -- core::state::JobStatus
  reason        TEXT NOT NULL,
  actor         TEXT NOT NULL,
  spec          TEXT NOT NULL,          -- JSON: filter, canary, approve, rate, concurrency, abort
  matched       INTEGER NOT NULL,
  attempted     INTEGER NOT NULL DEFAULT 0,
  succeeded     INTEGER NOT NULL DEFAULT 0,
  failed        INTEGER NOT NULL DEFAULT 0,
  deduped       INTEGER NOT NULL DEFAULT 0,
  skipped       INTEGER NOT NULL DEFAULT 0,
  canary_passed INTEGER,                -- NULL until the canary finished
  abort_reason  TEXT,
  generation    INTEGER NOT NULL DEFAULT 0, -- fences the chain of step messages
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  finished_at   INTEGER
);
CREATE INDEX IF NOT EXISTS jobs_by_time ON jobs (created_at, id);

CREATE TABLE IF NOT EXISTS job_entries (
  job_id       TEXT NOT NULL,
  entry_id     TEXT NOT NULL,
  seq          INTEGER NOT NULL,        -- canary first, then oldest first
  in_canary    INTEGER NOT NULL DEFAULT 0,
  content_hash TEXT NOT NULL,
  state        TEXT NOT NULL DEFAULT 'pending', -- pending | done
  outcome      TEXT,                    -- succeeded | failed | deduped | skipped
  PRIMARY KEY (job_id, entry_id)
);
CREATE INDEX IF NOT EXISTS job_entries_next ON job_entries (job_id, state, seq);
