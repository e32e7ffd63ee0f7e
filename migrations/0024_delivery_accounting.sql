-- Every delivery accounted for (DESIGN §3, "At most once successfully, and
-- always accounted"). Expand-only: nullable columns the previous release
-- never names, and one partial index.
--
-- lease_until      unix ms: the end of the lease taken with claimed_at, as the
--                  holder computed it (hookrelay_core::deliver::lease). The
--                  previous release leaves it NULL (or stale, below its newer
--                  claimed_at); such a lease is honoured for the legacy bound.
-- due_at           unix ms: when the delivery's outstanding `deliveries`
--                  message is due. A redelivered `webhooks` message re-sends
--                  only a pending delivery whose message is overdue; the
--                  periodic check sends it again once it is.
-- handed_off_at    unix ms: the relay handed the delivery to `webhooks-dlq`
--                  (poison, or its sixth failed attempt). The row stays
--                  pending (its event is not swept) until the DLQ worker's
--                  triage stores the entry and closes it `dead_lettered`.
-- entry_stored_at  unix ms: the triage stored (or joined) the delivery's
--                  entry. While a live lease held the row the triage only
--                  records this; the holder's failure then closes it.
ALTER TABLE deliveries ADD COLUMN lease_until INTEGER;
ALTER TABLE deliveries ADD COLUMN due_at INTEGER;
ALTER TABLE deliveries ADD COLUMN handed_off_at INTEGER;
ALTER TABLE deliveries ADD COLUMN entry_stored_at INTEGER;

-- The periodic check's two reads: pending deliveries whose message is
-- overdue, and leases that ran out.
CREATE INDEX IF NOT EXISTS deliveries_open
  ON deliveries (state, due_at) WHERE state IN ('pending', 'delivering');
