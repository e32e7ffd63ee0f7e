-- `dead_lettered` and `dlq_deduped` in `counters` are kept by the
-- database, in the DLQ worker's batch write (the only writer of new
-- entries and of `seen_count`), like `ingest`, `duplicate` (0007) and
-- `delivered` (0008): a triage batch then needs no counter flush of its
-- own. Keys keep the workers' `name:CODE` form; a dedupe is filed under
-- the code of the entry it joined.
CREATE TRIGGER IF NOT EXISTS dead_letters_count_stored AFTER INSERT ON dead_letters
BEGIN
  INSERT INTO counters (name, value) VALUES ('dead_lettered:' || NEW.error_code, 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;

CREATE TRIGGER IF NOT EXISTS dead_letters_count_deduped AFTER UPDATE OF seen_count ON dead_letters
WHEN NEW.seen_count > OLD.seen_count
BEGIN
  INSERT INTO counters (name, value) VALUES ('dlq_deduped:' || NEW.error_code, NEW.seen_count - OLD.seen_count)
    ON CONFLICT(name) DO UPDATE SET value = value + excluded.value;
END;
