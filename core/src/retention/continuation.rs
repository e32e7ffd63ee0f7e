//! The sweep's continuation message on the control queue
//! (`hookrelay-control`): a step that left work (`more: true`) sends one,
//! and the consumer runs the next step if its generation is still current
//! (`sweep_state.generation`), so a lost or duplicated message never
//! doubles the work, and a cron or a maintenance run starts a new chain.

use serde::{Deserialize, Serialize};

/// The `kind` of a sweep continuation.
pub const SWEEP_KIND: &str = "sweep";
/// Seconds before the next step: the queue's smallest delay.
pub const CONTINUE_AFTER_S: u32 = 1;
/// How long one step holds the sweep's lease (`sweep_state.lease_until`)
/// at most: steps never overlap (two overlapping steps could archive the
/// same rows under two keys), and a step that crashed without recording
/// frees it after this. A step spends at most its subrequest budget, which
/// takes seconds; two minutes keeps a stuck lease shorter than the cron's
/// five-minute period.
pub const SWEEP_LEASE_MS: i64 = 120_000;

/// One continuation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepMessage {
    /// Always [`SWEEP_KIND`].
    pub kind: String,
    /// The `sweep_state.generation` this step belongs to.
    pub generation: i64,
}

impl SweepMessage {
    /// The continuation for `generation`.
    pub fn new(generation: i64) -> SweepMessage {
        SweepMessage {
            kind: SWEEP_KIND.to_string(),
            generation,
        }
    }

    /// Reads a control message; `None` when it is not a sweep continuation.
    pub fn parse(json: &str) -> Option<SweepMessage> {
        let m: SweepMessage = serde_json::from_str(json).ok()?;
        (m.kind == SWEEP_KIND).then_some(m)
    }

    /// The message as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("two plain fields always serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_continuation_reads_back_and_a_drain_message_is_not_one() {
        let m = SweepMessage::new(7);
        assert_eq!(SweepMessage::parse(&m.to_json()), Some(m));
        let drain = r#"{"kind":"drain","destination":"https://x","generation":3}"#;
        assert_eq!(SweepMessage::parse(drain), None);
        assert_eq!(
            SweepMessage::parse(r#"{"kind":"drain","generation":3}"#),
            None
        );
        assert_eq!(SweepMessage::parse("not json"), None);
    }
}
