//! `DRAIN_RATE_PER_S` and `PARK_MAX_AGE`, part of the delivery settings
//! (`crate::deliver::settings::DeliveryConfig::parking`).

use crate::support::env::{text, ConfigEnv, ConfigError};
use serde_json::Value;

/// Default `DRAIN_RATE_PER_S`: parked events delivered per second per destination.
pub const DEFAULT_DRAIN_RATE_PER_S: f64 = 10.0;
/// Default `PARK_MAX_AGE`: 72 hours.
pub const DEFAULT_PARK_MAX_AGE_MS: i64 = 72 * 3_600_000;

/// How parked events are drained and how long they may wait.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParkingConfig {
    /// `DRAIN_RATE_PER_S`: the mean delivery rate of a drain, per destination.
    pub drain_rate_per_s: f64,
    /// `PARK_MAX_AGE`: how long an event may stay parked, from when it was first parked.
    pub max_age_ms: i64,
}

impl Default for ParkingConfig {
    fn default() -> Self {
        ParkingConfig {
            drain_rate_per_s: DEFAULT_DRAIN_RATE_PER_S,
            max_age_ms: DEFAULT_PARK_MAX_AGE_MS,
        }
    }
}

impl ParkingConfig {
    /// Reads `DRAIN_RATE_PER_S` (a number > 0 and ≤ 1000) and `PARK_MAX_AGE`
    /// (a duration with a unit).
    pub fn load(env: &impl ConfigEnv) -> Result<ParkingConfig, ConfigError> {
        let drain_rate_per_s = match env.get("DRAIN_RATE_PER_S") {
            None => DEFAULT_DRAIN_RATE_PER_S,
            Some(v) => match &v {
                Value::Number(n) => n.as_f64(),
                // serde_json's number parser, not `str::parse`: the wasm already
                // carries it, and core's float parser would add kilobytes.
                Value::String(s) => serde_json::from_str::<f64>(s.trim()).ok(),
                _ => None,
            }
            .filter(|r| r.is_finite() && *r > 0.0 && *r <= 1000.0)
            .ok_or_else(|| {
                ConfigError::new(
                    "DRAIN_RATE_PER_S",
                    "must be a number greater than 0 and at most 1000 (events per second per destination), e.g. 10 or 0.5",
                )
            })?,
        };
        let max_age_ms = match text(env, "PARK_MAX_AGE") {
            None => DEFAULT_PARK_MAX_AGE_MS,
            Some(raw) => crate::support::duration::parse_duration_ms(&raw)
                .map_err(|problem| ConfigError::new("PARK_MAX_AGE", problem))?,
        };
        Ok(ParkingConfig {
            drain_rate_per_s,
            max_age_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::deliver::breaker::BreakerOpenAction;
    use crate::deliver::settings::DeliveryConfig;
    use crate::parking::settings::ParkingConfig;
    use crate::receive::sources::load_sources;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

    fn delivery(
        env: &BTreeMap<String, Value>,
    ) -> Result<DeliveryConfig, crate::support::env::ConfigError> {
        DeliveryConfig::load(env, &load_sources(env)?)
    }

    fn demo_env() -> BTreeMap<String, Value> {
        [
            (
                "SOURCES",
                json!({"a": {"scheme": "github", "downstream": "http://127.0.0.1:9/x"}}),
            ),
            ("WEBHOOK_SECRET_A", json!("secret")),
            ("DOWNSTREAM_SIGNING_SECRET", json!("down-secret")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    #[test]
    fn the_defaults_are_ten_per_second_and_seventy_two_hours() {
        let d = delivery(&demo_env()).unwrap();
        assert_eq!(d.parking, ParkingConfig::default());
        assert_eq!(d.breaker_open_action, BreakerOpenAction::Park);
    }

    #[test]
    fn bad_parking_values_are_refused_with_their_key() {
        for (key, value) in [
            ("DRAIN_RATE_PER_S", json!("0")),
            ("DRAIN_RATE_PER_S", json!("1000.5")),
            ("DRAIN_RATE_PER_S", json!("inf")),
            ("DRAIN_RATE_PER_S", json!(true)),
            ("PARK_MAX_AGE", json!("12")),
            ("PARK_MAX_AGE", json!(60)),
            ("BREAKER_OPEN_ACTION", json!("hold")),
        ] {
            let mut e = demo_env();
            e.insert(key.to_string(), value.clone());
            let err = delivery(&e).unwrap_err();
            assert_eq!(err.key, key, "{key}={value}");
            assert!(err.to_string().contains(key));
        }
    }

    #[test]
    fn parking_settings_accept_their_documented_forms() {
        let table = [
            ("BREAKER_OPEN_ACTION", json!("retry")),
            ("BREAKER_OPEN_ACTION", json!("dead-letter")),
            ("BREAKER_OPEN_ACTION", json!("park")),
            ("DRAIN_RATE_PER_S", json!("0.5")),
            ("DRAIN_RATE_PER_S", json!("1000")),
            ("DRAIN_RATE_PER_S", json!(20)),
            ("PARK_MAX_AGE", json!("90s")),
            ("PARK_MAX_AGE", json!("30d")),
        ];
        for (key, value) in table {
            let mut e = demo_env();
            e.insert(key.to_string(), value.clone());
            let d = delivery(&e).unwrap();
            match key {
                "DRAIN_RATE_PER_S" => assert!(d.parking.drain_rate_per_s > 0.0),
                "PARK_MAX_AGE" => assert!(d.parking.max_age_ms >= 90_000),
                _ => assert_eq!(
                    Some(d.breaker_open_action),
                    BreakerOpenAction::parse(value.as_str().unwrap())
                ),
            }
        }
        let mut e = demo_env();
        e.insert("PARK_MAX_AGE".into(), json!("2s"));
        e.insert("DRAIN_RATE_PER_S".into(), json!("0.25"));
        let p = delivery(&e).unwrap().parking;
        assert_eq!((p.max_age_ms, p.drain_rate_per_s), (2_000, 0.25));
    }
}
