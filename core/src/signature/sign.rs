//! Signing as a provider would: the other side of the verifier, for the
//! relay's own calls (deliveries and alerts sign as `hmac-sha256`), the
//! benches, the fuzzers and the tests.

use super::header_parse::encode;
use super::mac::{sha256, SigningKey};
use super::presets;
use super::scheme::{Check, Layout, MacAlg, Scheme};
use super::template::Fill;
use super::verifier::messages;
use std::borrow::Cow;

/// What a request being signed holds.
pub struct SignInput<'a> {
    /// The method, for `{method}`.
    pub method: &'a str,
    /// The URL, for `{url}`.
    pub url: &'a str,
    /// The body.
    pub body: &'a [u8],
    /// Whether the body is a form (Twilio).
    pub form: bool,
    /// The delivery id, for `{id}`.
    pub id: Option<&'a str>,
    /// The timestamp's text, for `{timestamp}`.
    pub timestamp: Option<&'a str>,
}

/// The signature header's value for an HMAC-SHA256 scheme; `None` for
/// the others (the relay has no native SHA-1, SHA-512 or public-key
/// signer), or when the input lacks what the template signs.
pub fn sign(scheme: &Scheme, key: &SigningKey, input: &SignInput<'_>) -> Option<String> {
    let Check::Mac {
        mac: MacAlg::Sha256,
        at,
        signed,
        ..
    } = &scheme.check
    else {
        return None;
    };
    let fill = Fill {
        body: input.body,
        timestamp: input.timestamp,
        id: input.id,
        url: input.url,
        method: input.method,
    };
    let urls = [Cow::Borrowed(input.url)];
    let pieces = messages(scheme, signed, &fill, &urls, input.form).ok()?;
    let sig = encode(at.encoding, &sha256(key.as_bytes(), &pieces[0]));
    Some(match &at.layout {
        Layout::Whole { prefix, .. } => format!("{prefix}{sig}"),
        Layout::Parts {
            separator,
            timestamp,
            signature,
        } => format!(
            "{timestamp}={}{separator}{signature}={sig}",
            input.timestamp?
        ),
    })
}

fn body_only<'a>(body: &'a [u8], id: Option<&'a str>, timestamp: Option<&'a str>) -> SignInput<'a> {
    SignInput {
        method: "POST",
        url: "",
        body,
        form: false,
        id,
        timestamp,
    }
}

fn signed(scheme: &Scheme, key: &SigningKey, input: &SignInput<'_>) -> String {
    sign(scheme, key, input).expect("the older schemes sign whatever they are given")
}

/// A Standard Webhooks `v1,<base64>` entry.
pub fn sign_standard_webhooks(key: &SigningKey, id: &str, timestamp: i64, body: &[u8]) -> String {
    let ts = timestamp.to_string();
    signed(
        presets::standard_webhooks(),
        key,
        &body_only(body, Some(id), Some(&ts)),
    )
}

/// A whole `Stripe-Signature: t=…,v1=…` value.
pub fn sign_stripe(key: &SigningKey, timestamp: i64, body: &[u8]) -> String {
    let ts = timestamp.to_string();
    signed(presets::stripe(), key, &body_only(body, None, Some(&ts)))
}

/// A GitHub `sha256=<hex>` value.
pub fn sign_github(key: &SigningKey, body: &[u8]) -> String {
    signed(presets::github(), key, &body_only(body, None, None))
}

/// The `hmac-sha256` scheme's lower-case hex `X-Signature`.
pub fn sign_hmac_sha256(key: &SigningKey, timestamp: i64, body: &[u8]) -> String {
    let ts = timestamp.to_string();
    signed(
        presets::hmac_sha256(),
        key,
        &body_only(body, None, Some(&ts)),
    )
}
