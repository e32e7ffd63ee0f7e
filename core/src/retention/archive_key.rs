//! The archive's key layout, deterministic so a repeated write overwrites:
//!
//! - a chunk of swept rows: `{table}/{YYYY-MM-DD}/{first}~{last}~{seq}.ndjson`,
//!   the UTC day of the chunk's rows (a chunk never spans two days), the
//!   first and last row ids, and the chunk's sequence number (from
//!   `sweep_state.chunk_seq`, carried in the journal): a redo of a chunk
//!   rewrites its own key, and a new chunk never reuses one, so an object
//!   whose rows left D1 is never overwritten by a later chunk that happens
//!   to start and end on the same rows. The rows linked to a chunk of
//!   events (attempts, payloads, steps, deliveries) or of jobs (their
//!   entries) use the same day, range and number under their own table.
//!   Keys written before
//!   the number (`{first}~{last}.ndjson`) still parse;
//! - one dead-letter entry, evicted or swept:
//!   `dead_letters/{YYYY-MM-DD}/{entry_id}.ndjson`, the UTC day it was
//!   dead-lettered, and its claim-checked body, if any, beside it as
//!   `payloads/{YYYY-MM-DD}/{entry_id}.ndjson`.
//!
//! Ids are percent-encoded outside `A-Z a-z 0-9 _ . -`, so a URL id (a
//! drain's destination) or an id holding `~` or `/` cannot break a key.
//! `state/…` keys (the cannot-store alarm) are not archive objects and do
//! not parse as keys.

use crate::state::ArchiveTable;
use crate::support::utc::utc_day;
use crate::UnixMillis;
use std::fmt;

/// Where one archive object lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveKey {
    /// The table its rows came from.
    pub table: ArchiveTable,
    /// Their UTC day, `YYYY-MM-DD`.
    pub day: String,
    /// A chunk's id range, or one entry's id.
    pub name: KeyName,
}

/// The last part of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyName {
    /// A chunk: its first and last row ids, and its sequence number.
    Range {
        /// The first row's id.
        first: String,
        /// The last row's id.
        last: String,
        /// The chunk's number (none in keys written before it existed).
        seq: Option<u64>,
    },
    /// One dead-letter entry (or its payload).
    Entry(String),
}

impl ArchiveKey {
    /// The key of chunk `seq` of `table` rows on the UTC day of `at`.
    pub fn range(
        table: ArchiveTable,
        at: UnixMillis,
        first: &str,
        last: &str,
        seq: Option<u64>,
    ) -> ArchiveKey {
        ArchiveKey {
            table,
            day: utc_day(at),
            name: KeyName::Range {
                first: first.to_string(),
                last: last.to_string(),
                seq,
            },
        }
    }

    /// The key of dead-letter entry `id`, dead-lettered at `created_at`.
    pub fn entry(id: &str, created_at: UnixMillis) -> ArchiveKey {
        ArchiveKey {
            table: ArchiveTable::DeadLetters,
            day: utc_day(created_at),
            name: KeyName::Entry(id.to_string()),
        }
    }

    /// The same day and name under `table`: a chunk's linked rows, or an
    /// entry's claim-checked payload (`ArchiveTable::Payloads`).
    pub fn sibling(&self, table: ArchiveTable) -> ArchiveKey {
        ArchiveKey {
            table,
            ..self.clone()
        }
    }

    /// Parses a key back, for listing by table and day. Anything else (a
    /// `state/` object, a key from another tool) is `None`.
    pub fn parse(key: &str) -> Option<ArchiveKey> {
        let mut parts = key.split('/');
        let (table, day, file) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || !is_day(day) {
            return None;
        }
        let stem = file.strip_suffix(".ndjson")?;
        let parts: Vec<&str> = stem.split('~').collect();
        let name = match parts.as_slice() {
            [id] => KeyName::Entry(decode(id)?),
            [first, last] => KeyName::Range {
                first: decode(first)?,
                last: decode(last)?,
                seq: None,
            },
            [first, last, seq] if !seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit()) => {
                KeyName::Range {
                    first: decode(first)?,
                    last: decode(last)?,
                    seq: Some(seq.parse().ok()?),
                }
            }
            _ => return None,
        };
        Some(ArchiveKey {
            table: ArchiveTable::parse(table).ok()?,
            day: day.to_string(),
            name,
        })
    }
}

impl fmt::Display for ArchiveKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/", self.table.as_str(), self.day)?;
        match &self.name {
            KeyName::Range { first, last, seq } => {
                write!(f, "{}~{}", encode(first), encode(last))?;
                match seq {
                    Some(n) => write!(f, "~{n}.ndjson"),
                    None => write!(f, ".ndjson"),
                }
            }
            KeyName::Entry(id) => write!(f, "{}.ndjson", encode(id)),
        }
    }
}

