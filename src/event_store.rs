//! D1 statements of the relay: claim-checked payloads, exactly-once ingest,
//! and the failed-attempt record.

use hookrelay_core::disposition::Outcome;
use hookrelay_core::error_code::Failure;
use hookrelay_core::queued_event::{EventBody, QueuedEvent};
use hookrelay_platform::d1::{error_message, int, opt_text, text};
use worker::{D1Database, D1PreparedStatement, Env, Result};

/// Stores a body too large for a queue message, keyed by event id. A
/// repeated delivery of the same event finds the row already there.
pub async fn store_payload(
    env: &Env,
    event_id: &str,
    source: &str,
    body: &str,
    now_ms: i64,
) -> Result<()> {
    env.d1("DB")?
        .prepare("INSERT INTO payloads (event_id, source, body, body_bytes, created_at) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(event_id) DO NOTHING")
        .bind(&[text(event_id), text(source), text(body), int(body.len() as i64), int(now_ms)])?
        .run()
        .await?;
    Ok(())
}

/// Inserts the event, or counts a duplicate delivery of it. `RETURNING`
/// tells the two apart in the same round trip: a fresh row has zero
/// duplicates.
const INGEST_SQL: &str = "INSERT INTO events \
    (idempotency_key, event_id, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, queue_message_id, headers, body, body_ref, body_bytes) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 0, ?7, ?8, ?9, ?10, ?11) \
    ON CONFLICT(idempotency_key) DO UPDATE SET duplicate_count = duplicate_count + 1, last_seen_at = excluded.last_seen_at \
    RETURNING duplicate_count";

fn ingest_statement(
    db: &D1Database,
    event: &QueuedEvent,
    queue_message_id: &str,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    let headers = serde_json::to_string(&event.headers)?;
    let (body, body_ref, body_bytes) = match &event.body {
        EventBody::Inline { body } => (Some(body.as_str()), None, body.len() as i64),
        EventBody::Stored {
            body_ref,
            body_bytes,
        } => (None, Some(body_ref.as_str()), *body_bytes as i64),
    };
    db.prepare(INGEST_SQL).bind(&[
        text(&event.idempotency_key),
        text(&event.event_id),
        text(&event.source),
        opt_text(event.delivery_id.as_deref()),
        int(event.received_at_ms),
        int(now_ms),
        text(queue_message_id),
        text(&headers),
        opt_text(body),
        opt_text(body_ref),
        int(body_bytes),
    ])
}

#[derive(serde::Deserialize)]
struct Returned {
    duplicate_count: f64,
}

fn outcome_of(result: &worker::D1Result) -> Outcome {
    match result.results::<Returned>() {
        Ok(rows) if rows.first().is_some_and(|r| r.duplicate_count == 0.0) => Outcome::Ingested,
        Ok(rows) if !rows.is_empty() => Outcome::Duplicate,
        // The statement committed but returned nothing readable: the row is
        // there either way, so treat it as already ingested.
        _ => Outcome::Duplicate,
    }
}

/// Ingests `events` (each with its queue message id) in one D1 round trip.
///
/// D1 runs a batch as one transaction, so one failing statement rolls back
/// all of them. Then each event is tried on its own, so that one bad event
/// never fails the others; that costs a round trip per event, only on the
/// failure path.
pub async fn ingest(db: &D1Database, events: &[(&QueuedEvent, &str)], now_ms: i64) -> Vec<Outcome> {
    if events.is_empty() {
        return Vec::new();
    }
    let statements: Result<Vec<_>> = events
        .iter()
        .map(|(e, id)| ingest_statement(db, e, id, now_ms))
        .collect();
    let batch_error = match statements {
        Ok(stmts) => match db.batch(stmts).await {
            Ok(results) if results.len() == events.len() => {
                return results.iter().map(outcome_of).collect()
            }
            Ok(_) => "D1 returned a different number of results than statements".to_string(),
            Err(e) => error_message(&e),
        },
        Err(e) => error_message(&e),
    };
    if events.len() == 1 {
        return vec![Outcome::Failed(
            hookrelay_core::classify::classify_d1_error(&batch_error),
        )];
    }
    let mut outcomes = Vec::with_capacity(events.len());
    for (event, id) in events {
        let outcome = match ingest_statement(db, event, id, now_ms) {
            Ok(stmt) => match stmt.all().await {
                Ok(result) if result.success() => outcome_of(&result),
                Ok(result) => Outcome::Failed(hookrelay_core::classify::classify_d1_error(
                    &result.error().unwrap_or_else(|| "statement failed".into()),
                )),
                Err(e) => Outcome::Failed(hookrelay_core::classify::classify_d1_error(
                    &error_message(&e),
                )),
            },
            Err(e) => Outcome::Failed(hookrelay_core::classify::classify_d1_error(&error_message(
                &e,
            ))),
        };
        outcomes.push(outcome);
    }
    outcomes
}

/// One failed attempt, as recorded for the DLQ worker's envelope.
pub struct FailedAttempt<'a> {
    /// The event id, when the message could be decoded.
    pub event_id: Option<&'a str>,
    /// The queue message id.
    pub queue_message_id: &'a str,
    /// The platform attempt number.
    pub attempt: u32,
    /// What failed.
    pub failure: &'a Failure,
}

/// Records failed attempts in one round trip.
pub async fn record_attempts(
    db: &D1Database,
    attempts: &[FailedAttempt<'_>],
    now_ms: i64,
) -> Result<()> {
    if attempts.is_empty() {
        return Ok(());
    }
    let stmt = "INSERT INTO attempts (event_id, queue_message_id, attempt, class, code, message, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
    let statements = attempts
        .iter()
        .map(|a| {
            db.prepare(stmt).bind(&[
                opt_text(a.event_id),
                text(a.queue_message_id),
                int(i64::from(a.attempt)),
                text(a.failure.class().as_str()),
                text(a.failure.code.as_str()),
                text(&a.failure.message),
                int(now_ms),
            ])
        })
        .collect::<Result<Vec<_>>>()?;
    db.batch(statements).await?;
    Ok(())
}
