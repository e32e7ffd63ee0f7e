//! `DESTINATIONS` (URL destinations) and the routing of an event to them.
//!
//! STAND-IN for issue 33's configuration work (branch i-a): only `url`
//! destinations and unfiltered `routes`, under the names A's version uses
//! (`Destination`, `Routed`, `DeliveryConfig::route`,
//! `DeliveryConfig::destination`), so the lead keeps A's file at merge.

use super::env::{ConfigEnv, ConfigError};
use serde_json::Value;
use std::collections::BTreeMap;

/// One configured destination.
#[derive(Debug, Clone, PartialEq)]
pub struct Destination {
    /// Its name (a `DESTINATIONS` key, or a `downstream` source's name).
    pub name: String,
    /// Where the signed POST goes.
    pub url: String,
    /// `rate_per_s`, when set (0.1–100).
    pub rate_per_s: Option<f64>,
    /// `timeout_ms`, when set (100–120000); else `DELIVERY_TIMEOUT_MS`.
    pub timeout_ms: Option<u64>,
}

/// What routing an event came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed {
    /// The source has no route (`delivery_status = none`).
    NoRoutes,
    /// The destinations whose route matched, and those whose did not.
    Routed {
        /// One delivery each.
        matched: Vec<String>,
        /// Shown in the story.
        unmatched: Vec<String>,
    },
}

const FIELDS: [&str; 3] = ["url", "rate_per_s", "timeout_ms"];

/// Parses `DESTINATIONS` (a JSON object, or a JSON string holding one);
/// absent is none.
pub fn load_destinations(
    env: &impl ConfigEnv,
) -> Result<BTreeMap<String, Destination>, ConfigError> {
    const KEY: &str = "DESTINATIONS";
    let mut out = BTreeMap::new();
    let raw = match env.get(KEY) {
        None | Some(Value::Null) => return Ok(out),
        Some(Value::String(s)) if s.trim().is_empty() => return Ok(out),
        Some(Value::String(s)) => serde_json::from_str::<Value>(&s).map_err(|e| {
            ConfigError::new(KEY, format!("is a string but not JSON ({e}); expected a JSON object of destination name to {{\"url\": …}}"))
        })?,
        Some(v) => v,
    };
    let Value::Object(map) = raw else {
        return Err(ConfigError::new(
            KEY,
            "must be a JSON object of destination name to {\"url\": …}",
        ));
    };
    for (name, decl) in &map {
        out.insert(name.clone(), parse_destination(name, decl)?);
    }
    Ok(out)
}

/// One destination's declaration; every error names its field.
fn parse_destination(name: &String, decl: &Value) -> Result<Destination, ConfigError> {
    const KEY: &str = "DESTINATIONS";
    let at = |field: &str| format!("{KEY}.{name}{field}");
    if !super::sources::valid_name(name) {
        return Err(ConfigError::new(
            at(""),
            "a destination name must be 1-64 characters of a-z, 0-9, '-' or '_'",
        ));
    }
    let Value::Object(fields) = decl else {
        return Err(ConfigError::new(
            at(""),
            "must be an object such as {\"url\": \"https://…\"}",
        ));
    };
    if let Some(f) = fields.keys().find(|f| !FIELDS.contains(&f.as_str())) {
        return Err(ConfigError::new(
            at(&format!(".{f}")),
            format!("unknown field; expected {}", FIELDS.join(", ")),
        ));
    }
    let url = match fields.get("url") {
        Some(Value::String(u)) if super::sources::is_http_url(u) => u.clone(),
        _ => {
            return Err(ConfigError::new(
                at(".url"),
                "must be an http:// or https:// URL",
            ))
        }
    };
    let rate_per_s = match fields.get("rate_per_s") {
        None => None,
        Some(v) => match v.as_f64().filter(|r| (0.1..=100.0).contains(r)) {
            Some(r) => Some(r),
            None => {
                return Err(ConfigError::new(
                    at(".rate_per_s"),
                    "must be a number from 0.1 to 100",
                ))
            }
        },
    };
    let timeout_ms = match fields.get("timeout_ms") {
        None => None,
        Some(v) => match v.as_u64().filter(|t| (100..=120_000).contains(t)) {
            Some(t) => Some(t),
            None => {
                return Err(ConfigError::new(
                    at(".timeout_ms"),
                    "must be a whole number of milliseconds from 100 to 120000",
                ))
            }
        },
    };
    Ok(Destination {
        name: name.clone(),
        url,
        rate_per_s,
        timeout_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::env::test_env as env;
    use serde_json::json;

    #[test]
    fn destinations_parse_and_every_error_names_its_path() {
        let e = env(&[(
            "DESTINATIONS",
            json!(r#"{"a": {"url": "http://127.0.0.1:1/a", "timeout_ms": 500}}"#),
        )]);
        let d = load_destinations(&e).unwrap();
        assert_eq!(d["a"].url, "http://127.0.0.1:1/a");
        assert_eq!(d["a"].timeout_ms, Some(500));
        let table = [
            (json!({"a": {"url": "ftp://x"}}), "DESTINATIONS.a.url"),
            (
                json!({"a": {"url": "http://x", "q": 1}}),
                "DESTINATIONS.a.q",
            ),
            (json!({"A!": {"url": "http://x"}}), "DESTINATIONS.A!"),
            (
                json!({"a": {"url": "http://x", "rate_per_s": 0}}),
                "DESTINATIONS.a.rate_per_s",
            ),
            (json!([1]), "DESTINATIONS"),
        ];
        for (raw, key) in table {
            let err = load_destinations(&env(&[("DESTINATIONS", raw)])).unwrap_err();
            assert_eq!(err.key, key);
        }
        assert!(load_destinations(&env(&[])).unwrap().is_empty());
    }
}
