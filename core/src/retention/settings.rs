//! Retention and the size cap (DESIGN §5): `EVENT_RETENTION`,
//! `DLQ_RETENTION` and `D1_MAX_BYTES`. Both workers read them: the relay
//! sweeps by them, the DLQ worker's stats show them.

use crate::support::env::{parse_duration_key, parse_size_key, ConfigEnv, ConfigError};

/// Default `EVENT_RETENTION`: 30 days.
pub const DEFAULT_EVENT_RETENTION_MS: i64 = 30 * 86_400_000;
/// Default `DLQ_RETENTION`: 90 days.
pub const DEFAULT_DLQ_RETENTION_MS: i64 = 90 * 86_400_000;
/// Default `D1_MAX_BYTES`: 8 GB, leaving 2 GB under D1's hard 10 GB.
pub const DEFAULT_D1_MAX_BYTES: u64 = 8_000_000_000;
/// D1's own limit per database, which cannot be raised: a cap above it
/// would never act.
pub const D1_HARD_LIMIT_BYTES: u64 = 10_000_000_000;

/// How long D1 keeps rows, and how large it may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionConfig {
    /// `EVENT_RETENTION`: events with their attempts, payloads and steps;
    /// also the dedupe window.
    pub event_retention_ms: i64,
    /// `DLQ_RETENTION`: resolved dead letters, counted from their
    /// resolution; also bounds the audit, jobs, tombstones and alarm history.
    pub dlq_retention_ms: i64,
    /// `D1_MAX_BYTES`: above it the oldest sweepable events go first,
    /// whatever their age.
    pub d1_max_bytes: u64,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            event_retention_ms: DEFAULT_EVENT_RETENTION_MS,
            dlq_retention_ms: DEFAULT_DLQ_RETENTION_MS,
            d1_max_bytes: DEFAULT_D1_MAX_BYTES,
        }
    }
}

impl RetentionConfig {
    /// Reads the three settings; each bad value is refused naming its key.
    pub fn load(env: &impl ConfigEnv) -> Result<RetentionConfig, ConfigError> {
        Ok(RetentionConfig {
            event_retention_ms: parse_duration_key(
                env,
                "EVENT_RETENTION",
                DEFAULT_EVENT_RETENTION_MS,
            )?,
            dlq_retention_ms: parse_duration_key(env, "DLQ_RETENTION", DEFAULT_DLQ_RETENTION_MS)?,
            d1_max_bytes: parse_size_key(
                env,
                "D1_MAX_BYTES",
                DEFAULT_D1_MAX_BYTES,
                D1_HARD_LIMIT_BYTES,
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::support::env::test_env as env;

    #[test]
    fn the_defaults_are_thirty_days_ninety_days_and_eight_gigabytes() {
        let cfg = RetentionConfig::load(&env(&[])).unwrap();
        assert_eq!(cfg, RetentionConfig::default());
        assert_eq!(cfg.event_retention_ms, 2_592_000_000);
        assert_eq!(cfg.d1_max_bytes, 8_000_000_000);
    }

    #[test]
    fn shortened_values_are_read_for_tests_and_soaks() {
        let cfg = RetentionConfig::load(&env(&[
            ("EVENT_RETENTION", json!("2s")),
            ("DLQ_RETENTION", json!("15m")),
            ("D1_MAX_BYTES", json!("64KiB")),
        ]))
        .unwrap();
        assert_eq!(
            (
                cfg.event_retention_ms,
                cfg.dlq_retention_ms,
                cfg.d1_max_bytes
            ),
            (2_000, 900_000, 65_536)
        );
    }

    #[test]
    fn every_bad_value_is_refused_naming_its_key() {
        let table = [
            ("EVENT_RETENTION", json!("30")),
            ("EVENT_RETENTION", json!("0d")),
            ("EVENT_RETENTION", json!(30)),
            ("DLQ_RETENTION", json!("90 days")),
            ("D1_MAX_BYTES", json!("8")),
            ("D1_MAX_BYTES", json!("8gb")),
            ("D1_MAX_BYTES", json!("11GB")),
            ("D1_MAX_BYTES", json!("10GiB")),
        ];
        for (key, value) in table {
            let err = RetentionConfig::load(&env(&[(key, value.clone())])).unwrap_err();
            assert_eq!(err.key, key, "{key}={value}");
        }
        assert!(RetentionConfig::load(&env(&[("D1_MAX_BYTES", json!("10GB"))])).is_ok());
    }
}
