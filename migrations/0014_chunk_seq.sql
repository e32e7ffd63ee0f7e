-- Each sweep chunk's number, carried in the journal and in its archive
-- keys ({table}/{day}/{first}~{last}~{seq}.ndjson): a redo rewrites its own
-- keys, and a new chunk never reuses one, so an object whose rows left D1
-- is never overwritten (core/src/retention/plan.rs). Expand only: the
-- previous release ignores the column.
ALTER TABLE sweep_state ADD COLUMN chunk_seq INTEGER NOT NULL DEFAULT 0;
