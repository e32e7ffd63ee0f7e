//! The signature header parsers: from a header's value to the presented
//! signatures (decoded) and, for `key=value` headers, the timestamp's text.
//!
//! A garbled entry is skipped rather than refused, so it cannot hide a
//! valid one during rotation; only a header with nothing usable, or with
//! more than [`MAX_SIGNATURES`], is malformed.

use super::scheme::{Encoding, Layout, SignatureAt};
use super::SignatureError;
use crate::support::base64::{STANDARD, URL_SAFE_NO_PAD};

/// Each presented signature costs one comparison per key, and a header
/// stuffed with entries must not make a request expensive. Real rotation
/// overlaps two or three secrets.
pub const MAX_SIGNATURES: usize = 8;

/// What a signature header presents.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Presented<'h> {
    /// The decoded signatures of the expected length.
    pub signatures: Vec<Vec<u8>>,
    /// The timestamp part's text ([`Layout::Parts`]).
    pub timestamp: Option<&'h str>,
}

/// Reads `raw`, the value of `at.header`. `len` is the length a signature
/// must have (`None`: any non-empty length, for DER signatures).
pub fn parse<'h>(
    at: &SignatureAt,
    raw: &'h str,
    len: Option<usize>,
) -> Result<Presented<'h>, SignatureError> {
    let mut candidates: Vec<&str> = Vec::new();
    let mut timestamp = None;
    match &at.layout {
        Layout::Whole { prefix, separator } => {
            let split: Vec<&str> = match separator {
                Some(sep) => raw
                    .split(sep.as_ref())
                    .flat_map(str::split_ascii_whitespace)
                    .collect(),
                None => vec![raw.trim()],
            };
            candidates.extend(
                split
                    .into_iter()
                    .filter(|e| !e.is_empty())
                    .filter_map(|e| e.strip_prefix(prefix.as_ref())),
            );
        }
        Layout::Parts {
            separator,
            timestamp: ts_key,
            signature,
        } => {
            timestamp = Some(parts(
                at,
                raw,
                separator,
                ts_key,
                signature,
                &mut candidates,
            )?)
        }
    }
    let entries = candidates.len();
    let out = Presented {
        signatures: candidates
            .into_iter()
            .filter_map(|c| decode(at.encoding, c.trim()))
            .filter(|sig| len.map_or(!sig.is_empty(), |l| sig.len() == l))
            .collect(),
        timestamp,
    };
    if entries > MAX_SIGNATURES {
        return Err(malformed(
            at,
            &format!("more than {MAX_SIGNATURES} signatures"),
        ));
    }
    if out.signatures.is_empty() {
        return Err(malformed(at, &usable(at, len)));
    }
    Ok(out)
}

/// The timestamp part of a `key=value` header, the signature parts pushed
/// onto `candidates`.
fn parts<'h>(
    at: &SignatureAt,
    raw: &'h str,
    separator: &str,
    ts_key: &str,
    signature: &str,
    candidates: &mut Vec<&'h str>,
) -> Result<&'h str, SignatureError> {
    let mut timestamp = None;
    for (name, value) in raw
        .split(separator)
        .filter_map(|item| item.split_once('='))
        .map(|(n, v)| (n.trim(), v.trim()))
    {
        if name == ts_key {
            // Libraries disagree on which of two would win, and the
            // signature covers only one.
            if timestamp.is_some() {
                return Err(malformed(at, "more than one timestamp part"));
            }
            timestamp = Some(value);
        } else if name == signature {
            candidates.push(value);
        }
    }
    timestamp.ok_or_else(|| malformed(at, &format!("no {ts_key}= timestamp part")))
}

/// What a usable entry looks like, for the refusal.
fn usable(at: &SignatureAt, len: Option<usize>) -> String {
    let encoding = match at.encoding {
        Encoding::Hex => "hex",
        Encoding::Base64 => "base64",
        Encoding::Base64Url => "base64url",
    };
    let size = len.map_or(String::new(), |l| format!(" of {l} bytes"));
    match &at.layout {
        Layout::Whole { prefix, .. } if !prefix.is_empty() => {
            format!("no usable {prefix}<{encoding} signature{size}> entry")
        }
        Layout::Whole { .. } => format!("no usable {encoding} signature{size}"),
        Layout::Parts { signature, .. } => {
            format!("no usable {signature}=<{encoding} signature{size}> part")
        }
    }
}

