//! UTC dates from unix milliseconds: the day an archive key names, and the
//! minute an alert's text shows. The inverse of `calendar::days_from_civil`.

use crate::UnixMillis;

/// The proleptic Gregorian `(year, month, day)` of a day count from
/// 1970-01-01, after Howard Hinnant's `civil_from_days`
/// (<https://howardhinnant.github.io/date_algorithms.html#civil_from_days>).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // March = 0
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The UTC day of `at`, as `YYYY-MM-DD`.
pub fn utc_day(at: UnixMillis) -> String {
    let (y, m, d) = civil_from_days(at.div_euclid(86_400_000));
    format!("{y:04}-{m:02}-{d:02}")
}

/// `at` to the minute, as `YYYY-MM-DD HH:MM UTC`, for text a person reads.
pub fn utc_minute(at: UnixMillis) -> String {
    let minute_of_day = at.rem_euclid(86_400_000) / 60_000;
    format!(
        "{} {:02}:{:02} UTC",
        utc_day(at),
        minute_of_day / 60,
        minute_of_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::calendar::days_from_civil;

    #[test]
    fn days_map_back_to_their_dates() {
        let table = [
            (0, "1970-01-01 00:00 UTC"),
            (86_399_999, "1970-01-01 23:59 UTC"),
            (951_782_400_000, "2000-02-29 00:00 UTC"),
            (1_796_300_000_000, "2026-12-03 12:13 UTC"),
            (-1, "1969-12-31 23:59 UTC"),
        ];
        for (at, want) in table {
            assert_eq!(utc_minute(at), want, "{at}");
        }
        for days in [-800_000, -1, 0, 59, 60, 10_957, 20_790, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{days}");
        }
    }
}
