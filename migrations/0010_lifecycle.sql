-- The data lifecycle and alarms (issue 24, DESIGN §5): when a dead letter
-- was resolved, why an entry left D1 and where its archived copy is, how
-- long a breaker has not been CLOSED, the alarm episodes, the sweep's own
-- state, and the rows per table kept by the database (never a COUNT(*)
-- per stats call).
--
-- State names below are the stored names of core::state enums
-- (EntryStatus, TombstoneCause, AlarmState) and of the breaker's state_name.

-- When an entry left `pending` (unix ms): DLQ_RETENTION counts from it.
-- Set by the database on every status change, so every path that resolves
-- an entry (the single routes, jobs, replay, replay-all) is covered by one
-- rule; it is the one time the database's clock is used, because no
-- statement that changes a status carries a time for it. A restore writes
-- it explicitly (core::retention::restore::restored_row).
ALTER TABLE dead_letters ADD COLUMN resolved_at INTEGER;
UPDATE dead_letters SET resolved_at = COALESCE(replayed_at, last_seen_at) WHERE status <> 'pending';
CREATE INDEX IF NOT EXISTS dead_letters_by_resolved ON dead_letters (resolved_at, id)
  WHERE resolved_at IS NOT NULL;
CREATE TRIGGER IF NOT EXISTS dead_letters_stamp_resolved AFTER UPDATE OF status ON dead_letters
WHEN NEW.status IS NOT OLD.status AND NEW.resolved_at IS OLD.resolved_at
BEGIN
  UPDATE dead_letters
     SET resolved_at = CASE WHEN NEW.status = 'pending' THEN NULL
                            ELSE CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) END
   WHERE id = NEW.id;
END;

-- Why an entry left D1 (core::state::TombstoneCause: evicted | swept), the
-- status a swept entry had (it restores with it), and the R2 key of its
-- archived envelope (core::retention::archive_key). `evicted_at` is when it
-- left D1, whichever the cause. Older tombstones have no archive key and
-- cannot be restored (409 NOT_ARCHIVED).
ALTER TABLE dead_letter_tombstones ADD COLUMN cause TEXT NOT NULL DEFAULT 'evicted';
ALTER TABLE dead_letter_tombstones ADD COLUMN prior_status TEXT;
ALTER TABLE dead_letter_tombstones ADD COLUMN archive_key TEXT;
CREATE INDEX IF NOT EXISTS tombstones_by_time ON dead_letter_tombstones (evicted_at, id);

-- When the breaker last left CLOSED (unix ms, from the transition's own
-- updated_at), NULL while CLOSED. OPEN -> HALF_OPEN -> OPEN keeps it, unlike
-- the state's opened_at, so `breaker_open` measures time since CLOSED.
ALTER TABLE breakers ADD COLUMN left_closed_at INTEGER;
UPDATE breakers SET left_closed_at = updated_at WHERE state_name <> 'CLOSED';
CREATE TRIGGER IF NOT EXISTS breakers_leave_closed AFTER UPDATE OF state_name ON breakers
WHEN OLD.state_name = 'CLOSED' AND NEW.state_name <> 'CLOSED'
BEGIN
  UPDATE breakers SET left_closed_at = NEW.updated_at WHERE destination = NEW.destination;
END;
CREATE TRIGGER IF NOT EXISTS breakers_return_closed AFTER UPDATE OF state_name ON breakers
WHEN NEW.state_name = 'CLOSED' AND OLD.state_name <> 'CLOSED'
BEGIN
  UPDATE breakers SET left_closed_at = NULL WHERE destination = NEW.destination;
END;
CREATE TRIGGER IF NOT EXISTS breakers_born_open AFTER INSERT ON breakers
WHEN NEW.state_name <> 'CLOSED'
BEGIN
  UPDATE breakers SET left_closed_at = NEW.updated_at WHERE destination = NEW.destination;
END;

-- Index for the sweep's other tables, read oldest first by their age column.
CREATE INDEX IF NOT EXISTS attempts_by_time ON attempts (at, id);
CREATE INDEX IF NOT EXISTS payloads_by_time ON payloads (created_at, event_id);
CREATE INDEX IF NOT EXISTS jobs_by_finished ON jobs (finished_at, id) WHERE finished_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS drains_by_time ON drains (updated_at, destination);

