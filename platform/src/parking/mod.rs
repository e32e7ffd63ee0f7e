//! Parking and draining: the events a delivery parked while their
//! destination was unwell, and the engine that brings them back out.
//!
//! - [`park`]: the deliver phase's parks, written in one round trip, and
//!   each destination's drain made sure of.
//! - The drain: delivers one destination's parked events, oldest first
//!   and paced, one step per `hookrelay-control` message. A step
//!   ([`drain_step::run`]) claims its generation of the `drains` row (a
//!   stale message stops there), dead-letters over-age events
//!   ([`drain_expire`]), delivers up to `k` parked events through the
//!   breaker ([`drain_deliver`]) with the same lease, signing and
//!   recording as the consumer, then schedules the next step or ends the
//!   drain. [`drain_resume`] re-sends the chains that were lost (local
//!   queues live in memory).
//!
//! Every rule applied here is in `hookrelay_core::parking`.

mod drain_deliver;
pub mod drain_expire;
pub mod drain_resume;
pub mod drain_step;
pub mod park;

use hookrelay_core::deliver::DeliveryConfig;
use hookrelay_core::metrics::Component;
use worker::{D1Database, Env};

/// The log and metric label of everything a drain does.
pub const COMPONENT: Component = Component::Drain;

/// What a drain step works with.
pub struct DrainCtx<'a> {
    /// The database.
    pub db: &'a D1Database,
    /// The env, for the `CONTROL` and `WEBHOOKS_DLQ` queues.
    pub env: &'a Env,
    /// Delivery, breaker and parking settings.
    pub cfg: &'a DeliveryConfig,
}

/// Runs the steps of one batch side by side: each paces its own
/// destination, so one destination's step never slows another's drain.
pub async fn run_steps(
    ctx: &DrainCtx<'_>,
    messages: &[hookrelay_core::parking::DrainMessage],
) -> Vec<worker::Result<()>> {
    crate::join::join_all(messages.iter().map(|m| drain_step::run(ctx, m))).await
}

/// The poison hand-off of a delivery to `destination` that failed with
/// `failure`, as JSON text: its `original` is the delivery's
/// `DeliveryMessage`, and its id names the queue message that first carried
/// the event, the destination and, for a delivery a replay revived, when
/// (`hookrelay_core::retry::poison_handoff::delivery_handoff_id`).
pub(crate) fn handoff_json(
    row: &crate::db::events::ParkedRow,
    (destination, revived_at): (&str, Option<i64>),
    failure: hookrelay_core::state::error_code::Failure,
    attempts: u32,
    now_ms: i64,
) -> String {
    let original = hookrelay_core::deliver::deliveries::message::DeliveryMessage::new(
        &row.event_id,
        &row.idempotency_key,
        &row.source,
        destination,
        row.received_at,
    );
    let handoff = hookrelay_core::retry::poison_handoff::PoisonHandoff::new(
        failure,
        attempts,
        hookrelay_core::retry::poison_handoff::delivery_handoff_id(
            row.queue_message_id.as_deref().unwrap_or(&row.event_id),
            destination,
            revived_at,
        ),
        row.received_at,
        now_ms,
        serde_json::to_value(original).unwrap_or_default(),
    );
    serde_json::to_string(&handoff).unwrap_or_default()
}

/// Sends dead letters (poison hand-offs) for drained or expired events.
pub(crate) async fn send_handoffs(env: &Env, handoffs: &[String]) -> worker::Result<()> {
    if handoffs.is_empty() {
        return Ok(());
    }
    let queue = env.queue("WEBHOOKS_DLQ")?;
    crate::queue_send::send_json_batch(&queue, handoffs).await
}

/// Waits `ms` milliseconds inside the invocation (pacing; no CPU is used).
pub(crate) async fn sleep_ms(ms: i64) {
    if ms > 0 {
        worker::Delay::from(std::time::Duration::from_millis(ms as u64)).await;
    }
}
