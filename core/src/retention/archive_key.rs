//! The archive's key layout, deterministic so a repeated write overwrites:
//!
//! - a chunk of swept rows: `{table}/{YYYY-MM-DD}/{first}~{last}.ndjson`,
//!   the UTC day of the chunk's rows (a chunk never spans two days) and the
//!   first and last row ids; the rows linked to a chunk of events (attempts,
//!   payloads, steps) or of jobs (their entries) use the same day and range
//!   under their own table;
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
use crate::utc::utc_day;
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
    /// A chunk: its first and last row ids.
    Range {
        /// The first row's id.
        first: String,
        /// The last row's id.
        last: String,
    },
    /// One dead-letter entry (or its payload).
    Entry(String),
}

impl ArchiveKey {
    /// The key of a chunk of `table` rows on the UTC day of `at`.
    pub fn range(table: ArchiveTable, at: UnixMillis, first: &str, last: &str) -> ArchiveKey {
        ArchiveKey {
            table,
            day: utc_day(at),
            name: KeyName::Range {
                first: first.to_string(),
                last: last.to_string(),
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
        let name = match stem.split_once('~') {
            Some((first, last)) => KeyName::Range {
                first: decode(first)?,
                last: decode(last)?,
            },
            None => KeyName::Entry(decode(stem)?),
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
            KeyName::Range { first, last } => {
                write!(f, "{}~{}.ndjson", encode(first), encode(last))
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
            "day '{}' is not a UTC day YYYY-MM-DD",
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

fn is_day(d: &str) -> bool {
    let b = d.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

fn encode(id: &str) -> String {
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
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
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
                ArchiveKey::range(ArchiveTable::Events, DAY, "evt_a", "evt_z"),
                "events/2026-12-03/evt_a~evt_z.ndjson",
            ),
            (
                ArchiveKey::range(ArchiveTable::Attempts, DAY, "17", "942"),
                "attempts/2026-12-03/17~942.ndjson",
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
                ArchiveKey::range(ArchiveTable::Drains, DAY, "https://a.example/x~y", "b c"),
                "drains/2026-12-03/https%3A%2F%2Fa.example%2Fx%7Ey~b%20c.ndjson",
            ),
        ];
        for (key, text) in table {
            assert_eq!(key.to_string(), text);
            assert_eq!(ArchiveKey::parse(text), Some(key.clone()), "{text}");
            assert_eq!(
                ArchiveKey::range(key.table, DAY, "a", "b").to_string(),
                ArchiveKey::range(key.table, DAY + 1, "a", "b").to_string(),
                "the same rows on the same day give the same key"
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
            "events/2026-12-03/.ndjson",
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
        assert!(list_prefixes(None, Some("2026-12-3")).is_err());
    }
}
