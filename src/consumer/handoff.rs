//! Step 5: hand poison messages to `webhooks-dlq` with their reason.

use super::{Batch, COMPONENT};
use hookrelay_core::disposition::{after_failed_handoff, Disposition};
use hookrelay_core::poison_handoff::PoisonHandoff;
use hookrelay_core::retry_policy::RetrySchedule;
use hookrelay_platform::{log, queue_send};
use worker::Env;

/// Sends every dead-letter disposition's hand-off in one call. If the send
/// fails, each becomes what the core says a failed hand-off becomes.
pub async fn hand_off_poison(
    env: &Env,
    batch: &Batch<'_>,
    dispositions: &mut [Disposition],
    schedule: &RetrySchedule,
    now: i64,
) {
    let poison: Vec<(usize, String)> = dispositions
        .iter()
        .enumerate()
        .filter_map(|(i, disp)| match disp {
            Disposition::DeadLetter { failure } => {
                let m = &batch.messages[i];
                let handoff = PoisonHandoff::new(
                    failure.clone(),
                    m.attempts,
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
        return;
    }
    let messages: Vec<String> = poison.iter().map(|(_, j)| j.clone()).collect();
    let sent = match env.queue("WEBHOOKS_DLQ") {
        Ok(q) => queue_send::send_json_batch(&q, &messages).await,
        Err(e) => Err(e),
    };
    if let Err(e) = sent {
        log::error(
            COMPONENT,
            "dlq_handoff_failed",
            log::fields! {"count": poison.len(), "err": hookrelay_platform::db::error_message(&e)},
        );
        for (i, _) in poison {
            let attempts = batch.messages[i].attempts;
            dispositions[i] = after_failed_handoff(dispositions[i].clone(), attempts, schedule);
        }
    }
}
