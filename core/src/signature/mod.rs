//! Webhook signature schemes, as data.
//!
//! In scope: the scheme data model (`scheme`), the presets (`presets`),
//! recipes written in `SOURCES` (`recipe`), what is signed (`template`)
//! and over which forms of the URL (`url_forms`),
//! reading signature headers (`header_parse`, `places`), the one verifier
//! (`verifier`) with its MACs (`mac`) and DER conversion (`der`), the
//! handshakes (`handshake`) and the answers on success (`answer`), all on
//! the raw request bytes. Out of scope: deciding what the body means (the
//! front door), and reading the clock: callers pass `now_s`.
//!
//! Every comparison of a computed MAC or token against a presented one goes
//! through `mac::ct_eq`, which is constant time.

pub mod answer;
mod der;
pub mod handshake;
mod header_parse;
mod mac;
pub mod places;
mod presets;
pub mod recipe;
pub mod scheme;
mod sign;
pub mod template;
mod url_forms;
mod verifier;

use std::fmt;

pub use der::der_to_raw_p256;
pub use header_parse::MAX_SIGNATURES;
pub(crate) use mac::mac_parts;
pub use mac::{ct_eq, sha256 as hmac_sha256_of, SigningKey};
pub use presets::{github, hmac_sha256, preset, preset_names, standard_webhooks, stripe, PRESETS};
pub use scheme::{
    Answer, Check, Encoding, Handshake, KeyForm, Layout, MacAlg, Place, PublicKeyAlg, Scheme,
    SignatureAt, Signed, TimeUnit, Timestamp, UrlForms,
};
pub use sign::{
    sign, sign_github, sign_hmac_sha256, sign_standard_webhooks, sign_stripe, SignInput,
};
pub use verifier::{
    check_body_timestamp, verify, verify_one, Deferred, HmacCheck, Message, PublicKeyCheck,
    Request, Verdict, Verified, NATIVE_SHA256_UP_TO,
};

/// Read access to request headers by case-insensitive name.
pub trait HeaderLookup {
    /// The header's value, if present, whatever the case of `name`.
    fn header(&self, name: &str) -> Option<&str>;
}

/// A map keyed by lower-case names (a captured request's).
impl HeaderLookup for std::collections::BTreeMap<String, String> {
    fn header(&self, name: &str) -> Option<&str> {
        self.get(&name.to_ascii_lowercase()).map(String::as_str)
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

/// Why a request's signature was refused. The text says which check failed,
/// never what the signature should have been.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureError {
    /// A required header is absent or empty.
    MissingHeader(String),
    /// A header is present but cannot be parsed.
    Malformed {
        /// The header (or body field) it came from.
        header: String,
        /// What is wrong with it.
        reason: String,
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
            SignatureError::MissingHeader(h) => write!(f, "missing {h}; the provider sends it with every signed request"),
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
