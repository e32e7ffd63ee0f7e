//! Downstream delivery settings: where each source forwards, how calls are
//! signed and timed, and the breaker and parking rules around them.

use super::env::{parse_bounded, text, ConfigEnv, ConfigError};
use super::sources::SourceSpec;
use crate::breaker::{BreakerConfig, BreakerOpenAction};
use crate::parking::config::ParkingConfig;
use crate::signature::{KeyForm, SigningKey};
use std::collections::BTreeMap;

/// Default `DELIVERY_TIMEOUT_MS`.
pub const DEFAULT_DELIVERY_TIMEOUT_MS: u64 = 10_000;

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
            .and_then(|s| SigningKey::from_secret(KeyForm::Raw, &s).ok());
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