-- One row per alarm episode (core::alarms::machine::AlarmRecord): a
-- condition that ends and starts again is a new episode with a new `since`.
-- The dlq_cannot_store alarm is NOT here: its state is an R2 object
-- (core::alarms::cannot_store), because D1 is what fails.
CREATE TABLE IF NOT EXISTS alarms (
  id              TEXT NOT NULL,            -- {kind}:{subject}
  since           INTEGER NOT NULL,         -- unix ms the condition started
  kind            TEXT NOT NULL,            -- core::state::AlarmKind
  subject         TEXT NOT NULL,            -- destination, source, dlq or d1
  state           TEXT NOT NULL,            -- core::state::AlarmState
  resolved_at     INTEGER,
  detail          TEXT NOT NULL,            -- JSON object: what to act on
  clear_runs      INTEGER NOT NULL DEFAULT 0,
  sent_state      TEXT,                     -- the last state the receiver acknowledged
  attempts        INTEGER NOT NULL DEFAULT 0,
  last_attempt_at INTEGER,
  last_error      TEXT,
  updated_at      INTEGER NOT NULL,
  PRIMARY KEY (id, since)
);
CREATE INDEX IF NOT EXISTS alarms_by_state ON alarms (state, since);
CREATE INDEX IF NOT EXISTS alarms_by_resolved ON alarms (resolved_at, id) WHERE resolved_at IS NOT NULL;

-- The sweep's own state: one row. `journal` holds the chunk being moved
-- (JSON of core::retention::plan::Chunk) from before its R2 put until the
-- batch that deletes its rows clears it, so a crash in between is redone
-- under the same keys. `generation` fences the chain of continuation
-- messages, like drains and jobs. `size_swept_through` is the newest
-- ingested_at the size rule swept (the effective dedupe window);
-- `watch_started_at` is when the watchdog first ran (a source that never
-- sent anything is silent from then).
CREATE TABLE IF NOT EXISTS sweep_state (
  id                 INTEGER PRIMARY KEY CHECK (id = 1),
  journal            TEXT,
  generation         INTEGER NOT NULL DEFAULT 0,
  size_bytes         INTEGER,
  size_swept_through INTEGER,
  watch_started_at   INTEGER,
  last_run_at        INTEGER,
  last_result        TEXT,                  -- JSON: the maintenance/run answer
  last_error         TEXT,
  archive_objects    INTEGER NOT NULL DEFAULT 0,
  archive_rows       INTEGER NOT NULL DEFAULT 0
);
INSERT OR IGNORE INTO sweep_state (id) VALUES (1);

