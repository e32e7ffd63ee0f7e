//! Times as an operator types them (`--since`, `--until`, `--at`): an RFC
//! 3339 instant, unix milliseconds, or an age meaning that long ago (`90s`,
//! `15m`, `2h`, `3d`). Pure: the caller passes `now`. The API then gets
//! unix milliseconds, which every route takes.

use crate::failure::Failure;
use hookrelay_core::support::calendar::parse_rfc3339_ms;
use hookrelay_core::support::duration::parse_duration_ms;

/// Unix milliseconds of `raw`, given as `flag`, as of `now_ms`.
pub fn parse_time(raw: &str, flag: &str, now_ms: i64) -> Result<i64, Failure> {
    let raw = raw.trim();
    let refuse = |why: &str| {
        Failure::usage(
            format!("{flag} {raw:?} is not a time{why}"),
            format!("give an age such as {flag} 2h (90s, 15m, 2h, 3d), an RFC 3339 instant such as 2026-05-01T12:00:00Z, or unix milliseconds"),
        )
    };
    if raw.is_empty() {
        return Err(refuse(""));
    }
    if raw.bytes().all(|b| b.is_ascii_digit()) {
        return raw
            .parse::<i64>()
            .map_err(|_| refuse(": too large for unix milliseconds"));
    }
    if raw.bytes().last().is_some_and(|b| b"smhd".contains(&b))
        && raw[..raw.len() - 1].bytes().all(|b| b.is_ascii_digit())
    {
        let ago = parse_duration_ms(raw).map_err(|e| refuse(&format!(": an age {e}")))?;
        return Ok(now_ms.saturating_sub(ago));
    }
    parse_rfc3339_ms(raw).map_err(|e| refuse(&format!(" ({e})")))
}

/// `parse_time` of an optional flag.
pub fn parse_optional(raw: Option<&str>, flag: &str, now_ms: i64) -> Result<Option<i64>, Failure> {
    raw.map(|r| parse_time(r, flag, now_ms)).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000;

    #[test]
    fn ages_instants_and_unix_milliseconds_all_read_as_unix_milliseconds() {
        let table = [
            ("90s", NOW - 90_000),
            ("15m", NOW - 900_000),
            ("2h", NOW - 7_200_000),
            ("3d", NOW - 259_200_000),
            (" 2h ", NOW - 7_200_000),
            ("1700000000000", 1_700_000_000_000),
            ("0", 0),
            ("2023-11-14T22:13:20Z", 1_700_000_000_000),
            ("2023-11-14T22:13:20.250Z", 1_700_000_000_250),
            ("2023-11-15T00:13:20+02:00", 1_700_000_000_000),
        ];
        for (raw, want) in table {
            assert_eq!(parse_time(raw, "--since", NOW), Ok(want), "{raw}");
        }
        assert_eq!(parse_optional(None, "--until", NOW), Ok(None));
    }

    #[test]
    fn anything_else_is_a_usage_error_naming_the_flag_and_the_forms() {
        for raw in [
            "",
            "yesterday",
            "2h30m",
            "0h",
            "-5",
            "2h ago",
            "2023-13-01T00:00:00Z",
            "1e9",
            "99999999999999999999",
        ] {
            let err = parse_time(raw, "--until", NOW).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{raw}");
            assert!(err.what.starts_with("--until"), "{raw}: {}", err.what);
            assert!(err.next.contains("RFC 3339"), "{raw}: {}", err.next);
        }
    }
}
