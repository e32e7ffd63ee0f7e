//! Which events `GET /events` lists: by source, idempotency key, ingest
//! time and delivery status.

use super::params::{check_source, one_of, refuse_unknown, set_once, shown};
use super::QueryError;
use crate::support::calendar::parse_rfc3339_ms;

/// The longest idempotency key a filter may name, in characters. Keys the
/// relay mints are at most 64 + 1 + 256.
pub const MAX_KEY_LEN: usize = 400;
/// The delivery statuses an event filter may name, as the `events` table
/// stores them.
pub const DELIVERY_STATUSES: [&str; 7] = [
    "none",
    "filtered",
    "pending",
    "delivering",
    "delivered",
    "failed",
    "parked",
];
/// The query parameters the event listing accepts; any other is refused.
pub const EVENT_PARAMS: [&str; 6] = [
    "source",
    "key",
    "since",
    "delivery_status",
    "limit",
    "cursor",
];

/// Which events a list applies to. `None` matches all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// A source name.
    pub source: Option<String>,
    /// An exact idempotency key.
    pub key: Option<String>,
    /// Only events ingested at or after this time, unix ms.
    pub since_ms: Option<i64>,
    /// One of `DELIVERY_STATUSES`.
    pub delivery_status: Option<String>,
}

/// Parses the event filter from decoded query pairs: `source`, `key` (an
/// idempotency key, at most 400 characters), `since` (see `parse_since`)
/// and `delivery_status`. Empty values count as absent. A name outside
/// `EVENT_PARAMS` is refused; `limit` and `cursor` are accepted here and
/// read by `parse_page`.
pub fn parse_event_filter(params: &[(String, String)]) -> Result<EventFilter, QueryError> {
    refuse_unknown(params, &EVENT_PARAMS)?;
    let mut filter = EventFilter::default();
    for (name, value) in params {
        if value.is_empty() {
            continue;
        }
        match name.as_str() {
            "source" => set_once(&mut filter.source, name, check_source(name, value)?)?,
            "key" => set_once(&mut filter.key, name, check_key(name, value)?)?,
            "since" => set_once(&mut filter.since_ms, name, parse_since(value, name)?)?,
            "delivery_status" => set_once(
                &mut filter.delivery_status,
                name,
                check_delivery_status(name, value)?,
            )?,
            _ => {}
        }
    }
    Ok(filter)
}

fn check_key(param: &str, value: &str) -> Result<String, QueryError> {
    if value.chars().count() > MAX_KEY_LEN {
        return Err(QueryError::new(
            param,
            format!("must be an idempotency key of at most {MAX_KEY_LEN} characters"),
        ));
    }
    Ok(value.to_owned())
}

fn check_delivery_status(param: &str, value: &str) -> Result<String, QueryError> {
    DELIVERY_STATUSES
        .into_iter()
        .find(|s| *s == value)
        .map(str::to_owned)
        .ok_or_else(|| one_of(param, value, &DELIVERY_STATUSES))
}

/// Parses a `since` value: unix milliseconds (digits only), or an RFC 3339
/// timestamp such as `2026-11-30T18:00:00Z`, `2026-11-30T18:00:00.250Z` or
/// `2026-11-30T20:00:00+02:00` (see `calendar::parse_rfc3339_ms`). Returns
/// unix ms; fractions below a millisecond are dropped. Errors name `param`.
pub fn parse_since(raw: &str, param: &str) -> Result<i64, QueryError> {
    if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) {
        return raw
            .parse::<i64>()
            .map_err(|_| QueryError::new(param, "is too large to be a unix time in milliseconds"));
    }
    parse_rfc3339_ms(raw).map_err(|problem| {
        QueryError::new(
            param,
            format!(
                "must be unix milliseconds or an RFC 3339 timestamp such as 2026-11-30T18:00:00Z; {problem}; got {}",
                shown(raw)
            ),
        )
    })
}

#[cfg(test)]
mod tests;
