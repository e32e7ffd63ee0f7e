//! Signing a test webhook as a source's provider would, for `send`: the
//! core's scheme says where the id, the timestamp and the signature go and
//! renders what is signed (`hookrelay_core::signature::template`, as the
//! verifier renders it); the MAC is computed natively for every hash a
//! scheme may name. A public-key source cannot be signed here: the relay
//! holds only the provider's public key.

use super::native_crypto::mac;
use hookrelay_core::receive::front_door::signed_url;
use hookrelay_core::receive::Source;
use hookrelay_core::signature::template::{self, Fill};
use hookrelay_core::signature::{Check, Encoding, Layout, Place, Signed, TimeUnit};
use hookrelay_core::support::base64::{STANDARD, URL_SAFE_NO_PAD};
use sha2::Digest;
use std::borrow::Cow;

/// A signed request, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The URL to POST to (Twilio's JSON body adds `bodySHA256`).
    pub url: String,
    /// The headers, the content type first.
    pub headers: Vec<(String, String)>,
}

/// What to sign.
pub struct Unsigned<'a> {
    /// The relay's origin.
    pub base: &'a str,
    /// The body, byte-exact.
    pub body: &'a [u8],
    /// Sent as a form rather than JSON.
    pub form: bool,
    /// A fresh delivery id, for a scheme that carries one in a header.
    pub delivery_id: &'a str,
    /// The signing time.
    pub now_ms: i64,
}

/// The headers `src`'s provider would send with `u`, and the URL.
pub fn sign_request(src: &Source, u: &Unsigned<'_>) -> Result<Outgoing, String> {
    let scheme = &src.spec.scheme;
    if let Check::PublicKey { .. } = &scheme.check {
        return Err(format!(
            "{} is a public-key scheme: its provider signs with a private key the relay never holds, so a test request cannot be signed here",
            scheme.name
        ));
    }
    let key = src
        .keys
        .first()
        .ok_or("the source has no secret to sign with")?;
    let url = request_url(src, u);
    let content_type = match u.form {
        true => "application/x-www-form-urlencoded",
        false => "application/json",
    };
    let mut headers = vec![("content-type".to_string(), content_type.to_string())];
    let id = match &scheme.id {
        Some(Place::Header(h)) => {
            headers.push((h.to_string(), u.delivery_id.to_string()));
            Some(u.delivery_id)
        }
        _ => None,
    };
    let stamp = timestamp_text(scheme.timestamp.as_ref().map(|t| t.unit), u.now_ms);
    if let Some(Place::Header(h)) = scheme.timestamp.as_ref().map(|t| &t.at) {
        headers.push((h.to_string(), stamp.clone()));
    }
    let signature = match &scheme.check {
        Check::Token { header } => (
            header.to_string(),
            String::from_utf8_lossy(key.as_bytes()).into_owned(),
        ),
        Check::Mac {
            mac: alg,
            at,
            signed,
            ..
        } => {
            let signed_at = signed_url(src.spec.url.as_deref(), &url).into_owned();
            let fill = Fill {
                body: u.body,
                timestamp: Some(&stamp),
                id,
                url: &signed_at,
                method: "POST",
            };
            let message = render(signed, &fill, u.form)?;
            let sig = encode(at.encoding, &mac(*alg, key.as_bytes(), &message));
            (at.header.to_string(), laid_out(&at.layout, &sig, &stamp))
        }
        Check::PublicKey { .. } => unreachable!("refused above"),
    };
    headers.push(signature);
    Ok(Outgoing { url, headers })
}

/// Where to POST: `/webhooks/<source>`; for Twilio's JSON body, with the
/// `bodySHA256` its signature covers through the URL.
fn request_url(src: &Source, u: &Unsigned<'_>) -> String {
    let url = format!("{}/webhooks/{}", u.base, src.spec.name);
    let twilio = matches!(
        src.spec.scheme.check,
        Check::Mac {
            signed: Signed::Twilio,
            ..
        }
    );
    match twilio && !u.form {
        true => format!("{url}?bodySHA256={}", hex(&sha2::Sha256::digest(u.body))),
        false => url,
    }
}

