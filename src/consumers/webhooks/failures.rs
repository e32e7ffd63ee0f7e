//! Steps 4 and 5's log: every failed attempt, recorded and logged.

use super::{failure_of, Batch, COMPONENT};
use hookrelay_core::receive::queued_event::event_id_hint;
use hookrelay_core::retry::disposition::Disposition;
use hookrelay_platform::db::{attempts, error_message};
use hookrelay_platform::log::{self, Level};
use worker::Env;

/// Records every failed attempt in one round trip. If the write fails the
/// dispositions stand: a retry still happens, and a poison hand-off carries
/// its own reason.
pub async fn record(env: &Env, batch: &Batch<'_>, dispositions: &[Disposition], now: i64) {
    let hints: Vec<Option<String>> = batch
        .messages
        .iter()
        .zip(batch.decoded)
        .map(|(m, e)| match e {
            Ok(event) => Some(event.event_id.clone()),
            Err(_) => event_id_hint(&m.body_json),
        })
        .collect();
    let failed: Vec<attempts::FailedAttempt> = batch
        .messages
        .iter()
        .zip(&hints)
        .zip(dispositions)
        .filter_map(|((message, event_id), disposition)| {
            failure_of(disposition).map(|failure| attempts::FailedAttempt {
                event_id: event_id.as_deref(),
                queue_message_id: &message.id,
                attempt: message.attempts,
                failure,
                destination: None,
            })
        })
        .collect();
    if failed.is_empty() {
        return;
    }
    let recorded = match env.d1("DB") {
        Ok(db) => attempts::record(&db, &failed, now).await,
        Err(e) => Err(e),
    };
    if let Err(e) = recorded {
        log::error(
            COMPONENT,
            "attempt_record_failed",
            log::fields! {"count": failed.len(), "err": error_message(&e)},
        );
    }
}

/// One WARN line per failed message, in QuestKit's format, after the
/// hand-off so the line says where the message really went.
pub fn log(batch: &Batch<'_>, dispositions: &[Disposition]) {
    for ((message, event), disposition) in
        batch.messages.iter().zip(batch.decoded).zip(dispositions)
    {
        let Some(failure) = failure_of(disposition) else {
            continue;
        };
        let (next, delay_s) = match disposition {
            Disposition::Retry { delay_s, .. } => ("retry", Some(*delay_s)),
            _ => ("dead_letter", None),
        };
        let id = event
            .as_ref()
            .map_or(message.id.as_str(), |e| e.event_id.as_str());
        log::emit(
            Level::Warn,
            Some("[consumer] ingest failed"),
            COMPONENT,
            "ingest_failed",
            log::fields! {
                "id": id,
                "queue_message_id": message.id,
                "attempts": message.attempts,
                "err": log::fields!{"code": failure.code, "class": failure.class(), "message": failure.message},
                "next": next,
                "delay_s": delay_s,
            },
        );
    }
}
