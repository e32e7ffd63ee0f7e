//! The signature checks the core leaves to workerd's WebCrypto
//! (`crypto.subtle`): HMAC-SHA256 over a large message, HMAC-SHA1 and
//! HMAC-SHA512, Ed25519 (Discord) and ECDSA P-256 with SHA-256 (SendGrid).
//! The core decides what is signed and what must match, and converts an
//! ECDSA signature to the form WebCrypto takes; this only runs the check.
//! The body is the JS array the entry read, never copied back out of wasm.

use hookrelay_core::signature::{Deferred, HmacCheck, MacAlg, Message, PublicKeyAlg};
use js_sys::{Array, Promise, Uint8Array};
use wasm_bindgen::prelude::*;
use worker::wasm_bindgen_futures::JsFuture;

#[wasm_bindgen(inline_js = r#"
// The signed bytes: the pieces around the body (copies, not views of wasm
// memory) and the body itself, which is already a JS array.
function joined(before, body, after) {
  if (body === undefined) return before;
  if (before.length === 0 && after.length === 0) return body;
  const m = new Uint8Array(before.length + body.length + after.length);
  m.set(before);
  m.set(body, before.length);
  m.set(after, before.length + body.length);
  return m;
}
export function verify_signature(ed25519, key, signature, before, body, after) {
  // Copied before the first await: the arguments are views of wasm memory.
  const [k, s, m] = [key.slice(), signature.slice(), joined(before, body, after)];
  const check = async () => {
    if (ed25519) {
      let algo = { name: "Ed25519" };
      let imported;
      try {
        imported = await crypto.subtle.importKey("raw", k, algo, false, ["verify"]);
      } catch {
        // workerd's older spelling of the same algorithm.
        algo = { name: "NODE-ED25519", namedCurve: "NODE-ED25519" };
        imported = await crypto.subtle.importKey("raw", k, algo, false, ["verify"]);
      }
      return crypto.subtle.verify(algo, imported, s, m);
    }
    const imported = await crypto.subtle.importKey("spki", k, { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
    return crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, imported, s, m);
  };
  return check();
}
export async function hmac_macs(hash, keys, messages, body) {
  // One MAC per (key, message), never one per presented signature: a
  // forged request with eight signatures over a 1 MiB body costs what a
  // request with one costs. The core compares them in constant time.
  const texts = messages.map(([before, signsBody, after]) => joined(before, signsBody ? body : undefined, after));
  const macs = [];
  for (const key of keys) {
    const imported = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash }, false, ["sign"]);
    for (const text of texts) macs.push(new Uint8Array(await crypto.subtle.sign("HMAC", imported, text)));
  }
  return macs;
}
"#)]
extern "C" {
    fn verify_signature(
        ed25519: bool,
        key: &[u8],
        signature: &[u8],
        before: Uint8Array,
        body: Option<&Uint8Array>,
        after: Uint8Array,
    ) -> Promise;
    fn hmac_macs(hash: &str, keys: Array, messages: Array, body: &Uint8Array) -> Promise;
}

/// The message's pieces as JS arguments: copies of those around the body,
/// and the body itself when it is signed.
fn pieces<'b>(
    message: &Message,
    body: &'b Uint8Array,
) -> (Uint8Array, Option<&'b Uint8Array>, Uint8Array) {
    (
        Uint8Array::from(&message.before[..]),
        message.body.then_some(body),
        Uint8Array::from(&message.after[..]),
    )
}

/// Copies of the byte strings, as JS arrays that outlive wasm memory moves.
fn arrays(items: &[Vec<u8>]) -> Array {
    items.iter().map(|b| Uint8Array::from(&b[..])).collect()
}

/// Whether `check` holds (`public_key` for a public-key check) over the
/// request `body`. An error is a key WebCrypto cannot import (the
/// configuration check makes that unlikely).
pub async fn holds(
    check: &Deferred,
    public_key: Option<&[u8]>,
    body: &Uint8Array,
) -> worker::Result<bool> {
    let promise = match check {
        Deferred::PublicKey(pk) => {
            let ed25519 = matches!(pk.alg, PublicKeyAlg::Ed25519);
            let key = public_key.unwrap_or_default();
            let (before, body, after) = pieces(&pk.message, body);
            verify_signature(ed25519, key, &pk.signature, before, body, after)
        }
        Deferred::Hmac(h) => return hmac_holds(h, body).await,
    };
    let verdict = JsFuture::from(promise).await?;
    Ok(verdict.as_bool() == Some(true))
}

/// Each (key, message) MAC computed once by WebCrypto, then compared with
/// every presented signature in constant time by the core
/// ([`HmacCheck::matches`]).
async fn hmac_holds(h: &HmacCheck, body: &Uint8Array) -> worker::Result<bool> {
    let hash = match h.alg {
        MacAlg::Sha1 => "SHA-1",
        MacAlg::Sha256 => "SHA-256",
        MacAlg::Sha512 => "SHA-512",
    };
    let messages: Array = h
        .messages
        .iter()
        .map(|m| {
            let (before, signs_body, after) = (
                Uint8Array::from(&m.before[..]),
                JsValue::from_bool(m.body),
                Uint8Array::from(&m.after[..]),
            );
            Array::of3(&before, &signs_body, &after)
        })
        .collect();
    let promise = hmac_macs(hash, arrays(&h.keys), messages, body);
    let macs: Vec<Vec<u8>> = Array::from(&JsFuture::from(promise).await?)
        .iter()
        .map(|m| Uint8Array::new(&m).to_vec())
        .collect();
    Ok(h.matches(&macs))
}

#[wasm_bindgen(inline_js = r#"
export function random_fill(buf) { crypto.getRandomValues(buf); }
"#)]
extern "C" {
    fn random_fill(buf: &mut [u8]);
}

/// Fills `buf` from the runtime's cryptographic random source
/// (`crypto.getRandomValues`): ids that must be fresh, such as a pull
/// lease's.
pub fn random_bytes(buf: &mut [u8]) {
    random_fill(buf);
}
