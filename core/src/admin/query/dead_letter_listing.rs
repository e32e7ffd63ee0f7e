//! What `GET /webhook-dlq` lists: live entries through the dead-letter
//! filter, or, for `status=evicted`, the tombstones of entries that left D1
//! for the archive (DESIGN §4). A tombstone has no class, signature or
//! live status, so `evicted` takes no other filter: a combination that
//! could never narrow the list is refused rather than ignored.

use super::dead_letter_filter::{parse_dead_letter_filter, DeadLetterFilter, DEAD_LETTER_PARAMS};
use super::params::{one_of, refuse_unknown};
use super::QueryError;
use crate::state::EntryStatus;

/// The `status` value that lists tombstones.
pub const EVICTED_STATUS: &str = "evicted";
/// Every `status` the listing takes: the entry statuses, then `evicted`.
pub const LISTING_STATUSES: [&str; 6] = [
    "pending",
    "replayed",
    "poisoned",
    "archived",
    "discarded",
    EVICTED_STATUS,
];

/// Which rows a dead-letter listing reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeadLetterListing {
    /// Entries in D1, filtered.
    Entries(DeadLetterFilter),
    /// Tombstones (evicted or swept entries), newest first.
    Tombstones,
}

/// Parses the listing from decoded query pairs (`limit` and `cursor` are
/// read by `parse_page`).
pub fn parse_dead_letter_listing(
    params: &[(String, String)],
) -> Result<DeadLetterListing, QueryError> {
    // Checked here, not by the shared filter: only the listing takes
    // `evicted`, so only its refusal may name it.
    let unknown = params.iter().find(|(k, v)| {
        k == "status" && !v.is_empty() && v != EVICTED_STATUS && EntryStatus::parse(v).is_err()
    });
    if let Some((k, v)) = unknown {
        return Err(one_of(k, v, &LISTING_STATUSES));
    }
    let evicted = params
        .iter()
        .any(|(k, v)| k == "status" && v == EVICTED_STATUS);
    if !evicted {
        return parse_dead_letter_filter(params).map(DeadLetterListing::Entries);
    }
    refuse_unknown(params, &DEAD_LETTER_PARAMS)?;
    let other = params.iter().find(|(k, v)| {
        !matches!(k.as_str(), "limit" | "cursor")
            && !v.is_empty()
            && (k != "status" || v != EVICTED_STATUS)
    });
    match other {
        Some((k, _)) if k == "status" => Err(QueryError::new("status", "is given twice; give it once")),
        Some((k, _)) => Err(QueryError::new(
            k.clone(),
            "cannot be combined with status=evicted: tombstones are listed by status, limit and cursor alone",
        )),
        None => Ok(DeadLetterListing::Tombstones),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(q: &[(&str, &str)]) -> Vec<(String, String)> {
        q.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn evicted_lists_tombstones_and_other_statuses_list_entries() {
        type Query<'a> = &'a [(&'a str, &'a str)];
        let table: [(Query, Result<DeadLetterListing, &str>); 6] = [
            (&[("status", "evicted")], Ok(DeadLetterListing::Tombstones)),
            (
                &[("status", "evicted"), ("limit", "2"), ("cursor", "x")],
                Ok(DeadLetterListing::Tombstones),
            ),
            (
                &[("status", "pending")],
                Ok(DeadLetterListing::Entries(DeadLetterFilter {
                    status: Some(EntryStatus::Pending),
                    ..Default::default()
                })),
            ),
            (&[("status", "evicted"), ("source", "demo")], Err("source")),
            (
                &[("status", "evicted"), ("status", "pending")],
                Err("status"),
            ),
            (&[("status", "evicted"), ("stauts", "x")], Err("stauts")),
        ];
        for (q, want) in table {
            let got = parse_dead_letter_listing(&pairs(q)).map_err(|e| e.param);
            assert_eq!(got, want.map_err(str::to_string), "{q:?}");
        }
    }

    #[test]
    fn an_unknown_status_is_refused_naming_every_accepted_one_evicted_included() {
        let mut accepted: Vec<&str> = EntryStatus::ALL.iter().map(|s| s.as_str()).collect();
        accepted.push(EVICTED_STATUS);
        assert_eq!(LISTING_STATUSES.to_vec(), accepted);
        for q in [
            &[("status", "evcted")][..],
            &[("status", "evicted"), ("status", "gone")],
            &[("status", "gone"), ("source", "demo")],
        ] {
            let e = parse_dead_letter_listing(&pairs(q)).expect_err("refused");
            assert_eq!(e.param, "status", "{q:?}");
            for s in accepted.iter() {
                assert!(e.message.contains(s), "{q:?}: {} lacks {s}", e.message);
            }
        }
    }
}
