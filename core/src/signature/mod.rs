//! Webhook signature schemes.
//!
//! In scope: verifying the four schemes hookrelay accepts on the raw request
//! bytes, with timestamp tolerance and several signatures per header (secret
//! rotation). Out of scope: deciding what the body means (see `ingest`), and
//! reading the clock: callers pass `now_s`.
//!
//! Every comparison of a computed MAC against a presented one goes through
//! `hmac::Mac::verify_slice`, which is constant time.

mod github;
mod hmac_sha256;
mod standard_webhooks;
mod stripe;

use std::fmt;

pub use github::sign as sign_github;
pub use hmac_sha256::sign as sign_hmac_sha256;
pub use standard_webhooks::sign as sign_standard_webhooks;
pub use stripe::sign as sign_stripe;

/// The signature scheme a source uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// <https://www.standardwebhooks.com/>: `webhook-id`, `webhook-timestamp`, `webhook-signature`.
    StandardWebhooks,
    /// Stripe: `Stripe-Signature: t=…,v1=…`.
    Stripe,
    /// GitHub: `X-Hub-Signature-256: sha256=…`, delivery id in `X-GitHub-Delivery`.
    Github,
    /// Generic: `X-Timestamp`, `X-Signature` (hex), optional `X-Operation-Id`.
    HmacSha256,
}

impl Scheme {
    /// Every scheme, in the order the configuration documents them.
    pub const ALL: [Scheme; 4] = [
        Scheme::StandardWebhooks,
        Scheme::Stripe,
        Scheme::Github,
        Scheme::HmacSha256,
    ];

    /// The name used in `SOURCES` configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::StandardWebhooks => "standard-webhooks",
            Scheme::Stripe => "stripe",
            Scheme::Github => "github",
            Scheme::HmacSha256 => "hmac-sha256",
        }
    }

    /// Parses a configuration name; `None` for an unknown scheme.
    pub fn parse(name: &str) -> Option<Scheme> {
        Scheme::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether this scheme signs a timestamp (and so enforces a tolerance).
    pub fn has_timestamp(self) -> bool {
        !matches!(self, Scheme::Github)
    }

    /// Header names (lower-case) that carry signatures or timestamps for this
    /// scheme, and so must be redacted before a request is stored anywhere.
    pub fn signature_headers(self) -> &'static [&'static str] {
        match self {
            Scheme::StandardWebhooks => &["webhook-signature"],
            Scheme::Stripe => &["stripe-signature"],
            Scheme::Github => &["x-hub-signature-256", "x-hub-signature"],
            Scheme::HmacSha256 => &["x-signature"],
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Read access to request headers by case-insensitive name.
pub trait HeaderLookup {
    /// The header's value, if present. `name` is lower-case.
    fn header(&self, name: &str) -> Option<&str>;
}

impl HeaderLookup for std::collections::BTreeMap<String, String> {
    fn header(&self, name: &str) -> Option<&str> {
        self.get(name).map(String::as_str)
    }
}

/// The glue's header list (lower-case names, as the runtime gives them):
/// looked up in place, so the glue builds no map per request.
impl HeaderLookup for [(String, String)] {
    fn header(&self, name: &str) -> Option<&str> {
        self.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl HeaderLookup for [(&str, &str)] {
    fn header(&self, name: &str) -> Option<&str> {
        self.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }
}

/// Key material for one source, decoded once when configuration loads.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey(Vec<u8>);

impl SigningKey {
    /// Builds the key a scheme signs with from the configured secret string.
    ///
    /// Standard Webhooks keys are the base64 bytes after `whsec_`; the other
    /// schemes key HMAC with the secret string's bytes as they are.
    pub fn from_secret(scheme: Scheme, secret: &str) -> Result<SigningKey, String> {
        if secret.is_empty() {
            return Err("the secret is empty".into());
        }
        match scheme {
            Scheme::StandardWebhooks => standard_webhooks::decode_secret(secret).map(SigningKey),
            _ => Ok(SigningKey(secret.as_bytes().to_vec())),
        }
    }

    /// The raw HMAC key bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKey(<redacted>)")
    }
}

/// What a successful verification learned from the headers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verified {
    /// The provider's delivery id, when the scheme carries one in a header
    /// (`webhook-id`, `X-GitHub-Delivery`, `X-Operation-Id`). Stripe's event
    /// id lives in the body and is read after verification.
    pub delivery_id: Option<String>,
    /// The signed timestamp (unix seconds), for schemes that sign one.
    pub timestamp: Option<i64>,
}

/// Why a request's signature was refused. The text says which check failed,
/// never what the signature should have been.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureError {
    /// A required header is absent or empty.
    MissingHeader(&'static str),
    /// A header is present but cannot be parsed.
    Malformed {
        /// The header's canonical name.
        header: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The signed timestamp is outside the source's tolerance.
    Stale {
        /// The presented timestamp (unix seconds).
        timestamp: i64,
        /// The relay's clock (unix seconds).
        now: i64,
        /// The allowed skew either way, in seconds.
        tolerance_s: u32,
    },
    /// No presented signature matches.
    Mismatch,
}

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignatureError::MissingHeader(h) => write!(f, "missing signature header {h}"),
            SignatureError::Malformed { header, reason } => {
                write!(f, "malformed {header} header: {reason}")
            }
            SignatureError::Stale {
                timestamp,
                now,
                tolerance_s,
            } => write!(
                f,
                "timestamp {timestamp} is {}s away from the relay clock, outside the {tolerance_s}s tolerance; re-sign the request with a current timestamp",
                now.saturating_sub(*timestamp).unsigned_abs()
            ),
            SignatureError::Mismatch => f.write_str(
                "no signature matches; check that the sender signs the raw body with this source's secret",
            ),
        }
    }
}

