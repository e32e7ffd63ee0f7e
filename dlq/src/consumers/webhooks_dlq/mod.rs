//! Triage of `webhooks-dlq`: one envelope per dead letter, stored, logged,
//! then acked. Anything that prevents storing it retries the message
//! instead, because a dead letter acked before it is stored is lost.
//!
//! A batch costs a fixed number of D1 round trips, whatever its size:
//! 1. the read (`read`): attempt histories, claim-checked bodies, and the
//!    store snapshot; plus one small read only when a body is claim-checked;
//! 2. the write: the whole plan (`hookrelay_core::dead_letter::triage`) in one
//!    transaction, so either every message's statement ran or none did. If
//!    it fails, each message is read, planned and written again on its
//!    own, so one message D1 refuses is retried alone and the rest are
//!    stored now (only on that failure path: two round trips per message);
//! 3. the events' status, best effort (the dead letters are already safe,
//!    and the events table may be the very thing that is broken). The
//!    counters flush after it has nothing for D1 on the common path: the
//!    stored and deduped counts are kept by triggers in the write.
//!
//! Only when the plan evicts does the batch read the evictees' whole rows
//! and put them in the R2 archive first (`archive`); a failed put evicts
//! nothing and retries the batch, so an eviction never loses an envelope.
//! Only when the write leaves the depth past capacity (a capacity lowered
//! far below the depth) does one more round trip evict the rest.

mod archive;
mod cannot_store_report;
mod read;

use hookrelay_core::config::DlqConfig;
use hookrelay_core::dead_letter::envelope::{Envelope, Prepared};
use hookrelay_core::dead_letter::store_retry::{store_retry_delay_s, BatchStoreFailure};
use hookrelay_core::dead_letter::triage::{
    self as triage_plan, BatchEntry, Settled, StoreSnapshot, TriagePlan,
};
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::retry::waits::TRIAGE_CONFIG_INVALID_RETRY_S;
use hookrelay_core::state::StoreOutcome;
use hookrelay_platform::db::eviction::{self, Evictees};
use hookrelay_platform::db::{dead_letters, error_message, events};
use hookrelay_platform::env_config::WorkerEnv;
use hookrelay_platform::queue_message::QueueMessage;
use hookrelay_platform::{log, metrics, now_ms};
use worker::{D1Database, Env};

const COMPONENT: Component = Component::Dlq;

/// Triage every message of a batch: one read, one write, then each
/// message acked or retried on its own.
pub async fn triage(messages: Vec<QueueMessage>, env: &Env) {
    let config = match DlqConfig::load(&WorkerEnv(env)) {
        Ok(c) => c,
        Err(e) => {
            log::error(
                COMPONENT,
                "config_invalid",
                log::fields! {"key": e.key, "problem": e.problem},
            );
            for m in &messages {
                m.retry(TRIAGE_CONFIG_INVALID_RETRY_S);
            }
            return;
        }
    };
    // This batch's own note: a concurrent batch in the isolate has its own.
    let mut noted = BatchStoreFailure::default();
    match env.d1("DB") {
        Ok(db) => {
            let failed_events = triage_or_split(env, &db, &messages, &config, &mut noted).await;
            let ids: Vec<&str> = failed_events.iter().map(String::as_str).collect();
            mark_events_failed(&db, &ids).await;
            cannot_store_report::send(env, noted.into_report()).await;
            // Usually nothing for D1 here: dead_lettered and dlq_deduped are
            // counted by triggers in the write (migration 0009).
            metrics::flush(env).await;
            return;
        }
        Err(e) => {
            log::error(
                COMPONENT,
                "d1_binding_missing",
                log::fields! {"err": error_message(&e)},
            );
            for m in &messages {
                retry_store(m, &config, "the D1 binding DB is missing", &mut noted);
            }
            cannot_store_report::send(env, noted.into_report()).await;
        }
    }
    metrics::flush(env).await;
}

/// How one batch's write ended.
enum BatchEnd {
    /// Every message was acked or retried; the event ids now dead-lettered.
    Settled(Vec<String>),
    /// The write failed and nothing was acked or retried yet.
    WriteFailed,
}

