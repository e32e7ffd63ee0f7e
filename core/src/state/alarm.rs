//! Alarm kinds and states (`alarms.kind`, `alarms.state`), DESIGN §5.

use super::named_states;

named_states! {
    /// What an alarm watches; the first half of its id `{kind}:{subject}`.
    pub enum AlarmKind ("alarm kind") {
        /// The oldest pending dead letter is older than `ALERT_DLQ_OLDEST`.
        DlqOldest = "dlq_oldest",
        /// More than `ALERT_DLQ_INGRESS_PER_HOUR` dead letters in the last hour.
        DlqIngress = "dlq_ingress",
        /// Pending entries at 90% of `DLQ_CAPACITY`, or an eviction in the last hour.
        DlqCapacity = "dlq_capacity",
        /// A dead letter could not be stored (its state lives in R2, not D1).
        DlqCannotStore = "dlq_cannot_store",
        /// A destination's breaker has not been CLOSED for `ALERT_BREAKER_OPEN`.
        BreakerOpen = "breaker_open",
        /// A destination's oldest parked event is older than `ALERT_PARKED_OLDEST`.
        ParkedOldest = "parked_oldest",
        /// A source with `expect_every` received nothing for that long.
        SourceSilent = "source_silent",
        /// More than `ALERT_SIGNATURE_FAILURES_PER_HOUR` requests to a source
        /// failed their signature check in the last hour.
        SignatureFailures = "signature_failures",
        /// D1 above 90% of `D1_MAX_BYTES`, or the cap shortened the dedupe window.
        Storage = "storage",
        /// `POST /alerts/test`: never held as a condition, only sent.
        Test = "test",
    }
}

named_states! {
    /// Where one alarm stands.
    pub enum AlarmState ("alarm state") {
        /// Its condition holds; the `firing` alert was (or is being) sent.
        Firing = "firing",
        /// Its condition ended; the `resolved` alert was (or is being) sent.
        Resolved = "resolved",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alarm_names_roundtrip_and_unknown_ones_are_refused() {
        for k in AlarmKind::ALL {
            assert_eq!(AlarmKind::parse(k.as_str()), Ok(*k));
        }
        for s in AlarmState::ALL {
            assert_eq!(AlarmState::parse(s.as_str()), Ok(*s));
        }
        assert!(AlarmKind::parse("dlq_old").is_err());
        assert!(AlarmState::parse("FIRING").is_err());
    }
}
