//! Query parameters of the admin list endpoints.
//!
//! In scope: page size, the opaque keyset cursor, the dead-letter filter (as
//! query parameters and as the JSON body of replay-all), the event filter,
//! and `since` timestamps in unix ms or RFC 3339. Every refusal is a
//! `QueryError` naming the parameter, for a 400 response.
//! Out of scope: percent-decoding (callers pass decoded pairs), building SQL
//! (the worker binds these values), authorization (see `jwt`), and reading
//! the clock.
//!
//! Unknown query parameters are ignored so clients can add tracing or
//! cache-busting parameters; a known parameter given twice is refused rather
//! than letting one copy silently win.

use crate::error_code::{ErrorCode, FailureClass};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::Deserialize;
use serde_json::Value;
use std::fmt;

/// Page size when `limit` is absent.
pub const DEFAULT_LIMIT: u32 = 50;
/// The largest page size accepted.
pub const MAX_LIMIT: u32 = 200;

/// Version tag at the start of every cursor, so the encoding can change
/// later without old cursors being misread.
pub const CURSOR_PREFIX: &str = "c1.";
/// The longest cursor accepted; bounds decoding work on caller input.
pub const MAX_CURSOR_LEN: usize = 4096;

/// The dead-letter statuses a filter may name.
pub const DEAD_LETTER_STATUSES: [&str; 3] = ["pending", "replayed", "poisoned"];
/// The failure classes a filter may name, as `FailureClass::as_str` spells them.
pub const FAILURE_CLASSES: [&str; 3] = ["transient", "poison", "unknown"];

/// Source names follow the `SOURCES` rule: 1-64 characters of a-z, 0-9, `-`, `_`.
pub const MAX_SOURCE_LEN: usize = 64;
/// The longest idempotency key a filter may name, in characters. Keys the
/// relay mints are at most 64 + 1 + 256.
pub const MAX_KEY_LEN: usize = 400;

/// A query parameter that cannot be used; answered with 400 `BAD_REQUEST`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    /// The offending parameter, e.g. `limit` or `filter.status`.
    pub param: String,
    /// What is wrong and what is expected.
    pub message: String,
}

impl QueryError {
    /// An error about `param`.
    pub fn new(param: impl Into<String>, message: impl Into<String>) -> QueryError {
        QueryError {
            param: param.into(),
            message: message.into(),
        }
    }

    /// The HTTP status: always 400.
    pub fn status(&self) -> u16 {
        400
    }

    /// The stable error code for the response body.
    pub fn code(&self) -> &'static str {
        "BAD_REQUEST"
    }
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {}: {}", self.param, self.message)
    }
}

impl std::error::Error for QueryError {}

/// Parses `limit`: absent or empty gives `DEFAULT_LIMIT`; otherwise a whole
/// number from 1 to `MAX_LIMIT`. Out-of-range values are refused rather than
/// clamped, so a client asking for 1000 learns it gets at most 200.
pub fn parse_limit(raw: Option<&str>) -> Result<u32, QueryError> {
    let raw = match raw {
        None | Some("") => return Ok(DEFAULT_LIMIT),
        Some(raw) => raw,
    };
    // `u32::from_str` also takes a leading `+`; only plain digits are a limit.
    let n = if raw.bytes().all(|b| b.is_ascii_digit()) {
        raw.parse::<u32>().ok()
    } else {
        None
    };
    match n {
        Some(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        _ => Err(QueryError::new(
            "limit",
            format!(
                "must be a whole number from 1 to {MAX_LIMIT}; got {}",
                shown(raw)
            ),
        )),
    }
}

/// Opaque keyset cursor over (created_at_ms DESC, id DESC): the next page
/// holds rows strictly after this position.
///
/// It is not signed. It only names a position in a list the caller may read
/// anyway, so a forged one can do no more than an ordinary query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// `created_at` of the last row returned, unix ms.
    pub at_ms: i64,
    /// `id` of the last row returned.
    pub id: String,
}

/// The JSON inside a cursor. Unknown fields are refused so a cursor from a
/// later encoding is not half-read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CursorWire {
    t: i64,
    i: String,
}

