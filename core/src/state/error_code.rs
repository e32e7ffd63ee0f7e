//! Stable error codes and failure classes.
//!
//! A failure gets its code and class where it is created, at the boundary
//! that observed it; everything downstream (retry, dead-lettering, logs,
//! envelopes, metrics) reads the code rather than re-parsing messages.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// How a failure should be handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureClass {
    /// Likely to succeed later: retried on the schedule.
    Transient,
    /// Will never succeed as it is: dead-lettered at once.
    Poison,
    /// Not classified: retried like transient until attempts run out.
    Unknown,
}

impl FailureClass {
    /// The lower-case name used in logs, D1 and the admin API.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Transient => "transient",
            FailureClass::Poison => "poison",
            FailureClass::Unknown => "unknown",
        }
    }

    /// Parses the lower-case name.
    pub fn parse(s: &str) -> Option<FailureClass> {
        [
            FailureClass::Transient,
            FailureClass::Poison,
            FailureClass::Unknown,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The stable error codes of DESIGN §3. Their spelling is part of the
/// contract: dashboards and alerts match on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorCode {
    /// The message or event body cannot be decoded.
    BadPayload,
    /// The message decodes but does not have the expected shape.
    SchemaMismatch,
    /// A signature did not verify.
    SignatureInvalid,
    /// The downstream refused our credentials (401/403).
    AuthExpired,
    /// The downstream did not answer in time (or answered 408).
    Timeout,
    /// The downstream answered 5xx, or could not be reached.
    Upstream5xx,
    /// The downstream answered a 4xx other than 401/403/408/429.
    Upstream4xx,
    /// The downstream answered a redirect (3xx), which is never followed:
    /// its URL is wrong.
    UpstreamRedirect,
    /// The downstream answered 429.
    RateLimited,
    /// The destination's circuit breaker is open; no call was made.
    CircuitOpen,
    /// D1 was busy or unavailable.
    D1Unavailable,
    /// Anything not classified.
    Unknown,
}

impl ErrorCode {
    /// Every code, in the contract's order.
    pub const ALL: [ErrorCode; 12] = [
        ErrorCode::BadPayload,
        ErrorCode::SchemaMismatch,
        ErrorCode::SignatureInvalid,
        ErrorCode::AuthExpired,
        ErrorCode::Timeout,
        ErrorCode::Upstream5xx,
        ErrorCode::Upstream4xx,
        ErrorCode::UpstreamRedirect,
        ErrorCode::RateLimited,
        ErrorCode::CircuitOpen,
        ErrorCode::D1Unavailable,
        ErrorCode::Unknown,
    ];

    /// The contract spellings, in the order of [`ErrorCode::ALL`].
    pub const NAMES: [&'static str; 12] = [
        "BAD_PAYLOAD",
        "SCHEMA_MISMATCH",
        "SIGNATURE_INVALID",
        "AUTH_EXPIRED",
        "TIMEOUT",
        "UPSTREAM_5XX",
        "UPSTREAM_4XX",
        "UPSTREAM_REDIRECT",
        "RATE_LIMITED",
        "CIRCUIT_OPEN",
        "D1_UNAVAILABLE",
        "UNKNOWN",
    ];

    /// The contract spelling, e.g. `UPSTREAM_5XX`.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Parses the contract spelling.
    pub fn parse(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The class every failure with this code belongs to.
    pub fn class(self) -> FailureClass {
        match self {
            ErrorCode::BadPayload
            | ErrorCode::SchemaMismatch
            | ErrorCode::SignatureInvalid
            | ErrorCode::AuthExpired
            | ErrorCode::Upstream4xx
            | ErrorCode::UpstreamRedirect => FailureClass::Poison,
            ErrorCode::Timeout
            | ErrorCode::Upstream5xx
            | ErrorCode::RateLimited
            | ErrorCode::CircuitOpen
            | ErrorCode::D1Unavailable => FailureClass::Transient,
            ErrorCode::Unknown => FailureClass::Unknown,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// Both enums cross serde as their spelling, written by hand over
// `as_str`/`parse`: a derived impl matches every name twice (as `str` and as
// bytes) in each worker, and these two are read wherever a failure is.
impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        ErrorCode::parse(&name).ok_or_else(|| de::Error::unknown_variant(&name, &Self::NAMES))
    }
}

impl Serialize for FailureClass {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FailureClass {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        FailureClass::parse(&name)
            .ok_or_else(|| de::Error::unknown_variant(&name, &["transient", "poison", "unknown"]))
    }
}

/// One classified failure of one attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// The stable code.
    pub code: ErrorCode,
    /// A human-readable message. It never contains payload bytes or secrets.
    pub message: String,
    /// A lower bound on the next retry delay the failing party asked for
    /// (for example a downstream's `Retry-After`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<u32>,
    /// For `CIRCUIT_OPEN`: the failure that opened the breaker, so the dead
    /// letter can name the destination's real problem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<ErrorCode>,
}

impl Failure {
    /// A failure with a code and message and no retry hint.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            retry_after_s: None,
            cause: None,
        }
    }

    /// The class this failure belongs to, from its code.
    pub fn class(&self) -> FailureClass {
        self.code.class()
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.class(), self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_the_class_the_contract_gives_it() {
        use ErrorCode::*;
        use FailureClass::*;
        let table = [
            (BadPayload, Poison),
            (SchemaMismatch, Poison),
            (SignatureInvalid, Poison),
            (AuthExpired, Poison),
            (Upstream4xx, Poison),
            (UpstreamRedirect, Poison),
            (Timeout, Transient),
            (Upstream5xx, Transient),
            (RateLimited, Transient),
            (CircuitOpen, Transient),
            (D1Unavailable, Transient),
            (ErrorCode::Unknown, FailureClass::Unknown),
        ];
        assert_eq!(table.len(), ErrorCode::ALL.len());
        for (code, class) in table {
            assert_eq!(code.class(), class, "{code}");
        }
    }

    #[test]
    fn codes_serialize_with_the_contract_spelling_and_parse_back() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
        }
        assert_eq!(ErrorCode::parse("upstream_5xx"), None);
        assert_eq!(ErrorCode::Upstream5xx.as_str(), "UPSTREAM_5XX");
        assert_eq!(ErrorCode::D1Unavailable.as_str(), "D1_UNAVAILABLE");
        assert_eq!(ErrorCode::UpstreamRedirect.as_str(), "UPSTREAM_REDIRECT");
        let back: ErrorCode = serde_json::from_str("\"CIRCUIT_OPEN\"").unwrap();
        assert_eq!(back, ErrorCode::CircuitOpen);
        let err = serde_json::from_str::<ErrorCode>("\"NOPE\"").unwrap_err();
        assert!(err.to_string().contains("unknown variant `NOPE`"), "{err}");
        for class in [
            FailureClass::Transient,
            FailureClass::Poison,
            FailureClass::Unknown,
        ] {
            let json = serde_json::to_string(&class).unwrap();
            assert_eq!(serde_json::from_str::<FailureClass>(&json).unwrap(), class);
        }
        assert!(serde_json::from_str::<FailureClass>("\"Poison\"").is_err());
    }
}
