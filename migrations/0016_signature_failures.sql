-- Requests that failed their signature check (401), per source and unix
-- minute: the `signature_failures` alarm's figure (DESIGN §5). Each relay
-- isolate counts failures in memory and adds them here in one write per
-- spell (core/src/signature_tally.rs), never one write per failure.
-- `writes` counts those writes into the row. Rows older than two hours are
-- pruned by the same batch that adds (platform/src/db/signature_failures.rs):
-- the alarm reads the last hour only.
CREATE TABLE IF NOT EXISTS signature_failures (
  source TEXT NOT NULL,
  minute INTEGER NOT NULL,
  count INTEGER NOT NULL,
  writes INTEGER NOT NULL DEFAULT 1,
  PRIMARY KEY (source, minute)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS signature_failures_by_minute ON signature_failures (minute);
