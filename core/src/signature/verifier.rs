//! The verifier: one for every scheme. It decides what is signed and what
//! must match; the MAC itself is `mac.rs`'s for HMAC-SHA256 over up to
//! [`NATIVE_SHA256_UP_TO`] bytes, and WebCrypto's in the glue for the rest,
//! handed a [`Deferred`] check (a larger HMAC-SHA256, HMAC-SHA1 and
//! -SHA512, Ed25519, ECDSA P-256).
//!
//! Headers are read completely before the clock is consulted, and the
//! clock before any MAC, so a stale request is reported as stale even when
//! its signature is also wrong. A timestamp in the body (Linear) can only
//! be read after the body: [`check_body_timestamp`] runs then.

use super::der::der_to_raw_p256;
use super::header_parse::{self, Presented};
use super::mac::{ct_eq, sha256, SigningKey};
use super::places;
use super::scheme::{
    Check, MacAlg, Place, PublicKeyAlg, Scheme, SignatureAt, Signed, TimeUnit, UrlForms,
};
use super::template::{self, Fill};
use super::url_forms;
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

/// HMAC-SHA256 runs here up to this many signed bytes, and in WebCrypto
/// above: SHA-256 in wasm runs at about 150 MB/s, several times slower
/// than workerd's native code, while a WebCrypto check costs a fixed toll
/// of promises and crossings (bench/README.md, "Large bodies").
pub const NATIVE_SHA256_UP_TO: usize = 16 * 1024;

/// The bytes a deferred check signs, with the request body left out when
/// it is one piece of them: the glue already holds the body in JS and
/// hands WebCrypto the pieces around it, so the body is never copied back
/// out of wasm.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Message {
    /// The signed bytes before the body (all of them when `body` is false).
    pub before: Vec<u8>,
    /// Whether the raw request body comes next.
    pub body: bool,
    /// The signed bytes after the body.
    pub after: Vec<u8>,
}

impl Message {
    /// The rendered pieces, split around the one that is `body` itself.
    fn of(pieces: &[Cow<'_, [u8]>], body: &[u8]) -> Message {
        match pieces.iter().position(|p| std::ptr::eq(&**p, body)) {
            Some(i) => Message {
                before: pieces[..i].concat(),
                body: true,
                after: pieces[i + 1..].concat(),
            },
            None => Message {
                before: pieces.concat(),
                ..Message::default()
            },
        }
    }

    /// The whole signed bytes, given the request body.
    pub fn concat(&self, body: &[u8]) -> Vec<u8> {
        let body = if self.body { body } else { &[] };
        [&self.before[..], body, &self.after[..]].concat()
    }
}

/// A public-key signature for the glue to check with WebCrypto.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKeyCheck {
    /// The algorithm.
    pub alg: PublicKeyAlg,
    /// The signed bytes.
    pub message: Message,
    /// The signature as WebCrypto takes it (ECDSA as r‖s).
    pub signature: Vec<u8>,
}

/// An HMAC for the glue to check with WebCrypto: does any signature match
/// the MAC of `message` under any key?
#[derive(Clone, PartialEq, Eq)]
pub struct HmacCheck {
    /// The hash (SHA-1, SHA-512, or SHA-256 over a large message).
    pub alg: MacAlg,
    /// The source's keys, current first.
    pub keys: Vec<Vec<u8>>,
    /// The signed bytes, once per form of the URL the scheme accepts
    /// (Twilio's with and without the port); any one may match.
    pub messages: Vec<Message>,
    /// The presented signatures, decoded.
    pub signatures: Vec<Vec<u8>>,
}