/// Encodes a cursor: `c1.` and base64url (no padding) of `{"t":…,"i":…}`.
pub fn encode_cursor(c: &Cursor) -> String {
    // Written by hand so field order is fixed whatever serde_json features
    // another crate enables; `Value`'s Display escapes the id and cannot fail.
    let json = format!(
        "{{\"t\":{},\"i\":{}}}",
        c.at_ms,
        Value::String(c.id.clone())
    );
    format!("{CURSOR_PREFIX}{}", URL_SAFE_NO_PAD.encode(json))
}

/// Decodes a cursor made by `encode_cursor`. Anything else is refused under
/// param `cursor`. An empty string is refused too; see `parse_cursor` for
/// the query-parameter form where empty means absent.
pub fn decode_cursor(raw: &str) -> Result<Cursor, QueryError> {
    let refuse = || {
        QueryError::new(
            "cursor",
            "is not a cursor this API issued; pass the cursor from the previous page unchanged, or omit it for the first page",
        )
    };
    if raw.len() > MAX_CURSOR_LEN {
        return Err(refuse());
    }
    let body = raw.strip_prefix(CURSOR_PREFIX).ok_or_else(refuse)?;
    let bytes = URL_SAFE_NO_PAD.decode(body).map_err(|_| refuse())?;
    // serde would also read a derived struct from a JSON array; only the
    // object form is ever issued, so only it is accepted.
    if bytes.first() != Some(&b'{') {
        return Err(refuse());
    }
    let wire: CursorWire = serde_json::from_slice(&bytes).map_err(|_| refuse())?;
    Ok(Cursor {
        at_ms: wire.t,
        id: wire.i,
    })
}

/// The `cursor` query parameter: absent or empty is the first page.
pub fn parse_cursor(raw: Option<&str>) -> Result<Option<Cursor>, QueryError> {
    match raw {
        None | Some("") => Ok(None),
        Some(raw) => decode_cursor(raw).map(Some),
    }
}

/// Which dead letters a list or replay-all applies to. `None` matches all.
/// Values are stored in their canonical spelling.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeadLetterFilter {
    /// `pending`, `replayed` or `poisoned`.
    pub status: Option<String>,
    /// A failure class: `transient`, `poison` or `unknown`.
    pub class: Option<String>,
    /// A stable error code such as `UPSTREAM_5XX`.
    pub code: Option<String>,
    /// A source name.
    pub source: Option<String>,
}

/// The fields of a dead-letter filter.
#[derive(Clone, Copy)]
enum DeadLetterField {
    Status,
    Class,
    Code,
    Source,
}

impl DeadLetterField {
    fn from_name(name: &str) -> Option<DeadLetterField> {
        match name {
            "status" => Some(DeadLetterField::Status),
            "class" => Some(DeadLetterField::Class),
            "code" => Some(DeadLetterField::Code),
            "source" => Some(DeadLetterField::Source),
            _ => None,
        }
    }

    fn slot(self, f: &mut DeadLetterFilter) -> &mut Option<String> {
        match self {
            DeadLetterField::Status => &mut f.status,
            DeadLetterField::Class => &mut f.class,
            DeadLetterField::Code => &mut f.code,
            DeadLetterField::Source => &mut f.source,
        }
    }

    /// Validates a non-empty value, returning its canonical spelling.
    fn check(self, param: &str, value: &str) -> Result<String, QueryError> {
        match self {
            DeadLetterField::Status => DEAD_LETTER_STATUSES
                .into_iter()
                .find(|s| *s == value)
                .map(str::to_owned)
                .ok_or_else(|| one_of(param, value, &DEAD_LETTER_STATUSES)),
            DeadLetterField::Class => FailureClass::parse(value)
                .map(|c| c.as_str().to_owned())
                .ok_or_else(|| one_of(param, value, &FAILURE_CLASSES)),
            DeadLetterField::Code => ErrorCode::parse(value)
                .map(|c| c.as_str().to_owned())
                .ok_or_else(|| one_of(param, value, &ErrorCode::ALL.map(ErrorCode::as_str))),
            DeadLetterField::Source => check_source(param, value),
        }
    }
}

/// Parses the dead-letter filter from decoded query pairs: `status`,
/// `class`, `code`, `source`. Empty values count as absent; other parameters
/// (including `limit` and `cursor`) are left to their own parsers.
pub fn parse_dead_letter_filter(
    params: &[(String, String)],
) -> Result<DeadLetterFilter, QueryError> {
    let mut filter = DeadLetterFilter::default();
    for (name, value) in params {
        let Some(field) = DeadLetterField::from_name(name) else {
            continue;
        };
        if value.is_empty() {
            continue;
        }
        let checked = field.check(name, value)?;
        set_once(field.slot(&mut filter), name, checked)?;
    }
    Ok(filter)
}

