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

/// A field of a declaration (`.scheme.encoding`, `.routes[1].to`, or ``
/// for the declaration itself) and what is wrong with it; the caller adds
/// the declaration's key (`SOURCES.shop`) once.
pub(crate) type FieldError = (String, String);

pub(crate) fn fail<T>(field: &str, problem: impl Into<String>) -> Result<T, FieldError> {
    Err(field_error(field, problem.into()))
}

/// Out of line, not inlined per error site (wasm bytes).
#[inline(never)]
fn field_error(field: &str, problem: String) -> FieldError {
    (field.to_string(), problem)
}

/// A var holding a JSON object, given as one (a TOML table) or as a JSON
/// string holding one (so `wrangler dev --var KEY:'{…}'` works);
/// `expected` says what the object maps, for the error.
pub(crate) fn object_var<'a>(
    key: &str,
    raw: &'a Value,
    expected: &str,
) -> Result<std::borrow::Cow<'a, serde_json::Map<String, Value>>, ConfigError> {
    use std::borrow::Cow;
    match raw {
        Value::Object(map) => Ok(Cow::Borrowed(map)),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(Cow::Owned(map)),
            Ok(_) => Err(ConfigError::new(
                key,
                format!("must be a JSON object of {expected}"),
            )),
            Err(e) => Err(ConfigError::new(
                key,
                format!("is a string but not JSON ({e}); expected a JSON object of {expected}"),
            )),
        },
        _ => Err(ConfigError::new(
            key,
            format!("must be a JSON object of {expected}"),
        )),
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

/// An optional duration key with a unit (`90s`, `15m`, `12h`, `30d`), in
/// milliseconds; absent means `default_ms`. A bare number, zero or an
/// unknown unit is refused naming `key`.
pub fn parse_duration_key(
    env: &impl ConfigEnv,
    key: &str,
    default_ms: i64,
) -> Result<i64, ConfigError> {
    match text(env, key) {
        None => Ok(default_ms),
        Some(raw) => crate::support::duration::parse_duration_ms(&raw)
            .map_err(|problem| ConfigError::new(key, problem)),
    }
}

/// An optional size key with a unit (`500MB`, `8GB`, `2GiB`), in bytes,
/// at most `max`; absent means `default`.
pub fn parse_size_key(
    env: &impl ConfigEnv,
    key: &str,
    default: u64,
    max: u64,
) -> Result<u64, ConfigError> {
    let Some(raw) = text(env, key) else {
        return Ok(default);
    };
    let bytes = crate::support::size::parse_size_bytes(&raw)
        .map_err(|problem| ConfigError::new(key, problem))?;
    if bytes > max {
        return Err(ConfigError::new(
            key,
            format!("is {bytes} bytes, above the most allowed, {max} bytes"),
        ));
    }
    Ok(bytes)
}

/// A configuration from `(key, value)` pairs, for the settings' tests.
/// The rule for source and destination names: 1-64 of a-z, 0-9, `-`, `_`.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// Whether `url` is an absolute `http://` or `https://` URL with a host.
pub fn is_http_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    matches!(rest, Some(r) if !r.is_empty() && !r.starts_with('/') && !url.chars().any(char::is_whitespace))
}

#[cfg(test)]
pub(crate) fn test_env(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}
