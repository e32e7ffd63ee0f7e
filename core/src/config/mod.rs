//! Configuration: parsed once per isolate into typed values.
//!
//! A bad value is refused with an error that names the key; nothing falls
//! back silently to a default. An absent optional key takes its documented
//! default. `build.rs` runs the same parsers over the committed
//! `wrangler.toml` (the user's configuration, by its schema) and over it
//! with `.dev.vars.example` (the demo's), so either, broken, fails the build.
//!
//! This module only assembles: each stage owns its settings type and how it
//! is read (`deliver::DeliveryConfig`, `retention::RetentionConfig`,
//! `alarms::AlarmConfig`, `parking::ParkingConfig`, `receive::Sources`), and
//! no stage imports `config`.

pub mod build_check;
pub mod one_source;
mod shared;

pub use shared::{check_shared, Declared, SHARED_KEYS};

use crate::alarms::settings::AlarmConfig;
use crate::deliver::settings::DeliveryConfig;
use crate::receive::front_door::FrontDoorConfig;
use crate::receive::sources::{load_sources, Sources};
use crate::retention::settings::RetentionConfig;
use crate::retry::policy::RetrySchedule;
use crate::support::env::{parse_bounded, text, ConfigEnv, ConfigError};
use crate::support::queue_names as queues;

/// Default `MAX_BODY_BYTES`: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 1024 * 1024;

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
    /// `ADMIN_JWT_SECRET`, read here too: the pull API (DESIGN §4,
    /// "Pulling") is served by the relay, which holds `DESTINATIONS`.
    /// Without it the pull API refuses every token.
    pub admin_key: Option<Vec<u8>>,
    /// `EVENT_RETENTION`, `DLQ_RETENTION`, `D1_MAX_BYTES`: what the sweep keeps.
    pub retention: RetentionConfig,
    /// `ALERT_*`: the watchdog's thresholds and receiver.
    pub alarms: AlarmConfig,
    /// `DLQ_CAPACITY`, read here too: the watchdog's `dlq_capacity` alarm
    /// fires at 90% of it (the DLQ worker enforces it).
    pub dlq_capacity: u64,
}

impl RelayConfig {
    /// Reads and validates the relay's configuration.
    pub fn load(env: &impl ConfigEnv) -> Result<RelayConfig, ConfigError> {
        // Checked here too, so a bad queue name fails at startup (every
        // request answers CONFIG_INVALID), not only at the first batch.
        queues::QueueNames::load(env, queues::RELAY_QUEUES)?;
        let specs = load_sources(env)?;
        let retry = match text(env, "RETRY_DELAYS_S") {
            Some(raw) => RetrySchedule::parse(&raw)?,
            None => RetrySchedule::default(),
        };
        Ok(RelayConfig {
            sources: Sources::bind(&specs, env)?,
            retry,
            max_body_bytes: parse_bounded(
                env,
                "MAX_BODY_BYTES",
                DEFAULT_MAX_BODY_BYTES,
                1..=100 * 1024 * 1024,
            )?,
            delivery: DeliveryConfig::load(env, &specs)?,
            internal_key: text(env, crate::admin::internal_token::SECRET_NAME)
                .filter(|s| !s.is_empty())
                .map(String::into_bytes),
            admin_key: text(env, crate::admin::jwt::ADMIN_KEY_NAME)
                .filter(|s| !s.is_empty())
                .map(String::into_bytes),
            retention: RetentionConfig::load(env)?,
            alarms: AlarmConfig::load(env)?,
            dlq_capacity: dlq_capacity(env)?,
        })
    }
}

impl RelayConfig {
    /// What the front door reads: the sources and the body limit.
    pub fn front_door(&self) -> FrontDoorConfig<'_> {
        FrontDoorConfig {
            sources: &self.sources,
            max_body_bytes: self.max_body_bytes,
        }
    }
}

/// `DLQ_CAPACITY`, validated the same way in both workers.
fn dlq_capacity(env: &impl ConfigEnv) -> Result<u64, ConfigError> {
    parse_bounded(
        env,
        "DLQ_CAPACITY",
        crate::dead_letter::capacity::DEFAULT_CAPACITY,
        1..=10_000_000,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deliver::breaker::{BreakerConfig, BreakerOpenAction};
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

    use crate::support::env::test_env as env;

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
        assert_eq!(cfg.retention, RetentionConfig::default());
        assert_eq!(cfg.alarms, AlarmConfig::default());
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
            ("EVENT_RETENTION", json!("30")),
            ("DLQ_RETENTION", json!("-90d")),
            ("D1_MAX_BYTES", json!("8")),
            ("ALERT_DLQ_OLDEST", json!("1")),
            ("ALERT_DLQ_INGRESS_PER_HOUR", json!("lots")),
            ("ALERT_BREAKER_OPEN", json!("10")),
            ("ALERT_PARKED_OLDEST", json!("half an hour")),
            ("ALERT_WEBHOOK_URL", json!("not a url")),
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
    /// `EVENT_RETENTION`, `DLQ_RETENTION`, `D1_MAX_BYTES`, for the stats
    /// (the size cap and the effective dedupe window) and the audit route
    /// (how far back D1 holds it).
    pub retention: RetentionConfig,
    /// The relay's queue names, for the envelope's `identity.queue`.
    pub origin_queues: queues::OriginQueues,
}

impl DlqConfig {
    /// Reads and validates the DLQ worker's configuration.
    pub fn load(env: &impl ConfigEnv) -> Result<DlqConfig, ConfigError> {
        queues::QueueNames::load(env, queues::DLQ_QUEUES)?;
        Ok(DlqConfig {
            capacity: dlq_capacity(env)?,
            retry_delay_s: parse_bounded(env, "DLQ_RETRY_DELAY_S", 30, 0..=43_200)? as u32,
            max_replay_attempts: parse_bounded(env, "MAX_REPLAY_ATTEMPTS", 5, 1..=100)? as u32,
            retention: RetentionConfig::load(env)?,
            origin_queues: queues::OriginQueues::load(env)?,
        })
    }
}

#[cfg(test)]
mod dlq_config_tests {
    use super::*;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

    #[test]
    fn the_dlq_configuration_defaults_and_refuses_bad_values() {
        let empty = BTreeMap::<String, Value>::new();
        assert_eq!(
            DlqConfig::load(&empty).unwrap(),
            DlqConfig {
                capacity: 10_000,
                retry_delay_s: 30,
                max_replay_attempts: 5,
                retention: RetentionConfig::default(),
                origin_queues: queues::OriginQueues::default(),
            }
        );
        for (key, value) in [
            ("DLQ_CAPACITY", json!("0")),
            ("DLQ_CAPACITY", json!("lots")),
            ("DLQ_RETRY_DELAY_S", json!("43201")),
            ("MAX_REPLAY_ATTEMPTS", json!("0")),
            ("EVENT_RETENTION", json!("30")),
            ("D1_MAX_BYTES", json!("20GB")),
        ] {
            let env: BTreeMap<String, Value> = [(key.to_string(), value)].into_iter().collect();
            assert_eq!(DlqConfig::load(&env).unwrap_err().key, key);
        }
    }
}
