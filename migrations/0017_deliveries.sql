-- Issue 33: one delivery per (event, matching route), each with its own
-- state, attempts and dead letters (DESIGN §3 "Fan-out").
--
-- Creates tables and columns only: no backfill in SQL (D1 stops a query at
-- 30 s, and a database may hold gigabytes). An event ingested before this
-- migration has no `deliveries` rows and `routed_at` NULL: it is read as one
-- delivery to the destination named after its source, from its own
-- `events.delivery_*` / `parked_*` columns (core::deliveries::legacy), until
-- the sweep retires it or the relay copies it into a row the first time it
-- touches it.

CREATE TABLE IF NOT EXISTS deliveries (
  event_id     TEXT NOT NULL,
  destination  TEXT NOT NULL,           -- a DESTINATIONS name (or a `downstream` source's name)
  state        TEXT NOT NULL,           -- pending | delivering | delivered | parked | dead_lettered
  attempts     INTEGER NOT NULL DEFAULT 0, -- calls made to the destination
  created_at   INTEGER NOT NULL,        -- unix ms, when the routes were evaluated
  updated_at   INTEGER NOT NULL,
  claimed_at   INTEGER,                 -- lease while a call is in flight
  delivered_at INTEGER,                 -- unix ms of the 2xx
  parked_at    INTEGER,                 -- unix ms it was first parked (PARK_MAX_AGE counts from it)
  park_cause   TEXT,                    -- breaker | drain | rate | auth
  last_error   TEXT,                    -- stable code of the last failed call
  PRIMARY KEY (event_id, destination)
) WITHOUT ROWID;

-- A destination's parked deliveries, oldest first: the drain's read.
CREATE INDEX IF NOT EXISTS deliveries_parked
  ON deliveries (destination, parked_at, event_id) WHERE state = 'parked';
-- Per destination, recent outcomes (stats: deliveries in the last hour).
CREATE INDEX IF NOT EXISTS deliveries_by_destination_time
  ON deliveries (destination, updated_at);

-- When the routes were evaluated (unix ms); NULL for an event from before
-- deliveries existed (read as one legacy delivery, above).
ALTER TABLE events ADD COLUMN routed_at INTEGER;
-- JSON list of the destination names whose route's filter did not match
-- (the story shows them); NULL when every route matched or none exists.
ALTER TABLE events ADD COLUMN routes_unmatched TEXT;

-- The destination an attempt called; NULL for an ingest attempt (and for
-- every attempt from before this migration).
ALTER TABLE attempts ADD COLUMN destination TEXT;
CREATE INDEX IF NOT EXISTS attempts_by_event_destination
  ON attempts (event_id, destination, at);

-- Dead letters per destination (DESIGN §4): `entry_kind` is the envelope's
-- `kind` (`ingest`: the event never reached its deliveries; `delivery`: one
-- destination's failure). The older `kind` column keeps how the message
-- arrived (poison_handoff | retries_exhausted).
ALTER TABLE dead_letters ADD COLUMN entry_kind TEXT NOT NULL DEFAULT 'ingest';
ALTER TABLE dead_letters ADD COLUMN destination TEXT;
CREATE INDEX IF NOT EXISTS dead_letters_by_destination
  ON dead_letters (destination, status, created_at);