impl HmacCheck {
    /// Whether any presented signature equals any of `macs`, the MAC of
    /// each (key, message) computed once (by WebCrypto), each comparison
    /// in constant time. A MAC is never recomputed per signature: eight
    /// presented signatures cost the hashes one does.
    pub fn matches(&self, macs: &[Vec<u8>]) -> bool {
        macs.iter()
            .any(|mac| self.signatures.iter().any(|sig| ct_eq(mac, sig)))
    }
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
    /// An HMAC other than SHA-256, or over more than
    /// [`NATIVE_SHA256_UP_TO`] bytes.
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
    verify_up_to(scheme, keys, req, now_s, tolerance_s, NATIVE_SHA256_UP_TO)
}

/// [`verify`], with HMAC-SHA256 computed here over up to `native_up_to`
/// signed bytes and deferred to WebCrypto above.
fn verify_up_to<H: HeaderLookup + ?Sized>(
    scheme: &Scheme,
    keys: &[SigningKey],
    req: &Request<'_, H>,
    now_s: i64,
    tolerance_s: u32,
    native_up_to: usize,
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
    let timestamp_text = match timestamp_text {
        Some(text) => Some(text),
        None => signed_body_timestamp(scheme, signed, req)?,
    };
    let fill = Fill {
        body: req.body,
        timestamp: timestamp_text.as_deref(),
        id: header_id.as_deref(),
        url: req.url,
        method: req.method,
    };
    let urls = url_forms::of(req.url, url_forms_of(&scheme.check));
    let messages = messages(scheme, signed, &fill, &urls, req.form)?;
    let verified = Verified {
        delivery_id: header_id.clone(),
        timestamp,
    };
    let pieces = Pieces {
        all: &messages,
        body: req.body,
        native_up_to,
    };
    finish(&scheme.check, at, keys, &pieces, &presented, verified)
}

/// The forms of the URL a check's signature may cover (a public key
/// signs one message).
fn url_forms_of(check: &Check) -> UrlForms {
    match check {
        Check::Mac { urls, .. } => *urls,
        Check::PublicKey { .. } | Check::Token { .. } => UrlForms::Exact,
    }
}

/// What is signed, and how much of it the MAC may take here.
struct Pieces<'p, 'a> {
    /// The rendered pieces of each message that may be signed.
    all: &'p [Vec<Cow<'a, [u8]>>],
    /// The request body (one of the pieces, for most schemes).
    body: &'a [u8],
    /// HMAC-SHA256 runs here up to this many bytes.
    native_up_to: usize,
}

