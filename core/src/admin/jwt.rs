//! HS256 bearer tokens for the admin API.
//!
//! In scope: reading `Authorization: Bearer <token>`, verifying a JWS compact
//! token signed with HMAC-SHA256 under `ADMIN_JWT_SECRET`, checking `exp` and
//! `nbf` against a clock the caller passes in, and requiring `role: "admin"`.
//! Out of scope: every other algorithm (a token names its own algorithm, so
//! accepting more than the one we mint only adds ways to be fooled), `iss`
//! and `aud` (one secret serves one deployment), key rotation, leeway, and
//! minting tokens in production; `sign_hs256` exists for tests and tooling.
//!
//! The signature is checked before any claim in the payload is read, and the
//! comparison goes through `signature::ct_eq`, which is constant time.
//! No error text ever contains the token.

use crate::signature::{ct_eq, mac_parts};
use crate::support::base64::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};
use std::fmt;

/// The only algorithm accepted, and the one `sign_hs256` writes.
pub const ALGORITHM: &str = "HS256";

/// The `role` claim `authorize` requires.
pub const ADMIN_ROLE: &str = "admin";

/// The secret admin tokens are signed with.
pub const ADMIN_KEY_NAME: &str = "ADMIN_JWT_SECRET";

/// The longest token accepted. Real admin tokens are a few hundred bytes; the
/// cap bounds the work an unauthenticated caller can make us do.
pub const MAX_TOKEN_LEN: usize = 8 * 1024;

/// What to tell an operator who needs a token.
const MINT_HINT: &str = "mint one with `npm run admin-token`";

/// The claims of a verified token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// Who the token was minted for, for audit logs.
    pub sub: Option<String>,
    /// The caller's role; `authorize` requires `admin`.
    pub role: Option<String>,
    /// Expiry, unix seconds. Required: a token that never expires is refused.
    pub exp: i64,
    /// Not before, unix seconds.
    pub nbf: Option<i64>,
    /// Issued at, unix seconds. Read for logs, never checked.
    pub iat: Option<i64>,
}

/// Why a request was not let into the admin API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// No `Authorization` header, or an empty one.
    Missing,
    /// The header or token cannot be parsed; the text says which part.
    Malformed(&'static str),
    /// The token's header names an algorithm other than HS256. Holds the
    /// name when it is short and plain, else a placeholder, so logging the
    /// error never copies arbitrary caller bytes.
    UnsupportedAlgorithm(String),
    /// The signature does not verify under the configured key, or no key is
    /// configured.
    BadSignature,
    /// `exp` is at or before now.
    Expired,
    /// `nbf` is after now.
    NotYetValid,
    /// The token is genuine and current but its role is not `admin`.
    Forbidden,
    /// A genuine, current pull token, for the destination it names, used
    /// for something else: an admin route, or another destination's pull.
    PullTokenElsewhere {
        /// The destination the token may pull.
        destination: String,
    },
}

impl AuthError {
    /// The HTTP status: 403 when the caller is known but not allowed, else 401.
    pub fn status(&self) -> u16 {
        match self {
            AuthError::Forbidden | AuthError::PullTokenElsewhere { .. } => 403,
            _ => 401,
        }
    }

    /// The stable error code for the response body.
    pub fn code(&self) -> &'static str {
        match self {
            AuthError::Forbidden | AuthError::PullTokenElsewhere { .. } => "FORBIDDEN",
            _ => "UNAUTHORIZED",
        }
    }

    /// What is wrong and what to do about it. Never contains the token.
    pub fn message(&self) -> String {
        match self {
            AuthError::Missing => format!(
                "missing Authorization header; send `Authorization: Bearer <token>` and {MINT_HINT}"
            ),
            AuthError::Malformed(reason) => format!(
                "malformed bearer token: {reason}; send `Authorization: Bearer <token>` with a token from `npm run admin-token`"
            ),
            AuthError::UnsupportedAlgorithm(alg) => format!(
                "token algorithm {alg} is not accepted; the admin API only accepts HS256 tokens; {MINT_HINT}"
            ),
            AuthError::BadSignature => format!(
                "token signature does not verify; {MINT_HINT} using this deployment's ADMIN_JWT_SECRET"
            ),
            AuthError::Expired => "token expired; mint a new one with `npm run admin-token`".into(),
            AuthError::NotYetValid => format!(
                "token is not valid yet (nbf is in the future); check the clock where it was minted, or {MINT_HINT}"
            ),
            AuthError::Forbidden => format!(
                "token is valid but its role is not \"{ADMIN_ROLE}\"; {MINT_HINT} with the admin role"
            ),
            // The destination is a configured name, never a secret.
            AuthError::PullTokenElsewhere { destination } => format!(
                "this is a pull token for destination '{destination}': it may only pull and ack POST /api/v1/pull/{destination}; for anything else {MINT_HINT} with the admin role, or for another pull destination `npm run admin-token -- --role pull --destination <name>`"
            ),
        }
    }
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for AuthError {}

