//! Helpers every parameter parser shares: the strict-name rule, the
//! given-once rule, and how caller input is quoted back.

use super::QueryError;

/// Source names follow the `SOURCES` rule: 1-64 characters of a-z, 0-9, `-`, `_`.
pub const MAX_SOURCE_LEN: usize = 64;

/// Refuses the first parameter whose name is not in `accepted`, saying what
/// the route does accept. Names are compared exactly: `Status` is not
/// `status`, and a near miss must not be read as something else.
pub(super) fn refuse_unknown(
    params: &[(String, String)],
    accepted: &[&str],
) -> Result<(), QueryError> {
    match params
        .iter()
        .find(|(name, _)| !accepted.contains(&name.as_str()))
    {
        None => Ok(()),
        Some((name, _)) => Err(QueryError::new(
            name_shown(name),
            format!(
                "unknown query parameter; this route accepts {}",
                accepted.join(", ")
            ),
        )),
    }
}

/// Refuses any query parameter, for a route that takes none: a filter
/// given to it would otherwise be silently ignored.
pub fn refuse_any(params: &[(String, String)]) -> Result<(), QueryError> {
    match params.first() {
        None => Ok(()),
        Some((name, _)) => Err(QueryError::new(
            name_shown(name),
            "unknown query parameter; this route takes none",
        )),
    }
}

/// Fills a filter slot, refusing a second value for the same parameter.
pub(super) fn set_once<T>(slot: &mut Option<T>, param: &str, value: T) -> Result<(), QueryError> {
    if slot.is_some() {
        return Err(QueryError::new(
            param,
            "is given more than once; give it once",
        ));
    }
    *slot = Some(value);
    Ok(())
}

/// A source name, or the error saying what one looks like.
pub(super) fn check_source(param: &str, value: &str) -> Result<String, QueryError> {
    check_name(param, value, "source")
}

/// A destination name, by the same rule as a source name (a `downstream`
/// source's destination is named after it).
pub(super) fn check_destination(param: &str, value: &str) -> Result<String, QueryError> {
    check_name(param, value, "destination")
}

fn check_name(param: &str, value: &str, what: &str) -> Result<String, QueryError> {
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
                "must be a {what} name of 1-{MAX_SOURCE_LEN} characters of a-z, 0-9, '-' or '_'; got {}",
                shown(value)
            ),
        ))
    }
}

/// The error for a value outside a closed set, listing the set.
pub(super) fn one_of(param: &str, value: &str, allowed: &[&str]) -> QueryError {
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
pub(crate) fn shown(raw: &str) -> String {
    const MAX: usize = 40;
    if raw.chars().count() <= MAX {
        format!("{raw:?}")
    } else {
        let head: String = raw.chars().take(MAX).collect();
        format!("{head:?}…")
    }
}

/// A caller-chosen name (a query parameter or a body field) fit to use as
/// the `param` of an error: as is when short and plain, else quoted as
/// `shown` does, for the same reason.
pub(crate) fn name_shown(raw: &str) -> String {
    const MAX: usize = 40;
    let plain = !raw.is_empty() && raw.len() <= MAX && raw.bytes().all(|b| b.is_ascii_graphic());
    if plain {
        raw.to_owned()
    } else {
        shown(raw)
    }
}

/// A minted identifier: `prefix` and `hex_len` lowercase hex digits. One
/// that could never match is refused rather than answered with nothing;
/// `what` names it in the message.
pub(crate) fn check_minted_id(
    param: &str,
    value: &str,
    prefix: &str,
    hex_len: usize,
    what: &str,
) -> Result<String, QueryError> {
    let ok = value.strip_prefix(prefix).is_some_and(|hex| {
        hex.len() == hex_len
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    if ok {
        Ok(value.to_owned())
    } else {
        Err(QueryError::new(
            param,
            format!(
                "must be {what}: {prefix} and {hex_len} lowercase hex digits; got {}",
                shown(value)
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::pairs;
    use super::*;

    #[test]
    fn an_unknown_name_is_refused_naming_it_and_the_accepted_set() {
        let accepted = ["status", "limit"];
        let long = "u".repeat(41);
        let table = [
            (vec![("utm", "x")], "utm"),
            (vec![("status", "a"), ("Status", "b")], "Status"),
            (vec![("limit", ""), ("limits", "")], "limits"),
            (vec![("", "x")], "\"\""),
            (vec![("a\nb", "")], "\"a\\nb\""),
            (
                vec![(long.as_str(), "")],
                "\"uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu\"…",
            ),
        ];
        for (params, param) in table {
            let err = refuse_unknown(&pairs(&params), &accepted).unwrap_err();
            assert_eq!(err.param, param, "{params:?}");
            assert_eq!(
                err.message,
                "unknown query parameter; this route accepts status, limit"
            );
        }
        let known = pairs(&[("status", "a"), ("limit", "1"), ("status", "b")]);
        assert_eq!(refuse_unknown(&known, &accepted), Ok(()));
        assert_eq!(refuse_unknown(&[], &accepted), Ok(()));
    }

    #[test]
    fn names_are_shown_plain_only_when_short_and_printable() {
        let table = [
            ("fitler", "fitler"),
            ("filter.x", "filter.x"),
            ("", "\"\""),
            ("a b", "\"a b\""),
            ("é", "\"é\""),
        ];
        for (raw, want) in table {
            assert_eq!(name_shown(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn a_route_without_parameters_refuses_the_first_one_given() {
        assert_eq!(refuse_any(&[]), Ok(()));
        let err = refuse_any(&pairs(&[("verbose", "1"), ("x", "")])).unwrap_err();
        assert_eq!(err.param, "verbose");
        assert_eq!(
            err.message,
            "unknown query parameter; this route takes none"
        );
    }

    #[test]
    fn a_slot_is_filled_once() {
        let mut slot = None;
        assert_eq!(set_once(&mut slot, "code", 1), Ok(()));
        let err = set_once(&mut slot, "code", 2).unwrap_err();
        assert_eq!((err.param.as_str(), slot), ("code", Some(1)));
    }
}
