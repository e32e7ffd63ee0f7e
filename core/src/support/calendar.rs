//! Calendar maths for the two timestamp forms hookrelay reads from callers:
//! RFC 3339 (`since` on the admin API) and the HTTP-date in its three
//! forms (`Retry-After` from a downstream). Both reduce to one day count, so they
//! share one `days_from_civil`.
//!
//! Pure: nothing here reads a clock; callers compare the results with the
//! `now` they were given.

use crate::UnixMillis;

/// Days from 1970-01-01 to the given proleptic Gregorian date, after Howard
/// Hinnant's `days_from_civil`
/// (<https://howardhinnant.github.io/date_algorithms.html#days_from_civil>).
/// Counting years from March puts the leap day at the end of the year.
///
/// `month` is 1-12 and `day` 1-31; the day is not checked against the
/// month, so callers that need that check use their own rules first. The
/// parsers here pass four-digit years, far inside the range where the
/// arithmetic cannot overflow.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400); // [0, 399]
    let mp = i64::from((month + 9) % 12); // March = 0
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

// `u32::is_multiple_of` needs Rust 1.87; the workspace's rust-version is 1.80.
#[allow(clippy::manual_is_multiple_of)]
fn is_leap(year: u32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The one shape problem every malformed RFC 3339 value is reported as; the
/// range problems below get their own message because the fix differs.
const RFC3339_FORM: &str = "expected YYYY-MM-DDTHH:MM:SS, optional .fraction, then Z or ±HH:MM";

/// Parses `YYYY-MM-DD(T|t| )HH:MM:SS[.frac](Z|z|±HH:MM)` into unix ms.
/// Fractions below a millisecond are dropped. The error says what is wrong
/// in words fit to put in a 400 message.
///
/// A space where the offset sign belongs is read as `+`: an unencoded `+` in
/// a query string arrives as a space after form decoding, and a space can
/// mean nothing else there.
pub fn parse_rfc3339_ms(raw: &str) -> Result<UnixMillis, &'static str> {
    let b = raw.as_bytes();
    // The longest sensible form is 35 bytes with nanoseconds; anything far
    // past that is not a timestamp.
    if b.len() < 20 || b.len() > 64 {
        return Err(RFC3339_FORM);
    }
    let [year, month, day, hour, minute, second] = date_time_fields(b)?;
    let (millis, rest) = fraction_ms(&b[19..])?;
    let offset_s = offset_seconds(rest)?;
    check_date_time(year, month, day, hour, minute, second)?;
    let days = days_from_civil(i64::from(year), month, day);
    let local_s = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second);
    // Four-digit years keep this within ±2^48, far from overflow.
    Ok((local_s - offset_s) * 1000 + millis)
}

/// The six numbers of `YYYY-MM-DDTHH:MM:SS`, the first 19 bytes.
fn date_time_fields(b: &[u8]) -> Result<[u32; 6], &'static str> {
    let punctuation_ok = b[4] == b'-'
        && b[7] == b'-'
        && matches!(b[10], b'T' | b't' | b' ')
        && b[13] == b':'
        && b[16] == b':';
    if !punctuation_ok {
        return Err(RFC3339_FORM);
    }
    let mut fields = [0; 6];
    for (slot, (from, to)) in
        fields
            .iter_mut()
            .zip([(0, 4), (5, 7), (8, 10), (11, 13), (14, 16), (17, 19)])
    {
        *slot = digits(&b[from..to]).ok_or(RFC3339_FORM)?;
    }
    Ok(fields)
}

/// An optional `.digits` as milliseconds, and what follows it.
fn fraction_ms(b: &[u8]) -> Result<(i64, &[u8]), &'static str> {
    let Some(after_dot) = b.strip_prefix(b".") else {
        return Ok((0, b));
    };
    let len = after_dot.iter().take_while(|c| c.is_ascii_digit()).count();
    if len == 0 {
        return Err(RFC3339_FORM);
    }
    // Pad or cut the fraction to three digits: ".5" is 500 ms.
    let millis = (0..3).fold(0, |ms, k| {
        let d = after_dot.get(k).filter(|_| k < len).map_or(0, |c| c - b'0');
        ms * 10 + i64::from(d)
    });
    Ok((millis, &after_dot[len..]))
}

/// `Z`, `z` or `±HH:MM` (a space standing for `+`) as seconds east of UTC.
fn offset_seconds(b: &[u8]) -> Result<i64, &'static str> {
    match b {
        [b'Z' | b'z'] => Ok(0),
        [sign @ (b'+' | b'-' | b' '), h1, h2, b':', m1, m2] => {
            let oh = digits(&[*h1, *h2]).ok_or(RFC3339_FORM)?;
            let om = digits(&[*m1, *m2]).ok_or(RFC3339_FORM)?;
            if oh > 23 || om > 59 {
                return Err("the offset must be between -23:59 and +23:59");
            }
            let s = i64::from(oh * 3600 + om * 60);
            Ok(if *sign == b'-' { -s } else { s })
        }
        _ => Err(RFC3339_FORM),
    }
}

