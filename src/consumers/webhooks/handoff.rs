//! Step 5: hand poison messages to `webhooks-dlq` with their reason.

use super::{Batch, COMPONENT};
use hookrelay_core::retry::disposition::Disposition;
use hookrelay_core::retry::policy::RetrySchedule;
use hookrelay_platform::poison_send;
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
    poison_send::hand_off(
        env,
        COMPONENT,
        (batch.messages, &[]),
        dispositions,
        schedule,
        now,
    )
    .await;
}
