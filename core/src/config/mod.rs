//! Configuration: parsed once per isolate into typed values.
//!
//! A bad value is refused with an error that names the key; nothing falls
//! back silently to a default. An absent optional key takes its documented
//! default. `build.rs` runs the same parsers over the committed
//! `wrangler.toml`, so a broken demo configuration fails the build.

use crate::breaker::{BreakerConfig, BreakerOpenAction};
pub use crate::parking::config::ParkingConfig;
use crate::retry_policy::RetrySchedule;
use crate::signature::{Scheme, SigningKey};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// Default timestamp tolerance, either way, in seconds.
pub const DEFAULT_TOLERANCE_S: u32 = 300;
/// Default `MAX_BODY_BYTES`: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 1024 * 1024;
/// Default `DELIVERY_TIMEOUT_MS`.
pub const DEFAULT_DELIVERY_TIMEOUT_MS: u64 = 10_000;

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
pub struct Sources(Vec<Source>);

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
        if !["scheme", "tolerance_s", "downstream"].contains(&field.as_str()) {
            return Err(ConfigError::new(
                key(&format!(".{field}")),
                "unknown field; expected scheme, tolerance_s or downstream",
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
    })
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

fn is_http_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    matches!(rest, Some(r) if !r.is_empty() && !r.starts_with('/') && !url.chars().any(char::is_whitespace))
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

/// The text of a string key, if present.
fn text(env: &impl ConfigEnv, key: &str) -> Option<String> {
    match env.get(key)? {
        Value::String(s) => Some(s),
        other => Some(other.to_string()),
    }
}

/// Downstream delivery settings, shared by the consumer and by replay.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Source name to downstream URL, for sources that forward.
    pub downstreams: BTreeMap<String, String>,
    /// The key from `DOWNSTREAM_SIGNING_SECRET`; required when any source forwards.
    pub signing_key: Option<SigningKey>,
    /// `DELIVERY_TIMEOUT_MS`: per-attempt timeout.
    pub timeout_ms: u64,
    /// `BREAKER_FAILURE_THRESHOLD`, `BREAKER_SUCCESS_THRESHOLD`, `BREAKER_COOLDOWN_S`.
    pub breaker: BreakerConfig,
    /// `BREAKER_OPEN_ACTION`: `park` (default), `retry` or `dead-letter`.
    pub breaker_open_action: BreakerOpenAction,
    /// `DRAIN_RATE_PER_S` and `PARK_MAX_AGE`.
    pub parking: ParkingConfig,
}

impl DeliveryConfig {
    /// Whether events of `source` are forwarded to a downstream.
    pub fn forwards(&self, source: &str) -> bool {
        self.downstreams.contains_key(source)
    }

    /// Reads the delivery settings for the declared sources.
    pub fn load(env: &impl ConfigEnv, specs: &[SourceSpec]) -> Result<DeliveryConfig, ConfigError> {
        // Inserted one by one: `collect` into a map sorts first, and that
        // sort is a few KB of wasm for this one type.
        let mut downstreams = BTreeMap::new();
        for s in specs {
            if let Some(d) = &s.downstream {
                downstreams.insert(s.name.clone(), d.clone());
            }
        }
        let signing_key = text(env, "DOWNSTREAM_SIGNING_SECRET")
            .and_then(|s| SigningKey::from_secret(Scheme::HmacSha256, &s).ok());
        if signing_key.is_none() && !downstreams.is_empty() {
            let names: Vec<&str> = downstreams.keys().map(String::as_str).collect();
            return Err(ConfigError::new(
                "DOWNSTREAM_SIGNING_SECRET",
                format!("is not set, but source(s) {} forward to a downstream; set it with `wrangler secret put DOWNSTREAM_SIGNING_SECRET`", names.join(", ")),
            ));
        }
        let breaker_open_action = match text(env, "BREAKER_OPEN_ACTION") {
            None => BreakerOpenAction::default(),
            Some(raw) => BreakerOpenAction::parse(&raw).ok_or_else(|| {
                ConfigError::new(
                    "BREAKER_OPEN_ACTION",
                    "must be `park`, `retry` or `dead-letter`",
                )
            })?,
        };
        Ok(DeliveryConfig {
            downstreams,
            signing_key,
            timeout_ms: parse_bounded(
                env,
                "DELIVERY_TIMEOUT_MS",
                DEFAULT_DELIVERY_TIMEOUT_MS,
                100..=120_000,
            )?,
            breaker: BreakerConfig {
                failure_threshold: parse_bounded(env, "BREAKER_FAILURE_THRESHOLD", 5, 1..=1000)?
                    as u32,
                success_threshold: parse_bounded(env, "BREAKER_SUCCESS_THRESHOLD", 1, 1..=100)?
                    as u32,
                cooldown_ms: parse_bounded(env, "BREAKER_COOLDOWN_S", 60, 1..=86_400)? as i64
                    * 1000,
            },
            breaker_open_action,
            parking: ParkingConfig::load(env)?,
        })
    }
}

