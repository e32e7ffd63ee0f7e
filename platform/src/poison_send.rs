//! Hands a batch's poison messages to `webhooks-dlq` with their reason,
//! in one send: the one place both queue consumers (`webhooks` and
//! `deliveries`) do it. If the send fails, each becomes what the core
//! says a failed hand-off becomes (`after_failed_handoff`).

use crate::db::error_message;
use crate::log;
use crate::queue_message::QueueMessage;
use crate::queue_send;
use hookrelay_core::metrics::Component;
use hookrelay_core::retry::disposition::{after_failed_handoff, Disposition};
use hookrelay_core::retry::poison_handoff::PoisonHandoff;
use hookrelay_core::retry::policy::RetrySchedule;
use worker::Env;

/// Sends a hand-off for every dead-letter disposition; the indexes of the
/// messages it handed off (empty when there were none or the send failed,
/// in which case their dispositions were changed to the failed hand-off's).
/// `attempts` is each message's attempt number for the envelope: a
/// delivery's as counted on its row, else the platform's.
pub async fn hand_off(
    env: &Env,
    component: Component,
    (messages, attempts): (&[QueueMessage], &[u32]),
    dispositions: &mut [Disposition],
    schedule: &RetrySchedule,
    now: i64,
) -> Vec<usize> {
    let poison: Vec<(usize, String)> = dispositions
        .iter()
        .enumerate()
        .filter_map(|(i, disp)| match disp {
            Disposition::DeadLetter { failure } => {
                let m = &messages[i];
                let handoff = PoisonHandoff::new(
                    failure.clone(),
                    attempts.get(i).copied().unwrap_or(m.attempts),
                    m.id.clone(),
                    m.enqueued_at_ms,
                    now,
                    m.body_value(),
                );
                serde_json::to_string(&handoff).ok().map(|j| (i, j))
            }
            _ => None,
        })
        .collect();
    if poison.is_empty() {
        return Vec::new();
    }
    let jsons: Vec<String> = poison.iter().map(|(_, j)| j.clone()).collect();
    let sent = match env.queue("WEBHOOKS_DLQ") {
        Ok(q) => queue_send::send_json_batch(&q, &jsons).await,
        Err(e) => Err(e),
    };
    if let Err(e) = sent {
        log::error(
            component,
            "dlq_handoff_failed",
            log::fields! {"count": poison.len(), "err": error_message(&e)},
        );
        for (i, _) in poison {
            let attempts = messages[i].attempts;
            dispositions[i] = after_failed_handoff(dispositions[i].clone(), attempts, schedule);
        }
        return Vec::new();
    }
    poison.into_iter().map(|(i, _)| i).collect()
}
