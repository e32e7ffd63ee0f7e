//! `SOURCES`: the declared webhook sources, and the secret each one needs.

use super::env::{ConfigEnv, ConfigError};
use crate::signature::{Scheme, SigningKey};
use serde_json::Value;

/// Default timestamp tolerance, either way, in seconds.
pub const DEFAULT_TOLERANCE_S: u32 = 300;

/// One source as declared in `SOURCES`, before its secret is bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSpec {
    /// The name in `/webhooks/{source}`.
    pub name: String,
    /// Its signature scheme.
    pub scheme: Scheme,
    /// Allowed timestamp skew either way, in seconds.
    pub tolerance_s: u32,
    /// Where ingested events are forwarded, if anywhere.
    pub downstream: Option<String>,
    /// `expect_every`: the `source_silent` alarm fires when nothing arrived
    /// from this source for this long (milliseconds); `None` never alarms.
    pub expect_every_ms: Option<i64>,
}

impl SourceSpec {
    /// The secret binding that holds this source's key: `WEBHOOK_SECRET_`
    /// and the name upper-cased with `-` as `_`.
    pub fn secret_name(&self) -> String {
        secret_name(&self.name)
    }
}

/// The secret binding name for a source name.
pub fn secret_name(source: &str) -> String {
    format!(
        "WEBHOOK_SECRET_{}",
        source.to_ascii_uppercase().replace('-', "_")
    )
}

/// A configured source with its key bound.
#[derive(Debug, Clone)]
pub struct Source {
    /// The declaration.
    pub spec: SourceSpec,
    /// Its signing key, decoded from the secret.
    pub key: SigningKey,
}

/// The configured sources, in name order. A relay has a handful, so they
/// are a list looked up by name: a map keyed by name costs both workers
/// its own copy of the map code.
#[derive(Debug, Clone, Default)]
pub struct Sources(pub(super) Vec<Source>);

impl Sources {
    /// The source named `name`.
    pub fn get(&self, name: &str) -> Option<&Source> {
        self.0.iter().find(|s| s.spec.name == name)
    }

    /// Whether a source is named `name`.
    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The names, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|s| s.spec.name.as_str())
    }

    /// Every source, in order.
    pub fn values(&self) -> impl Iterator<Item = &Source> {
        self.0.iter()
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Parses `SOURCES`: a JSON object, or a JSON string holding one (so that
/// `wrangler dev --var SOURCES:'{…}'` works).
pub fn parse_sources(raw: &Value) -> Result<Vec<SourceSpec>, ConfigError> {
    const KEY: &str = "SOURCES";
    let parsed;
    let object = match raw {
        Value::Object(map) => map,
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).map_err(|e| {
                ConfigError::new(KEY, format!("is a string but not JSON ({e}); expected a JSON object of source name to {{\"scheme\": …}}"))
            })?;
            match &parsed {
                Value::Object(map) => map,
                _ => {
                    return Err(ConfigError::new(
                        KEY,
                        "must be a JSON object of source name to {\"scheme\": …}",
                    ))
                }
            }
        }
        _ => {
            return Err(ConfigError::new(
                KEY,
                "must be a JSON object of source name to {\"scheme\": …}",
            ))
        }
    };
    if object.is_empty() {
        return Err(ConfigError::new(
            KEY,
            "declares no sources; add at least one",
        ));
    }
    object
        .iter()
        .map(|(name, decl)| parse_source(name, decl))
        .collect()
}

fn parse_source(name: &str, decl: &Value) -> Result<SourceSpec, ConfigError> {
    let key = |field: &str| format!("SOURCES.{name}{field}");
    let name_ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if !name_ok {
        return Err(ConfigError::new(
            key(""),
            "a source name must be 1-64 characters of a-z, 0-9, '-' or '_'",
        ));
    }
    let Value::Object(fields) = decl else {
        return Err(ConfigError::new(
            key(""),
            "must be an object such as {\"scheme\": \"stripe\"}",
        ));
    };
    for field in fields.keys() {
        if !["scheme", "tolerance_s", "downstream", "expect_every"].contains(&field.as_str()) {
            return Err(ConfigError::new(
                key(&format!(".{field}")),
                "unknown field; expected scheme, tolerance_s, downstream or expect_every",
            ));
        }
    }
    let scheme = scheme_of(fields, &key(".scheme"))?;
    let tolerance_s = match fields.get("tolerance_s") {
        None => DEFAULT_TOLERANCE_S,
        Some(v) => v
            .as_u64()
            .filter(|t| (1..=86_400).contains(t))
            .map(|t| t as u32)
            .ok_or_else(|| {
                ConfigError::new(
                    key(".tolerance_s"),
                    "must be a whole number of seconds from 1 to 86400",
                )
            })?,
    };
    let downstream = match fields.get("downstream") {
        None | Some(Value::Null) => None,
        Some(Value::String(url)) if is_http_url(url) => Some(url.clone()),
        Some(_) => {
            return Err(ConfigError::new(
                key(".downstream"),
                "must be an http:// or https:// URL",
            ))
        }
    };
    Ok(SourceSpec {
        name: name.to_string(),
        scheme,
        tolerance_s,
        downstream,
        expect_every_ms: expect_every_of(fields, &key(".expect_every"))?,
    })
}

