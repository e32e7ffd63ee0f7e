//! Minting HS256 tokens, as `npm run admin-token` does, with the core's
//! own signer (`hookrelay_core::admin::jwt::sign_hs256`, the very code that
//! verifies them): for `token`, `login --mint` and the development token of
//! a loopback relay. The clock is passed in.

use crate::failure::Failure;
use hookrelay_core::admin::jwt::sign_hs256;
use hookrelay_core::support::duration::parse_duration_ms;
use serde_json::json;
use std::io::{IsTerminal, Read};

/// An admin token lives 1 minute to 24 hours: long enough for a shift,
/// short enough that a leaked one soon stops working.
pub const ADMIN_TTL_S: std::ops::RangeInclusive<i64> = 60..=86_400;
/// A pull token may live up to a year (DESIGN §4): it sits in a
/// consumer's configuration.
pub const PULL_TTL_S: std::ops::RangeInclusive<i64> = 60..=365 * 86_400;

/// What a minted token says.
pub struct Claims<'a> {
    /// The operator (or consumer) it is for.
    pub sub: &'a str,
    /// `admin` or `pull`.
    pub role: &'a str,
    /// A pull token's destination.
    pub destination: Option<&'a str>,
    /// Lifetime in seconds.
    pub ttl_s: i64,
}

/// A token signed with `secret`, issued at `now_s`.
pub fn mint(secret: &[u8], claims: &Claims<'_>, now_s: i64) -> String {
    let mut body =
        json!({"sub": claims.sub, "role": claims.role, "iat": now_s, "exp": now_s + claims.ttl_s});
    if let Some(d) = claims.destination {
        body["destination"] = json!(d);
    }
    sign_hs256(&body, secret)
}

/// `--ttl` in seconds, within `range`.
pub fn parse_ttl(raw: &str, range: std::ops::RangeInclusive<i64>) -> Result<i64, Failure> {
    let refuse = |why: String| {
        Failure::usage(
            format!("--ttl {raw:?} {why}"),
            format!(
                "give a duration from {}s to {}s with a unit, e.g. --ttl 30m or --ttl 12h",
                range.start(),
                range.end()
            ),
        )
    };
    let s = parse_duration_ms(raw).map_err(refuse)? / 1000;
    if !range.contains(&s) {
        return Err(refuse("is out of bounds".into()));
    }
    Ok(s)
}

/// An operator name fit for `sub`: 1 to 64 letters, digits or `. _ @ + -`.
pub fn check_sub(sub: &str) -> Result<(), Failure> {
    let ok = !sub.is_empty()
        && sub.len() <= 64
        && sub
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._@+-".contains(&b));
    if ok {
        return Ok(());
    }
    Err(Failure::usage(
        format!("--sub {sub:?} is not an operator name"),
        "give 1 to 64 letters, digits or . _ @ + - (the audit shows it as the actor)",
    ))
}

/// A secret piped on standard input (trailing whitespace dropped). A
/// terminal is refused: typed there, the secret would be echoed.
pub fn secret_from_stdin(name: &str) -> Result<Vec<u8>, Failure> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err(Failure::usage(
            format!("{name} is read from standard input, which is a terminal"),
            format!("pipe it in, e.g. printf %s \"${name}\" | hookrelay …"),
        ));
    }
    let mut text = String::new();
    stdin.lock().read_to_string(&mut text).map_err(|e| {
        Failure::usage(
            format!("cannot read {name} from standard input: {e}"),
            "pipe the secret in as text",
        )
    })?;
    let text = text.trim_end();
    if text.is_empty() {
        return Err(Failure::usage(
            format!("standard input was empty; {name} is read from it"),
            format!("pipe it in, e.g. printf %s \"${name}\" | hookrelay …"),
        ));
    }
    Ok(text.as_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookrelay_core::admin::jwt::{authorize, verify};

    #[test]
    fn a_minted_token_verifies_with_the_relays_own_verifier() {
        let now = 1_700_000_000;
        let claims = Claims {
            sub: "ann",
            role: "admin",
            destination: None,
            ttl_s: 3600,
        };
        let token = mint(b"s3cret", &claims, now);
        let got = authorize(Some(&format!("Bearer {token}")), b"s3cret", now).unwrap();
        assert_eq!((got.sub.as_deref(), got.exp), (Some("ann"), now + 3600));
        let pull = Claims {
            sub: "laptop",
            role: "pull",
            destination: Some("demo-pull"),
            ttl_s: 60,
        };
        assert!(verify(&mint(b"k", &pull, now), b"k", now).is_ok());
        assert!(verify(&mint(b"k", &pull, now), b"k", now + 60).is_err());
    }

    #[test]
    fn ttls_and_operator_names_are_bounded() {
        assert_eq!(parse_ttl("12h", ADMIN_TTL_S), Ok(43_200));
        assert_eq!(parse_ttl("90d", PULL_TTL_S), Ok(7_776_000));
        for raw in ["25h", "30s", "12", "soon"] {
            assert_eq!(
                parse_ttl(raw, ADMIN_TTL_S).unwrap_err().exit_code(),
                2,
                "{raw}"
            );
        }
        assert!(check_sub("ann@example.com").is_ok());
        assert!(
            check_sub("").is_err()
                && check_sub("a b").is_err()
                && check_sub(&"x".repeat(65)).is_err()
        );
    }
}
