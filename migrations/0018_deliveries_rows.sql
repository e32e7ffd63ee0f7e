-- The rows of `deliveries` (0017) in the stats' `rows`, kept by the
-- database in the writing transaction like the other tables' (0010): a
-- trigger per insert and delete on the `rows:deliveries` counter, never a
-- COUNT(*) per stats call.
--
-- An insert that changes nothing (`INSERT OR IGNORE`, or an upsert's
-- `DO UPDATE`) fires no insert trigger, so it counts nothing.

CREATE TRIGGER IF NOT EXISTS rows_deliveries_insert AFTER INSERT ON deliveries
BEGIN
  INSERT INTO counters (name, value) VALUES ('rows:deliveries', 1)
    ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;
CREATE TRIGGER IF NOT EXISTS rows_deliveries_delete AFTER DELETE ON deliveries
BEGIN
  UPDATE counters SET value = value - 1 WHERE name = 'rows:deliveries';
END;
-- The count starts from the table as it is when this migration runs, as
-- 0010's did: 0 on a database where no release has written deliveries
-- since 0017 made the table (one pass over an empty table), and the right
-- count where one has. It also makes `deliveries` show in `rows` at 0.
INSERT INTO counters (name, value) SELECT 'rows:deliveries', COUNT(*) FROM deliveries WHERE true
  ON CONFLICT(name) DO UPDATE SET value = excluded.value;