/// `expect_every`, a duration with a unit such as `6h`; absent or null is
/// no expectation.
fn expect_every_of(
    fields: &serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<i64>, ConfigError> {
    match fields.get("expect_every") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(raw)) => crate::duration::parse_duration_ms(raw)
            .map(Some)
            .map_err(|problem| ConfigError::new(key, problem)),
        Some(_) => Err(ConfigError::new(
            key,
            "must be a duration string with a unit, e.g. \"6h\" or \"30m\"",
        )),
    }
}

fn scheme_of(fields: &serde_json::Map<String, Value>, key: &str) -> Result<Scheme, ConfigError> {
    let expected = Scheme::ALL.map(Scheme::as_str).join(", ");
    match fields.get("scheme") {
        Some(Value::String(s)) => Scheme::parse(s).ok_or_else(|| {
            ConfigError::new(
                key,
                format!("unknown scheme '{s}'; expected one of {expected}"),
            )
        }),
        _ => Err(ConfigError::new(
            key,
            format!("is required; one of {expected}"),
        )),
    }
}

pub(super) fn is_http_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    matches!(rest, Some(r) if !r.is_empty() && !r.starts_with('/') && !url.chars().any(char::is_whitespace))
}

/// Reads `SOURCES`, which is required.
pub fn load_sources(env: &impl ConfigEnv) -> Result<Vec<SourceSpec>, ConfigError> {
    let raw = env.get("SOURCES").ok_or_else(|| {
        ConfigError::new(
            "SOURCES",
            "is not set; declare the sources in wrangler.toml [vars]",
        )
    })?;
    parse_sources(&raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sources_are_read_from_an_object_or_a_json_string() {
        let object = json!({"a": {"scheme": "github"}});
        let string = json!("{\"a\": {\"scheme\": \"github\"}}");
        assert_eq!(
            parse_sources(&object).unwrap(),
            parse_sources(&string).unwrap()
        );
        let a = &parse_sources(&object).unwrap()[0];
        assert_eq!(
            (a.scheme, a.tolerance_s, a.downstream.as_deref()),
            (Scheme::Github, 300, None)
        );
    }

    #[test]
    fn a_bad_source_declaration_names_its_key() {
        let table = [
            (json!(42), "SOURCES"),
            (json!("not json"), "SOURCES"),
            (json!({}), "SOURCES"),
            (
                json!({"Bad Name": {"scheme": "stripe"}}),
                "SOURCES.Bad Name",
            ),
            (json!({"a": "stripe"}), "SOURCES.a"),
            (json!({"a": {}}), "SOURCES.a.scheme"),
            (json!({"a": {"scheme": "md5"}}), "SOURCES.a.scheme"),
            (
                json!({"a": {"scheme": "stripe", "tolerance_s": 0}}),
                "SOURCES.a.tolerance_s",
            ),
            (
                json!({"a": {"scheme": "stripe", "tolerance_s": "300"}}),
                "SOURCES.a.tolerance_s",
            ),
            (
                json!({"a": {"scheme": "stripe", "downstream": "ftp://x"}}),
                "SOURCES.a.downstream",
            ),
            (
                json!({"a": {"scheme": "stripe", "secret": "x"}}),
                "SOURCES.a.secret",
            ),
            (
                json!({"a": {"scheme": "stripe", "expect_every": "6"}}),
                "SOURCES.a.expect_every",
            ),
            (
                json!({"a": {"scheme": "stripe", "expect_every": 3600}}),
                "SOURCES.a.expect_every",
            ),
            (
                json!({"a": {"scheme": "stripe", "expect_every": "0m"}}),
                "SOURCES.a.expect_every",
            ),
        ];
        for (raw, key) in table {
            assert_eq!(parse_sources(&raw).unwrap_err().key, key, "{raw}");
        }
    }

    #[test]
    fn the_secret_name_upper_cases_and_replaces_dashes() {
        assert_eq!(secret_name("demo-stripe"), "WEBHOOK_SECRET_DEMO_STRIPE");
        assert_eq!(
            secret_name("acme_billing-2"),
            "WEBHOOK_SECRET_ACME_BILLING_2"
        );
    }

    #[test]
    fn expect_every_is_an_optional_duration_per_source() {
        let specs = parse_sources(&json!({
            "quiet": {"scheme": "github", "expect_every": "6h"},
            "loud": {"scheme": "github"},
            "nulled": {"scheme": "github", "expect_every": null}
        }))
        .unwrap();
        let by_name = |n: &str| specs.iter().find(|s| s.name == n).unwrap().expect_every_ms;
        assert_eq!(by_name("quiet"), Some(21_600_000));
        assert_eq!(by_name("loud"), None);
        assert_eq!(by_name("nulled"), None);
    }
}