/// Lets a request into the admin API: a verified, current token whose role
/// is `admin`.
///
/// `authorization` is the raw Authorization header value if any; `key` is
/// the `ADMIN_JWT_SECRET` bytes; `now_s` is the worker's clock in unix
/// seconds.
pub fn authorize(authorization: Option<&str>, key: &[u8], now_s: i64) -> Result<Claims, AuthError> {
    let claims = verify(bearer_token(authorization)?, key, now_s)?;
    if claims.role.as_deref() != Some(ADMIN_ROLE) {
        return Err(AuthError::Forbidden);
    }
    Ok(claims)
}

/// The token of an `Authorization: Bearer <token>` header, unverified.
pub fn bearer_token(authorization: Option<&str>) -> Result<&str, AuthError> {
    let header = authorization.map(str::trim).unwrap_or("");
    if header.is_empty() {
        return Err(AuthError::Missing);
    }
    let (scheme, token) = header
        .split_once(|c: char| c.is_ascii_whitespace())
        .unwrap_or((header, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Malformed(
            "the Authorization scheme is not Bearer",
        ));
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(AuthError::Malformed("no token after Bearer"));
    }
    Ok(token)
}

/// Verifies a compact HS256 token's signature, `exp` and `nbf`. Does not
/// look at `role`; `authorize` does.
///
/// An empty `key` verifies nothing: a missing secret must lock the admin API,
/// not open it to anyone who can compute an HMAC under the empty key.
pub fn verify(token: &str, key: &[u8], now_s: i64) -> Result<Claims, AuthError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(AuthError::Malformed("token is longer than 8 KiB"));
    }
    let mut segments = token.split('.');
    let (Some(header_b64), Some(payload_b64), Some(signature_b64), None) = (
        segments.next(),
        segments.next(),
        segments.next(),
        segments.next(),
    ) else {
        return Err(AuthError::Malformed(
            "a token is three base64url segments separated by dots",
        ));
    };

    check_header(header_b64)?;

    let signature = URL_SAFE_NO_PAD
        .decode(signature_b64)
        .map_err(|_| AuthError::Malformed("the signature is not unpadded base64url"))?;
    if key.is_empty() || !ct_eq(&mac(key, header_b64, payload_b64), &signature) {
        return Err(AuthError::BadSignature);
    }

    // Only now is the payload worth reading: its bytes are ours.
    let payload = decode_object(payload_b64).ok_or(AuthError::Malformed(
        "the payload is not a base64url JSON object",
    ))?;
    let claims = read_claims(&payload)?;
    if claims.exp <= now_s {
        return Err(AuthError::Expired);
    }
    if claims.nbf.is_some_and(|nbf| nbf > now_s) {
        return Err(AuthError::NotYetValid);
    }
    Ok(claims)
}

