//! Page size: the `limit` query parameter of every listing.

use super::params::shown;
use super::QueryError;

/// Page size when `limit` is absent.
pub const DEFAULT_LIMIT: u32 = 50;
/// The largest page size accepted.
pub const MAX_LIMIT: u32 = 200;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