impl std::error::Error for SignatureError {}

/// Verifies a request against a source's scheme and key.
///
/// `body` is the raw request body exactly as received; `now_s` is the
/// relay's clock in unix seconds; `tolerance_s` bounds the timestamp skew
/// either way for schemes that sign a timestamp.
pub fn verify(
    scheme: Scheme,
    key: &SigningKey,
    headers: &(impl HeaderLookup + ?Sized),
    body: &[u8],
    now_s: i64,
    tolerance_s: u32,
) -> Result<Verified, SignatureError> {
    match scheme {
        Scheme::StandardWebhooks => {
            standard_webhooks::verify(key, headers, body, now_s, tolerance_s)
        }
        Scheme::Stripe => stripe::verify(key, headers, body, now_s, tolerance_s),
        Scheme::Github => github::verify(key, headers, body),
        Scheme::HmacSha256 => hmac_sha256::verify(key, headers, body, now_s, tolerance_s),
    }
}

/// Each presented signature costs one MAC over the whole body, so a header
/// stuffed with entries could make one request arbitrarily expensive. Real
/// rotation overlaps two or three secrets.
const MAX_SIGNATURES: usize = 8;

/// HMAC-SHA256 output length; a presented value of any other length cannot match.
const MAC_LEN: usize = 32;

/// Keeps the decoded candidates that have a MAC's length. A garbled entry is
/// skipped rather than refused, so it cannot hide a valid one during
/// rotation; only a header with nothing usable, or with more than
/// [`MAX_SIGNATURES`], is malformed.
fn usable_macs(
    candidates: impl IntoIterator<Item = Vec<u8>>,
    header: &'static str,
    none_usable: &'static str,
    too_many: &'static str,
) -> Result<Vec<Vec<u8>>, SignatureError> {
    let presented: Vec<Vec<u8>> = candidates
        .into_iter()
        .filter(|mac| mac.len() == MAC_LEN)
        .collect();
    if presented.is_empty() {
        return Err(SignatureError::Malformed {
            header,
            reason: none_usable,
        });
    }
    if presented.len() > MAX_SIGNATURES {
        return Err(SignatureError::Malformed {
            header,
            reason: too_many,
        });
    }
    Ok(presented)
}