/// Everything the relay worker needs, validated.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// Configured sources by name.
    pub sources: Sources,
    /// The retry schedule.
    pub retry: RetrySchedule,
    /// Largest accepted request body.
    pub max_body_bytes: u64,
    /// Downstream delivery.
    pub delivery: DeliveryConfig,
    /// `RELAY_INTERNAL_SECRET`: proves the DLQ worker's replay calls. Without
    /// it the internal route refuses every call (and says which key).
    pub internal_key: Option<Vec<u8>>,
}

impl RelayConfig {
    /// Reads and validates the relay's configuration.
    pub fn load(env: &impl ConfigEnv) -> Result<RelayConfig, ConfigError> {
        let specs = load_sources(env)?;
        // `specs` are in name order (a JSON object's keys, read sorted).
        let mut sources = Vec::with_capacity(specs.len());
        for spec in specs.iter().cloned() {
            let secret_key = spec.secret_name();
            let secret = text(env, &secret_key).filter(|s| !s.is_empty()).ok_or_else(|| {
                ConfigError::new(
                    &secret_key,
                    format!("is not set; source '{}' cannot verify signatures without it. Set it with `wrangler secret put {secret_key}` (or in .dev.vars locally)", spec.name),
                )
            })?;
            let key = SigningKey::from_secret(spec.scheme, &secret)
                .map_err(|problem| ConfigError::new(&secret_key, problem))?;
            sources.push(Source { spec, key });
        }
        let retry = match text(env, "RETRY_DELAYS_S") {
            Some(raw) => RetrySchedule::parse(&raw)?,
            None => RetrySchedule::default(),
        };
        Ok(RelayConfig {
            sources: Sources(sources),
            retry,
            max_body_bytes: parse_bounded(
                env,
                "MAX_BODY_BYTES",
                DEFAULT_MAX_BODY_BYTES,
                1..=100 * 1024 * 1024,
            )?,
            delivery: DeliveryConfig::load(env, &specs)?,
            internal_key: text(env, crate::internal_token::SECRET_NAME)
                .filter(|s| !s.is_empty())
                .map(String::into_bytes),
        })
    }
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

