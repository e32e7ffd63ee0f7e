//! The watchdog's thresholds and where alerts go (DESIGN §5, Alarms):
//! `ALERT_DLQ_OLDEST`, `ALERT_DLQ_INGRESS_PER_HOUR`, `ALERT_BREAKER_OPEN`,
//! `ALERT_PARKED_OLDEST`, `ALERT_SIGNATURE_FAILURES_PER_HOUR`, `ALERT_TIMEOUT`
//! and the secret `ALERT_WEBHOOK_URL`.

use crate::support::env::is_http_url;
use crate::support::env::{parse_bounded, parse_duration_key, text, ConfigEnv, ConfigError};
use std::fmt;

/// Default `ALERT_DLQ_OLDEST`: 1 hour.
pub const DEFAULT_ALERT_DLQ_OLDEST_MS: i64 = 3_600_000;
/// Default `ALERT_DLQ_INGRESS_PER_HOUR`.
pub const DEFAULT_ALERT_DLQ_INGRESS_PER_HOUR: u64 = 10;
/// Default `ALERT_BREAKER_OPEN`: 10 minutes.
pub const DEFAULT_ALERT_BREAKER_OPEN_MS: i64 = 600_000;
/// Default `ALERT_PARKED_OLDEST`: 30 minutes.
pub const DEFAULT_ALERT_PARKED_OLDEST_MS: i64 = 1_800_000;
/// Default `ALERT_SIGNATURE_FAILURES_PER_HOUR`.
pub const DEFAULT_ALERT_SIGNATURE_FAILURES_PER_HOUR: u64 = 20;
/// Default `ALERT_TIMEOUT`: 10 seconds.
pub const DEFAULT_ALERT_TIMEOUT_MS: i64 = 10_000;
/// The longest `ALERT_TIMEOUT`: a watchdog run's alerts go out side by
/// side, so one round of them plus the cannot-store alert stays well
/// inside the watchdog's lease (`retention::lease::LEASE_MS`).
pub const MAX_ALERT_TIMEOUT_MS: i64 = 60_000;

/// `ALERT_WEBHOOK_URL`. It is a secret (a Slack incoming-webhook URL is a
/// credential), so `Debug` never prints it and nothing serializes it.
#[derive(Clone, PartialEq, Eq)]
pub struct AlertUrl(String);

impl AlertUrl {
    /// The URL, for the one call that POSTs to it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for AlertUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AlertUrl(<secret>)")
    }
}

/// When each alarm kind fires, and where its alerts are sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlarmConfig {
    /// `ALERT_DLQ_OLDEST`: the oldest pending dead letter's age that fires `dlq_oldest`.
    pub dlq_oldest_ms: i64,
    /// `ALERT_DLQ_INGRESS_PER_HOUR`: more dead letters than this in the last hour fire `dlq_ingress`.
    pub dlq_ingress_per_hour: u64,
    /// `ALERT_BREAKER_OPEN`: time since a breaker was last CLOSED that fires `breaker_open`.
    pub breaker_open_ms: i64,
    /// `ALERT_PARKED_OLDEST`: a destination's oldest parked event's age that fires `parked_oldest`.
    pub parked_oldest_ms: i64,
    /// `ALERT_SIGNATURE_FAILURES_PER_HOUR`: more failed signature checks
    /// than this at one source in the last hour fire `signature_failures`.
    pub signature_failures_per_hour: u64,
    /// `ALERT_TIMEOUT`: how long one alert POST may take before it counts
    /// as failed (and is retried on the next run).
    pub alert_timeout_ms: i64,
    /// `ALERT_WEBHOOK_URL`: without it the watchdog still records and lists alarms.
    pub webhook_url: Option<AlertUrl>,
}

impl Default for AlarmConfig {
    fn default() -> Self {
        AlarmConfig {
            dlq_oldest_ms: DEFAULT_ALERT_DLQ_OLDEST_MS,
            dlq_ingress_per_hour: DEFAULT_ALERT_DLQ_INGRESS_PER_HOUR,
            breaker_open_ms: DEFAULT_ALERT_BREAKER_OPEN_MS,
            parked_oldest_ms: DEFAULT_ALERT_PARKED_OLDEST_MS,
            signature_failures_per_hour: DEFAULT_ALERT_SIGNATURE_FAILURES_PER_HOUR,
            alert_timeout_ms: DEFAULT_ALERT_TIMEOUT_MS,
            webhook_url: None,
        }
    }
}