/// The last step: an HMAC-SHA256 compared under each key, or the check
/// handed to the glue for WebCrypto.
fn finish(
    check: &Check,
    at: &SignatureAt,
    keys: &[SigningKey],
    pieces: &Pieces<'_, '_>,
    presented: &Presented<'_>,
    verified: Verified,
) -> Result<Verdict, SignatureError> {
    let messages = pieces.all;
    let len = messages
        .iter()
        .map(|m| m.iter().map(|p| p.len()).sum::<usize>())
        .max()
        .unwrap_or(0);
    let split = |m: &[Cow<'_, [u8]>]| Message::of(m, pieces.body);
    match check {
        Check::Mac {
            mac: MacAlg::Sha256,
            ..
        } if len <= pieces.native_up_to => {
            // One MAC per key over the whole body, each candidate checked
            // against it: recomputing per candidate would let a sender buy
            // eight hashes of a 1 MB body with one request.
            let matched = keys.iter().any(|key| {
                messages.iter().any(|message| {
                    let computed = sha256(key.as_bytes(), message);
                    presented.signatures.iter().any(|sig| ct_eq(&computed, sig))
                })
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
                messages: messages.iter().map(|m| split(m)).collect(),
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
                    message: split(&messages[0]),
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

/// The text of a timestamp in the body, when the template signs it as
/// `{timestamp}` (a recipe's `json` timestamp): the string's value, or the
/// number's text. Its freshness is checked with the body's other checks
/// ([`check_body_timestamp`]); here it is only what is signed. A body that
/// holds no such value cannot be verified: refused as a missing timestamp.
fn signed_body_timestamp<H: HeaderLookup + ?Sized>(
    scheme: &Scheme,
    signed: &Signed,
    req: &Request<'_, H>,
) -> Result<Option<String>, SignatureError> {
    let (Some(rule), Signed::Template(text)) = (&scheme.timestamp, signed) else {
        return Ok(None);
    };
    let Place::Json(pointer) = &rule.at else {
        return Ok(None);
    };
    let signs_it = template::parse(text)
        .is_ok_and(|pieces| template::uses(&pieces, template::Piece::Timestamp));
    if !signs_it {
        return Ok(None);
    }
    let view = if req.form {
        crate::support::form::decode(req.body)
            .ok()
            .map(crate::support::form::to_object)
    } else {
        serde_json::from_slice::<Value>(req.body).ok()
    };
    view.and_then(|v| places::json_text(&v, pointer))
        .map(Some)
        .ok_or_else(|| SignatureError::MissingHeader(super::scheme::place_label(&rule.at)))
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
        TimeUnit::Rfc3339 => crate::support::calendar::parse_rfc3339_ms(raw)
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

/// The signed pieces, once per URL in `urls` (`fill.url` is the first).
pub(super) fn messages<'a>(
    scheme: &Scheme,
    signed: &'a Signed,
    fill: &Fill<'a>,
    urls: &'a [Cow<'a, str>],
    form: bool,
) -> Result<Vec<Vec<Cow<'a, [u8]>>>, SignatureError> {
    match signed {
        Signed::Template(text) => {
            let pieces = template::parse(text).map_err(|e| SignatureError::Malformed {
                header: scheme.name.to_string(),
                reason: e,
            })?;
            let mut out = Vec::with_capacity(urls.len());
            for url in urls {
                let rendered = template::render(&pieces, &Fill { url, ..*fill });
                out.push(rendered.map_err(|missing| {
                    let what = match missing {
                        template::Piece::Id => scheme
                            .id
                            .as_ref()
                            .map_or("the delivery id".into(), super::scheme::place_label),
                        _ => "the timestamp".into(),
                    };
                    SignatureError::MissingHeader(what)
                })?);
            }
            Ok(out)
        }
        Signed::Twilio => template::twilio(fill, urls, form),
    }
}

/// Verifies a JSON POST under one key, with no URL in what is signed: what
/// a receiver of the relay's own calls checks (deliveries and alerts sign
/// as `hmac-sha256`), and what the benches and fuzzers drive. HMAC-SHA256
/// runs here whatever the body's size; a scheme whose check is left to
/// WebCrypto never verifies here.
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
    let keys = std::slice::from_ref(key);
    verify_up_to(scheme, keys, &req, now_s, tolerance_s, usize::MAX)?
        .verified()
        .ok_or(SignatureError::Mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{presets, sign_hmac_sha256, KeyForm};

    fn key() -> SigningKey {
        SigningKey::from_secret(KeyForm::Raw, "s3cret").unwrap()
    }

    #[test]
    fn a_large_sha256_message_is_left_to_webcrypto_with_the_body_in_place() {
        let key = key();
        let now = 1_700_000_000;
        let ts = now.to_string();
        for (len, native) in [
            (NATIVE_SHA256_UP_TO - ts.len() - 1, true),
            (NATIVE_SHA256_UP_TO - ts.len(), false),
            (900_000, false),
        ] {
            let body = vec![b'x'; len];
            let headers = [
                ("x-timestamp", ts.as_str()),
                ("x-signature", &sign_hmac_sha256(&key, now, &body)),
            ];
            let req = Request {
                method: "POST",
                url: "",
                headers: &headers[..],
                body: &body,
                form: false,
            };
            let verdict = verify(
                presets::hmac_sha256(),
                std::slice::from_ref(&key),
                &req,
                now,
                300,
            );
            match verdict.unwrap() {
                Verdict::Verified(_) => assert!(native, "{len}"),
                Verdict::Deferred {
                    check: Deferred::Hmac(check),
                    ..
                } => {
                    assert!(!native, "{len}");
                    assert_eq!(check.alg, MacAlg::Sha256);
                    assert_eq!(check.keys, vec![b"s3cret".to_vec()]);
                    // The body stays where the glue has it; only the
                    // timestamp and its dot are copied.
                    let want = Message {
                        before: format!("{ts}.").into_bytes(),
                        body: true,
                        after: vec![],
                    };
                    assert_eq!(check.messages, [want]);
                    let mac = sha256(b"s3cret", &[check.messages[0].concat(&body)]);
                    assert_eq!(check.signatures, vec![mac]);
                }
                other => panic!("{len}: {other:?}"),
            }
            // The relay's own receivers check natively whatever the size.
            let one = verify_one(presets::hmac_sha256(), &key, &headers[..], &body, now, 300);
            assert!(one.is_ok(), "{len}");
        }
    }

    #[test]
    fn a_json_timestamp_is_signed_as_its_text_in_the_body() {
        let recipe = serde_json::json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex",
            "signed": "{method} {url}\n{timestamp}\n{body}",
            "timestamp": {"json": "/meta/sent_at", "unit": "rfc3339"}});
        let scheme = super::super::recipe::parse(recipe.as_object().unwrap()).unwrap();
        let key = key();
        let body = br#"{"meta":{"sent_at":"2023-11-14T22:13:20Z"},"n":1}"#;
        let input = crate::signature::SignInput {
            method: "POST",
            url: "https://relay.example/webhooks/acme",
            body,
            form: false,
            id: None,
            timestamp: Some("2023-11-14T22:13:20Z"),
        };
        let sig = crate::signature::sign(&scheme, &key, &input).unwrap();
        let check = |body: &[u8]| {
            let headers = [("x-sig", sig.as_str())];
            let req = Request {
                method: "POST",
                url: "https://relay.example/webhooks/acme",
                headers: &headers[..],
                body,
                form: false,
            };
            verify(
                &scheme,
                std::slice::from_ref(&key),
                &req,
                1_700_000_000,
                300,
            )
        };
        assert!(matches!(check(body), Ok(Verdict::Verified(_))));
        let without = br#"{"meta":{},"n":1}"#;
        assert!(matches!(
            check(without),
            Err(SignatureError::MissingHeader(_))
        ));
        let number = br#"{"meta":{"sent_at":1700000000},"n":1}"#;
        assert_eq!(check(number), Err(SignatureError::Mismatch));
    }

    #[test]
    fn a_deferred_hmac_compares_each_mac_once_computed_with_every_signature() {
        let mac = |k: &[u8], m: &[u8]| sha256(k, &[m]);
        let check = HmacCheck {
            alg: MacAlg::Sha256,
            keys: vec![b"current".to_vec(), b"previous".to_vec()],
            messages: vec![Message {
                before: b"m".to_vec(),
                ..Message::default()
            }],
            signatures: vec![vec![0; 32], mac(b"previous", b"m")],
        };
        let macs = [mac(b"current", b"m"), mac(b"previous", b"m")];
        assert!(
            check.matches(&macs),
            "the previous key's MAC matches one signature"
        );
        assert!(!check.matches(&macs[..1]), "the current key's does not");
        assert!(!check.matches(&[]), "no MAC, no match");
        let short = HmacCheck {
            signatures: vec![mac(b"previous", b"m")[..31].to_vec()],
            ..check.clone()
        };
        assert!(!short.matches(&macs), "a truncated signature never matches");
    }

    #[test]
    fn a_message_without_the_raw_body_is_copied_whole() {
        let body = b"a=1";
        let other = b"a=1".to_vec();
        let pieces = [Cow::Borrowed(&b"u"[..]), Cow::Borrowed(&other[..])];
        let m = Message::of(&pieces, body);
        assert_eq!((m.before.as_slice(), m.body), (&b"ua=1"[..], false));
        assert_eq!(m.concat(body), b"ua=1");
    }
}
