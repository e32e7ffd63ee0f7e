//! The stats' `hourly` series (DESIGN §4): dead letters and parked events
//! per hour over the last 24 hours, oldest first, every hour present (an
//! hour with nothing is a zero, so the console plots a steady axis).

use crate::UnixMillis;
use serde::Serialize;

/// One hour, in milliseconds.
pub const HOUR_MS: i64 = 3_600_000;
/// Hours in the series.
pub const HOURS: i64 = 24;

/// One hour of the series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HourCount {
    /// The hour's start, unix ms (UTC).
    pub hour: UnixMillis,
    /// Dead letters that arrived in it.
    pub dead_letters: i64,
    /// Events first parked in it.
    pub parked: i64,
}

/// The first millisecond the series counts: the start of the hour 23 hours
/// before the current one.
pub fn series_since(now: UnixMillis) -> UnixMillis {
    (now.div_euclid(HOUR_MS) - (HOURS - 1)) * HOUR_MS
}

/// The 24 hours ending with the current one, from per-hour counts keyed by
/// hour index (`time / HOUR_MS`, as the SQL groups them). Counts outside
/// the window are ignored.
pub fn series(
    now: UnixMillis,
    dead_letters: &[(i64, i64)],
    parked: &[(i64, i64)],
) -> Vec<HourCount> {
    let first = series_since(now).div_euclid(HOUR_MS);
    let find =
        |list: &[(i64, i64)], h: i64| list.iter().filter(|(k, _)| *k == h).map(|(_, n)| n).sum();
    (first..first + HOURS)
        .map(|h| HourCount {
            hour: h * HOUR_MS,
            dead_letters: find(dead_letters, h),
            parked: find(parked, h),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twenty_four_hours_oldest_first_with_zeros_and_nothing_outside() {
        let now = 100 * HOUR_MS + 5;
        let s = series(now, &[(100, 3), (77, 1), (76, 9)], &[(90, 2), (101, 4)]);
        assert_eq!(s.len(), 24);
        assert_eq!(s[0].hour, 77 * HOUR_MS);
        assert_eq!(s[23].hour, 100 * HOUR_MS);
        assert_eq!((s[0].dead_letters, s[23].dead_letters), (1, 3));
        assert_eq!(s[13].parked, 2);
        assert_eq!(
            s.iter().map(|h| h.dead_letters).sum::<i64>(),
            4,
            "hour 76 is outside"
        );
        assert_eq!(
            s.iter().map(|h| h.parked).sum::<i64>(),
            2,
            "hour 101 is in the future"
        );
        assert_eq!(series_since(now), 77 * HOUR_MS);
    }
}
