//! The drain engine: delivers one destination's parked events, oldest
//! first and paced, one step per `hookrelay-control` message.
//!
//! A step ([`step::run`]) claims its generation of the `drains` row (a
//! stale message stops there), dead-letters over-age events
//! ([`expire`]), delivers up to `k` parked events through the breaker with
//! the same lease, signing and recording as the consumer, then schedules
//! the next step or ends the drain. [`resume`] re-sends the chains that
//! were lost (local queues live in memory). Every rule it applies is in
//! `hookrelay_core::{parking, drain_plan}`.

mod deliver;
pub mod expire;
pub mod resume;
pub mod step;

use hookrelay_core::config::DeliveryConfig;
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
