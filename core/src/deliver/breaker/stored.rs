//! Reading a breaker state back from the JSON its `Serialize` wrote
//! (`breakers.state`), with the state's name parsed as
//! [`BreakerStateName`], so no stored name is spelled by hand.

use super::BreakerState;
use crate::state::error_code::ErrorCode;
use crate::state::BreakerStateName;
use serde::de::Error;
use serde_json::Value;

/// Reads a stored breaker state (the JSON `BreakerState`'s serde writes),
/// as its derived `Deserialize` would. Through `serde_json::Value`, whose
/// deserializer every worker already carries: the derived one is an
/// internally tagged enum, which buffers through serde's `Content` and cost
/// ~9 KB of wasm for this one read.
pub fn decode_state(text: &str) -> serde_json::Result<BreakerState> {
    let v: Value = serde_json::from_str(text)?;
    let field = |name: &'static str| v.get(name).filter(|f| !f.is_null());
    let invalid = |name: &str| serde_json::Error::custom(format!("invalid `{name}`"));
    let required =
        |name: &'static str| field(name).ok_or_else(|| serde_json::Error::missing_field(name));
    let count = |name: &'static str| {
        let n = required(name)?.as_u64().ok_or_else(|| invalid(name))?;
        u32::try_from(n).map_err(|_| invalid(name))
    };
    let millis = |name: &'static str| {
        field(name)
            .map(|f| f.as_i64().ok_or_else(|| invalid(name)))
            .transpose()
    };
    let cause = || {
        field("cause")
            .map(|c| {
                c.as_str()
                    .and_then(ErrorCode::parse)
                    .ok_or_else(|| invalid("cause"))
            })
            .transpose()
    };
    let name = v
        .get("state")
        .and_then(Value::as_str)
        .ok_or_else(|| serde_json::Error::missing_field("state"))?;
    match BreakerStateName::parse(name).map_err(serde_json::Error::custom)? {
        BreakerStateName::Closed => Ok(BreakerState::Closed {
            failures: count("failures")?,
        }),
        BreakerStateName::Open => Ok(BreakerState::Open {
            opened_at_ms: millis("opened_at_ms")?
                .ok_or_else(|| serde_json::Error::missing_field("opened_at_ms"))?,
            cause: cause()?,
        }),
        BreakerStateName::HalfOpen => Ok(BreakerState::HalfOpen {
            successes: count("successes")?,
            probe_started_at_ms: millis("probe_started_at_ms")?,
            cause: cause()?,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every state, as written, reads back as itself, exactly as the
    /// derived `Deserialize` reads it.
    #[test]
    fn reads_what_is_written() {
        let states = [
            BreakerState::Closed { failures: 0 },
            BreakerState::Closed { failures: 7 },
            BreakerState::Open {
                opened_at_ms: 1_764_000_000_000,
                cause: None,
            },
            BreakerState::Open {
                opened_at_ms: 5,
                cause: Some(ErrorCode::Upstream5xx),
            },
            BreakerState::HalfOpen {
                successes: 1,
                probe_started_at_ms: None,
                cause: None,
            },
            BreakerState::HalfOpen {
                successes: 2,
                probe_started_at_ms: Some(9),
                cause: Some(ErrorCode::Timeout),
            },
        ];
        for state in states {
            let text = serde_json::to_string(&state).unwrap();
            assert_eq!(decode_state(&text).unwrap(), state, "{text}");
            assert_eq!(serde_json::from_str::<BreakerState>(&text).unwrap(), state);
        }
    }

    /// What the derived `Deserialize` refuses or accepts, this does too.
    #[test]
    fn agrees_with_the_derived_reader() {
        let cases = [
            r#"{"state":"CLOSED"}"#,
            r#"{"state":"CLOSED","failures":-1}"#,
            r#"{"state":"CLOSED","failures":1.5}"#,
            r#"{"state":"CLOSED","failures":4294967296}"#,
            r#"{"state":"CLOSED","failures":"1"}"#,
            r#"{"state":"CLOSED","failures":null}"#,
            r#"{"state":"CLOSED","failures":3,"extra":true}"#,
            r#"{"state":"OPEN"}"#,
            r#"{"state":"OPEN","opened_at_ms":1,"cause":null}"#,
            r#"{"state":"OPEN","opened_at_ms":1,"cause":"NOPE"}"#,
            r#"{"state":"OPEN","opened_at_ms":1,"cause":3}"#,
            r#"{"state":"HALF_OPEN","successes":0}"#,
            r#"{"state":"HALF_OPEN","successes":0,"probe_started_at_ms":null}"#,
            r#"{"state":"HALF_OPEN","successes":0,"probe_started_at_ms":"x"}"#,
            r#"{"state":"open","opened_at_ms":1}"#,
            r#"{"failures":1}"#,
            r#"{"state":1}"#,
            r#"[]"#,
            r#"not json"#,
        ];
        for text in cases {
            let derived = serde_json::from_str::<BreakerState>(text).ok();
            assert_eq!(decode_state(text).ok(), derived, "{text}");
        }
    }
}
