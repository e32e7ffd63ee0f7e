-- The retention sweep's reads (issue 24): a payload stays while a dead
-- letter in D1 still refers to it (its envelope's claim-checked body), and
-- the sweep asks that per candidate payload and per chunk of events; this
-- index answers it without scanning dead_letters.
CREATE INDEX IF NOT EXISTS dead_letters_by_event ON dead_letters (event_id) WHERE event_id IS NOT NULL;

-- The stats' hourly series counts events by the hour they were first
-- parked (`parked_at` is kept once set), over the last 24 hours.
CREATE INDEX IF NOT EXISTS events_by_parked_at ON events (parked_at) WHERE parked_at IS NOT NULL;