    fn env(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn demo_env() -> BTreeMap<String, Value> {
        env(&[
            (
                "SOURCES",
                json!({"demo-stripe": {"scheme": "stripe"}, "demo-standard": {"scheme": "standard-webhooks", "tolerance_s": 60, "downstream": "http://127.0.0.1:9/x"}}),
            ),
            (
                "WEBHOOK_SECRET_DEMO_STRIPE",
                json!("whsec_plain_for_stripe"),
            ),
            (
                "WEBHOOK_SECRET_DEMO_STANDARD",
                json!("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            ),
            ("DOWNSTREAM_SIGNING_SECRET", json!("down-secret")),
        ])
    }

    #[test]
    fn a_forwarding_source_needs_the_downstream_signing_secret() {
        let mut e = demo_env();
        e.remove("DOWNSTREAM_SIGNING_SECRET");
        let err = RelayConfig::load(&e).unwrap_err();
        assert_eq!(err.key, "DOWNSTREAM_SIGNING_SECRET");
        assert!(err.problem.contains("demo-standard"));
        e.insert(
            "SOURCES".into(),
            json!({"demo-stripe": {"scheme": "stripe"}}),
        );
        assert!(
            RelayConfig::load(&e).is_ok(),
            "not needed without a downstream"
        );
    }

    #[test]
    fn the_breaker_settings_are_read_and_the_secret_is_not_debug_printed() {
        let mut e = demo_env();
        e.insert("BREAKER_FAILURE_THRESHOLD".into(), json!("3"));
        e.insert("BREAKER_COOLDOWN_S".into(), json!("2"));
        e.insert("BREAKER_OPEN_ACTION".into(), json!("dead-letter"));
        let d = RelayConfig::load(&e).unwrap().delivery;
        assert_eq!(
            (d.breaker.failure_threshold, d.breaker.cooldown_ms),
            (3, 2000)
        );
        assert_eq!(d.breaker_open_action, BreakerOpenAction::DeadLetter);
        assert_eq!(d.downstreams["demo-standard"], "http://127.0.0.1:9/x");
        assert!(!format!("{d:?}").contains("down-secret"));
    }

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
    fn a_complete_configuration_loads_with_defaults() {
        let cfg = RelayConfig::load(&demo_env()).unwrap();
        assert_eq!(cfg.sources.len(), 2);
        assert_eq!(cfg.retry, RetrySchedule::default());
        assert_eq!(cfg.max_body_bytes, 1_048_576);
        assert_eq!(cfg.delivery.timeout_ms, 10_000);
        assert_eq!(cfg.delivery.breaker, BreakerConfig::default());
        assert_eq!(cfg.delivery.breaker_open_action, BreakerOpenAction::Park);
        assert_eq!(cfg.delivery.parking.drain_rate_per_s, 10.0);
        assert_eq!(cfg.delivery.parking.max_age_ms, 72 * 3_600_000);
        assert_eq!(
            cfg.sources.get("demo-standard").unwrap().spec.tolerance_s,
            60
        );
        let names: Vec<&str> = cfg.sources.keys().collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "sources are listed in name order");
    }

    #[test]
    fn a_source_without_its_secret_is_a_configuration_error() {
        let mut e = demo_env();
        e.remove("WEBHOOK_SECRET_DEMO_STRIPE");
        let err = RelayConfig::load(&e).unwrap_err();
        assert_eq!(err.key, "WEBHOOK_SECRET_DEMO_STRIPE");
        assert!(err.problem.contains("wrangler secret put"));
    }

    #[test]
    fn bad_numeric_settings_are_refused_not_defaulted() {
        let table = [
            ("DELIVERY_TIMEOUT_MS", json!("99")),
            ("DELIVERY_TIMEOUT_MS", json!("120001")),
            ("DELIVERY_TIMEOUT_MS", json!("ten")),
            ("MAX_BODY_BYTES", json!("0")),
            ("RETRY_DELAYS_S", json!("30,x")),
            ("BREAKER_FAILURE_THRESHOLD", json!("0")),
            ("BREAKER_COOLDOWN_S", json!("-1")),
            ("BREAKER_OPEN_ACTION", json!("drop")),
            ("DRAIN_RATE_PER_S", json!("0")),
            ("DRAIN_RATE_PER_S", json!("-1")),
            ("DRAIN_RATE_PER_S", json!("1001")),
            ("DRAIN_RATE_PER_S", json!("fast")),
            ("DRAIN_RATE_PER_S", json!("NaN")),
            ("PARK_MAX_AGE", json!("72")),
            ("PARK_MAX_AGE", json!("0h")),
            ("PARK_MAX_AGE", json!("3 weeks")),
        ];
        for (key, value) in table {
            let mut e = demo_env();
            e.insert(key.to_string(), value.clone());
            assert_eq!(RelayConfig::load(&e).unwrap_err().key, key, "{key}={value}");
        }
        let mut e = demo_env();
        e.insert("DELIVERY_TIMEOUT_MS".into(), json!("100"));
        assert_eq!(RelayConfig::load(&e).unwrap().delivery.timeout_ms, 100);
    }

    #[test]
    fn a_secret_never_appears_in_a_configuration_error() {
        let mut e = demo_env();
        e.insert(
            "WEBHOOK_SECRET_DEMO_STANDARD".into(),
            json!("whsec_!!not-base64-secretvalue"),
        );
        let err = RelayConfig::load(&e).unwrap_err();
        assert_eq!(err.key, "WEBHOOK_SECRET_DEMO_STANDARD");
        assert!(!err.to_string().contains("not-base64-secretvalue"));
    }
}

/// Everything the DLQ worker needs, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DlqConfig {
    /// Maximum pending entries before the oldest is evicted (`DLQ_CAPACITY`).
    pub capacity: u64,
    /// Delay before a dead letter that could not be stored is retried (`DLQ_RETRY_DELAY_S`).
    pub retry_delay_s: u32,
    /// Failed replays before an entry becomes `poisoned` (`MAX_REPLAY_ATTEMPTS`).
    pub max_replay_attempts: u32,
}

impl DlqConfig {
    /// Reads and validates the DLQ worker's configuration.
    pub fn load(env: &impl ConfigEnv) -> Result<DlqConfig, ConfigError> {
        Ok(DlqConfig {
            capacity: parse_bounded(
                env,
                "DLQ_CAPACITY",
                crate::dlq_capacity::DEFAULT_CAPACITY,
                1..=10_000_000,
            )?,
            retry_delay_s: parse_bounded(env, "DLQ_RETRY_DELAY_S", 30, 0..=43_200)? as u32,
            max_replay_attempts: parse_bounded(env, "MAX_REPLAY_ATTEMPTS", 5, 1..=100)? as u32,
        })
    }
}

#[cfg(test)]
mod dlq_config_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_dlq_configuration_defaults_and_refuses_bad_values() {
        let empty = BTreeMap::<String, Value>::new();
        assert_eq!(
            DlqConfig::load(&empty).unwrap(),
            DlqConfig {
                capacity: 10_000,
                retry_delay_s: 30,
                max_replay_attempts: 5
            }
        );
        for (key, value) in [
            ("DLQ_CAPACITY", json!("0")),
            ("DLQ_CAPACITY", json!("lots")),
            ("DLQ_RETRY_DELAY_S", json!("43201")),
            ("MAX_REPLAY_ATTEMPTS", json!("0")),
        ] {
            let env: BTreeMap<String, Value> = [(key.to_string(), value)].into_iter().collect();
            assert_eq!(DlqConfig::load(&env).unwrap_err().key, key);
        }
    }
}