/// The batch as one write; if that write fails, each message on its own
/// (`triage_plan::split_after_failed_write`), so one message D1 refuses
/// retries alone and the others are stored now.
async fn triage_or_split(
    env: &Env,
    db: &D1Database,
    messages: &[QueueMessage],
    config: &DlqConfig,
    noted: &mut BatchStoreFailure,
) -> Vec<String> {
    let split = triage_plan::split_after_failed_write(messages.len());
    match triage_batch(env, db, messages, config, split, noted).await {
        BatchEnd::Settled(ids) => ids,
        BatchEnd::WriteFailed => {
            let mut ids = Vec::new();
            for one in messages.chunks(1) {
                if let BatchEnd::Settled(stored) =
                    triage_batch(env, db, one, config, false, noted).await
                {
                    ids.extend(stored);
                }
            }
            ids
        }
    }
}

/// Stores the batch and acks or retries each message; answers the event
/// ids of the dead letters now stored. With `split`, a failed write acks
/// and retries nothing and says so instead.
async fn triage_batch(
    env: &Env,
    db: &D1Database,
    messages: &[QueueMessage],
    config: &DlqConfig,
    split: bool,
    noted: &mut BatchStoreFailure,
) -> BatchEnd {
    if messages.is_empty() {
        return BatchEnd::Settled(Vec::new());
    }
    let now = now_ms();
    let (envelopes, snapshot, plan) = match planned(db, messages, config, now).await {
        Ok(p) => p,
        Err(e) => {
            retry_all(messages, config, &error_message(&e), noted);
            return BatchEnd::Settled(Vec::new());
        }
    };
    let archived = match archive::plan_evictions(env, db, &envelopes, &plan, now).await {
        Ok(a) => a,
        Err(e) => {
            let why = format!(
                "the entries to evict could not be archived first, so nothing was evicted: {}",
                error_message(&e)
            );
            retry_all(messages, config, &why, noted);
            return BatchEnd::Settled(Vec::new());
        }
    };
    let write = dead_letters::write_triage(db, &envelopes, &plan, &archived, now).await;
    if split && write.is_err() {
        return BatchEnd::WriteFailed;
    }
    let settled = triage_plan::settle(&plan, write.as_ref().ok().map(|w| w.changes.as_slice()));
    let why = match &write {
        Ok(_) => "the dead-letter store changed while this batch was written".to_string(),
        Err(e) => error_message(e),
    };
    let mut failed_events = Vec::new();
    for ((message, env), settled) in messages.iter().zip(&envelopes).zip(&settled) {
        match *settled {
            Settled::Done(outcome) => {
                report_stored(env, outcome);
                failed_events.extend(env.fails_event().map(str::to_string));
                message.ack();
            }
            // A write that succeeded but left this message unsettled met a
            // concurrent change, not a store that fails: no alarm for it.
            Settled::Unsettled if write.is_ok() => retry_message(message, config, &why),
            Settled::Unsettled => retry_store(message, config, &why, noted),
        }
    }
    let Ok(write) = write else {
        return BatchEnd::Settled(failed_events);
    };
    report_evicted(&write.evicted, config.capacity);
    let more =
        triage_plan::evictions_after(&snapshot, &settled, write.evicted.len(), config.capacity);
    evict_rest(env, db, more, config.capacity, now).await;
    BatchEnd::Settled(failed_events)
}

/// Reads the batch's evidence, builds every envelope and plans the write.
async fn planned(
    db: &D1Database,
    messages: &[QueueMessage],
    config: &DlqConfig,
    now: i64,
) -> worker::Result<(Vec<Envelope>, StoreSnapshot, TriagePlan)> {
    let prepared: Vec<Prepared> = messages
        .iter()
        .map(|m| {
            Prepared::new(
                m.body_value(),
                &m.id,
                m.enqueued_at_ms,
                &config.origin_queues,
            )
        })
        .collect();
    let mut evidence = read::read(db, &prepared, config.capacity).await?;
    let envelopes: Vec<Envelope> = prepared
        .into_iter()
        .map(|mut p| {
            let history = evidence.history(&p);
            p.attach_event(evidence.event_row(&p));
            let body = p.body_ref().and_then(|r| evidence.bodies.get(r)).cloned();
            p.finish(history, body.as_deref(), now)
        })
        .collect();
    read::add_claim_checked(db, &mut evidence, &envelopes).await?;
    let batch: Vec<BatchEntry> = envelopes
        .iter()
        .map(|e| BatchEntry {
            id: e.id.clone(),
            content_hash: e.input.content_hash.clone(),
        })
        .collect();
    let plan = triage_plan::plan(&batch, &evidence.snapshot, config.capacity, now);
    Ok((envelopes, evidence.snapshot, plan))
}

