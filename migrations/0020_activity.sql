-- Issue 42: GET /api/v1/admin/activity reads deliveries settled (delivered
-- or dead-lettered) oldest first from a position in time, polled every
-- second or two by `hookrelay tail`. No index of deliveries leads with its
-- time (deliveries_by_destination_time leads with the destination), so
-- without this one every poll would scan the table. Partial: only settled
-- rows, the ones the feed reads; the query repeats this WHERE so SQLite
-- uses it (platform/src/db/activity.rs).
--
-- Expand only: an index, which the previous release never names.
CREATE INDEX IF NOT EXISTS deliveries_settled_by_time
  ON deliveries (updated_at, event_id, destination) WHERE state IN ('delivered', 'dead_lettered');
