//! What `GET /api/v1/admin/archive` lists: the R2 prefixes for `table` and
//! `day` (`retention::archive_key::list_prefixes`), and where a page starts.
//!
//! The cursor is `{prefix index}:{R2's own cursor}` (the R2 part may be
//! empty: start of that prefix), so one listing walks the tables' prefixes
//! in order without the caller knowing there are several.

use super::params::{refuse_unknown, set_once, shown};
use super::QueryError;
use crate::retention::archive_key::list_prefixes;
use crate::state::ArchiveTable;

/// The query parameters the archive listing accepts; any other is refused.
pub const ARCHIVE_PARAMS: [&str; 3] = ["day", "table", "cursor"];

/// One archive listing request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveListing {
    /// The R2 prefixes, in order.
    pub prefixes: Vec<String>,
    /// The prefix the page starts in.
    pub index: usize,
    /// R2's cursor inside it, if not at its start.
    pub r2_cursor: Option<String>,
}

/// Parses `day` (`YYYY-MM-DD`), `table` (an archive table's name) and
/// `cursor`. A bad value is refused naming its parameter.
pub fn parse_archive_listing(params: &[(String, String)]) -> Result<ArchiveListing, QueryError> {
    refuse_unknown(params, &ARCHIVE_PARAMS)?;
    let (mut day, mut table, mut cursor) = (None, None, None);
    for (name, value) in params.iter().filter(|(_, v)| !v.is_empty()) {
        match name.as_str() {
            "day" => set_once(&mut day, name, value.clone())?,
            "table" => {
                let t = ArchiveTable::parse(value).map_err(|_| {
                    let names: Vec<&str> = ArchiveTable::ALL.iter().map(|t| t.as_str()).collect();
                    QueryError::new(
                        name,
                        format!("must be one of {}; got {}", names.join(", "), shown(value)),
                    )
                })?;
                set_once(&mut table, name, t)?;
            }
            _ => set_once(&mut cursor, name, value.clone())?,
        }
    }
    let prefixes = list_prefixes(table, day.as_deref()).map_err(|m| QueryError::new("day", m))?;
    let (index, r2_cursor) = match cursor {
        None => (0, None),
        Some(c) => parse_cursor(&c, prefixes.len())?,
    };
    Ok(ArchiveListing {
        prefixes,
        index,
        r2_cursor,
    })
}

/// The cursor of the page after one that stopped in prefix `index` at R2
/// cursor `r2` (`None`: that prefix is done, the next one starts).
pub fn next_cursor(index: usize, r2: Option<&str>, prefixes: usize) -> Option<String> {
    match r2 {
        Some(c) => Some(format!("{index}:{c}")),
        None if index + 1 < prefixes => Some(format!("{}:", index + 1)),
        None => None,
    }
}

fn parse_cursor(raw: &str, prefixes: usize) -> Result<(usize, Option<String>), QueryError> {
    let bad = || {
        QueryError::new(
            "cursor",
            format!("is not a cursor this listing answered; got {}", shown(raw)),
        )
    };
    let (index, rest) = raw.split_once(':').ok_or_else(bad)?;
    let index: usize = index.parse().map_err(|_| bad())?;
    if index >= prefixes {
        return Err(bad());
    }
    Ok((index, (!rest.is_empty()).then(|| rest.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_day_and_a_table_narrow_the_prefixes() {
        let l =
            parse_archive_listing(&pairs(&[("day", "2026-12-03"), ("table", "events")])).unwrap();
        assert_eq!(l.prefixes, vec!["events/2026-12-03/"]);
        let all = parse_archive_listing(&[]).unwrap();
        assert_eq!(all.prefixes.len(), ArchiveTable::ALL.len());
        assert_eq!((all.index, all.r2_cursor), (0, None));
    }

    #[test]
    fn bad_values_are_refused_naming_the_parameter() {
        let table = [
            (("day", "2026-13"), "day"),
            (("table", "secrets"), "table"),
            (("cursor", "x"), "cursor"),
            (("cursor", "99:abc"), "cursor"),
            (("tabel", "events"), "tabel"),
        ];
        for ((k, v), param) in table {
            let err = parse_archive_listing(&pairs(&[(k, v)])).unwrap_err();
            assert_eq!(err.param, param, "{k}={v}");
        }
    }

    #[test]
    fn the_cursor_walks_r2_pages_then_the_next_prefix_then_ends() {
        assert_eq!(next_cursor(0, Some("r2c"), 3).as_deref(), Some("0:r2c"));
        assert_eq!(next_cursor(0, None, 3).as_deref(), Some("1:"));
        assert_eq!(next_cursor(2, None, 3), None);
        let l = parse_archive_listing(&pairs(&[("cursor", "1:r2c")])).unwrap();
        assert_eq!((l.index, l.r2_cursor.as_deref()), (1, Some("r2c")));
        let l = parse_archive_listing(&pairs(&[("cursor", "1:")])).unwrap();
        assert_eq!((l.index, l.r2_cursor), (1, None));
    }
}
