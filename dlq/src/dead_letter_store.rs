//! D1 statements of the DLQ worker: attempt history, stored bodies, and the
//! dedupe-then-insert-then-evict write of an envelope.

use hookrelay_core::dlq_capacity::evictions_needed;
use hookrelay_core::envelope::{AttemptRecord, Envelope};
use hookrelay_core::error_code::{ErrorCode, FailureClass};
use hookrelay_core::metrics::Metric;
use hookrelay_platform::d1::{int, opt_text, text};
use hookrelay_platform::metrics;
use serde::Deserialize;
use worker::{D1Database, Result};

#[derive(Deserialize)]
struct AttemptRow {
    attempt: f64,
    class: String,
    code: String,
    message: String,
    at: f64,
}

/// Failed attempts the consumer recorded for a queue message.
pub async fn attempt_history(
    db: &D1Database,
    queue_message_id: &str,
) -> Result<Vec<AttemptRecord>> {
    let rows = db
        .prepare("SELECT attempt, class, code, message, at FROM attempts WHERE queue_message_id = ?1 ORDER BY at, attempt")
        .bind(&[text(queue_message_id)])?
        .all()
        .await?
        .results::<AttemptRow>()?;
    Ok(rows
        .into_iter()
        .map(|r| AttemptRecord {
            attempt: r.attempt as u32,
            class: FailureClass::parse(&r.class).unwrap_or(FailureClass::Unknown),
            code: ErrorCode::parse(&r.code).unwrap_or(ErrorCode::Unknown),
            message: r.message,
            at_ms: r.at as i64,
        })
        .collect())
}

/// A claim-checked body, if it is still stored.
pub async fn stored_body(db: &D1Database, event_id: &str) -> Result<Option<String>> {
    db.prepare("SELECT body FROM payloads WHERE event_id = ?1")
        .bind(&[text(event_id)])?
        .first::<String>(Some("body"))
        .await
}

/// What storing an envelope did.
pub struct Stored {
    /// `stored`, `deduped` (an identical pending entry was marked seen again)
    /// or `redelivered` (this DLQ message was stored before).
    pub outcome: &'static str,
    /// Entry ids evicted for capacity.
    pub evicted: Vec<String>,
}

#[derive(Deserialize)]
struct Count {
    n: f64,
}

#[derive(Deserialize)]
struct Id {
    id: String,
}

/// Stores an envelope with dedupe, then enforces capacity.
///
/// The first batch is one transaction: mark an identical pending entry as
/// seen again, or insert this one (a redelivered DLQ message hits its own
/// primary key and changes nothing), then count pending entries.
pub async fn store(db: &D1Database, env: &Envelope, capacity: u64, now: i64) -> Result<Stored> {
    let json = serde_json::to_string(env)?;
    let hash = &env.input.content_hash;
    let dedupe = db
        .prepare("UPDATE dead_letters SET seen_count = seen_count + 1, last_seen_at = ?1 WHERE content_hash = ?2 AND status = 'pending' AND id <> ?3")
        .bind(&[int(now), text(hash), text(&env.id)])?;
    let insert = db
        .prepare(
            "INSERT INTO dead_letters (id, kind, status, event_id, idempotency_key, source, queue_message_id, error_code, error_class, error_signature, attempts, content_hash, created_at, last_seen_at, envelope) \
             SELECT ?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, ?13 \
             WHERE NOT EXISTS (SELECT 1 FROM dead_letters WHERE content_hash = ?11 AND status = 'pending' AND id <> ?1) \
             ON CONFLICT(id) DO NOTHING",
        )
        .bind(&[
            text(&env.id),
            text(serde_json::to_value(env.kind)?.as_str().unwrap_or("unknown")),
            opt_text(env.identity.event_id.as_deref()),
            opt_text(env.identity.idempotency_key.as_deref()),
            opt_text(env.identity.source.as_deref()),
            text(&env.identity.queue_message_id),
            text(env.failure.code.as_str()),
            text(env.failure.class.as_str()),
            text(&env.failure.signature),
            int(i64::from(env.delivery.attempts)),
            text(hash),
            int(now),
            text(&json),
        ])?;
    let pending = db.prepare("SELECT count(*) AS n FROM dead_letters WHERE status = 'pending'");
    let results = db.batch(vec![dedupe, insert, pending]).await?;
    // "Did this webhook arrive?" should say it failed, not that it is still
    // pending. Best effort, outside the batch: the dead letter is already
    // safe, and the events table may be the very thing that is broken.
    if let Some(event_id) = env.identity.event_id.as_deref() {
        let marked = db
            .prepare("UPDATE events SET delivery_status = 'failed' WHERE event_id = ?1 AND delivery_status IN ('pending', 'delivering')")
            .bind(&[text(event_id)])?
            .run()
            .await;
        if let Err(e) = marked {
            hookrelay_platform::log::warn(
                "dlq",
                "event_status_not_updated",
                serde_json::json!({"event_id": event_id, "err": hookrelay_platform::d1::error_message(&e)}),
            );
        }
    }
    let changed = |i: usize| {
        results
            .get(i)
            .and_then(|r| r.meta().ok().flatten())
            .and_then(|m| m.changes)
            .unwrap_or(0)
    };
    let outcome = if changed(0) > 0 {
        "deduped"
    } else if changed(1) > 0 {
        "stored"
    } else {
        "redelivered"
    };
    let pending_count = results
        .get(2)
        .and_then(|r| r.results::<Count>().ok())
        .and_then(|rows| rows.first().map(|c| c.n as u64))
        .unwrap_or(0);
    let source = env.identity.source.as_deref().unwrap_or("");
    match outcome {
        "stored" => metrics::count(
            Metric::new("dead_lettered", "dlq")
                .source(source)
                .code(env.failure.code),
            1,
        ),
        "deduped" => metrics::count(
            Metric::new("dlq_deduped", "dlq")
                .source(source)
                .code(env.failure.code),
            1,
        ),
        _ => {}
    }
    let mut statements = Vec::new();
    let evict = evictions_needed(pending_count, capacity);
    let oldest =
        "SELECT id FROM dead_letters WHERE status = 'pending' ORDER BY created_at, id LIMIT ?1";
    if evict > 0 {
        statements.push(
            db.prepare(format!(
                "INSERT INTO dead_letter_tombstones (id, content_hash, event_id, source, error_code, evicted_at) \
                 SELECT id, content_hash, event_id, source, error_code, ?2 FROM dead_letters WHERE id IN ({oldest}) \
                 ON CONFLICT(id) DO UPDATE SET evicted_at = excluded.evicted_at"
            ))
            .bind(&[int(evict as i64), int(now)])?,
        );
        metrics::count(Metric::new("drop_overflow", "dlq"), evict);
        statements.push(
            db.prepare(format!(
                "DELETE FROM dead_letters WHERE id IN ({oldest}) RETURNING id"
            ))
            .bind(&[int(evict as i64)])?,
        );
    }
    let mut evicted = Vec::new();
    if !statements.is_empty() {
        let results = db.batch(statements).await?;
        if evict > 0 {
            if let Some(rows) = results.last().and_then(|r| r.results::<Id>().ok()) {
                evicted = rows.into_iter().map(|r| r.id).collect();
            }
        }
    }
    Ok(Stored { outcome, evicted })
}
