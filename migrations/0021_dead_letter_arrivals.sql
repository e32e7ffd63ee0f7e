-- Dead letters that arrived, per minute and code, for the stats'
-- ingress_last_hour and the dlq_ingress alarm
-- (core/src/dead_letter/arrivals.rs). Counting dead_letters rows by
-- created_at missed every dead letter that joined a pending entry with its
-- dedupe key (seen again): a storm of one failure showed as one. Kept by
-- the database, like the counters (0009): a new entry counts at its
-- created_at, a join at its last_seen_at by how much seen_count grew. A
-- restored entry (restored_at set) is no arrival. Buckets older than a day
-- and an hour are dropped as new ones are written, so the table stays small.
CREATE TABLE IF NOT EXISTS dead_letter_arrivals (
  minute     INTEGER NOT NULL,  -- unix ms / 60000
  error_code TEXT NOT NULL,
  n          INTEGER NOT NULL,
  PRIMARY KEY (minute, error_code)
);

CREATE TRIGGER IF NOT EXISTS dead_letters_arrived AFTER INSERT ON dead_letters
WHEN NEW.restored_at IS NULL
BEGIN
  INSERT INTO dead_letter_arrivals (minute, error_code, n) VALUES (NEW.created_at / 60000, NEW.error_code, 1)
    ON CONFLICT(minute, error_code) DO UPDATE SET n = n + 1;
  DELETE FROM dead_letter_arrivals WHERE minute < NEW.created_at / 60000 - 1500;
END;

CREATE TRIGGER IF NOT EXISTS dead_letters_arrived_again AFTER UPDATE OF seen_count ON dead_letters
WHEN NEW.seen_count > OLD.seen_count
BEGIN
  INSERT INTO dead_letter_arrivals (minute, error_code, n) VALUES (NEW.last_seen_at / 60000, NEW.error_code, NEW.seen_count - OLD.seen_count)
    ON CONFLICT(minute, error_code) DO UPDATE SET n = n + excluded.n;
END;

-- The entries of the last day already stored, so the figure is whole from
-- the upgrade on (their joins before it are not known: counted once).
INSERT OR IGNORE INTO dead_letter_arrivals (minute, error_code, n)
  SELECT created_at / 60000, error_code, count(*) FROM dead_letters
  WHERE restored_at IS NULL AND created_at >= (CAST(strftime('%s', 'now') AS INTEGER) - 90000) * 1000
  GROUP BY created_at / 60000, error_code;