/// Signs `claims_json` as an HS256 token with header
/// `{"alg":"HS256","typ":"JWT"}`. For tests and tooling; the admin API never
/// mints tokens.
pub fn sign_hs256(claims_json: &Value, key: &[u8]) -> String {
    let header_b64 = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload_b64 = URL_SAFE_NO_PAD.encode(claims_json.to_string());
    let signature = mac(key, &header_b64, &payload_b64);
    format!(
        "{header_b64}.{payload_b64}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    )
}

/// HMAC-SHA256 over the ASCII signing input `header.payload`.
fn mac(key: &[u8], header_b64: &str, payload_b64: &str) -> [u8; 32] {
    mac_parts(key, &[header_b64.as_bytes(), b".", payload_b64.as_bytes()])
}

/// Accepts a JOSE header only if it is an object naming HS256 and carrying
/// no `crit`: RFC 7515 §4.1.11 says a recipient that does not understand a
/// critical extension must refuse the token, and we understand none.
fn check_header(header_b64: &str) -> Result<(), AuthError> {
    let header = decode_object(header_b64).ok_or(AuthError::Malformed(
        "the header is not a base64url JSON object",
    ))?;
    match header.get("alg") {
        Some(Value::String(alg)) if alg == ALGORITHM => {}
        Some(Value::String(alg)) => return Err(AuthError::UnsupportedAlgorithm(printable(alg))),
        Some(_) => return Err(AuthError::UnsupportedAlgorithm("(not a string)".into())),
        None => return Err(AuthError::UnsupportedAlgorithm("(missing)".into())),
    }
    if header.contains_key("crit") {
        return Err(AuthError::Malformed(
            "the header has a crit parameter, which this verifier does not support",
        ));
    }
    Ok(())
}

/// An algorithm name fit to quote in an error, or a placeholder.
fn printable(alg: &str) -> String {
    let plain = !alg.is_empty()
        && alg.len() <= 16
        && alg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'+');
    if plain {
        format!("\"{alg}\"")
    } else {
        "(unrecognised)".into()
    }
}

/// A segment decoded as a JSON object. Padding and non-zero trailing bits are
/// refused by the engine, so each token has exactly one spelling.
fn decode_object(segment: &str) -> Option<Map<String, Value>> {
    let bytes = URL_SAFE_NO_PAD.decode(segment).ok()?;
    // Through `&str`, as every other JSON read here: `from_slice` would
    // link a second copy of serde_json's parser into the wasm. Invalid
    // UTF-8 is refused either way.
    let text = std::str::from_utf8(&bytes).ok()?;
    match serde_json::from_str(text).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

fn read_claims(payload: &Map<String, Value>) -> Result<Claims, AuthError> {
    let exp = match payload.get("exp") {
        None | Some(Value::Null) => {
            return Err(AuthError::Malformed(
                "the token has no exp claim; admin tokens must expire",
            ))
        }
        Some(v) => numeric_date(v).ok_or(AuthError::Malformed("the exp claim is not a number"))?,
    };
    let nbf = optional(
        payload,
        "nbf",
        numeric_date,
        "the nbf claim is not a number",
    )?;
    let iat = optional(
        payload,
        "iat",
        numeric_date,
        "the iat claim is not a number",
    )?;
    let sub = optional(payload, "sub", string, "the sub claim is not a string")?;
    let role = optional(payload, "role", string, "the role claim is not a string")?;
    Ok(Claims {
        sub,
        role,
        exp,
        nbf,
        iat,
    })
}

/// An optional claim: absent and `null` are both `None`, a wrong type is an
/// error rather than silently ignored.
fn optional<T>(
    payload: &Map<String, Value>,
    name: &str,
    read: fn(&Value) -> Option<T>,
    wrong_type: &'static str,
) -> Result<Option<T>, AuthError> {
    match payload.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => read(v).map(Some).ok_or(AuthError::Malformed(wrong_type)),
    }
}

/// RFC 7519 NumericDate: seconds, possibly fractional; the fraction is
/// dropped. Out-of-range floats saturate (`as` never panics).
fn numeric_date(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f.trunc() as i64)),
        _ => None,
    }
}

