//! The replay hand-over between the workers: what the DLQ worker asks the
//! relay to replay, and what the relay answers.
//!
//! Only the relay holds `SOURCES` and the delivery settings, so every
//! replay runs there, with the one configuration `npm start -- --var …`
//! sets. The DLQ worker keeps the decisions about its entries.

use crate::error_code::{ErrorCode, Failure};
use crate::state::DownstreamResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The internal route on the relay, reached through the `RELAY` binding.
pub const PATH: &str = "/internal/v1/replay";

/// One entry to replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayCall {
    /// The original `webhooks` message, whole (from the envelope).
    pub event: Value,
    /// The original queue message id.
    pub queue_message_id: String,
    /// The entry's root-cause code, for the refusal rule.
    pub entry_code: ErrorCode,
    /// The entry's destination: a `delivery` entry replays to it alone;
    /// `None` (an `ingest` entry) ingests again, and the event's
    /// deliveries then go their own way (DESIGN §4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
}

/// What the relay did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayAnswer {
    /// The downstream side of the replay.
    pub downstream: DownstreamResult,
    /// Why it failed, if it did (the verdict of `replay_verdict::verdict`).
    pub failure: Option<Failure>,
    /// Why nothing was attempted, if the replay was refused.
    pub refused: Option<String>,
    /// What kind of refusal it was, when the DLQ worker answers it with a
    /// status of its own (DESIGN §4: an entry whose destination is no
    /// longer configured is refused with `409`, and nothing changes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
}

/// A refusal the DLQ worker tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// The entry's destination is not in the relay's configuration: answer
    /// `409` naming it; nothing was called or changed.
    DestinationNotConfigured,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_call_refuses_unknown_fields_and_roundtrips() {
        let call = ReplayCall {
            event: json!({"v": 1}),
            queue_message_id: "m1".into(),
            entry_code: ErrorCode::Upstream5xx,
            destination: Some("billing".into()),
        };
        let text = serde_json::to_string(&call).unwrap();
        assert_eq!(serde_json::from_str::<ReplayCall>(&text).unwrap(), call);
        let extra = json!({"event": {}, "queue_message_id": "m", "entry_code": "UNKNOWN", "x": 1});
        assert!(serde_json::from_value::<ReplayCall>(extra).is_err());
    }
}