fn malformed(at: &SignatureAt, reason: &str) -> SignatureError {
    SignatureError::Malformed {
        header: at.header.to_string(),
        reason: reason.to_string(),
    }
}

/// Decodes one signature; `None` when it is not in the encoding.
pub fn decode(encoding: Encoding, text: &str) -> Option<Vec<u8>> {
    match encoding {
        Encoding::Hex => hex::decode(text).ok(),
        Encoding::Base64 => STANDARD.decode(text).ok(),
        Encoding::Base64Url => URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok(),
    }
}

/// Encodes one signature, for signing.
pub fn encode(encoding: Encoding, bytes: &[u8]) -> String {
    match encoding {
        Encoding::Hex => hex::encode(bytes),
        Encoding::Base64 => STANDARD.encode(bytes),
        Encoding::Base64Url => URL_SAFE_NO_PAD.encode(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow::Borrowed as B;

    fn whole(prefix: &'static str, sep: Option<&'static str>, encoding: Encoding) -> SignatureAt {
        SignatureAt {
            header: B("h"),
            layout: Layout::Whole {
                prefix: B(prefix),
                separator: sep.map(B),
            },
            encoding,
        }
    }

    fn stripe_like() -> SignatureAt {
        SignatureAt {
            header: B("h"),
            layout: Layout::Parts {
                separator: B(","),
                timestamp: B("t"),
                signature: B("v1"),
            },
            encoding: Encoding::Hex,
        }
    }

    /// Name, where, header value, the signatures, the timestamp part.
    type Case<'a> = (&'a str, SignatureAt, &'a str, Vec<Vec<u8>>, Option<&'a str>);

    #[test]
    fn each_layout_yields_its_signatures() {
        let ab = || vec![vec![0xab, 0xcd]];
        #[rustfmt::skip]
        let table: [Case; 8] = [
            ("bare hex", whole("", None, Encoding::Hex), " abcd ", ab(), None),
            ("prefixed", whole("sha256=", None, Encoding::Hex), "sha256=ABCD", ab(), None),
            ("two, comma", whole("v1=", Some(","), Encoding::Hex), "v1=abcd,v1=0000", vec![vec![0xab, 0xcd], vec![0, 0]], None),
            ("space-separated, other versions skipped", whole("v1,", Some(" "), Encoding::Base64), "v1a,xx v1,q80=", ab(), None),
            ("garbled entry skipped", whole("", Some(","), Encoding::Hex), "zz,abcd", ab(), None),
            ("base64url unpadded", whole("", None, Encoding::Base64Url), "q80", ab(), None),
            ("base64url padded", whole("", None, Encoding::Base64Url), "q80=", ab(), None),
            ("parts", stripe_like(), "t=17, v1=abcd,v0=ffff", ab(), Some("17")),
        ];
        for (name, at, raw, sigs, ts) in table {
            let got = parse(&at, raw, Some(2)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!((got.signatures, got.timestamp), (sigs, ts), "{name}");
        }
    }

    #[test]
    fn a_header_with_nothing_usable_is_malformed_and_says_why() {
        let nine = ["abcd"; 9].join(",");
        let table: [(&str, SignatureAt, &str, &str); 7] = [
            (
                "wrong prefix",
                whole("sha256=", None, Encoding::Hex),
                "sha1=abcd",
                "no usable sha256=<hex signature of 2 bytes> entry",
            ),
            (
                "wrong length",
                whole("", None, Encoding::Hex),
                "abcdef",
                "no usable hex signature of 2 bytes",
            ),
            (
                "not the encoding",
                whole("", None, Encoding::Base64),
                "*!",
                "no usable base64 signature of 2 bytes",
            ),
            (
                "too many",
                whole("", Some(","), Encoding::Hex),
                &nine,
                "more than 8 signatures",
            ),
            (
                "no timestamp part",
                stripe_like(),
                "v1=abcd",
                "no t= timestamp part",
            ),
            (
                "two timestamps",
                stripe_like(),
                "t=1,t=2,v1=abcd",
                "more than one timestamp part",
            ),
            (
                "no signature part",
                stripe_like(),
                "t=1",
                "no usable v1=<hex signature of 2 bytes> part",
            ),
        ];
        for (name, at, raw, reason) in table {
            let got = parse(&at, raw, Some(2));
            assert_eq!(
                got,
                Err(SignatureError::Malformed {
                    header: "h".into(),
                    reason: reason.into()
                }),
                "{name}"
            );
        }
    }
}