/// The dead-letter filter as the JSON body of replay-all: an object with
/// optional string fields `status`, `class`, `code`, `source`. `null` (the
/// whole filter or a field) and `""` count as absent.
///
/// Unlike the query form, an unknown field is refused: replay-all acts on
/// everything the filter matches, so a misspelt field must not silently
/// widen it to every dead letter.
pub fn dead_letter_filter_from_json(v: &Value) -> Result<DeadLetterFilter, QueryError> {
    let fields =
        match v {
            Value::Null => return Ok(DeadLetterFilter::default()),
            Value::Object(fields) => fields,
            _ => return Err(QueryError::new(
                "filter",
                "must be a JSON object with optional string fields status, class, code and source",
            )),
        };
    let mut filter = DeadLetterFilter::default();
    for (name, value) in fields {
        let Some(field) = DeadLetterField::from_name(name) else {
            return Err(QueryError::new(
                "filter",
                format!(
                    "unknown field {}; the fields are status, class, code and source",
                    shown(name)
                ),
            ));
        };
        let param = format!("filter.{name}");
        match value {
            Value::Null => {}
            Value::String(s) if s.is_empty() => {}
            Value::String(s) => *field.slot(&mut filter) = Some(field.check(&param, s)?),
            _ => return Err(QueryError::new(param, "must be a string or null")),
        }
    }
    Ok(filter)
}

/// Parses a `since` value: unix milliseconds (digits only), or an RFC 3339
/// timestamp such as `2026-11-30T18:00:00Z`, `2026-11-30T18:00:00.250Z` or
/// `2026-11-30T20:00:00+02:00`. Returns unix ms; fractions below a
/// millisecond are dropped.
///
/// A space where the offset sign belongs is read as `+`: an unencoded `+` in
/// a query string arrives as a space after form decoding, and a space can
/// mean nothing else there.
pub fn parse_since(raw: &str, param: &str) -> Result<i64, QueryError> {
    if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) {
        return raw
            .parse::<i64>()
            .map_err(|_| QueryError::new(param, "is too large to be a unix time in milliseconds"));
    }
    rfc3339_ms(raw).map_err(|problem| {
        QueryError::new(
            param,
            format!(
                "must be unix milliseconds or an RFC 3339 timestamp such as 2026-11-30T18:00:00Z; {problem}; got {}",
                shown(raw)
            ),
        )
    })
}

/// Which events a list applies to. `None` matches all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// A source name.
    pub source: Option<String>,
    /// An exact idempotency key.
    pub key: Option<String>,
    /// Only events ingested at or after this time, unix ms.
    pub since_ms: Option<i64>,
}

/// Parses the event filter from decoded query pairs: `source`, `key` (an
/// idempotency key, at most 400 characters) and `since` (see `parse_since`).
/// Empty values count as absent; other parameters are ignored.
pub fn parse_event_filter(params: &[(String, String)]) -> Result<EventFilter, QueryError> {
    let mut filter = EventFilter::default();
    for (name, value) in params {
        if value.is_empty() {
            continue;
        }
        match name.as_str() {
            "source" => set_once(&mut filter.source, name, check_source(name, value)?)?,
            "key" => {
                if value.chars().count() > MAX_KEY_LEN {
                    return Err(QueryError::new(
                        name.as_str(),
                        format!("must be an idempotency key of at most {MAX_KEY_LEN} characters"),
                    ));
                }
                set_once(&mut filter.key, name, value.clone())?
            }
            "since" => set_once(&mut filter.since_ms, name, parse_since(value, name)?)?,
            _ => {}
        }
    }
    Ok(filter)
}

/// Fills a filter slot, refusing a second value for the same parameter.
fn set_once<T>(slot: &mut Option<T>, param: &str, value: T) -> Result<(), QueryError> {
    if slot.is_some() {
        return Err(QueryError::new(
            param,
            "is given more than once; give it once",
        ));
    }
    *slot = Some(value);
    Ok(())
}

fn check_source(param: &str, value: &str) -> Result<String, QueryError> {
    let ok = !value.is_empty()
        && value.len() <= MAX_SOURCE_LEN
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if ok {
        Ok(value.to_owned())
    } else {
        Err(QueryError::new(
            param,
            format!(
                "must be a source name of 1-{MAX_SOURCE_LEN} characters of a-z, 0-9, '-' or '_'; got {}",
                shown(value)
            ),
        ))
    }
}

