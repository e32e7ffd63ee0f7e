-- One statement per event in the consumer's ingest batch, with its counters
-- kept exactly, in the same transaction, by the database itself.
--
-- The upsert stamps the batch's nonce on a fresh row (ingest_nonce) or on a
-- row a different queue message counted as a duplicate (duplicate_nonce),
-- and RETURNING reads them back: that tells fresh, duplicate and redelivered
-- apart without a second statement.
ALTER TABLE events ADD COLUMN ingest_nonce TEXT;
ALTER TABLE events ADD COLUMN duplicate_nonce TEXT;

-- `ingest` and `duplicate` in `counters` are counted here, not by the
-- workers' buffered flush, so the common path costs no second round trip.
CREATE TRIGGER IF NOT EXISTS events_count_ingest AFTER INSERT ON events
BEGIN
  INSERT INTO counters (name, value) VALUES ('ingest', 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;

CREATE TRIGGER IF NOT EXISTS events_count_duplicate AFTER UPDATE OF duplicate_count ON events
WHEN NEW.duplicate_count > OLD.duplicate_count
BEGIN
  INSERT INTO counters (name, value) VALUES ('duplicate', NEW.duplicate_count - OLD.duplicate_count)
    ON CONFLICT(name) DO UPDATE SET value = value + excluded.value;
END;