/// A timestamp whose distance from `now_s` does not fit in an `i64` is
/// malformed rather than stale (it cannot be a clock skew); any other is
/// checked against the tolerance.
fn check_fresh(
    timestamp: i64,
    now_s: i64,
    tolerance_s: u32,
    header: &'static str,
) -> Result<(), SignatureError> {
    if now_s
        .checked_sub(timestamp)
        .and_then(i64::checked_abs)
        .is_none()
    {
        return Err(SignatureError::Malformed {
            header,
            reason: "timestamp is out of range",
        });
    }
    check_tolerance(timestamp, now_s, tolerance_s)
}

/// `Ok` when any presented MAC matches the signed parts, compared in
/// constant time.
fn any_matches(
    key: &SigningKey,
    parts: &[&[u8]],
    presented: &[Vec<u8>],
) -> Result<(), SignatureError> {
    // The MAC over the body is computed once and each candidate checked
    // against a copy of it: recomputing per candidate would let a sender
    // buy eight hashes of a 1 MB body with one request.
    use hmac::Mac;
    let computed = mac(key, parts);
    if presented
        .iter()
        .any(|sig| computed.clone().verify_slice(sig).is_ok())
    {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// Refuses a timestamp further than `tolerance_s` from `now_s` either way.
fn check_tolerance(timestamp: i64, now_s: i64, tolerance_s: u32) -> Result<(), SignatureError> {
    if now_s.saturating_sub(timestamp).unsigned_abs() > u64::from(tolerance_s) {
        return Err(SignatureError::Stale {
            timestamp,
            now: now_s,
            tolerance_s,
        });
    }
    Ok(())
}

/// A required, non-empty header value.
fn required<'h>(
    headers: &'h (impl HeaderLookup + ?Sized),
    name: &'static str,
) -> Result<&'h str, SignatureError> {
    match headers.header(name) {
        Some(v) if !v.trim().is_empty() => Ok(v.trim()),
        _ => Err(SignatureError::MissingHeader(name)),
    }
}

/// A decimal unix-seconds timestamp.
fn parse_timestamp(raw: &str, header: &'static str) -> Result<i64, SignatureError> {
    raw.trim()
        .parse::<i64>()
        .map_err(|_| SignatureError::Malformed {
            header,
            reason: "timestamp is not an integer number of seconds",
        })
}

/// HMAC-SHA256, the one MAC every scheme and the admin JWT use.
pub(crate) type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// A keyed HMAC-SHA256 over the concatenated parts: the one copy of the
/// MAC set-up, shared with the admin JWT.
pub(crate) fn mac_parts(key: &[u8], parts: &[&[u8]]) -> HmacSha256 {
    use hmac::Mac;
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC accepts keys of any length");
    for p in parts {
        m.update(p);
    }
    m
}

fn mac(key: &SigningKey, parts: &[&[u8]]) -> HmacSha256 {
    mac_parts(key.as_bytes(), parts)
}

/// The computed MAC bytes, for signing.
fn compute(key: &SigningKey, parts: &[&[u8]]) -> Vec<u8> {
    use hmac::Mac;
    mac(key, parts).finalize().into_bytes().to_vec()
}

/// Assertions shared by the scheme modules' tests.
#[cfg(test)]
mod test_support {
    use super::{SignatureError, Verified};

    /// What a verification returns.
    pub type Outcome = Result<Verified, SignatureError>;

    /// Asserts the outcome, and that a refusal never quotes the expected MAC
    /// (`mac_fragment` is a prefix of it).
    pub fn assert_outcome(name: &str, got: Outcome, want: Outcome, mac_fragment: &str) {
        if let Err(e) = &got {
            let text = e.to_string();
            assert!(
                !text.contains(mac_fragment),
                "{name}: quotes the MAC: {text}"
            );
        }
        assert_eq!(got, want, "{name}");
    }
}
