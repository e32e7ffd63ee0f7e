//! The retry schedule, as data.
//!
//! Delays are indexed by the platform's `attempts` counter (1 for the first
//! delivery). Past the end of the list the last delay repeats, so a longer
//! `max_retries` never produces a shorter gap.

use crate::support::env::ConfigError;

/// Cloudflare Queues refuses a retry delay above 12 hours.
pub const MAX_QUEUE_DELAY_S: u32 = 43_200;

/// The production schedule: 30, 60, 120, 240, 480 seconds.
pub const DEFAULT_RETRY_DELAYS_S: [u32; 5] = [30, 60, 120, 240, 480];

/// Per-attempt retry delays in seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrySchedule {
    delays_s: Vec<u32>,
}

impl Default for RetrySchedule {
    fn default() -> Self {
        RetrySchedule {
            delays_s: DEFAULT_RETRY_DELAYS_S.to_vec(),
        }
    }
}

impl RetrySchedule {
    /// Parses `RETRY_DELAYS_S`: comma-separated whole seconds, at least one,
    /// each at most 43200 (the Queues limit).
    pub fn parse(raw: &str) -> Result<RetrySchedule, ConfigError> {
        let key = "RETRY_DELAYS_S";
        let mut delays_s = Vec::new();
        for part in raw.split(',') {
            let part = part.trim();
            let delay: u32 = part.parse().map_err(|_| {
                ConfigError::new(
                    key,
                    format!("'{part}' is not a whole number of seconds; expected a list such as 30,60,120,240,480"),
                )
            })?;
            if delay > MAX_QUEUE_DELAY_S {
                return Err(ConfigError::new(
                    key,
                    format!(
                        "{delay}s exceeds the Queues maximum retry delay of {MAX_QUEUE_DELAY_S}s"
                    ),
                ));
            }
            delays_s.push(delay);
        }
        Ok(RetrySchedule { delays_s })
    }

    /// The configured delays.
    pub fn delays_s(&self) -> &[u32] {
        &self.delays_s
    }

    /// The delay before the next attempt, after attempt number `attempts`
    /// (1-based, as the platform counts) has failed. Capped at the last delay.
    pub fn delay_after(&self, attempts: u32) -> u32 {
        let index = attempts.saturating_sub(1) as usize;
        let last = self.delays_s.len() - 1;
        self.delays_s[index.min(last)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_schedule_doubles_from_30_and_caps_at_480() {
        let s = RetrySchedule::default();
        let table = [
            (0, 30),
            (1, 30),
            (2, 60),
            (3, 120),
            (4, 240),
            (5, 480),
            (6, 480),
            (100, 480),
            (u32::MAX, 480),
        ];
        for (attempts, delay) in table {
            assert_eq!(s.delay_after(attempts), delay, "after attempt {attempts}");
        }
    }

    #[test]
    fn a_configured_schedule_is_parsed_and_capped_at_its_last_value() {
        let s = RetrySchedule::parse(" 1, 2,3 ").unwrap();
        assert_eq!(s.delays_s(), &[1, 2, 3]);
        assert_eq!(s.delay_after(1), 1);
        assert_eq!(s.delay_after(3), 3);
        assert_eq!(s.delay_after(9), 3);
    }

    #[test]
    fn a_bad_schedule_is_refused_naming_the_key() {
        for raw in ["", "30,,60", "thirty", "-1", "43201", "1.5"] {
            let err = RetrySchedule::parse(raw).unwrap_err();
            assert_eq!(err.key, "RETRY_DELAYS_S", "{raw}");
        }
        assert!(RetrySchedule::parse("0,43200").is_ok());
    }
}
