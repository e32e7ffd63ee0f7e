//! The drain message on `hookrelay-control`.

use serde::{Deserialize, Serialize};

/// The `kind` of a drain message.
pub const DRAIN_KIND: &str = "drain";

/// One step of one destination's drain: `{"kind":"drain","destination":…,
/// "generation":n}`. `generation` fences the chain: a message whose
/// generation is not the `drains` row's is stale and does nothing, so a
/// duplicated or resent message never doubles the rate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrainMessage {
    /// Always [`DRAIN_KIND`].
    pub kind: String,
    /// The destination URL.
    pub destination: String,
    /// The `drains.generation` this step belongs to.
    pub generation: i64,
}

impl DrainMessage {
    /// The message for step `generation` of `destination`'s drain.
    pub fn new(destination: &str, generation: i64) -> DrainMessage {
        DrainMessage {
            kind: DRAIN_KIND.to_string(),
            destination: destination.to_string(),
            generation,
        }
    }

    /// Reads a control message (given as JSON text); `None` if it is not a
    /// drain message, which the consumer then acks and logs.
    pub fn parse(json: &str) -> Option<DrainMessage> {
        let m: DrainMessage = serde_json::from_str(json).ok()?;
        (m.kind == DRAIN_KIND && !m.destination.is_empty()).then_some(m)
    }

    /// The message as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drain_message_roundtrips_and_anything_else_is_refused() {
        let m = DrainMessage::new("https://x.example/hook", 7);
        assert_eq!(
            m.to_json(),
            r#"{"kind":"drain","destination":"https://x.example/hook","generation":7}"#
        );
        assert_eq!(DrainMessage::parse(&m.to_json()), Some(m));
        for bad in [
            "null",
            "{}",
            r#"{"kind":"other","destination":"d","generation":1}"#,
            r#"{"kind":"drain","destination":"","generation":1}"#,
            r#"{"kind":"drain","destination":"d"}"#,
        ] {
            assert_eq!(DrainMessage::parse(bad), None, "{bad}");
        }
    }
}