/// Refuses a date or time of day that does not exist.
fn check_date_time(
    year: u32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
) -> Result<(), &'static str> {
    if !(1..=12).contains(&month) {
        return Err("the month must be 01-12");
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err("that day does not exist in that month");
    }
    if hour > 23 {
        return Err("the hour must be 00-23");
    }
    if minute > 59 {
        return Err("the minute must be 00-59");
    }
    // 60 is a leap second; unix time has no slot for it, so it lands on the
    // first second of the next minute.
    if second > 60 {
        return Err("the second must be 00-60");
    }
    Ok(())
}

/// A run of ASCII digits as a number; `None` if any byte is not a digit.
/// Callers pass at most four bytes, so it cannot overflow.
fn digits(b: &[u8]) -> Option<u32> {
    b.iter().try_fold(0u32, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
    })
}

/// Parses an HTTP-date into unix ms; `None` if it is none. RFC 9110
/// §5.6.7 says a recipient accepts all three forms:
///
/// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`;
/// - the obsolete RFC 850 form: `Sunday, 06-Nov-94 08:49:37 GMT`, whose
///   two-digit year is the latest year with those digits that is not more
///   than 50 years after `now` ([`two_digit_year`]);
/// - ANSI C's asctime: `Sun Nov  6 08:49:37 1994`.
///
/// Lenient where a downstream's header costs nothing to accept (the
/// weekday is not checked, nor the day against the month, and runs of
/// spaces count as one), strict where a value would be meaningless.
pub fn parse_http_date(raw: &str, now: UnixMillis) -> Option<UnixMillis> {
    let parts: Vec<&str> = raw.split_whitespace().collect();
    let (day, month, year, time) = match parts.as_slice() {
        [_, day, month, year, time, "GMT"] => (*day, *month, Year::Full(year), *time),
        [_, date, time, "GMT"] => {
            let mut d = date.split('-');
            let (day, month, year) = (d.next()?, d.next()?, d.next()?);
            if d.next().is_some() {
                return None;
            }
            // Two digits as the form says; four as some servers send.
            let year = match year.len() {
                2 => Year::TwoDigit(year),
                4 => Year::Full(year),
                _ => return None,
            };
            (day, month, year, *time)
        }
        [_, month, day, time, year] => (*day, *month, Year::Full(year), *time),
        _ => return None,
    };
    let day: u32 = digits_of(day, 2)?;
    let month = MONTHS.iter().position(|m| *m == month)? as u32 + 1;
    let hms: Vec<i64> = time
        .split(':')
        .map(|p| digits_of(p, 2).map(i64::from))
        .collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    if !(1..=31).contains(&day) || *h > 23 || *m > 59 || *s > 60 {
        return None;
    }
    let at =
        |year: i64| (days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s) * 1000;
    let year = match year {
        // Four digits at most keeps a hostile header from overflowing the
        // day count.
        Year::Full(y) => i64::from(digits_of(y, 4)?),
        Year::TwoDigit(yy) => two_digit_year(digits_of(yy, 2)?, now, at),
    };
    Some(at(year))
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A date's year as written.
enum Year<'a> {
    /// Up to four digits, taken as is.
    Full(&'a str),
    /// RFC 850's two digits.
    TwoDigit(&'a str),
}

/// The year that `yy` (0-99) stands for, per RFC 9110 §5.6.7: a date that
/// appears to be more than 50 years after `now` is in the past century.
/// `at(year)` is the date's unix ms in `year`; "more than 50 years after"
/// compares the same date 50 years earlier with `now`, so leap days and
/// the time of day count.
fn two_digit_year(yy: u32, now: UnixMillis, at: impl Fn(i64) -> UnixMillis) -> i64 {
    let too_far = |year: i64| at(year - 50) > now;
    let mut year = 2000 + i64::from(yy);
    // Bounded: `now` comes from the clock, within a few centuries of 2000.
    for _ in 0..100 {
        if too_far(year) {
            year -= 100;
        } else if !too_far(year + 100) {
            year += 100;
        } else {
            break;
        }
    }
    year
}

/// `s` as a number of 1 to `max_len` ASCII digits.
fn digits_of(s: &str, max_len: usize) -> Option<u32> {
    if s.is_empty() || s.len() > max_len {
        return None;
    }
    digits(s.as_bytes())
}

#[cfg(test)]
mod tests;
