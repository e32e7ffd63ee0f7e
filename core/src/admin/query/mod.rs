//! Query parameters of the admin list endpoints.
//!
//! In scope: page size and the opaque keyset cursor (`limits`, `cursor`,
//! `page`), the dead-letter filter (as query parameters and as the JSON body
//! of replay-all), the event filter with `since` timestamps in unix ms or
//! RFC 3339, and the audit filter. Every refusal is a `QueryError` naming
//! the parameter, for a 400 response.
//! Out of scope: percent-decoding (callers pass decoded pairs), building SQL
//! (the worker binds these values), authorization (see `jwt`), and reading
//! the clock.
//!
//! Each listing declares the parameters it accepts (`DEAD_LETTER_PARAMS`,
//! `EVENT_PARAMS`, `AUDIT_PARAMS`, `GROUP_PARAMS`), and its filter parser refuses any other:
//! a misspelt filter such as `stauts=pending` would otherwise list
//! everything while looking filtered, and a later parameter could not be
//! added without changing what old requests mean. A known parameter given
//! twice is refused rather than letting one copy silently win.

mod activity;
mod archive_filter;
mod audit_filter;
mod cursor;
mod dead_letter_filter;
mod dead_letter_listing;
mod event_filter;
mod group_filter;
mod limits;
mod page;
mod params;
mod time_range;

use std::fmt;

pub use activity::{
    activity_horizon, next_activity_cursor, parse_activity_query, ActivityQuery, ACTIVITY_PARAMS,
    ACTIVITY_SETTLE_MS,
};
pub use archive_filter::{
    next_cursor as next_archive_cursor, parse_archive_listing, ArchiveListing, ARCHIVE_PARAMS,
};
pub use audit_filter::{parse_audit_filter, AuditFilter, AUDIT_PARAMS, MAX_JOB_ID_LEN};
pub use cursor::{
    decode_cursor, encode_cursor, parse_cursor, Cursor, CURSOR_PREFIX, MAX_CURSOR_LEN,
};
pub use dead_letter_filter::{
    dead_letter_filter_from_json, parse_dead_letter_filter, DeadLetterFilter, DEAD_LETTER_PARAMS,
    DEAD_LETTER_STATUSES, FAILURE_CLASSES,
};
pub use dead_letter_listing::{parse_dead_letter_listing, DeadLetterListing, EVICTED_STATUS};
pub use event_filter::{
    parse_event_filter, parse_since, EventFilter, DELIVERY_STATUSES, EVENT_PARAMS, MAX_KEY_LEN,
};
pub use group_filter::{parse_group_filter, GROUP_PARAMS, MAX_GROUPS};
pub use limits::{parse_limit, DEFAULT_LIMIT, MAX_LIMIT};
pub use page::{parse_page, Page};
pub(crate) use params::name_shown;
pub use params::{refuse_any, MAX_SOURCE_LEN};
pub use time_range::{parse_time_range, TimeRange};

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

/// Decoded query pairs from `(name, value)` literals, for the tests of every
/// submodule.
#[cfg(test)]
fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_quote_input_briefly_and_escaped() {
        let hostile = format!("\"<script>\n{}", "x".repeat(1000));
        let err = parse_limit(Some(&hostile)).unwrap_err();
        assert!(err.message.len() < 200, "{}", err.message);
        assert!(!err.message.contains('\n'), "{}", err.message);
        assert_eq!(err.to_string(), format!("invalid limit: {}", err.message));
        assert_eq!((err.status(), err.code()), (400, "BAD_REQUEST"));
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
                let _ = parse_audit_filter(&pairs(&[("entry_id", &raw), ("job_id", &raw)]));
                let _ = parse_page(&pairs(&[("limit", &raw), ("cursor", &raw)]));
                let _ = parse_page(&pairs(&[(&raw, "1")]));
            }
        }
    }
}