fn retry_all(
    messages: &[QueueMessage],
    config: &DlqConfig,
    err: &str,
    noted: &mut BatchStoreFailure,
) {
    for m in messages {
        retry_store(m, config, err, noted);
    }
}

/// Retries a dead letter that could not be stored, with a growing delay so
/// the retries outlast the queue's retention; logged and counted each time,
/// and noted in the batch's `noted` for its cannot-store report.
fn retry_store(
    message: &QueueMessage,
    config: &DlqConfig,
    err: &str,
    noted: &mut BatchStoreFailure,
) {
    retry_message(message, config, err);
    noted.note(&message.id, err);
}

/// [`retry_store`] without the cannot-store report.
fn retry_message(message: &QueueMessage, config: &DlqConfig, err: &str) {
    let delay_s = store_retry_delay_s(config.retry_delay_s, message.attempts);
    metrics::count(Metric::new(MetricName::DlqStoreFailed, COMPONENT), 1);
    log::error(
        COMPONENT,
        "store_failed",
        log::fields! {"queue_message_id": message.id, "attempts": message.attempts, "err": err, "next": "retry", "delay_s": delay_s},
    );
    message.retry(delay_s);
}

/// Counts a stored dead letter and logs its WARN line.
fn report_stored(env: &Envelope, outcome: StoreOutcome) {
    count_stored(env, outcome);
    log::emit(
        log::Level::Warn,
        None,
        COMPONENT,
        "dead_letter",
        log::fields! {
            "id": env.id,
            "event_id": env.identity.event_id,
            "source": env.identity.source,
            "code": env.failure.code,
            "class": env.failure.class,
            "attempts": env.delivery.attempts,
            "kind": env.identity.kind.as_str(),
            "arrival": env.kind,
            "destination": env.identity.destination,
            "signature": env.failure.signature,
            "outcome": outcome,
        },
    );
}

/// "Did this webhook arrive?" should say it failed, not that it is still
/// pending. Best effort: the dead letters are already safe, and the events
/// table may be the very thing that is broken.
async fn mark_events_failed(db: &D1Database, event_ids: &[&str]) {
    if event_ids.is_empty() {
        return;
    }
    if let Err(e) = events::mark_dead_lettered(db, event_ids).await {
        log::warn(
            COMPONENT,
            "event_status_not_updated",
            log::fields! {"event_ids": event_ids.to_vec(), "err": error_message(&e)},
        );
    }
}

fn count_stored(env: &Envelope, outcome: StoreOutcome) {
    let name = match outcome {
        StoreOutcome::Stored => MetricName::DeadLettered,
        StoreOutcome::Deduped => MetricName::DlqDeduped,
        StoreOutcome::Redelivered => return,
    };
    let source = env.identity.source.as_deref().unwrap_or("");
    metrics::count(
        Metric::new(name, COMPONENT)
            .source(source)
            .code(env.failure.code),
        1,
    );
}

fn report_evicted(ids: &[String], capacity: u64) {
    if ids.is_empty() {
        return;
    }
    metrics::count(
        Metric::new(MetricName::DropOverflow, COMPONENT),
        ids.len() as u64,
    );
    for id in ids {
        log::warn(
            COMPONENT,
            "evicted",
            log::fields! {"id": id, "reason": "capacity", "capacity": capacity},
        );
    }
}

/// The follow-up eviction of `evict` more entries, archived first. A
/// failure is logged, not retried: every message is already stored, and
/// the next batch's plan evicts from a fresh depth.
async fn evict_rest(env: &Env, db: &D1Database, evict: u64, capacity: u64, now: i64) {
    if evict == 0 {
        return;
    }
    let evicted = match archive::archive(env, db, Evictees::Oldest(evict), Vec::new()).await {
        Ok(archived) => eviction::evict_archived(db, &archived, now).await,
        Err(e) => Err(e),
    };
    match evicted {
        Ok(ids) => report_evicted(&ids, capacity),
        Err(e) => log::error(
            COMPONENT,
            "eviction_failed",
            log::fields! {"count": evict, "err": error_message(&e)},
        ),
    }
}
