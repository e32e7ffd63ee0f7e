//! The verifier: one for every scheme. It decides what is signed and what
//! must match; the MAC itself is `mac.rs`'s for HMAC-SHA256, and
//! WebCrypto's in the glue for the rest, handed a [`Deferred`] check
//! (HMAC-SHA1 and -SHA512, Ed25519, ECDSA P-256).
//!
//! Headers are read completely before the clock is consulted, and the
//! clock before any MAC, so a stale request is reported as stale even when
//! its signature is also wrong. A timestamp in the body (Linear) can only
//! be read after the body: [`check_body_timestamp`] runs then.

use super::der::der_to_raw_p256;
use super::header_parse::{self, Presented};
use super::mac::{ct_eq, sha256, SigningKey};
use super::places;
use super::scheme::{Check, MacAlg, Place, PublicKeyAlg, Scheme, SignatureAt, Signed, TimeUnit};
use super::template::{self, Fill};
use super::{HeaderLookup, SignatureError};
use serde_json::Value;
use std::borrow::Cow;

/// A request as the verifier sees it.
pub struct Request<'a, H: HeaderLookup + ?Sized> {
    /// The method, for `{method}`.
    pub method: &'a str,
    /// The URL the provider signs, for `{url}`: the source's `url` when
    /// set, else the URL as received.
    pub url: &'a str,
    /// The headers (lower-case names).
    pub headers: &'a H,
    /// The raw body.
    pub body: &'a [u8],
    /// Whether the `Content-Type` says the body is a form.
    pub form: bool,
}

/// What a successful verification learned from the headers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verified {
    /// The provider's delivery id, when the scheme carries it in a header.
    /// An id in the body is read after the body.
    pub delivery_id: Option<String>,
    /// The timestamp (unix seconds), when it is in a header.
    pub timestamp: Option<i64>,
}

/// A public-key signature for the glue to check with WebCrypto.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKeyCheck {
    /// The algorithm.
    pub alg: PublicKeyAlg,
    /// The signed bytes.
    pub message: Vec<u8>,
    /// The signature as WebCrypto takes it (ECDSA as r‖s).
    pub signature: Vec<u8>,
}

/// An HMAC for the glue to check with WebCrypto: does any signature match
/// the MAC of `message` under any key?
#[derive(Clone, PartialEq, Eq)]
pub struct HmacCheck {
    /// The hash (SHA-1 or SHA-512).
    pub alg: MacAlg,
    /// The source's keys, current first.
    pub keys: Vec<Vec<u8>>,
    /// The signed bytes.
    pub message: Vec<u8>,
    /// The presented signatures, decoded.
    pub signatures: Vec<Vec<u8>>,
}

impl std::fmt::Debug for HmacCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The keys are secrets: never in a debug line.
        write!(
            f,
            "HmacCheck({:?}, {} keys, {} signatures)",
            self.alg,
            self.keys.len(),
            self.signatures.len()
        )
    }
}

/// A check the verifier leaves to WebCrypto.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deferred {
    /// A public-key signature (the key is the source's `public_key`).
    PublicKey(PublicKeyCheck),
    /// An HMAC other than SHA-256.
    Hmac(HmacCheck),
}

/// The verifier's verdict on a request whose headers check out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The MAC or token matched.
    Verified(Verified),
    /// The headers check out; the signature must still be checked in
    /// WebCrypto.
    Deferred {
        /// The check to run.
        check: Deferred,
        /// What the headers said, once it passes.
        verified: Verified,
    },
}

impl Verdict {
    /// The verified result, when nothing is left to WebCrypto.
    pub fn verified(self) -> Option<Verified> {
        match self {
            Verdict::Verified(v) => Some(v),
            Verdict::Deferred { .. } => None,
        }
    }
}

/// Verifies a request against a scheme and the source's keys (the current
/// secret, then the previous one while rotating). `now_s` is the relay's
/// clock; `tolerance_s` bounds the timestamp's skew either way.
pub fn verify<H: HeaderLookup + ?Sized>(
    scheme: &Scheme,
    keys: &[SigningKey],
    req: &Request<'_, H>,
    now_s: i64,
    tolerance_s: u32,
) -> Result<Verdict, SignatureError> {
    let header_id = header_delivery_id(scheme, req.headers);
    let (at, signed) = match &scheme.check {
        Check::Token { header } => {
            let presented = required(scheme, req.headers, header)?;
            return if keys
                .iter()
                .any(|k| ct_eq(presented.as_bytes(), k.as_bytes()))
            {
                Ok(Verdict::Verified(Verified {
                    delivery_id: header_id,
                    timestamp: None,
                }))
            } else {
                Err(SignatureError::Mismatch)
            };
        }
        Check::Mac { at, signed, .. } | Check::PublicKey { at, signed, .. } => (at, signed),
    };
    let raw = required(scheme, req.headers, &at.header)?;
    let presented = header_parse::parse(at, raw, signature_len(&scheme.check))?;
    let (timestamp_text, timestamp) = header_timestamp(scheme, req.headers, at, &presented)?;
    if let Some(ts) = timestamp {
        check_fresh(ts, now_s, tolerance_s, &timestamp_label(scheme, at))?;
    }
    let fill = Fill {
        body: req.body,
        timestamp: timestamp_text.as_deref(),
        id: header_id.as_deref(),
        url: req.url,
        method: req.method,
    };
    let message = message(scheme, signed, &fill, req.form)?;
    let verified = Verified {
        delivery_id: header_id.clone(),
        timestamp,
    };
    finish(&scheme.check, at, keys, &message, &presented, verified)
}