fn one_of(param: &str, value: &str, allowed: &[&str]) -> QueryError {
    QueryError::new(
        param,
        format!(
            "must be one of {}; got {}",
            allowed.join(", "),
            shown(value)
        ),
    )
}

/// Caller input fit to quote in a message: escaped, and cut short so an
/// error never carries a large or hostile value back.
fn shown(raw: &str) -> String {
    const MAX: usize = 40;
    if raw.chars().count() <= MAX {
        format!("{raw:?}")
    } else {
        let head: String = raw.chars().take(MAX).collect();
        format!("{head:?}…")
    }
}

/// `YYYY-MM-DD(T|t| )HH:MM:SS[.frac](Z|z|±HH:MM)` as unix ms.
fn rfc3339_ms(raw: &str) -> Result<i64, &'static str> {
    const FORM: &str = "expected YYYY-MM-DDTHH:MM:SS, optional .fraction, then Z or ±HH:MM";
    let b = raw.as_bytes();
    // The longest sensible form is 35 bytes with nanoseconds; anything far
    // past that is not a timestamp.
    if b.len() < 20 || b.len() > 64 {
        return Err(FORM);
    }
    let punctuation_ok = b[4] == b'-'
        && b[7] == b'-'
        && matches!(b[10], b'T' | b't' | b' ')
        && b[13] == b':'
        && b[16] == b':';
    if !punctuation_ok {
        return Err(FORM);
    }
    let field = |from: usize, to: usize| digits(&b[from..to]).ok_or(FORM);
    let year = field(0, 4)?;
    let month = field(5, 7)?;
    let day = field(8, 10)?;
    let hour = field(11, 13)?;
    let minute = field(14, 16)?;
    let second = field(17, 19)?;

    let mut i = 19;
    let mut millis = 0;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return Err(FORM);
        }
        // Pad or cut the fraction to three digits: ".5" is 500 ms.
        for k in 0..3 {
            let d = if start + k < i {
                b[start + k] - b'0'
            } else {
                0
            };
            millis = millis * 10 + i64::from(d);
        }
    }
    let offset_s = match &b[i..] {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-' | b' '), h1, h2, b':', m1, m2] => {
            let oh = digits(&[*h1, *h2]).ok_or(FORM)?;
            let om = digits(&[*m1, *m2]).ok_or(FORM)?;
            if oh > 23 || om > 59 {
                return Err("the offset must be between -23:59 and +23:59");
            }
            let s = i64::from(oh * 3600 + om * 60);
            if *sign == b'-' {
                -s
            } else {
                s
            }
        }
        _ => return Err(FORM),
    };

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

    let days = days_from_civil(i64::from(year), month, day);
    let local_s = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second);
    // Four-digit years keep this within ±2^48, far from overflow.
    Ok((local_s - offset_s) * 1000 + millis)
}

/// A run of ASCII digits as a number; `None` if any byte is not a digit.
/// Callers pass at most four bytes, so it cannot overflow.
fn digits(b: &[u8]) -> Option<u32> {
    b.iter().try_fold(0u32, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
    })
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