/// The signature header's value in the scheme's layout.
fn laid_out(layout: &Layout, sig: &str, stamp: &str) -> String {
    match layout {
        Layout::Whole { prefix, .. } => format!("{prefix}{sig}"),
        Layout::Parts {
            separator,
            timestamp,
            signature,
        } => {
            format!("{timestamp}={stamp}{separator}{signature}={sig}")
        }
    }
}

/// A test body for `scheme` when none is given: a small JSON event
/// carrying the delivery id and the timestamp wherever the scheme reads
/// them from the body (Stripe's `id`, Linear's `webhookTimestamp`, …).
pub fn default_body(
    scheme: &hookrelay_core::signature::Scheme,
    delivery_id: &str,
    now_ms: i64,
) -> Vec<u8> {
    let mut body =
        serde_json::json!({"type": "hookrelay.test", "sent_at": crate::show::instant(now_ms)});
    for place in [&scheme.id, &scheme.id_fallback].into_iter().flatten() {
        if let Place::Json(pointer) = place {
            set_pointer(&mut body, pointer, serde_json::json!(delivery_id));
        }
    }
    if let Some(t) = &scheme.timestamp {
        if let Place::Json(pointer) = &t.at {
            let value = match t.unit {
                TimeUnit::Millis => serde_json::json!(now_ms),
                TimeUnit::Seconds => serde_json::json!(now_ms.div_euclid(1000)),
                TimeUnit::Rfc3339 => serde_json::json!(crate::show::instant(now_ms)),
            };
            set_pointer(&mut body, pointer, value);
        }
    }
    body.to_string().into_bytes()
}

/// Sets the value at a JSON Pointer, making the objects on the way.
fn set_pointer(root: &mut serde_json::Value, pointer: &str, value: serde_json::Value) {
    let mut at = root;
    let keys: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|k| k.replace("~1", "/").replace("~0", "~"))
        .collect();
    for (i, key) in keys.iter().enumerate() {
        if !at.is_object() {
            *at = serde_json::json!({});
        }
        let map = at.as_object_mut().expect("made an object");
        if i + 1 == keys.len() {
            map.insert(key.clone(), value);
            return;
        }
        at = map
            .entry(key.clone())
            .or_insert_with(|| serde_json::json!({}));
    }
}

/// The signed bytes, as the verifier renders them.
fn render(signed: &Signed, fill: &Fill<'_>, form: bool) -> Result<Vec<u8>, String> {
    match signed {
        Signed::Template(t) => {
            let pieces = template::parse(t)?;
            let rendered = template::render(&pieces, fill).map_err(|missing| {
                format!("the template signs {missing:?}, which this body does not carry")
            })?;
            Ok(rendered.concat())
        }
        Signed::Twilio => {
            let urls = [Cow::Borrowed(fill.url)];
            let messages = template::twilio(fill, &urls, form).map_err(|e| e.to_string())?;
            Ok(messages.into_iter().next().unwrap_or_default().concat())
        }
    }
}

/// The timestamp's text in its unit (seconds when the scheme has none:
/// then nothing signs it).
fn timestamp_text(unit: Option<TimeUnit>, now_ms: i64) -> String {
    match unit {
        Some(TimeUnit::Millis) => now_ms.to_string(),
        Some(TimeUnit::Rfc3339) => crate::show::instant(now_ms),
        Some(TimeUnit::Seconds) | None => now_ms.div_euclid(1000).to_string(),
    }
}

fn encode(encoding: Encoding, bytes: &[u8]) -> String {
    match encoding {
        Encoding::Hex => hex(bytes),
        Encoding::Base64 => STANDARD.encode(bytes),
        Encoding::Base64Url => URL_SAFE_NO_PAD.encode(bytes),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
