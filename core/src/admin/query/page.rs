//! The page parameters every listing shares: `limit` and `cursor`, read
//! together so each listing makes one call for them.

use super::cursor::{decode_cursor, Cursor};
use super::limits::{parse_limit, DEFAULT_LIMIT};
use super::params::set_once;
use super::QueryError;

/// One page of a listing, as the caller asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Rows on the page: `DEFAULT_LIMIT` unless asked, at most `MAX_LIMIT`.
    pub limit: u32,
    /// Where the previous page ended; `None` for the first page.
    pub cursor: Option<Cursor>,
}

/// Parses `limit` and `cursor` from decoded query pairs. Empty values count
/// as absent, as in the filters; a non-empty one given twice is refused.
///
/// Other names are left alone here: the listing's filter parser
/// (`parse_dead_letter_filter`, `parse_event_filter`, `parse_audit_filter`)
/// knows the route's whole set and refuses the rest, so call both.
pub fn parse_page(params: &[(String, String)]) -> Result<Page, QueryError> {
    let mut limit = None;
    let mut cursor = None;
    for (name, value) in params {
        if value.is_empty() {
            continue;
        }
        match name.as_str() {
            "limit" => set_once(&mut limit, name, parse_limit(Some(value))?)?,
            "cursor" => set_once(&mut cursor, name, decode_cursor(value)?)?,
            _ => {}
        }
    }
    Ok(Page {
        limit: limit.unwrap_or(DEFAULT_LIMIT),
        cursor,
    })
}

#[cfg(test)]
mod tests {
    use super::super::cursor::encode_cursor;
    use super::super::pairs;
    use super::*;

    #[test]
    fn the_page_params_default_and_are_read_once_each() {
        let c = Cursor {
            at_ms: 1_700_000_000_000,
            id: "dlq_1".into(),
        };
        let raw = encode_cursor(&c);
        let table = [
            (vec![], 50, None),
            (vec![("limit", ""), ("cursor", "")], 50, None),
            (vec![("limit", "7")], 7, None),
            (vec![("cursor", raw.as_str())], 50, Some(c.clone())),
            (
                vec![("status", "x"), ("cursor", raw.as_str()), ("limit", "200")],
                200,
                Some(c.clone()),
            ),
            (vec![("limit", ""), ("limit", "3")], 3, None),
        ];
        for (params, limit, cursor) in table {
            assert_eq!(
                parse_page(&pairs(&params)),
                Ok(Page { limit, cursor }),
                "{params:?}"
            );
        }
    }

    #[test]
    fn a_bad_or_repeated_page_param_is_refused_naming_it() {
        let raw = encode_cursor(&Cursor {
            at_ms: 1,
            id: "x".into(),
        });
        let table = [
            (vec![("limit", "0")], "limit", "1 to 200"),
            (vec![("limit", "201")], "limit", "1 to 200"),
            (vec![("cursor", "garbage")], "cursor", "not a cursor"),
            (
                vec![("limit", "5"), ("limit", "5")],
                "limit",
                "more than once",
            ),
            (
                vec![("limit", "5"), ("limit", "6")],
                "limit",
                "more than once",
            ),
            (
                vec![("cursor", raw.as_str()), ("cursor", raw.as_str())],
                "cursor",
                "more than once",
            ),
        ];
        for (params, param, mentions) in table {
            let err = parse_page(&pairs(&params)).unwrap_err();
            assert_eq!(err.param, param, "{params:?}");
            assert!(err.message.contains(mentions), "{}", err.message);
        }
    }
}
