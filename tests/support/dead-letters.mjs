// Dead letters written straight into local D1, for tests that need a
// condition (a pending entry of a given age) without driving a failure.

/**
 * Inserts a pending dead letter stored `ageMs` ago: with
 * ALERT_DLQ_INGRESS_PER_HOUR=0 it is a `dlq_ingress` condition.
 */
export async function insertPendingEntry(db, id, ageMs = 0) {
  const at = Date.now() - ageMs;
  await db
    .prepare(
      `INSERT INTO dead_letters (id, kind, status, queue_message_id, error_code, error_class, error_signature, attempts, content_hash, created_at, last_seen_at, envelope)
       VALUES (?1, 'retries_exhausted', 'pending', ?1, 'UPSTREAM_5XX', 'transient', 'sig', 6, ?1, ?2, ?2, '{}')`,
    )
    .bind(id, at)
    .run();
}