/// The last step: an HMAC-SHA256 compared under each key, or the check
/// handed to the glue for WebCrypto.
fn finish(
    check: &Check,
    at: &SignatureAt,
    keys: &[SigningKey],
    message: &[Cow<'_, [u8]>],
    presented: &Presented<'_>,
    verified: Verified,
) -> Result<Verdict, SignatureError> {
    match check {
        Check::Mac {
            mac: MacAlg::Sha256,
            ..
        } => {
            // One MAC per key over the whole body, each candidate checked
            // against it: recomputing per candidate would let a sender buy
            // eight hashes of a 1 MB body with one request.
            let matched = keys.iter().any(|key| {
                let computed = sha256(key.as_bytes(), message);
                presented.signatures.iter().any(|sig| ct_eq(&computed, sig))
            });
            if matched {
                Ok(Verdict::Verified(verified))
            } else {
                Err(SignatureError::Mismatch)
            }
        }
        Check::Mac { mac, .. } => Ok(Verdict::Deferred {
            check: Deferred::Hmac(HmacCheck {
                alg: *mac,
                keys: keys.iter().map(|k| k.as_bytes().to_vec()).collect(),
                message: message.concat(),
                signatures: presented.signatures.clone(),
            }),
            verified,
        }),
        Check::PublicKey { alg, .. } => {
            let first = &presented.signatures[0];
            let signature = match alg {
                PublicKeyAlg::Ed25519 => first.clone(),
                PublicKeyAlg::EcdsaP256 => {
                    der_to_raw_p256(first).ok_or_else(|| SignatureError::Malformed {
                        header: at.header.to_string(),
                        reason: "not a DER ECDSA P-256 signature".into(),
                    })?
                }
            };
            Ok(Verdict::Deferred {
                check: Deferred::PublicKey(PublicKeyCheck {
                    alg: *alg,
                    message: message.concat(),
                    signature,
                }),
                verified,
            })
        }
        Check::Token { .. } => {
            unreachable!("a token scheme is settled before the signature header")
        }
    }
}

/// The length a presented signature must have (`None`: DER, any length).
fn signature_len(check: &Check) -> Option<usize> {
    match check {
        Check::Mac { mac, .. } => Some(mac.output_len()),
        Check::PublicKey {
            alg: PublicKeyAlg::Ed25519,
            ..
        } => Some(64),
        Check::PublicKey { .. } | Check::Token { .. } => None,
    }
}

/// The delivery id carried in a header (an id in the body comes later).
fn header_delivery_id(scheme: &Scheme, headers: &(impl HeaderLookup + ?Sized)) -> Option<String> {
    places::delivery_id(scheme, headers, None)
}

/// A required, non-empty header value.
fn required<'h>(
    scheme: &Scheme,
    headers: &'h (impl HeaderLookup + ?Sized),
    name: &str,
) -> Result<&'h str, SignatureError> {
    places::header(scheme, headers, name).ok_or_else(|| SignatureError::MissingHeader(name.into()))
}

/// Where a timestamp error points.
fn timestamp_label(scheme: &Scheme, at: &SignatureAt) -> String {
    match scheme.timestamp.as_ref().map(|t| &t.at) {
        Some(Place::Header(h)) => h.to_string(),
        Some(Place::Json(p)) => super::scheme::place_label(&Place::Json(p.clone())),
        _ => at.header.to_string(),
    }
}

