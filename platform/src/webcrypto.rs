//! The signature checks the core leaves to workerd's WebCrypto
//! (`crypto.subtle`): HMAC-SHA1 and HMAC-SHA512, Ed25519 (Discord) and
//! ECDSA P-256 with SHA-256 (SendGrid). The core decides what is signed and
//! what must match, and converts an ECDSA signature to the form WebCrypto
//! takes; this only runs the check.

use hookrelay_core::signature::{Deferred, MacAlg, PublicKeyAlg};
use js_sys::{Array, Promise, Uint8Array};
use wasm_bindgen::prelude::*;
use worker::wasm_bindgen_futures::JsFuture;

#[wasm_bindgen(inline_js = r#"
export function verify_signature(ed25519, key, signature, message) {
  // Copied before the first await: the arguments are views of wasm memory.
  const [k, s, m] = [key.slice(), signature.slice(), message.slice()];
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
export async function verify_hmac(hash, keys, signatures, message) {
  // HMAC verify compares in constant time; any signature under any key.
  for (const key of keys) {
    const imported = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash }, false, ["verify"]);
    for (const signature of signatures) {
      if (await crypto.subtle.verify("HMAC", imported, signature, message)) return true;
    }
  }
  return false;
}
"#)]
extern "C" {
    fn verify_signature(ed25519: bool, key: &[u8], signature: &[u8], message: &[u8]) -> Promise;
    fn verify_hmac(hash: &str, keys: Array, signatures: Array, message: Uint8Array) -> Promise;
}

/// Copies of the byte strings, as JS arrays that outlive wasm memory moves.
fn arrays(items: &[Vec<u8>]) -> Array {
    items.iter().map(|b| Uint8Array::from(&b[..])).collect()
}

/// Whether `check` holds (`public_key` for a public-key check). An error is
/// a key WebCrypto cannot import (the configuration check makes that
/// unlikely).
pub async fn holds(check: &Deferred, public_key: Option<&[u8]>) -> worker::Result<bool> {
    let promise = match check {
        Deferred::PublicKey(pk) => {
            let ed25519 = matches!(pk.alg, PublicKeyAlg::Ed25519);
            let key = public_key.unwrap_or_default();
            verify_signature(ed25519, key, &pk.signature, &pk.message)
        }
        Deferred::Hmac(h) => {
            let hash = match h.alg {
                MacAlg::Sha1 => "SHA-1",
                MacAlg::Sha256 => "SHA-256",
                MacAlg::Sha512 => "SHA-512",
            };
            let message = Uint8Array::from(&h.message[..]);
            verify_hmac(hash, arrays(&h.keys), arrays(&h.signatures), message)
        }
    };
    let verdict = JsFuture::from(promise).await?;
    Ok(verdict.as_bool() == Some(true))
}