/// Days from 1970-01-01 to the given proleptic Gregorian date, after Howard
/// Hinnant's `days_from_civil`
/// (<https://howardhinnant.github.io/date_algorithms.html#days_from_civil>).
/// Counting years from March puts the leap day at the end of the year.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400); // [0, 399]
    let mp = i64::from((month + 9) % 12); // March = 0
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn limit_defaults_and_accepts_one_to_the_maximum() {
        let table = [
            (None, 50),
            (Some(""), 50),
            (Some("1"), 1),
            (Some("50"), 50),
            (Some("007"), 7),
            (Some("200"), 200),
        ];
        for (raw, want) in table {
            assert_eq!(parse_limit(raw), Ok(want), "{raw:?}");
        }
    }

    #[test]
    fn a_limit_out_of_range_or_not_a_number_is_refused_not_clamped() {
        let table = [
            "0",
            "201",
            "1000",
            "-1",
            "+5",
            " 5",
            "5 ",
            "1.5",
            "1e2",
            "ten",
            "4294967296",
            "99999999999999999999999",
        ];
        for raw in table {
            let err = parse_limit(Some(raw)).unwrap_err();
            assert_eq!(err.param, "limit", "{raw}");
            assert!(err.message.contains("1 to 200"), "{}", err.message);
            assert_eq!((err.status(), err.code()), (400, "BAD_REQUEST"));
        }
    }

    #[test]
    fn a_cursor_round_trips() {
        let table = [
            Cursor {
                at_ms: 1_796_061_600_000,
                id: "dlq_01HZX".into(),
            },
            Cursor {
                at_ms: 0,
                id: "".into(),
            },
            Cursor {
                at_ms: i64::MAX,
                id: "demo-stripe:evt_1".into(),
            },
            Cursor {
                at_ms: -1,
                id: "quote \" backslash \\ newline \n".into(),
            },
            Cursor {
                at_ms: 42,
                id: "ünïcødé ✓".into(),
            },
        ];
        for c in table {
            let raw = encode_cursor(&c);
            assert!(raw.starts_with("c1."), "{raw}");
            assert!(
                raw[3..]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{raw} is not url-safe without padding"
            );
            assert_eq!(decode_cursor(&raw), Ok(c.clone()));
            assert_eq!(parse_cursor(Some(&raw)), Ok(Some(c)));
        }
    }

    #[test]
    fn the_cursor_encoding_is_fixed() {
        let c = Cursor {
            at_ms: 1_700_000_000_000,
            id: "dlq_1".into(),
        };
        // printf '{"t":1700000000000,"i":"dlq_1"}' | base64 | tr '+/' '-_' | tr -d '='
        assert_eq!(
            encode_cursor(&c),
            "c1.eyJ0IjoxNzAwMDAwMDAwMDAwLCJpIjoiZGxxXzEifQ"
        );
    }

    #[test]
    fn an_absent_or_empty_cursor_is_the_first_page() {
        assert_eq!(parse_cursor(None), Ok(None));
        assert_eq!(parse_cursor(Some("")), Ok(None));
    }

    #[test]
    fn a_tampered_or_foreign_cursor_is_refused() {
        let good = encode_cursor(&Cursor {
            at_ms: 1_700_000_000_000,
            id: "dlq_1".into(),
        });
        let b64 = |s: &str| format!("c1.{}", URL_SAFE_NO_PAD.encode(s));
        let table = [
            "".to_string(),
            "c1.".into(),
            "c1".into(),
            "garbage".into(),
            good[3..].to_string(),
            format!("c2.{}", &good[3..]),
            format!("C1.{}", &good[3..]),
            good[..good.len() - 1].to_string(),
            format!("{good}="),
            format!("{good}!"),
            good.replace('J', "+"),
            b64("not json"),
            b64("[1700000000000,\"dlq_1\"]"),
            b64(r#"{"t":"1700000000000","i":"dlq_1"}"#),
            b64(r#"{"t":1.5,"i":"dlq_1"}"#),
            b64(r#"{"t":1700000000000}"#),
            b64(r#"{"i":"dlq_1"}"#),
            b64(r#"{"t":1,"i":7}"#),
            b64(r#"{"t":1,"i":"x","extra":true}"#),
            b64(r#"{"t":1,"i":"x","t":2}"#),
            b64(r#"{"t":99999999999999999999,"i":"x"}"#),
            b64(r#"{"t":1,"i":"x"} trailing"#),
            format!("c1.{}", "A".repeat(MAX_CURSOR_LEN)),
            "c1.é".into(),
        ];
        for raw in table {
            let Err(err) = decode_cursor(&raw) else {
                panic!("{raw:?} was accepted");
            };
            assert_eq!(err.param, "cursor", "{raw:?}");
            assert!(
                !err.message.contains(&raw) || raw.is_empty(),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn every_dead_letter_filter_value_is_accepted() {
        let mut table: Vec<(&str, &str)> = vec![
            ("status", "pending"),
            ("status", "replayed"),
            ("status", "poisoned"),
            ("source", "demo-stripe"),
            ("source", "a"),
            ("source", "under_score-9"),
        ];
        table.extend(FAILURE_CLASSES.map(|c| ("class", c)));
        let codes = ErrorCode::ALL.map(ErrorCode::as_str);
        table.extend(codes.iter().map(|c| ("code", *c)));
        let long_source = "s".repeat(64);
        table.push(("source", &long_source));
        for (param, value) in table {
            let f = parse_dead_letter_filter(&pairs(&[(param, value)])).unwrap();
            let got = match param {
                "status" => f.status,
                "class" => f.class,
                "code" => f.code,
                _ => f.source,
            };
            assert_eq!(got.as_deref(), Some(value), "{param}={value}");
            let f = dead_letter_filter_from_json(&json!({ param: value })).unwrap();
            assert_eq!(
                f,
                parse_dead_letter_filter(&pairs(&[(param, value)])).unwrap()
            );
        }
    }

    #[test]
    fn the_class_names_are_the_failure_class_spellings() {
        for name in FAILURE_CLASSES {
            assert_eq!(
                FailureClass::parse(name).map(FailureClass::as_str),
                Some(name)
            );
        }
    }

    #[test]
    fn a_bad_dead_letter_filter_value_names_the_param_and_the_allowed_values() {
        let long_source = "s".repeat(65);
        let table = [
            ("status", "PENDING", "pending, replayed, poisoned"),
            ("status", "done", "pending, replayed, poisoned"),
            ("status", " pending", "pending, replayed, poisoned"),
            ("class", "Transient", "transient, poison, unknown"),
            ("class", "fatal", "transient, poison, unknown"),
            ("code", "upstream_5xx", "UPSTREAM_5XX"),
            ("code", "HTTP_500", "BAD_PAYLOAD, SCHEMA_MISMATCH"),
            ("source", "Demo", "a-z, 0-9"),
            ("source", "demo stripe", "a-z, 0-9"),
            ("source", "démo", "a-z, 0-9"),
            ("source", long_source.as_str(), "1-64"),
        ];
        for (param, value, mentions) in table {
            let err = parse_dead_letter_filter(&pairs(&[(param, value)])).unwrap_err();
            assert_eq!(err.param, param, "{param}={value}");
            assert!(err.message.contains(mentions), "{}", err.message);
            let err = dead_letter_filter_from_json(&json!({ param: value })).unwrap_err();
            assert_eq!(err.param, format!("filter.{param}"));
            assert!(err.message.contains(mentions), "{}", err.message);
        }
    }

    #[test]
    fn the_dead_letter_query_ignores_empty_and_unknown_params() {
        let params = pairs(&[
            ("limit", "10"),
            ("cursor", "whatever"),
            ("status", ""),
            ("utm", "x"),
            ("Status", "nonsense"),
            ("code", "TIMEOUT"),
            ("class", ""),
            ("class", "transient"),
        ]);
        let want = DeadLetterFilter {
            status: None,
            class: Some("transient".into()),
            code: Some("TIMEOUT".into()),
            source: None,
        };
        assert_eq!(parse_dead_letter_filter(&params), Ok(want));
        assert_eq!(
            parse_dead_letter_filter(&[]),
            Ok(DeadLetterFilter::default())
        );
    }

    #[test]
    fn a_dead_letter_param_given_twice_is_refused() {
        for params in [
            [("status", "pending"), ("status", "poisoned")],
            [("source", "a"), ("source", "a")],
        ] {
            let err = parse_dead_letter_filter(&pairs(&params)).unwrap_err();
            assert_eq!(err.param, params[0].0);
        }
    }

    #[test]
    fn the_json_filter_takes_nulls_and_empty_strings_as_absent() {
        let table = [
            (json!(null), DeadLetterFilter::default()),
            (json!({}), DeadLetterFilter::default()),
            (
                json!({"status": null, "class": "", "code": "RATE_LIMITED", "source": "demo-github"}),
                DeadLetterFilter {
                    status: None,
                    class: None,
                    code: Some("RATE_LIMITED".into()),
                    source: Some("demo-github".into()),
                },
            ),
        ];
        for (v, want) in table {
            assert_eq!(dead_letter_filter_from_json(&v), Ok(want), "{v}");
        }
    }

    #[test]
    fn a_json_filter_of_the_wrong_shape_is_refused() {
        let table = [
            (json!("pending"), "filter"),
            (json!([{"status": "pending"}]), "filter"),
            (json!(true), "filter"),
            (json!({"stauts": "pending"}), "filter"),
            (json!({"status": 1}), "filter.status"),
            (json!({"class": ["poison"]}), "filter.class"),
            (json!({"code": {"x": 1}}), "filter.code"),
            (json!({"source": false}), "filter.source"),
        ];
        for (v, param) in table {
            let err = dead_letter_filter_from_json(&v).unwrap_err();
            assert_eq!(err.param, param, "{v}");
        }
        let err = dead_letter_filter_from_json(&json!({"stauts": "pending"})).unwrap_err();
        assert!(err.message.contains("\"stauts\""), "{}", err.message);
    }

    #[test]
    fn since_takes_unix_ms_or_rfc_3339() {
        // Expected seconds from `date -u -d <timestamp> +%s`.
        let table = [
            ("0", 0),
            ("1796061600000", 1_796_061_600_000),
            ("9223372036854775807", i64::MAX),
            ("2026-11-30T18:00:00Z", 1_796_061_600_000),
            ("2026-11-30t18:00:00z", 1_796_061_600_000),
            ("2026-11-30 18:00:00Z", 1_796_061_600_000),
            ("2026-11-30T18:00:00.250Z", 1_796_061_600_250),
            ("2026-11-30T18:00:00.5Z", 1_796_061_600_500),
            ("2026-11-30T18:00:00.123456789Z", 1_796_061_600_123),
            ("2026-11-30T20:00:00+02:00", 1_796_061_600_000),
            ("2026-11-30T20:00:00 02:00", 1_796_061_600_000),
            ("2026-11-30T12:30:00-05:30", 1_796_061_600_000),
            ("2026-11-30T18:00:00+00:00", 1_796_061_600_000),
            ("2026-11-30T18:00:00-00:00", 1_796_061_600_000),
            ("2026-12-01T17:59:00+23:59", 1_796_061_600_000),
            ("2024-02-29T00:00:00Z", 1_709_164_800_000),
            ("2000-02-29T00:00:00Z", 951_782_400_000),
            ("2000-03-01T00:00:00Z", 951_868_800_000),
            ("1970-01-01T00:00:00Z", 0),
            ("1969-12-31T23:59:59.999Z", -1),
            ("1600-03-01T00:00:00Z", -11_670_912_000_000),
            ("0000-01-01T00:00:00Z", -62_167_219_200_000),
            ("9999-12-31T23:59:59Z", 253_402_300_799_000),
            ("2016-12-31T23:59:60Z", 1_483_228_800_000),
        ];
        for (raw, want) in table {
            assert_eq!(parse_since(raw, "since"), Ok(want), "{raw}");
        }
    }

    #[test]
    fn a_since_that_is_not_a_real_time_is_refused_naming_the_param() {
        let table = [
            ("", "expected YYYY-MM-DD"),
            ("-1", "expected YYYY-MM-DD"),
            ("1.5", "expected YYYY-MM-DD"),
            ("9223372036854775808", "too large"),
            ("2026-02-30T00:00:00Z", "day does not exist"),
            ("2026-02-29T00:00:00Z", "day does not exist"),
            ("1900-02-29T00:00:00Z", "day does not exist"),
            ("2026-04-31T00:00:00Z", "day does not exist"),
            ("2026-01-00T00:00:00Z", "day does not exist"),
            ("2026-13-01T00:00:00Z", "month must be 01-12"),
            ("2026-00-01T00:00:00Z", "month must be 01-12"),
            ("2026-11-30T24:00:00Z", "hour"),
            ("2026-11-30T18:60:00Z", "minute"),
            ("2026-11-30T18:00:61Z", "second"),
            ("2026-11-30T18:00:00+24:00", "offset"),
            ("2026-11-30T18:00:00+02:60", "offset"),
            ("2026-11-30T18:00:00", "expected YYYY-MM-DD"),
            ("2026-11-30", "expected YYYY-MM-DD"),
            ("2026-11-30T18:00Z", "expected YYYY-MM-DD"),
            ("2026-11-30T18:00:00.Z", "expected YYYY-MM-DD"),
            ("2026-11-30T18:00:00+0200", "expected YYYY-MM-DD"),
            ("2026-11-30T18:00:00+2:00", "expected YYYY-MM-DD"),
            ("2026-11-30T18:00:00ZZ", "expected YYYY-MM-DD"),
            ("2026-11-30T18:00:00 Z", "expected YYYY-MM-DD"),
            ("2026/11/30T18:00:00Z", "expected YYYY-MM-DD"),
            ("+026-11-30T18:00:00Z", "expected YYYY-MM-DD"),
            ("2026-1a-30T18:00:00Z", "expected YYYY-MM-DD"),
            ("2026-11-30T18:00:00.12é4Z", "expected YYYY-MM-DD"),
            ("ééééééééééééééééééééé", "expected YYYY-MM-DD"),
            ("yesterday", "expected YYYY-MM-DD"),
        ];
        for (raw, mentions) in table {
            let err = parse_since(raw, "since").unwrap_err();
            assert_eq!(err.param, "since", "{raw}");
            assert!(err.message.contains(mentions), "{raw}: {}", err.message);
        }
        let long = format!("2026-11-30T18:00:00.{}Z", "1".repeat(100));
        assert_eq!(parse_since(&long, "from").unwrap_err().param, "from");
    }

    #[test]
    fn days_from_civil_agrees_with_a_day_by_day_count() {
        // Walk every day from 1900 to 2100 and check each is one more than
        // the last; with 1970-01-01 at zero this pins the whole range.
        let mut expected = days_from_civil(1900, 1, 1);
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        for year in 1900..=2100u32 {
            for month in 1..=12 {
                for day in 1..=days_in_month(year, month) {
                    assert_eq!(days_from_civil(i64::from(year), month, day), expected);
                    expected += 1;
                }
            }
        }
    }

    #[test]
    fn the_event_filter_reads_source_key_and_since() {
        let key = "k".repeat(400);
        let table = [
            (vec![], EventFilter::default()),
            (
                vec![
                    ("source", "demo-stripe"),
                    ("key", "demo-stripe:evt_1"),
                    ("since", "1000"),
                ],
                EventFilter {
                    source: Some("demo-stripe".into()),
                    key: Some("demo-stripe:evt_1".into()),
                    since_ms: Some(1000),
                },
            ),
            (
                vec![
                    ("since", "2026-11-30T18:00:00Z"),
                    ("key", ""),
                    ("limit", "5"),
                    ("x", "y"),
                ],
                EventFilter {
                    since_ms: Some(1_796_061_600_000),
                    ..EventFilter::default()
                },
            ),
            (
                vec![("key", key.as_str())],
                EventFilter {
                    key: Some(key.clone()),
                    ..EventFilter::default()
                },
            ),
        ];
        for (params, want) in table {
            assert_eq!(parse_event_filter(&pairs(&params)), Ok(want), "{params:?}");
        }
    }

    #[test]
    fn a_bad_event_filter_names_the_param() {
        let long_key = "k".repeat(401);
        let table = [
            (vec![("source", "Demo")], "source"),
            (vec![("key", long_key.as_str())], "key"),
            (vec![("since", "2026-02-30T00:00:00Z")], "since"),
            (vec![("since", "soon")], "since"),
            (vec![("since", "1"), ("since", "2")], "since"),
            (vec![("key", "a"), ("key", "b")], "key"),
        ];
        for (params, param) in table {
            let err = parse_event_filter(&pairs(&params)).unwrap_err();
            assert_eq!(err.param, param, "{params:?}");
        }
    }

    #[test]
    fn error_messages_quote_input_briefly_and_escaped() {
        let hostile = format!("\"<script>\n{}", "x".repeat(1000));
        let err = parse_limit(Some(&hostile)).unwrap_err();
        assert!(err.message.len() < 200, "{}", err.message);
        assert!(!err.message.contains('\n'), "{}", err.message);
        assert_eq!(err.to_string(), format!("invalid limit: {}", err.message));
    }

    #[test]
    fn no_truncation_or_substitution_panics() {
        let cursor = encode_cursor(&Cursor {
            at_ms: 1_796_061_600_000,
            id: "dlq_1".into(),
        });
        for base in ["2026-11-30T18:00:00.250+02:00", cursor.as_str(), "200"] {
            let mut variants: Vec<String> =
                (0..base.len()).map(|i| base[..i].to_string()).collect();
            for i in 0..base.len() {
                for c in ["", "-", ":", ".", "+", " ", "9", "é", "\0"] {
                    variants.push(format!("{}{c}{}", &base[..i], &base[i + 1..]));
                }
            }
            for raw in variants {
                // Only the outcome's existence matters here: none may panic.
                let _ = parse_since(&raw, "since");
                let _ = decode_cursor(&raw);
                let _ = parse_limit(Some(&raw));
                let _ = parse_event_filter(&pairs(&[("source", &raw), ("key", &raw)]));
                let _ = parse_dead_letter_filter(&pairs(&[("status", &raw), ("code", &raw)]));
            }
        }
    }
}