fn string(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &[u8] = b"hookrelay-test-secret";
    const NOW: i64 = 1_800_000_000;

    /// A token with an arbitrary header, signed correctly under `key`, for
    /// cases `sign_hs256` cannot produce.
    fn raw_token(header: &str, payload: &str, key: &[u8]) -> String {
        let h = URL_SAFE_NO_PAD.encode(header);
        let p = URL_SAFE_NO_PAD.encode(payload);
        let s = URL_SAFE_NO_PAD.encode(mac(key, &h, &p));
        format!("{h}.{p}.{s}")
    }

    fn admin(exp: i64) -> Value {
        json!({"sub": "ops", "role": "admin", "exp": exp})
    }

    fn bearer(token: &str) -> String {
        format!("Bearer {token}")
    }

    #[test]
    fn a_current_admin_token_is_let_in() {
        let table = [
            json!({"sub": "ops", "role": "admin", "exp": NOW + 60}),
            json!({"role": "admin", "exp": NOW + 1, "nbf": NOW, "iat": NOW - 5}),
            json!({"role": "admin", "exp": (NOW + 60) as f64 + 0.9}),
            json!({"role": "admin", "exp": NOW + 60, "nbf": null, "sub": null, "extra": [1]}),
        ];
        for claims in table {
            let token = sign_hs256(&claims, KEY);
            let got = authorize(Some(&bearer(&token)), KEY, NOW);
            assert!(got.is_ok(), "{claims}: {got:?}");
        }
        let got = authorize(Some(&bearer(&sign_hs256(&admin(NOW + 60), KEY))), KEY, NOW).unwrap();
        assert_eq!(
            got,
            Claims {
                sub: Some("ops".into()),
                role: Some("admin".into()),
                exp: NOW + 60,
                nbf: None,
                iat: None,
            }
        );
    }

    #[test]
    fn a_fractional_exp_is_truncated() {
        let token = sign_hs256(&json!({"exp": 1900000000.75}), KEY);
        assert_eq!(verify(&token, KEY, NOW).unwrap().exp, 1_900_000_000);
    }

    #[test]
    fn the_clock_claims_are_checked_without_leeway() {
        let table = [
            (
                "expired a minute ago",
                json!({"role": "admin", "exp": NOW - 60}),
                Err(AuthError::Expired),
            ),
            (
                "exp exactly now is expired",
                json!({"role": "admin", "exp": NOW}),
                Err(AuthError::Expired),
            ),
            (
                "fractional exp within this second",
                json!({"role": "admin", "exp": NOW as f64 + 0.5}),
                Err(AuthError::Expired),
            ),
            (
                "exp one second ahead",
                json!({"role": "admin", "exp": NOW + 1}),
                Ok(()),
            ),
            (
                "nbf one second ahead",
                json!({"role": "admin", "exp": NOW + 60, "nbf": NOW + 1}),
                Err(AuthError::NotYetValid),
            ),
            (
                "nbf exactly now",
                json!({"role": "admin", "exp": NOW + 60, "nbf": NOW}),
                Ok(()),
            ),
            (
                "iat in the future is not checked",
                json!({"role": "admin", "exp": NOW + 60, "iat": NOW + 3600}),
                Ok(()),
            ),
        ];
        for (name, claims, want) in table {
            let token = sign_hs256(&claims, KEY);
            let got = authorize(Some(&bearer(&token)), KEY, NOW).map(|_| ());
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn only_hs256_is_accepted_whatever_the_header_says() {
        let payload = admin(NOW + 60).to_string();
        let table = [
            (r#"{"alg":"HS512","typ":"JWT"}"#, "\"HS512\""),
            (r#"{"alg":"HS384"}"#, "\"HS384\""),
            (r#"{"alg":"RS256"}"#, "\"RS256\""),
            (r#"{"alg":"none"}"#, "\"none\""),
            (r#"{"alg":"hs256"}"#, "\"hs256\""),
            (r#"{"typ":"JWT"}"#, "(missing)"),
            (r#"{"alg":null}"#, "(not a string)"),
            (r#"{"alg":["HS256"]}"#, "(not a string)"),
            (r#"{"alg":"HS256\n<script>"}"#, "(unrecognised)"),
        ];
        for (header, alg) in table {
            // Signed with the right key, so only the algorithm can be wrong.
            let token = raw_token(header, &payload, KEY);
            assert_eq!(
                verify(&token, KEY, NOW),
                Err(AuthError::UnsupportedAlgorithm(alg.into())),
                "{header}"
            );
        }
    }

    #[test]
    fn an_unsigned_alg_none_token_is_refused() {
        let h = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
        let p = URL_SAFE_NO_PAD.encode(admin(NOW + 60).to_string());
        let token = format!("{h}.{p}.");
        let err = authorize(Some(&bearer(&token)), KEY, NOW).unwrap_err();
        assert_eq!(err, AuthError::UnsupportedAlgorithm("\"none\"".into()));
        assert_eq!(err.status(), 401);
    }

    #[test]
    fn a_header_with_crit_is_refused() {
        let header = r#"{"alg":"HS256","crit":["exp"],"exp":1}"#;
        let token = raw_token(header, &admin(NOW + 60).to_string(), KEY);
        assert!(matches!(
            verify(&token, KEY, NOW),
            Err(AuthError::Malformed(_))
        ));
    }

    #[test]
    fn a_signature_that_does_not_verify_is_refused() {
        let good = sign_hs256(&admin(NOW + 60), KEY);
        let (signing_input, signature) = good.rsplit_once('.').unwrap();
        let (header, _) = signing_input.split_once('.').unwrap();
        // The payload is swapped for a user token's payload, keeping the
        // admin token's signature.
        let other = sign_hs256(&json!({"role": "user", "exp": NOW + 60}), KEY);
        let other_payload = other.split('.').nth(1).unwrap();
        let tampered = format!("{header}.{other_payload}.{signature}");

        let table = [
            ("tampered payload", tampered, KEY),
            ("wrong secret", good.clone(), &b"another-secret"[..]),
            ("empty key", sign_hs256(&admin(NOW + 60), b""), &b""[..]),
            (
                "empty key, token signed with a real one",
                good.clone(),
                &b""[..],
            ),
            ("empty signature", format!("{signing_input}."), KEY),
            (
                "truncated signature",
                format!("{signing_input}.{}", &signature[..40]),
                KEY,
            ),
        ];
        for (name, token, key) in table {
            assert_eq!(
                verify(&token, key, NOW),
                Err(AuthError::BadSignature),
                "{name}"
            );
        }
    }

    #[test]
    fn the_signature_is_checked_before_the_payload_is_read() {
        // A payload that would be malformed, under a wrong signature, reports
        // the signature: nothing in an unauthenticated payload is looked at.
        let token = raw_token(r#"{"alg":"HS256"}"#, "not json", b"attacker");
        assert_eq!(verify(&token, KEY, NOW), Err(AuthError::BadSignature));
        let token = raw_token(r#"{"alg":"HS256"}"#, r#"{"exp":1}"#, b"attacker");
        assert_eq!(verify(&token, KEY, NOW), Err(AuthError::BadSignature));
    }

    #[test]
    fn a_genuine_token_without_the_admin_role_is_forbidden() {
        let table = [
            json!({"exp": NOW + 60}),
            json!({"exp": NOW + 60, "role": "user"}),
            json!({"exp": NOW + 60, "role": "Admin"}),
            json!({"exp": NOW + 60, "role": ""}),
        ];
        for claims in table {
            let token = sign_hs256(&claims, KEY);
            let err = authorize(Some(&bearer(&token)), KEY, NOW).unwrap_err();
            assert_eq!(err, AuthError::Forbidden, "{claims}");
            assert_eq!((err.status(), err.code()), (403, "FORBIDDEN"));
            // verify() alone accepts it: the role is authorize's business.
            assert!(verify(&token, KEY, NOW).is_ok(), "{claims}");
        }
    }

    #[test]
    fn a_signed_payload_with_bad_claims_is_malformed() {
        let table = [
            ("missing exp", json!({"role": "admin"})),
            ("null exp", json!({"role": "admin", "exp": null})),
            ("string exp", json!({"role": "admin", "exp": "1900000000"})),
            (
                "string nbf",
                json!({"role": "admin", "exp": NOW + 60, "nbf": "now"}),
            ),
            (
                "bool iat",
                json!({"role": "admin", "exp": NOW + 60, "iat": true}),
            ),
            ("array role", json!({"role": ["admin"], "exp": NOW + 60})),
            (
                "numeric sub",
                json!({"role": "admin", "exp": NOW + 60, "sub": 7}),
            ),
            ("payload is an array", json!(["admin"])),
            ("payload is a string", json!("admin")),
        ];
        for (name, claims) in table {
            let token = sign_hs256(&claims, KEY);
            assert!(
                matches!(verify(&token, KEY, NOW), Err(AuthError::Malformed(_))),
                "{name}"
            );
        }
        let err = verify(&sign_hs256(&json!({"role": "admin"}), KEY), KEY, NOW).unwrap_err();
        assert!(err.message().contains("no exp claim"), "{err}");
    }

    #[test]
    fn the_authorization_header_must_be_a_bearer_token() {
        let token = sign_hs256(&admin(NOW + 60), KEY);
        let ok = [
            format!("Bearer {token}"),
            format!("bearer {token}"),
            format!("BEARER {token}"),
            format!("  Bearer \t {token}  "),
        ];
        for header in ok {
            assert!(authorize(Some(&header), KEY, NOW).is_ok(), "{header:?}");
        }
        let missing = [None, Some(""), Some("   ")];
        for header in missing {
            assert_eq!(
                authorize(header, KEY, NOW),
                Err(AuthError::Missing),
                "{header:?}"
            );
        }
        let malformed = [
            format!("Basic {token}"),
            format!("Token {token}"),
            format!("Bearer:{token}"),
            token.clone(),
            "Bearer".into(),
            "Bearer    ".into(),
        ];
        for header in malformed {
            assert!(
                matches!(
                    authorize(Some(&header), KEY, NOW),
                    Err(AuthError::Malformed(_))
                ),
                "{header:?}"
            );
        }
    }

    #[test]
    fn a_token_that_is_not_three_base64url_segments_is_malformed() {
        let good = sign_hs256(&admin(NOW + 60), KEY);
        let segs: Vec<&str> = good.split('.').collect();
        let table = [
            "garbage".to_string(),
            "".into(),
            ".".into(),
            "..".into(),
            "...".into(),
            format!("{}.{}", segs[0], segs[1]),
            format!("{}{}{}", segs[0], segs[1], segs[2]),
            format!("{good}.{}", segs[2]),
            format!("{good}."),
            format!("!!.{}.{}", segs[1], segs[2]),
            format!("{}.{}.{}+", segs[0], segs[1], &segs[2][..42]),
            format!("{}.{}.{}/", segs[0], segs[1], &segs[2][..42]),
            format!("{}.{}.{}", URL_SAFE_NO_PAD.encode("[]"), segs[1], segs[2]),
            format!("{}.{}.{}", URL_SAFE_NO_PAD.encode("{"), segs[1], segs[2]),
            "é.é.é".into(),
            "a".repeat(MAX_TOKEN_LEN + 1),
        ];
        for token in table {
            let got = verify(&token, KEY, NOW);
            assert!(
                matches!(got, Err(AuthError::Malformed(_))),
                "{token:?}: {got:?}"
            );
        }
    }

    #[test]
    fn padding_and_non_canonical_base64_are_refused_even_when_signed() {
        // RFC 7515 §2: base64url without padding. The payload below encodes
        // to a length that needs padding; the MAC is computed over the padded
        // text, so only the padding rule can refuse it.
        let h = URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256"}"#);
        let claims = json!({"sub": "op", "role": "admin", "exp": NOW + 60});
        let p = URL_SAFE_NO_PAD.encode(claims.to_string());
        assert_ne!(p.len() % 4, 0, "the test payload must need padding");
        let padded = format!("{p}{}", "=".repeat(4 - p.len() % 4));
        let s = URL_SAFE_NO_PAD.encode(mac(KEY, &h, &padded));
        let token = format!("{h}.{padded}.{s}");
        assert!(matches!(
            verify(&token, KEY, NOW),
            Err(AuthError::Malformed(_))
        ));

        // A padded signature, over an otherwise valid token.
        let good = sign_hs256(&admin(NOW + 60), KEY);
        assert!(matches!(
            verify(&format!("{good}="), KEY, NOW),
            Err(AuthError::Malformed(_))
        ));

        // A 32-byte MAC leaves two unused bits in its last character; setting
        // one would be a second spelling of the same signature.
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let last = *good.as_bytes().last().unwrap();
        let index = ALPHABET.iter().position(|&c| c == last).unwrap();
        let twin = format!("{}{}", &good[..good.len() - 1], ALPHABET[index ^ 1] as char);
        assert!(matches!(
            verify(&twin, KEY, NOW),
            Err(AuthError::Malformed(_))
        ));
    }

    fn rfc7515_a1_key() -> Vec<u8> {
        URL_SAFE_NO_PAD
            .decode("AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow")
            .unwrap()
    }

    // RFC 7515 Appendix A.1. RFC 7519 §3.1 uses the very same token, so this
    // covers both. Its header has CRLFs and `typ` first, which `sign_hs256`
    // would never produce: the verifier must hash the segments as sent.
    const RFC7515_A1_TOKEN: &str = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

    #[test]
    fn the_rfc_7515_a1_vector_verifies_until_its_exp() {
        let key = rfc7515_a1_key();
        let claims = verify(RFC7515_A1_TOKEN, &key, 1_300_819_379).unwrap();
        assert_eq!(
            claims,
            Claims {
                sub: None,
                role: None,
                exp: 1_300_819_380,
                nbf: None,
                iat: None,
            }
        );
        assert_eq!(
            verify(RFC7515_A1_TOKEN, &key, 1_300_819_380),
            Err(AuthError::Expired)
        );
        let header = bearer(RFC7515_A1_TOKEN);
        assert_eq!(
            authorize(Some(&header), &key, 1_300_819_379),
            Err(AuthError::Forbidden)
        );
        assert_eq!(
            verify(RFC7515_A1_TOKEN, KEY, 1_300_819_379),
            Err(AuthError::BadSignature)
        );
    }

    #[test]
    fn sign_hs256_matches_node_crypto() {
        // Produced with node's crypto: base64url of
        // JSON.stringify({alg:"HS256",typ:"JWT"}) and of
        // JSON.stringify({exp:1900000000,role:"admin",sub:"ops"}), joined by
        // a dot, then createHmac("sha256", "hookrelay-test-secret") over it,
        // digest "base64url". The claims are in key order so the test holds
        // whether or not serde_json preserves insertion order.
        let want = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE5MDAwMDAwMDAsInJvbGUiOiJhZG1pbiIsInN1YiI6Im9wcyJ9.ql2WwvLiJc_mgj5iIcyYZTJEyC6QgYpsEEuwV2woufI";
        let claims = json!({"exp": 1_900_000_000, "role": "admin", "sub": "ops"});
        assert_eq!(sign_hs256(&claims, KEY), want);
        assert!(authorize(Some(&bearer(want)), KEY, NOW).is_ok());
    }

    #[test]
    fn every_error_has_a_status_a_code_and_a_message_without_the_token() {
        let token = sign_hs256(&json!({"exp": NOW - 1, "role": "admin"}), KEY);
        let table = [
            (AuthError::Missing, 401, "UNAUTHORIZED", "Authorization"),
            (AuthError::Malformed("x"), 401, "UNAUTHORIZED", "malformed"),
            (
                AuthError::UnsupportedAlgorithm("\"none\"".into()),
                401,
                "UNAUTHORIZED",
                "HS256",
            ),
            (
                AuthError::BadSignature,
                401,
                "UNAUTHORIZED",
                "ADMIN_JWT_SECRET",
            ),
            (AuthError::Expired, 401, "UNAUTHORIZED", "expired"),
            (AuthError::NotYetValid, 401, "UNAUTHORIZED", "nbf"),
            (AuthError::Forbidden, 403, "FORBIDDEN", "admin"),
        ];
        for (err, status, code, mentions) in table {
            assert_eq!((err.status(), err.code()), (status, code), "{err:?}");
            let message = err.message();
            assert!(message.contains(mentions), "{message}");
            assert!(message.contains("npm run admin-token"), "{message}");
            assert_eq!(err.to_string(), message);
        }
        let err = authorize(Some(&bearer(&token)), KEY, NOW).unwrap_err();
        assert_eq!(err, AuthError::Expired);
        for part in token.split('.') {
            assert!(!err.message().contains(part));
        }
    }

    #[test]
    fn no_truncation_or_substitution_of_a_token_panics_or_passes() {
        let good = sign_hs256(&admin(NOW + 60), KEY);
        let mut variants: Vec<String> = (0..good.len()).map(|i| good[..i].to_string()).collect();
        for i in 0..good.len() {
            for c in [".", "=", "+", "/", "A", "é", " ", "\0"] {
                variants.push(format!("{}{c}{}", &good[..i], &good[i + 1..]));
            }
        }
        for token in variants {
            if token == good {
                continue;
            }
            // Every change to a signed token is refused; none panics.
            assert!(verify(&token, KEY, NOW).is_err(), "{token}");
            assert!(
                authorize(Some(&bearer(&token)), KEY, NOW).is_err(),
                "{token}"
            );
        }
    }
}
