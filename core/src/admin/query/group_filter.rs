//! The query of `GET /webhook-dlq/groups`: which entries are grouped by
//! error signature. It takes the dead-letter filter's `status`, `source`,
//! `destination`, `kind`, `code` and `class` (validated by the same rules), refuses everything
//! else, and groups pending entries unless `status` says otherwise: the
//! groups answer "what is failing now?".

use super::params::refuse_unknown;
use super::{parse_dead_letter_filter, DeadLetterFilter, QueryError};
use crate::state::EntryStatus;

/// The query parameters the groups route accepts; any other is refused.
/// (`since` and `until` are read by `parse_time_range`.)
pub const GROUP_PARAMS: [&str; 8] = [
    "status",
    "source",
    "destination",
    "kind",
    "code",
    "class",
    "since",
    "until",
];

/// At most this many groups are answered, largest first: past that the
/// tail is noise for an incident view, and the answer stays bounded.
pub const MAX_GROUPS: u32 = 200;

/// Parses the groups query. `status` defaults to `pending`.
pub fn parse_group_filter(params: &[(String, String)]) -> Result<DeadLetterFilter, QueryError> {
    // Checked first, so `limit`, `cursor` and `signature` (which the
    // listing accepts) are refused here instead of silently ignored.
    refuse_unknown(params, &GROUP_PARAMS)?;
    let mut filter = parse_dead_letter_filter(params)?;
    if filter.status.is_none() {
        filter.status = Some(EntryStatus::Pending);
    }
    Ok(filter)
}

#[cfg(test)]
mod tests {
    use super::super::pairs;
    use super::*;
    use crate::state::error_code::{ErrorCode, FailureClass};

    /// Query pairs, then the status, source and code they parse to.
    type Case<'a> = (
        &'a [(&'a str, &'a str)],
        Option<&'a str>,
        Option<&'a str>,
        Option<&'a str>,
    );

    #[test]
    fn the_groups_query_takes_four_filters_and_defaults_to_pending() {
        let table: [Case; 5] = [
            (&[], Some("pending"), None, None),
            (&[("status", "")], Some("pending"), None, None),
            (&[("status", "archived")], Some("archived"), None, None),
            (
                &[("source", "demo-hmac"), ("code", "BAD_PAYLOAD")],
                Some("pending"),
                Some("demo-hmac"),
                Some("BAD_PAYLOAD"),
            ),
            (
                &[("class", "poison"), ("status", "discarded")],
                Some("discarded"),
                None,
                None,
            ),
        ];
        for (params, status, source, code) in table {
            let f = parse_group_filter(&pairs(params)).unwrap();
            assert_eq!(f.status.map(EntryStatus::as_str), status, "{params:?}");
            assert_eq!(f.source.as_deref(), source, "{params:?}");
            assert_eq!(f.code.map(ErrorCode::as_str), code, "{params:?}");
        }
        let f = parse_group_filter(&pairs(&[("class", "poison")])).unwrap();
        assert_eq!(f.class, Some(FailureClass::Poison));
    }

    #[test]
    fn every_other_parameter_and_every_bad_value_is_refused_by_name() {
        let table = [
            (("limit", "10"), "limit"),
            (("cursor", "x"), "cursor"),
            (("signature", "sig_0123456789abcdef"), "signature"),
            (("stauts", "pending"), "stauts"),
            (("status", "gone"), "status"),
            (("code", "NOPE"), "code"),
            (("class", "sometimes"), "class"),
            (("source", "Not A Source"), "source"),
        ];
        for ((name, value), param) in table {
            let err = parse_group_filter(&pairs(&[(name, value)])).unwrap_err();
            assert_eq!(err.param, param, "{name}={value}");
        }
        let err = parse_group_filter(&pairs(&[("limit", "1")])).unwrap_err();
        assert_eq!(
            err.message,
            "unknown query parameter; this route accepts status, source, destination, kind, code, class, since, until"
        );
        let twice = pairs(&[("code", "BAD_PAYLOAD"), ("code", "UNKNOWN")]);
        assert_eq!(parse_group_filter(&twice).unwrap_err().param, "code");
    }
}