/// The timestamp from a header or the signature's parts: the text to sign
/// and the unix seconds to check. A timestamp in the body is `(None, None)`
/// here.
fn header_timestamp(
    scheme: &Scheme,
    headers: &(impl HeaderLookup + ?Sized),
    at: &SignatureAt,
    presented: &Presented<'_>,
) -> Result<(Option<String>, Option<i64>), SignatureError> {
    let Some(rule) = &scheme.timestamp else {
        return Ok((None, None));
    };
    let raw = match &rule.at {
        Place::Header(h) => required(scheme, headers, h)?,
        Place::Part => presented
            .timestamp
            .expect("header_parse refuses a parts header without its timestamp"),
        Place::Json(_) => return Ok((None, None)),
    };
    let label = timestamp_label(scheme, at);
    let seconds = parse_time(raw.trim(), rule.unit, &label)?;
    let text = if rule.canonical {
        let n: i64 = raw
            .trim()
            .parse()
            .expect("parse_time read it as an integer");
        n.to_string()
    } else {
        raw.to_string()
    };
    Ok((Some(text), Some(seconds)))
}

/// A timestamp in its unit, as unix seconds.
fn parse_time(raw: &str, unit: TimeUnit, label: &str) -> Result<i64, SignatureError> {
    let malformed = |reason: &str| SignatureError::Malformed {
        header: label.to_string(),
        reason: reason.into(),
    };
    match unit {
        TimeUnit::Seconds => raw
            .parse::<i64>()
            .map_err(|_| malformed("timestamp is not an integer number of seconds")),
        TimeUnit::Millis => raw
            .parse::<i64>()
            .map(|ms| ms.div_euclid(1000))
            .map_err(|_| malformed("timestamp is not an integer number of milliseconds")),
        TimeUnit::Rfc3339 => crate::calendar::parse_rfc3339_ms(raw)
            .map(|ms| ms.div_euclid(1000))
            .map_err(|_| malformed("timestamp is not an RFC 3339 date and time")),
    }
}

/// A timestamp whose distance from `now_s` does not fit in an `i64` is
/// malformed rather than stale (it cannot be a clock skew); any other is
/// checked against the tolerance.
fn check_fresh(
    timestamp: i64,
    now_s: i64,
    tolerance_s: u32,
    label: &str,
) -> Result<(), SignatureError> {
    let Some(skew) = now_s.checked_sub(timestamp).and_then(i64::checked_abs) else {
        return Err(SignatureError::Malformed {
            header: label.to_string(),
            reason: "timestamp is out of range".into(),
        });
    };
    if skew.unsigned_abs() > u64::from(tolerance_s) {
        return Err(SignatureError::Stale {
            timestamp,
            now: now_s,
            tolerance_s,
        });
    }
    Ok(())
}

/// A timestamp in the body (Linear's `webhookTimestamp`), checked once the
/// MAC matched and the body is read. Returns it in unix seconds.
pub fn check_body_timestamp(
    scheme: &Scheme,
    view: &Value,
    now_s: i64,
    tolerance_s: u32,
) -> Result<Option<i64>, SignatureError> {
    let Some(rule) = &scheme.timestamp else {
        return Ok(None);
    };
    let Place::Json(pointer) = &rule.at else {
        return Ok(None);
    };
    let label = super::scheme::place_label(&rule.at);
    let raw = places::json_text(view, pointer)
        .ok_or_else(|| SignatureError::MissingHeader(label.clone()))?;
    let ts = parse_time(&raw, rule.unit, &label)?;
    check_fresh(ts, now_s, tolerance_s, &label)?;
    Ok(Some(ts))
}

/// The signed pieces.
pub(super) fn message<'a>(
    scheme: &Scheme,
    signed: &'a Signed,
    fill: &Fill<'a>,
    form: bool,
) -> Result<Vec<Cow<'a, [u8]>>, SignatureError> {
    match signed {
        Signed::Template(text) => {
            let pieces = template::parse(text).map_err(|e| SignatureError::Malformed {
                header: scheme.name.to_string(),
                reason: e,
            })?;
            template::render(&pieces, fill).map_err(|missing| {
                let what = match missing {
                    template::Piece::Id => scheme
                        .id
                        .as_ref()
                        .map_or("the delivery id".into(), super::scheme::place_label),
                    _ => "the timestamp".into(),
                };
                SignatureError::MissingHeader(what)
            })
        }
        Signed::Twilio => template::twilio(fill, form),
    }
}

/// Verifies a JSON POST under one key, with no URL in what is signed: what
/// a receiver of the relay's own calls checks (deliveries and alerts sign
/// as `hmac-sha256`), and what the benches and fuzzers drive. A scheme
/// whose check is left to WebCrypto never verifies here.
pub fn verify_one(
    scheme: &Scheme,
    key: &SigningKey,
    headers: &(impl HeaderLookup + ?Sized),
    body: &[u8],
    now_s: i64,
    tolerance_s: u32,
) -> Result<Verified, SignatureError> {
    let req = Request {
        method: "POST",
        url: "",
        headers,
        body,
        form: false,
    };
    verify(scheme, std::slice::from_ref(key), &req, now_s, tolerance_s)?
        .verified()
        .ok_or(SignatureError::Mismatch)
}
