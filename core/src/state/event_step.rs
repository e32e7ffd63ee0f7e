//! One step in an event's delivery story (`event_steps.step`).

use super::named_states;

named_states! {
    /// A step of one event's delivery.
    pub enum EventStep ("event step") {
        /// A downstream call answered 2xx.
        Delivered = "delivered",
        /// A downstream call failed (the code says how).
        DeliveryFailed = "delivery_failed",
        /// Held while its destination's breaker was open.
        Parked = "parked",
        /// Delivered by a drain after its destination recovered.
        Drained = "drained",
        /// Dead-lettered from parking (too old, or refused while draining).
        DeadLettered = "dead_lettered",
        /// Its lease ran out after its call started and nothing recorded
        /// the outcome: counted as a `TIMEOUT` attempt and retried; the
        /// destination may already have it.
        LeaseExpired = "lease_expired",
    }
}

use crate::state::error_code::{ErrorCode, Failure};

/// The longest `event_steps.detail` kept: a note for a timeline, never a
/// body (failure messages carry no payload bytes, but may be long).
pub const MAX_STEP_DETAIL_CHARS: usize = 200;

/// What one downstream call is recorded as in its event's story: the step,
/// the failure code if it failed, and a short detail.
pub fn delivery_step(result: &Result<(), Failure>) -> (EventStep, Option<ErrorCode>, String) {
    match result {
        Ok(()) => (
            EventStep::Delivered,
            None,
            "the downstream answered 2xx".to_owned(),
        ),
        Err(f) => (
            EventStep::DeliveryFailed,
            Some(f.code),
            f.message.chars().take(MAX_STEP_DETAIL_CHARS).collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_recorded_as_delivered_or_failed_with_its_code_and_a_short_detail() {
        let long = "é".repeat(MAX_STEP_DETAIL_CHARS + 50);
        let table = [
            (Ok(()), EventStep::Delivered, None, 27),
            (
                Err(Failure::new(
                    ErrorCode::Upstream5xx,
                    "downstream answered 503",
                )),
                EventStep::DeliveryFailed,
                Some(ErrorCode::Upstream5xx),
                23,
            ),
            (
                Err(Failure::new(ErrorCode::Timeout, long)),
                EventStep::DeliveryFailed,
                Some(ErrorCode::Timeout),
                MAX_STEP_DETAIL_CHARS,
            ),
        ];
        for (result, step, code, chars) in table {
            let (got_step, got_code, detail) = delivery_step(&result);
            assert_eq!((got_step, got_code), (step, code), "{result:?}");
            assert_eq!(detail.chars().count(), chars, "{result:?}");
        }
    }
}
