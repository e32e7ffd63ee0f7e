//! The replay hand-over between the workers: what the DLQ worker asks the
//! relay to replay, and what the relay answers.
//!
//! Only the relay holds `SOURCES` and the delivery settings, so every
//! replay runs there, with the one configuration `npm start -- --var …`
//! sets. The DLQ worker keeps the decisions about its entries.

use crate::state::error_code::{ErrorCode, Failure};
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
    /// What kind of refusal, when a client answers it apart (absent from a
    /// relay that predates it: a plain refusal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal_code: Option<RefusalCode>,
}

/// A refusal the DLQ worker answers with its own stable code and status,
/// nothing changed (no replay attempt is counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalCode {
    /// A `delivery` entry whose destination is no longer in `DESTINATIONS`
    /// (DESIGN §4: refused with `409` saying so).
    DestinationUnknown,
    /// The destination is over its `rate_per_s` and no start was free
    /// within a replay's short wait (DESIGN §3: answered `429` naming the
    /// rate; never a failed replay).
    RateLimited,
}

impl RefusalCode {
    /// The admin API's error code for it.
    pub fn api_code(self) -> &'static str {
        match self {
            RefusalCode::DestinationUnknown => "DESTINATION_UNKNOWN",
            RefusalCode::RateLimited => "RATE_LIMITED",
        }
    }

    /// The admin API's status for it.
    pub fn http_status(self) -> u16 {
        match self {
            RefusalCode::DestinationUnknown => 409,
            RefusalCode::RateLimited => 429,
        }
    }
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

    #[test]
    fn a_refusal_may_name_its_code_and_an_older_answer_has_none() {
        let old = json!({"downstream": "not_forwarded", "failure": null, "refused": "no"});
        let read: ReplayAnswer = serde_json::from_value(old).unwrap();
        assert_eq!(read.refusal_code, None);
        let gone = json!({"downstream": "not_forwarded", "failure": null,
            "refused": "destination 'billing' is no longer configured", "refusal_code": "destination_unknown"});
        let read: ReplayAnswer = serde_json::from_value(gone).unwrap();
        assert_eq!(read.refusal_code, Some(RefusalCode::DestinationUnknown));
        assert_eq!(
            RefusalCode::DestinationUnknown.api_code(),
            "DESTINATION_UNKNOWN"
        );
        let text = serde_json::to_string(&read).unwrap();
        assert_eq!(serde_json::from_str::<ReplayAnswer>(&text).unwrap(), read);
    }

    #[test]
    fn each_refusal_has_its_code_and_status() {
        let table = [
            (
                RefusalCode::DestinationUnknown,
                "destination_unknown",
                "DESTINATION_UNKNOWN",
                409,
            ),
            (
                RefusalCode::RateLimited,
                "rate_limited",
                "RATE_LIMITED",
                429,
            ),
        ];
        for (code, wire, api, status) in table {
            assert_eq!(serde_json::to_value(code).unwrap(), json!(wire));
            assert_eq!((code.api_code(), code.http_status()), (api, status));
        }
    }
}
