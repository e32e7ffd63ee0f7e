//! Where configuration comes from, and how a bad value is reported: the leaf
//! that every settings file reads through, so none of them imports the file
//! that pulls the whole configuration together.

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// A configuration value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The offending key, e.g. `SOURCES.demo-stripe.scheme`.
    pub key: String,
    /// What is wrong and what is expected.
    pub problem: String,
}

impl ConfigError {
    /// An error about `key`.
    pub fn new(key: impl Into<String>, problem: impl Into<String>) -> ConfigError {
        ConfigError {
            key: key.into(),
            problem: problem.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid configuration {}: {}", self.key, self.problem)
    }
}

impl std::error::Error for ConfigError {}

/// Where configuration values come from: wrangler vars and secrets.
/// A var may be a string or (for `SOURCES`) a JSON object.
pub trait ConfigEnv {
    /// The value bound to `name`, if any.
    fn get(&self, name: &str) -> Option<Value>;
}

impl ConfigEnv for BTreeMap<String, Value> {
    fn get(&self, name: &str) -> Option<Value> {
        BTreeMap::get(self, name).cloned()
    }
}

/// The text of a key, if present: a string as it is, any other JSON value
/// as its JSON text (so `--var N:5` and `N = 5` read alike).
pub fn text(env: &impl ConfigEnv, key: &str) -> Option<String> {
    match env.get(key)? {
        Value::String(s) => Some(s),
        other => Some(other.to_string()),
    }
}

/// An optional integer key within `range`; absent means `default`.
pub fn parse_bounded(
    env: &impl ConfigEnv,
    key: &str,
    default: u64,
    range: std::ops::RangeInclusive<u64>,
) -> Result<u64, ConfigError> {
    let Some(value) = env.get(key) else {
        return Ok(default);
    };
    let parsed = match &value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    parsed.filter(|n| range.contains(n)).ok_or_else(|| {
        ConfigError::new(
            key,
            format!(
                "must be a whole number from {} to {}",
                range.start(),
                range.end()
            ),
        )
    })
}
