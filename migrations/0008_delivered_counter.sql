-- `delivered` in `counters` is kept by the database, in the transaction
-- that marks the event delivered, like `ingest` and `duplicate` (0007):
-- a forwarding batch then needs no counter flush of its own. An event is
-- delivered at most once, so the transition is counted exactly once,
-- whichever path made it (consumer, drain or replay).
CREATE TRIGGER IF NOT EXISTS events_count_delivered AFTER UPDATE OF delivery_status ON events
WHEN NEW.delivery_status = 'delivered' AND OLD.delivery_status IS NOT 'delivered'
BEGIN
  INSERT INTO counters (name, value) VALUES ('delivered', 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;