-- Rows per table, kept by the database in the writing transaction, read
-- by the stats in the one `counters` query they already make. Each count
-- starts from the table as it is when this migration runs.
CREATE TRIGGER IF NOT EXISTS rows_events_insert AFTER INSERT ON events
BEGIN
  INSERT INTO counters (name, value) VALUES ('rows:events', 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;
CREATE TRIGGER IF NOT EXISTS rows_events_delete AFTER DELETE ON events
BEGIN
  UPDATE counters SET value = value - 1 WHERE name = 'rows:events';
END;
INSERT INTO counters (name, value) SELECT 'rows:events', COUNT(*) FROM events WHERE true
  ON CONFLICT(name) DO UPDATE SET value = excluded.value;

CREATE TRIGGER IF NOT EXISTS rows_attempts_insert AFTER INSERT ON attempts
BEGIN
  INSERT INTO counters (name, value) VALUES ('rows:attempts', 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;
CREATE TRIGGER IF NOT EXISTS rows_attempts_delete AFTER DELETE ON attempts
BEGIN
  UPDATE counters SET value = value - 1 WHERE name = 'rows:attempts';
END;
INSERT INTO counters (name, value) SELECT 'rows:attempts', COUNT(*) FROM attempts WHERE true
  ON CONFLICT(name) DO UPDATE SET value = excluded.value;

CREATE TRIGGER IF NOT EXISTS rows_payloads_insert AFTER INSERT ON payloads
BEGIN
  INSERT INTO counters (name, value) VALUES ('rows:payloads', 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;
CREATE TRIGGER IF NOT EXISTS rows_payloads_delete AFTER DELETE ON payloads
BEGIN
  UPDATE counters SET value = value - 1 WHERE name = 'rows:payloads';
END;
INSERT INTO counters (name, value) SELECT 'rows:payloads', COUNT(*) FROM payloads WHERE true
  ON CONFLICT(name) DO UPDATE SET value = excluded.value;

CREATE TRIGGER IF NOT EXISTS rows_event_steps_insert AFTER INSERT ON event_steps
BEGIN
  INSERT INTO counters (name, value) VALUES ('rows:event_steps', 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;
CREATE TRIGGER IF NOT EXISTS rows_event_steps_delete AFTER DELETE ON event_steps
BEGIN
  UPDATE counters SET value = value - 1 WHERE name = 'rows:event_steps';
END;
INSERT INTO counters (name, value) SELECT 'rows:event_steps', COUNT(*) FROM event_steps WHERE true
  ON CONFLICT(name) DO UPDATE SET value = excluded.value;

CREATE TRIGGER IF NOT EXISTS rows_dead_letters_insert AFTER INSERT ON dead_letters
BEGIN
  INSERT INTO counters (name, value) VALUES ('rows:dead_letters', 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;
CREATE TRIGGER IF NOT EXISTS rows_dead_letters_delete AFTER DELETE ON dead_letters
BEGIN
  UPDATE counters SET value = value - 1 WHERE name = 'rows:dead_letters';
END;
INSERT INTO counters (name, value) SELECT 'rows:dead_letters', COUNT(*) FROM dead_letters WHERE true
  ON CONFLICT(name) DO UPDATE SET value = excluded.value;

CREATE TRIGGER IF NOT EXISTS rows_dead_letter_tombstones_insert AFTER INSERT ON dead_letter_tombstones
BEGIN
  INSERT INTO counters (name, value) VALUES ('rows:dead_letter_tombstones', 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;
CREATE TRIGGER IF NOT EXISTS rows_dead_letter_tombstones_delete AFTER DELETE ON dead_letter_tombstones
BEGIN
  UPDATE counters SET value = value - 1 WHERE name = 'rows:dead_letter_tombstones';
END;
INSERT INTO counters (name, value) SELECT 'rows:dead_letter_tombstones', COUNT(*) FROM dead_letter_tombstones WHERE true
  ON CONFLICT(name) DO UPDATE SET value = excluded.value;

CREATE TRIGGER IF NOT EXISTS rows_replay_audit_insert AFTER INSERT ON replay_audit
BEGIN
  INSERT INTO counters (name, value) VALUES ('rows:replay_audit', 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;
CREATE TRIGGER IF NOT EXISTS rows_replay_audit_delete AFTER DELETE ON replay_audit
BEGIN
  UPDATE counters SET value = value - 1 WHERE name = 'rows:replay_audit';
END;
INSERT INTO counters (name, value) SELECT 'rows:replay_audit', COUNT(*) FROM replay_audit WHERE true
  ON CONFLICT(name) DO UPDATE SET value = excluded.value;

CREATE TRIGGER IF NOT EXISTS rows_jobs_insert AFTER INSERT ON jobs
BEGIN
  INSERT INTO counters (name, value) VALUES ('rows:jobs', 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;
CREATE TRIGGER IF NOT EXISTS rows_jobs_delete AFTER DELETE ON jobs
BEGIN
  UPDATE counters SET value = value - 1 WHERE name = 'rows:jobs';
END;
INSERT INTO counters (name, value) SELECT 'rows:jobs', COUNT(*) FROM jobs WHERE true
  ON CONFLICT(name) DO UPDATE SET value = excluded.value;

CREATE TRIGGER IF NOT EXISTS rows_job_entries_insert AFTER INSERT ON job_entries
BEGIN
  INSERT INTO counters (name, value) VALUES ('rows:job_entries', 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;
CREATE TRIGGER IF NOT EXISTS rows_job_entries_delete AFTER DELETE ON job_entries
BEGIN
  UPDATE counters SET value = value - 1 WHERE name = 'rows:job_entries';
END;
INSERT INTO counters (name, value) SELECT 'rows:job_entries', COUNT(*) FROM job_entries WHERE true
  ON CONFLICT(name) DO UPDATE SET value = excluded.value;

CREATE TRIGGER IF NOT EXISTS rows_drains_insert AFTER INSERT ON drains
BEGIN
  INSERT INTO counters (name, value) VALUES ('rows:drains', 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;
CREATE TRIGGER IF NOT EXISTS rows_drains_delete AFTER DELETE ON drains
BEGIN
  UPDATE counters SET value = value - 1 WHERE name = 'rows:drains';
END;
INSERT INTO counters (name, value) SELECT 'rows:drains', COUNT(*) FROM drains WHERE true
  ON CONFLICT(name) DO UPDATE SET value = excluded.value;

CREATE TRIGGER IF NOT EXISTS rows_alarms_insert AFTER INSERT ON alarms
BEGIN
  INSERT INTO counters (name, value) VALUES ('rows:alarms', 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;
CREATE TRIGGER IF NOT EXISTS rows_alarms_delete AFTER DELETE ON alarms
BEGIN
  UPDATE counters SET value = value - 1 WHERE name = 'rows:alarms';
END;
INSERT INTO counters (name, value) SELECT 'rows:alarms', COUNT(*) FROM alarms WHERE true
  ON CONFLICT(name) DO UPDATE SET value = excluded.value;