impl AlarmConfig {
    /// Reads the alarm settings; each bad value is refused naming its key.
    /// An empty `ALERT_WEBHOOK_URL` counts as unset (wrangler cannot unset a
    /// secret locally, only blank it).
    pub fn load(env: &impl ConfigEnv) -> Result<AlarmConfig, ConfigError> {
        let webhook_url = match text(env, "ALERT_WEBHOOK_URL").filter(|u| !u.trim().is_empty()) {
            None => None,
            Some(url) if is_http_url(url.trim()) => Some(AlertUrl(url.trim().to_string())),
            // The value is a secret: the error never repeats it.
            Some(_) => {
                return Err(ConfigError::new(
                    "ALERT_WEBHOOK_URL",
                    "must be an http:// or https:// URL (set it with `wrangler secret put ALERT_WEBHOOK_URL`)",
                ))
            }
        };
        Ok(AlarmConfig {
            dlq_oldest_ms: parse_duration_key(
                env,
                "ALERT_DLQ_OLDEST",
                DEFAULT_ALERT_DLQ_OLDEST_MS,
            )?,
            dlq_ingress_per_hour: parse_bounded(
                env,
                "ALERT_DLQ_INGRESS_PER_HOUR",
                DEFAULT_ALERT_DLQ_INGRESS_PER_HOUR,
                0..=1_000_000,
            )?,
            breaker_open_ms: parse_duration_key(
                env,
                "ALERT_BREAKER_OPEN",
                DEFAULT_ALERT_BREAKER_OPEN_MS,
            )?,
            parked_oldest_ms: parse_duration_key(
                env,
                "ALERT_PARKED_OLDEST",
                DEFAULT_ALERT_PARKED_OLDEST_MS,
            )?,
            signature_failures_per_hour: parse_bounded(
                env,
                "ALERT_SIGNATURE_FAILURES_PER_HOUR",
                DEFAULT_ALERT_SIGNATURE_FAILURES_PER_HOUR,
                0..=1_000_000,
            )?,
            alert_timeout_ms: alert_timeout(env)?,
            webhook_url,
        })
    }
}

fn alert_timeout(env: &impl ConfigEnv) -> Result<i64, ConfigError> {
    let ms = parse_duration_key(env, "ALERT_TIMEOUT", DEFAULT_ALERT_TIMEOUT_MS)?;
    if ms > MAX_ALERT_TIMEOUT_MS {
        return Err(ConfigError::new(
            "ALERT_TIMEOUT",
            format!(
                "is {} s, above the most allowed, {} s (alerts are sent side by side within the watchdog's lease)",
                ms / 1000,
                MAX_ALERT_TIMEOUT_MS / 1000
            ),
        ));
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::support::env::test_env as env;

    #[test]
    fn the_defaults_match_the_design() {
        let cfg = AlarmConfig::load(&env(&[])).unwrap();
        assert_eq!(cfg, AlarmConfig::default());
        assert_eq!(
            (
                cfg.dlq_oldest_ms,
                cfg.dlq_ingress_per_hour,
                cfg.breaker_open_ms,
                cfg.parked_oldest_ms
            ),
            (3_600_000, 10, 600_000, 1_800_000)
        );
        assert_eq!(cfg.alert_timeout_ms, 10_000);
        assert!(cfg.webhook_url.is_none());
    }

    #[test]
    fn the_webhook_url_is_read_but_never_printed() {
        let url = "https://hooks.example/services/T0/B0/secret-token";
        let cfg = AlarmConfig::load(&env(&[("ALERT_WEBHOOK_URL", json!(url))])).unwrap();
        assert_eq!(cfg.webhook_url.as_ref().map(AlertUrl::expose), Some(url));
        assert!(!format!("{cfg:?}").contains("secret-token"));
        let blank = AlarmConfig::load(&env(&[("ALERT_WEBHOOK_URL", json!(" "))])).unwrap();
        assert!(blank.webhook_url.is_none());
    }

    #[test]
    fn every_bad_value_is_refused_naming_its_key_and_no_secret() {
        let table = [
            ("ALERT_DLQ_OLDEST", json!("60")),
            ("ALERT_DLQ_INGRESS_PER_HOUR", json!("-1")),
            ("ALERT_DLQ_INGRESS_PER_HOUR", json!("ten")),
            ("ALERT_BREAKER_OPEN", json!("0m")),
            ("ALERT_PARKED_OLDEST", json!("30 min")),
            ("ALERT_TIMEOUT", json!("10")),
            ("ALERT_TIMEOUT", json!("0s")),
            ("ALERT_TIMEOUT", json!("61s")),
            ("ALERT_TIMEOUT", json!("2m")),
            ("ALERT_WEBHOOK_URL", json!("hooks.example/secret-token")),
        ];
        for (key, value) in table {
            let err = AlarmConfig::load(&env(&[(key, value.clone())])).unwrap_err();
            assert_eq!(err.key, key, "{key}={value}");
            assert!(!err.to_string().contains("secret-token"));
        }
        let zero = AlarmConfig::load(&env(&[("ALERT_DLQ_INGRESS_PER_HOUR", json!("0"))]));
        assert_eq!(
            zero.unwrap().dlq_ingress_per_hour,
            0,
            "0: alert on any dead letter"
        );
    }

    #[test]
    fn the_alert_timeout_takes_a_unit_up_to_a_minute() {
        for (raw, want) in [
            ("1s", 1_000),
            ("30s", 30_000),
            ("60s", 60_000),
            ("1m", 60_000),
        ] {
            let cfg = AlarmConfig::load(&env(&[("ALERT_TIMEOUT", json!(raw))])).unwrap();
            assert_eq!(cfg.alert_timeout_ms, want, "{raw}");
        }
    }
}