/// The R2 list prefixes for `GET /api/v1/admin/archive?table=&day=`: one
/// per table asked (every table when none), narrowed to the day if given.
/// A malformed day is refused, so a typo never lists everything.
pub fn list_prefixes(
    table: Option<ArchiveTable>,
    day: Option<&str>,
) -> Result<Vec<String>, String> {
    if let Some(d) = day.filter(|d| !is_day(d)) {
        return Err(format!(
            "day '{}' is not a UTC day YYYY-MM-DD (a date that exists)",
            d.chars().take(32).collect::<String>()
        ));
    }
    let tables = table.map_or(ArchiveTable::ALL.to_vec(), |t| vec![t]);
    Ok(tables
        .into_iter()
        .map(|t| match day {
            Some(d) => format!("{}/{d}/", t.as_str()),
            None => format!("{}/", t.as_str()),
        })
        .collect())
}

/// The R2 custom-metadata field that holds an object's row count, so the
/// listing answers row counts without reading objects.
pub const ROWS_METADATA: &str = "rows";

/// `YYYY-MM-DD` naming a date that exists (`2026-13-45` does not).
fn is_day(d: &str) -> bool {
    let b = d.as_bytes();
    let shaped = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if !shaped {
        return false;
    }
    let num = |r: std::ops::Range<usize>| d[r].parse::<u32>().unwrap_or(0);
    let (y, m, day) = (i64::from(num(0..4)), num(5..7), num(8..10));
    (1..=12).contains(&m)
        && (1..=31).contains(&day)
        && crate::support::utc::civil_from_days(crate::support::calendar::days_from_civil(
            y, m, day,
        )) == (y, m, day)
}

pub(crate) fn encode(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(crate::support::form::hex_pair(b.get(i + 1..i + 3)?)?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok().filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: UnixMillis = 1_796_300_000_000; // 2026-12-03

    #[test]
    fn keys_are_deterministic_and_parse_back() {
        let table = [
            (
                ArchiveKey::range(ArchiveTable::Events, DAY, "evt_a", "evt_z", Some(7)),
                "events/2026-12-03/evt_a~evt_z~7.ndjson",
            ),
            (
                ArchiveKey::range(ArchiveTable::Attempts, DAY, "17", "942", Some(7)),
                "attempts/2026-12-03/17~942~7.ndjson",
            ),
            (
                ArchiveKey::range(ArchiveTable::Events, DAY, "evt_a", "evt_z", None),
                "events/2026-12-03/evt_a~evt_z.ndjson",
            ),
            (
                ArchiveKey::entry("dlq_0123", DAY),
                "dead_letters/2026-12-03/dlq_0123.ndjson",
            ),
            (
                ArchiveKey::entry("dlq_0123", DAY).sibling(ArchiveTable::Payloads),
                "payloads/2026-12-03/dlq_0123.ndjson",
            ),
            (
                ArchiveKey::range(
                    ArchiveTable::Drains,
                    DAY,
                    "https://a.example/x~y",
                    "b c",
                    Some(1),
                ),
                "drains/2026-12-03/https%3A%2F%2Fa.example%2Fx%7Ey~b%20c~1.ndjson",
            ),
        ];
        for (key, text) in table {
            assert_eq!(key.to_string(), text);
            assert_eq!(ArchiveKey::parse(text), Some(key.clone()), "{text}");
            assert_eq!(
                ArchiveKey::range(key.table, DAY, "a", "b", Some(3)).to_string(),
                ArchiveKey::range(key.table, DAY + 1, "a", "b", Some(3)).to_string(),
                "the same chunk on the same day gives the same key"
            );
            assert_ne!(
                ArchiveKey::range(key.table, DAY, "a", "b", Some(3)).to_string(),
                ArchiveKey::range(key.table, DAY, "a", "b", Some(4)).to_string(),
                "another chunk over the same first and last rows gets another key"
            );
        }
    }

    #[test]
    fn other_objects_do_not_parse_as_archive_keys() {
        for bad in [
            "state/dlq_cannot_store.json",
            "events/2026-12-03/a~b.json",
            "events/2026-1-03/a~b.ndjson",
            "sqlite_master/2026-12-03/a.ndjson",
            "events/2026-12-03/x/a.ndjson",
            "events/2026-12-03/%zz.ndjson",
            "events/2026-12-03/%+F.ndjson",
            "events/2026-12-03/.ndjson",
            "events/2026-12-03/a~b~.ndjson",
            "events/2026-12-03/a~b~x1.ndjson",
            "events/2026-12-03/a~b~1~2.ndjson",
            "events/2026-13-45/a~b~1.ndjson",
        ] {
            assert_eq!(ArchiveKey::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn listing_prefixes_narrow_by_table_and_day_and_refuse_a_bad_day() {
        assert_eq!(
            list_prefixes(Some(ArchiveTable::Events), Some("2026-12-03")).unwrap(),
            ["events/2026-12-03/"]
        );
        assert_eq!(
            list_prefixes(None, None).unwrap().len(),
            ArchiveTable::ALL.len()
        );
        for bad in [
            "2026-12-3",
            "2026-13-45",
            "2026-02-30",
            "2025-02-29",
            "2026-00-10",
            "2026-12-00",
        ] {
            let err = list_prefixes(None, Some(bad)).unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
        for good in ["2024-02-29", "2026-12-31", "2026-01-01"] {
            assert!(list_prefixes(None, Some(good)).is_ok(), "{good}");
        }
    }
}
